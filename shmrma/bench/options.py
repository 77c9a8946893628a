"""The OSU one-sided benchmarks and their OMB 7.x options, parsed once for the
command line and again inside every rank.

Defaults follow the OMB 7.x code (its sources, not its README): exactly
two ranks, sizes 1 B to 4 MiB in powers of two, 10,000 timed iterations after
100 warm-up for latency (1,000 after 10 above 8 KiB), 100 after 10 for
bandwidth (20 after 2 above 8 KiB), 64 operations per bandwidth iteration.
One deliberate difference: fop and cas use one 8-byte integer by default
(OMB 5.x's MPI_LONG_LONG, as most published tables), not OMB 7.x's MPI_CHAR.
One addition: --max-iterations N caps the timed iterations of every size
(compare --quick), where OMB's -i would set them all to N.
"""
import argparse

LARGE_MESSAGE_SIZE = 8192
MAX_MESSAGE_SIZE = 1 << 22
ALL_SYNCS = ("lock", "flush", "flush_local", "lock_all", "pscw", "fence")
ACTIVE_SYNCS = ("pscw", "fence")


class Benchmark:
    """What one OSU benchmark does: its operation, kind and default options."""

    def __init__(self, name, title, op, kind, window="allocate", sync="flush",
                 syncs=ALL_SYNCS, datatype="mpi_char", one_size=False):
        self.name, self.title, self.op, self.kind = name, title, op, kind
        self.window, self.sync, self.syncs = window, sync, syncs
        self.datatype, self.one_size = datatype, one_size

    @property
    def header(self):
        return "# OSU %s Test v7.4" % self.title


BENCHMARKS = {b.name: b for b in (
    Benchmark("osu_put_latency", "MPI_Put Latency", "put", "latency"),
    Benchmark("osu_get_latency", "MPI_Get latency", "get", "latency"),
    Benchmark("osu_acc_latency", "MPI_Accumulate latency", "acc", "latency"),
    Benchmark("osu_get_acc_latency", "MPI_Get_accumulate latency", "get_acc", "latency",
              window="create", sync="lock"),
    Benchmark("osu_fop_latency", "MPI_Fetch_and_op latency", "fop", "latency",
              datatype="mpi_long_long", one_size=True),
    Benchmark("osu_cas_latency", "MPI_Compare_and_swap latency", "cas", "latency",
              datatype="mpi_long_long", one_size=True),
    Benchmark("osu_put_bw", "MPI_Put Bandwidth", "put", "bw"),
    Benchmark("osu_get_bw", "MPI_Get Bandwidth", "get", "bw"),
    Benchmark("osu_put_bibw", "MPI_Put Bi-directional Bandwidth", "put", "bibw",
              sync="pscw", syncs=ACTIVE_SYNCS),
)}

# -T name: (numpy typecode, MPI datatype name, name printed in the header)
DATATYPES = {
    "mpi_char": ("b", "CHAR", "MPI_CHAR"),
    "mpi_int": ("i", "INT", "MPI_INT"),
    "mpi_float": ("f", "FLOAT", "MPI_FLOAT"),
    "mpi_double": ("d", "DOUBLE", "MPI_DOUBLE"),
    "mpi_long_long": ("q", "LONG_LONG", "MPI_LONG_LONG"),
}
WINDOWS = {"create": "MPI_Win_create", "allocate": "MPI_Win_allocate",
           "dynamic": "MPI_Win_create_dynamic"}
SYNCS = {"lock": "MPI_Win_lock/unlock", "pscw": "MPI_Win_post/start/complete/wait",
         "fence": "MPI_Win_fence", "flush": "MPI_Win_flush",
         "flush_local": "MPI_Win_flush_local", "lock_all": "MPI_Win_lock_all/unlock_all"}


class UsageError(ValueError):
    pass


