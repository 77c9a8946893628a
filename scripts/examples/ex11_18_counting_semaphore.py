"""MPI-3.1 Example 11.18, generalised to n ranks: a counter X = n on rank 0 published
with Sync; each rank Accumulates -1, then polls Get_accumulate(NO_OP) + Flush until
X reaches 0 - a barrier built from atomics (R107, R111, R135, R141).
    shmrma-run -n 4 scripts/examples/ex11_18_counting_semaphore.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
win = MPI.Win.Allocate(8 if rank == 0 else 0, disp_unit=8, comm=comm)
win.Lock_all()
if rank == 0:
    np.frombuffer(win.tomemory(), dtype="i8")[0] = size
    win.Sync()
comm.Barrier()
win.Accumulate(np.array([-1], dtype="i8"), 0, 0, op=MPI.SUM)
value = np.ones(1, dtype="i8")
polls = 0
while value[0] != 0:
    win.Get_accumulate([None, 0, MPI.INT64_T], value, 0, (0, 1, MPI.INT64_T), op=MPI.NO_OP)
    win.Flush(0)
    polls += 1
    assert value[0] >= 0, value
win.Unlock_all()
win.Free()
print("rank %d: Example 11.18 ok (%d polls)" % (rank, polls))
