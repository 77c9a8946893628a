"""``win.Change_comm(new_comm, peer_rank)`` of the 2008 proposal (its §1.2.6;
R164, A27): processes join with a zero-size segment and
reach every existing one, members leave, and every misuse raises the same error
on every process with the window unchanged.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI

from mpitest import raises_mpi


def first_two():
    """A communicator of world ranks 0 and 1; COMM_NULL elsewhere."""
    world = MPI.COMM_WORLD
    return world.Split(0 if world.Get_rank() < 2 else MPI.UNDEFINED, 0)


def make_window(flavor, comm, fill):
    """A window of 4 int64 per rank of ``comm`` holding ``fill``; (win, local array, keep)."""
    if flavor == "dynamic":
        win = MPI.Win.Create_dynamic(comm=comm)
        mem = MPI.Alloc_mem(32)
        win.Attach(mem)
        local = np.frombuffer(mem, dtype="i8")
        local[:] = fill
        bases = comm.allgather(MPI.Get_address(mem))
        return win, local, (mem, bases)
    if flavor in ("create_private", "create_alloc_mem"):
        memory = np.zeros(4, "i8") if flavor == "create_private" else MPI.Alloc_mem(32)
        win = MPI.Win.Create(memory, disp_unit=8, comm=comm)
        local = np.frombuffer(memory, dtype="i8")
    else:
        make = MPI.Win.Allocate if flavor == "allocate" else MPI.Win.Allocate_shared
        win = make(32, disp_unit=8, comm=comm)
        local = np.frombuffer(win.tomemory(), dtype="i8")
    local[:] = fill
    return win, local, (memory if flavor.startswith("create") else None, None)


def target_of(keep, rank, disp=0):
    mem, bases = keep
    return [bases[rank] + 8 * disp, 1, MPI.INT64_T] if bases else [disp, 1, MPI.INT64_T]


FLAVORS = ["allocate", "shared", "create_private", "create_alloc_mem", "dynamic"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_a_process_joins_and_reaches_every_segment(flavor):
    """R164: world rank 2 joins a window of ranks 0 and 1 by calling Change_comm on
    WIN_NULL; afterwards the window's group is COMM_WORLD's, the joiner's memory
    is empty, everyone reaches the old members' memory, and the old members'
    views of their own memory still see it."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.Get_rank()
        old_comm = first_two()
        keep = (None, None)
        if old_comm:
            win, local, keep = make_window(flavor, old_comm, 10 * (rank + 1))
        else:
            win, local = MPI.WIN_NULL, None
        win = win.Change_comm(world, 1)
        # a dynamic window's addresses travel like any value; the joiner learns them
        if flavor == "dynamic":
            bases = world.bcast(keep[1], root=0)
            keep = (keep[0], bases)
        assert win.Get_group().Compare(world.Get_group()) == MPI.IDENT
        assert win.group_size == 3 and win.group_rank == rank
        if rank == 2 and flavor != "dynamic":
            assert win.Get_attr(MPI.WIN_SIZE) == 0
        seen = np.zeros(2, "i8")
        win.Lock_all()
        for target in (0, 1):
            win.Get([seen[target:target + 1], MPI.INT64_T], target, target_of(keep, target))
        win.Flush_all()
        win.Unlock_all()
        world.Barrier()
        # the joiner writes into rank 0's memory; rank 0 sees it through its old view
        if rank == 2:
            win.Lock(0)
            win.Put([np.array([77], "i8"), MPI.INT64_T], 0, target_of(keep, 0, 3))
            win.Unlock(0)
        win.Fence()
        win.Fence()
        if flavor == "shared" and rank == 2:
            view, unit = win.Shared_query(1)
            assert unit == 8 and np.frombuffer(view, "i8")[0] == 20
        out = (seen.tolist(), local[3] if rank == 0 else None)
        world.Barrier()
        win.Free()
        mem = keep[0]
        if mem is not None and not isinstance(mem, np.ndarray):
            MPI.Free_mem(mem)
        return out
    results = shmrma.launch(body, 3, timeout=30)
    assert [seen for seen, _ in results] == [[10, 20]] * 3
    assert results[0][1] == 77


