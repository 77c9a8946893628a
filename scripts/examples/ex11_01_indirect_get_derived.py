"""MPI-3.1 Example 11.1: A = B(map) with one Get per peer through indexed-block types.

Each rank owns m elements of a distributed array B (global index g lives on rank
g // m at offset g % m). Rank r needs A[i] = B[map[i]]; it groups the indices by
owner and gathers each group with one Get whose origin and target datatypes are
indexed-block types (rules R3, R39, R60, R75; 0-based indices, A42).
    shmrma-run -n 4 scripts/examples/ex11_01_indirect_get_derived.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
m = 8
B = np.arange(m, dtype="f4") + 100 * rank          # global index g holds 100*(g//m) + g%m
extent = MPI.FLOAT.Get_extent()[1]
win = MPI.Win.Create(B, disp_unit=extent, comm=comm)

rng = np.random.default_rng(rank)
mapping = rng.integers(0, m * size, size=m)          # A[i] = B[mapping[i]]
A = np.zeros(m, dtype="f4")
owners = mapping // m
win.Fence()
for owner in range(size):
    mine = np.flatnonzero(owners == owner)
    if not len(mine):
        continue
    origin_type = MPI.FLOAT.Create_indexed_block(1, mine.tolist()).Commit()
    target_type = MPI.FLOAT.Create_indexed_block(1, (mapping[mine] % m).tolist()).Commit()
    win.Get([A, 1, origin_type], owner, [0, 1, target_type])
    origin_type.Free()                               # R60: may go right after the call
    target_type.Free()
win.Fence()
expected = (100 * (mapping // m) + mapping % m).astype("f4")
assert np.array_equal(A, expected), (rank, A, expected)
win.Free()
print("rank %d: Example 11.1 ok" % rank)
