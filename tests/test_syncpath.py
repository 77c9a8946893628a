"""The synchronization fast path (csrc/rma/passive.c, active.c, winbarrier.c) against the
Python path of passive.py and active.py.

Every misuse ends the same on both paths (same error class and message, same epoch
state afterwards); the common cases really take the fast path; the hand-overs (a
lock ticket or a barrier arrival the fast path could not finish in its spin) finish
correctly in Python; and fast and slow calls mix freely across ranks: the shared
lock words, post matrix, completes cells and barrier are the same.

Rules: R66, R68, R72, R79, R90, R94, R97, R102, R103, R106, R113 (epoch rules and
errors), R69/R91 (PSCW matching), R75 (fence completion); a Post never pairs with
the wrong Start, a release never wipes a concurrent acquire, Lock may block.
"""
import random
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.rma import fastpath

pytestmark = pytest.mark.skipif(not fastpath.AVAILABLE,
                                reason="the sync fast path needs the C extension")


def test_constants_are_defined_once_in_python():
    # the C fast path takes the lock types and assertion bits from Python at set-up
    from shmrma import _native
    assert not any(hasattr(_native, name) for name in (
        "LOCK_EXCLUSIVE", "LOCK_SHARED", "MODE_NOCHECK", "MODE_NOPRECEDE",
        "MODE_NOSUCCEED", "ALL_MODES", "DEFAULT_SPIN", "DEFAULT_YIELDS"))
    # the C fast path's KIND_PUT/GET/ACCUMULATE are the proposal's MODE_WIN_* bits
    assert (MPI.MODE_WIN_PUT, MPI.MODE_WIN_GET, MPI.MODE_WIN_ACCUMULATE) == (1, 2, 4)


# --- misuse: both paths raise the same and leave the same state ---------------------------

def _cases(win, peer, group):
    """name -> a sequence of calls; the last one is the call under test."""
    one = np.ones(1, "i8")
    return {
        "lock twice": [lambda: win.Lock(peer), lambda: win.Lock(peer)],
        "unlock without lock": [lambda: win.Unlock(peer)],
        "lock inside lock_all": [win.Lock_all, lambda: win.Lock(peer)],
        "lock_all inside lock": [lambda: win.Lock(peer), win.Lock_all],
        "lock_all twice": [win.Lock_all, win.Lock_all],
        "unlock_all without": [win.Unlock_all],
        "unlock inside lock_all": [win.Lock_all, lambda: win.Unlock(peer)],
        "lock bad type": [lambda: win.Lock(peer, 7)],
        "lock bad assertion": [lambda: win.Lock(peer, MPI.LOCK_SHARED, 3)],
        "lock bad rank": [lambda: win.Lock(9)],
        "lock proc_null": [lambda: win.Lock(MPI.PROC_NULL)],
        "unlock proc_null": [lambda: win.Unlock(MPI.PROC_NULL)],
        "lock nocheck": [lambda: win.Lock(peer, MPI.LOCK_SHARED, MPI.MODE_NOCHECK),
                         lambda: win.Put(one, peer)],
        "lock_all nocheck": [lambda: win.Lock_all(MPI.MODE_NOCHECK), lambda: win.Put(one, peer)],
        "lock numpy rank": [lambda: win.Lock(np.int64(peer))],
        "fence bad assertion": [lambda: win.Fence(1)],
        "fence in lock": [lambda: win.Lock(peer), win.Fence],
        "fence in lock_all": [win.Lock_all, win.Fence],
        "fence noprecede after rma": [win.Fence, lambda: win.Put(one, peer),
                                      lambda: win.Fence(MPI.MODE_NOPRECEDE)],
        "lock after fence rma": [win.Fence, lambda: win.Put(one, peer), lambda: win.Lock(peer)],
        "start after fence rma": [win.Fence, lambda: win.Put(one, peer),
                                  lambda: win.Start(MPI.GROUP_EMPTY)],
        "start inside start": [lambda: win.Start(MPI.GROUP_EMPTY),
                               lambda: win.Start(MPI.GROUP_EMPTY)],
        "start inside lock": [lambda: win.Lock(peer), lambda: win.Start(MPI.GROUP_EMPTY)],
        "lock inside start": [lambda: win.Start(MPI.GROUP_EMPTY), lambda: win.Lock(peer)],
        "complete without start": [win.Complete],
        "start bad assertion": [lambda: win.Start(MPI.GROUP_EMPTY, MPI.MODE_NOPUT * 8)],
        "start not a group": [lambda: win.Start([peer])],
        "post twice": [lambda: win.Post(MPI.GROUP_EMPTY), lambda: win.Post(MPI.GROUP_EMPTY)],
        "post bad assertion": [lambda: win.Post(MPI.GROUP_EMPTY, 1)],
        "wait without post": [win.Wait],
        "test without post": [win.Test],
        "test twice": [lambda: win.Post(MPI.GROUP_EMPTY), win.Test, win.Test],
        "fence in post": [lambda: win.Post(MPI.GROUP_EMPTY), win.Fence],
        "fence in start": [lambda: win.Start(MPI.GROUP_EMPTY), win.Fence],
        "flush in start": [lambda: win.Start(MPI.GROUP_EMPTY), lambda: win.Flush(peer)],
        "put outside start group": [lambda: win.Start(MPI.GROUP_EMPTY),
                                    lambda: win.Put(one, peer)],
        "free in start": [lambda: win.Start(MPI.GROUP_EMPTY), win.Free],
        "free in post": [lambda: win.Post(MPI.GROUP_EMPTY), win.Free],
        "post then start": [lambda: win.Post(MPI.GROUP_EMPTY),
                            lambda: win.Start(MPI.GROUP_EMPTY)],
    }


