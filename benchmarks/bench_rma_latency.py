#!/usr/bin/env python
"""Latency of 8-byte one-sided calls, shmrma against mpi4py on MPICH, side by side.

    python benchmarks/bench_rma_latency.py [--iterations N] [--quick] [--json FILE]
                                           [--shmrma-path DIR]

OSU-style ``-s flush`` latency (osu_put_latency and friends): the window comes
from Win.Allocate; rank 0 locks rank 1 once, then loops ``op; Flush(1)``.
``programs/rma_latency.py`` runs every op (Put, Get, Accumulate SUM,
Fetch_and_op SUM, Compare_and_swap) with a warm-up of N/10 iterations before
the N timed ones, under ``shmrma-run -n 2`` and under ``mpiexec -n 2 python``
(BENCH_IMPL=mpi4py). One warm-up run of each launcher (it also creates the
bytecode caches), then 3 runs of each, alternating and swapping order every
round; the table gives the median µs per op+Flush pair and the ratio shmrma /
mpi4py against the target (at most 0.25, issue 3).

Child processes run without PYTHONDONTWRITEBYTECODE (real users have bytecode
caches). ``--shmrma-path DIR`` runs the shmrma side from another checkout (for
before/after comparisons: DIR goes first on PYTHONPATH). Progress goes to
stderr; ``--json FILE`` writes every raw number plus the machine facts.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_runtime as common  # noqa: E402  (shared launcher and report helpers)

PROGRAM = "rma_latency.py"
OPS = (("put", "Put"), ("get", "Get"), ("acc", "Accumulate SUM"),
       ("fop", "Fetch_and_op SUM"), ("cas", "Compare_and_swap"))
TARGET_RATIO = 0.25
REPS = 3
TIMEOUT_S = 600


def parse_latencies(out):
    """{op: us} from the program's output, plus "module": the package it imported."""
    found = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key == "module":
            found["module"] = value
        elif key.endswith("_us") and key[:-3] in dict(OPS):
            found[key[:-3]] = float(value)
    missing = [op for op, _ in OPS if op not in found]
    if missing:
        raise common.RunFailed("no latency for %s in output: %r" % (missing, out[-500:]))
    return found


def commands(impls, iterations):
    return {impl: common.launcher_argv(impl, 2, PROGRAM, [iterations]) for impl in impls}


def env_for(impl, shmrma_path):
    env = common.child_env(impl)
    if impl == "shmrma" and shmrma_path:
        # the launcher is the console script, so no current directory shadows DIR
        env["PYTHONPATH"] = os.pathsep.join(
            [os.path.abspath(shmrma_path)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def run_rounds(cmds, shmrma_path, reps):
    """Warm-up run of each, then `reps` alternating rounds: {impl: [{op: us}]}."""
    names = list(cmds)
    samples = {name: [] for name in names}
    for rnd in range(-1, reps):
        for name in (names if rnd % 2 == 0 else names[::-1]):
            wall, out = common.run_once(cmds[name], env_for(name, shmrma_path), TIMEOUT_S)
            values = parse_latencies(out)
            label = "warm-up" if rnd < 0 else "%d/%d" % (rnd + 1, reps)
            common.progress("  %-7s %-7s %s  (%.2f s, %s)" % (name, label, "  ".join(
                "%s %.3f" % (op, values[op]) for op, _ in OPS), wall, values.get("module")))
            if rnd >= 0:
                samples[name].append(values)
    return samples


def summarize(samples):
    return {impl: dict({op: {"median": statistics.median(run[op] for run in runs),
                             "raw": [run[op] for run in runs]} for op, _ in OPS},
                       module=runs[0]["module"])
            for impl, runs in samples.items()}


def table_rows(summary):
    rows = []
    for op, title in OPS:
        mine = summary["shmrma"][op]["median"]
        other = summary.get("mpi4py", {}).get(op, {}).get("median")
        rows.append({"metric": "%s + Flush, 8 B, us" % title, "shmrma": "%.3f" % mine,
                     "mpi4py": "%.3f" % other if other else None,
                     "ratio": mine / other if other else None, "target": TARGET_RATIO})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=100000,
                    help="timed iterations per op (default 100000; 20000 with --quick)")
    ap.add_argument("--quick", action="store_true", help="20000 iterations per op")
    ap.add_argument("--json", metavar="FILE", help="write raw numbers and machine facts")
    ap.add_argument("--shmrma-path", metavar="DIR",
                    help="run the shmrma side from this checkout (first on PYTHONPATH)")
    opts = ap.parse_args()
    iterations = 20000 if opts.quick else opts.iterations

    common.TOOLS["mpiexec"], missing = common.have_mpi4py()
    impls = ["shmrma"] if missing else ["shmrma", "mpi4py"]
    if missing:
        print("%s: measuring shmrma alone; install the references with `%s`"
              % (missing, common.INSTALL_HINT), flush=True)
    facts = common.machine_facts(not missing)
    facts["shmrma_path"] = os.path.abspath(opts.shmrma_path) if opts.shmrma_path else None

    started = time.time()
    cmds = commands(impls, iterations)
    common.progress("8-byte RMA latency (-s flush), 2 ranks, %d iterations per op: "
                    "1 warm-up run each, then %d alternating runs" % (iterations, REPS))
    summary = summarize(run_rounds(cmds, opts.shmrma_path, REPS))
    facts["loadavg_end"] = os.getloadavg()
    facts["elapsed_s"] = round(time.time() - started, 1)

    print()
    print("%s on %s (%s CPUs), Python %s, shmrma backend %s%s"
          % ("shmrma vs mpi4py %s on %s" % (facts["mpi4py"], facts["mpi_library"])
             if facts["mpi_library"] else "shmrma alone", facts["cpu_model"], facts["nproc"],
             facts["python"], facts["shmrma_native_backend"],
             ", shmrma from %s" % facts["shmrma_path"] if facts["shmrma_path"] else ""))
    print("load average %.2f at start, %.2f at end (the machine may be shared)"
          % (facts["loadavg_start"][0], facts["loadavg_end"][0]))
    print("osu -s flush: Win.Allocate, Lock(1, SHARED) once, then op + Flush(1); "
          "%d iterations after %d warm-up; median of %d alternating runs; "
          "PYTHONDONTWRITEBYTECODE removed from the child environment"
          % (iterations, max(10, iterations // 10), REPS))
    rows = table_rows(summary)
    common.print_table(rows)

    if opts.json:
        common.write_report(opts.json, facts, {"iterations": iterations, "reps": REPS,
                                               "argv": cmds}, summary, rows)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except common.RunFailed as exc:
        print("bench_rma_latency: a run failed: %s" % exc, file=sys.stderr)
        sys.exit(1)
