"""Synchronization counters of the 2008 "Flexible RMA Synchronization" proposal
(shmrma/rma/counters.py; its §1.2; R152-R165, A14-A18, A22, A24, A31, A32).

Every multi-rank body runs under ``shmrma.launch`` with a timeout. Ranks are
ordered by messages, never by sleeps; one sleep gives a dying rank a head start,
another is the wait whose CPU cost a test measures. A counter's value is read
white-box through the window state (the counter is a signed 32-bit cell: negative
means banked early signals, A16).
"""
import faulthandler
import os
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic
from shmrma.rma import fastpath

from mpitest import HANG_S, nothing_left_behind, raises_mpi


# --- helpers (run inside the ranks) -----------------------------------------------------------

def local(win, dtype="i8"):
    return np.frombuffer(win.tomemory(), dtype=dtype)


def value(x):
    return np.array([x], dtype="i8")


def counter(win, sync):
    """The counter's current value (white-box)."""
    return atomic.load32(win._state.counters.address(sync, "test"))


def error_of(fn, *args):
    """The MPI error class ``fn(*args)`` raises, the name of another exception, or None."""
    try:
        fn(*args)
    except MPI.Exception as exc:
        return exc.Get_error_class()
    except Exception as exc:  # noqa: BLE001 - reported by name, compared by the test
        return type(exc).__name__
    return None


def sync_error(fn, *args):
    """``fn(*args)`` must raise ERR_RMA_SYNC."""
    with raises_mpi(MPI.ERR_RMA_SYNC):
        fn(*args)


def signal(win, target, sync):
    """A pure notification (mode 0, R157): Start and Wait a Sync_ops request."""
    request = win.Sync_ops_init(target, 0, sync)
    request.Start()
    request.Wait()
    request.Free()


RESTART = {"restart": "true"}


# --- allocation and handles -------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_alloc_and_free_sync_objects():
    """R152, R153, A22: Alloc_sync_objects(n) returns n distinct local MPI.Sync handles
    (owner, truthy, repr), n=0 gives [], n<0 is ERR_COUNT and a float TypeError.
    Free_sync_objects replaces every entry of the very list with SYNC_NULL; a list
    holding a handle of another rank, or one counter twice, is ERR_ARG and frees
    nothing (not even the valid entries before it); SYNC_NULL in it is ERR_ARG, a
    non-Sync TypeError. A freed
    counter is reused and starts at 0 again, though it held a banked signal. 200
    counters (more than one 64-counter segment) all work from the other rank."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        other = 1 - rank
        win = MPI.Win.Allocate(8, 8, comm=comm)
        out = {}
        syncs = win.Alloc_sync_objects(3)
        out["kinds"] = [type(s).__name__ for s in syncs]
        out["owners"] = [s.owner for s in syncs]
        out["truthy"] = [bool(s) for s in syncs]
        out["distinct"] = len(set(syncs)) == 3 and syncs[0] != syncs[1]
        out["repr"] = repr(syncs[0])
        out["null"] = (bool(MPI.SYNC_NULL), repr(MPI.SYNC_NULL), MPI.SYNC_NULL == MPI.Sync(),
                       syncs[0] == MPI.SYNC_NULL)
        out["zero"] = win.Alloc_sync_objects(0)
        out["negative"] = error_of(win.Alloc_sync_objects, -1)
        out["float"] = error_of(win.Alloc_sync_objects, 2.0)
        out["numpy_n"] = len(win.Alloc_sync_objects(np.int64(2)))
        out["counters_start_at_0"] = [counter(win, s) for s in syncs]

        theirs = comm.sendrecv(syncs, dest=other, source=other)
        out["their_owners"] = [s.owner for s in theirs]
        attempt = [syncs[0], theirs[1]]
        out["free_remote"] = error_of(win.Free_sync_objects, attempt)
        out["free_remote_untouched"] = attempt == [syncs[0], theirs[1]]
        out["free_null"] = error_of(win.Free_sync_objects, [syncs[1], MPI.SYNC_NULL])
        out["free_not_sync"] = error_of(win.Free_sync_objects, [syncs[1], "sync"])
        out["free_twice"] = error_of(win.Free_sync_objects, [syncs[1], syncs[2], syncs[1]])
        # nothing was freed by the failed calls: new counters are none of the three
        extra = win.Alloc_sync_objects(2)
        slots = {(s.segment, s.slot) for s in syncs}
        out["not_reused_after_failure"] = not {(s.segment, s.slot) for s in extra} & slots \
            and (extra[0].segment, extra[0].slot) != (extra[1].segment, extra[1].slot)
        win.Free_sync_objects(extra)

        # bank a signal on syncs[2] (self-signal, R161), then free and reallocate it
        signal(win, rank, syncs[2])
        out["banked_before_free"] = counter(win, syncs[2])
        held = syncs
        win.Free_sync_objects(held)
        out["freed_in_place"] = held is syncs and all(s is MPI.SYNC_NULL for s in syncs)
        win.Free_sync_objects([])
        again = win.Alloc_sync_objects(3)
        out["reused_start_at_0"] = [counter(win, s) for s in again]
        request = win.Sync_object_init(again[0], 1)
        request.Start()
        signal(win, rank, again[0])
        request.Wait()
        out["reused_works"] = counter(win, again[0])
        request.Free()

        # 200 counters: the other rank maps every segment and signals across them
        many = win.Alloc_sync_objects(200)
        out["many"] = (len(many), len(set(many)), len({s.segment for s in many}) >= 4)
        their_many = comm.sendrecv(many, dest=other, source=other)
        picked = [0, 63, 64, 127, 150, 199]
        waits = [win.Sync_object_init(many[i], 1) for i in picked]
        MPI.Prequest.Startall(waits)
        comm.Barrier()
        for i in picked:
            signal(win, other, their_many[i])
        MPI.Request.Waitall(waits)
        out["many_after"] = sorted({counter(win, s) for s in many})
        for request in waits:
            request.Free()
        win.Free_sync_objects(many)
        out["many_freed"] = all(s is MPI.SYNC_NULL for s in many)
        comm.Barrier()
        win.Free()
        return out
    for rank, out in enumerate(shmrma.launch(body, 2, timeout=30)):
        assert out["kinds"] == ["Sync"] * 3
        assert out["owners"] == [rank] * 3 and out["their_owners"] == [1 - rank] * 3
        assert out["truthy"] == [True] * 3 and out["distinct"]
        assert "Sync" in out["repr"] and "rank %d" % rank in out["repr"]
        assert out["null"] == (False, "MPI.SYNC_NULL", True, False)
        assert out["zero"] == []
        assert out["negative"] == MPI.ERR_COUNT and out["float"] == "TypeError"
        assert out["numpy_n"] == 2
        assert out["counters_start_at_0"] == [0, 0, 0]
        assert out["free_remote"] == MPI.ERR_ARG and out["free_remote_untouched"]
        assert out["free_null"] == MPI.ERR_ARG and out["free_not_sync"] == "TypeError"
        assert out["free_twice"] == MPI.ERR_ARG
        assert out["not_reused_after_failure"]
        assert out["banked_before_free"] == -1
        assert out["freed_in_place"]
        assert out["reused_start_at_0"] == [0, 0, 0] and out["reused_works"] == 0
        assert out["many"] == (200, 200, True)
        assert out["many_after"] == [0] and out["many_freed"]


@pytest.mark.timeout(60)
def test_handles_travel_by_pickling_and_are_bound_to_their_window():
    """R154 (pickled form, A25), R159, A18: lists of Sync handles travel by
    comm.send/recv, bcast and allgather and arrive equal to the original, usable by
    Sync_ops_init toward their owner. A handle of window A on window B is ERR_ARG in
    every call, SYNC_NULL is ERR_ARG, a non-Sync handle TypeError."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        right, left = (rank + 1) % size, (rank - 1) % size
        a = MPI.Win.Allocate(8 * size, 8, comm=comm)
        b = MPI.Win.Allocate(8, 8, comm=comm)
        mine_a = local(a)
        mine_a[:] = -1
        mine = a.Alloc_sync_objects(3)   # [0] allgather round, [1] bcast round, [2] ring
        out = {}
        everyone = comm.allgather(mine)
        from_root = comm.bcast(mine if rank == 0 else None, root=0)
        comm.send(mine, dest=right)
        from_left = comm.recv(source=left)
        out["equal"] = (everyone[rank] == mine, from_root == everyone[0],
                        from_left == everyone[left],
                        [h[0].owner for h in everyone] == list(range(size)))

        all_in = a.Sync_object_init(mine[0], size - 1)
        ring_in = a.Sync_object_init(mine[2], 1)
        MPI.Prequest.Startall([all_in, ring_in])
        if rank == 0:
            root_in = a.Sync_object_init(mine[1], size - 1)
            root_in.Start()
        comm.Barrier()
        for target in range(size):
            if target != rank:      # Put my rank into my slot at every peer, then signal
                request = a.Sync_ops_init(target, MPI.MODE_WIN_PUT, everyone[target][0])
                request.Start()
                a.Put(value(rank), target, rank)
                request.Wait()
        if rank != 0:
            signal(a, 0, from_root[1])
        signal(a, left, from_left[2])
        all_in.Wait()
        ring_in.Wait()
        if rank == 0:
            root_in.Wait()
        out["data"] = mine_a.tolist()
        out["counters"] = [counter(a, s) for s in mine]

        out["other_window"] = [
            error_of(b.Sync_ops_init, left, 0, from_left[2]),
            error_of(b.Sync_ops_init, rank, 0, mine[0]),
            error_of(b.Sync_object_init, mine[0], 1),
            error_of(b.Free_sync_objects, [mine[0]]),
        ]
        out["null"] = [
            error_of(a.Sync_ops_init, left, 0, MPI.SYNC_NULL),
            error_of(a.Sync_object_init, MPI.SYNC_NULL, 1),
            error_of(a.Free_sync_objects, [MPI.SYNC_NULL]),
        ]
        out["not_sync"] = [
            error_of(a.Sync_ops_init, left, 0, 5),
            error_of(a.Sync_object_init, "counter", 1),
            error_of(a.Free_sync_objects, [None]),
        ]
        for request in (all_in, ring_in):
            request.Free()
        comm.Barrier()
        b.Free()
        a.Free()
        return out
    results = shmrma.launch(body, 3, timeout=30)
    for rank, out in enumerate(results):
        assert out["equal"] == (True, True, True, True)
        assert out["data"] == [-1 if r == rank else r for r in range(3)]
        assert out["counters"] == [0, 0, 0]
        assert out["other_window"] == [MPI.ERR_ARG] * 4
        assert out["null"] == [MPI.ERR_ARG] * 3
        assert out["not_sync"] == ["TypeError"] * 3


