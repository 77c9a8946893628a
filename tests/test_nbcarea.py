"""The nonblocking collectives' channel (shmrma/nbcarea.py): what its design must
guarantee beyond the calls' results (tests/test_collectives.py has those).

No checklist rule covers collectives; the behaviour is MPI-3.1 §5.12 (a
nonblocking collective is local at its start, several may be outstanding,
blocking calls make progress) and mpi4py on MPICH's. Streams too long for a
slot travel through each rank's outbox, which grows past its first size and
wraps; a rank far ahead of the others waits for a slot without holding anyone
up, even while it blocks in a point-to-point call; every segment is unlinked
once nobody needs its name.
"""
import os

import numpy as np
import pytest

import shmrma
from shmrma import MPI, job, nbcarea
from mpitest import nothing_left_behind


def _job_names():
    prefix = "shmrma.%s." % job.current().job_id
    return sorted(name for name in os.listdir("/dev/shm") if name.startswith(prefix))


def _large_streams():
    """Reductions and exchanges of streams beyond a slot: 1 MiB folds, a 3 MiB
    broadcast (past the outbox's first size: it grows), and eight 300 KB gathers
    outstanding at once (the ring wraps), each checked."""
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    n = 1 << 17
    checks = []
    for repeat in range(3):
        send = np.arange(n, dtype="f8") * (rank + 1) + repeat
        total = np.zeros(n)
        comm.Iallreduce(send, total).Wait()
        expected = np.arange(n, dtype="f8") * sum(range(1, size + 1)) + size * repeat
        checks.append(bool((total == expected).all()))
    big = np.arange(3 << 17, dtype="f8") if rank == size - 1 else np.zeros(3 << 17)
    comm.Ibcast(big, size - 1).Wait()
    checks.append(bool((big == np.arange(3 << 17)).all()))
    requests, outs = [], []
    for k in range(8):
        out = np.zeros((37500 + k) * size, "i8")
        requests.append(comm.Iallgather(np.full(37500 + k, 10 * rank + k, "i8"), out))
        outs.append(out)
    MPI.Request.Waitall(requests[::-1])
    for k, out in enumerate(outs):
        checks.append(out.tolist() == [10 * r + k for r in range(size) for _ in range(37500 + k)])
    parts = np.arange(size * 70000, dtype="i4") + 1000 * rank
    got = np.zeros(size * 70000, "i4")
    comm.Ialltoall(parts, got).Wait()
    checks.append(all((got[r * 70000:(r + 1) * 70000] ==
                       np.arange(rank * 70000, (rank + 1) * 70000) + 1000 * r).all()
                      for r in range(size)))
    nothing_left_behind(comm)
    return checks


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 3])
def test_streams_beyond_a_slot_go_through_the_outbox(nranks):
    for checks in shmrma.launch(_large_streams, nranks, timeout=100):
        assert checks and all(checks), checks


def _far_ahead():
    """Rank 0 starts three times as many Ibarriers as there are slots while rank 1
    sleeps, then blocks in a Recv of what rank 1 sends only after completing all of
    its own: rank 0's Recv must run its waiting deposits (MPI: blocking calls make
    progress), or both hang."""
    import time
    comm = MPI.COMM_WORLD
    rank = comm.rank
    count = 3 * nbcarea.SLOTS
    if rank == 1:
        time.sleep(0.2)
    requests = [comm.Ibarrier() for _ in range(count)]
    waiting = not requests[0].Test() if rank == 0 else None   # rank 1 is asleep
    if rank == 0:
        started = comm.recv(source=1, tag=5)
        MPI.Request.Waitall(requests)
    else:
        MPI.Request.Waitall(requests)
        comm.send(len(requests), dest=0, tag=5)
        started = len(requests)
    totals = [np.zeros(1) for _ in range(count)]
    requests = [comm.Iallreduce(np.ones(1) * rank, total) for total in totals]
    MPI.Request.Waitall(requests[::-1])
    nothing_left_behind(comm)
    return started, waiting, [t[0] for t in totals]


@pytest.mark.timeout(60)
def test_a_rank_far_ahead_waits_for_a_slot_and_blocks_nobody():
    for rank, (started, waiting, totals) in enumerate(shmrma.launch(_far_ahead, 2,
                                                                   timeout=50)):
        assert waiting is (True if rank == 0 else None)
        assert started == 3 * nbcarea.SLOTS
        assert totals == [1.0] * (3 * nbcarea.SLOTS)


def _names_after_free():
    """Names at each point of a run: a channel goes as soon as every member mapped
    it, an outbox once every other rank of the job mapped it."""
    comm = MPI.COMM_WORLD
    rank = comm.rank
    world = job.current()
    comm.Barrier()
    before = _job_names()
    half = comm.Split(rank % 2, rank)
    half.Iallreduce(np.ones(4), np.zeros(4)).Wait()
    half.Iallreduce(np.ones(1 << 16), np.zeros(1 << 16)).Wait()     # via the outboxes
    comm.Barrier()
    during = _job_names()
    comm.Barrier()
    channels = [world.shared_name("nbc.%d" % state.context)[1:]
                for state in (half._s, comm._s)]
    outboxes = [world.shared_name("outbox.%d.1" % r)[1:] for r in range(comm.size)]
    half.Free()
    comm.Barrier()
    freed = _job_names()
    comm.Barrier()      # nobody starts the next collective (and maps names) before
    comm.Iallgather(np.ones(1 << 16), np.zeros(comm.size << 16)).Wait()   # all map all
    comm.Barrier()
    after = _job_names()
    return before, during, freed, after, channels, outboxes


@pytest.mark.timeout(60)
def test_no_name_outlives_its_use():
    before, during, freed, after, channels, outboxes = shmrma.launch(
        _names_after_free, 4, timeout=50)[0]
    assert before == []
    # each half mapped its channel, and each rank its partner's outbox only
    assert sorted(during) == sorted(outboxes)
    assert not set(channels) & set(during + freed + after)
    assert freed == during
    assert after == []


def _freed_while_read():
    """A rank frees its communicator right after its Igather (done at once: it only
    deposits); the root reads its stream later, from the outbox, unharmed."""
    import time
    comm = MPI.COMM_WORLD
    rank = comm.rank
    dup = comm.Dup()
    out = np.zeros(5000 * comm.size) if rank == 0 else None
    request = dup.Igather(np.full(5000, rank + 0.5), out, root=0)
    if rank != 0:
        request.Wait()
        dup.Free()
        comm.Barrier()
        return None
    comm.Barrier()
    time.sleep(0.05)
    request.Wait()
    dup.Free()
    return sorted(set(out.tolist()))


@pytest.mark.timeout(60)
def test_a_communicator_freed_before_its_streams_were_read():
    results = shmrma.launch(_freed_while_read, 3, timeout=50)
    assert results[0] == [0.5, 1.5, 2.5]
