"""Derived datatypes in messages and collectives (issue 13, MPI-3.1 §4.1.11, §3.3.1).

A message typed with a derived datatype carries the bytes of its type map, in
type-map order, and a receive writes them into its own type map: a column, a
triangle or a sub-block arrives where its datatype says, the gaps untouched, and
a send typed one way matches a receive typed another way with the same
signature (N doubles of a column into N contiguous doubles). Every expectation
here is computed with numpy fancy indexing from element indices written out by
hand, never through shmrma's own layouts, for each type constructor, in every
point-to-point form and every collective, at 1, 2 and 4 ranks.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI

SENTINEL = -1.0
N = 5   # the square matrices the column and the triangle live in


class Spec:
    """A datatype of doubles and, independently, the element indices of one item
    (type-map order) and its extent in elements."""

    def __init__(self, make, base, extent):
        self.make, self.base, self.extent = make, np.asarray(base), extent

    def indices(self, count, first=0):
        items = [self.base + (first + k) * self.extent for k in range(count)]
        return np.concatenate(items) if items else np.zeros(0, dtype=int)

    def elements(self, count):
        """Length of a buffer that holds ``count`` items."""
        return int(self.indices(count).max()) + 1 if count else 0


def _triangle():
    return MPI.DOUBLE.Create_indexed([N - i for i in range(N)], [N * i + i for i in range(N)])


SPECS = {
    "contiguous": Spec(lambda: MPI.DOUBLE.Create_contiguous(3), [0, 1, 2], 3),
    "vector_column": Spec(lambda: MPI.DOUBLE.Create_vector(N, 1, N),
                          [N * i for i in range(N)], N * (N - 1) + 1),
    "hvector": Spec(lambda: MPI.DOUBLE.Create_hvector(3, 2, 5 * 8), [0, 1, 5, 6, 10, 11], 12),
    "indexed_triangle": Spec(_triangle, [N * i + j for i in range(N) for j in range(i, N)],
                             N * N),
    "hindexed": Spec(lambda: MPI.DOUBLE.Create_hindexed([2, 1, 3], [8, 40, 64]),
                     [1, 2, 5, 8, 9, 10], 10),   # lb 8: the extent counts from it
    "indexed_block": Spec(lambda: MPI.DOUBLE.Create_indexed_block(2, [0, 4, 9]),
                          [0, 1, 4, 5, 9, 10], 11),
    "hindexed_block": Spec(lambda: MPI.DOUBLE.Create_hindexed_block(1, [24, 0, 56]),
                           [3, 0, 7], 8),
    "subarray_c": Spec(lambda: MPI.DOUBLE.Create_subarray([4, 5], [2, 3], [1, 1]),
                       [6, 7, 8, 11, 12, 13], 20),
    "subarray_f": Spec(lambda: MPI.DOUBLE.Create_subarray([4, 5], [2, 3], [1, 1],
                                                          order=MPI.ORDER_F),
                       [5, 6, 9, 10, 13, 14], 20),
    "struct": Spec(lambda: MPI.Datatype.Create_struct([2, 1], [0, 24],
                                                      [MPI.DOUBLE, MPI.DOUBLE]),
                   [0, 1, 3], 4),
    # an item starts one element after the previous: count k reads the first k
    # columns of a 2 x 12 block transposed, MPI's classic resized-vector trick (up
    # to 12 items, the most a test here uses, never overlap: receiving into
    # overlapping items would be erroneous)
    "resized": Spec(lambda: MPI.DOUBLE.Create_vector(2, 1, 12).Create_resized(0, 8),
                    [0, 12], 1),
    "nested": Spec(lambda: MPI.DOUBLE.Create_vector(2, 1, 2).Create_contiguous(2),
                   [0, 2, 3, 5], 6),
    # rank 1 of a 2 x 2 grid owns rows 0-2 (block) and columns {2, 3} of a 6 x 5
    # array (cyclic by 2): packing this type on MPICH gives these elements
    "darray_c": Spec(lambda: MPI.DOUBLE.Create_darray(
        4, 1, [6, 5], [MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC],
        [MPI.DISTRIBUTE_DFLT_DARG, 2], [2, 2]), [2, 3, 7, 8, 12, 13], 30),
    # rank 3 (grid row 1, column 1) with the array in Fortran order
    "darray_f": Spec(lambda: MPI.DOUBLE.Create_darray(
        4, 3, [6, 5], [MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC],
        [MPI.DISTRIBUTE_DFLT_DARG, 2], [2, 2], MPI.ORDER_F), [15, 16, 17, 21, 22, 23], 30),
}


def _committed(spec):
    return spec.make().Commit()


def _source(spec, count, rank, items=None):
    """A buffer holding ``count`` items (``items`` items' room), distinct per rank."""
    length = spec.elements(items if items is not None else count)
    return np.arange(length, dtype="f8") + 1000.0 * (rank + 1)


def _target(spec, count):
    return np.full(spec.elements(count), SENTINEL)


def _expected(spec, count, values, first=0, into=None):
    """A target buffer after receiving ``values`` (packed) into ``count`` items from
    item ``first``: the selection holds them, every gap keeps the sentinel."""
    result = _target(spec, first + count) if into is None else into
    result[spec.indices(count, first)] = values
    return result


class Checker:
    def __init__(self, comm):
        self.comm, self.failures = comm, []

    def check(self, label, got, expected):
        if not np.array_equal(got, expected):
            self.failures.append("%s: got %s, expected %s" % (label, got.tolist(),
                                                                expected.tolist()))


def _point_to_point(comm, name, spec, check):
    """Every point-to-point form, each rank to its right-hand neighbour, count 2."""
    rank, size = comm.rank, comm.size
    right, left = (rank + 1) % size, (rank - 1) % size
    dtype = _committed(spec)
    count = 2
    src = _source(spec, count, rank)
    mine = src[spec.indices(count)]
    theirs = _source(spec, count, left)[spec.indices(count)]
    want = _expected(spec, count, theirs)
    label = "%s %s" % (name, "%s")

    got = _target(spec, count)
    request = comm.Irecv([got, count, dtype], left, 1)
    comm.Send([src, count, dtype], right, 1)
    request.Wait()
    check.check(label % "Send/Irecv", got, want)

    got = _target(spec, count)
    sent = comm.Isend([src, count, dtype], right, 2)
    comm.Recv([got, count, dtype], left, 2)
    sent.Wait()
    check.check(label % "Isend/Recv", got, want)

    got = _target(spec, count)
    request = comm.Irecv([got, count, dtype], left, 3)
    comm.Ssend([src, count, dtype], right, 3)
    request.Wait()
    check.check(label % "Ssend", got, want)

    got = _target(spec, count)
    receive = comm.Recv_init([got, count, dtype], left, 4)
    send = comm.Send_init([src, count, dtype], right, 4)
    for _ in range(2):
        got[:] = SENTINEL
        MPI.Prequest.Startall([receive, send])
        MPI.Request.Waitall([receive, send])
        check.check(label % "Send_init/Recv_init", got, want)
    receive.Free()
    send.Free()

    got = _target(spec, count)
    comm.Sendrecv([src, count, dtype], right, 5, [got, count, dtype], left, 5)
    check.check(label % "Sendrecv", got, want)

    got = src.copy()
    comm.Sendrecv_replace([got, count, dtype], right, 6, left, 6)
    check.check(label % "Sendrecv_replace", got,
                _expected(spec, count, theirs, into=src.copy()))

    # probes report the packed size; the matched receive unpacks
    got = _target(spec, count)
    comm.Isend([src, count, dtype], right, 7)
    status = MPI.Status()
    comm.Probe(left, 7, status)
    if status.Get_count(MPI.DOUBLE) != len(spec.indices(count)):
        check.failures.append("%s Probe count %d" % (name, status.Get_count(MPI.DOUBLE)))
    message = comm.Mprobe(left, 7)
    message.Recv([got, count, dtype])
    check.check(label % "Mprobe/Message.Recv", got, want)

    # the same signature typed differently on each side: derived into contiguous
    # and contiguous into derived
    flat = np.zeros(len(mine))
    comm.Sendrecv([src, count, dtype], right, 8, flat, left, 8)
    check.check(label % "typed into contiguous", flat, theirs)
    got = _target(spec, count)
    comm.Sendrecv(mine, right, 9, [got, count, dtype], left, 9)
    check.check(label % "contiguous into typed", got, want)

    # a shorter message fills only the first items
    got = _target(spec, count)
    comm.Sendrecv([src, 1, dtype], right, 10, [got, count, dtype], left, 10)
    check.check(label % "one item into two", got, _expected(spec, 1, theirs[:len(spec.base)],
                                                            into=_target(spec, count)))
    dtype.Free()


def _collectives(comm, name, spec, check, nonblocking):
    """Every collective with ``count`` items of the type on both sides."""
    rank, size = comm.rank, comm.size
    dtype = _committed(spec)
    count = 2
    per = len(spec.indices(count))          # elements of one rank's part
    srcs = [_source(spec, count, r, items=size * count) for r in range(size)]
    src = srcs[rank]
    values = [s[spec.indices(size * count)] for s in srcs]    # packed, size*count items
    own = [v[:per] for v in values]                           # the first count items
    label = "%s %s" % (name, "%s")

    def run(blocking, *args):
        if nonblocking:
            getattr(comm, "I" + blocking[0].lower() + blocking[1:])(*args).Wait()
        else:
            getattr(comm, blocking)(*args)

    got = src.copy() if rank == 0 else _target(spec, count)
    run("Bcast", [got, count, dtype], 0)
    check.check(label % "Bcast", got,
                src if rank == 0 else _expected(spec, count, own[0]))

    got = _target(spec, size * count)
    run("Gather", [src, count, dtype], [got, count, dtype], 0)
    if rank == 0:
        check.check(label % "Gather", got, _expected(spec, size * count, np.concatenate(own)))

    got = _target(spec, size * count)
    run("Allgather", [src, count, dtype], [got, count, dtype])
    check.check(label % "Allgather", got, _expected(spec, size * count, np.concatenate(own)))

    got = _target(spec, count)
    run("Scatter", [src, count, dtype], [got, count, dtype], 0)
    check.check(label % "Scatter", got,
                _expected(spec, count, values[0][rank * per:(rank + 1) * per]))

    got = _target(spec, size * count)
    run("Alltoall", [src, count, dtype], [got, count, dtype])
    check.check(label % "Alltoall", got, _expected(spec, size * count, np.concatenate(
        [values[r][rank * per:(rank + 1) * per] for r in range(size)])))

    # vector forms: rank r's part is r + 1 items, placed in reverse rank order
    counts = [r + 1 for r in range(size)]
    displs = list(np.cumsum([0] + counts[::-1][:-1])[::-1])
    total = sum(counts)
    item = len(spec.base)
    mine = src[spec.indices(counts[rank])]
    got = _target(spec, total)
    run("Gatherv", [src, counts[rank], dtype], [got, (counts, displs), dtype], 0)
    expected_v = _target(spec, total)
    for r in range(size):
        expected_v[spec.indices(counts[r], displs[r])] = srcs[r][spec.indices(counts[r])]
    if rank == 0:
        check.check(label % "Gatherv", got, expected_v)
    got = _target(spec, total)
    run("Allgatherv", [src, counts[rank], dtype], [got, (counts, displs), dtype])
    check.check(label % "Allgatherv", got, expected_v)
    got = _target(spec, counts[rank])
    run("Scatterv", [srcs[rank] if rank else _source(spec, total, 0), (counts, displs), dtype],
        [got, counts[rank], dtype], 0)
    root_src = _source(spec, total, 0)
    check.check(label % "Scatterv", got, _expected(
        spec, counts[rank], root_src[spec.indices(counts[rank], displs[rank])]))
    del mine, item
    # Alltoallv: block j of every send buffer goes to rank j, placed in reverse order
    reverse = [(size - 1 - r) * count for r in range(size)]
    got = _target(spec, size * count)
    run("Alltoallv", [src, (count, reverse), dtype], [got, (count, reverse), dtype])
    expected_a = _target(spec, size * count)
    for r in range(size):
        expected_a[spec.indices(count, reverse[r])] = srcs[r][spec.indices(count,
                                                                           reverse[rank])]
    check.check(label % "Alltoallv", got, expected_a)
    # Reduce_scatter: rank r gets the fold of r + 1 items
    offsets = list(np.cumsum([0] + counts))
    got = _target(spec, counts[rank])
    whole = _source(spec, total, rank)
    run("Reduce_scatter", [whole, total, dtype], [got, counts[rank], dtype], counts, MPI.SUM)
    check.check(label % "Reduce_scatter", got, _expected(spec, counts[rank], sum(
        _source(spec, total, r)[spec.indices(counts[rank], offsets[rank])]
        for r in range(size))))

    # reductions fold the packed doubles element by element
    got = _target(spec, count)
    run("Allreduce", [src, count, dtype], [got, count, dtype], MPI.SUM)
    check.check(label % "Allreduce", got, _expected(spec, count, sum(own)))
    got = _target(spec, count)
    run("Reduce", [src, count, dtype], [got, count, dtype], MPI.MAX, 0)
    if rank == 0:
        check.check(label % "Reduce", got, _expected(spec, count, np.max(own, axis=0)))
    got = _target(spec, count)
    run("Scan", [src, count, dtype], [got, count, dtype], MPI.SUM)
    check.check(label % "Scan", got, _expected(spec, count, sum(own[:rank + 1])))
    if rank:
        got = _target(spec, count)
        run("Exscan", [src, count, dtype], [got, count, dtype], MPI.SUM)
        check.check(label % "Exscan", got, _expected(spec, count, sum(own[:rank])))
    else:
        run("Exscan", [src, count, dtype], [_target(spec, count), count, dtype], MPI.SUM)
    got = _target(spec, count)
    # mpi4py: the send buffer's count is one block's, as the receive buffer's
    run("Reduce_scatter_block", [src, count, dtype], [got, count, dtype], MPI.SUM)
    check.check(label % "Reduce_scatter_block", got, _expected(
        spec, count, sum(v[rank * per:(rank + 1) * per] for v in values)))

    # IN_PLACE: this rank's part is read from, and left in, the receive buffer
    got = _target(spec, size * count)
    got[spec.indices(count, rank * count)] = own[rank]
    run("Allgather", MPI.IN_PLACE, [got, count, dtype])
    check.check(label % "Allgather IN_PLACE", got,
                _expected(spec, size * count, np.concatenate(own)))
    got = src.copy()
    run("Allreduce", MPI.IN_PLACE, [got, count, dtype], MPI.SUM)
    check.check(label % "Allreduce IN_PLACE", got,
                _expected(spec, count, sum(own), into=src.copy()))
    dtype.Free()


def _every_call(nonblocking_too=True):
    comm = MPI.COMM_WORLD
    check = Checker(comm)
    for name in sorted(SPECS):
        _point_to_point(comm, name, SPECS[name], check)
        _collectives(comm, name, SPECS[name], check, nonblocking=False)
        if nonblocking_too:
            _collectives(comm, name, SPECS[name], check, nonblocking=True)
    comm.Barrier()
    return check.failures


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [1, 2, 4])
def test_every_call_moves_exactly_the_type_map(nranks):
    """Issue 13: every point-to-point form and every collective, blocking and
    nonblocking, packs at the sender and unpacks at the receiver through each type
    constructor's type map (MPI-3.1 §4.1.11): the selected elements arrive, the
    gaps keep their values, and typed and contiguous sides with one signature match."""
    results = shmrma.launch(_every_call, nranks, timeout=100)
    assert results == [[]] * nranks