# --- signalling -------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_origins_put_then_signal_one_owner():
    """R155, R156, R157, R158, R159, A15, A16: three origins each Put 32 KiB into rank 0
    inside a Sync_ops(0, MODE_WIN_PUT) request and complete it; rank 0's count-3 object
    request is not complete while one origin has started but not completed its request
    (no signal at Start, A15: counter at 1), completes once the last one Waits, sees all
    the data (R158) and the counter is 0. Then 10 rounds of the Example A3 pattern: the
    owner hands out "buffer free" signals with mode-0 requests (R157), the origins' free
    counters bank them (A16) and every round's data arrives whole."""
    N = 4096

    def payload(rank, k):
        return np.arange(N, dtype="i8") + 1000000 * k + 100000 * rank

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8 * N * 3 if rank == 0 else 0, 8, comm=comm)
        out = {}
        if rank == 0:
            data = local(win).reshape(3, N)
            data[:] = -1
            c = win.Alloc_sync_objects(1)[0]
            obj = win.Sync_object_init(c, 3)
            obj.Start()                 # before any origin knows the handle
            comm.bcast(c, root=0)
            for origin in (1, 2, 3):
                comm.recv(source=origin, tag=1)
            out["counter_mid"] = counter(win, c)
            out["test_mid"] = obj.Test()
            comm.send("go", dest=3, tag=2)
            obj.Wait()
            out["counter_end"] = counter(win, c)
            out["data_ok"] = all((data[o - 1] == payload(o, 0)).all() for o in (1, 2, 3))
            out["test_inactive"] = obj.Test()          # inactive: returns at once
            out["counter_after"] = counter(win, c)     # no second completion
        else:
            c = comm.bcast(None, root=0)
            ops = win.Sync_ops_init(0, MPI.MODE_WIN_PUT, c)
            ops.Start()
            win.Put(payload(rank, 0), 0, (rank - 1) * N)
            if rank == 3:
                comm.send("started", dest=0, tag=1)
                comm.recv(source=0, tag=2)
                ops.Wait()
            else:
                ops.Wait()
                comm.send("signalled", dest=0, tag=1)

        # Example A3: 10 rounds, data one way, "free" signals (mode 0) the other
        free = None if rank == 0 else win.Alloc_sync_objects(1)[0]
        frees = comm.gather(free, root=0)
        bad = []
        if rank == 0:
            free_ops = [win.Sync_ops_init(o, 0, frees[o]) for o in (1, 2, 3)]
            for k in range(1, 11):
                obj.Start()
                MPI.Prequest.Startall(free_ops)
                MPI.Request.Waitall(free_ops)
                obj.Wait()
                for o in (1, 2, 3):
                    if not (data[o - 1] == payload(o, k)).all():
                        bad.append((k, o))
            out["counter_rounds"] = counter(win, c)
        else:
            free_obj = win.Sync_object_init(free, 1)
            for k in range(1, 11):
                free_obj.Start()
                free_obj.Wait()
                ops.Start()
                win.Put(payload(rank, k), 0, (rank - 1) * N)
                ops.Wait()
            out["free_counter"] = counter(win, free)
        out["bad"] = bad
        comm.Barrier()
        win.Free()
        return out
    results = shmrma.launch(body, 4, timeout=40)
    root = results[0]
    assert root["counter_mid"] == 1 and root["test_mid"] is False
    assert root["counter_end"] == 0 and root["data_ok"]
    assert root["test_inactive"] is True and root["counter_after"] == 0
    assert root["counter_rounds"] == 0 and root["bad"] == []
    assert [out["free_counter"] for out in results[1:]] == [0, 0, 0]


