"""Large messages read straight from the sender's memory (issue 13, item 2).

With SHMRMA_DIRECT_MIN=n a user's send of at least n bytes whose buffer stays the
sender's until it completes (Send, Isend, Ssend, send of an object) posts a
direct record; the receiver, once it matched the message, copies it from the
sender's memory with process_vm_readv and gives the record's span of the staging
ring back, which completes the send. A receiver that may not read its sender
(EPERM, or SHMRMA_VM_READV=0 here) refuses: the matched message then streams
through the staging ring, and so does every later one of that pair.
No numbered rule covers messages; the behaviour is MPI-3.1 §3.4-3.5's.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic
from mpitest import HANG_S, dead_rank_ends_the_job, nothing_left_behind, raises_mpi

MIB = 1 << 20
c_engine_only = pytest.mark.skipif(atomic.BACKEND != "c",
                                   reason="the fallback engine stages every large message")


def pattern(n, seed):
    return ((np.arange(n, dtype=np.uint64) * 2654435761 + seed) % 251).astype(np.uint8)


@pytest.fixture
def direct(monkeypatch):
    monkeypatch.setenv("SHMRMA_DIRECT_MIN", str(256 * 1024))
    monkeypatch.delenv("SHMRMA_VM_READV", raising=False)


@pytest.fixture
def refused(monkeypatch):
    monkeypatch.setenv("SHMRMA_DIRECT_MIN", str(256 * 1024))
    monkeypatch.setenv("SHMRMA_VM_READV", "0")


def exchange_in_order():
    """Rank 0 sends 4 MiB messages (Send, Isend) between small ones; rank 1 checks
    each arrives whole and in order: a list of what went wrong."""
    comm = MPI.COMM_WORLD
    n = 4 * MIB
    bad = []
    if comm.rank == 0:
        comm.send("first", 1, 1)
        comm.Send(pattern(n, 1), 1, 1)
        comm.send("second", 1, 1)
        held = pattern(n, 2)
        requests = [comm.Isend(held, 1, 1), comm.isend("third", 1, 1)]
        MPI.Request.Waitall(requests)
        comm.Ssend(pattern(n, 3), 1, 1)
    else:
        got = np.zeros(n, np.uint8)
        if comm.recv(None, 0, 1) != "first":
            bad.append("first")
        comm.Recv(got, 0, 1)
        bad += [] if np.array_equal(got, pattern(n, 1)) else ["Send"]
        if comm.recv(None, 0, 1) != "second":
            bad.append("second")
        got[:] = 0
        request = comm.Irecv(got, 0, 1)
        request.Wait()
        bad += [] if np.array_equal(got, pattern(n, 2)) else ["Isend"]
        if comm.recv(None, 0, 1) != "third":
            bad.append("third")
        status = MPI.Status()
        comm.Probe(0, 1, status)
        bad += [] if status.Get_count(MPI.BYTE) == n else ["Probe %d" % status.Get_count()]
        comm.Recv(got, 0, 1)
        bad += [] if np.array_equal(got, pattern(n, 3)) else ["Ssend"]
    nothing_left_behind(comm)
    return bad


@pytest.mark.timeout(90)
def test_4mib_sends_arrive_whole_and_in_order_with_small_ones(direct):
    """MPI-3.1 §3.5 (non-overtaking): 4 MiB Send, Isend and Ssend between small
    messages of the same sender arrive whole, in order; Probe counts the bytes."""
    assert shmrma.launch(exchange_in_order, 2, timeout=80) == [[], []]


@pytest.mark.timeout(90)
def test_a_refused_reader_gets_the_message_through_the_staging_ring(refused):
    """The same exchange when the receiver may not read the sender's memory."""
    assert shmrma.launch(exchange_in_order, 2, timeout=80) == [[], []]


