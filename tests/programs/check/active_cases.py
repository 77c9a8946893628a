"""Race checker cases under PSCW, the window barrier and synchronization counters
(tests/test_check.py); marks as in fence_cases.py. Rank 0 is the target."""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A, B = 1, size - 1
win = MPI.Win.Allocate(64 * 8 if rank == 0 else 0, 8, comm=comm)
one = np.ones(1)
group = comm.Get_group()
origins = group.Excl([0])
target = group.Incl([0])

# PSCW: two epochs of rank 0 order A's Put before B's
if rank == 0:
    win.Post(origins)
    win.Wait()
    win.Post(origins)
    win.Wait()
else:
    win.Start(target)
    if rank == A:
        win.Put(one, 0, 0)
        win.Put(one, 0, 1)                              # race PS (3)
    if rank == B and B != A:
        win.Put(one, 0, 1)                              # race PS (3)
    win.Complete()
    win.Start(target)
    if rank == B:
        win.Get(np.zeros(1), 0, 0)
    win.Complete()

# the window barrier ends the RMA of everyone before it
win.Barrier()
if rank == A:
    win.Put(one, 0, 2)
win.Barrier()
if rank == B:
    win.Get(np.zeros(1), 0, 2)
win.Barrier()
if rank == A:
    win.Put(one, 0, 6)                                  # race WB
if rank == B:
    win.Put(one, 0, 6)                                  # race WB
win.Barrier()

# RMA between Ibarrier and its Wait comes after the target entered (R169)
if rank == 0:
    win.Put(one, 0, 7)
request = win.Ibarrier()
if rank == A:
    win.Put(one, 0, 7)
request.Wait()
win.Barrier()

# counters: A's signal orders its Put before rank 0's wait; rank 0 then reads
syncs = win.Alloc_sync_objects(1) if rank == 0 else None
handle = comm.bcast(syncs[0] if rank == 0 else None, root=0)
if rank == 0:
    waiting = win.Sync_object_init(handle, 1)
    waiting.Start()
comm.Barrier()
if rank == A:
    signal = win.Sync_ops_init(0, MPI.MODE_WIN_PUT, handle)
    signal.Start()
    win.Put(one, 0, 3)
    signal.Wait()
    signal.Free()
    win.Lock(0, MPI.LOCK_SHARED)
    win.Put(one, 0, 4)                                  # race CN
    win.Unlock(0)
if rank == 0:
    waiting.Wait()
    win.Lock(0, MPI.LOCK_SHARED)
    win.Get(np.zeros(1), 0, 3)
    win.Get(np.zeros(1), 0, 4)                          # race CN
    win.Unlock(0)
    waiting.Free()
    win.Free_sync_objects(syncs)
win.Free()
