"""The OSU point-to-point and collective benchmarks, and their object forms, run by
every rank:

    shmrma-run -n N -m shmrma.bench.messages NAME [-m [MIN:]MAX] [--max-iterations N]
    mpiexec -n N python -m shmrma.bench.messages NAME [...]   (SHMRMA_BENCH_IMPL=mpi4py)

NAME is one of OMB 7.x's
  osu_latency    ping-pong of Send/Recv between ranks 0 and 1: half the round trip
  osu_bw         rank 0 Isends a window of 64 messages, rank 1 Irecvs them, Waitall
                 on both, then a 4-byte acknowledgement back: MB/s
  osu_bcast      Bcast from rank 0, then a Barrier-free loop: the average over the
  osu_allreduce  ranks of each one's time per call (Allreduce of float32, SUM; -T
                 mpi_double: float64)
  osu_barrier    Barrier: the average over the ranks of each one's time per call
  osu_iallreduce Iallreduce of float32, SUM, then Wait (OMB's with no compute to
                 overlap: the latency of the nonblocking form)
or one of the object forms (pickled Python objects, which OMB has not):
  obj_latency    ping-pong of send/recv of a bytes object of the size
  obj_allreduce  allreduce of an int (the size column says 8)
  obj_bcast      bcast of a bytes object of the size
or the vector collectives as real programs call them: SIZE bytes to or from each
rank as ``[buf, counts, displs, MPI.BYTE]``, counts and displacements in
``array('i')``, in buffer objects of 256 KiB whatever SIZE (their cost must follow
the bytes moved, not the object):
  vec_alltoallv  Alltoallv
  vec_allgatherv Allgatherv
  vec_gatherv    Gatherv to rank 0
  vec_scatterv   Scatterv from rank 0
or what a program pays to make its communicators and types (one row, size 8):
  comm_dup       Dup, then Free
  comm_split     Split in two (color rank % 2), then Free
  comm_cart_sub  Create_cart of a 2-d grid (Compute_dims), Sub of its rows, Free both
  type_contiguous  Create_contiguous(4) of DOUBLE, Commit, Free (local)

--form bare|type|count: the buffer specification of osu_latency's and osu_bw's
messages: the array itself (the default), ``[buf, MPI.BYTE]`` or
``[buf, size, MPI.BYTE]`` (the form of every OSU benchmark and of mpi4py's demos).

The loops follow OMB 7.x: 10,000 timed iterations after 100 warm-up up to 8 KiB
and 1,000 after 10 above for latency; 100 after 10 and 20 after 2 for bandwidth;
1,000 after 100 and 100 after 10 for collectives. --max-iterations caps them
(compare --quick). Output is OMB's: a header, then ``size value`` rows (osu_barrier
and the object collectives of one size print one row, size 8). The same code
measures shmrma and mpi4py: only the ``MPI`` module differs.
"""
import sys
import time

from .jobs import mpi_module

LARGE = 8192
LOOPS = {"latency": ((10000, 100), (1000, 10)), "bw": ((100, 10), (20, 2)),
         "collective": ((1000, 100), (100, 10))}
KINDS = {"osu_latency": "latency", "osu_bw": "bw", "osu_bcast": "collective",
         "osu_allreduce": "collective", "osu_barrier": "collective",
         "osu_iallreduce": "collective",
         "obj_latency": "latency", "obj_allreduce": "collective", "obj_bcast": "collective",
         "vec_alltoallv": "collective", "vec_allgatherv": "collective",
         "vec_gatherv": "collective", "vec_scatterv": "collective",
         "comm_dup": "collective", "comm_split": "collective", "comm_cart_sub": "collective",
         "type_contiguous": "collective"}
TITLES = {"osu_latency": "Latency", "osu_bw": "Bandwidth", "osu_bcast": "Broadcast Latency",
          "osu_allreduce": "Allreduce Latency", "osu_barrier": "Barrier Latency",
          "osu_iallreduce": "Iallreduce Latency",
          "obj_latency": "send/recv of objects Latency",
          "obj_allreduce": "allreduce of an int Latency",
          "obj_bcast": "bcast of objects Latency",
          "vec_alltoallv": "Alltoallv Latency", "vec_allgatherv": "Allgatherv Latency",
          "vec_gatherv": "Gatherv Latency", "vec_scatterv": "Scatterv Latency",
          "comm_dup": "Dup + Free Latency", "comm_split": "Split + Free Latency",
          "comm_cart_sub": "Create_cart + Sub + Free Latency",
          "type_contiguous": "Create_contiguous + Commit + Free Latency"}
ONE_SIZE = ("osu_barrier", "obj_allreduce", "comm_dup", "comm_split", "comm_cart_sub",
            "type_contiguous")
