#!/usr/bin/env python
"""Candidate designs for Accumulate, measured side by side (issue 3).

    python benchmarks/bench_accumulate_designs.py [--quick] [--json FILE]

Issue 3 asks that large accumulates run close to numpy speed, and that the
candidate designs be measured and the numbers that decided be recorded.
shmrma takes ONE lock per target window (a 32-bit futex cell in the control
segment: spin with pause, then sleep) for the whole accumulate-class call and
combines with block-of-16 vectorizable loops (shmrma/csrc/types/op.c: EACH,
combine_all; shmrma/csrc/rma/calls.c: acc_lock).  This script measures that design against the others,
all written in benchmarks/designs/accumulate_designs.c, which it compiles
with ``cc -O2 -shared -fPIC`` (``$CC`` if set) into a temporary directory
and loads with ctypes.  Each design computes target[i] += incoming[i] for
float64 and for int64 (SUM):

  A     per-element atomics (int64: __atomic_fetch_add; float64: a
        compare-exchange loop on the element's 64-bit word);
  B     one lock per target held around the plain loop (shmrma's design;
        its lock spins 256 times as acc_lock does, then sleeps on the futex
        here, where shmrma's C path instead hands over to the Python wait);
  C4K   address-striped locks: the target split at 4 KiB boundaries (offset
        from the window base), each piece under stripe[(offset/4096) % 64],
        the plain loop per piece;
  C64K  the same with 64 KiB pieces;
  N     the plain loop with no lock: the floor (wrong under concurrency);
  numpy np.add(t, a, out=t) called from Python: the reference.

The target lives in a /dev/shm-backed mmap like a window (the file is
unlinked as soon as it is mapped, so nothing is left behind even on a crash);
the incoming buffer is private memory of each process.  The C timing loops
run inside the library, so the C designs carry no interpreter overhead; the
numpy column does include the Python call (what any Python caller pays).

1. Single process, sizes 8 B (1 element), 4 KiB, 1 MiB, 8 MiB: ns per call
   for 1 element, GB/s (target bytes combined per second, 1e9) for the
   others.  Every (size, type) cell is calibrated (also the warm-up) to a
   loop of ~min_loop_s (0.05 s), then measured REPS times (5; 3 with
   --quick) with the designs in rotating order; the median is shown.
2. Two processes (this one and a forked child, pinned to different CPUs with
   sched_setaffinity when there are two) accumulate concurrently into the
   SAME 8 MiB target for 0.5 s each (0.12 s with --quick), after meeting at
   a barrier in the control segment: (a) both on the whole array, (b) each
   on its own disjoint half.  Aggregate GB/s (bytes combined by both / the
   longer of the two elapsed times), and a check that every element of the
   final target equals the number of calls that covered it (incoming is all
   ones, exact in float64 too): a lost update shows as LOST.  N is expected
   to lose updates in (a); every locked or atomic design must be exact.  Also
   per design: fairness f = fewer calls / more calls of the two processes
   (a lock that the releasing process re-takes before the sleeping one
   wakes starves the sleeper: f near 0), and the lock waits per call
   (acquires that found the lock held, futex sleeps).  Note that 64 stripes
   of 64 KiB cover 4 MiB, so the two disjoint halves map onto the same
   stripes in the same order (C4K: period 256 KiB): striping by address
   modulo 64 does not keep them apart.
3. Both processes doing 1-element accumulates on the same element: ns per op
   seen by each process (its elapsed / its calls), aggregate Mop/s,
   fairness, and the same exactness check, for A and B.

Medians: over the rounds in 1, over 3 runs (1 with --quick) in 2 and 3.

Progress goes to stderr, the tables and a conclusion computed only from the
measured numbers to stdout.  --quick shortens every loop (under ~15 s in
all); --json FILE writes every raw number plus the machine facts.  The
numbers are noisy on a shared VM: compare runs, not single cells.
"""
import argparse
import ctypes
import json
import mmap
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "designs", "accumulate_designs.c")

