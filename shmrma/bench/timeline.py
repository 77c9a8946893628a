"""``shmrma-bench timeline TRACE.json OUT.png``: a trace of ``shmrma-run --trace``
drawn as a per-rank timeline, for readers who cannot reach ui.perfetto.dev.

One lane per rank (and per thread of a rank that used several), each MPI call
a bar coloured by its name, the part it waited drawn hatched over it, an arrow
from each send to the receive it matched and from a collective's last arrival
to each other member's return, time in milliseconds from the job's start. ``--window START:END`` (ms) draws a part of
the run; by default the whole span of the program's calls. matplotlib, the
plot extra, is imported only here.
"""
import argparse
import json
import sys

from .plot import PlotUnavailable, _matplotlib

USAGE = "shmrma-bench timeline TRACE.json OUT.png [--window START:END] [--title TEXT]"
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
           "tab:pink", "tab:olive", "tab:cyan")
OTHER_COLOUR = "tab:gray"
DPI = 110


def lanes(trace):
    """{(rank, thread): label} of the trace's ranks and threads, in order."""
    ranks = {event["pid"]: event["args"]["name"] for event in trace["traceEvents"]
             if event["name"] == "process_name" and event["args"]["name"] != "job"}
    used = sorted({(event["pid"], event["tid"]) for event in trace["traceEvents"]
                   if event.get("cat") == "mpi"})
    threads = {}
    for rank, thread in used:
        threads.setdefault(rank, []).append(thread)
    out = {}
    for rank in sorted(ranks):
        for thread in threads.get(rank, [0]):
            several = len(threads.get(rank, [])) > 1
            out[(rank, thread)] = ranks[rank] + (" t%d" % thread if several else "")
    return out


def draw(trace, path, window=None, title=None):
    """Draw ``trace`` (the parsed JSON) into the PNG ``path``; returns it."""
    Figure, FigureCanvasAgg = _matplotlib("shmrma-bench timeline")
    calls = [event for event in trace["traceEvents"] if event.get("cat") == "mpi"]
    waits = [event for event in trace["traceEvents"] if event.get("cat") == "wait"]
    if not calls:
        raise ValueError("the trace has no MPI call to draw")
    start, end = window or (min(e["ts"] for e in calls) / 1e3,
                            max(e["ts"] + e["dur"] for e in calls) / 1e3)
    shown = lanes(trace)
    row = {lane: index for index, lane in enumerate(shown)}
    colours = _colours(calls, start, end)
    fig = Figure(figsize=(11, 1.2 + 0.45 * len(shown)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    by_colour = {}
    for event in calls:
        by_colour.setdefault(colours.get(event["name"], OTHER_COLOUR), []).append(event)
    for colour, events in by_colour.items():
        _bars(ax, events, row, start, end, colour)
    _bars(ax, waits, row, start, end, "none", hatch="////", edge="black")
    _arrows(ax, trace, row, start, end)
    ax.set_yticks(range(len(shown)), list(shown.values()))
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.set_xlim(start, end)
    ax.set_xlabel("ms from the job's start")
    handles = [_patch(colour, name) for name, colour in colours.items()]
    handles += [_patch(OTHER_COLOUR, "other calls"),
                _patch("none", "waiting", hatch="////", edge="black")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    ax.set_title(title or "shmrma-run --trace: each rank's MPI calls")
    fig.savefig(path, dpi=DPI)
    return path


def _colours(calls, start, end):
    """A colour for each of the calls that take the most time in the window."""
    spent = {}
    for event in calls:
        if event["ts"] / 1e3 < end and (event["ts"] + event["dur"]) / 1e3 > start:
            spent[event["name"]] = spent.get(event["name"], 0) + event["dur"]
    top = sorted(spent, key=lambda name: -spent[name])[:len(COLOURS)]
    return dict(zip(sorted(top), COLOURS))


def _bars(ax, events, row, start, end, colour, hatch=None, edge=None):
    by_lane = {}
    for event in events:
        lane = (event["pid"], event["tid"])
        left, width = event["ts"] / 1e3, event["dur"] / 1e3
        if lane in row and left < end and left + width > start:
            by_lane.setdefault(lane, []).append((left, max(width, (end - start) / 4000)))
    for lane, spans in by_lane.items():
        ax.broken_barh(spans, (row[lane] - 0.35, 0.7), facecolors=colour, hatch=hatch,
                       edgecolor=edge, linewidth=0)


def _arrows(ax, trace, row, start, end):
    """The trace's arrows (a send to its receive, a collective's last arrival to
    each other member) that start and end in the window."""
    ends = {}
    for event in trace["traceEvents"]:
        if event.get("cat") == "flow":
            ends.setdefault(event["id"], {})[event["ph"]] = event
    for pair in ends.values():
        source, target = pair.get("s"), pair.get("f")
        if source is None or target is None:
            continue
        points = [((e["ts"]) / 1e3, row.get((e["pid"], e["tid"]))) for e in (source, target)]
        if None in (points[0][1], points[1][1]) or not all(
                start <= x <= end for x, _ in points):
            continue
        ax.annotate("", xy=points[1], xytext=points[0],
                    arrowprops=dict(arrowstyle="->", color="black", linewidth=0.6,
                                    shrinkA=0, shrinkB=0))


def _patch(colour, label, hatch=None, edge=None):
    from matplotlib.patches import Patch
    return Patch(facecolor=colour, hatch=hatch, edgecolor=edge, label=label)


def _window(text):
    try:
        start, end = (float(part) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError("--window takes START:END in ms, such as 10:12.5")
    if end <= start:
        raise argparse.ArgumentTypeError("--window: END must be after START")
    return start, end


def main(argv):
    parser = argparse.ArgumentParser(prog="shmrma-bench timeline", usage=USAGE,
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", help="a trace written by shmrma-run --trace")
    parser.add_argument("out", help="the PNG to draw")
    parser.add_argument("--window", type=_window, help="START:END, in ms from the start")
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    try:
        with open(args.trace) as f:
            trace = json.load(f)
        draw(trace, args.out, args.window, args.title)
    except (OSError, ValueError, KeyError) as exc:
        print("shmrma-bench timeline: %s: %s" % (args.trace, exc), file=sys.stderr)
        return 1
    except PlotUnavailable as exc:
        print("shmrma-bench timeline: %s" % exc, file=sys.stderr)
        return 2
    print(args.out)
    return 0
