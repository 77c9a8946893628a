"""Collective operations on objects and buffers (docs/api.md).

Rules: issue 2 for the calls themselves (results as mpi4py + MPICH give them,
at 1 to 4 ranks and at 8 ranks on 2 cores); R52 for REPLACE/NO_OP in reductions;
A39 for errors as MPI.Exception. Buffer specifications follow mpi4py: in Gather,
Allgather and Alltoall an explicit count is the count of one rank's part, and a
buffer whose length does not split into one part per rank is a ValueError.
A failing collective must leave every rank free to go on (nobody hangs, no stale
message derails the next collective).
"""
import pathlib
import threading
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from mpitest import dead_rank_ends_the_job, nothing_left_behind

ROOT = pathlib.Path(__file__).resolve().parent.parent

PAIR_DTYPES = {
    "FLOAT_INT": [("v", "f4"), ("i", "i4")],
    "DOUBLE_INT": [("v", "f8"), ("i", "i4")],
    "LONG_INT": [("v", "i8"), ("i", "i4")],
    "SHORT_INT": [("v", "i2"), ("i", "i4")],
    "TWOINT": [("v", "i4"), ("i", "i4")],
}


def concat(a, b):
    return a + b


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_object_collectives(nprocs):
    """Issue 2: bcast, gather, scatter, allgather, alltoall, reduce and allreduce of
    pickled objects, with a non-zero root; reductions combine in rank order (a
    non-commutative user op and a plain function give "0123"), as mpi4py does."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        root = size - 1
        user_op = MPI.Op.Create(lambda a, b, datatype: a + b, commute=False)
        out = {
            "bcast": comm.bcast({"root": rank} if rank == root else None, root=root),
            "gather": comm.gather(("g", rank), root=root),
            "scatter": comm.scatter([r * r for r in range(size)] if rank == root else None,
                                    root=root),
            "allgather": comm.allgather(rank * 10),
            "alltoall": comm.alltoall([(rank, dest) for dest in range(size)]),
            "reduce": comm.reduce(rank + 1, op=MPI.PROD, root=root),
            "allreduce": comm.allreduce(rank, op=MPI.MAX),
            "sum": comm.allreduce(np.int64(rank)),
            "user_op": comm.reduce(str(rank), op=user_op, root=0),
            "function": comm.allreduce([rank], op=concat),
            "maxloc": comm.allreduce((rank % 2, rank), op=MPI.MAXLOC),
            "minloc": comm.allreduce((rank % 2, rank), op=MPI.MINLOC),
        }
        user_op.Free()
        comm.barrier()
        return out

    results = shmrma.launch(body, nprocs, timeout=50)
    size, root = nprocs, nprocs - 1
    for rank, out in enumerate(results):
        assert out["bcast"] == {"root": root}
        assert out["gather"] == ([("g", r) for r in range(size)] if rank == root else None)
        assert out["scatter"] == rank * rank
        assert out["allgather"] == [r * 10 for r in range(size)]
        assert out["alltoall"] == [(src, rank) for src in range(size)]
        assert out["reduce"] == (np.prod(range(1, size + 1)) if rank == root else None)
        assert out["allreduce"] == size - 1
        assert out["sum"] == sum(range(size))
        assert out["user_op"] == ("".join(map(str, range(size))) if rank == 0 else None)
        assert out["function"] == list(range(size))
        assert out["maxloc"] == ((1, 1) if size > 1 else (0, 0))
        assert out["minloc"] == (0, 0)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_buffer_collectives(nprocs):
    """Issue 2, mpi4py's rules: Bcast, Gather, Allgather, Reduce, Allreduce and Alltoall on
    numpy buffers, bare and as [buf, count, datatype] (count per rank, the buffer may
    be longer), and with IN_PLACE where mpi4py allows it."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        root = size - 1
        out = {}
        b = np.arange(4, dtype=np.float64) if rank == root else np.zeros(4)
        comm.Bcast(b, root=root)
        out["Bcast"] = b.tolist()
        c = np.zeros(3, dtype=np.int32) + (7 if rank == 0 else 0)
        comm.Bcast([c, 2, MPI.INT], root=0)                 # only the first 2 items
        out["Bcast_count"] = c.tolist()
        g = np.full(2 * size, -1, dtype=np.int32) if rank == root else None
        comm.Gather(np.array([rank, -rank], dtype=np.int32), g, root=root)
        out["Gather"] = None if g is None else g.tolist()
        g = np.full(2 * size + 3, -1, dtype=np.int32)
        comm.Gather([np.array([rank, -rank, 9], dtype=np.int32), 2, MPI.INT],
                    [g, 2, MPI.INT], root=0)                # 2 per rank, the rest untouched
        out["Gather_count"] = g.tolist()
        a = np.zeros(size, dtype=np.float64)
        comm.Allgather(np.array([rank / 2]), a)
        out["Allgather"] = a.tolist()
        a = np.full(size, -1.0)
        a[rank] = rank * 3
        comm.Allgather(MPI.IN_PLACE, a)
        out["Allgather_in_place"] = a.tolist()
        r = np.zeros(2, dtype=np.int64)
        comm.Reduce(np.array([rank, 1], dtype=np.int64), r, op=MPI.SUM, root=root)
        out["Reduce"] = r.tolist()
        r = np.array([rank + 1, 2], dtype=np.int32)
        if rank == root:
            comm.Reduce(MPI.IN_PLACE, r, op=MPI.PROD, root=root)
        else:
            comm.Reduce(r, None, op=MPI.PROD, root=root)
        out["Reduce_in_place"] = r.tolist()
        r = np.zeros(3)
        comm.Allreduce(np.array([rank, -rank, 0.5]), r, op=MPI.MIN)
        out["Allreduce"] = r.tolist()
        r = np.array([rank, rank * rank], dtype=np.int64)
        comm.Allreduce(MPI.IN_PLACE, r)
        out["Allreduce_in_place"] = r.tolist()
        s = np.arange(size, dtype=np.int32) + 100 * rank
        t = np.zeros(size, dtype=np.int32)
        comm.Alltoall(s, t)
        out["Alltoall"] = t.tolist()
        t = np.arange(2 * size, dtype=np.int16) + 100 * rank
        comm.Alltoall(MPI.IN_PLACE, t)
        out["Alltoall_in_place"] = t.tolist()
        s = np.arange(3 * size, dtype=np.int32) + 100 * rank
        t = np.full(3 * size, -1, dtype=np.int32)
        comm.Alltoall([s, 2, MPI.INT], [t, 2, MPI.INT])     # 2 per rank, rest untouched
        out["Alltoall_count"] = t.tolist()
        return out

    results = shmrma.launch(body, nprocs, timeout=50)
    size, root = nprocs, nprocs - 1
    for rank, out in enumerate(results):
        assert out["Bcast"] == [0.0, 1.0, 2.0, 3.0]
        assert out["Bcast_count"] == [7, 7, 7 if rank == 0 else 0]
        if rank == root:
            assert out["Gather"] == [v for r in range(size) for v in (r, -r)]
        if rank == 0:
            assert out["Gather_count"] == [v for r in range(size) for v in (r, -r)] + [-1] * 3
        assert out["Allgather"] == [r / 2 for r in range(size)]
        assert out["Allgather_in_place"] == [r * 3.0 for r in range(size)]
        if rank == root:
            assert out["Reduce"] == [sum(range(size)), size]
            assert out["Reduce_in_place"] == [int(np.prod(range(1, size + 1))), 2 ** size]
        assert out["Allreduce"] == [0.0, -(size - 1.0), 0.5]
        assert out["Allreduce_in_place"] == [sum(range(size)), sum(r * r for r in range(size))]
        assert out["Alltoall"] == [rank + 100 * src for src in range(size)]
        assert out["Alltoall_in_place"] == [v for src in range(size)
                                            for v in (2 * rank + 100 * src,
                                                      2 * rank + 1 + 100 * src)]
        assert out["Alltoall_count"] == ([v for src in range(size)
                                          for v in (2 * rank + 100 * src,
                                                    2 * rank + 1 + 100 * src)]
                                         + [-1] * size)


