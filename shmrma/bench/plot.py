"""``shmrma-bench compare --plot FILE.png``: latency and bandwidth against
message size, shmrma and the references on the same axes, the ratio below.

``draw(sweeps, path, title=None)`` takes one dict per benchmark swept over
message sizes::

    {"title": "osu_put_latency", "unit": "us", "higher_is_better": False,
     "sizes": [1, 2, 4, ...],
     "series": {"shmrma": [median, ...], "mpi4py": [median or None, ...]},
     "noisy": {"shmrma": [bool, ...], ...}}          # "noisy" is optional

and draws one column per sweep (at most COLUMNS a row): on top the values,
log-log, one line per implementation, noisy points hollow; below, the time
ratio of shmrma to each reference, so that below 1 always means shmrma is
better. matplotlib is optional (the ``plot`` extra): it is imported only here,
and its absence is a PlotUnavailable that says what to install; compare asks
``unavailable()`` before it measures anything.
"""
import math

COLUMNS = 3
DPI = 110
SHMRMA = "shmrma"
# shmrma keeps one colour in every figure; references take the others in turn.
SHMRMA_COLOUR = "tab:blue"
REFERENCE_COLOURS = ("tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink")
INSTALL_HINT = 'pip install -e ".[plot]"'          # the plot extra: matplotlib
QUANTITY = {"us": "latency", "MB/s": "bandwidth"}


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def draw(sweeps, path, title=None):
    """Draw ``sweeps`` into the PNG ``path`` and return ``path``."""
    Figure, FigureCanvasAgg = _matplotlib()
    if not sweeps:
        raise ValueError("no sweeps to plot")
    for sweep in sweeps:
        _check(sweep)
    colours = _colours(sweeps)
    ncols = min(COLUMNS, len(sweeps))
    nrows = math.ceil(len(sweeps) / ncols)
    fig = Figure(figsize=(5.2 * ncols, 5.0 * nrows), layout="constrained")
    # The Agg canvas draws off-screen; pyplot, its global figures and the
    # user's interactive backend are never touched.
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2 * nrows, ncols, height_ratios=[3, 1.3] * nrows)
    for i, sweep in enumerate(sweeps):
        row, col = divmod(i, ncols)
        top = fig.add_subplot(grid[2 * row, col])
        bottom = fig.add_subplot(grid[2 * row + 1, col], sharex=top)
        _draw_values(top, sweep, colours)
        _draw_ratios(bottom, sweep, colours)
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
    return path


def unavailable():
    """None when draw() can work, else why not and what to install."""
    try:
        _matplotlib()
    except PlotUnavailable as exc:
        return str(exc)
    return None


