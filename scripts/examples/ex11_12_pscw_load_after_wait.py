"""MPI-3.1 Example 11.12, the corrected orders: process A (rank 0) does
Lock(EXCLUSIVE, B)-Put(X)-Unlock(B), which completes the Put at B (R96); after the
Barrier, B (rank 1) opens Post(B) + Start(B) on its own window. The text's two fixes
are both run: a local Get of X inside B's Start(B) epoch, and the load of X moved
after Wait, where rule 6 guarantees the private copy holds the Put (R121).
Filled in: the values, a one-int64 window on every rank, and a second round in which
B checks a new Put the same way. The unsafe original (a load between Start and
Complete) is not run: in the separate model it may return an obsolete value.
    shmrma-run -n 2 scripts/examples/ex11_12_pscw_load_after_wait.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
A, B = 0, 1
win = MPI.Win.Allocate(8, disp_unit=8, comm=comm)
X = np.frombuffer(win.tomemory(), dtype="i8")
X[:] = 0
comm.Barrier()
world = comm.Get_group()
group_b = world.Incl([B])
for value in (31, 32):
    if rank == A:
        win.Lock(B, MPI.LOCK_EXCLUSIVE)
        win.Put(np.array([value], dtype="i8"), B, 0)   # update to B's public copy
        win.Unlock(B)
    comm.Barrier()
    if rank == B:
        win.Post(group_b)
        win.Start(group_b)
        seen = np.zeros(1, dtype="i8")
        win.Get(seen, B, 0)           # fix 1: a local Get instead of the load
        win.Complete()
        win.Wait()
        assert seen[0] == value, (value, seen)
        assert X[0] == value, (value, X)    # fix 2: the load after Wait
    comm.Barrier()
group_b.Free()
world.Free()
del X
win.Free()
print("rank %d: Example 11.12 ok" % rank)
