"""Communicators as MPI shows them: Comm, Intracomm, Intercomm, the topologies, groups,
sessions and mpi4py's communicator locks.
"""
