"""Proposal 000 §1.2.4, Example A1 (checklist P08-A1): a halo exchange whose
"halo updated" signal is a synchronization counter and whose "halo free" signal
is a barrier, here the amendment's window barrier (004).

Each rank owns an nx x ny block of a 2-D periodic integer grid plus a one-cell
halo; its window is that array A. The counter `my_halos_updated` (count 4) counts
the neighbour directions whose Puts into my halos have completed; `put_req[i]`
(Sync_ops_init, MODE_WIN_PUT) completes my Puts to `toneighbor[i]` and decrements
that neighbour's counter (R152-R158, A15). Handles travel as the seed
sends them: Isend/Irecv typed MPI.HANDLE_SYNC (A25, R154).

Filled in: toneighbor[] = north, south, west, east on a px x py process torus
(4 ranks: 2 x 2, so north == south and west == east: two put_req to one target
both signal, A30; 3 ranks: 3 x 1, west == east == self, R161 with the handle the
rank sent itself, A18); frombuf/fromtype/totype are subarray types of A; update(A)
is an asymmetric 5-point integer stencil; converged() is STEPS updates, and the
first pass only fills the halos (the seed's loop assumes valid halos at its first
update).

Fixed: Waitall(put_req) and Wait(my_halos_updated_req) go at the end of the loop
body, not after it (A19). Two phases run from the same initial grid:
  1. the window barrier: win.Barrier(NOPRECEDE | NOSUCCEED) says "my halos are
     free"; Startall(put_req) moves after it, because a window barrier may not
     overlap a counter epoch (A14, R165: it is fence-like, R166), and the Puts
     then sit in the counter epochs the put_req open (A14);
  2. the seed's literal order with MPI_Barrier(MPI_COMM_WORLD) = comm.Barrier().
After each phase the whole local array (interior and halos, not the unused
corners) must equal the serial numpy stencil on the whole grid, exactly.
    shmrma-run -n 4 scripts/proposal/halo_a1_barrier.py
"""
from shmrma import MPI
from torus import (A, NUMBER_OF_NEIGHBOURS, STEPS, check, comm, expected, fromtype,
                   exchange_handle, initial_grid, put_halos, px, py, rank, toneighbor, totype, update, win)

my_counters = win.Alloc_sync_objects(1, MPI.INFO_NULL)
my_halos_updated = my_counters[0]
to_halos_updated = exchange_handle(my_halos_updated, 1)
my_halos_updated_req = win.Sync_object_init(my_halos_updated, NUMBER_OF_NEIGHBOURS,
                                            MPI.INFO_NULL)
put_req = [win.Sync_ops_init(toneighbor[i], MPI.MODE_WIN_PUT, to_halos_updated[i],
                             MPI.INFO_NULL) for i in range(NUMBER_OF_NEIGHBOURS)]



# phase 1: "halo free" is the window barrier (004)
initial_grid()
for step in range(STEPS + 1):
    my_halos_updated_req.Start()
    if step:
        update(A)
    win.Barrier(MPI.MODE_NOPRECEDE | MPI.MODE_NOSUCCEED)   # my halos are free
    MPI.Prequest.Startall(put_req)                          # after it (A14)
    put_halos()
    MPI.Request.Waitall(put_req)         # inside the loop (A19): signals the neighbours
    my_halos_updated_req.Wait()          # my four halos are updated (R158)
check(A, expected, "phase 1 (window barrier)")

# phase 2: the seed's order, with MPI_Barrier(MPI_COMM_WORLD)
initial_grid()
comm.Barrier()
for step in range(STEPS + 1):
    MPI.Prequest.Startall(put_req)
    my_halos_updated_req.Start()
    if step:
        update(A)
    comm.Barrier()                       # my halos are free
    put_halos()
    MPI.Request.Waitall(put_req)
    my_halos_updated_req.Wait()
check(A, expected, "phase 2 (comm barrier)")

for request in put_req + [my_halos_updated_req]:
    request.Free()
win.Free_sync_objects(my_counters)
assert my_counters == [MPI.SYNC_NULL]   # R153
for datatype in fromtype + totype:
    datatype.Free()
win.Free()
print("rank %d: proposal Example A1 (%d x %d ranks, %d steps) ok" % (rank, px, py, STEPS))