def _matplotlib(what="--plot"):
    """The two matplotlib classes draw() needs, or PlotUnavailable saying that
    ``what`` needs it."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlotUnavailable("%s needs matplotlib, which is not installed: install "
                              "shmrma's plot extra, `%s` (or `pip install matplotlib`)"
                              % (what, INSTALL_HINT)) from exc
    return Figure, FigureCanvasAgg


def _check(sweep):
    """Refuse a sweep that would be drawn wrong rather than fail obscurely:
    without sizes there is no axis, and zip() would silently drop points of
    a series whose length is not that of the sizes."""
    n = len(sweep["sizes"])
    if not n:
        raise ValueError("sweep %r has no sizes" % sweep["title"])
    for name, values in list(sweep["series"].items()) + list(sweep.get("noisy", {}).items()):
        if len(values) != n:
            raise ValueError("sweep %r: %s has %d values for %d sizes"
                             % (sweep["title"], name, len(values), n))


def _colours(sweeps):
    """{implementation: colour}, the same for every column of the figure."""
    colours = {SHMRMA: SHMRMA_COLOUR}
    for sweep in sweeps:
        for name in sweep["series"]:
            if name not in colours:
                colours[name] = REFERENCE_COLOURS[(len(colours) - 1) % len(REFERENCE_COLOURS)]
    return colours


def _implementations(sweep):
    """shmrma first (drawn underneath and listed first), then the references."""
    names = [name for name in sweep["series"] if name != SHMRMA]
    return ([SHMRMA] if SHMRMA in sweep["series"] else []) + names


def _finite(values):
    """Floats with NaN for a missing point: the line breaks there. A value
    that is not positive cannot sit on a log axis, so it counts as missing."""
    return [float(v) if v is not None and v > 0 else math.nan for v in values]


def _draw_values(ax, sweep, colours):
    sizes = sweep["sizes"]
    noisy = sweep.get("noisy", {})
    any_noisy = False
    for name in _implementations(sweep):
        values = _finite(sweep["series"][name])
        colour = colours[name]
        ax.plot(sizes, values, marker="o", markersize=5, color=colour, label=name)
        hollow = [(s, v) for s, v, flag in zip(sizes, values, noisy.get(name, ()))
                  if flag and not math.isnan(v)]
        if hollow:
            any_noisy = True
            xs, ys = zip(*hollow)
            ax.plot(xs, ys, linestyle="none", marker="o", markersize=7,
                    markerfacecolor="white", markeredgecolor=colour, markeredgewidth=1.5)
    if any_noisy:
        # A legend entry of its own explains the hollow markers once.
        ax.plot([], [], linestyle="none", marker="o", markerfacecolor="white",
                markeredgecolor="grey", label="noisy (wide min-max spread)")
    quantity = QUANTITY.get(sweep["unit"], "value")
    better = "higher" if sweep.get("higher_is_better") else "lower"
    ax.set_title(sweep["title"])
    ax.set_ylabel("%s, %s (%s is better)" % (quantity, sweep["unit"], better))
    ax.set_yscale("log")
    _size_axis(ax, sizes)
    ax.tick_params(labelbottom=False)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small")


def _draw_ratios(ax, sweep, colours):
    """shmrma's time over the reference's: for a bandwidth (higher is better)
    that is reference / shmrma, so below 1 is shmrma ahead on either kind."""
    from matplotlib.ticker import FuncFormatter, NullLocator

    sizes = sweep["sizes"]
    references = [name for name in _implementations(sweep) if name != SHMRMA]
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("message size (bytes)")
    _size_axis(ax, sizes)
    if SHMRMA not in sweep["series"] or not references:
        ax.text(0.5, 0.5, "no reference to compare with", ha="center", va="center",
                transform=ax.transAxes, color="grey")
        ax.set_yticks([])
        return
    mine = _finite(sweep["series"][SHMRMA])
    for name in references:
        theirs = _finite(sweep["series"][name])
        pairs = zip(theirs, mine) if sweep.get("higher_is_better") else zip(mine, theirs)
        # Markers, not just a line: a ratio between two gaps is a lone point.
        ax.plot(sizes, [a / b for a, b in pairs], marker="o", markersize=3.5,
                color=colours[name], label=name)
    other = references[0] if len(references) == 1 else "reference"
    if sweep.get("higher_is_better"):
        label = "bandwidth ratio\n%s / shmrma" % other
    else:
        label = "time ratio\nshmrma / %s" % other
    ax.set_ylabel(label + "\n(lower is better)", fontsize="small")
    # Log base 2, so that 2x slower and 2x faster lie the same distance from
    # 1, with ticks at 0.25, 0.5, 1, 2, 4 read as plain numbers.
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: "%g" % y))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.grid(True, which="major", alpha=0.3)


def _size_axis(ax, sizes):
    """A log2 axis labelled in bytes at 1, 8, 64, 512, 4K, ... (every power of
    two when the sweep is short)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xscale("log", base=2)
    low, high = math.floor(math.log2(min(sizes))), math.ceil(math.log2(max(sizes)))
    step = 1 if high - low <= 8 else 3
    ticks = [2 ** e for e in range(low, high + 1) if e % step == 0]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: byte_label(x)))


def byte_label(n):
    """1, 512, 4K, 2M: the size in bytes with a binary suffix."""
    for suffix, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return "%g%s" % (n / scale, suffix)
    return "%g" % n