class _Anything:
    """Stands for a window where only the names of the cases are wanted."""

    def __getattr__(self, name):
        return None


def _state(win):
    epoch = win._state.epoch
    table = epoch.table
    return (dict(epoch.locks), table.lock_all, epoch.start_group, epoch.post_group,
            bool(table.fence_open), bool(table.rma_since_fence))


def _close_everything(win):
    """Close whatever the case left open, through the Python path."""
    epoch = win._state.epoch
    for rank in list(epoch.locks):
        win.Unlock(rank)
    if epoch.table.lock_all:
        win.Unlock_all()
    if epoch.start_open:
        win.Complete()
    if epoch.post_group is not None:
        win.Wait()


def _outcome(fn):
    try:
        result = fn()
    except MPI.Exception as exc:
        return ("MPI.Exception", exc.Get_error_class(), str(exc))
    except Exception as exc:  # noqa: BLE001 - the exact exception is what we compare
        return (type(exc).__name__, str(exc))
    return ("returned", result)


@pytest.mark.timeout(60)
def test_every_misuse_ends_the_same_on_both_paths():
    """Each case runs on a fresh 1-rank window twice, fast path on and off: the same
    outcome of every call, and the same epoch state after the last one."""
    def body():
        problems, seen = [], {}
        names = list(_cases(_Anything(), 0, None))
        for name in names:
            results = []
            for fast in (True, False):
                previous = fastpath.enable(fast)
                win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_SELF)
                try:
                    steps = _cases(win, 0, None)[name]
                    outcomes = [_outcome(step) for step in steps]
                    state = _state(win) if win else None
                    if win:
                        fastpath.enable(False)
                        _close_everything(win)
                        if win:
                            win.Fence(MPI.MODE_NOSUCCEED)
                            win.Free()
                finally:
                    fastpath.enable(previous)
                results.append((outcomes, state))
            if results[0] != results[1]:
                problems.append("%s: fast %r != slow %r" % (name, results[0], results[1]))
            seen[name] = results[0][0][-1]
        return problems, seen
    problems, seen = shmrma.launch(body, 1, timeout=50)[0]
    assert not problems, "\n".join(problems)
    sync = ("MPI.Exception", MPI.ERR_RMA_SYNC)
    for name in ("lock twice", "unlock without lock", "lock inside lock_all",
                 "lock_all inside lock", "lock_all twice", "unlock_all without",
                 "unlock inside lock_all", "fence in lock", "fence in lock_all",
                 "fence noprecede after rma", "lock after fence rma", "start after fence rma",
                 "start inside start", "start inside lock", "lock inside start",
                 "complete without start", "post twice", "wait without post",
                 "test without post", "test twice", "fence in post", "fence in start",
                 "flush in start", "put outside start group", "free in start", "free in post"):
        assert seen[name][:2] == sync, (name, seen[name])
    assert seen["lock bad type"][1] == MPI.ERR_LOCKTYPE
    assert seen["lock bad rank"][1] == MPI.ERR_RANK
    for name in ("lock bad assertion", "fence bad assertion", "start bad assertion",
                 "post bad assertion"):
        assert seen[name][1] == MPI.ERR_ASSERT, (name, seen[name])
    assert seen["start not a group"][0] == "TypeError"
    for name in ("lock proc_null", "unlock proc_null", "lock nocheck", "lock_all nocheck",
                 "lock numpy rank", "post then start"):
        assert seen[name][0] == "returned", (name, seen[name])


