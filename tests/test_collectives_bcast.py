"""Broadcasts on the collective areas (coll/area.py, shmrma/csrc/coll/area.c).

A broadcast's step is lighter than the others': only its root deposits, the
receivers wait for that deposit alone and say in their read cells when they
read it, and a root reuses a slot once the readers of the broadcast before last
are done. These tests hold it to the other collectives' correctness: back-to-back
broadcasts from changing roots, of small and chunked data, mixed with every
other kind of step, on communicators made by Dup and Split, on the C path, the
Python path and both at once (fast paths on at some ranks only); a root running
far ahead of a slow reader; a dead root; and what --timeout reports a rank waits
for. No numbered rule covers collectives; the behaviour is mpi4py's.
"""
import re
import textwrap
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.rma import fastpath
from mpitest import dead_rank_ends_the_job

CHUNKED = 40000     # float64s: 320 KB, past the small area and a large slot


def _payload(round_, root, n):
    return np.arange(n, dtype="f8") * (round_ + 1) + 1000 * root


def _rounds(comm):
    """Broadcasts from every root in turn, back to back and between other
    collectives: what each round ends with on this rank."""
    rank, size = comm.rank, comm.size
    seen = []
    for round_ in range(12):
        root = (round_ * 3 + 1) % size
        n = CHUNKED if round_ % 5 == 4 else 1 + round_
        buf = _payload(round_, root, n) if rank == root else np.zeros(n)
        comm.Bcast(buf, root)
        seen.append(bool(np.array_equal(buf, _payload(round_, root, n))))
        seen.append(comm.bcast(("obj", round_, root) if rank == root else None, root))
        if round_ % 3 == 0:
            out = np.zeros(2, "i8")
            comm.Allreduce(np.array([rank, round_], "i8"), out, MPI.SUM)
            seen.append(out.tolist())
        if round_ % 4 == 1:
            seen.append(comm.allgather(rank * round_))
            gathered = np.zeros(size, "i4")
            comm.Gather(np.array([rank + round_], "i4"), gathered if rank == root else None,
                        root)
            seen.append(gathered.tolist() if rank == root else None)
        if round_ % 4 == 2:
            comm.Barrier()
            seen.append(comm.reduce(rank + round_, MPI.MAX, root=size - 1))
    return seen


def _expected(rank, size):
    seen = []
    for round_ in range(12):
        root = (round_ * 3 + 1) % size
        seen += [True, ("obj", round_, root)]
        if round_ % 3 == 0:
            seen.append([sum(range(size)), round_ * size])
        if round_ % 4 == 1:
            seen.append([r * round_ for r in range(size)])
            seen.append([r + round_ for r in range(size)] if rank == root else None)
        if round_ % 4 == 2:
            seen.append(size - 1 + round_ if rank == size - 1 else None)
    return seen


def _every_comm_and_mode():
    world = MPI.COMM_WORLD
    outcomes = []
    for fast in (True, False, world.rank % 2 == 0):
        fastpath.enable(fast)
        try:
            dup = world.Dup()
            # two halves of different sizes, ranked backwards: their roots differ
            half = world.Split(world.rank % 2, -world.rank)
            outcomes.append([(comm.size, comm.rank, _rounds(comm))
                             for comm in (world, dup, half, world)])
            dup.Free()
            half.Free()
        finally:
            fastpath.enable(True)
    return outcomes


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_broadcasts_mixed_with_other_collectives_on_every_path(nranks):
    """Rotating roots, small and chunked buffers, objects, and the other
    collectives in between, on COMM_WORLD, a Dup and a Split, with the fast paths
    on, off and on at even ranks only: every result is right everywhere."""
    for outcomes in shmrma.launch(_every_comm_and_mode, nranks, timeout=100):
        for runs in outcomes:
            for size, rank, seen in runs:
                assert seen == _expected(rank, size), (size, rank)


