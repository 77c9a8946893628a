"""shmrma-mpiexec: the mpiexec/mpirun command lines clients' tests use, on shmrma."""
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from shmrma.onmpi import launch

pytestmark = pytest.mark.timeout(90)

SUM_PROGRAM = '''
import os, sys
from mpi4py import MPI
world = MPI.COMM_WORLD
print("rank %d of %d sum %d FOO=%s BAR=%s cwd=%s argv=%r" % (
    world.rank, world.size, world.allreduce(world.rank), os.environ.get("FOO"),
    os.environ.get("BAR"), os.path.basename(os.getcwd()), sys.argv[1:]))
'''


def mpiexec(args, timeout=60, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "shmrma.run.mpiexec", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=full_env,
                          cwd=cwd)


def write(path, text, mode=0o644):
    path.write_text(textwrap.dedent(text).lstrip())
    path.chmod(mode)
    return str(path)


def sums(stdout):
    return sorted(line for line in stdout.splitlines() if line.startswith("rank "))


def test_python_program_with_open_mpi_and_mpich_options(tmp_path):
    """`mpirun -np 3 --oversubscribe -x FOO=1 -genv BAR 2 --mca btl self -wdir D python
    prog.py args`: three ranks of one world, the variables set, the options that mean
    nothing on one machine accepted."""
    prog = write(tmp_path / "prog.py", SUM_PROGRAM)
    (tmp_path / "work").mkdir()
    result = mpiexec(["-np", "3", "--oversubscribe", "-x", "FOO=1", "-genv", "BAR", "2",
                      "--mca", "btl", "self", "--bind-to", "core", "--map-by", "slot",
                      "-wdir", tmp_path / "work", "python", prog, "a", "-n"])
    assert result.returncode == 0, result.stderr
    assert sums(result.stdout) == [
        "rank %d of 3 sum 3 FOO=1 BAR=2 cwd=work argv=['a', '-n']" % rank for rank in range(3)]


@pytest.mark.parametrize("shebang", ["exact", "env"])
def test_console_script_of_this_python_runs_in_the_ranks(tmp_path, shebang):
    """A console script (pytest, dask-mpi, coverage) whose #! names this Python runs
    in each rank as a script, with shmrma's MPI."""
    line = ("#!%s" % sys.executable if shebang == "exact" else "#!/usr/bin/env python3")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write(bin_dir / "my-tool", line + "\n" + SUM_PROGRAM, mode=0o755)
    path = os.pathsep.join([str(bin_dir), os.path.dirname(sys.executable),
                            os.environ.get("PATH", "")])
    if shebang == "env" and os.path.dirname(
            subprocess.run(["sh", "-c", "command -v python3"], capture_output=True, text=True,
                           env={"PATH": path}).stdout.strip()) != os.path.dirname(
            sys.executable):
        pytest.skip("this Python's folder has no python3 to find through PATH")
    result = mpiexec(["-n", "2", "my-tool", "x"], env={"PATH": path})
    assert result.returncode == 0, result.stderr
    assert sums(result.stdout) == [
        "rank %d of 2 sum 1 FOO=None BAR=None cwd=%s argv=['x']" % (rank, os.path.basename(
            os.getcwd())) for rank in range(2)]


def test_console_script_of_another_python_is_refused(tmp_path):
    """Its modules are installed in that Python, not in the one the ranks fork from."""
    tool = write(tmp_path / "other-tool", "#!/opt/other/bin/python3\nprint('RAN')\n",
                 mode=0o755)
    result = mpiexec(["-n", "2", tool])
    assert result.returncode == 2
    assert "/opt/other/bin/python3" in result.stderr and "RAN" not in result.stdout


def test_program_that_is_not_python_runs_per_rank_with_rank_variables(tmp_path):
    result = mpiexec(["-n", "2", "-l", "sh", "-c",
                      "echo rank=$PMI_RANK size=$PMI_SIZE ompi=$OMPI_COMM_WORLD_RANK"])
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["[0] rank=0 size=2 ompi=0",
                                                  "[1] rank=1 size=2 ompi=1"]