@pytest.mark.timeout(60)
def test_members_leave_and_the_others_are_renumbered():
    """R164: world rank 0 passes COMM_NULL, leaves and gets WIN_NULL; ranks 1 and 2
    become window ranks 0 and 1 and keep their memory."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.Get_rank()
        win = MPI.Win.Allocate(8, disp_unit=8, comm=world)
        local = np.frombuffer(win.tomemory(), "i8")
        local[0] = 100 + rank
        new_comm = world.Split(MPI.UNDEFINED if rank == 0 else 0, 0)
        win = win.Change_comm(new_comm, 0)
        if rank == 0:
            assert win == MPI.WIN_NULL and not win
            return None
        got = np.zeros(1, "i8")
        win.Lock(0, MPI.LOCK_SHARED)
        win.Get(got, 0)     # window rank 0 is world rank 1 now
        win.Unlock(0)
        out = (win.group_rank, win.group_size, int(got[0]))
        win.Fence()
        win.Free()
        return out
    assert shmrma.launch(body, 3, timeout=30) == [None, (0, 2, 101), (1, 2, 101)]


@pytest.mark.timeout(60)
def test_misuse_raises_everywhere_and_changes_nothing():
    """A27: an open epoch, live counters or requests (ERR_RMA_SYNC), a peer_rank outside
    the window (ERR_RANK), members reordered (ERR_COMM), different peer_rank values
    (ERR_ARG): every process raises the same class, the window is unchanged, and a
    correct call then works."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.Get_rank()
        old_comm = first_two()
        win = MPI.Win.Allocate(8, comm=old_comm) if old_comm else MPI.WIN_NULL
        reversed_world = world.Split(0, -rank)
        classes = []

        def attempt(comm, peer, before=None, after=None):
            if before and win:
                before()
            try:
                win.Change_comm(comm, peer)
            except MPI.Exception as exc:
                classes.append(exc.Get_error_class())
            if after and win:
                after()
        attempt(world, 0, win.Lock_all if win else None, win.Unlock_all if win else None)
        counters = []
        attempt(world, 0, lambda: counters.extend(win.Alloc_sync_objects(1)),
                lambda: win.Free_sync_objects(counters))
        requests = []

        def request_without_counter():
            sync = win.Alloc_sync_objects(1)
            requests.append(win.Sync_object_init(sync[0], 1))
            win.Free_sync_objects(sync)
        attempt(world, 0, request_without_counter, lambda: requests.pop().Free())
        attempt(world, 2)                       # the joiner is not a member yet
        attempt(reversed_world, 2)              # world ranks 0, 1 would swap
        attempt(world, rank % 2)                # ranks disagree
        unchanged = bool(win) and win.group_size == 2
        win = win.Change_comm(world, 0)
        out = classes, unchanged, win.group_size
        win.Free()
        return out
    results = shmrma.launch(body, 3, timeout=30)
    expected = [MPI.ERR_RMA_SYNC] * 3 + [MPI.ERR_RANK, MPI.ERR_COMM, MPI.ERR_ARG]
    assert results == [(expected, True, 3), (expected, True, 3), (expected, False, 3)]


def test_local_argument_errors():
    """What one process gets wrong alone raises at once (no collective to join)."""
    with raises_mpi(MPI.ERR_COMM, match="COMM_NULL"):
        MPI.WIN_NULL.Change_comm(MPI.COMM_NULL, 0)
    win = MPI.Win.Allocate(8)
    with pytest.raises(TypeError, match="Intracomm"):
        win.Change_comm("world", 0)
    with raises_mpi(MPI.ERR_RANK, match="peer_rank"):
        win.Change_comm(MPI.COMM_SELF, 1)
    assert win.Change_comm(MPI.COMM_SELF, 0) is win and win.group_size == 1
    win.Free()


@pytest.mark.timeout(60)
def test_the_changed_window_is_a_whole_window():
    """R164: after a join, counters, the window barrier and PSCW work across old and
    new ranks, and a second Change_comm shrinks the window back (the joiner leaves)."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.Get_rank()
        old_comm = first_two()
        win = MPI.Win.Allocate(8, disp_unit=8, comm=old_comm) if old_comm else MPI.WIN_NULL
        win = win.Change_comm(world, 0)
        # the joiner signals rank 1's counter after a Put into rank 1's memory
        if rank == 1:
            counter = win.Alloc_sync_objects(1)
            world.Send([counter, MPI.HANDLE_SYNC], 2)
            waiting = win.Sync_object_init(counter[0], 1)
            waiting.Start()
            waiting.Wait()
            waiting.Free()
            value = int(np.frombuffer(win.tomemory(), "i8")[0])
            win.Free_sync_objects(counter)
        elif rank == 2:
            handle = [MPI.SYNC_NULL]
            world.Recv([handle, MPI.HANDLE_SYNC], 1)
            signal = win.Sync_ops_init(1, MPI.MODE_WIN_PUT, handle[0])
            signal.Start()
            win.Put(np.array([42], "i8"), 1)
            signal.Wait()
            signal.Free()
            value = None
        else:
            value = None
        win.Barrier()
        # PSCW from the joiner to rank 0
        if rank == 0:
            win.Post(world.Get_group().Incl([2]))
            win.Wait()
            value = int(np.frombuffer(win.tomemory(), "i8")[0])
        elif rank == 2:
            win.Start(world.Get_group().Incl([0]))
            win.Put(np.array([7], "i8"), 0)
            win.Complete()
        win = win.Change_comm(first_two(), 0)
        size = win.group_size if win else None
        if win:
            win.Free()
        return value, size
    assert shmrma.launch(body, 3, timeout=30) == [(7, 2), (42, 2), (None, None)]