def test_the_papers_cases_column_triangle_and_bcast():
    """Issue 13's reports, as mpi4py's demo/mpi-ref-v1/ex-3.01.py and a halo code
    write them: a column Send, an upper triangle Sendrecv, a column Bcast."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.rank
        a = np.arange(N * N, dtype="f8").reshape(N, N) + 100 * rank
        column = MPI.DOUBLE.Create_vector(N, 1, N).Commit()
        upper = _triangle().Commit()
        out = {}
        b = np.zeros((N, N))
        if rank == 0:
            comm.Send([a, 1, column], 1)
        else:
            comm.Recv([b, 1, column], 0)
            out["column"] = b.copy()
        c = np.zeros((N, N))
        comm.Sendrecv((a, 1, upper), 1 - rank, 0, (c, 1, upper), 1 - rank, 0)
        out["triangle"] = c
        d = a.copy() if rank == 0 else np.zeros((N, N))
        comm.Bcast([d, 1, column], 0)
        out["bcast"] = d
        return out

    results = shmrma.launch(body, 2, timeout=60)
    a0 = np.arange(N * N, dtype="f8").reshape(N, N)
    column = np.zeros((N, N))
    column[:, 0] = a0[:, 0]
    assert np.array_equal(results[1]["column"], column)
    for rank in (0, 1):
        other = a0 + 100 * (1 - rank)
        assert np.array_equal(results[rank]["triangle"], np.triu(other))
    assert np.array_equal(results[1]["bcast"], column)


def test_mixed_struct_travels_and_refuses_predefined_reductions():
    """A struct of an int and a double (with padding between) travels whole in a
    message; a predefined op cannot fold it (ERR_TYPE), as it mixes basic types."""
    def body():
        comm = MPI.COMM_WORLD
        record = np.dtype([("i", "i4"), ("x", "f8")], align=True)
        dtype = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.INT, MPI.DOUBLE]).Commit()
        data = np.zeros(3, dtype=record)
        if comm.rank == 0:
            data["i"], data["x"] = [1, 2, 3], [0.5, 1.5, 2.5]
        comm.Bcast([data, 3, dtype], 0)
        try:
            comm.Allreduce(MPI.IN_PLACE, [data, 3, dtype], MPI.SUM)
            refused = None
        except MPI.Exception as exc:
            refused = exc.Get_error_class()
        return data["i"].tolist(), data["x"].tolist(), refused

    for result in shmrma.launch(body, 2, timeout=60):
        assert result == ([1, 2, 3], [0.5, 1.5, 2.5], MPI.ERR_TYPE)


def test_a_type_reaching_outside_the_buffer_is_refused_with_nothing_sent():
    """A message whose items reach past the buffer raises ValueError at the call,
    as mpi4py does for a too-short buffer; nothing is sent or received."""
    def body():
        comm = MPI.COMM_WORLD
        column = MPI.DOUBLE.Create_vector(N, 1, N).Commit()
        short = np.zeros(N * (N - 1))       # the last element of the column is missing
        errors = []
        for call in (lambda: comm.Send([short, 1, column], comm.rank),
                     lambda: comm.Recv([short, 1, column], comm.rank),
                     lambda: comm.Bcast([short, 1, column], 0)):
            try:
                call()
            except ValueError as exc:
                errors.append("outside the buffer" in str(exc))
        assert not comm.Iprobe()
        return errors

    assert shmrma.launch(body, 1, timeout=60) == [[True, True, True]]


def _large_item_reductions():
    """Every blocking reduction of one item of every other double of 2**16 (a 512 KiB
    item, more than a chunk of the collective area), with SUM and with a user's
    function, checked against numpy at every rank."""
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    n = 1 << 16
    strided = MPI.DOUBLE.Create_vector(n, 1, 2)
    every_other = strided.Create_resized(0, 2 * n * 8).Commit()     # items tile
    strided.Free()

    def add(a, b, datatype):
        inout = np.frombuffer(b, "f8")
        inout += np.frombuffer(a, "f8")
    user_sum = MPI.Op.Create(add, True)
    base = np.arange(2 * n * size, dtype="f8")
    failures = []
    for op in (MPI.SUM, user_sum):
        for name in ("Allreduce", "Reduce", "Scan", "Exscan", "Reduce_scatter_block",
                     "Reduce_scatter"):
            items = size if name.startswith("Reduce_scatter") else 1
            send = base[:2 * n * items] + rank
            got = np.full(2 * n, SENTINEL)
            if name == "Reduce_scatter_block":
                comm.Reduce_scatter_block([send, 1, every_other], [got, 1, every_other], op)
            elif name == "Reduce_scatter":
                comm.Reduce_scatter([send, items, every_other], [got, 1, every_other],
                                    [1] * size, op)
            elif name == "Reduce":
                comm.Reduce([send, 1, every_other], [got, 1, every_other], op, 0)
            else:
                getattr(comm, name)([send, 1, every_other], [got, 1, every_other], op)
            ranks = {"Scan": rank + 1, "Exscan": rank}.get(name, size)
            block = rank if name.startswith("Reduce_scatter") else 0
            want = np.full(2 * n, SENTINEL)
            want[::2] = (base[2 * n * block:2 * n * (block + 1)] * ranks
                         + sum(range(ranks)))[::2]
            skip = (name == "Reduce" and rank) or (name == "Exscan" and rank == 0)
            if not skip and not np.array_equal(got, want):
                failures.append((name, op is user_sum))
    user_sum.Free()
    every_other.Free()
    return failures


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_reductions_of_items_larger_than_a_chunk(nranks):
    """A derived item larger than a chunk of the collective area (a 512 KiB strided
    vector) folds right in every blocking reduction: a predefined op cuts the vector
    at its basic elements, a user's function, which sees whole items, takes the
    nonblocking form's whole vectors (MPI-3.1 §5.9.1; they raised ZeroDivisionError)."""
    assert shmrma.launch(_large_item_reductions, nranks, timeout=100) == [[]] * nranks


