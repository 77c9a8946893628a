"""MPI-3.1 Example 11.5: Lock(EXCLUSIVE)-Put-Unlock; Unlock returns after remote
completion, so a third party that reads after a Barrier sees the data (R96, R100, R101).
    shmrma-run -n 3 scripts/examples/ex11_05_lock_put_unlock.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
target, reader = 1 % size, 2 % size
win = MPI.Win.Allocate(8, disp_unit=8, comm=comm)
np.frombuffer(win.tomemory(), dtype="i8")[:] = 0
comm.Barrier()
if rank == 0:
    win.Lock(target, MPI.LOCK_EXCLUSIVE)
    win.Put(np.array([42], dtype="i8"), target, 0)
    win.Unlock(target)
comm.Barrier()
if rank == reader:
    seen = np.zeros(1, dtype="i8")
    win.Lock(target, MPI.LOCK_SHARED)
    win.Get(seen, target, 0)
    win.Unlock(target)
    assert seen[0] == 42, seen
win.Free()
print("rank %d: Example 11.5 ok" % rank)
