"""``shmrma-bench`` (shmrma/bench): argument handling and output format.

These tests check the harness's conventions, not timings: OMB 7.x's defaults
per benchmark, its -w/-s/-m/-i/-x/-T/-W options, sizes doubling from MIN, and
its header and column layout, as OMB 7.x's sources have them. Every
run is tiny (-i 3 -x 1, a few bytes) and no number is compared with another;
only compare.py's arithmetic is checked, on synthetic samples. Usage errors
exit 2 with a message on stderr and launch nothing. No /dev/shm/shmrma.*
segment may be left behind (conftest.py checks the session too).
"""
import os
import re
import subprocess
import sys
import time
import types

import conftest
import pytest

from shmrma.bench import cli, compare, jobs, messages, osu as rank_program
from shmrma.bench import sync as sync_kinds
from shmrma.bench import options as osu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
TIMEOUT_S = 60
TINY = ["-i", "3", "-x", "1"]
SHM_DIR = "/dev/shm"

LATENCY = "Latency (us)"
BANDWIDTH = "Bandwidth (MB/s)"

# OMB's row and column-header layout. The value column is FIELD_WIDTH = 18 wide,
# not osu_util.h's fallback of 20: configure.ac's AC_DEFINE([FIELD_WIDTH], [18])
# reaches every compile line (OMB 6.1-7.4), and published outputs have 28-character
# rows ("1                       0.30", OMB 5.8 osu_put_latency; OMB 7.x the same).
OMB_ROW = "%-10d%18.2f"
OMB_COLUMNS = "%-10s%18s"

# Our own regular expressions for the output of one run (third-party parsers'
# are applied in test_third_party_osu_parsers_read_the_output).
TITLE_RE = re.compile(r"^# OSU (.+) Test v(\d+\.\d+)$")
WINDOW_RE = re.compile(r"^# Window creation: (MPI_Win_\w+)$")
SYNC_RE = re.compile(r"^# Synchronization: (MPI_Win_[\w/]+)$")
DATATYPE_RE = re.compile(r"^# Datatype: (MPI_\w+)\.$")
REFERENCE_RE = re.compile(r"^# Reference: (.+)$")
ROW_RE = re.compile(r"^(\d+)\s+(\d+\.\d{2})$")

# OMB 7.x's per-benchmark defaults, written out here independently of options.py:
# name: (title, default -w, default -s, default datatype, unit)
DEFAULTS = {
    "osu_put_latency": ("MPI_Put Latency", "MPI_Win_allocate", "MPI_Win_flush",
                        "MPI_CHAR", LATENCY),
    "osu_get_latency": ("MPI_Get latency", "MPI_Win_allocate", "MPI_Win_flush",
                        "MPI_CHAR", LATENCY),
    "osu_acc_latency": ("MPI_Accumulate latency", "MPI_Win_allocate", "MPI_Win_flush",
                        "MPI_CHAR", LATENCY),
    "osu_get_acc_latency": ("MPI_Get_accumulate latency", "MPI_Win_create",
                            "MPI_Win_lock/unlock", "MPI_CHAR", LATENCY),
    # one 8-byte integer, not OMB 7.x's MPI_CHAR (options.py's stated difference)
    "osu_fop_latency": ("MPI_Fetch_and_op latency", "MPI_Win_allocate", "MPI_Win_flush",
                        "MPI_LONG_LONG", LATENCY),
    "osu_cas_latency": ("MPI_Compare_and_swap latency", "MPI_Win_allocate",
                        "MPI_Win_flush", "MPI_LONG_LONG", LATENCY),
    "osu_put_bw": ("MPI_Put Bandwidth", "MPI_Win_allocate", "MPI_Win_flush",
                   "MPI_CHAR", BANDWIDTH),
    "osu_get_bw": ("MPI_Get Bandwidth", "MPI_Win_allocate", "MPI_Win_flush",
                   "MPI_CHAR", BANDWIDTH),
    "osu_put_bibw": ("MPI_Put Bi-directional Bandwidth", "MPI_Win_allocate",
                     "MPI_Win_post/start/complete/wait", "MPI_CHAR", BANDWIDTH),
}
ONE_SIZE = ("osu_fop_latency", "osu_cas_latency")
SYNC_NAMES = {"lock": "MPI_Win_lock/unlock", "flush": "MPI_Win_flush",
                 "flush_local": "MPI_Win_flush_local",
                 "lock_all": "MPI_Win_lock_all/unlock_all", "fence": "MPI_Win_fence",
                 "pscw": "MPI_Win_post/start/complete/wait"}
ACTIVE_SYNCS = {"pscw": SYNC_NAMES["pscw"], "fence": SYNC_NAMES["fence"]}
WINDOWS = {"create": "MPI_Win_create", "allocate": "MPI_Win_allocate",
           "dynamic": "MPI_Win_create_dynamic"}


# ---------------------------------------------------------------- helpers

def shmrma_segments():
    return conftest.shmrma_segments()   # this session's jobs' only


@pytest.fixture(scope="module", autouse=True)
def no_segments_left():
    """Every job of this file removes its segments, checked once at the
    end of the module so a leak is reported here and not only at session end."""
    before = shmrma_segments()
    yield
    deadline = time.monotonic() + conftest.LEAK_GRACE_SECONDS
    leaked = shmrma_segments() - before
    while leaked and time.monotonic() < deadline:
        time.sleep(0.05)
        leaked &= shmrma_segments()
    assert not leaked, "segments left in /dev/shm by shmrma-bench jobs: %s" % sorted(leaked)


def bench(*args, timeout=TIMEOUT_S):
    """Run ``python -m shmrma.bench.cli *args``; a CompletedProcess with text output.

    The job has its own process group. On timeout it gets SIGINT first, as from
    Ctrl-C (the launchers then remove their segments), SIGKILL after 5 s.
    """
    argv = [sys.executable, "-m", "shmrma.bench.cli"] + [str(a) for a in args]
    env = dict(os.environ)
    env["PATH"] = BIN + os.pathsep + env.get("PATH", "")
    try:
        _, status, out, err = jobs.run_job(argv, env, timeout, cwd=REPO)
    except jobs.RunFailed as exc:
        pytest.fail(str(exc))
    return subprocess.CompletedProcess(argv, status, out, err)


