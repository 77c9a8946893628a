"""``shmrma-bench compare``'s sweeps, progress bar, memory case and RESULTS.md
(issue 6: "--plot draws latency and bandwidth against message size", "a progress
bar on long runs", "Memory", "benchmarks/RESULTS.md is produced by one documented
command"). Synthetic samples only: arithmetic and format, never timings."""
import io
import json
import os
import types

import pytest

from shmrma.bench import compare, jobs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

OSU_OUT = """# OSU MPI_Put Latency Test v7.4
# Window creation: MPI_Win_allocate
# Synchronization: MPI_Win_flush
# Size          Latency (us)
1                       0.50
2                       0.40
4                       0.30
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
    assert "Ratios are shmrma / reference as a time (below 1: shmrma is faster)." in text
    assert compare.RATIO_LEGEND % (compare.NOISY * 100) in text
    assert "Median per size; %s." % compare.SWEEP_LEGEND in text


def test_results_name_each_missed_target_with_its_known_reason():
    """Issue 6: "where a target ... is still missed, say which and why"."""
    put_bw = compare.WINDOWS_SUITE[5]
    acc = compare.WINDOWS_SUITE[7]
    unknown = compare.Case("A row nobody explained, us", "osu_put_latency", 8,
                           against_mpi4py=1.0)
    samples = {put_bw.title: {"shmrma": [7000.0], "mpi4py": [7700.0], "numpy": [7500.0]},
               acc.title: {"shmrma": [700.0], "mpi4py": [600.0]},
               unknown.title: {"shmrma": [2.0], "mpi4py": [1.0]}}
    rows = compare.table([put_bw, acc, unknown], samples)
    lines = compare.missed(rows)
    assert lines[:3] == ["", "Targets this run missed:", ""] and len(lines) == 6
    assert lines[3].startswith("- Put bandwidth 4 MiB, MB/s against mpi4py: 1.10, "
                               "target <= 1.00. Each side's transfer is one memcpy of 4 MiB")
    assert lines[4].startswith("- Accumulate 8 MiB float64 SUM + Flush, us against mpi4py: "
                               "1.17, target <= 1.00. Memory-bound")
    assert lines[5] == ("- A row nobody explained, us against mpi4py: 2.00, target <= "
                        "1.00. No known reason: investigate.")
    # the row against numpy's copy passes (7500 / 7000 <= 1 / 0.9): not listed
    assert compare.missed(compare.table([acc], {acc.title: {"shmrma": [5.0],
                                                             "mpi4py": [6.0]}})) == []


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
    runs = io.StringIO()
    jobs.Progress(2, runs, unit="runs").step("a")
    assert runs.getvalue().startswith("[" + "#" * 12 + "." * 12 + "] 1/2 runs, ")
    tty = _Terminal()
    bar = jobs.Progress(2, tty)
    bar.step("x")
    bar.step("y")
    bar.done()
    assert tty.getvalue().count("\r\033[K") == 2 and tty.getvalue().endswith("y\n")


def test_memory_case_reads_the_job_pss_rss_and_shared_in_mib():
    case = compare.MemoryCase("t", 4, "16M")
    out = ("memory_ranks 4\nmemory_pss_kib 2048\nmemory_window_pss_kib 1024\n"
           "memory_rss_kib 4096\nmemory_shared_kib 3072\nmemory_private_kib 1024\n")
    assert case.value(out) == {"pss": 2.0, "rss": 4.0, "shared": 3.0}
    assert case.headline(case.value(out)) == 2.0
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


# ---------------------------------------------------------------- counters on the mpi backend
# Issue: "The notification and halo benchmarks run on both backends side by side, so a
# user can see what the counters cost on each". The counters cases also run as
# "shmrma-mpi": shmrma's rank program (counters included) under shmrma-run --backend mpi.

def test_shmrma_mpi_launches_shmrma_run_with_the_mpi_backend():
    program = ["-m", "shmrma.bench.notify", "counters", "20"]
    shm, mpi = jobs.launcher_argv("shmrma", 2, program), jobs.launcher_argv(
        "shmrma-mpi", 2, program)
    assert mpi[-8:] == ["--backend", "mpi", "-n", "2"] + program
    assert mpi[:-8] == shm[:-6]                      # the same shmrma-run
    assert "--backend" not in shm and shm[-6:] == ["-n", "2"] + program
    assert "--backend" not in jobs.launcher_argv("mpi4py", 2, program)


def test_child_env_names_the_implementation_and_pins_the_backend(monkeypatch):
    monkeypatch.setenv("SHMRMA_BACKEND", "mpi")       # a user's default is not the job's
    assert jobs.child_env("shmrma")["SHMRMA_BACKEND"] == "shm"
    env = jobs.child_env("shmrma-mpi")
    assert env["SHMRMA_BENCH_IMPL"] == "shmrma-mpi" and env["SHMRMA_BACKEND"] == "mpi"
    for impl in ("mpi4py", "numpy"):
        assert "SHMRMA_BACKEND" not in jobs.child_env(impl)


def test_shmrma_mpi_rank_programs_take_shmrmas_namespace(monkeypatch):
    """The rank program under "shmrma-mpi" runs shmrma's code path: ``from shmrma
    import MPI`` (the backend picks mpi4py underneath), never mpi4py's bare one."""
    import shmrma.MPI
    monkeypatch.setenv("SHMRMA_BENCH_IMPL", "shmrma-mpi")
    assert jobs.current_impl() == "shmrma-mpi"
    assert jobs.mpi_module() is shmrma.MPI


