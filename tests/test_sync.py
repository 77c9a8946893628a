"""Synchronization: Fence, the epoch rules that raise ERR_RMA_SYNC, passive target
locks (exclusion, sharing, blocking, progress, stress, counter wrap), flushes,
assertions, error handlers.

Rules: MPI-3.1 §11.5 (epochs), §11.5.1 (Fence), §11.5.3 (locks), §11.5.4 (flushes),
R113, R122, R131, A34, A38 (docs/rules.md), the epoch errors of docs/api.md; a
release never wipes a concurrent acquire; lock counters wrap safely;
Fence(MODE_NOPRECEDE) still synchronizes; passive target needs no target progress.
Every multi-rank body runs under ``shmrma.launch`` with a timeout.
"""
import os
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic
from mpitest import HANG_S, fatal_error_ends_the_job


# --- helpers (run inside the ranks) ---------------------------------------------------

def expect(error_class, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` must raise MPI.Exception of ``error_class``; returns it."""
    try:
        fn(*args, **kwargs)
    except MPI.Exception as exc:
        assert exc.Get_error_class() == error_class, (
            "expected error class %d, got %d: %s" % (error_class, exc.Get_error_class(), exc))
        return exc
    raise AssertionError("%r did not raise MPI.Exception of class %d" % (fn, error_class))


def sync_error(fn, *args, **kwargs):
    return expect(MPI.ERR_RMA_SYNC, fn, *args, **kwargs)


def local(win, dtype="i8"):
    return np.frombuffer(win.tomemory(), dtype=dtype)


ONE = np.ones(1, dtype="i8")


# --- Fence ------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_fence_completes_rma_and_separates_epochs():
    """R74-R77: RMA issued before a Fence is complete at the target after the target's
    Fence (R75); a Get issued after a Fence sees what the target stored before it
    (R76); consecutive fences end and start epochs (R77)."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        win = MPI.Win.Allocate(8 * size, 8, comm=comm)
        mine = local(win)
        mine[:] = -1
        win.Fence()
        for target in range(size):
            win.Put(np.array([10 * rank + target]), target, rank)
        win.Fence()
        after_first = mine.tolist()
        mine[rank] = 1000 + rank  # a local store before the next Fence
        win.Fence()
        got = np.zeros(size, dtype="i8")
        for target in range(size):
            win.Get(got[target:target + 1], target, target)
        win.Fence(MPI.MODE_NOSUCCEED)
        win.Free()
        return after_first, got.tolist()
    results = shmrma.launch(body, 3, timeout=30)
    for rank, (after_first, seen) in enumerate(results):
        assert after_first == [10 * origin + rank for origin in range(3)]
        assert seen == [1000 + target for target in range(3)]


@pytest.mark.timeout(60)
def test_fence_is_a_barrier():
    """R80, A34: Fence always acts as a barrier, with or without assertions: rank 0's
    Fence returns only after rank 1 (0.3 s late) has entered it."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8, 8, comm=comm)
        out = []
        for assertion in (0, MPI.MODE_NOPRECEDE | MPI.MODE_NOSTORE | MPI.MODE_NOPUT):
            comm.Barrier()
            if comm.Get_rank() == 1:
                time.sleep(0.3)
                out.append(time.monotonic())
                win.Fence(assertion)
            else:
                win.Fence(assertion)
                out.append(time.monotonic())
        win.Free()
        return out
    rank0, rank1 = shmrma.launch(body, 2, timeout=20)
    assert rank0[0] >= rank1[0] and rank0[1] >= rank1[1]


@pytest.mark.timeout(60)
def test_fence_noprecede_still_synchronizes():
    """R80: a store made before Fence(MODE_NOPRECEDE) by a late rank is
    visible to a peer's Get right after its own Fence(MODE_NOPRECEDE)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        if rank == 0:
            time.sleep(0.3)
            local(win)[0] = 4242
        win.Fence(MPI.MODE_NOPRECEDE)
        got = np.zeros(1, dtype="i8")
        if rank == 1:
            win.Get(got, 0)
        win.Fence(MPI.MODE_NOSUCCEED)
        win.Free()
        return int(got[0])
    assert shmrma.launch(body, 2, timeout=20)[1] == 4242


@pytest.mark.timeout(60)
def test_rma_after_fence_nosucceed_is_err_rma_sync():
    """R78, R65: after Fence(MODE_NOSUCCEED) every communication call raises
    ERR_RMA_SYNC and writes nothing; a later Fence() opens a new epoch where a Put
    works."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(16, 8, comm=comm)
        local(win)[:] = 3
        win.Fence()
        win.Fence(MPI.MODE_NOSUCCEED)
        r = np.zeros(1, dtype="i8")
        for call in (lambda: win.Put(ONE, peer), lambda: win.Get(r, peer),
                     lambda: win.Accumulate(ONE, peer), lambda: win.Get_accumulate(ONE, r, peer),
                     lambda: win.Fetch_and_op(ONE, r, peer),
                     lambda: win.Compare_and_swap(ONE, ONE, r, peer)):
            sync_error(call)
        comm.Barrier()
        untouched = local(win).tolist() == [3, 3] and r[0] == 0
        win.Fence()
        win.Put(np.array([9]), peer, 1)
        win.Fence(MPI.MODE_NOSUCCEED)
        final = local(win).tolist()
        win.Free()
        return untouched, final
    assert shmrma.launch(body, 2, timeout=20) == [(True, [3, 9])] * 2


@pytest.mark.timeout(60)
def test_fence_noprecede_after_unfenced_rma_is_err_rma_sync():
    """R78: Fence(MODE_NOPRECEDE) while the caller has RMA since the last Fence is a
    false assertion: ERR_RMA_SYNC, nothing changes, and a plain Fence then works."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win)[:] = 0
        win.Fence()
        win.Put(np.array([5]), peer)
        sync_error(win.Fence, MPI.MODE_NOPRECEDE)
        win.Fence()
        value = int(local(win)[0])
        win.Free()
        return value
    assert shmrma.launch(body, 2, timeout=20) == [5, 5]


@pytest.mark.timeout(60)
def test_bad_assertions_are_err_assert():
    """R113, R112: assertion bits outside the five MODE_* constants raise ERR_ASSERT in
    Fence, Lock and Lock_all, changing nothing; 0, every defined bit (even one that does
    not apply to the call) and numpy integers are accepted."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        for bad in (1, 3, 1 << 20, -1, MPI.MODE_NOCHECK | 4):
            expect(MPI.ERR_ASSERT, win.Fence, bad)
            expect(MPI.ERR_ASSERT, win.Lock, peer, MPI.LOCK_SHARED, bad)
            expect(MPI.ERR_ASSERT, win.Lock_all, bad)
        sync_error(win.Put, ONE, peer)  # no epoch was opened by the failed calls
        sync_error(win.Unlock, peer)
        sync_error(win.Unlock_all)
        every = (MPI.MODE_NOCHECK | MPI.MODE_NOSTORE | MPI.MODE_NOPUT | MPI.MODE_NOPRECEDE
                 | MPI.MODE_NOSUCCEED)
        win.Fence(np.int64(MPI.MODE_NOPRECEDE))
        win.Fence(every & ~MPI.MODE_NOSUCCEED)
        win.Fence(np.int32(every))
        win.Lock(peer, MPI.LOCK_SHARED, every)
        win.Unlock(peer)
        win.Lock_all(np.int64(0))
        win.Unlock_all()
        win.Free()
        return True
    assert shmrma.launch(body, 2, timeout=20) == [True, True]


@pytest.mark.timeout(60)
def test_fence_inside_passive_epoch_is_err_rma_sync():
    """R79: a Fence while a Lock or Lock_all epoch is open raises ERR_RMA_SYNC; the
    epoch stays open (RMA still works) and closes normally."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(16, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        win.Lock(peer, MPI.LOCK_SHARED)
        sync_error(win.Fence)
        win.Put(np.array([1]), peer, 0)
        win.Unlock(peer)
        win.Lock_all()
        sync_error(win.Fence, MPI.MODE_NOPRECEDE)
        win.Put(np.array([2]), peer, 1)
        win.Unlock_all()
        win.Fence()
        final = local(win).tolist()
        win.Free()
        return final
    assert shmrma.launch(body, 2, timeout=20) == [[1, 2], [1, 2]]


# --- epoch rules: ERR_RMA_SYNC with nothing changed ---------------------------------------

@pytest.mark.timeout(60)
def test_rma_outside_any_epoch_is_err_rma_sync_and_writes_nothing():
    """R65: every communication call right after creation, after Unlock and
    after Unlock_all raises ERR_RMA_SYNC, writes no byte and fills no result buffer."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(16, 8, comm=comm)
        local(win)[:] = 6
        comm.Barrier()
        r = np.zeros(2, dtype="i8")
        one = np.zeros(1, dtype="i8")

        def all_raise():
            for call in (lambda: win.Put(ONE, peer), lambda: win.Get(r[:1], peer),
                         lambda: win.Accumulate(ONE, peer),
                         lambda: win.Accumulate(ONE, peer, 0, MPI.REPLACE),
                         lambda: win.Get_accumulate(ONE, one, peer),
                         lambda: win.Get_accumulate(ONE, one, peer, 0, MPI.NO_OP),
                         lambda: win.Fetch_and_op(ONE, one, peer),
                         lambda: win.Compare_and_swap(ONE, ONE, one, peer),
                         lambda: win.Rput(ONE, peer), lambda: win.Rget(r[:1], peer)):
                sync_error(call)
        all_raise()
        win.Lock(peer)
        win.Unlock(peer)
        all_raise()
        win.Lock_all()
        win.Unlock_all()
        all_raise()
        comm.Barrier()
        result = (local(win).tolist(), r.tolist(), one.tolist())
        win.Free()
        return result
    assert shmrma.launch(body, 2, timeout=20) == [([6, 6], [0, 0], [0])] * 2


@pytest.mark.timeout(60)
def test_lock_covers_only_its_target():
    """R65, R71, R94: a Lock epoch reaches only the locked rank (RMA to another rank is
    ERR_RMA_SYNC and writes nothing); Lock epochs to different ranks may be open at
    once; Lock(PROC_NULL)/Unlock(PROC_NULL) open and close nothing (A38)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8 * 3, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        if rank == 0:
            win.Lock(1, MPI.LOCK_SHARED)
            sync_error(win.Put, np.array([7]), 2, rank)
            win.Lock(MPI.PROC_NULL)
            sync_error(win.Put, np.array([7]), 2, rank)
            win.Lock(2, MPI.LOCK_SHARED)
            win.Put(np.array([1]), 1, 0)
            win.Put(np.array([2]), 2, 0)
            win.Unlock(MPI.PROC_NULL)
            win.Unlock(1)
            sync_error(win.Put, np.array([7]), 1, 1)
            win.Put(np.array([3]), 2, 1)
            win.Unlock(2)
        comm.Barrier()
        final = local(win).tolist()
        win.Free()
        return final
    assert shmrma.launch(body, 3, timeout=20) == [[0, 0, 0], [1, 0, 0], [2, 3, 0]]


@pytest.mark.timeout(60)
def test_lock_and_lock_all_misuse_is_err_rma_sync_with_nothing_changed():
    """R66, R72, R94: Lock of a rank already locked, Lock inside Lock_all,
    Lock_all inside Lock or Lock_all, Unlock without Lock, Unlock(r) inside Lock_all,
    Unlock_all without Lock_all and Unlock_all inside Lock all raise ERR_RMA_SYNC; the
    open epoch still allows RMA and closes with its own call, after which the lock is
    free for another rank's exclusive Lock."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(8 * 2, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        sync_error(win.Unlock, peer)
        sync_error(win.Unlock_all)
        if rank == 0:
            win.Lock(1, MPI.LOCK_EXCLUSIVE)
            sync_error(win.Lock, 1, MPI.LOCK_EXCLUSIVE)
            sync_error(win.Lock, 1, MPI.LOCK_SHARED)
            sync_error(win.Lock_all)
            sync_error(win.Unlock, 0)
            sync_error(win.Unlock_all)
            win.Accumulate(ONE, 1, 0)  # still inside the first Lock
            win.Unlock(1)
            sync_error(win.Put, ONE, 1)
            sync_error(win.Unlock, 1)
            win.Lock_all()
            sync_error(win.Lock, 1)
            sync_error(win.Lock_all)
            sync_error(win.Unlock, 1)
            win.Accumulate(ONE, 1, 0)
            win.Unlock_all()
            sync_error(win.Unlock_all)
        comm.Barrier()
        if rank == 1:  # the lock on rank 1 must be free now
            win.Lock(1, MPI.LOCK_EXCLUSIVE)
            win.Accumulate(ONE, 1, 1)
            win.Unlock(1)
        comm.Barrier()
        final = local(win).tolist()
        win.Free()
        return final
    assert shmrma.launch(body, 2, timeout=20) == [[0, 0], [2, 1]]


@pytest.mark.timeout(60)
def test_flush_and_sync_outside_passive_epoch_are_err_rma_sync():
    """R106, A38, A50: Flush, Flush_local, Flush_all, Flush_local_all and Sync with no
    epoch or in a fence epoch raise ERR_RMA_SYNC; Flush(r)/Flush_local(r) for a rank
    the open Lock does not cover too; inside Lock/Lock_all they work, and with
    PROC_NULL Flush/Flush_local are no-ops anywhere."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(8, 8, comm=comm)

        def all_raise():
            for call in (lambda: win.Flush(peer), lambda: win.Flush_local(peer),
                         lambda: win.Flush(rank), lambda: win.Flush_all(),
                         lambda: win.Flush_local_all(), lambda: win.Sync()):
                sync_error(call)
        all_raise()
        win.Flush(MPI.PROC_NULL)
        win.Flush_local(MPI.PROC_NULL)
        win.Fence()
        all_raise()
        win.Fence(MPI.MODE_NOSUCCEED)
        win.Lock(peer, MPI.LOCK_SHARED)
        sync_error(win.Flush, rank)
        sync_error(win.Flush_local, rank)
        win.Flush(peer)
        win.Flush_local(peer)
        win.Flush_all()
        win.Flush_local_all()
        win.Sync()
        win.Unlock(peer)
        all_raise()
        win.Lock_all()
        win.Flush(rank)
        win.Flush(peer)
        win.Flush_all()
        win.Sync()
        win.Unlock_all()
        expect(MPI.ERR_RANK, win.Flush, 5)
        win.Free()
        return True
    assert shmrma.launch(body, 2, timeout=20) == [True, True]


@pytest.mark.timeout(60)
def test_passive_epoch_after_fence_epoch():
    """A34, R66, R133: Lock or Lock_all right after a Fence is allowed when no RMA was
    issued since it; after un-fenced RMA they raise ERR_RMA_SYNC (nothing changes, the
    fence epoch continues), and after Fence(MODE_NOSUCCEED) they work."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8 * 3, 8, comm=comm)
        local(win)[:] = 0
        win.Fence()
        win.Lock(peer, MPI.LOCK_SHARED)  # no RMA since the Fence: fine
        win.Accumulate(ONE, peer, 0)
        win.Unlock(peer)
        comm.Barrier()
        win.Fence()
        win.Accumulate(ONE, peer, 1)
        sync_error(win.Lock, peer)
        sync_error(win.Lock_all)
        win.Accumulate(ONE, peer, 1)  # still the fence epoch
        win.Fence(MPI.MODE_NOSUCCEED)
        win.Lock_all()
        win.Accumulate(ONE, peer, 2)
        win.Unlock_all()
        comm.Barrier()
        final = local(win).tolist()
        win.Free()
        return final
    assert shmrma.launch(body, 2, timeout=20) == [[1, 2, 1]] * 2


@pytest.mark.timeout(60)
def test_free_with_open_epoch_is_err_rma_sync():
    """R22: Free with a Lock, a Lock_all or un-fenced RMA open raises
    ERR_RMA_SYNC and leaves the window usable; once the epoch is closed Free works."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        win.Lock(peer, MPI.LOCK_SHARED)
        sync_error(win.Free)
        win.Accumulate(ONE, peer)
        win.Unlock(peer)
        win.Lock_all()
        sync_error(win.Free)
        win.Accumulate(ONE, peer)
        win.Unlock_all()
        win.Fence()
        win.Accumulate(ONE, peer)
        sync_error(win.Free)
        win.Fence()
        value = int(local(win)[0])
        win.Free()
        return value, bool(win)
    assert shmrma.launch(body, 2, timeout=20) == [(3, False)] * 2


@pytest.mark.timeout(60)
def test_failed_rma_does_not_count_as_issued():
    """R78, A34: an RMA call that raised (ERR_RMA_RANGE: nothing was
    touched) issued no RMA, so Fence(MODE_NOPRECEDE) and a following Lock are still
    legal."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        win.Fence()
        expect(MPI.ERR_RMA_RANGE, win.Put, ONE, peer, 1)
        win.Lock(peer)
        win.Unlock(peer)
        win.Fence()
        expect(MPI.ERR_RMA_RANGE, win.Put, ONE, peer, 1)
        win.Fence(MPI.MODE_NOPRECEDE)
        win.Free()
        return True
    assert shmrma.launch(body, 2, timeout=20) == [True, True]


@pytest.mark.timeout(60)
def test_epochs_on_different_windows_overlap():
    """R67, R73: a Lock epoch on one window inside a fence epoch of another, with
    point-to-point messages inside the epochs, works on both."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        a = MPI.Win.Allocate(8, 8, comm=comm)
        b = MPI.Win.Allocate(8, 8, comm=comm)
        local(a)[:] = 0
        local(b)[:] = 0
        a.Fence()
        a.Put(np.array([rank + 1]), peer)
        b.Lock(peer, MPI.LOCK_SHARED)
        b.Accumulate(np.array([10]), peer)
        token = comm.sendrecv(rank, dest=peer, source=peer)
        b.Unlock(peer)
        a.Fence()
        comm.Barrier()
        result = (int(local(a)[0]), int(local(b)[0]), token)
        a.Free()
        b.Free()
        return result
    assert shmrma.launch(body, 2, timeout=20) == [(2, 10, 1), (1, 10, 0)]


# --- locks ---------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_exclusive_lock_mutual_exclusion():
    """R97: 3 ranks x 150 read-modify-write increments (Get, Flush, Put) of one counter
    under LOCK_EXCLUSIVE give exactly 450."""
    K = 150

    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        value = np.zeros(1, dtype="i8")
        for _ in range(K):
            win.Lock(0, MPI.LOCK_EXCLUSIVE)
            win.Get(value, 0)
            win.Flush(0)
            value += 1
            win.Put(value, 0)
            win.Unlock(0)
        comm.Barrier()
        total = int(local(win)[0])
        win.Free()
        return total
    assert shmrma.launch(body, 3, timeout=40)[0] == 3 * K


@pytest.mark.timeout(60)
def test_shared_locks_are_held_together():
    """R98: ranks 0 and 1 each take a shared lock on rank 2, read, and exchange a
    message while holding it; neither waits for the other's Unlock (no deadlock)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win)[:] = 31
        comm.Barrier()
        got = np.zeros(1, dtype="i8")
        token = None
        if rank < 2:
            win.Lock(2, MPI.LOCK_SHARED)
            win.Get(got, 2)
            win.Flush(2)
            token = comm.sendrecv(rank, dest=1 - rank, source=1 - rank)
            win.Unlock(2)
        comm.Barrier()
        win.Free()
        return int(got[0]), token
    assert shmrma.launch(body, 3, timeout=15) == [(31, 1), (31, 0), (0, None)]


@pytest.mark.timeout(60)
def test_lock_blocks_while_another_rank_holds_exclusive():
    """R100, R99 (shmrma takes locks eagerly): rank 0 holds LOCK_EXCLUSIVE on rank 1's
    window for 0.3 s (a Put and Flush force it); rank 1's Lock(EXCLUSIVE, 1) on its
    own window returns only after rank 0's Unlock, and then sees rank 0's data. A shared
    Lock waits as well."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(16, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        times = []
        for lock_type in (MPI.LOCK_EXCLUSIVE, MPI.LOCK_SHARED):
            if rank == 0:
                win.Lock(1, MPI.LOCK_EXCLUSIVE)
                win.Put(np.array([77]), 1, 0)
                win.Flush(1)
                comm.send("held", dest=1)
                time.sleep(0.3)
                times.append(time.monotonic())
                win.Unlock(1)
            else:
                comm.recv(source=0)
                win.Lock(1, lock_type)
                times.append((time.monotonic(), int(local(win)[0])))
                win.Unlock(1)
            comm.Barrier()
            if rank == 1:
                local(win)[:] = 0
            comm.Barrier()
        win.Free()
        return times
    released, acquired = shmrma.launch(body, 2, timeout=20)
    for unlock_time, (lock_time, value) in zip(released, acquired):
        assert lock_time >= unlock_time
        assert value == 77


@pytest.mark.timeout(60)
def test_owner_lock_protects_its_local_stores():
    """R99, R37: the owner's Lock(EXCLUSIVE) on its own window excludes other ranks'
    shared locks: while rank 1 rewrites its 8-word record with plain stores under its
    own lock, rank 0's reads under a shared lock never see a torn record."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(64, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        torn = 0
        record = np.zeros(8, dtype="i8")
        for cycle in range(300):
            if rank == 1:
                win.Lock(1, MPI.LOCK_EXCLUSIVE)
                for word in range(8):
                    mine[word] = cycle + 1
                    time.sleep(0)
                win.Unlock(1)
            else:
                win.Lock(1, MPI.LOCK_SHARED)
                win.Get(record, 1)
                win.Flush(1)
                torn += len(set(record.tolist())) != 1
                win.Unlock(1)
        comm.Barrier()
        win.Free()
        return torn
    assert shmrma.launch(body, 2, timeout=30) == [0, 0]


@pytest.mark.timeout(60)
def test_passive_target_needs_no_help_from_a_busy_target(tmp_path):
    """R122 (RMA never waits for its target): while rank 2 spins in pure Python (no shmrma call) until
    ranks 0 and 1 say they are done, they lock its window, put, accumulate and unlock
    (had they needed its help, they would never be done: the launch's timeout), and
    it then sees the data with plain loads."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(16, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        if rank == 2:
            done = [tmp_path / ("done.%d" % r) for r in (0, 1)]
            while not all(path.exists() for path in done):
                pass
            seen = mine.tolist()
            comm.Barrier()
            win.Free()
            return seen
        win.Lock(2, MPI.LOCK_EXCLUSIVE)
        win.Put(np.array([rank + 5]), 2, rank)
        win.Unlock(2)
        win.Lock(2, MPI.LOCK_SHARED)
        win.Accumulate(np.array([100]), 2, rank)
        win.Unlock(2)
        (tmp_path / ("done.%d" % rank)).touch()
        comm.Barrier()
        win.Free()
        return None
    assert shmrma.launch(body, 3, timeout=50)[2] == [105, 106]


@pytest.mark.timeout(60)
def test_lock_all_is_not_collective():
    """R95, R96, R107: one rank alone does Lock_all, Put to two ranks, Flush, Unlock_all
    while the others wait in a receive; after its message a third rank's Lock_all + Get
    sees the data (Unlock_all completed it at the target)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        got = np.zeros(1, dtype="i8")
        if rank == 0:
            win.Lock_all()
            win.Put(np.array([11]), 1)
            win.Flush(1)
            win.Put(np.array([22]), 2)
            win.Unlock_all()
            comm.send(None, dest=1)
        elif rank == 1:
            comm.recv(source=0)
            win.Lock_all()
            win.Get(got, 2)
            win.Flush_local(2)
            win.Unlock_all()
        comm.Barrier()
        result = (int(local(win)[0]), int(got[0]))
        win.Free()
        return result
    assert shmrma.launch(body, 3, timeout=20) == [(0, 0), (11, 22), (22, 0)]


@pytest.mark.timeout(60)
def test_sync_orders_stores_in_shared_windows():
    """R131, R111, A50: in a Lock_all(MODE_NOCHECK) epoch a writer stores into its
    shared segment, calls Sync and sends; the reader receives, calls Sync and loads the
    value through Shared_query."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate_shared(64, 8, comm=comm)
        win.Lock_all(MPI.MODE_NOCHECK)
        seen = []
        for step in range(50):
            if rank == 0:
                local(win)[step % 8] = step + 1
                win.Sync()
                comm.send(step, dest=1)
                comm.recv(source=1)
            else:
                comm.recv(source=0)
                win.Sync()
                seen.append(int(np.frombuffer(win.Shared_query(0)[0], "i8")[step % 8]))
                comm.send(step, dest=0)
        win.Unlock_all()
        win.Free()
        return seen
    assert shmrma.launch(body, 2, timeout=20)[1] == list(range(1, 51))


@pytest.mark.timeout(360)
def test_one_writer_many_readers_stress():
    """R97, R98: one writer (LOCK_EXCLUSIVE) and two readers (LOCK_SHARED)
    hammer rank 0's window for 10^5 lock cycles in all (the C fast path takes most of
    them; contended ones wait in Python); inside every critical section
    the invariant holds: a writer sees no reader and no other writer, a reader sees no
    writer and a consistent 8-word record."""
    # a tenth on the pure-Python fallback engine, which takes 30 s for all of them
    share = 1 if shmrma.native_backend() == "c" else 10
    CYCLES = {0: 20000 // share, 1: 40000 // share, 2: 40000 // share}

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8 * 10 if rank == 0 else 0, 8, comm=comm)
        if rank == 0:
            local(win)[:] = 0  # [writers inside, readers inside, record x 8]
        comm.Barrier()
        got = np.zeros(1, dtype="i8")
        record = np.zeros(8, dtype="i8")
        violations = []
        for cycle in range(CYCLES[rank]):
            if rank == 0:
                win.Lock(0, MPI.LOCK_EXCLUSIVE)
                win.Fetch_and_op(ONE, got, 0, 0, MPI.SUM)
                writers = int(got[0])
                win.Fetch_and_op(ONE, got, 0, 1, MPI.NO_OP)
                readers = int(got[0])
                if writers or readers:
                    violations.append(("writer", cycle, writers, readers))
                for word in range(8):  # a torn record would be visible to a reader
                    win.Put(np.array([cycle + 1]), 0, 2 + word)
                    win.Flush(0)
                win.Fetch_and_op(-ONE, got, 0, 0, MPI.SUM)
                win.Unlock(0)
            else:
                win.Lock(0, MPI.LOCK_SHARED)
                win.Fetch_and_op(ONE, got, 0, 1, MPI.SUM)
                win.Fetch_and_op(ONE, got, 0, 0, MPI.NO_OP)
                writers = int(got[0])
                win.Get(record, 0, 2)
                win.Flush(0)
                if writers or len(set(record.tolist())) != 1:
                    violations.append(("reader", cycle, writers, record.tolist()))
                win.Fetch_and_op(-ONE, got, 0, 1, MPI.SUM)
                win.Unlock(0)
        comm.Barrier()
        final = local(win).tolist() if rank == 0 else None
        win.Free()
        return violations, final
    results = shmrma.launch(body, 3, timeout=300)    # a hang guard: 12-50 s loaded
    for violations, _ in results:
        assert violations == []
    assert results[0][1] == [0, 0] + [CYCLES[0]] * 8


@pytest.mark.timeout(60)
def test_more_than_256_lock_cycles():
    """300 exclusive and 300 shared Lock/Unlock cycles on one target,
    each with an increment, leave the lock usable: another rank's exclusive Lock
    afterwards succeeds and the count is exact."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        if rank == 0:
            for lock_type in (MPI.LOCK_EXCLUSIVE, MPI.LOCK_SHARED):
                for _ in range(300):
                    win.Lock(1, lock_type)
                    win.Accumulate(ONE, 1)
                    win.Unlock(1)
            for _ in range(300):
                win.Lock_all()
                win.Accumulate(ONE, 1)
                win.Unlock_all()
        comm.Barrier()
        if rank == 1:
            win.Lock(1, MPI.LOCK_EXCLUSIVE)
            win.Accumulate(ONE, 1)
            win.Unlock(1)
        comm.Barrier()
        value = int(local(win)[0])
        win.Free()
        return value
    assert shmrma.launch(body, 2, timeout=30)[1] == 901


@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", [2**31 - 5, 2**32 - 5])
def test_lock_counters_wrap(seed):
    """With the lock words of rank 0's window seeded just below 2^31 and
    2^32 (white-box: the ticket, read and write words of its control block), mixed
    exclusive and shared locking from 3 ranks across the wrap stays exclusive and
    never hangs."""
    from shmrma.rma import control

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(16 if rank == 0 else 0, 8, comm=comm)
        if rank == 0:
            local(win)[:] = 0
            base = win._state.control_of(0)
            for offset in (control.OFF_LOCK_TICKET, control.OFF_LOCK_READ,
                           control.OFF_LOCK_WRITE):
                atomic.store32(base + offset, seed)
        comm.Barrier()
        got = np.zeros(1, dtype="i8")
        bad = 0
        for cycle in range(20):
            exclusive = (cycle + rank) % 2 == 0
            win.Lock(0, MPI.LOCK_EXCLUSIVE if exclusive else MPI.LOCK_SHARED)
            if exclusive:
                win.Fetch_and_op(ONE, got, 0, 0, MPI.SUM)
                bad += int(got[0]) != 0
                win.Fetch_and_op(ONE, got, 0, 1, MPI.SUM)
                win.Fetch_and_op(-ONE, got, 0, 0, MPI.SUM)
            else:
                win.Fetch_and_op(ONE, got, 0, 0, MPI.NO_OP)
                bad += int(got[0]) != 0
            win.Unlock(0)
        comm.Barrier()
        total = int(local(win)[1]) if rank == 0 else None
        win.Free()
        return bad, total
    results = shmrma.launch(body, 3, timeout=30)
    assert [bad for bad, _ in results] == [0, 0, 0]
    assert results[0][1] == 30  # 10 exclusive cycles per rank


@pytest.mark.timeout(60)
def test_bad_lock_type_and_rank():
    """R103: a lock_type other than LOCK_EXCLUSIVE/LOCK_SHARED is ERR_LOCKTYPE and a
    rank outside the group ERR_RANK (Lock, Unlock, Flush); nothing is locked by them."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        for bad in (0, 1, 233, 236, -1):
            expect(MPI.ERR_LOCKTYPE, win.Lock, peer, bad)
        for bad in (2, -3, 99):
            expect(MPI.ERR_RANK, win.Lock, bad)
            expect(MPI.ERR_RANK, win.Unlock, bad)
        sync_error(win.Put, ONE, peer)
        sync_error(win.Unlock, peer)
        win.Lock(peer, MPI.LOCK_EXCLUSIVE)
        win.Unlock(peer)
        win.Free()
        return True
    assert shmrma.launch(body, 2, timeout=20) == [True, True]


# --- error handler ----------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_errors_are_fatal_ends_the_job_with_a_message(capfd):
    """R33, A39: with ERRORS_ARE_FATAL on the window, an erroneous call
    (Put outside an epoch) ends the whole job: launch raises LaunchError naming that
    rank, the other rank (waiting in a Barrier) is released, and stderr says what
    failed."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8, 8, comm=comm)
        if comm.Get_rank() == 1:
            win.Set_errhandler(MPI.ERRORS_ARE_FATAL)
            win.Put(ONE, 0)
            return "survived"
        comm.Barrier()
        return "rank 0 finished"
    fatal_error_ends_the_job(body, capfd, "Put")


@pytest.mark.timeout(60)
def test_locking_targets_in_any_order_never_deadlocks():
    """R94: rank 0 locks a then b, rank 1 locks b then c, rank 2 locks a
    then c (each origin in its own order, exclusive, several epochs open at once),
    200 rounds each with an exact counter per target: nothing hangs, nothing is lost."""
    ORDERS = {0: (0, 1), 1: (1, 2), 2: (0, 2)}
    ROUNDS = 200

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win)[:] = 0
        comm.Barrier()
        got = np.zeros(1, dtype="i8")
        for _ in range(ROUNDS):
            first, second = ORDERS[rank]
            win.Lock(first, MPI.LOCK_EXCLUSIVE)
            win.Lock(second, MPI.LOCK_EXCLUSIVE)
            for target in (first, second):
                win.Get(got, target, 0)
                win.Flush(target)
                win.Put(got + 1, target, 0)
            win.Unlock(second)
            win.Unlock(first)
        comm.Barrier()
        count = int(local(win)[0])
        win.Free()
        return count
    counts = shmrma.launch(body, 3, timeout=50)
    expected = [sum(ROUNDS for order in ORDERS.values() if target in order)
                for target in range(3)]
    assert counts == expected


def _poll_token_ring(comm, win, right, rounds):
    """A token passed around by polling a flag with MPI-3 calls (Fetch_and_op NO_OP +
    Flush), as programs without counters do; returns the tokens this rank received.
    shmrma never blocks in these calls, so with more ranks than CPUs every 16th
    Flush yields the CPU (g_flush_yield, csrc/rma/calls.c), else each hop took a time slice."""
    flags = MPI.Win.Allocate(8, 8, comm=comm)
    local(flags)[:] = 0
    comm.Barrier()
    one, got = np.ones(1, "i8"), np.zeros(1, "i8")
    me = comm.Get_rank()
    flags.Lock_all()

    def receive():
        while True:
            flags.Fetch_and_op(one, got, me, 0, MPI.NO_OP)
            flags.Flush(me)
            if got[0] > seen[0]:
                seen[0] = int(got[0])
                return

    def send():
        flags.Fetch_and_op(one, got, right, 0, MPI.SUM)
        flags.Flush(right)
    seen = [0]
    for _ in range(rounds):
        for step in ((send, receive) if me == 0 else (receive, send)):
            step()
    flags.Unlock_all()
    comm.Barrier()
    flags.Free()
    return seen[0]


@pytest.mark.timeout(120)
def test_oversubscribed_on_one_cpu_fence_pscw_and_locks_finish():
    """8 ranks pinned to ONE cpu (8x oversubscribed) run 300 fence rounds,
    300 PSCW ring rounds, 300 lock/put/unlock rounds to a neighbour and 50 rounds of
    a token passed by polling a flag, every result right. Waits must yield and sleep
    rather than spin, and polling Flushes yield now and then: a rank that spun would
    keep the one CPU from the rank it waits for, and the job would crawl into the
    launch's timeout, a guard against a hang. How fast oversubscribed ranks go is
    measured by shmrma-bench compare --suite scaling."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("needs sched_setaffinity")
    cpu = min(os.sched_getaffinity(0))

    def body():
        os.sched_setaffinity(0, {cpu})
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        win = MPI.Win.Allocate(8 * size, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        group = win.Get_group()
        left, right = (rank - 1) % size, (rank + 1) % size
        to_left, to_right = group.Incl([left]), group.Incl([right])
        value = np.zeros(1, dtype="i8")
        for k in range(300):
            win.Fence()
            value[0] = k
            win.Put(value, right, rank)
            win.Fence()
        fence_ok = int(mine[left]) == 299
        for k in range(300):
            win.Post(to_left)
            win.Start(to_right)
            value[0] = 1000 + k
            win.Put(value, right, rank)
            win.Complete()
            win.Wait()
        pscw_ok = int(mine[left]) == 1299
        comm.Barrier()
        for k in range(300):
            win.Lock(right, MPI.LOCK_EXCLUSIVE)
            value[0] = 2000 + k
            win.Put(value, right, rank)
            win.Unlock(right)
        comm.Barrier()
        locks_ok = int(mine[left]) == 2299
        polling_ok = _poll_token_ring(comm, win, right, rounds=50) == 50
        win.Free()
        return fence_ok, pscw_ok, locks_ok and polling_ok
    results = shmrma.launch(body, 8, timeout=100)
    assert results == [(True, True, True)] * 8


@pytest.mark.timeout(120)
@pytest.mark.parametrize("wait", ["start", "wait", "lock", "fence", "lock_all", "accumulate"])
def test_a_wait_for_a_dead_peer_ends_the_job(wait):
    """Issue 4 "Waiting": a rank waiting in Start (for a Post), Wait (for a
    Complete), Lock (behind an exclusive holder), Lock_all, Fence or an Accumulate
    (behind the target's accumulate lock, white-box: held by a rank that dies) for a
    rank that exited instead notices: the job ends with the dead rank named by the
    waiting rank, it does not hang until the timeout (which names no rank)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        group = win.Get_group().Incl([1 - rank])
        if rank == 1:
            if wait in ("lock", "lock_all"):
                win.Lock(1, MPI.LOCK_EXCLUSIVE)     # held until death
            elif wait == "accumulate":
                from shmrma.rma.calls import AccumulateLock
                AccumulateLock(win._state, 1).__enter__()   # held until death
            comm.Barrier()
            if wait == "wait":
                win.Start(group)                     # never Completes
            time.sleep(0.2)
            os._exit(0)     # a clean exit: only the waiting rank's own checks can tell
        if wait == "wait":
            win.Post(group)
        comm.Barrier()
        if wait == "start":
            win.Start(group)
        elif wait == "wait":
            win.Wait()
        elif wait == "lock":
            win.Lock(1, MPI.LOCK_SHARED)
        elif wait == "lock_all":
            win.Lock_all()
        elif wait == "accumulate":
            win.Lock_all(MPI.MODE_NOCHECK)
            win.Accumulate(np.ones(1, dtype="i8"), 1)
        else:
            win.Fence()
        return "not reached"
    with pytest.raises(shmrma.LaunchError, match="rank 1") as info:
        shmrma.launch(body, 2, timeout=HANG_S)
    assert info.value.rank == 0     # the waiting rank raised: it saw rank 1 was gone
