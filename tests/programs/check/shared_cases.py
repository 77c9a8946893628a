"""Race checker cases for loads and stores of a shared window's memory
(tests/test_check.py, check/loads.py): every rank reaches every rank's memory
with plain loads and stores (R7, R12); two of them, one a store, or one of them
and an RMA write, that no synchronization orders race (R36, R127). A rank's first
load and first store of each page after each of its synchronization calls are
seen, so each case is a period of its own, between Barriers. Rank 0's memory holds
X; A (rank 1) is the other party."""
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A = 1
win = MPI.Win.Allocate_shared(64 * 8 if rank == 0 else 0, 8, comm=comm)
memory, unit = win.Shared_query(0)
X = np.frombuffer(memory, dtype="f8")
seen = 0.0
comm.Barrier()

if rank == 0:
    X[0] = 1.0                                          # race SS
if rank == A:
    time.sleep(0.02)
    X[0] = 2.0                                          # race SS
comm.Barrier()

if rank == 0:
    seen += X[8]                                        # race LS
if rank == A:
    time.sleep(0.02)
    X[8] = 3.0                                          # race LS
comm.Barrier()

if rank == 0:
    X[16] = 4.0                                         # ordered by the Barrier
comm.Barrier()
if rank == A:
    seen += X[16]
    X[17] = 5.0
comm.Barrier()

if rank == 0:
    seen += X[24]                                       # two loads: no race
if rank == A:
    seen += X[24]
comm.Barrier()

win.Lock_all()
if rank == A:
    win.Put(np.ones(1), 0, 32)                          # race LP
    win.Flush(0)
if rank == 0:
    time.sleep(0.02)
    seen += X[32]                                       # race LP
win.Unlock_all()
comm.Barrier()

win.Lock_all()
if rank == A:
    X[40] = 6.0
    win.Sync()
    comm.send(None, 0, 7)                               # the store, then a message
if rank == 0:
    comm.recv(source=A, tag=7)
    win.Sync()
    seen += X[40]                                       # after the message: ordered
    X[41] = 7.0
win.Unlock_all()
comm.Barrier()
del X, memory
win.Free()
