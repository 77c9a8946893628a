"""The window barrier of the amendment: win.Ibarrier / win.Barrier, a nonblocking
fence over the window's group (shmrma/rma/winbarrier.py; A1-A3, R166-R172)."""
import os
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.rma import fastpath

from mpitest import HANG_S, raises_mpi


def local(win):
    return np.frombuffer(win.tomemory(), dtype="i8")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fast", [True, False])
def test_ibarrier_returns_at_once_and_completes_when_all_entered(fast):
    """R166, R167, R168, R169, A3: Ibarrier returns at once: rank 1 enters only once
    rank 0's Ibarrier returned and said so (an Ibarrier that waited would never
    return), then 0.3 s late; a Put issued right after it waits for its target's
    entry, so the target's store made before entering is overwritten, never the Put;
    the next barrier completes that Put at its target. Both the C fast path and the
    Python path of the Put."""
    def body():
        fastpath.enable(fast)
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        mine = local(win)
        mine[:] = 0
        win.Barrier()
        out = {}
        if rank == 0:
            request = win.Ibarrier()
            comm.send("entered", dest=1)
        else:
            comm.recv(source=0)
            time.sleep(0.3)
            mine[0] = 1                  # before entering: the Put must land after this
            out["entering"] = time.monotonic()
            request = win.Ibarrier()
        win.Put(np.array([2], "i8"), 1 - rank)
        out["put_returned"] = time.monotonic()
        request.Wait()
        out["waited"] = time.monotonic()
        win.Barrier(MPI.MODE_NOSUCCEED)    # completes the Puts issued after Ibarrier
        out["seen"] = int(mine[0])
        win.Free()
        return out
    early, late = shmrma.launch(body, 2, timeout=50)
    # the one clock of the machine orders the two ranks' events
    assert early["put_returned"] >= late["entering"]    # waited for rank 1 to enter (A3)
    assert early["waited"] >= late["entering"]
    assert early["seen"] == 2 and late["seen"] == 2


@pytest.mark.timeout(60)
def test_barrier_and_ibarrier_mix_and_requests_mix():
    """R170, R168: rank 0 uses Barrier, rank 1 Ibarrier + Waitall together with a
    receive, rank 2 Ibarrier + a Test loop; 50 rounds of a ring of Puts stay exact."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        win = MPI.Win.Allocate(8 * size, 8, comm=comm)
        mine = local(win)
        mine[:] = -1
        right, left = (rank + 1) % size, (rank - 1) % size
        win.Barrier()
        wrong = []
        for k in range(50):
            win.Put(np.array([100 * k + rank], "i8"), right, rank)
            if rank == 0:
                win.Barrier()
            elif rank == 1:
                box = np.zeros(1, "i8")
                receive = comm.Irecv(box, source=0, tag=k)
                MPI.Request.Waitall([win.Ibarrier(), receive])
            else:
                request = win.Ibarrier()
                while not request.Test():
                    pass
            if rank == 0:
                comm.Send(np.array([k], "i8"), dest=1, tag=k)
            if mine[left] != 100 * k + left:
                wrong.append((k, int(mine[left])))
            win.Barrier()       # nobody writes round k+1 before all have read round k
        win.Barrier(MPI.MODE_NOSUCCEED)
        win.Free()
        return wrong
    assert shmrma.launch(body, 3, timeout=50) == [[], [], []]


@pytest.mark.timeout(60)
def test_window_barrier_errors():
    """R171: an Ibarrier request cannot be freed or cancelled (ERR_REQUEST); unknown
    assertion bits are ERR_ASSERT (A1); Ibarrier inside a Lock, Lock_all or Start
    epoch, and Ibarrier(MODE_NOPRECEDE) after RMA, are ERR_RMA_SYNC like Fence; Free
    with an uncompleted Ibarrier request is ERR_RMA_SYNC, and the window still works."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        seen = []

        def error_of(fn):
            try:
                fn()
            except MPI.Exception as exc:
                return exc.Get_error_class()
            return None
        seen.append(error_of(lambda: win.Ibarrier(1)))
        win.Lock(0)
        seen.append(error_of(win.Ibarrier))
        win.Unlock(0)
        win.Lock_all()
        seen.append(error_of(win.Barrier))
        win.Unlock_all()
        win.Start(MPI.GROUP_EMPTY)
        seen.append(error_of(win.Ibarrier))
        win.Complete()
        win.Barrier()
        win.Put(np.ones(1, "i8"), 1 - rank)
        seen.append(error_of(lambda: win.Ibarrier(MPI.MODE_NOPRECEDE)))
        request = win.Ibarrier()
        seen.append(error_of(request.Free))
        seen.append(error_of(request.Cancel))
        if rank == 0:
            seen.append(error_of(win.Free))
        request.Wait()
        win.Barrier(MPI.MODE_NOSUCCEED)
        win.Free()
        return seen
    sync = MPI.ERR_RMA_SYNC
    results = shmrma.launch(body, 2, timeout=50)
    assert results[0] == [MPI.ERR_ASSERT, sync, sync, sync, sync, MPI.ERR_REQUEST,
                          MPI.ERR_REQUEST, sync]
    assert results[1] == results[0][:-1]


@pytest.mark.timeout(180)
def test_waiting_for_a_barrier_a_dead_member_never_enters():
    """Issue 5: a rank waiting for the window barrier, or for its target's
    entry before a Put, notices a member that exited instead of entering."""
    def body(put):
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8, 8, comm=comm)
        win.Barrier()
        if comm.Get_rank() == 1:
            time.sleep(0.2)
            os._exit(0)
        request = win.Ibarrier()
        if put:
            win.Put(np.ones(1, "i8"), 1)
        request.Wait()
    for put in (False, True):
        with pytest.raises(shmrma.LaunchError, match="rank 1") as info:
            shmrma.launch(body, 2, args=(put,), timeout=HANG_S)
        assert info.value.rank == 0     # it noticed: the timeout would name no rank
