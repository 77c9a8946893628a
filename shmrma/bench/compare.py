"""``shmrma-bench compare``: the OSU benchmarks on shmrma and on the references
in one invocation, alternating, with ratios against the targets.

Every case is one OSU benchmark at one message size. Each implementation runs
it as its own job (``shmrma-run -n 2``, ``mpiexec -n 2``, or one process for
the numpy copy reference; the counters cases also ``shmrma-run --backend mpi
-n N``, shmrma's counters on mpi4py); one warm-up round of every job first (it also
writes the bytecode caches), then REPS rounds, the order of the
implementations reversed every round so none always goes first. The table
holds medians; a case whose min-max spread exceeds NOISY of its median is
flagged, since a shared machine drifts between runs. Every ratio reads one way
(RATIO_LEGEND): shmrma / reference as a time, below 1 shmrma is faster. Some cases add rows computed
from the same runs (``Case.extras``: a job's RSS and shared memory, the rate of
accumulates from all ranks). ``--json`` keeps every row's median, min, max,
noisy flag and ratio as numbers, the sweeps per size and the machine facts.
"""
import json
import os
import re
import statistics
import sys
import time
from collections import namedtuple
from operator import itemgetter

from . import jobs, programs, reasons

REPS = 3
QUICK_ITERATIONS = {"latency": 2000, "bw": 5}
NOISY = 0.25
TIMEOUT_S = 600
ROW = re.compile(r"^\s*(\d+)\s+(\d+\.\d+)\s*$")   # OMB's rows; mpi4py's demos right-align
MIB = 1 << 20

# A further row from the same runs as its case's: ``of`` turns one run's value into
# the row's number; ``higher_is_better`` makes its ratio a time ratio (reference /
# shmrma) like a bandwidth's. No runs of its own, no target.
Extra = namedtuple("Extra", "title of higher_is_better")


class Case:
    """One row group: a benchmark at one size, and what it is held against."""

    nranks = 2
    extras = ()

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
            # a cap, not OMB's -i: no size runs more iterations than OMB's default
            flags += ["--max-iterations",
                      str(QUICK_ITERATIONS["bw" if self.bandwidth else "latency"])]
        return ["-m", "shmrma.bench.osu", self.name] + flags

    def argv(self, impl, quick):
        return jobs.launcher_argv(impl, self.nranks, self.program(quick))

    def value(self, out):
        return value_at(out, self.size)

    def measured(self, out, wall):
        """What one run measured, from its output (and its wall time, for a program)."""
        return self.value(out)

    def headline(self, value):
        """The number of one run that the progress line shows and the main row holds."""
        return value

    def describe(self):
        return {"title": self.title, "program": self.program(False), "ranks": self.nranks,
                "against_mpi4py": self.against_mpi4py, "numpy_at_least": self.numpy_at_least}


