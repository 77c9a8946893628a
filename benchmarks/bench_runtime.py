#!/usr/bin/env python
"""Runtime cost of shmrma against mpi4py on MPICH, side by side on this machine.

    python benchmarks/bench_runtime.py [--quick] [--json FILE]

Start-up: wall time of ``shmrma-run -n 4 programs/trivial.py`` against
``mpiexec -n 4 python programs/trivial.py`` (BENCH_IMPL=mpi4py): one warm-up
run each, then R repetitions (9, or 5 with --quick), the two launchers
alternating and swapping order every round; median and min wall seconds.

Barrier: ``programs/barrier.py`` at 2, 4 and 8 ranks (8 oversubscribes a
2-core machine) under both.  Short calibration runs per implementation and
size (x10 iterations until the loop lasts 0.05 s; they are also the warm-up)
pick an iteration count that keeps the timed loop near TARGET_LOOP_S; then 3
alternating runs, median of the µs per Barrier that rank 0 prints.

The table gives shmrma / mpi4py ratios of the medians against the targets
(start-up at most 0.5, Barrier at most 0.5 at every size).  Progress goes to
stderr, one line per measurement.  --json FILE writes every raw number plus
the machine facts.

Child processes run without PYTHONDONTWRITEBYTECODE: with it set, every start
recompiles shmrma's .py files, which real users (who have bytecode caches) never
pay; the warm-up runs create the caches.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = os.path.join(HERE, "programs")
sys.path.insert(0, ROOT)

from shmrma.bench.jobs import (  # noqa: E402  (after the path set-up)
    INSTALL_HINT, RunFailed, child_env, describe, launcher_argv as job_argv, machine_facts,
    print_table, progress, reference_missing, run_once, write_report)

TARGET_RATIO = 0.5
STARTUP_RANKS = 4
BARRIER_SIZES = (2, 4, 8)
BARRIER_REPS = 3
CALIBRATION_ITERS = 100
CALIBRATION_MIN_S = 0.05      # a calibration run's loop must last this long
TARGET_LOOP_S = 1.5          # timed loop of one barrier run; plus ~10% warm-up and start-up
MIN_ITERS, MAX_ITERS = 20, 10 ** 7
STARTUP_TIMEOUT_S = 60
BARRIER_TIMEOUT_S = 300


def launcher_argv(impl, nranks, program, args=()):
    """The command line that runs benchmarks/programs/`program` under `impl`."""
    return job_argv(impl, nranks, [os.path.join(PROGRAMS, program)] + list(args))


def run_alternating(label, cmds, reps, timeout, parse=None):
    """Run every command of `cmds` ({impl: argv}) `reps` times, alternating.

    Each round runs all commands once; the order is reversed on odd rounds so
    neither implementation always goes first.  Returns {impl: [samples]}, where
    a sample is the wall time in seconds, or parse(stdout) when parse is given.
    """
    names = list(cmds)
    samples = {name: [] for name in names}
    for rnd in range(reps):
        for name in (names if rnd % 2 == 0 else names[::-1]):
            wall, out = run_once(cmds[name], child_env(name), timeout, cwd=ROOT)
            value = parse(out) if parse else wall
            samples[name].append(value)
            shown = ("%.3f s" % wall) if parse is None else ("%.3f us  (%.2f s)" % (value, wall))
            progress("  %-14s %-7s %d/%d  %s" % (label, name, rnd + 1, reps, shown))
    return samples


def parse_barrier(out):
    for line in out.splitlines():
        if line.startswith("barrier_us"):
            return float(line.split()[1])
    raise RunFailed("no 'barrier_us' line in output: %r" % out[-500:])


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "raw": values}


# ---------------------------------------------------------------- benchmarks

def bench_startup(impls, reps):
    cmds = {impl: launcher_argv(impl, STARTUP_RANKS, "trivial.py") for impl in impls}
    progress("start-up, %d ranks: 1 warm-up each (creates bytecode caches), then %d "
             "alternating runs" % (STARTUP_RANKS, reps))
    run_alternating("startup-warmup", cmds, 1, STARTUP_TIMEOUT_S)
    times = run_alternating("startup", cmds, reps, STARTUP_TIMEOUT_S)
    return {impl: dict(summary(times[impl]), argv=cmds[impl]) for impl in impls}


def calibrate(impl, nranks):
    """Iteration count that keeps the timed Barrier loop near TARGET_LOOP_S.

    Runs of CALIBRATION_ITERS, x10 until the loop lasts CALIBRATION_MIN_S (so
    the estimate is not just noise); these runs are also the warm-up.
    Returns (iterations, [(iterations, us) of each calibration run]).
    """
    runs, n = [], CALIBRATION_ITERS
    while True:
        _, out = run_once(launcher_argv(impl, nranks, "barrier.py", [n]), child_env(impl),
                          BARRIER_TIMEOUT_S, cwd=ROOT)
        us = parse_barrier(out)
        runs.append((n, us))
        progress("  %-14s %-7s %d iterations  %.3f us" % ("calibrate n=%d" % nranks, impl, n, us))
        if n * us * 1e-6 >= CALIBRATION_MIN_S or n >= MAX_ITERS:
            break
        n *= 10
    iters = int(TARGET_LOOP_S / (us * 1e-6))
    return max(MIN_ITERS, min(MAX_ITERS, iters)), runs


def bench_barrier(impls, nranks):
    progress("Barrier, %d ranks: calibration (also the warm-up), then %d alternating runs"
             % (nranks, BARRIER_REPS))
    calib = {impl: calibrate(impl, nranks) for impl in impls}
    cmds = {impl: launcher_argv(impl, nranks, "barrier.py", [calib[impl][0]]) for impl in impls}
    us = run_alternating("barrier n=%d" % nranks, cmds, BARRIER_REPS, BARRIER_TIMEOUT_S,
                         parse=parse_barrier)
    return {impl: dict(summary(us[impl]), iterations=calib[impl][0],
                       calibration=calib[impl][1]) for impl in impls}


# ---------------------------------------------------------------- report

def table_rows(results):
    rows = []
    st = results["startup"]
    rows.append(row("start-up n=%d, median s (min)" % STARTUP_RANKS, st,
                    lambda d: "%.3f (%.3f)" % (d["median"], d["min"])))
    for n, b in results["barrier"].items():
        rows.append(row("Barrier n=%s, us" % n, b, lambda d: "%.2f" % d["median"]))
    return rows


def row(metric, data, show):
    other = data.get("mpi4py")
    return {
        "metric": metric,
        "shmrma": show(data["shmrma"]),
        "mpi4py": show(other) if other else None,
        "ratio": data["shmrma"]["median"] / other["median"] if other else None,
        "target": TARGET_RATIO,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 start-up repetitions instead of 9")
    ap.add_argument("--json", metavar="FILE", help="write raw numbers and machine facts")
    opts = ap.parse_args()

    missing = reference_missing()
    impls = ["shmrma"] if missing else ["shmrma", "mpi4py"]
    if missing:
        print("%s: measuring shmrma alone; install the references with `%s`"
              % (missing, INSTALL_HINT), flush=True)
    facts = machine_facts(not missing)
    reps = 5 if opts.quick else 9

    started = time.time()
    results = {"startup": bench_startup(impls, reps), "barrier": {}}
    for n in BARRIER_SIZES:
        results["barrier"][n] = bench_barrier(impls, n)
    facts["loadavg_end"] = os.getloadavg()
    facts["elapsed_s"] = round(time.time() - started, 1)

    print()
    print(describe(facts))
    print("start-up: %d runs each after 1 warm-up (bytecode caches present, "
          "PYTHONDONTWRITEBYTECODE removed); Barrier: median of %d runs of ~%.1f s"
          % (reps, BARRIER_REPS, TARGET_LOOP_S))
    rows = table_rows(results)
    print_table(rows)
    print("ratio = shmrma / mpi4py as a time: below 1 shmrma is faster; a row passes "
          "when its ratio is at most its target")

    if opts.json:
        write_report(opts.json, facts, {"quick": opts.quick, "startup_reps": reps,
                                        "barrier_reps": BARRIER_REPS,
                                        "target_loop_s": TARGET_LOOP_S}, results, rows)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RunFailed as exc:
        print("bench_runtime: a run failed: %s" % exc, file=sys.stderr)
        sys.exit(1)