VECTOR_OBJECT = 256 * 1024      # the buffer objects of the vector collectives, in bytes
MAX_SIZE = {"latency": 1 << 22, "bw": 1 << 22, "collective": 1 << 20}
WINDOW = 64
TYPES = {"mpi_float": "f4", "mpi_double": "f8"}     # OMB's -T, for the reductions
# the buffer specification of a point-to-point message: (MPI, array, size) -> message
FORMS = {"bare": lambda MPI, buf, size: buf,
         "type": lambda MPI, buf, size: [buf, MPI.BYTE],
         "count": lambda MPI, buf, size: [buf, size, MPI.BYTE]}


def parse(argv):
    if not argv or argv[0] not in KINDS:
        raise SystemExit("usage: python -m shmrma.bench.messages %s [-m [MIN:]MAX] "
                         "[-T %s] [--form %s] [--max-iterations N]"
                         % ("|".join(KINDS), "|".join(TYPES), "|".join(FORMS)))
    name, kind = argv[0], KINDS[argv[0]]
    low, high, cap, element, form = 1, MAX_SIZE[kind], None, "f4", "bare"
    rest = list(argv[1:])
    while rest:
        flag = rest.pop(0)
        if flag == "-m" and rest:
            text = rest.pop(0)
            low, _, high = text.rpartition(":")
            low, high = int(low or 1), int(high)
        elif flag == "--max-iterations" and rest:
            cap = int(rest.pop(0))
        elif flag == "-T" and rest and rest[0] in TYPES:
            element = TYPES[rest.pop(0)]
        elif flag == "--form" and rest and rest[0] in FORMS:
            form = rest.pop(0)
        else:
            raise SystemExit("shmrma-bench: unknown option %r" % flag)
    sizes = [8] if name in ONE_SIZE else _powers(low, high)
    return name, kind, sizes, cap, element, form


def _powers(low, high):
    sizes, size = [], 1
    while size <= high:
        if size >= low:
            sizes.append(size)
        size *= 2
    return sizes


def loops(kind, size, cap):
    iterations, skip = LOOPS[kind][size > LARGE]
    return skip, iterations if cap is None else min(cap, iterations)


