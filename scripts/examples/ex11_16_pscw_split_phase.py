"""MPI-3.1 Example 11.16: the split-phase halo exchange of Example 11.14 rewritten
with post-start-complete-wait on a ring (R81-R89, R115).
Each rank Posts with MODE_NOPUT to `togroup` (the ranks that Get from it: Gets
reverse the direction, so the group names are swapped relative to 11.15), Starts on
`fromgroup` (the ranks it Gets from), Gets the neighbours' boundary cells into its
halos, updates its core while the Gets are in flight, then Completes and Waits.
After the epoch the halos must hold this round's neighbour boundaries and the core
its own update.
Filled in as in the 11.14 port: A = [left halo, boundary, 2 core cells, boundary,
right halo] created over a numpy array; update_boundary sets the boundary cells to
100*rank + step, update_core adds 1000*step to the core (which neither uses nor
provides communicated data), converged() is six steps. Added: on odd steps the
exposure epoch is ended by polling Test instead of Wait (R89).
    shmrma-run -n 4 scripts/examples/ex11_16_pscw_split_phase.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
left, right = (rank - 1) % size, (rank + 1) % size
n = 6                                  # [halo, boundary, core, core, boundary, halo]
A = np.zeros(n, dtype="f8")
A[2:4] = rank
win = MPI.Win.Create(A, disp_unit=A.itemsize, comm=comm)
world = comm.Get_group()
fromneighbor = [left, right]
tobuf = [A[0:1], A[-1:]]               # my halos, the origin buffers of my Gets
fromdisp = [n - 2, 1]                  # left's last boundary cell, right's first one
fromgroup = world.Incl(sorted(set(fromneighbor)))
togroup = world.Incl(sorted({left, right}))     # the ranks that Get from me

core = A[2:4].copy()
for step in range(6):
    A[1] = A[-2] = 100 * rank + step   # update_boundary(A)
    win.Post(togroup, MPI.MODE_NOPUT)
    win.Start(fromgroup, 0)
    for i in range(len(fromneighbor)):
        win.Get(tobuf[i], fromneighbor[i], fromdisp[i])
    A[2:4] += 1000 * step              # update_core(A), concurrent with the Gets
    core += 1000 * step
    win.Complete()
    if step % 2 == 0:
        win.Wait()
    else:
        while not win.Test():
            pass
    assert A[0] == 100 * left + step and A[-1] == 100 * right + step, (rank, step, A)
    assert (A[2:4] == core).all() and A[1] == A[-2] == 100 * rank + step, (rank, step, A)
togroup.Free()
fromgroup.Free()
world.Free()
win.Free()
print("rank %d: Example 11.16 ok" % rank)
