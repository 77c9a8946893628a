"""Communication calls: Put, Get, Accumulate, Get_accumulate, Fetch_and_op,
Compare_and_swap and the request-based forms; buffer specifications; argument errors;
atomicity and ordering.

Rules: MPI-3.1 §11.3 (communication calls), §11.7.1 (atomicity), §11.7.2 (R141),
the buffer specifications of docs/api.md; one accumulate lock for all accumulating
calls; PROC_NULL makes any call a no-op, whatever its buffers. Every multi-rank body
runs under ``shmrma.launch`` with a timeout.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI


# --- helpers (run inside the ranks) ---------------------------------------------------

def expect(error_class, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` must raise MPI.Exception of ``error_class``; returns it."""
    try:
        fn(*args, **kwargs)
    except MPI.Exception as exc:
        assert exc.Get_error_class() == error_class, (
            "expected error class %d, got %d: %s" % (error_class, exc.Get_error_class(), exc))
        return exc
    raise AssertionError("%r did not raise MPI.Exception of class %d" % (fn, error_class))


def expect_python(exc_type, fn, *args, **kwargs):
    """``fn`` must raise exactly ``exc_type`` (ValueError, BufferError, TypeError)."""
    try:
        fn(*args, **kwargs)
    except exc_type as exc:
        assert type(exc) is exc_type or not isinstance(exc, MPI.Exception), exc
        return exc
    except Exception as exc:  # noqa: BLE001 - report what came instead
        raise AssertionError("expected %s, got %s: %s" % (exc_type.__name__,
                                                          type(exc).__name__, exc))
    raise AssertionError("%r did not raise %s" % (fn, exc_type.__name__))


def local(win, dtype):
    return np.frombuffer(win.tomemory(), dtype=dtype)


PAIR_DOUBLE_INT = np.dtype({"names": ["value", "index"], "formats": ["f8", np.intc]},
                           align=True)


# --- every call, with numpy and bytearray buffers ----------------------------------------

@pytest.mark.timeout(60)
def test_every_call_with_numpy_buffers():
    """R34, R37, R42, R43, R46, R49, R50, R55: each call with numpy buffers, to the
    peer and to the caller itself, in a Lock_all epoch: the data lands where the
    target displacement (in units of the target's disp_unit) says, fetches return the
    old values, and the R-forms complete with Wait."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(32 * 4, 4, comm=comm)
        local(win, "i4")[:] = 0
        comm.Barrier()
        fetched = []
        win.Lock_all()
        for target, base in ((peer, 0), (rank, 16)):
            win.Put(np.array([1, 2, 3, 4], dtype="i4"), target, base)
            win.Flush(target)
            got = np.zeros(4, dtype="i4")
            win.Get(got, target, base)
            win.Flush_local(target)
            fetched.append(got.tolist())
            win.Accumulate(np.full(4, 10, dtype="i4"), target, base, MPI.SUM)
            old = np.zeros(4, dtype="i4")
            win.Get_accumulate(np.ones(4, dtype="i4"), old, target, base, MPI.SUM)
            win.Flush(target)
            fetched.append(old.tolist())
            one = np.zeros(1, dtype="i4")
            win.Fetch_and_op(np.array([100], dtype="i4"), one, target, base + 4, MPI.SUM)
            win.Flush(target)
            fetched.append(int(one[0]))
            swapped = np.zeros(1, dtype="i4")
            win.Compare_and_swap(np.array([7], dtype="i4"), np.array([100], dtype="i4"),
                                 swapped, target, base + 4)
            win.Flush(target)
            fetched.append(int(swapped[0]))
            win.Compare_and_swap(np.array([9], dtype="i4"), np.array([100], dtype="i4"),
                                 swapped, target, base + 4)
            win.Flush(target)
            fetched.append(int(swapped[0]))
            assert win.Rput(np.array([5, 6], dtype="i4"), target, (base + 6, 2)).Wait()
            win.Flush(target)
            back = np.zeros(2, dtype="i4")
            win.Rget(back, target, (base + 6, 2, MPI.INT)).Wait()
            fetched.append(back.tolist())
            win.Raccumulate(np.ones(2, dtype="i4"), target, base + 6, MPI.SUM).Wait()
            win.Flush(target)
            result = np.zeros(2, dtype="i4")
            win.Rget_accumulate(np.full(2, 2, dtype="i4"), result, target, base + 6,
                                MPI.PROD).Wait()
            win.Flush(target)
            fetched.append(result.tolist())
        win.Unlock_all()
        comm.Barrier()
        final = local(win, "i4").tolist()
        win.Free()
        return fetched, final
    per_target = [[1, 2, 3, 4], [11, 12, 13, 14], 0, 100, 7, [5, 6], [6, 7]]
    block = [12, 13, 14, 15, 7, 0, 12, 14] + [0] * 8
    for fetched, final in shmrma.launch(body, 2, timeout=30):
        assert fetched == per_target + per_target
        assert final == block + block


@pytest.mark.timeout(60)
def test_every_call_with_bytearray_buffers():
    """R34, R43, R46, R49, R50: each call with bytearray buffers (datatype
    BYTE from format 'B'), using the ops BYTE allows (BOR, BXOR, BAND, REPLACE)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(32, 1, comm=comm)
        win.tomemory()[:] = 0
        comm.Barrier()
        fetched = []
        win.Lock(peer, MPI.LOCK_SHARED)
        win.Put(bytearray([1, 2, 3, 4]), peer, 0)
        win.Flush(peer)
        got = bytearray(4)
        win.Get(got, peer, 0)
        win.Flush_local(peer)
        fetched.append(bytes(got))
        win.Accumulate(bytearray([0x10] * 4), peer, 0, MPI.BOR)
        old = bytearray(4)
        win.Get_accumulate(bytearray([0xFF] * 4), old, peer, 0, MPI.BXOR)
        win.Flush(peer)
        fetched.append(bytes(old))
        one = bytearray(1)
        win.Fetch_and_op(bytearray([0x0F]), one, peer, 8, MPI.BOR)
        win.Compare_and_swap(bytearray([7]), bytearray([0x0F]), one, peer, 8)
        win.Flush(peer)
        fetched.append(bytes(one))
        win.Rput(bytearray([5, 6]), peer, 10).Wait()
        win.Raccumulate(bytearray([0xF0, 0xF0]), peer, 10, MPI.BAND).Wait()
        back = bytearray(2)
        win.Rget_accumulate(bytearray([9, 9]), back, peer, 10, MPI.REPLACE).Wait()
        win.Flush(peer)
        fetched.append(bytes(back))
        back2 = bytearray(2)
        win.Rget(back2, peer, 10).Wait()
        fetched.append(bytes(back2))
        win.Unlock(peer)
        comm.Barrier()
        final = bytes(win.tomemory()[:12])
        win.Free()
        return fetched, final
    expected_final = bytes([0xEE, 0xED, 0xEC, 0xEB, 0, 0, 0, 0, 7, 0, 9, 9])
    for fetched, final in shmrma.launch(body, 2, timeout=30):
        assert fetched == [bytes([1, 2, 3, 4]), bytes([0x11, 0x12, 0x13, 0x14]), b"\x0f",
                           bytes([0, 0]), bytes([9, 9])]
        assert final == expected_final


