"""``shmrma-bench compare``'s sweeps, progress bar, memory case and RESULTS.md
(issue 6: "--plot draws latency and bandwidth against message size", "a progress
bar on long runs", "Memory", "benchmarks/RESULTS.md is produced by one documented
command"). Synthetic samples only: arithmetic and format, never timings."""
import io
import types

import pytest

from shmrma.bench import compare, jobs

OSU_OUT = """# OSU MPI_Put Latency Test v7.4
# Window creation: MPI_Win_allocate
# Synchronization: MPI_Win_flush
# Size          Latency (us)
1                         0.50
2                         0.40
4                         0.30
"""


def sweep_samples():
    """Two runs of a latency sweep on both sides; mpi4py lacks size 4 in one run."""
    lat = compare.SweepCase("osu_put_latency")
    bw = compare.SweepCase("osu_put_bw")
    samples = {
        lat.title: {"shmrma": [{1: 1.0, 2: 2.0, 4: 3.0}, {1: 3.0, 2: 2.0, 4: 3.0}],
                    "mpi4py": [{1: 4.0, 2: 4.0, 4: 6.0}, {1: 4.0, 2: 4.0}]},
        bw.title: {"shmrma": [{1: 10.0}, {1: 10.0}], "mpi4py": [{1: 5.0}, {1: 5.0}]},
    }
    return [lat, bw], samples


def test_a_sweep_case_reads_every_row():
    case = compare.SweepCase("osu_put_latency")
    assert case.value(OSU_OUT) == {1: 0.5, 2: 0.4, 4: 0.3}
    assert case.headline(case.value(OSU_OUT)) == 0.3
    assert case.flags == ["-m", "1:%d" % (4 * compare.MIB)] and case.unit == "us"
    assert compare.SweepCase("osu_get_bw").unit == "MB/s"


def test_sweeps_take_medians_per_size_and_invert_bandwidth_ratios():
    cases, samples = sweep_samples()
    lat, bw = compare.sweeps(cases, samples)
    assert lat["sizes"] == [1, 2, 4]
    assert lat["series"] == {"shmrma": [2.0, 2.0, 3.0], "mpi4py": [4.0, 4.0, 6.0]}
    assert lat["noisy"]["shmrma"] == [True, False, False]
    assert [compare.sweep_ratio(lat, i) for i in range(3)] == [0.5, 0.5, 0.5]
    # bandwidth: shmrma twice as fast is a time ratio of 0.5 too
    assert bw["higher_is_better"] and compare.sweep_ratio(bw, 0) == 0.5
    # sweep cases stay out of the one-size table
    assert compare.table(cases, samples) == []


def test_results_markdown_holds_command_table_sweeps_and_facts(tmp_path, capsys):
    cases, samples = sweep_samples()
    single = compare.Case("Put 8 B + Flush, us", "osu_put_latency", 8, against_mpi4py=0.25)
    samples[single.title] = {"shmrma": [0.3, 0.3], "mpi4py": [2.0, 2.0]}
    rows = compare.table([single], samples)
    facts = {"elapsed_s": 12.0, "mpi4py": "4.1.2", "mpi_library": "MPICH 5.0.2",
             "cpu_model": "cpu", "nproc": 2, "python": "3.11", "numpy": "2",
             "shmrma_native_backend": "c", "loadavg_start": (1.0, 1.0, 1.0)}
    opts = types.SimpleNamespace(suite="all", reps=2, quick=True)
    path = tmp_path / "bench" / "RESULTS.md"
    compare.write_results(str(path), facts, opts, rows, compare.sweeps(cases, samples),
                          str(tmp_path / "bench" / "RESULTS.png"))
    text = path.read_text()
    assert "`shmrma-bench compare --suite all --reps 2 --quick --results " in text
    assert "| Put 8 B + Flush, us | 0.30 | 2.00 | mpi4py | 0.15 | <= 0.25 | PASS |" in text
    assert "![latency and bandwidth against message size](RESULTS.png)" in text
    assert "## osu_put_latency, us" in text and "| 1 | 2.00 | 4.00 | 0.50 |" in text
    assert '"mpi_library": "MPICH 5.0.2"' in text


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere():
    log = io.StringIO()
    bar = jobs.Progress(3, log)
    for what in ("a", "b", "c"):
        bar.step(what)
    bar.done()
    lines = log.getvalue().splitlines()
    assert len(lines) == 3 and lines[0].startswith("[" + "#" * 8 + "." * 16 + "] 1/3, ")
    assert " left  a" in lines[0] and lines[2].startswith("[" + "#" * 24 + "] 3/3, 0s left")
    tty = _Terminal()
    bar = jobs.Progress(2, tty)
    bar.step("x")
    bar.step("y")
    bar.done()
    assert tty.getvalue().count("\r\033[K") == 2 and tty.getvalue().endswith("y\n")


def test_memory_case_reads_the_job_pss_in_mib():
    case = compare.MemoryCase("t", 4, "16M")
    out = "memory_ranks 4\nmemory_pss_kib 2048\nmemory_window_pss_kib 1024\n"
    assert case.value(out) == 2.0
    assert case.argv("mpi4py", True)[-2:] == ["shmrma.bench.memory", "16M"]
    with pytest.raises(jobs.RunFailed, match="memory_pss_kib"):
        case.value("nothing")
    assert [c.nranks for c in compare.MEMORY_SUITE] == [2, 4, 8]


def test_every_suite_measures_a_title_once():
    """Samples are kept by title: a case listed twice would mix two runs per round."""
    for name, suite in compare.SUITES.items():
        titles = [case.title for case in suite]
        assert len(titles) == len(set(titles)), name
    assert len(compare.SUITES["all"]) == len({c.title for c in
                                              sum(compare.SUITES.values(), ())})
