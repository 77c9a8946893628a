"""MPI-3.1 Example 11.19: Peterson's two-process mutual exclusion built only from
Accumulate(REPLACE), Get_accumulate(NO_OP), Flush and Flush_all (R107, R135, R141).

The seed's first Get_accumulate is flushed before its value is used (A42). A shared
counter on rank 0, read and written inside the critical section without atomics,
proves that the two processes never overlap. Peterson's lock is for ranks 0 and 1;
with more ranks the others only take part in the collective calls and check the
final count (for them 1 - rank would be no rank at all).
    shmrma-run -n 2 scripts/examples/ex11_19_peterson.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
other = 1 - rank
ROUNDS = 300
# rank 0 holds [flag0, flag1, turn, counter]
win = MPI.Win.Allocate(4 * 8 if rank == 0 else 0, disp_unit=8, comm=comm)
I64 = MPI.INT64_T     # every buffer typed I64 like the target (R45): numpy int64 alone is LONG
win.Lock_all()
if rank == 0:
    np.frombuffer(win.tomemory(), dtype="i8")[:] = 0
    win.Sync()
comm.Barrier()


def replace(value, slot):
    win.Accumulate([np.array([value], dtype="i8"), I64], 0, (slot, 1, I64), op=MPI.REPLACE)


def read(slot):
    value = np.zeros(1, dtype="i8")
    win.Get_accumulate([None, 0, I64], [value, I64], 0, (slot, 1, I64), op=MPI.NO_OP)
    win.Flush(0)
    return int(value[0])


for _ in range(ROUNDS if rank < 2 else 0):    # ranks 0 and 1 only
    replace(1, rank)                    # flag[me] = true
    replace(other, 2)                   # turn = other
    win.Flush_all()
    while read(other) == 1 and read(2) == other:
        pass
    counter = read(3)                   # critical section: a plain read-modify-write
    replace(counter + 1, 3)
    win.Flush(0)
    replace(0, rank)                    # flag[me] = false
    win.Flush_all()
comm.Barrier()
total = read(3)
win.Unlock_all()
assert total == 2 * ROUNDS, total
win.Free()
print("rank %d: Example 11.19 ok" % rank)
