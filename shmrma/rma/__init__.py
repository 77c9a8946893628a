"""One-sided communication (MPI-3.1 chapter 11): windows and their memory, epochs, the
communication calls, active and passive target synchronization, the window barrier,
the synchronization counters and Change_comm, with the C fast path's setup.
"""
