"""Proposal 000 §1.2.4, Example A2 (checklist P08-A2): a halo exchange whose
"halo updated" signal is a synchronization counter and whose "halo free" signal
is a zero-byte message: each rank Irecvs one from and Isends one to every
neighbour (tag SYNCTAG) after update(A), and issues the Put to neighbour `index`
as soon as Waitany reports that neighbour's message (R57, R162).

As in A1, `my_halos_updated` (count 4) counts the neighbour directions whose Puts
into my halos have completed, and `put_req[i]` (Sync_ops_init, MODE_WIN_PUT)
completes my Puts to `toneighbor[i]` and decrements its counter (R152-R158, A15);
the Puts sit in the counter epochs the active put_req open (A14, R165). Handles
travel as the seed sends them: Isend/Irecv typed MPI.HANDLE_SYNC (A25, R154).

Filled in (as in halo_a1_barrier.py): toneighbor[] = north, south, west, east on a
px x py process torus (4 ranks: 2 x 2, so a neighbour appears twice and two of its
zero-byte messages match my two receives from it in order; 3 ranks: 3 x 1, the
west and east neighbour is the rank itself, R161/A18); frombuf/fromtype/totype are
subarray types of A; update(A) is an asymmetric 5-point integer stencil;
converged() is STEPS updates, and the first pass only fills the halos.
Fixed: the prose's "a simple barrier is used" is a leftover of A1 (A19); every
request (recv_req by Waitany, send_req, put_req, my_halos_updated_req) is
completed in each iteration (checklist P08-A2). The whole local array (interior
and halos, not the unused corners) must equal the serial numpy stencil on the
whole grid, exactly.
    shmrma-run -n 3 scripts/proposal/halo_a2_messages.py
"""
import numpy as np

from shmrma import MPI
from torus import (A, NUMBER_OF_NEIGHBOURS, STEPS, check, comm, expected, fromtype,
                   exchange_handle, initial_grid, px, py, rank, todisp, toneighbor, totype, update, win)

my_counters = win.Alloc_sync_objects(1, MPI.INFO_NULL)
my_halos_updated = my_counters[0]
to_halos_updated = exchange_handle(my_halos_updated, 1)
my_halos_updated_req = win.Sync_object_init(my_halos_updated, NUMBER_OF_NEIGHBOURS,
                                            MPI.INFO_NULL)
put_req = [win.Sync_ops_init(toneighbor[i], MPI.MODE_WIN_PUT, to_halos_updated[i],
                             MPI.INFO_NULL) for i in range(NUMBER_OF_NEIGHBOURS)]


SYNCTAG = 7
dummy_buf = np.zeros(1, dtype=np.intc)
recv_req = [MPI.REQUEST_NULL] * NUMBER_OF_NEIGHBOURS
send_req = [MPI.REQUEST_NULL] * NUMBER_OF_NEIGHBOURS
initial_grid()
for step in range(STEPS + 1):
    MPI.Prequest.Startall(put_req)
    my_halos_updated_req.Start()
    if step:
        update(A)
    # my halo regions are free to be updated: a dummy message to every neighbour
    for i in range(NUMBER_OF_NEIGHBOURS):
        recv_req[i] = comm.Irecv([dummy_buf, 0, MPI.INT], toneighbor[i], SYNCTAG)
        send_req[i] = comm.Isend([dummy_buf, 0, MPI.INT], toneighbor[i], SYNCTAG)
    # Put into each neighbour's halo as soon as it is free
    done = set()
    for i in range(NUMBER_OF_NEIGHBOURS):
        index = MPI.Request.Waitany(recv_req)
        assert index not in done and 0 <= index < NUMBER_OF_NEIGHBOURS, (rank, index)
        done.add(index)
        win.Put([A, 1, fromtype[index]], toneighbor[index],
                [todisp[index], 1, totype[index]])
    MPI.Request.Waitall(put_req)         # my Puts are complete: signal the neighbours
    MPI.Request.Waitall(send_req)
    my_halos_updated_req.Wait()          # my four halos are updated (R158)
check(A, expected, "Example A2")

for request in put_req + [my_halos_updated_req]:
    request.Free()
win.Free_sync_objects(my_counters)
for datatype in fromtype + totype:
    datatype.Free()
win.Free()
print("rank %d: proposal Example A2 (%d x %d ranks, %d steps) ok" % (rank, px, py, STEPS))
