"""shmrma-bench compare --plot: shmrma/bench/plot.py draws a PNG, and says what
to install when matplotlib is missing."""
import os
import struct
import sys

import pytest

from shmrma.bench import cli, compare, jobs, plot

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def fake_sweeps():
    """A latency and a bandwidth sweep over 4 sizes; mpi4py misses two points,
    one shmrma point is noisy, numpy is present in one sweep only."""
    sizes = [1, 64, 4096, 1 << 20]
    return [
        {"title": "osu_put_latency", "unit": "us", "higher_is_better": False,
         "sizes": sizes,
         "series": {"shmrma": [0.4, 0.5, 1.1, 90.0], "mpi4py": [0.9, None, 2.0, None]},
         "noisy": {"shmrma": [False, True, False, False], "mpi4py": [False] * 4}},
        {"title": "osu_put_bw", "unit": "MB/s", "higher_is_better": True,
         "sizes": sizes,
         "series": {"shmrma": [5.0, 300.0, 6000.0, 9000.0],
                    "mpi4py": [2.0, 150.0, 4000.0, 8500.0],
                    "numpy": [20.0, 900.0, 9000.0, 10000.0]}},
    ]


def png_size(path):
    """(width, height) from the IHDR chunk, which always follows the signature."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == PNG_SIGNATURE
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def test_draw_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "compare.png"
    assert plot.draw(fake_sweeps(), path, title="shmrma vs mpi4py") == path
    width, height = png_size(path)
    # Two columns of ~5 in at 110 dpi, two stacked axes each.
    assert 700 < width < 1600 and 400 < height < 1000, (width, height)
    from matplotlib.image import imread
    assert imread(path).shape[:2] == (height, width)


def test_draw_grid_of_many_sweeps(tmp_path):
    pytest.importorskip("matplotlib")
    sweeps = fake_sweeps() * 2 + fake_sweeps()[:1]   # 5 sweeps: 3 columns, 2 rows
    width, height = png_size(plot.draw(sweeps, tmp_path / "grid.png"))
    # Three columns of ~5 in and two rows of stacked axes, not five columns.
    assert 1400 < width < 2200 and 900 < height < 1400, (width, height)


def test_draw_rejects_ragged_series(tmp_path):
    pytest.importorskip("matplotlib")
    sweeps = fake_sweeps()
    sweeps[0]["series"]["mpi4py"].pop()
    with pytest.raises(ValueError, match="mpi4py has 3 values for 4 sizes"):
        plot.draw(sweeps, tmp_path / "bad.png")


def test_byte_labels():
    assert [plot.byte_label(n) for n in (1, 8, 512, 4096, 1 << 18, 1 << 21, 1536)] == \
        ["1", "8", "512", "4K", "256K", "2M", "1.5K"]


def hide_matplotlib(monkeypatch):
    # None in sys.modules makes an import fail; the submodules too, since a
    # cached "matplotlib.figure" would otherwise be found without its parent.
    for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_missing_matplotlib_says_what_to_install(tmp_path, monkeypatch):
    hide_matplotlib(monkeypatch)
    path = tmp_path / "compare.png"
    with pytest.raises(plot.PlotUnavailable, match="pip install matplotlib"):
        plot.draw(fake_sweeps(), path)
    assert issubclass(plot.PlotUnavailable, RuntimeError)
    assert not path.exists()
    assert '.[plot]' in plot.unavailable()


class Measured(Exception):
    """Raised by the stubbed measurement: the command got as far as measuring."""


def stub_compare(monkeypatch):
    """compare with nothing launched: no references, and measuring raises Measured."""
    def measure(*args):
        raise Measured()
    monkeypatch.setattr(jobs, "reference_missing", lambda: "stubbed")
    monkeypatch.setattr(compare, "measure", measure)


def test_compare_plot_without_matplotlib_stops_before_measuring(
        tmp_path, monkeypatch, capsys):
    """--plot without matplotlib: exit 2 at once, saying to install the plot extra,
    rather than failing after the whole run and losing its numbers."""
    hide_matplotlib(monkeypatch)
    stub_compare(monkeypatch)
    status = cli.main(["compare", "--suite", "sweep", "--plot", str(tmp_path / "s.png"),
                       "--json", str(tmp_path / "s.json")])
    err = capsys.readouterr().err
    assert status == 2 and "matplotlib" in err and 'pip install -e ".[plot]"' in err, err
    assert "nothing was run" in err and not os.listdir(tmp_path)


@pytest.mark.parametrize("suite", ["memory", "windows"])
def test_compare_plot_with_a_suite_that_draws_nothing_says_so(
        suite, tmp_path, monkeypatch, capsys):
    """--plot with a suite without sweeps: a note that nothing will be drawn, and the
    run goes on (matplotlib is not needed for it)."""
    hide_matplotlib(monkeypatch)
    stub_compare(monkeypatch)
    with pytest.raises(Measured):
        cli.main(["compare", "--suite", suite, "--plot", str(tmp_path / "s.png")])
    err = capsys.readouterr().err
    assert "suite %s has no sweep to draw" % suite in err, err


def test_compare_plot_with_matplotlib_goes_on_to_measure(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    stub_compare(monkeypatch)
    with pytest.raises(Measured):
        cli.main(["compare", "--suite", "all", "--plot", str(tmp_path / "s.png")])
