"""General active target synchronization: Post, Start, Complete, Wait and Test.

Rules: MPI-3.1 §11.5 (epochs), §11.5.2 (PSCW), R102, R106, R113, R114, R22, R37,
R53, R120, R148, A5, A33, A34, A38 (docs/rules.md); a Post never pairs with a Start
it was not meant for; empty groups never raise; Lock may block; ranks may
outnumber cores. The Fence and Lock rules have their own tests in test_sync.py.

Every multi-rank body runs under ``shmrma.launch`` with a timeout. Start may
block until the matching Posts exist or not (R84): no test relies on either,
they observe where RMA lands instead. Ranks are ordered by messages and
barriers; the sleeps only make a wrong implementation visible, or give the
timing checks R86 and R88 ask for a margin of several tenths of a second.
"""
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.rma import fastpath
from mpitest import nothing_left_behind, raises_mpi


# --- helpers (run inside the ranks) -------------------------------------------------------

def sync_error(fn, *args):
    """``fn(*args)`` must raise ERR_RMA_SYNC."""
    with raises_mpi(MPI.ERR_RMA_SYNC):
        fn(*args)


def local(win, dtype="i8"):
    return np.frombuffer(win.tomemory(), dtype=dtype)


def group(comm, ranks):
    """The group of these ranks of ``comm``."""
    return comm.Get_group().Incl(list(ranks))


def value(x):
    return np.array([x], dtype="i8")


ONE = value(1)


# --- coverage of the Start group ------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("fast", [True, False], ids=["fastpath", "python"])
def test_start_group_covers_only_its_members_figure_11_5(fast):
    """R81, R71, R82, R92, R65, R120: Figure 11.5 with different groups per rank
    (rank 0 starts {1,2}, rank 3 starts {2}; rank 1 posts {0}, rank 2 posts {0,3}).
    RMA to members lands, and a Get sees what the target stored before its Post; every
    communication call to a rank outside the Start group (the caller itself included)
    raises ERR_RMA_SYNC, writes nothing and fills no result buffer; after Complete even
    the members are out of reach. Run with the C fast path warmed up and with it off."""
    def body():
        fastpath.enable(fast)
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8 * 4, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        got = np.zeros(2, dtype="i8")
        res = np.zeros(1, dtype="i8")

        def outside(target):
            for call in (lambda: win.Put(value(66), target, rank),
                         lambda: win.Get(got[1:], target, 0),
                         lambda: win.Accumulate(value(66), target, rank),
                         lambda: win.Get_accumulate(value(66), res, target, rank),
                         lambda: win.Fetch_and_op(value(66), res, target, rank),
                         lambda: win.Compare_and_swap(value(66), value(0), res, target, rank)):
                sync_error(call)
        if rank == 0:
            win.Start(group(comm, [1, 2]))
            win.Put(value(10), 1, 0)
            outside(3)
            outside(0)
            win.Put(value(10), 2, 0)
            win.Get(got[:1], 2, 2)
            win.Put(value(20), 1, 0)    # the fast path is warm now: still checked
            outside(3)
            win.Complete()
            sync_error(win.Put, value(66), 1, 0)
            sync_error(win.Put, value(66), 2, 0)
        elif rank == 3:
            win.Start(group(comm, [2]))
            outside(1)
            win.Put(value(13), 2, 3)
            outside(0)
            outside(3)
            win.Complete()
            sync_error(win.Put, value(66), 2, 3)
        elif rank == 1:
            mine[1] = 101
            win.Post(group(comm, [0]))
            win.Wait()
        else:
            mine[2] = 102
            win.Post(group(comm, [0, 3]))
            win.Wait()
        comm.Barrier()
        result = mine.tolist(), got.tolist(), res.tolist()
        win.Free()
        fastpath.enable(True)
        return result
    results = shmrma.launch(body, 4, timeout=30)
    assert results == [([0, 0, 0, 0], [102, 0], [0]),
                       ([20, 101, 0, 0], [0, 0], [0]),
                       ([10, 0, 102, 13], [0, 0], [0]),
                       ([0, 0, 0, 0], [0, 0], [0])]


# --- what Post, Start, Complete and Wait wait for -------------------------------------------