def counters_cases():
    notify, _, _, halo = compare.COUNTERS_SUITE[:4]
    return notify, halo


def test_counters_suite_sets_a2_beside_a3_and_runs_both_at_9_ranks():
    """Issue 14's rows: the proposal's Example A2 (messages) against the same
    reference as A3 (mpi4py's Fence), and the halos at 9 ranks."""
    by_title = {case.title: case for case in compare.COUNTERS_SUITE}
    a2 = by_title["Halo A2 n=4: shmrma messages vs mpi4py Fence, us/iter"]
    assert a2.argv("shmrma", True)[-2] == "messages" and a2.argv("mpi4py", True)[-2] == "fence"
    for title, form in (("Halo A3 n=9: shmrma counters vs mpi4py Fence, us/iter", "counters"),
                        ("Halo n=9: Fence on both, us/iter", "fence")):
        argv = by_title[title].argv("shmrma", True)
        assert argv[argv.index("-n") + 1] == "9" and argv[-2] == form


def test_counters_cases_run_on_both_backends_and_mpi4py():
    notify, halo = counters_cases()
    for case, form, reference in ((notify, "counters", "standard"), (halo, "counters",
                                                                      "fence")):
        assert case.impls(True) == ["shmrma", "shmrma-mpi", "mpi4py"]
        assert case.impls(False) == ["shmrma"]       # no mpi4py: no mpi backend either
        on_mpi = case.argv("shmrma-mpi", quick=True)
        assert on_mpi[on_mpi.index("--backend") + 1] == "mpi"
        assert on_mpi[-2] == form and case.argv("shmrma", True)[-2] == form
        assert case.argv("mpi4py", True)[-2] == reference
        assert len(case.on_mpi_backend) == 2
    assert halo.nranks == 4 and on_mpi[on_mpi.index("-n") + 1] == "4"
    # the other forms (per-message requests, MPI-3 calls) stay shmrma against mpi4py
    for case in compare.COUNTERS_SUITE:
        if case not in (notify, halo):
            assert case.impls(True) == ["shmrma", "mpi4py"] and not case.on_mpi_backend