@pytest.mark.timeout(60)
def test_pure_signal_self_synchronization_and_argument_errors():
    """R157, R161, A18, A14: a rank synchronizes with itself (its own handle,
    target = itself) around a Put to itself; a mode-0 request signals but covers no
    RMA (Put/Get/Accumulate inside it are ERR_RMA_SYNC); count 0 completes at Start.
    A18: an own handle with another target, or a received handle with any target but
    its owner, is ERR_ARG; Sync_object_init of a received handle ERR_ARG; count < 0
    or beyond the counter's int32 ERR_COUNT; sync_mode bits outside the three modes ERR_ARG; a bad target ERR_RANK;
    info restart other than true/false ERR_INFO_VALUE."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        other = 1 - rank
        win = MPI.Win.Allocate(8 * 2, 8, comm=comm)
        mine_w = local(win)
        mine_w[:] = 0
        mine = win.Alloc_sync_objects(3)
        theirs = comm.sendrecv(mine, dest=other, source=other)
        out = {}
        # R161: self-synchronization
        obj = win.Sync_object_init(mine[0], 1)
        me = win.Sync_ops_init(rank, MPI.MODE_WIN_PUT, mine[0])
        obj.Start()
        me.Start()
        win.Put(value(40 + rank), rank, 0)
        out["self_mid"] = obj.Test()
        me.Wait()
        obj.Wait()
        out["self"] = (int(mine_w[0]), counter(win, mine[0]))

        # R157: mode 0 signals, covers nothing
        note = win.Sync_ops_init(other, 0, theirs[1])
        noted = win.Sync_object_init(mine[1], 1)
        noted.Start()
        comm.Barrier()
        note.Start()
        got = np.zeros(1, "i8")
        out["mode0_rma"] = [error_of(win.Put, value(66), other, 1),
                            error_of(win.Get, got, other, 1),
                            error_of(win.Accumulate, value(66), other, 1)]
        note.Wait()
        noted.Wait()
        out["mode0"] = (counter(win, mine[1]), int(mine_w[1]), int(got[0]))

        zero = win.Sync_object_init(mine[2], 0)
        zero.Start()
        out["count0"] = (zero.Test(), counter(win, mine[2]))

        out["errors"] = [
            error_of(win.Sync_ops_init, other, 0, mine[0]),          # own handle, other target
            error_of(win.Sync_ops_init, rank, 0, theirs[0]),         # remote handle, self target
            error_of(win.Sync_object_init, theirs[0], 1),            # remote handle
            error_of(win.Sync_object_init, mine[0], -1),
            error_of(win.Sync_object_init, mine[0], 2**31),          # beyond an int32 word
            error_of(win.Sync_ops_init, other, 8, theirs[0]),
            error_of(win.Sync_ops_init, other, MPI.MODE_WIN_PUT | 16, theirs[0]),
            error_of(win.Sync_ops_init, other, -1, theirs[0]),
            error_of(win.Sync_ops_init, 2, 0, theirs[0]),
            error_of(win.Sync_ops_init, MPI.PROC_NULL, 0, theirs[0]),
            error_of(win.Sync_ops_init, other, 0, theirs[0], {"restart": "bogus"}),
            error_of(win.Sync_object_init, mine[0], 1, {"restart": "yes"}),
        ]
        out["all_modes_ok"] = error_of(win.Sync_ops_init, other, MPI.MODE_WIN_PUT
                                       | MPI.MODE_WIN_GET | MPI.MODE_WIN_ACCUMULATE, theirs[0])
        comm.Barrier()
        win.Free()
        return out
    for rank, out in enumerate(shmrma.launch(body, 2, timeout=30)):
        assert out["self_mid"] is False
        assert out["self"] == (40 + rank, 0)
        assert out["mode0_rma"] == [MPI.ERR_RMA_SYNC] * 3
        assert out["mode0"] == (0, 0, 0)
        assert out["count0"] == (True, 0)
        assert out["errors"] == [MPI.ERR_ARG, MPI.ERR_ARG, MPI.ERR_ARG, MPI.ERR_COUNT,
                                 MPI.ERR_COUNT, MPI.ERR_ARG, MPI.ERR_ARG, MPI.ERR_ARG, MPI.ERR_RANK,
                                 MPI.ERR_RANK, MPI.ERR_INFO_VALUE, MPI.ERR_INFO_VALUE]
        assert out["all_modes_ok"] is None


@pytest.mark.timeout(60)
def test_early_signals_are_banked():
    """A16, R155, R160: an origin running one phase ahead signals before the owner's
    Start: the counter goes to -1, the count-1 Start completes at once, twice in a row;
    a count-2 Start with one early signal waits for exactly one more. Two early signals
    against a count-1 Start are more than one cycle expects: that Start raises
    ERR_WIN_COUNTER, leaves the counter at -2 and the request inactive (a second Start
    raises ERR_WIN_COUNTER again, not ERR_REQUEST; Free works); a count-2 request then
    absorbs both at once."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        c = comm.bcast(win.Alloc_sync_objects(1)[0] if rank == 0 else None, root=0)
        out = {}
        if rank == 1:
            for _ in range(2):              # one phase ahead, twice
                signal(win, 0, c)
                comm.send("ahead", dest=0)
                comm.recv(source=0)
            signal(win, 0, c)               # count 2, one early ...
            comm.send("ahead", dest=0)
            comm.recv(source=0)
            signal(win, 0, c)               # ... and one on time
            comm.recv(source=0)             # the owner saw it complete
            signal(win, 0, c)               # two early for a count-1 Start
            signal(win, 0, c)
            comm.send("ahead", dest=0)
        else:
            one = win.Sync_object_init(c, 1)
            for phase in range(2):
                comm.recv(source=1)
                out["banked%d" % phase] = counter(win, c)
                one.Start()
                out["at_once%d" % phase] = (one.Test(), counter(win, c))
                comm.send("next", dest=1)
            two = win.Sync_object_init(c, 2)
            comm.recv(source=1)
            two.Start()
            out["count2_mid"] = (two.Test(), counter(win, c))
            comm.send("next", dest=1)
            two.Wait()
            out["count2_end"] = counter(win, c)
            comm.send("next", dest=1)
            comm.recv(source=1)
            out["two_early"] = counter(win, c)
            out["too_many"] = error_of(one.Start)
            out["left_as_before"] = counter(win, c)
            out["again"] = error_of(one.Start)
            out["inactive_test"] = one.Test()
            out["free"] = error_of(one.Free)
            two.Start()
            out["absorbed"] = (two.Test(), counter(win, c))
            two.Free()
        comm.Barrier()
        win.Free()
        return out
    out = shmrma.launch(body, 2, timeout=30)[0]
    assert out["banked0"] == -1 and out["at_once0"] == (True, 0)
    assert out["banked1"] == -1 and out["at_once1"] == (True, 0)
    assert out["count2_mid"] == (False, 1) and out["count2_end"] == 0
    assert out["two_early"] == -2
    assert out["too_many"] == MPI.ERR_WIN_COUNTER and out["left_as_before"] == -2
    assert out["again"] == MPI.ERR_WIN_COUNTER and out["inactive_test"] is True
    assert out["free"] is None
    assert out["absorbed"] == (True, 0)


