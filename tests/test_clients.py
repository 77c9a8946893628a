"""Projects built on mpi4py, their own test suites run as their CI runs them
(`mpirun -np N ...`), with shmrma's mpiexec and mpirun (tools/client_suite.py):
dask-mpi's passes whole. The client is installed from the package index once into
~/.cache/shmrma/clients; where it cannot be installed (offline), the test is
skipped, saying why.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import client_suite  # noqa: E402


@pytest.mark.timeout(1200)
def test_dask_mpi_suite_passes():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "client_suite.py"),
                             "dask-mpi", "--timeout", "300"],
                            capture_output=True, text=True, timeout=1100)
    if result.returncode == client_suite.CANNOT_INSTALL:
        pytest.skip(result.stderr.strip().splitlines()[-1])
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary


def test_a_failed_install_leaves_no_ready_stamp(tmp_path, monkeypatch):
    """A virtualenv made for another Python is made anew; when that fails halfway,
    the stamp of the old one goes too, so the next run does not take the half-made
    virtualenv for a ready one (its pip then lacked the client's test runner)."""
    def fail(*args):
        raise subprocess.CalledProcessError(1, "pip")
    monkeypatch.setattr(client_suite, "CACHE", str(tmp_path))
    monkeypatch.setattr(client_suite, "_make", fail)
    ready = tmp_path / "dask-mpi" / "ready"
    ready.parent.mkdir()
    ready.write_text("python 2.7")
    with pytest.raises(SystemExit) as stopped:
        client_suite.prepare("dask-mpi")
    assert stopped.value.code == client_suite.CANNOT_INSTALL
    assert not ready.exists()


def test_a_virtualenv_of_another_python_is_made_anew(tmp_path, monkeypatch):
    """A stamp that says this Python over a virtualenv of another (left by a run
    before stamps were removed first) is not trusted: the virtualenv is made anew."""
    made = []
    monkeypatch.setattr(client_suite, "CACHE", str(tmp_path))
    monkeypatch.setattr(client_suite, "_make", lambda *args: made.append(args))
    monkeypatch.setattr(client_suite, "_use_checkout", lambda python: None)
    folder = tmp_path / "dask-mpi"
    (folder / "venv").mkdir(parents=True)
    (folder / "venv" / "pyvenv.cfg").write_text("home = /elsewhere\nversion = 2.7.18\n")
    (folder / "ready").write_text("python %d.%d" % sys.version_info[:2])
    client_suite.prepare("dask-mpi")
    assert len(made) == 1
    (folder / "venv" / "pyvenv.cfg").write_text("version = %d.%d.0\n" % sys.version_info[:2])
    client_suite.prepare("dask-mpi")
    assert len(made) == 1       # this Python's, stamped: used as it is