def parser(bench):
    ap = argparse.ArgumentParser(
        prog="shmrma-bench %s" % bench.name, add_help=True,
        description="%s (OMB 7.x conventions) on 2 ranks." % bench.header[2:])
    ap.add_argument("-w", "--win-option", dest="window", choices=sorted(WINDOWS),
                    default=bench.window, help="window creation (default %(default)s)")
    ap.add_argument("-s", "--sync-option", dest="sync", choices=bench.syncs,
                    default=bench.sync, help="synchronization (default %(default)s)")
    ap.add_argument("-m", "--message-size", dest="sizes", metavar="[MIN:]MAX",
                    help="message sizes in bytes, doubling from MIN up to MAX: MAX, "
                         "MIN:MAX, or MIN: for MIN up to the default MAX "
                         "(default 1:%d)" % MAX_MESSAGE_SIZE)
    ap.add_argument("-i", "--iterations", type=int, metavar="N",
                    help="timed iterations for every size")
    ap.add_argument("-x", "--warmup", type=int, metavar="N",
                    help="warm-up iterations for every size")
    ap.add_argument("--max-iterations", type=int, metavar="N",
                    help="not in OMB: at most N timed iterations at any size, fewer where "
                         "OMB's count for that size (or -i) is lower; compare --quick "
                         "uses it")
    ap.add_argument("-T", "--type", dest="datatype", choices=sorted(DATATYPES),
                    default=bench.datatype,
                    help="element type of accumulate, fop and cas (default %(default)s); "
                         "buffers are numpy arrays of the matching C type")
    if bench.kind != "latency":
        ap.add_argument("-W", "--window-size", type=int, default=64, metavar="N",
                        help="operations per iteration (default %(default)s)")
    return ap


def parse(name, argv):
    """(Benchmark, argparse namespace) for ``name`` and its OMB flags."""
    if name not in BENCHMARKS:
        raise UsageError("unknown benchmark %r; choose one of: %s"
                         % (name, ", ".join(BENCHMARKS)))
    bench = BENCHMARKS[name]
    opts = parser(bench).parse_args(argv)
    opts.min_size, opts.max_size = _size_range(opts.sizes)
    for flag, option, least in (("iterations", "-i", 1), ("warmup", "-x", 0),
                                ("max_iterations", "--max-iterations", 1)):
        if getattr(opts, flag) is not None and getattr(opts, flag) < least:
            raise UsageError("%s must be at least %d" % (option, least))
    if bench.op in ("put", "get") and opts.datatype != "mpi_char":
        raise UsageError("-T applies to acc, get_acc, fop and cas; put and get move "
                         "MPI_CHAR bytes, as in OMB")
    if getattr(opts, "window_size", 1) < 1:
        raise UsageError("-W must be at least 1")
    return bench, opts


def _size_range(text):
    """(MIN, MAX) of -m: "MAX", "MIN:MAX" or OMB's "MIN:" (MAX stays the default)."""
    if text is None:
        return 1, MAX_MESSAGE_SIZE
    low, sep, high = text.rpartition(":")
    try:
        low = int(low) if low else 1
        high = int(high) if high or not sep else MAX_MESSAGE_SIZE
    except ValueError:
        raise UsageError("-m takes MAX, MIN:MAX or MIN: in bytes, not %r" % text) from None
    if not 1 <= low <= high:
        raise UsageError("-m needs 1 <= MIN <= MAX, got %r" % text)
    return low, high


def sizes(bench, opts):
    """The message sizes of a run: MIN, doubling up to MAX, as OMB steps them;
    none below one element of -T. fop and cas have one size: one element."""
    element = element_size(opts)
    if bench.one_size:
        return [element]
    out, size = [], opts.min_size
    while size <= opts.max_size:
        if size >= element:
            out.append(size)
        size *= 2
    return out


def element_count(opts, size):
    """Elements of -T in a message of ``size`` bytes (OMB sends size / type size)."""
    return size // element_size(opts)


def element_size(opts):
    import numpy as np
    return np.dtype(DATATYPES[opts.datatype][0]).itemsize


def loop_counts(bench, opts, size):
    """(warm-up, timed) iterations for one message size, as OMB chooses them;
    --max-iterations (not OMB's) then caps the timed count."""
    large = size > LARGE_MESSAGE_SIZE
    if bench.kind == "latency":
        skip, iters = (10, 1000) if large else (100, 10000)
    else:
        skip, iters = (2, 20) if large else (10, 100)
    iters = iters if opts.iterations is None else opts.iterations
    if opts.max_iterations is not None:
        iters = min(iters, opts.max_iterations)
    return skip if opts.warmup is None else opts.warmup, iters