# --- the requests -----------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_request_rules_and_restart():
    """A17, A22, A23, A24, A15, R162, R163: Start of an active request is ERR_REQUEST,
    Cancel is ERR_REQUEST (active or not), Free of an active non-restart request
    ERR_REQUEST (it stays usable), Free of an inactive one makes it null; Wait fills
    only the error field (SUCCESS). With info restart=true (a dict or an MPI.Info)
    both kinds re-arm themselves (A22): 5 rounds of Put + signal one way and "free"
    signals back with a single Start each; the ops request's counter epoch stays open
    across its completions; such a request stays active, so Start on it is
    ERR_REQUEST. Free straight after a completing Wait is allowed (A23), closes the ops
    request's epoch and sends no signal (the owner's counter stays re-armed at 1)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        other = 1 - rank
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine_w = local(win)
        mine_w[:] = 0
        mine = win.Alloc_sync_objects(2)
        theirs = comm.sendrecv(mine, dest=other, source=other)
        out = {}
        ops = win.Sync_ops_init(other, MPI.MODE_WIN_PUT, theirs[0])
        obj = win.Sync_object_init(mine[0], 1)
        out["inactive_cancel"] = [error_of(ops.Cancel), error_of(obj.Cancel)]
        ops.Start()
        obj.Start()
        out["active"] = [error_of(ops.Start), error_of(obj.Start), error_of(ops.Cancel),
                         error_of(obj.Cancel), error_of(ops.Free), error_of(obj.Free),
                         bool(ops), bool(obj)]
        statuses = [MPI.Status(), MPI.Status()]
        for status in statuses:
            status.Set_error(MPI.ERR_OTHER)
        ops.Wait(statuses[0])
        obj.Wait(statuses[1])
        out["status"] = [status.Get_error() for status in statuses]
        out["free_inactive"] = [error_of(ops.Free), error_of(obj.Free), bool(ops), bool(obj)]

        # R163: rank 0 puts and signals, rank 1 reads and signals "free" back
        seen = []
        comm.Barrier()
        if rank == 0:
            info = MPI.Info.Create()
            info.Set("restart", "true")
            put_req = win.Sync_ops_init(1, MPI.MODE_WIN_PUT, theirs[0], info)
            free_obj = win.Sync_object_init(mine[1], 1, RESTART)
            put_req.Start()
            free_obj.Start()
            for k in range(1, 6):
                free_obj.Wait()
                win.Put(value(k), 1, 0)
                put_req.Wait()
                seen.append(bool(put_req))
            free_obj.Wait()                 # rank 1 has read round 5 (restart re-armed it)
            out["restart_start"] = [error_of(put_req.Start), error_of(free_obj.Start)]
            out["restart_free"] = [error_of(put_req.Free), error_of(free_obj.Free),
                                   bool(put_req), bool(free_obj)]
            out["after_free"] = error_of(win.Put, value(66), 1, 0)
            comm.Barrier()
        else:
            data_obj = win.Sync_object_init(mine[0], 1, RESTART)
            free_ops = win.Sync_ops_init(0, 0, theirs[1], RESTART)
            data_obj.Start()
            free_ops.Start()
            free_ops.Wait()                 # round 1's buffer is free
            for _ in range(5):
                data_obj.Wait()
                seen.append(int(mine_w[0]))
                free_ops.Wait()
            comm.Barrier()                  # rank 0 has freed its requests
            out["rearmed"] = counter(win, mine[0])   # armed again, no signal from Free
            out["restart_start"] = [error_of(data_obj.Start), error_of(free_ops.Start)]
            out["restart_free"] = [error_of(data_obj.Free), error_of(free_ops.Free),
                                   bool(data_obj), bool(free_ops)]
        out["seen"] = seen
        comm.Barrier()
        win.Free()
        return out
    results = shmrma.launch(body, 2, timeout=30)
    for out in results:
        assert out["inactive_cancel"] == [MPI.ERR_REQUEST] * 2
        assert out["active"] == [MPI.ERR_REQUEST] * 6 + [True, True]
        assert out["status"] == [MPI.SUCCESS] * 2
        assert out["free_inactive"] == [None, None, False, False]
        assert out["restart_start"] == [MPI.ERR_REQUEST] * 2
        assert out["restart_free"] == [None, None, False, False]
    assert results[0]["seen"] == [True] * 5
    assert results[0]["after_free"] == MPI.ERR_RMA_SYNC
    assert results[1]["seen"] == [1, 2, 3, 4, 5]
    assert results[1]["rearmed"] == 1


@pytest.mark.timeout(60)
def test_sync_requests_mix_with_other_requests():
    """R162, A24, R53: Sync requests go through Startall, Waitall, Waitany and Testall
    together with an Irecv, an Isend and an Rput under Lock_all; Waitall's statuses of
    Sync requests have error SUCCESS, the receive's its source; Waitany picks the
    object request that a peer's signal completed; every datum arrives."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        other = 1 - rank
        win = MPI.Win.Allocate(8 * 4, 8, comm=comm)
        mine_w = local(win)
        mine_w[:] = 0
        mine = win.Alloc_sync_objects(1)
        theirs = comm.sendrecv(mine, dest=other, source=other)
        obj = win.Sync_object_init(mine[0], 1)
        ops = win.Sync_ops_init(other, MPI.MODE_WIN_PUT, theirs[0])
        out = {}

        # Waitall
        win.Lock_all()
        MPI.Prequest.Startall([obj, ops])
        win.Put(value(10 + rank), other, 0)
        rput = win.Rput(value(20 + rank), other, 1)
        box = np.zeros(1, "i8")
        recv = comm.Irecv(box, source=other, tag=1)
        send = comm.Isend(value(30 + rank), dest=other, tag=1)
        statuses = []
        MPI.Request.Waitall([ops, rput, recv, send, obj], statuses)
        win.Unlock_all()
        out["waitall"] = (int(mine_w[0]), int(mine_w[1]), int(box[0]),
                          statuses[0].Get_error(), statuses[4].Get_error(),
                          statuses[2].Get_source())

        # Waitany: the receive cannot complete before both Waitany calls returned
        obj.Start()
        box2 = np.zeros(1, "i8")
        recv = comm.Irecv(box2, source=other, tag=2)
        ops.Start()
        win.Put(value(50 + rank), other, 2)
        ops.Wait()
        out["waitany"] = MPI.Request.Waitany([recv, obj])
        out["waitany_data"] = int(mine_w[2])
        comm.Barrier()              # both Waitany calls returned before either send
        comm.Send(value(60 + rank), dest=other, tag=2)
        recv.Wait()

        # Testall / Test loops
        win.Lock_all()
        obj.Start()
        ops.Start()
        box3 = np.zeros(1, "i8")
        recv = comm.Irecv(box3, source=other, tag=3)
        win.Put(value(70 + rank), other, 3)
        rput = win.Rput(value(80 + rank), other, 0)
        send = comm.Isend(value(90 + rank), dest=other, tag=3)
        requests = [ops, rput, send, recv]
        while not MPI.Request.Testall(requests):
            pass
        while not obj.Test():
            pass
        win.Unlock_all()
        out["testall"] = (int(mine_w[3]), int(mine_w[0]), int(box2[0]), int(box3[0]))
        nothing_left_behind(comm)
        win.Free()
        return out
    for rank, out in enumerate(shmrma.launch(body, 2, timeout=30)):
        other = 1 - rank
        assert out["waitall"] == (10 + other, 20 + other, 30 + other,
                                  MPI.SUCCESS, MPI.SUCCESS, other)
        assert out["waitany"] == 1 and out["waitany_data"] == 50 + other
        assert out["testall"] == (70 + other, 80 + other, 60 + other, 90 + other)