# --- buffer specifications (docs/api.md) --------------------------------------------------

@pytest.mark.timeout(60)
def test_buffer_spec_forms_and_target_defaults():
    """R3: every origin form ([buf, datatype], [buf, count], [buf, count,
    datatype], [buf, (count, displ), datatype], [buf, count, displ, datatype],
    typecodes, [None, 0, datatype]) and every target form (None, int, numpy int,
    (), (disp,), [disp, count], (disp, count, datatype)) move exactly the described
    items to the described place."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(24 * 4, 4, comm=comm)
        local(win, "i4")[:] = -1
        comm.Barrier()
        a = np.arange(1, 9, dtype="i4")
        win.Lock(peer)
        win.Put(a[:2], peer)                              # target None: disp 0
        win.Put([a[:2], MPI.INT], peer, 2)
        win.Put([a, 2], peer, (4,))
        win.Put([a, 2, MPI.INT], peer, [6, 2])
        win.Put([a, (2, 3), MPI.INT], peer, (8, 2, MPI.INT))
        win.Put([a, 2, 5, MPI.INT], peer, np.int64(10))
        win.Put([a, 2, "i"], peer, (12, 2, "i"))
        win.Put([None, 0, MPI.INT], peer, 14)              # nothing moves
        win.Put(a[6:8].tobytes(), peer, (14, 2, MPI.INT))  # bytes, typed at the target
        win.Put(a[:1], peer, ())                           # empty tuple: disp 0
        win.Flush(peer)
        got = np.zeros(6, dtype="i4")
        win.Get([got, (2, 3), MPI.INT], peer, 8)          # lands at got[3:5]
        win.Flush_local(peer)
        res = np.zeros(4, dtype="i4")
        win.Get_accumulate([a, 2, MPI.INT], [res, 2, 1, MPI.INT], peer, 16, MPI.SUM)
        win.Unlock(peer)
        comm.Barrier()
        final = local(win, "i4").tolist()
        win.Free()
        return final, got.tolist(), res.tolist()
    for final, got, res in shmrma.launch(body, 2, timeout=30):
        assert final == [1, 2, 1, 2, 1, 2, 1, 2, 4, 5, 6, 7, 1, 2, 7, 8,
                         0, 1, -1, -1, -1, -1, -1, -1]
        assert got == [0, 0, 0, 4, 5, 0]
        assert res == [0, -1, -1, 0]


@pytest.mark.timeout(60)
def test_buffer_spec_errors_mirror_mpi4py_and_write_nothing():
    """R40 (checked against mpi4py 4.1.2 + MPICH): a 4-item target, a str, float,
    bytes or dict target, a 1- or 5-item message, a count without a buffer, a
    multi-element Fetch_and_op/Compare_and_swap buffer and mismatched FOP/CAS datatypes
    raise ValueError; strided buffers and read-only buffers that are written (Get
    origin, both Get_accumulate buffers, FOP and CAS results) raise BufferError; None
    or an int as a buffer raises TypeError. Nothing reaches the target."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(16 * 4, 4, comm=comm)
        local(win, "i4")[:] = 55
        comm.Barrier()
        a = np.arange(4, dtype="i4")
        one = np.zeros(1, dtype="i4")
        res = np.zeros(4, dtype="i4")
        ro = np.arange(4, dtype="i4")
        ro.flags.writeable = False
        strided = np.zeros(8, dtype="i4")[::2]
        cases = [
            (ValueError, lambda: win.Put(a, peer, (0, 4, MPI.INT, 0))),
            (ValueError, lambda: win.Put(a, peer, "0")),
            (ValueError, lambda: win.Put(a, peer, 1.0)),
            (ValueError, lambda: win.Put(a, peer, b"0")),
            (ValueError, lambda: win.Put(a, peer, {})),
            (ValueError, lambda: win.Get(res, peer, (0, 4, MPI.INT, 0))),
            (ValueError, lambda: win.Accumulate(a, peer, "0")),
            (ValueError, lambda: win.Put([a], peer)),
            (ValueError, lambda: win.Put([a, 1, 0, "i", 5], peer)),
            (ValueError, lambda: win.Put([None, 1, MPI.INT], peer)),
            (ValueError, lambda: win.Fetch_and_op(a, one, peer)),
            (ValueError, lambda: win.Fetch_and_op(a[:1], res, peer)),
            (ValueError, lambda: win.Fetch_and_op(a[:1], np.zeros(1, "i8"), peer)),
            (ValueError, lambda: win.Compare_and_swap(a, a[:1], one, peer)),
            (ValueError, lambda: win.Compare_and_swap(a[:1], a, one, peer)),
            (ValueError, lambda: win.Compare_and_swap(a[:1], a[:1], res, peer)),
            (ValueError, lambda: win.Compare_and_swap(a[:1], np.zeros(1, "i8"), one, peer)),
            (ValueError, lambda: win.Compare_and_swap(a[:1], a[:1], np.zeros(1, "i8"), peer)),
            (BufferError, lambda: win.Put(strided, peer)),
            (BufferError, lambda: win.Get(strided, peer)),
            (BufferError, lambda: win.Accumulate(strided, peer)),
            (BufferError, lambda: win.Get(bytes(16), peer)),
            (BufferError, lambda: win.Get(ro, peer)),
            (BufferError, lambda: win.Rget(ro, peer)),
            (BufferError, lambda: win.Get_accumulate(ro, res, peer)),
            (BufferError, lambda: win.Get_accumulate(a, ro, peer)),
            (BufferError, lambda: win.Fetch_and_op(a[:1], ro[:1], peer)),
            (BufferError, lambda: win.Compare_and_swap(a[:1], a[:1], ro[:1], peer)),
            (TypeError, lambda: win.Put(None, peer)),
            (TypeError, lambda: win.Get(None, peer)),
            (TypeError, lambda: win.Put(5, peer)),
            (TypeError, lambda: win.Fetch_and_op(5, one, peer)),
            (TypeError, lambda: win.Get_accumulate(None, res, peer, op=MPI.NO_OP)),
            (TypeError, lambda: win.Fetch_and_op(None, one, peer, op=MPI.NO_OP)),
        ]
        win.Lock_all()
        for index, (exc_type, call) in enumerate(cases):
            try:
                expect_python(exc_type, call)
            except AssertionError as failure:
                raise AssertionError("case %d: %s" % (index, failure)) from None
        win.Unlock_all()
        comm.Barrier()
        untouched = local(win, "i4").tolist() == [55] * 16
        win.Free()
        return untouched, ro.tolist(), one.tolist(), res.tolist()
    assert shmrma.launch(body, 2, timeout=30) == [(True, [0, 1, 2, 3], [0], [0] * 4)] * 2


