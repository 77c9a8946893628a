"""Tests of the native atomic layer (shmrma.core.atomic), run on both backends.

Every test runs once on the C extension ("c") and once on the `atomics`
fallback ("atomics"); the C run is skipped when the extension is not built.
Multi-process tests fork children that share an anonymous mmap.
"""
import ctypes
import mmap
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

import pytest

from shmrma.core import atomic, settings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
I32_MIN, I32_MAX = -2**31, 2**31 - 1
I64_MIN, I64_MAX = -2**63, 2**63 - 1
# A wait that has not ended after this long is a hang: only a failing run ever waits
# this long, however loaded the machine (no test here bounds how long a wait takes).
HANG = 60.0


# ---------------------------------------------------------------------------
# fixtures and helpers
# ---------------------------------------------------------------------------

@pytest.fixture(params=["c", "atomics"])
def backend(request):
    name = request.param
    previous = atomic.BACKEND
    try:
        atomic.use_backend(name)
    except ImportError as exc:
        pytest.skip("backend %r not available: %s" % (name, exc))
    params = atomic.get_wait_params()
    try:
        yield name
    finally:
        atomic.set_wait_params(*params)
        atomic.use_backend(previous)


class Shm:
    """A zeroed anonymous shared mapping (inherited across fork)."""

    def __init__(self, size=4096):
        self.map = mmap.mmap(-1, size)
        self._anchor = ctypes.c_char.from_buffer(self.map)
        self.addr = ctypes.addressof(self._anchor)

    def close(self):
        del self._anchor
        self.map.close()


@pytest.fixture
def shm(backend):
    s = Shm()
    try:
        yield s
    finally:
        s.close()


def fork_children(n, work):
    """Fork n children running work(i); a child exits 0 on success, 1 on an
    exception (traceback on stderr).  Returns the list of pids."""
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:  # child
            code = 1
            try:
                work(i)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        pids.append(pid)
    return pids


def reap(pids, timeout=HANG):
    """Wait for every child; returns {pid: exit status}.  Children still
    alive at the deadline are killed and reported as None."""
    status = {}
    deadline = time.monotonic() + timeout
    pending = list(pids)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            got, st = os.waitpid(pid, os.WNOHANG)
            if got:
                status[pid] = os.waitstatus_to_exitcode(st)
                pending.remove(pid)
        if pending:
            time.sleep(0.002)
    kill(pending)
    for pid in pending:
        status[pid] = None
    return status