# --- the common cases take the fast path --------------------------------------------------

@pytest.mark.timeout(60)
def test_common_cases_take_the_fast_path():
    """Lock/Unlock of both types, Lock_all/Unlock_all, Fence, Start/Complete and
    Post/Wait/Test with plain arguments are done in C (the spies see True), Start and
    Post from the second use of a group on."""
    def body():
        from shmrma.rma import active, passive, winbarrier
        comm = MPI.COMM_WORLD
        rank, peer = comm.Get_rank(), 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        group = win.Get_group().Incl([peer])
        taken = {}

        def spy(module, name):
            real = getattr(module, name)

            def wrapper(*args):
                result = real(*args)
                taken.setdefault(name, []).append(result is True)
                return result
            setattr(module, name, wrapper)
        for name in ("_fast_lock", "_fast_unlock", "_fast_lock_all", "_fast_unlock_all"):
            spy(passive, name)
        for name in ("_fast_start", "_fast_complete", "_fast_post", "_fast_wait"):
            spy(active, name)
        spy(winbarrier, "_fast_barrier")    # Fence is the window barrier
        comm.Barrier()
        for _ in range(20):
            comm.Barrier()      # the peer's Wait is over: its window is not exposed (R102)
            if rank == 0:
                for lock_type in (MPI.LOCK_EXCLUSIVE, MPI.LOCK_SHARED):
                    win.Lock(peer, lock_type)
                    win.Unlock(peer)
                win.Lock_all()
                win.Unlock_all()
            comm.Barrier()
            win.Fence()
            win.Fence(MPI.MODE_NOSUCCEED)
            # nothing is awaited below: each wait's condition holds before the call
            for origin in (0, 1):
                if rank != origin:
                    win.Post(group)
                comm.Barrier()
                if rank == origin:
                    win.Start(group)
                    win.Complete()
                comm.Barrier()
                if rank != origin:
                    win.Wait()
        comm.Barrier()
        win.Free()
        return {name: (sum(results), len(results)) for name, results in taken.items()}
    counts = shmrma.launch(body, 2, timeout=50)
    for name in ("_fast_lock", "_fast_unlock", "_fast_lock_all", "_fast_unlock_all"):
        assert counts[0][name] == (40 if name in ("_fast_lock", "_fast_unlock") else 20,) * 2
    for rank_counts in counts:
        for name in ("_fast_complete", "_fast_wait"):
            assert rank_counts[name] == (20, 20), (name, rank_counts)
        # a group's first use maps it to window ranks in Python; then C has it cached
        assert rank_counts["_fast_start"][0] + rank_counts["_fast_post"][0] == 39, rank_counts
    # the last rank to arrive at a Fence finishes it in C; the other may outwait the spin
    fast_fences = sum(rank_counts["_fast_barrier"][0] for rank_counts in counts)
    assert fast_fences >= 40, counts


# --- hand-overs: what the fast path starts, Python finishes -------------------------------