def test_counters_table_adds_mpi_backend_rows_and_keeps_the_old_ones(capsys):
    notify, halo = counters_cases()
    samples = {notify.title: {"shmrma": [1.0, 1.0], "shmrma-mpi": [12.0, 12.0],
                              "mpi4py": [4.0, 4.0]},
               halo.title: {"shmrma": [100.0, 100.0], "shmrma-mpi": [300.0, 300.0],
                            "mpi4py": [200.0, 200.0]}}
    rows = compare.table([notify, halo], samples)
    assert [(r["metric"], r["against"]) for r in rows] == [
        (notify.title, "mpi4py"),
        (notify.on_mpi_backend[0], "shmrma on shm"), (notify.on_mpi_backend[1], "mpi4py"),
        (halo.title, "mpi4py"),
        (halo.on_mpi_backend[0], "shmrma on shm"), (halo.on_mpi_backend[1], "mpi4py")]
    # the existing rows: shm counters against mpi4py, the target unchanged
    assert rows[0]["shmrma"] == "1.00" and rows[0]["ratio"] == 0.25
    assert rows[0]["target"] == 0.3 and rows[3]["target"] == 0.5    # issue 14, Halo A3
    # mpi backend / shm (informs), and mpi backend / mpi4py's MPI-3 form (issue 14's
    # target for the notification, none for the halo)
    assert (rows[1]["shmrma"], rows[1]["reference"], rows[1]["ratio"]) == ("12.00", "1.00",
                                                                           12.0)
    assert (rows[2]["shmrma"], rows[2]["reference"], rows[2]["ratio"]) == ("12.00", "4.00",
                                                                           3.0)
    assert rows[4]["ratio"] == 3.0 and rows[5]["ratio"] == 1.5
    assert rows[2]["target"] == 1.2
    assert all(r["target"] is None for r in rows[1:2] + rows[4:])
    jobs.print_table(rows, columns=("shmrma", "reference", "against"))
    out = capsys.readouterr().out
    line = [x for x in out.splitlines() if x.startswith(notify.on_mpi_backend[0])][0]
    assert line.split()[-8:] == ["12.00", "1.00", "shmrma", "on", "shm", "12.00", "-", "n/a"]


def test_own_ratios_set_the_proposals_forms_against_shmrmas_standard_forms():
    """Issue 14's targets that compare shmrma with itself (the notifications with the
    MPI-3 form and with a message, the window barrier with Fence at 2, 4 and 8
    ranks, A3 with the Fence halo): rows from the two cases of the same run, only
    when both ran."""
    by_title = {case.title: case for case in compare.SUITES["all"]}
    a3, fence = (by_title[t] for t in ("Halo A3 n=4: shmrma counters vs mpi4py Fence, us/iter",
                                       "Halo n=4: Fence on both, us/iter"))
    samples = {a3.title: {"shmrma": [40.0, 40.0], "mpi4py": [100.0, 100.0]},
               fence.title: {"shmrma": [80.0, 80.0], "mpi4py": [100.0, 100.0]}}
    rows = compare.table([a3, fence], samples)
    own = rows[-1]
    assert own["metric"] == "Halo A3 n=4: counters vs Fence, shmrma both, us/iter"
    assert (own["ratio"], own["target"], own["against"]) == (0.5, 0.8, "shmrma Fence")
    assert len(compare.table([a3], {a3.title: samples[a3.title]})) == 1
    titles = {own[0] for own in compare.OWN_RATIOS}
    assert {"Window barrier vs Fence round n=%d, shmrma both, us" % n
            for n in (2, 4, 8)} <= titles
    counters = {case.title for case in compare.SUITES["counters"]}
    for _, form, against, _, _ in compare.OWN_RATIOS:
        assert form in by_title and against in by_title     # no title drifted away
        assert form in counters and against in counters     # the suite alone has them


def test_counters_table_without_the_mpi_backend_keeps_the_old_rows():
    """Without mpi4py only shmrma ran: no mpi backend rows."""
    notify, halo = counters_cases()
    rows = compare.table([notify, halo], {notify.title: {"shmrma": [1.0]},
                                          halo.title: {"shmrma": [2.0]}})
    assert [r["metric"] for r in rows] == [notify.title, halo.title]   # with a target each


