"""Proposal 000 §1.2.4, Example A3 (checklist P08-A3): a halo exchange whose
"halo updated" AND "halo free" signals are both synchronization counters.

`my_halos_updated` (count 4) counts the neighbour directions whose Puts into my
halos have completed (put_req[i]: Sync_ops_init MODE_WIN_PUT, R156); the counter
`dest_halos_free` (count 4) counts the neighbour directions whose halos I fill
that are free, signalled by their free_req: sync_mode 0 requests, a pure
notification that covers no RMA (R157, A30). A rank Puts only after its
dest_halos_free_req completed. Handles travel as the seed sends them:
Isend/Irecv typed MPI.HANDLE_SYNC (A25, R154).

Fixed (A16-A19):
  - A17: the seed Startalls free_req every iteration but never completes it, so
    nothing is ever signalled (A15) and the second Start is erroneous
    (ERR_REQUEST). Phase 1 Waitalls free_req right after its Startall (mode 0
    completes at once and delivers the signals); phase 2 creates every request
    with info restart=true (R163, A22), Starts them once and completes them with
    Wait/Waitall each iteration, then frees them right after a completing Wait
    (A23).
  - A16: a neighbour one iteration ahead signals "halo free" while my
    dest_halos_free_req is complete and not yet restarted; shmrma banks that early
    decrement and the next Start (or automatic restart) adds the count to it
    (R155, R160), so neither a lost signal (deadlock) nor ERR_WIN_COUNTER.
  - A19: to_halos_updated declared (the seed declares to_halos_free twice),
    to_neighbor -> toneighbor, &dest_halos_free_req; the two handle exchanges use
    distinct tags (1 and 2) so a neighbour listed twice (2 x 2 torus) cannot
    swap them.
  - A18: Sync_ops_init gets the handle received from the target (on 3 ranks,
    3 x 1, west == east == the rank itself, R161).
Filled in as in halo_a1_barrier.py: 2-D periodic integer grid over a px x py
process torus, subarray types, an asymmetric 5-point stencil, STEPS updates
after a first halo-filling pass. After each phase the whole local array (interior
and halos, not the unused corners) must equal the serial numpy stencil on the
whole grid, exactly.
    shmrma-run -n 4 scripts/proposal/halo_a3_counters.py
"""
from shmrma import MPI
from torus import (A, NUMBER_OF_NEIGHBOURS, STEPS, check, comm, expected, fromtype,
                   exchange_handle, initial_grid, put_halos, px, py, rank, toneighbor, totype, update, win)

my_counters = win.Alloc_sync_objects(2, MPI.INFO_NULL)
my_halos_updated, dest_halos_free = my_counters
to_halos_updated = exchange_handle(my_halos_updated, 1)
to_halos_free = exchange_handle(dest_halos_free, 2)
RESTART = MPI.Info.Create()
RESTART.Set("restart", "true")


def make_requests(info):
    """my_halos_updated_req, dest_halos_free_req, put_req[], free_req[]"""
    return (win.Sync_object_init(my_halos_updated, NUMBER_OF_NEIGHBOURS, info),
            win.Sync_object_init(dest_halos_free, NUMBER_OF_NEIGHBOURS, info),
            [win.Sync_ops_init(toneighbor[i], MPI.MODE_WIN_PUT, to_halos_updated[i], info)
             for i in range(NUMBER_OF_NEIGHBOURS)],
            [win.Sync_ops_init(toneighbor[i], 0, to_halos_free[i], info)
             for i in range(NUMBER_OF_NEIGHBOURS)])




# phase 1: Start every iteration; free_req completed right after its Startall (A17)
my_halos_updated_req, dest_halos_free_req, put_req, free_req = make_requests(MPI.INFO_NULL)
initial_grid()
for step in range(STEPS + 1):
    MPI.Prequest.Startall(put_req)
    my_halos_updated_req.Start()
    dest_halos_free_req.Start()          # early "free" signals are banked (A16)
    if step:
        update(A)
    MPI.Prequest.Startall(free_req)      # my halo regions are free to be updated
    MPI.Request.Waitall(free_req)        # A17: this delivers the signals (A15)
    dest_halos_free_req.Wait()           # the neighbours' halos are free
    put_halos()
    MPI.Request.Waitall(put_req)
    my_halos_updated_req.Wait()          # my four halos are updated (R158)
check(A, expected, "phase 1 (Start each iteration)")
for request in [my_halos_updated_req, dest_halos_free_req] + put_req + free_req:
    request.Free()
comm.Barrier()

# phase 2: every request restarts itself (R163), Started once
my_halos_updated_req, dest_halos_free_req, put_req, free_req = make_requests(RESTART)
initial_grid()
MPI.Prequest.Startall(put_req + free_req + [my_halos_updated_req, dest_halos_free_req])
for step in range(STEPS + 1):
    if step:
        update(A)
    MPI.Request.Waitall(free_req)        # signals "my halos are free", re-arms (A22)
    dest_halos_free_req.Wait()           # completes and re-arms; early signals stay banked
    put_halos()
    MPI.Request.Waitall(put_req)
    my_halos_updated_req.Wait()
check(A, expected, "phase 2 (restart=true)")
for request in [my_halos_updated_req, dest_halos_free_req] + put_req + free_req:
    request.Free()                       # right after a completing Wait (A23)

RESTART.Free()
win.Free_sync_objects(my_counters)
assert my_counters == [MPI.SYNC_NULL, MPI.SYNC_NULL]   # R153
for datatype in fromtype + totype:
    datatype.Free()
win.Free()
print("rank %d: proposal Example A3 (%d x %d ranks, %d steps) ok" % (rank, px, py, STEPS))
