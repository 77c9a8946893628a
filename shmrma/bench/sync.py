"""Synchronization latency at N ranks, run by every rank:

    shmrma-run -n N -m shmrma.bench.sync KIND [ITERATIONS]
    mpiexec -n N python -m shmrma.bench.sync KIND [ITERATIONS]   (SHMRMA_BENCH_IMPL=mpi4py)

KIND is one of
  fence      a fence round: every rank puts 8 bytes to its right neighbour, then Fence
  pscw       a PSCW ring round: Post(left), Start(right), Put 8 B, Complete, Wait
  lock       Lock(right, EXCLUSIVE), Put 8 B, Unlock(right) on every rank at once
             (each window is locked by one origin: the lock path, not contention)
  lock_all   Lock_all, Put 8 B to the right, Unlock_all
  barrier    Put 8 B to the right, then the window barrier win.Barrier() (shmrma
             only: the amendment's nonblocking fence; its MPI-3 form is fence)
  counters   a token ring of notifications: rank 0 Puts 8 B to rank 1 inside a
             Sync_ops_init request's counter epoch and completes it (signalling
             rank 1's counter); each rank waits on its counter, then passes the
             token on the same way, back to rank 0 (shmrma only)
  flags      the same token ring with MPI-3 calls: inside Lock_all, Put + Flush,
             then Fetch_and_op(+1) on the next rank's flag + Flush; the next rank
             polls its flag with Fetch_and_op(NO_OP) + Flush until it moved
  accumulate inside Lock_all, every rank Accumulates 8 B (SUM) into rank 0 and
             Flushes: one target as ranks grow; the time is per call and rank
             (compare also shows N / time as the Mops/s of all N ranks together)

The window comes from Win.Allocate; a tenth of the iterations (at least 10)
warm up first, then a Barrier, then the timed loop. Rank 0 prints
``<KIND>_us <microseconds per round>``: the slowest rank's time over the
iterations, so a round counts when every rank has finished it.
"""
import sys
from functools import partial

from .jobs import mpi_module
from .notify import flag_signals

KINDS = ("fence", "pscw", "lock", "lock_all", "barrier", "counters", "flags", "accumulate")
# the epoch each kind runs inside, opened before the warm-up and closed after timing
_EPOCHS = {"flags": "lock_all", "accumulate": "lock_all", "fence": "fence",
           "barrier": "barrier"}


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
    elif kind == "lock":
        lock = partial(win.Lock, right, MPI.LOCK_EXCLUSIVE)
        unlock = partial(win.Unlock, right)

        def one():
            lock()
            put()
            unlock()
    else:
        one = _OTHER_ROUNDS[kind](MPI, win, peers, data, put)
    return one


def _lock_all_round(MPI, win, peers, data, put):
    lock_all, unlock_all = win.Lock_all, win.Unlock_all

    def one():
        lock_all()
        put()
        unlock_all()
    return one


def _barrier_round(MPI, win, peers, data, put):
    barrier = win.Barrier

    def one():
        put()
        barrier()
    return one


def _token_ring(MPI, send, receive):
    """One round of a token passed around the ranks, rank 0 first."""
    if MPI.COMM_WORLD.Get_rank() == 0:
        def one():
            send()
            receive()
    else:
        def one():
            receive()
            send()
    return one


def _counters_round(MPI, win, peers, data, put):
    left, right = peers[:2]
    mine = win.Alloc_sync_objects(1)
    theirs = MPI.COMM_WORLD.sendrecv(mine[0], dest=left, source=right)
    restart = {"restart": "true"}
    signal = win.Sync_ops_init(right, MPI.MODE_WIN_PUT, theirs, restart)
    arrived = win.Sync_object_init(mine[0], 1, restart)
    signal.Start()
    arrived.Start()
    signal_wait = signal.Wait

    def send():
        put()
        signal_wait()
    one = _token_ring(MPI, send, arrived.Wait)

    def cleanup():      # both requests were just completed by a Wait, so Free is legal
        signal.Free()
        arrived.Free()
        win.Free_sync_objects(mine)
    one.cleanup = cleanup
    return one


def _flags_round(MPI, win, peers, data, put):
    me = MPI.COMM_WORLD.Get_rank()
    return _token_ring(MPI, *flag_signals(MPI, win, me, peers[1], data))


def _accumulate_round(MPI, win, peers, data, put):
    accumulate, flush = partial(win.Accumulate, data, 0, 0, MPI.SUM), partial(win.Flush, 0)

    def one():
        accumulate()
        flush()
    return one


_OTHER_ROUNDS = {"lock_all": _lock_all_round, "barrier": _barrier_round,
                 "counters": _counters_round, "flags": _flags_round,
                 "accumulate": _accumulate_round}


def _open(MPI, win, kind):
    epoch = _EPOCHS.get(kind)
    if epoch == "fence":
        win.Fence(0)
    elif epoch == "lock_all":
        win.Lock_all()
    elif epoch == "barrier":
        win.Barrier()


def _close(MPI, win, kind):
    epoch = _EPOCHS.get(kind)
    if epoch == "fence":
        win.Fence(MPI.MODE_NOSUCCEED)
    elif epoch == "lock_all":
        win.Unlock_all()


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
    win = MPI.Win.Allocate(16, 8, MPI.INFO_NULL, comm)     # data, then a flag
    group = win.Get_group()
    left, right = (rank - 1) % size, (rank + 1) % size
    peers = (left, right, group.Incl([left]), group.Incl([right]))
    np.frombuffer(win.tomemory(), dtype="i8")[:] = 0   # the flags start at 0
    comm.Barrier()
    one = rounds(MPI, win, kind, peers, np.zeros(1, dtype="i8"))
    _open(MPI, win, kind)
    for _ in range(max(10, iterations // 10)):
        one()
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iterations):
        one()
    elapsed = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
    _close(MPI, win, kind)
    getattr(one, "cleanup", lambda: None)()
    if rank == 0:
        print("%s_us %.4f" % (kind, elapsed / iterations * 1e6), flush=True)
    win.Free()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
