"""MPI-3.1 Example 11.3: B(j) = sum of A(i) over map(i) = j with Accumulate(SUM).

Run twice: with a permutation (the inverse assignment) and with a many-to-one map
so that accumulates from every rank hit the same elements at once (R43, R135).
    shmrma-run -n 4 scripts/examples/ex11_03_accumulate_scatter.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
m = 8
n = m * size


def scatter_sum(mapping_of):
    B = np.zeros(m, dtype="f8")
    win = MPI.Win.Create(B, disp_unit=B.itemsize, comm=comm)
    A = np.arange(m, dtype="f8") + m * rank          # A holds global indices as values
    win.Fence()
    for i in range(m):
        j = mapping_of(m * rank + i)
        win.Accumulate(A[i:i + 1], j // m, j % m, op=MPI.SUM)
    win.Fence()
    win.Free()
    return B


permutation = np.random.default_rng(7).permutation(n)
B = scatter_sum(lambda g: int(permutation[g]))
mine = np.arange(m * rank, m * rank + m)
inverse = np.argsort(permutation)
assert np.array_equal(B, inverse[mine].astype("f8")), (rank, B)

B = scatter_sum(lambda g: g % 3)                     # everything lands on rank 0, 3 cells
if rank == 0:
    expected = [sum(g for g in range(n) if g % 3 == j) for j in range(3)]
    assert B[:3].tolist() == expected and not B[3:].any(), B
print("rank %d: Example 11.3 ok" % rank)