def ok(*args):
    """A run that must succeed; its stdout."""
    done = bench(*args)
    assert done.returncode == 0, "exit %d\n%s\n%s" % (done.returncode, done.stdout,
                                                       done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def parse(out, reference=False):
    """The header fields and rows of one OMB-style output, checking the layout:
    four header lines (and # Reference: for numpy), the column header, then
    one row per size formatted OMB_ROW and nothing else."""
    lines = out.splitlines()
    head = 6 if reference else 5
    assert len(lines) >= head, out
    fields = {}
    for key, regex, line in zip(
            ("title", "window", "sync", "datatype", "reference"),
            (TITLE_RE, WINDOW_RE, SYNC_RE, DATATYPE_RE, REFERENCE_RE),
            lines[:head - 1]):
        match = regex.match(line)
        assert match, "%r does not match %s" % (line, regex.pattern)
        fields[key] = match.group(1)
    assert TITLE_RE.match(lines[0]).group(2) == "7.4", lines[0]
    fields["columns"] = lines[head - 1]
    rows = []
    for line in lines[head:]:
        match = ROW_RE.match(line)
        assert match, "row %r does not match %s" % (line, ROW_RE.pattern)
        size, value = int(match.group(1)), float(match.group(2))
        assert line == OMB_ROW % (size, value), "row %r not in OMB's layout" % line
        rows.append((size, value))
    fields["sizes"] = [size for size, _ in rows]
    return fields


def check(out, name, sizes, window=None, sync=None, datatype=None, reference=False):
    """``out`` is ``name``'s output with the given sizes and OMB's defaults
    unless told otherwise."""
    title, d_window, d_sync, d_datatype, unit = DEFAULTS[name]
    got = parse(out, reference)
    assert got["title"] == title
    assert got["window"] == (window or d_window)
    assert got["sync"] == (sync or d_sync)
    assert got["datatype"] == (datatype or d_datatype)
    assert got["columns"] == OMB_COLUMNS % ("# Size", unit)
    assert got["sizes"] == sizes
    return got


def call_main(argv, monkeypatch):
    """cli.main in this process with launching forbidden: (status, launched)."""
    launched = []
    monkeypatch.setattr(cli.subprocess, "call",
                        lambda *a, **k: launched.append(a) or 0)
    try:
        status = cli.main(list(argv))
    except SystemExit as exc:
        status = exc.code
    return status, launched


# ---------------------------------------------------------------- every benchmark

@pytest.mark.parametrize("name", [n for n in osu.BENCHMARKS if n != "osu_put_bibw"])
def test_every_benchmark_with_its_defaults(name):
    """OMB's defaults: -w, -s and datatype of each benchmark, its title and unit;
    sizes 1..4 step by doubling, fop and cas one row of one 8-byte integer."""
    out = ok(name, "-m", "1:4", *TINY)
    check(out, name, [8] if name in ONE_SIZE else [1, 2, 4])


@pytest.mark.parametrize("sync", ["pscw", "fence"])
def test_put_bibw_active_modes(sync):
    """osu_put_bibw takes only -s pscw (its default) and -s fence; both ranks
    put in both directions (as in OMB's timed loop)."""
    args = ("-m", "1:4", "-W", "4") + tuple(TINY)
    out = ok("osu_put_bibw", *args) if sync == "pscw" else ok("osu_put_bibw", "-s", sync,
                                                               *args)
    check(out, "osu_put_bibw", [1, 2, 4], sync=ACTIVE_SYNCS[sync])


@pytest.mark.parametrize("sync", sorted(SYNC_NAMES))
def test_put_latency_sync_modes(sync):
    """OMB's timed loop: every -s mode runs and names its calls."""
    out = ok("osu_put_latency", "-s", sync, "-m", "1:2", *TINY)
    check(out, "osu_put_latency", [1, 2], sync=SYNC_NAMES[sync])


@pytest.mark.parametrize("window", sorted(WINDOWS))
def test_get_bw_window_modes(window):
    """OMB: -w create, allocate and dynamic (attach + exchanged base address),
    with -W 4 operations per iteration."""
    out = ok("osu_get_bw", "-w", window, "-W", "4", "-m", "1:4", *TINY)
    check(out, "osu_get_bw", [1, 2, 4], window=WINDOWS[window])


# ---------------------------------------------------------------- output format

@pytest.fixture(scope="module")
def put_latency_out():
    """One tiny run of ``shmrma-bench osu_put_latency -m 1:8``, read by several tests."""
    return ok("osu_put_latency", "-m", "1:8", *TINY)


def test_put_latency_output_is_omb_layout(put_latency_out):
    """OMB's output layout, line by line, for -m 1:8."""
    out = put_latency_out
    lines = out.splitlines()
    assert lines[:5] == ["# OSU MPI_Put Latency Test v7.4",
                         "# Window creation: MPI_Win_allocate",
                         "# Synchronization: MPI_Win_flush",
                         "# Datatype: MPI_CHAR.",
                         OMB_COLUMNS % ("# Size", "Latency (us)")]
    assert lines[4] == "# Size          Latency (us)"        # as OMB 5.8-7.x print it
    rows = lines[5:]
    assert [int(ROW_RE.match(r).group(1)) for r in rows] == [1, 2, 4, 8], out
    for row in rows:
        size, value = ROW_RE.match(row).groups()
        assert row == OMB_ROW % (int(size), float(value))
        assert len(row) == 28
    # compare.py reads the same rows
    assert compare.value_at(out, 8) == float(ROW_RE.match(rows[-1]).group(2))


# ---------------------------------------------------------------- third-party parsers
# Regular expressions of real OSU output parsers, copied verbatim.
#
# GoogleCloudPlatform/PerfKitBenchmarker, perfkitbenchmarker/linux_packages/omb.py
# (commit 023f4466a03e): _HEADERS and _LATENCY_RE.
PKB_HEADERS = [
    re.compile(r'^# Window creation: (?P<window_creation>.*)'),
    re.compile(r'^# Synchronization: (?P<sync>.*)'),
    re.compile(r'^# Number of Sender threads: (?P<sender_threads>\d+)'),
    re.compile(r'^# Number of Receiver threads: (?P<receiver_threads>\d+)'),
    re.compile(r'# \[ pairs: (?P<pairs>\d+) \] '
               r'\[ window size: (?P<window_size>\d+) \]'),
]
PKB_LATENCY_RE = re.compile(r'^(?P<size>\d+)\s+'
                            r'(?P<value>[\d\.]+)\s*$', re.X | re.MULTILINE)


# reframe-hpc/reframe, hpctestlib/microbenchmarks/mpi/osu.py (commit 0af197f1321a):
# the patterns of osu_benchmark.validate_test and _extract_metric. ReFrame's
# sn.assert_found and sn.extractsingle search with re.MULTILINE
# (reframe/utility/sanity.py, finditer and extractiter).
def reframe_sanity_pattern(message_size):
    return rf'^{message_size}'


def reframe_metric_pattern(message_size):
    return rf'^{message_size}\s+(\S+)'


def pkb_parse(txt):
    """(metadata, rows) the way PKB's _ParseBenchmarkMetadata and _ParseBenchmarkData
    read OMB output: every header regex on every line; the lines not starting with
    '#' split on white space into floats."""
    metadata = {}
    for line in txt.splitlines():
        for header in PKB_HEADERS:
            match = header.match(line)
            if match:
                metadata.update(match.groupdict())
                break
    rows = [[float(item) for item in line.split()] for line in txt.splitlines()
            if line and not line.startswith('#')]
    return metadata, rows


def test_third_party_osu_parsers_read_the_output(put_latency_out):
    """PerfKitBenchmarker's and ReFrame's OSU regular expressions, verbatim, read
    shmrma's osu_put_latency output as they read OMB's."""
    out = put_latency_out
    metadata, rows = pkb_parse(out)
    assert metadata == {"window_creation": "MPI_Win_allocate", "sync": "MPI_Win_flush"}
    assert [row[0] for row in rows] == [1, 2, 4, 8] and {len(row) for row in rows} == {2}
    matches = [m.groupdict() for m in PKB_LATENCY_RE.finditer(out)]
    assert [(int(m["size"]), float(m["value"])) for m in matches] == [tuple(r) for r in rows]
    assert "MB/s" not in out                       # PKB's units: usec
    for size in (1, 2, 4, 8):
        assert re.search(reframe_sanity_pattern(size), out, re.MULTILINE)
        found = [float(m.group(1)) for m in
                 re.finditer(reframe_metric_pattern(size), out, re.MULTILINE)]
        assert found == [compare.value_at(out, size)]


def test_third_party_parsers_read_a_bandwidth_output():
    """The same on a bandwidth output (the numpy reference: one process), whose
    "# Reference:" line both parsers pass over."""
    out = ok("osu_put_bw", "--impl", "numpy", "-W", "2", "-m", "1:4", *TINY)
    metadata, rows = pkb_parse(out)
    assert metadata == {"window_creation": "MPI_Win_allocate", "sync": "MPI_Win_flush"}
    assert [row[0] for row in rows] == [1, 2, 4] and {len(row) for row in rows} == {2}
    assert "MB/s" in out                           # PKB's units: MB/s
    assert re.search(reframe_metric_pattern(4), out, re.MULTILINE).group(1) == \
        "%.2f" % rows[-1][1]


def test_fop_and_cas_one_row_of_one_element():
    """OMB's defaults: fop/cas print one row, the element size of -T: 4 for mpi_int."""
    check(ok("osu_fop_latency", "-T", "mpi_int", *TINY), "osu_fop_latency", [4],
          datatype="MPI_INT")
    check(ok("osu_cas_latency", "-T", "mpi_int", "-m", "1:64", *TINY), "osu_cas_latency",
          [4], datatype="MPI_INT")


def test_sizes_double_from_min():
    """OMB steps sizes MIN, 2 MIN, ... up to MAX: -m 3:16 is 3, 6, 12."""
    check(ok("osu_put_latency", "-m", "3:16", *TINY), "osu_put_latency", [3, 6, 12])


def test_acc_sizes_start_at_one_element():
    """OMB's defaults: accumulate counts size / type size elements, so no size below one
    MPI_DOUBLE: -m 1:16 prints 8 and 16."""
    out = ok("osu_acc_latency", "-T", "mpi_double", "-m", "1:16", *TINY)
    check(out, "osu_acc_latency", [8, 16], datatype="MPI_DOUBLE")


def test_acc_size_not_a_multiple_of_the_element():
    """-m 3:16 with -T mpi_int: either a usage error (exit 2, no traceback) or
    rows 6 and 12 with count = size // 4 as OMB does; not a crash."""
    done = bench("osu_acc_latency", "-T", "mpi_int", "-m", "3:16", *TINY)
    assert "Traceback" not in done.stderr, done.stderr[-1500:]
    assert done.returncode in (0, 2), (done.returncode, done.stderr)
    if done.returncode == 0:
        check(done.stdout, "osu_acc_latency", [6, 12], datatype="MPI_INT")


# ---------------------------------------------------------------- usage

USAGE_ERRORS = [
    (["osu_nope"], "osu_nope"),
    (["osu_put_latency", "-m", "0:4"], "-m"),
    (["osu_put_latency", "-m", "8:4"], "-m"),
    (["osu_put_latency", "-m", "abc"], "-m"),
    (["osu_put_latency", "-s", "bogus"], "bogus"),
    (["osu_put_bibw", "-s", "lock"], "lock"),
    (["osu_put_latency", "-w", "bogus"], "bogus"),
    (["osu_put_latency", "-T", "mpi_bogus"], "mpi_bogus"),
    (["osu_put_latency", "-i", "0"], "-i"),
    (["osu_put_latency", "-x", "-1"], "-x"),
    (["osu_put_latency", "--max-iterations", "0"], "--max-iterations"),
    (["osu_put_latency", "-m", "8:x"], "-m"),
    (["osu_put_latency", "-m", "8388608:"], "-m"),         # MIN above the default MAX
    (["osu_put_latency", "-T", "mpi_int"], "-T"),          # put/get move MPI_CHAR
    (["osu_fop_latency", "--impl", "numpy"], "numpy"),     # numpy: put, get, acc only
    (["osu_put_latency", "--impl", "bogus"], "--impl"),
    (["osu_put_latency", "--impl=bogus"], "--impl"),
    (["osu_put_latency", "--impl"], "--impl"),
    (["osu_put_bw", "-W", "0"], "-W"),
    (["osu_put_latency", "-W", "4"], "-W"),       # latency tests take no -W
    (["osu_put_latency", "--impl", "mpi4py", "-m", "8:4"], "-m"),
    (["compare", "--reps", "0"], "--reps"),
]


@pytest.mark.parametrize("argv,named", USAGE_ERRORS,
                         ids=[" ".join(getattr(case, "values", case)[0])
                              for case in USAGE_ERRORS])
def test_usage_errors_exit_2_without_launching(argv, named, monkeypatch):
    """Exit status 2 and a message on stderr naming the culprit, nothing on
    stdout, and (checked in this process) no job started."""
    done = bench(*argv)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert named in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""
    if argv[0] != "compare":
        status, launched = call_main(argv, monkeypatch)
        assert status == 2 and launched == []


def test_missing_reference_is_refused_before_launch(monkeypatch, capsys):
    """--impl mpi4py without mpi4py/mpiexec: exit 2 with the install hint."""
    monkeypatch.setattr(jobs, "reference_missing", lambda: "mpi4py is not installed")
    status, launched = call_main(["osu_put_latency", "--impl", "mpi4py"], monkeypatch)
    assert (status, launched) == (2, [])
    err = capsys.readouterr().err
    assert "mpi4py is not installed" in err and jobs.INSTALL_HINT in err


def test_no_arguments_exits_2_with_usage():
    done = bench()
    assert done.returncode == 2
    assert "usage: shmrma-bench" in done.stdout + done.stderr


@pytest.mark.parametrize("flag", ["--help", "-h", "list"])
def test_help_and_list_name_every_benchmark(flag):
    out = ok(flag)
    for name in osu.BENCHMARKS:
        assert name in out
    if flag == "list":
        lines = {line.split()[0]: line for line in out.splitlines()}
        assert set(lines) == set(osu.BENCHMARKS)
        assert "pscw fence)" in lines["osu_put_bibw"]
        assert "lock flush flush_local lock_all pscw fence" in lines["osu_put_latency"]


def test_version_as_shmrma_run_prints_it():
    """--version prints shmrma's version, as ``shmrma-run --version`` does, and exits 0."""
    from shmrma import __version__
    assert ok("--version") == "shmrma-bench (shmrma) %s\n" % __version__
    assert "--version" in ok("--help")


def test_benchmark_help_shows_omb_options():
    out = ok("osu_put_latency", "--help")
    assert out.startswith("usage: shmrma-bench osu_put_latency")
    for flag in ("-w", "-s", "-m", "-i", "-x", "-T"):
        assert re.search(r"(^|\s)%s[ ,]" % flag, out, re.M), flag
    assert "-W" not in out
    assert "-W" in ok("osu_put_bw", "--help")


# ---------------------------------------------------------------- references

def test_numpy_reference_put_bw():
    """--impl numpy: one process, the same layout plus a # Reference: line."""
    out = ok("osu_put_bw", "--impl", "numpy", "-W", "4", "-m", "1:4", *TINY)
    got = check(out, "osu_put_bw", [1, 2, 4], reference=True)
    assert got["reference"] == "numpy copy in one process, no MPI"


def test_numpy_reference_acc_with_impl_equals():
    out = ok("osu_acc_latency", "--impl=numpy", "-T", "mpi_double", "-m", "1:16", *TINY)
    got = check(out, "osu_acc_latency", [8, 16], datatype="MPI_DOUBLE", reference=True)
    assert got["reference"] == "numpy in-place add in one process, no MPI"


@pytest.mark.skipif(jobs.reference_missing() is not None,
                    reason="mpi4py/mpiexec not installed: %s" % jobs.reference_missing())
def test_mpi4py_reference_same_format():
    out = ok("osu_put_latency", "--impl", "mpi4py", "-m", "1:8", *TINY)
    check(out, "osu_put_latency", [1, 2, 4, 8])


# ---------------------------------------------------------------- compare.py, jobs.py

OUT = "\n".join(["# OSU MPI_Put Latency Test v7.4",
                 "# Window creation: MPI_Win_allocate",
                 "# Synchronization: MPI_Win_flush",
                 "# Datatype: MPI_CHAR.",
                 OMB_COLUMNS % ("# Size", "Latency (us)")]
                + [OMB_ROW % row for row in ((1, 0.5), (16, 1.25), (1024, 12.0))])


def test_value_at_picks_the_row_of_the_size():
    assert compare.value_at(OUT, 1) == 0.5
    assert compare.value_at(OUT, 16) == 1.25
    assert compare.value_at(OUT, 1024) == 12.0
    for size in (2, 8, 102):
        with pytest.raises(jobs.RunFailed, match="no row for size %d" % size):
            compare.value_at(OUT, size)
    with pytest.raises(jobs.RunFailed):
        compare.value_at("", 1)


def test_table_ratios_read_one_way_and_noise():
    """Every ratio is shmrma / reference as a time (bandwidths inverted first): below
    1 shmrma is faster, whatever the row measures or holds it against."""
    lat = compare.Case("lat", "osu_put_latency", 8, against_mpi4py=0.25)
    bw = compare.Case("bw", "osu_get_bw", 4 * compare.MIB, against_mpi4py=1.0,
                      numpy_at_least=0.9)
    alone = compare.Case("alone", "osu_fop_latency", 8, against_mpi4py=0.25)
    samples = {
        "lat": {"shmrma": [1.0, 2.0, 1.5], "mpi4py": [4.0, 4.1, 3.9]},   # spread 0.67
        "bw": {"shmrma": [1000.0, 1100.0, 1050.0], "mpi4py": [500.0, 500.0, 500.0],
               "numpy": [2000.0, 2100.0, 2000.0]},
        "alone": {"shmrma": [3.0]},
    }
    rows = compare.table([lat, bw, alone], samples)
    assert [(r["metric"], r["against"]) for r in rows] == [
        ("lat", "mpi4py"), ("bw", "mpi4py"), ("bw", "numpy copy"), ("alone", "mpi4py")]
    # latency: a time ratio shmrma / mpi4py
    assert rows[0]["ratio"] == pytest.approx(1.5 / 4.0)
    assert rows[0]["target"] == 0.25 and "higher_is_better" not in rows[0]
    assert rows[0]["shmrma"] == "1.50 (noisy)" and rows[0]["reference"] == "4.00"
    # bandwidth: still a time ratio, mpi4py / shmrma
    assert bw.bandwidth and not lat.bandwidth
    assert rows[1]["ratio"] == pytest.approx(500.0 / 1050.0)
    assert rows[1]["shmrma"] == "1050.00" and rows[1]["reference"] == "500.00"
    # numpy: a time ratio too, numpy / shmrma bandwidth; "shmrma's bandwidth at least
    # 0.9 of the copy's" is a target of at most 1 / 0.9
    assert rows[2]["ratio"] == pytest.approx(2000.0 / 1050.0)
    assert rows[2]["target"] == pytest.approx(1 / 0.9) and "higher_is_better" not in rows[2]
    # no mpi4py samples: no ratio
    assert rows[3]["ratio"] is None and rows[3]["reference"] is None


def test_noisy_threshold():
    median = 100.0
    quiet = [median * (1 - compare.NOISY / 2.01), median, median * (1 + compare.NOISY / 2.01)]
    loud = [median * (1 - compare.NOISY / 1.9), median, median * (1 + compare.NOISY / 1.9)]
    assert not compare.summarize(quiet)["noisy"]
    assert compare.summarize(loud)["noisy"]
    assert compare.summarize([0.0, 0.0])["noisy"] is False


def test_suite_cases_are_valid_benchmark_runs():
    """compare's cases launch real benchmarks with flags that parse; -m N:N, and
    --quick adds --max-iterations (a cap per size, not OMB's -i)."""
    for case in compare.WINDOWS_SUITE + tuple(
            c for c in compare.SYNC_SUITE if not isinstance(c, compare.SyncCase)):
        assert case.name in osu.BENCHMARKS
        bench_, opts = osu.parse(case.name, case.flags)
        assert osu.sizes(bench_, opts) == [case.size]
        argv = case.argv("shmrma", quick=True)
        assert argv[argv.index(case.name) - 2:argv.index(case.name)] == [
            "-m", "shmrma.bench.osu"]
        assert "--max-iterations" in argv and "-i" not in argv
        assert "numpy" in case.impls(True) or not case.numpy_at_least


def test_print_table_pass_and_miss(capsys):
    """A row passes when its ratio (a time ratio) is at most its target."""
    rows = [
        {"metric": "lat ok", "shmrma": "1.00", "mpi4py": "5.00", "ratio": 0.2, "target": 0.25},
        {"metric": "lat equal", "shmrma": "1.00", "mpi4py": "4.00", "ratio": 0.25,
         "target": 0.25},
        {"metric": "lat slow", "shmrma": "2.00", "mpi4py": "4.00", "ratio": 0.5,
         "target": 0.25},
        {"metric": "bw ok", "shmrma": "95.00", "mpi4py": "100.00", "ratio": 100 / 95,
         "target": 1 / 0.9},
        {"metric": "bw slow", "shmrma": "50.00", "mpi4py": "100.00", "ratio": 2.0,
         "target": 1 / 0.9},
        {"metric": "no ref", "shmrma": "1.00", "mpi4py": None, "ratio": None,
         "target": 0.25},
    ]
    jobs.print_table(rows)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["measurement", "shmrma", "mpi4py", "ratio", "target"]
    assert set(lines[1]) <= {"-", " "}
    body = {" ".join(line.split()[:2]): line.split() for line in lines[2:]}
    assert body["lat ok"][-3:] == ["<=", "0.25", "PASS"]
    assert body["lat equal"][-1] == "PASS"
    assert body["lat slow"][-4:] == ["0.50", "<=", "0.25", "MISS"]
    assert body["bw ok"][-4:] == ["1.05", "<=", "1.11", "PASS"]
    assert body["bw slow"][-4:] == ["2.00", "<=", "1.11", "MISS"]
    assert body["no ref"][2:] == ["1.00", "-", "-", "<=", "0.25", "n/a"]


@pytest.mark.parametrize("kind", sync_kinds.KINDS)
def test_sync_rounds_run_at_3_ranks_and_parse(kind):
    """shmrma/bench/sync.py: every kind runs on 3 ranks (the ring wraps; the token
    rings pass 20 tokens; the counters' restart requests and counters are freed
    before Win.Free) and prints the line SyncCase reads; compare's sync cases point
    at it with their rank count."""
    run = os.path.join(BIN, "shmrma-run")
    _, status, out, err = jobs.run_job([run, "-n", "3", "--timeout", "50", "-m",
                                        "shmrma.bench.sync", kind, "20"],
                                       jobs.child_env("shmrma"), 60, cwd=REPO)
    assert status == 0, err
    case = compare.SyncCase("t", kind, 3)
    assert case.value(out) > 0
    assert case.argv("shmrma", quick=True)[-3:-1] == ["shmrma.bench.sync", kind]
    assert {c.nranks for c in compare.SYNC_SUITE if isinstance(c, compare.SyncCase)} == {
        2, 4, 8}
    assert {c.nranks for c in compare.SCALING_SUITE} == {2, 4, 8, 16}


def test_shmrma_only_kinds_run_their_mpi3_form_on_mpi4py():
    """Issue 6 (scaling): the window barrier and the counter ring have no MPI-3 call;
    mpi4py runs Fence and the flag ring in their place, shmrma its own form."""
    for case in compare.SCALING_SUITE:
        mine, theirs = case.argv("shmrma", True), case.argv("mpi4py", True)
        expected = {"barrier": "fence", "counters": "flags"}.get(case.kind, case.kind)
        assert mine[mine.index("shmrma.bench.sync") + 1] == case.kind
        assert theirs[theirs.index("shmrma.bench.sync") + 1] == expected
        assert case.value("%s_us 1.5\n" % expected) == 1.5    # what mpi4py's run prints


def test_sync_rounds_reject_an_unknown_kind():
    _, status, _, err = jobs.run_job([sys.executable, "-m", "shmrma.bench.sync", "nope"],
                                     jobs.child_env("shmrma"), 30, cwd=REPO)
    assert status != 0 and "usage" in err


@pytest.mark.parametrize("form", ["counters", "per_message", "standard"])
def test_notification_forms_run_and_parse(form):
    """shmrma/bench/notify.py: every form ping-pongs a Put and its signal on 2 ranks and
    print what NotifyCase reads; mpi4py's side always runs the standard form."""
    run = os.path.join(BIN, "shmrma-run")
    _, status, out, err = jobs.run_job([run, "-n", "2", "--timeout", "50", "-m",
                                        "shmrma.bench.notify", form, "50"],
                                       jobs.child_env("shmrma"), 60, cwd=REPO)
    assert status == 0, err
    case = compare.NotifyCase("t", form)
    assert case.value(out) > 0
    assert case.argv("mpi4py", quick=True)[-2] == "standard"
    assert case.argv("shmrma", quick=True)[-2] == form


def test_halo_forms_compute_the_same_grid():
    """shmrma/bench/halo.py: Example A3's halo with counters and the Fence exchange give
    the same grid (equal checksums) on 3 ranks; HaloCase runs mpi4py with Fence."""
    run = os.path.join(BIN, "shmrma-run")
    sums = {}
    for form in ("counters", "fence"):
        _, status, out, err = jobs.run_job([run, "-n", "3", "--timeout", "50", "-m",
                                            "shmrma.bench.halo", form, "30"],
                                           jobs.child_env("shmrma"), 60, cwd=REPO)
        assert status == 0, err
        assert compare.HaloCase("t", form).value(out) > 0
        sums[form] = [line for line in out.splitlines() if line.startswith("halo_sum")]
    assert sums["counters"] == sums["fence"] and sums["fence"]
    assert compare.HaloCase("t", "counters").argv("mpi4py", quick=True)[-2] == "fence"


# ---------------------------------------------------------------- -m and --max-iterations

MIB4 = 1 << 22


@pytest.mark.parametrize("flag, sizes", [
    ("8", [1, 2, 4, 8]),                                   # MAX
    ("8:", [8 << k for k in range(20)]),                   # OMB's MIN: up to 4 MiB
    ("1:8", [1, 2, 4, 8]),                                 # MIN:MAX
    ("4194304:", [MIB4])])
def test_message_size_forms(flag, sizes):
    """OMB: -m takes MAX, MIN:MAX, and MIN: (the default MAX, 4 MiB)."""
    bench_, opts = osu.parse("osu_put_latency", ["-m", flag])
    assert osu.sizes(bench_, opts) == sizes


def test_message_size_min_only_runs(monkeypatch):
    """-m MIN: is accepted by the command line (nothing launched here) and runs:
    the numpy reference, one process, prints 2 MiB and 4 MiB."""
    status, launched = call_main(["osu_put_latency", "-m", "8:"], monkeypatch)
    assert status == 0 and len(launched) == 1 and launched[0][0][-2:] == ["-m", "8:"]
    out = ok("osu_put_latency", "--impl", "numpy", "-m", "2097152:", "-i", "1", "-x", "0")
    check(out, "osu_put_latency", [1 << 21, MIB4], reference=True)


@pytest.mark.parametrize("name, size, counts", [
    ("osu_put_latency", 8192, (100, 10000)), ("osu_put_latency", 8193, (10, 1000)),
    ("osu_get_acc_latency", 1, (100, 10000)), ("osu_fop_latency", 8, (100, 10000)),
    ("osu_put_bw", 8192, (10, 100)), ("osu_get_bw", 8193, (2, 20)),
    ("osu_put_bibw", MIB4, (2, 20))])
def test_omb_default_loop_counts(name, size, counts):
    """OMB: (warm-up, timed) iterations; "large" is over 8192 bytes."""
    bench_, opts = osu.parse(name, [])
    assert osu.loop_counts(bench_, opts, size) == counts
    # -i and -x set the small and the large counts alike
    bench_, opts = osu.parse(name, ["-i", "7", "-x", "3"])
    assert osu.loop_counts(bench_, opts, size) == (3, 7)


def test_max_iterations_caps_each_size_at_omb_default():
    """--max-iterations N (compare --quick) is min(OMB's count for the size, N)."""
    def timed(name, argv, sizes):
        bench_, opts = osu.parse(name, argv)
        return [osu.loop_counts(bench_, opts, size) for size in sizes]
    assert timed("osu_put_latency", ["--max-iterations", "2000"], [8, 8192, 8193, MIB4]) == [
        (100, 2000), (100, 2000), (10, 1000), (10, 1000)]
    assert timed("osu_put_bw", ["--max-iterations", "5"], [8, MIB4]) == [(10, 5), (2, 5)]
    assert timed("osu_put_latency", ["--max-iterations", "2000", "-i", "50"], [8, MIB4]) == [
        (100, 50), (10, 50)]


@pytest.mark.parametrize("case", [compare.SweepCase("osu_put_latency"),
                                  compare.SweepCase("osu_get_bw"), compare.WINDOWS_SUITE[-1]],
                         ids=lambda case: case.title)
def test_quick_never_runs_more_than_omb_default(case):
    """compare --quick: no size runs more timed iterations than OMB's default, and
    none more than the quick count (latency 2000, bandwidth 5)."""
    program = case.program(True)
    name = program[2]
    bench_, quick = osu.parse(name, program[3:])
    _, default = osu.parse(name, case.flags)
    cap = compare.QUICK_ITERATIONS["bw" if case.bandwidth else "latency"]
    for size in osu.sizes(bench_, quick):
        got = osu.loop_counts(bench_, quick, size)[1]
        assert got == min(osu.loop_counts(bench_, default, size)[1], cap), size
    assert osu.loop_counts(bench_, quick, 8 * compare.MIB)[1] == (
        1000 if bench_.kind == "latency" else 5)


# ---------------------------------------------------------------- OMB arithmetic
# osu.py's functions called directly; its loops driven by a stub MPI that logs the
# calls and whose clock moves one second per Wtime. No rank is started.

class StubGroup:
    def Incl(self, ranks):
        return StubGroup()

    def Free(self):
        pass


class StubWin:
    """A window whose every call (Put, Flush, Fence, Start, ...) is logged by name."""

    def __init__(self, log, nbytes):
        self.log, self.memory = log, bytearray(max(nbytes, 1))

    def tomemory(self):
        return memoryview(self.memory)

    def Get_group(self):
        return StubGroup()

    def __getattr__(self, name):
        def call(*args):
            self.log.append(name)
        return call


class StubMPI:
    """Just enough of an MPI namespace for osu.Run on one rank of two."""
    INFO_NULL = LOCK_SHARED = LOCK_EXCLUSIVE = SUM = None

    def __init__(self, rank):
        self.log, self.clock = [], 0.0
        self.COMM_WORLD = types.SimpleNamespace(
            Get_rank=lambda: rank, Get_size=lambda: 2,
            Barrier=lambda: self.log.append("Barrier"))
        self.Win = types.SimpleNamespace(Allocate=self.allocate)

    def allocate(self, nbytes, *args):
        self.log.append("Win.Allocate")
        return StubWin(self.log, nbytes)

    def Wtime(self):
        self.log.append("Wtime")
        self.clock += 1.0
        return self.clock


def stub_run(name, argv, rank=0):
    bench_, opts = osu.parse(name, argv)
    return rank_program.Run(StubMPI(rank), bench_, opts)


def timed_calls(log):
    """The calls between the last two Wtime readings: the timed loop."""
    marks = [i for i, call in enumerate(log) if call == "Wtime"]
    return log[marks[-2] + 1:marks[-1]]


def test_a_window_per_size_made_and_freed_outside_the_timing(capsys):
    """OMB: every size gets its own window, created before and freed after its two
    timed loops (warm-up, then timed), with a Barrier between sizes; rank 0 prints
    µs per iteration: 1 s (the stub clock) over 3 iterations."""
    run = stub_run("osu_put_latency", ["-m", "1:4", "-i", "3", "-x", "2"])
    assert run.all_sizes() == 0
    log = run.MPI.log
    starts = [i for i, call in enumerate(log) if call == "Win.Allocate"]
    assert len(starts) == 3
    for begin, end in zip(starts, starts[1:] + [len(log)]):
        size_log = log[begin:end]
        assert size_log[-1] == "Free" and size_log.count("Free") == 1
        assert size_log.count("Wtime") == 4 and size_log.count("Barrier") == 2
        assert size_log.index("Barrier") < size_log.index("Wtime")
        assert timed_calls(size_log) == ["Put", "Flush"] * 3
    rows = capsys.readouterr().out.splitlines()[5:]
    assert rows == [OMB_ROW % (size, 1e6 / 3) for size in (1, 2, 4)]


@pytest.mark.parametrize("sync, halve", [("flush", 1), ("flush_local", 1), ("lock", 1),
                                         ("lock_all", 1), ("fence", 2), ("pscw", 2)])
def test_latency_is_halved_for_fence_and_pscw(sync, halve):
    """OMB: µs = elapsed x 1e6 / iterations, halved for fence and PSCW (one
    iteration is a transfer each way)."""
    bench_, opts = osu.parse("osu_put_latency", ["-s", sync])
    assert rank_program.result(bench_, opts, 8, 0.5, 1000) == pytest.approx(500 / halve)


def test_bandwidth_counts_decimal_megabytes_and_doubles_bibw():
    """OMB: MB/s = size x iterations x window_size / 1e6 / elapsed (MB = 10^6 B,
    so 1 MiB a second is 1.048576 MB/s); bi-directional is twice that; neither is
    halved under fence or PSCW."""
    bw, opts = osu.parse("osu_put_bw", ["-W", "64"])
    assert rank_program.result(bw, opts, 1000, 0.5, 10) == pytest.approx(1.28)
    bw, opts = osu.parse("osu_put_bw", ["-W", "1", "-s", "fence"])
    assert rank_program.result(bw, opts, 1 << 20, 1.0, 1) == pytest.approx(1.048576)
    bibw, opts = osu.parse("osu_put_bibw", ["-W", "64"])
    assert rank_program.result(bibw, opts, 1000, 0.5, 10) == pytest.approx(2.56)


W = 2      # -W for the bandwidth tests below
# OMB's timed loop, written out independently of osu.py: the calls of one iteration,
# on rank 0 and on rank 1 (passive modes: rank 1 makes none).
OMB_STEPS = {
    ("osu_put_latency", "fence"): (["Fence", "Put", "Fence", "Fence"],
                                   ["Fence", "Fence", "Put", "Fence"]),
    ("osu_put_latency", "pscw"): (["Start", "Put", "Complete", "Post", "Wait"],
                                  ["Post", "Wait", "Start", "Put", "Complete"]),
    ("osu_put_bw", "fence"): (["Fence"] + ["Put"] * W + ["Fence"], ["Fence", "Fence"]),
    ("osu_put_bw", "pscw"): (["Start"] + ["Put"] * W + ["Complete"], ["Post", "Wait"]),
    ("osu_put_bibw", "fence"): (["Fence"] + ["Put"] * W + ["Fence"],) * 2,
    ("osu_put_bibw", "pscw"): (["Post", "Start"] + ["Put"] * W + ["Complete", "Wait"],) * 2,
    ("osu_put_latency", "flush"): (["Put", "Flush"], []),
    ("osu_put_latency", "flush_local"): (["Put", "Flush_local"], []),
    ("osu_put_latency", "lock"): (["Lock", "Put", "Unlock"], []),
    ("osu_put_latency", "lock_all"): (["Lock_all", "Put", "Unlock_all"], []),
    ("osu_put_bw", "flush"): (["Put"] * W + ["Flush"], []),
}


@pytest.mark.parametrize("name, sync", sorted(OMB_STEPS))
@pytest.mark.parametrize("rank", [0, 1])
def test_step_order_of_each_sync_mode(name, sync, rank):
    """Inside the timed loop each rank calls exactly OMB's steps, in order,
    once per iteration; the window is made before the clock starts."""
    argv = ["-s", sync] + (["-W", str(W)] if name != "osu_put_latency" else [])
    run = stub_run(name, argv, rank)
    run.open_window(8)
    made = len(run.MPI.log)
    run.timed(3)
    log, steps = run.MPI.log[made:], OMB_STEPS[name, sync][rank]
    if steps:
        assert timed_calls(log) == steps * 3
    else:
        assert log == []       # the target of a passive mode sits in the Barrier


def test_messages_cases_are_valid_runs():
    """The messages suite's cases launch shmrma/bench/messages.py with -m N:N (a single
    size) and, with --quick, a --max-iterations cap."""
    cases = [c for c in compare.SUITES["messages"] if isinstance(c, compare.MessagesCase)]
    assert cases
    for case in cases:
        argv = case.argv("shmrma", quick=True)
        program = argv[argv.index("shmrma.bench.messages") + 1:]
        name, _, sizes, cap, element, form = messages.parse(program)
        assert name == case.name and sizes == [case.size] and cap is not None
        assert element == ("f8" if "float64" in case.title else "f4")
        assert form == ("count" if ", 8, BYTE]" in case.title else
                        "type" if "[buf, BYTE]" in case.title else "bare")
    assert [c.title for c in cases if "float64" in c.title] == [
        "Allreduce 1 MiB float64 n=%d (osu_allreduce -T mpi_double), us" % n for n in (2, 4)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("form", ["type", "count"])
def test_messages_forms_move_the_same_bytes(run_shmrma, form):
    """osu_latency and osu_bw with [buf, BYTE] and [buf, size, BYTE] messages run and
    print a row per size; a form the benchmark does not know is refused."""
    for name in ("osu_latency", "osu_bw"):
        done = run_shmrma(["-n", 2, "-m", "shmrma.bench.messages", name, "-m", "1:64",
                           "--form", form, "--max-iterations", "5"])
        assert done.returncode == 0, done.stderr
        assert [int(line.split()[0]) for line in done.stdout.splitlines()
                if line[:1].isdigit()] == [1, 2, 4, 8, 16, 32, 64]
    with pytest.raises(SystemExit, match="unknown option"):
        messages.parse(["osu_latency", "--form", "vector"])


def test_programs_suite_runs_mpi4pys_demos_and_the_transpose():
    """Each program of the programs suite: its wall time against mpi4py's (target 1),
    the figures it printed as rows of their own; a transpose that found wrong values
    fails its run."""
    cases = compare.SUITES["programs"]
    assert all(case.against_mpi4py == 1.0 for case in cases)
    demos = [case for case in cases if "demo" in case.title]
    assert len(demos) == 11 and all(case.nranks in (2, 4) for case in demos)
    latency = demos[0]
    out = "# MPI Latency Test\n# Size [B]        Latency [us]\n" + "".join(
        "%10d%20.2f\n" % (size, size / 1000 + 0.5) for size in (0, 8, 4 << 20))
    value = latency.measured(out, 1.5)
    assert value == {"wall": 1.5, 8: 0.51, 4 << 20: 4194.8}     # as printed: %.2f
    assert [extra.of(value) for extra in latency.extras] == [0.51, 4194.8]
    transpose = cases[-1]
    assert transpose.measured("setup_us 10.0\ncycle_us 20.0\nchecked yes\n", 2.0) == {
        "wall": 2.0, "cycle_us": 20.0, "setup_us": 10.0}
    with pytest.raises(compare.jobs.RunFailed, match="wrong values"):
        transpose.measured("setup_us 10.0\ncycle_us 20.0\nchecked NO\n", 2.0)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_transpose_program_moves_every_value_where_it_belongs(run_shmrma, nranks):
    """The pencil transpose checks its own result (grids 1x1 to 2x2, a size that does
    not divide evenly)."""
    done = run_shmrma(["-n", nranks, "-m", "shmrma.bench.transpose", "10", "2"])
    assert done.returncode == 0, done.stderr
    assert "checked yes" in done.stdout and "cycle_us" in done.stdout


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,nranks", [("osu_latency", 2), ("osu_bw", 2), ("obj_latency", 2),
                                         ("osu_allreduce", 3), ("osu_bcast", 3),
                                         ("osu_barrier", 3), ("obj_allreduce", 3),
                                         ("obj_bcast", 3), ("osu_iallreduce", 3),
                                         ("vec_alltoallv", 3), ("vec_allgatherv", 2),
                                         ("vec_gatherv", 3), ("vec_scatterv", 3),
                                         ("comm_dup", 2), ("comm_split", 3),
                                         ("comm_cart_sub", 4), ("type_contiguous", 2)])
