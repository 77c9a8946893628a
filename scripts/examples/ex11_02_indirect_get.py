"""MPI-3.1 Example 11.2: A = B(map) with one Get per element, no derived types (R3, R75).
    shmrma-run -n 4 scripts/examples/ex11_02_indirect_get.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
m = 8
B = np.arange(m, dtype="f8") + 100 * rank
win = MPI.Win.Create(B, disp_unit=B.itemsize, comm=comm)
mapping = np.random.default_rng(rank).integers(0, m * size, size=m)
A = np.zeros(m, dtype="f8")
win.Fence()
for i, g in enumerate(mapping):
    win.Get(A[i:i + 1], int(g // m), int(g % m))
win.Fence()
assert np.array_equal(A, 100 * (mapping // m) + mapping % m), (rank, A)
win.Free()
print("rank %d: Example 11.2 ok" % rank)
