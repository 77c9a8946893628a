"""MPI-3.1 Examples 11.6 and 11.8: the owner's store inside its own Lock/Unlock is
seen by a remote Get after a Barrier; a remote Put is seen by the owner's load inside
its own Lock/Unlock after a Barrier (R96, R99, R120, R121).
    shmrma-run -n 2 scripts/examples/ex11_06_owner_store_then_get.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
win = MPI.Win.Allocate(16, disp_unit=8, comm=comm)
X = np.frombuffer(win.tomemory(), dtype="i8")
X[:] = 0
comm.Barrier()
# Example 11.6: rank 0 stores X[0] under its own lock; rank 1 gets it after the Barrier
if rank == 0:
    win.Lock(0, MPI.LOCK_EXCLUSIVE)
    X[0] = 7
    win.Unlock(0)
comm.Barrier()
if rank == 1:
    seen = np.zeros(1, dtype="i8")
    win.Lock(0, MPI.LOCK_SHARED)
    win.Get(seen, 0, 0)
    win.Unlock(0)
    assert seen[0] == 7, seen
# Example 11.8: rank 1 puts into rank 0's X[1]; rank 0 loads it inside its own lock
if rank == 1:
    win.Lock(0, MPI.LOCK_EXCLUSIVE)
    win.Put(np.array([9], dtype="i8"), 0, 1)
    win.Unlock(0)
comm.Barrier()
if rank == 0:
    win.Lock(0, MPI.LOCK_EXCLUSIVE)
    assert X[1] == 9, X
    win.Unlock(0)
del X
win.Free()
print("rank %d: Examples 11.6 and 11.8 ok" % rank)
