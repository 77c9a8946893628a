"""Synchronization latency at N ranks, run by every rank:

    shmrma-run -n N -m shmrma.bench.sync KIND [ITERATIONS]
    mpiexec -n N python -m shmrma.bench.sync KIND [ITERATIONS]   (SHMRMA_BENCH_IMPL=mpi4py)

KIND is one of
  fence   a fence round: every rank puts 8 bytes to its right neighbour, then Fence
  pscw    a PSCW ring round: Post(left), Start(right), Put 8 B, Complete, Wait
  lock    Lock(right, EXCLUSIVE), Put 8 B, Unlock(right) on every rank at once
          (each window is locked by one origin: the lock path, not contention)

The window comes from Win.Allocate; a tenth of the iterations (at least 10)
warm up first, then a Barrier, then the timed loop. Rank 0 prints
``<KIND>_us <microseconds per round>``: the slowest rank's time over the
iterations, so a round counts when every rank has finished it.
"""
import sys
from functools import partial

from .jobs import mpi_module

KINDS = ("fence", "pscw", "lock")


def rounds(MPI, win, kind, peers, data):
    """The zero-argument function doing one round of ``kind``."""
    left, right, to_left, to_right = peers
    put = partial(win.Put, data, right, 0)
    if kind == "fence":
        fence = partial(win.Fence, 0)

        def one():
            put()
            fence()
    elif kind == "pscw":
        post, start = partial(win.Post, to_left), partial(win.Start, to_right)
        complete, wait = win.Complete, win.Wait

        def one():
            post()
            start()
            put()
            complete()
            wait()
    else:
        lock = partial(win.Lock, right, MPI.LOCK_EXCLUSIVE)
        unlock = partial(win.Unlock, right)

        def one():
            lock()
            put()
            unlock()
    return one


def main(argv):
    if not argv or argv[0] not in KINDS:
        raise SystemExit("usage: python -m shmrma.bench.sync {%s} [ITERATIONS]"
                         % "|".join(KINDS))
    kind = argv[0]
    iterations = int(argv[1]) if len(argv) > 1 else 10000
    MPI = mpi_module()
    import numpy as np
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    win = MPI.Win.Allocate(8, 8, MPI.INFO_NULL, comm)
    group = win.Get_group()
    left, right = (rank - 1) % size, (rank + 1) % size
    peers = (left, right, group.Incl([left]), group.Incl([right]))
    one = rounds(MPI, win, kind, peers, np.zeros(1, dtype="i8"))
    if kind == "fence":
        win.Fence(0)
    for _ in range(max(10, iterations // 10)):
        one()
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iterations):
        one()
    elapsed = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
    if kind == "fence":
        win.Fence(MPI.MODE_NOSUCCEED)
    if rank == 0:
        print("%s_us %.4f" % (kind, elapsed / iterations * 1e6), flush=True)
    win.Free()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