@pytest.mark.timeout(60)
def test_predefined_ops_on_buffers():
    """Issue 2: every predefined reduction op on buffers gives numpy's answer at 3
    ranks; MAXLOC/MINLOC on every pair type (numpy structured arrays, aligned as C
    lays them out) take the lowest index on ties."""
    values = {0: [5, -3, 0, 12], 1: [2, 7, 0, 12], 2: [9, -3, 1, 4]}
    arithmetic = {"SUM": np.sum, "PROD": np.prod, "MAX": np.max, "MIN": np.min}
    bitwise = {"BAND": np.bitwise_and.reduce, "BOR": np.bitwise_or.reduce,
               "BXOR": np.bitwise_xor.reduce}
    logical = {"LAND": np.logical_and.reduce, "LOR": np.logical_or.reduce,
               "LXOR": np.logical_xor.reduce}

    def body():
        comm = MPI.COMM_WORLD
        mine = np.array(values[comm.rank], dtype=np.int32)
        out = {}
        for name in list(arithmetic) + list(bitwise) + list(logical):
            result = np.zeros(4, dtype=np.int32)
            comm.Allreduce(mine, result, op=getattr(MPI, name))
            out[name] = result.tolist()
        for name in arithmetic:
            result = np.zeros(4)
            comm.Reduce(mine.astype(np.float64), result, op=getattr(MPI, name), root=1)
            out[name + "_double"] = result.tolist()
        for pair, fields in PAIR_DTYPES.items():
            dtype = np.dtype(fields, align=True)
            data = np.zeros(4, dtype=dtype)
            data["v"] = mine
            data["i"] = 10 * comm.rank + np.arange(4)
            for op in ("MAXLOC", "MINLOC"):
                result = np.zeros(4, dtype=dtype)
                comm.Allreduce([data, getattr(MPI, pair)], [result, getattr(MPI, pair)],
                               op=getattr(MPI, op))
                out[pair, op] = [(int(v), int(i)) for v, i in result.tolist()]
        return out

    stacked = np.array([values[r] for r in range(3)], dtype=np.int32)
    expected = {name: [int(f(stacked[:, k])) for k in range(4)]
                for name, f in {**arithmetic, **bitwise, **logical}.items()}
    for rank, out in enumerate(shmrma.launch(body, 3, timeout=50)):
        for name, value in expected.items():
            assert out[name] == value, name
            if name in arithmetic and rank == 1:
                assert out[name + "_double"] == value, name
        for pair in PAIR_DTYPES:
            assert out[pair, "MAXLOC"] == [(9, 20), (7, 11), (1, 22), (12, 3)], pair
            assert out[pair, "MINLOC"] == [(2, 10), (-3, 1), (0, 2), (4, 23)], pair


