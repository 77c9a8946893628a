"""The RMA fast path (shmrma/rma/fastpath.py, shmrma/csrc/rma/calls.c) against the
Python path.

Each call runs twice on equal data, with the fast path on and then off
(``fastpath.enable``), and both runs must end the same: the same window bytes,
the same bytes in every buffer the call was given, and the same outcome (no
error, or the same exception type, error class and message). Spies on the fast
functions rma/calls.py and rma/passive.py call check that the common cases really take
the fast path and that the rest decline it (then the Python path raises).

Rules: MPI-3.1 §11.3 (communication calls), R38/A38 (PROC_NULL, whatever the
buffers), R65 (access epochs), R106 (flushes), R135/R136 (accumulate atomicity:
one lock for fast and Python calls alike). Every multi-rank body runs under
``shmrma.launch`` with a timeout.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic
from shmrma.rma import fastpath, passive, calls as rma

SIZE = 64           # bytes of window memory per rank
UNIT = 4            # disp_unit of the comparison windows

FAST_NAMES = ("_fast_put", "_fast_get", "_fast_accumulate", "_fast_get_accumulate",
              "_fast_fetch_and_op", "_fast_compare_and_swap")


# --- helpers (run inside the ranks) ---------------------------------------------------

def outcome(fn):
    """None, or what ``fn()`` raised: (type, error class, message) / (type, message)."""
    try:
        fn()
    except MPI.Exception as exc:
        return ("MPI.Exception", exc.Get_error_class(), str(exc))
    except Exception as exc:  # noqa: BLE001 - the exact exception is what we compare
        return (type(exc).__name__, str(exc))
    return None


class Spy:
    """Wraps the fast functions the Python methods call; records True (handled) or
    False (declined) for each call."""

    def __init__(self):
        self.calls = []
        for name in FAST_NAMES:
            setattr(rma, name, self._wrap(getattr(rma, name)))
        passive._fast_flush = self._wrap(passive._fast_flush)

    def _wrap(self, function):
        def spy(*args):
            handled = function(*args)
            self.calls.append(handled)
            return handled
        return spy

    def take(self):
        calls, self.calls = self.calls, []
        return calls


def raw(buffer):
    return bytes(memoryview(buffer).cast("B")) if buffer is not None else None


def run_both(views, initial, make, epoch, spy):
    """Run the call ``make()`` builds with the fast path on, then off; each run starts
    from ``initial`` in every view of window memory. Returns the two results and
    whether the fast run's calls were handled by the fast path."""
    results, handled = [], None
    for fast in (True, False):
        fastpath.enable(fast)
        try:
            for view in views:
                view[:] = initial
            call, buffers = make()
            spy.take()
            opened = epoch[0]()
            result = outcome(call)
            epoch[1](opened)
            calls = spy.take()
            if fast:
                handled = calls
            results.append((result, [raw(b) for b in buffers],
                            [bytes(view) for view in views]))
        finally:
            fastpath.enable(True)
    return results, handled


def epochs(win, target):
    """(open, close) pairs by name; open returns what close needs."""
    def lock(rank, assertion=0):
        def open_():
            win.Lock(rank, MPI.LOCK_EXCLUSIVE, assertion)
            return rank
        return open_, win.Unlock

    return {
        "lock": lock(target),
        "lock nocheck": lock(target, MPI.MODE_NOCHECK),
        "lock_all": (win.Lock_all, lambda _: win.Unlock_all()),
        "none": (lambda: None, lambda _: None),
        "lock other": lock(1 - target),
    }


# --- the cases: (name, initial window bytes, make(win, target) -> (call, buffers),
#     fast path expected) ------------------------------------------------------------

def pattern():
    return bytes(range(1, SIZE + 1))


