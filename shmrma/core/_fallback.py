"""Portable fallback of shmrma._native, built on the `atomics` package.

Same functions, same semantics as the C extension (see shmrma/csrc/core/atomic.c):
sequentially consistent atomics on 4/8-byte words given by address, futex
wait cells shared between processes, memcpy.  Used when the extension could
not be compiled, or when SHMRMA_NATIVE=0.  It is 300-550 times slower per
call than the extension (7-20 us against 20-40 ns on the 2-vCPU dev VM):
every call goes through the `atomics` package's Python layers and cffi; see
benchmarks/bench_atomics.py.

`atomics` works on objects exporting the buffer protocol, so a word is
reached through ``(ctypes.c_char * width).from_address(addr)``.  Opening an
atomic view costs tens of microseconds, so opened views are cached per
address (bounded; the cache is flushed when full).  The futex is called
through ``libc.syscall`` with ctypes, which releases the GIL during the call.
"""

import atexit
import ctypes
import errno
import os
import platform
import sys
import threading
import time

import atomics

__all__ = [
    "load32", "load64", "store32", "store64", "fetch_add32", "fetch_add64",
    "exchange32", "exchange64", "cas32", "cas64", "fence",
    "cell_wait", "cell_add", "cell_store", "cell_wake", "memcpy",
    "get_wait_params", "set_wait_params",
]

# ---------------------------------------------------------------------------
# wait tuning
# ---------------------------------------------------------------------------

# Longest single futex sleep: a signal landing just before FUTEX_WAIT does not
# interrupt it, so the wait wakes at least this often to let handlers run.
_SLEEP_SLICE = 0.2

# The wait policy's spin (microseconds) and yields: core/settings.py's, which
# atomic.use_backend() sets before any wait; no spin and no yield until then.
_spin = _yields = 0


def get_wait_params():
    """Return (spin microseconds, yields) used by cell_wait."""
    return (_spin, _yields)


def set_wait_params(spin, yields):
    """Set cell_wait's spin (microseconds) and sched_yield count."""
    global _spin, _yields
    spin = int(spin)
    yields = int(yields)
    if spin < 0 or yields < 0:
        raise ValueError("set_wait_params(): spin and yields must be >= 0")
    _spin, _yields = spin, yields


# ---------------------------------------------------------------------------
# futex through ctypes
# ---------------------------------------------------------------------------

_SYS_FUTEX = {
    "x86_64": 202, "amd64": 202,
    "aarch64": 98, "arm64": 98,
}
_FUTEX_WAIT = 0      # not FUTEX_WAIT_PRIVATE: the word is shared by processes
_FUTEX_WAKE = 1
_INT_MAX = 2**31 - 1

_machine = platform.machine().lower()
if _machine not in _SYS_FUTEX:
    raise ImportError(
        "shmrma.core._fallback: no futex syscall number known for machine %r"
        % platform.machine())
_sys_futex = ctypes.c_long(_SYS_FUTEX[_machine])

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_sched_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_c_long = ctypes.c_long
_NULL = ctypes.c_void_p(None)
_WAIT = _c_long(_FUTEX_WAIT)
_WAKE = _c_long(_FUTEX_WAKE)
_WAKE_ALL = _c_long(_INT_MAX)


def _futex_wake(addr):
    _syscall(_sys_futex, _c_long(addr), _WAKE, _WAKE_ALL, _NULL, _NULL, _c_long(0))


def _futex_wait(addr, old32, rel_seconds):
    """FUTEX_WAIT on addr while *addr == old32, at most rel_seconds."""
    sec = int(rel_seconds)
    ts = ctypes.byref(_Timespec(sec, int((rel_seconds - sec) * 1e9)))
    _syscall(_sys_futex, _c_long(addr), _WAIT, _c_long(old32 & 0xFFFFFFFF), ts,
             _NULL, _c_long(0))


# ---------------------------------------------------------------------------
# cached atomic views
# ---------------------------------------------------------------------------

# ~11 KB of Python objects per open view, so keep the cache small
_CACHE_MAX = 1024
_lock = threading.RLock()
_v32 = {}     # addr -> AtomicIntView of width 4 (addr 4-aligned)
_v64 = {}     # addr -> AtomicIntView of width 8 (addr 8-aligned)
_cells = {}   # addr -> (value view, sleepers view) (addr 8-aligned)
_open = []    # (context, view) pairs of every view opened and not yet closed

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_H32 = 0x80000000
_H64 = 0x8000000000000000