@pytest.mark.timeout(60)
def test_some_and_any_calls_complete_active_sync_requests_among_others():
    """R162, A15: Testany, Waitsome and Testsome handle *active* Sync requests mixed
    with receives and sends. Testany([recv, ops, obj]) completes the mode-0 ops request
    (index 1, it signals at once) while the receive cannot match yet; Waitsome then
    skips the now inactive ops request and returns the object request the peer's
    signal completed ([2]); Testsome after the sends returns the receive only ([0]).
    With everything active again, repeated Testsome and Waitsome return each of four
    requests exactly once and every datum arrives."""
    def body():
        comm = MPI.COMM_WORLD
        rank, other = comm.Get_rank(), 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = win.Alloc_sync_objects(1)
        theirs = comm.sendrecv(mine, dest=other, source=other)
        obj = win.Sync_object_init(mine[0], 1)
        ops = win.Sync_ops_init(other, 0, theirs[0])
        out = {}
        box = np.zeros(2, "i8")
        recv = comm.Irecv(box[:1], source=other, tag=1)
        MPI.Prequest.Startall([obj, ops])
        comm.Barrier()                      # no signal yet: ops signals in its completion
        requests = [recv, ops, obj]
        out["testany"] = MPI.Request.Testany(requests)
        out["waitsome"] = MPI.Request.Waitsome(requests)
        comm.Barrier()                      # both Waitsome calls returned: now send
        comm.Send(value(10 + rank), dest=other, tag=1)
        out["testsome"] = None
        while not out["testsome"]:
            out["testsome"] = MPI.Request.Testsome(requests)

        recv = comm.Irecv(box[1:], source=other, tag=2)
        MPI.Prequest.Startall([obj, ops])
        send = comm.Isend(value(20 + rank), dest=other, tag=2)
        requests, done = [obj, recv, ops, send], []
        while len(done) < 2:
            done += MPI.Request.Testsome(requests) or []
        while len(done) < 4:
            done += MPI.Request.Waitsome(requests)
        out["all_once"] = sorted(done)
        out["data"] = box.tolist()
        out["left"] = MPI.Request.Waitsome(requests)     # all inactive or null
        nothing_left_behind(comm)
        win.Free()
        return out
    for rank, out in enumerate(shmrma.launch(body, 2, timeout=30)):
        other = 1 - rank
        assert out["testany"] == (1, True)
        assert out["waitsome"] == [2] and out["testsome"] == [0]
        assert out["all_once"] == [0, 1, 2, 3]
        assert out["data"] == [10 + other, 20 + other]
        assert out["left"] is None


@pytest.mark.timeout(60)
def test_a_rank_waiting_on_a_counter_is_woken_by_a_late_signal():
    """R155, R162 (the one wait policy, atomic.c): a Sync_object Wait whose signal comes
    some 0.5 s late, when the wait sleeps on the counter, ends once the signal came.
    (That the sleep costs next to no CPU is measured by benchmarks/bench_waits.py.)"""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        c = comm.bcast(win.Alloc_sync_objects(1)[0] if rank == 0 else None)
        out = None
        request = win.Sync_object_init(c, 1) if rank == 0 else None
        if rank == 0:
            request.Start()
        comm.Barrier()
        if rank == 0:
            request.Wait()
            out = time.monotonic()
        else:
            time.sleep(0.5)             # long enough for the wait to go to sleep
            out = time.monotonic()
            signal(win, 0, c)
        comm.Barrier()
        win.Free()
        return out
    wait_returned, signalled = shmrma.launch(body, 2, timeout=50)
    assert wait_returned >= signalled       # the one clock of the machine: an order


