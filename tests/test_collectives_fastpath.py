"""The collective fast paths (shmrma/csrc/coll/: area.c, reductions.c, parts.c) against the Python path.

Bcast, Reduce, Allreduce, Gather, Scatter, Alltoall(v), ... and the object
collectives built on allgather and bcast take their common case in C on the same shared areas and protocol as
coll/blocking.py. Every scenario runs with the fast paths on at every rank, off at
every rank, and on at some ranks only (the two paths meet in one call), and all
three must end the same on every rank: the same bytes, the same objects, the
same errors. Spies show the C path was taken where it should be, that it
hands the call to Python after the first step when a rank failed, and that it
maps the large area itself when the data need it first. No numbered rule covers
collectives; the behaviour is mpi4py's.
"""
import threading

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic
from shmrma.coll import blocking as collective
from shmrma.rma import fastpath
from mpitest import (alltoallv_case, assert_every_mode_agrees, message_form_scenarios,
                     run_in_every_mode, vector_scenarios)

FAST = ("fast_bcast", "fast_reduce", "fast_allreduce", "fast_allgather_bytes",
        "fast_bcast_bytes", "fast_gather", "fast_allgather", "fast_scatter", "fast_alltoall",
        "fast_alltoallv", "fast_gatherv", "fast_allgatherv", "fast_scatterv", "fast_scan",
        "fast_reduce_scatter_block")
BIG = 1 << 17       # 1 MiB of doubles: past the small area, chunked through the large one


class Spy:
    def __init__(self):
        self.calls = []
        for name in FAST:
            setattr(collective, name, self._wrap(name, getattr(collective, name)))

    def _wrap(self, name, function):
        def spy(*args):
            result = function(*args)
            self.calls.append((name, "done" if result is True or isinstance(result, (list, bytes))
                               else "handed over" if isinstance(result, tuple) else "missed"))
            return result
        return spy

    def take(self):
        calls, self.calls = self.calls, []
        return calls


