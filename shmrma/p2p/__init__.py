"""Point-to-point messages: the transport and MPI matching (the C engine and its Python
fallback), a communicator's state, the requests of the point-to-point calls, matched
probes, buffered and partitioned sends.
"""
