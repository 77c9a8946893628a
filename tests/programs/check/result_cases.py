"""Race checker cases for result buffers (tests/test_check.py), as the public RMA race
benchmark writes them (RMARaceBench's conflict cases *-load-local and *-get-local): a
load or store of a call's result buffer, another call filling or reading it, or filling
an origin buffer, before the call completed at the origin (R35); the access's own line
carries the mark with the call's; a load of a big buffer past the words the processor
watches is seen through the buffer's whole pages (BG). Rank 0 accesses rank 1's memory."""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
win = MPI.Win.Allocate(64, 4, comm=comm)
value = np.zeros(1, "i4")
pair = np.zeros(2, "i4")
one = np.ones(1, "i4")


def show(buffer):
    return int(buffer[0])                               # race RG


win.Fence()
if rank == 0:
    win.Get(value, 1, 0)                                # race GL
    print("value is %d" % value[0])                     # race GL
win.Fence()
if rank == 0:
    value[0] += 1                                       # after the Fence: allowed
    win.Get(value, 1, 0)                                # race GG
    win.Get(value, 1, 1)                                # race GG
win.Fence()
win.Lock_all()
if rank == 0:
    win.Get_accumulate(one, value, 1, 2)                # race GA
    copy = value.copy()                                 # race GA
    win.Flush_local(1)
    total = value[0] + 1                                # completed locally: allowed
    win.Fetch_and_op(one, value, 1, 3)                  # race FO
    value[0] = 7                                        # race FO
    win.Flush(1)
    win.Compare_and_swap(one, one, pair[:1], 1, 4)      # race CS
    seen = pair[0] == 1                                 # race CS
    win.Flush_all()
    request = win.Rget(value, 1, 5)                     # race RG
    show(value)                                         # (the access is in show)
    request.Wait()
    win.Get([pair, 2, MPI.INT], 1, 6)                   # race PG
    win.Put(pair, 1, 8)                                 # race PG
    win.Flush(1)
    win.Put(pair, 1, 8)                                 # the Get completed: allowed
    win.Flush(1)
    win.Put(one, 1, 10)                                 # race OW
    win.Get(one, 1, 11)                                 # race OW
    win.Flush(1)
win.Unlock_all()
comm.Barrier()                                          # no lock held at Post
group = comm.Get_group()
if rank == 1:
    win.Post(group.Incl([0]))
    win.Wait()
elif rank == 0:
    win.Start(group.Incl([1]))
    win.Get(value, 1, 7)                                # race PS
    value[0] = 3                                        # race PS
    win.Complete()
    value[0] = 4                                        # completed: allowed
comm.Barrier()
wide = MPI.Win.Allocate(4096 * 4 if rank == 1 else 0, 4, comm=comm)
if rank == 0:       # a buffer with whole pages: a load past its first words is seen
    big = np.zeros(4096, "i4")
    view = big[2048:]
    wide.Lock(1)
    wide.Get(big, 1, 0)                                 # race BG
    seen = int(view[3])                                 # race BG (through another name)
    wide.Unlock(1)
    seen = int(view[3])                                 # completed: allowed
comm.Barrier()
wide.Free()
win.Free()