@pytest.mark.timeout(60)
def test_no_rma_lands_before_the_post_and_complete_does_not_wait_for_wait():
    """R83, R84, R85, R148 (Figure 11.8), R88. Round 1 (R83): the target watches its
    window for 0.2 s, stores A=1 and Posts; the origin Starts at once (R84: Start may
    or may not block), Puts A=2 and Completes. The window never changes before the Post
    and the target reads 2 after Wait. Round 2 (Figure 11.8): the target Posts, then
    receives a message the origin sends only after its Complete, then Waits; it finishes,
    and the origin's buffer, reused right after Complete, did not change the data (R85)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        out = {}
        if rank == 1:
            seen = set()
            begin = time.monotonic()
            while time.monotonic() - begin < 0.2:
                seen.add(int(mine[0]))
                time.sleep(0.005)
            mine[0] = 1
            win.Post(group(comm, [0]))
            win.Wait()
            out["seen_before_post"] = sorted(seen)
            out["after_wait"] = int(mine[0])
            # round 2: Figure 11.8
            win.Post(group(comm, [0]))
            out["message"] = comm.recv(source=0)
            out["wait_called"] = time.monotonic()
            win.Wait()
            out["after_second_wait"] = int(mine[0])
        else:
            win.Start(group(comm, [1]))
            win.Put(value(2), 1)
            win.Complete()
            buf = value(3)
            win.Start(group(comm, [1]))
            win.Put(buf, 1)
            win.Complete()
            out["complete_returned"] = time.monotonic()
            buf[0] = -99        # R85: the origin buffer is free again
            comm.send("sent after Complete", dest=1)
        nothing_left_behind(comm)
        win.Free()
        return out
    origin, target = shmrma.launch(body, 2, timeout=20)
    assert target["seen_before_post"] == [0]
    assert target["after_wait"] == 2
    assert target["message"] == "sent after Complete"
    assert target["after_second_wait"] == 3
    assert origin["complete_returned"] < target["wait_called"]


@pytest.mark.timeout(60)
def test_post_does_not_block_and_wait_waits_for_complete():
    """R86, R88. Round 1 (R86): rank 0 calls Start only once rank 1's Post returned and
    told it so (a Post that waited for the Start would never return). Round 2 (R88):
    rank 1 signals rank 0 and Posts; rank 0 Starts, Puts, sleeps 0.3 s and Completes;
    rank 1's Wait lasts at least 0.3 s from the signal, returns only after rank 0's
    Complete was called, and then sees the data."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        out = {}
        if rank == 0:
            comm.recv(source=1)         # rank 1's Post returned
            win.Start(group(comm, [1]))
            win.Put(value(1), 1)
            win.Complete()
            comm.recv(source=1)
            win.Start(group(comm, [1]))
            win.Put(value(2), 1)
            time.sleep(0.3)
            out["complete_called"] = time.monotonic()
            win.Complete()
        else:
            win.Post(group(comm, [0]))
            comm.send("posted", dest=0)
            win.Wait()
            out["first"] = int(mine[0])
            out["signal"] = time.monotonic()
            comm.send("go", dest=0)
            win.Post(group(comm, [0]))
            win.Wait()
            out["wait_returned"] = time.monotonic()
            out["second"] = int(mine[0])
        nothing_left_behind(comm)
        win.Free()
        return out
    origin, target = shmrma.launch(body, 2, timeout=50)
    assert target["first"] == 1
    assert target["wait_returned"] - target["signal"] >= 0.3
    assert target["wait_returned"] >= origin["complete_called"]
    assert target["second"] == 2


@pytest.mark.timeout(60)
def test_test_polls_until_complete():
    """R89, R90, A5: Test and Wait before any Post raise ERR_RMA_SYNC. After
    Post, Test returns False while the origin is held back, and False changes nothing
    (the window is still posted: a second Post raises, the data is unchanged, Test can be
    called again). Polling Test then turns True once the origin Completed, with Wait's
    full effect (data visible, epoch closed: Test or Wait again raise ERR_RMA_SYNC). A
    Wait after a False Test works too, and so does the next Post."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        out = {}
        if rank == 1:
            sync_error(win.Test)
            sync_error(win.Wait)
            win.Post(group(comm, [0]))
            out["first_test"] = win.Test()
            sync_error(win.Post, group(comm, [0]))
            out["second_test"] = win.Test()
            out["unchanged"] = int(mine[0])
            comm.send("go", dest=0)
            falses = 0
            while not win.Test():       # never True: a hang, ended by the launch timeout
                falses += 1
                time.sleep(0.0005)
            out["falses"] = falses
            out["after_true"] = int(mine[0])
            sync_error(win.Test)
            sync_error(win.Wait)
            win.Post(group(comm, [0]))
            out["third_test"] = win.Test()
            comm.send("go", dest=0)
            win.Wait()
            out["after_wait"] = int(mine[0])
            sync_error(win.Test)
            sync_error(win.Wait)
        else:
            for data in (5, 6):
                comm.recv(source=1)
                win.Start(group(comm, [1]))
                win.Put(value(data), 1)
                win.Complete()
        nothing_left_behind(comm)
        win.Free()
        return out
    out = shmrma.launch(body, 2, timeout=50)[1]
    assert out["first_test"] is False and out["second_test"] is False
    assert out["unchanged"] == 0
    assert out["after_true"] == 5
    assert out["third_test"] is False
    assert out["after_wait"] == 6


# --- matching: per pair and round by round ---------------------------------------------------

@pytest.mark.timeout(60)
def test_post_from_outside_the_start_group_does_not_satisfy_start():
    """R69, R91, R83, R88: rank 2 Posts to {0} at once, rank 1 only after
    0.4 s, while rank 0 Starts {1} right away. Rank 2's Post must not let rank 0's
    epoch to rank 1 proceed: rank 1's window stays untouched until its Post (it watches
    it), and its store right before the Post is overwritten by rank 0's Put. Then
    back-to-back epochs with different groups: rank 0 -> {2} matches rank 2's early
    Post (whose Wait ends only after that Complete), then rank 0 -> {1,2} together with
    rank 1 -> {2} match the second Posts."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8 * 3, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        out = {}
        if rank == 0:
            win.Start(group(comm, [1]))
            win.Put(value(2), 1, 0)
            win.Complete()
            win.Start(group(comm, [2]))
            win.Put(value(3), 2, 0)
            out["second_complete"] = time.monotonic()
            win.Complete()
            win.Start(group(comm, [1, 2]))
            win.Put(value(4), 1, 0)
            win.Put(value(5), 2, 0)
            win.Complete()
        elif rank == 1:
            seen = set()
            begin = time.monotonic()
            while time.monotonic() - begin < 0.4:
                seen.add(tuple(mine.tolist()))
                time.sleep(0.005)
            out["seen_before_post"] = sorted(seen)
            mine[0] = 1
            win.Post(group(comm, [0]))
            win.Wait()
            out["first"] = mine.tolist()
            win.Post(group(comm, [0]))
            win.Start(group(comm, [2]))
            win.Put(value(6), 2, 1)
            win.Complete()
            win.Wait()
            out["second"] = mine.tolist()
        else:
            win.Post(group(comm, [0]))
            win.Wait()
            out["first_wait_returned"] = time.monotonic()
            out["first"] = mine.tolist()
            win.Post(group(comm, [0, 1]))
            win.Wait()
            out["second"] = mine.tolist()
        comm.Barrier()
        win.Free()
        return out
    r0, r1, r2 = shmrma.launch(body, 3, timeout=20)
    assert r1["seen_before_post"] == [(0, 0, 0)]
    assert r1["first"] == [2, 0, 0]
    assert r2["first"] == [3, 0, 0]
    assert r2["first_wait_returned"] >= r0["second_complete"]
    assert r1["second"] == [4, 0, 0]
    assert r2["second"] == [5, 6, 0]