def completes_before_the_receive():
    """Rank 0's first 1 MiB Isend, read (or refused) by rank 1's progress alone,
    then whether its second one completes while rank 1 waits in a Barrier (which
    makes no point-to-point progress) before receiving it."""
    comm = MPI.COMM_WORLD
    done = []
    if comm.rank == 0:
        first, second = pattern(MIB, 0), pattern(MIB, 1)
        comm.Isend(first, 1, 0).Wait()
        comm.Barrier()
        request = comm.Isend(second, 1, 1)
        done.append(request.Test())
        comm.Barrier()
        request.Wait()
        return done
    while not comm.Iprobe(0, 0):
        pass
    comm.Barrier()
    comm.Barrier()
    for index in range(2):
        got = np.zeros(MIB, np.uint8)
        comm.Recv(got, 0, index)
        done.append(np.array_equal(got, pattern(MIB, index)))
    return done


@c_engine_only
@pytest.mark.timeout(90)
def test_a_direct_send_completes_only_once_read(direct):
    """A direct Isend's buffer is the receiver's to read until then: the first
    completes once rank 1's progress read it, the second not before its receive."""
    assert shmrma.launch(completes_before_the_receive, 2, timeout=80) == [
        [False], [True, True]]


@c_engine_only
@pytest.mark.timeout(90)
def test_a_refusal_is_detected_once_per_pair(refused):
    """Refused once, a pair's large sends stream through the staging ring: the next
    1 MiB Isend completes without its receiver (it fits the 2 MiB ring)."""
    assert shmrma.launch(completes_before_the_receive, 2, timeout=80) == [
        [True], [True, True]]


@pytest.mark.timeout(90)
def test_any_source_truncation_and_cancel(direct):
    """ANY_SOURCE takes each of three senders' 1 MiB messages whole, a receive buffer
    too small raises ERR_TRUNCATE and is left as it was (the sender still completes),
    and a cancelled receive takes nothing."""
    def body():
        comm = MPI.COMM_WORLD
        n = MIB
        if comm.rank != 0:
            comm.Send(pattern(n, comm.rank), 0, 3)
            if comm.rank == 1:
                comm.Send(pattern(n, 7), 0, 4)
                comm.Send(pattern(n, 8), 0, 5)
            return None
        cancelled = comm.Irecv(np.zeros(n, np.uint8), 1, 5)
        cancelled.Cancel()
        status = MPI.Status()
        cancelled.Wait(status)
        was_cancelled = status.Is_cancelled()
        seen = {}
        for _ in range(comm.size - 1):
            got = np.zeros(n, np.uint8)
            comm.Recv(got, MPI.ANY_SOURCE, 3, status)
            seen[status.Get_source()] = np.array_equal(got, pattern(n, status.Get_source()))
        small = np.full(n // 2, 9, np.uint8)
        with raises_mpi(MPI.ERR_TRUNCATE):
            comm.Recv(small, 1, 4)
        whole = np.zeros(n, np.uint8)
        comm.Recv(whole, 1, 5)
        return (was_cancelled, seen, bool((small == 9).all()),
                np.array_equal(whole, pattern(n, 8)))

    assert shmrma.launch(body, 3, timeout=80)[0] == (
        True, {1: True, 2: True}, True, True)


@pytest.mark.timeout(120)
def test_a_direct_send_to_a_dead_rank_ends_the_job(direct, run_shmrma, tmp_path):
    """A sender waiting for its receiver to read the message ends with the job when
    the receiver died, instead of hanging."""
    dead_rank_ends_the_job(run_shmrma, tmp_path, "comm.Send(bytearray(1 << 22), 1)")


@pytest.mark.timeout(120)
def test_a_receive_from_a_sender_that_died_ends_the_job(direct, run_shmrma, tmp_path):
    """The receiver of a direct record whose sender died before it was read cannot
    read it: the record stays unanswered and the job's abort ends the wait."""
    program = tmp_path / "dead_sender.py"
    program.write_text(
        "import os, time\nfrom shmrma import MPI\ncomm = MPI.COMM_WORLD\n"
        "if comm.rank == 1:\n    comm.Isend(bytearray(1 << 22), 0)\n    os._exit(4)\n"
        "time.sleep(0.5)\ncomm.Recv(bytearray(1 << 22), 1)\n")
    result = run_shmrma(["-n", 2, "--timeout", HANG_S, program], timeout=HANG_S + 30)
    assert result.returncode == 4, result.stderr    # not 124: the job's timeout
