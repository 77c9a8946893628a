"""MPI-3.1 Example 11.20: a spin lock taken with Compare_and_swap(0 -> 1) and released
with Compare_and_swap(1 -> 0); the lock word A is initialised locally and published
with Sync. Entries to the critical section are counted (R50, R107, R137).
    shmrma-run -n 4 scripts/examples/ex11_20_spinlock.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
ROUNDS = 50
win = MPI.Win.Allocate(2 * 8 if rank == 0 else 0, disp_unit=8, comm=comm)  # [A, count]
win.Lock_all()
if rank == 0:
    np.frombuffer(win.tomemory(), dtype="i8")[:] = 0
    win.Sync()
comm.Barrier()
one, zero, old = np.ones(1, "i8"), np.zeros(1, "i8"), np.zeros(1, "i8")
for _ in range(ROUNDS):
    while True:
        win.Compare_and_swap(one, zero, old, 0, 0)
        win.Flush(0)
        if old[0] == 0:
            break
    count = np.zeros(1, "i8")
    win.Get(count, 0, 1)
    win.Flush(0)
    win.Put(count + 1, 0, 1)
    win.Flush(0)
    win.Compare_and_swap(zero, one, old, 0, 0)
    win.Flush(0)
    assert old[0] == 1, old
comm.Barrier()
final = np.zeros(1, "i8")
win.Get(final, 0, 1)
win.Flush(0)
win.Unlock_all()
assert final[0] == size * ROUNDS, final
win.Free()
print("rank %d: Example 11.20 ok" % rank)
