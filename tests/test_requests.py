"""Requests: Wait/Test and the Waitall/Waitany/Waitsome/Testall/Testany/Testsome
class methods over a mix of request kinds, null requests, Cancel, Status (docs/api.md).

Rules: issue 2 (results as mpi4py + MPICH give them: completed requests become
null, all-null lists give UNDEFINED/None), R57 (request kinds mix in one call;
RMA requests join these lists once windows exist).
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from mpitest import HANG_S, raises_mpi


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



@pytest.mark.timeout(60)
def test_get_status_and_the_lowercase_forms():
    """mpi4py 4.1.2: Get_status_any/some/all (and get_status_*) tell which requests
    are complete and fill their statuses, leaving them live; testany gives
    (index, flag, object), testsome/waitsome (indices, objects); null requests count
    as complete with an empty status, and all-null lists give (UNDEFINED, True),
    None and True; a statuses list grows to hold every status, another sequence does
    not grow (and too short is no error)."""
    def body():
        comm = MPI.COMM_SELF
        out = {}
        requests = [comm.irecv(source=0, tag=tag) for tag in (1, 2, 3)]
        status = MPI.Status()
        out["none yet"] = (MPI.Request.testany(requests), MPI.Request.Get_status_any(requests),
                           MPI.Request.get_status_some(requests),
                           MPI.Request.Get_status_all(requests), MPI.Request.testsome(requests))
        comm.send("two", 0, tag=2)
        found = (MPI.UNDEFINED, False)
        while not found[1]:
            found = MPI.Request.Get_status_any(requests, status)
        out["any"] = (found, status.tag, [bool(r) for r in requests],
                      requests[1].get_status(), MPI.Request.testany(requests, status),
                      status.tag, bool(requests[1]))
        comm.send("one", 0, tag=1)
        comm.send("three", 0, tag=3)
        statuses = []
        while MPI.Request.Get_status_some(requests, statuses) != [0, 2]:
            pass
        out["some"] = ([s.tag for s in statuses], MPI.Request.get_status_all(requests),
                       [bool(r) for r in requests], MPI.Request.waitsome(requests, statuses),
                       [s.tag for s in statuses], [bool(r) for r in requests])
        nulls = [MPI.REQUEST_NULL, MPI.Request()]
        status.tag = 5
        statuses = (MPI.Status(),)
        statuses[0].tag = 5
        out["nulls"] = (MPI.Request.testany(nulls), MPI.Request.waitsome(nulls),
                        MPI.Request.testsome(nulls), MPI.Request.Get_status_any(nulls, status),
                        status.tag, MPI.Request.Get_status_some(nulls),
                        MPI.Request.Get_status_all(nulls, statuses), statuses[0].tag,
                        MPI.Request.Waitall(nulls, statuses), len(statuses))
        return out

    out = shmrma.launch(body, 1, timeout=50)[0]
    assert out["none yet"] == ((MPI.UNDEFINED, False, None), (MPI.UNDEFINED, False), [],
                               False, ([], []))
    assert out["any"] == ((1, True), 2, [True, True, True], True, (1, True, "two"), 2, False)
    assert out["some"] == ([1, 3], True, [True, False, True], ([0, 2], ["one", "three"]),
                           [1, 3], [False, False, False])
    assert out["nulls"] == ((MPI.UNDEFINED, True, None), (None, None), (None, None),
                            (MPI.UNDEFINED, True), MPI.ANY_TAG, None, True, MPI.ANY_TAG,
                            True, 1)


@pytest.mark.timeout(60)
def test_an_issend_is_not_cancelled_and_completes_once_matched():
    """cancel() of an Issend cannot take the message back (it is in the receiver's
    queue already; MPI lets a cancel fail): the request is not cancelled and stays
    incomplete until a receive matches the message, then completes normally."""
    def body():
        comm = MPI.COMM_SELF
        status = MPI.Status()
        request = comm.issend("hello", 0, tag=4)
        request.cancel()
        before = (request.get_status(status), status.Is_cancelled(), bool(request))
        received = comm.recv(None, 0, 4)
        while not request.Get_status(status):
            pass
        return before, received, status.Is_cancelled(), request.test(), bool(request)

    out = shmrma.launch(body, 1, timeout=50)[0]
    assert out == ((False, False, True), "hello", False, (True, None), False)


@pytest.mark.timeout(60)
def test_a_request_made_from_a_request_is_another_handle():
    """mpi4py: Request(request), Prequest(prequest) and Request.fromhandle(handle) (and
    fromint/f2py) give another handle to the same request, equal to it, of the class
    asked for; whatever is done through it is done to the request. A Prequest or
    Grequest made from another kind of request is TypeError, an unknown handle
    ERR_REQUEST; pickling gives REQUEST_NULL back, and refuses a live request."""
    import pickle

    def body():
        comm = MPI.COMM_SELF
        out = {}
        persistent = comm.Send_init(b"x", 0, tag=6)
        copies = [MPI.Prequest(persistent), MPI.Prequest.fromhandle(persistent.handle),
                  MPI.Prequest.fromint(persistent.toint()), MPI.Prequest.f2py(persistent.py2f()),
                  MPI.Request(persistent)]
        out["copies"] = [(type(c).__name__, c == persistent) for c in copies]
        for wrong in (lambda: MPI.Grequest(persistent), lambda: MPI.Prequest(comm.Isend(
                b"", MPI.PROC_NULL)), lambda: MPI.Request(3)):
            with pytest.raises(TypeError):
                wrong()
        copies[0].Start()
        received = bytearray(1)
        comm.Recv(received, 0, tag=6)
        out["started through a copy"] = (MPI.Request.Testall([copies[4]]), bool(persistent),
                                         bytes(received))
        persistent.Free()
        out["freed"] = [bool(c) for c in copies]
        receive = comm.irecv(source=0, tag=7)
        copy = MPI.Request(receive)
        comm.send({"a": 1}, 0, tag=7)
        out["received through a copy"] = (copy.wait(), bool(receive), copy == MPI.REQUEST_NULL)
        with raises_mpi(MPI.ERR_REQUEST):
            MPI.Request.fromhandle(12345)
        out["null"] = (MPI.REQUEST_NULL.handle, MPI.Request.fromhandle(0) == MPI.REQUEST_NULL,
                       pickle.loads(pickle.dumps(MPI.REQUEST_NULL)) is MPI.REQUEST_NULL,
                       pickle.loads(pickle.dumps(receive)) == MPI.REQUEST_NULL)
        live = comm.irecv(source=0, tag=8)
        with pytest.raises(ValueError):
            pickle.dumps(live)
        live.Cancel()
        live.Wait()
        return out

    out = shmrma.launch(body, 1, timeout=50)[0]
    assert out["copies"] == [("Prequest", True)] * 4 + [("Request", True)]
    assert out["started through a copy"] == (True, True, b"x")
    assert out["freed"] == [False] * 5
    assert out["received through a copy"] == ({"a": 1}, False, True)
    assert out["null"] == (0, True, True, True)


@pytest.mark.timeout(60)
def test_generalized_requests():
    """Grequest.Start as mpi4py 4.1.2 on MPICH: incomplete until Complete; Cancel calls
    cancel_fn(completed); completion reports query_fn's status (not cancelled when
    there is no cancel_fn) and then calls free_fn, all with args/kwargs; Get_status
    calls query_fn only; a Grequest freed before Complete is released by Complete;
    complete(obj) is what wait() gives, once; a Wait in one thread ends when another
    thread completes the request; an exception in a callback is printed and raised
    as MPI.Exception of its class (ERR_OTHER for others); Complete of a finished
    request is ERR_REQUEST."""
    import threading

    def body():
        log = []

        def query(status, *args, **kwargs):
            log.append(("query", args, kwargs))
            status.source = 3
            status.cancelled = True

        def free(*args, **kwargs):
            log.append(("free", args))

        def cancel(completed, *args, **kwargs):
            log.append(("cancel", completed))

        out = {}
        greq = MPI.Grequest.Start(query, free, cancel, args=(1,), kwargs={"k": 2})
        status = MPI.Status()
        out["pending"] = (greq.Test(), MPI.Request.Testany([greq]), type(greq).__name__)
        greq.Cancel()
        greq.Complete()
        greq.Cancel()
        out["get_status"] = (greq.Get_status(status), status.source, list(log))
        del log[:]
        out["test"] = (greq.Test(status), status.source, status.cancelled, bool(greq),
                       list(log))
        del log[:]
        plain = MPI.Grequest.Start(query, free, None)
        plain.Complete()
        plain.Wait(status)
        out["no cancel_fn"] = status.cancelled
        freed = MPI.Grequest.Start(query, free, cancel)
        del log[:]
        freed.Free()
        before = list(log)
        freed.Complete()
        out["freed first"] = (before, list(log), bool(freed), freed.Wait())
        result = MPI.Grequest.Start()
        result.complete({"x": 1})
        out["complete(obj)"] = (result.wait(), result.wait())
        waited = MPI.Grequest.Start()
        threading.Timer(0.2, waited.Complete).start()
        out["other thread"] = waited.Wait()
        with raises_mpi(MPI.ERR_REQUEST):
            waited.Complete()

        def raise_mpi(*args):
            raise MPI.Exception(MPI.ERR_BUFFER)

        def raise_other(*args):
            raise ValueError(42)

        raised = []
        for callbacks in ((raise_mpi, None, None), (None, raise_other, None)):
            failing = MPI.Grequest.Start(*callbacks)
            failing.Complete()
            with pytest.raises(MPI.Exception) as caught:
                failing.Wait()
            raised.append((caught.value.Get_error_class(), bool(failing)))
        out["raised"] = raised
        return out

    out = shmrma.launch(body, 1, timeout=50)[0]
    assert out["pending"] == (False, (MPI.UNDEFINED, False), "Grequest")
    assert out["get_status"] == (True, 3, [("cancel", False), ("cancel", True),
                                           ("query", (1,), {"k": 2})])
    assert out["test"] == (True, 3, True, False, [("query", (1,), {"k": 2}), ("free", (1,))])
    assert out["no cancel_fn"] is False
    assert out["freed first"] == ([], [("free", ())], False, True)
    assert out["complete(obj)"] == ({"x": 1}, None)
    assert out["other thread"] is True
    assert out["raised"] == [(MPI.ERR_BUFFER, False), (MPI.ERR_OTHER, False)]


WAITANY_WITH_A_RANK_GONE = r"""
import os, time
import numpy as np
from shmrma import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
if comm.rank == 1:
    os._exit(0)                 # a clean exit: the launcher does not end the job for it
