"""shmrma: MPI one-sided communication on one machine, with mpi4py's API."""

__version__ = "0.1.0"