@pytest.mark.timeout(60)
def test_read_only_origins_accepted_where_nothing_is_written():
    """R35 (as mpi4py): read-only origins are fine for Put, Accumulate,
    Fetch_and_op and as CAS origin/compare; bytes objects too."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(8 * 4, 4, comm=comm)
        local(win, "i4")[:] = 0
        comm.Barrier()
        ro = np.array([3, 4], dtype="i4")
        ro.flags.writeable = False
        got = np.zeros(1, dtype="i4")
        win.Lock(peer)
        win.Put(ro, peer, 0)
        win.Put(np.array([8], dtype="i4").tobytes(), peer, (2, 1, MPI.INT))
        win.Accumulate(ro, peer, 0)
        win.Fetch_and_op(ro[:1], got, peer, 4)
        win.Compare_and_swap(ro[1:], ro[:1], got, peer, 4)
        win.Unlock(peer)
        comm.Barrier()
        final = local(win, "i4").tolist()
        win.Free()
        return final, int(got[0])
    assert shmrma.launch(body, 2, timeout=30) == [([6, 8, 8, 0, 4, 0, 0, 0], 3)] * 2


# --- PROC_NULL -------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_proc_null_is_a_noop_with_any_buffers():
    """R38: with target PROC_NULL every communication call is a no-op that
    accepts any buffers (None, read-only, wrong sizes) and any target spec, in a
    passive and in a fence epoch; the R-forms return requests that complete."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(16, 1, comm=comm)
        win.tomemory()[:] = 77
        comm.Barrier()
        N = MPI.PROC_NULL
        ro = bytes(3)

        def every_call():
            win.Put(None, N)
            win.Get(None, N)
            win.Get(ro, N, (99, 5))
            win.Accumulate(None, N, op=MPI.NO_OP)
            win.Get_accumulate(None, None, N)
            win.Get_accumulate(ro, ro, N, 1000, MPI.MAXLOC)
            win.Fetch_and_op(None, None, N)
            win.Fetch_and_op(ro, ro, N, -5)
            win.Compare_and_swap(None, None, None, N)
            win.Compare_and_swap(ro, ro, ro, N, 10**9)

        win.Lock_all()
        every_call()
        requests = [win.Rput(None, N), win.Rget(None, N), win.Raccumulate(None, N),
                    win.Rget_accumulate(None, None, N)]
        assert MPI.Request.Waitall(requests)
        win.Unlock_all()
        win.Fence()
        every_call()
        win.Fence()
        untouched = bytes(win.tomemory()) == bytes([77] * 16)
        win.Free()
        return untouched
    assert shmrma.launch(body, 2, timeout=30) == [True, True]


@pytest.mark.timeout(60)
def test_proc_null_rma_outside_any_epoch_is_err_rma_sync():
    """A38, R38, R65: RMA to PROC_NULL needs some open access epoch on the window
    (only the coverage check is skipped); with none open it is ERR_RMA_SYNC."""
    def body():
        win = MPI.Win.Allocate(8, 1, comm=MPI.COMM_WORLD)
        expect(MPI.ERR_RMA_SYNC, win.Put, bytearray(1), MPI.PROC_NULL)
        expect(MPI.ERR_RMA_SYNC, win.Fetch_and_op, None, None, MPI.PROC_NULL)
        win.Free()
        return True
    assert shmrma.launch(body, 2, timeout=20) == [True, True]


# --- displacements, ranges, ranks ------------------------------------------------------------

@pytest.mark.timeout(60)
def test_disp_counts_in_the_targets_disp_unit():
    """R3: with disp_unit 1, 4 and 8 on ranks 0, 1, 2, a Put, an Accumulate and a
    Get at disp d on rank r touch byte d*disp_unit(r) of r's window."""
    units = [1, 4, 8]

    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        win = MPI.Win.Allocate(64, units[rank], comm=comm)
        win.tomemory()[:] = 0
        comm.Barrier()
        win.Fence()
        for target in range(size):
            win.Put(bytearray([rank + 1]), target, 1 + rank)
            win.Accumulate(bytearray([0x40]), target, 5, MPI.BOR)
        win.Fence()
        seen = []
        for target in range(size):
            got = bytearray(1)
            win.Get(got, target, 1 + rank)
            seen.append(got[0])
        win.Fence()
        memory = bytes(win.tomemory())
        win.Free()
        return seen, memory
    results = shmrma.launch(body, 3, timeout=30)
    for target, (seen, memory) in enumerate(results):
        assert seen == [target + 1] * 3
        expected = bytearray(64)
        for origin in range(3):
            expected[(1 + origin) * units[target]] = origin + 1
        expected[5 * units[target]] |= 0x40
        assert memory == bytes(expected)


