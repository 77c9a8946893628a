"""The atomicity cases of the public RMA race benchmark (RMARaceBench's MPIRMA/atomic,
its ten scenarios rewritten here) at 3 ranks: ranks 0 and 2 accumulate into rank 1
in one fence epoch, each scenario at its own 32 bytes; marks as in fence_cases.py."""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
win = MPI.Win.Allocate(384, 1, comm=comm)       # disp_unit 1: displacements in bytes
four_ints = MPI.INT.Create_contiguous(4).Commit()
acc, SUM = win.Accumulate, MPI.SUM

win.Fence()
if rank == 0:
    acc(np.ones(4, "i4"), 1, 0, SUM)                  # a type of 4 INTs: no race
    acc(np.ones(4, "i2"), 1, 32, SUM)                 # race CT
    acc(np.ones(4, "i4"), 1, 64, SUM)                 # race DI
    acc(np.ones(4, "i4"), 1, 128, SUM)                 # the same grid: no race
    acc(np.ones(2, "i2"), 1, 160, SUM)                 # race SI
    acc(np.ones(1, "f4"), 1, 192, SUM)                 # race FI
    acc(np.ones(1, "f4"), 1, 224, SUM)                 # race FS
    acc(np.ones(1, "i4"), 1, 224, SUM)                 # race FS
    acc(np.ones(1, "f8"), 1, 256, SUM)                # race DF
    acc(np.ones(1, "i4"), 1, 288, SUM)                # INT and INT: no race
    acc(np.ones(1, "i4"), 1, 320, SUM)                # one origin, INT twice: no race
    acc(np.ones(1, "i4"), 1, 320, SUM)
if rank == 2:
    acc([np.ones(4, "i4"), 1, four_ints], 1, 0, SUM)
    acc([np.ones(4, "i4"), 1, four_ints], 1, 32, SUM)  # race CT
    acc(np.ones(4, "i4"), 1, 65, SUM)                 # race DI
    acc(np.ones(4, "i4"), 1, 132, SUM)
    acc(np.ones(1, "i4"), 1, 160, SUM)                 # race SI
    acc(np.ones(1, "i4"), 1, 192, SUM)                 # race FI
    acc(np.ones(1, "f4"), 1, 256, SUM)                # race DF
    acc(np.ones(1, "i4"), 1, 288, SUM)
win.Fence()
four_ints.Free()
win.Free()