if comm.rank == 2:
    time.sleep(0.3)
    comm.Send(np.ones(4), 0, 7)
else:
    def outcome(wait):
        try:
            return repr(wait())
        except MPI.Exception as exc:
            return "error %d" % MPI.Get_error_class(exc.Get_error_code())
    dead = lambda: comm.Irecv(np.zeros(4), 1)
    print("either", outcome(lambda: MPI.Request.Waitany([dead(), comm.Irecv(np.zeros(4), 2)])))
    print("waitany", outcome(lambda: MPI.Request.Waitany([dead()])))
    print("waitsome", outcome(lambda: MPI.Request.Waitsome([dead(), dead()])))
    print("ibarrier", outcome(lambda: MPI.Request.Waitany([comm.Ibarrier()])))
"""


@pytest.mark.timeout(120)
def test_waitany_and_waitsome_end_when_every_peer_is_gone(run_shmrma, tmp_path):
    """Waitany and Waitsome wait while one of their requests can still complete (a
    rank gone does not end a wait another live rank will satisfy), and raise
    ERR_OTHER once none can: every request's peer has exited (issue 13: they waited
    until the job's timeout, which would end the job with 124)."""
    program = tmp_path / "waitany_gone.py"
    program.write_text(WAITANY_WITH_A_RANK_GONE)
    result = run_shmrma(["-n", 3, "--timeout", HANG_S, program], timeout=HANG_S + 30)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["either"] == "1"
    for name in ("waitany", "waitsome", "ibarrier"):
        assert lines[name] == "error %d" % MPI.ERR_OTHER, (name, lines[name])