def _check(addr, align, fname):
    if addr.__class__ is not int:
        try:
            addr = addr.__index__()
        except AttributeError:
            raise TypeError("%s(): address must be an int, not %s"
                            % (fname, type(addr).__name__)) from None
    if addr == 0:
        raise ValueError("%s(): address 0 (NULL) is not valid" % fname)
    if addr & (align - 1):
        raise ValueError("%s(): address %#x is not %d-byte aligned"
                         % (fname, addr, align))
    return addr


def _flush_cache(closing=False):
    """Drop every cached view and close the contexts nobody else holds.

    A view still referenced elsewhere (another thread in the middle of an
    operation or of a cell_wait) stays open until a later flush: closing it
    under that thread would make its operation fail half-way.
    """
    global _open
    with _lock:
        _v32.clear()
        _v64.clear()
        _cells.clear()
        pairs, _open = _open, []
        keep = []
        for pair in pairs:
            # references: the `pair` tuple, getrefcount's argument
            if closing or sys.getrefcount(pair[1]) <= 2:
                try:
                    pair[0].__exit__(None, None, None)
                except Exception:
                    pass
            else:
                keep.append(pair)
        _open.extend(keep)


atexit.register(_flush_cache, True)


def forget(address, nbytes):
    """Drop the cached views inside [address, address + nbytes), memory about to be
    unmapped, so that views of freed windows do not pile up until the cache is full."""
    end = address + nbytes
    with _lock:
        for cache in (_v32, _v64, _cells):
            for addr in [a for a in cache if address <= a < end]:
                del cache[addr]
        live = set(map(id, _v32.values())) | set(map(id, _v64.values())) | {
            id(v) for pair in _cells.values() for v in pair}
        keep = []
        for pair in _open:
            if id(pair[1]) in live or sys.getrefcount(pair[1]) > 2:
                keep.append(pair)
            else:
                try:
                    pair[0].__exit__(None, None, None)
                except Exception:
                    pass
        _open[:] = keep


def _view(addr, width, fname):
    addr = _check(addr, width, fname)
    cache = _v32 if width == 4 else _v64
    with _lock:
        view = cache.get(addr)
        if view is not None:
            return view
        if len(_open) >= _CACHE_MAX:
            _flush_cache()
        buf = (ctypes.c_char * width).from_address(addr)
        ctx = atomics.atomicview(buffer=buf, atype=atomics.INT)
        view = ctx.__enter__()
        _open.append((ctx, view))
        cache[addr] = view
        return view


def _cell(addr, fname):
    addr = _check(addr, 8, fname)
    with _lock:
        cell = _cells.get(addr)
        if cell is None:
            cell = (_view(addr, 4, fname), _view(addr + 4, 4, fname))
            _cells[addr] = cell
        return cell


def _s32(v):
    return ((v & _M32) ^ _H32) - _H32


def _s64(v):
    return ((v & _M64) ^ _H64) - _H64


# Each operation: fast path through the cache, taken only for a plain int
# address (a float equal to a cached address must not slip through); on a
# miss the slow path validates the address and opens the view.  Only
# validated addresses enter the caches.

def load32(addr):
    view = _v32.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 4, "load32")
    return view.load()

def load64(addr):
    view = _v64.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 8, "load64")
    return view.load()

def store32(addr, v):
    v = ((v & _M32) ^ _H32) - _H32
    view = _v32.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 4, "store32")
    view.store(v)

def store64(addr, v):
    v = ((v & _M64) ^ _H64) - _H64
    view = _v64.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 8, "store64")
    view.store(v)

# fetch_add is done on the signed view with a signed operand: patomic adds in
# two's complement (a C atomic add on the raw word), so it wraps.

def fetch_add32(addr, v):
    v = ((v & _M32) ^ _H32) - _H32
    view = _v32.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 4, "fetch_add32")
    return view.fetch_add(v)

def fetch_add64(addr, v):
    v = ((v & _M64) ^ _H64) - _H64
    view = _v64.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 8, "fetch_add64")
    return view.fetch_add(v)

def exchange32(addr, v):
    v = ((v & _M32) ^ _H32) - _H32
    view = _v32.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 4, "exchange32")
    return view.exchange(v)

def exchange64(addr, v):
    v = ((v & _M64) ^ _H64) - _H64
    view = _v64.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 8, "exchange64")
    return view.exchange(v)

def cas32(addr, expected, desired):
    expected = ((expected & _M32) ^ _H32) - _H32
    desired = ((desired & _M32) ^ _H32) - _H32
    view = _v32.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 4, "cas32")
    return view.cmpxchg_strong(expected, desired).expected