class SyncCase(Case):
    """A synchronization round at N ranks (shmrma/bench/sync.py), against mpi4py
    running ``reference_kind`` (the MPI-3 form of a shmrma-only kind)."""

    def __init__(self, title, kind, nranks, against_mpi4py=None, reference_kind=None):
        self.title, self.kind, self.nranks = title, kind, nranks
        self.reference_kind = reference_kind or kind
        self.against_mpi4py, self.numpy_at_least, self.bandwidth = against_mpi4py, None, False

    def program(self, quick, kind=None):
        # fewer rounds where ranks outnumber the cores: each round then costs much more
        rounds = 2000 if quick else 20000
        return ["-m", "shmrma.bench.sync", kind or self.kind,
                str(rounds // max(1, self.nranks // 2))]

    def argv(self, impl, quick):
        kind = self.reference_kind if impl == "mpi4py" else self.kind
        return jobs.launcher_argv(impl, self.nranks, self.program(quick, kind))

    def value(self, out):
        return keyed_value(out, {self.kind + "_us", self.reference_kind + "_us"})


class NotifyCase(SyncCase):
    """Notification latency (shmrma/bench/notify.py): shmrma in ``form``, mpi4py always
    in ``reference_form``, standard MPI-3 calls (it has no counters).

    ``on_mpi_backend`` (two row titles: against shmrma on shm, against mpi4py) also
    runs shmrma's form on the mpi backend ("shmrma-mpi": ``shmrma-run --backend
    mpi``, shmrma's extensions in MPI-3 calls on mpi4py), when mpi4py is there;
    ``mpi_backend_target`` is the second row's target."""

    reference_form = "standard"

    def __init__(self, title, form, against_mpi4py=None, on_mpi_backend=None,
                 mpi_backend_target=None):
        super().__init__(title, "notify", 2, against_mpi4py)
        self.form, self.on_mpi_backend = form, on_mpi_backend
        self.mpi_backend_target = mpi_backend_target

    def impls(self, have_reference):
        if self.on_mpi_backend and have_reference:
            return ["shmrma", "shmrma-mpi", "mpi4py"]
        return super().impls(have_reference)

    def program(self, quick, form=None):
        return ["-m", "shmrma.bench.notify", form or self.form, "2000" if quick else "20000"]

    def argv(self, impl, quick):
        form = self.reference_form if impl == "mpi4py" else self.form
        return jobs.launcher_argv(impl, self.nranks, self.program(quick, form))

    def describe(self):
        return dict(super().describe(), on_mpi_backend=self.on_mpi_backend)


class HaloCase(NotifyCase):
    """Halo exchange per iteration at 4 ranks (shmrma/bench/halo.py): shmrma in
    ``form``, mpi4py always with Fence."""

    reference_form = "fence"

    def __init__(self, title, form, nranks=4, on_mpi_backend=None, reference_form=None,
                 against_mpi4py=None):
        super().__init__(title, form, against_mpi4py, on_mpi_backend=on_mpi_backend)
        self.kind, self.nranks = "halo", nranks
        self.reference_form = reference_form or self.reference_form

    def program(self, quick, form=None):
        # --quick too runs long enough (tens of ms) that one descheduling of a rank
        # does not decide the median
        return ["-m", "shmrma.bench.halo", form or self.form, "1000" if quick else "2000"]


class CostCase(Case):
    """What a launcher option costs: ``inner`` run with it and without, a row per
    option (``variants``: impl, title, target) with the ratio with / without."""

    against = ""

    def __init__(self, title, inner, variants):
        self.title, self.inner, self.variants = title, inner, variants
        self.nranks, self.bandwidth, self.numpy_at_least = inner.nranks, False, None
        self.against_mpi4py = None

    def impls(self, have_reference):
        return ["shmrma"] + [impl for impl, _, _ in self.variants]

    def argv(self, impl, quick):
        return self.inner.argv(impl, quick)

    def value(self, out):
        return self.inner.value(out)

    def describe(self):
        return dict(self.inner.describe(), title=self.title,
                    cost_targets={impl: target for impl, _, target in self.variants})


class CheckCase(CostCase):
    """What ``shmrma-run --check`` costs: ``inner`` run with the race checker
    ("shmrma-check"), with it but not watching the ranks' own stores
    ("shmrma-check-no-local") and without, the ratios checked / unchecked against
    ``target``."""

    against = "shmrma without --check"

    def __init__(self, title, inner, target=None):
        super().__init__(title, inner, [
            ("shmrma-check", title, target),
            ("shmrma-check-no-local", title.replace("--check:", "--check=no-local:"),
             target)])
        self.target = target


class ObserveCase(CostCase):
    """What ``--trace`` and ``--profile`` cost on ``inner``: each against the same
    run without, against ``targets`` (trace's, profile's)."""

    against = "shmrma without it"

    def __init__(self, title, inner, targets=(None, None)):
        super().__init__(title, inner, [
            ("shmrma-trace", "--trace: " + title, targets[0]),
            ("shmrma-profile", "--profile: " + title, targets[1])])


class MemoryCase(SyncCase):
    """The PSS of a whole job of N ranks with a window of SIZE per rank, every byte
    written (shmrma/bench/memory.py), in MiB, against mpi4py's for the same program;
    its RSS and shared memory in rows of their own from the same runs."""

    QUANTITIES = {"pss": "memory_pss_kib", "rss": "memory_rss_kib",
                  "shared": "memory_shared_kib"}

    def __init__(self, title, nranks, size):
        super().__init__(title, "memory", nranks, None)
        self.size = size
        window = title.partition(", ")[2]
        self.extras = (
            Extra("Job RSS (shared pages counted by every rank), " + window,
                  itemgetter("rss"), False),
            Extra("Job shared memory (Shared_Clean + Shared_Dirty), " + window,
                  itemgetter("shared"), False))

    def program(self, quick, kind=None):
        return ["-m", "shmrma.bench.memory", self.size]

    def value(self, out):
        """{quantity: MiB} of one run."""
        return {name: keyed_value(out, {key}) / 1024 for name, key in self.QUANTITIES.items()}

    def headline(self, value):
        return value["pss"]


class SweepCase(Case):
    """One OSU benchmark over every message size of one run: a row per size, and
    the data of ``--plot``."""

    def __init__(self, name, max_size=4 * MIB):
        super().__init__(name, name, max_size)
        self.flags = ["-m", "1:%d" % max_size]
        self.unit = "MB/s" if self.bandwidth else "us"

    def value(self, out):
        return {int(m.group(1)): float(m.group(2))
                for m in map(ROW.match, out.splitlines()) if m}

    def headline(self, value):
        return value[max(value)]


class MessagesCase(Case):
    """An OSU point-to-point or collective benchmark, or an object form, at N ranks
    and one size (shmrma/bench/messages.py)."""

    def __init__(self, title, name, size, nranks=2, against_mpi4py=None, flags=()):
        super().__init__(title, name, size, against_mpi4py=against_mpi4py)
        self.nranks = nranks
        self.flags = ["-m", "%d:%d" % (size, size)] + list(flags)

    def program(self, quick):
        flags = list(self.flags)
        if quick:
            flags += ["--max-iterations",
                      str(QUICK_ITERATIONS["bw" if self.bandwidth else "latency"])]
        return ["-m", "shmrma.bench.messages", self.name] + flags


class MessagesSweep(SweepCase):
    """osu_latency or osu_bw at 2 ranks over every size: rows per size and the plot."""

    def program(self, quick):
        flags = list(self.flags)
        if quick:
            flags += ["--max-iterations",
                      str(QUICK_ITERATIONS["bw" if self.bandwidth else "latency"])]
        return ["-m", "shmrma.bench.messages", self.name] + flags


class ProgramCase(Case):
    """A whole program as its users run it (programs.py): its wall time, the main
    row, and figures it printed (``figures``: (row title, the OSU size or the
    ``KEY number`` key of the figure, higher is better)), rows from the same runs."""

    def __init__(self, title, nranks, program, figures=(), against_mpi4py=1.0):
        self.title, self.nranks, self._program = title, nranks, program
        self.against_mpi4py, self.numpy_at_least, self.bandwidth = against_mpi4py, None, False
        self.figures = figures
        self.extras = tuple(Extra(label, itemgetter(key), higher)
                            for label, key, higher in figures)

    def program(self, quick):
        return self._program(quick)

    def value(self, out):
        """{figure key: number} of one run's output."""
        if re.search(r"^checked (?!yes)", out, re.M):
            raise jobs.RunFailed("the program found wrong values:\n%s" % out[-800:])
        return {key: value_at(out, key) if isinstance(key, int) else keyed_value(out, {key})
                for _, key, _ in self.figures}

    def measured(self, out, wall):
        return dict(self.value(out), wall=wall)

    def headline(self, value):
        return value["wall"]

    def describe(self):
        return dict(super().describe(), program=self.program(False), figures=self.figures)


def _demo(name, nranks, figures):
    """mpi4py's demo ``name`` at nranks: wall time, and the figures it printed at
    the sizes given ((label, size in bytes, higher is better))."""
    unit = "MB/s" if name in ("osu_bw.py", "osu_bibw.py") else "us"
    return ProgramCase(
        "mpi4py demo %s n=%d, wall s" % (name, nranks), nranks,
        lambda quick: [programs.demo(name)],
        tuple(("mpi4py demo %s n=%d, %s, %s" % (name, nranks, label, unit), size,
               unit == "MB/s") for label, size in figures))


def _transpose(nranks):
    title = "Pencil transpose 64^3 float64 n=%d (Create_cart, Sub, Alltoallw)" % nranks
    return ProgramCase(
        title + ", wall s", nranks,
        lambda quick: ["-m", "shmrma.bench.transpose", "64", "10" if quick else "50"],
        ((title + ": a cycle of 4 transfers, us", "cycle_us", False),
         (title + ": communicators and types, us", "setup_us", False)))


_SMALL_AND_LARGE = (("8 B", 8), ("1 MiB", MIB))
# mpi4py's demo benchmarks at the rank counts they take (the point-to-point ones need
# 2), then the transpose: each program's wall time against mpi4py's (target 1.0)
PROGRAMS_SUITE = (
    _demo("osu_latency.py", 2, (("8 B", 8), ("4 MiB", 4 * MIB))),
    _demo("osu_bw.py", 2, (("8 B", 8), ("4 MiB", 4 * MIB))),
    _demo("osu_bibw.py", 2, (("4 MiB", 4 * MIB),)),
    _demo("osu_multi_lat.py", 2, (("8 B", 8), ("4 MiB", 4 * MIB))),
    _demo("osu_barrier.py", 4, (("barrier", 0),)),
) + tuple(_demo(name, 4, _SMALL_AND_LARGE) for name in (
    "osu_bcast.py", "osu_gather.py", "osu_scatter.py", "osu_allgather.py", "osu_alltoall.py",
    "osu_alltoallv.py")) + (_transpose(2), _transpose(4))


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

# Why these targets can be missed with nothing regressed; write_results lists
# every miss of a run under the table with its reason here, or as news.
_MEMCPY_LIMIT = ("each side's transfer is one memcpy of 4 MiB, so both run at the "
                 "memory's limit; the ratio swings about 10 % either "
                 "way between runs (0.92-1.12 in earlier runs), so a miss at parity "
                 "is noise, not a slower path")
_SMALL_CALL = ("shmrma's 8-byte call takes 0.3-0.6 us, most of it the Python call; "
               "on a shared 2-vCPU machine its time varies up to 2x between runs "
               "(bimodal), so look at the (noisy) flag and rerun before reading a "
               "miss as a regression")
WHEN_MISSED = dict([(case.title, _MEMCPY_LIMIT if case.bandwidth else _SMALL_CALL)
                    for case in WINDOWS_SUITE if case.bandwidth or case.size == 8])

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
# The counters cases also run on the mpi backend (shmrma's counters written in
# MPI-3 calls, on mpi4py): what the counters cost on each backend, side by side.
COUNTERS_SUITE = (
    NotifyCase("Notify 8 B: shmrma counters vs MPI-3 calls, us", "counters", 0.3,
               on_mpi_backend=(
                   "Notify 8 B: counters on the mpi backend vs counters on shm, us",
                   "Notify 8 B: counters on the mpi backend vs MPI-3 calls, us"),
               mpi_backend_target=1.2),
    NotifyCase("Notify 8 B: counters started per message vs MPI-3 calls, us",
               "per_message"),
    NotifyCase("Notify 8 B: MPI-3 calls on both, us", "standard"),
    HaloCase("Halo A3 n=4: shmrma counters vs mpi4py Fence, us/iter", "counters",
             against_mpi4py=0.5, on_mpi_backend=(
                 "Halo A3 n=4: counters on the mpi backend vs counters on shm, us/iter",
                 "Halo A3 n=4: counters on the mpi backend vs mpi4py Fence, us/iter")),
    HaloCase("Halo n=4: Fence on both, us/iter", "fence"),
    # the proposal's Example A2 (messages) beside A3 (counters), against the same
    # reference; and both at 9 ranks (a 3x3 torus in the proposal), oversubscribed
    HaloCase("Halo A2 n=4: shmrma messages vs mpi4py Fence, us/iter", "messages"),
    HaloCase("Halo A3 n=9: shmrma counters vs mpi4py Fence, us/iter", "counters", nranks=9),
    HaloCase("Halo n=9: Fence on both, us/iter", "fence", nranks=9),
)


def _unique(cases):
    """The cases in order, a title measured once (scaling repeats sync's rounds at 2, 4
    and 8 ranks; the first, with its target, stays): samples are kept by title."""
    seen = set()
    return tuple(case for case in cases if not (case.title in seen or seen.add(case.title)))


def _scaling_case(title, kind, reference, n):
    """A round at n ranks; the accumulates also as the rate of all n ranks together:
    every rank makes one call a round, so n * iterations / elapsed = n / us Mops/s."""
    case = SyncCase("%s n=%d, us" % (title, n), kind, n, reference_kind=reference)
    if kind == "accumulate":
        case.extras = (Extra("Accumulate 8 B to rank 0, all %d ranks together, Mops/s" % n,
                             lambda us: n / us, True),)
    return case


# Every synchronization form as ranks grow (beyond 2 the 2-core machine is
# oversubscribed); shmrma-only forms run against their MPI-3 form on mpi4py.
SCALING_SUITE = tuple(
    _scaling_case(title, kind, reference, n)
    for n in (2, 4, 8, 16)
    for title, kind, reference in (
        ("Fence round", "fence", None),
        ("PSCW ring round", "pscw", None),
        ("Lock/Put/Unlock", "lock", None),
        ("Lock_all/Put/Unlock_all", "lock_all", None),
        ("Window barrier round (mpi4py: Fence)", "barrier", "fence"),
        ("Notify token ring round: counters (mpi4py: flags)", "counters", "flags"),
        ("Accumulate 8 B to rank 0 + Flush, every rank", "accumulate", None)))

# The messages issue: point-to-point and collectives against mpi4py on MPICH (OSU's
# benchmarks, their object forms), up to 16 ranks on the 2-core machine, where the
# target is only to be no slower than mpi4py at the same oversubscription.
def _collective_targets(small, large=1.0):
    return {2: small, 4: small, 8: large, 16: large}


MESSAGES_SUITE = (
    MessagesCase("Send/Recv 8 B, one way (osu_latency), us", "osu_latency", 8,
                 against_mpi4py=0.6),
    MessagesCase("Send/Recv 8 B as [buf, BYTE], one way, us", "osu_latency", 8,
                 against_mpi4py=0.6, flags=["--form", "type"]),
    MessagesCase("Send/Recv 8 B as [buf, 8, BYTE], one way, us", "osu_latency", 8,
                 against_mpi4py=0.6, flags=["--form", "count"]),
    MessagesCase("Isend/Irecv bandwidth 8 B as [buf, 8, BYTE] (osu_bw), MB/s", "osu_bw", 8,
                 against_mpi4py=1.0, flags=["--form", "count"]),
    MessagesCase("send/recv of 8-byte objects, one way, us", "obj_latency", 8,
                 against_mpi4py=0.6),
    MessagesCase("Send/Recv 4 MiB, one way (osu_latency), us", "osu_latency", 4 * MIB),
    MessagesCase("Send/Recv bandwidth 4 MiB (osu_bw), MB/s", "osu_bw", 4 * MIB,
                 against_mpi4py=1.0),
) + tuple(
    MessagesCase(title % n, name, size, n, targets.get(n))
    for n in (2, 4, 8, 16)
    for title, name, size, targets in (
        ("Allreduce 8 B n=%d (osu_allreduce), us", "osu_allreduce", 8,
         _collective_targets(0.6)),
        ("Bcast 8 B n=%d (osu_bcast), us", "osu_bcast", 8, _collective_targets(0.6)),
        ("allreduce of an int n=%d, us", "obj_allreduce", 8, _collective_targets(0.6)),
        ("Barrier n=%d (osu_barrier), us", "osu_barrier", 8,
         {2: 0.5, 4: 0.5, 8: 0.5, 16: 1.0}),
        ("Allreduce 1 MiB float32 n=%d (osu_allreduce), us", "osu_allreduce", MIB, {}),
        ("Iallreduce 8 B + Wait n=%d (osu_iallreduce), us", "osu_iallreduce", 8, {}),
        ("Iallreduce 1 MiB float32 + Wait n=%d (osu_iallreduce), us", "osu_iallreduce", MIB,
         {}))
) + (
    HaloCase("Halo n=4: messages (Isend/Irecv/Waitall) on both, us/iter", "messages",
             reference_form="messages"),
)
MESSAGES_SUITE += tuple(    # the issue's own target is on float64 (OMB's default: float32)
    MessagesCase("Allreduce 1 MiB float64 n=%d (osu_allreduce -T mpi_double), us" % n,
                 "osu_allreduce", MIB, n, 1.0, flags=["-T", "mpi_double"])
    for n in (2, 4))
# the call forms of real programs: vector collectives with array('i') counts in
# buffer objects larger than what they move, and making communicators and types
MESSAGES_SUITE += tuple(
    MessagesCase("%s %s per rank n=%d, array('i') counts, 256 KiB objects, us"
                 % (call, label, n), name, size, n, target)
    for n in (2, 4)
    for call, name in (("Alltoallv", "vec_alltoallv"), ("Allgatherv", "vec_allgatherv"),
                       ("Gatherv", "vec_gatherv"), ("Scatterv", "vec_scatterv"))
    for label, size, target in (("8 B", 8, 0.6), ("64 KiB", 64 * 1024, 1.0))
) + tuple(
    MessagesCase(title % n, name, 8, n, target)
    for n in (2, 4)
    for title, name, target in (("Dup + Free n=%d, us", "comm_dup", 1.0),
                                ("Split + Free n=%d, us", "comm_split", 1.0),
                                ("Create_cart + Sub + Free n=%d, us", "comm_cart_sub", 1.0),
                                ("Create_contiguous + Commit + Free n=%d, us",
                                 "type_contiguous", None))
)
MESSAGES_SWEEP = tuple(MessagesSweep(name) for name in ("osu_latency", "osu_bw"))

# the race checker's cost on the proposal's halos (issue target: at most 3x at 4
# ranks) and on the 8-byte put latency, with and without the ranks' own stores
CHECK_SUITE = (
    CheckCase("--check: Halo A3 n=4 counters, us/iter", HaloCase("", "counters"), 3.0),
    CheckCase("--check: Halo n=4 Fence, us/iter", HaloCase("", "fence"), 3.0),
    CheckCase("--check: Put 8 B + Flush, us", Case("", "osu_put_latency", 8)),
)

# what --trace and --profile cost (issue targets: at most 1.3x and 1.1x on the
# proposal's halos at 4 ranks: A2, messages; A3, counters)
OBSERVE_SUITE = (
    ObserveCase("Halo A2 n=4 messages, us/iter", HaloCase("", "messages"), (1.3, 1.1)),
    ObserveCase("Halo A3 n=4 counters, us/iter", HaloCase("", "counters"), (1.3, 1.1)),
    ObserveCase("Put 8 B + Flush, us", Case("", "osu_put_latency", 8)),
)

MEMORY_SUITE = tuple(MemoryCase("Job PSS, n=%d x 16 MiB window, MiB" % n, n, "16M")
                     for n in (2, 4, 8))

SWEEP_SUITE = tuple(SweepCase(name) for name in
                    ("osu_put_latency", "osu_get_latency", "osu_put_bw", "osu_get_bw"))

# shmrma's forms against each other, from two cases of the same run: the proposals'
# synchronization must cost less than the standard form it replaces (issue 14).
# (title, the form's case, the standard form's case, its label, target)
_NOTIFY = "Notify 8 B: shmrma counters vs MPI-3 calls, us"
_NOTIFY_MPI3 = "Notify 8 B: MPI-3 calls on both, us"
OWN_RATIOS = (
    ("Notify 8 B: counters vs MPI-3 calls, shmrma both, us", _NOTIFY, _NOTIFY_MPI3,
     "shmrma MPI-3 calls", 0.5),
    ("Notify 8 B: counters started per message vs MPI-3 calls, shmrma both, us",
     "Notify 8 B: counters started per message vs MPI-3 calls, us", _NOTIFY_MPI3,
     "shmrma MPI-3 calls", 0.7),
    # both half a round trip: the notification is below the message's
    ("Notify 8 B: counters vs Send/Recv 8 B one way, shmrma both, us", _NOTIFY,
     "Send/Recv 8 B, one way (osu_latency), us", "shmrma Send/Recv", 1.0),
) + tuple(
    ("Window barrier vs Fence round n=%d, shmrma both, us" % n,
     "Window barrier round (mpi4py: Fence) n=%d, us" % n, "Fence round n=%d, us" % n,
     "shmrma Fence", 1.0)
    for n in (2, 4, 8)
) + (("Halo A3 n=4: counters vs Fence, shmrma both, us/iter",
      "Halo A3 n=4: shmrma counters vs mpi4py Fence, us/iter",
      "Halo n=4: Fence on both, us/iter", "shmrma Fence", 0.8),)

WHEN_MISSED.update(reasons.WHEN_MISSED)

for _case in OBSERVE_SUITE[:2]:
    for _, _title, _ in _case.variants:
        WHEN_MISSED[_title] = (
            "the halo at 4 ranks on 2 CPUs varies more from run to run (40-74 us an "
            "iteration in alternating runs without either option on the development "
            "machine) than these options cost it; the cost itself, measured on one rank "
            "running the halo's calls in a loop (2 Irecv, 2 Isend, Waitall: 4.07-4.51 us "
            "plain, best of 3), is 0.5-0.7 us profiled and 1.0-1.3 us traced, at most "
            "1.03x and 1.06x of a 45 us iteration with two ranks to a CPU")

# the cases of other suites those rows need, so the counters suite alone has them all
_OWN_TITLES = {title for _, form, against, _, _ in OWN_RATIOS for title in (form, against)}
COUNTERS_COMPANIONS = _unique(tuple(
    case for case in SYNC_SUITE + SCALING_SUITE + MESSAGES_SUITE
    if case.title in _OWN_TITLES - {c.title for c in COUNTERS_SUITE}))

SUITES = {"windows": WINDOWS_SUITE, "sync": SYNC_SUITE,
          "counters": COUNTERS_SUITE + COUNTERS_COMPANIONS,
          "scaling": SCALING_SUITE, "memory": MEMORY_SUITE, "sweep": SWEEP_SUITE,
          "messages": MESSAGES_SUITE + MESSAGES_SWEEP, "check": CHECK_SUITE,
          "programs": PROGRAMS_SUITE, "observe": OBSERVE_SUITE,
          "all": _unique(WINDOWS_SUITE + SYNC_SUITE + COUNTERS_SUITE + MEMORY_SUITE
                         + SWEEP_SUITE + SCALING_SUITE + MESSAGES_SUITE + MESSAGES_SWEEP
                         + CHECK_SUITE + OBSERVE_SUITE + PROGRAMS_SUITE)}


def keyed_value(out, keys):
    """The number of the first ``KEY number`` line of a rank program whose key is in ``keys``."""
    for line in out.splitlines():
        key, _, number = line.partition(" ")
        if key in keys:
            return float(number)
    raise jobs.RunFailed("no %s line in output:\n%s" % (" or ".join(sorted(keys)), out[-800:]))


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
    bar = jobs.Progress(sum(len(s) for s in samples.values()) * (reps + 1), unit="runs")
    for rnd in range(-1, reps):
        for case in cases:
            impls = case.impls(have_reference)
            for impl in (impls if rnd % 2 == 0 else impls[::-1]):
                argv = case.argv(impl, quick)
                if shmrma_path:
                    argv = jobs.from_checkout(argv)
                wall, out = jobs.run_once(argv, jobs.child_env(impl, shmrma_path), TIMEOUT_S)
                value = case.measured(out, wall)
                bar.step(progress_line(rnd, reps, impl, case.title, case.headline(value),
                                       wall))
                if rnd >= 0:
                    samples[case.title][impl].append(value)
    bar.done()
    return samples


def progress_line(rnd, reps, impl, title, value, wall):
    """What one run adds to the progress: its round (the warm-up is not counted), the
    implementation, the measurement and this run's value of it, and its wall time."""
    return "%-9s  %-21s  %s = %.2f  (this run took %.1f s)" % (
        "warm-up" if rnd < 0 else "round %d/%d" % (rnd + 1, reps), impl, title, value, wall)


def summarize(values):
    median = statistics.median(values)
    spread = (max(values) - min(values)) / median if median else 0.0
    return {"median": median, "min": min(values), "max": max(values), "raw": values,
            "noisy": spread > NOISY}


def numbers(summary):
    """What --json keeps of a summary besides the raw values: median, min, max, noisy."""
    return summary and {key: summary[key] for key in ("median", "min", "max", "noisy")}


def summarize_runs(runs, of):
    """{impl: summary of of(value) over its runs}."""
    return {impl: summarize([of(v) for v in values]) for impl, values in runs.items()}


def sweeps(cases, samples):
    """The sweep cases' medians per size, in the form plot.draw takes."""
    found = []
    for case in cases:
        if not isinstance(case, SweepCase):
            continue
        runs = samples[case.title]
        sizes = sorted(set.intersection(*(set(r) for r in runs["shmrma"])))
        series, noisy, stats = {}, {}, {}
        for impl, values in runs.items():
            per_size = [summarize([v[size] for v in values if size in v])
                        if any(size in v for v in values) else None for size in sizes]
            series[impl] = [p and p["median"] for p in per_size]
            noisy[impl] = [bool(p and p["noisy"]) for p in per_size]
            stats[impl] = [numbers(p) for p in per_size]
        found.append({"title": case.title, "unit": case.unit, "sizes": sizes,
                      "higher_is_better": case.bandwidth, "series": series, "noisy": noisy,
                      "stats": stats})
    return found


def print_sweep(sweep):
    """One sweep as a table: size, every implementation, the ratio to mpi4py."""
    impls = list(sweep["series"])
    print("\n%s (%s, median per size; %s)" % (sweep["title"], sweep["unit"], SWEEP_LEGEND))
    print("%10s" % "size" + "".join("%14s" % impl for impl in impls) + "%8s" % "ratio")
    for i, size in enumerate(sweep["sizes"]):
        values = [sweep["series"][impl][i] for impl in impls]
        ratio = sweep_ratio(sweep, i)
        print("%10d" % size + "".join("%14s" % ("-" if v is None else "%.2f" % v)
                                      for v in values)
              + "%8s" % ("-" if ratio is None else "%.2f" % ratio))


def sweep_ratio(sweep, i):
    """shmrma / mpi4py as a time ratio at size index ``i`` (None without mpi4py)."""
    mine, other = sweep["series"]["shmrma"][i], sweep["series"].get("mpi4py", [None] * (i + 1))[i]
    if not mine or not other:
        return None
    return other / mine if sweep["higher_is_better"] else mine / other


def table(cases, samples):
    """The rows of the table, sweeps aside: each with its medians as text (flagged
    noisy) and, for --json, the numbers; then OWN_RATIOS of the cases measured."""
    rows, by_title = [], {case.title: case for case in cases}
    for case in cases:
        if not isinstance(case, SweepCase):
            rows += case_rows(case, samples[case.title])
    for title, form, against, label, target in OWN_RATIOS:
        if form in by_title and against in by_title:
            mine, theirs = (summarize_runs(samples[t], by_title[t].headline)["shmrma"]
                            for t in (form, against))
            rows.append(row(title, mine, theirs, label, target))
    return rows


def case_rows(case, runs):
    """The rows of one case: against mpi4py (a time ratio: bandwidth is inverse to
    time) with its extras, the mpi backend's rows, the numpy copy's."""
    got = summarize_runs(runs, case.headline)
    mine, other, rows = got["shmrma"], got.get("mpi4py"), []
    if other or case.against_mpi4py:   # a row without a target informs
        rows.append(row(case.title, mine, other, "mpi4py", case.against_mpi4py,
                        invert=case.bandwidth))
        for extra in case.extras:
            theirs = summarize_runs(runs, extra.of)
            rows.append(row(extra.title, theirs["shmrma"], theirs.get("mpi4py"), "mpi4py",
                            None, invert=extra.higher_is_better))
    if getattr(case, "on_mpi_backend", None) and "shmrma-mpi" in got:
        # shmrma's counters on the mpi backend, against the same on shm (informs)
        # and against mpi4py's MPI-3 form
        for title, against, ref, target in zip(
                case.on_mpi_backend, ("shmrma on shm", "mpi4py"), (mine, other),
                (None, getattr(case, "mpi_backend_target", None))):
            rows.append(row(title, got["shmrma-mpi"], ref, against, target))
    if case.numpy_at_least:
        # shmrma's bandwidth at least numpy_at_least of the copy's is, as a time ratio
        # like every other row's, at most its inverse
        rows.append(row(case.title, mine, got["numpy"], "numpy copy",
                        1 / case.numpy_at_least, invert=True))
    for impl, title, target in getattr(case, "variants", ()):
        if impl in got:
            rows.append(row(title, got[impl], mine, case.against, target))
    return rows


def row(metric, mine, ref, against, target, invert=False):
    """One row: the medians as text, the ratio mine / ref (ref / mine if ``invert``,
    for a bandwidth or a rate: a time ratio either way, below 1 shmrma is faster),
    and under "stats" median, min, max and noisy of both sides."""
    ratio = None
    if ref and mine["median"] and ref["median"]:
        ratio = ref["median"] / mine["median"] if invert else mine["median"] / ref["median"]
    out = {"metric": metric, "shmrma": shown(mine), "reference": shown(ref),
           "against": against, "ratio": ratio, "target": target,
           "stats": {"shmrma": numbers(mine), "reference": numbers(ref)}}
    return out


def shown(summary):
    """A median as the table shows it, "(noisy)" when its spread is wide; None for none."""
    return summary and "%.2f%s" % (summary["median"], " (noisy)" if summary["noisy"] else "")


def run(opts):
    """The compare command; returns the exit status."""
    suite = SUITES[opts.suite]
    if not plot_ready(opts, suite) or not sources_ready(suite):
        return 2
    missing = jobs.reference_missing()
    if missing:
        print("%s: measuring shmrma against numpy only; install the references with `%s`"
              % (missing, jobs.INSTALL_HINT), flush=True)
    facts = jobs.machine_facts(not missing)
    facts["shmrma_path"] = os.path.abspath(opts.shmrma_path) if opts.shmrma_path else None
    reps = opts.reps
    started = time.time()
    jobs.progress("shmrma-bench compare: %d cases (suite %s), 1 warm-up round (not "
                  "counted) then %d alternating rounds%s; a line per run: its round, the "
                  "implementation, the measurement = this run's value, its wall time"
                  % (len(suite), opts.suite, reps,
                     " (--quick: fewer iterations)" if opts.quick else ""))
    samples = measure(suite, not missing, opts.quick, reps, opts.shmrma_path)
    facts["loadavg_end"] = os.getloadavg()
    facts["elapsed_s"] = round(time.time() - started, 1)
    rows, found = table(suite, samples), sweeps(suite, samples)

    print()
    print(jobs.describe(facts))
    print(CONVENTIONS % (reps, ", --quick iteration counts" if opts.quick else ""))
    jobs.print_table(rows, columns=("shmrma", "reference", "against"))
    if rows:
        print(RATIO_LEGEND % (NOISY * 100))
    for sweep in found:
        print_sweep(sweep)
    if opts.json:       # before the plot: a failure there must not lose the numbers
        jobs.write_report(opts.json, facts, {"quick": opts.quick, "reps": reps,
                                             "suite": [c.describe() for c in suite]},
                          samples, rows, found)
    plot_path = _plot(found, opts, facts)
    if opts.results:
        write_results(opts.results, facts, opts, rows, found, plot_path)
    return 0


RATIO_LEGEND = (
    "ratio = shmrma / reference as a time (a bandwidth or a rate is inverted first), so "
    "below 1 shmrma is faster, and for memory smaller; on the --check, --trace and "
    "--profile rows shmrma is the run with that option and the reference the same "
    "without it. A row passes when "
    "its ratio is at most its target. (noisy): the runs' min-max spread exceeds %d %% of "
    "the median: rerun before reading anything into that row.")
SWEEP_LEGEND = ("ratio = shmrma / mpi4py as a time (a bandwidth inverted first): below 1 "
                "shmrma is faster")

CONVENTIONS = ("OSU conventions (OMB 7.x) unless named: 2 ranks, Win.Allocate, -s flush; "
               "latency = time of op + sync; bandwidth = 64 ops per flush, MB = 10^6 B. Rounds "
               "at n ranks: shmrma/bench/sync.py, the slowest rank's time. Median of %d "
               "alternating runs%s")


def sources_ready(suite):
    """Before anything runs: False (with the reason on stderr) when the suite runs
    mpi4py's demos and their source distribution cannot be fetched."""
    if not any(isinstance(case, ProgramCase) for case in suite):
        return True
    try:
        programs.mpi4py_sources()
    except (programs.SourcesMissing, OSError) as exc:
        print("shmrma-bench compare: the programs' sources are missing, nothing was run: %s"
              % exc, file=sys.stderr)
        return False
    return True


def plot_ready(opts, suite):
    """Before anything runs: False (with the reason on stderr) when --plot cannot be
    drawn for want of matplotlib, so a long run is not lost at its end; a note when
    the suite has no sweep to draw."""
    if not opts.plot:
        return True
    if not any(isinstance(case, SweepCase) for case in suite):
        print("shmrma-bench compare: --plot %s: suite %s has no sweep to draw, so no plot "
              "is written (suites sweep and all draw one)" % (opts.plot, opts.suite),
              file=sys.stderr, flush=True)
        return True
    from . import plot
    problem = plot.unavailable()
    if problem:
        print("shmrma-bench compare: %s; nothing was run" % problem, file=sys.stderr)
    return not problem


def _plot(found, opts, facts):
    """Draw the sweeps where --plot (or --results, next to it) asks; None if not drawn."""
    path = opts.plot or (os.path.splitext(opts.results)[0] + ".png" if opts.results else None)
    if not path or not found:
        return None
    from . import plot
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        plot.draw(found, path, title=jobs.describe(facts).splitlines()[0])
    except plot.PlotUnavailable as exc:
        if opts.plot:
            raise jobs.RunFailed(str(exc))
        print("no plot in the results: %s" % exc)
        return None
    print("plot: %s" % path)
    return path


def missed(rows):
    """Markdown lines naming each target this run missed, with its known reason."""
    lines = ["- %s against %s: %.2f, target <= %.2f. %s." % (
        r["metric"], r["against"], r["ratio"], r["target"],
        _sentence(WHEN_MISSED.get(r["metric"], "no known reason: investigate")))
        for r in rows if jobs.status(r) == "MISS"]
    return ["", "Targets this run missed:", ""] + lines if lines else []


def _sentence(text):
    return text[:1].upper() + text[1:]


def write_results(path, facts, opts, rows, found, plot_path):
    """benchmarks/RESULTS.md: the command, the machine, the table, the sweeps, the plot."""
    command = "shmrma-bench compare --suite %s --reps %d%s --results %s" % (
        opts.suite, opts.reps, " --quick" if opts.quick else "", os.path.relpath(path))
    parts = ["# shmrma benchmark results", "",
             "Made by `%s` on %s (%.0f s); regenerate with the same command. "
             "Ratios are shmrma / reference as a time (below 1: shmrma is faster)."
             % (command, time.strftime("%Y-%m-%d", time.gmtime()), facts["elapsed_s"]), "",
             "```", jobs.describe(facts), "```", "",
             CONVENTIONS % (opts.reps, ", --quick iteration counts" if opts.quick else "")
             + "."]
    if rows:
        parts += ["", RATIO_LEGEND % (NOISY * 100), "",
                  jobs.markdown_table(*jobs.table_cells(rows, ("shmrma", "reference",
                                                               "against")))]
        parts += missed(rows)
    if plot_path:
        parts += ["", "![latency and bandwidth against message size](%s)"
                  % os.path.relpath(plot_path, os.path.dirname(os.path.abspath(path)))]
    for sweep in found:
        impls = list(sweep["series"])
        body = [(size,) + tuple("-" if sweep["series"][impl][i] is None
                                else "%.2f" % sweep["series"][impl][i] for impl in impls)
                + ("-" if sweep_ratio(sweep, i) is None else "%.2f" % sweep_ratio(sweep, i),)
                for i, size in enumerate(sweep["sizes"])]
        parts += ["", "## %s, %s" % (sweep["title"], sweep["unit"]), "",
                  "Median per size; %s." % SWEEP_LEGEND, "",
                  jobs.markdown_table(("bytes",) + tuple(impls) + ("ratio",), body)]
    parts += ["", "Machine facts (JSON):", "", "```",
              json.dumps(facts, indent=1, default=str), "```", ""]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(parts))
    print("results: %s" % path)
