"""The fast path of the communication calls and flushes, in the C extension
(shmrma/csrc/rma/calls.c, the table in csrc/rma/fastpath.c): per-call Python work is what
separates 2 us from 0.3 us.

Each window's Epoch owns a table (``Table(nranks)``): per target rank the
mapped window memory, its size and disp_unit and the accumulate lock cell,
filled by ``bind`` on the first call; plus the epoch flags Epoch keeps in it
(fence_open, rma_since_fence, lock_all, which ranks a Lock or the Start
group covers).
``Win.Free`` closes it.

The Python methods in rma/calls.py and rma/passive.py call these functions first::

    put(table, origin, rank, target)                  Put
    get(table, origin, rank, target)                  Get
    accumulate(table, origin, rank, target, op)       Accumulate
    get_accumulate(table, origin, result, rank, target, op)
    fetch_and_op(table, origin, result, rank, disp, op)
    compare_and_swap(table, origin, compare, result, rank, disp)
    flush(table, rank)                                Flush*, Sync (rank None: all)

Each returns True when it performed the call (with every check of the Python
path passed: rank, epoch, range) and False when it did not touch anything;
the Python path then runs and raises whatever error the call deserves. The
fast path takes only the common case: origin, result and compare buffers that
are C-contiguous with a plain native format (numpy arrays, bytes, bytearray),
a target that is None or an int displacement, window memory mapped here, and
for the accumulating calls int32/int64/uint32/uint64/float32/float64 with
the predefined ops of ``RMA_OPS``, under the target's accumulate lock
(rma.AccumulateLock), so fast and Python calls stay atomic with each other
(atomics mixed with a lock-based path lose updates). A lock still held after a
short spin makes the call decline: the
Python path then waits for it with the job's abort checks.

Without the C extension (SHMRMA_NATIVE=0), ``Table`` only holds the epoch
flags and every function returns False. ``enable(False)`` makes every call
miss, so tests can compare both paths.
"""
from .control import (COUNT_WRAP, OFF_ACCUMULATE_LOCK, OFF_BARRIER_ENTERED, OFF_COMPLETES,
                      OFF_EXPOSED, OFF_LOCK_READ, OFF_LOCK_TICKET, OFF_LOCK_WRITE)
from ..core import atomic, constants, job
from . import assertions
from ..types import op as ops


class _PythonTable:
    """The epoch state, for the fallback backend, where nothing takes the fast path."""

    def __init__(self, nranks):
        self.fence_open = self.rma_since_fence = self.lock_all = self.nlocked = 0
        self.start_open = self.completes_due = 0
        self.post_group = None
        self.groups = {}
        self.barrier_seq = self.barrier_pending = 0
        self.ncounter = self.sync_active = 0
        self.open = 1
        self._locked = [0] * nranks
        self._started = [False] * nranks
        self._posts_used = [0] * nranks
        self._counter_modes = [[0, 0, 0] for _ in range(nranks)]

    def set_target(self, rank, base, size, disp_unit, acc_lock):
        pass

    def set_control(self, rank, address, doorbell):
        pass

    def open_counter_epoch(self, rank, mode, delta=1):
        before = self.counter_kinds(rank)
        modes = self._counter_modes[rank]
        for bit in range(3):
            if mode & (1 << bit):
                modes[bit] += delta
        self.ncounter += bool(self.counter_kinds(rank)) - bool(before)

    def close_counter_epoch(self, rank, mode):
        self.open_counter_epoch(rank, mode, -1)

    def counter_kinds(self, rank):
        return sum(1 << bit for bit, n in enumerate(self._counter_modes[rank]) if n > 0)

    def set_sync(self, me, post_matrix, hold_row):
        pass

    def set_locked(self, rank, state):
        self.nlocked += bool(state) - bool(self._locked[rank])
        self._locked[rank] = state

    def locked(self, rank):
        return self._locked[rank]

    def set_started(self, rank, flag):
        self._started[rank] = bool(flag)

    def started(self, rank):
        return self._started[rank]

    def posts_used(self, rank):
        return self._posts_used[rank]

    def set_posts_used(self, rank, count):
        self._posts_used[rank] = count % COUNT_WRAP

    def use_post(self, rank):
        used = self._posts_used[rank]
        self._posts_used[rank] = (used + 1) % COUNT_WRAP
        return used

    def close(self):
        self.open = 0


def _miss(*args):
    return False


def _native_functions():
    """The C extension's fast path, or None on the fallback backend."""
    if atomic.BACKEND != "c":
        return None
    from .. import _native
    if not hasattr(_native, "rma_setup"):
        return None     # an extension built before the fast path: rebuild it to get one
    _native.rma_setup(constants.PROC_NULL,
                      tuple(ops.PREDEFINED[name] for name in _native.RMA_OPS))
    _native.rma_sync_setup(OFF_LOCK_TICKET, OFF_LOCK_READ, OFF_LOCK_WRITE, OFF_COMPLETES,
                           OFF_EXPOSED, OFF_BARRIER_ENTERED)
    _native.rma_sync_constants(constants.LOCK_EXCLUSIVE, constants.LOCK_SHARED,
                               assertions.MODE_NOCHECK, assertions.MODE_NOPRECEDE,
                               assertions.MODE_NOSUCCEED, assertions.ALL_MODES)
    return _native


_impl = _native_functions()
AVAILABLE = _impl is not None       # False on the fallback backend: every call misses
if _impl is not None:
    Table = _impl.WinTable
    put, get, accumulate = _impl.rma_put, _impl.rma_get, _impl.rma_accumulate
    get_accumulate, fetch_and_op = _impl.rma_get_accumulate, _impl.rma_fetch_and_op
    compare_and_swap, flush = _impl.rma_compare_and_swap, _impl.rma_flush
    lock, unlock, lock_all, unlock_all = (_impl.rma_lock, _impl.rma_unlock,
                                          _impl.rma_lock_all, _impl.rma_unlock_all)
    start, complete = _impl.rma_start, _impl.rma_complete
    post, wait, test = _impl.rma_post, _impl.rma_wait, _impl.rma_test
else:
    Table = _PythonTable
    put = get = accumulate = get_accumulate = fetch_and_op = compare_and_swap = _miss
    flush = lock = unlock = lock_all = unlock_all = start = complete = _miss
    post = wait = _miss

    def test(table):
        return None


def enable(flag):
    """Turn the fast path on or off (for tests); returns the previous setting."""
    if _impl is None:
        return False
    return _impl.rma_enable(bool(flag))


def bind(state):
    """The window's table, with every target whose memory is mapped here filled in."""
    from .winmemory import MappedMemory
    table = state.epoch.table
    if state.dynamic or not table.open:
        return table
    for rank, target in enumerate(state.targets):
        size = state.sizes[rank]
        if type(target) is MappedMemory and size and target.view.nbytes == size:
            table.set_target(rank, target.address, size, state.units[rank],
                             state.control_of(rank) + OFF_ACCUMULATE_LOCK)
    return table


FLUSH_YIELD = 16   # with more ranks than CPUs, yield at every 16th Flush (csrc/rma/calls.c)


def bind_sync(state):
    """Give the table what the synchronization calls use: every rank's control
    block and doorbell, and the post matrix."""
    if _impl is not None:
        _impl.set_flush_yield(FLUSH_YIELD if job.current().oversubscribed else 0)
    table, world = state.epoch.table, job.current()
    for rank in range(len(state.sizes)):
        table.set_control(rank, state.control_of(rank), world.doorbell(state.world_ranks[rank]))
    table.set_sync(state.rank, state.post_cell(0, 0), state.hold_cell(state.rank, 0))