def cas64(addr, expected, desired):
    expected = ((expected & _M64) ^ _H64) - _H64
    desired = ((desired & _M64) ^ _H64) - _H64
    view = _v64.get(addr) if addr.__class__ is int else None
    if view is None:
        view = _view(addr, 8, "cas64")
    return view.cmpxchg_strong(expected, desired).expected


# `atomics` (patomic) has no standalone fence, so fence() is a seq_cst
# read-modify-write on a private word.  On x86 that is a lock-prefixed
# instruction, a full barrier.  Elsewhere it orders every operation of this
# module (all seq_cst) and acts as acquire+release for plain accesses, but is
# formally weaker than atomic_thread_fence(seq_cst) for a plain store followed
# by a plain load.
_fence_word = atomics.atomic(width=4, atype=atomics.INT)
_fence_rmw = _fence_word.fetch_add


def fence():
    _fence_rmw(0)


# ---------------------------------------------------------------------------
# wait cells
# ---------------------------------------------------------------------------

def cell_add(addr, delta):
    """fetch_add on the cell's value; wake sleepers. Returns the old value."""
    delta = ((delta & _M32) ^ _H32) - _H32
    cell = _cells.get(addr) if addr.__class__ is int else None
    value, sleepers = cell if cell is not None else _cell(addr, "cell_add")
    old = value.fetch_add(delta)
    if sleepers.load():
        _futex_wake(addr)
    return old


def cell_store(addr, v):
    """Store into the cell's value; wake sleepers."""
    v = ((v & _M32) ^ _H32) - _H32
    cell = _cells.get(addr) if addr.__class__ is int else None
    value, sleepers = cell if cell is not None else _cell(addr, "cell_store")
    value.store(v)
    if sleepers.load():
        _futex_wake(addr)


def cell_wake(addr):
    """Wake every process sleeping on the cell."""
    _futex_wake(_check(addr, 8, "cell_wake"))


def barrier_arrive(count_addr, cell_addr, size, timeout):
    """Arrive at a counting barrier; None once released, else the awaited generation."""
    generation = load32(cell_addr)
    if fetch_add32(count_addr, 1) + 1 >= size:
        store32(count_addr, 0)
        cell_add(cell_addr, 1)
        return None
    if cell_wait(cell_addr, generation, timeout) != generation:
        return None
    return generation


def cell_wait(addr, old, timeout):
    """Wait until the cell's value != old or `timeout` seconds have passed.

    Returns the current value (which equals `old` on a timeout).
    Spin, then sched_yield, then sleep on the futex (GIL released).
    """
    addr = _check(addr, 8, "cell_wait")
    old = ((old & _M32) ^ _H32) - _H32
    timeout = float(timeout)
    if timeout != timeout:
        raise ValueError("cell_wait(): timeout is NaN")
    value, sleepers = _cells.get(addr) or _cell(addr, "cell_wait")
    load = value.load
    v = load()
    if v != old or timeout <= 0.0:
        return v
    now = time.monotonic
    deadline = None if timeout >= 1e9 else now() + timeout
    going_on = _goes_on(addr, old)
    began = time.monotonic_ns() if _observing[0] else 0
    held = mpi_lock.give_up()       # a wait blocks only its own thread
    try:
        v = _spin_and_sleep(addr, old, load, sleepers, deadline, 0 if going_on else _spin,
                            0 if going_on else _yields)
    finally:
        mpi_lock.take_back(held)
        if began:
            _wait_ended(began)
    _waits.left = (addr if v == old else None, old, now())
    return v


# --trace and --profile (observe/): each thread's time waiting, as atomic.c counts it
_observing = [False]


def observe_waits(on):
    """Count the time each thread waits, which waited() hands over."""
    _observing[0] = bool(on)


def _wait_ended(began):
    first, total = getattr(_waits, "waited", None) or (0, 0)
    _waits.waited = (first or began, total + time.monotonic_ns() - began)


def waited():
    """(first wait's start, total ns) this thread waited since the last call, or None."""
    spent = getattr(_waits, "waited", None)
    _waits.waited = None
    return spent