def test_messages_benchmarks_print_omb_rows(run_shmrma, name, nranks):
    """Each OSU point-to-point or collective benchmark (and object form) runs on
    shmrma and prints OMB's header and one row per size."""
    result = run_shmrma(["-n", nranks, "--timeout", 60, "-m", "shmrma.bench.messages", name,
                         "-m", "1:64", "--max-iterations", "20"], timeout=90)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# OSU MPI ") and lines[1].startswith("# Size")
    rows = [line.split() for line in lines[2:]]
    expected = [8] if name in messages.ONE_SIZE else [1, 2, 4, 8, 16, 32, 64]
    assert [int(size) for size, _ in rows] == expected
    assert all(float(value) > 0 for _, value in rows)


def test_a_checkout_given_with_shmrma_path_runs_its_own_launcher(monkeypatch):
    """--shmrma-path runs ``python -m shmrma.run`` of that checkout, not the installed
    console script, whose entry point an older layout may not have."""
    monkeypatch.setattr(jobs, "find_tool", lambda name: "/venv/bin/" + name)
    argv = jobs.launcher_argv("shmrma-check", 4, ["prog.py"])
    assert argv[0] == "/venv/bin/shmrma-run"
    assert jobs.from_checkout(argv) == [sys.executable, "-m", "shmrma.run"] + argv[1:]
    reference = jobs.launcher_argv("mpi4py", 4, ["prog.py"])
    assert jobs.from_checkout(reference) == reference
