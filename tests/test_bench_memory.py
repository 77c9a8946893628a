"""``shmrma-bench`` memory program (shmrma/bench/memory.py): arguments and output.

The issue's "Memory" bullet asks for the resident and shared memory a job uses
for N ranks and a window of S bytes, against mpi4py's for the same program.
These tests check that the program measuring it parses its arguments, prints
its lines in the agreed format, and that the numbers add up and show the window
memory really touched; they compare no number with a target. Every run is 2
ranks and at most 1 MiB per rank.
"""
import os
import re
import sys

import pytest

from shmrma.bench import jobs, memory

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
KEYS = ("ranks", "window_bytes", "flavor", "baseline_pss_kib", "pss_kib",
        "window_pss_kib", "rss_kib", "shared_kib", "private_kib")
LINE_RE = re.compile(r"^memory_([a-z_]+) (\S+)$")


def run(argv, impl="shmrma"):
    """(exit status, stdout, stderr) of ``argv``, killed after 50 s."""
    try:
        _, status, out, err = jobs.run_job(argv, jobs.child_env(impl), 50, cwd=REPO)
    except jobs.RunFailed as exc:
        pytest.fail(str(exc))
    return status, out, err


def on_shmrma(*args):
    return run([os.path.join(BIN, "shmrma-run"), "-n", "2", "--timeout", "40",
                "-m", "shmrma.bench.memory"] + list(args))


def parsed(status, out, err):
    """The printed quantities by name, checking there is one line per quantity in
    order and nothing else: integers, but the flavor."""
    assert status == 0, err
    assert "Traceback" not in err, err
    found = [LINE_RE.match(line) for line in out.splitlines()]
    assert all(found), "a line is not 'memory_<name> <value>':\n%s" % out
    assert [m.group(1) for m in found] == list(KEYS), out
    values = {m.group(1): m.group(2) for m in found}
    return {k: v if k == "flavor" else int(v) for k, v in values.items()}


def check_consistent(got, nranks, size, flavor):
    """The sums add up: the window's PSS is after minus before, RSS splits into
    shared plus private and is at least PSS; from 1 MiB a rank, the window's pages
    were written (its PSS is at least 3/4 of nranks x size). A smaller window is
    not held to that: other jobs on the machine starting or ending between the two
    readings move the PSS of the shared libraries by some hundred KiB."""
    assert (got["ranks"], got["window_bytes"], got["flavor"]) == (nranks, size, flavor)
    assert got["window_pss_kib"] == got["pss_kib"] - got["baseline_pss_kib"]
    assert got["rss_kib"] == got["shared_kib"] + got["private_kib"]
    assert got["rss_kib"] >= got["pss_kib"] > 0 and got["baseline_pss_kib"] > 0
    if size >= 1 << 20:
        assert got["window_pss_kib"] >= 0.75 * nranks * size / 1024


# ---------------------------------------------------------------- arguments

@pytest.mark.timeout(60)
@pytest.mark.parametrize("text, size", [
    ("0", 0), ("65536", 65536), ("4K", 4096), ("4k", 4096), ("16M", 16 << 20),
    ("1G", 1 << 30), ("64KiB", 64 << 10), ("2MB", 2 << 20)])
def test_size_suffixes_are_powers_of_1024(text, size):
    """SIZE: a plain byte count, or K/M/G meaning 1024, 1024**2, 1024**3."""
    assert memory.parse_size(text) == size


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["", "abc", "-1", "1.5M", "4X", "M", "4KK"])
def test_bad_size_is_refused(text):
    with pytest.raises(ValueError, match="SIZE"):
        memory.parse_size(text)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("argv, says", [
    (["12Q"], "SIZE must be"), (["1M", "create"], "FLAVOR must be"), ([], "usage"),
    (["1M", "allocate", "extra"], "usage")])
def test_usage_errors_exit_nonzero_before_mpi(argv, says):
    """A bad command line exits nonzero with the reason and the usage on stderr,
    before MPI starts (so no rank is needed to see it)."""
    status, out, err = run([sys.executable, "-m", "shmrma.bench.memory"] + argv)
    assert status != 0 and says in err and "usage" in err, err
    assert out == "" and "Traceback" not in err


@pytest.mark.timeout(60)
def test_bad_size_under_the_launcher_exits_nonzero():
    status, out, err = on_shmrma("lots")
    assert status != 0 and "SIZE must be" in err and out == "", err


# ---------------------------------------------------------------- measuring

SMAPS = """\
7f0000000000-7f0000100000 rw-s 00000000 00:01 12    /dev/shm/x
Size:               1024 kB
Rss:                 512 kB
Pss:                 256 kB
Shared_Clean:          0 kB
Shared_Dirty:        512 kB
Private_Clean:         0 kB
Private_Dirty:         0 kB
THPeligible:    0
VmFlags: rd wr sh mr mw me ms sd
7f0000200000-7f0000201000 rw-p 00000000 00:00 0
Size:                  4 kB
Rss:                   4 kB
Pss:                   4 kB
Shared_Clean:          0 kB
Shared_Dirty:          0 kB
Private_Clean:         0 kB
Private_Dirty:         4 kB
VmFlags: rd wr mr mw me ac sd
"""


@pytest.mark.timeout(60)
def test_smaps_fields_are_summed_over_mappings():
    """The /proc/self/smaps fallback: each field summed over every mapping."""
    kib = memory.smaps_kib(SMAPS)
    assert (kib["Rss"], kib["Pss"], kib["Shared_Dirty"], kib["Private_Dirty"]) == (
        516, 260, 512, 4)
    assert "VmFlags" not in kib and "THPeligible" not in kib


@pytest.mark.timeout(60)
def test_measure_falls_back_to_smaps(monkeypatch):
    """Without smaps_rollup (kernels before 4.14) the same four numbers come from
    smaps, and they are about what smaps_rollup gives."""
    rollup = memory.measure()

    def no_rollup(path, *args, **kwargs):
        if path.endswith("smaps_rollup"):
            raise FileNotFoundError(path)
        return open(path, *args, **kwargs)
    monkeypatch.setattr(memory, "open", no_rollup, raising=False)
    rss, pss, shared, private = memory.measure()
    assert rss == shared + private and rss >= pss > 0
    assert abs(rss - rollup[0]) < 0.5 * rollup[0]


# ---------------------------------------------------------------- whole runs

@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", ["allocate", "shared"])
def test_two_ranks_one_mib_on_shmrma(flavor):
    """2 ranks x 1 MiB under shmrma-run: the lines compare.py reads
    (memory_pss_kib, memory_window_pss_kib) and the rest, adding up, with the
    window's 2 MiB really resident."""
    got = parsed(*on_shmrma("1M", flavor))
    check_consistent(got, 2, 1 << 20, flavor)


@pytest.mark.timeout(60)
def test_tiny_window_default_flavor():
    """64K with no FLAVOR: Win.Allocate, same lines."""
    got = parsed(*on_shmrma("64K"))
    check_consistent(got, 2, 64 << 10, "allocate")


@pytest.mark.timeout(60)
@pytest.mark.skipif(jobs.reference_missing() is not None,
                    reason="mpi4py/mpiexec not installed: %s" % jobs.reference_missing())
def test_same_program_on_mpi4py():
    """The same program on mpi4py + MPICH (the issue's comparison) prints the
    same lines, adding up the same way."""
    argv = jobs.launcher_argv("mpi4py", 2, ["-m", "shmrma.bench.memory", "1M"])
    got = parsed(*run(argv, impl="mpi4py"))
    check_consistent(got, 2, 1 << 20, "allocate")
