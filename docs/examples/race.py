"""Ranks 1 and 2 write the same word of rank 0's window in one fence epoch: a data race.

    shmrma-run --check -n 3 docs/examples/race.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
win = MPI.Win.Allocate(8, disp_unit=8, comm=comm)

win.Fence()
if rank > 0:
    win.Put(np.array([rank], dtype="i8"), 0)    # every rank but 0 writes rank 0's word
win.Fence()
win.Free()
