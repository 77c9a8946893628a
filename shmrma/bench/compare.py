"""``shmrma-bench compare``: the OSU benchmarks on shmrma and on the references
in one invocation, alternating, with ratios against the targets.

Every case is one OSU benchmark at one message size. Each implementation runs
it as its own job (``shmrma-run -n 2``, ``mpiexec -n 2``, or one process for
the numpy copy reference); one warm-up round of every job first (it also
writes the bytecode caches), then REPS rounds, the order of the
implementations reversed every round so none always goes first. The table
holds medians; a case whose min-max spread exceeds NOISY of its median is
flagged, since a shared machine drifts between runs.
"""
import os
import re
import statistics
import time

from . import jobs

REPS = 3
QUICK_ITERATIONS = {"latency": 2000, "bw": 5}
NOISY = 0.25
TIMEOUT_S = 600
ROW = re.compile(r"^(\d+)\s+(\d+\.\d+)\s*$")
MIB = 1 << 20


class Case:
    """One row group: a benchmark at one size, and what it is held against."""

    nranks = 2

    def __init__(self, title, name, size, flags=(), against_mpi4py=None, numpy_at_least=None):
        self.title, self.name, self.size = title, name, size
        self.flags = ["-m", "%d:%d" % (size, size)] + list(flags)
        self.against_mpi4py, self.numpy_at_least = against_mpi4py, numpy_at_least
        self.bandwidth = name.endswith(("_bw", "_bibw"))

    def impls(self, have_reference):
        out = ["shmrma"] + (["mpi4py"] if have_reference else [])
        return out + (["numpy"] if self.numpy_at_least else [])

    def program(self, quick):
        flags = list(self.flags)
        if quick:
            flags += ["-i", str(QUICK_ITERATIONS["bw" if self.bandwidth else "latency"])]
        return ["-m", "shmrma.bench.osu", self.name] + flags

    def argv(self, impl, quick):
        return jobs.launcher_argv(impl, self.nranks, self.program(quick))

    def value(self, out):
        return value_at(out, self.size)

    def describe(self):
        return {"title": self.title, "program": self.program(False), "ranks": self.nranks,
                "against_mpi4py": self.against_mpi4py, "numpy_at_least": self.numpy_at_least}


