"""Race checker cases under locks, flushes, messages and atomics (tests/test_check.py);
marks as in fence_cases.py."""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A, B = 1, (2 if size > 2 else 0)
win = MPI.Win.Allocate(64 * 8 if rank == 0 else 0, 8, comm=comm)
one, out = np.ones(1), np.zeros(1)
ints, iout = np.ones(1, "i8"), np.zeros(1, "i8")


def exclusive(action):
    win.Lock(0, MPI.LOCK_EXCLUSIVE)
    action()
    win.Unlock(0)


def shared(action):
    win.Lock(0, MPI.LOCK_SHARED)
    action()
    win.Unlock(0)


if rank in (A, B):                                      # exclusive epochs exclude each other
    exclusive(lambda: win.Put(one, 0, 0))
if rank == A:
    shared(lambda: win.Put(one, 0, 1))                  # race SH
if rank == B:
    shared(lambda: win.Put(one, 0, 1))                  # race SH
comm.Barrier()

win.Lock_all()
if rank == A:
    win.Put(one, 0, 2)
    win.Flush(0)
    win.Put(one, 0, 3)                                  # race NF
comm.Barrier()
if rank == B:
    win.Get(np.zeros(1), 0, 2)                          # flushed, then the Barrier
    win.Get(np.zeros(1), 0, 3)                          # race NF
    win.Flush(0)
comm.Barrier()
if rank == A:
    win.Flush(0)
    win.Put(one, 0, 4)
    win.Flush(0)
    comm.send(None, B, 7)
if rank == B:
    comm.recv(source=A, tag=7)
    win.Get(np.zeros(1), 0, 4)                          # flushed, then a message
    win.Flush(0)
comm.Barrier()
if rank == A:
    win.Put(one, 0, 5)                                  # race NS
    win.Flush(0)
if rank == B:
    win.Get(np.zeros(1), 0, 5)                          # race NS
    win.Flush(0)
comm.Barrier()

# the MPI-3 notification: data, Flush, an atomic on a flag, Flush; the reader polls
if rank == A:
    win.Put(one, 0, 10)
    win.Flush(0)
    win.Put(one, 0, 11)                                 # race UF
    win.Fetch_and_op(ints, iout, 0, 12, MPI.SUM)
    win.Flush(0)
if rank == B:
    iout[0] = 0
    while iout[0] == 0:
        win.Fetch_and_op(ints, iout, 0, 12, MPI.NO_OP)
        win.Flush(0)
    win.Get(np.zeros(1), 0, 10)
    win.Get(np.zeros(1), 0, 11)                         # race UF
    win.Flush(0)
comm.Barrier()

# a neighborhood collective and a persistent Barrier order as their blocking kin do
ring = comm.Create_cart([size], periods=[True])
if rank == A:
    win.Put(one, 0, 30)
    win.Flush(0)
ring.Neighbor_allgather(np.zeros(1), np.zeros(2))
if rank == B:
    win.Get(np.zeros(1), 0, 30)
    win.Flush(0)
barrier = comm.Barrier_init()
if rank == A:
    win.Put(one, 0, 31)
    win.Flush(0)
barrier.Start()
barrier.Wait()
if rank == B:
    win.Get(np.zeros(1), 0, 31)
    win.Flush(0)
barrier.Free()
ring.Free()
comm.Barrier()

# request-based RMA: an Rput's Wait completes it only at the origin, an Rget's fully
if rank == A:
    win.Rput(one, 0, 20).Wait()                         # race RP
    win.Rget(np.zeros(1), 0, 21).Wait()
comm.Barrier()
if rank == B:
    win.Get(np.zeros(1), 0, 20)                         # race RP
    win.Put(one, 0, 21)
    win.Flush(0)
win.Unlock_all()
win.Free()
