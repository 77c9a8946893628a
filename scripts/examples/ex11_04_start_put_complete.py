"""MPI-3.1 Example 11.4: Start-Put-Complete, with the target side the fragment leaves
out (Post ... Wait) and the data checked after Wait (R83-R85, R88; also R89, and the
properties of Figures 11.2/11.3 and 11.7).
Round 1 (Figures 11.2/11.3, R83, R84): the target sleeps, stores A = 1 and only then
Posts, while the origin runs Start, Put(A = 2), Complete at once; whether Start, Put
or Complete blocks is the implementation's choice, but the Put must not reach the
window before the Post, so after Wait the target reads 2, never its own 1.
Round 2 (R85, R88, R89, the Figure 11.7 property without its deadlock): the origin
holds its epoch open, blocked in a Recv before Complete; the target's Test must say
False (Wait could not return before that Complete), the epoch stays open, the target
Sends, the origin Completes, and Test turns True with the Put visible.
    shmrma-run -n 2 scripts/examples/ex11_04_start_put_complete.py
"""
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
origin, target = 0, 1
win = MPI.Win.Allocate(16, disp_unit=8, comm=comm)
A = np.frombuffer(win.tomemory(), dtype="i8")
A[:] = 0
comm.Barrier()
world = comm.Get_group()
peer = world.Incl([target if rank == origin else origin])

# Round 1: Example 11.4 as written, against a late Post
if rank == origin:
    win.Start(peer)
    win.Put(np.array([2], dtype="i8"), target, 0)
    win.Complete()
elif rank == target:
    time.sleep(0.2)
    A[0] = 1                          # a store before the Post (R120)
    win.Post(peer)
    win.Wait()
    assert A[0] == 2, ("the Put reached the window before the Post", A)

# Round 2: Wait (here Test) cannot finish before the origin's Complete
if rank == origin:
    win.Start(peer)
    win.Put(np.array([3], dtype="i8"), target, 1)
    comm.Recv([np.zeros(1, "i8"), MPI.INT64_T], source=target, tag=4)
    win.Complete()
elif rank == target:
    win.Post(peer)
    assert not win.Test(), "Test returned True before the origin's Complete"
    assert not win.Test(), "a False Test closed the exposure epoch"
    comm.Send([np.ones(1, "i8"), MPI.INT64_T], dest=origin, tag=4)
    while not win.Test():
        pass
    assert A[1] == 3, A
peer.Free()
world.Free()
del A
win.Free()
print("rank %d: Example 11.4 ok" % rank)
