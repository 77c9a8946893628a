"""Race checker cases for the target's own loads of its window memory
(tests/test_check.py, check/loads.py). A load is seen when it is the first access
to its page since its rank's last synchronization call, so each case reads its
own page (PAGE elements apart). A load of bytes that an RMA no synchronization
orders with it writes is a race (R36, R127); polling a word with loads and Win.Sync
until a Put changes it is not (R128, R131). Rank 0 owns the memory; A (rank 1)
accesses it."""
import os
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A = 1
PAGE = 512                                              # float64 elements of a 4 KiB page
FLAVOR = os.environ.get("CASE_FLAVOR")
if FLAVOR == "alloc_mem":                               # Create over memory the others map
    memory = MPI.Alloc_mem(16 * PAGE * 8 if rank == 0 else 0)
    win = MPI.Win.Create(memory if rank == 0 else None, 8, comm=comm)
elif FLAVOR == "private":                               # Create over a numpy array: the
    raw = np.zeros(17 * PAGE)                           # others reach it through the kernel
    start = -raw.ctypes.data % 4096 // 8                # (whole pages: the watch takes those)
    win = MPI.Win.Create(raw[start:start + 16 * PAGE] if rank == 0 else None, 8, comm=comm)
else:
    win = MPI.Win.Allocate(16 * PAGE * 8 if rank == 0 else 0, 8, comm=comm)
mine = np.frombuffer(win.tomemory(), dtype="f8")
one, out = np.ones(1), np.zeros(1)
seen = 0.0

win.Fence()
if rank == A:
    win.Put(one, 0, 0 * PAGE)                           # race LP
    win.Accumulate(one, 0, 1 * PAGE, MPI.SUM)           # race LA
    win.Get(out, 0, 2 * PAGE)
    win.Put(one, 0, 3 * PAGE + 8)
if rank == 0:
    time.sleep(0.02)
    seen += mine[0 * PAGE]                              # race LP
    seen += mine[1 * PAGE]                              # race LA
    seen += mine[2 * PAGE]                              # two reads: no race
    seen += mine[3 * PAGE]                              # other bytes of the Put's page
win.Fence()
if rank == 0:
    seen += mine[0 * PAGE]                              # after the Fence: ordered
if rank == A:
    time.sleep(0.02)
win.Fence()

if rank == 0:
    seen += mine[4 * PAGE]                              # race LB (before the Put)
if rank == A:
    time.sleep(0.02)
    win.Put(one, 0, 4 * PAGE)                           # race LB
win.Fence()

win.Lock_all()
if rank == A:
    win.Put(one, 0, 5 * PAGE)
    win.Flush(0)
    comm.send(None, 0, 3)                               # the Put, then a message
if rank == 0:
    comm.recv(source=A, tag=3)
    seen += mine[5 * PAGE]                              # after the message: ordered
comm.Barrier()
win.Unlock_all()

if rank == 0:                                           # an exclusive lock on its own
    win.Lock(0, MPI.LOCK_EXCLUSIVE)                     # window excludes the others'
    seen += mine[6 * PAGE]
    win.Unlock(0)
if rank == A:
    win.Lock(0, MPI.LOCK_EXCLUSIVE)
    win.Put(one, 0, 6 * PAGE)
    win.Unlock(0)
comm.Barrier()
if rank == 0:
    win.Lock(0, MPI.LOCK_SHARED)                        # shared: no exclusion
    time.sleep(0.02)
    seen += mine[7 * PAGE]                              # race LK
    win.Unlock(0)
if rank == A:
    win.Lock(0, MPI.LOCK_SHARED)
    win.Put(one, 0, 7 * PAGE)                           # race LK
    win.Unlock(0)
comm.Barrier()

group = comm.group.Incl([A]) if rank == 0 else comm.group.Incl([0])
if rank == 0:
    win.Post(group)
    time.sleep(0.02)
    seen += mine[8 * PAGE]                              # race LW (before the Wait)
    win.Wait()
    seen += mine[9 * PAGE]                              # after the Wait: ordered
if rank == A:
    win.Start(group)
    win.Put(one, 0, 8 * PAGE)                           # race LW
    win.Put(one, 0, 9 * PAGE)
    win.Complete()
comm.Barrier()

win.Lock_all()
if rank == A:
    time.sleep(0.02)
    win.Put(np.full(1, 2.0), 0, 10 * PAGE)
    win.Flush(0)
if rank == 0:
    while mine[10 * PAGE] != 2.0:                       # polling: no race
        win.Sync()
win.Unlock_all()
comm.Barrier()
win.Free()
if FLAVOR == "alloc_mem":
    del mine
    MPI.Free_mem(memory)
