"""MPI-3.1 Example 11.22: overlapping communication and computation with request-based
Rget -> compute -> Rput and M buffers recycled through Waitany (R53-R58, R57).
`target` is each rank's right neighbour (the seed leaves it undefined, A42).
    shmrma-run -n 4 scripts/examples/ex11_22_overlap_requests.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
target = (rank + 1) % size
N, M = 16, 3                          # N blocks of 4 doubles, M buffers in flight
win = MPI.Win.Allocate(N * 4 * 8, disp_unit=8, comm=comm)
mine = np.frombuffer(win.tomemory(), dtype="f8")
mine[:] = np.arange(N * 4) + 1000 * rank
comm.Barrier()
buffers = [np.zeros(4, "f8") for _ in range(M)]
get_requests = [MPI.REQUEST_NULL] * M
put_requests = [MPI.REQUEST_NULL] * M
win.Lock_all()
for block in range(N):
    slot = block if block < M else MPI.Request.Waitany(put_requests)
    get_requests[slot] = win.Rget(buffers[slot], target, block * 4)
    get_requests[slot].Wait()
    buffers[slot] *= 2                 # compute on the fetched block
    put_requests[slot] = win.Rput(buffers[slot], target, block * 4)
MPI.Request.Waitall(put_requests)
win.Unlock_all()
comm.Barrier()
assert np.array_equal(mine, 2 * (np.arange(N * 4) + 1000 * rank)), mine
del mine
win.Free()
print("rank %d: Example 11.22 ok" % rank)
