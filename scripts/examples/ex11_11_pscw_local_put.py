"""MPI-3.1 Example 11.11, the corrected version: process A (rank 0) stores Y before
its Post, so Y is in the public copy from the Post on (R120); the store of X inside
the epoch is replaced, as the text prescribes, by a local Put of X through A's own
Start(A) epoch, so after A's Complete and Wait X is in the public copy, and also in
A's private copy (R118, R121). After the Barrier, B (rank 1) switches to a lock epoch
(R133) and its Lock(EXCLUSIVE, A)-Get(X)-Get(Y)-Unlock must return both new values.
Filled in: the values, the window (two int64 words, X and Y, on every rank), and the
variant the text mentions, B's Get(Y) moved into its Start(A) epoch (it must also
see Y). The unsafe original (a plain store of X between Start and Complete) is not
run: its outcome is undefined in the separate model.
    shmrma-run -n 2 scripts/examples/ex11_11_pscw_local_put.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
A, B = 0, 1
win = MPI.Win.Allocate(16, disp_unit=8, comm=comm)
mine = np.frombuffer(win.tomemory(), dtype="i8")      # mine[0] is X, mine[1] is Y
mine[:] = 0
comm.Barrier()
world = comm.Get_group()
group_a = world.Incl([A])
group_ab = world.Incl([A, B])
early_y = np.zeros(1, dtype="i8")
if rank == A:
    mine[1] = 22                      # store Y: visible in the public copy after the Post
    win.Post(group_ab)
    win.Start(group_a)
    win.Put(np.array([11], dtype="i8"), A, 0)   # a local Put of X instead of "store X"
    win.Complete()
    win.Wait()
    assert mine[0] == 11 and mine[1] == 22, mine    # X is in the private copy after Wait
elif rank == B:
    win.Start(group_a)
    win.Get(early_y, A, 1)            # the variant: Get(Y) inside the Start(A) epoch
    win.Complete()
    assert early_y[0] == 22, early_y
comm.Barrier()
if rank == B:
    x, y = np.zeros(1, dtype="i8"), np.zeros(1, dtype="i8")
    win.Lock(A, MPI.LOCK_EXCLUSIVE)
    win.Get(x, A, 0)
    win.Get(y, A, 1)
    win.Unlock(A)
    assert x[0] == 11 and y[0] == 22, (x, y)
group_ab.Free()
group_a.Free()
world.Free()
del mine
win.Free()
print("rank %d: Example 11.11 ok" % rank)
