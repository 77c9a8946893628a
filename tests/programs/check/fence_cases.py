"""Race checker cases under Fence (tests/test_check.py). Rank 0's window is the target;
origins A (rank 1) and B (rank 0, or rank 2 at 3 ranks). A line whose comment names a
race takes part in it; the checker must report exactly the marked pairs."""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A, B = 1, (2 if size > 2 else 0)
win = MPI.Win.Allocate(64 * 8 if rank == 0 else 0, 8, comm=comm)
one, ints = np.ones(1), np.ones(1, "i8")                # results go to a fresh array each
win.Fence()
if rank == A:
    win.Put(one, 0, 0)                                  # race PP
    win.Put(one, 0, 1)                                  # race PG
    win.Get(np.zeros(1), 0, 2)
    win.Accumulate(ints, 0, 3, MPI.SUM)
    win.Accumulate(ints, 0, 4, MPI.SUM)                 # race AOP
    win.Accumulate(ints, 0, 5, MPI.SUM)                 # race AP
    win.Fetch_and_op(ints, np.zeros(1, "i8"), 0, 6, MPI.SUM)
    win.Fetch_and_op(ints, np.zeros(1, "i8"), 0, 7, MPI.SUM)  # race FG
    win.Compare_and_swap(ints, ints, np.zeros(1, "i8"), 0, 8)  # race CP
    win.Put(one, 0, 9)
    win.Put(one, 0, 10)                                 # race SO
    win.Get(np.zeros(1), 0, 10)                         # race SO
    win.Accumulate(ints, 0, 11, MPI.SUM)
    win.Accumulate(ints, 0, 11, MPI.MAX)
    column = MPI.DOUBLE.Create_vector(4, 1, 4).Commit()
    win.Put(np.ones(4), 0, (16, 1, column))             # race VEC
    win.Put(np.ones(4), 0, (32, 1, column))
    column.Free()
if rank == B:
    win.Put(one, 0, 0)                                  # race PP
    win.Get(np.zeros(1), 0, 1)                          # race PG
    win.Get(np.zeros(1), 0, 2)
    win.Accumulate(ints, 0, 3, MPI.SUM)
    win.Accumulate(ints, 0, 4, MPI.MAX)                 # race AOP
    win.Put(ints, 0, 5)                                 # race AP
    win.Compare_and_swap(ints, ints, np.zeros(1, "i8"), 0, 6)
    win.Get(np.zeros(1, "i8"), 0, 7)                    # race FG
    win.Put(ints, 0, 8)                                 # race CP
    column = MPI.DOUBLE.Create_vector(4, 1, 4).Commit()
    win.Put(np.ones(4), 0, (16, 1, column))             # race VEC
    win.Put(np.ones(4), 0, (33, 1, column))             # interleaved columns: disjoint
    column.Free()
win.Fence()
if rank == B:
    win.Get(np.zeros(1), 0, 9)                          # the Put of the last epoch is done
win.Fence()
win.Free()