# --- counter epochs ---------------------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("fast", [True, False], ids=["fastpath", "python"])
def test_counter_epochs_cover_their_kinds_to_their_target(fast):
    """R165, A14, A32, R53, R66, A34: an active Sync_ops(1, MODE_WIN_PUT) allows a Put to
    rank 1 with no other epoch, and nothing else: Get or the accumulate family to 1,
    a Put to rank 2 or to itself, Rput to 1 are ERR_RMA_SYNC; so is a Put after the
    request completed. MODE_WIN_ACCUMULATE covers Accumulate, Fetch_and_op,
    Compare_and_swap and Get_accumulate (not Put/Get); MODE_WIN_GET covers Get; two
    requests to one target each cover their kinds. Lock and Lock_all coexist with a
    counter epoch; Win.Barrier/Ibarrier inside one are ERR_RMA_SYNC (Fence and PSCW
    Start: the next test), and so is a Sync_ops Start inside a PSCW Start epoch or a
    fence epoch holding RMA; after a Fence without RMA it closes the fence epoch. Both
    the C fast path and the Python path; failed calls write nothing."""
    def body():
        fastpath.enable(fast)
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8 * 8, 8, comm=comm)
        mine_w = local(win)
        mine_w[:] = 0
        handles = comm.allgather(win.Alloc_sync_objects(1)[0])
        out = {}
        res = np.zeros(1, "i8")
        got = np.zeros(1, "i8")
        expected_signals = {0: 0, 1: 3, 2: 2}[rank]
        obj = win.Sync_object_init(handles[rank], expected_signals)
        obj.Start()
        comm.Barrier()
        if rank == 0:
            group1 = comm.Get_group().Incl([1])
            sync_error(win.Put, value(66), 1, 7)              # no epoch at all
            put1 = win.Sync_ops_init(1, MPI.MODE_WIN_PUT, handles[1])
            put1.Start()
            win.Put(value(11), 1, 0)
            for call in (lambda: win.Get(got, 1, 0),
                         lambda: win.Accumulate(value(66), 1, 7),
                         lambda: win.Fetch_and_op(value(66), res, 1, 7),
                         lambda: win.Compare_and_swap(value(66), value(0), res, 1, 7),
                         lambda: win.Get_accumulate(value(66), res, 1, 7),
                         lambda: win.Put(value(66), 2, 7),
                         lambda: win.Put(value(66), 0, 7),
                         lambda: win.Rput(value(66), 1, 7),
                         win.Barrier,
                         win.Ibarrier):
                sync_error(call)
            win.Put(value(12), 1, 1)     # the fast path is warm now: still only Put to 1
            sync_error(win.Get, got, 1, 0)
            win.Lock(2)                  # A32: Lock coexists
            win.Put(value(21), 2, 0)
            win.Unlock(2)
            win.Lock_all()               # and Lock_all: it covers Get too
            win.Get(got, 1, 0)
            win.Unlock_all()
            out["got"] = int(got[0])
            win.Put(value(13), 1, 2)     # still covered after Unlock_all
            sync_error(win.Get, got, 1, 0)
            put1.Wait()                  # signal 1 of 3 to rank 1
            sync_error(win.Put, value(66), 1, 7)

            acc1 = win.Sync_ops_init(1, MPI.MODE_WIN_ACCUMULATE, handles[1])
            acc1.Start()
            win.Accumulate(value(5), 1, 3)                               # 5
            win.Fetch_and_op(value(1), res, 1, 3)                        # 6
            out["fetched"] = int(res[0])
            win.Compare_and_swap(value(7), value(6), res, 1, 3)          # 7
            win.Get_accumulate(value(3), res, 1, 3)                      # 10
            out["get_accumulated"] = int(res[0])
            sync_error(win.Put, value(66), 1, 7)
            sync_error(win.Get, got, 1, 7)
            acc1.Wait()                  # signal 2 of 3 to rank 1
            sync_error(win.Accumulate, value(66), 1, 7)

            get2 = win.Sync_ops_init(2, MPI.MODE_WIN_GET, handles[2])
            both2 = win.Sync_ops_init(2, MPI.MODE_WIN_PUT | MPI.MODE_WIN_GET, handles[2])
            get2.Start()
            win.Get(got, 2, 0)
            out["got2"] = int(got[0])
            sync_error(win.Put, value(66), 2, 7)
            both2.Start()
            win.Put(value(22), 2, 1)
            get2.Wait()                  # signal 1 of 2 to rank 2
            win.Put(value(23), 2, 2)     # both2 still covers Put and Get
            win.Get(got, 2, 1)
            out["got2b"] = int(got[0])
            both2.Wait()                 # signal 2 of 2 to rank 2
            sync_error(win.Get, got, 2, 0)
            sync_error(win.Accumulate, value(66), 2, 7)

            comm.send("post", dest=1)    # not earlier: Lock_all above (R102)
            win.Start(group1)            # rank 1 posts {0}
            sync_error(put1.Start)       # R66: no counter epoch inside a Start epoch
            win.Put(value(14), 1, 4)
            win.Complete()
        elif rank == 1:
            comm.recv(source=0)
            win.Post(comm.Get_group().Incl([0]))
            win.Wait()

        win.Fence()
        if rank == 0:
            win.Put(value(24), 2, 3)
            sync_error(put1.Start)       # a fence epoch holds RMA (A34)
        win.Fence(MPI.MODE_NOSUCCEED)
        win.Fence()                      # a fence epoch without RMA yet
        if rank == 0:
            put1.Start()                 # legal: it closes the fence epoch
            win.Put(value(15), 1, 5)
            sync_error(win.Put, value(66), 2, 7)
            put1.Wait()                  # signal 3 of 3 to rank 1
        obj.Wait()
        out["counter"] = counter(win, handles[rank])
        out["data"] = mine_w.tolist()
        comm.Barrier()
        win.Free()
        fastpath.enable(True)
        return out
    results = shmrma.launch(body, 3, timeout=40)
    root = results[0]
    assert root["got"] == 11 and root["fetched"] == 5 and root["get_accumulated"] == 7
    assert root["got2"] == 21 and root["got2b"] == 22
    assert results[1]["data"] == [11, 12, 13, 10, 14, 15, 0, 0]
    assert results[2]["data"] == [21, 22, 23, 24, 0, 0, 0, 0]
    assert [out["counter"] for out in results] == [0, 0, 0]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fast", [True, False], ids=["fastpath", "python"])
