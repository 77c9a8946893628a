"""One-sided hello: every rank puts its greeting into its right neighbour's window,
then takes a ticket from a counter on rank 0 with Fetch_and_op.

    shmrma-run -n 4 scripts/rma_hello.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

# each rank exposes 2 int64: [greeting from the left neighbour, ticket counter]
win = MPI.Win.Allocate(2 * 8, disp_unit=8, comm=comm)
mine = np.frombuffer(win.tomemory(), dtype="i8")
mine[:] = 0

win.Fence()
win.Put(np.array([1000 + rank], dtype="i8"), (rank + 1) % size, target=0)
win.Fence()

ticket = np.zeros(1, dtype="i8")
win.Lock(0, MPI.LOCK_EXCLUSIVE)
win.Fetch_and_op(np.ones(1, dtype="i8"), ticket, 0, target_disp=1, op=MPI.SUM)
win.Unlock(0)

print(f"rank {rank}: greeting {mine[0]} from rank {(rank - 1) % size}", flush=True)
tickets = comm.gather(int(ticket[0]), root=0)   # drawn in whatever order ranks came
win.Fence()     # every rank's Fetch_and_op is visible in rank 0's memory after it
if rank == 0:
    print(f"rank 0: the counter reached {mine[1]}, tickets {sorted(tickets)}", flush=True)
del mine
win.Free()
