"""The mpi backend (README, "Running on a cluster"): every program under scripts/
prints the same lines on shared memory and on mpi4py with MPICH (or Open MPI: run
this file with a Python whose mpiexec is Open MPI's), at 2 and 4 ranks;
shmrma's extensions (docs/api.md) work there in standard MPI-3 calls; the launcher's
--backend option and SHMRMA_BACKEND.
"""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "scripts").rglob("*.py"))
PROGRAMS = pathlib.Path(__file__).resolve().parent / "programs"
# programs that assert their own number of ranks (the figure they draw has that many)
ONLY_AT = {"ex11_fig05_pscw_groups.py": (4,), "ex11_fig06_symmetric_pscw.py": (2,)}
CASES = [pytest.param(script, ranks, id="%s-%d" % (script.relative_to(ROOT / "scripts"), ranks))
         for script in SCRIPTS for ranks in ONLY_AT.get(script.name, (2, 4))]
# whole lines: print() under PYTHONUNBUFFERED makes two writes that ranks may split
LINES = {"PYTHONUNBUFFERED": ""}


def mpi_segments():
    from shmrma.onmpi import launch
    return launch.mpi_segments()


def _mpi_missing():
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    from shmrma.onmpi import launch
    try:
        launch.find_mpiexec()
    except launch.Unavailable as exc:
        return str(exc)
    return None


needs_mpi = pytest.mark.skipif(_mpi_missing() is not None, reason=str(_mpi_missing()))


def test_every_script_is_compared():
    assert len(SCRIPTS) >= 30 and ROOT / "scripts" / "rma_hello.py" in SCRIPTS


@needs_mpi
@pytest.mark.timeout(120)
@pytest.mark.parametrize("script, ranks", CASES)
def test_script_prints_the_same_on_both_backends(run_shmrma, script, ranks):
    """Issue 7: a program of standard names (and of shmrma's extensions) gives identical
    results on both backends; lines are compared sorted, as ranks print concurrently."""
    outputs = {}
    for backend in ("shm", "mpi"):
        result = run_shmrma(["--backend", backend, "-n", ranks, "--timeout", 60, script],
                            timeout=90, env=LINES, cwd=script.parent)
        assert result.returncode == 0, (backend, result.stderr[-3000:])
        outputs[backend] = sorted(result.stdout.splitlines())
    assert outputs["shm"] == outputs["mpi"]


@needs_mpi
@pytest.mark.timeout(120)
def test_extensions_on_the_mpi_backend(run_shmrma):
    """The extensions on mpi4py: counters (R154-R163, A14-A18, A25), HANDLE_SYNC, the window
    barrier (A1-A3), Change_comm's error; each error with its class and nothing changed."""
    result = run_shmrma(["--backend", "mpi", "-n", 2, "--timeout", 90,
                         PROGRAMS / "mpi_extensions.py"], timeout=110, env=LINES)
    assert result.returncode == 0, result.stderr[-3000:]
    checks = ["namespace", "HANDLE_SYNC", "Sync_ops + Sync_object", "request errors",
              "banking and ERR_WIN_COUNTER", "two signallers and folding", "argument errors",
              "window barrier", "Change_comm error"]
    assert sorted(result.stdout.splitlines()) == sorted(
        "rank %d: %s ok" % (rank, check) for rank in range(2) for check in checks)


def run_alone(code, backend):
    """``python -c code`` with SHMRMA_BACKEND=backend, no launcher (a singleton)."""
    before = mpi_segments()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=50, env=dict(os.environ, SHMRMA_BACKEND=backend))
    from shmrma.onmpi import launch
    launch.sweep(mpi_segments() - before)   # Open MPI 5's singletons leave their segment
    assert result.returncode == 0, result.stderr
    return result.stdout


@needs_mpi
@pytest.mark.timeout(60)
def test_program_started_by_mpiexec_directly():
    """SHMRMA_BACKEND=mpi: `from shmrma import MPI` is mpi4py's namespace, also in a
    singleton run without any launcher."""
    out = run_alone("from shmrma import MPI\nimport mpi4py.MPI\n"
                    "assert MPI.COMM_WORLD.Get_size() == 1\n"
                    "assert MPI.Get_library_version() == mpi4py.MPI.Get_library_version()\n"
                    "print(MPI.Win.__module__)\n", "mpi")
    assert out.strip() == "shmrma.onmpi.win"


