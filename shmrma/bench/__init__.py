"""shmrma-bench: OSU-style one-sided microbenchmarks, run on shmrma and on
mpi4py with MPICH side by side. Sits above the ``MPI`` facade: its rank
program is an ordinary user of ``MPI`` (``osu.py``); ``cli.py`` and
``compare.py`` only start jobs and read their output."""
