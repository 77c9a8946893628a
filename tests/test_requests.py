"""Requests: Wait/Test and the Waitall/Waitany/Waitsome/Testall/Testany/Testsome
class methods over a mix of request kinds, null requests, Cancel, Status (API.md §3).

Rules: issue 2 (results as mpi4py + MPICH give them: completed requests become
null, all-null lists give UNDEFINED/None), R57 (request kinds mix in one call;
RMA requests join these lists once windows exist).
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from mpitest import raises_mpi


@pytest.mark.timeout(60)
def test_waitall_over_a_mix_of_kinds():
    """Issue 2, R57: Waitall completes buffer and object sends and receives, a
    PROC_NULL request and REQUEST_NULL together, fills one Status per request, and
    every request is null afterwards; waitall returns the received objects."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.rank
        buf = np.zeros(3, dtype=np.int32)
        requests = [
            comm.Irecv(buf, source=peer, tag=1),
            comm.Isend(np.arange(3, dtype=np.int32) + comm.rank, dest=peer, tag=1),
            comm.irecv(source=peer, tag=2),
            comm.isend({"from": comm.rank}, dest=peer, tag=2),
            comm.Irecv(bytearray(1), source=MPI.PROC_NULL),
            MPI.REQUEST_NULL,
        ]
        live_before = [bool(r) for r in requests]
        statuses = []
        assert MPI.Request.Waitall(requests, statuses) is True
        out = {
            "live_before": live_before,
            "live_after": [bool(r) for r in requests],
            "buf": buf.tolist(),
            "statuses": [(s.Get_source(), s.Get_tag()) for s in statuses[:1] + statuses[2:3]],
            "count": len(statuses),
        }
        requests = [comm.irecv(source=peer, tag=3), comm.isend(comm.rank * 7, dest=peer, tag=3)]
        out["objects"] = MPI.Request.waitall(requests)
        return out

    for rank, out in enumerate(shmrma.launch(body, 2, timeout=50)):
        peer = 1 - rank
        assert out["live_before"] == [True] * 5 + [False]
        assert out["live_after"] == [False] * 6
        assert out["buf"] == [peer, peer + 1, peer + 2]
        assert out["statuses"] == [(peer, 1), (peer, 2)]
        assert out["count"] == 6
        assert out["objects"] == [peer * 7, None]


@pytest.mark.timeout(60)
def test_waitall_completes_every_request_before_raising():
    """Issue 2: when one request of a Waitall fails (a truncated receive), the others
    still complete before the error is raised, so none stays posted to take a later
    message; the failed one is null too."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            for tag in (1, 2, 3):
                comm.Send(bytearray(b"%d-bytes" % tag), dest=0, tag=tag)
            comm.send("later", dest=0, tag=3)
            return None
        small, first, last = bytearray(2), bytearray(7), bytearray(7)
        requests = [comm.Irecv(first, 1, tag=1), comm.Irecv(small, 1, tag=2),
                    comm.Irecv(last, 1, tag=3)]
        with raises_mpi(MPI.ERR_TRUNCATE):
            MPI.Request.Waitall(requests)
        return ([bool(r) for r in requests], bytes(first), bytes(small), bytes(last),
                comm.recv(source=1, tag=3))

    assert shmrma.launch(body, 2, timeout=50)[0] == (
        [False] * 3, b"1-bytes", bytes(2), b"3-bytes", "later")


@pytest.mark.timeout(60)
def test_waitany_waitsome_and_the_test_family():
    """Issue 2: Testany/Testsome/Testall report nothing before a message is there and
    change nothing; Waitany returns the index of the request that completed, Waitsome
    every completed index; null requests are skipped, and all-null lists give
    Waitany -> UNDEFINED, Testany -> (UNDEFINED, True), Waitsome/Testsome -> None,
    Testall -> True, as in mpi4py."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            for tag in (12, 11, 10):
                assert comm.recv(source=0, tag=99) == "next"
                comm.send(tag, dest=0, tag=tag)
            return None
        out = {}
        requests = [comm.irecv(source=1, tag=tag) for tag in (10, 11, 12)]
        requests.insert(1, MPI.REQUEST_NULL)
        out["before"] = (MPI.Request.Testany(requests), MPI.Request.Testsome(requests),
                         MPI.Request.Testall(requests), [bool(r) for r in requests])
        comm.send("next", dest=1, tag=99)
        status = MPI.Status()
        index, obj = MPI.Request.waitany(requests, status)
        out["waitany"] = (index, status.Get_tag(), obj, bool(requests[index]))
        comm.send("next", dest=1, tag=99)
        statuses = []
        done = MPI.Request.Waitsome(requests, statuses)
        out["waitsome"] = (done, [s.Get_tag() for s in statuses[:len(done)]])
        comm.send("next", dest=1, tag=99)
        out["last"] = MPI.Request.Waitany(requests, status), status.Get_tag()
        out["all_null"] = (MPI.Request.Waitany(requests), MPI.Request.Testany(requests),
                           MPI.Request.Waitsome(requests), MPI.Request.Testsome(requests),
                           MPI.Request.Testall(requests), MPI.Request.Waitall(requests),
                           MPI.Request.Waitall([]), MPI.Request.Waitsome([]))
        return out

    out = shmrma.launch(body, 2, timeout=50)[0]
    assert out["before"] == ((MPI.UNDEFINED, False), [], False, [True, False, True, True])
    assert out["waitany"] == (3, 12, 12, False)
    assert out["waitsome"] == ([2], [11])
    assert out["last"] == (0, 10)
    assert out["all_null"] == (MPI.UNDEFINED, (MPI.UNDEFINED, True), None, None, True, True,
                               True, None)


