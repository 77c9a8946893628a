"""Point-to-point messaging on objects and buffers (docs/api.md).

Most of these behaviours have no numbered rule (those cover RMA); they
come from issue 2: non-overtaking order per sender/tag/communicator, any message
size (inline in the ring up to ring_bytes//4, in its own segment beyond), sends
that never wait for their receiver even when the ring is full, PROC_NULL peers,
mpi4py's buffer specifications, and errors that say what to fix and change
nothing. Edge cases were compared with mpi4py 4.1 + MPICH 5.0.
"""
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.p2p import transport as mailbox
from mpitest import (dead_rank_ends_the_job, job_segments, nothing_left_behind,
                     raises_mpi)

KIB = 1024
MIB = 1024 * KIB


def pattern(n, seed):
    return (np.arange(n, dtype=np.uint64) * 7 + seed).astype(np.uint8)


@pytest.mark.timeout(60)
def test_objects_status_and_sendrecv():
    """Issue 2: send/recv/isend/irecv/sendrecv of pickled objects and Sendrecv of
    buffers, with Status."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        out = {}
        if rank == 0:
            comm.send({"a": [1, 2]}, dest=1, tag=7)
            comm.isend(("tuple", None), dest=1, tag=8).wait()
            comm.send(None, dest=1)  # default tag 0
        elif rank == 1:
            status = MPI.Status()
            out["first"] = comm.recv(source=0, tag=7, status=status)
            out["status"] = (status.Get_source(), status.Get_tag(), status.Get_count() > 0)
            request = comm.irecv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
            out["second"] = request.wait(status)
            out["status2"] = (status.source, status.tag)
            out["third"] = comm.recv(source=0, tag=0)
        right, left = (rank + 1) % size, (rank - 1) % size
        out["ring"] = comm.sendrecv(("from", rank), dest=right, sendtag=3, source=left,
                                    recvtag=3)
        got = np.zeros(2, dtype=np.int64)
        status = MPI.Status()
        comm.Sendrecv(np.array([rank, -rank]), dest=right, sendtag=4, recvbuf=got,
                      source=MPI.ANY_SOURCE, recvtag=4, status=status)
        out["Sendrecv"] = (got.tolist(), status.Get_source(), status.Get_count(MPI.INT64_T))
        return out

    results = shmrma.launch(body, 3, timeout=30)
    assert results[1]["first"] == {"a": [1, 2]}
    assert results[1]["status"] == (0, 7, True)
    assert results[1]["second"] == ("tuple", None)
    assert results[1]["status2"] == (0, 8)
    assert results[1]["third"] is None
    assert [r["ring"] for r in results] == [("from", 2), ("from", 0), ("from", 1)]
    assert [r["Sendrecv"] for r in results] == [([2, -2], 2, 2), ([0, 0], 0, 2),
                                                ([1, -1], 1, 2)]


@pytest.mark.timeout(90)
def test_every_message_size_arrives_whole_and_leaves_no_segment():
    """Issue 2: 0 B, 1 B, around the inline limit (ring_bytes//4 = 16 KiB for a small
    job), 1 MiB and 20 MiB arrive intact, as buffers and as objects, to a peer and to
    self; once received, no message segment is left in /dev/shm."""
    def body():
        comm = MPI.COMM_WORLD
        box = mailbox.mailbox()
        limit = box.inline_max
        sizes = [0, 1, limit - 1, limit, limit + 1, MIB, 20 * MIB]
        peer = 1 - comm.rank
        for i, n in enumerate(sizes):
            comm.Send(pattern(n, i), dest=peer, tag=i)
            comm.send(bytes(pattern(n, i + 50)), dest=peer, tag=100 + i)
            comm.Send(pattern(n, i + 90), dest=comm.rank, tag=200 + i)  # to self
        status = MPI.Status()
        for i, n in enumerate(sizes):
            comm.Probe(source=peer, tag=i, status=status)
            assert status.Get_count(MPI.BYTE) == n, (n, status.Get_count(MPI.BYTE))
            got = np.full(n, 1, dtype=np.uint8)
            comm.Recv(got, source=peer, tag=i)
            assert np.array_equal(got, pattern(n, i)), n
            assert comm.recv(source=peer, tag=100 + i) == bytes(pattern(n, i + 50)), n
            mine = np.empty(n, dtype=np.uint8)
            comm.Recv([mine, MPI.BYTE], source=comm.rank, tag=200 + i)
            assert np.array_equal(mine, pattern(n, i + 90)), n
        comm.Barrier()
        return box.ring_bytes, limit, job_segments()

    for ring_bytes, limit, left in shmrma.launch(body, 2, timeout=80):
        assert ring_bytes == 64 * KIB and limit == ring_bytes // 4 == 16 * KIB
        assert left == []


@pytest.mark.timeout(60)
def test_large_messages_after_the_ring_wrapped_around():
    """Issue 2: a large message's segment name, sent where small messages were
    before, arrives intact. The name's padding used to keep the bytes of what
    lay there (here 1.0 doubles), so the receiver mapped a name with garbage."""
    def body():
        comm = MPI.COMM_WORLD
        box = mailbox.mailbox()
        small = box.ring_bytes // (mailbox.RECORD.size + 8) + 64    # more than one turn
        large = np.arange(box.inline_max // 8 + 1, dtype=np.float64)
        for turn in range(3):
            if comm.rank == 0:
                for _ in range(small):
                    comm.Send(np.ones(1), dest=1, tag=1)
                for _ in range(4):
                    comm.Send(large, dest=1, tag=2)
            else:
                one = np.empty(1)
                for _ in range(small):
                    comm.Recv(one, source=0, tag=1)
                for _ in range(4):
                    got = np.empty_like(large)
                    comm.Recv(got, source=0, tag=2)
                    assert np.array_equal(got, large)
        comm.Barrier()
        return job_segments()

    assert shmrma.launch(body, 2, timeout=50) == [[], []]


@pytest.mark.timeout(60)
def test_non_overtaking_per_sender_tag_and_communicator():
    """Issue 2 (MPI non-overtaking): messages from one sender with one tag on one
    communicator are received in send order, whatever their sizes (inline and
    segment messages mixed), and receives by tag or on another communicator pick
    the right ones."""
    def body():
        world = MPI.COMM_WORLD
        dup = world.Dup()
        sizes = [5, 40 * KIB, 0, 3, 17 * KIB, 1]
        if world.rank == 0:
            for i, n in enumerate(sizes):
                for tag in (1, 2):
                    world.Send(pattern(n, 10 * tag + i), dest=1, tag=tag)
                dup.send(("dup", i), dest=1, tag=1)
                world.send(("world", i), dest=1, tag=3)
            dup.Barrier()
            return None
        got = {}
        for tag in (2, 1):  # all of tag 2 first, then tag 1
            for i, n in enumerate(sizes):
                buf = np.zeros(n, dtype=np.uint8)
                status = MPI.Status()
                world.Recv(buf, source=0, tag=tag, status=status)
                assert status.Get_count() == n
                assert np.array_equal(buf, pattern(n, 10 * tag + i)), (tag, i)
        got["dup"] = [dup.recv(source=0, tag=MPI.ANY_TAG) for _ in sizes]
        got["world"] = [world.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG) for _ in sizes]
        dup.Barrier()
        return got

    got = shmrma.launch(body, 2, timeout=50)[1]
    assert got["dup"] == [("dup", i) for i in range(6)]
    assert got["world"] == [("world", i) for i in range(6)]


@pytest.mark.timeout(60)
def test_many_sends_in_flight_both_ways_do_not_deadlock():
    """Issue 2: 2000 isends of 1 KiB (about 30 full rings) by both ranks to each other,
    and 300 to self, before anyone receives; sends never wait for their receiver, so
    this completes, in order."""
    count, nbytes = 2000, KIB

    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.rank
        sends = []
        for i in range(count):
            buf = np.full(nbytes // 4, i, dtype=np.int32)
            sends.append(comm.Isend(buf, dest=peer, tag=4))
        self_sends = [comm.isend(i, dest=comm.rank, tag=5) for i in range(300)]
        out = np.zeros((count, nbytes // 4), dtype=np.int32)
        receives = [comm.Irecv(out[i], source=peer, tag=4) for i in range(count)]
        MPI.Request.Waitall(receives + sends)
        mine = [comm.recv(source=comm.rank, tag=5) for _ in range(300)]
        MPI.Request.Waitall(self_sends)
        return bool((out == np.arange(count, dtype=np.int32)[:, None]).all()), mine

    for in_order, mine in shmrma.launch(body, 2, timeout=50):
        assert in_order
        assert mine == list(range(300))


@pytest.mark.timeout(60)
def test_any_source_and_any_tag_fill_the_status():
    """Issue 2: ANY_SOURCE/ANY_TAG receive from every sender, per-sender order is
    kept, and Status tells who sent what."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank > 0:
            for i in range(3):
                comm.Send(np.array([comm.rank, i], dtype=np.int32), dest=0, tag=10 * comm.rank + i)
            return None
        seen = []
        status = MPI.Status()
        buf = np.zeros(2, dtype=np.int32)
        for _ in range(6):
            comm.Recv(buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
            seen.append((status.Get_source(), status.Get_tag(), status.Get_count(MPI.INT),
                         tuple(buf.tolist())))
        return seen

    seen = shmrma.launch(body, 3, timeout=50)[0]
    for source in (1, 2):
        mine = [s for s in seen if s[0] == source]
        assert mine == [(source, 10 * source + i, 2, (source, i)) for i in range(3)]


@pytest.mark.timeout(60)
def test_probe_and_iprobe():
    """Issue 2: Iprobe is False until a message is there; Probe waits for it and
    does not consume it; Status gives source, tag and the count for the receive."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            comm.recv(source=0, tag=99)  # rank 0 has probed for nothing
            comm.Send(np.arange(5, dtype=np.float64), dest=0, tag=6)
            comm.send("obj", dest=0, tag=7)
            return None
        out = {"before": comm.Iprobe(source=1, tag=6), "lower": comm.iprobe()}
        comm.send("go", dest=1, tag=99)
        status = MPI.Status()
        assert comm.Probe(source=MPI.ANY_SOURCE, tag=6, status=status) is True
        out["probe"] = (status.Get_source(), status.Get_tag(), status.Get_count(MPI.DOUBLE))
        comm.probe(source=1, tag=7)
        out["again"] = (comm.Iprobe(source=1, tag=6), comm.iprobe(1, 7))
        buf = np.zeros(status.Get_count(MPI.DOUBLE))
        comm.Recv(buf, source=status.Get_source(), tag=status.Get_tag())
        out["data"] = buf.tolist()
        out["obj"] = comm.recv(source=1, tag=7)
        out["after"] = comm.Iprobe(source=1)
        return out

    out = shmrma.launch(body, 2, timeout=50)[0]
    assert out["before"] is False and out["lower"] is False
    assert out["probe"] == (1, 6, 5)
    assert out["again"] == (True, True)
    assert out["data"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert out["obj"] == "obj"
    assert out["after"] is False


@pytest.mark.timeout(60)
def test_proc_null_peers():
    """Issue 2 (mpi4py): PROC_NULL as destination or source completes at once, moves
    nothing, leaves the buffer alone (mpi4py does not even look at it) and gives a
    status with source PROC_NULL, tag ANY_TAG, count 0."""
    def body():
        comm = MPI.COMM_WORLD
        buf = bytearray(b"keep")
        status = MPI.Status()
        comm.Send(b"data", dest=MPI.PROC_NULL)
        comm.Send("not even a buffer", dest=MPI.PROC_NULL)
        comm.send({"x": 1}, dest=MPI.PROC_NULL)
        comm.Recv(buf, source=MPI.PROC_NULL, status=status)
        recv_status = (status.source, status.tag, status.Get_count(), bytes(buf))
        obj = comm.recv(source=MPI.PROC_NULL, status=status)
        requests = [comm.Isend(b"x", MPI.PROC_NULL), comm.Irecv(buf, MPI.PROC_NULL),
                    comm.isend(1, MPI.PROC_NULL), comm.irecv(source=MPI.PROC_NULL)]
        done = MPI.Request.Testall(requests)
        comm.Sendrecv(b"abcd", dest=MPI.PROC_NULL, recvbuf=buf, source=MPI.PROC_NULL)
        probe = (comm.Iprobe(source=MPI.PROC_NULL, status=status), status.source, status.tag)
        nothing_arrived = not comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
        return recv_status, obj, done, bytes(buf), probe, nothing_arrived

    for recv_status, obj, done, buf, probe, nothing in shmrma.launch(body, 2, timeout=50):
        assert recv_status == (MPI.PROC_NULL, MPI.ANY_TAG, 0, b"keep")
        assert obj is None and done is True and buf == b"keep"
        assert probe == (True, MPI.PROC_NULL, MPI.ANY_TAG)
        assert nothing


@pytest.mark.timeout(60)
def test_buffer_specifications():
    """Issue 2 (mpi4py's buffer rules): bare buffers, [buf, datatype],
    [buf, count], [buf, count, datatype], [buf, (count, displ), datatype], typecodes,
    numpy arrays, bytearray, MPI.buffer, and a pair type (DOUBLE_INT, 12 bytes of data
    in a 16-byte extent) all carry the right bytes; Get_count counts datatype items."""
    pair = np.dtype([("v", "f8"), ("i", "i4")], align=True)

    def body():
        comm = MPI.COMM_WORLD
        ints = np.arange(6, dtype=np.int32)
        dbls = np.arange(4, dtype=np.float64) / 2
        pairs = np.zeros(2, dtype=pair)
        pairs["v"], pairs["i"] = [1.5, -2.5], [3, 4]
        if comm.rank == 0:
            comm.Send(ints, 1, tag=1)                               # format 'i' -> INT
            comm.Send([dbls, MPI.DOUBLE], 1, tag=2)
            comm.Send([ints, 3], 1, tag=3)                          # first 3 ints
            comm.Send([dbls, 2, "d"], 1, tag=4)                     # typecode string
            comm.Send([ints, (2, 3), MPI.INT], 1, tag=5)            # 2 ints from index 3
            comm.Send(bytearray(b"bytes!"), 1, tag=6)
            comm.Send([pairs, MPI.DOUBLE_INT], 1, tag=7)
            mem = MPI.Alloc_mem(8)
            mem[:] = b"alloc_me"
            comm.Send(mem, 1, tag=8)
            MPI.Free_mem(mem)
            comm.Send([ints, 3, "i"], 1, tag=9)
            return None
        out = {}
        status = MPI.Status()
        a = np.zeros(6, dtype=np.int32)
        comm.Recv(a, 0, 1, status)
        out[1] = (a.tolist(), status.Get_count(MPI.INT), status.Get_count(MPI.BYTE))
        b = np.zeros(4)
        comm.Recv([b, "d"], 0, 2, status)
        out[2] = (b.tolist(), status.Get_count(MPI.DOUBLE))
        c = np.zeros(6, dtype=np.int32)
        comm.Recv([c, 3, MPI.INT], 0, 3, status)
        out[3] = (c.tolist(), status.Get_count(MPI.INT))
        d = np.zeros(4)
        comm.Recv([d, (2, 1), MPI.DOUBLE], 0, 4, status)             # into d[1:3]
        out[4] = d.tolist()
        e = np.zeros(2, dtype=np.int32)
        comm.Recv([e, MPI.INT], 0, 5, status)
        out[5] = e.tolist()
        f = bytearray(6)
        comm.Recv(f, 0, 6, status)
        out[6] = bytes(f)
        g = np.zeros(2, dtype=pair)
        comm.Recv([g, MPI.DOUBLE_INT], 0, 7, status)
        out[7] = (g.tolist(), status.Get_count(MPI.DOUBLE_INT))
        mem = MPI.Alloc_mem(8)
        comm.Recv(mem, 0, 8)
        out[8] = mem.tobytes()
        MPI.Free_mem(mem)
        comm.Recv(bytearray(12), 0, 9, status)
        out[9] = (status.Get_count(MPI.INT), status.Get_count(MPI.DOUBLE) == MPI.UNDEFINED)
        return out

    out = shmrma.launch(body, 2, timeout=50)[1]
    assert out[1] == ([0, 1, 2, 3, 4, 5], 6, 24)
    assert out[2] == ([0.0, 0.5, 1.0, 1.5], 4)
    assert out[3] == ([0, 1, 2, 0, 0, 0], 3)
    assert out[4] == [0.0, 0.0, 0.5, 0.0]
    assert out[5] == [3, 4]
    assert out[6] == b"bytes!"
    assert out[7] == ([(1.5, 3), (-2.5, 4)], 2)
    assert out[8] == b"alloc_me"
    assert out[9] == (3, True)


@pytest.mark.timeout(60)
def test_bad_arguments_raise_and_change_nothing():
    """Issue 2, A39: a bad rank is ERR_RANK, a bad tag ERR_TAG (MPI.Exception naming
    the valid range); malformed buffer specs raise ValueError/TypeError, read-only or
    strided receive buffers BufferError, an unknown typecode KeyError, all as mpi4py
    raises them. After each error nothing was sent or posted: the next correct call
    gets the right message."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.rank
        ro = np.zeros(4)
        ro.flags.writeable = False
        seq = iter(range(1000))

        def still_works():
            # one correct exchange: the message that arrives is exactly the one sent now
            token = next(seq)
            got = comm.sendrecv(("token", comm.rank, token), dest=peer, sendtag=5,
                                source=peer, recvtag=5)
            assert got == ("token", peer, token), got
            nothing_left_behind(comm)

        for call in (lambda: comm.send(1, dest=2), lambda: comm.Send(b"x", dest=-5),
                     lambda: comm.isend(1, dest=7), lambda: comm.recv(source=2),
                     lambda: comm.Irecv(bytearray(1), source=-7),
                     lambda: comm.Probe(source=3), lambda: comm.Iprobe(source=2),
                     lambda: comm.sendrecv(1, dest=peer, source=5),
                     lambda: comm.Sendrecv(b"x", dest=9, recvbuf=bytearray(1), source=peer)):
            with raises_mpi(MPI.ERR_RANK, match=r"0\.\.1"):
                call()
            still_works()
        for call in (lambda: comm.send(1, dest=peer, tag=-3),
                     lambda: comm.send(1, dest=peer, tag=MPI.ANY_TAG),
                     lambda: comm.Isend(b"x", dest=peer, tag=comm.Get_attr(MPI.TAG_UB) + 1),
                     lambda: comm.recv(source=peer, tag=-5),
                     lambda: comm.Sendrecv(b"x", dest=peer, recvbuf=bytearray(1), source=peer,
                                           recvtag=-2)):
            with raises_mpi(MPI.ERR_TAG, match="tags are 0"):
                call()
            still_works()
        specs = [
            (ValueError, lambda: comm.Send([bytearray(4), 1, 0, MPI.BYTE, 3], peer)),
            (ValueError, lambda: comm.Send([bytearray(4)], peer)),
            (ValueError, lambda: comm.Send([bytearray(4), -1, MPI.BYTE], peer)),
            (ValueError, lambda: comm.Send([bytearray(4), 5, MPI.BYTE], peer)),
            (ValueError, lambda: comm.Send([bytearray(5), MPI.INT], peer)),
            (ValueError, lambda: comm.Send([None, 3, MPI.BYTE], peer)),
            (ValueError, lambda: comm.Send([bytearray(8), (2, -1), MPI.BYTE], peer)),
            (ValueError, lambda: comm.Send([bytearray(8), MPI.DATATYPE_NULL], peer)),
            (TypeError, lambda: comm.Send(None, peer)),
            (TypeError, lambda: comm.Send("text", peer)),
            (TypeError, lambda: comm.Send(5, peer)),
            (KeyError, lambda: comm.Send([np.zeros(2), "zz"], peer)),
            (BufferError, lambda: comm.Recv(b"abcd", peer)),
            (BufferError, lambda: comm.Irecv(ro, peer)),
            (BufferError, lambda: comm.Recv([memoryview(bytearray(4)).toreadonly(),
                                             MPI.BYTE], peer)),
            (BufferError, lambda: comm.Irecv(np.zeros((4, 4))[:, 0], peer)),
            (BufferError, lambda: comm.Send(np.zeros((4, 4))[:, 0], peer)),
            (TypeError, lambda: comm.send(1, dest=1.5)),
        ]
        for kind, call in specs:
            with pytest.raises(kind):
                call()
            still_works()
        # an int-like rank or tag (numpy integer) is fine, as in mpi4py
        comm.send("np", dest=np.int64(peer), tag=np.int32(9))
        assert comm.recv(source=np.int64(peer), tag=np.int16(9)) == "np"
        still_works()
        return True

    assert shmrma.launch(body, 2, timeout=50) == [True, True]


@pytest.mark.timeout(60)
def test_truncation_raises_and_leaves_the_buffer_unchanged():
    """Issue 2: a message larger than the receive buffer is ERR_TRUNCATE (saying how
    big it is and what to do); the buffer is not touched, the message is gone (its
    segment too, for a large one) and the next receive gets the next message."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            comm.Send(bytearray(b"12345678"), 1, tag=1)
            comm.Send(bytearray(b"next"), 1, tag=1)
            comm.Send(np.ones(2 * MIB, dtype=np.uint8), 1, tag=2)
            comm.Send(np.arange(3, dtype=np.int32), 1, tag=2)
            comm.Send(bytearray(b"abcdef"), 1, tag=3)
            comm.Barrier()
            return None
        out = {}
        buf = bytearray(b"wxyz")
        with raises_mpi(MPI.ERR_TRUNCATE, match="8 bytes.*larger buffer"):
            comm.Recv(buf, source=0, tag=1)
        out["kept"] = bytes(buf)
        comm.Recv(buf, source=0, tag=1)
        out["next"] = bytes(buf)
        small = np.full(4, 7, dtype=np.int32)
        with raises_mpi(MPI.ERR_TRUNCATE):
            comm.Recv(small, source=0, tag=2)
        out["kept_np"] = small.tolist()
        comm.Recv(small[:3], source=0, tag=2)
        out["np"] = small.tolist()
        status = MPI.Status()
        request = comm.Irecv(bytearray(2), source=0, tag=3)
        with raises_mpi(MPI.ERR_TRUNCATE):
            request.Wait(status)
        out["status"] = (status.Get_error(), bool(request))
        comm.Barrier()
        out["segments"] = job_segments()
        return out

    out = shmrma.launch(body, 2, timeout=50)[1]
    assert out["kept"] == b"wxyz" and out["next"] == b"next"
    assert out["kept_np"] == [7, 7, 7, 7] and out["np"] == [0, 1, 2, 7]
    assert out["status"] == (MPI.ERR_TRUNCATE, False)
    assert out["segments"] == []


@pytest.mark.timeout(30)
def test_singleton_sends_to_self():
    """Issue 2: a world of one rank sends to itself, blocking sends included (they
    are buffered, so they never wait for the receive), at every size."""
    def body():
        comm = MPI.COMM_WORLD
        comm.Send(pattern(3 * MIB, 1), dest=0, tag=1)
        comm.send(list(range(10)), dest=0, tag=2)
        got = np.zeros(3 * MIB, dtype=np.uint8)
        comm.Recv(got, source=0, tag=1)
        same = comm.sendrecv("me", dest=0, sendtag=3, source=0, recvtag=3)
        return bool(np.array_equal(got, pattern(3 * MIB, 1))), comm.recv(source=0, tag=2), same

    assert shmrma.launch(body, 1, timeout=20) == [(True, list(range(10)), "me")]


@pytest.mark.timeout(60)
def test_send_modes(tmp_path):
    """Ssend/Issend (and ssend/issend) complete only once the receiver started the
    matching receive; Bsend, Rsend and their I-forms are the standard send (every
    send is buffered); one buffer may be attached at a time (ERR_OTHER, as MPICH);
    Issend to PROC_NULL completes at once."""
    receiving = tmp_path / "receiving"      # the receiver's mark: its Recv comes next

    def body():
        comm = MPI.COMM_WORLD
        out = {}
        comm.Barrier()
        if comm.rank == 0:
            comm.Ssend(b"sync", 1, tag=1)
            out["receive started"] = receiving.exists()
            pending = comm.issend({"obj": 1}, 1, tag=2)
            out["early"] = pending.Test()
            comm.Barrier()
            pending.Wait()
            for name in ("Bsend", "Rsend"):
                getattr(comm, name)(name.encode(), 1, tag=3)
            MPI.Request.Waitall([comm.Ibsend(b"Ibsend", 1, tag=3),
                                 comm.Irsend(b"Irsend", 1, tag=3)])
            comm.bsend("bsend", 1, tag=4)
            out["null"] = comm.Issend(b"x", MPI.PROC_NULL).Test()
            mine = comm.Issend(b"self", 0, tag=5)
            out["self early"] = mine.Test()
            box = bytearray(4)
            comm.Recv(box, 0, tag=5)
            out["self"] = (mine.Test(), bytes(box))
            buf = bytearray(100 + MPI.BSEND_OVERHEAD)
            MPI.Attach_buffer(buf)
            try:
                MPI.Attach_buffer(bytearray(10))
            except MPI.Exception as exc:
                out["attach twice"] = exc.Get_error_class()
            out["detach"] = (MPI.Detach_buffer() is buf, MPI.Detach_buffer().nbytes)
        else:
            time.sleep(0.3)     # time for an Ssend that does not wait to return first
            receiving.touch()
            box = bytearray(4)
            comm.Recv(box, 0, tag=1)
            comm.Barrier()
            out["got"] = [bytes(box), comm.recv(source=0, tag=2)]
            for size in (5, 5, 6, 6):
                box = bytearray(size)
                comm.Recv(box, 0, tag=3)
                out["got"].append(bytes(box))
            out["got"].append(comm.recv(source=0, tag=4))
        comm.Barrier()
        return out

    sender, receiver = shmrma.launch(body, 2, timeout=50)
    assert sender["receive started"] is True and sender["early"] is False
    assert sender["null"] is True and sender["self early"] is False
    assert sender["self"] == (True, b"self")
    assert sender["attach twice"] == MPI.ERR_OTHER and sender["detach"] == (True, 0)
    assert receiver["got"] == [b"sync", {"obj": 1}, b"Bsend", b"Rsend", b"Ibsend", b"Irsend",
                               "bsend"]


@pytest.mark.timeout(60)
def test_persistent_requests():
    """Send_init/Recv_init (and Ssend_init) are MPI.Prequest: Start makes the operation
    anew, reading the send buffer then; Wait completes it and leaves it inactive (a
    Test of an inactive one is true at once, Waitany skips it); Start on an active
    one or a freed one is ERR_REQUEST; bad arguments raise at init."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        right, left = (rank + 1) % size, (rank - 1) % size
        out, got = np.zeros(2, "i8"), np.zeros(2, "i8")
        send = comm.Send_init(out, right, tag=7)
        receive = comm.Recv_init(got, left, tag=7)
        seen = []
        for step in range(4):
            out[:] = [rank, step]
            MPI.Prequest.Startall([receive, send])
            MPI.Request.Waitall([send, receive])
            seen.append(got.tolist())
        synchronous = comm.Ssend_init(out, right, tag=8)
        synchronous.Start()
        comm.Recv(got, left, tag=8)
        synchronous.Wait()
        idle = (send.Test(), MPI.Request.Waitany([send, receive]) == MPI.UNDEFINED)
        errors = []
        receive.Start()
        for call in (receive.Start, lambda: comm.Send_init(out, size),
                     lambda: comm.Recv_init(got, left, tag=-5)):
            try:
                call()
            except MPI.Exception as exc:
                errors.append(exc.Get_error_class())
        send.Start()
        MPI.Request.Waitall([send, receive])
        for request in (send, receive, synchronous):
            request.Free()
        try:
            send.Start()
        except MPI.Exception as exc:
            errors.append(exc.Get_error_class())
        nothing_left_behind(comm)
        return isinstance(send, MPI.Prequest), seen, idle, errors

    for rank, (prequest, seen, idle, errors) in enumerate(shmrma.launch(body, 3, timeout=50)):
        assert prequest and seen == [[(rank - 1) % 3, step] for step in range(4)]
        assert idle == (True, True)
        assert errors == [MPI.ERR_REQUEST, MPI.ERR_RANK, MPI.ERR_TAG, MPI.ERR_REQUEST]


@pytest.mark.timeout(60)
def test_matched_probe():
    """Mprobe/Improbe (mprobe/improbe) take the message out of matching: a receive
    posted afterwards does not get it, the Message's Recv/recv does, once (then it
    is MESSAGE_NULL and another Recv is ERR_REQUEST); Improbe gives None when
    nothing matches; a PROC_NULL source gives a MESSAGE_NO_PROC handle, whose Recv is
    empty and leaves it MESSAGE_NULL."""
    def body():
        comm = MPI.COMM_WORLD
        out = {}
        if comm.rank == 0:
            comm.Send(np.arange(5, dtype="i4"), 1, tag=3)
            comm.send({"x": 1}, 1, tag=4)
            comm.Ssend(b"sync", 1, tag=5)
        else:
            status = MPI.Status()
            message = comm.Mprobe(0, 3, status)
            bystander = comm.Irecv(bytearray(100), 0, tag=3)
            got = np.empty(status.Get_count(MPI.INT), "i4")
            message.Recv(got)
            out["buffer"] = (got.tolist(), message == MPI.MESSAGE_NULL, bool(message),
                             bystander.Test())
            bystander.Cancel()
            bystander.Wait()
            out["object"] = comm.mprobe(0, 4).recv()
            synchronous = None
            while synchronous is None:
                synchronous = comm.Improbe(0, 5)
            box = bytearray(4)
            synchronous.Recv(box)
            out["sync"] = bytes(box)
            try:
                synchronous.Recv(box)
            except MPI.Exception as exc:
                out["again"] = exc.Get_error_class()
            out["none"] = comm.Improbe(0, 99)
            nobody = comm.Mprobe(MPI.PROC_NULL)
            before = nobody == MPI.MESSAGE_NO_PROC
            empty = MPI.Status()
            nobody.Recv(None, empty)    # then it is MESSAGE_NULL, as in mpi4py
            out["no proc"] = (before, nobody == MPI.MESSAGE_NULL, empty.Get_source())
        nothing_left_behind(comm)
        return out

    out = shmrma.launch(body, 2, timeout=50)[1]
    assert out["buffer"] == ([0, 1, 2, 3, 4], True, False, False)
    assert out["object"] == {"x": 1} and out["sync"] == b"sync"
    assert out["again"] == MPI.ERR_REQUEST and out["none"] is None
    assert out["no proc"] == (True, True, MPI.PROC_NULL)


@pytest.mark.timeout(120)
def test_ssend_to_a_dead_rank_ends_the_job(run_shmrma, tmp_path):
    """A synchronous send whose receiver died ends the job instead of hanging."""
    dead_rank_ends_the_job(run_shmrma, tmp_path, "comm.Ssend(b'x', 1)")


@pytest.mark.timeout(60)
def test_fortran_ordered_buffers_travel_in_memory_order():
    """As mpi4py (and its demo ex-3.08): any contiguous buffer is a buffer, C or
    Fortran order, its elements taken in memory order; a strided one is BufferError."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        grid = np.asfortranarray(np.arange(6, dtype="f8").reshape(2, 3) * (rank + 1))
        got = np.asfortranarray(np.zeros((2, 3)))
        comm.Sendrecv(grid, 1 - rank, 3, got, 1 - rank, 3)
        try:
            comm.Send(np.arange(10.0)[::2], 1 - rank, 4)
            strided = None
        except BufferError:
            strided = "BufferError"
        return got.tolist(), strided
    results = shmrma.launch(body, 2, timeout=30)
    for rank, (got, strided) in enumerate(results):
        assert got == (np.arange(6.0).reshape(2, 3) * (2 - rank)).tolist()
        assert strided == "BufferError"


@pytest.mark.timeout(60)
def test_a_rank_computed_as_a_float_with_an_integral_value_is_taken():
    """mpi4py takes ``nprocs / 2`` as a rank (its demo osu_multi_lat.py does); a
    float that is not integral (which mpi4py would truncate) is a TypeError."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        peer = (rank + size / 2) % size
        got = np.zeros(1)
        comm.Sendrecv(np.array([float(rank)]), peer, 1, got, np.float64(peer), 1)
        try:
            comm.Send(np.zeros(1), 0.5, 2)
            refused = None
        except TypeError:
            refused = "TypeError"
        return float(got[0]), refused
    assert shmrma.launch(body, 2, timeout=30) == [(1.0, "TypeError"), (0.0, "TypeError")]


def _sendrecv_self(message):
    MPI.COMM_SELF.Sendrecv(message, 0, 0, [None, 0, "B"], 0, 0)


@pytest.mark.parametrize("spec,error", [
    (lambda buf: [buf, 0, 1, MPI.DATATYPE_NULL], ValueError),     # displacement, null type
    (lambda buf: [buf, None, 0, MPI.DATATYPE_NULL], ValueError),  # count inferred, null type
    (lambda buf: [buf, None, MPI.INT.Create_resized(0, -4).Commit()], ValueError),
    (lambda buf: [buf, 0, 1, MPI.INT.Create_resized(0, -4).Commit()], ValueError),
    (lambda buf: [buf, 0, 2, "i"], ValueError),                   # displacement past the end
    (lambda buf: [buf, None, 0, "i"], ValueError),                # 5 bytes are not ints
    (lambda buf: [buf, 1.0, "i"], TypeError),                     # counts are integers
    (lambda buf: [buf, 0, 1.0, "i"], TypeError),
    (lambda buf: [buf, -1, "i"], ValueError),
    (lambda buf: [buf, 0, -1, "i"], ValueError)])
def test_malformed_specs_raise_what_mpi4py_raises(spec, error):
    """mpi4py's message_simple: a null datatype or one of extent <= 0 where the
    extent is needed, a displacement out of bounds, a bad count: ValueError."""
    with pytest.raises(error):
        _sendrecv_self(spec(bytearray(5)))


def test_nothing_of_a_null_datatype_goes_through_as_with_mpich():
    """mpi4py asks no extent of [buf, 0, 0, DATATYPE_NULL], and MPICH sends nothing."""
    status = MPI.Status()
    MPI.COMM_SELF.Sendrecv([bytearray(5), 0, 0, MPI.DATATYPE_NULL], 0, 0,
                           [bytearray(5), 0, MPI.DATATYPE_NULL], 0, 0, status)
    assert status.Get_count(MPI.BYTE) == 0


def test_reduce_scatter_with_different_datatypes_is_a_value_error():
    """mpi4py's for_reduce_scatter checks the datatypes before the counts."""
    with pytest.raises(ValueError, match="datatypes"):
        MPI.COMM_SELF.Reduce_scatter([bytearray(4), 1, MPI.INT], [bytearray(4), 1, MPI.FLOAT],
                                     [1], MPI.SUM)


@pytest.mark.timeout(60)
def test_isendrecv_and_isendrecv_replace():
    """MPI-4's nonblocking Sendrecv forms: one request that completes once both the
    send and the receive have, reporting the receive's status; Isendrecv_replace
    reads the buffer before the receive may overwrite it; PROC_NULL peers complete
    at once; a bad receive argument raises with nothing sent; a message too large
    for the receive buffer is ERR_TRUNCATE from Wait."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.rank
        out = {}
        got = np.zeros(3, "i4")
        request = comm.Isendrecv(np.arange(3, dtype="i4") + 10 * comm.rank, peer, 1,
                                 got, peer, 1)
        status = MPI.Status()
        request.Wait(status)
        out["sendrecv"] = (got.tolist(), status.source, status.tag, status.count, bool(request))
        both = np.full(4, comm.rank, "f8")
        request = comm.Isendrecv_replace(both, peer, 2, peer, 2)
        out["replace"] = (request.wait(status), both.tolist(), status.tag)
        status = MPI.Status()
        comm.Isendrecv(None, MPI.PROC_NULL, 0, None, MPI.PROC_NULL, 0).Wait(status)
        comm.Isendrecv_replace(None, MPI.PROC_NULL, 0, MPI.PROC_NULL, 0).Wait()
        out["proc null"] = (status.source, status.tag, status.count)
        with raises_mpi(MPI.ERR_TAG):
            comm.Isendrecv(b"never", peer, 3, bytearray(5), peer, -5)
        with raises_mpi(MPI.ERR_TRUNCATE):
            comm.Isendrecv(b"12345678", peer, 4, bytearray(2), peer, 4).Wait()
        nothing_left_behind(comm)
        return out

    for rank, out in enumerate(shmrma.launch(body, 2, timeout=50)):
        peer = 1 - rank
        assert out["sendrecv"] == ([10 * peer, 10 * peer + 1, 10 * peer + 2], peer, 1, 12,
                                   False)
        assert out["replace"] == (None, [float(peer)] * 4, 2)
        assert out["proc null"] == (MPI.PROC_NULL, MPI.ANY_TAG, 0)


@pytest.mark.timeout(60)
def test_recv_into_a_given_buffer_warns_and_is_bounded_by_it():
    """mpi4py 4.1.2: recv(buf) (a buffer, or a size in bytes) warns that the argument
    is deprecated (UserWarning), receives the pickle into it, and a message larger
    than it is ERR_TRUNCATE; sendrecv passes its recvbuf on; a PROC_NULL source does
    not look at the buffer."""
    import warnings

    def body():
        comm = MPI.COMM_SELF
        out = {}
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(UserWarning, match="deprecated"):
                comm.recv(bytearray(0), MPI.PROC_NULL)
            warnings.simplefilter("ignore")
            comm.send("42", 0)
            comm.send([42], 0)
            status = MPI.Status()
            out["sized"] = (comm.recv(128, 0, status=status), status.source, status.count > 0)
            out["buffer"] = comm.recv(bytearray(128), 0)
            out["proc null"] = comm.recv("not a buffer", MPI.PROC_NULL)
            out["sendrecv"] = comm.sendrecv({"k": 1}, 0, 5, bytearray(64), 0, 5)
            comm.send(list(range(100)), 0, tag=6)
            with raises_mpi(MPI.ERR_TRUNCATE):
                comm.recv(8, 0, 6)
        nothing_left_behind(comm)
        return out

    out = shmrma.launch(body, 1, timeout=50)[0]
    assert out == {"sized": ("42", 0, True), "buffer": [42], "proc null": None,
                   "sendrecv": {"k": 1}}


@pytest.mark.timeout(60)
def test_message_handles_as_mpi4py_has_them():
    """Message(message) is another handle to the same message: MESSAGE_NO_PROC's copies
    are true and equal to it, and a copy's Recv leaves that copy MESSAGE_NULL while
    the predefined handle stays as it is; a message received through one handle is
    received (ERR_REQUEST through another). The predefined handles pickle by name
    (the same object back), their copies as copies, a live message not at all.
    Message.Probe/Iprobe (and probe/iprobe) are Comm.Mprobe/Improbe."""
    import pickle

    def body():
        comm = MPI.COMM_SELF
        out = {}
        noproc = MPI.MESSAGE_NO_PROC
        noproc.Recv(None)
        noproc.Irecv(None).Wait()
        copy = MPI.Message(noproc)
        out["no proc"] = (bool(noproc), bool(copy), copy == noproc, noproc != MPI.MESSAGE_NULL,
                          bool(MPI.MESSAGE_NULL))
        request = copy.Irecv(None)
        out["copy received"] = (copy == MPI.MESSAGE_NULL, bool(request), request.Wait(),
                                bool(noproc))
        out["pickles"] = [
            pickle.loads(pickle.dumps(MPI.MESSAGE_NULL)) is MPI.MESSAGE_NULL,
            pickle.loads(pickle.dumps(MPI.MESSAGE_NO_PROC)) is MPI.MESSAGE_NO_PROC,
            pickle.loads(pickle.dumps(MPI.Message(MPI.MESSAGE_NO_PROC))) == MPI.MESSAGE_NO_PROC]
        with pytest.raises(TypeError):
            MPI.Message(3)
        comm.Send(b"abc", 0, tag=1)
        assert MPI.Message.Iprobe(comm, 0, 2) is None
        message = MPI.Message.Iprobe(comm, 0, 1)
        with pytest.raises(ValueError):
            pickle.dumps(message)
        other = MPI.Message(message)
        box = bytearray(3)
        message.Recv(box)
        with raises_mpi(MPI.ERR_REQUEST):
            other.Recv(box)
        comm.send({"x": 1}, 0, tag=2)
        status = MPI.Status()
        out["classmethods"] = (bytes(box), MPI.Message.probe(comm, 0, 2, status).recv(),
                               status.tag, type(MPI.Message.Probe(comm, MPI.PROC_NULL)).__name__,
                               MPI.Message.iprobe(comm, MPI.PROC_NULL) == MPI.MESSAGE_NO_PROC)
        nothing_left_behind(comm)
        return out

    out = shmrma.launch(body, 1, timeout=50)[0]
    assert out["no proc"] == (True, True, True, True, False)
    assert out["copy received"] == (True, True, True, True)
    assert out["pickles"] == [True, True, True]
    assert out["classmethods"] == (b"abc", {"x": 1}, 2, "Message", True)
