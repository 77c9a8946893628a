"""Halo exchange time per iteration: the proposal's Example A3 (counters for
"halo updated" and "halo free", with the fixes of A16-A19) against
the same exchange written with Fence.

    shmrma-run -n N -m shmrma.bench.halo FORM [ITERATIONS]
    shmrma-run --backend mpi -n N -m shmrma.bench.halo FORM [ITERATIONS]
                              (SHMRMA_BENCH_IMPL=shmrma-mpi: shmrma's counters on mpi4py)
    mpiexec -n N python -m shmrma.bench.halo fence [ITERATIONS]   (SHMRMA_BENCH_IMPL=mpi4py)

A 2-D periodic grid of float64, ROWS x COLS per rank, split by rows over a ring
of ranks: each iteration Puts the first and last owned rows into the halo rows
of the ranks above and below, then applies a 5-point average. FORM ``counters``
signals each halo with a restart-mode Sync_ops request and waits for both with
one Sync_object request, and tells the neighbours their halo may be refilled
with mode-0 signals; FORM ``fence`` brackets the Puts with Fence; FORM
``messages`` moves the same rows with Isend/Irecv and Waitall (the message
passing of the proposal's Example A2, without its counters). After a tenth of
ITERATIONS untimed (OMB's warm-up), rank 0 prints
``halo_us <microseconds per iteration>`` (the slowest rank) and a checksum line
``halo_sum <sum of the grid>`` so both forms can be compared for equality.
"""
import sys

from .jobs import mpi_module

ROWS, COLS = 16, 256
WARMUP_SHARE = 10       # a tenth of the iterations first, untimed: the fresh window's
                        # first touches and a checker's first periods are not the loop's
FORMS = ("counters", "fence", "messages")


def stencil(grid):
    """The interior rows 1..ROWS from the halo-extended grid (periodic in columns)."""
    import numpy as np
    inner = grid[1:-1]
    return 0.2 * (inner + grid[:-2] + grid[2:] + np.roll(inner, 1, axis=1)
                  + np.roll(inner, -1, axis=1))


def setup(MPI):
    import numpy as np
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    win = MPI.Win.Allocate((ROWS + 2) * COLS * 8, 8, MPI.INFO_NULL, comm)
    grid = np.frombuffer(win.tomemory(), dtype="f8").reshape(ROWS + 2, COLS)
    grid[:] = 0.0
    rows = np.arange(rank * ROWS, (rank + 1) * ROWS)[:, None]
    grid[1:-1] = (rows * 7 + np.arange(COLS)[None, :] * 3) % 11
    return comm, win, grid, (rank - 1) % size, (rank + 1) % size


def fence_exchange(MPI, win, grid, up, down):
    """One iteration: the first owned row to up's bottom halo, the last to down's top."""
    win.Fence()
    win.Put(grid[1], up, (ROWS + 1) * COLS)
    win.Put(grid[ROWS], down, 0)
    win.Fence()
    grid[1:-1] = stencil(grid)


def messages_exchange(MPI, comm, grid, up, down):
    """One iteration with messages only: the first owned row to up, the last to down,
    each halo row received from the neighbour it mirrors (Isend/Irecv, Waitall)."""
    MPI.Request.Waitall([comm.Irecv(grid[0], up, 1), comm.Irecv(grid[ROWS + 1], down, 2),
                         comm.Isend(grid[1], up, 2), comm.Isend(grid[ROWS], down, 1)])
    grid[1:-1] = stencil(grid)


def counters_setup(MPI, comm, win, up, down):
    restart = {"restart": "true"}
    updated, free = win.Alloc_sync_objects(2)
    # my counters go to both neighbours; theirs come back (pickled handles)
    down_handles = comm.sendrecv((updated, free), dest=up, source=down)
    up_handles = comm.sendrecv((updated, free), dest=down, source=up)
    puts = [win.Sync_ops_init(up, MPI.MODE_WIN_PUT, up_handles[0], restart),
            win.Sync_ops_init(down, MPI.MODE_WIN_PUT, down_handles[0], restart)]
    frees = [win.Sync_ops_init(up, 0, up_handles[1], restart),
             win.Sync_ops_init(down, 0, down_handles[1], restart)]
    halos_updated = win.Sync_object_init(updated, 2, restart)
    targets_free = win.Sync_object_init(free, 2, restart)
    requests = puts + frees + [halos_updated, targets_free]
    MPI.Prequest.Startall(requests)
    MPI.Request.Waitall(frees)          # at the start every halo is free
    return puts, frees, halos_updated, targets_free, requests, [updated, free]


def counters_exchange(MPI, win, grid, up, down, state):
    puts, frees, halos_updated, targets_free, _, _ = state
    targets_free.Wait()                 # both neighbours consumed what I wrote last
    win.Put(grid[1], up, (ROWS + 1) * COLS)
    win.Put(grid[ROWS], down, 0)
    MPI.Request.Waitall(puts)           # signals: their halos are updated
    halos_updated.Wait()                # both my halos arrived
    new = stencil(grid)
    MPI.Request.Waitall(frees)          # my halos are read: they may write again
    grid[1:-1] = new


def main(argv):
    if not argv or argv[0] not in FORMS:
        raise SystemExit("usage: python -m shmrma.bench.halo {%s} [ITERATIONS]"
                         % "|".join(FORMS))
    form = argv[0]
    iterations = int(argv[1]) if len(argv) > 1 else 2000
    MPI = mpi_module()
    comm, win, grid, up, down = setup(MPI)
    state = None
    if form == "counters":
        state = counters_setup(MPI, comm, win, up, down)

        def step():
            counters_exchange(MPI, win, grid, up, down, state)
    elif form == "messages":
        def step():
            messages_exchange(MPI, comm, grid, up, down)
    else:
        def step():
            fence_exchange(MPI, win, grid, up, down)
    for _ in range(iterations // WARMUP_SHARE):    # untimed, as OMB's skip iterations
        step()
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iterations):
        step()
    elapsed = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
    total = comm.allreduce(float(grid[1:-1].sum()), op=MPI.SUM)
    if state is not None:
        for request in state[4]:
            request.Free()
        win.Free_sync_objects(state[5])
    if comm.Get_rank() == 0:
        print("halo_us %.4f" % (elapsed / iterations * 1e6))
        print("halo_sum %.6f" % total, flush=True)
    comm.Barrier()
    win.Free()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
