"""The nonblocking collectives' channel (shmrma/coll/channel.py): what its design must
guarantee beyond the calls' results (tests/test_collectives.py has those).

No numbered rule covers collectives; the behaviour is MPI-3.1 §5.12 (a
nonblocking collective is local at its start, several may be outstanding,
blocking calls make progress) and mpi4py on MPICH's. Streams too long for a
slot travel through each rank's outbox, which grows past its first size and
wraps; a rank far ahead of the others waits for a slot without holding anyone
up, even while it blocks in a point-to-point call; every segment is unlinked
once nobody needs its name.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import job
from shmrma.coll import channel as nbcarea
from mpitest import HANG_S, job_segments, nothing_left_behind


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
    before = job_segments()
    half = comm.Split(rank % 2, rank)
    half.Iallreduce(np.ones(4), np.zeros(4)).Wait()
    half.Iallreduce(np.ones(1 << 16), np.zeros(1 << 16)).Wait()     # via the outboxes
    comm.Barrier()
    during = job_segments()
    comm.Barrier()
    channels = [world.shared_name("nbc.%d" % state.context)[1:]
                for state in (half._s, comm._s)]
    outboxes = [world.shared_name("outbox.%d.1" % r)[1:] for r in range(comm.size)]
    half.Free()
    comm.Barrier()
    freed = job_segments()
    comm.Barrier()      # nobody starts the next collective (and maps names) before
    comm.Iallgather(np.ones(1 << 16), np.zeros(comm.size << 16)).Wait()   # all map all
    comm.Barrier()
    after = job_segments()
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


def _sliced_folds():
    """Large Iallreduces and Ireduces, which the ranks split as the blocking fold
    does: each folds one slice of the vectors, and each rank that receives takes
    the others' folded slices. Each result is checked against numpy; two run
    overlapped and are waited for in reverse; a non-commutative user op must
    still fold in rank order, MINLOC pairs and a derived datatype must be cut at
    whole elements, IN_PLACE must work; Ireduce leaves the others' buffers be."""
    from shmrma.coll import nonblocking
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    n = 1 << 18 | 3         # 1 MiB of float32, not a multiple of the ranks
    checks = {}
    sliced = []
    made = nonblocking._SlicedFold.__init__

    def spy(self, *args):
        sliced.append(args[0])
        made(self, *args)
    nonblocking._SlicedFold.__init__ = spy
    for dtype in ("f4", "f8", "i4", "i8"):
        send = ((np.arange(n) % 1000) * (rank + 1) + rank).astype(dtype)
        got = np.zeros(n, dtype)
        comm.Iallreduce(send, got).Wait()
        expected = sum(((np.arange(n) % 1000) * (r + 1) + r).astype(dtype) for r in range(size))
        checks["SUM " + dtype] = bool((got == expected).all())
    a, b = np.arange(n, dtype="f8") + rank, np.arange(n, dtype="i8") * (rank + 1)
    max_a, sum_b = np.zeros(n), np.zeros(n, "i8")
    first = comm.Iallreduce(a, max_a, MPI.MAX)
    second = comm.Iallreduce(b, sum_b)
    second.Wait()
    first.Wait()
    checks["overlapped"] = bool((max_a == np.arange(n) + size - 1).all() and
                                (sum_b == np.arange(n) * sum(range(1, size + 1))).all())
    digits = MPI.Op.Create(lambda a, b, datatype: _shift_in(a, b), commute=False)
    got = np.zeros(n, "i8")
    comm.Iallreduce(np.full(n, rank + 1, "i8"), got, digits).Wait()
    digits.Free()
    checks["rank order"] = bool((got == int("".join(str(r + 1) for r in range(size)))).all())
    pairs = np.zeros(n, dtype=np.dtype([("v", "f8"), ("i", "i4")], align=True))
    pairs["v"], pairs["i"] = (np.arange(n) + rank) % size, rank
    least = np.zeros_like(pairs)
    comm.Iallreduce([pairs, MPI.DOUBLE_INT], [least, MPI.DOUBLE_INT], MPI.MINLOC).Wait()
    checks["MINLOC"] = bool((least["v"] == 0).all() and
                            (least["i"] == (-np.arange(n)) % size).all())
    triple = MPI.INT64_T.Create_contiguous(3).Commit()
    mine, total = np.arange(3 * n, dtype="i8") + rank, np.zeros(3 * n, "i8")
    comm.Iallreduce([mine, n, triple], [total, n, triple], MPI.SUM).Wait()
    triple.Free()
    checks["derived"] = bool((total == np.arange(3 * n) * size + sum(range(size))).all())
    both = np.arange(n, dtype="f4") * (rank + 1)
    comm.Iallreduce(MPI.IN_PLACE, both).Wait()
    checks["IN_PLACE"] = bool((both == np.arange(n, dtype="f4") * sum(range(1, size + 1))).all())
    for root in (size - 1, 1):
        send = np.arange(n, dtype="f8") * (rank + 1) + rank
        got = np.full(n, -1.0)
        comm.Ireduce(send, got if rank == root else None, MPI.SUM, root).Wait()
        expected = np.arange(n) * sum(range(1, size + 1)) + sum(range(size))
        checks["Ireduce to %d" % root] = bool((got == expected).all() if rank == root
                                              else (got == -1).all())
    digits = MPI.Op.Create(lambda a, b, datatype: _shift_in(a, b), commute=False)
    got = np.zeros(n, "i8")
    first = comm.Ireduce(np.full(n, rank + 1, "i8"), got, digits, 0)
    second = comm.Ireduce(MPI.IN_PLACE if rank == 1 else np.full(n, rank + 1, "i8"),
                          np.full(n, 2, "i8") if rank == 1 else None, digits, 1)
    second.Wait()
    first.Wait()
    digits.Free()
    checks["Ireduce in rank order"] = bool(
        (got == int("".join(str(r + 1) for r in range(size)))).all() if rank == 0 else True)
    nonblocking._SlicedFold.__init__ = made
    checks["sliced"] = sliced == ["Iallreduce"] * 10 + ["Ireduce"] * 4
    nothing_left_behind(comm)
    return checks