@pytest.mark.timeout(60)
def test_out_of_range_is_err_rma_range_and_touches_nothing():
    """R40, A36: an access that would touch a byte past the target's window
    raises ERR_RMA_RANGE at the origin for every call, and neither the target window
    nor the origin's result buffers change."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(4 * 8, 8, comm=comm)  # 4 int64 at disp 0..3
        local(win, "i8")[:] = [10, 11, 12, 13]
        comm.Barrier()
        two = np.array([1, 2], dtype="i8")
        sink = np.full(2, -9, dtype="i8")
        one_sink = np.full(1, -9, dtype="i8")
        win.Lock_all()
        for target in (peer, rank):
            calls = [
                lambda: win.Put(np.arange(5, dtype="i8"), target),
                lambda: win.Put(two[:1], target, 4),
                lambda: win.Put(two, target, 3),
                lambda: win.Put(two, target, (3, 2, MPI.INT64_T)),
                lambda: win.Put(two, target, 2**40),
                lambda: win.Get(sink, target, 3),
                lambda: win.Accumulate(two, target, 3),
                lambda: win.Accumulate(two, target, 3, MPI.REPLACE),
                lambda: win.Get_accumulate(two, sink, target, 3),
                lambda: win.Get_accumulate([None, 0, MPI.INT64_T], sink,
                                           target, (3, 2, MPI.INT64_T), MPI.NO_OP),
                lambda: win.Fetch_and_op(two[:1], one_sink, target, 4),
                lambda: win.Compare_and_swap(two[:1], two[:1], one_sink, target, 4),
                lambda: win.Rput(two, target, 3),
                lambda: win.Rget(sink, target, 3),
                lambda: win.Raccumulate(two, target, 3),
                lambda: win.Rget_accumulate(two, sink, target, 3),
            ]
            for index, call in enumerate(calls):
                try:
                    expect(MPI.ERR_RMA_RANGE, call)
                except AssertionError as failure:
                    raise AssertionError("case %d: %s" % (index, failure)) from None
        # the last element is still reachable
        win.Put(two[:1], peer, 3)
        win.Unlock_all()
        comm.Barrier()
        final = local(win, "i8").tolist()
        win.Free()
        return final, sink.tolist(), one_sink.tolist()
    assert shmrma.launch(body, 2, timeout=30) == [([10, 11, 12, 1], [-9, -9], [-9])] * 2


@pytest.mark.timeout(60)
def test_negative_disp_is_err_disp():
    """R40: a negative target displacement on a non-dynamic window is ERR_DISP for
    every call, and nothing is written."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(32, 8, comm=comm)
        local(win, "i8")[:] = 5
        comm.Barrier()
        v = np.ones(1, dtype="i8")
        out = np.zeros(1, dtype="i8")
        win.Lock(peer)
        for call in (lambda: win.Put(v, peer, -1), lambda: win.Get(out, peer, -1),
                     lambda: win.Accumulate(v, peer, (-1, 1)),
                     lambda: win.Get_accumulate(v, out, peer, (-2, 1, MPI.INT64_T)),
                     lambda: win.Fetch_and_op(v, out, peer, -1),
                     lambda: win.Compare_and_swap(v, v, out, peer, -1),
                     lambda: win.Rput(v, peer, -1), lambda: win.Rget(out, peer, -3)):
            expect(MPI.ERR_DISP, call)
        win.Unlock(peer)
        comm.Barrier()
        final = local(win, "i8").tolist()
        win.Free()
        return final, int(out[0])
    assert shmrma.launch(body, 2, timeout=30) == [([5, 5, 5, 5], 0)] * 2


