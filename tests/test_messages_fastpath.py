"""The point-to-point fast paths (shmrma/csrc/p2p/transport.c) against the Python path.

Every scenario runs twice at 2 ranks, with the fast paths on and then off
(``fastpath.enable``, which turns every C fast path off), and both runs must end
the same: the same bytes received, the same status, the same outcome (no error,
or the same exception type, error class and message) on both ranks. Spies on the
fast functions comm.py calls show that the common cases take the fast path and
the others decline it, leaving nothing behind (the Python path then does the
call or raises). No numbered rule covers messages; the behaviour is mpi4py's.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.comm import comm as comm_module
from shmrma.rma import fastpath
from mpitest import nothing_left_behind

FAST = ("_fast_send", "_fast_recv", "_fast_irecv", "_fast_sendobj", "_fast_recvobj")


def outcome(fn):
    try:
        return ("ok", fn())
    except MPI.Exception as exc:
        return ("MPI.Exception", exc.Get_error_class(), str(exc))
    except Exception as exc:  # noqa: BLE001 - the exact exception is what we compare
        return (type(exc).__name__, str(exc))


class Spy:
    """Records, per fast function, whether each call was taken (anything but a miss)."""

    def __init__(self):
        self.calls = []
        for name in FAST:
            setattr(comm_module, name, self._wrap(name, getattr(comm_module, name)))

    def _wrap(self, name, function):
        def spy(*args):
            result = function(*args)
            self.calls.append((name, result is not False and result is not comm_module._MISS))
            return result
        return spy

    def take(self):
        calls, self.calls = self.calls, []
        return calls


def _status(status):
    return (status.Get_source(), status.Get_tag(), status.Get_count(), status.Get_error())


# Each scenario: (send side, receive side); each side gets (comm, peer) and returns
# what to compare. Rank 0 runs the send side, rank 1 the receive side.
def _recv_into(make, source=0, tag=3, **kw):
    def side(comm, peer):
        buf = make()
        status = MPI.Status()
        result = outcome(lambda: comm.Recv(buf, source, tag, status))
        return result, _contents(buf), _status(status)
    return side


def _contents(buf):
    if isinstance(buf, list):
        buf = buf[0]
    return None if buf is None else np.array(buf, copy=True).tobytes() \
        if isinstance(buf, np.ndarray) else bytes(buf)


def _send(data, dest=1, tag=3):
    def side(comm, peer):
        return outcome(lambda: comm.Send(data() if callable(data) else data, dest, tag))
    return side


SCENARIOS = {
    "doubles": (_send(lambda: np.arange(4.0)), _recv_into(lambda: np.zeros(4))),
    "bytes into bytearray": (_send(b"abcdef"), _recv_into(lambda: bytearray(6))),
    "int32 into larger buffer": (_send(lambda: np.arange(3, dtype="i4")),
                                 _recv_into(lambda: np.zeros(8, "i4"))),
    "any source and tag": (_send(lambda: np.ones(2)),
                           _recv_into(lambda: np.zeros(2), MPI.ANY_SOURCE, MPI.ANY_TAG)),
    "truncated": (_send(lambda: np.arange(8.0)), _recv_into(lambda: np.zeros(2))),
    "float16 (no MPI type)": (_send(lambda: np.zeros(2, "f2")),
                              _recv_into(lambda: None, MPI.PROC_NULL)),
    "read-only receive buffer": (_send(b"xy"), _recv_into(lambda: b"\0\0")),
    "strided receive buffer": (_send(lambda: np.arange(2.0)),
                               _recv_into(lambda: np.zeros(4)[::2])),
    "bad tag": (_send(lambda: np.zeros(1), tag=-5), _recv_into(lambda: None, MPI.PROC_NULL)),
    "bad destination": (_send(lambda: np.zeros(1), dest=7),
                        _recv_into(lambda: None, MPI.PROC_NULL)),
    "PROC_NULL both ways": (_send(lambda: np.zeros(1), dest=MPI.PROC_NULL),
                            _recv_into(lambda: np.zeros(1), MPI.PROC_NULL)),
    "numpy int rank": (_send(lambda: np.arange(2.0), dest=np.int64(1)),
                       _recv_into(lambda: np.zeros(2), np.int32(0))),
    # ranks computed as nprocs / 2 (mpi4py's demo osu_multi_lat.py): mpi4py takes a float
    "float rank": (_send(lambda: np.arange(2.0), dest=1.0), _recv_into(lambda: np.zeros(2), 0.0)),
    "float rank with a fraction": (_send(lambda: np.zeros(1), dest=0.5),
                                   _recv_into(lambda: None, MPI.PROC_NULL)),
    "float tag": (_send(lambda: np.zeros(1), tag=3.0), _recv_into(lambda: None, MPI.PROC_NULL)),
    "bool rank and numpy tag": (_send(lambda: np.arange(2.0), dest=True, tag=np.uint8(3)),
                                _recv_into(lambda: np.zeros(2), False, np.int16(3))),
    "datatype list": (_send(lambda: [np.arange(3.0), MPI.DOUBLE]),
                      _recv_into(lambda: [np.zeros(3), 3, MPI.DOUBLE])),
    "large (own segment)": (_send(lambda: np.arange(40000.0)),
                            _recv_into(lambda: np.zeros(40000))),
    # every message form mpi4py reads (types/buffers.py's message; C's message_get)
    "[buf, count, BYTE]": (_send(lambda: [np.arange(8, dtype="B"), 8, MPI.BYTE]),
                           _recv_into(lambda: [np.zeros(8, "B"), 8, MPI.BYTE])),
    "[buf, BYTE] of doubles": (_send(lambda: [np.arange(2.0), MPI.BYTE]),
                               _recv_into(lambda: [np.zeros(2), MPI.BYTE])),
    "(count, displ)": (_send(lambda: [np.arange(6, dtype="i4"), (3, 2), MPI.INT]),
                       _recv_into(lambda: [np.full(6, -1, "i4"), (3, 1), MPI.INT])),
    "count, displ, datatype": (_send(lambda: (np.arange(4.0), 2, 1, MPI.DOUBLE)),
                               _recv_into(lambda: [np.full(5, -1.0), 2, 3, MPI.DOUBLE])),
    "[buf, count]": (_send(lambda: [np.arange(5.0), 3]),
                     _recv_into(lambda: [np.full(5, -1.0), 4])),
    "[buf, (count, displ)]": (_send(lambda: [np.arange(5.0), (2, 3)]),
                              _recv_into(lambda: [np.full(5, -1.0), [2, 0]])),
    "count 0": (_send(lambda: [np.arange(5.0), 0, MPI.DOUBLE]),
                _recv_into(lambda: [np.full(2, -1.0), 0, MPI.DOUBLE])),
    "other datatype than the buffer's": (_send(lambda: [np.arange(4, dtype="i4"), MPI.FLOAT]),
                                         _recv_into(lambda: [np.zeros(2), 4, MPI.INT])),
    "receive too small for the count": (_send(lambda: [np.arange(4.0), 4, MPI.DOUBLE]),
                                        _recv_into(lambda: [np.zeros(8), 2, MPI.DOUBLE])),
    "count past the buffer": (_send(lambda: [np.arange(3.0), 5, MPI.DOUBLE]),
                              _recv_into(lambda: [np.zeros(3), 4, MPI.DOUBLE], MPI.PROC_NULL)),
    "displacement past the buffer": (_send(lambda: [np.arange(3.0), (1, 4), MPI.DOUBLE]),
                                     _recv_into(lambda: None, MPI.PROC_NULL)),
    "negative count": (_send(lambda: [np.arange(3.0), -1, MPI.DOUBLE]),
                       _recv_into(lambda: [np.zeros(3), -2, MPI.DOUBLE], MPI.PROC_NULL)),
    "length not a multiple": (_send(lambda: [bytearray(6), MPI.INT]),
                              _recv_into(lambda: None, MPI.PROC_NULL)),
    "derived datatype": (_send(lambda: [np.arange(3.0), 3, MPI.DOUBLE.Dup()]),
                         _recv_into(lambda: [np.zeros(3), 3, MPI.DOUBLE.Dup()])),
    "typecode string": (_send(lambda: [np.arange(3.0), "d"]),
                        _recv_into(lambda: [np.zeros(3), 3, "d"])),
    "five items": (_send(lambda: [np.arange(3.0), 3, 0, MPI.DOUBLE, None]),
                   _recv_into(lambda: None, MPI.PROC_NULL)),
    "large, displaced (own segment)": (
        _send(lambda: [np.arange(40000.0), (30000, 5000), MPI.DOUBLE]),
        _recv_into(lambda: [np.full(40000, -1.0), (30000, 7000), MPI.DOUBLE])),
}


def _drain(comm, result):
    """Receive what a refused receive left behind, and note it in the result."""
    status = MPI.Status()
    while comm.Iprobe(0, 3, status):
        left = bytearray(status.Get_count())
        comm.Recv(left, 0, 3)
        result += (("left behind", bytes(left)),)


# the kinds shmrma/csrc/types/msgpickle.c pickles itself, at its limits, and past them
QUICK = (0, 255, 256, 65536, -1, -2**31, 2**31, 2.5, float("-inf"), True, False, None,
         "", "é" * 127, "é" * 128, b"", b"x" * 255, b"x" * 256, "\ud800")


def _objects(comm, rank):
    """send/recv/isend/irecv/sendrecv of objects, statuses included."""
    out = []
    if rank == 0:
        for obj in QUICK:
            comm.send(obj, 1, 4)
        comm.send({"a": 1}, 1, 5)
        comm.isend([1, 2], 1, 6).wait()
        comm.send(None, 1, 7)
        out.append(outcome(lambda: comm.send(1, 9, 5)))
        out.append(outcome(lambda: comm.send(lambda: 0, 1, 5)))     # does not pickle
        comm.send(b"x" * 50000, 1, 8)
    else:
        status = MPI.Status()
        for _ in QUICK:
            got = comm.recv(None, 0, 4, status)
            out.append((type(got).__name__, repr(got), _status(status)))
        out.append((comm.recv(None, 0, 5, status), _status(status)))
        out.append(comm.irecv(source=0, tag=6).wait())
        out.append(comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status))
        out.append(_status(status))
        out.append(len(comm.recv(source=0, tag=8)))
    out.append(comm.sendrecv(("from", rank), 1 - rank, 2, None, 1 - rank, 2))
    return out


def _nonblocking(comm, rank):
    """Irecv posted before and after the message, Isend, Waitall, Test."""
    peer = 1 - rank
    early = np.zeros(3)
    first = comm.Irecv(early, peer, 11)
    comm.Barrier()
    narrow = np.full(6, -1, "i4")
    third = comm.Irecv([narrow, (2, 3), MPI.INT], peer, 13)   # posted, then matched
    comm.Barrier()
    sent = comm.Isend(np.full(3, rank + 1.0), peer, 11)
    comm.Isend(np.full(2, rank + 5.0), peer, 12).Wait()
    comm.Isend([np.arange(4, dtype="i4") + rank, 2, 2, MPI.INT], peer, 13).Wait()
    comm.Barrier()
    late = np.zeros(2)
    second = comm.Irecv(late, peer, 12)
    statuses = [MPI.Status(), MPI.Status(), MPI.Status()]
    MPI.Request.Waitall([first, second, third, sent], statuses)
    return (early.tolist(), late.tolist(), narrow.tolist(),
            [_status(s) for s in statuses])


def _run(fast):
    comm = MPI.COMM_WORLD
    rank = comm.rank
    spy = Spy()
    fastpath.enable(fast)
    results = {}
    taken = {}
    try:
        for name, (send_side, recv_side) in SCENARIOS.items():
            comm.Barrier()
            spy.take()
            results[name] = (send_side if rank == 0 else recv_side)(comm, 1 - rank)
            taken[name] = spy.take()
            comm.Barrier()
            _drain(comm, results[name])
        results["objects"] = _objects(comm, rank)
        taken["objects"] = spy.take()
        results["nonblocking"] = _nonblocking(comm, rank)
        taken["nonblocking"] = spy.take()
        nothing_left_behind(comm)
    finally:
        fastpath.enable(True)
    return results, taken


def _both():
    fast, taken = _run(True)
    slow, untaken = _run(False)
    return fast, slow, taken, untaken


@pytest.mark.timeout(120)
def test_fast_and_python_paths_end_the_same():
    """Every scenario gives the same bytes, statuses and errors with the fast paths
    on and off, on both ranks."""
    for rank, (fast, slow, _, untaken) in enumerate(shmrma.launch(_both, 2, timeout=100)):
        assert set(fast) == set(slow)
        for name in fast:
            assert fast[name] == slow[name], name
        assert not any(took for calls in untaken.values() for _, took in calls)
        if rank == 1:
            received = [got[:2] for got in fast["objects"][:len(QUICK)]]
            assert received == [(type(obj).__name__, repr(obj)) for obj in QUICK]


# scenario: (rank 0's send takes the fast path, rank 1's receive takes it)
TAKEN = {
    "doubles": (True, True), "bytes into bytearray": (True, True),
    "int32 into larger buffer": (True, True), "any source and tag": (True, True),
    "truncated": (True, True),                  # the receive hands its error to Python
    "float16 (no MPI type)": (False, False), "read-only receive buffer": (True, False),
    "strided receive buffer": (True, False), "bad tag": (False, False),
    "bad destination": (False, False), "PROC_NULL both ways": (False, False),
    "numpy int rank": (True, True), "float rank": (True, True),
    "float rank with a fraction": (False, False), "float tag": (False, False),
    "bool rank and numpy tag": (True, True), "datatype list": (True, True),
    "large (own segment)": (False, True),       # the receive reads the segment in C
    "[buf, count, BYTE]": (True, True), "[buf, BYTE] of doubles": (True, True),
    "(count, displ)": (True, True), "count, displ, datatype": (True, True),
    "[buf, count]": (True, True), "[buf, (count, displ)]": (True, True),
    "count 0": (True, True), "other datatype than the buffer's": (True, True),
    "receive too small for the count": (True, True),
    "count past the buffer": (False, False), "displacement past the buffer": (False, False),
    "negative count": (False, False), "length not a multiple": (False, False),
    "derived datatype": (False, False), "typecode string": (False, False),
    "five items": (False, False), "large, displaced (own segment)": (False, True),
}


@pytest.mark.timeout(120)
def test_common_cases_take_the_fast_path_and_the_others_decline():
    """Plain buffers, bytes and objects within the ring go through C; derived
    specifications, bad arguments, odd buffers and large sends decline."""
    for rank, (_, _, taken, _) in enumerate(shmrma.launch(_both, 2, timeout=100)):
        for name, expected in TAKEN.items():
            calls = taken[name]
            assert calls and all(took == expected[rank] for _, took in calls), \
                (rank, name, calls)
        assert any(took for _, took in taken["objects"])
        assert any(took for name, took in taken["nonblocking"] if name == "_fast_irecv")