def _scenarios(comm):
    rank, size = comm.rank, comm.size

    def bcast(n, root=0):
        buf = np.arange(n, dtype="f8") * (root + 1) if rank == root else np.zeros(n)
        comm.Bcast(buf, root)
        return buf

    def bcast_into(buf):
        if rank == 0:
            buf = np.arange(BIG, dtype="f8").view(np.uint8)
        comm.Bcast(buf, 0)
        return bytes(buf[-16:])

    def allreduce(n, op=MPI.SUM, in_place=False):
        send = np.arange(n, dtype="i8") * (rank + 1) + rank
        out = np.zeros(n, "i8")
        if in_place:
            comm.Allreduce(MPI.IN_PLACE, send, op)
            return send
        comm.Allreduce(send, out, op)
        return out

    def reduce(n, root):
        out = np.zeros(n) if rank == root else None
        comm.Reduce(np.full(n, rank + 0.5), out, MPI.MAX, root)
        return out

    def gather(n, root=None, in_place=False, count=None):
        send = np.arange(count or n, dtype="i4") + 100 * rank
        out = np.full(n * size, -1, "i4")
        if in_place:
            out[rank * n:(rank + 1) * n] = send
            send = MPI.IN_PLACE
        if root is None:
            comm.Allgather(send, out)
        else:
            comm.Gather(send, out if rank == root else None, root)
        return out

    def scatter(n, root, in_place=False, count=None):
        send = np.arange(n * size, dtype="f4") + 0.5 if rank == root else None
        out = np.full(count or n, -1, "f4")
        comm.Scatter(send, MPI.IN_PLACE if in_place and rank == root else out, root)
        return out

    def alltoall(n, in_place=False, count=None):
        send = np.arange(n * size, dtype="u2") + 1000 * rank
        out = np.zeros((count or n) * size, "u2")
        if in_place:
            comm.Alltoall(MPI.IN_PLACE, send)
            return send
        comm.Alltoall(send, out)
        return out

    def alltoallw(rows, in_place=False, count=1):
        """Rank j gets column pair j of every rank's (rows x 2 size) array: subarray
        types, packed, then moved as Alltoallv's bytes in C."""
        whole = np.arange(rows * 2 * size, dtype="i4").reshape(rows, 2 * size) + 1000 * rank
        types = [MPI.INT.Create_subarray([rows, 2 * size], [rows, 2], [0, 2 * j]).Commit()
                 for j in range(size)]
        out = np.full_like(whole, -1)
        try:
            if in_place:
                comm.Alltoallw(MPI.IN_PLACE, [whole, ([1] * size, [0] * size), types])
                return whole
            comm.Alltoallw([whole, ([count] * size, [0] * size), types],
                           [out, ([1] * size, [0] * size), types])
            return out
        finally:
            for datatype in types:
                datatype.Free()

    def scan(n, inclusive=True, in_place=False, op=MPI.SUM):
        send = np.arange(n, dtype="f8") * (rank + 1) - rank
        out = np.full(n, -7.0)
        call = comm.Scan if inclusive else comm.Exscan
        if in_place:
            call(MPI.IN_PLACE, send, op)
            return send
        call(send, out, op)
        return out

    def reduce_scatter_block(n, in_place=False, op=MPI.SUM):
        send = np.arange(n * size, dtype="i8") * (rank + 2)
        out = np.zeros(n, "i8")
        if in_place:
            comm.Reduce_scatter_block(MPI.IN_PLACE, send, op)
            return send[:n]
        comm.Reduce_scatter_block(send, out, op)
        return out

    def first_collective(make):
        """The first collective of a new communicator maps its area: in C or in
        Python (the mixed mode has both in one call), then moves the data."""
        new = make()
        try:
            out = np.zeros(2)
            new.Allreduce(np.array([rank, 1.0]), out)
            return out.tolist(), new.allgather(rank)
        finally:
            new.Free()

    return {
        "first collective of a Dup": lambda: first_collective(comm.Dup),
        "first collective of a Split": lambda: first_collective(
            lambda: comm.Split(0, size - rank)),
        **message_form_scenarios(comm, "", lambda name, *args: getattr(comm, name)(*args)),
        **vector_scenarios(comm, "", lambda name, *args: getattr(comm, name)(*args)),
        "Bcast small": lambda: bcast(4),
        "Bcast large": lambda: bcast(BIG, size - 1),
        "Allreduce small": lambda: allreduce(3),
        "Allreduce large": lambda: allreduce(BIG, MPI.PROD),
        "Allreduce in place": lambda: allreduce(5, MPI.BXOR, in_place=True),
        "Allreduce float NaN": lambda: _nan_fold(comm),
        "Allreduce every kernel": lambda: _every_kernel(comm),
        "Reduce small": lambda: reduce(2, 0),
        "Reduce large": lambda: reduce(BIG, size - 1),
        "Allreduce mismatch": lambda: allreduce(2 if rank == 1 else 3),
        "Allreduce bad op here": lambda: comm.Allreduce(np.ones(2), np.zeros(2),
                                                        MPI.BAND if rank == 0 else MPI.SUM),
        "Bcast short": lambda: comm.Bcast(np.zeros(4 if rank == 0 else 2), 0),
        "Bcast bad root": lambda: comm.Bcast(np.zeros(1), size),
        # a non-root that cannot receive raises at the end of the call; the root and
        # the others complete (nobody waits for it, it takes part to the end)
        "Bcast large read-only here": lambda: bcast_into(
            bytes(8 * BIG) if rank == 1 % size and rank != 0 else bytearray(8 * BIG)),
        "allgather": lambda: comm.allgather({"rank": rank}),
        "allgather large": lambda: [len(x) for x in comm.allgather(b"x" * (20000 + rank))],
        "allreduce": lambda: comm.allreduce(rank + 1),
        "allreduce lists": lambda: comm.allreduce([rank]),
        "scan": lambda: comm.scan(rank + 1, MPI.PROD),
        "bcast": lambda: comm.bcast(("from", rank) if rank == 1 % size else None, 1 % size),
        "bcast large": lambda: len(comm.bcast(b"y" * 30000 if rank == 0 else None, 0)),
        "bcast unpicklable": lambda: comm.bcast(threading.Lock() if rank == 0 else None, 0),
        "allgather unpicklable": lambda: comm.allgather(threading.Lock() if rank == 1 % size
                                                        else rank),
        "Gather small": lambda: gather(3, size - 1),
        "Gather in place": lambda: gather(2, 0, in_place=rank == 0),
        "Gather mismatch": lambda: gather(2, 0, count=3 if rank == size - 1 else 2),
        "Gather bad root": lambda: gather(2, -1),
        "Allgather small": lambda: gather(5),
        "Allgather in place": lambda: gather(4, in_place=True),
        "Allgather large": lambda: gather(BIG // 4),
        "Allgather mismatch": lambda: gather(2, count=1 if rank == 0 else 2),
        "Scatter small": lambda: scatter(3, size - 1),
        "Scatter in place": lambda: scatter(2, 0, in_place=True),
        "Scatter short receive": lambda: scatter(4, 0, count=3 if rank == size - 1 else 4),
        "Scatter large": lambda: scatter(BIG // 8, 0),
        "Alltoall small": lambda: alltoall(3),
        "Alltoall in place": lambda: alltoall(2, in_place=True),
        "Alltoall mismatch": lambda: alltoall(2, count=3 if rank == 0 else 2),
        "Alltoall large": lambda: alltoall(BIG // 8),
        # the parts received land in the buffer the parts sent are still read from
        "Alltoall in place large": lambda: alltoall(BIG // 8, in_place=True),
        "Alltoall large mismatch": lambda: alltoall(BIG // 8,
                                                    count=BIG // 8 + (rank == 0) * 2),
        "Gather large": lambda: gather(BIG // 4, size - 1),
        "Scatter large in place": lambda: scatter(BIG // 8, 1 % size, in_place=True),
        "Alltoallv large": lambda: alltoallv_case(comm, comm.Alltoallv, scale=20000),
        "Alltoallw subarrays": lambda: alltoallw(3),
        "Alltoallw in place": lambda: alltoallw(4, in_place=True),
        "Alltoallw large": lambda: alltoallw(3000),
        "Alltoallw one part too many here": lambda: alltoallw(2, count=2 if rank == 0 else 1),
        "Scan small": lambda: scan(3),
        "Scan in place": lambda: scan(4, in_place=True, op=MPI.PROD),
        "Exscan small": lambda: scan(2, inclusive=False, op=MPI.MAX),
        "Exscan in place": lambda: scan(3, inclusive=False, in_place=True),
        "Scan large": lambda: scan(BIG),
        "Scan mismatch": lambda: scan(2 if rank == 0 else 3),
        "Reduce_scatter_block small": lambda: reduce_scatter_block(3),
        "Reduce_scatter_block in place": lambda: reduce_scatter_block(2, True, MPI.BOR),
        "Reduce_scatter_block large": lambda: reduce_scatter_block(BIG // size),
        "Reduce_scatter_block bad op here": lambda: reduce_scatter_block(
            2, op=MPI.MAXLOC if rank == size - 1 else MPI.SUM),
    }


def _nan_fold(comm):
    """NaNs and signed zeros fold the same in C and numpy, bit for bit."""
    values = [np.nan, -0.0, 1.0, np.inf]
    send = np.array([values[(comm.rank + i) % 4] for i in range(4)])
    out = np.zeros(4)
    comm.Allreduce(send, out, MPI.MAX)
    return out


KERNEL_TYPES = ("i1", "u1", "i2", "u2", "i4", "i8", "u4", "u8", "f4", "f8")
KERNEL_OPS = {"f": ("SUM", "PROD", "MAX", "MIN"),
              "iu": ("SUM", "PROD", "MAX", "MIN", "BAND", "BOR", "BXOR", "LAND", "LOR",
                     "LXOR")}
KERNEL_LENGTH = 37      # two 16-element blocks of the C kernels' SIMD loop, and a tail


def _kernel_operands(dtype, rank):
    """KERNEL_LENGTH elements of ``dtype`` with its edge cases (NaNs, signed zeros,
    infinities; the extremes of an integer, for wrapping), different at each rank."""
    if dtype[0] == "f":
        edges = [0.0, -0.0, np.nan, 1.5, -2.0, np.inf, -np.inf, 3.0, 2.5, -0.0, 1e30, -7.25]
    else:
        info = np.iinfo(dtype)
        edges = [0, info.max, info.min, 5, 7, 0, 3, 1, info.max, 12, -1 if info.min else 2]
    return np.roll(np.resize(np.array(edges, dtype), KERNEL_LENGTH), 3 * rank)


def _every_kernel(comm):
    """Every (element type, op) of the C reductions' kernels over whole SIMD blocks,
    folded into a new buffer and in place, bit for bit against the fold of
    Op.Reduce_local (numpy, in rank order)."""
    found = []
    for dtype in KERNEL_TYPES:
        everyone = [_kernel_operands(dtype, r) for r in range(comm.size)]
        for name in KERNEL_OPS["f" if dtype[0] == "f" else "iu"]:
            op = getattr(MPI, name)
            expected = everyone[0].copy()
            for part in everyone[1:]:
                part = part.copy()
                op.Reduce_local(expected, part)     # part = expected op part
                expected = part
            out = np.zeros_like(expected)
            comm.Allreduce(everyone[comm.rank], out, op)
            in_place = everyone[comm.rank].copy()
            comm.Allreduce(MPI.IN_PLACE, in_place, op)
            found.append((dtype, name, out.tobytes() == expected.tobytes(),
                          in_place.tobytes() == expected.tobytes()))
    return [case for case in found if not all(case[2:])] or "all agree"


def _all_modes():
    MPI.COMM_WORLD.allgather(None)  # the first collective maps the small area (in Python)
    return run_in_every_mode(_scenarios, Spy())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_fast_slow_and_mixed_paths_end_the_same(nranks):
    """Every scenario gives the same results and errors on every path."""
    assert_every_mode_agrees(shmrma.launch(_all_modes, nranks, timeout=100),
                             lambda record: record[1] == "missed")


@pytest.mark.timeout(120)
@pytest.mark.skipif(atomic.BACKEND != "c", reason="the fallback engine has no C path")
def test_the_c_path_takes_the_common_cases():
    """Plain buffers and pickles within the small area are done in C; a failing rank
    or data the large area must first be mapped for are handed to Python after the
    first step; once it is mapped, C moves large data too."""
    results = shmrma.launch(_all_modes, 3, timeout=100)
    for rank, (fast, _, _) in enumerate(results):
        taken = fast[1]
        for name in ("Bcast small", "Allreduce small", "Allreduce in place", "Reduce small",
                     "allgather", "allreduce", "bcast", "Allreduce float NaN", "Gather small",
                     "Gather in place", "Allgather small", "Allgather in place",
                     "Scatter small", "Scatter in place", "Alltoall small", "Alltoall in place",
                     "Scan small", "Scan in place", "Exscan small", "Exscan in place",
                     "Reduce_scatter_block small", "Reduce_scatter_block in place",
                     "Bcast [buf, count, INT]", "Bcast [buf, (count, displ), BYTE]",
                     "Allreduce [buf, INT32_T]", "Allreduce [buf, count, displ, INT]",
                     "Allreduce int64 as DOUBLE", "Reduce [buf, count, DOUBLE]",
                     "Scan [buf, count, INT]", "Reduce_scatter_block counted per block",
                     "Reduce_scatter_block in place counted per block",
                     "Gather [buf, count, INT]", "Allgather [buf, BYTE]",
                     "Scatter [buf, count, displ, INT]", "Alltoall [buf, count, INT]"):
            assert [took for _, took in taken[name]] == ["done"], (rank, name, taken[name])
        # every element type and op folded in C (SIMD blocks and tails, in place and
        # not), bit for bit as numpy folds them
        assert fast[0]["Allreduce every kernel"] == ("ok", "all agree"), rank
        assert {took for _, took in taken["Allreduce every kernel"]} == {"done"}, rank
        for name in ("first collective of a Dup", "first collective of a Split"):
            took = [took for _, took in taken[name]]    # the making, then the two calls
            assert len(took) >= 3 and set(took) == {"done"}, (rank, name, taken[name])
        # a datatype mismatch (INT64_T and LONG), BYTE reduced, a count past the end
        for name in ("Allreduce INT64_T into LONG", "Allreduce BYTE",
                     "Alltoall count past the buffer"):
            assert [took for _, took in taken[name]] == ["missed"], (rank, name, taken[name])
        # Bcast large ran first of the large ones: the C path mapped the large area
        # (through the Python function, collectively) and went on in C
        assert [took for _, took in taken["Bcast large"]] == ["done"]
        assert [took for _, took in taken["Allreduce large"]] == ["done"]
        assert [took for _, took in taken["Allreduce mismatch"]] == ["handed over"]
        # a pickle larger than the small area: missed before the first step
        assert [took for _, took in taken["allgather large"]] == ["missed"]
        # once the large area is mapped, folds and streams that outgrow the small
        # area go on through it in C; parts that do not fit go to Python
        _vector_forms_are_done_in_c(rank, taken)
        for name in ("Scan large", "Allgather large", "Gather large", "Scatter large",
                     "Scatter large in place", "Alltoall large", "Alltoall in place large",
                     "Alltoallv large"):
            assert [took for _, took in taken[name]] == ["done"], (rank, name)
        assert [took for _, took in taken["Scan mismatch"]] == ["handed over"]
        for name in ("Alltoallw subarrays", "Alltoallw in place", "Alltoallw large"):
            assert [took for _, took in taken[name]] == ["done"], (rank, name)
        # rank 0 sends past its array: Python's parse refuses it, and it says so in step
        assert [took for _, took in taken["Alltoallw one part too many here"]] == (
            [] if rank == 0 else ["handed over"])
        assert [took for _, took in taken["Alltoall large mismatch"]] == [
            "missed" if rank == 0 else "handed over"]
        # rank 0's own buffers disagree: it misses (Python raises in the first step)
        for name in ("Allgather mismatch", "Alltoall mismatch"):
            assert [took for _, took in taken[name]] == ["missed" if rank == 0
                                                          else "handed over"], (rank, name)


def _vector_forms_are_done_in_c(rank, taken):
    """At 3 ranks: the vector forms with predefined datatypes are done in C (Gatherv
    and Scatterv once per root); derived datatypes and bad counts miss where they are
    parsed, and a part that does not fit its place is handed to Python."""
    roots = range(3)

    def took(name):
        return [took for _, took in taken[name]]
    for name in ("Gatherv", "Gatherv pair form", "Gatherv counts only", "Gatherv int count",
                 "Gatherv plain", "Gatherv in place", "Scatterv", "Scatterv counts only",
                 "Scatterv plain", "Scatterv in place", "Gatherv array counts",
                 "Scatterv array counts"):
        assert took(name) == ["done"] * 3, (rank, name, took(name))
    for name in ("Allgatherv", "Allgatherv pair form", "Allgatherv in place", "Alltoallv",
                 "Alltoallv pair form", "Alltoallv in place", "Allgatherv array counts",
                 "Alltoallv array counts"):
        assert took(name) == ["done"], (rank, name, took(name))
    for name in ("Gatherv derived", "Scatterv derived"):
        assert took(name) == ["missed" if rank == root else "done" for root in roots], name
    assert took("Allgatherv derived") == took("Alltoallv derived") == ["missed"]
    # the last rank sends one item too many: a root hands over to Python, which
    # raises; as the root, the last rank misses (its own part does not fit)
    assert took("Gatherv mismatch") == [
        ("missed" if rank == 2 else "handed over") if root == 2
        else "handed over" if rank == root else "done" for root in roots]
    assert took("Alltoallv bad counts") == ["missed" if rank == 2 else "handed over"]


def _sliced_folds():
    """Allreduce, Allreduce IN_PLACE and Reduce of 300 KiB float64 (past one chunk of
    the large area) at 6 ranks: collarea.fold slices them (a reduce-scatter, then an
    allgather), on either path."""
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    n = 300 * 1024 // 8 + 3          # not a multiple of 6 ranks or of a chunk
    outcomes = []
    for fast in (True, False, rank % 2 == 0):
        fastpath.enable(fast)
        send = np.sin(np.arange(n) * (rank + 1)) * 10 ** rank
        out = np.zeros(n)
        comm.Allreduce(send, out, MPI.SUM)
        in_place = send.copy()
        comm.Allreduce(MPI.IN_PLACE, in_place, MPI.PROD)
        reduced = np.zeros(n) if rank == size - 1 else None
        comm.Reduce(send, reduced, MPI.MAX, size - 1)
        outcomes.append((out.tobytes(), in_place.tobytes(),
                         None if reduced is None else reduced.tobytes()))
    fastpath.enable(True)
    return outcomes


@pytest.mark.timeout(120)
def test_large_folds_at_six_ranks_are_sliced_and_exact():
    """Large whole folds from 3 ranks on are sliced; every path gives the fold of
    the ranks in rank order, bit for bit (as numpy computes it in that order)."""
    n = 300 * 1024 // 8 + 3
    sends = [np.sin(np.arange(n) * (rank + 1)) * 10 ** rank for rank in range(6)]
    total, product = sends[0].copy(), sends[0].copy()
    for part in sends[1:]:
        total = total + part
        product = product * part
    largest = np.maximum.reduce(sends)
    results = shmrma.launch(_sliced_folds, 6, timeout=100)
    for rank, outcomes in enumerate(results):
        for out, in_place, reduced in outcomes:
            assert out == total.tobytes() and in_place == product.tobytes()
            assert reduced == (largest.tobytes() if rank == 5 else None)