@pytest.mark.timeout(60)
def test_bad_target_rank_is_err_rank():
    """R40, R103: a target rank outside the window's group (and not PROC_NULL) is
    ERR_RANK for every call, inside a fence epoch and a Lock_all epoch."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(16, 1, comm=comm)
        win.tomemory()[:] = 0
        comm.Barrier()
        b = bytearray(1)
        r = bytearray(1)

        def check():
            for bad in (2, 3, -5, 1000):
                for call in (lambda: win.Put(b, bad), lambda: win.Get(r, bad),
                             lambda: win.Accumulate(b, bad, op=MPI.BOR),
                             lambda: win.Get_accumulate(b, r, bad, op=MPI.BOR),
                             lambda: win.Fetch_and_op(b, r, bad, op=MPI.BOR),
                             lambda: win.Compare_and_swap(b, b, r, bad)):
                    expect(MPI.ERR_RANK, call)
        win.Fence()
        check()
        win.Fence()
        win.Lock_all()
        check()
        for bad in (2, -5):
            expect(MPI.ERR_RANK, win.Rput, b, bad)
            expect(MPI.ERR_RANK, win.Rget_accumulate, b, r, bad)
        win.Unlock_all()
        win.Free()
        return True
    assert shmrma.launch(body, 2, timeout=30) == [True, True]


@pytest.mark.timeout(60)
def test_numpy_integer_ranks_accepted_like_mpi4py():
    """R40, R103, mpi4py's argument rules: target and lock ranks may be numpy
    integers, as mpi4py accepts."""
    def body():
        comm = MPI.COMM_WORLD
        peer = np.int64(1 - comm.Get_rank())
        win = MPI.Win.Allocate(8, 1, comm=comm)
        win.Lock(peer)
        win.Put(bytearray(b"\x01"), peer)
        win.Unlock(peer)
        win.Free()
        return True
    assert shmrma.launch(body, 2, timeout=20) == [True, True]


# --- accumulate ops and types ------------------------------------------------------------------

INT_CASES = {
    "SUM": lambda e, a: e + a, "PROD": lambda e, a: e * a,
    "MAX": np.maximum, "MIN": np.minimum,
    "LAND": lambda e, a: ((e != 0) & (a != 0)).astype(e.dtype),
    "LOR": lambda e, a: ((e != 0) | (a != 0)).astype(e.dtype),
    "LXOR": lambda e, a: ((e != 0) ^ (a != 0)).astype(e.dtype),
    "BAND": lambda e, a: e & a, "BOR": lambda e, a: e | a, "BXOR": lambda e, a: e ^ a,
    "REPLACE": lambda e, a: a,
}
FLOAT_CASES = {"SUM": lambda e, a: e + a, "PROD": lambda e, a: e * a,
               "MAX": np.maximum, "MIN": np.minimum, "REPLACE": lambda e, a: a}


@pytest.mark.timeout(60)
def test_accumulate_with_every_predefined_op():
    """R43, R46, R47: Accumulate, Get_accumulate and their R-forms with every
    predefined op (SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, REPLACE on
    int32; SUM, PROD, MAX, MIN, REPLACE on float64; MAXLOC, MINLOC on DOUBLE_INT) give
    op(existing, incoming) element by element; Get_accumulate returns the old value;
    NO_OP reads without changing the target; REPLACE leaves what Put would."""
    existing_i = np.array([0, 1, 6, -3, 5, 12], dtype="i4")
    incoming_i = np.array([3, 0, 5, -2, 0, 10], dtype="i4")
    existing_f = np.array([0.5, -2.0, 3.25, 8.0], dtype="f8")
    incoming_f = np.array([1.5, 4.0, -3.25, 0.5], dtype="f8")

    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(256, 1, comm=comm)
        problems = []
        win.Lock(peer)

        def run(name, existing, incoming, expected, form):
            op = getattr(MPI, name)
            win.Put(existing, peer)
            win.Flush(peer)
            old = np.zeros_like(existing)
            if form == "Accumulate":
                win.Accumulate(incoming, peer, 0, op)
            elif form == "Raccumulate":
                win.Raccumulate(incoming, peer, 0, op).Wait()
            elif form == "Get_accumulate":
                win.Get_accumulate(incoming, old, peer, 0, op)
            else:
                win.Rget_accumulate(incoming, old, peer, 0, op).Wait()
            win.Flush(peer)
            after = np.zeros_like(existing)
            win.Get(after, peer)
            win.Flush(peer)
            if after.tobytes() != expected.tobytes():
                problems.append((name, form, after.tolist(), expected.tolist()))
            if form.endswith("get_accumulate") or form == "Get_accumulate":
                if old.tobytes() != existing.tobytes():
                    problems.append((name, form, "old", old.tolist()))

        forms = ["Accumulate", "Raccumulate", "Get_accumulate", "Rget_accumulate"]
        for name, rule in INT_CASES.items():
            for form in forms:
                run(name, existing_i, incoming_i, rule(existing_i, incoming_i), form)
        for name, rule in FLOAT_CASES.items():
            for form in forms:
                run(name, existing_f, incoming_f, rule(existing_f, incoming_f), form)
        pairs_e = np.zeros(3, dtype=PAIR_DOUBLE_INT)
        pairs_e["value"], pairs_e["index"] = [1.0, 5.0, 2.0], [4, 1, 7]
        pairs_a = np.zeros(3, dtype=PAIR_DOUBLE_INT)
        pairs_a["value"], pairs_a["index"] = [3.0, 5.0, 2.0], [0, 9, 3]
        maxloc = pairs_e.copy()
        maxloc[0] = pairs_a[0]
        maxloc[2] = pairs_a[2]  # tie: lower index wins
        minloc = pairs_e.copy()
        minloc[2] = pairs_a[2]
        for form in ("Accumulate", "Get_accumulate"):
            for name, expected in (("MAXLOC", maxloc), ("MINLOC", minloc)):
                op = getattr(MPI, name)
                win.Put([pairs_e, MPI.DOUBLE_INT], peer)
                win.Flush(peer)
                old = np.zeros(3, dtype=PAIR_DOUBLE_INT)
                if form == "Accumulate":
                    win.Accumulate([pairs_a, MPI.DOUBLE_INT], peer, 0, op)
                else:
                    win.Get_accumulate([pairs_a, MPI.DOUBLE_INT], [old, MPI.DOUBLE_INT],
                                       peer, 0, op)
                win.Flush(peer)
                after = np.zeros(3, dtype=PAIR_DOUBLE_INT)
                win.Get([after, MPI.DOUBLE_INT], peer)
                win.Flush(peer)
                if after.tolist() != expected.tolist():
                    problems.append((name, form, after.tolist()))
                if form == "Get_accumulate" and old.tolist() != pairs_e.tolist():
                    problems.append((name, form, "old", old.tolist()))
        # NO_OP: Get_accumulate reads, the target keeps its value (R47)
        win.Put(existing_i, peer)
        win.Flush(peer)
        old = np.zeros_like(existing_i)
        win.Get_accumulate(incoming_i, old, peer, 0, MPI.NO_OP)
        win.Flush(peer)
        old2 = np.zeros_like(existing_i)
        win.Get_accumulate([None, 0, MPI.INT], old2, peer, (0, 6, MPI.INT), MPI.NO_OP)
        win.Flush(peer)
        after = np.zeros_like(existing_i)
        win.Get(after, peer)
        win.Unlock(peer)
        if not (old.tolist() == old2.tolist() == after.tolist() == existing_i.tolist()):
            problems.append(("NO_OP", old.tolist(), old2.tolist(), after.tolist()))
        comm.Barrier()
        win.Free()
        return problems
    assert shmrma.launch(body, 2, timeout=40) == [[], []]


@pytest.mark.timeout(60)
def test_op_errors_are_err_op_and_write_nothing():
    """R44, R52: NO_OP in Accumulate/Raccumulate, a user-defined op or OP_NULL in any
    accumulate-family call, and an op undefined for the type (BAND on double, MAX on
    complex, SUM on BYTE, MAXLOC on int) raise ERR_OP and write nothing; REPLACE and
    NO_OP in collective buffer reductions raise ERR_OP."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(64, 1, comm=comm)
        win.tomemory()[:] = 3
        comm.Barrier()
        user = MPI.Op.Create(lambda invec, inoutvec, datatype: None, True)
        i4 = np.array([1, 2], dtype="i4")
        out = np.zeros(2, dtype="i4")
        one = np.zeros(1, dtype="i4")
        win.Lock(peer)
        for call in (
            lambda: win.Accumulate(i4, peer, 0, MPI.NO_OP),
            lambda: win.Raccumulate(i4, peer, 0, MPI.NO_OP),
            lambda: win.Accumulate(i4, peer, 0, user),
            lambda: win.Accumulate(i4, peer, 0, MPI.OP_NULL),
            lambda: win.Get_accumulate(i4, out, peer, 0, user),
            lambda: win.Rget_accumulate(i4, out, peer, 0, user),
            lambda: win.Fetch_and_op(i4[:1], one, peer, 0, user),
            lambda: win.Accumulate(np.ones(2, "f8"), peer, 0, MPI.BAND),
            lambda: win.Accumulate(np.ones(2, "c16"), peer, 0, MPI.MAX),
            lambda: win.Accumulate([bytearray(4), MPI.BYTE], peer, 0, MPI.SUM),
            lambda: win.Accumulate(i4, peer, 0, MPI.MAXLOC),
            lambda: win.Get_accumulate(np.ones(2, "f8"), np.ones(2, "f8"), peer, 0, MPI.BXOR),
            lambda: win.Fetch_and_op(np.ones(1, "f4"), np.ones(1, "f4"), peer, 0, MPI.LAND),
        ):
            expect(MPI.ERR_OP, call)
        win.Unlock(peer)
        for op in (MPI.REPLACE, MPI.NO_OP):
            expect(MPI.ERR_OP, comm.Allreduce, np.ones(1, "i4"), np.zeros(1, "i4"), op)
            expect(MPI.ERR_OP, comm.Reduce, np.ones(1, "i4"), np.zeros(1, "i4"), op, 0)
        comm.Barrier()
        untouched = bytes(win.tomemory()) == bytes([3] * 64)
        user.Free()
        win.Free()
        return untouched, out.tolist(), one.tolist()
    assert shmrma.launch(body, 2, timeout=30) == [(True, [0, 0], [0])] * 2