# (name, design code in the C file, stripe chunk bytes)
C_DESIGNS = (("A", 0, 0), ("B", 1, 0), ("C4K", 2, 4096), ("C64K", 2, 65536), ("N", 3, 0))
ALL_DESIGNS = [d[0] for d in C_DESIGNS] + ["numpy"]
LOCKED = ("A", "B", "C4K", "C64K")
ETYPES = (("float64", 0, np.float64), ("int64", 1, np.int64))
SIZES = ((8, "8 B"), (4096, "4 KiB"), (1 << 20, "1 MiB"), (8 << 20, "8 MiB"))
TARGET_BYTES = 8 << 20
PAGE = mmap.PAGESIZE

FULL = {"reps": 5, "contention_reps": 3, "min_loop_s": 0.05, "duration_s": 0.5}
QUICK = {"reps": 3, "contention_reps": 1, "min_loop_s": 0.012, "duration_s": 0.12}
CHILD_TIMEOUT_S = 30
WITHIN = 0.10                  # "close to numpy": within 10 %


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the library

def build(tmpdir):
    """Compile the designs; returns (ctypes library, compiler facts)."""
    cc = os.environ.get("CC", "cc")
    out = os.path.join(tmpdir, "accumulate_designs.so")
    base = [cc, "-O2", "-shared", "-fPIC", SOURCE, "-o", out]
    info = ""
    proc = subprocess.run(base[:1] + ["-fopt-info-vec-optimized"] + base[1:],
                          capture_output=True, text=True)
    if proc.returncode == 0:
        info = proc.stderr            # GCC's report of the loops it vectorized
    else:
        subprocess.run(base, check=True)
    version = subprocess.run([cc, "--version"], capture_output=True,
                             text=True).stdout.splitlines()[:1]
    lib = ctypes.CDLL(out)
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.bench_reps.restype = i64
    lib.bench_reps.argtypes = [ctypes.c_int, ctypes.c_int, ptr, ptr, i64, i64, ptr, ptr, i64]
    lib.run_for.restype = i64
    lib.run_for.argtypes = [ctypes.c_int, ctypes.c_int, ptr, ptr, i64, i64, i64, ptr, ptr,
                            i64, ctypes.c_int, ctypes.POINTER(i64)]
    lib.ctl_bytes.restype = ctypes.c_long
    lib.lock_stats.argtypes = [ctypes.POINTER(i64)]
    vectorized = [line.split("optimized: ", 1)[1] for line in info.splitlines()
                  if "loop vectorized" in line]
    return lib, {"cc": " ".join(base[:4]), "cc_version": version[0] if version else cc,
                 "vectorized_loops": vectorized}


