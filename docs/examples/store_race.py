"""Rank 0 stores to its own window memory while rank 1 Puts into the same bytes, in
one fence epoch: a data race between a store and an RMA call.

    shmrma-run --check -n 2 docs/examples/store_race.py
"""
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
win = MPI.Win.Allocate(8, disp_unit=8, comm=comm)
word = np.frombuffer(win.tomemory(), dtype="i8")

win.Fence()
if rank == 1:
    win.Put(np.array([1], dtype="i8"), 0)
else:
    time.sleep(0.1)                             # (whichever comes first, a race)
    word[0] = 42                                # rank 0's own store, in the same epoch
win.Fence()
del word
win.Free()
