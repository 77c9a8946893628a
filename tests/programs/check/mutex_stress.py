"""mpi4py.util.sync's recursive Mutex on shmrma, hammered (tests/test_check.py): its
lock hand-over (an Accumulate REPLACE on the next holder's flag, seen there with
loads after Win.Sync) and the holder's count (Fetch_and_op SUM on the same word) are
ordered; the checker must report nothing."""
import sys

import mpi4py

from shmrma import MPI

sys.modules["mpi4py.MPI"] = mpi4py.MPI = MPI     # mpi4py.util.sync on shmrma's MPI
from mpi4py.util import sync  # noqa: E402

comm = MPI.COMM_WORLD
mutex = sync.Mutex(recursive=True, comm=comm)
for i in range(30):
    with mutex:
        with mutex:
            mutex.count()
    if i % 3 == 0:
        while not mutex.acquire(blocking=False):
            pass
        mutex.release()
comm.Barrier()
mutex.free()
