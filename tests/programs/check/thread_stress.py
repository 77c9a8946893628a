"""Race checker stress for the threads of a rank (tests/test_check.py): THREADS
threads of rank 0 take turns through a threading.Lock, each turn a Put to one
word of rank 1 and its Flush; rank 1's threads take turns through a Queue to
load it after the Barrier. Ordered throughout: no race may be reported, whatever
the interleaving."""
import os
import queue
import threading

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
THREADS, TURNS = int(os.environ.get("THREADS", "4")), 20
win = MPI.Win.Allocate(8 if comm.rank == 1 else 0, 8, comm=comm)
if comm.rank == 0:
    turn = threading.Lock()
    win.Lock_all()

    def putter(me):
        for n in range(TURNS):
            with turn:
                win.Put(np.array([me * TURNS + n], "i8"), 1, 0)
                win.Flush(1)
    workers = [threading.Thread(target=putter, args=(me,)) for me in range(THREADS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    win.Unlock_all()
    comm.Barrier()
elif comm.rank == 1:
    word = np.frombuffer(win.tomemory(), dtype="i8")
    tokens = queue.Queue()
    seen = []

    def loader():
        tokens.get()
        seen.append(int(word[0]))
        tokens.put(None)
    workers = [threading.Thread(target=loader) for _ in range(THREADS)]
    for worker in workers:
        worker.start()
    comm.Barrier()
    tokens.put(None)
    for worker in workers:
        worker.join()
    assert len(set(seen)) == 1, seen
else:
    comm.Barrier()
win.Free()