@pytest.mark.timeout(60)
def test_mismatched_basic_types_are_err_type():
    """R45: accumulate-family datatypes that do not share one basic type (origin int32
    with target float32 or int64; a result of another type) raise ERR_TYPE and write
    nothing."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(64, 4, comm=comm)
        local(win, "i4")[:] = 7
        comm.Barrier()
        i4 = np.array([1, 2], dtype="i4")
        f4 = np.zeros(2, dtype="f4")
        win.Lock(peer)
        for call in (
            lambda: win.Accumulate(i4, peer, (0, 2, MPI.FLOAT)),
            lambda: win.Accumulate(i4, peer, (0, 1, MPI.INT64_T)),
            lambda: win.Raccumulate(i4, peer, (0, 2, MPI.FLOAT)),
            lambda: win.Get_accumulate(i4, f4, peer, 0),
            lambda: win.Get_accumulate(i4, f4, peer, (0, 2, MPI.INT), MPI.REPLACE),
            lambda: win.Get_accumulate([None, 0, MPI.INT], f4, peer, (0, 2, MPI.INT),
                                       MPI.NO_OP),
            lambda: win.Rget_accumulate(i4, f4, peer, (0, 2, MPI.FLOAT)),
        ):
            expect(MPI.ERR_TYPE, call)
        win.Unlock(peer)
        comm.Barrier()
        final = local(win, "i4").tolist()
        win.Free()
        return final, f4.tolist()
    assert shmrma.launch(body, 2, timeout=30) == [([7] * 16, [0.0, 0.0])] * 2


@pytest.mark.timeout(60)
def test_long_and_int64_t_are_different_basic_types():
    """R45: one basic type, not one representation. A bare int64 numpy array is MPI.LONG
    (as in mpi4py); Accumulate or Get_accumulate of it into an MPI.INT64_T target is
    ERR_TYPE naming both types, and so is a LONG result of an INT64_T Get_accumulate:
    the target memory and the result buffer keep their bytes. Fetch_and_op has one
    datatype for origin, result and target, so its LONG origin with an INT64_T result
    is mpi4py's ValueError, again writing nothing. Typed MPI.INT64_T throughout, the
    same three calls succeed."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(4 * 8, 8, comm=comm)
        local(win, "i8")[:] = 7
        comm.Barrier()
        i64 = MPI.INT64_T
        result = np.full(1, -5, dtype="i8")
        named_both = []
        win.Lock(peer)
        for call in (
            lambda: win.Accumulate(np.ones(1, "i8"), peer, (0, 1, i64)),
            lambda: win.Get_accumulate(np.ones(1, "i8"), [result, i64], peer, (1, 1, i64)),
            lambda: win.Get_accumulate([np.ones(1, "i8"), i64], result, peer, (1, 1, i64)),
        ):
            exc = expect(MPI.ERR_TYPE, call)
            named_both.append("MPI_LONG" in str(exc) and "MPI_INT64_T" in str(exc))
        expect_python(ValueError, win.Fetch_and_op, np.ones(1, "i8"), [result, i64], peer, 2)
        win.Unlock(peer)
        comm.Barrier()
        after_rejected = local(win, "i8").tolist()
        comm.Barrier()
        # the same calls with the origin (and result) typed like the target
        fetched = np.zeros(2, dtype="i8")
        win.Lock(peer)
        win.Accumulate([np.array([1], "i8"), i64], peer, (0, 1, i64))
        win.Get_accumulate([np.array([10], "i8"), i64], [fetched[:1], i64], peer, (1, 1, i64))
        win.Fetch_and_op([np.array([100], "i8"), i64], [fetched[1:], i64], peer, 2)
        win.Unlock(peer)
        comm.Barrier()
        final = local(win, "i8").tolist()
        win.Free()
        return named_both, result.tolist(), after_rejected, fetched.tolist(), final
    assert shmrma.launch(body, 2, timeout=30) == [
        ([True] * 3, [-5], [7] * 4, [7, 7], [8, 17, 107, 7])] * 2


# --- Fetch_and_op and Compare_and_swap -----------------------------------------------------------

@pytest.mark.timeout(60)
def test_fetch_and_op_and_compare_and_swap_semantics():
    """R49, R50, R51: Fetch_and_op returns the old element and applies SUM, MAX,
    REPLACE (fetch-and-set) or NO_OP (read); it works on floats. CAS always returns
    the old value and writes only when it equals compare (int64, C_BOOL and BYTE);
    CAS on float or complex types is ERR_TYPE with nothing written."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(64, 8, comm=comm)
        mine = local(win, "i8")
        mine[:] = 0
        mine[0] = 7
        mine[1] = 3
        comm.Barrier()
        log = []
        r = np.zeros(1, dtype="i8")
        win.Lock(peer)
        for op, value in ((MPI.SUM, 5), (MPI.MAX, 2), (MPI.MAX, 20), (MPI.REPLACE, 4),
                          (MPI.NO_OP, 99)):
            win.Fetch_and_op(np.array([value], dtype="i8"), r, peer, 0, op)
            win.Flush(peer)
            log.append(int(r[0]))
        win.Fetch_and_op(np.array([0], "i8"), r, peer, 0, MPI.NO_OP)
        win.Flush(peer)
        log.append(int(r[0]))
        # CAS on slot 0 (holds 4) and slot 1 (holds 3): compare 4 matches only slot 0
        for slot in (0, 1):
            win.Compare_and_swap(np.array([5], "i8"), np.array([4], "i8"), r, peer, slot)
            win.Flush(peer)
            log.append(int(r[0]))
        # float FOP
        fr = np.zeros(1, dtype="f8")
        win.Put(np.array([1.5]), peer, 2)
        win.Fetch_and_op(np.array([2.25]), fr, peer, 2, MPI.SUM)
        win.Flush(peer)
        log.append(float(fr[0]))
        # CAS on a logical and a byte type
        b = np.zeros(1, dtype="?")
        win.Put(np.array([True] + [False] * 7), peer, 3)
        win.Compare_and_swap(np.array([False]), np.array([True]), b, peer, 3)
        win.Flush(peer)
        log.append(bool(b[0]))
        by = bytearray(1)
        win.Compare_and_swap(bytearray(b"\x09"), bytearray(b"\x00"), by, peer, 4)
        win.Flush(peer)
        log.append(by[0])
        for dt in ("f4", "f8", "c8", "c16"):
            res = np.zeros(1, dtype=dt)
            expect(MPI.ERR_TYPE, win.Compare_and_swap, np.ones(1, dt), np.zeros(1, dt),
                   res, peer, 5)
            assert res[0] == 0
        win.Unlock(peer)
        comm.Barrier()
        final = mine.tolist()
        win.Free()
        return log, final
    for log, final in shmrma.launch(body, 2, timeout=30):
        assert log == [7, 12, 12, 20, 4, 4, 4, 3, 1.5, True, 0]
        assert final[0] == 5 and final[1] == 3
        assert np.array([final[2]], dtype="i8").view("f8")[0] == 3.75
        assert final[3] == 0 and final[4] == 9 and final[5:] == [0, 0, 0]


# --- request-based forms ------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_request_forms_only_in_passive_epochs():
    """R53: Rput, Rget, Raccumulate and Rget_accumulate with no epoch, or inside a
    fence epoch, raise ERR_RMA_SYNC and write nothing; inside Lock they work."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(16, 1, comm=comm)
        win.tomemory()[:] = 1
        comm.Barrier()
        b = bytearray(b"\x08\x08")
        r = bytearray(2)

        def all_raise():
            expect(MPI.ERR_RMA_SYNC, win.Rput, b, peer)
            expect(MPI.ERR_RMA_SYNC, win.Rget, r, peer)
            expect(MPI.ERR_RMA_SYNC, win.Raccumulate, b, peer, 0, MPI.BOR)
            expect(MPI.ERR_RMA_SYNC, win.Rget_accumulate, b, r, peer, 0, MPI.BOR)
        all_raise()
        win.Fence()
        all_raise()
        win.Fence(MPI.MODE_NOSUCCEED)
        comm.Barrier()
        untouched = bytes(win.tomemory()) == bytes([1] * 16) and r == bytearray(2)
        comm.Barrier()
        win.Lock(peer)
        win.Rput(b, peer, 4).Wait()
        win.Unlock(peer)
        comm.Barrier()
        landed = bytes(win.tomemory()[4:6])
        win.Free()
        return untouched, landed
    assert shmrma.launch(body, 2, timeout=30) == [(True, b"\x08\x08")] * 2


