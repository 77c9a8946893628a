"""MPI-3.1 Figure 11.8 (§11.7.3, checklist §4b FIG-11.8): no deadlock, because Complete
does not wait for the target's Wait. Process 0 runs Start, Put, Complete, Send;
process 1 runs Post, Recv, Wait. Once process 1 has posted, process 0's
start-put-complete must finish while process 1 sits in its Recv, so the Send is
reached and the Recv returns (R148, R85); after Wait process 1 sees the Put (R88).
The deadlocking Figure 11.7 (Recv before Complete against Wait before Send) is not
run; its property, Wait/Test cannot finish before Complete, is checked in
ex11_04_start_put_complete.py (R149).
Filled in (the figure shows only the calls): a one-int64 window, the Put value, the
message (which carries the same value), and three rounds.
    shmrma-run -n 2 scripts/examples/ex11_fig08_complete_does_not_wait.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
win = MPI.Win.Allocate(8, disp_unit=8, comm=comm)
X = np.frombuffer(win.tomemory(), dtype="i8")
X[:] = 0
comm.Barrier()
world = comm.Get_group()
peer = world.Incl([1 if rank == 0 else 0])
for value in (81, 82, 83):
    if rank == 0:
        win.Start(peer)
        win.Put(np.array([value], dtype="i8"), 1, 0)
        win.Complete()
        comm.Send([np.array([value], dtype="i8"), MPI.INT64_T], dest=1, tag=8)
    elif rank == 1:
        win.Post(peer)
        message = np.zeros(1, dtype="i8")
        comm.Recv([message, MPI.INT64_T], source=0, tag=8)
        win.Wait()
        assert message[0] == value and X[0] == value, (value, message, X)
peer.Free()
world.Free()
del X
win.Free()
print("rank %d: Figure 11.8 ok" % rank)
