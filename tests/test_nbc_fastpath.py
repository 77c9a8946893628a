"""The nonblocking collectives' C path (shmrma/csrc/coll/nonblocking.c) against the Python path.

Every nonblocking collective but Ialltoallw, on plain buffers (the vector forms'
messages with predefined datatypes; Ireduce_scatter with its recvcounts given)
whose streams fit a slot, starts in C on the channel of coll/channel.py, and their
Wait and Test read the others' slots in C. Every scenario runs with the fast paths on at
every rank, off at every rank, and on at even ranks only (both paths meet in one
collective, and C operations sit among Python ones on one channel), and must end
the same on every rank: the same bytes, the same errors. No numbered rule covers
collectives; the behaviour is MPI-3.1 §5.12's and mpi4py's.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic
from shmrma.coll import channel as nbcarea, nonblocking
from mpitest import (assert_every_mode_agrees, message_form_scenarios, run_in_every_mode,
                     vector_scenarios)


class Spy:
    """Records whether each fast start took its call."""

    def __init__(self):
        self.calls = []
        start = nonblocking._fast_start

        def spy(*args):
            request = start(*args)
            self.calls.append(request is not False)
            return request
        nonblocking._fast_start = spy

    def take(self):
        calls, self.calls = self.calls, []
        return calls


def _scenarios(comm):
    rank, size = comm.rank, comm.size
    last = size - 1

    def bcast(n, root):
        buf = np.arange(n, dtype="f8") * (root + 1) if rank == root else np.full(n, -1.0)
        comm.Ibcast(buf, root).Wait()
        return buf

    def allreduce(n, op=MPI.SUM, in_place=False, count=None):
        send = np.arange(count or n, dtype="i8") * (rank + 1) + rank
        out = np.zeros(count or n, "i8")
        if in_place:
            comm.Iallreduce(MPI.IN_PLACE, send, op).Wait()
            return send
        comm.Iallreduce(send, out, op).Wait()
        return out

    def reduce(n, root):
        out = np.full(n, -1.0) if rank == root else None
        comm.Ireduce(np.full(n, rank + 0.25), out, MPI.MAX, root).Wait()
        return out

    def allgather(n, in_place=False):
        out = np.full(n * size, -1, "i2")
        send = np.arange(n, dtype="i2") + 10 * rank
        if in_place:
            out[rank * n:(rank + 1) * n] = send
            send = MPI.IN_PLACE
        comm.Iallgather(send, out).Wait()
        return out

    def tested():
        """Test until done, then Test again on the completed (null) request."""
        out = np.zeros(2)
        request = comm.Iallreduce(np.full(2, rank + 1.0), out)
        while not request.Test():
            pass
        return out.tolist(), bool(request), request.Test()

    def mixed():
        """C and Python operations outstanding together, completed in reverse."""
        total, gathered = np.zeros(3), np.full(sum(range(1, size + 1)), -1, "i4")
        counts = [r + 1 for r in range(size)]
        requests = [comm.Iallreduce(np.full(3, rank * 1.0), total), comm.Ibarrier(),
                    comm.Iallgatherv(np.full(rank + 1, rank, "i4"), [gathered, counts]),
                    comm.Ibcast(np.arange(5.0) if rank == 0 else np.zeros(5), 0)]
        statuses = [MPI.Status() for _ in requests]
        MPI.Request.Waitall(requests[::-1], statuses[::-1])
        return total.tolist(), gathered.tolist(), [bool(r) for r in requests]

    def far_ahead():
        """Three times as many outstanding as there are slots: past them C misses
        and the Python path queues the deposits."""
        outs = [np.zeros(1) for _ in range(3 * nbcarea.SLOTS)]
        requests = [comm.Iallreduce(np.ones(1) * (rank + k), out) for k, out in enumerate(outs)]
        MPI.Request.Waitall(requests)
        return [out[0] for out in outs]

    def gather(n, root, in_place=False, count=None):
        send = np.arange(count or n, dtype="i4") + 100 * rank
        out = np.full(n * size, -1, "i4") if rank == root else None
        if in_place and rank == root:
            out[rank * n:(rank + 1) * n] = send
            send = MPI.IN_PLACE
        comm.Igather(send, out, root).Wait()
        return out

    def scatter(n, root, in_place=False, count=None):
        send = np.arange(n * size, dtype="f4") + 0.5 if rank == root else None
        out = np.full(count or n, -1, "f4")
        comm.Iscatter(send, MPI.IN_PLACE if in_place and rank == root else out, root).Wait()
        return out

    def alltoall(n, in_place=False, count=None):
        send = np.arange(n * size, dtype="u2") + 1000 * rank
        out = np.zeros((count or n) * size, "u2")
        if in_place:
            comm.Ialltoall(MPI.IN_PLACE, send).Wait()
            return send
        comm.Ialltoall(send, out).Wait()
        return out

    def scan(n, inclusive=True, in_place=False, op=MPI.SUM):
        send = np.arange(n, dtype="f8") * (rank + 1) - rank
        out = np.full(n, -7.0)
        start = comm.Iscan if inclusive else comm.Iexscan
        if in_place:
            start(MPI.IN_PLACE, send, op).Wait()
            return send
        start(send, out, op).Wait()
        return out

    def reduce_scatter_block(n, in_place=False, op=MPI.SUM):
        send = np.arange(n * size, dtype="i8") * (rank + 2)
        out = np.zeros(n, "i8")
        if in_place:
            comm.Ireduce_scatter_block(MPI.IN_PLACE, send, op).Wait()
            return send[:n]
        comm.Ireduce_scatter_block(send, out, op).Wait()
        return out

    def reduce_scatter(in_place=False, given=True, short_here=False, op=MPI.SUM):
        """Rank r's block: (r * 2 + 1) % 3 items (zeros among them); ``given``: the
        recvcounts passed (else gathered from the receive buffers)."""
        counts = [(r * 2 + 1) % 3 for r in range(size)]
        send = np.arange(sum(counts) - short_here, dtype="i8") * (rank + 2) + 1
        if in_place:
            comm.Ireduce_scatter(MPI.IN_PLACE, send, counts, op).Wait()
            return send[:counts[rank]]
        out = np.zeros(counts[rank], "i8")
        comm.Ireduce_scatter(send, out, counts if given else None, op).Wait()
        return out

    return {
        "Ireduce_scatter": lambda: reduce_scatter(),
        "Ireduce_scatter in place": lambda: reduce_scatter(in_place=True, op=MPI.PROD),
        "Ireduce_scatter counts gathered": lambda: reduce_scatter(given=False),
        "Ireduce_scatter short here": lambda: reduce_scatter(short_here=rank == last),
        **vector_scenarios(comm, "I", lambda name, *args: getattr(
            comm, "I" + name.lower())(*args).Wait()),
        **message_form_scenarios(comm, "I", lambda name, *args: getattr(
            comm, "I" + name.lower())(*args).Wait()),
        "Igather": lambda: gather(3, last),
        "Igather in place": lambda: gather(2, 0, in_place=True),
        "Igather mismatch": lambda: gather(2, 0, count=3 if rank == last else 2),
        "Iscatter": lambda: scatter(3, last),
        "Iscatter in place": lambda: scatter(2, 0, in_place=True),
        "Iscatter short receive": lambda: scatter(4, 0, count=3 if rank == last else 4),
        "Iscatter large": lambda: scatter(30000, 0),     # the root's stream in its outbox
        "Ialltoall": lambda: alltoall(3),
        "Ialltoall in place": lambda: alltoall(2, in_place=True),
        "Ialltoall mismatch": lambda: alltoall(2, count=3 if rank == 0 else 2),
        "Ialltoall large": lambda: alltoall(40000),
        "Iscan": lambda: scan(3),
        "Iscan in place": lambda: scan(4, in_place=True, op=MPI.PROD),
        "Iexscan": lambda: scan(2, inclusive=False, op=MPI.MAX),
        "Iexscan in place": lambda: scan(3, inclusive=False, in_place=True),
        "Iscan mismatch": lambda: scan(2 if rank == 0 else 3),
        "Ireduce_scatter_block": lambda: reduce_scatter_block(3),
        "Ireduce_scatter_block in place": lambda: reduce_scatter_block(2, True, MPI.BOR),
        "Ibarrier": lambda: comm.Ibarrier().Wait(),
        "Ibcast small": lambda: bcast(4, last),
        "Ibcast large": lambda: bcast(40000, 0),          # the root's stream in its outbox
        "Iallreduce small": lambda: allreduce(3),
        "Iallreduce in place": lambda: allreduce(5, MPI.BXOR, in_place=True),
        "Iallreduce NaN": lambda: _nan_fold(comm),
        "Iallreduce large": lambda: allreduce(20000, MPI.PROD),
        "Ireduce root 0": lambda: reduce(2, 0),
        "Ireduce root last": lambda: reduce(7, last),
        "Iallgather": lambda: allgather(3),
        "Iallgather in place": lambda: allgather(2, in_place=True),
        "Iallreduce mismatch": lambda: allreduce(2, count=3 if rank == last else 2),
        "Ibcast short": lambda: comm.Ibcast(np.zeros(4 if rank == 0 else 2), 0).Wait(),
        "Ibcast no buffer at root": lambda: comm.Ibcast(None if rank == 0 else np.zeros(1),
                                                        0).Wait(),
        "Iallreduce bad op here": lambda: comm.Iallreduce(
            np.ones(2), np.zeros(2), MPI.BAND if rank == 0 else MPI.SUM).Wait(),
        "Ibcast bad root": lambda: comm.Ibcast(np.zeros(1), size).Wait(),
        "Test loop": tested,
        "mixed outstanding": mixed,
        "far ahead": far_ahead,
    }


def _nan_fold(comm):
    values = [np.nan, -0.0, 1.0, np.inf]
    out = np.zeros(4)
    comm.Iallreduce(np.array([values[(comm.rank + i) % 4] for i in range(4)]), out,
                    MPI.MAX).Wait()
    return out


def _all_modes():
    MPI.COMM_WORLD.Ibarrier().Wait()    # the first maps the channel (in Python)
    return run_in_every_mode(_scenarios, Spy())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
def test_fast_slow_and_mixed_paths_end_the_same(nranks):
    """Every scenario gives the same results and errors on every path."""
    assert_every_mode_agrees(shmrma.launch(_all_modes, nranks, timeout=100),
                             lambda took: not took)


@pytest.mark.timeout(120)
@pytest.mark.skipif(atomic.BACKEND != "c", reason="the fallback engine has no C path")
def test_the_c_path_takes_the_common_cases():
    """Plain buffers whose streams fit a slot start in C; derived or odd buffers,
    streams beyond a slot, bad arguments and a rank too far ahead miss."""
    results = shmrma.launch(_all_modes, 3, timeout=100)
    for rank, (fast, _, _) in enumerate(results):
        taken, outcomes = fast[1], fast[0]
        for name in ("Ibarrier", "Ibcast small", "Iallreduce small", "Iallreduce in place",
                     "Iallreduce NaN", "Ireduce root 0", "Ireduce root last", "Iallgather",
                     "Iallgather in place", "Test loop", "Igather", "Igather in place",
                     "Iscatter", "Iscatter in place", "Ialltoall", "Ialltoall in place", "Iscan",
                     "Iscan in place", "Iexscan", "Iexscan in place", "Ireduce_scatter_block",
                     "Ireduce_scatter_block in place"):
            assert taken[name] == [True], (rank, name, taken[name])
            assert outcomes[name][0] == "ok", (rank, name, outcomes[name])
        _vector_forms_take_the_c_path(rank, taken, outcomes)
        for name in ("Ibcast [buf, count, INT]", "Ibcast [buf, (count, displ), BYTE]",
                     "Iallreduce [buf, INT32_T]", "Iallreduce [buf, count, displ, INT]",
                     "Iallreduce int64 as DOUBLE", "Ireduce [buf, count, DOUBLE]",
                     "Iscan [buf, count, INT]", "Ireduce_scatter_block counted per block",
                     "Ireduce_scatter_block in place counted per block",
                     "Igather [buf, count, INT]", "Iallgather [buf, BYTE]",
                     "Iscatter [buf, count, displ, INT]", "Ialltoall [buf, count, INT]"):
            assert taken[name] == [True], (rank, name, taken[name])
            assert outcomes[name][0] == "ok", (rank, name, outcomes[name])
        for name in ("Iallreduce INT64_T into LONG", "Iallreduce BYTE",
                     "Ialltoall count past the buffer"):
            assert taken[name] == [False], (rank, name, taken[name])
        assert taken["Iallreduce large"] == [False]
        assert taken["Ialltoall large"] == [False]
        assert taken["Iscatter large"] == [rank != 0]
        # a rank whose own buffers disagree misses (Python raises); the others read
        assert taken["Ialltoall mismatch"] == [rank != 0]
        assert taken["Iscatter short receive"] == [True]
        for name in ("Igather mismatch", "Iscatter short receive", "Ialltoall mismatch",
                     "Iscan mismatch"):
            assert any(outcome[0] == "MPI.Exception" for outcome in
                       [results[r][0][0][name] for r in range(3)]), name
        # the root's 320 KB stream goes to its outbox (Python); the others read it in C
        assert taken["Ibcast large"] == [rank != 0]
        assert taken["Ibcast bad root"] == [False]
        assert taken["mixed outstanding"] == [True] * 4
        far = taken["far ahead"]
        assert far[:nbcarea.SLOTS] == [True] * nbcarea.SLOTS and not all(far)
        # errors: the failing rank misses in C and raises; the others read its error
        assert taken["Iallreduce bad op here"] == [rank != 0]
        assert outcomes["Iallreduce bad op here"][0] == "MPI.Exception"
        assert outcomes["Ibcast no buffer at root"][0] in ("MPI.Exception", "TypeError",
                                                           "ValueError", "BufferError")


def _vector_forms_take_the_c_path(rank, taken, outcomes):
    """At 3 ranks: the vector forms' messages with predefined datatypes, and
    Ireduce_scatter with its recvcounts given, start in C (the gathers and scatters
    once per root); derived datatypes and bad counts miss."""
    roots = range(3)
    for name in ("Igatherv", "Igatherv pair form", "Igatherv counts only", "Igatherv int count",
                 "Igatherv plain", "Igatherv in place", "Iscatterv", "Iscatterv counts only",
                 "Iscatterv plain", "Iscatterv in place", "Igatherv array counts",
                 "Iscatterv array counts"):
        assert taken[name] == [True] * 3, (rank, name, taken[name])
        assert [result[0] for result in outcomes[name][1]] == ["ok"] * 3, (rank, name)
    for name in ("Iallgatherv", "Iallgatherv pair form", "Iallgatherv in place", "Ialltoallv",
                 "Ialltoallv in place", "Ialltoallv pair form", "Iallgatherv array counts",
                 "Ialltoallv array counts"):
        assert taken[name] == [True], (rank, name, taken[name])
        assert outcomes[name][0] == "ok", (rank, name, outcomes[name])
    # a derived datatype misses where it is parsed: the root's vector, everyone's
    # in Iallgatherv; the plain buffers of the others start in C
    assert taken["Igatherv derived"] == [rank != root for root in roots]
    assert taken["Iscatterv derived"] == [rank != root for root in roots]
    assert taken["Iallgatherv derived"] == taken["Ialltoallv derived"] == [False]
    assert taken["Ireduce_scatter"] == taken["Ireduce_scatter in place"] == [True]
    assert outcomes["Ireduce_scatter"][0] == outcomes["Ireduce_scatter in place"][0] == "ok"
    # recvcounts None: the Python path gathers them; a send buffer short of the
    # blocks' sum misses where it is passed (ValueError), the others read its error
    assert taken["Ireduce_scatter counts gathered"] == [False]
    assert taken["Ireduce_scatter short here"] == [rank != 2]
    assert outcomes["Ireduce_scatter short here"][0] == (
        "ValueError" if rank == 2 else "MPI.Exception")
    # the last rank sends one item too many: as the root it misses (Python raises at
    # the call), elsewhere its stream reaches the root, which raises at Wait (the
    # senders' own Wait ends well)
    assert taken["Igatherv mismatch"] == [not rank == root == 2 for root in roots]
    assert [result[0] for result in outcomes["Igatherv mismatch"][1]] == [
        "MPI.Exception" if rank == root else "ok" for root in roots]
    assert taken["Ialltoallv bad counts"] == [rank != 2]
    assert outcomes["Ialltoallv bad counts"][0] in ("MPI.Exception", "ValueError")