class SyncCase(Case):
    """A synchronization round at N ranks (shmrma/bench/sync.py), against mpi4py."""

    def __init__(self, title, kind, nranks, against_mpi4py=None):
        self.title, self.kind, self.nranks = title, kind, nranks
        self.against_mpi4py, self.numpy_at_least, self.bandwidth = against_mpi4py, None, False

    def program(self, quick):
        # fewer rounds where ranks outnumber the cores: each round then costs much more
        rounds = 2000 if quick else 20000
        return ["-m", "shmrma.bench.sync", self.kind,
                str(rounds // max(1, self.nranks // 2))]

    def value(self, out):
        for line in out.splitlines():
            key, _, number = line.partition(" ")
            if key == self.kind + "_us":
                return float(number)
        raise jobs.RunFailed("no %s_us line in output:\n%s" % (self.kind, out[-800:]))


class NotifyCase(SyncCase):
    """Notification latency (shmrma/bench/notify.py): shmrma in ``form``, mpi4py always
    in ``reference_form``, standard MPI-3 calls (it has no counters)."""

    reference_form = "standard"

    def __init__(self, title, form, against_mpi4py=None):
        super().__init__(title, "notify", 2, against_mpi4py)
        self.form = form

    def program(self, quick):
        return ["-m", "shmrma.bench.notify", self.form, "2000" if quick else "20000"]

    def argv(self, impl, quick):
        program = self.program(quick)
        if impl == "mpi4py":
            program[2] = self.reference_form
        return jobs.launcher_argv(impl, self.nranks, program)


class HaloCase(NotifyCase):
    """Halo exchange per iteration at 4 ranks (shmrma/bench/halo.py): shmrma in
    ``form``, mpi4py always with Fence."""

    reference_form = "fence"

    def __init__(self, title, form, nranks=4):
        super().__init__(title, form)
        self.kind, self.nranks = "halo", nranks

    def program(self, quick):
        return ["-m", "shmrma.bench.halo", self.form, "200" if quick else "2000"]


# The targets of the windows issue: shmrma time / mpi4py time, and bandwidth
# against numpy's copy of the same bytes in one process.
WINDOWS_SUITE = (
    Case("Put 8 B + Flush, us", "osu_put_latency", 8, against_mpi4py=0.25),
    Case("Get 8 B + Flush, us", "osu_get_latency", 8, against_mpi4py=0.25),
    Case("Accumulate 8 B (MPI_CHAR) SUM + Flush, us", "osu_acc_latency", 8,
         against_mpi4py=0.25),
    Case("Fetch_and_op 8 B SUM + Flush, us", "osu_fop_latency", 8, against_mpi4py=0.25),
    Case("Compare_and_swap 8 B + Flush, us", "osu_cas_latency", 8, against_mpi4py=0.25),
    Case("Put bandwidth 4 MiB, MB/s", "osu_put_bw", 4 * MIB, against_mpi4py=1.0,
         numpy_at_least=0.9),
    Case("Get bandwidth 4 MiB, MB/s", "osu_get_bw", 4 * MIB, against_mpi4py=1.0,
         numpy_at_least=0.9),
    Case("Accumulate 8 MiB float64 SUM + Flush, us", "osu_acc_latency", 8 * MIB,
         flags=("-T", "mpi_double"), against_mpi4py=1.0),
)

# The targets of the synchronization issue: rounds at 2, 4 and 8 ranks (8 on a
# 2-core machine oversubscribes it), and OSU's sync modes at 2 ranks.
SYNC_SUITE = tuple(
    SyncCase(title % n, kind, n, target)
    for title, kind, targets in (
        ("Fence round n=%d, us", "fence", {2: 0.3, 8: 1.0}),
        ("PSCW ring round n=%d, us", "pscw", {2: 0.3}),
        ("Lock/Put/Unlock n=%d, us", "lock", {2: 0.3}))
    for n in (2, 4, 8) for target in [targets.get(n)]
) + tuple(
    Case("osu_put_latency -s %s 8 B, us" % sync, "osu_put_latency", 8, ("-s", sync),
         against_mpi4py=target)
    for sync, target in (("fence", 0.3), ("pscw", 0.3), ("lock", 0.3), ("lock_all", None)))

# The proposal's counters: a Put plus its completion signal, against the same with
# standard MPI-3 calls (Put, Flush, Fetch_and_op on a flag, polling) on mpi4py.
COUNTERS_SUITE = (
    NotifyCase("Notify 8 B: shmrma counters vs MPI-3 calls, us", "counters", 0.3),
    NotifyCase("Notify 8 B: MPI-3 calls on both, us", "standard"),
    HaloCase("Halo A3 n=4: shmrma counters vs mpi4py Fence, us/iter", "counters"),
    HaloCase("Halo n=4: Fence on both, us/iter", "fence"),
)

SUITES = {"windows": WINDOWS_SUITE, "sync": SYNC_SUITE, "counters": COUNTERS_SUITE,
          "all": WINDOWS_SUITE + SYNC_SUITE + COUNTERS_SUITE}


def value_at(out, size):
    """The number OSU printed for ``size``."""
    for line in out.splitlines():
        match = ROW.match(line)
        if match and int(match.group(1)) == size:
            return float(match.group(2))
    raise jobs.RunFailed("no row for size %d in output:\n%s" % (size, out[-800:]))


def measure(cases, have_reference, quick, reps, shmrma_path=None):
    """{case title: {impl: [values]}}, warm-up round first, then alternating rounds."""
    samples = {case.title: {impl: [] for impl in case.impls(have_reference)}
               for case in cases}
    total = sum(len(s) for s in samples.values()) * (reps + 1)
    done = 0
    for rnd in range(-1, reps):
        for case in cases:
            impls = case.impls(have_reference)
            for impl in (impls if rnd % 2 == 0 else impls[::-1]):
                wall, out = jobs.run_once(case.argv(impl, quick),
                                          jobs.child_env(impl, shmrma_path), TIMEOUT_S)
                value = case.value(out)
                done += 1
                jobs.progress("[%3d/%d] %-7s %-7s %-44s %12.2f  (%.1f s)" % (
                    done, total, "warm-up" if rnd < 0 else "%d/%d" % (rnd + 1, reps),
                    impl, case.title, value, wall))
                if rnd >= 0:
                    samples[case.title][impl].append(value)
    return samples


def summarize(values):
    median = statistics.median(values)
    spread = (max(values) - min(values)) / median if median else 0.0
    return {"median": median, "min": min(values), "max": max(values), "raw": values,
            "noisy": spread > NOISY}


def table(cases, samples):
    rows = []
    for case in cases:
        got = {impl: summarize(v) for impl, v in samples[case.title].items()}
        mine = got["shmrma"]

        def shown(s):
            return "%.2f%s" % (s["median"], " (noisy)" if s["noisy"] else "")
        if "mpi4py" in got or case.against_mpi4py:   # a row without a target informs
            other = got.get("mpi4py")
            ratio = None
            if other:
                # a time ratio: bandwidth is inverse to time
                ratio = (other["median"] / mine["median"] if case.bandwidth
                         else mine["median"] / other["median"])
            rows.append({"metric": case.title, "shmrma": shown(mine),
                         "reference": shown(other) if other else None, "against": "mpi4py",
                         "ratio": ratio, "target": case.against_mpi4py})
        if case.numpy_at_least:
            ref = got["numpy"]
            rows.append({"metric": case.title, "shmrma": shown(mine),
                         "reference": shown(ref), "against": "numpy copy",
                         "ratio": mine["median"] / ref["median"],
                         "target": case.numpy_at_least, "higher_is_better": True})
    return rows


def run(opts):
    """The compare command; returns the exit status."""
    missing = jobs.reference_missing()
    if missing:
        print("%s: measuring shmrma against numpy only; install the references with `%s`"
              % (missing, jobs.INSTALL_HINT), flush=True)
    facts = jobs.machine_facts(not missing)
    facts["shmrma_path"] = os.path.abspath(opts.shmrma_path) if opts.shmrma_path else None
    reps, suite = opts.reps, SUITES[opts.suite]
    started = time.time()
    jobs.progress("shmrma-bench compare: %d cases (suite %s), 1 warm-up round then %d "
                  "alternating rounds%s" % (len(suite), opts.suite, reps,
                                            " (--quick: fewer iterations)" if opts.quick
                                            else ""))
    samples = measure(suite, not missing, opts.quick, reps, opts.shmrma_path)
    facts["loadavg_end"] = os.getloadavg()
    facts["elapsed_s"] = round(time.time() - started, 1)
    rows = table(suite, samples)

    print()
    print(jobs.describe(facts))
    print("OSU conventions (OMB 7.x) unless named: 2 ranks, Win.Allocate, -s flush; latency = "
          "time of op + sync; bandwidth = 64 ops per flush, MB = 10^6 B. Rounds at n ranks: "
          "shmrma/bench/sync.py, the slowest rank's time. Median of %d alternating runs%s"
          % (reps, ", --quick iteration counts" if opts.quick else ""))
    jobs.print_table(rows, columns=("shmrma", "reference", "against"))
    if opts.json:
        jobs.write_report(opts.json, facts, {"quick": opts.quick, "reps": reps,
                                             "suite": [c.describe() for c in suite]},
                          samples, rows)
    return 0