def _shift_in(incoming, inout):
    """inout = incoming's digits, then inout's: rank order shows in the result."""
    a, b = np.frombuffer(incoming, "i8"), np.frombuffer(inout, "i8")
    b[:] = a * 10 ** (np.floor(np.log10(b)) + 1).astype("i8") + b


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [3, 4])
def test_large_iallreduce_and_ireduce_are_split_among_the_ranks(nranks):
    for checks in shmrma.launch(_sliced_folds, nranks, timeout=100):
        assert all(checks.values()), checks


def _sliced_fold_errors():
    """A sliced Iallreduce whose user op raises at one rank only (in its slice):
    that rank raises the op's error, the others raise naming it, nobody hangs; one
    whose vectors differ in length raises everywhere; the channel goes on."""
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    n = 1 << 16
    out = []

    def picky(a, b, datatype):
        if rank == 1:
            raise ZeroDivisionError("rank 1's op")
        np.frombuffer(b, "f8")[:] += np.frombuffer(a, "f8")
    op = MPI.Op.Create(picky, commute=True)
    got = np.zeros(n)
    request = comm.Iallreduce(np.ones(n), got, op)
    try:
        request.Wait()
        out.append("ok")
    except MPI.Exception as exc:
        out.append("mpi %s" % exc.Get_error_class())
    except ZeroDivisionError:
        out.append("own")
    op.Free()
    longer = np.ones(n + rank % 2)
    try:
        comm.Iallreduce(longer, np.zeros_like(longer)).Wait()
        out.append("ok")
    except MPI.Exception as exc:
        out.append("mismatch %s" % exc.Get_error_class())
    got = np.zeros(n)
    comm.Iallreduce(np.full(n, 1.0), got).Wait()
    out.append(bool((got == size).all()))
    nothing_left_behind(comm)
    return out


@pytest.mark.timeout(60)
def test_a_sliced_fold_that_fails_somewhere_ends_everywhere():
    results = shmrma.launch(_sliced_fold_errors, 3, timeout=50)
    assert results[1][0] == "own"
    assert results[0][0] == results[2][0] == "mpi %d" % MPI.ERR_ARG
    for out in results:
        assert out[1].startswith("mismatch") and out[2] is True, out


@pytest.mark.timeout(120)
def test_a_sliced_fold_notices_a_dead_rank(run_shmrma, tmp_path):
    """Rank 2 deposits its vector, then dies before folding its slice: the others,
    waiting for that slice (or, should the abort reach them sooner, for a deposit),
    end the job with its status, not with the job's timeout (124)."""
    program = tmp_path / "dead_folder.py"
    program.write_text("import os\nimport numpy as np\nfrom shmrma import MPI\n"
                       "comm = MPI.COMM_WORLD\n"
                       "request = comm.Iallreduce(np.ones(1 << 18), np.zeros(1 << 18))\n"
                       "if comm.rank == 2:\n    os._exit(4)\nrequest.Wait()\n")
    result = run_shmrma(["-n", 3, "--timeout", HANG_S, program], timeout=HANG_S + 30)
    assert result.returncode == 4, result.stderr
