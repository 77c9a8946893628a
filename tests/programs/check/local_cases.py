"""Race checker cases for the target's own stores to its window memory
(tests/test_check.py, check/stores.py). A store is found at the owner's next
synchronization call, so the mark of a store sits on that call; an RMA that meets
a store its owner has not synchronized since reports it without a line. A store
of the value a racing Put wrote is not seen, so each store writes a value of its
own. Where the page watch is on (CASE_FLAVOR=allocate: whole pages), the first
store to each page after a synchronization call is seen with its own line, so
that line carries the mark too. Rank 0 owns the memory; A (rank 1) accesses it."""
import os
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A = 1
if os.environ.get("CASE_FLAVOR") == "allocate":     # memory every rank maps
    win = MPI.Win.Allocate(64 * 8 if rank == 0 else 0, 8, comm=comm)
    mine = np.frombuffer(win.tomemory(), dtype="f8")
else:                                               # private memory, reached by syscalls
    mine = np.zeros(64)
    win = MPI.Win.Create(mine if rank == 0 else None, 8, comm=comm)
one, out = np.ones(1), np.zeros(1)
win.Fence()
if rank == A:
    time.sleep(0.02)    # the stores come first: one racing the Put's copy may go unseen
    win.Put(one, 0, 0)                                  # race LS
    win.Get(out, 0, 1)                                  # race LG
    win.Put(one, 0, 2)
if rank == 0:
    mine[0] = 5.0                                       # race LS (its page's first store)
    mine[1] = 6.0
    mine[40] = 7.0                                      # other bytes, the same page
win.Fence()                                             # race LS race LG
if rank == 0:
    mine[2] = 8.0                                       # after the Fence: ordered
win.Fence()
if rank == A:
    win.Get(out, 0, 2)                                  # after the next Fence: ordered
win.Fence()
win.Lock_all()
if rank == 0:
    mine[3] = 9.0
    comm.send(None, A, 3)                               # the store, then a message
if rank == A:
    comm.recv(source=0, tag=3)
    win.Put(one, 0, 3)
    win.Flush(0)
comm.Barrier()
if rank == A:
    win.Put(one, 0, 7)                                  # race LR
    win.Flush(0)
    comm.send(None, 0, 4)                               # the Put, then a message
if rank == 0:
    time.sleep(0.02)                                    # after the Put
    mine[7] = 3.0                                       # race LR (before the receive)
    comm.recv(source=A, tag=4)                          # race LR
comm.Barrier()
win.Unlock_all()
if rank == 0:                                           # an exclusive lock on its own
    win.Lock(0, MPI.LOCK_EXCLUSIVE)                     # window excludes the others'
    mine[5] = 1.0
    win.Unlock(0)
if rank == A:
    win.Lock(0, MPI.LOCK_EXCLUSIVE)
    win.Put(one, 0, 5)
    win.Unlock(0)
comm.Barrier()
if rank == 0:
    mine[6] = 2.0                                       # race LK (no lock epoch)
if rank == A:
    time.sleep(0.02)
    win.Lock(0, MPI.LOCK_SHARED)
    win.Put(one, 0, 6)                                  # race LK
    win.Unlock(0)
comm.Barrier()                                          # race LK
win.Free()
