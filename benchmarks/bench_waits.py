#!/usr/bin/env python
"""What a long wait costs the waiting rank: CPU time against wall time.

    python benchmarks/bench_waits.py [--delay S] [--reps N] [--spin US ...]

The one wait policy (README "How ranks wait") spins on its word SHMRMA_SPIN
microseconds, yields, then sleeps on a futex; a long wait spins once, at its
start, not again at each slice. So a rank that waits DELAY seconds (0.4 by
default) for a late peer in Recv, Barrier, Win.Wait, Lock or a counter's
Sync_object Wait should burn about one spin of CPU, whatever DELAY is: the
table gives the median wall and CPU seconds of REPS waits of each kind
(programs/waits.py, 2 ranks under shmrma-run), once per spin setting ("default"
and a 100 ms spin, which makes one spin and two easy to tell apart). "ok" marks
a CPU time within one spin plus 25 ms, "OVER" one beyond it.

Last, the voluntary context switches of a Sync_object Wait of count 2 asleep on
its counter while two signals come: 1 when only the signal that completes the
wait wakes it (csrc/counters.c), more when the first wakes it too.

These are measurements, not tests: run them on an idle machine.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from shmrma.bench.jobs import (  # noqa: E402  (after the path set-up)
    RunFailed, child_env, launcher_argv, run_once)

SLACK_S = 0.025
TIMEOUT_S = 300


def measure(spin_us, delay, reps):
    """{"spin": (us, yields), "wait": {kind: (wall, cpu)}, "switches": n} of one job."""
    env = child_env("shmrma")
    if spin_us is not None:
        env["SHMRMA_SPIN"] = str(spin_us)
    argv = launcher_argv("shmrma", 2, [os.path.join(HERE, "programs", "waits.py"),
                                       delay, reps])
    _, out = run_once(argv, env, TIMEOUT_S, cwd=ROOT)
    found = {"wait": {}}
    for line in out.splitlines():
        words = line.split()
        if words[:1] == ["spin"]:
            found["spin"] = (int(words[1]), int(words[2]))
        elif words[:1] == ["wait"]:
            found["wait"][words[1]] = (float(words[2]), float(words[3]))
        elif words[:1] == ["switches"]:
            found["switches"] = float(words[2])
    if "spin" not in found or "switches" not in found:
        raise RunFailed("unexpected output: %r" % out[-500:])
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--delay", type=float, default=0.4, help="seconds each wait lasts")
    ap.add_argument("--reps", type=int, default=5, help="waits of each kind (median)")
    ap.add_argument("--spin", type=int, nargs="*", default=[None, 100000],
                    help="SHMRMA_SPIN values in microseconds (default: the default, "
                         "and 100000)")
    opts = ap.parse_args()
    head = "%-18s %-14s %8s %8s  %s" % ("wait", "spin", "wall s", "CPU s", "one spin + 25 ms")
    print("each wait lasts about %.2f s; median of %d; %d cpus, load %.2f"
          % (opts.delay, opts.reps, os.cpu_count(), os.getloadavg()[0]))
    print(head)
    print("-" * len(head))
    switches = []
    for spin in opts.spin:
        found = measure(spin, opts.delay, opts.reps)
        spin_us, yields = found["spin"]
        label = "%d us, %d y" % (spin_us, yields)
        for kind, (wall, cpu) in found["wait"].items():
            verdict = "ok" if cpu <= spin_us * 1e-6 + SLACK_S else "OVER"
            print("%-18s %-14s %8.3f %8.4f  %s" % (kind, label, wall, cpu, verdict))
        switches.append(found["switches"])
    print()
    print("Sync_object Wait of count 2, voluntary context switches (1 expected): %s"
          % ", ".join("%g" % n for n in switches))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RunFailed as exc:
        print("bench_waits: a run failed: %s" % exc, file=sys.stderr)
        sys.exit(1)