class Window:
    """A /dev/shm-backed mapping: control segment (whole pages), then the target.

    The file is unlinked right after it is mapped; close() unmaps.
    """

    def __init__(self, lib):
        ctl = -(-lib.ctl_bytes() // PAGE) * PAGE
        shm_dir = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
        fd, path = tempfile.mkstemp(prefix="shmrma-bench-acc-", dir=shm_dir)
        try:
            os.ftruncate(fd, ctl + TARGET_BYTES)
            self.map = mmap.mmap(fd, ctl + TARGET_BYTES)
        finally:
            os.close(fd)
            os.unlink(path)
        self.path = path
        raw = np.frombuffer(self.map, dtype=np.uint8)
        self.ctl_view = raw[:ctl]
        self.target_bytes = raw[ctl:]
        self.ctl = self.ctl_view.ctypes.data
        self.base = self.target_bytes.ctypes.data
        self.target_bytes[:] = 0      # fault every page in before timing

    def target(self, dtype):
        return self.target_bytes.view(dtype)

    def reset(self):
        self.ctl_view[:] = 0
        self.target_bytes[:] = 0

    def close(self):
        self.ctl_view = self.target_bytes = None
        try:
            self.map.close()
        except BufferError:           # a stray view still exported; the exit unmaps it
            pass


# ---------------------------------------------------------------- 1. single process

def c_timer(lib, win, design, chunk, etype, incoming, nelem):
    tgt = win.base
    inc = incoming.ctypes.data

    def timed(reps):
        return lib.bench_reps(design, etype, inc, tgt, nelem, reps, win.ctl, win.base, chunk)
    return timed


def numpy_timer(win, dtype, incoming, nelem):
    t = win.target(dtype)[:nelem]
    a = incoming[:nelem]
    add = np.add

    def timed(reps):
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            add(t, a, out=t)
        return time.perf_counter_ns() - t0
    return timed


def calibrate(timed, min_loop_s):
    """Repetitions that make a loop of ~min_loop_s (these runs warm up too)."""
    reps = 1
    while True:
        ns = timed(reps)
        if ns >= min_loop_s * 1e9 / 4 or reps >= 1 << 32:
            break
        reps *= 8
    return max(1, int(reps * min_loop_s * 1e9 / max(ns, 1)))


def bench_single(lib, win, cfg):
    results = {}
    for nbytes, label in SIZES:
        for tname, etype, dtype in ETYPES:
            nelem = nbytes // 8
            incoming = np.ones(nelem, dtype=dtype)
            timers = {name: c_timer(lib, win, code, chunk, etype, incoming, nelem)
                      for name, code, chunk in C_DESIGNS}
            timers["numpy"] = numpy_timer(win, dtype, incoming, nelem)
            reps = {name: calibrate(t, cfg["min_loop_s"]) for name, t in timers.items()}
            samples = {name: [] for name in timers}
            for rnd in range(cfg["reps"]):
                order = ALL_DESIGNS[rnd % len(ALL_DESIGNS):] + ALL_DESIGNS[:rnd % len(ALL_DESIGNS)]
                for name in order:
                    samples[name].append(timers[name](reps[name]) / reps[name])
            cell = {}
            for name in ALL_DESIGNS:
                ns = statistics.median(samples[name])
                cell[name] = {"ns_per_call": ns, "gb_per_s": nbytes / ns,
                              "calls_per_sample": reps[name], "raw_ns_per_call": samples[name]}
            results["%s %s" % (label, tname)] = dict(size=nbytes, dtype=tname, designs=cell)
            progress("  single %-6s %-7s %s" % (label, tname, "  ".join(
                "%s %s" % (n, fmt_single(nbytes, cell[n])) for n in ALL_DESIGNS)))
    return results


def fmt_single(nbytes, d):
    return "%.1f ns" % d["ns_per_call"] if nbytes == 8 else "%.2f GB/s" % d["gb_per_s"]


# ---------------------------------------------------------------- 2./3. two processes

def pin(cpu):
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})