@pytest.mark.timeout(60)
def test_rma_requests_cannot_be_freed_or_cancelled_and_mix_in_waitall():
    """R56, R57, R58: Free or Cancel of an RMA request is ERR_REQUEST (the request can
    still be completed); RMA requests mix with point-to-point requests in Waitall,
    Waitany, Testall and Waitsome; a request already completed by Unlock still waits
    at once; Rget data is present after Wait (R55)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        peer = 1 - rank
        win = MPI.Win.Allocate(8 * 8, 8, comm=comm)
        local(win, "i8")[:] = np.arange(8) + 100 * rank
        comm.Barrier()
        win.Lock_all()
        req = win.Rput(np.array([1], "i8"), peer, 7)
        expect(MPI.ERR_REQUEST, req.Free)
        expect(MPI.ERR_REQUEST, req.Cancel)
        assert req.Wait() is True
        got = np.zeros(2, "i8")
        inbox = np.zeros(1, "i8")
        reqs = [win.Rget(got, peer, 2),
                comm.Isend(np.array([rank], "i8"), peer, 5),
                comm.Irecv(inbox, peer, 5),
                win.Raccumulate(np.array([10], "i8"), peer, 6)]
        MPI.Request.Waitall(reqs)
        seen = [got.tolist(), int(inbox[0])]
        more = [win.Rget_accumulate(np.array([1], "i8"), np.zeros(1, "i8"), peer, 5),
                comm.Isend(np.array([1], "i8"), peer, 6), comm.Irecv(inbox, peer, 6)]
        done = set()
        while len(done) < 3:
            index = MPI.Request.Waitany(more)
            assert index != MPI.UNDEFINED
            done.add(index)
        last = [win.Rput(np.array([3], "i8"), peer, 4), win.Rget(np.zeros(1, "i8"), peer, 4)]
        while not MPI.Request.Testall(last):
            pass
        late = win.Rget(got[:1], peer, 0)
        win.Unlock_all()
        assert late.Wait() is True  # completed by Unlock_all already (R58)
        seen.append(int(got[0]))
        win.Lock_all()  # RMA to PROC_NULL still needs an open epoch (A38)
        reqs = [win.Rput(np.array([0], "i8"), MPI.PROC_NULL),
                comm.Isend(np.zeros(1, "i8"), peer, 7), comm.Irecv(inbox, peer, 7)]
        finished = []
        while len(finished) < 3:
            finished.extend(MPI.Request.Waitsome(reqs) or [])
        win.Unlock_all()
        comm.Barrier()
        final = local(win, "i8").tolist()
        win.Free()
        return seen, final
    results = shmrma.launch(body, 2, timeout=30)
    for rank, (seen, final) in enumerate(results):
        peer = 1 - rank
        assert seen == [[100 * peer + 2, 100 * peer + 3], peer, 100 * peer]
        base = [100 * rank + i for i in range(8)]
        base[7] = 1
        base[6] += 10
        base[5] += 1
        base[4] = 3
        assert final == base


# --- atomicity and ordering ----------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_accumulate_and_fetch_and_op_on_the_same_words_are_atomic_together():
    """R135, R136: each of 3 ranks accumulates 1024 ints into its left
    neighbour while doing Fetch_and_op on the same words of its right neighbour; no
    update is lost, and the values one origin fetches from a word strictly increase."""
    K = 40
    WORDS = 1024

    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        left, right = (rank - 1) % size, (rank + 1) % size
        win = MPI.Win.Allocate(WORDS * 8, 8, comm=comm)
        local(win, "i8")[:] = 0
        comm.Barrier()
        ones = np.ones(WORDS, dtype="i8")
        one = np.ones(1, dtype="i8")
        got = np.zeros(1, dtype="i8")
        fetched = []
        win.Lock_all()
        for step in range(K):
            win.Accumulate(ones, left, 0, MPI.SUM)
            for word in (0, step * 25 % WORDS, WORDS - 1):
                win.Fetch_and_op(one, got, right, word, MPI.SUM)
                win.Flush(right)
                fetched.append((word, int(got[0])))
        win.Unlock_all()
        comm.Barrier()
        final = local(win, "i8").copy()
        win.Free()
        return final, fetched
    results = shmrma.launch(body, 3, timeout=40)
    for rank, (final, fetched) in enumerate(results):
        expected = np.full(WORDS, K, dtype="i8")
        for step in range(K):
            for word in (0, step * 25 % WORDS, WORDS - 1):
                expected[word] += 1
        assert final.tolist() == expected.tolist()
        for word in (0, WORDS - 1):
            values = [value for w, value in fetched if w == word]
            assert values == sorted(set(values)), (word, values)


@pytest.mark.timeout(60)
def test_fetch_and_op_counter_from_every_rank_is_exact():
    """R136: 3 ranks x 300 Fetch_and_op(+1) on one counter under Lock_all return
    exactly the values 0..899 between them, and the counter ends at 900."""
    K = 300

    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8 if comm.Get_rank() == 0 else 0, 8, comm=comm)
        if comm.Get_rank() == 0:
            local(win, "i8")[0] = 0
        comm.Barrier()
        one = np.ones(1, dtype="i8")
        got = np.zeros(1, dtype="i8")
        values = []
        win.Lock_all()
        for _ in range(K):
            win.Fetch_and_op(one, got, 0, 0, MPI.SUM)
            win.Flush_local(0)
            values.append(int(got[0]))
        win.Unlock_all()
        comm.Barrier()
        total = int(local(win, "i8")[0]) if comm.Get_rank() == 0 else None
        win.Free()
        return values, total
    results = shmrma.launch(body, 3, timeout=40)
    every = sorted(v for values, _ in results for v in values)
    assert every == list(range(3 * K))
    assert results[0][1] == 3 * K


@pytest.mark.timeout(60)
def test_concurrent_accumulates_lose_nothing():
    """R135: 3 ranks x 200 Accumulate of int64 +1, float64 +0.5 and MAX(step) to one
    target under Lock_all give exactly 600, 300.0 and the largest step."""
    K = 200

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(24, 8, comm=comm)
        win.tomemory()[:] = 0
        comm.Barrier()
        win.Lock_all()
        for step in range(K):
            win.Accumulate(np.ones(1, "i8"), 0, 0, MPI.SUM)
            win.Accumulate(np.full(1, 0.5), 0, 1, MPI.SUM)
            win.Accumulate(np.array([step * 3 + rank], "i8"), 0, 2, MPI.MAX)
        win.Unlock_all()
        comm.Barrier()
        mem = win.tomemory()
        result = (int(np.frombuffer(mem, "i8")[0]), float(np.frombuffer(mem, "f8")[1]),
                  int(np.frombuffer(mem, "i8")[2]))
        win.Free()
        return result
    assert shmrma.launch(body, 3, timeout=40)[0] == (3 * K, 0.5 * 3 * K, 3 * (K - 1) + 2)


@pytest.mark.timeout(60)
def test_accumulate_ordering_is_program_order_by_default():
    """R141: in one Lock epoch with no flush between them, Accumulate(REPLACE 1),
    Accumulate(REPLACE 2), Get_accumulate(NO_OP), Accumulate(SUM 3),
    Fetch_and_op(NO_OP) apply in program order: the fetches hold 2 and 5."""
    def body():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank()
        win = MPI.Win.Allocate(8, 8, comm=comm)
        local(win, "i8")[:] = 0
        comm.Barrier()
        first = np.zeros(1, "i8")
        second = np.zeros(1, "i8")
        win.Lock(peer, MPI.LOCK_EXCLUSIVE)
        win.Accumulate(np.array([1], "i8"), peer, 0, MPI.REPLACE)
        win.Accumulate(np.array([2], "i8"), peer, 0, MPI.REPLACE)
        win.Get_accumulate(np.zeros(1, "i8"), first, peer, 0, MPI.NO_OP)
        win.Accumulate(np.array([3], "i8"), peer, 0, MPI.SUM)
        win.Fetch_and_op(np.zeros(1, "i8"), second, peer, 0, MPI.NO_OP)
        win.Flush(peer)
        win.Unlock(peer)
        comm.Barrier()
        win.Free()
        return int(first[0]), int(second[0])
    assert shmrma.launch(body, 2, timeout=20) == [(2, 5), (2, 5)]


@pytest.mark.timeout(60)
def test_get_accumulate_with_origin_aliasing_result_is_never_silently_wrong():
    """R48, R46: Get_accumulate/Fetch_and_op whose origin and result are the same
    memory either raise ERR_BUFFER (R48) or behave as if the origin were read first
    (MPICH: result = old target, target = old + origin); never a silently wrong sum."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(16, 8, comm=comm)
        local(win, "i8")[:] = 1
        comm.Barrier()
        outcomes = []
        win.Lock(0)
        for call, length in (("Get_accumulate", 2), ("Fetch_and_op", 1)):
            win.Put(np.ones(2, "i8"), 0)
            win.Flush(0)
            buf = np.full(length, 5, dtype="i8")
            try:
                if call == "Get_accumulate":
                    win.Get_accumulate(buf, buf, 0, 0, MPI.SUM)
                else:
                    win.Fetch_and_op(buf, buf, 0, 0, MPI.SUM)
            except MPI.Exception as exc:
                outcomes.append(exc.Get_error_class() == MPI.ERR_BUFFER)
            else:
                win.Flush(0)
                got = np.zeros(2, "i8")
                win.Get(got, 0)
                win.Flush(0)
                outcomes.append(buf.tolist() == [1] * length and got[:length].tolist() ==
                                [6] * length)
        win.Unlock(0)
        win.Free()
        return outcomes
    assert shmrma.launch(body, 1, timeout=20) == [[True, True]]


