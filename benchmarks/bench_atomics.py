#!/usr/bin/env python
"""Cost of the native atomic layer: C extension vs the `atomics` fallback.

    python benchmarks/bench_atomics.py [--quick]

For each backend, side by side in one run: ns per call of load64, store64,
fetch_add64, cas64 and cell_add (no sleepers), measured in a tight Python
loop with the function bound to a local name, minus the cost of the empty
loop; then the one-way latency of a ping-pong between two processes through
cell_add / cell_wait (round trip / 2), with the default wait parameters and
with spin = yields = 0 (every wait sleeps on the futex).  Each number is the
median of 5 repetitions (time.perf_counter_ns).  The last column is the
ratio fallback / C.
"""
import argparse
import ctypes
import mmap
import os
import platform
import signal
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REPS = 5


def backends():
    found = {}
    try:
        from shmrma import _native
        found["c"] = _native
    except ImportError as exc:
        print("C extension not available (%s); build it with "
              "`python setup.py build_ext --inplace`" % exc)
    from shmrma.core import _fallback
    found["atomics"] = _fallback
    return found


class Shm:
    def __init__(self, size=4096):
        self.map = mmap.mmap(-1, size)
        self._anchor = ctypes.c_char.from_buffer(self.map)
        self.addr = ctypes.addressof(self._anchor)


def per_call_ns(fn, args, n):
    """Median over REPS of ns per call of fn(*args), loop overhead removed."""
    rng = range(n)
    samples = []
    for _ in range(REPS):
        t0 = time.perf_counter_ns()
        for _ in rng:
            pass
        empty = time.perf_counter_ns() - t0
        if len(args) == 1:
            a, = args
            t0 = time.perf_counter_ns()
            for _ in rng:
                fn(a)
            t = time.perf_counter_ns() - t0
        elif len(args) == 2:
            a, b = args
            t0 = time.perf_counter_ns()
            for _ in rng:
                fn(a, b)
            t = time.perf_counter_ns() - t0
        else:
            a, b, c = args
            t0 = time.perf_counter_ns()
            for _ in rng:
                fn(a, b, c)
            t = time.perf_counter_ns() - t0
        samples.append((t - empty) / n)
    return statistics.median(samples)


def ping_pong_us(impl, rounds, spin_yields=None):
    """Median over REPS of the one-way latency (us) of a cell ping-pong
    between this process and a forked child."""
    shm = Shm()
    ping, pong = shm.addr, shm.addr + 64          # separate cache lines
    saved = impl.get_wait_params()
    if spin_yields is not None:
        impl.set_wait_params(*spin_yields)        # inherited by the child
    warm = max(rounds // 10, 10)
    total = warm + REPS * rounds
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            wait, add = impl.cell_wait, impl.cell_add
            for r in range(total):
                if wait(ping, r, 10.0) != r + 1:
                    raise RuntimeError("ping-pong lost the token")
                add(pong, 1)
            code = 0
        finally:
            os._exit(code)
    samples = []
    try:
        wait, add = impl.cell_wait, impl.cell_add
        r = 0
        for rep in range(-1, REPS):
            n = warm if rep < 0 else rounds
            t0 = time.perf_counter_ns()
            for _ in range(n):
                add(ping, 1)
                if wait(pong, r, 10.0) != r + 1:
                    raise RuntimeError("ping-pong lost the token")
                r += 1
            if rep >= 0:
                samples.append((time.perf_counter_ns() - t0) / n / 2 / 1000)
        _, status = os.waitpid(pid, 0)
        pid = 0
        if status != 0:
            raise RuntimeError("ping-pong child failed")
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        impl.set_wait_params(*saved)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--quick", action="store_true", help="fewer iterations")
    opts = ap.parse_args()
    scale = 0.1 if opts.quick else 1.0

    impls = backends()
    # iterations per repetition: ~50-100 ms each
    iters = {"c": int(500_000 * scale), "atomics": int(10_000 * scale)}
    rounds = {"c": int(20_000 * scale), "atomics": int(2_000 * scale)}
    futex_rounds = {"c": int(5_000 * scale), "atomics": int(1_000 * scale)}

    shm = Shm()
    word, cell = shm.addr, shm.addr + 64
    rows = []  # (label, unit, {backend: value})

    ops = [
        ("load64", lambda m: (m.load64, (word,))),
        ("store64", lambda m: (m.store64, (word, 1))),
        ("fetch_add64", lambda m: (m.fetch_add64, (word, 1))),
        ("cas64", lambda m: (m.cas64, (word, 0, 1))),
        ("cell_add (no sleepers)", lambda m: (m.cell_add, (cell, 1))),
    ]
    for label, make in ops:
        vals = {}
        for name, impl in impls.items():
            fn, args = make(impl)
            fn(*args)   # warm the fallback's view cache
            vals[name] = per_call_ns(fn, args, iters[name])
        rows.append((label, "ns", vals))

    for label, sy, rnd in (
            ("ping-pong one-way, default wait", None, rounds),
            ("ping-pong one-way, futex only", (0, 0), futex_rounds)):
        vals = {}
        for name, impl in impls.items():
            vals[name] = ping_pong_us(impl, rnd[name], sy) * 1000.0
        rows.append((label, "us", vals))

    print("shmrma atomic layer: C extension vs `atomics` fallback "
          "(median of %d reps, loop overhead removed)" % REPS)
    print("python %s, %s, %d cpus; wait params C %s, atomics %s" % (
        platform.python_version(), platform.machine(), os.cpu_count(),
        impls["c"].get_wait_params() if "c" in impls else "-",
        impls["atomics"].get_wait_params()))
    head = "%-34s %12s %14s %9s" % ("operation", "C", "atomics", "ratio")
    print(head)
    print("-" * len(head))
    for label, unit, vals in rows:
        c = vals.get("c")
        f = vals["atomics"]
        if unit == "ns":
            cs = "%9.1f ns" % c if c is not None else "-"
            fs = "%11.1f ns" % f
        else:
            cs = "%9.2f us" % (c / 1000) if c is not None else "-"
            fs = "%11.2f us" % (f / 1000)
        ratio = "%8.1fx" % (f / c) if c else "-"
        print("%-34s %12s %14s %9s" % (label, cs, fs, ratio))


if __name__ == "__main__":
    main()
