"""race.py made right: the ranks add to rank 0's word with Accumulate, and concurrent
accumulates of one type with the same op are atomic, so the checker finds no race.

    shmrma-run --check -n 3 docs/examples/no_race.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
win = MPI.Win.Allocate(8, disp_unit=8, comm=comm)
word = np.frombuffer(win.tomemory(), dtype="i8")
word[:] = 0

win.Fence()
if rank > 0:
    win.Accumulate(np.array([rank], dtype="i8"), 0, op=MPI.SUM)
win.Fence()
if rank == 0:
    print("rank 0: the word holds", word[0], "=", sum(range(size)))
del word
win.Free()