@pytest.mark.timeout(60)
def test_lock_tickets_and_fence_arrivals_finish_in_python():
    """R97, R75: a Lock whose ticket waits behind a holder of 0.3 s, a
    Lock_all stuck on its second rank, and a Fence whose peer arrives 0.3 s late, each
    come back from C with what they drew and finish in the Python path."""
    def body():
        from shmrma.rma import passive, winbarrier
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        handed = []

        def watch(module, name):
            real = getattr(module, name)

            def wrapper(*args):
                result = real(*args)
                if result is not True and result is not False:
                    handed.append(name)
                return result
            setattr(module, name, wrapper)
        watch(passive, "_fast_lock")
        watch(passive, "_fast_lock_all")
        watch(winbarrier, "_fast_barrier")     # Fence's
        out = {}
        if rank == 1:
            win.Lock(1, MPI.LOCK_EXCLUSIVE)
            comm.Barrier()
            time.sleep(0.3)
            np.frombuffer(win.tomemory(), "i8")[0] = 42
            win.Unlock(1)
        else:
            comm.Barrier()
            win.Lock(1, MPI.LOCK_SHARED)     # behind the holder: it sees its store
            got = np.zeros(1, "i8")
            win.Get(got, 1)
            win.Unlock(1)
            out["value"] = int(got[0])
        comm.Barrier()
        if rank == 1:
            win.Lock(1, MPI.LOCK_EXCLUSIVE)
            comm.Barrier()
            time.sleep(0.3)
            win.Unlock(1)
        else:
            comm.Barrier()
            win.Lock_all()          # rank 0's lock at once, rank 1's after 0.3 s
            win.Unlock_all()
        comm.Barrier()
        if rank == 1:
            time.sleep(0.3)
        win.Fence()
        win.Fence(MPI.MODE_NOSUCCEED)
        win.Free()
        out["handed"] = sorted(set(handed))
        return out
    first, second = shmrma.launch(body, 2, timeout=50)
    assert first["value"] == 42
    assert first["handed"] == ["_fast_barrier", "_fast_lock", "_fast_lock_all"]


# --- fast and slow calls mix across ranks -------------------------------------------------

@pytest.mark.timeout(120)
def test_fast_and_slow_sync_calls_mix_across_ranks():
    """R97, R69/R91, R75: 3 ranks, each switching its fast path on
    and off at random before every call, run exclusive-lock increments of a counter
    (Get, Flush, Put +1: exact total) and shared-lock reads on one window, PSCW rounds
    along a ring (round k delivers k) and fence rounds on another (a window is never
    locked and exposed at once, R102); everything stays exact and nothing hangs."""
    rounds = 150

    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        win = MPI.Win.Allocate(16, 8, comm=comm)
        active = MPI.Win.Allocate(16, 8, comm=comm)
        mine = np.frombuffer(active.tomemory(), "i8")
        mine[:] = 0
        np.frombuffer(win.tomemory(), "i8")[:] = 0
        group = win.Get_group()
        left, right = (rank - 1) % size, (rank + 1) % size
        to_left, to_right = group.Incl([left]), group.Incl([right])
        coin = random.Random(rank)
        comm.Barrier()
        counter, one, problems = np.zeros(1, "i8"), np.zeros(1, "i8"), []
        for k in range(1, rounds + 1):
            fastpath.enable(coin.random() < 0.5)
            win.Lock(0, MPI.LOCK_EXCLUSIVE)
            fastpath.enable(coin.random() < 0.5)
            win.Get(counter, 0, 0)
            win.Flush(0)
            counter += 1
            win.Put(counter, 0, 0)
            fastpath.enable(coin.random() < 0.5)
            win.Unlock(0)
            fastpath.enable(coin.random() < 0.5)
            win.Lock(right, MPI.LOCK_SHARED)
            win.Get(one, right, 0)
            fastpath.enable(coin.random() < 0.5)
            win.Unlock(right)
            fastpath.enable(coin.random() < 0.5)
            active.Post(to_left)
            fastpath.enable(coin.random() < 0.5)
            active.Start(to_right)
            active.Put(np.array([k], "i8"), right, 1)
            fastpath.enable(coin.random() < 0.5)
            active.Complete()
            fastpath.enable(coin.random() < 0.5)
            if k % 2:
                active.Wait()
            else:
                while not active.Test():
                    pass
            if mine[1] != k:
                problems.append("round %d: PSCW delivered %d" % (k, mine[1]))
            fastpath.enable(coin.random() < 0.5)
            active.Fence()
            active.Put(np.array([k], "i8"), right, 1)
            fastpath.enable(coin.random() < 0.5)
            active.Fence(MPI.MODE_NOSUCCEED)
            if mine[1] != k:
                problems.append("round %d: fence delivered %d" % (k, mine[1]))
        fastpath.enable(True)
        comm.Barrier()
        total = int(np.frombuffer(win.tomemory(), "i8")[0]) if rank == 0 else None
        win.Free()
        active.Free()
        return problems, total
    results = shmrma.launch(body, 3, timeout=110)
    assert results[0][1] == 3 * rounds
    assert [problems for problems, _ in results] == [[], [], []]
