"""Amendment 004 (Rabenseifner), the MPI_Iwin_barrier loop (checklist AM-IB1):

    while (...) {
      MPI_Iwin_barrier(flag, win, request);  /* ends local access, opens RMA  */
      /* some computation */
      MPI_Put(&x, ..., win);                 /* before the Wait: may block (A3) */
      MPI_Wait(request);
      MPI_Iwin_barrier(flag, win, request);  /* ends the RMA epoch; x reusable */
      /* some computation */
      MPI_Wait(request);
      /* local access to the window */
    }

Filled in: flag = 0 (MPI_WEAK/MPI_STRONG are defined nowhere, A1: a fence-style
assertion); the window is W = [from left, from right] (int64) and each rank Puts
x[0] into its right neighbour's W[0] and x[1] into its left neighbour's W[1] on a
ring; "some computation" is a numpy sum checked afterwards; "local access" checks
that W holds both neighbours' values of this iteration, then clears W.
Checked rules: R166 (Ibarrier returns a request; Barrier = Ibarrier + Wait),
R167 (x is overwritten right after the second Ibarrier returns: the Puts are
complete at the origin), R168 (after the Wait the neighbours' Puts are visible
locally), R169/A3 (the Puts are issued between Ibarrier and its Wait, overlapping
the barrier), R170 (on odd iterations rank 0 uses the blocking win.Barrier() for
both barriers, mixed with the others' Ibarrier; on every third iteration the
second barrier is completed by a Test loop that keeps computing), R172 (no local
access to W between an Ibarrier and the completion of the next barrier).
    shmrma-run -n 3 scripts/proposal/ibarrier_loop.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
left, right = (rank - 1) % size, (rank + 1) % size
ITERATIONS = 12
W = np.zeros(2, dtype=np.int64)          # [from left, from right]
win = MPI.Win.Create(W, disp_unit=W.itemsize, comm=comm)
x = np.zeros(2, dtype=np.int64)
work = np.arange(2000, dtype=np.int64)


def value(origin, iteration, which):
    return 1000 * origin + 10 * iteration + which


def some_computation(iteration):
    return int((work * (iteration + 1)).sum())


def barrier(iteration):
    """Ibarrier, or on odd iterations the blocking Barrier on rank 0 (R170)."""
    if rank == 0 and iteration % 2:
        win.Barrier(0)
        return None
    request = win.Ibarrier(0)
    assert isinstance(request, MPI.Request)
    return request


comm.Barrier()
for it in range(ITERATIONS):
    request = barrier(it)                # ends the local-access epoch, opens RMA
    total = some_computation(it)
    x[0], x[1] = value(rank, it, 0), value(rank, it, 1)
    win.Put(x[0:1], right, 0)            # may block until `right` entered (A3, R169)
    win.Put(x[1:2], left, 1)
    if request is not None:
        request.Wait()
    request = barrier(it)                # ends the RMA epoch
    x[:] = -1                            # R167: the origin buffer is reusable at once
    again = some_computation(it)
    if request is not None and it % 3 == 0:
        while not request.Test():        # keep computing while the barrier completes
            again = some_computation(it)
    elif request is not None:
        request.Wait()
    # local access to the window (R168)
    expected = [value(left, it, 0), value(right, it, 1)]
    if W.tolist() != expected or total != again:
        raise SystemExit("rank %d iteration %d: W = %s, expected %s"
                         % (rank, it, W.tolist(), expected))
    W[:] = 0                             # local store before the next Ibarrier posts W
win.Free()
print("rank %d: amendment Ibarrier loop (%d iterations) ok" % (rank, ITERATIONS))
