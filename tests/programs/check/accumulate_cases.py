"""Race checker cases of accumulates (tests/test_check.py): element-wise atomicity
holds only where the elements coincide (MPI-3.1 §11.7.1), and one origin's
accumulates are ordered per datatype (§11.7.2); marks as in fence_cases.py."""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A, B = 1, (2 if size > 2 else 0)
win = MPI.Win.Allocate(256 if rank == 0 else 0, 1, comm=comm)     # disp_unit 1
ints, floats = np.ones(1, "i4"), np.ones(1, "f4")

win.Lock_all()
if rank in (A, B):                          # the same elements: atomic together
    win.Accumulate(ints, 0, 0, MPI.SUM)
comm.Barrier()
if rank == A:
    win.Accumulate(ints, 0, 16, MPI.SUM)                    # race MA
if rank == B:
    win.Accumulate(ints, 0, 17, MPI.SUM)                    # race MA
comm.Barrier()
if rank == A:
    win.Accumulate(floats, 0, 32, MPI.SUM)                  # race MT
    win.Accumulate(ints, 0, 32, MPI.SUM)                    # race MT
    win.Flush(0)
comm.Barrier()
if rank == A:                               # completed between: ordered
    win.Accumulate(floats, 0, 48, MPI.SUM)
    win.Flush(0)
    win.Accumulate(ints, 0, 48, MPI.SUM)
    win.Accumulate(ints, 0, 64, MPI.SUM)    # one origin, one type: ordered
    win.Accumulate(ints, 0, 64, MPI.MAX)
    win.Flush(0)
comm.Barrier()
if rank == A:
    win.Fetch_and_op(ints, np.zeros(1, "i4"), 0, 80, MPI.SUM)   # race MF
if rank == B:
    win.Accumulate(np.ones(1, "i8"), 0, 76, MPI.SUM)            # race MF
win.Unlock_all()
comm.Barrier()
win.Free()
