"""MPI-3.1 Examples 11.13 and 11.14: a loosely synchronous halo exchange on a ring.

11.13: Fence(NOPRECEDE), Puts of my boundary into my neighbours' halos,
Fence(NOSTORE | NOSUCCEED) at the end of each phase. 11.14: split phase, Gets of
the neighbours' boundaries overlapping the core update, Fence(NOPUT | NOPRECEDE)
... Fence(NOSUCCEED). Halos are checked after every iteration (R74-R78, R115).
    shmrma-run -n 4 scripts/examples/ex11_13_fence_halo.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
left, right = (rank - 1) % size, (rank + 1) % size
n = 6                                  # [left halo, 4 interior cells, right halo]
A = np.zeros(n, dtype="f8")
win = MPI.Win.Create(A, disp_unit=A.itemsize, comm=comm)

for step in range(5):
    A[1:-1] = 10 * rank + step          # update the interior (no RMA epoch is open)
    win.Fence(MPI.MODE_NOPRECEDE)
    win.Put(A[1:2], left, n - 1)        # my first cell is my left neighbour's right halo
    win.Put(A[-2:-1], right, 0)         # my last cell is my right neighbour's left halo
    win.Fence(MPI.MODE_NOSTORE | MPI.MODE_NOSUCCEED)
    assert A[0] == 10 * left + step and A[-1] == 10 * right + step, (rank, step, A)

# Example 11.14: the split-phase version with Gets
for step in range(5):
    A[1:-1] = 100 * rank + step
    win.Fence(MPI.MODE_NOPUT | MPI.MODE_NOPRECEDE)
    win.Get(A[0:1], left, n - 2)
    win.Get(A[-1:], right, 1)
    core = A[2:-2].sum()               # the core computation overlaps the Gets
    win.Fence(MPI.MODE_NOSUCCEED)
    assert core == 2 * (100 * rank + step)
    assert A[0] == 100 * left + step and A[-1] == 100 * right + step, (rank, step, A)
win.Free()
print("rank %d: Examples 11.13 and 11.14 ok" % rank)
