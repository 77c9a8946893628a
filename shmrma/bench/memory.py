"""Memory of a job: what N ranks with a window of SIZE bytes each occupy, run by
every rank:

    shmrma-run -n N -m shmrma.bench.memory SIZE [FLAVOR]
    mpiexec -n N python -m shmrma.bench.memory SIZE [FLAVOR]   (SHMRMA_BENCH_IMPL=mpi4py)

SIZE is the window memory of each rank in bytes: a plain integer, or one with a
suffix K, M or G (powers of 1024: 4K = 4096; KiB/KB and the like are read the
same way). FLAVOR is ``allocate`` (Win.Allocate, the default) or ``shared``
(Win.Allocate_shared).

Each rank reads its memory from /proc/self/smaps_rollup (or, on kernels without
it, the sum over /proc/self/smaps) once MPI is up and numpy is imported (the
baseline), then creates the window, writes every byte of its own window memory,
waits for the others in a Barrier and reads it again. Nothing is timed. Rank 0
prints one line per quantity, sums over the ranks, in KiB:

  memory_ranks N                  number of ranks
  memory_window_bytes SIZE        window memory per rank, in bytes
  memory_flavor FLAVOR            allocate or shared
  memory_baseline_pss_kib K       PSS before the window
  memory_pss_kib K                PSS after the window is created and written
  memory_window_pss_kib K         memory_pss_kib - memory_baseline_pss_kib
  memory_rss_kib K                RSS after
  memory_shared_kib K             Shared_Clean + Shared_Dirty after
  memory_private_kib K            Private_Clean + Private_Dirty after

PSS (proportional set size) is the honest total of a job: a page that several
ranks map counts once, split among them, where RSS counts it once per rank and
overstates a job that shares its libraries or its window segment. compare.py
therefore holds memory_pss_kib against mpi4py's, with memory_rss_kib and
memory_shared_kib in rows beside it to explain it. The launcher's own processes
(shmrma-run, or mpiexec and its hydra proxy) are not counted, only the ranks.

PSS depends on who else maps the same files: other Python jobs on the machine
lower the ranks' share of libpython and numpy, so the baseline moves from run to
run, and a job starting or ending between the two readings moves
memory_window_pss_kib by up to some hundred KiB; read small windows with that
in mind.
"""
import re
import sys

from .jobs import mpi_module

FLAVORS = ("allocate", "shared")
SUFFIXES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
SIZE_RE = re.compile(r"^(\d+)\s*([kmg]?)(?:i?b)?$", re.IGNORECASE)
USAGE = "usage: python -m shmrma.bench.memory SIZE[K|M|G] [%s]" % "|".join(FLAVORS)
FIELDS = ("Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty")


def parse_size(text):
    """Bytes from "65536", "64K", "16M", "1G" (powers of 1024); ValueError otherwise."""
    match = SIZE_RE.match(text.strip())
    if not match:
        raise ValueError("SIZE must be a number of bytes, optionally with K, M or G "
                         "(powers of 1024), not %r" % text)
    return int(match.group(1)) * SUFFIXES[match.group(2).lower()]


def parse_args(argv):
    """(size, flavor) from the command line; SystemExit with the usage otherwise."""
    if not 1 <= len(argv) <= 2:
        raise SystemExit(USAGE)
    try:
        size = parse_size(argv[0])
    except ValueError as exc:
        raise SystemExit("%s\n%s" % (exc, USAGE))
    flavor = argv[1] if len(argv) > 1 else "allocate"
    if flavor not in FLAVORS:
        raise SystemExit("FLAVOR must be one of %s, not %r\n%s"
                         % (", ".join(FLAVORS), flavor, USAGE))
    return size, flavor


def smaps_kib(text):
    """Sum of every ``Key: N kB`` line of smaps or smaps_rollup text, by key."""
    totals = {}
    for line in text.splitlines():
        parts = line.split()
        # VMA header lines and VmFlags have another shape; only "Key: N kB" counts
        if len(parts) == 3 and parts[0].endswith(":") and parts[2] == "kB":
            key = parts[0][:-1]
            totals[key] = totals.get(key, 0) + int(parts[1])
    return totals


def measure():
    """(rss, pss, shared, private) of this process, in KiB."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            kib = smaps_kib(f.read())
    except FileNotFoundError:     # kernels before 4.14
        with open("/proc/self/smaps") as f:
            kib = smaps_kib(f.read())
    rss, pss, shared_clean, shared_dirty, private_clean, private_dirty = (
        kib.get(field, 0) for field in FIELDS)
    return rss, pss, shared_clean + shared_dirty, private_clean + private_dirty


def touched_window(MPI, comm, size, flavor):
    """The window, every byte of this rank's memory in it written."""
    import numpy as np
    make = MPI.Win.Allocate if flavor == "allocate" else MPI.Win.Allocate_shared
    win = make(size, 1, MPI.INFO_NULL, comm)
    # nonzero so no layer can keep the pages as the shared zero page
    np.frombuffer(win.tomemory(), dtype="u1").fill(0xA5)
    return win


def report(nranks, size, flavor, baselines, afters):
    """Rank 0's lines: sums over the ranks of what each measured."""
    base_pss = sum(b[1] for b in baselines)
    rss, pss, shared, private = (sum(column) for column in zip(*afters))
    lines = [("ranks", nranks), ("window_bytes", size), ("flavor", flavor),
             ("baseline_pss_kib", base_pss), ("pss_kib", pss),
             ("window_pss_kib", pss - base_pss), ("rss_kib", rss),
             ("shared_kib", shared), ("private_kib", private)]
    return "\n".join("memory_%s %s" % line for line in lines)


def main(argv):
    size, flavor = parse_args(argv)       # before MPI: a usage error starts nothing
    MPI = mpi_module()
    import numpy  # noqa: F401  -- imported before the baseline so it is not window cost
    comm = MPI.COMM_WORLD
    comm.Barrier()          # whatever MPI sets up lazily belongs to the baseline
    baseline = measure()
    win = touched_window(MPI, comm, size, flavor)
    comm.Barrier()          # every rank has written its part before anyone measures
    after = measure()
    baselines, afters = comm.gather(baseline, root=0), comm.gather(after, root=0)
    if comm.Get_rank() == 0:
        print(report(comm.Get_size(), size, flavor, baselines, afters), flush=True)
    win.Free()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