def one_process(lib, win, design, chunk, etype, dtype, offset, nelem, duration_s, cpu):
    """This process's share: pin, own incoming buffer, run_for.

    Returns (calls, ns, contended lock acquires, futex sleeps)."""
    pin(cpu)
    incoming = np.ones(nelem, dtype=dtype)
    elapsed = ctypes.c_int64(0)
    check_every = max(1, 2048 // nelem)
    calls = lib.run_for(design, etype, incoming.ctypes.data, win.base + offset, nelem,
                        int(duration_s * 1e9), check_every, win.ctl, win.base, chunk, 2,
                        ctypes.byref(elapsed))
    if calls < 0:
        raise RuntimeError("the other process never reached the start barrier")
    stats = (ctypes.c_int64 * 2)()
    lib.lock_stats(stats)
    return calls, elapsed.value, stats[0], stats[1]


def contend(lib, win, cpus, design, chunk, etype, dtype, mode, duration_s):
    """Parent and a forked child accumulate concurrently.  mode: same, disjoint, one."""
    total = TARGET_BYTES // 8
    if mode == "same":
        shares = [(0, total), (0, total)]
    elif mode == "disjoint":
        shares = [(0, total // 2), (total // 2 * 8, total // 2)]
    else:
        shares = [(0, 1), (0, 1)]
    win.reset()
    saved = os.sched_getaffinity(0)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(rfd)
            got = one_process(lib, win, design, chunk, etype, dtype, shares[1][0],
                              shares[1][1], duration_s, cpus[1])
            os.write(wfd, ("%d %d %d %d" % got).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    try:
        mine = one_process(lib, win, design, chunk, etype, dtype, shares[0][0], shares[0][1],
                           duration_s, cpus[0])
        deadline = time.time() + CHILD_TIMEOUT_S
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                pid = 0
                break
            if time.time() > deadline:
                raise RuntimeError("contention child did not finish")
            time.sleep(0.005)
        if status != 0:
            raise RuntimeError("contention child failed (status %d)" % status)
        with os.fdopen(rfd, "rb") as f:
            rfd = None
            theirs = tuple(int(x) for x in f.read().split())
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        if rfd is not None:
            os.close(rfd)
        os.sched_setaffinity(0, saved)
    counts = (mine[0], theirs[0])
    # every element must hold the number of calls that covered it
    expected = np.zeros(total, dtype=np.int64)
    for (off, n), c in zip(shares, counts):
        expected[off // 8: off // 8 + n] += c
    covered = slice(0, max(off // 8 + n for off, n in shares))
    got = win.target(dtype)[covered]
    want = expected[covered]
    exact = bool(np.array_equal(got, want.astype(dtype)))
    lost = float((want - got.astype(np.int64)).sum() / max(1, want.sum()))
    span_ns = max(mine[1], theirs[1])
    bytes_done = sum(c * n * 8 for c, (_, n) in zip(counts, shares))
    return {"calls": list(counts), "elapsed_ns": [mine[1], theirs[1]],
            "gb_per_s": bytes_done / span_ns,
            "ns_per_op": [mine[1] / mine[0], theirs[1] / theirs[0]],
            "mops_per_s": sum(counts) / span_ns * 1e3,
            "fairness": min(counts) / max(counts),
            "contended_per_call": (mine[2] + theirs[2]) / sum(counts),
            "sleeps_per_call": (mine[3] + theirs[3]) / sum(counts),
            "exact": exact, "lost_fraction": lost}


def bench_contention(lib, win, cpus, cfg, modes, designs):
    results = {}
    names = [d for d in C_DESIGNS if d[0] in designs]
    for mode in modes:
        for tname, etype, dtype in ETYPES:
            runs = {name: [] for name, _, _ in names}
            for rnd in range(cfg["contention_reps"]):
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                for name, code, chunk in order:
                    r = contend(lib, win, cpus, code, chunk, etype, dtype, mode,
                                cfg["duration_s"])
                    runs[name].append(r)
                    progress("  %-8s %-7s %-5s %d/%d  %s" % (
                        mode, tname, name, rnd + 1, cfg["contention_reps"],
                        ("%.1f ns/op" % statistics.mean(r["ns_per_op"])) if mode == "one"
                        else ("%.2f GB/s" % r["gb_per_s"]))
                        + ("" if r["exact"] else "  LOST %.3g%%" % (100 * r["lost_fraction"])))
            cell = {}
            for name in runs:
                rs = runs[name]
                cell[name] = {
                    "gb_per_s": statistics.median(r["gb_per_s"] for r in rs),
                    "ns_per_op": statistics.median(statistics.mean(r["ns_per_op"]) for r in rs),
                    "mops_per_s": statistics.median(r["mops_per_s"] for r in rs),
                    "ns_per_op_each": [statistics.median(r["ns_per_op"][i] for r in rs)
                                       for i in (0, 1)],
                    "fairness": statistics.median(r["fairness"] for r in rs),
                    "contended_per_call": statistics.median(r["contended_per_call"] for r in rs),
                    "sleeps_per_call": statistics.median(r["sleeps_per_call"] for r in rs),
                    "exact": all(r["exact"] for r in rs),
                    "lost_fraction": max(r["lost_fraction"] for r in rs),
                    "runs": rs}
            results["%s %s" % (mode, tname)] = dict(mode=mode, dtype=tname, designs=cell)
    return results


# ---------------------------------------------------------------- report

def machine_facts(cpus):
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None
    model = "unknown"
    for line in (read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    caches = {}
    for idx in range(5):
        d = "/sys/devices/system/cpu/cpu0/cache/index%d/" % idx
        level, kind, size = read(d + "level"), read(d + "type"), read(d + "size")
        if level and size:
            caches["L%s%s" % (level, {"Data": "d", "Instruction": "i"}.get(kind, ""))] = size
    return {"cpu_model": model, "nproc": os.cpu_count(),
            "usable_cpus": sorted(os.sched_getaffinity(0)),
            "pinned_to": list(cpus) if cpus[0] is not None else None,
            "caches": caches, "platform": platform.platform(),
            "python": sys.version.split()[0], "numpy": np.__version__,
            "hypervisor": "hypervisor" in (read("/proc/cpuinfo") or ""),
            "loadavg_start": os.getloadavg()}


def cpu_snapshot():
    """(busy, steal, total) jiffies of all CPUs from /proc/stat, and this
    process's own CPU time plus its waited-for children's, in jiffies."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    t = os.times()
    own = (t.user + t.system + t.children_user + t.children_system) * os.sysconf("SC_CLK_TCK")
    return user + nice + system + irq + softirq, steal, sum(fields), own


def foreign_load(start, end):
    """Share of the machine's CPU time that other processes (and the hypervisor's
    steal) took between two snapshots: the measurements' noise floor."""
    if start is None or end is None or end[2] <= start[2]:
        return None
    total = end[2] - start[2]
    other = (end[0] - start[0]) - (end[3] - start[3])
    return {"other_processes": max(0.0, other / total), "steal": (end[1] - start[1]) / total}


def print_grid(title, head, rows):
    print()
    print(title)
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    fmt = "  ".join(("%%-%ds" if i < 2 else "%%%ds") % w for i, w in enumerate(widths))
    print(fmt % tuple(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(fmt % tuple(r))


def exact_tag(d):
    return "ok" if d["exact"] else "LOST %.2g%%" % (100 * d["lost_fraction"])


def print_tables(single, contention, latency, cfg):
    rows = []
    for key, v in single.items():
        unit = "ns/call" if v["size"] == 8 else "GB/s"
        rows.append([key.rsplit(" ", 1)[0], v["dtype"], unit] +
                    [fmt_single(v["size"], v["designs"][n]).split()[0] for n in ALL_DESIGNS])
    print_grid("1. one process, target in /dev/shm: 1 element in ns per call (lower is better), "
               "larger in GB/s of target combined (higher is better); median of %d" % cfg["reps"],
               ["size", "dtype", "unit"] + ALL_DESIGNS, rows)

    names = [d[0] for d in C_DESIGNS]
    region = {"same": "same 8 MiB", "disjoint": "disjoint halves"}
    rows, waits = [], []
    for key, v in contention.items():
        d = v["designs"]
        rows.append([region[v["mode"]], v["dtype"]] + [
            "%.2f %s f=%.2f" % (d[n]["gb_per_s"], exact_tag(d[n]), d[n]["fairness"])
            for n in names])
        waits.append([region[v["mode"]], v["dtype"]] + [
            "%.3g / %.3g" % (d[n]["contended_per_call"], d[n]["sleeps_per_call"])
            for n in ("B", "C4K", "C64K")])
    print_grid("2. two processes into one 8 MiB target for %.2g s each: aggregate GB/s; ok = final "
               "sums exact (else LOST: share of updates lost); f = fewer calls / more calls of the "
               "two processes (1 fair, 0 one starved); median of %d"
               % (cfg["duration_s"], cfg["contention_reps"]), ["region", "dtype"] + names, rows)
    print_grid("   lock waits per call, both processes: acquires that found the lock held / "
               "futex sleeps (a call takes 1 B lock; on 8 MiB 2048 C4K or 128 C64K stripes, "
               "on a 4 MiB half 1024 or 64)",
               ["region", "dtype", "B", "C4K", "C64K"], waits)

    lat_names = list(next(iter(latency.values()))["designs"])
    rows = []
    for key, v in latency.items():
        d = v["designs"]
        rows.append(["same element", v["dtype"]] + [
            "%.3g/%.3g ns, %.1f Mop/s %s f=%.2f" % (
                d[n]["ns_per_op_each"][0], d[n]["ns_per_op_each"][1], d[n]["mops_per_s"],
                exact_tag(d[n]), d[n]["fairness"]) for n in lat_names])
    print_grid("3. two processes, 1-element accumulates on the same element: ns per op seen by "
               "each process (parent/child), aggregate Mop/s, exactness, fairness; median of %d"
               % cfg["contention_reps"], ["region", "dtype"] + lat_names, rows)


def conclusions(single, contention, latency):
    """Sentences computed from the numbers only."""
    out = []
    for tname, _, _ in ETYPES:
        one = single["8 B %s" % tname]["designs"]
        a, b = one["A"]["ns_per_call"], one["B"]["ns_per_call"]
        lat = latency["one %s" % tname]["designs"]
        out.append(
            "(i) 1 element, %s: alone A %.1f ns, B %.1f ns per call (B/A %.2f; numpy from Python "
            "%.0f ns); both processes on one element: aggregate A %.1f, B %.1f Mop/s "
            "(A/B %.2f), fairness A %.2f, B %.2f."
            % (tname, a, b, b / a, one["numpy"]["ns_per_call"], lat["A"]["mops_per_s"],
               lat["B"]["mops_per_s"], lat["A"]["mops_per_s"] / lat["B"]["mops_per_s"],
               lat["A"]["fairness"], lat["B"]["fairness"]))
    for label in ("1 MiB", "8 MiB"):
        for tname, _, _ in ETYPES:
            d = single["%s %s" % (label, tname)]["designs"]
            ref = d["numpy"]["gb_per_s"]
            parts = ", ".join("%s %.0f%%" % (n, 100 * d[n]["gb_per_s"] / ref)
                              for n in ALL_DESIGNS[:-1])
            close = [n for n in LOCKED if d[n]["gb_per_s"] >= (1 - WITHIN) * ref]
            big = single["%s %s" % (label, tname)]["size"] // 8
            per_elem = (d["A"]["ns_per_call"] / big) / (d["B"]["ns_per_call"] / big)
            out.append("(ii) %s %s alone, GB/s as %% of numpy (%.2f GB/s): %s; correct designs "
                       "within %d%% of numpy: %s; lock cost B/N %.2f; per-element cost A/B %.2f."
                       % (label, tname, ref, parts, 100 * WITHIN,
                          ", ".join(close) or "none", d["B"]["gb_per_s"] / d["N"]["gb_per_s"],
                          per_elem))
    for key, v in contention.items():
        d = v["designs"]
        ok = [n for n in LOCKED if d[n]["exact"]]
        wrong = [n for n in LOCKED if not d[n]["exact"]]
        best = max(ok, key=lambda n: d[n]["gb_per_s"]) if ok else None
        floor = d["N"]["gb_per_s"]
        text = ("(iii) %s %s: " % ({"same": "same 8 MiB", "disjoint": "disjoint halves"}[v["mode"]],
                                   v["dtype"]))
        if best:
            text += "fastest exact design %s %.2f GB/s; " % (best, d[best]["gb_per_s"])
        text += ", ".join("%s %.0f%%" % (n, 100 * d[n]["gb_per_s"] / d[best]["gb_per_s"])
                          for n in LOCKED if n != best) + " of it"
        starved = [n for n in LOCKED if d[n]["fairness"] < 0.5]
        if starved:
            text += "; unfair (one process got under half the other's calls): %s" % (
                ", ".join("%s f=%.2f" % (n, d[n]["fairness"]) for n in starved))
        text += "; unlocked N %.2f GB/s %s" % (floor, "exact" if d["N"]["exact"] else
                                                "but LOST %.2g%% of the updates"
                                                % (100 * d["N"]["lost_fraction"]))
        if wrong:
            text += "; NOT EXACT: %s" % ", ".join(wrong)
        out.append(text + ".")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter loops (under ~15 s)")
    ap.add_argument("--json", metavar="FILE", help="write raw numbers and machine facts")
    opts = ap.parse_args()
    cfg = dict(QUICK if opts.quick else FULL)

    # SIGTERM unwinds like Ctrl-C, so the finally clauses kill the child and clean up
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    usable = sorted(os.sched_getaffinity(0))
    cpus = (usable[0], usable[1]) if len(usable) >= 2 else (None, None)
    facts = machine_facts(cpus)
    started, snap = time.time(), cpu_snapshot()
    tmpdir = tempfile.mkdtemp(prefix="shmrma-bench-acc-")
    win = None
    try:
        lib, cc = build(tmpdir)
        facts.update(cc)
        win = Window(lib)
        progress("1. single process (calibrate, then %d rounds per size and type)" % cfg["reps"])
        single = bench_single(lib, win, cfg)
        progress("2. two processes, 8 MiB target, %.2g s per run" % cfg["duration_s"])
        contention = bench_contention(lib, win, cpus, cfg, ("same", "disjoint"),
                                      [d[0] for d in C_DESIGNS])
        progress("3. two processes, one element")
        latency = bench_contention(lib, win, cpus, cfg, ("one",), ("A", "B"))
    finally:
        if win is not None:
            win.close()
        shutil.rmtree(tmpdir, ignore_errors=True)
    facts["loadavg_end"] = os.getloadavg()
    facts["foreign_cpu"] = foreign_load(snap, cpu_snapshot())
    facts["elapsed_s"] = round(time.time() - started, 1)

    print("accumulate designs on %s (%s CPUs%s; caches %s), %s"
          % (facts["cpu_model"], facts["nproc"], ", virtual machine" if facts["hypervisor"]
             else "", " ".join("%s %s" % kv for kv in facts["caches"].items()) or "unknown",
             facts["platform"]))
    print("Python %s, numpy %s, %s (%s); vectorized: %s"
          % (facts["python"], facts["numpy"], facts["cc"], facts["cc_version"],
             "; ".join(sorted(set(facts["vectorized_loops"]))) or "no report"))
    foreign = facts["foreign_cpu"]
    print("contention runs pinned to CPUs %s; load average %.2f at start, %.2f at end; %.1f s%s"
          % (facts["pinned_to"] or "(not pinned: one CPU)", facts["loadavg_start"][0],
             facts["loadavg_end"][0], facts["elapsed_s"], " (--quick)" if opts.quick else ""))
    if foreign is not None:
        print("while it ran, other processes used %.0f%% and the hypervisor stole %.0f%% of the "
              "machine's CPU time (the more, the noisier the numbers)"
              % (100 * foreign["other_processes"], 100 * foreign["steal"]))
    print("A atomics per element, B one lock per target (shmrma), C4K/C64K striped locks "
          "(64 stripes), N no lock (floor), numpy np.add(t, a, out=t) from Python")
    print_tables(single, contention, latency, cfg)
    print()
    print("conclusion (from the numbers above):")
    lines = conclusions(single, contention, latency)
    for line in lines:
        print("  " + line)

    if opts.json:
        doc = {"facts": facts, "options": dict(cfg, quick=opts.quick),
               "results": {"single": single, "contention": contention, "latency": latency},
               "conclusion": lines}
        os.makedirs(os.path.dirname(os.path.abspath(opts.json)), exist_ok=True)
        with open(opts.json, "w") as f:
            json.dump(doc, f, indent=2)
        print("raw numbers: %s" % opts.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
