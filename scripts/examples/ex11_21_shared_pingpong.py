"""MPI-3.1 Example 11.21: a shared-memory window used with plain loads and stores,
with point-to-point ping-pong and Sync on both sides as the memory barriers
(R7, R12, R131). The ping-pong is between ranks 0 and 1; with more ranks the
others only take part in the collective calls (window creation, Lock_all/Unlock_all,
Barrier, Free): a peer of 1 - rank would be -1 (PROC_NULL) or -2 (ANY_SOURCE) for
them, and a receive from ANY_SOURCE that no send matches never completes.
    shmrma-run -n 2 scripts/examples/ex11_21_shared_pingpong.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
win = MPI.Win.Allocate_shared(8 if rank == 0 else 0, disp_unit=8, comm=comm)
memory, unit = win.Shared_query(0)
X = np.frombuffer(memory, dtype="i8")
win.Lock_all(MPI.MODE_NOCHECK)
if rank == 0:
    X[0] = 0
    win.Sync()
comm.Barrier()
for step in range(20 if rank < 2 else 0):    # ranks 0 and 1 only
    if rank == step % 2:
        win.Sync()
        assert X[0] == step, (rank, step, X[0])
        X[0] = step + 1
        win.Sync()
        comm.Send(np.zeros(1, "u1"), 1 - rank)
    else:
        comm.Recv(np.zeros(1, "u1"), 1 - rank)
win.Unlock_all()
del X, memory
win.Free()
print("rank %d: Example 11.21 ok" % rank)