def test_fence_and_pscw_start_inside_a_counter_epoch_are_errors(fast):
    """A14, A32, R165, R66: an active Sync_ops request is a counter epoch, which may
    not overlap a fence or PSCW access epoch: Fence and Start raise ERR_RMA_SYNC, also
    once the C fast path has done a legal Fence and Start on this window (one rank,
    so a wrongly accepted Fence cannot hang in its barrier)."""
    def body():
        fastpath.enable(fast)
        win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_WORLD)
        mine = win.Alloc_sync_objects(1)
        ops = win.Sync_ops_init(0, MPI.MODE_WIN_PUT, mine[0])
        for _ in range(2):          # warm the fast path (and its group cache)
            win.Fence()
            win.Fence(MPI.MODE_NOSUCCEED)
            win.Start(MPI.GROUP_EMPTY)
            win.Complete()
        ops.Start()
        errs = [error_of(win.Fence), error_of(win.Start, MPI.GROUP_EMPTY)]
        if errs[1] is None:
            win.Complete()
        ops.Wait()
        errs.append(error_of(win.Put, value(1), 0))   # the counter epoch is closed
        win.Fence(MPI.MODE_NOSUCCEED)
        win.Free()
        fastpath.enable(True)
        return errs
    assert shmrma.launch(body, 1, timeout=20)[0] == [MPI.ERR_RMA_SYNC] * 3


# --- freeing and failures ---------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_win_free_waits_for_started_sync_requests():
    """R22, A31: Win.Free with a started, uncompleted Sync_object or Sync_ops request is
    ERR_RMA_SYNC (checked before the collective part, so the window stays usable);
    once both are completed it works, unlinks every counter segment, and leaves no
    message behind."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        other = 1 - rank
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = win.Alloc_sync_objects(70)       # two counter segments
        theirs = comm.sendrecv(mine, dest=other, source=other)
        obj = win.Sync_object_init(mine[69], 1)
        ops = win.Sync_ops_init(other, 0, theirs[69])
        errs = []
        obj.Start()
        errs.append(error_of(win.Free))
        ops.Start()
        errs.append(error_of(win.Free))
        ops.Wait()
        errs.append(error_of(win.Free))     # obj completes only in its own Wait
        obj.Wait()
        names = sorted({s.segment for s in mine})
        nothing_left_behind(comm)
        win.Free()
        return errs, names
    results = shmrma.launch(body, 2, timeout=30)
    for errs, names in results:
        assert errs == [MPI.ERR_RMA_SYNC] * 3
        assert len(names) == 2
        for name in names:
            assert not os.path.exists(os.path.join("/dev/shm", name.lstrip("/"))), name


@pytest.mark.timeout(120)
def test_waiting_on_a_counter_a_dead_origin_never_signals():
    """Issue 5 applied to counters: a rank waiting in a Sync_object Wait
    notices that its signalling origin exited and the job ends, naming it (the rank
    that noticed, not the job's timeout, which names no rank, ends it)."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8, 8, comm=comm)
        c = comm.bcast(win.Alloc_sync_objects(1)[0] if comm.Get_rank() == 0 else None)
        if comm.Get_rank() == 1:
            time.sleep(0.2)
            os._exit(0)
        request = win.Sync_object_init(c, 1)
        request.Start()
        request.Wait()
    with pytest.raises(shmrma.LaunchError, match="rank 1") as info:
        shmrma.launch(body, 2, timeout=HANG_S)
    assert info.value.rank == 0


# --- known bugs -------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_waitany_skips_inactive_sync_requests():
    """R162 (MPI-3.1 §3.7.5): inactive persistent requests in Waitany are ignored like
    null ones: Waitany([inactive Sync, Irecv]) waits for the receive and returns 1;
    Waitany of inactive requests only returns UNDEFINED; Testany likewise."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = win.Alloc_sync_objects(1)
        idle = win.Sync_object_init(mine[0], 1)
        out = {}
        if rank == 0:
            box = np.zeros(1, "i8")
            recv = comm.Irecv(box, source=1)
            out["testany"] = MPI.Request.Testany([idle, recv])
            comm.send("go", dest=1, tag=9)
            out["waitany"] = MPI.Request.Waitany([idle, recv])
            out["only_inactive"] = MPI.Request.Waitany([idle])
            recv.Wait()
        else:
            comm.recv(source=0, tag=9)
            comm.Send(value(1), dest=0)
        comm.Barrier()
        win.Free()
        return out
    out = shmrma.launch(body, 2, timeout=20)[0]
    assert out["testany"] == (MPI.UNDEFINED, False)
    assert out["waitany"] == 1
    assert out["only_inactive"] == MPI.UNDEFINED


@pytest.mark.timeout(60)
def test_start_of_a_freed_sync_request_is_err_request():
    """A17, R162: after Free a request is REQUEST_NULL; Start on it is ERR_REQUEST (as
    MPI_Start(MPI_REQUEST_NULL)), for both kinds."""
    def body():
        win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_WORLD)
        mine = win.Alloc_sync_objects(1)
        requests = [win.Sync_object_init(mine[0], 1), win.Sync_ops_init(0, 0, mine[0])]
        for request in requests:
            request.Free()
        errs = [error_of(request.Start) for request in requests]
        for request in requests:                # undo a wrong Start so the window frees
            if getattr(request, "_active", False):
                request._deactivate()
        win.Free()
        return errs
    assert shmrma.launch(body, 1, timeout=20)[0] == [MPI.ERR_REQUEST, MPI.ERR_REQUEST]


@pytest.mark.timeout(60)
def test_start_after_win_free_is_err_win():
    """A17, R22: a Sync request whose window was freed cannot be started: ERR_WIN (the
    check is in _SyncRequest.Start), never a crash."""
    def body():
        win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_WORLD)
        mine = win.Alloc_sync_objects(1)
        ops = win.Sync_ops_init(0, 0, mine[0])
        obj = win.Sync_object_init(mine[0], 1)
        win.Free()
        errs = [error_of(ops.Start)]
        faulthandler.disable()      # pytest's, inherited: no crash report on the terminal
        errs.append(error_of(obj.Start))
        return errs
    assert shmrma.launch(body, 1, timeout=20)[0] == [MPI.ERR_WIN, MPI.ERR_WIN]


@pytest.mark.timeout(60)
def test_rma_to_proc_null_inside_a_counter_epoch_is_a_no_op():
    """A38, A14, R38: inside an active Sync_ops(MODE_WIN_PUT) request (an access epoch)
    a Put to PROC_NULL is a no-op, as in any other epoch."""
    def body():
        win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_WORLD)
        mine = win.Alloc_sync_objects(1)
        ops = win.Sync_ops_init(0, MPI.MODE_WIN_PUT, mine[0])
        ops.Start()
        err = error_of(win.Put, value(1), MPI.PROC_NULL)
        ops.Wait()
        win.Free()
        return err
    assert shmrma.launch(body, 1, timeout=20)[0] is None


@pytest.mark.timeout(60)
def test_free_of_a_started_uncompleted_restart_request_is_err_request():
    """A23, A22: a restart request counts as inactive only straight after a completing
    Wait or Test; started and not yet completed, its Free is ERR_REQUEST (both kinds)."""
    def body():
        win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_WORLD)
        mine = win.Alloc_sync_objects(2)
        requests = [win.Sync_ops_init(0, 0, mine[0], RESTART),
                    win.Sync_object_init(mine[1], 1, RESTART)]
        MPI.Prequest.Startall(requests)
        errs = [error_of(request.Free) for request in requests]
        for request in requests:                # undo, so that the window frees
            if getattr(request, "_active", False):
                request._deactivate()
        win.Free()
        return errs
    assert shmrma.launch(body, 1, timeout=20)[0] == [MPI.ERR_REQUEST, MPI.ERR_REQUEST]


@pytest.mark.timeout(60)
def test_free_sync_objects_of_a_counter_in_use_is_err_rma_sync():
    """A23: Free_sync_objects of a counter that an active request uses is ERR_RMA_SYNC,
    and the handle list is left as it was."""
    def body():
        win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_WORLD)
        mine = win.Alloc_sync_objects(1)
        request = win.Sync_object_init(mine[0], 1)
        request.Start()
        handle = mine[0]
        err = error_of(win.Free_sync_objects, mine)
        kept = bool(mine[0])
        signal(win, 0, handle)                  # complete the request either way
        request.Wait()
        win.Free()
        return err, kept
    assert shmrma.launch(body, 1, timeout=20)[0] == (MPI.ERR_RMA_SYNC, True)


@pytest.mark.timeout(60)
def test_a_stale_handle_of_a_freed_counter_is_err_arg():
    """A25, R153: rank 0 frees a counter rank 1 holds a handle to and allocates a new
    one in the same slot; rank 1's Sync_ops request on the stale handle raises ERR_ARG
    in its completing Wait, and the new counter is not decremented."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        out = {}
        if rank == 0:
            mine = win.Alloc_sync_objects(1)
            comm.send(mine[0], dest=1)
            comm.recv(source=1)
            win.Free_sync_objects(mine)
            fresh = win.Alloc_sync_objects(1)
            comm.send("freed", dest=1)
            comm.recv(source=1)
            out["fresh_counter"] = counter(win, fresh[0])
        else:
            stale = comm.recv(source=0)
            request = win.Sync_ops_init(0, 0, stale)
            comm.send("ready", dest=0)
            comm.recv(source=0)
            request.Start()
            out["wait"] = error_of(request.Wait)
            if getattr(request, "_active", False):
                request._deactivate()
            comm.send("done", dest=0)
        comm.Barrier()
        win.Free()
        return out
    results = shmrma.launch(body, 2, timeout=20)
    assert results[1]["wait"] == MPI.ERR_ARG
    assert results[0]["fresh_counter"] == 0


@pytest.mark.timeout(60)
def test_free_of_a_completed_restart_object_request_undoes_its_rearm():
    """A23, A16, R163: Free of a restart Sync_object request straight after a completing
    Wait takes back the count its automatic re-arm added, and keeps the signals banked
    since: a later count-1 request on the counter completes with one signal (not two),
    and one that finds a banked signal completes at its Start."""
    def body():
        win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_WORLD)
        c = win.Alloc_sync_objects(1)[0]
        out = {}
        looping = win.Sync_object_init(c, 2, RESTART)
        looping.Start()
        signal(win, 0, c)
        signal(win, 0, c)
        looping.Wait()                          # re-armed: counter back at 2
        looping.Free()
        out["after_free"] = counter(win, c)
        once = win.Sync_object_init(c, 1)
        once.Start()
        signal(win, 0, c)
        out["one_signal"] = (once.Test(), counter(win, c))
        looping = win.Sync_object_init(c, 2, RESTART)
        looping.Start()
        for _ in range(3):                      # a full cycle and one signal early
            signal(win, 0, c)
        looping.Wait()
        looping.Free()
        out["banked_kept"] = counter(win, c)
        once.Start()
        out["banked_used"] = (once.Test(), counter(win, c))
        once.Free()
        win.Free()
        return out
    out = shmrma.launch(body, 1, timeout=20)[0]
    assert out["after_free"] == 0
    assert out["one_signal"] == (True, 0)
    assert out["banked_kept"] == -1
    assert out["banked_used"] == (True, 0)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("complete", ["Wait", "Test", "Waitall"])
