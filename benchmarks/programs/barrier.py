"""Barrier latency: the same program on shmrma and on mpi4py (SHMRMA_BENCH_IMPL=mpi4py).

Prints one line on rank 0: ``barrier_us <microseconds per Barrier>``.
"""
import os
import sys

if os.environ.get("SHMRMA_BENCH_IMPL") == "mpi4py":
    from mpi4py import MPI
else:
    from shmrma import MPI

iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
warmup = max(10, iterations // 10)
comm = MPI.COMM_WORLD
for _ in range(warmup):
    comm.Barrier()
start = MPI.Wtime()
for _ in range(iterations):
    comm.Barrier()
elapsed = MPI.Wtime() - start
worst = comm.allreduce(elapsed, op=MPI.MAX)
if comm.rank == 0:
    print("barrier_us %.3f" % (worst / iterations * 1e6), flush=True)