@pytest.mark.skipif(jobs.reference_missing() is not None,
                    reason="mpi4py/mpiexec not installed: %s" % jobs.reference_missing())
@pytest.mark.parametrize("bench,nranks", [("notify", 2), ("halo", 3)])
def test_counters_forms_run_on_the_mpi_backend(bench, nranks):
    """The counters forms run as "shmrma-mpi" (shmrma-run --backend mpi) and print what
    the cases read; halo's grid equals the one on shm."""
    program = ["-m", "shmrma.bench." + bench, "counters", "30"]
    outs = {}
    for impl in ("shmrma", "shmrma-mpi"):
        _, status, out, err = jobs.run_job(jobs.launcher_argv(impl, nranks, program),
                                           jobs.child_env(impl), 60, cwd=REPO)
        assert status == 0, err
        case = compare.NotifyCase("t", "counters") if bench == "notify" else \
            compare.HaloCase("t", "counters")
        assert case.value(out) > 0
        outs[impl] = [line for line in out.splitlines() if line.startswith("halo_sum")]
    assert outs["shmrma"] == outs["shmrma-mpi"]


def test_single_benchmarks_take_impl_shmrma_mpi():
    from shmrma.bench import cli
    assert cli.take_impl(["-m", "8:8", "--impl=shmrma-mpi"]) == ("shmrma-mpi", ["-m", "8:8"])
    assert "shmrma-mpi" in cli.USAGE


# ---------------------------------------------------------------- rows from the same runs

def test_memory_rows_show_pss_rss_and_shared():
    """The memory suite: a PSS row, then RSS and shared memory from the same runs,
    each a ratio shmrma / mpi4py."""
    case = compare.MEMORY_SUITE[0]
    samples = {case.title: {
        "shmrma": [{"pss": 20.0, "rss": 60.0, "shared": 40.0}] * 2,
        "mpi4py": [{"pss": 40.0, "rss": 80.0, "shared": 30.0}] * 2}}
    rows = compare.table([case], samples)
    assert [r["metric"] for r in rows] == [
        case.title, "Job RSS (shared pages counted by every rank), n=2 x 16 MiB window, MiB",
        "Job shared memory (Shared_Clean + Shared_Dirty), n=2 x 16 MiB window, MiB"]
    assert [(r["shmrma"], r["reference"]) for r in rows] == [
        ("20.00", "40.00"), ("60.00", "80.00"), ("40.00", "30.00")]
    assert [r["ratio"] for r in rows] == pytest.approx([0.5, 0.75, 4 / 3])
    assert all(r["target"] is None for r in rows)


def test_scaling_accumulate_adds_the_rate_of_all_ranks():
    """Accumulates to one target: besides us per call and rank, n / us Mops/s of the
    n ranks together (n x iterations / elapsed), its ratio a time ratio too."""
    case, = [c for c in compare.SCALING_SUITE if c.kind == "accumulate" and c.nranks == 4]
    rows = compare.table([case], {case.title: {"shmrma": [2.0, 2.0], "mpi4py": [8.0, 8.0]}})
    assert [r["metric"] for r in rows] == [
        case.title, "Accumulate 8 B to rank 0, all 4 ranks together, Mops/s"]
    us, rate = rows
    assert (rate["shmrma"], rate["reference"]) == ("2.00", "0.50")
    assert rate["ratio"] == us["ratio"] == 0.25 and rate["target"] is None
    assert rate["stats"]["shmrma"] == {"median": 2.0, "min": 2.0, "max": 2.0, "noisy": False}
    rates = [c for c in compare.SCALING_SUITE if c.extras]
    assert [(c.kind, c.nranks) for c in rates] == [("accumulate", n) for n in (2, 4, 8, 16)]


# ---------------------------------------------------------------- --json

