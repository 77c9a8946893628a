"""``MPI.HANDLE_SYNC``: Sync handles in buffer messages (R154, A25).

A list of handles travels in point-to-point calls and the non-reducing
collectives and arrives as handles that Sync_ops_init accepts; reductions,
derived datatypes and RMA refuse the type with ERR_TYPE and change nothing.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic

from mpitest import nothing_left_behind, raises_mpi


def signal(win, target, sync):
    """A pure notification (mode 0) through a received handle."""
    request = win.Sync_ops_init(target, 0, sync)
    request.Start()
    request.Wait()
    request.Free()


def wait_then_free(win, counters, counts):
    """Wait until counter i heard counts[i] signals; free the counters and the window."""
    for sync, count in zip(counters, counts):
        request = win.Sync_object_init(sync, count)
        request.Start()
        request.Wait()
        request.Free()
    win.Free_sync_objects(counters)
    win.Free()
    return "ok"


@pytest.mark.timeout(60)
def test_point_to_point_carries_usable_handles():
    """R154: Send/Recv, Isend/Irecv and Sendrecv carry lists of handles; each
    received handle signals its owner's counter."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        win = MPI.Win.Allocate(8, comm=comm)
        mine = win.Alloc_sync_objects(2)
        right, left = (rank + 1) % size, (rank - 1) % size
        # blocking, whole list, with SYNC_NULL riding along
        comm.Send([mine + [MPI.SYNC_NULL], MPI.HANDLE_SYNC], right)
        got = [MPI.SYNC_NULL] * 3
        status = MPI.Status()
        comm.Recv([got, MPI.HANDLE_SYNC], left, status=status)
        assert status.Get_count(MPI.HANDLE_SYNC) == 3
        assert got[2] == MPI.SYNC_NULL and got[0].owner == left
        # nonblocking, [list, (count, displ), type] forms and a receive shorter than the list
        request = comm.Irecv([got, 1, 2, MPI.HANDLE_SYNC], right)
        comm.Isend([mine, (1, 1), MPI.HANDLE_SYNC], left).Wait()
        request.Wait(status)
        assert status.Get_count(MPI.HANDLE_SYNC) == 1 and got[2].owner == right
        # Sendrecv
        swapped = [MPI.SYNC_NULL]
        comm.Sendrecv([mine[:1], MPI.HANDLE_SYNC], left, 7, [swapped, MPI.HANDLE_SYNC], right, 7)
        assert swapped[0] == got[0] if left == right else swapped[0].owner == right
        # every received handle works: counter 0 of each rank hears from its right
        # and its left neighbour, counter 1 from its left one
        signal(win, left, got[0])
        signal(win, right, got[2])
        signal(win, right, swapped[0])
        nothing_left_behind(comm)
        return wait_then_free(win, mine, [2, 1])
    assert shmrma.launch(body, 3, timeout=30) == ["ok"] * 3