@needs_mpi
@pytest.mark.timeout(60)
def test_every_name_of_the_shm_namespace_is_on_the_mpi_backend():
    """Issue 7: a program written against `from shmrma import MPI` finds every name
    on the mpi backend too (the extensions included), so none needs a rewrite."""
    names = {backend: set(run_alone(
        "from shmrma import MPI\n"
        "print(' '.join(n for n in dir(MPI) if not n.startswith('_')))", backend).split())
        for backend in ("shm", "mpi")}
    assert {"Sync", "SYNC_NULL", "HANDLE_SYNC", "ERR_WIN_COUNTER", "MODE_WIN_PUT"} <= \
        names["shm"]
    assert names["shm"] - names["mpi"] == set()


@needs_mpi
@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["script", "module", "code"])
def test_mpi_backend_modes_and_tagged_output(run_shmrma, tmp_path, mode):
    """shmrma-run's three program forms and -l work with --backend mpi."""
    (tmp_path / "hello_mod.py").write_text(
        "import sys\nfrom shmrma import MPI\n"
        "sys.stdout.write('%d %s\\n' % (MPI.COMM_WORLD.Get_rank(), sys.argv[1:]))\n")
    target = {"script": ["hello_mod.py"], "module": ["-m", "hello_mod"],
              "code": ["-c", (tmp_path / "hello_mod.py").read_text()]}[mode]
    result = run_shmrma(["--backend", "mpi", "-n", 2, "-l", *target, "a1"], timeout=50,
                        env=LINES, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # the MPI's own prefix: MPICH "[0] ", Open MPI "[1,0]<stdout>: "
    tagged = [re.fullmatch(r"\[(?:\d+,)?(\d)\](?:<stdout>:)? (.*)", line).groups()
              for line in result.stdout.splitlines()]
    assert sorted(tagged) == [("0", "0 ['a1']"), ("1", "1 ['a1']")]


@needs_mpi
@pytest.mark.timeout(60)
def test_mpi_backend_failing_rank_ends_the_job(run_shmrma, tmp_path):
    """A rank that raises aborts the whole job (python -m mpi4py), named on one line;
    the segments the MPI leaves after MPI_Abort are swept."""
    before = mpi_segments()
    prog = tmp_path / "prog.py"
    prog.write_text("from shmrma import MPI\ncomm = MPI.COMM_WORLD\n"
                    "if comm.rank == 1:\n    raise ValueError('boom on one')\n"
                    "comm.Barrier()\n")
    result = run_shmrma(["--backend", "mpi", "-n", 2, prog], timeout=50)
    assert result.returncode != 0
    assert "ValueError: boom on one" in result.stderr
    assert "shmrma-run: mpiexec exited with status" in result.stderr
    assert mpi_segments() <= before


@needs_mpi
@pytest.mark.timeout(60)
def test_mpi_backend_timeout(run_shmrma, tmp_path):
    """--timeout ends an mpi-backend job with status 124 and says so; no segment left."""
    before = mpi_segments()
    prog = tmp_path / "prog.py"
    prog.write_text("import time\nfrom shmrma import MPI\ntime.sleep(60)\n")
    result = run_shmrma(["--backend", "mpi", "-n", 2, "--timeout", 2, prog], timeout=50)
    assert result.returncode == 124
    assert "timed out after 2 s" in result.stderr
    assert mpi_segments() <= before


@pytest.mark.timeout(30)
@pytest.mark.parametrize("args, env, message", [
    (["--backend", "tcp"], {}, "--backend must be 'shm'"),
    ([], {"SHMRMA_BACKEND": "tcp"}, "SHMRMA_BACKEND must be 'shm'"),
])
def test_unknown_backend_is_a_usage_error(run_shmrma, tmp_path, args, env, message):
    prog = tmp_path / "prog.py"
    prog.write_text("print('RAN')\n")
    result = run_shmrma([*args, "-n", 2, prog], timeout=20, env=env)
    assert result.returncode == 2 and message in result.stderr and "RAN" not in result.stdout


@pytest.mark.timeout(30)
def test_missing_mpiexec_says_what_to_install(run_shmrma, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("print('RAN')\n")
    result = run_shmrma(["--backend", "mpi", "-n", 2, prog], timeout=20,
                        env={"SHMRMA_MPIEXEC": str(tmp_path / "no-mpiexec")})
    assert result.returncode == 1 and "RAN" not in result.stdout
    assert "SHMRMA_MPIEXEC" in result.stderr and "is not an executable" in result.stderr