def test_bottom_with_absolute_addresses_in_messages():
    """MPI.BOTTOM with a struct of absolute addresses (MPI.Get_address) naming two
    separate arrays travels in Send/Recv, Sendrecv, Isend/Irecv and Bcast, as on
    MPICH (MPI-3.1 §4.1.12); BOTTOM with a predefined type, without a datatype, or
    with displacements that are no addresses is refused with ValueError, nothing
    sent (they were refused with a message about a missing buffer)."""
    def body():
        comm = MPI.COMM_WORLD
        rank, peer = comm.rank, 1 - comm.rank
        ints, doubles = np.arange(3, dtype="i4") + 10 * rank, np.arange(4.0) + 10 * rank

        def both(a, b):     # a[1:3] and b[0], wherever they live
            return MPI.Datatype.Create_struct(
                [2, 1], [MPI.Get_address(a[1:]), MPI.Get_address(b)],
                [MPI.INT, MPI.DOUBLE]).Commit()
        send = both(ints, doubles)
        got_ints, got_doubles = np.full(3, -1, "i4"), np.full(4, -1.0)
        into = both(got_ints, got_doubles)
        comm.Sendrecv([MPI.BOTTOM, 1, send], peer, 0, [MPI.BOTTOM, 1, into], peer, 0)
        out = {"sendrecv": (got_ints.tolist(), got_doubles.tolist())}
        got_ints[:], got_doubles[:] = -1, -1.0
        requests = [comm.Irecv([MPI.BOTTOM, 1, into], peer, 1),
                    comm.Isend([MPI.BOTTOM, 1, send], peer, 1)]
        MPI.Request.Waitall(requests)
        out["isend"] = (got_ints.tolist(), got_doubles.tolist())
        comm.Bcast([MPI.BOTTOM, 1, send], 0)
        out["bcast"] = (ints.tolist(), doubles.tolist())
        refused = []
        relative = MPI.Datatype.Create_struct([1], [8], [MPI.DOUBLE]).Commit()
        for spec in ([MPI.BOTTOM, 1, MPI.DOUBLE], [MPI.BOTTOM, 1], [MPI.BOTTOM, 1, relative]):
            try:
                comm.Send(spec, peer, 2)
            except ValueError as exc:
                refused.append("absolute addresses" in str(exc))
        assert not comm.Iprobe(peer, 2)
        out["refused"] = refused
        for datatype in (send, into, relative):
            datatype.Free()
        return out

    for rank, out in enumerate(shmrma.launch(body, 2, timeout=60)):
        peer = 1 - rank
        moved = ([-1, 10 * peer + 1, 10 * peer + 2], [10.0 * peer, -1, -1, -1])
        assert out["sendrecv"] == moved and out["isend"] == moved
        assert out["bcast"] == ([10 * rank, 1, 2], [0.0] + [10.0 * rank + k for k in (1, 2, 3)])
        assert out["refused"] == [True, True, True]


