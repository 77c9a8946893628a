"""MPI-3.1 Figure 11.5 (MPI-2.2 "Figure 20"), the asymmetric post-start-complete-wait
pattern of checklist §4b FIG-11.5 (R81, R88, R92; R69, R91 across rounds).
Process 0 Starts on {1, 2} and Puts into both, process 3 Starts on {2} and Puts into
2; process 1 Posts to {0}, process 2 Posts to {0, 3}: every rank passes its own
groups. Rank 2's Wait must return only when both origins completed, so both values
are there after it (R88); in the first round rank 3 sleeps before its Put to make
that matter. The ranks with nothing to do open empty epochs the first two rounds,
Start(GROUP_EMPTY)-Complete and Post(GROUP_EMPTY)-Wait, and skip them in the last
round (R92). Each round puts new values, so an access epoch must reach the exposure
epoch of the same round (R69, R91).
Filled in (the figure shows only the calls): a window of two int64 words per rank,
slot 0 written by rank 0 and slot 1 by rank 3, and three rounds.
    shmrma-run -n 4 scripts/examples/ex11_fig05_pscw_groups.py
"""
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
assert comm.size >= 4, "Figure 11.5 needs 4 processes"
win = MPI.Win.Allocate(16, disp_unit=8, comm=comm)
X = np.frombuffer(win.tomemory(), dtype="i8")
X[:] = -1
comm.Barrier()
world = comm.Get_group()
start_to = {0: [1, 2], 3: [2]}.get(rank, [])          # whose windows I access
post_to = {1: [0], 2: [0, 3]}.get(rank, [])           # who accesses my window
start_group = world.Incl(start_to) if start_to else MPI.GROUP_EMPTY
post_group = world.Incl(post_to) if post_to else MPI.GROUP_EMPTY
for round_ in range(3):
    value = {0: 100 + round_, 3: 300 + round_}.get(rank)
    skip_empty = round_ == 2
    if post_to or not skip_empty:
        win.Post(post_group)
    if start_to or not skip_empty:
        win.Start(start_group)
        if rank == 3 and round_ == 0:
            time.sleep(0.2)
        for target in start_to:
            win.Put(np.array([value], dtype="i8"), target, 0 if rank == 0 else 1)
        win.Complete()
    if post_to or not skip_empty:
        win.Wait()
    expected = {1: [100 + round_, -1], 2: [100 + round_, 300 + round_]}.get(rank, [-1, -1])
    assert X.tolist() == expected, (rank, round_, X, expected)
for group in (start_group, post_group):
    if group != MPI.GROUP_EMPTY:
        group.Free()
world.Free()
del X
win.Free()
print("rank %d: Figure 11.5 ok" % rank)