def test_failing_program_that_is_not_python_ends_the_job_with_its_status():
    result = mpiexec(["-n", "2", "sh", "-c", 'if [ "$PMI_RANK" = 1 ]; then exit 3; fi'])
    assert result.returncode == 3
    assert "rank 1 exited with status 3" in result.stderr


def test_python_started_by_a_program_outside_mpi_refuses_a_world_of_one(tmp_path):
    """`mpiexec -n 2 sh -c "python prog.py"`: that Python is not a rank of the job;
    shmrma says so instead of computing alone in each copy."""
    prog = write(tmp_path / "prog.py", "from shmrma import MPI\n"
                 "print('sum', MPI.COMM_WORLD.allreduce(1))\n")
    result = mpiexec(["-n", "2", "sh", "-c", '"%s" "%s"' % (sys.executable, prog)])
    assert result.returncode != 0
    assert "sum" not in result.stdout
    assert "started by an MPI launcher as one of 2 processes" in result.stderr


@pytest.mark.parametrize("args, expected", [(["-ppn", "3"], 3), (["-n", "2", "-ppn", "4"], 2),
                                            (["--np=2"], 2), (["-c", "2"], 2),
                                            (["-n", "2", "-usize", "6"], 2)])
def test_number_of_ranks(tmp_path, args, expected):
    prog = write(tmp_path / "prog.py", SUM_PROGRAM)
    result = mpiexec(args + [prog])
    assert result.returncode == 0, result.stderr
    assert len(sums(result.stdout)) == expected


def test_hosts_of_this_machine_are_accepted(tmp_path):
    prog = write(tmp_path / "prog.py", SUM_PROGRAM)
    hostfile = write(tmp_path / "hosts", "# this machine\nlocalhost slots=2\n%s:2\n"
                     % socket.gethostname())
    result = mpiexec(["-n", "2", "-host", "localhost:2,%s" % socket.gethostname(),
                      "-f", hostfile, prog])
    assert result.returncode == 0, result.stderr
    assert len(sums(result.stdout)) == 2


@pytest.mark.parametrize("args, message", [
    (["-n", "2", "--frobnicate", "PROG"], "unknown option --frobnicate"),
    (["-n", "2", "-host", "node17", "PROG"], "-host node17: shmrma runs every rank"),
    (["-n", "2", "-hostfile", "HOSTS", "PROG"], "-hostfile node17: shmrma runs every rank"),
    (["-n", "2", "-hostfile", "MISSING", "PROG"], "No such file"),
    (["-n", "1", "PROG", ":", "-n", "1", "PROG"], "(MPMD) are not supported"),
    (["-n", "2", "no-such-command-here"], "no-such-command-here: command not found"),
    (["-n", "2", "-wdir", "MISSING", "PROG"], "no such directory"),
    (["-n", "0", "PROG"], "-n must be positive"),
    (["-n"], "-n needs a value"),
    (["-n", "2"], "no program given"),
    (["-n", "2", "--check", "sh", "-c", "true"], "not a Python program"),
])
def test_usage_errors_exit_2_and_run_nothing(tmp_path, args, message):
    prog = write(tmp_path / "prog.py", "print('RAN')\n")
    hosts = write(tmp_path / "hosts", "node17 slots=4\n")
    names = {"PROG": prog, "HOSTS": hosts, "MISSING": str(tmp_path / "missing")}
    result = mpiexec([names.get(arg, arg) for arg in args])
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "usage: shmrma-mpiexec" in result.stderr and "RAN" not in result.stdout


def test_help_names_every_option_it_ignores():
    result = mpiexec(["--help"])
    assert result.returncode == 0
    for option in ("--oversubscribe", "--mca", "--map-by", "-launcher", "-genv", "-x",
                   "-ppn", "--bind-to", "--links"):
        assert option in result.stdout
    version = mpiexec(["--version"])
    assert version.returncode == 0 and version.stdout.startswith("shmrma-mpiexec (shmrma) ")