def test_parsed_items_of_a_type_outlive_the_handle_they_were_made_with():
    """A type's parsed items are kept on the type for its next message
    (derived.items_of): they still serve another handle to it after the program
    freed the first (a type built on it keeps it alive, Get_contents hands it
    out again), give the right bytes for every count, and go with the type: a
    handle to a freed type is refused as before."""
    column = MPI.DOUBLE.Create_vector(3, 1, 2).Commit()
    holder = column.Create_contiguous(2).Commit()       # keeps the column alive
    source = np.arange(12.0)
    moved = []
    for count in (1, 2, 1):
        out = np.full(6, SENTINEL)
        MPI.COMM_SELF.Alltoallw([source, [count], [0], [column]],
                                [out, [3 * count], [0], [MPI.DOUBLE]])
        moved.append(out[:3 * count].tolist())
    column.Free()
    again = holder.Get_contents()[3][0]     # a new handle to the freed column's type
    out = np.full(6, SENTINEL)
    MPI.COMM_SELF.Alltoallw([source, [2], [0], [again]], [out, [6], [0], [MPI.DOUBLE]])
    moved.append(out.tolist())
    two = [0.0, 2.0, 4.0, 5.0, 7.0, 9.0]    # the second item one extent (5) further
    assert moved == [two[:3], two, two[:3], two]
    again.Free()
    holder.Free()
    with pytest.raises(MPI.Exception):
        MPI.COMM_SELF.Alltoallw([source, [1], [0], [again]], [out, [3], [0], [MPI.DOUBLE]])
