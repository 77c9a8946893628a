"""Large messages: streamed through the pair's staging ring in chunks (issue 13).

A payload larger than a quarter of the ring travels through a staging ring the
sender makes at its first large message to a receiver (2 MiB at these sizes),
chunk by chunk: the receiver copies one out while the sender copies the next one
in. These tests cross every boundary of that path: one chunk, many, more than the
ring holds; receives posted before, during and after the chunks arrive; windows
of nonblocking sends that wait for room holding the user's buffer; the buffered
mode, which copies instead; ANY_SOURCE with several senders streaming at once;
truncation (the chunks are dropped, the error raised, the next message intact);
synchronous sends; objects; and the exchange of two blocking large sends, which
must not deadlock (a waiting sender drains its own incoming chunks).
No numbered rule covers messages; the behaviour is MPI-3.1 §3.4-3.5's.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from mpitest import nothing_left_behind

MIB = 1 << 20


def pattern(n, seed):
    return ((np.arange(n, dtype=np.uint64) * 2654435761 + seed) % 251).astype(np.uint8)


@pytest.mark.timeout(90)
def test_sizes_around_every_chunk_boundary_arrive_whole():
    """R-none (MPI-3.1 §3.2.4): 16 KiB + 1 (the first staged size), one chunk, one chunk
    + 1, many chunks, and 5 MiB (more than the 2 MiB ring) arrive whole, whether the
    receive was posted before the send or after it."""
    sizes = [16 * 1024 + 1, 256 * 1024, 256 * 1024 + 1, 3 * MIB + 7, 5 * MIB]

    def body():
        comm = MPI.COMM_WORLD
        bad = []
        for index, n in enumerate(sizes):
            # posted first: the chunks go straight into the buffer
            got = np.zeros(n, np.uint8)
            if comm.rank == 1:
                request = comm.Irecv(got, 0, index)
            comm.Barrier()
            if comm.rank == 0:
                comm.Send(pattern(n, index), 1, index)
            else:
                request.Wait()
                bad += [] if np.array_equal(got, pattern(n, index)) else [("posted", n)]
            # sent first: the chunks wait as an unexpected message (the sender's
            # Isend completes once the receiver drained them, in its Recv)
            if comm.rank == 0:
                sent = comm.Isend(pattern(n, index + 50), 1, 100 + index)
            comm.Barrier()
            if comm.rank == 1:
                got[:] = 0
                comm.Recv(got, 0, 100 + index)
                bad += [] if np.array_equal(got, pattern(n, index + 50)) else [("late", n)]
            else:
                sent.Wait()
        nothing_left_behind(comm)
        return bad

    assert shmrma.launch(body, 2, timeout=80) == [[], []]


@pytest.mark.timeout(90)
def test_a_window_of_isends_holds_buffers_until_sent_and_bsend_copies():
    """MPI-3.1 §3.7: 24 Isends of 1 MiB (12 rings' worth) complete once sent, each
    buffer read when its turn comes; a Bsend's buffer may be overwritten at once."""
    def body():
        comm = MPI.COMM_WORLD
        count, n = 24, MIB
        if comm.rank == 0:
            buffers = [pattern(n, i) for i in range(count)]
            requests = [comm.Isend(buffers[i], 1, 7) for i in range(count)]
            MPI.Request.Waitall(requests)
            reused = pattern(n, 99)
            comm.Bsend(reused, 1, 8)
            reused[:] = 0           # the buffered send copied it already
            comm.Barrier()
            return True
        received = [np.zeros(n, np.uint8) for _ in range(count)]
        MPI.Request.Waitall([comm.Irecv(received[i], 0, 7) for i in range(count)])
        last = np.zeros(n, np.uint8)
        comm.Recv(last, 0, 8)
        comm.Barrier()
        return (all(np.array_equal(received[i], pattern(n, i)) for i in range(count))
                and np.array_equal(last, pattern(n, 99)))

    assert shmrma.launch(body, 2, timeout=80) == [True, True]


@pytest.mark.timeout(90)
def test_any_source_while_several_senders_stream_at_once():
    """MPI-3.1 §3.5: three senders stream 3 MiB each to rank 0 at the same time; ANY_SOURCE
    receives take each whole, and the statuses name the senders."""
    def body():
        comm = MPI.COMM_WORLD
        n = 3 * MIB
        if comm.rank == 0:
            seen = {}
            for _ in range(comm.size - 1):
                got = np.zeros(n, np.uint8)
                status = MPI.Status()
                comm.Recv(got, MPI.ANY_SOURCE, 3, status)
                seen[status.Get_source()] = (np.array_equal(got, pattern(n, status.Get_source())),
                                             status.Get_count())
            return seen
        comm.Send(pattern(n, comm.rank), 0, 3)
        return None

    seen = shmrma.launch(body, 4, timeout=80)[0]
    assert seen == {1: (True, 3 * MIB), 2: (True, 3 * MIB), 3: (True, 3 * MIB)}


@pytest.mark.timeout(90)
def test_truncation_drops_the_chunks_and_the_next_message_arrives():
    """MPI-3.1 §3.2.4: a 1 MiB message into 512 KiB raises ERR_TRUNCATE and leaves the
    buffer as it was; the next large message from the same sender is intact."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            comm.Send(pattern(MIB, 1), 1, 1)
            comm.Send(pattern(MIB, 2), 1, 2)
            return None
        small = np.full(MIB // 2, 7, np.uint8)
        try:
            comm.Recv(small, 0, 1)
            error = None
        except MPI.Exception as exc:
            error = exc.Get_error_class()
        whole = np.zeros(MIB, np.uint8)
        comm.Recv(whole, 0, 2)
        return error, bool((small == 7).all()), np.array_equal(whole, pattern(MIB, 2))

    assert shmrma.launch(body, 2, timeout=80)[1] == (MPI.ERR_TRUNCATE, True, True)


@pytest.mark.timeout(90)
def test_blocking_large_sends_both_ways_do_not_deadlock():
    """Two ranks Send 6 MiB (three rings) to each other before either receives: each
    waiting sender drains the other's chunks, so both complete (MPI-3.1 §3.5 calls
    such a program unsafe; shmrma runs it anyway). Sendrecv_replace and Ssend too."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.rank
        n = 6 * MIB
        comm.Send(pattern(n, comm.rank), peer, 5)
        got = np.zeros(n, np.uint8)
        comm.Recv(got, peer, 5)
        ok = np.array_equal(got, pattern(n, peer))
        buf = pattern(2 * MIB, 10 + comm.rank)
        comm.Sendrecv_replace(buf, peer, 6, peer, 6)
        ok = ok and np.array_equal(buf, pattern(2 * MIB, 10 + peer))
        if comm.rank == 0:
            comm.Ssend(pattern(MIB, 3), 1, 9)
        else:
            comm.Recv(got[:MIB], 0, 9)
            ok = ok and np.array_equal(got[:MIB], pattern(MIB, 3))
        return ok

    assert shmrma.launch(body, 2, timeout=80) == [True, True]


@pytest.mark.timeout(90)
def test_large_objects_and_matched_probes():
    """send/recv of a 3 MiB object, and Mprobe of a large buffer message (Probe counts
    its bytes once the whole message is there)."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            comm.send({"blob": b"z" * (3 * MIB)}, 1, 1)
            comm.Send(pattern(2 * MIB, 4), 1, 2)
            return None
        obj = comm.recv(source=0, tag=1)
        status = MPI.Status()
        message = comm.Mprobe(0, 2, status)
        got = np.zeros(2 * MIB, np.uint8)
        message.Recv(got)
        return len(obj["blob"]), status.Get_count(), np.array_equal(got, pattern(2 * MIB, 4))

    assert shmrma.launch(body, 2, timeout=80)[1] == (3 * MIB, 2 * MIB, True)
