"""MPI-3.1 Example 11.18, generalised to n ranks: a counter X = n on rank 0 published
with Sync; each rank Accumulates -1, then polls Get_accumulate(NO_OP) + Flush until
X reaches 0 - a barrier built from atomics (R107, R111, R135, R141).
    shmrma-run -n 4 scripts/examples/ex11_18_counting_semaphore.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
I64 = MPI.INT64_T     # every access to X uses one basic type (R45): numpy int64 alone is LONG
win = MPI.Win.Allocate(8 if rank == 0 else 0, disp_unit=8, comm=comm)
win.Lock_all()
if rank == 0:
    np.frombuffer(win.tomemory(), dtype="i8")[0] = size
    win.Sync()
comm.Barrier()
win.Accumulate([np.array([-1], dtype="i8"), I64], 0, (0, 1, I64), op=MPI.SUM)
value = np.ones(1, dtype="i8")
while value[0] != 0:
    win.Get_accumulate([None, 0, I64], [value, I64], 0, (0, 1, I64), op=MPI.NO_OP)
    win.Flush(0)
    assert value[0] >= 0, value
win.Unlock_all()
win.Free()
print("rank %d: Example 11.18 ok" % rank)      # the same on every run and every MPI
