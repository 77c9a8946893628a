"""MPI-3.1 Example 11.15: the halo exchange of Example 11.13 rewritten with
post-start-complete-wait on a ring (R81-R88; R69 and R91 across the rounds).
Each rank Posts to `fromgroup` (the ranks that Put into its halos), Starts on
`togroup` (the ranks whose halos it fills), Puts its first and last interior cells
into its neighbours' right and left halos, then Completes and Waits; after Wait both
halos must hold this round's values of the neighbours (R88), never an earlier
round's (one access epoch matches one exposure epoch, R69, R91).
Filled in as in the 11.13 port: the window is A = [left halo, 4 cells, right halo]
created over a numpy array, update(A) sets the interior to 10*rank + step,
converged() is five steps, and the groups come from the ring (deduplicated, so 1 or
2 ranks also work).
    shmrma-run -n 4 scripts/examples/ex11_15_pscw_halo.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
left, right = (rank - 1) % size, (rank + 1) % size
n = 6                                  # [left halo, 4 interior cells, right halo]
A = np.zeros(n, dtype="f8")
win = MPI.Win.Create(A, disp_unit=A.itemsize, comm=comm)
world = comm.Get_group()
toneighbor = [left, right]             # my first cell is left's right halo, and so on
frombuf = [A[1:2], A[-2:-1]]
todisp = [n - 1, 0]
togroup = world.Incl(sorted(set(toneighbor)))
fromgroup = world.Incl(sorted({left, right}))   # the ranks that Put into my halos

for step in range(5):
    A[1:-1] = 10 * rank + step          # update(A): no epoch is open on this window
    win.Post(fromgroup, 0)
    win.Start(togroup, 0)
    for i in range(len(toneighbor)):
        win.Put(frombuf[i], toneighbor[i], todisp[i])
    win.Complete()
    win.Wait()
    assert A[0] == 10 * left + step and A[-1] == 10 * right + step, (rank, step, A)
    assert (A[1:-1] == 10 * rank + step).all(), (rank, step, A)
togroup.Free()
fromgroup.Free()
world.Free()
win.Free()
print("rank %d: Example 11.15 ok" % rank)
