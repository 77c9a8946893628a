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