def test_a_failed_automatic_rearm_makes_the_request_inactive(complete):
    """A16, R160, A22, A23, A24: when a restart Sync_object request completes and more
    signals than its count arrived beyond that cycle, the automatic re-arm fails: that
    Wait/Test/Waitall raises ERR_WIN_COUNTER once (status error field ERR_WIN_COUNTER)
    and the request is inactive, as a non-restart one after completing: the next Wait
    returns at once, Start raises ERR_WIN_COUNTER again (the counter stays as it was),
    Free and Win.Free work, and a count-2 request absorbs the signals."""
    def body():
        win = MPI.Win.Allocate(8, 8, comm=MPI.COMM_WORLD)
        c = win.Alloc_sync_objects(1)[0]
        request = win.Sync_object_init(c, 1, RESTART)
        request.Start()
        for _ in range(3):                      # a cycle of 1, then 2 more
            signal(win, 0, c)
        status = MPI.Status()
        completing = {"Wait": lambda: request.Wait(status),
                      "Test": lambda: request.Test(status),
                      "Waitall": lambda: MPI.Request.Waitall([request], [status])}
        out = {"complete": error_of(completing[complete]), "status": status.Get_error(),
               "counter": counter(win, c), "wait_again": error_of(request.Wait),
               "start": error_of(request.Start), "counter_after_start": counter(win, c),
               "free": error_of(request.Free)}
        absorb = win.Sync_object_init(c, 2)
        absorb.Start()
        out["absorbed"] = (absorb.Test(), counter(win, c))
        out["win_free"] = error_of(win.Free)
        return out
    out = shmrma.launch(body, 1, timeout=20)[0]
    assert out["complete"] == MPI.ERR_WIN_COUNTER and out["status"] == MPI.ERR_WIN_COUNTER
    assert out["counter"] == -2 and out["wait_again"] is None
    assert out["start"] == MPI.ERR_WIN_COUNTER and out["counter_after_start"] == -2
    assert out["free"] is None
    assert out["absorbed"] == (True, 0) and out["win_free"] is None
