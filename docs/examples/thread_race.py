"""Rank 0 Puts from one thread and calls the Barrier from another, which nothing
orders after the Put: rank 1's load after the Barrier races with it.

    shmrma-run --check -n 2 docs/examples/thread_race.py
"""
import threading
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
win = MPI.Win.Allocate(4 if comm.rank == 1 else 0, disp_unit=4, comm=comm)

if comm.rank == 0:
    def put():
        win.Lock(1, MPI.LOCK_EXCLUSIVE)
        win.Put(np.array([42], dtype="i4"), 1)
        win.Unlock(1)

    worker = threading.Thread(target=put, name="putter")
    worker.start()
    time.sleep(0.1)     # the Put comes first, as it happens; worker.join() here orders it
    comm.Barrier()
    worker.join()
else:
    comm.Barrier()
    word = np.frombuffer(win.tomemory(), dtype="i4")
    print("word 0 holds", word[0])
win.Free()