def _slow_reader():
    """The root broadcasts 40 rounds back to back while rank 1 dawdles before some
    of its reads: every round still arrives whole, in order."""
    comm = MPI.COMM_WORLD
    got = []
    for round_ in range(40):
        if comm.rank == 1 and round_ % 7 == 3:
            time.sleep(0.05)
        buf = np.full(3, round_, "i8") if comm.rank == 0 else np.zeros(3, "i8")
        comm.Bcast(buf, 0)
        got.append(buf.tolist())
        if round_ % 10 == 9:
            got.append(comm.bcast(round_ if comm.rank == 0 else None, 0))
    return got


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nranks", [2, 4])
def test_a_root_ahead_of_a_slow_reader_never_overwrites_what_it_reads(nranks):
    expected = []
    for round_ in range(40):
        expected.append([round_] * 3)
        if round_ % 10 == 9:
            expected.append(round_)
    assert shmrma.launch(_slow_reader, nranks, timeout=50) == [expected] * nranks


@pytest.mark.timeout(120)
def test_a_dead_root_ends_a_waiting_ranks_bcast(run_shmrma, tmp_path):
    """Rank 0 waits in a Bcast whose root (rank 1) died: the job ends at once."""
    dead_rank_ends_the_job(run_shmrma, tmp_path, "comm.allgather(None)\n"
                           "comm.Bcast(bytearray(8), 1)")


TIMEOUT_PROGRAM = '''
import time
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
comm.allgather(None)                    # step 1: the small area is mapped
# broadcasts from rank 0 at steps 2, 3, ...: rank 1 takes the first only, so rank
# 0's fourth (step 5) waits for it to read step 3, and rank 2 for rank 0's deposit
for _ in range({0: 4, 1: 1, 2: 4}[comm.rank]):
    comm.Bcast(np.zeros(1), 0)
time.sleep(60)
'''


@pytest.mark.timeout(60)
@pytest.mark.parametrize("engine", ["1", "0"])
def test_timeout_reports_what_a_broadcast_waits_for(run_shmrma, tmp_path, engine):
    """A root waits for the readers of its broadcast before last, a receiver for the
    root's deposit, and --timeout names what (C and Python engines)."""
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(TIMEOUT_PROGRAM))
    result = run_shmrma(["-n", "3", "--timeout", "2", path], timeout=30,
                        env={"SHMRMA_NATIVE": engine})
    assert result.returncode == 124, result.stderr
    firsts = [block.splitlines()[0] for block in
              re.split(r"^--- ", result.stderr, flags=re.M)[1:]]
    assert "waiting for step 3 of a collective on MPI_COMM_WORLD (3 ranks): rank 1 to " \
        "finish reading it" in firsts[0], firsts
    assert "not waiting" in firsts[1], firsts
    assert firsts[2].endswith("waiting for step 5 of a collective on MPI_COMM_WORLD "
                              "(3 ranks)"), firsts


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fast", [True, False], ids=["fastpath", "python"])
def test_a_receiver_that_rejects_its_buffer_raises_alone(fast):
    """A broadcast's receiver whose buffer cannot hold the message (a column type on
    a too-short array) raises ValueError; nobody waits for a receiver, so the root
    and the other receivers complete with the data, as on MPICH, and the next
    broadcasts work on every rank (docs/api.md, Collectives: "a broadcast's receiver")."""
    def body():
        fastpath.enable(fast)
        comm = MPI.COMM_WORLD
        column = MPI.DOUBLE.Create_vector(4, 1, 4).Commit()
        buf = np.arange(16.0) if comm.rank == 0 else np.zeros(16)
        if comm.rank == 2:
            buf = np.zeros(12)          # the column's last element is missing
        try:
            comm.Bcast([buf, 1, column], 0)
            outcome = buf[::4].tolist()
        except ValueError as exc:
            outcome = "outside the buffer" in str(exc)
        again = np.arange(3.0) if comm.rank == 0 else np.zeros(3)
        comm.Bcast(again, 0)
        column.Free()
        return outcome, again.tolist()

    results = shmrma.launch(body, 3, timeout=40)
    assert [outcome for outcome, _ in results] == [[0.0, 4.0, 8.0, 12.0]] * 2 + [True]
    assert all(again == [0.0, 1.0, 2.0] for _, again in results)