@pytest.mark.timeout(60)
def test_subcommunicator_collectives_interleave_with_world():
    """Issue 2: collectives on Split sub-communicators and on COMM_WORLD run in
    different orders on different ranks (legal, each communicator keeps its own
    order) and never take each other's messages, objects and buffers alike."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.rank
        sub = world.Split(color=rank % 2, key=-rank)

        def on_sub():
            total = sub.allreduce(rank)
            buf = np.array([rank], dtype=np.int32)
            sub.Bcast(buf, root=0)
            return total, int(buf[0]), sub.gather(rank, root=1)

        def on_world():
            values = np.zeros(world.size, dtype=np.int32)
            world.Allgather(np.array([rank], dtype=np.int32), values)
            word = world.bcast("w" if rank == 3 else None, root=3)
            return world.allreduce(rank), values.tolist(), word

        results = []
        for _ in range(3):
            if rank % 2:
                results.append((on_world(), on_sub()))
            else:
                sub_result = on_sub()
                results.append((on_world(), sub_result))
        sub.Free()
        return results

    for rank, results in enumerate(shmrma.launch(body, 4, timeout=50)):
        members = [r for r in (3, 2, 1, 0) if r % 2 == rank % 2]  # key -rank: reversed
        for world_part, sub_part in results:
            assert world_part == (6, [0, 1, 2, 3], "w")
            total, bcast_value, gathered = sub_part
            assert total == sum(members) and bcast_value == members[0]
            assert gathered == (members if members.index(rank) == 1 else None)


@pytest.mark.timeout(60)
def test_eight_ranks_on_two_cores():
    """Issue 2: 8 ranks oversubscribing 2 cores still run every collective right. (How
    fast: shmrma-bench compare --suite messages, Allreduce, Bcast and Barrier at 8
    ranks.)"""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        for round_ in range(5):
            assert comm.allreduce(rank + round_) == sum(range(size)) + size * round_
            buf = np.zeros(size, dtype=np.int64)
            comm.Allgather(np.array([rank * round_], dtype=np.int64), buf)
            assert buf.tolist() == [r * round_ for r in range(size)]
            total = np.zeros(1)
            comm.Allreduce(np.array([1.0]), total)
            assert total[0] == size
            assert comm.bcast(round_ if rank == round_ else None, root=round_) == round_
            out = np.zeros(size, dtype=np.int32)
            comm.Alltoall(np.arange(size, dtype=np.int32) * (rank + 1), out)
            assert out.tolist() == [rank * (src + 1) for src in range(size)]
            comm.Barrier()
        return round_

    assert shmrma.launch(body, 8, timeout=50) == [4] * 8


@pytest.mark.timeout(60)
def test_collective_errors_raise_and_change_nothing():
    """Issue 2, R52, R154, A39: a bad root is ERR_ROOT; REPLACE or NO_OP in a reduction and
    an op undefined for the type are ERR_OP; buffers that do not match across ranks
    are ERR_TRUNCATE (too long) or ERR_COUNT (too short) at the ranks that see it;
    local count/type mismatches and buffers that do not split per rank are
    ValueError, a read-only receive buffer BufferError, as mpi4py raises them. Ranks
    that could not take part tell the others, which raise naming them (the error
    class, or ERR_ARG for a Python exception), so nobody hangs; a user op's own
    exception is raised where the objects are folded, as in mpi4py. Afterwards the
    next collectives deliver the right data."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        log = []

        def still_works():
            # every kind of collective still delivers exactly this round's data
            token = len(log)
            got = np.zeros(size, dtype=np.int32)
            comm.Allgather(np.array([token * 10 + rank], dtype=np.int32), got)
            assert got.tolist() == [token * 10 + r for r in range(size)], got
            assert comm.allgather((token, rank)) == [(token, r) for r in range(size)]
            total = np.zeros(1, dtype=np.int64)
            comm.Allreduce(np.array([token], dtype=np.int64), total)
            assert total[0] == token * size
            nothing_left_behind(comm)

        def expect(name, kinds, call):
            """call() raises one of ``kinds`` (a class, or an MPI error class) or returns."""
            try:
                call()
                outcome = None
            except MPI.Exception as exc:
                outcome = exc.Get_error_class()
                assert str(exc).count(":") >= 1, str(exc)  # says what was wrong
            except (ValueError, BufferError, TypeError, ZeroDivisionError) as exc:
                outcome = type(exc)
            assert outcome in kinds, (name, rank, outcome)
            log.append((name, outcome))
            still_works()

        everyone = {MPI.ERR_ROOT}
        expect("bcast root", everyone, lambda: comm.bcast(1, root=size))
        expect("Bcast root", everyone, lambda: comm.Bcast(bytearray(1), root=-1))
        expect("Gather root", everyone, lambda: comm.Gather(b"x", bytearray(size), root=99))
        expect("reduce root", everyone, lambda: comm.reduce(1, root=MPI.PROC_NULL))
        for op in (MPI.REPLACE, MPI.NO_OP):   # R52
            expect("Allreduce %s" % op, {MPI.ERR_OP},
                   lambda: comm.Allreduce(np.ones(2), np.zeros(2), op=op))
            expect("Reduce %s" % op, {MPI.ERR_OP},
                   lambda: comm.Reduce(np.ones(2), np.zeros(2), op=op, root=0))
        expect("BAND double", {MPI.ERR_OP},
               lambda: comm.Allreduce(np.ones(2), np.zeros(2), op=MPI.BAND))

        # rank 1 sends a longer part, then a shorter one: the root sees it
        def gather(n):
            recv = np.zeros(4 * size, dtype=np.uint8) if rank == 0 else None
            comm.Gather(np.full(n if rank == 1 else 4, rank, dtype=np.uint8), recv, root=0)
        expect("Gather long", {MPI.ERR_TRUNCATE} if rank == 0 else {None}, lambda: gather(6))
        expect("Gather short", {MPI.ERR_COUNT} if rank == 0 else {None}, lambda: gather(2))
        # the root's own part does not fit its receive buffer: it fails at once, and
        # the others learn of it in the same call
        expect("Gather own", {MPI.ERR_TRUNCATE},
               lambda: comm.Gather(np.zeros(4, np.uint8),
                                   np.zeros(3 * size, np.uint8) if rank == 0 else None, 0))
        # rank 1 uses parts of 2 bytes, the others 4: everyone that exchanges with it fails
        part = 2 if rank == 1 else 4
        expect("Alltoall", {MPI.ERR_TRUNCATE} if rank == 1 else {MPI.ERR_COUNT},
               lambda: comm.Alltoall(np.zeros(part * size, np.uint8),
                                     np.zeros(part * size, np.uint8)))
        expect("Alltoall local", {MPI.ERR_TRUNCATE},
               lambda: comm.Alltoall(np.zeros(4 * size, np.uint8), np.zeros(3 * size, np.uint8)))
        expect("Allgather mismatch", {MPI.ERR_COUNT, MPI.ERR_TRUNCATE},
               lambda: comm.Allgather(np.zeros(part, np.uint8), np.zeros(part * size, np.uint8)))
        expect("Allreduce mismatch", {MPI.ERR_COUNT, MPI.ERR_TRUNCATE},
               lambda: comm.Allreduce(np.zeros(part), np.zeros(part)))
        expect("Bcast short", {None} if rank == 0 else {MPI.ERR_TRUNCATE},
               lambda: comm.Bcast(np.zeros(4 if rank == 0 else 2), root=0))
        # local mistakes, found before sending: ValueError/BufferError as in mpi4py
        expect("Allreduce count", {ValueError},
               lambda: comm.Allreduce(np.zeros(2), np.zeros(3)))
        expect("Allreduce type", {ValueError},
               lambda: comm.Allreduce(np.zeros(2, np.int32), np.zeros(2, np.float64)))
        expect("Reduce root count", {ValueError} if rank == 0 else {MPI.ERR_ARG},
               lambda: comm.Reduce(np.zeros(2), np.zeros(3), root=0))
        expect("Allgather split", {ValueError},
               lambda: comm.Allgather(np.zeros(1), np.zeros(size + 1)))
        expect("Alltoall split", {ValueError},
               lambda: comm.Alltoall(np.zeros(size + 1), np.zeros(size + 1)))
        # a broadcast's root waits for nobody: it cannot know, as in MPICH
        expect("Bcast read-only", {None} if rank == 0 else {BufferError},
               lambda: comm.Bcast(b"abcd", root=0))
        # Scatter and the vector forms: the same rules
        expect("Scatter split", {ValueError} if rank == 0 else {MPI.ERR_ARG},
               lambda: comm.Scatter(np.zeros(size + 1) if rank == 0 else None,
                                    np.zeros(1), root=0))
        expect("Scatter short", {None} if rank == 0 else {MPI.ERR_TRUNCATE},
               lambda: comm.Scatter(np.zeros(2 * size) if rank == 0 else None,
                                    np.zeros(2 if rank == 0 else 1), root=0))
        expect("Scatterv counts", {ValueError} if rank == 0 else {MPI.ERR_ARG},
               lambda: comm.Scatterv([np.zeros(4), [1] * (size + 1)] if rank == 0 else None,
                                     np.zeros(1), root=0))
        expect("Scatterv outside", {ValueError} if rank == 0 else {MPI.ERR_ARG},
               lambda: comm.Scatterv([np.zeros(size), (1, 2), MPI.DOUBLE]
                                     if rank == 0 else None, np.zeros(1), root=0))
        expect("Scatterv handles", {MPI.ERR_TYPE},
               lambda: comm.Scatterv([[MPI.SYNC_NULL] * size, MPI.HANDLE_SYNC]
                                     if rank == 0 else None,
                                     [[MPI.SYNC_NULL], MPI.HANDLE_SYNC], root=0))
        expect("Gatherv short", {MPI.ERR_COUNT} if rank == 0 else {None},
               lambda: comm.Gatherv(np.zeros(1 if rank == 1 else 2),
                                    [np.zeros(2 * size), 2] if rank == 0 else None, root=0))
        expect("Allgatherv own", {MPI.ERR_TRUNCATE},
               lambda: comm.Allgatherv(np.zeros(3), [np.zeros(2 * size), 2]))
        expect("Alltoallv mismatch", {MPI.ERR_TRUNCATE},
               lambda: comm.Alltoallv([np.zeros(2 * size), 2 if rank == 1 else 1],
                                      [np.zeros(size), 1]))
        # prefix reductions and Reduce_scatter
        expect("Scan mismatch", {MPI.ERR_COUNT, MPI.ERR_TRUNCATE},
               lambda: comm.Scan(np.zeros(part), np.zeros(part)))
        expect("Exscan REPLACE", {MPI.ERR_OP},
               lambda: comm.Exscan(np.ones(2), np.zeros(2), op=MPI.REPLACE))
        expect("Reduce_scatter counts", {ValueError},
               lambda: comm.Reduce_scatter(np.zeros(size), np.zeros(1), [1] * (size + 1)))
        expect("Reduce_scatter_block split", {ValueError},
               lambda: comm.Reduce_scatter_block(np.zeros(size + 1), np.zeros(1)))
        expect("Reduce_scatter gathered", {ValueError},    # every rank sees 1 + 1 + 3 != 3
               lambda: comm.Reduce_scatter(np.zeros(size), np.zeros(1 if rank != 2 else 3)))
        # objects fold where they are reduced, as in mpi4py: rank 0's prefix needs no op
        expect("scan op raises", {None} if rank == 0 else {ZeroDivisionError},
               lambda: comm.scan(rank, op=lambda a, b: a / 0))
        # a rank with a bad argument makes the others raise instead of hang
        expect("Reduce IN_PLACE", {MPI.ERR_BUFFER},
               lambda: comm.Reduce(MPI.IN_PLACE, np.zeros(1), root=0))
        expect("scatter length", {ValueError} if rank == 0 else {MPI.ERR_ARG},
               lambda: comm.scatter(list(range(size + 1)) if rank == 0 else None, root=0))
        expect("bcast unpicklable", {TypeError} if rank == 2 else {MPI.ERR_ARG},
               lambda: comm.bcast(threading.Lock() if rank == 2 else None, root=2))
        expect("allreduce op raises", {ZeroDivisionError},
               lambda: comm.allreduce(rank, op=lambda a, b: a / 0))
        return log

    logs = shmrma.launch(body, 3, timeout=50)
    assert len({len(log) for log in logs}) == 1


