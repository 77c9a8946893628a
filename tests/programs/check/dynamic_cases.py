"""Race checker cases for the target's own loads of a dynamic window's memory
(tests/test_check.py, check/loads.py): the regions rank 0 attached are watched from
their Attach to their Detach, a numpy array (which the others reach through the
kernel) and Alloc_mem memory (which they map). A load of bytes that an RMA no
synchronization orders with it writes is a race (R36, R127), each case on a page of
its own. A (rank 1) accesses the memory at its address (its displacement)."""
import os
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A = 1
PAGE = 512                                              # float64 elements of a 4 KiB page
win = MPI.Win.Create_dynamic(comm=comm)
raw = np.zeros(5 * PAGE)
start = -raw.ctypes.data % 4096 // 8                    # whole pages: the watch takes those
array = raw[start:start + 4 * PAGE]
shared = MPI.Alloc_mem(4 * PAGE * 8)
other = np.frombuffer(shared, dtype="f8")
if rank == 0:
    win.Attach(array)
    win.Attach(shared)
where = comm.bcast((MPI.Get_address(array), MPI.Get_address(shared)) if rank == 0 else None)
one, out = np.ones(1), np.zeros(1)
seen = 0.0

win.Fence()
if rank == A:
    win.Put(one, 0, where[0] + 0 * PAGE * 8)            # race DP
    win.Get(out, 0, where[0] + 1 * PAGE * 8)
    win.Accumulate(one, 0, where[1] + 0 * PAGE * 8, MPI.SUM)   # race DA
if rank == 0:
    time.sleep(0.02)
    seen += array[0 * PAGE]                             # race DP
    seen += array[1 * PAGE]                             # two reads: no race
    seen += other[0 * PAGE]                             # race DA
win.Fence()
if rank == 0:
    seen += array[0 * PAGE] + other[0 * PAGE]           # after the Fence: ordered
if rank == A:
    time.sleep(0.02)
win.Fence()

win.Lock_all()
if rank == A:
    time.sleep(0.02)
    win.Put(np.full(1, 2.0), 0, where[0] + 2 * PAGE * 8)
    win.Flush(0)
if rank == 0:
    while array[2 * PAGE] != 2.0:                       # polling: no race
        win.Sync()
win.Unlock_all()
comm.Barrier()

win.Fence()                                             # its stores (stores.py): seen with
if rank == A:                                           # their lines (the first on each
                                                        # page), or found at the next call
    time.sleep(0.02)
    win.Put(one, 0, where[0] + 2 * PAGE * 8 + 8)        # race DS
    win.Get(out, 0, where[1] + 1 * PAGE * 8)            # race DG
    win.Put(one, 0, where[0] + 2 * PAGE * 8 + 24)
if rank == 0:
    array[2 * PAGE + 1] = 5.0                           # race DS
    other[1 * PAGE] = 6.0                               # race DG
win.Fence()                                             # race DS race DG
if rank == 0:
    array[2 * PAGE + 3] = 8.0                           # after the Fence: ordered
win.Fence()

if rank == 0:                                           # the region is no window memory now
    win.Detach(array)
win.Fence()
if rank == 0:
    time.sleep(0.02)
    pipe = os.pipe()                                    # a system call reaches it again
    os.write(pipe[1], memoryview(array[3 * PAGE:]))
    os.close(pipe[0])
    os.close(pipe[1])
    seen += other[3 * PAGE]                             # race DL
if rank == A:
    win.Put(one, 0, where[1] + 3 * PAGE * 8)            # race DL
win.Fence()
if rank == 0:
    win.Detach(shared)
win.Free()
del other
MPI.Free_mem(shared)