def transfer_cases(win, target):
    """Put and Get with every kind of origin the fast path takes or declines."""
    def put(origin, *args, **kwargs):
        return lambda: (lambda: win.Put(origin(), target, *args, **kwargs), [])

    def get(make_origin, *args, spec=None):
        """Get into make_origin()'s buffer, given as is or as spec(buffer)."""
        def make():
            origin = make_origin()
            message = origin if spec is None else spec(origin)
            return (lambda: win.Get(message, target, *args)), [origin]
        return make

    base = np.zeros(32)
    return [(name, pattern(), make, fast) for name, make, fast in [
        ("put i8", put(lambda: np.array([5, -6, 7], "i8"), 1), True),
        ("put f8 target None", put(lambda: np.array([1.5, -2.5])), True),
        ("put i4 disp 3", put(lambda: np.array([9, 10], "i4"), 3), True),
        ("put u8", put(lambda: np.array([2 ** 64 - 1], "u8"), 2), True),
        ("put f4", put(lambda: np.array([0.25], "f4"), 15), True),
        ("put bytes", put(lambda: b"xyz", 5), True),
        ("put bytearray", put(lambda: bytearray(b"hello"), 2), True),
        ("put memoryview", put(lambda: memoryview(np.arange(3, dtype="i8")), 0), True),
        ("put 2-D", put(lambda: np.arange(6, dtype="i4").reshape(2, 3), 1), True),
        ("put bool", put(lambda: np.array([True, False, True]), 7), True),
        ("put int16", put(lambda: np.array([-3, 4], "i2"), 6), True),
        ("put longlong", put(lambda: np.array([11], np.longlong), 4), True),
        ("put keyword target", put(lambda: np.array([1], "i4"), target=2), True),
        ("put whole window", put(lambda: np.arange(SIZE, dtype="u1")), True),
        ("put strided", put(lambda: np.arange(8, dtype="i8")[::2], 1), False),
        ("put float16", put(lambda: np.ones(2, "f2"), 1), False),
        ("put big-endian", put(lambda: np.ones(2, ">i4"), 1), False),
        ("put empty", put(lambda: np.zeros(0, "i8"), 1), False),
        ("put list spec", put(lambda: [np.arange(2, dtype="i4"), MPI.INT], 1), True),
        ("put [buf, count, BYTE]", put(lambda: [np.arange(8, dtype="u1"), 5, MPI.BYTE], 3),
         True),
        ("put (count, displ)", put(lambda: [np.arange(6, dtype="i4"), (2, 3), MPI.INT], 1),
         True),
        ("put count, displ, datatype", put(lambda: (np.arange(6, dtype="i4"), 2, 1,
                                                    MPI.INT32_T), 1), True),
        ("put [buf, count]", put(lambda: [np.arange(4.0), 3], 1), True),
        ("put doubles as BYTE", put(lambda: [np.arange(2.0), MPI.BYTE], 1), True),
        ("put count past the buffer", put(lambda: [np.arange(2, dtype="i4"), 3, MPI.INT], 1),
         False),
        ("put count 0", put(lambda: [np.arange(2, dtype="i4"), 0, MPI.INT], 1), False),
        ("put derived datatype", put(lambda: [np.arange(2, dtype="i4"), 2, MPI.INT.Dup()], 1),
         False),
        ("put tuple target", put(lambda: np.arange(2, dtype="i4"), (1, 2, MPI.INT)), False),
        ("put numpy disp", put(lambda: np.arange(2, dtype="i4"), np.int64(3)), False),
        ("put bool disp", put(lambda: np.arange(2, dtype="i4"), True), False),
        ("put not a buffer", put(lambda: 42, 1), False),
        ("put out of range", put(lambda: np.arange(2, dtype="i4"), 15), False),
        ("put one byte over", put(lambda: np.arange(SIZE + 1, dtype="u1")), False),
        ("put huge disp", put(lambda: np.arange(2, dtype="i4"), 2 ** 62), False),
        ("put giant disp", put(lambda: np.arange(2, dtype="i4"), 2 ** 70), False),
        ("put negative disp", put(lambda: np.arange(2, dtype="i4"), -1), False),
        ("put from window memory", put(lambda: win_view(win, target)[0:8], 1), True),
        ("get i8", get(lambda: np.zeros(3, "i8"), 2), True),
        ("get f4", get(lambda: np.zeros(5, "f4")), True),
        ("get bytearray", get(lambda: bytearray(7), 3), True),
        ("get into numpy view", get(lambda: base[3:9], 1), True),
        ("get into bytes", get(lambda: bytes(8), 1), False),
        ("get into read-only", get(lambda: readonly(np.zeros(2, "i8")), 1), False),
        ("get out of range", get(lambda: np.full(3, 7, "i8"), 12), False),
        ("get into window memory", get(lambda: win_view(win, target)[16:24], 0), True),
        ("get [buf, count, datatype]", get(lambda: np.full(4, -1, "i8"), 1,
                                           spec=lambda a: [a, 2, MPI.INT64_T]), True),
        ("get (count, displ)", get(lambda: np.full(6, -1, "i4"), 0,
                                   spec=lambda a: [a, (3, 2), MPI.INT]), True),
        ("get [buf, BYTE]", get(lambda: np.zeros(3, "i4"), 2, spec=lambda a: [a, MPI.BYTE]),
         True),
        ("get count past the buffer", get(lambda: np.zeros(3, "i4"), 2,
                                          spec=lambda a: [a, 4, MPI.INT]), False),
    ]]


def readonly(array):
    array.flags.writeable = False
    return array


def win_view(win, rank):
    """Window memory of ``rank`` as a writable byte view (shared windows, or self)."""
    if rank == win.group_rank:
        return memoryview(win.tomemory()).cast("B")
    return memoryview(win.Shared_query(rank)[0]).cast("B")