@pytest.mark.timeout(60)
def test_wait_and_test_on_single_requests():
    """Issue 2: Test is False (request still live) until the message arrives, then
    True and the request is null (== REQUEST_NULL, as in mpi4py); test() gives
    (False, None) then (True, obj); irecv().wait() returns the object; Wait on REQUEST_NULL or on a completed request
    returns at once; Free or Cancel of REQUEST_NULL is ERR_REQUEST."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            comm.recv(source=0, tag=99)
            comm.send(["payload"], dest=0, tag=1)
            comm.Send(np.array([4.5]), dest=0, tag=2)
            comm.send("last", dest=0, tag=3)
            return None
        out = {}
        request = comm.irecv(source=1, tag=1)
        buffer_request = comm.Irecv(np.zeros(1), source=1, tag=2)
        out["pending"] = (request.test(), buffer_request.Test(), bool(request),
                          bool(buffer_request), request != MPI.REQUEST_NULL)
        comm.send("go", dest=1, tag=99)
        while True:
            done, obj = request.test()
            if done:
                break
        out["done"] = (obj, bool(request), request == MPI.REQUEST_NULL)
        out["Wait"] = (buffer_request.Wait(), bool(buffer_request), buffer_request.Wait(),
                       buffer_request.Test())
        out["wait"] = comm.irecv(source=1, tag=3).wait()
        out["null"] = (MPI.REQUEST_NULL.Wait(), MPI.REQUEST_NULL.Test(),
                       MPI.REQUEST_NULL.wait(), MPI.REQUEST_NULL.test(),
                       bool(MPI.REQUEST_NULL), MPI.Request() == MPI.REQUEST_NULL)
        with raises_mpi(MPI.ERR_REQUEST):
            MPI.REQUEST_NULL.Free()
        with raises_mpi(MPI.ERR_REQUEST):
            MPI.REQUEST_NULL.Cancel()
        return out

    out = shmrma.launch(body, 2, timeout=50)[0]
    assert out["pending"] == ((False, None), False, True, True, True)
    assert out["done"] == (["payload"], False, True)
    assert out["Wait"] == (True, False, True, True)
    assert out["wait"] == "last"
    assert out["null"] == (True, True, None, (True, None), False, True)


@pytest.mark.timeout(60)
def test_cancel_an_unmatched_receive():
    """Issue 2: Cancel of a receive nothing matched completes it as cancelled
    (Status.Is_cancelled, the buffer untouched, wait() gives None) and the message
    sent later goes to the next receive, not to the cancelled one. Cancel after the
    receive matched changes nothing."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            comm.recv(source=0, tag=99)
            comm.Send(bytearray(b"late"), dest=0, tag=5)
            comm.send("obj", dest=0, tag=6)
            return None
        out = {}
        buf = bytearray(b"....")
        request = comm.Irecv(buf, source=1, tag=5)
        request.Cancel()
        status = MPI.Status()
        request.Wait(status)
        out["cancelled"] = (status.Is_cancelled(), bool(request), bytes(buf))
        obj_request = comm.irecv(source=1, tag=6)
        obj_request.Cancel()
        out["obj_cancelled"] = obj_request.wait()
        comm.send("go", dest=1, tag=99)
        fresh = bytearray(4)
        comm.Recv(fresh, source=1, tag=5)
        out["late"] = (bytes(fresh), bytes(buf))
        matched = comm.irecv(source=1, tag=6)
        while not matched.Get_status():
            pass
        matched.Cancel()
        out["matched"] = (matched.wait(status), status.Is_cancelled())
        return out

    out = shmrma.launch(body, 2, timeout=50)[0]
    assert out["cancelled"] == (True, False, b"....")
    assert out["obj_cancelled"] is None
    assert out["late"] == (b"late", b"....")
    assert out["matched"] == ("obj", False)


