"""The pool of collective areas (shmrma/coll/area.py): a freed communicator's small
area serves the next communicator of its size instead of a new segment, cleared,
whichever ranks made or freed it; names in /dev/shm stay bounded however many
communicators a program makes."""
import os

import numpy as np
import pytest

import shmrma
from shmrma import MPI


def _area_names():
    from shmrma.core import job, segments
    from shmrma.coll.area import AREA_KIND
    prefix = "%s%s" % (segments.job_prefix(job.current().job_id), AREA_KIND)
    return sorted(n for n in os.listdir(segments.SHM_DIR) if n.startswith(prefix))


def _rounds(rounds, make, use):
    """``rounds`` times: the communicators ``make()`` gives, each used by ``use(new,
    turn)`` (which checks its results), then freed (in turn in either order); the
    names of areas at the end of each round."""
    names = []
    for turn in range(rounds):
        made = make()
        for new in made:
            use(new, turn)
        for new in made[::-1] if turn % 2 else made:
            new.Free()
        MPI.COMM_WORLD.Barrier()
        names.append(len(_area_names()))
    return names


def _many_communicators(rounds):
    """Communicators of three sizes made, used and freed in turn (Dup, Split in
    halves, Split in pairs with the ranks reversed), each checked by the results of
    its first collectives (a reused area starts clean); the names of areas at the
    end of each round."""
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size

    def use(new, turn):
        out = np.zeros(3)
        new.Allreduce(np.array([1.0, new.rank, turn]), out)
        assert out.tolist() == [new.size, sum(range(new.size)), turn * new.size]
        assert new.allgather((turn, new.rank)) == [(turn, r) for r in range(new.size)]
        assert new.bcast(turn * 10 + rank if new.rank == 0 else None, 0) is not None
    return _rounds(rounds, lambda: [comm.Dup(), comm.Split(rank % 2, rank),
                                    comm.Split(rank // 2, size - rank)], use)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 4, 5])
def test_areas_are_reused_and_their_names_stay_bounded(nranks):
    """60 rounds of 3 communicators: the areas in /dev/shm stop growing after the
    first rounds (each new communicator took a freed one of its size)."""
    for counts in shmrma.launch(_many_communicators, nranks, args=(60,), timeout=110):
        assert max(counts) <= counts[2] + 1 and max(counts) <= 8, counts


def _threads_make_communicators():
    """Two threads of each rank make, use and free communicators at once (each on
    its own Dup of COMM_WORLD): the pool is shared by every process and thread."""
    import threading
    comm = MPI.COMM_WORLD
    bases = [comm.Dup() for _ in range(2)]
    failures = []

    def work(base):
        try:
            for turn in range(40):
                new = base.Split(base.rank % 2, base.rank) if turn % 2 else base.Dup()
                got = new.allreduce(turn)
                if got != turn * new.size:
                    failures.append((turn, got))
                new.Free()
        except Exception as exc:    # noqa: BLE001 - reported to the test
            failures.append(repr(exc))
    threads = [threading.Thread(target=work, args=(base,)) for base in bases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for base in bases:
        base.Free()
    return failures


@pytest.mark.timeout(120)
@pytest.mark.parametrize("run", range(3))
def test_threads_and_ranks_share_the_pool(run):
    if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        pytest.skip("needs THREAD_MULTIPLE")
    assert shmrma.launch(_threads_make_communicators, 4, timeout=110) == [[]] * 4


def _first_collective_is_a_large_bcast(rounds):
    """New communicators whose first collective is a large broadcast, its root first
    and the others late: the root names the small area and is through its first step
    before the others read that name, then maps a large area, whose name must not
    take the small one's place while they have not read it. Nonzero ranks sleep a
    varying moment first; the broadcast's data and the communicator after it are
    checked."""
    import time
    comm = MPI.COMM_WORLD
    large = 300 * 1024
    for turn in range(rounds):
        new = comm.Dup() if turn % 2 else comm.Split(0, comm.size - comm.rank)
        if new.rank != 0:
            time.sleep(0.002 * (turn % 5))
        if turn % 3 == 0:
            data = np.full(large // 8, turn, dtype=np.float64) if new.rank == 0 else \
                np.zeros(large // 8)
            new.Bcast(data, 0)
            assert (data == turn).all()
        else:
            got = new.bcast(bytes([turn % 256]) * large if new.rank == 0 else None, 0)
            assert got == bytes([turn % 256]) * large
        assert new.allreduce(1) == new.size
        new.Free()
    return len(_area_names())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_a_late_member_reads_the_small_area_name_before_a_large_one(nranks):
    counts = shmrma.launch(_first_collective_is_a_large_bcast, nranks, args=(24,),
                           timeout=110)
    assert all(count <= 8 for count in counts), counts


def _large_collectives_on_new_communicators(rounds):
    """Communicators of two sizes, each made for one large reduction and one large
    all-to-all (its large area taken from the pool, cleared, or made), checked by
    their results; the names of areas at the end of each round."""
    comm = MPI.COMM_WORLD

    def use(new, turn):
        vector = np.full(1 << 17, float(new.rank + turn))      # 1 MiB
        out = np.empty_like(vector)
        new.Allreduce(vector, out)
        assert (out == sum(range(new.size)) + turn * new.size).all()
        parts = np.repeat(np.arange(new.size, dtype="i8") + 100 * new.rank, 40000)
        got = np.empty_like(parts)
        new.Alltoall(parts, got)
        assert (got == np.repeat(np.arange(new.size) * 100 + new.rank, 40000)).all()
    return _rounds(rounds, lambda: [comm.Dup(), comm.Split(comm.rank % 2, comm.rank)], use)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_large_areas_are_reused_and_their_names_stay_bounded(nranks):
    """30 rounds of 2 communicators whose first collective is a large one: their
    large areas come back from the pool (at most LARGE_POOLED kept) and start
    clean, so the results are right and the names in /dev/shm stop growing."""
    from shmrma.coll.area import LARGE_POOLED
    for counts in shmrma.launch(_large_collectives_on_new_communicators, nranks, args=(30,),
                                timeout=110):
        assert max(counts) <= counts[2] + 1 and max(counts) <= 4 + LARGE_POOLED, counts