# "u1" exports format "B": UNSIGNED_CHAR, as in mpi4py (datatype.from_buffer_format)
TYPES = ("i1", "u1", "i2", "u2", "i4", "i8", "u4", "u8", "f4", "f8")
INT_OPS = ("SUM", "PROD", "MAX", "MIN", "BAND", "BOR", "BXOR", "LAND", "LOR", "LXOR",
           "REPLACE", "NO_OP")
FLOAT_OPS = ("SUM", "PROD", "MAX", "MIN", "REPLACE", "NO_OP")
OTHER_OPS = ("MAXLOC", "MINLOC")


def values(dtype):
    """(window contents, incoming) of SIZE bytes each, with the edge cases of ``dtype``."""
    count = SIZE // np.dtype(dtype).itemsize
    if dtype[0] == "f":
        existing = [0.0, -0.0, np.nan, 1.5, -2.0, np.inf, -np.inf, 3.0, 2.5, -0.0]
        incoming = [-0.0, 0.0, 1.0, np.nan, -2.0, -np.inf, 1.0, 3.0, np.nan, 0.0]
    else:
        info = np.iinfo(dtype)
        existing = [0, info.max, info.min, 5, 7, 0, 3, 1, info.max, 12]
        incoming = [1, 1, -1 if info.min else 1, 3, 0, 0, 3, 2, info.max, 5]
    return (np.resize(np.array(existing, dtype), count),
            np.resize(np.array(incoming, dtype=dtype), count))


def expected_fast(dtype, name, fetches):
    if name in OTHER_OPS or (name == "NO_OP" and not fetches):
        return False
    return name in (FLOAT_OPS if dtype[0] == "f" else INT_OPS)


def accumulate_cases(win, target):
    """Accumulate, Get_accumulate and Fetch_and_op for every type x op; Compare_and_swap
    for every type; and the argument errors of each."""
    cases = []
    for dtype in TYPES:
        existing, incoming = values(dtype)
        init = existing.tobytes()
        for name in INT_OPS + OTHER_OPS:
            op = getattr(MPI, name)

            def acc(incoming=incoming, op=op):
                return lambda: win.Accumulate(incoming.copy(), target, 0, op), []

            def gacc(incoming=incoming, op=op):
                result = np.zeros_like(incoming)
                return (lambda: win.Get_accumulate(incoming.copy(), result, target, 0, op),
                        [result])

            def fop(incoming=incoming, op=op, disp=0):
                result = np.zeros(1, incoming.dtype)
                return (lambda: win.Fetch_and_op(incoming[disp:disp + 1].copy(), result,
                                                 target, disp, op), [result])

            cases += [
                ("accumulate %s %s" % (dtype, name), init, acc,
                 expected_fast(dtype, name, False)),
                ("get_accumulate %s %s" % (dtype, name), init, gacc,
                 expected_fast(dtype, name, True)),
                ("fetch_and_op %s %s" % (dtype, name), init, fop,
                 expected_fast(dtype, name, True)),
            ]
            for disp in (1, 2, 3):
                cases.append(("fetch_and_op %s %s disp %d" % (dtype, name, disp), init,
                              lambda fop=fop, disp=disp: fop(disp=disp),
                              expected_fast(dtype, name, True)))
        for equal in (True, False):
            def cas(existing=existing, incoming=incoming, equal=equal):
                compare = existing[2:3].copy() if equal else incoming[2:3].copy()
                result = np.zeros(1, existing.dtype)
                disp = 2 * existing.itemsize // UNIT     # element 2
                return (lambda: win.Compare_and_swap(incoming[:1].copy(), compare, result,
                                                     target, disp), [result, compare])
            cases.append(("compare_and_swap %s %s" % (dtype, "equal" if equal else "differ"),
                          init, cas, dtype[0] != "f"))
    return cases + argument_error_cases(win, target)


