"""MPI-3.1 Examples 11.7, 11.9 and 11.10, the safe variants: in the unified model a
local store is published with Sync before the Barrier, and a Put + Flush is seen by
the target's load after Barrier + Sync (R62, R111, R120, R124, R131, R134).
    shmrma-run -n 2 scripts/examples/ex11_07_unified_visibility.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
win = MPI.Win.Allocate(16, disp_unit=8, comm=comm)
X = np.frombuffer(win.tomemory(), dtype="i8")
X[:] = 0
comm.Barrier()
win.Lock_all()
# 11.7 (safe): rank 0 stores, Sync, Barrier; rank 1 gets and flushes
if rank == 0:
    X[0] = 5
    win.Sync()
comm.Barrier()
if rank == 1:
    seen = np.zeros(1, dtype="i8")
    win.Get(seen, 0, 0)
    win.Flush_local(0)
    assert seen[0] == 5, seen
# 11.9 (safe): rank 1 puts + flushes, Barrier, rank 0 syncs and loads
if rank == 1:
    win.Put(np.array([6], dtype="i8"), 0, 1)
    win.Flush(0)
comm.Barrier()
if rank == 0:
    win.Sync()
    assert X[1] == 6, X
win.Unlock_all()
comm.Barrier()
# 11.10 (fixed): a store, Sync before the Barrier, then a shared-lock Get sees it
if rank == 0:
    win.Lock(0, MPI.LOCK_SHARED)
    X[0] = 8
    win.Sync()
    win.Unlock(0)
comm.Barrier()
if rank == 1:
    seen = np.zeros(1, dtype="i8")
    win.Lock(0, MPI.LOCK_SHARED)
    win.Get(seen, 0, 0)
    win.Unlock(0)
    assert seen[0] == 8, seen
del X
win.Free()
print("rank %d: Examples 11.7, 11.9 and 11.10 ok" % rank)