def kill(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def run_children(n, work, timeout=HANG):
    """Fork n children that start work(i) together (a start gate makes them
    overlap, so contention is real), wait for all, assert they succeeded."""
    gate = Shm(64)

    def gated(i):
        atomic.fetch_add32(gate.addr, 1)
        deadline = time.monotonic() + HANG
        while atomic.load32(gate.addr) < n and time.monotonic() < deadline:
            os.sched_yield()
        work(i)

    pids = []
    try:
        pids = fork_children(n, gated)
        status = reap(pids, timeout)
        pids = []
        assert all(code == 0 for code in status.values()), status
    finally:
        kill(pids)
        gate.close()


def wait_until(pred, timeout=HANG):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def n_ops(backend):
    """Per-process operation count for contention tests."""
    return 50_000 if backend == "c" else 1_500


# ---------------------------------------------------------------------------
# single-process semantics
# ---------------------------------------------------------------------------

def test_backend_selected(backend):
    assert atomic.BACKEND == backend
    assert atomic.load64 is atomic._impl.load64
    if backend == "c":
        assert atomic.NATIVE_IMPORT_ERROR is None


@pytest.mark.parametrize("width", [32, 64])
def test_load_store_signed_and_unsigned(backend, shm, width):
    load = getattr(atomic, "load%d" % width)
    store = getattr(atomic, "store%d" % width)
    a = shm.addr + 8
    mod = 2**width
    for v in (0, 1, -1, 2**(width - 1) - 1, -2**(width - 1), 12345, -12345):
        store(a, v)
        assert load(a) == v
        store(a, v % mod)  # the unsigned spelling stores the same bits
        assert load(a) == v
    store(a, mod + 5)  # taken modulo 2**width
    assert load(a) == 5
    store(a, 2**(width - 1))
    assert load(a) == -2**(width - 1)


def test_ops_touch_only_their_word(backend, shm):
    a = shm.addr
    atomic.store64(a, -1)
    atomic.store64(a + 8, -1)
    atomic.store64(a + 16, -1)
    atomic.store32(a + 8, 0)
    atomic.fetch_add32(a + 12, 1)
    assert atomic.load64(a) == -1 and atomic.load64(a + 16) == -1
    assert atomic.load32(a + 8) == 0 and atomic.load32(a + 12) == 0
    assert shm.map[8:16] == bytes(8)


def test_fetch_add32_wraps(backend, shm):
    a = shm.addr
    atomic.store32(a, I32_MAX)
    assert atomic.fetch_add32(a, 1) == I32_MAX
    assert atomic.load32(a) == I32_MIN
    assert atomic.fetch_add32(a, -1) == I32_MIN
    assert atomic.load32(a) == I32_MAX
    assert atomic.fetch_add32(a, 2**32 - 1) == I32_MAX  # unsigned -1
    assert atomic.load32(a) == I32_MAX - 1
    atomic.store32(a, -1)
    assert atomic.fetch_add32(a, 1) == -1
    assert atomic.load32(a) == 0


def test_fetch_add64_wraps(backend, shm):
    a = shm.addr
    atomic.store64(a, I64_MAX)
    assert atomic.fetch_add64(a, 1) == I64_MAX
    assert atomic.load64(a) == I64_MIN
    assert atomic.fetch_add64(a, -1) == I64_MIN
    assert atomic.load64(a) == I64_MAX
    assert atomic.fetch_add64(a, 2**64 - 1) == I64_MAX
    assert atomic.load64(a) == I64_MAX - 1
    atomic.store64(a, 2**32 - 1)  # carries into the upper half
    assert atomic.fetch_add64(a, 1) == 2**32 - 1
    assert atomic.load64(a) == 2**32


@pytest.mark.parametrize("width", [32, 64])
def test_exchange(backend, shm, width):
    xchg = getattr(atomic, "exchange%d" % width)
    load = getattr(atomic, "load%d" % width)
    a = shm.addr
    assert xchg(a, 7) == 0
    assert xchg(a, 2**width - 1) == 7
    assert load(a) == -1
    assert xchg(a, -2**(width - 1)) == -1
    assert load(a) == -2**(width - 1)


@pytest.mark.parametrize("width", [32, 64])
def test_cas(backend, shm, width):
    cas = getattr(atomic, "cas%d" % width)
    load = getattr(atomic, "load%d" % width)
    store = getattr(atomic, "store%d" % width)
    a = shm.addr
    store(a, 5)
    assert cas(a, 4, 9) == 5 and load(a) == 5       # failure: unchanged
    assert cas(a, 5, 9) == 5 and load(a) == 9       # success
    store(a, -1)
    assert cas(a, 2**width - 1, 3) == -1            # unsigned expected matches
    assert load(a) == 3
    assert cas(a, 3, 2**width - 2) == 3             # unsigned desired
    assert load(a) == -2
    assert cas(a, 3 + 2**width, 0) == -2            # compared modulo width
    assert load(a) == -2


def test_fence_and_memcpy(backend, shm):
    atomic.fence()
    src = (bytes(range(256)) * 600)[:150_001]     # crosses the 64 KiB no-GIL path
    dst = bytearray(len(src))
    src_buf = ctypes.create_string_buffer(src, len(src))
    dst_buf = (ctypes.c_char * len(dst)).from_buffer(dst)
    for n in (0, 1, 7, 4096, 65535, 65536, len(src)):
        atomic.memcpy(ctypes.addressof(dst_buf), ctypes.addressof(src_buf), n)
        assert bytes(dst[:n]) == src[:n]
    atomic.memcpy(0, 0, 0)                          # nothing to copy: no check
    with pytest.raises(ValueError):
        atomic.memcpy(ctypes.addressof(dst_buf), ctypes.addressof(src_buf), -1)
    with pytest.raises(ValueError):
        atomic.memcpy(0, ctypes.addressof(src_buf), 8)
    # into shared memory
    atomic.memcpy(shm.addr + 3, ctypes.addressof(src_buf), 100)
    assert shm.map[3:103] == src[:100]
    del dst_buf


_ONE_ARG = {"load32": 4, "load64": 8, "cell_wake": 8}
_TWO_ARGS = {"store32": 4, "store64": 8, "fetch_add32": 4, "fetch_add64": 8,
             "exchange32": 4, "exchange64": 8, "cell_add": 8, "cell_store": 8}
_THREE_ARGS = {"cas32": 4, "cas64": 8, "cell_wait": 8}


@pytest.mark.parametrize("fname", sorted({**_ONE_ARG, **_TWO_ARGS, **_THREE_ARGS}))
def test_misaligned_and_null_addresses(backend, shm, fname):
    func = getattr(atomic, fname)
    align = {**_ONE_ARG, **_TWO_ARGS, **_THREE_ARGS}[fname]
    extra = {1: (), 2: (1,), 3: (1, 0)}[
        1 if fname in _ONE_ARG else 2 if fname in _TWO_ARGS else 3]
    bad = [shm.addr + off for off in range(1, align)]
    if align == 8:
        assert shm.addr + 4 in bad
    for addr in bad + [0]:
        with pytest.raises(ValueError, match="aligned|NULL"):
            func(addr, *extra)
    assert shm.map[:16] == bytes(16), "a rejected call wrote memory"
    with pytest.raises(TypeError):
        func(float(shm.addr), *extra)


def test_wrong_argument_count(backend, shm):
    with pytest.raises(TypeError):
        atomic.load32()
    with pytest.raises(TypeError):
        atomic.store64(shm.addr)
    with pytest.raises(TypeError):
        atomic.cas32(shm.addr, 1)


def test_wait_params(backend):
    spin, yields = atomic.get_wait_params()
    assert spin >= 0 and yields >= 0
    atomic.set_wait_params(3, 2)
    assert atomic.get_wait_params() == (3, 2)
    with pytest.raises(ValueError):
        atomic.set_wait_params(-1, 0)
    assert atomic.get_wait_params() == (3, 2)


def _python(code, **env):
    full_env = dict(os.environ)
    full_env.pop("SHMRMA_SPIN", None)
    full_env.pop("SHMRMA_YIELDS", None)
    full_env.update(env)
    full_env["PYTHONPATH"] = REPO + os.pathsep + full_env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", code], env=full_env, cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.timeout(60)
def test_env_selects_backend_and_wait_params(backend):
    native = "1" if backend == "c" else "0"
    code = ("from shmrma.core import atomic; "
            "print(atomic.BACKEND, atomic.NATIVE_IMPORT_ERROR, "
            "*atomic.get_wait_params())")
    assert _python(code, SHMRMA_NATIVE=native, SHMRMA_SPIN="7",
                   SHMRMA_YIELDS="3") == "%s None 7 3" % backend
    # garbage values keep the defaults, the same on both backends (core/settings.py)
    out = _python(code, SHMRMA_NATIVE=native, SHMRMA_SPIN="lots",
                  SHMRMA_YIELDS="-2").split()
    assert out[:2] == [backend, "None"]
    assert (int(out[2]), int(out[3])) == (settings.DEFAULT_SPIN, settings.DEFAULT_YIELDS)
    if backend == "atomics":
        # extension missing (import blocked): fall back and keep the reason
        code = ("import sys; sys.modules['shmrma._native'] = None; "
                "from shmrma.core import atomic; "
                "print(atomic.BACKEND, bool(atomic.NATIVE_IMPORT_ERROR)); "
                "print(atomic.NATIVE_IMPORT_ERROR)")
        out = _python(code, SHMRMA_NATIVE="").splitlines()
        assert out[0] == "atomics True"
        assert "Error" in out[1] and "_native" in out[1]


# ---------------------------------------------------------------------------
# wait cells, one process
# ---------------------------------------------------------------------------

def test_cell_add_store_return_and_wrap(backend, shm):
    c = shm.addr
    assert atomic.cell_add(c, 5) == 0
    assert atomic.cell_add(c, -2) == 5
    assert atomic.load32(c) == 3
    atomic.cell_store(c, I32_MAX)
    assert atomic.cell_add(c, 1) == I32_MAX
    assert atomic.load32(c) == I32_MIN
    atomic.cell_store(c, 2**32 - 1)
    assert atomic.load32(c) == -1
    atomic.cell_wake(c)                 # nobody sleeps: harmless
    assert atomic.load32(c + 4) == 0    # sleepers untouched


def test_cell_wait_returns_at_once_when_changed(backend, shm):
    """A changed value ends the wait at once: with no timeout at all, a wait that
    did not would never return."""
    c = shm.addr
    atomic.cell_store(c, 4)
    assert atomic.cell_wait(c, 3, float("inf")) == 4
    assert atomic.cell_wait(c, 3 + 2**32, float("inf")) == 4   # old compared mod 2**32


def test_cell_wait_timeout_zero(backend, shm):
    c = shm.addr
    for _ in range(10):
        assert atomic.cell_wait(c, 0, 0) == 0
        assert atomic.cell_wait(c, 0, -1.0) == 0
    assert atomic.load32(c + 4) == 0
    with pytest.raises(ValueError):
        atomic.cell_wait(c, 0, float("nan"))


@pytest.mark.timeout(60)
def test_a_wait_spins_once_not_at_every_slice(backend, shm):
    """The one wait policy (atomic.c): a long wait, made of slices between the job's
    checks, spins and yields at its start only (its next slice goes on it, so it
    sleeps at once); a new wait, later or on another value, or one whose cell
    changed, spins again. Per thread: another thread's wait is its own."""
    c = shm.addr
    atomic.store32(c, 5)
    assert not atomic.wait_goes_on(c, 5)
    for _ in range(3):
        assert atomic.cell_wait(c, 5, 0.01) == 5
        assert atomic.wait_goes_on(c, 5)
    assert not atomic.wait_goes_on(c, 6) and not atomic.wait_goes_on(c + 8, 5)
    other = []
    thread = threading.Thread(target=lambda: other.append(atomic.wait_goes_on(c, 5)))
    thread.start()
    thread.join()
    assert other == [False]
    time.sleep(0.01)            # longer than a slice's way back: the next wait is new
    assert not atomic.wait_goes_on(c, 5)
    atomic.store32(c, 6)
    assert atomic.cell_wait(c, 5, 0.01) == 6    # it ended: the wait was satisfied
    assert not atomic.wait_goes_on(c, 5)


@pytest.mark.parametrize("timeout", [0.05, 0.3])
def test_cell_wait_times_out(backend, shm, timeout):
    c = shm.addr
    atomic.cell_store(c, -7)
    t0 = time.monotonic()
    assert atomic.cell_wait(c, -7, timeout) == -7
    elapsed = time.monotonic() - t0
    assert elapsed >= timeout * 0.95    # it did not return early
    assert atomic.load32(c + 4) == 0


@pytest.mark.timeout(60)
def test_cell_wait_releases_gil_and_thread_wakes_it(backend, shm):
    """A thread sleeping in cell_wait lets the main thread run (GIL released): the
    main thread sees it asleep on the futex, and its cell_add wakes it. The wait
    has no timeout, so only that wake-up ends it."""
    c = shm.addr
    result = {}

    def waiter():
        result["value"] = atomic.cell_wait(c, 0, float("inf"))

    th = threading.Thread(target=waiter)
    th.start()
    try:
        assert wait_until(lambda: atomic.load32(c + 4) == 1), \
            "waiter never went to sleep on the futex"
        assert atomic.cell_add(c, 1) == 0
        th.join(HANG)
        assert not th.is_alive(), "cell_add did not wake the waiter"
    finally:
        atomic.cell_store(c, 1)
        th.join()
    assert result["value"] == 1
    assert atomic.load32(c + 4) == 0


@pytest.mark.timeout(60)
def test_cell_wait_signals(backend, shm):
    """A signal whose handler returns does not end the wait: it goes on until the
    value changes; a handler that raises interrupts it; sleepers is restored. The
    signals reach the main thread while it sleeps in a wait with no timeout."""
    c = shm.addr
    hits = []

    class Interrupted(Exception):
        pass

    def quiet(signum, frame):
        hits.append(signum)

    def loud(signum, frame):
        raise Interrupted()

    def signal_the_sleeper(then=lambda: None):
        """Once the main thread sleeps on the cell, send it SIGUSR1; then then()."""
        def run():
            if wait_until(lambda: atomic.load32(c + 4) == 1):
                signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
            then()
        thread = threading.Thread(target=run)
        thread.start()
        return thread

    def end_the_wait_once_handled():
        wait_until(lambda: hits)    # the handler ran, the wait still going on
        atomic.cell_store(c, 1)

    old_handler = signal.getsignal(signal.SIGUSR1)
    helper = None
    try:
        signal.signal(signal.SIGUSR1, quiet)
        helper = signal_the_sleeper(end_the_wait_once_handled)
        assert atomic.cell_wait(c, 0, float("inf")) == 1   # ended by the change only
        helper.join()
        assert hits == [signal.SIGUSR1]
        assert atomic.load32(c + 4) == 0

        signal.signal(signal.SIGUSR1, loud)
        helper = signal_the_sleeper()
        with pytest.raises(Interrupted):
            atomic.cell_wait(c, 1, float("inf"))
        helper.join()
        assert atomic.load32(c + 4) == 0
    finally:
        atomic.cell_store(c, 2)     # never leave a wait asleep
        if helper is not None:
            helper.join(HANG)
        signal.signal(signal.SIGUSR1, old_handler)


# ---------------------------------------------------------------------------
# multi-process
# ---------------------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("width", [32, 64])
def test_fetch_add_contention(backend, shm, width):
    nproc, k = 4, n_ops(backend)
    fadd = getattr(atomic, "fetch_add%d" % width)
    load = getattr(atomic, "load%d" % width)
    word = shm.addr
    sums = shm.addr + 64          # one int64 per child: sum of its tickets

    def work(i):
        total = 0
        for _ in range(k):
            total += fadd(word, 1)
        atomic.store64(sums + 8 * i, total)

    run_children(nproc, work)
    n = nproc * k
    assert load(word) == n
    # tickets were unique: they sum to 0 + 1 + ... + n-1
    assert sum(atomic.load64(sums + 8 * i) for i in range(nproc)) == n * (n - 1) // 2


@pytest.mark.timeout(60)
def test_fetch_add_contention_wraps(backend, shm):
    """Concurrent adds across the int32 / int64 sign boundary stay exact."""
    nproc, k = 2, n_ops(backend) // 2
    a32, a64 = shm.addr, shm.addr + 8
    atomic.store32(a32, I32_MAX - k)
    atomic.store64(a64, I64_MAX - k)

    def work(i):
        for _ in range(k):
            atomic.fetch_add32(a32, 1)
            atomic.fetch_add64(a64, 1)

    run_children(nproc, work)
    assert atomic.load32(a32) == I32_MIN + k - 1
    assert atomic.load64(a64) == I64_MIN + k - 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("width", [32, 64])
def test_cas_increment_contention(backend, shm, width):
    nproc, k = 3, n_ops(backend) // 2
    cas = getattr(atomic, "cas%d" % width)
    load = getattr(atomic, "load%d" % width)
    word = shm.addr
    retries = shm.addr + 64

    def work(i):
        failed = 0
        for _ in range(k):
            old = load(word)
            while True:
                seen = cas(word, old, old + 1)
                if seen == old:
                    break
                failed += 1
                old = seen
        atomic.store64(retries + 8 * i, failed)

    run_children(nproc, work)
    assert load(word) == nproc * k


@pytest.mark.timeout(60)
def test_cell_add_contention(backend, shm):
    nproc, k = 4, n_ops(backend) // 2
    c = shm.addr

    def work(i):
        for _ in range(k):
            atomic.cell_add(c, 1)

    run_children(nproc, work)
    assert atomic.load32(c) == nproc * k
    assert atomic.load32(c + 4) == 0


@pytest.mark.timeout(60)
def test_cell_wait_woken_by_other_process(backend, shm):
    """A wait with no timeout ends when another process changes the cell.
    (How soon: benchmarks/bench_atomics.py's ping-pong latency.)"""
    c = shm.addr

    def work(i):
        time.sleep(0.2)
        atomic.cell_add(c, 1)

    pids = []
    try:
        pids = fork_children(1, work)
        assert atomic.cell_wait(c, 0, float("inf")) == 1
        assert reap(pids) == {pids[0]: 0}
        pids = []
    finally:
        kill(pids)
    assert atomic.load32(c + 4) == 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("how", ["cell_store", "cell_add"])
def test_futex_sleeper_woken(backend, shm, how):
    """A child asleep on the futex (sleepers == 1) is woken by the parent: its
    wait has no timeout, so only that wake-up ends it."""
    c = shm.addr
    out = shm.addr + 64      # int64 result
    atomic.store64(out, -99)

    def work(i):
        atomic.store64(out, atomic.cell_wait(c, 0, float("inf")))

    pids = []
    try:
        pids = fork_children(1, work)
        assert wait_until(lambda: atomic.load32(c + 4) == 1), \
            "child never slept on the futex"
        time.sleep(0.05)
        if how == "cell_store":
            atomic.cell_store(c, 42)
        else:
            assert atomic.cell_add(c, 42) == 0
        assert reap(pids) == {pids[0]: 0}
        pids = []
    finally:
        kill(pids)
    assert atomic.load64(out) == 42
    assert atomic.load32(c + 4) == 0


@pytest.mark.timeout(60)
def test_cell_wake_without_change_keeps_waiting(backend, shm):
    """cell_wake on an unchanged value wakes the sleeper, which goes back to
    sleep and still times out with the old value."""
    c = shm.addr
    out = shm.addr + 64

    def work(i):
        t0 = time.monotonic_ns()
        v = atomic.cell_wait(c, 0, 0.6)
        atomic.store64(out + 8, time.monotonic_ns() - t0)
        atomic.store64(out, v + 1000)

    pids = []
    try:
        pids = fork_children(1, work)
        assert wait_until(lambda: atomic.load32(c + 4) == 1)
        atomic.cell_wake(c)
        assert reap(pids) == {pids[0]: 0}
        pids = []
    finally:
        kill(pids)
    assert atomic.load64(out) == 1000
    assert atomic.load64(out + 8) / 1e9 >= 0.57
    assert atomic.load32(c + 4) == 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("spin,yields", [(0, 0), (None, None)],
                         ids=["futex-only", "default"])
def test_ping_pong_no_lost_wakeups(backend, shm, spin, yields):
    """Two processes hand a token back and forth through two cells; with
    spin = yields = 0 every wait goes through the futex path."""
    rounds = 300 if backend == "c" else 100
    if spin is not None:
        atomic.set_wait_params(spin, yields)   # inherited by the child
    ping, pong = shm.addr, shm.addr + 8

    def work(i):
        for r in range(rounds):
            v = atomic.cell_wait(ping, r, HANG)
            assert v == r + 1, (r, v)
            atomic.cell_add(pong, 1)

    pids = []
    try:
        pids = fork_children(1, work)
        for r in range(rounds):
            atomic.cell_add(ping, 1)
            v = atomic.cell_wait(pong, r, HANG)
            assert v == r + 1, (r, v)
        assert reap(pids) == {pids[0]: 0}
        pids = []
    finally:
        kill(pids)
    assert atomic.load32(ping + 4) == 0 and atomic.load32(pong + 4) == 0


@pytest.mark.timeout(60)
def test_many_waiters_one_wake(backend, shm):
    """cell_add wakes every sleeper (FUTEX_WAKE all); sleepers returns to 0."""
    nproc = 3
    c = shm.addr
    done = shm.addr + 64

    def work(i):
        v = atomic.cell_wait(c, 0, float("inf"))    # only the wake-up ends it
        assert v == 1, v
        atomic.fetch_add32(done, 1)

    pids = []
    try:
        pids = fork_children(nproc, work)
        assert wait_until(lambda: atomic.load32(c + 4) == nproc), \
            atomic.load32(c + 4)
        atomic.cell_add(c, 1)
        status = reap(pids)
        pids = []
        assert all(code == 0 for code in status.values()), status
    finally:
        kill(pids)
    assert atomic.load32(done) == nproc
    assert atomic.load32(c + 4) == 0