class Run:
    def __init__(self, MPI, name, kind, element="f4", form="bare"):
        self.MPI, self.name, self.kind, self.element = MPI, name, kind, element
        self.form = FORMS[form]
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.check = None       # what a step's data must be after the loop, if it knows

    def step(self, size):
        """The zero-argument function doing one iteration at ``size``."""
        import numpy as np
        MPI, comm, rank = self.MPI, self.comm, self.rank
        send = np.ones(max(size, 4), np.uint8)[:size]
        recv = np.zeros(max(size, 4), np.uint8)[:size]
        if self.name in ("osu_latency", "osu_bw"):
            send, recv = self.form(MPI, send, size), self.form(MPI, recv, size)
        if self.name == "osu_latency":
            return _ping_pong(rank, lambda: comm.Send(send, 1, 1), lambda: comm.Recv(recv, 1, 1),
                              lambda: comm.Recv(recv, 0, 1), lambda: comm.Send(send, 0, 1))
        if self.name == "obj_latency":
            obj = bytes(size)
            return _ping_pong(rank, lambda: comm.send(obj, 1, 1), lambda: comm.recv(None, 1, 1),
                              lambda: comm.recv(None, 0, 1), lambda: comm.send(obj, 0, 1))
        if self.name == "osu_bw":
            return self._bandwidth(send, recv)
        if self.name == "osu_bcast":
            return lambda: comm.Bcast(recv if rank else send, 0)
        if self.name in ("osu_allreduce", "osu_iallreduce"):
            floats = np.ones(max(size // np.dtype(self.element).itemsize, 1), self.element)
            out = np.zeros_like(floats)
            if self.name == "osu_iallreduce":
                return lambda: comm.Iallreduce(floats, out, MPI.SUM).Wait()
            return lambda: comm.Allreduce(floats, out, MPI.SUM)
        if self.name == "osu_barrier":
            return comm.Barrier
        if self.name == "obj_allreduce":
            return lambda: comm.allreduce(rank + 1)
        if self.name in VECTOR_CALLS:
            one, self.check = VECTOR_CALLS[self.name](MPI, comm, size)
            return one
        if self.name in MAKERS:
            return MAKERS[self.name](MPI, comm)
        obj = bytes(size)
        return lambda: comm.bcast(obj if rank == 0 else None, 0)

    def _bandwidth(self, send, recv):
        import numpy as np
        comm, MPI = self.comm, self.MPI
        ack = np.zeros(4, np.uint8)
        if self.rank == 0:
            def one():
                MPI.Request.Waitall([comm.Isend(send, 1, 100) for _ in range(WINDOW)])
                comm.Recv(ack, 1, 101)
        else:
            def one():
                MPI.Request.Waitall([comm.Irecv(recv, 0, 100) for _ in range(WINDOW)])
                comm.Send(ack, 0, 101)
        return one

    def timed(self, one, n):
        start = time.perf_counter()
        for _ in range(n):
            one()
        return time.perf_counter() - start

    def value(self, size, seconds, iterations):
        """OMB's number: us (half a round trip for latency; the ranks' average for a
        collective) or MB/s."""
        if self.kind == "latency":
            return seconds * 1e6 / iterations / 2
        if self.kind == "bw":
            return size / 1e6 * iterations * WINDOW / seconds
        mine = seconds * 1e6 / iterations
        return self.comm.allreduce(mine) / self.comm.Get_size()


def _vector_specs(MPI, comm, size):
    """(``spec(fill)``: a new vector spec of ``size`` bytes per rank filled with
    ``fill``, in a 256 KiB object, counts and displacements in array('i'); this
    rank's own part, ``size`` ones)."""
    from array import array
    import numpy as np
    nranks = comm.Get_size()
    counts = array("i", [size] * nranks)
    displs = array("i", [size * r for r in range(nranks)])

    def spec(fill):
        return [np.full(max(VECTOR_OBJECT, size * nranks), fill, np.uint8), counts, displs,
                MPI.BYTE]
    return spec, np.ones(size, np.uint8)


def _received(spec, size, nranks):
    """Did every rank's part arrive (ones), and nothing past them change (zeros)?"""
    data = spec[0]
    return bool((data[:size * nranks] == 1).all() and (data[size * nranks:] == 0).all())


# each gives (one call, a check of what it received, run after the timed loop)
def _alltoallv(MPI, comm, size):
    spec, _ = _vector_specs(MPI, comm, size)
    send, recv = spec(1), spec(0)
    return (lambda: comm.Alltoallv(send, recv),
            lambda: _received(recv, size, comm.Get_size()))


def _allgatherv(MPI, comm, size):
    spec, mine = _vector_specs(MPI, comm, size)
    recv = spec(0)
    return (lambda: comm.Allgatherv([mine, size, MPI.BYTE], recv),
            lambda: _received(recv, size, comm.Get_size()))


def _gatherv(MPI, comm, size):
    spec, mine = _vector_specs(MPI, comm, size)
    recv = spec(0) if comm.Get_rank() == 0 else None
    return (lambda: comm.Gatherv([mine, size, MPI.BYTE], recv, 0),
            lambda: recv is None or _received(recv, size, comm.Get_size()))


def _scatterv(MPI, comm, size):
    spec, mine = _vector_specs(MPI, comm, size)
    send = spec(1) if comm.Get_rank() == 0 else None
    mine[:] = 0
    return (lambda: comm.Scatterv(send, [mine, size, MPI.BYTE], 0),
            lambda: bool((mine == 1).all()))


VECTOR_CALLS = {"vec_alltoallv": _alltoallv, "vec_allgatherv": _allgatherv,
                "vec_gatherv": _gatherv, "vec_scatterv": _scatterv}


def _dup(MPI, comm):
    return lambda: comm.Dup().Free()


def _split(MPI, comm):
    color = comm.Get_rank() % 2
    return lambda: comm.Split(color, 0).Free()


def _cart_sub(MPI, comm):
    dims = MPI.Compute_dims(comm.Get_size(), 2)

    def one():
        cart = comm.Create_cart(dims)
        rows = cart.Sub([False, True])
        rows.Free()
        cart.Free()
    return one


def _contiguous(MPI, comm):
    return lambda: MPI.DOUBLE.Create_contiguous(4).Commit().Free()


MAKERS = {"comm_dup": _dup, "comm_split": _split, "comm_cart_sub": _cart_sub,
          "type_contiguous": _contiguous}


def _ping_pong(rank, send0, recv0, recv1, send1):
    if rank == 0:
        def one():
            send0()
            recv0()
    elif rank == 1:
        def one():
            recv1()
            send1()
    else:
        def one():
            pass
    return one


def main(argv):
    name, kind, sizes, cap, element, form = parse(argv)
    run = Run(mpi_module(), name, kind, element, form)
    comm = run.comm
    if kind != "collective" and comm.Get_size() != 2:
        raise SystemExit("shmrma-bench: %s needs exactly two ranks" % name)
    if run.rank == 0:
        unit = "Bandwidth (MB/s)" if kind == "bw" else \
            "Avg Latency(us)" if kind == "collective" else "Latency (us)"
        print("# OSU MPI %s Test v7.4" % TITLES[name])
        print("%-10s%18s" % ("# Size", unit), flush=True)
    for size in sizes:
        skip, iterations = loops(kind, size, cap)
        one = run.step(size)
        comm.Barrier()
        run.timed(one, skip)
        comm.Barrier()
        seconds = run.timed(one, iterations)
        if run.check is not None and not run.check():
            raise SystemExit("shmrma-bench: %s at %d bytes: rank %d received wrong data"
                             % (name, size, run.rank))
        value = run.value(size, seconds, iterations)
        if run.rank == 0:
            print("%-10d%18.2f" % (size, value), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
