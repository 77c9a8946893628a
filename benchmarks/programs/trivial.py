"""The smallest MPI program: start, one Barrier, end (start-up cost benchmark)."""
import os

if os.environ.get("SHMRMA_BENCH_IMPL") == "mpi4py":
    from mpi4py import MPI
else:
    from shmrma import MPI

MPI.COMM_WORLD.Barrier()
