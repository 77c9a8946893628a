"""Every collective byte for byte (tests/programs/collective_bytes.py): seeded cases
of every collective, blocking, nonblocking and persistent, with IN_PLACE where MPI
allows it, the message forms mpi4py takes, a pair type with padding, a vector with
gaps and types of size 0; receive buffers start as a sentinel and every byte of
them, and of the send buffers, is checked against what the program computes from
the type maps it writes out, so a byte written outside a type map fails as a wrong
value does. With mpi4py and an MPI installed the same cases run on both backends
and their buffers must be identical, byte for byte.
"""
import pathlib

import pytest

from test_backends import LINES, needs_mpi

PROGRAM = pathlib.Path(__file__).resolve().parent / "programs" / "collective_bytes.py"


def _lines(run_shmrma, ranks, *args, backend="shm"):
    result = run_shmrma(["--backend", backend, "-n", ranks, "--timeout", 100, PROGRAM,
                         *map(str, args)], timeout=120, env=LINES)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


@pytest.mark.timeout(150)
@pytest.mark.parametrize("ranks, seed", [(1, 1), (2, 2), (3, 3), (4, 4)])
def test_every_collective_writes_exactly_its_type_maps(run_shmrma, ranks, seed):
    lines = _lines(run_shmrma, ranks, "--seed", seed, "--cases", 200)
    assert len(lines) == 200 * ranks
    wrong = [line for line in lines if not line.endswith(": ok")]
    assert not wrong, "\n".join(wrong[:10])


@needs_mpi
@pytest.mark.timeout(300)
def test_every_collective_leaves_the_bytes_mpi_leaves(run_shmrma):
    """The same seeded cases on mpi4py with the installed MPI: every buffer's bytes
    (or the error a call raised) the same on both backends."""
    args = ("--seed", 5, "--cases", 200, "--dump")
    shm = _lines(run_shmrma, 3, *args)
    mpi = _lines(run_shmrma, 3, *args, backend="mpi")
    differ = [(ours, theirs) for ours, theirs in zip(shm, mpi) if ours != theirs]
    assert len(shm) == len(mpi) == 600 and not differ, differ[:3]
