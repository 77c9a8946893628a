"""The native atomic layer: picks the C extension or the `atomics` fallback.

Every function works on raw addresses (Python ints) of shared memory and is
sequentially consistent:

    load32(addr) / load64(addr) -> int            (signed)
    store32(addr, v) / store64(addr, v)            (v taken modulo 2**32/2**64)
    fetch_add32/64(addr, v) -> old                 (signed, wraps)
    exchange32/64(addr, v) -> old
    cas32/64(addr, expected, desired) -> old       (swapped iff old == expected)
    fence()                                        full memory barrier
    cell_wait(addr, old, timeout) -> value         wait until value != old
    wait_goes_on(addr, old) -> bool                such a wait would go on the last one
    cell_add(addr, delta) -> old                   add and wake sleepers
    cell_store(addr, v)                            store and wake sleepers
    cell_wake(addr)                                wake every sleeper
    barrier_arrive(count, cell, size, timeout)     counting barrier; None once open,
                                                   else the generation still awaited
    memcpy(dst_addr, src_addr, nbytes)
    vm_write(pid, remote, local, n) / vm_read   copies to/from another process's memory
    get_wait_params() -> (spin, yields); set_wait_params(spin, yields)
    mpi_lock                                   `with mpi_lock:` the rank's MPI lock
                                               (csrc/native.h), which every wait gives up
    mpi_lock_shared() -> bool                  a second thread has taken it
    taking_turns() -> bool; take_turns()       a second Python thread runs (or ran)
    observe_waits(on); waited() -> (first, ns) each thread's time waiting, counted for
                                               --trace and --profile; None when none

A wait cell is 8 bytes at an 8-byte-aligned address: the int32 value, then
the uint32 count of sleepers.  cell_wait spins briefly, yields, then sleeps on
a (process-shared) futex; tune the first two phases with the environment
variables SHMRMA_SPIN and SHMRMA_YIELDS (core/settings.py reads them, and gives both
backends the same defaults, when a backend is chosen) or set_wait_params().  Misaligned or zero addresses raise ValueError.

The backend is the C extension shmrma._native unless it is missing or the
environment variable SHMRMA_NATIVE is "0"; then it is shmrma.core._fallback (the
`atomics` package plus ctypes), some 300-550 times slower per call
(benchmarks/bench_atomics.py).  BACKEND says which ("c" or "atomics"); NATIVE_IMPORT_ERROR holds the
import error text when the extension was wanted but failed to import.

The functions are module globals bound straight to the backend's, so
``atomic.load64(addr)`` costs one attribute lookup plus the backend call.
Call them through the module (``from shmrma import atomic``), not through
names imported from it, so that use_backend() reaches every caller.
"""

import os

from . import settings

__all__ = [
    "load32", "load64", "store32", "store64", "fetch_add32", "fetch_add64",
    "exchange32", "exchange64", "cas32", "cas64", "fence",
    "cell_wait", "wait_goes_on", "cell_add", "cell_store", "cell_wake", "barrier_arrive",
    "memcpy", "vm_write", "vm_read", "get_wait_params", "set_wait_params", "forget",
    "mpi_lock", "mpi_lock_shared", "taking_turns", "take_turns", "observe_waits", "waited",
    "BACKEND", "NATIVE_IMPORT_ERROR", "use_backend", "available_backends",
]

_FUNCS = (
    "load32", "load64", "store32", "store64", "fetch_add32", "fetch_add64",
    "exchange32", "exchange64", "cas32", "cas64", "fence",
    "cell_wait", "wait_goes_on", "cell_add", "cell_store", "cell_wake", "barrier_arrive",
    "memcpy", "vm_write", "vm_read", "get_wait_params", "set_wait_params", "mpi_lock",
    "mpi_lock_shared", "taking_turns", "take_turns", "observe_waits", "waited",
)

BACKEND = None
NATIVE_IMPORT_ERROR = None
_impl = None


def _load(name):
    if name == "c":
        from .. import _native
        return _native
    if name == "atomics":
        from . import _fallback
        return _fallback
    raise ValueError("unknown atomic backend %r (expected 'c' or 'atomics')" % (name,))


def use_backend(name):
    """Switch every module-level function to backend `name` ("c" or
    "atomics").  Raises ImportError when that backend cannot be loaded.
    Returns the previous backend name."""
    global BACKEND, _impl
    impl = _load(name)
    impl.set_wait_params(*settings.wait_policy())
    g = globals()
    for fname in _FUNCS:
        g[fname] = getattr(impl, fname)
    g["forget"] = getattr(impl, "forget", _forget_nothing)
    previous, BACKEND, _impl = BACKEND, name, impl
    return previous


def _forget_nothing(address, nbytes):
    pass


def available_backends():
    """Names of the backends that import on this machine."""
    names = []
    for name in ("c", "atomics"):
        try:
            _load(name)
        except ImportError:
            continue
        names.append(name)
    return names


def _select():
    global NATIVE_IMPORT_ERROR
    if os.environ.get("SHMRMA_NATIVE", "").strip() != "0":
        try:
            use_backend("c")
            return
        except ImportError as exc:
            NATIVE_IMPORT_ERROR = "%s: %s" % (type(exc).__name__, exc)
    use_backend("atomics")


# Placeholders so that linters see the names; _select() rebinds them.
load32 = load64 = store32 = store64 = fetch_add32 = fetch_add64 = None
exchange32 = exchange64 = cas32 = cas64 = fence = None
cell_wait = wait_goes_on = cell_add = cell_store = cell_wake = memcpy = None
forget = _forget_nothing   # forget(address, nbytes): memory about to be unmapped
get_wait_params = set_wait_params = None
mpi_lock = mpi_lock_shared = taking_turns = take_turns = None

_select()
