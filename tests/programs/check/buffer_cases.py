"""Race checker cases for the origin's buffers (tests/test_check.py): a call's buffer
changed before the call completed at the origin (R35), found at the completing call,
which carries the mark with the call; a result buffer's first words are watched, so
there the store's own line does. Rank 0 owns the memory; A (rank 1) accesses it."""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
A = 1
win = MPI.Win.Allocate(64 * 8 if rank == 0 else 0, 8, comm=comm)
buf, out = np.zeros(4), np.zeros(4)
ints, iout = np.ones(1, "i8"), np.zeros(1, "i8")
grid = np.zeros((4, 4))
column = MPI.DOUBLE.Create_vector(4, 1, 4).Commit()

win.Fence()
if rank == A:
    win.Put(buf, 0, 0)                                  # race OP
    buf[1] = 1.0
win.Fence()                                             # race OP
if rank == A:
    win.Put(buf, 0, 0)
win.Fence()
buf[1] = 2.0                                            # after the Fence: allowed
if rank == A:
    win.Put([grid, 1, column], 0, (4, 4, MPI.DOUBLE))
    grid[1, 1] = 5.0                                    # not in the column: allowed
    win.Get(out, 0, 0)
win.Fence()
if rank == A:
    win.Put([grid, 1, column], 0, (4, 4, MPI.DOUBLE))   # race DT
    grid[2, 0] = 5.0                                    # in the column
win.Fence()                                             # race DT
win.Fence(MPI.MODE_NOSUCCEED)

group = comm.Get_group()
if rank == 0:
    win.Post(group.Excl([0]))
    win.Wait()
else:
    win.Start(group.Incl([0]))
    if rank == A:
        win.Put(buf, 0, 32)                             # race PS
        buf[0] = 1.0
    win.Complete()                                      # race PS
win.Barrier()
if rank == A:
    win.Put(buf, 0, 36)                                 # race WB
    buf[0] = 2.0
win.Barrier()                                           # race WB
if rank == A:
    win.Put(buf, 0, 36)                                 # race IB
    buf[0] = 3.0
request = win.Ibarrier()                                # race IB
request.Wait()
if rank == A:
    win.Put(buf, 0, 40)
request = win.Ibarrier()
if rank == A:
    buf[0] = 5.0                                        # the Ibarrier completed it (R167)
request.Wait()
win.Barrier()
syncs = win.Alloc_sync_objects(1) if rank == 0 else None
handle = comm.bcast(syncs[0] if rank == 0 else None, root=0)
if rank == A:
    signal = win.Sync_ops_init(0, MPI.MODE_WIN_PUT, handle)
    signal.Start()
    win.Put(buf, 0, 44)                                 # race CS
    buf[0] = 4.0
    signal.Wait()                                       # race CS
    signal.Free()
if rank == 0:
    waiting = win.Sync_object_init(handle, 1)
    waiting.Start()
    waiting.Wait()
    waiting.Free()
    win.Free_sync_objects(syncs)
comm.Barrier()

win.Lock_all()
if rank == A:
    win.Accumulate(buf, 0, 8)                           # race OA
    buf[2] = 3.0
    win.Flush_local(0)                                  # race OA
    win.Put(buf, 0, 12)
    win.Flush_local(0)
    buf[2] = 4.0                                        # complete locally: allowed
    win.Get(out, 0, 16)                                 # race RG
    out[0] = 5.0                                        # race RG (the word watch's line)
    win.Flush(0)
    win.Get(out, 0, 16)
    win.Flush(0)
    out[0] = 6.0                                        # complete: allowed
    request = win.Rput(buf, 0, 24)                      # race RP
    buf[3] = 7.0
    request.Wait()                                      # race RP
    request = win.Rput(buf, 0, 28)
    request.Wait()
    buf[3] = 8.0                                        # its request completed: allowed
    win.Fetch_and_op(ints, iout, 0, 40)                 # race FO
    iout[0] = 9                                         # race FO
    win.Flush_all()
    win.Fetch_and_op(ints, iout, 0, 40)
    win.Flush_all()
    ints[0] = 2                                         # allowed
win.Unlock_all()
column.Free()
win.Free()