def argument_error_cases(win, target):
    init = np.arange(SIZE // 8, dtype="i8").tobytes()
    one = np.ones(1, "i8")

    def call(fn, *buffers):
        return lambda: (fn, list(buffers))

    def fop_alias(op):
        buf = np.array([3], "i8")
        return lambda: ((lambda: win.Fetch_and_op(buf, buf, target, 1, op)), [buf])

    def gacc_alias():
        buf = np.arange(4, dtype="i8")
        return (lambda: win.Get_accumulate(buf[0:2], buf[1:3], target, 0, MPI.SUM)), [buf]

    def cas_alias(which):
        origin, compare, result = np.array([7], "i8"), np.array([2], "i8"), np.zeros(1, "i8")
        if which == "result is origin":
            result = origin
        elif which == "result is compare":
            result = compare
        return (lambda: win.Compare_and_swap(origin, compare, result, target, 2),
                [origin, compare, result])

    def with_result(fn, result):
        return lambda: (lambda: fn(result), [result])

    return [(name, init, make, fast) for name, make, fast in [
        # bytes are UNSIGNED_CHAR (format "B"), as in mpi4py
        ("accumulate bytes SUM",
         call(lambda: win.Accumulate(b"\x01" * 8, target, 0, MPI.SUM)), True),
        ("accumulate bytes REPLACE",
         call(lambda: win.Accumulate(b"\x01" * 8, target, 0, MPI.REPLACE)), True),
        ("accumulate BYTE SUM (ERR_OP)",
         call(lambda: win.Accumulate([b"\x01" * 8, MPI.BYTE], target, 0, MPI.SUM)), False),
        ("accumulate longlong SUM",
         call(lambda: win.Accumulate(np.ones(2, np.longlong), target, 1, MPI.SUM)), True),
        ("accumulate bool LAND",
         call(lambda: win.Accumulate(np.ones(2, "?"), target, 1, MPI.LAND)), False),
        ("accumulate int16 SUM",
         call(lambda: win.Accumulate(np.ones(2, "i2"), target, 1, MPI.SUM)), True),
        ("accumulate char REPLACE",
         call(lambda: win.Accumulate(np.array([b"a", b"b"]), target, 1, MPI.REPLACE)), False),
        ("accumulate [buf, INT] SUM",
         call(lambda: win.Accumulate([np.full(2, 3, "i4"), MPI.INT], target, 1, MPI.SUM)),
         True),
        ("accumulate count, displ, INT32_T MAX",
         call(lambda: win.Accumulate([np.arange(6, dtype="i4"), 2, 3, MPI.INT32_T], target, 1,
                                     MPI.MAX)), True),
        ("accumulate int64s as DOUBLE SUM",
         call(lambda: win.Accumulate([np.arange(2, dtype="i8"), MPI.DOUBLE], target, 1,
                                     MPI.SUM)), True),
        ("accumulate C_BOOL LAND",
         call(lambda: win.Accumulate([np.ones(2, "?"), MPI.C_BOOL], target, 1, MPI.LAND)),
         False),
        ("accumulate AINT BAND",
         call(lambda: win.Accumulate([np.ones(2, "i8"), MPI.AINT], target, 1, MPI.BAND)),
         True),
        ("get_accumulate list specs",
         with_result(lambda r: win.Get_accumulate([np.ones(3, "i4"), 2, MPI.INT], [r, 2, MPI.INT],
                                                  target, 0, MPI.SUM), np.zeros(3, "i4")), True),
        ("get_accumulate INT64_T into LONG",
         with_result(lambda r: win.Get_accumulate([np.ones(2, "i8"), MPI.INT64_T],
                                                  [r, MPI.LONG], target, 0, MPI.SUM),
                     np.zeros(2, "i8")), False),
        ("fetch_and_op list specs",
         with_result(lambda r: win.Fetch_and_op([np.ones(2, "i4"), 1, MPI.INT],
                                                [r, (1, 1), MPI.INT], target, 0, MPI.SUM),
                     np.zeros(2, "i4")), True),
        ("compare_and_swap list specs",
         call(lambda: win.Compare_and_swap([np.array([7, 8]), 1, MPI.LONG], [np.array([2]),
                                           MPI.LONG], [np.zeros(3, "i8"), (1, 2), MPI.LONG],
                                           target, 2)), True),
        ("accumulate default op",
         call(lambda: win.Accumulate(np.ones(2, "i8"), target, 1)), True),
        ("accumulate copied op handle",
         call(lambda: win.Accumulate(np.ones(2, "i8"), target, 1, MPI.Op(MPI.SUM))), False),
        ("accumulate user op",
         call(lambda: win.Accumulate(np.ones(2, "i8"), target, 1,
                                     MPI.Op.Create(lambda a, b, t: None))), False),
        ("accumulate typed target",
         call(lambda: win.Accumulate(np.ones(2, "i8"), target, (0, 4, MPI.INT32_T),
                                     MPI.SUM)), False),
        ("accumulate out of range",
         call(lambda: win.Accumulate(np.ones(2, "i8"), target, 15, MPI.SUM)), False),
        ("accumulate from window memory",
         call(lambda: win.Accumulate(np.frombuffer(win_view(win, target)[0:16], "i8"),
                                     target, 2, MPI.SUM)), False),
        ("accumulate strided",
         call(lambda: win.Accumulate(np.ones(8, "i8")[::2], target, 0, MPI.SUM)), False),
        ("get_accumulate origin aliases result", gacc_alias, False),
        ("get_accumulate result too short",
         with_result(lambda r: win.Get_accumulate(np.ones(3, "i8"), r, target, 0, MPI.SUM),
                     np.zeros(2, "i8")), False),
        ("get_accumulate result of another type",
         with_result(lambda r: win.Get_accumulate(np.ones(2, "i8"), r, target, 0, MPI.SUM),
                     np.zeros(2, "f8")), False),
        ("get_accumulate long vs longlong",
         with_result(lambda r: win.Get_accumulate(np.ones(2, "i8"), r, target, 0, MPI.SUM),
                     np.zeros(2, np.longlong)), False),
        ("get_accumulate read-only origin",
         with_result(lambda r: win.Get_accumulate(b"\x01" * 8, r, target, 0, MPI.NO_OP),
                     bytearray(8)), False),
        ("get_accumulate read-only result",
         call(lambda: win.Get_accumulate(np.ones(1, "i8"), b"\x00" * 8, target, 0,
                                         MPI.SUM)), False),
        ("get_accumulate into window memory",
         call(lambda: win.Get_accumulate(np.ones(1, "i8"),
                                         np.frombuffer(win_view(win, target)[0:8], "i8"),
                                         target, 4, MPI.SUM)), True),
        ("get_accumulate into its own target",
         call(lambda: win.Get_accumulate(np.ones(1, "i8"),
                                         np.frombuffer(win_view(win, target)[0:8], "i8"),
                                         target, 1, MPI.SUM)), False),
        ("fetch_and_op origin is result SUM", fop_alias(MPI.SUM), False),
        ("fetch_and_op origin is result NO_OP", fop_alias(MPI.NO_OP), True),
        ("fetch_and_op two elements",
         with_result(lambda r: win.Fetch_and_op(np.ones(2, "i8"), r, target, 0, MPI.SUM),
                     np.zeros(2, "i8")), False),
        ("fetch_and_op mismatched types",
         with_result(lambda r: win.Fetch_and_op(one, r, target, 0, MPI.SUM),
                     np.zeros(2, "i4")), False),
        ("fetch_and_op long vs longlong",
         with_result(lambda r: win.Fetch_and_op(one, r, target, 0, MPI.SUM),
                     np.zeros(1, np.longlong)), False),
        ("fetch_and_op disp None",
         with_result(lambda r: win.Fetch_and_op(one, r, target, None, MPI.SUM),
                     np.zeros(1, "i8")), False),
        ("fetch_and_op bytes result",
         call(lambda: win.Fetch_and_op(one, bytes(8), target, 0, MPI.SUM)), False),
        ("fetch_and_op keyword op",
         with_result(lambda r: win.Fetch_and_op(one, r, target, op=MPI.MAX),
                     np.zeros(1, "i8")), True),
        ("fetch_and_op out of range",
         with_result(lambda r: win.Fetch_and_op(one, r, target, 16, MPI.SUM),
                     np.full(1, 9, "i8")), False),
        ("compare_and_swap result is origin", lambda: cas_alias("result is origin"), True),
        ("compare_and_swap result is compare", lambda: cas_alias("result is compare"), True),
        ("compare_and_swap mismatched compare",
         call(lambda: win.Compare_and_swap(one, np.zeros(1, "i4"), np.zeros(1, "i8"),
                                           target, 0)), False),
        ("compare_and_swap two elements",
         call(lambda: win.Compare_and_swap(np.ones(2, "i8"), np.zeros(2, "i8"),
                                           np.zeros(2, "i8"), target, 0)), False),
        ("compare_and_swap bytes",
         call(lambda: win.Compare_and_swap(b"\x01", b"\x02", bytearray(1), target, 0)),
         True),
        ("compare_and_swap out of range",
         call(lambda: win.Compare_and_swap(one, one, np.zeros(1, "i8"), target, 15)), False),
        ("compare_and_swap misaligned",
         call(lambda: win.Compare_and_swap(one, np.array([3], "i8"), np.zeros(1, "i8"),
                                           target, 1)), True),
    ]]


def call_kinds(win, target):
    """One call of each kind to ``target`` (any rank, PROC_NULL), for the epoch tests."""
    one, res, res2 = np.ones(1, "i8"), np.zeros(1, "i8"), np.zeros(1, "i8")
    return {
        "Put": (lambda: win.Put(one, target, 1), []),
        "Get": (lambda: win.Get(res, target, 1), [res]),
        "Accumulate": (lambda: win.Accumulate(one, target, 1, MPI.SUM), []),
        "Get_accumulate": (lambda: win.Get_accumulate(one, res, target, 1, MPI.SUM), [res]),
        "Fetch_and_op": (lambda: win.Fetch_and_op(one, res, target, 1, MPI.SUM), [res]),
        "Compare_and_swap": (lambda: win.Compare_and_swap(one, res2, res, target, 1),
                             [res, res2]),
        "Flush": (lambda: win.Flush(target), []),
        "Flush_local": (lambda: win.Flush_local(target), []),
        "Flush_all": (lambda: win.Flush_all(), []),
        "Flush_local_all": (lambda: win.Flush_local_all(), []),
        "Sync": (lambda: win.Sync(), []),
    }


def bind(win):
    """Give ``win`` its fast path table (the first call of a window takes the Python
    path, which binds it)."""
    win.Lock_all()
    win.Flush_all()
    win.Unlock_all()


def compare_cases(flavor, case_maker):
    """On 2 ranks, rank 0 runs every case to rank 1 (shared windows) and to itself.
    Returns (number of cases, number the fast path took, problems found): the ranks
    compare, so the test process's heap stays as other tests expect it."""
    def body():
        np.seterr(all="ignore")     # inf - inf and friends, on the Python path
        comm = MPI.COMM_WORLD
        make_window = MPI.Win.Allocate_shared if flavor == "shared" else MPI.Win.Allocate
        win = make_window(SIZE, UNIT, comm=comm)
        cases = taken = 0
        problems = []
        if comm.Get_rank() == 0:
            bind(win)
            spy = Spy()
            for target in ((1, 0) if flavor == "shared" else (0,)):
                views = [win_view(win, target)]
                for name, init, make, fast in case_maker(win, target):
                    (first, second), handled = run_both(views, init, make,
                                                        epochs(win, target)["lock"], spy)
                    problems += disagreements("%s to rank %d" % (name, target), first,
                                              second, handled, fast)
                    cases += 1
                    taken += handled == [True]
        comm.Barrier()
        win.Free()
        return cases, taken, problems
    return shmrma.launch(body, 2, timeout=100)[0]


def disagreements(where, fast, slow, handled, expected):
    problems = []
    if fast != slow:
        problems.append("%s: fast %r != slow %r" % (where, fast, slow))
    want = [expected and fastpath.AVAILABLE]
    if handled != want:
        problems.append("%s: fast path handled %r, expected %r" % (where, handled, want))
    return problems


def check_report(report, least_taken):
    cases, taken, problems = report
    assert not problems, "\n".join(problems)
    assert taken >= (least_taken if fastpath.AVAILABLE else 0) and cases > taken


# --- tests ---------------------------------------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("flavor", ["shared", "allocate"])
def test_put_and_get_fast_and_slow_agree(flavor):
    """R34-R41, R60: Put and Get of numpy (int64, float64, int32, ...), bytes, bytearray
    and memoryview origins, in and out of range (ERR_RMA_RANGE, nothing written),
    with negative displacements (ERR_DISP) and with every origin the fast path declines
    (non-contiguous, unknown formats, list specs, typed targets): the same bytes land
    and the same errors are raised with the fast path on and off."""
    check_report(compare_cases(flavor, transfer_cases), 20)


@pytest.mark.timeout(200)
def test_accumulate_family_fast_and_slow_agree():
    """R42-R52, R135: Accumulate, Get_accumulate, Fetch_and_op (aligned and misaligned
    displacements) for int32/int64/uint32/uint64/float32/float64 with every predefined
    op (wrapping integers, NaN, signed zeros, infinities), Compare_and_swap equal and
    different, and every argument error (ERR_OP, ERR_TYPE, ERR_BUFFER, ERR_TRUNCATE,
    ERR_RMA_RANGE, ValueError, BufferError): identical results with the fast path on
    and off; the fast path takes exactly the supported type x op pairs."""
    check_report(compare_cases("shared", accumulate_cases), 700)


@pytest.mark.timeout(120)
def test_epochs_and_proc_null_fast_and_slow_agree():
    """R38, A38, R65, R106: every call to the peer, to itself and to
    PROC_NULL outside any epoch (ERR_RMA_SYNC), in a Lock epoch on another rank only
    (ERR_RMA_SYNC), under Lock, Lock NOCHECK and Lock_all; bad ranks give ERR_RANK.
    Fast and slow agree; the fast path takes what the epoch allows."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate_shared(SIZE, UNIT, comm=comm)
        problems, errors = [], {}
        if comm.Get_rank() == 0:
            bind(win)
            spy = Spy()
            for target in (1, 0, MPI.PROC_NULL, 2, -5):
                views = [win_view(win, 1), win_view(win, 0)]
                for epoch_name, epoch in epochs(win, 1).items():
                    for kind in call_kinds(win, target):
                        def make(kind=kind):
                            return call_kinds(win, target)[kind]
                        (fast, slow), handled = run_both(views, pattern(), make, epoch, spy)
                        # everything that succeeds here is a common case: the fast path
                        # must take it
                        problems += disagreements(
                            "%s to %d in epoch %s" % (kind, target, epoch_name), fast, slow,
                            handled, fast[0] is None)
                        errors[kind, target, epoch_name] = fast[0] and fast[0][1]
        comm.Barrier()
        win.Free()
        return problems, errors
    problems, errors = shmrma.launch(body, 2, timeout=100)[0]
    assert not problems, "\n".join(problems)
    assert errors["Put", 1, "none"] == MPI.ERR_RMA_SYNC
    assert errors["Put", 1, "lock other"] == MPI.ERR_RMA_SYNC
    assert errors["Put", MPI.PROC_NULL, "none"] == MPI.ERR_RMA_SYNC
    assert errors["Put", MPI.PROC_NULL, "lock other"] is None
    assert errors["Flush", 1, "lock other"] == MPI.ERR_RMA_SYNC
    assert errors["Flush", MPI.PROC_NULL, "none"] is None
    assert errors["Flush_all", MPI.PROC_NULL, "none"] == MPI.ERR_RMA_SYNC
    assert errors["Put", 2, "lock_all"] == MPI.ERR_RANK
    assert errors["Put", 1, "lock nocheck"] is None


@pytest.mark.timeout(60)
def test_fence_epochs_see_rma_from_the_fast_path():
    """A34, R65: in a fence epoch the fast path takes the calls and counts them as RMA
    of the epoch, so Fence(MODE_NOPRECEDE) and Lock after them raise ERR_RMA_SYNC
    exactly as after Python-path calls; Flush in a fence epoch is ERR_RMA_SYNC; after
    Fence(MODE_NOSUCCEED) calls are ERR_RMA_SYNC again."""
    def body():
        comm = MPI.COMM_WORLD
        spy = Spy()
        report = []
        for fast in (True, False):
            fastpath.enable(fast)
            win = MPI.Win.Allocate(SIZE, 8, comm=comm)
            one, got = np.ones(1, "i8"), np.zeros(1, "i8")
            steps = []
            bind(win)
            win.Fence()
            spy.take()
            steps.append(outcome(lambda: win.Put(one, 0, 1)))
            steps.append(outcome(lambda: win.Fetch_and_op(one, got, 0, 1, MPI.SUM)))
            steps.append(outcome(lambda: win.Flush(0)))
            steps.append(spy.take())
            steps.append(outcome(lambda: win.Fence(MPI.MODE_NOPRECEDE)))
            steps.append(outcome(lambda: win.Lock(0)))
            win.Fence(MPI.MODE_NOSUCCEED)
            steps.append(outcome(lambda: win.Put(one, 0, 1)))
            steps.append(int(got[0]))
            steps.append(np.frombuffer(win.tomemory(), "i8").tolist())
            win.Free()
            steps.append(outcome(lambda: win.Put(one, 0, 1)))
            steps.append(outcome(lambda: win.Flush(0)))
            report.append(steps)
        fastpath.enable(True)
        return report
    fast, slow = shmrma.launch(body, 1, timeout=40)[0]
    assert fast[:3] + fast[4:] == slow[:3] + slow[4:]
    assert fast[3] == ([True, True, False] if fastpath.AVAILABLE else [False] * 3)
    assert fast[4][1] == MPI.ERR_RMA_SYNC and fast[5][1] == MPI.ERR_RMA_SYNC
    assert fast[6][1] == MPI.ERR_RMA_SYNC
    assert fast[7] == 1 and fast[8][1] == 2
    assert fast[9][1] == MPI.ERR_WIN and fast[10][1] == MPI.ERR_WIN


@pytest.mark.timeout(60)
def test_freed_window_closes_the_table():
    """Win.Free closes the fast path's table before the memory goes: a call through an
    old table declines, and the methods raise ERR_WIN."""
    def body():
        win = MPI.Win.Allocate(SIZE, 8, comm=MPI.COMM_WORLD)
        win.Lock(0)
        win.Put(np.ones(1, "i8"), 0)
        win.Unlock(0)
        table = win._fast
        before = bool(table.open)
        win.Free()
        return (before, bool(table.open),
                fastpath.put(table, np.ones(1, "i8"), 0, None),
                outcome(lambda: win.Put(np.ones(1, "i8"), 0))[1],
                outcome(lambda: win.Flush_all())[1])
    before, after, handled, put_error, flush_error = shmrma.launch(body, 1, timeout=40)[0]
    assert before and not after and handled is False
    assert put_error == flush_error == MPI.ERR_WIN


@pytest.mark.timeout(60)
@pytest.mark.skipif(not fastpath.AVAILABLE, reason="the fast path needs the C extension")
def test_contended_accumulate_lock_declines_without_touching_anything():
    """While another holder has the target's accumulate lock, the fast
    accumulating calls spin briefly, then decline, leaving window, result and lock
    as they were (the Python path then waits with the job's abort checks)."""
    def body():
        from shmrma.rma.control import OFF_ACCUMULATE_LOCK
        win = MPI.Win.Allocate(SIZE, 8, comm=MPI.COMM_WORLD)
        mem = np.frombuffer(win.tomemory(), "i8")
        mem[:] = 5
        win.Lock(0)
        win.Flush(0)
        cell = win._s.control_of(0) + OFF_ACCUMULATE_LOCK
        assert atomic.cas32(cell, 0, 1) == 0        # held, as by another rank
        one, res = np.ones(1, "i8"), np.full(1, -1, "i8")
        declined = [
            fastpath.accumulate(win._fast, one, 0, 0, MPI.SUM),
            fastpath.get_accumulate(win._fast, one, res, 0, 0, MPI.SUM),
            fastpath.fetch_and_op(win._fast, one, res, 0, 0, MPI.SUM),
            fastpath.compare_and_swap(win._fast, one, np.full(1, 5, "i8"), res, 0, 0),
        ]
        state = (mem.tolist(), res.tolist(), atomic.load32(cell))
        atomic.cell_store(cell, 0)
        taken = fastpath.fetch_and_op(win._fast, one, res, 0, 0, MPI.SUM)
        after = (mem.tolist()[0], res.tolist(), atomic.load32(cell))
        win.Unlock(0)
        del mem
        win.Free()
        return declined, state, taken, after
    declined, state, taken, after = shmrma.launch(body, 1, timeout=40)[0]
    assert declined == [False] * 4
    assert state == ([5] * (SIZE // 8), [-1], 1)
    assert taken is True and after == (6, [5], 0)


@pytest.mark.timeout(120)
def test_fast_and_slow_accumulates_from_3_ranks_are_atomic_together():
    """R135, R136: 3 ranks, each switching between the fast and the Python
    path every iteration (out of step with each other), hit one target with Accumulate
    (int64 +1, float64 +0.5), Get_accumulate (+1), Fetch_and_op (+1) and a
    Compare_and_swap increment loop: every total is exact, and the values fetched from
    each counter are exactly 0..3K-1 (unique tickets)."""
    K = 300

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate(48 if rank == 0 else 0, 8, comm=comm)
        if rank == 0:
            win.tomemory()[:] = bytes(48)
        comm.Barrier()
        one, half = np.ones(1, "i8"), np.full(1, 0.5)
        got, old, seen = np.zeros(1, "i8"), np.zeros(1, "i8"), np.zeros(1, "i8")
        tickets, fetched, swaps = [], [], 0
        win.Lock_all()
        for step in range(K):
            fastpath.enable((step + rank) % 2 == 0)
            win.Accumulate(one, 0, 0, MPI.SUM)
            win.Accumulate(half, 0, 1, MPI.SUM)
            win.Fetch_and_op(one, got, 0, 2, MPI.SUM)
            tickets.append(int(got[0]))
            win.Get_accumulate(one, old, 0, 3, MPI.SUM)
            fetched.append(int(old[0]))
            while True:
                win.Fetch_and_op(one, seen, 0, 4, MPI.NO_OP)
                expected = seen.copy()
                win.Compare_and_swap(expected + 1, expected, got, 0, 4)
                swaps += 1
                if got[0] == expected[0]:
                    break
            win.Flush(0)
        fastpath.enable(True)
        win.Unlock_all()
        comm.Barrier()
        totals = None
        if rank == 0:
            mem = win.tomemory()
            totals = (np.frombuffer(mem, "i8")[[0, 2, 3, 4]].tolist(),
                      float(np.frombuffer(mem, "f8")[1]))
            del mem
        win.Free()
        return totals, tickets, fetched
    results = shmrma.launch(body, 3, timeout=100)
    assert results[0][0] == ([3 * K] * 4, 0.5 * 3 * K)
    assert sorted(t for _, tickets, _ in results for t in tickets) == list(range(3 * K))
    assert sorted(f for _, _, fetched in results for f in fetched) == list(range(3 * K))


@pytest.mark.timeout(60)
def test_fetch_and_op_tickets_on_the_fast_path_are_unique():
    """R136: 3 ranks x 500 Fetch_and_op(+1) on one int32 counter, all on the fast path
    (Flush_local after each), return exactly 0..1499 between them."""
    K = 500

    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(4 if comm.Get_rank() == 0 else 0, 4, comm=comm)
        if comm.Get_rank() == 0:
            win.tomemory()[:] = bytes(4)
        comm.Barrier()
        one, got = np.ones(1, "i4"), np.zeros(1, "i4")
        spy = Spy()
        tickets = []
        win.Lock_all()
        for _ in range(K):
            win.Fetch_and_op(one, got, 0, 0, MPI.SUM)
            win.Flush_local(0)
            tickets.append(int(got[0]))
        win.Unlock_all()
        handled = spy.take()
        comm.Barrier()
        win.Free()
        return tickets, handled.count(True)
    results = shmrma.launch(body, 3, timeout=40)
    assert sorted(t for tickets, _ in results for t in tickets) == list(range(3 * K))
    if fastpath.AVAILABLE:
        # the first call of each rank binds the table on the Python path; the rest fly,
        # except those that met a held accumulate lock and waited on the Python path
        assert all(count >= K for _, count in results)
