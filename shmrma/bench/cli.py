"""``shmrma-bench``: OSU-style one-sided benchmarks on 2 ranks, shmrma beside
mpi4py on MPICH."""
import argparse
import subprocess
import sys

from .. import __version__
from . import jobs
from . import options as osu

USAGE = """\
usage: shmrma-bench NAME [OMB options] [--impl shmrma|shmrma-mpi|mpi4py|numpy]
       shmrma-bench compare [--suite all|windows|sync|counters|memory|sweep|scaling|messages|
                                    check|observe|programs]
                            [--quick] [--reps N] [--json FILE] [--plot FILE.png]
                            [--results FILE.md]
       shmrma-bench timeline TRACE.json OUT.png [--window START:END] [--title TEXT]
       shmrma-bench list
       shmrma-bench --version

Runs the OSU Micro-Benchmarks' one-sided tests (OMB 7.x conventions and
output) on two ranks it starts itself.

  NAME        one of: {names}
              `shmrma-bench NAME --help` lists its OMB options (-w, -s, -m, -i,
              -x, -T, -W).
  --impl      shmrma (default); shmrma-mpi: shmrma's code path on the mpi
              backend (shmrma-run --backend mpi); mpi4py: the same program
              under MPICH's mpiexec (both need {hint}); numpy: the
              memory-copy reference, one process, put/get/acc only
  compare     the targets, shmrma beside the references (alternating runs,
              medians, ratios): 8-byte latency of every call with -s flush,
              4 MiB put/get bandwidth, 8 MiB float64 accumulate (suite windows);
              fence, PSCW and lock rounds at 2, 4 and 8 ranks and OSU's sync
              modes (suite sync); a Put plus its notification with the
              proposal's counters and with MPI-3 calls, and the halo exchange,
              the counters on both backends (suite counters); the PSS, RSS
              and shared memory of a job with a 16 MiB window at 2, 4 and 8
              ranks (suite memory);
              put/get latency and bandwidth at every size from 1 B to 4 MiB
              (suite sweep, what --plot draws);
              every synchronization form, the window barrier, a counter
              token ring and accumulates to one target at 2, 4, 8 and 16
              ranks, the accumulates also as Mops/s of all ranks together
              (suite scaling); OSU's point-to-point and collective tests
              (shmrma/bench/messages.py: Send/Recv latency and bandwidth at
              every size, Allreduce, Bcast and Barrier at 2-16 ranks, 1 MiB
              Allreduce), their object forms, a message-passing halo, the
              vector collectives with array('i') counts, and making
              communicators and types (suite messages); the halos and the 8-byte put with and
              without shmrma-run --check (suite check), and with and without
              --trace and --profile (suite observe); whole programs as
              their users run them: mpi4py's demo benchmarks (demo/osu_*.py
              of its source distribution, fetched once into ~/.cache/shmrma)
              and a pencil transpose with Create_cart, Sub and Alltoallw,
              their wall time and printed figures (suite programs);
              --json FILE: every row's median, min, max,
              noisy flag and ratio as numbers, the sweeps per size and the
              machine facts
  timeline    draw a trace of shmrma-run --trace as a per-rank timeline
              (PNG; needs matplotlib): a lane per rank and thread, a bar per
              MPI call, hatched where it waited, the trace's arrows;
              --window START:END in ms
  list        the benchmarks and the sync modes each accepts
  --version   print shmrma's version and exit
"""


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE.format(names=", ".join(osu.BENCHMARKS), hint=jobs.INSTALL_HINT),
              file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        print("shmrma-bench (shmrma) %s" % __version__)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "list":
        for bench in osu.BENCHMARKS.values():
            print("%-20s %-9s -w %s, -s %s (allowed: %s)" % (
                bench.name, bench.kind, bench.window, bench.sync, " ".join(bench.syncs)))
        return 0
    if command == "compare":
        return compare_command(rest)
    if command == "timeline":
        from . import timeline
        return timeline.main(rest)
    return benchmark_command(command, rest)


def benchmark_command(name, argv):
    try:
        impl, argv = take_impl(argv)
        bench, _ = osu.parse(name, argv)   # usage errors and --help here, before any launch
        if impl == "numpy" and bench.op not in ("put", "get", "acc"):
            raise osu.UsageError("--impl numpy is a reference for put, get and acc only")
    except osu.UsageError as exc:
        print("shmrma-bench: %s" % exc, file=sys.stderr)
        return 2
    if impl in ("mpi4py", "shmrma-mpi"):
        missing = jobs.reference_missing()
        if missing:
            print("shmrma-bench: %s; install it with `%s`" % (missing, jobs.INSTALL_HINT),
                  file=sys.stderr)
            return 2
    command = jobs.launcher_argv(impl, 2, ["-m", "shmrma.bench.osu", name] + argv)
    try:
        return subprocess.call(command, env=jobs.child_env(impl))
    except KeyboardInterrupt:
        return 130


IMPLS = ("shmrma", "shmrma-mpi", "mpi4py", "numpy")


def take_impl(argv):
    """(impl, the other arguments): --impl X or --impl=X anywhere in argv."""
    impl, rest, items = "shmrma", [], list(argv)
    while items:
        item = items.pop(0)
        if item == "--impl" or item.startswith("--impl="):
            impl = item.partition("=")[2] or (items.pop(0) if items else "")
            if impl not in IMPLS:
                raise osu.UsageError("--impl takes %s or %s, not %r"
                                     % (", ".join(IMPLS[:-1]), IMPLS[-1], impl))
        else:
            rest.append(item)
    return impl, rest


def compare_command(argv):
    from . import compare
    ap = argparse.ArgumentParser(prog="shmrma-bench compare",
                                 description=compare.__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer iterations per run: at most 2000 (latency) or 5 "
                         "(bandwidth) per size, or OMB's default where it is lower")
    ap.add_argument("--suite", choices=sorted(compare.SUITES), default="all",
                    help="windows: the communication calls and bandwidth; sync: fence, "
                         "PSCW and lock rounds at 2, 4 and 8 ranks and OSU's sync modes; "
                         "counters: notification latency and halo exchange; memory: job "
                         "PSS, RSS and shared memory; sweep: latency and bandwidth at "
                         "every size; scaling: synchronization at 2-16 ranks, accumulate "
                         "rate in Mops/s; messages: point-to-point and collectives; check: "
                         "the halos and the put latency with and without the race checker "
                         "(default: all)")
    ap.add_argument("--reps", type=int, default=compare.REPS, metavar="N",
                    help="alternating rounds after the warm-up (default %(default)s)")
    ap.add_argument("--json", metavar="FILE",
                    help="write the raw numbers, every row's median, min, max, noisy flag "
                         "and ratio, the sweeps per size, and the machine facts")
    ap.add_argument("--plot", metavar="FILE.png",
                    help="draw the sweeps (latency and bandwidth against message size, "
                         "ratio below); needs matplotlib, the plot extra "
                         "(pip install -e \".[plot]\"), checked before anything runs")
    ap.add_argument("--results", metavar="FILE.md",
                    help="write the table, the sweeps and the machine facts as Markdown "
                         "(benchmarks/RESULTS.md), with the plot beside it when matplotlib "
                         "is installed")
    ap.add_argument("--shmrma-path", metavar="DIR",
                    help="run the shmrma side from this checkout (first on PYTHONPATH), "
                         "for before/after comparisons")
    opts = ap.parse_args(argv)
    if opts.reps < 1:
        ap.error("--reps must be at least 1")
    try:
        return compare.run(opts)
    except jobs.RunFailed as exc:
        print("shmrma-bench compare: a run failed: %s" % exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
