"""MPI calls from several threads of every rank at once (THREAD_MULTIPLE).

    shmrma-run -n R threaded_calls.py KIND THREADS ITERATIONS [SIZES]

Thread t of every rank makes ITERATIONS exchanges with every other rank, its
messages' sizes taken in turn from SIZES (bytes, comma-separated; default
1 B to 8 MiB), tagged t; each payload encodes (source, thread, iteration), so a
message received by the wrong thread or a byte out of place is reported with
where it came from. KIND:

- send, isend, sendrecv, issend, probe, mprobe, improbe, obj, iobj: the
  point-to-point calls (blocking in an order safe for synchronous sends);
- anysource, anytag: Isend, and Irecv from ANY_SOURCE with tag t, or from the
  peer with ANY_TAG (the status must name the payload's sender and thread);
- selfpair: thread 2k sends to its own rank, thread 2k+1 receives (mpi4py's
  demo/threads/sendrecv.py), the one rank's threads waking each other;
- collectives: Bcast, Allreduce, Allgather, Ibcast, Iallreduce, Ialltoall and
  the object bcast and allgather, each thread on a duplicate of its own;
- rma: Accumulate, Fetch_and_op, Put then Get of every thread on one window in
  one Lock_all epoch, the sums checked at the end.

Rank 0 prints PASS when every thread of every rank got every message right; a
wrong message exits 3, an exception in a thread 4, a thread still running after
the watchdog (60 s) 5.
"""
import os
import sys
import threading
import traceback

import numpy as np

from mpi4py import MPI

KIND, THREADS, ITERATIONS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
SIZES = [int(s) for s in (sys.argv[4] if len(sys.argv) > 4 else
                          "1,64,16384,16392,65536,262144,1048576,8388608").split(",")]
MULT = 0x9E3779B97F4A7C15      # odd: a payload's first word names its key
WATCHDOG = 60.0

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
peers = [p for p in range(size) if p != rank]


class Wrong(Exception):
    pass


def key_of(source, thread, iteration):
    return (source * 256 + thread) * 1_000_000 + iteration + 1