@pytest.mark.timeout(60)
def test_non_reducing_collectives_carry_handles():
    """R154: Bcast, Gather, Allgather (also IN_PLACE) and Alltoall carry handles."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        win = MPI.Win.Allocate(8, comm=comm)
        mine = win.Alloc_sync_objects(1)
        everyone = [MPI.SYNC_NULL] * size
        comm.Allgather([mine, MPI.HANDLE_SYNC], [everyone, MPI.HANDLE_SYNC])
        assert [sync.owner for sync in everyone] == list(range(size))
        in_place = [MPI.SYNC_NULL] * size
        in_place[rank] = mine[0]
        comm.Allgather(MPI.IN_PLACE, [in_place, MPI.HANDLE_SYNC])
        assert in_place == everyone
        gathered = [MPI.SYNC_NULL] * size
        comm.Gather([mine, MPI.HANDLE_SYNC], [gathered, MPI.HANDLE_SYNC], root=1)
        assert gathered == (everyone if rank == 1 else [MPI.SYNC_NULL] * size)
        root_handle = list(mine) if rank == 0 else [MPI.SYNC_NULL]
        comm.Bcast([root_handle, MPI.HANDLE_SYNC], root=0)
        assert root_handle == everyone[:1]
        exchanged = [MPI.SYNC_NULL] * size
        comm.Alltoall([[mine[0]] * size, MPI.HANDLE_SYNC], [exchanged, MPI.HANDLE_SYNC])
        assert exchanged == everyone
        # each rank signals everyone through the handles it was given
        for owner, sync in enumerate(everyone):
            signal(win, owner, sync)
        return wait_then_free(win, mine, [size])
    assert shmrma.launch(body, 3, timeout=30) == ["ok"] * 3


@pytest.mark.timeout(60)
def test_handle_sync_is_refused_outside_messages():
    """R154: HANDLE_SYNC in a reduction, a derived datatype or an RMA call is
    ERR_TYPE, and neither the buffers nor the window change."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(256, comm=comm)
        mine = win.Alloc_sync_objects(1)
        memory = np.frombuffer(win.tomemory(), dtype="u1")
        memory[:] = 7
        out = [MPI.SYNC_NULL]
        for reduction in (lambda: comm.Allreduce([mine, MPI.HANDLE_SYNC], [out, MPI.HANDLE_SYNC]),
                          lambda: comm.Reduce([mine, MPI.HANDLE_SYNC], [out, MPI.HANDLE_SYNC])):
            with raises_mpi(MPI.ERR_TYPE, match="HANDLE_SYNC"):
                reduction()
        assert out == [MPI.SYNC_NULL]
        for build in (lambda: MPI.HANDLE_SYNC.Create_contiguous(2),
                      lambda: MPI.HANDLE_SYNC.Create_vector(2, 1, 2),
                      lambda: MPI.HANDLE_SYNC.Create_resized(0, 256),
                      lambda: MPI.Datatype.Create_struct([1], [0], [MPI.HANDLE_SYNC])):
            with raises_mpi(MPI.ERR_TYPE, match="HANDLE_SYNC"):
                build()
        raw = bytearray(128)
        win.Lock_all()
        for call in (lambda: win.Put([raw, MPI.HANDLE_SYNC], 0),
                     lambda: win.Put([raw, MPI.BYTE], 0, [0, 1, MPI.HANDLE_SYNC]),
                     lambda: win.Get([raw, MPI.HANDLE_SYNC], 0),
                     lambda: win.Accumulate([raw, MPI.HANDLE_SYNC], 0, op=MPI.REPLACE),
                     lambda: win.Put([mine, MPI.HANDLE_SYNC], 0)):
            with raises_mpi(MPI.ERR_TYPE, match="HANDLE_SYNC"):
                call()
        win.Unlock_all()
        assert raw == bytearray(128) and (memory == 7).all()
        comm.Barrier()
        win.Free_sync_objects(mine)
        win.Free()
        return "ok"
    assert shmrma.launch(body, 2, timeout=30) == ["ok"] * 2


def test_bad_handle_lists_and_foreign_data():
    """What a user gets wrong with HANDLE_SYNC buffers, on one rank (mpi4py's
    TypeError/ValueError for malformed buffers; ERR_TYPE for data that was not
    sent as handles, at the receive, with the list untouched)."""
    comm = MPI.COMM_SELF
    win = MPI.Win.Allocate(8, comm=comm)
    mine = win.Alloc_sync_objects(1)
    with pytest.raises(TypeError, match="MPI.Sync"):
        comm.Isend([[mine[0], 3], MPI.HANDLE_SYNC], 0)
    with pytest.raises(TypeError, match="list"):
        comm.Irecv([bytearray(128), MPI.HANDLE_SYNC], 0)
    with pytest.raises(TypeError, match="list"):
        comm.Irecv([(MPI.SYNC_NULL,), MPI.HANDLE_SYNC], 0)
    with pytest.raises(ValueError, match="do not fit"):
        comm.Isend([mine, 2, MPI.HANDLE_SYNC], 0)
    comm.Send([bytearray(128), MPI.BYTE], 0)
    out = [MPI.SYNC_NULL]
    with raises_mpi(MPI.ERR_TYPE, match="not sent as HANDLE_SYNC"):
        comm.Recv([out, MPI.HANDLE_SYNC], 0)
    assert out == [MPI.SYNC_NULL]
    # a pickled round trip and a typed one give the same handle
    comm.Send([mine, MPI.HANDLE_SYNC], 0)
    comm.Recv([out, MPI.HANDLE_SYNC], 0)
    assert out == mine and comm.sendrecv(mine[0], 0) == mine[0]
    assert repr(MPI.HANDLE_SYNC) == "MPI.HANDLE_SYNC"
    assert MPI.HANDLE_SYNC.Get_name() == "MPI_HANDLE_SYNC"
    win.Free_sync_objects(mine)
    win.Free()