@pytest.mark.timeout(60)
def test_failing_rank_is_named_in_the_others_errors():
    """Issue 2: when one rank cannot take part in a collective, the others' errors
    name it and its error class, so they say where to look."""
    def body():
        comm = MPI.COMM_WORLD
        try:
            comm.Allreduce(np.zeros(2), np.zeros(3 if comm.rank == 2 else 2))
        except ValueError as exc:
            return "ValueError: %s" % exc
        except MPI.Exception as exc:
            return "MPI.Exception %d: %s" % (exc.Get_error_class(), exc)
        return None

    results = shmrma.launch(body, 3, timeout=50)
    assert results[2].startswith("ValueError: mismatch in send count 2 and receive count 3")
    for message in results[:2]:
        assert message.startswith("MPI.Exception %d" % MPI.ERR_ARG)
        assert "rank 2 failed" in message


@pytest.mark.timeout(60)
def test_scatter_and_vector_collectives(run_shmrma):
    """Scatter, Scatterv, Gatherv, Allgatherv and Alltoallv with mpi4py's buffer
    forms (counts and displacements given, inferred, strided) and IN_PLACE; scan,
    exscan, Scan, Exscan in rank order; Reduce_scatter_block and Reduce_scatter
    (counts given or gathered), at an odd number of ranks: scripts/collectives.py
    checks every rank's data (and tests/test_backends.py compares it with mpi4py
    on MPICH at 2 and 4 ranks)."""
    result = run_shmrma(["-n", 3, "--timeout", 40, ROOT / "scripts" / "collectives.py"],
                        timeout=50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(" ok") == 3, result.stdout


@pytest.mark.timeout(60)
def test_ibarrier_completes_once_every_rank_entered():
    """comm.Ibarrier: the request stays incomplete while a rank has not entered;
    several may be outstanding and complete in any order of Wait; it works on
    derived communicators, next to blocking Barriers and collectives."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        comm.Barrier()      # rank 0 tests while the last rank surely sleeps
        if rank == size - 1:
            time.sleep(0.3)
        first, second = comm.Ibarrier(), comm.Ibarrier()
        early = first.Test() if rank == 0 else None
        MPI.Request.Waitall([second, first])
        comm.Barrier()
        total = np.zeros(1)
        request = comm.Ibarrier()
        comm.Allreduce(np.ones(1), total)
        request.Wait()
        half = comm.Split(rank % 2, rank)
        half.Ibarrier().Wait()
        half.Free()
        nothing_left_behind(comm)
        return early, total[0], bool(first), bool(second)

    results = shmrma.launch(body, 3, timeout=50)
    assert results[0][0] is False       # rank 2 was still asleep
    assert all(result[1:] == (3.0, False, False) for result in results), results


@pytest.mark.timeout(60)
def test_nonblocking_collectives_and_their_errors(run_shmrma):
    """scripts/nonblocking_collectives.py: every kind (block and vector forms,
    reductions, scans, Ibarrier) outstanding at once, checked on every rank. A rank whose arguments are wrong raises at the call, and the
    ranks that awaited its data raise at Wait, naming it; a size that does not
    match raises at Wait; afterwards every rank goes on."""
    result = run_shmrma(["-n", 3, "--timeout", 40,
                         ROOT / "scripts" / "nonblocking_collectives.py"], timeout=50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(" ok") == 3

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.rank
        outcomes = []

        def attempt(start):
            try:
                start().Wait()
                outcomes.append(None)
            except MPI.Exception as exc:
                outcomes.append((exc.Get_error_class(), "rank 0 failed" in str(exc)))
            except (ValueError, TypeError) as exc:
                outcomes.append(type(exc).__name__)
            nothing_left_behind(comm)

        # the root's buffer is no buffer: it raises, the others learn of it
        attempt(lambda: comm.Ibcast(None if rank == 0 else bytearray(4), root=0))
        # rank 0 sends Sync handles to the root of a gather: ERR_TYPE on both
        attempt(lambda: comm.Igather([[MPI.SYNC_NULL], MPI.HANDLE_SYNC] if rank == 0
                                     else np.zeros(1), np.zeros(3) if rank == 2 else None,
                                     root=2))
        # rank 1 contributes 2 doubles where the others take 1
        attempt(lambda: comm.Iallreduce(np.ones(2 if rank == 1 else 1),
                                        np.zeros(2 if rank == 1 else 1)))
        return outcomes

    outcomes = shmrma.launch(body, 3, timeout=50)
    assert outcomes[0][:2] == ["TypeError", (MPI.ERR_TYPE, False)]
    assert outcomes[1][:2] == [(MPI.ERR_ARG, True), None]
    assert outcomes[2][:2] == [(MPI.ERR_ARG, True), (MPI.ERR_TYPE, True)]
    assert outcomes[0][2] in {(MPI.ERR_TRUNCATE, False), (MPI.ERR_COUNT, False)}
    assert outcomes[1][2] in {(MPI.ERR_TRUNCATE, False), (MPI.ERR_COUNT, False)}


def _random_nonblocking(comm, rng, iteration):
    """One nonblocking collective of a kind ``rng`` picks, with its check."""
    n, r = comm.size, comm.rank
    root = rng.randrange(n)
    kind = rng.choice(["Ibcast", "Iallreduce", "Ibarrier", "Igather", "Ialltoallv", "Iscan"])
    if kind == "Ibcast":
        buf = np.full(3, iteration if r == root else -1, "i8")
        return comm.Ibcast(buf, root), lambda: (buf == iteration).all()
    if kind == "Iallreduce":
        out = np.zeros(2, "i8")
        return (comm.Iallreduce(np.full(2, r + iteration, "i8"), out),
                lambda: (out == sum(range(n)) + n * iteration).all())
    if kind == "Igather":
        out = np.full(n, -1, "i8") if r == root else None
        return (comm.Igather(np.array([r * iteration], "i8"), out, root),
                lambda: out is None or out.tolist() == [x * iteration for x in range(n)])
    if kind == "Ialltoallv":
        sent = np.concatenate([np.full(d + 1, 10 * r + d, "i4") for d in range(n)])
        got = np.zeros((r + 1) * n, "i4")
        return (comm.Ialltoallv([sent, [d + 1 for d in range(n)]], [got, r + 1]),
                lambda: got.tolist() == [10 * s + r for s in range(n) for _ in range(r + 1)])
    if kind == "Iscan":
        out = np.zeros(1, "i8")
        return comm.Iscan(np.ones(1, "i8"), out), lambda: out[0] == r + 1
    return comm.Ibarrier(), lambda: True


@pytest.mark.timeout(60)
def test_nonblocking_collectives_interleave_at_random():
    """Up to four nonblocking collectives outstanding at once, on COMM_WORLD and on
    a Split half, with blocking collectives and point-to-point messages between
    them, completed in a random order: 300 rounds, every result checked (the same
    seed on every rank gives every rank the same sequence of calls)."""
    def body():
        import random
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        rng = random.Random(42)
        half = comm.Split(rank % 2, rank)
        for iteration in range(300):
            pending = []
            for _ in range(rng.randint(1, 4)):
                pending.append(_random_nonblocking(comm if rng.random() < 0.7 else half,
                                                   rng, iteration))
                if rng.random() < 0.3:
                    assert comm.allreduce(iteration) == iteration * size
                if rng.random() < 0.3:
                    comm.send(iteration, (rank + 1) % size, tag=iteration % 7)
                    assert comm.recv(source=(rank - 1) % size, tag=iteration % 7) == iteration
            rng.shuffle(pending)
            for request, check in pending:
                request.Wait()
                assert check(), iteration
        half.Free()
        nothing_left_behind(comm)
        return True

    assert shmrma.launch(body, 4, timeout=50) == [True] * 4


@pytest.mark.timeout(120)
def test_ibarrier_notices_a_dead_rank(run_shmrma, tmp_path):
    """An Ibarrier that waits for a rank that died ends the job instead of hanging."""
    dead_rank_ends_the_job(run_shmrma, tmp_path, "comm.Ibarrier().Wait()")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [2, 3])
def test_none_is_in_place_where_in_place_is_valid(nprocs):
    """As mpi4py (is_IN_PLACE: None or IN_PLACE): None as the send buffer of the
    gathering and reducing collectives (at the root for Gather and Reduce) and as the
    root's receive buffer of Scatter gives what IN_PLACE gives, blocking and
    nonblocking; elsewhere None stays an error."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()

        def run(in_place):
            out = {}
            buf = np.arange(size, dtype="f8") * 0 - 1
            buf[rank] = rank + 0.5
            comm.Allgather(in_place, buf)
            out["Allgather"] = buf.tolist()
            buf = np.full(size, -1.0)
            buf[rank] = rank + 0.25
            comm.Iallgather(in_place, buf).Wait()
            out["Iallgather"] = buf.tolist()
            vec = np.arange(3, dtype="i8") + rank
            comm.Allreduce(in_place, vec, MPI.SUM)
            out["Allreduce"] = vec.tolist()
            vec = np.arange(3, dtype="i8") + rank
            comm.Iallreduce(in_place, vec, MPI.MAX).Wait()
            out["Iallreduce"] = vec.tolist()
            if rank == 0:
                whole = np.full(size, -1.0)
                whole[0] = 7.0
                comm.Gather(in_place, whole, 0)
                out["Gather"] = whole.tolist()
                parts = np.arange(size, dtype="f8")
                comm.Scatter(parts, in_place, 0)
                out["Scatter"] = parts.tolist()
                total = np.array([1, 2], dtype="i8")
                comm.Reduce(in_place, total, MPI.SUM, 0)
                out["Reduce"] = total.tolist()
            else:
                comm.Gather(np.array([float(rank)]), None, 0)
                mine = np.zeros(1)
                comm.Scatter(None, mine, 0)
                out["Scatter"] = mine.tolist()
                comm.Reduce(np.array([1, 2], dtype="i8"), None, MPI.SUM, 0)
            return out
        with_none, with_in_place = run(None), run(MPI.IN_PLACE)
        try:
            comm.Gather(None, None, 0) if rank == 1 else comm.Gather(np.zeros(1),
                                                                     np.zeros(size), 0)
            refused = None
        except (MPI.Exception, TypeError, ValueError) as exc:
            refused = type(exc).__name__
        return with_none == with_in_place, with_none, refused
    results = shmrma.launch(body, nprocs, timeout=40)
    assert all(same for same, _, _ in results), results
    assert results[0][1]["Allreduce"] == [sum(range(nprocs)) + nprocs * i for i in range(3)]
    assert results[0][1]["Gather"] == [7.0] + [float(r) for r in range(1, nprocs)]
    assert results[1][2] is not None    # None as a non-root's send buffer is an error


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_alltoallw_transposes_pencils_of_every_size(nprocs):
    """Alltoallw as a parallel FFT's pencil transpose uses it (mpi4py-fft's
    Transfer: one subarray type per peer, counts of 1, displacements of 0), with
    parts from a few bytes to past the collective areas (done in C, handed from C
    to Python, done in Python), both ways, blocking and not, and with IN_PLACE:
    every element lands where it belongs, this rank's own part included (which
    goes straight from one buffer to the other)."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        outcome = []
        for n in (2, 8, 24, 64):
            rows = n * size     # axis 0 whole in A, axis 1 whole in B
            a = np.arange(n * rows, dtype="f8").reshape(n, rows) + 1e6 * rank
            types_a = [MPI.DOUBLE.Create_subarray([n, rows], [n, n], [0, n * j]).Commit()
                       for j in range(size)]
            types_b = [MPI.DOUBLE.Create_subarray([rows, n], [n, n], [n * j, 0]).Commit()
                       for j in range(size)]
            ones = ([1] * size, [0] * size)
            for name in ("Alltoallw", "Ialltoallw"):
                b = np.full((rows, n), -1.0)
                request = getattr(comm, name)([a, ones, types_a], [b, ones, types_b])
                if request is not None:
                    request.Wait()
                back = np.full_like(a, -1.0)
                comm.Alltoallw([b, ones, types_b], [back, ones, types_a])
                expected = np.vstack([np.arange(n * rows, dtype="f8").reshape(n, rows)
                                      [:, n * rank:n * (rank + 1)] + 1e6 * source
                                      for source in range(size)])
                outcome.append((n, name, bool((b == expected).all()),
                                bool((back == a).all())))
            square = np.arange(rows * rows, dtype="f8").reshape(rows, rows) + 1e6 * rank
            blocks = [MPI.DOUBLE.Create_subarray([rows, rows], [rows, n], [0, n * j]).Commit()
                      for j in range(size)]
            swapped = square.copy()
            comm.Alltoallw(MPI.IN_PLACE, [swapped, ones, blocks])
            mine = square[:, n * rank:n * (rank + 1)] - 1e6 * rank
            outcome.append((n, "in place", all(
                (swapped[:, n * j:n * (j + 1)] == mine + 1e6 * j).all() for j in range(size)),
                True))
            for datatype in types_a + types_b + blocks:
                datatype.Free()
        return outcome

    for outcome in shmrma.launch(body, nprocs, timeout=100):
        assert [entry for entry in outcome if not all(entry[2:])] == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_alltoallw_moves_each_part_with_its_own_type(nprocs):
    """Alltoallw and Ialltoallw (MPI-3.1 §5.8): rank r sends rank j the column j of its
    matrix (a vector type) and j receives it as plain doubles at a byte displacement;
    IN_PLACE; MPI.BOTTOM with struct types at absolute addresses (MPI.Get_address);
    a count that does not match is ERR_TRUNCATE on every rank, malformed specs are
    ValueError, as in mpi4py, and nobody hangs."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        matrix = np.arange(size * size, dtype="f8").reshape(size, size) + 100 * rank
        column = MPI.DOUBLE.Create_vector(size, 1, size).Commit()
        got = {}
        for name in ("Alltoallw", "Ialltoallw"):
            recv = np.full((size, size + 1), -1.0)
            send = [matrix, [1] * size, [8 * j for j in range(size)], [column] * size]
            into = [recv, ([size] * size, [8 * (size + 1) * j for j in range(size)]),
                    [MPI.DOUBLE] * size]
            request = getattr(comm, name)(send, into)
            if request is not None:
                request.Wait()
            got[name] = recv.copy()
        # IN_PLACE: every rank swaps one int with every rank
        ints = np.array([rank * 10 + j for j in range(size)], dtype="i4")
        comm.Alltoallw(MPI.IN_PLACE, [ints, [1] * size, [4 * j for j in range(size)],
                                      [MPI.INT] * size])
        got["in_place"] = ints.copy()
        # BOTTOM: the addresses are in the datatypes
        source = np.full(2, float(rank))
        target = np.zeros(2 * size)
        base, at = MPI.Get_address(source), MPI.Get_address(target)
        stypes = [MPI.Datatype.Create_struct([2], [base], [MPI.DOUBLE]).Commit()] * size
        rtypes = [MPI.Datatype.Create_struct([2], [at + 16 * j], [MPI.DOUBLE]).Commit()
                  for j in range(size)]
        comm.Alltoallw([MPI.BOTTOM, [1] * size, [0] * size, stypes],
                       [MPI.BOTTOM, ([1] * size, [0] * size), rtypes])
        got["bottom"] = target.copy()
        errors = []
        for bad in ([np.zeros(1)],                                        # one item
                    [MPI.BOTTOM, None, [0] * size, [MPI.BYTE] * size],    # BOTTOM, no counts
                    [np.zeros(1), [0] * size, [0] * size, [MPI.BYTE] * (size + 1)]):
            try:
                comm.Alltoallw(bad, [np.zeros(8), [0] * size, [0] * size, [MPI.BYTE] * size])
            except ValueError:
                errors.append("ValueError")
        try:        # rank 0 sends two doubles where one is expected
            comm.Alltoallw([np.zeros(2 * size), [2 if rank == 0 else 1] * size,
                            [16 * j for j in range(size)], [MPI.DOUBLE] * size],
                           [np.zeros(size), [1] * size, [8 * j for j in range(size)],
                            [MPI.DOUBLE] * size])
        except MPI.Exception as exc:
            errors.append(exc.Get_error_class())
        comm.Barrier()
        for datatype in [column] + rtypes + stypes[:1]:
            datatype.Free()
        return got, errors

    for rank, (got, errors) in enumerate(shmrma.launch(body, nprocs, timeout=50)):
        size = nprocs
        expected = np.full((size, size + 1), -1.0)
        for source in range(size):      # column `rank` of rank `source`'s matrix
            expected[source, :size] = np.arange(size) * size + rank + 100 * source
        assert (got["Alltoallw"] == expected).all() and (got["Ialltoallw"] == expected).all()
        assert got["in_place"].tolist() == [source * 10 + rank for source in range(size)]
        assert got["bottom"].tolist() == [float(j) for j in range(size) for _ in range(2)]
        assert errors[:3] == ["ValueError"] * 3
        assert errors[3:] == [MPI.ERR_TRUNCATE], errors


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 3])
def test_persistent_collectives_run_anew_at_each_start(nprocs):
    """MPI-4.0 §6.12: X_init gives an inactive Prequest; each Start runs the
    collective on the buffers as they are then (the send buffer is read anew), Wait
    completes it and leaves it inactive (Test of an inactive one is true); Startall
    starts several; a bad info or COMM_NULL is an error at init."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.rank, comm.size
        send, total = np.zeros(2), np.zeros(2)
        allreduce = comm.Allreduce_init(send, total, MPI.SUM)
        box = np.zeros(1, dtype="i8")
        bcast = comm.Bcast_init(box, root=size - 1)
        gathered = np.zeros(size, dtype="i8")
        gather = comm.Allgather_init(np.array([rank], dtype="i8"), gathered)
        barrier = comm.Barrier_init(MPI.INFO_NULL)
        sums = []
        for step in range(3):
            send[:] = [rank + step, 1]
            if rank == size - 1:
                box[0] = 100 + step
            allreduce.Start()
            allreduce.Wait()
            sums.append(total.tolist())
            MPI.Prequest.Startall([bcast, gather, barrier])
            MPI.Request.Waitall([bcast, gather, barrier])
        inactive = allreduce.Test()
        for request in (allreduce, bcast, gather, barrier):
            request.Free()
        errors = []
        for call in (lambda: comm.Barrier_init(info=42), lambda: MPI.COMM_NULL.Bcast_init(box)):
            try:
                call()
            except MPI.Exception as exc:
                errors.append(exc.Get_error_class())
            except TypeError:
                errors.append("TypeError")
        return sums, int(box[0]), gathered.tolist(), inactive, errors

    for sums, box, gathered, inactive, errors in shmrma.launch(body, nprocs, timeout=50):
        size = nprocs
        assert sums == [[sum(range(size)) + step * size, size] for step in range(3)]
        assert box == 102 and gathered == list(range(size)) and inactive is True
        assert errors == ["TypeError", MPI.ERR_COMM]


@pytest.mark.timeout(60)
def test_persistent_neighbor_collectives_on_a_ring():
    """MPI-4.0 §7.8: Neighbor_allgather_init on a periodic ring gives, at each Start,
    the values the two neighbours hold then (the -1 neighbour's first)."""
    def body():
        ring = MPI.COMM_WORLD.Create_cart([MPI.COMM_WORLD.size], [True])
        mine, got = np.zeros(1), np.zeros(2)
        request = ring.Neighbor_allgather_init(mine, got)
        rounds = []
        for step in range(2):
            mine[0] = 10 * step + ring.rank
            request.Start()
            request.Wait()
            rounds.append(got.tolist())
        request.Free()
        ring.Free()
        return rounds

    for rank, rounds in enumerate(shmrma.launch(body, 3, timeout=50)):
        assert rounds == [[10 * step + (rank - 1) % 3, 10 * step + (rank + 1) % 3]
                          for step in range(2)]


def _blocking(comm, name, *args):
    getattr(comm, name)(*args)


def _nonblocking(comm, name, *args):
    getattr(comm, "I" + name[0].lower() + name[1:])(*args).Wait()


def _persistent(comm, name, *args):
    request = getattr(comm, name + "_init")(*args)
    request.Start()
    request.Wait()
    request.Free()


FORMS = {"blocking": _blocking, "nonblocking": _nonblocking, "persistent": _persistent}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_reduce_scatter_block_counts_one_block_as_mpi4py(form):
    """MPI-3.1 section 5.10.1: Reduce_scatter_block's recvcount is one block. mpi4py
    parses both a [buf, count, type] send buffer and, with IN_PLACE, the receive
    buffer that holds the whole vector with count as one block's count (the buffer
    split in one block per rank), in all three forms; a send count of the whole
    vector is a ValueError, as is a buffer that does not split in blocks. The
    results are mpi4py 4.1.2 + MPICH 5.0's at 3 ranks."""
    def body():
        comm, rank = MPI.COMM_WORLD, MPI.COMM_WORLD.rank
        run = FORMS[form]
        out = []
        whole = np.arange(1, 10, dtype="i4") + rank
        run(comm, "Reduce_scatter_block", MPI.IN_PLACE, [whole, 3, MPI.INT], MPI.SUM)
        out.append(whole.tolist())
        whole = np.arange(1, 10, dtype="i4") + rank
        run(comm, "Reduce_scatter_block", MPI.IN_PLACE, [whole, 1, MPI.INT], MPI.SUM)
        out.append(whole.tolist())
        send, got = np.arange(1, 7, dtype="i4") * (rank + 1), np.full(3, -1, "i4")
        run(comm, "Reduce_scatter_block", [send, 2, MPI.INT], [got, 2, MPI.INT], MPI.SUM)
        out.append(got.tolist())
        for refused in ([send, 6, MPI.INT], [np.arange(7, dtype="i4"), MPI.INT]):
            with pytest.raises(ValueError):
                run(comm, "Reduce_scatter_block", refused, [got, 2, MPI.INT], MPI.SUM)
        with pytest.raises(ValueError):
            run(comm, "Reduce_scatter_block", MPI.IN_PLACE, np.zeros(10, "i4"), MPI.SUM)
        return out

    results = shmrma.launch(body, 3, timeout=50)
    # Reduce_scatter_block(IN_PLACE, [arange(1, 10) + rank, 3, INT], SUM): MPICH gives
    # rank 0 [6, 9, 12, 4, 5, 6, 7, 8, 9] (block 0 summed over the ranks at the
    # front, the rest of the buffer as it was); shmrma gave [6, 2, 3, ...] (count 3
    # taken as the whole vector), and its Reduce_scatter_block_init a ValueError
    assert results[0][0] == [6, 9, 12, 4, 5, 6, 7, 8, 9]
    assert results[1][0] == [15, 18, 21, 5, 6, 7, 8, 9, 10]
    assert results[2][0] == [24, 27, 30, 6, 7, 8, 9, 10, 11]
    # [..., 1, INT]: MPICH gives rank 0 [6, 2, 3, ...], rank 1 [9, 3, ...], rank 2 [12, 4, ...]
    assert [result[1][:2] for result in results] == [[6, 2], [9, 3], [12, 4]]
    # Reduce_scatter_block([arange(1, 7) * (rank + 1), 2, INT], [got, 2, INT], SUM):
    # MPICH gives [6, 12], [18, 24], [30, 36], got[2] untouched
    assert [result[2] for result in results] == [[6, 12, -1], [18, 24, -1], [30, 36, -1]]


def _zero_size_calls(comm, T, receive):
    """(name, args) of the vector collectives (and Gather, Scatter, Allgather and
    Alltoall) with 2 items of type T per rank, into ``receive()`` buffers."""
    size, rank = comm.size, comm.rank
    counts, displs, types = [2] * size, [0] * size, [T] * size
    send = bytes(range(16 * rank, 16 * rank + 8))
    calls = []
    for in_place in (False, True):
        own = MPI.IN_PLACE if in_place else [send, 2, T]
        root_own = MPI.IN_PLACE if in_place and rank == 0 else [send, 2, T]
        calls += [
            ("Gatherv", (root_own, [receive(), counts, displs, T], 0)),
            ("Scatterv", ([send, counts, displs, T],
                          MPI.IN_PLACE if in_place and rank == 0 else [receive(), 2, T], 0)),
            ("Allgatherv", (own, [receive(), counts, displs, T])),
            ("Alltoallv", (MPI.IN_PLACE if in_place else [send, counts, displs, T],
                           [receive(), counts, displs, T])),
            ("Alltoallw", (MPI.IN_PLACE if in_place else [send, counts, displs, types],
                           [receive(), counts, displs, types]))]
    calls += [("Gather", ([send, 2, T], [receive(), 2, T], 0)),
              ("Scatter", ([send, 2, T], [receive(), 2, T], 0)),
              ("Allgather", ([send, 2, T], [receive(), 2, T])),
              ("Alltoall", ([send, 2, T], [receive(), 2, T]))]
    return calls


@pytest.mark.timeout(60)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_zero_size_types_move_nothing_in_the_vector_collectives(form):
    """MPI-3.1 section 4.1: a datatype of size 0 (an empty type map) moves nothing,
    whatever its extent. MPICH takes Gatherv, Scatterv, Allgatherv, Alltoallv and
    Alltoallw of 2 items of Create_contiguous(0) (extent 0) or of it resized to
    extent 8, with and without IN_PLACE, in the three forms, and leaves every
    receive buffer as it was (8 bytes of 0xEE here stay 0xEE); shmrma refused
    extent 0 ("the parts of a vector collective need a positive extent") and the
    extent 8 items as reaching past the buffer."""
    def body():
        comm = MPI.COMM_WORLD
        zero = MPI.INT.Create_contiguous(0).Commit()
        spaced = zero.Create_resized(0, 8).Commit()
        buffers = []

        def receive():
            buffers.append(bytearray(b"\xee" * 8))
            return buffers[-1]
        for datatype in (zero, spaced):
            for name, args in _zero_size_calls(comm, datatype, receive):
                FORMS[form](comm, name, *args)
        zero.Free()
        spaced.Free()
        return [bytes(buf) for buf in buffers]

    for received in shmrma.launch(body, 3, timeout=50):
        assert received and set(received) == {b"\xee" * 8}


# (value format, index offset, extent) of the pair types whose C struct has padding
PADDED_PAIRS = {"SHORT_INT": ("i2", 4, 8), "DOUBLE_INT": ("f8", 8, 16),
                "LONG_INT": ("i8", 8, 16)}
PAIR_ITEMS = 3


def _pairs(name, rank, count, fill):
    """``count`` pairs of rank ``rank`` (value (7k + 3 rank) % 5, index 10 rank + k)
    in a buffer of ``fill`` bytes: the padding is ``fill``."""
    value, at, extent = PADDED_PAIRS[name]
    buf = bytearray([fill]) * (extent * count)
    for k in range(count):
        np.frombuffer(buf, value, 1, k * extent)[...] = (7 * k + 3 * rank) % 5
        np.frombuffer(buf, "i4", 1, k * extent + at)[...] = 10 * rank + k
    return buf


def _folded_pairs(name, op, ranks, count, into, first=0):
    """``into`` with pairs first..first+count-1 of the ranks ``ranks`` folded by
    MINLOC/MAXLOC written over its members, its padding as it was."""
    value, at, extent = PADDED_PAIRS[name]
    out = bytearray(into)
    for k in range(count):
        item = k + first
        pairs = [((7 * item + 3 * r) % 5, 10 * r + item) for r in ranks]
        best = (min if op == "MINLOC" else max)(v for v, _ in pairs)
        index = min(i for v, i in pairs if v == best)
        np.frombuffer(out, value, 1, k * extent)[...] = best
        np.frombuffer(out, "i4", 1, k * extent + at)[...] = index
    return bytes(out)


def _pair_reduction(comm, form, kind, name, op, in_place):
    """Run reduction ``kind`` of PAIR_ITEMS pairs a rank into a receive buffer of 0xEE
    (IN_PLACE: the rank's pairs with padding 0x20 + rank); (got, expected)."""
    rank, size, T = comm.rank, comm.size, getattr(MPI, name)
    whole = kind.startswith("Reduce_scatter")
    items = PAIR_ITEMS * (size if whole else 1)
    send = _pairs(name, rank, items, 0x10 + rank)
    got = (_pairs(name, rank, items, 0x20 + rank) if in_place
           else bytearray(b"\xee") * (len(send) // (size if whole else 1)))
    before = bytes(got)
    sendbuf = MPI.IN_PLACE if in_place else [send, T]
    if kind == "Reduce":
        sendbuf = sendbuf if rank == 0 else [send, T]
        FORMS[form](comm, kind, sendbuf, [got, T], getattr(MPI, op), 0)
    elif kind == "Reduce_scatter":
        FORMS[form](comm, kind, sendbuf, [got, T], [PAIR_ITEMS] * size, getattr(MPI, op))
    elif kind == "Reduce_scatter_block":
        recv = [got, PAIR_ITEMS, T]
        FORMS[form](comm, kind, sendbuf if in_place else [send, PAIR_ITEMS, T], recv,
                    getattr(MPI, op))
    else:
        FORMS[form](comm, kind, sendbuf, [got, T], getattr(MPI, op))
    ranks = {"Scan": range(rank + 1), "Exscan": range(rank)}.get(kind, range(size))
    first = rank * PAIR_ITEMS if whole else 0
    if (kind == "Reduce" and rank) or (kind == "Exscan" and not rank):
        return bytes(got), before      # nothing defined arrives: the buffer as it was
    return bytes(got), _folded_pairs(name, op, ranks, PAIR_ITEMS, before, first)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_reductions_of_pairs_write_only_value_and_index(form):
    """MPI-3.1 section 5.9.4: MINLOC and MAXLOC reduce (value, index) pairs; the bytes
    of a SHORT_INT, DOUBLE_INT or LONG_INT between and after its members are padding,
    no part of the type map, and MPICH leaves them as they were in the receive
    buffer. Allreduce(send, [recv of 0xEE, DOUBLE_INT], MINLOC) at 3 ranks gives, in
    MPICH, 000000000000000000000000eeeeeeee... (value 0.0, index 0, padding 0xEE);
    shmrma wrote its ranks' send padding there (10101010 from rank 0), and so did
    Reduce, Reduce_scatter, Scan and Exscan, and every IN_PLACE form (MPICH keeps
    the rank's own padding). Every reduction, blocking, nonblocking and persistent,
    with and without IN_PLACE, against the pairs folded here."""
    kinds = ["Reduce", "Allreduce", "Reduce_scatter", "Reduce_scatter_block", "Scan",
             "Exscan"]

    def body():
        comm, wrong = MPI.COMM_WORLD, []
        for kind in kinds:
            for name in PADDED_PAIRS:
                for op in ("MINLOC", "MAXLOC"):
                    for in_place in (False, True):
                        got, expected = _pair_reduction(comm, form, kind, name, op, in_place)
                        if got != expected:
                            wrong.append((kind, name, op, in_place, got.hex(), expected.hex()))
        return wrong

    assert shmrma.launch(body, 3, timeout=80) == [[], [], []]


def test_reduce_local_of_pairs_writes_only_value_and_index():
    """MPI-4.1 section 6.9.7: Reduce_local with MINLOC on DOUBLE_INT leaves the
    padding of the inout buffer's pairs as it was, as MPICH does."""
    for name in PADDED_PAIRS:
        for op in ("MINLOC", "MAXLOC"):
            inout, T = _pairs(name, 1, PAIR_ITEMS, 0xEE), getattr(MPI, name)
            getattr(MPI, op).Reduce_local([_pairs(name, 0, PAIR_ITEMS, 0x10), T], [inout, T])
            assert bytes(inout) == _folded_pairs(name, op, [0, 1], PAIR_ITEMS,
                                                 _pairs(name, 1, PAIR_ITEMS, 0xEE))


@pytest.mark.timeout(60)
def test_moving_pairs_leaves_the_receivers_padding():
    """MPI-3.1 section 4.1: a message moves its type map; the padding of a DOUBLE_INT
    is no part of it. Bcast, Sendrecv, Gather, Gatherv, Allgather and Alltoall of
    DOUBLE_INT pairs into 0xEE buffers at 3 ranks: MPICH writes value and index and
    leaves every pair's last 4 bytes 0xEE (rank 1's Bcast of 2 pairs:
    000000000000000000000000eeeeeeee000000000000f03f00000000eeeeeeee); shmrma wrote
    the sender's padding there."""
    def body():
        comm, T = MPI.COMM_WORLD, MPI.DOUBLE_INT
        rank, size = comm.rank, comm.size
        mine = _pairs("DOUBLE_INT", rank, 2, 0x10 + rank)
        got = {name: bytearray(b"\xee") * (16 * n) for name, n in (
            ("Bcast", 2), ("Sendrecv", 2), ("Gather", 2 * size), ("Gatherv", 2 * size),
            ("Allgather", 2 * size), ("Alltoall", size))}
        comm.Bcast([mine if rank == 0 else got["Bcast"], T], 0)
        comm.Sendrecv([mine, T], (rank + 1) % size, 0, [got["Sendrecv"], T],
                      (rank - 1) % size, 0)
        comm.Gather([mine, T], [got["Gather"], T], 0)
        comm.Gatherv([mine, T], [got["Gatherv"], [2] * size, T], 0)
        comm.Allgather([mine, T], [got["Allgather"], T])
        comm.Alltoall([_pairs("DOUBLE_INT", rank, size, 0x10 + rank), T],
                      [got["Alltoall"], T])
        receives = {"Sendrecv", "Allgather", "Alltoall"} | (
            {"Gather", "Gatherv"} if rank == 0 else {"Bcast"})
        return {name: bytes(buf) for name, buf in got.items() if name in receives}

    for received in shmrma.launch(body, 3, timeout=50):
        for name, buf in received.items():
            pads = {buf[k + 12:k + 16] for k in range(0, len(buf), 16)}
            members = {buf[k:k + 12] for k in range(0, len(buf), 16)}
            assert pads == {b"\xee" * 4} and b"\xee" * 12 not in members, name


@pytest.mark.timeout(60)
@pytest.mark.parametrize("form", sorted(FORMS))
def test_reduce_scatter_in_place_without_recvcounts_is_a_type_error(form):
    """mpi4py gathers Reduce_scatter's left-out recvcounts from the receive buffers,
    but not with IN_PLACE, whose buffer holds the whole vector: there the missing
    counts are a TypeError at every rank (mpi4py 4.1.2 + MPICH 5.0, 2 ranks), where
    shmrma gathered the whole counts and raised ValueError. With the counts given
    it reduces: [0, 2, 4, 3, 4, 5] and [6, 8, 10, 3, 4, 5] from arange(6) each."""
    def body():
        comm, size = MPI.COMM_WORLD, MPI.COMM_WORLD.size
        whole = np.arange(3 * size, dtype="i4")
        with pytest.raises(TypeError):
            FORMS[form](comm, "Reduce_scatter", MPI.IN_PLACE, whole, None, MPI.SUM)
        FORMS[form](comm, "Reduce_scatter", MPI.IN_PLACE, [whole, 3 * size, MPI.INT],
                    [3] * size, MPI.SUM)
        return whole.tolist()

    assert shmrma.launch(body, 2, timeout=50) == [[0, 2, 4, 3, 4, 5], [6, 8, 10, 3, 4, 5]]