class _MPILock:
    """The rank's MPI lock (native.h says what it guards and why), on a recursive
    threading lock: ``with mpi_lock:``; cell_wait gives it up while it waits."""

    def __init__(self):
        self._lock = threading.RLock()
        self._first = None
        self.shared = False     # a second thread has taken it

    def __enter__(self):
        self._lock.acquire()
        if not self.shared:
            me = threading.get_ident()
            if self._first is None:
                self._first = me
            elif me != self._first:
                self.shared = True
        return self

    def __exit__(self, *exc):
        self._lock.release()

    def give_up(self):
        """Give the lock up however deep this thread holds it: what take_back takes."""
        return self._lock._release_save() if self._lock._is_owned() else None

    def take_back(self, held):
        if held is not None:
            self._lock._acquire_restore(held)


mpi_lock = _MPILock()


def mpi_lock_shared():
    """Has a second thread taken the rank's MPI lock?"""
    return mpi_lock.shared


_turns = [False]


def taking_turns():
    """Does (or did) the process run a second Python thread, or was take_turns()
    called? Sticky, as atomic.c's."""
    if not _turns[0]:
        _turns[0] = threading.active_count() > 1
    return _turns[0]


def take_turns():
    _turns[0] = True


# (cell, value, when) of the wait this thread left unsatisfied last (atomic.c's wait_left)
_waits = threading.local()
_GOING_ON = 1e-3


def _goes_on(addr, old):
    left = getattr(_waits, "left", (None, None, 0.0))
    return left[:2] == (addr, old) and time.monotonic() - left[2] < _GOING_ON


def wait_goes_on(addr, old):
    """Would cell_wait(addr, old) now be the wait this thread left a moment ago,
    going on (which sleeps without spinning again)?"""
    addr = _check(addr, 8, "wait_goes_on")
    return _goes_on(addr, ((old & _M32) ^ _H32) - _H32)


def _spin_and_sleep(addr, old, load, sleepers, deadline, spin, yields):
    now = time.monotonic
    spin_end = now() + spin * 1e-6
    while now() < spin_end:
        v = load()
        if v != old:
            return v
    for _ in range(yields):
        v = load()
        if v != old:
            return v
        if deadline is not None and now() >= deadline:
            return v
        _sched_yield()
    while True:
        sleepers.fetch_add(1)
        try:
            v = load()
            if v != old:
                return v
            rel = _SLEEP_SLICE
            if deadline is not None:
                rel = deadline - now()
                if rel <= 0.0:
                    return v
                if rel > _SLEEP_SLICE:
                    rel = _SLEEP_SLICE
            _futex_wait(addr, old, rel)
        finally:
            sleepers.fetch_add(-1)
        v = load()
        if v != old:
            return v
        # spurious wake-up, EINTR (Python signal handlers have run by now),
        # EAGAIN after an ABA change, or the end of a slice: go on


# ---------------------------------------------------------------------------
# memcpy
# ---------------------------------------------------------------------------

_memmove = ctypes.memmove


def memcpy(dst_addr, src_addr, nbytes):
    """Copy nbytes from src_addr to dst_addr (overlap allowed)."""
    nbytes = nbytes.__index__()
    if nbytes < 0:
        raise ValueError("memcpy(): negative byte count %d" % nbytes)
    if nbytes == 0:
        return
    dst_addr = _check(dst_addr, 1, "memcpy")
    src_addr = _check(src_addr, 1, "memcpy")
    _memmove(dst_addr, src_addr, nbytes)


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _vm_function(name):
    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, name)
    function.restype = ctypes.c_ssize_t
    function.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                         ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.c_ulong]
    return function


_process_vm_writev = _vm_function("process_vm_writev")
_process_vm_readv = _vm_function("process_vm_readv")


def _vm_copy(function, pid, remote_addr, local_addr, nbytes):
    done = 0
    while done < nbytes:
        here = _IoVec(local_addr + done, nbytes - done)
        there = _IoVec(remote_addr + done, nbytes - done)
        moved = function(pid, ctypes.byref(here), 1, ctypes.byref(there), 1, 0)
        if moved <= 0:
            code = ctypes.get_errno() if moved < 0 else errno.EFAULT
            raise OSError(code, os.strerror(code))
        done += moved


def vm_write(pid, remote_addr, local_addr, nbytes):
    """Copy local bytes into another process (process_vm_writev)."""
    _vm_copy(_process_vm_writev, pid, remote_addr, local_addr, nbytes)


def vm_read(pid, remote_addr, local_addr, nbytes):
    """Copy another process's bytes here (process_vm_readv)."""
    _vm_copy(_process_vm_readv, pid, remote_addr, local_addr, nbytes)


if sys.byteorder != "little":   # pragma: no cover - cell layout assumes it
    raise ImportError("shmrma.core._fallback supports little-endian machines only")
