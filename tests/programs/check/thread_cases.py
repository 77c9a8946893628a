"""Race checker cases for the threads of a rank (tests/test_check.py,
check/threads.py): an RMA call of one thread and an access of another thread of
the same or another rank race unless the program orders the two threads (with
the threading module) as well as the ranks (with MPI). After RMARaceBench's hybrid
cases, with Python threads for OpenMP's. Each case has a word of rank 1's
window of its own and ends with every thread joined and a Barrier; each racy
case has a race-free variant after it."""
import threading
import time

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
win = MPI.Win.Allocate(16 * 4, 4, comm=comm)
mem = np.frombuffer(win.tomemory(), dtype="i4")
LATER = 0.1     # a thread's access comes after the other side's, as it happens


def run(*bodies):
    """Run each body (name, function) in a thread of its own."""
    threads = [threading.Thread(target=body, name=name) for name, body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def put(word, value):
    win.Lock(1, MPI.LOCK_EXCLUSIVE)
    win.Put(np.array([value], "i4"), 1, word)
    win.Unlock(1)


# TL: the target's main thread synchronizes with the origin, another thread loads
if rank == 0:
    win.Lock(1, MPI.LOCK_EXCLUSIVE)
    win.Put(np.array([1], "i4"), 1, 0)                  # race TL
    win.Unlock(1)
    comm.Barrier()
elif rank == 1:
    def load_late():
        time.sleep(LATER)
        print("word 0:", mem[0])                        # race TL
    worker = threading.Thread(target=load_late, name="load_late")
    worker.start()
    comm.Barrier()
    worker.join()
else:
    comm.Barrier()
comm.Barrier()

# the same, the loading thread told by an Event after the Barrier: ordered
if rank == 0:
    put(1, 2)
    comm.Barrier()
elif rank == 1:
    told = threading.Event()

    def load_told():
        told.wait()
        print("word 1:", mem[1])
    worker = threading.Thread(target=load_told, name="load_told")
    worker.start()
    comm.Barrier()
    told.set()
    worker.join()
else:
    comm.Barrier()
comm.Barrier()

# TO: the origin's Put is another thread's than its Barrier
if rank == 0:
    def put_word_2():
        win.Lock(1, MPI.LOCK_EXCLUSIVE)
        win.Put(np.array([3], "i4"), 1, 2)              # race TO
        win.Unlock(1)
    worker = threading.Thread(target=put_word_2, name="put_word_2")
    worker.start()
    time.sleep(LATER)   # the Put comes first, as it happens
    comm.Barrier()
    worker.join()
elif rank == 1:
    comm.Barrier()
    print("word 2:", mem[2])                            # race TO
else:
    comm.Barrier()
comm.Barrier()

# the same, the putting thread joined before the Barrier: ordered
if rank == 0:
    worker = threading.Thread(target=put, args=(3, 4), name="put")
    worker.start()
    worker.join()
    comm.Barrier()
elif rank == 1:
    comm.Barrier()
    print("word 3:", mem[3])
else:
    comm.Barrier()
comm.Barrier()

# TP: two threads' Puts to one word in one lock_all epoch, unordered; then the same
# two, the second after the first's Flush, handed over through a Lock: ordered
if rank == 0:
    win.Lock_all()
    handed = threading.Lock()
    handed.acquire()

    def first():
        win.Put(np.array([5], "i4"), 1, 4)              # race TP
        win.Put(np.array([6], "i4"), 1, 5)
        win.Flush(1)
        handed.release()

    def second():
        time.sleep(LATER)
        win.Put(np.array([7], "i4"), 1, 4)              # race TP
        with handed:
            win.Put(np.array([8], "i4"), 1, 5)
    run(("first", first), ("second", second))
    win.Unlock_all()
comm.Barrier()

# TS: a thread of the target stores while the origin's Get may read: joined after
# the Barrier; then joined before it: ordered
if rank == 1:
    def store(word):
        mem[word] = 9                                   # race TS
    worker = threading.Thread(target=store, args=(6,), name="store_6")
    worker.start()
    time.sleep(LATER)
    comm.Barrier()
    worker.join()
    worker = threading.Thread(target=store, args=(7,), name="store_7")
    worker.start()
    worker.join()
    comm.Barrier()
else:
    comm.Barrier()
    if rank == 0:
        out = np.zeros(2, "i4")
        win.Lock(1, MPI.LOCK_SHARED)
        win.Get(out[:1], 1, 6)                          # race TS
        win.Unlock(1)
    comm.Barrier()
    if rank == 0:
        win.Lock(1, MPI.LOCK_SHARED)
        win.Get(out[1:], 1, 7)
        win.Unlock(1)
comm.Barrier()

# TG: one thread of rank 0 Gets into rank 0's own window memory, another loads it
# (RMARaceBench's hybrid local cases); then the load waits for an Event set after
# the Unlock: ordered
if rank == 0:
    got = threading.Event()

    def get_word(word, tell=False):
        win.Lock(1, MPI.LOCK_EXCLUSIVE)
        win.Get(mem[word:word + 1], 1, word)            # race TG
        win.Unlock(1)
        if tell:
            got.set()

    def load(word, wait=False):
        if wait:
            got.wait()
        else:
            time.sleep(LATER)
        print("word %d:" % word, mem[word])             # race TG
    run(("get_8", lambda: get_word(8)), ("load_8", lambda: load(8)))
    run(("get_9", lambda: get_word(9, tell=True)), ("load_9", lambda: load(9, wait=True)))
comm.Barrier()
win.Free()
