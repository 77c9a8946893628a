"""The mpi backend: mpi4py on the installed MPI (MPICH or Open MPI), with shmrma's
extensions written in standard MPI-3 calls on top of it (README, "Running on a
cluster"). Nothing here is imported on the shared-memory backend.
"""
