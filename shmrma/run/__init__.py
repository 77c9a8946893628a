"""Running jobs: shmrma-run's command line, forking the ranks and ending the job
cleanly, and mpi4py's name inside a job. ``python -m shmrma.run`` is shmrma-run.
"""