@pytest.mark.timeout(60)
def test_zero_count_accumulates_take_any_op_and_a_refused_call_is_no_pending_rma():
    """R45 as MPICH applies it (mpi4py's test_rma relies on it): a zero-count
    Accumulate or Get_accumulate moves nothing, so SUM on MPI.BYTE is accepted there
    (with one element it is ERR_OP); a call that raised is no RMA of the fence epoch:
    Fence(MODE_NOPRECEDE) and Win.Free after it succeed (R78)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(8, 1, comm=comm)
        none = bytearray(1)
        win.Fence()
        win.Accumulate([none, 0, MPI.BYTE], rank, op=MPI.SUM)
        win.Get_accumulate([none, 0, MPI.BYTE], [bytearray(1), 0, MPI.BYTE], rank)
        win.Fence(MPI.MODE_NOSUCCEED)
        win.Fence()
        refused = expect(MPI.ERR_OP, win.Accumulate, [none, 1, MPI.BYTE], rank, op=MPI.SUM)
        win.Fence(MPI.MODE_NOPRECEDE)       # nothing was issued: the assertion holds
        win.Free()
        return refused.Get_error_class()
    assert shmrma.launch(body, 2, timeout=30) == [MPI.ERR_OP] * 2


@pytest.mark.timeout(60)
def test_zero_count_calls_touch_nothing_and_no_op_ignores_the_origin():
    """A zero-count call is a no-op wherever it points, with a derived target type on a
    Win.Create window over another process's numpy memory and with a huge
    displacement; NO_OP ignores the origin (R47): [None, 0, DATATYPE_NULL] in
    Get_accumulate is accepted, as MPICH and mpi4py do (mpi4py still wants a
    one-element origin in Fetch_and_op)."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        memory = np.arange(16, dtype="i8") + 100 * rank
        win = MPI.Win.Create(memory, 8, comm=comm)
        column = MPI.INT64_T.Create_vector(2, 1, 3).Commit()
        resized = MPI.INT64_T.Create_resized(0, 8).Commit()
        peer = 1 - rank
        none = np.zeros(0, "i8")
        comm.Barrier()
        win.Lock(peer)
        win.Put([none, 0, MPI.INT64_T], peer, (0, 0, column))
        win.Get([none, 0, MPI.INT64_T], peer, (0, 0, column))
        win.Accumulate([none, 0, MPI.INT64_T], peer, (2**62, 0, resized))
        fetched = np.zeros(2, "i8")
        win.Get_accumulate([None, 0, MPI.DATATYPE_NULL], fetched, peer, (3, 2, MPI.LONG),
                           op=MPI.NO_OP)
        one = np.zeros(1, "i8")
        win.Fetch_and_op(np.zeros(1, "i8"), one, peer, 5, op=MPI.NO_OP)
        win.Unlock(peer)
        comm.Barrier()
        out = (memory.tolist(), fetched.tolist(), int(one[0]))
        column.Free()
        resized.Free()
        win.Free()
        return out
    results = shmrma.launch(body, 2, timeout=30)
    for rank, (memory, fetched, one) in enumerate(results):
        peer = 1 - rank
        assert memory == [v + 100 * rank for v in range(16)]     # nothing written
        assert fetched == [3 + 100 * peer, 4 + 100 * peer] and one == 5 + 100 * peer