def named(key):
    key -= 1
    return "rank %d thread %d iteration %d" % (key // 1_000_000 // 256,
                                               key // 1_000_000 % 256, key % 1_000_000)


def nbytes_of(thread, iteration):
    return SIZES[(thread + iteration) % len(SIZES)]


def payload(key, nbytes):
    words = np.arange((nbytes + 7) // 8, dtype=np.uint64)
    with np.errstate(over="ignore"):
        words += np.uint64(key * MULT % 2**64)
    return words.view(np.uint8)[:nbytes]


def check(got, key, nbytes, what):
    if len(got) != nbytes:
        raise Wrong("%s: %d bytes, want %d of %s" % (what, len(got), nbytes, named(key)))
    want = payload(key, nbytes)
    if not np.array_equal(got, want):
        where = int(np.flatnonzero(got != want)[0])
        source = ""
        if nbytes >= 8:
            first = int(got[:8].view(np.uint64)[0])
            source = "; its first word is %s's" % named(first * pow(MULT, -1, 2**64) % 2**64)
        raise Wrong("%s: byte %d differs from %s's payload%s" % (what, where, named(key),
                                                                 source))


# --- point-to-point ---------------------------------------------------------------

def received(buf, status):
    return buf[:status.Get_count(MPI.BYTE)]


def receive(source, tag, buf):
    """(source, tag, bytes) of one message, by the kind's receive call."""
    status = MPI.Status()
    if KIND in ("obj", "iobj"):
        request = comm.irecv(source=source, tag=tag) if KIND == "iobj" else None
        data = request.wait(status) if request else comm.recv(source=source, tag=tag,
                                                               status=status)
        return status.Get_source(), status.Get_tag(), np.frombuffer(data, np.uint8)
    if KIND == "probe":
        comm.Probe(source, tag, status)
        comm.Recv([buf, MPI.BYTE], status.Get_source(), status.Get_tag(), status)
    elif KIND in ("mprobe", "improbe"):
        message = comm.Mprobe(source, tag) if KIND == "mprobe" else None
        while message is None:
            message = comm.Improbe(source, tag)
        message.Recv([buf, MPI.BYTE], status)
    elif KIND == "send":
        comm.Recv([buf, MPI.BYTE], source, tag, status)
    else:
        comm.Irecv([buf, MPI.BYTE], source, tag).Wait(status)
    return status.Get_source(), status.Get_tag(), received(buf, status)


def send(dest, tag, key, nbytes, blocking):
    data = payload(key, nbytes)
    if KIND in ("obj", "iobj"):
        if blocking:
            return comm.send(data.tobytes(), dest, tag)
        return comm.isend(data.tobytes(), dest, tag)
    if KIND == "issend":
        return comm.Issend([data, MPI.BYTE], dest, tag)
    if blocking:
        return comm.Send([data, MPI.BYTE], dest, tag)
    return comm.Isend([data, MPI.BYTE], dest, tag)


WILDCARD = KIND in ("anysource", "anytag")
if WILDCARD:    # the payload names its message: 8 bytes at least
    SIZES = [max(8, nbytes) for nbytes in SIZES]
keys = []       # every message received by every thread of this rank


def verify(thread, got, source, tag, seen):
    """The message the status names is the one that thread should have got next from
    that sender and tag (MPI's non-overtaking rule: ``seen`` counts them); a wildcard
    receive's message is named by its payload, checked against its status."""
    got_source, got_tag, data = got
    if source not in (MPI.ANY_SOURCE, got_source) or tag not in (MPI.ANY_TAG, got_tag):
        raise Wrong("rank %d thread %d received from rank %d tag %d, asked for %d, %d"
                    % (rank, thread, got_source, got_tag, source, tag))
    if WILDCARD:
        key = int(data[:8].view(np.uint64)[0]) * pow(MULT, -1, 2**64) % 2**64 - 1
        iteration = key % 1_000_000
        if key_of(got_source, got_tag, iteration) != key + 1:
            raise Wrong("rank %d thread %d: the status says rank %d tag %d, the payload %s"
                        % (rank, thread, got_source, got_tag, named(key + 1)))
    else:
        iteration = seen.get((got_source, got_tag), 0)
        seen[got_source, got_tag] = iteration + 1
    check(data, key_of(got_source, got_tag, iteration), nbytes_of(got_tag, iteration),
          "rank %d thread %d, message %d from rank %d tag %d" % (
              rank, thread, iteration, got_source, got_tag))
    keys.append(key_of(got_source, got_tag, iteration))


def expected_keys():
    if KIND == "selfpair":
        return sorted(key_of(rank, t // 2, i) for t in range(1, THREADS, 2)
                      for i in range(ITERATIONS))
    return sorted(key_of(p, t, i) for p in peers for t in range(THREADS)
                  for i in range(ITERATIONS))


def point_to_point(thread):
    buf = np.zeros(max(SIZES), dtype=np.uint8)
    seen = {}
    if KIND == "selfpair":
        pair = thread // 2
        for i in range(ITERATIONS):
            if thread % 2 == 0:
                send(rank, pair, key_of(rank, pair, i), nbytes_of(pair, i), True)
            else:
                verify(thread, receive(rank, pair, buf), rank, pair, seen)
        return
    for i in range(ITERATIONS):
        mine = key_of(rank, thread, i), nbytes_of(thread, i)
        if KIND == "sendrecv":
            for p in peers:
                status = MPI.Status()
                comm.Sendrecv([payload(*mine), MPI.BYTE], p, thread, [buf, MPI.BYTE], p,
                              thread, status)
                verify(thread, (status.Get_source(), status.Get_tag(),
                                received(buf, status)), p, thread, seen)
        elif KIND in ("send", "obj"):
            for p in peers:     # the lower rank sends first: safe for synchronous sends
                if rank < p:
                    send(p, thread, *mine, True)
                verify(thread, receive(p, thread, buf), p, thread, seen)
                if rank > p:
                    send(p, thread, *mine, True)
        else:
            requests = [send(p, thread, *mine, False) for p in peers]
            for p in peers:
                source = MPI.ANY_SOURCE if KIND == "anysource" else p
                tag = MPI.ANY_TAG if KIND == "anytag" else thread
                verify(thread, receive(source, tag, buf), source, tag, seen)
            MPI.Request.Waitall(requests)


# --- collectives on a communicator per thread, RMA on one window ---------------------

def collectives(thread, dup):
    for i in range(ITERATIONS):
        nbytes = max(8, nbytes_of(thread, i)) // 8 * 8
        key = key_of(0, thread, i)
        data = payload(key, nbytes) if dup.rank == 0 else np.zeros(nbytes, np.uint8)
        dup.Bcast(data, root=0)
        check(data, key, nbytes, "Bcast of thread %d" % thread)
        data = payload(key, nbytes) if dup.rank == 0 else np.zeros(nbytes, np.uint8)
        dup.Ibcast(data, root=0).Wait()
        check(data, key, nbytes, "Ibcast of thread %d" % thread)
        count = nbytes // 8
        mine = np.full(count, key_of(dup.rank, thread, i), dtype=np.int64)
        total = np.zeros(count, dtype=np.int64)
        want = sum(key_of(r, thread, i) for r in range(dup.size))
        dup.Allreduce(mine, total)
        if not (total == want).all():
            raise Wrong("Allreduce of thread %d: %d, want %d" % (thread, total[0], want))
        total[:] = 0
        dup.Iallreduce(mine, total).Wait()
        if not (total == want).all():
            raise Wrong("Iallreduce of thread %d: %d, want %d" % (thread, total[0], want))
        parts = np.zeros(dup.size, dtype=np.int64)
        dup.Ialltoall(np.full(dup.size, mine[0]), parts).Wait()
        dup.Allgather(mine[:1], parts)
        if list(parts) != [key_of(r, thread, i) for r in range(dup.size)]:
            raise Wrong("Ialltoall/Allgather of thread %d: %s" % (thread, list(parts)))
        if dup.bcast((thread, i) if dup.rank == 0 else None, root=0) != (thread, i) or \
                dup.allgather(thread) != [thread] * dup.size:
            raise Wrong("object collectives of thread %d" % thread)


def rma(thread, win, counts):
    one, got = np.ones(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    slot = 2 + rank * THREADS + thread
    for i in range(ITERATIONS):
        target = (rank + thread + i) % size
        win.Accumulate(one, target, target=0, op=MPI.SUM)
        win.Fetch_and_op(one, got, target, target_disp=1, op=MPI.SUM)
        win.Put(np.array([key_of(rank, thread, i)], dtype=np.int64), target, target=slot)
        win.Flush(target)
        back = np.zeros(1, dtype=np.int64)
        win.Get(back, target, target=slot)
        win.Flush(target)
        if back[0] != key_of(rank, thread, i):
            raise Wrong("Get of thread %d from rank %d: %d, want %s" % (
                thread, target, back[0], named(key_of(rank, thread, i))))
    counts[thread] = ITERATIONS


# --- running the threads -------------------------------------------------------------

def run(body, *args):
    outcomes = [None] * THREADS

    def wrapped(thread):
        try:
            body(thread, *args)
            outcomes[thread] = 0
        except Wrong as exc:
            outcomes[thread] = 3
            sys.stderr.write("WRONG: %s\n" % exc)
        except BaseException:
            outcomes[thread] = 4
            sys.stderr.write("rank %d thread %d:\n%s" % (rank, thread, traceback.format_exc()))

    threads = [threading.Thread(target=wrapped, args=(t,), daemon=True)
               for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WATCHDOG)
    status = max((5 if outcome is None else outcome) for outcome in outcomes)
    if status:
        sys.stderr.write("rank %d: threads ended %s (None: still running)\n"
                         % (rank, outcomes))
        sys.stderr.flush()
        os._exit(status)


def main():
    assert MPI.Query_thread() == MPI.THREAD_MULTIPLE, MPI.Query_thread()
    if KIND == "collectives":
        dups = [comm.Dup() for _ in range(THREADS)]
        run(lambda thread: collectives(thread, dups[thread]))
        for dup in dups:
            dup.Free()
    elif KIND == "rma":
        win = MPI.Win.Allocate(8 * (2 + size * THREADS), disp_unit=8, comm=comm)
        memory = np.frombuffer(win.tomemory(), dtype=np.int64)
        memory[:] = 0
        comm.Barrier()
        counts = [0] * THREADS
        win.Lock_all()
        run(rma, win, counts)
        win.Unlock_all()
        comm.Barrier()
        want = size * THREADS * ITERATIONS
        sums = comm.allreduce(int(memory[0])), comm.allreduce(int(memory[1]))
        comm.Barrier()
        win.Free()
        if sums != (want, want):
            sys.stderr.write("WRONG: accumulated %s, want %d each\n" % (sums, want))
            os._exit(3)
    else:
        run(point_to_point)
        if sorted(keys) != expected_keys():
            sys.stderr.write("WRONG: rank %d received %d messages (%d distinct), want %d\n"
                             % (rank, len(keys), len(set(keys)), len(expected_keys())))
            os._exit(3)
    comm.Barrier()
    if rank == 0:
        print("PASS", flush=True)


main()
