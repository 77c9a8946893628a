"""Everything else stands on: native atomics and the one wait policy, the rank's MPI
lock, shared-memory segments, the job and its ranks, errors, handles, info,
attributes, error handlers, and the settings read from the environment.
"""
