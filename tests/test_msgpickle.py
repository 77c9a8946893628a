"""MPI.Pickle and MPI.pickle (mpi4py's msgpickle.pxi): every object message
pickles with MPI.pickle, so reconfiguring it changes what send/recv/bcast/...
put on the wire; other instances only serve their own dumps/loads. No
numbered rule covers pickles; the behaviour is mpi4py 4.1.2's.
"""
import json
import marshal
import pickle

import numpy as np
import pytest

import shmrma
from shmrma import MPI


@pytest.fixture
def messages_pickle():
    yield MPI.pickle
    MPI.pickle.__init__()


def test_defaults_are_pickles_highest_protocol_and_a_quarter_mebibyte():
    fresh = MPI.Pickle()
    assert (fresh.PROTOCOL, fresh.THRESHOLD) == (pickle.HIGHEST_PROTOCOL, 1024 ** 2 // 4)
    assert fresh.loads(fresh.dumps({"a": (1, 2.5)})) == {"a": (1, 2.5)}


def test_other_functions_get_no_default_protocol():
    other = MPI.Pickle(marshal.dumps, marshal.loads)
    assert other.PROTOCOL is None
    assert other.dumps([1, "x"]) == marshal.dumps([1, "x"])
    other.PROTOCOL = 2
    assert other.dumps([1, "x"]) == marshal.dumps([1, "x"], 2)
    other.PROTOCOL = None
    assert other.PROTOCOL is None
    pickles = MPI.Pickle(protocol=3)
    pickles.PROTOCOL = None     # back to pickle's default, for pickle.dumps
    assert pickles.PROTOCOL == pickle.HIGHEST_PROTOCOL
    pickles.THRESHOLD = 10
    pickles.THRESHOLD = None
    assert pickles.THRESHOLD == 1024 ** 2 // 4


def test_out_of_band_buffers_are_those_of_at_least_threshold_bytes():
    pkl = MPI.Pickle(threshold=1000)
    big, small = np.arange(200, dtype=np.float64), np.arange(10, dtype=np.float64)
    data, buffers = pkl.dumps_oob([big, small])
    assert [len(memoryview(buf).cast("B")) for buf in buffers] == [big.nbytes]
    assert isinstance(buffers[0], MPI.buffer)
    back = pkl.loads_oob(data, buffers)
    assert np.array_equal(back[0], big) and np.array_equal(back[1], small)


def test_an_instance_other_than_mpi_pickle_leaves_messages_alone(messages_pickle):
    MPI.Pickle(json.dumps, json.loads)   # not MPI.pickle: messages still pickle
    comm = MPI.COMM_SELF
    assert comm.sendrecv((1, 2.5), 0, 0, None, 0, 0) == (1, 2.5)


@pytest.mark.parametrize("protocol", [0, 2, 4, 5, -1, None])
def test_messages_use_mpi_pickles_protocol(messages_pickle, protocol):
    messages_pickle.__init__(protocol=protocol)
    comm = MPI.COMM_SELF
    for obj in (7, "text", None, 1.5, (1, [2]), 1 << 40):
        comm.send(obj, 0, 1)
        wire = bytearray(256)
        status = MPI.Status()
        comm.Recv(wire, 0, 1, status)
        sent = bytes(wire[:status.Get_count()])
        # None is pickle's highest protocol, for pickle.dumps (mpi4py's default)
        expected = pickle.HIGHEST_PROTOCOL if protocol is None else protocol
        assert sent == pickle.dumps(obj, expected), (obj, protocol)
        assert comm.sendrecv(obj, 0, 0, None, 0, 0) == obj


def test_dumps_must_return_bytes(messages_pickle):
    messages_pickle.__init__(json.dumps, json.loads)   # returns str
    with pytest.raises(TypeError, match="must return bytes"):
        MPI.COMM_SELF.send({"a": 1}, 0, 0)
    messages_pickle.__init__()
    assert MPI.COMM_SELF.sendrecv({"a": 1}, 0, 0, None, 0, 0) == {"a": 1}


@pytest.mark.timeout(60)
def test_reconfigured_pickle_serves_every_object_call_across_ranks():
    """json in MPI.pickle: the peer's Recv sees JSON, and send/recv, bcast,
    gather, allgather, alltoall and scatter round-trip through it; back to
    the default, tuples are tuples again."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.rank
        MPI.pickle.__init__(lambda obj: json.dumps(obj).encode(),
                            lambda data: json.loads(bytes(data)))
        out = {}
        if rank == 0:
            comm.send({"k": [1, 2]}, 1, 5)
            comm.send((3, 4), 1, 6)
        elif rank == 1:
            wire = bytearray(64)
            status = MPI.Status()
            comm.Recv(wire, 0, 5, status)
            out["wire"] = bytes(wire[:status.Get_count()])
            out["tuple"] = comm.recv(None, 0, 6)
        out["bcast"] = comm.bcast((9, "x") if rank == 0 else None, 0)
        out["gather"] = comm.gather((rank,), 0)
        out["allgather"] = comm.allgather((rank,))
        out["alltoall"] = comm.alltoall([(rank, i) for i in range(comm.size)])
        out["scatter"] = comm.scatter([(i,) for i in range(comm.size)] if rank == 0 else None)
        MPI.pickle.__init__()
        out["default"] = comm.bcast((9, "x"), 0)
        return out

    zero, one = shmrma.launch(body, 2, timeout=40)
    assert one["wire"] == b'{"k": [1, 2]}'
    assert one["tuple"] == [3, 4]
    assert one["bcast"] == [9, "x"]
    assert zero["gather"] == [(0,), [1]]       # a rank's own object is not pickled
    assert zero["allgather"] == [(0,), [1]] and one["allgather"] == [[0], (1,)]
    assert one["alltoall"][0] == [0, 1]
    assert one["scatter"] == [1]
    assert one["default"] == (9, "x")
