"""One OSU one-sided benchmark, run by every rank:

    shmrma-run -n 2 -m shmrma.bench.osu NAME [OMB flags]
    mpiexec -n 2 python -m shmrma.bench.osu NAME [OMB flags]   (SHMRMA_BENCH_IMPL=mpi4py)
    python -m shmrma.bench.osu NAME [OMB flags]                (SHMRMA_BENCH_IMPL=numpy)

The same code measures shmrma and mpi4py: only the ``MPI`` module differs.
The loops follow OMB 7.x (see ``options``): a window per message size made
outside the timing, rank 0 the origin and the timer, Barrier between sizes,
output in OMB's header and column layout. Calls are prepared outside the timed
loop as ``functools.partial`` objects over numpy buffers, the same for both
implementations, so the loop holds nothing but the calls being measured.

The numpy implementation is the memory-copy reference: one process doing the
same copies (or in-place adds, for accumulate) between two private arrays with
numpy, with no synchronization.
"""
import sys
import time
from functools import partial

from . import options as osu
from .jobs import current_impl, mpi_module

PAGE = 4096
# OMB's column width: osu_util.h says 20 under #ifndef FIELD_WIDTH, but OMB's
# configure.ac (6.x-7.4) has AC_DEFINE([FIELD_WIDTH], [18]), which every compile
# line carries as -DFIELD_WIDTH=18, so real rows are "%-10d%18.2f", 28 characters.
FIELD_WIDTH = 18


def main(argv):
    if not argv:
        raise SystemExit("usage: python -m shmrma.bench.osu NAME [OMB flags]")
    try:
        bench, opts = osu.parse(argv[0], argv[1:])
    except osu.UsageError as exc:
        raise SystemExit("shmrma-bench: %s" % exc)
    if current_impl() == "numpy":
        return run_reference(bench, opts)
    return Run(mpi_module(), bench, opts).all_sizes()


def aligned(nbytes, fill=0):
    """A page-aligned uint8 array of nbytes (OMB uses posix_memalign and memset)."""
    import numpy as np
    raw = np.empty(nbytes + PAGE, dtype=np.uint8)
    start = -raw.ctypes.data % PAGE
    out = raw[start:start + nbytes]
    out.fill(fill)
    return out