@pytest.mark.timeout(60)
def test_many_rounds_with_changing_groups_match_round_by_round():
    """R69, R91: 150 back-to-back epochs of rank 0 whose Start group cycles
    through {1}, {2} and {2,1} (not in window order); the targets Post only for the
    rounds they belong to. Round k writes k, and each target sees exactly k after the
    Wait of that round."""
    ROUNDS = 150
    groups = [[1], [2], [2, 1]]

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = -1
        comm.Barrier()
        wrong = []
        waits = 0
        buf = np.zeros(1, dtype="i8")
        to_zero = group(comm, [0])
        starts = [group(comm, members) for members in groups]
        for k in range(ROUNDS):
            members = groups[k % 3]
            if rank == 0:
                win.Start(starts[k % 3])
                buf[0] = k
                for target in members:
                    win.Put(buf, target)
                win.Complete()
            elif rank in members:
                win.Post(to_zero)
                win.Wait()
                waits += 1
                if mine[0] != k:
                    wrong.append((k, int(mine[0])))
        comm.Barrier()
        win.Free()
        return wrong, waits
    results = shmrma.launch(body, 3, timeout=30)
    assert results == [([], 0), ([], 100), ([], 100)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", [2**31 - 3, 2**32 - 3])
def test_post_and_complete_counters_wrap(seed):
    """R91, counters that wrap (simulated by seeding): with every cell
    of the post matrix, every completes cell and each rank's own counts (posts used,
    completes due) seeded just below 2^31 and 2^32 (white-box), 3 ranks run 12 rounds of
    a PSCW ring and of an all-to-all epoch across the wrap: every round matches, none
    hangs."""
    from shmrma.core import atomic
    from shmrma.rma.control import OFF_COMPLETES

    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        win = MPI.Win.Allocate(8 * size, 8, comm=comm)
        mine = local(win)
        mine[:] = -1
        state = win._state
        for origin in range(size):
            atomic.store32(state.post_cell(origin, rank), seed)
        atomic.store32(state.control_of(rank) + OFF_COMPLETES, seed)
        for target in range(size):
            state.epoch.table.set_posts_used(target, seed)
        state.epoch.table.completes_due = seed
        comm.Barrier()
        left, right = (rank - 1) % size, (rank + 1) % size
        others = group(comm, [r for r in range(size) if r != rank])
        wrong = []
        for k in range(12):
            win.Post(group(comm, [left]))
            win.Start(group(comm, [right]))
            win.Put(value(k), right, rank)
            win.Complete()
            win.Wait()
            if mine[left] != k:
                wrong.append(("ring", k, int(mine[left])))
            win.Post(others)
            win.Start(others)
            for target in range(size):
                if target != rank:
                    win.Put(value(100 + k), target, rank)
            win.Complete()
            win.Wait()
            if [x for r, x in enumerate(mine.tolist()) if r != rank] != [100 + k] * (size - 1):
                wrong.append(("all", k, mine.tolist()))
        comm.Barrier()
        win.Free()
        return wrong
    assert shmrma.launch(body, 3, timeout=30) == [[]] * 3


# --- empty groups ---------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_empty_groups_are_legal_no_op_epochs():
    """R92, A33, A38, R66, R22: Start/Complete and Post/Wait/Test with
    GROUP_EMPTY (and with empty groups made by Incl([]) and Excl) are legal: Test on an
    empty Post returns True at once and closes it; Start(empty) opens an access epoch
    that reaches no rank (RMA to the peer raises ERR_RMA_SYNC, to PROC_NULL it is a
    no-op) but still excludes Lock and Free until Complete. 200 empty rounds later a
    real PSCW round between the two ranks still matches."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        out = {}
        empties = [MPI.GROUP_EMPTY, comm.Get_group().Incl([]), comm.Get_group().Excl([0, 1])]
        for empty in empties:
            win.Start(empty)
            sync_error(win.Put, ONE, peer)
            sync_error(win.Put, ONE, rank)
            win.Put(ONE, MPI.PROC_NULL)
            sync_error(win.Lock, peer)
            sync_error(win.Lock_all)
            sync_error(win.Free)
            win.Complete()
            sync_error(win.Complete)
            win.Post(empty)
            out.setdefault("test", []).append(win.Test())
            sync_error(win.Test)
            win.Post(empty)
            sync_error(win.Free)
            win.Wait()
            sync_error(win.Wait)
            win.Post(empty)
            win.Start(empty)
            win.Complete()
            win.Wait()
        for _ in range(200):
            win.Start(MPI.GROUP_EMPTY)
            win.Complete()
            win.Post(MPI.GROUP_EMPTY)
            win.Wait()
        win.Post(group(comm, [peer]))
        win.Start(group(comm, [peer]))
        win.Put(value(40 + rank), peer)
        win.Complete()
        win.Wait()
        out["data"] = int(mine[0])
        comm.Barrier()
        win.Lock(peer, MPI.LOCK_SHARED)     # every epoch is closed, nothing exposed
        win.Unlock(peer)
        win.Free()
        return out
    results = shmrma.launch(body, 2, timeout=20)
    for rank, out in enumerate(results):
        assert out["test"] == [True, True, True]
        assert out["data"] == 40 + (1 - rank)


# --- bad groups and assertions ----------------------------------------------------------------

@pytest.mark.timeout(60)
def test_bad_groups_raise_and_open_nothing():
    """R93: a window over a sub-communicator from Split (ranks in reverse
    world order) with a Start or Post group holding a process outside it (COMM_WORLD's
    group, or the other half) raises ERR_GROUP; GROUP_NULL and a freed group raise
    ERR_GROUP; a non-Group argument raises TypeError. None of them opens an epoch.
    Groups built from COMM_WORLD's group are translated to window ranks: a PSCW round
    inside each half then works."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.Get_rank()
        half = world.Split(0 if rank < 2 else 1, -rank)
        win = MPI.Win.Allocate(8, 8, comm=half)
        mine = local(win)
        mine[:] = 0
        world_group = world.Get_group()
        outside = world_group.Incl([2] if rank < 2 else [0, 1])
        freed = world_group.Incl([rank])
        freed.Free()
        for call in (win.Start, win.Post):
            for bad in (world_group, outside, MPI.GROUP_NULL, freed):
                with raises_mpi(MPI.ERR_GROUP):
                    call(bad)
                with raises_mpi(MPI.ERR_GROUP):
                    call(bad, MPI.MODE_NOCHECK)
            for bad in ([0], 0, None, half, "group"):
                with pytest.raises(TypeError):
                    call(bad)
        sync_error(win.Put, ONE, 0)
        sync_error(win.Complete)
        sync_error(win.Wait)
        sync_error(win.Test)
        out = {}
        if rank < 2:
            peer_world = 1 - rank
            peer_window = half.Get_rank() ^ 1
            win.Post(world_group.Incl([peer_world]))
            win.Start(half.Get_group().Incl([peer_window]))
            win.Put(value(100 + rank), peer_window)
            win.Complete()
            win.Wait()
            out["window_rank"] = half.Get_rank()
        else:
            win.Post(world_group.Incl([2]))
            win.Start(world_group.Incl([2]))
            win.Put(value(102), 0)
            win.Complete()
            win.Wait()
        out["data"] = int(mine[0])
        win.Free()
        half.Free()
        world.Barrier()
        return out
    results = shmrma.launch(body, 3, timeout=20)
    assert results == [{"window_rank": 1, "data": 101}, {"window_rank": 0, "data": 100},
                       {"data": 102}]


@pytest.mark.timeout(60)
def test_start_and_post_reject_a_freed_group_used_before():
    """R93 (ERR_GROUP for an invalid group), docs/api.md: a group whose handle was freed is
    invalid everywhere. Here the handle is shared by a copy (MPI.Group(g)) that served a
    PSCW round before g.Free(): Start and Post with the copy must raise ERR_GROUP, as
    the copy's Get_size does, and open nothing."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        g = group(comm, [peer])
        copy = MPI.Group(g)
        win.Post(copy)
        win.Start(copy)
        win.Complete()
        win.Wait()
        comm.Barrier()
        g.Free()
        with raises_mpi(MPI.ERR_GROUP):
            copy.Get_size()
        failures = []
        for call in (win.Post, win.Start):
            try:
                call(copy)
            except MPI.Exception as exc:
                if exc.Get_error_class() != MPI.ERR_GROUP:
                    failures.append((call.__name__, exc.Get_error_class()))
            else:
                failures.append((call.__name__, "no error"))
        # close whatever a wrongly accepted call opened, so the job ends cleanly
        if ("Start", "no error") in failures:
            win.Complete()
        if ("Post", "no error") in failures:
            win.Wait()
        comm.Barrier()
        win.Free()
        return failures
    assert shmrma.launch(body, 2, timeout=20) == [[], []]


@pytest.mark.timeout(60)
def test_bad_assertions_on_start_and_post_are_err_assert():
    """R113, R112: assertion bits outside the five MODE_* constants make Start and Post
    raise ERR_ASSERT and open nothing (Complete/Wait/Test then raise ERR_RMA_SYNC);
    defined bits that do not apply to the call, and numpy integers, are accepted."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        to_peer = group(comm, [peer])
        for bad in (1, 3, 1 << 20, -1, MPI.MODE_NOCHECK | 4):
            with raises_mpi(MPI.ERR_ASSERT):
                win.Start(to_peer, bad)
            with raises_mpi(MPI.ERR_ASSERT):
                win.Post(to_peer, bad)
        sync_error(win.Complete)
        sync_error(win.Wait)
        sync_error(win.Test)
        sync_error(win.Put, ONE, peer)
        win.Post(to_peer, np.int64(MPI.MODE_NOSTORE | MPI.MODE_NOPRECEDE | MPI.MODE_NOSUCCEED))
        win.Start(to_peer, np.int32(MPI.MODE_NOSTORE | MPI.MODE_NOPUT | MPI.MODE_NOPRECEDE
                                    | MPI.MODE_NOSUCCEED))
        win.Put(value(7 + rank), peer)
        win.Complete()
        win.Wait()
        data = int(mine[0])
        win.Free()
        return data
    assert shmrma.launch(body, 2, timeout=20) == [8, 7]


# --- epoch rules: ERR_RMA_SYNC with nothing changed --------------------------------------------

@pytest.mark.timeout(60)
def test_misuse_inside_an_access_epoch_is_err_rma_sync_with_nothing_changed():
    """R66, R72, R79, R106, R53, R22, R82: Complete without Start; inside a Start epoch
    a second Start, Lock, Lock_all, Fence, every flush and Sync, the request-based calls
    and Free all raise ERR_RMA_SYNC; the epoch stays open (a Put still lands), no failed
    call wrote or read anything, Complete closes it once and Free then works. Start
    inside a Lock or Lock_all epoch raises too, and that epoch goes on. The fast path is
    warmed up by a Lock epoch with flushes before."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8 * 4, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        to_one = group(comm, [1])
        out = {}
        if rank == 0:
            win.Lock(1, MPI.LOCK_SHARED)
            win.Flush(1)
            win.Flush(1)
            win.Flush_all()
            win.Unlock(1)
            comm.send("warm", dest=1)
            sync_error(win.Complete)
            win.Start(to_one)
            res = np.full(1, -5, dtype="i8")
            for call in (lambda: win.Start(to_one), lambda: win.Start(MPI.GROUP_EMPTY),
                         lambda: win.Lock(1), lambda: win.Lock(0, MPI.LOCK_SHARED),
                         win.Lock_all, win.Fence, lambda: win.Fence(MPI.MODE_NOPRECEDE),
                         lambda: win.Flush(1), lambda: win.Flush_local(1), win.Flush_all,
                         win.Flush_local_all, win.Sync,
                         lambda: win.Rput(value(66), 1, 1),
                         lambda: win.Rget(res, 1, 1),
                         lambda: win.Raccumulate(value(66), 1, 1),
                         lambda: win.Rget_accumulate(value(66), res, 1, 1),
                         win.Free,
                         lambda: win.Put(value(66), 0, 1)):
                sync_error(call)
            win.Put(value(7), 1, 0)
            win.Complete()
            sync_error(win.Complete)
            sync_error(win.Put, value(66), 1, 1)
            out["res"] = int(res[0])
            comm.recv(source=1)
            # Start inside Lock / Lock_all: the passive epoch goes on
            win.Lock(1, MPI.LOCK_EXCLUSIVE)
            sync_error(win.Start, to_one)
            win.Accumulate(ONE, 1, 2)
            win.Unlock(1)
            win.Lock_all()
            sync_error(win.Start, to_one)
            sync_error(win.Start, MPI.GROUP_EMPTY)
            win.Accumulate(ONE, 1, 2)
            win.Unlock_all()
            comm.send("unlocked", dest=1)
            win.Start(to_one)
            win.Put(value(9), 1, 3)
            win.Complete()
        else:
            comm.recv(source=0)
            win.Post(group(comm, [0]))
            win.Wait()
            comm.send("waited", dest=0)
            comm.recv(source=0)
            win.Post(group(comm, [0]))
            win.Wait()
        nothing_left_behind(comm)
        out["data"] = mine.tolist()
        win.Free()
        return out
    r0, r1 = shmrma.launch(body, 2, timeout=20)
    assert r0 == {"res": -5, "data": [0, 0, 0, 0]}
    assert r1 == {"data": [7, 0, 2, 9]}


@pytest.mark.timeout(60)
def test_misuse_inside_an_exposure_epoch_is_err_rma_sync_with_nothing_changed():
    """R68, R72, R79, R22, A34: Wait/Test without Post; inside Post..Wait a second Post
    (even with GROUP_EMPTY), Fence and Free raise ERR_RMA_SYNC and the exposure epoch
    goes on (the origin's Put lands, Wait closes it, Free then works). Start or Post
    right after a Fence with un-fenced RMA raise ERR_RMA_SYNC and the fence epoch goes
    on (a Put still works); after a Fence with no RMA since, Post and Start are legal."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(8 * 3, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        if rank == 1:
            sync_error(win.Wait)
            sync_error(win.Test)
            win.Post(group(comm, [0]))
            for call in (lambda: win.Post(group(comm, [0])),
                         lambda: win.Post(MPI.GROUP_EMPTY),
                         win.Fence, lambda: win.Fence(MPI.MODE_NOSUCCEED), win.Free):
                sync_error(call)
            comm.send("ready", dest=0)
            win.Wait()
            sync_error(win.Wait)
        else:
            comm.recv(source=1)
            win.Start(group(comm, [1]))
            win.Put(value(3), 1, 0)
            win.Complete()
        win.Fence()
        win.Accumulate(ONE, peer, 1)
        sync_error(win.Start, group(comm, [peer]))
        sync_error(win.Post, group(comm, [peer]))
        sync_error(win.Start, MPI.GROUP_EMPTY)
        win.Accumulate(ONE, peer, 1)        # still the fence epoch
        win.Fence()
        win.Post(group(comm, [peer]))       # no RMA since the Fence: legal (A34)
        win.Start(group(comm, [peer]))
        win.Put(value(5), peer, 2)
        win.Complete()
        win.Wait()
        sync_error(win.Put, ONE, peer)      # the Post/Start left the fence epoch
        nothing_left_behind(comm)
        data = mine.tolist()
        win.Free()
        return data
    assert shmrma.launch(body, 2, timeout=20) == [[0, 2, 5], [3, 2, 5]]


# --- legal overlaps ------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_exposure_and_access_epochs_overlap():
    """R68, R67, R37, R73, R94: Post then Start on the same window (each rank both exposed
    and accessing); a Post inside a Start epoch; a rank posting to and starting itself;
    a Lock epoch to an unexposed peer inside an exposure epoch and a Post inside a Lock
    epoch of the peer's window; and Lock, Lock_all and fence epochs on a second window
    inside the PSCW epochs of the first (R102 is per window: no conflict). All data
    lands."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        a = MPI.Win.Allocate(8 * 3, 8, comm=comm)
        b = MPI.Win.Allocate(8 * 2, 8, comm=comm)
        local(a)[:] = 0
        local(b)[:] = 0
        comm.Barrier()
        to_peer = group(comm, [peer])
        # both ranks exposed and accessing at once, other epochs on b inside
        a.Post(to_peer)
        a.Start(to_peer)
        a.Put(value(rank + 1), peer, 0)
        b.Lock(peer, MPI.LOCK_SHARED)
        b.Accumulate(value(10), peer, 0)
        b.Unlock(peer)
        b.Lock_all()
        b.Accumulate(value(10), peer, 0)
        b.Unlock_all()
        b.Fence()
        b.Accumulate(ONE, peer, 1)
        b.Fence(MPI.MODE_NOSUCCEED)
        token = comm.sendrecv(rank, dest=peer, source=peer)
        a.Complete()
        a.Wait()
        # rank 0 posts inside its Start epoch
        if rank == 1:
            a.Post(to_peer)
            a.Start(to_peer)
            a.Put(value(21), 0, 1)
            a.Complete()
            a.Wait()
        else:
            a.Start(to_peer)
            a.Post(to_peer)
            a.Put(value(20), 1, 1)
            a.Complete()
            a.Wait()
        # a rank is its own origin and target
        me = group(comm, [rank])
        a.Post(me)
        a.Start(me)
        a.Put(value(30 + rank), rank, 2)
        a.Complete()
        a.Wait()
        comm.Barrier()
        # a Lock epoch to an unexposed peer inside an exposure epoch, and a Post
        # inside a Lock epoch (only Start is excluded there: R66)
        if rank == 0:
            a.Post(to_peer)
            a.Lock(1, MPI.LOCK_SHARED)
            a.Accumulate(value(100), 1, 2)
            a.Unlock(1)
            comm.send("go", dest=1)
            a.Wait()
            comm.Barrier()
        else:
            comm.recv(source=0)
            a.Start(to_peer)
            a.Accumulate(value(100), 0, 2)
            a.Complete()
            comm.Barrier()
            a.Lock(0, MPI.LOCK_SHARED)
            a.Post(to_peer)
            a.Accumulate(value(1000), 0, 0)
            a.Unlock(0)
        if rank == 0:
            a.Start(to_peer)
            a.Accumulate(value(1000), 1, 0)
            a.Complete()
        else:
            a.Wait()
        comm.Barrier()
        result = local(a).tolist(), local(b).tolist(), token
        a.Free()
        b.Free()
        return result
    assert shmrma.launch(body, 2, timeout=20) == [([1002, 21, 130], [20, 1], 1),
                                                  ([1001, 20, 131], [20, 1], 0)]


# --- locked and exposed at once: ERR_RMA_CONFLICT ------------------------------------------------

@pytest.mark.timeout(60)
def test_lock_and_exposure_conflict():
    """R102, R100: Lock (exclusive or shared) and Lock_all of a rank that is
    between Post and Wait, by another rank or by itself, raise ERR_RMA_CONFLICT and open
    nothing (Unlock then raises ERR_RMA_SYNC); every lock they took is given back:
    after the Wait, the target's own exclusive Lock of its window and the origin's
    exclusive Locks of both windows succeed. Post while the local window is locked, by
    another rank or by the rank itself, raises ERR_RMA_CONFLICT and leaves the rank
    unexposed (Wait and Test raise ERR_RMA_SYNC, an exclusive Lock of it succeeds);
    after the Unlock a Post works."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8 * 2, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        comm.Barrier()
        to_zero, to_one = group(comm, [0]), group(comm, [1])
        if rank == 1:
            win.Post(to_zero)
            with raises_mpi(MPI.ERR_RMA_CONFLICT):
                win.Lock(1, MPI.LOCK_SHARED)    # its own exposed window
            sync_error(win.Unlock, 1)
            comm.send("posted", dest=0)
            comm.recv(source=0)
            win.Wait()
            win.Lock(1, MPI.LOCK_EXCLUSIVE)     # no lock leaked by the failed calls
            win.Unlock(1)
            win.Lock(0, MPI.LOCK_EXCLUSIVE)
            win.Unlock(0)
            comm.send("waited", dest=0)
            # Post while locked
            comm.recv(source=0)
            with raises_mpi(MPI.ERR_RMA_CONFLICT):
                win.Post(to_zero)
            sync_error(win.Wait)
            sync_error(win.Test)
            win.Lock(1, MPI.LOCK_SHARED)        # also locked by itself now
            with raises_mpi(MPI.ERR_RMA_CONFLICT):
                win.Post(to_zero)
            win.Unlock(1)
            comm.send("tried", dest=0)
            comm.recv(source=0)
            win.Post(to_zero)
            win.Wait()
        else:
            comm.recv(source=1)
            for call in (lambda: win.Lock(1, MPI.LOCK_EXCLUSIVE),
                         lambda: win.Lock(1, MPI.LOCK_SHARED), win.Lock_all):
                with raises_mpi(MPI.ERR_RMA_CONFLICT):
                    call()
                sync_error(win.Put, ONE, 1)
                sync_error(win.Unlock, 1)
                sync_error(win.Unlock_all)
            win.Start(to_one)
            win.Put(value(4), 1, 0)
            win.Complete()
            comm.send("completed", dest=1)
            comm.recv(source=1)
            win.Lock(1, MPI.LOCK_EXCLUSIVE)
            win.Unlock(1)
            win.Lock(0, MPI.LOCK_EXCLUSIVE)
            win.Unlock(0)
            win.Lock(1, MPI.LOCK_SHARED)
            comm.send("locked", dest=1)
            comm.recv(source=1)
            win.Put(value(5), 1, 1)
            win.Unlock(1)
            win.Lock(1, MPI.LOCK_EXCLUSIVE)     # rank 1 was not left exposed
            win.Unlock(1)
            comm.send("unlocked", dest=1)
            win.Start(to_one)
            win.Accumulate(value(10), 1, 1)
            win.Complete()
        nothing_left_behind(comm)
        data = mine.tolist()
        win.Free()
        return data
    assert shmrma.launch(body, 2, timeout=20) == [[0, 0], [4, 15]]


# --- the other communication calls inside PSCW epochs, on every kind of window --------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", ["allocate", "shared", "create"])
def test_accumulate_class_and_get_inside_pscw(flavor):
    """R81, R88, R120, R43, R46, R47, R49, R50: 3 ranks, each Posts to and Starts the two
    others, then Accumulate (SUM, MAX, REPLACE), Get_accumulate (NO_OP, SUM),
    Fetch_and_op, Compare_and_swap and Get inside the epoch, on Allocate, Allocate_shared
    and Create windows. After Wait every result is exact: sums, the maximum, one CAS
    winner per target, fetched values that are a permutation of the partial counts,
    and Gets that see what the target stored before its Post."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        others = [r for r in range(size) if r != rank]
        slots = 7       # sum, fop counter, cas, stored, replace, max, get_acc sum
        if flavor == "create":
            memory = np.zeros(slots, dtype="i8")
            win = MPI.Win.Create(memory, disp_unit=8, comm=comm)
            mine = memory
        else:
            make = MPI.Win.Allocate if flavor == "allocate" else MPI.Win.Allocate_shared
            win = make(8 * slots, 8, comm=comm)
            mine = local(win)
        mine[:] = [0, 0, -1, 100 + rank, 0, 0, 0]
        win.Post(group(comm, others))
        win.Start(group(comm, others))
        fetched = {}
        for target in others:
            fop, cas, got, noop, gacc = (np.zeros(1, dtype="i8") for _ in range(5))
            win.Accumulate(ONE, target, 0, MPI.SUM)
            win.Fetch_and_op(ONE, fop, target, 1, MPI.SUM)
            win.Compare_and_swap(value(rank), value(-1), cas, target, 2)
            win.Get(got, target, 3)
            win.Get_accumulate([None, 0, MPI.INT64_T], [noop, MPI.INT64_T], target,
                               (3, 1, MPI.INT64_T), MPI.NO_OP)
            win.Accumulate(value(rank), target, 4, MPI.REPLACE)
            win.Accumulate(value(10 * rank), target, 5, MPI.MAX)
            win.Get_accumulate(value(rank + 1), gacc, target, 6, MPI.SUM)
            fetched[target] = [int(x[0]) for x in (fop, cas, got, noop, gacc)]
        win.Complete()
        win.Wait()
        data = mine.tolist()
        comm.Barrier()
        win.Free()
        return data, fetched
    size = 3
    results = shmrma.launch(body, size, timeout=20)
    for target in range(size):
        others = [r for r in range(size) if r != target]
        data = results[target][0]
        seen = {origin: results[origin][1][target] for origin in others}
        assert data[0] == len(others)
        assert data[1] == len(others)
        assert sorted(f[0] for f in seen.values()) == list(range(len(others)))
        winner = data[2]
        assert winner in others
        assert all(f[1] == (-1 if origin == winner else winner) for origin, f in seen.items())
        assert all(f[2] == f[3] == 100 + target for f in seen.values())
        assert data[3] == 100 + target
        assert data[4] in others
        assert data[5] == 10 * max(others)
        assert data[6] == sum(o + 1 for o in others)
        assert sorted(f[4] for f in seen.values()) in (
            [0, others[0] + 1], [0, others[1] + 1])


# --- many ranks, many rounds ----------------------------------------------------------------------

@pytest.mark.timeout(90)
def test_pscw_ring_oversubscribed():
    """R69, R91, R85, R88: 8 ranks on this 2-core machine run 1,000 rounds of a
    PSCW ring (Post to the left neighbour, Start the right one, Put the round number,
    Complete, Wait). Every rank sees round k's value after its k-th Wait. (How fast,
    as waits must not spin the cores away: shmrma-bench compare --suite scaling, PSCW
    at 8 and 16 ranks.)"""
    ROUNDS = 1000

    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        left, right = (rank - 1) % size, (rank + 1) % size
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = -1
        from_left, to_right = group(comm, [left]), group(comm, [right])
        buf = np.zeros(1, dtype="i8")
        wrong = 0
        comm.Barrier()
        for k in range(ROUNDS):
            win.Post(from_left)
            win.Start(to_right)
            buf[0] = k
            win.Put(buf, right)
            win.Complete()
            win.Wait()
            wrong += int(mine[0]) != k
        comm.Barrier()
        win.Free()
        return wrong
    assert shmrma.launch(body, 8, timeout=80) == [0] * 8


@pytest.mark.timeout(60)
def test_nocheck_post_and_start_guarded_by_a_barrier():
    """R114, R112, R91 (the pattern of Example 11.17): 4 ranks in a ring, 200 rounds of
    Post(MODE_NOCHECK), Barrier, Start(MODE_NOCHECK), Put, Complete, Wait; the Barrier
    guarantees every matching Post happened before a Start. Each round's data arrives,
    and 20 checked rounds afterwards still pair Start k with Post k."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        left, right = (rank - 1) % size, (rank + 1) % size
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = -1
        from_left, to_right = group(comm, [left]), group(comm, [right])
        buf = np.zeros(1, dtype="i8")
        wrong = []
        for k in range(220):
            nocheck = MPI.MODE_NOCHECK if k < 200 else 0
            win.Post(from_left, nocheck)
            if nocheck:
                comm.Barrier()
            win.Start(to_right, nocheck)
            buf[0] = 1000 * rank + k
            win.Put(buf, right)
            win.Complete()
            win.Wait()
            if mine[0] != 1000 * left + k:
                wrong.append((k, int(mine[0])))
        comm.Barrier()
        win.Free()
        return wrong
    assert shmrma.launch(body, 4, timeout=30) == [[]] * 4


SPIN_ONCE = r"""
import time
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(64, 8, comm=comm)
mine = np.frombuffer(win.tomemory(), "i8")
peer = comm.group.Incl([1 - comm.rank])
comm.Barrier()
if comm.rank == 0:      # Win.Wait: rank 1 completes after 0.4 s
    win.Post(peer)
    win.Wait()
    print("wait", int(mine[0]))
else:
    win.Start(peer)
    time.sleep(0.4)
    win.Put(np.array([7], "i8"), 0)
    win.Complete()
comm.Barrier()
if comm.rank == 1:      # Lock: rank 0 holds it for 0.4 s
    comm.Recv(bytearray(1), 0)
    win.Lock(0)
    got = np.zeros(1, "i8")
    win.Get(got, 0)
    win.Unlock(0)
    print("lock", int(got[0]))
else:
    win.Lock(0)
    comm.Send(b"x", 1)
    time.sleep(0.4)
    mine[0] = 9         # under its own exclusive lock: seen by whoever locks next
    win.Unlock(0)
comm.Barrier()
win.Free()
"""


@pytest.mark.timeout(60)
def test_a_sync_wait_longer_than_its_spin_ends_right(run_shmrma, tmp_path):
    """The one wait policy (docs/settings.md, "How ranks wait"): Win.Wait and Lock spin in C,
    then hand the wait to Python, which sleeps. With a 100 ms spin, a 0.4 s Wait
    still ends with the Complete (the Put seen) and a Lock with the holder's Unlock
    (its store seen). (What such a wait costs in CPU, one spin: measured by
    benchmarks/bench_waits.py.)"""
    program = tmp_path / "spin_once.py"
    program.write_text(SPIN_ONCE)
    result = run_shmrma(["-n", 2, "--timeout", 30, program], timeout=50,
                        env={"SHMRMA_SPIN": "100000"})
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["lock 9", "wait 7"]