def test_status_fields():
    """Issue 2: a new Status is (ANY_SOURCE, ANY_TAG, SUCCESS, count 0) as in MPICH;
    setters work; Status(status) copies (Get_count is checked in test_p2p)."""
    status = MPI.Status()
    assert (status.Get_source(), status.Get_tag(), status.Get_error(), status.Get_count(),
            status.Is_cancelled()) == (MPI.ANY_SOURCE, MPI.ANY_TAG, MPI.SUCCESS, 0, False)
    status.Set_source(3)
    status.Set_tag(9)
    status.Set_error(MPI.ERR_TRUNCATE)
    status.Set_cancelled(True)
    assert (status.source, status.tag, status.error) == (3, 9, MPI.ERR_TRUNCATE)
    copy = MPI.Status(status)
    assert (copy.Get_source(), copy.Get_tag(), copy.Get_error(), copy.Is_cancelled()) == (
        3, 9, MPI.ERR_TRUNCATE, True)


def test_generalized_requests_complete_when_the_user_says():
    """MPI-3.1 §12.2: Grequest.Start; Test is false until Complete (here from another
    thread, which Wait waits for); then query_fn fills the status and free_fn runs;
    Cancel calls cancel_fn with whether it completed; mpi4py's complete(obj) gives
    wait() its result; an exception in a function is MPI.Exception (its own class, or
    ERR_OTHER for a Python one) with its traceback on stderr; Complete twice is
    ERR_REQUEST."""
    import threading
    calls = []

    def query(status, tag):
        status.Set_source(3)
        status.Set_tag(tag)

    request = MPI.Grequest.Start(query, lambda tag: calls.append("free"),
                                 lambda done, tag: calls.append(("cancel", done)), args=(7,))
    assert request.Test() is False and calls == []
    request.Cancel()
    threading.Timer(0.05, request.Complete).start()
    status = MPI.Status()
    request.Wait(status)
    assert (status.Get_source(), status.Get_tag(), calls) == (3, 7, [("cancel", False),
                                                                      "free"])
    assert not request
    with_result = MPI.Grequest.Start()
    with_result.complete({"answer": 42})
    assert MPI.Request.waitall([with_result]) == [{"answer": 42}]
    with raises_mpi(MPI.ERR_REQUEST, match="completed already"):
        done = MPI.Grequest.Start()
        done.Complete()
        done.Complete()

    def fails(*args):
        raise ValueError("from the user")

    def fails_as_mpi(*args):
        raise MPI.Exception(MPI.ERR_BUFFER)

    for raising, kind in ((fails, MPI.ERR_OTHER), (fails_as_mpi, MPI.ERR_BUFFER)):
        broken = MPI.Grequest.Start(None, raising)
        broken.Complete()
        with raises_mpi(kind):
            broken.Wait()
        assert not broken