def elements(buf, offset, size, typecode):
    """The whole elements of ``typecode`` in bytes [offset, offset + size) of buf:
    OMB sends size / type size elements, so a 6-byte message of MPI_INT moves one."""
    import numpy as np
    itemsize = np.dtype(typecode).itemsize
    return buf[offset:offset + size // itemsize * itemsize].view(typecode)


def print_header(bench, opts, reference=None):
    print(bench.header)
    print("# Window creation: %s" % osu.WINDOWS[opts.window])
    print("# Synchronization: %s" % osu.SYNCS[opts.sync])
    print("# Datatype: %s." % osu.DATATYPES[opts.datatype][2])
    if reference:
        print("# Reference: %s" % reference)
    unit = "Latency (us)" if bench.kind == "latency" else "Bandwidth (MB/s)"
    print("%-10s%*s" % ("# Size", FIELD_WIDTH, unit), flush=True)


def result(bench, opts, size, seconds, iterations):
    """OMB's number: µs per iteration (halved for fence and PSCW) or MB/s."""
    if bench.kind == "latency":
        halve = 2 if opts.sync in osu.ACTIVE_SYNCS else 1
        return seconds * 1e6 / iterations / halve
    moved = size / 1e6 * iterations * opts.window_size
    return moved / seconds * (2 if bench.kind == "bibw" else 1)


def print_row(size, value):
    print("%-10d%*.2f" % (size, FIELD_WIDTH, value), flush=True)


class Run:
    """The benchmark on one rank of a two-rank job."""

    def __init__(self, MPI, bench, opts):
        self.MPI, self.bench, self.opts = MPI, bench, opts
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.peer = 1 - self.rank
        self.typecode = osu.DATATYPES[opts.datatype][0]

    def all_sizes(self):
        opts = self.opts
        if self.comm.Get_size() != 2:
            self.fail("This test requires exactly two processes")
        if self.rank == 0:
            print_header(self.bench, opts)
        for size in osu.sizes(self.bench, opts):
            skip, iterations = osu.loop_counts(self.bench, opts, size)
            self.open_window(size)
            self.comm.Barrier()
            self.timed(skip)
            seconds = self.timed(iterations)
            self.comm.Barrier()
            if self.rank == 0:
                print_row(size, result(self.bench, opts, size, seconds, iterations))
            self.close_window()
        return 0

    def fail(self, message):
        if self.rank == 0:
            print("shmrma-bench: %s" % message, file=sys.stderr, flush=True)
        self.comm.Barrier()
        sys.exit(2)

    # ------------------------------------------------------------ windows

    def open_window(self, size):
        """The window of one message size, the origin buffers and the prepared calls."""
        import numpy as np
        MPI, kind = self.MPI, self.bench.kind
        count = 1 if kind == "latency" else self.opts.window_size
        nbytes = size * count
        if self.opts.window == "allocate":
            self.win = MPI.Win.Allocate(nbytes, 1, MPI.INFO_NULL, self.comm)
            self.memory = np.frombuffer(self.win.tomemory(), dtype=np.uint8)
            self.memory.fill(0)
            base = 0
        else:
            self.memory = aligned(nbytes)
            if self.opts.window == "create":
                self.win = MPI.Win.Create(self.memory, 1, MPI.INFO_NULL, self.comm)
                base = 0
            else:
                self.win = MPI.Win.Create_dynamic(MPI.INFO_NULL, self.comm)
                self.win.Attach(self.memory)
                base = self.comm.sendrecv(MPI.Get_address(self.memory), self.peer,
                                          source=self.peer)
        self.origin = aligned(nbytes, 1)
        self.result_buffer = aligned(nbytes)
        self.compare = aligned(nbytes)
        self.calls = [self.call(j * size, size, base + j * size) for j in range(count)]

    def close_window(self):
        if self.opts.window == "dynamic":
            self.win.Detach(self.memory)
        self.win.Free()
        self.win = self.memory = self.calls = None

    def call(self, offset, size, disp):
        """One prepared operation towards the peer: origin bytes [offset, offset+size)."""
        def view(buf):
            return elements(buf, offset, size, self.typecode)
        op, win, peer, MPI = self.bench.op, self.win, self.peer, self.MPI
        if op == "put":
            return partial(win.Put, view(self.origin), peer, disp)
        if op == "get":
            return partial(win.Get, view(self.result_buffer), peer, disp)
        data = view(self.origin)
        if op == "acc":
            return partial(win.Accumulate, data, peer, disp, MPI.SUM)
        result = view(self.result_buffer)
        if op == "get_acc":
            return partial(win.Get_accumulate, data, result, peer, disp, MPI.SUM)
        if op == "fop":
            return partial(win.Fetch_and_op, data, result, peer, disp, MPI.SUM)
        return partial(win.Compare_and_swap, data, view(self.compare), result, peer, disp)

    # ------------------------------------------------------------ timed loops

    def timed(self, n):
        """Run n iterations of the benchmark's loop; rank 0's elapsed seconds."""
        sync = self.opts.sync
        if sync in osu.ACTIVE_SYNCS:
            return self.active_loop(n)
        if self.rank != 0:
            return 0.0
        win, peer = self.win, self.peer
        exclusive = self.bench.op in ("get_acc",) or (
            self.bench.op in ("fop", "cas") and sync == "lock")
        lock_type = self.MPI.LOCK_EXCLUSIVE if exclusive else self.MPI.LOCK_SHARED
        if sync in ("flush", "flush_local"):
            flush = win.Flush if sync == "flush" else win.Flush_local
            win.Lock(peer, lock_type)
            seconds = self.loop(n, partial(flush, peer))
            win.Unlock(peer)
            return seconds
        if sync == "lock":
            return self.loop(n, partial(win.Unlock, peer), partial(win.Lock, peer, lock_type))
        return self.loop(n, win.Unlock_all, win.Lock_all)

    def loop(self, n, after, before=None):
        """n iterations of [before()] calls after(), timed with MPI.Wtime."""
        now, calls = self.MPI.Wtime, self.calls
        if len(calls) > 1:
            start = now()
            for _ in range(n):
                if before is not None:
                    before()
                for call in calls:
                    call()
                after()
            return now() - start
        call = calls[0]
        if before is None:
            start = now()
            for _ in range(n):
                call()
                after()
            return now() - start
        start = now()
        for _ in range(n):
            before()
            call()
            after()
        return now() - start

    # OMB's order of calls per iteration in the active modes, rank 0 then rank 1:
    # F fence, C the calls, S start, X complete, P post, W wait.
    ACTIVE_STEPS = {
        ("fence", "latency"): ("FCFF", "FFCF"), ("fence", "bw"): ("FCF", "FF"),
        ("fence", "bibw"): ("FCF", "FCF"),
        ("pscw", "latency"): ("SCXPW", "PWSCX"), ("pscw", "bw"): ("SCX", "PW"),
        ("pscw", "bibw"): ("PSCXW", "PSCXW"),
    }

    def active_loop(self, n):
        """Fence or PSCW: both ranks take part, in OMB's order of calls."""
        win, calls = self.win, self.calls

        def run_calls():
            for call in calls:
                call()
        actions = {"F": partial(win.Fence, 0), "C": run_calls}
        if self.opts.sync == "pscw":
            group = win.Get_group()
            peer_group = group.Incl([self.peer])
            group.Free()
            actions.update(S=partial(win.Start, peer_group), X=win.Complete,
                           P=partial(win.Post, peer_group), W=win.Wait)
        letters = self.ACTIVE_STEPS[self.opts.sync, self.bench.kind][self.rank]
        steps = [actions[letter] for letter in letters]
        start = self.MPI.Wtime()
        for _ in range(n):
            for step in steps:
                step()
        return self.MPI.Wtime() - start


def run_reference(bench, opts):
    """The numpy reference: the same copies or adds in one process."""
    import numpy as np
    print_header(bench, opts, reference="numpy %s in one process, no MPI" % (
        "in-place add" if bench.op == "acc" else "copy"))
    if bench.op not in ("put", "get", "acc"):
        raise SystemExit("shmrma-bench: --impl numpy is a reference for put, get and acc "
                         "only, not %s" % bench.name)
    typecode = osu.DATATYPES[opts.datatype][0]
    for size in osu.sizes(bench, opts):
        count = 1 if bench.kind == "latency" else opts.window_size
        skip, iterations = osu.loop_counts(bench, opts, size)
        here, there = aligned(size * count, 1), aligned(size * count)
        calls = []
        for j in range(count):
            a = elements(here, j * size, size, typecode)
            b = elements(there, j * size, size, typecode)
            if bench.op == "acc":
                calls.append(partial(np.add, b, a, out=b))
            else:
                calls.append(partial(np.copyto, *((b, a) if bench.op == "put" else (a, b))))
        for n in (skip, iterations):
            start = time.perf_counter()
            for _ in range(n):
                for call in calls:
                    call()
            seconds = time.perf_counter() - start
        print_row(size, result(bench, opts, size, seconds, iterations))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