def fake_samples(cases):
    """What measure() would return, two runs per implementation, no job started."""
    def runs(case, i):
        if isinstance(case, compare.SweepCase):
            return [{1: 1.0 + i, 2: 2.0 + i}, {1: 1.2 + i, 2: 2.0 + i}]
        if isinstance(case, compare.MemoryCase):
            return [{"pss": 10.0 + i, "rss": 30.0 + i, "shared": 20.0 + i}] * 2
        if isinstance(case, compare.ProgramCase):
            return [dict({key: 5.0 + i for _, key, _ in case.figures}, wall=1.0 + i)] * 2
        return [1.0 + i, 1.2 + i]
    return {case.title: {impl: runs(case, i) for i, impl in enumerate(case.impls(True))}
            for case in cases}


def test_json_holds_numbers_sweeps_and_machine_facts(tmp_path, monkeypatch, capsys):
    """--json: each row's median, min, max, noisy and ratio as numbers, the sweeps
    per size, and the machine facts; measurement stubbed, nothing launched."""
    monkeypatch.setattr(jobs, "reference_missing", lambda: None)
    monkeypatch.setattr(jobs, "_mpi_versions", lambda: ("4.1.2", "MPICH 5.0.2"))
    monkeypatch.setattr(compare, "measure", lambda cases, *args: fake_samples(cases))
    monkeypatch.setattr(compare.programs, "mpi4py_sources", lambda: str(tmp_path))
    path = tmp_path / "run.json"
    opts = types.SimpleNamespace(suite="all", reps=2, quick=True, json=str(path), plot=None,
                                 results=None, shmrma_path=None)
    assert compare.run(opts) == 0
    doc = json.loads(path.read_text())
    facts = doc["facts"]
    for key in ("nproc", "cpu_model", "python", "numpy", "mpi_library", "mpi4py"):
        assert facts[key] is not None, key
    assert (facts["mpi4py"], facts["mpi_library"]) == ("4.1.2", "MPICH 5.0.2")
    first = doc["table"][0]
    assert first["metric"] == compare.WINDOWS_SUITE[0].title
    assert first["stats"] == {"shmrma": {"median": 1.1, "min": 1.0, "max": 1.2, "noisy": False},
                              "reference": {"median": 2.1, "min": 2.0, "max": 2.2,
                                            "noisy": False}}
    assert first["ratio"] == pytest.approx(1.1 / 2.1)
    for row in doc["table"]:
        assert isinstance(row["stats"]["shmrma"]["median"], float), row["metric"]
        assert isinstance(row["stats"]["shmrma"]["noisy"], bool)
        assert row["ratio"] is None or isinstance(row["ratio"], float)
    metrics = [row["metric"] for row in doc["table"]]
    assert any(m.startswith("Job RSS") for m in metrics)
    assert any(m.endswith("Mops/s") for m in metrics)
    sweep = doc["sweeps"][0]
    assert (sweep["title"], sweep["sizes"]) == ("osu_put_latency", [1, 2])
    assert sweep["stats"]["shmrma"][0] == {"median": 1.1, "min": 1.0, "max": 1.2,
                                           "noisy": False}
    assert sweep["series"]["mpi4py"] == [2.1, 3.0]
    out = capsys.readouterr().out
    assert "raw numbers: %s" % path in out
    # the printed tables say which way their ratios read
    assert compare.RATIO_LEGEND % (compare.NOISY * 100) in out
    assert "ratio = shmrma / reference as a time" in out and "below 1 shmrma is faster" in out
    assert "osu_put_latency (us, median per size; %s)" % compare.SWEEP_LEGEND in out


def test_progress_lines_label_round_implementation_value_and_wall_time():
    line = compare.progress_line(-1, 3, "mpi4py", "Put 8 B + Flush, us", 1.386, 0.31)
    assert line.split() == ["warm-up", "mpi4py", "Put", "8", "B", "+", "Flush,", "us", "=",
                            "1.39", "(this", "run", "took", "0.3", "s)"]
    line = compare.progress_line(0, 3, "shmrma", "Put 8 B + Flush, us", 0.19, 0.2)
    assert line.startswith("round 1/3  shmrma ")
    assert line.endswith("Put 8 B + Flush, us = 0.19  (this run took 0.2 s)")