def error_and_message(fn, *args):
    """(MPI error class or exception name, message) of ``fn(*args)``; (None, '') if it works."""
    try:
        fn(*args)
    except MPI.Exception as exc:
        return exc.Get_error_class(), str(exc)
    except Exception as exc:  # noqa: BLE001 - reported by name, compared by the test
        return type(exc).__name__, str(exc)
    return None, ""


def forged_handles(rank, mine, theirs):
    """{case: (handle, word its error message must contain)}: received handles with one
    field garbled, or stitched together from two real ones."""
    def like(handle, **fields):
        names = ("window", "owner", "segment", "slot", "generation")
        return MPI.Sync(*[fields.get(name, getattr(handle, name)) for name in names])
    last = theirs.segment[-1]
    return {
        "slot 64": (like(theirs, slot=64), "slot 64"),
        "slot -1": (like(theirs, slot=-1), "slot -1"),
        "slot far": (like(theirs, slot=10 ** 6), "slot 1000000"),
        "slot str": (like(theirs, slot="0"), "garbled"),
        "never allocated": (like(theirs, slot=5, generation=0), "no allocated counter"),
        "claims theirs": (like(mine, owner=1 - rank), "allocated by rank %d" % rank),
        "claims mine": (like(theirs, owner=rank), "allocated by rank %d" % (1 - rank)),
        "no such segment": (like(theirs, segment=theirs.segment[:-1] + ("1" if last == "0"
                                                                        else "0")), "segment"),
        "not this job's": (like(theirs, segment="/etc"), "segment"),
    }


@pytest.mark.timeout(60)
def test_forged_or_garbled_handles_are_err_arg_and_change_nothing():
    """A25, A18, R153: a handle whose fields do not name a live counter of its owner is
    ERR_ARG with a message saying what is wrong, in Sync_ops_init, Sync_object_init and
    Free_sync_objects, never a crash or another class: a slot outside the counter
    segment (64, -1, 10**6) or not an int, a slot never allocated (generation 0), an
    owner other than the rank that allocated the counter (which would wait on, signal
    or free another rank's counter), a segment the job does not have. Nothing changes:
    no counter moves, none is freed, and both counters work afterwards."""
    def body():
        comm = MPI.COMM_WORLD
        rank, other = comm.Get_rank(), 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, comm=comm)
        mine = win.Alloc_sync_objects(1)[0]
        theirs = comm.sendrecv(mine, dest=other, source=other)
        counters = win._state.counters
        before = (len(counters.free_slots), counters.allocated)
        wrong = {}
        for case, (handle, word) in forged_handles(rank, mine, theirs).items():
            target = handle.owner if handle.owner in (0, 1) else other
            kept = [handle]
            for call in (lambda: win.Sync_ops_init(target, 0, handle),
                         lambda: win.Sync_object_init(handle, 1),
                         lambda: win.Free_sync_objects(kept)):
                error, message = error_and_message(call)
                if error != MPI.ERR_ARG or word not in message or kept != [handle]:
                    wrong[case] = (error, message)
        out = {"wrong": wrong, "unchanged": (len(counters.free_slots), counters.allocated)
               == before, "counter": atomic.load32(counters.address(mine, "test"))}
        comm.Barrier()                          # both read their counter untouched
        signal(win, other, theirs)              # and both counters still work
        return out, wait_then_free(win, [mine], [1])
    for out, end in shmrma.launch(body, 2, timeout=30):
        assert out["wrong"] == {} and end == "ok"
        assert out["unchanged"] and out["counter"] == 0
