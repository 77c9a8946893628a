"""MPI-3.1 Figure 11.6 (§11.7.3, checklist §4b FIG-11.6): symmetric communication.
Both processes run Post, Start, Put, Complete, Wait towards each other; Post does not
block, so each start-put-complete can finish and then both Waits return: no deadlock
whatever the amount of data (R147; also R85, R86, R88). Run with 8 bytes and with
64 MiB, as the checklist asks; after its Wait each rank checks every word the other
put into its window.
Filled in (the figure shows only the calls): a window of 64 MiB of int64 per rank,
each rank Putting a pattern derived from its rank into the other's window.
    shmrma-run -n 2 scripts/examples/ex11_fig06_symmetric_pscw.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
assert comm.size == 2, "Figure 11.6 runs on exactly 2 processes"
other = 1 - rank
BIG = 64 * 2 ** 20 // 8                # 64 MiB of int64
win = MPI.Win.Allocate(BIG * 8, disp_unit=8, comm=comm)
window = np.frombuffer(win.tomemory(), dtype="i8")
world = comm.Get_group()
peer = world.Incl([other])
for count in (1, BIG):                 # 8 bytes, then 64 MiB
    data = np.arange(count, dtype="i8")
    data *= 2
    data += rank + 10 * count
    win.Post(peer)
    win.Start(peer)
    win.Put(data, other, 0)
    win.Complete()
    win.Wait()
    data += other - rank               # what the other rank put here
    assert window[0] == data[0], (count, window[:2], data[:2])
    assert np.array_equal(window[:count], data), count
    del data
peer.Free()
world.Free()
del window
win.Free()
print("rank %d: Figure 11.6 ok" % rank)