def _console_script():
    script = os.path.join(os.path.dirname(sys.executable), "shmrma-mpiexec")
    if not os.path.exists(script):
        pytest.skip("shmrma-mpiexec is not installed beside this Python")
    return script


def test_links_put_mpiexec_and_mpirun_on_path(tmp_path):
    """`export PATH="$(shmrma-mpiexec --links DIR):$PATH"` makes both names shmrma's,
    and the mpi backend still finds the MPI's own mpiexec, not these."""
    script = _console_script()
    made = subprocess.run([script, "--links", tmp_path / "bin"], capture_output=True,
                          text=True, timeout=30)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == str(tmp_path / "bin")
    prog = write(tmp_path / "prog.py", SUM_PROGRAM)
    path = os.pathsep.join([made.stdout.strip(), os.environ.get("PATH", "")])
    for name in ("mpiexec", "mpirun"):
        result = subprocess.run([name, "-np", "2", sys.executable, prog], capture_output=True,
                                text=True, timeout=60, env=dict(os.environ, PATH=path))
        assert result.returncode == 0, result.stderr
        assert len(sums(result.stdout)) == 2
    assert launch.is_shmrma_mpiexec(str(tmp_path / "bin" / "mpiexec"))


def test_links_point_at_the_command_that_made_them(tmp_path):
    """The links run the shmrma-mpiexec that made them (this Python's), not another
    environment's that comes first on PATH."""
    script = _console_script()
    other = tmp_path / "other"
    other.mkdir()
    (other / "shmrma-mpiexec").write_text("#!/bin/sh\nexit 3\n")
    (other / "shmrma-mpiexec").chmod(0o755)
    path = os.pathsep.join([str(other), os.environ.get("PATH", "")])
    made = subprocess.run([script, "--links", tmp_path / "bin"], capture_output=True,
                          text=True, timeout=30, env=dict(os.environ, PATH=path))
    assert made.returncode == 0, made.stderr
    for name in ("mpiexec", "mpirun"):
        assert os.readlink(tmp_path / "bin" / name) == script


def test_links_keep_another_mpiexec(tmp_path):
    script = _console_script()
    (tmp_path / "mpiexec").write_text("#!/bin/sh\n")
    result = subprocess.run([script, "--links", tmp_path], capture_output=True, text=True,
                            timeout=30)
    assert result.returncode != 0 and "is another program" in result.stderr
    assert (tmp_path / "mpiexec").read_text() == "#!/bin/sh\n"


def test_mpi_backend_skips_shmrma_mpiexec_on_path(tmp_path, monkeypatch):
    """find_mpiexec, looking on PATH, passes over shmrma's own mpiexec."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    (ours / "shmrma-mpiexec").write_text("#!/bin/sh\n")
    (ours / "shmrma-mpiexec").chmod(0o755)
    os.symlink(ours / "shmrma-mpiexec", ours / "mpiexec")
    write(theirs / "mpiexec", "#!/bin/sh\n", mode=0o755)
    monkeypatch.delenv("SHMRMA_MPIEXEC", raising=False)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", os.pathsep.join([str(ours), str(theirs)]))
    assert launch.find_mpiexec() == str(theirs / "mpiexec")
    monkeypatch.setenv("PATH", str(ours))
    with pytest.raises(launch.Unavailable):
        launch.find_mpiexec()


def _mpi_missing():
    try:
        launch.find_mpiexec()
    except launch.Unavailable as exc:
        return str(exc)
    return None


@pytest.mark.skipif(_mpi_missing() is not None, reason=str(_mpi_missing()))
def test_mpi_backend_runs_any_program_under_the_mpis_mpiexec():
    result = mpiexec(["--backend", "mpi", "-n", "2", "sh", "-c", "echo rank=$PMI_RANK"])
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == ["rank=0", "rank=1"]
