"""OSU-style ``-s flush`` latency of 8-byte one-sided calls on 2 ranks: the same
program on shmrma and on mpi4py (BENCH_IMPL=mpi4py).

    rma_latency.py [ITERATIONS [OP ...]]      OP in put get acc fop cas (default: all)

The window is made by Win.Allocate (8 bytes, disp_unit 8). For each op, rank 0
locks rank 1 (LOCK_SHARED, as osu_*_latency does), runs ITERATIONS/10 warm-up
iterations of ``op; Flush(1)``, then the timed loop, and unlocks; rank 1 waits
in a Barrier. Put and Get move 8 bytes (a uint8 array, MPI_BYTE/UNSIGNED_CHAR as
OSU's MPI_CHAR); Accumulate, Fetch_and_op (SUM) and Compare_and_swap use one
int64 (OMB 5.x's long long). Prints on rank 0 ``module <file of the package>``,
then one line per op: ``<op>_us <microseconds per op+Flush>``.
"""
import os
import sys

if os.environ.get("BENCH_IMPL") == "mpi4py":
    from mpi4py import MPI
else:
    from shmrma import MPI

import numpy as np

OPS = ("put", "get", "acc", "fop", "cas")


def loop(win, op, n):
    """``n`` iterations of op + Flush(1); returns the elapsed seconds."""
    flush = win.Flush
    if op == "put":
        buf, call = np.zeros(8, dtype="u1"), win.Put
        start = MPI.Wtime()
        for _ in range(n):
            call(buf, 1)
            flush(1)
    elif op == "get":
        buf, call = np.zeros(8, dtype="u1"), win.Get
        start = MPI.Wtime()
        for _ in range(n):
            call(buf, 1)
            flush(1)
    elif op == "acc":
        buf, call, sum_ = np.ones(1, dtype="i8"), win.Accumulate, MPI.SUM
        start = MPI.Wtime()
        for _ in range(n):
            call(buf, 1, None, sum_)
            flush(1)
    elif op == "fop":
        buf, res, call, sum_ = np.ones(1, dtype="i8"), np.zeros(1, dtype="i8"), \
            win.Fetch_and_op, MPI.SUM
        start = MPI.Wtime()
        for _ in range(n):
            call(buf, res, 1, 0, sum_)
            flush(1)
    else:
        buf, cmp, res, call = np.ones(1, dtype="i8"), np.zeros(1, dtype="i8"), \
            np.zeros(1, dtype="i8"), win.Compare_and_swap
        start = MPI.Wtime()
        for _ in range(n):
            call(buf, cmp, res, 1, 0)
            flush(1)
    return MPI.Wtime() - start


def main():
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    ops = sys.argv[2:] or OPS
    comm = MPI.COMM_WORLD
    if comm.Get_size() != 2:
        raise SystemExit("rma_latency.py runs on exactly 2 ranks")
    win = MPI.Win.Allocate(8, 8, MPI.INFO_NULL, comm)
    if comm.Get_rank() == 0:
        print("module %s" % sys.modules[MPI.__name__.rpartition(".")[0]].__file__, flush=True)
    for op in ops:
        comm.Barrier()
        if comm.Get_rank() == 0:
            win.Lock(1, MPI.LOCK_SHARED)
            loop(win, op, max(10, iterations // 10))
            elapsed = loop(win, op, iterations)
            win.Unlock(1)
            print("%s_us %.4f" % (op, elapsed / iterations * 1e6), flush=True)
        comm.Barrier()
    win.Free()


main()
