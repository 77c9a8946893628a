"""Notification latency: one 8-byte Put plus a completion signal, the consumer
waiting for it, ping-pong between 2 ranks; the result is half a round trip.

    shmrma-run -n 2 -m shmrma.bench.notify FORM [ITERATIONS]
    shmrma-run --backend mpi -n 2 -m shmrma.bench.notify FORM [ITERATIONS]
                              (SHMRMA_BENCH_IMPL=shmrma-mpi: shmrma's counters on mpi4py)
    mpiexec -n 2 python -m shmrma.bench.notify standard [ITERATIONS]   (SHMRMA_BENCH_IMPL=mpi4py)

FORM is
  counters  the proposal's synchronization counters: Sync_ops_init(peer, MODE_WIN_PUT)
            around the Put, the consumer waiting in Sync_object_init's request,
            both requests with info restart=true (shmrma, on either backend)
  per_message  the same requests without restart, started for every message:
            Start, Put, Wait (shmrma, on either backend)
  standard  MPI-3 calls only: inside Lock_all, Put + Flush, then Fetch_and_op(+1) on
            the peer's flag + Flush; the consumer polls its own flag with
            Fetch_and_op(NO_OP) + Flush until it moved

Rank 0 prints ``notify_us <microseconds>``.
"""
import sys

from .jobs import mpi_module

FORMS = ("counters", "per_message", "standard")


def ping_pong(MPI, comm, send, receive, iterations):
    """Rank 0 sends then receives, rank 1 receives then sends: the elapsed time."""
    if comm.Get_rank() == 0:
        first, second = send, receive
    else:
        first, second = receive, send
    start = MPI.Wtime()
    for _ in range(iterations):
        first()
        second()
    return MPI.Wtime() - start


def counter_requests(MPI, win, comm, peer, info):
    """(my counter, a Sync_ops request signalling the peer's, a Sync_object request
    on mine of count 1), with ``info``."""
    mine = win.Alloc_sync_objects(1)
    theirs = comm.sendrecv(mine[0], dest=peer, source=peer)
    return (mine, win.Sync_ops_init(peer, MPI.MODE_WIN_PUT, theirs, info),
            win.Sync_object_init(mine[0], 1, info))


def counters(MPI, win, comm, peer, iterations):
    import numpy as np
    mine, signal, arrived = counter_requests(MPI, win, comm, peer, {"restart": "true"})
    data = np.zeros(1, dtype="i8")
    put, signalled = win.Put, signal.Wait
    signal.Start()
    arrived.Start()
    comm.Barrier()

    def send():
        put(data, peer)
        signalled()
    elapsed = ping_pong(MPI, comm, send, arrived.Wait, iterations)
    signal.Free()
    arrived.Free()
    win.Free_sync_objects(mine)
    return elapsed


def per_message(MPI, win, comm, peer, iterations):
    import numpy as np
    mine, signal, arrived = counter_requests(MPI, win, comm, peer, None)
    data = np.zeros(1, dtype="i8")
    comm.Barrier()

    def send():
        signal.Start()
        win.Put(data, peer)
        signal.Wait()

    def receive():
        arrived.Start()     # a signal that came first is banked (A16)
        arrived.Wait()
    elapsed = ping_pong(MPI, comm, send, receive, iterations)
    comm.Barrier()
    signal.Free()
    arrived.Free()
    win.Free_sync_objects(mine)
    return elapsed


def flag_signals(MPI, win, me, peer, data):
    """(send, receive) of the MPI-3 form inside Lock_all: send Puts ``data`` to the
    peer, Flushes, adds 1 to the peer's flag (displacement 1) and Flushes; receive
    polls my own flag with Fetch_and_op(NO_OP) + Flush until it moved. Flags must
    start at 0 and be read by nobody else."""
    import numpy as np
    one_, got, seen = np.ones(1, "i8"), np.zeros(1, "i8"), [0]

    def send():
        win.Put(data, peer, 0)
        win.Flush(peer)
        win.Fetch_and_op(one_, got, peer, 1, MPI.SUM)
        win.Flush(peer)

    def receive():
        while True:
            win.Fetch_and_op(one_, got, me, 1, MPI.NO_OP)
            win.Flush(me)
            if got[0] > seen[0]:
                seen[0] = int(got[0])
                return
    return send, receive


def standard(MPI, win, comm, peer, iterations):
    import numpy as np
    me = comm.Get_rank()
    np.frombuffer(win.tomemory(), dtype="i8")[:] = 0
    win.Lock_all()
    comm.Barrier()      # both flags are 0 before either signals
    send, receive = flag_signals(MPI, win, me, peer, np.zeros(1, "i8"))
    elapsed = ping_pong(MPI, comm, send, receive, iterations)
    win.Unlock_all()
    return elapsed


def main(argv):
    if not argv or argv[0] not in FORMS:
        raise SystemExit("usage: python -m shmrma.bench.notify {%s} [ITERATIONS]"
                         % "|".join(FORMS))
    form = argv[0]
    iterations = int(argv[1]) if len(argv) > 1 else 20000
    MPI = mpi_module()
    comm = MPI.COMM_WORLD
    if comm.Get_size() != 2:
        raise SystemExit("notify runs on exactly 2 ranks")
    win = MPI.Win.Allocate(16, 8, MPI.INFO_NULL, comm)
    peer = 1 - comm.Get_rank()
    run = {"counters": counters, "per_message": per_message, "standard": standard}[form]
    run(MPI, win, comm, peer, max(10, iterations // 10))      # warm-up
    comm.Barrier()
    elapsed = comm.allreduce(run(MPI, win, comm, peer, iterations), op=MPI.MAX)
    if comm.Get_rank() == 0:
        print("notify_us %.4f" % (elapsed / iterations / 2 * 1e6), flush=True)
    comm.Barrier()
    win.Free()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
