"""Derived datatypes (MPI-3.1 §4.1) and RMA through them (R39, R45, R49, R60, R61)."""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.types import derived

# (size, lb, extent, true_lb, true_extent) read off mpi4py 4.1.2 on MPICH 5.0.2
REFERENCE = {
    "contiguous": (lambda: MPI.INT.Create_contiguous(5), (20, 0, 20, 0, 20)),
    "vector": (lambda: MPI.DOUBLE.Create_vector(3, 2, 4), (48, 0, 80, 0, 80)),
    "vector_neg": (lambda: MPI.INT.Create_vector(3, 1, -2), (12, -16, 20, -16, 20)),
    "hvector": (lambda: MPI.INT.Create_hvector(2, 3, 20), (24, 0, 32, 0, 32)),
    "indexed": (lambda: MPI.INT.Create_indexed([2, 1, 3], [4, 0, 9]), (24, 0, 48, 0, 48)),
    "hindexed": (lambda: MPI.SHORT.Create_hindexed([1, 2], [6, 0]), (6, 0, 8, 0, 8)),
    "indexed_block": (lambda: MPI.FLOAT.Create_indexed_block(2, [5, 1]), (16, 4, 24, 4, 24)),
    "hindexed_block": (lambda: MPI.INT.Create_hindexed_block(1, [12, 4]), (8, 4, 12, 4, 12)),
    "subarray_c": (lambda: MPI.DOUBLE.Create_subarray([4, 5], [2, 3], [1, 1]),
                   (48, 0, 160, 48, 64)),
    "subarray_f": (lambda: MPI.INT.Create_subarray([4, 5, 3], [2, 2, 2], [1, 2, 0],
                                                   order=MPI.ORDER_FORTRAN),
                   (32, 0, 240, 36, 104)),
    "struct": (lambda: MPI.Datatype.Create_struct([1, 2], [0, 8], [MPI.DOUBLE, MPI.INT]),
               (16, 0, 16, 0, 16)),
    "struct_char": (lambda: MPI.Datatype.Create_struct([1, 1], [0, 4], [MPI.INT, MPI.CHAR]),
                    (5, 0, 8, 0, 5)),
    "resized": (lambda: MPI.INT.Create_resized(-4, 16), (4, -4, 16, 0, 4)),
    "nested": (lambda: MPI.INT.Create_vector(2, 2, 3).Create_contiguous(2),
               (32, 0, 40, 0, 40)),
    "pairs": (lambda: MPI.DOUBLE_INT.Create_contiguous(3), (36, 0, 48, 0, 44)),
}


def _struct(lengths, displacements, types):
    return MPI.Datatype.Create_struct(lengths, displacements, types)


def _unaligned():
    """Two INT pairs, the second at byte 11: one type, so MPICH does not pad it."""
    return _struct([2, 2], [0, 11], [MPI.INT, MPI.INT])


# A struct's extent, padded (MPI-4.1 section 5.1.6) only where MPICH 5.0 pads it:
# not when all its members are one type (as MPICH's engine holds them), else to the
# largest alignment of the members of nonzero blocklength. (size, lb, extent,
# true_lb, true_extent) read off mpi4py 4.1.2 on MPICH 5.0.2. shmrma padded every
# struct to the largest alignment of all its members: extents 20, 12, 12, 24, 12
# for the first five, 60, 60 and 600 (true_lb 120) for the types built on the
# first, 16 with the zero-blocklength DOUBLE, 40 for the pairs and 8 for the
# resized member; the padded structs in between it already gave as MPICH does.
STRUCT_EXTENTS = {
    "one_type_unaligned": (_unaligned, (16, 0, 19, 0, 19)),
    "one_type_at_5": (lambda: _struct([1, 1], [0, 5], [MPI.INT, MPI.INT]), (8, 0, 9, 0, 9)),
    "int_and_unsigned": (lambda: _struct([1, 1], [0, 5], [MPI.INT, MPI.UNSIGNED]),
                         (8, 0, 9, 0, 9)),
    "long_and_int64": (lambda: _struct([1, 1], [0, 9], [MPI.LONG, MPI.INT64_T]),
                       (16, 0, 17, 0, 17)),
    "int_and_its_dup": (lambda: _struct([1, 1], [0, 5], [MPI.INT, MPI.INT.Dup()]),
                        (8, 0, 9, 0, 9)),
    "vector_of_it": (lambda: _unaligned().Create_vector(2, 1, 2), (32, 0, 57, 0, 57)),
    "contiguous_of_it": (lambda: _unaligned().Create_contiguous(3), (48, 0, 57, 0, 57)),
    "subarray_of_it": (lambda: _unaligned().Create_subarray([6, 5], [2, 3], [1, 1]),
                       (96, 0, 570, 114, 152)),
    "int_and_float": (lambda: _struct([1, 1], [0, 5], [MPI.INT, MPI.FLOAT]),
                      (8, 0, 12, 0, 9)),
    "int_and_vector_of_int": (lambda: _struct([1, 1], [0, 5],
                                              [MPI.INT, MPI.INT.Create_vector(2, 1, 2)]),
                              (12, 0, 20, 0, 17)),
    "char_then_int": (lambda: _struct([1, 1], [0, 1], [MPI.CHAR, MPI.INT]), (5, 0, 8, 0, 5)),
    "negative_displacement": (lambda: _struct([1, 1], [-3, 8], [MPI.INT, MPI.DOUBLE]),
                              (12, -3, 24, -3, 19)),
    "zero_blocklength_double": (lambda: _struct([1, 1, 0], [0, 5, 30],
                                                [MPI.INT, MPI.INT, MPI.DOUBLE]),
                                (8, 0, 12, 0, 9)),
    "pairs_one_type": (lambda: _struct([1, 1], [0, 20], [MPI.DOUBLE_INT, MPI.DOUBLE_INT]),
                       (24, 0, 36, 0, 32)),
    "one_resized_member": (lambda: _struct([1], [1], [MPI.INT.Create_resized(0, 5)]),
                           (4, 1, 5, 1, 4)),
}
REFERENCE.update(STRUCT_EXTENTS)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_sizes_and_extents_match_mpich(name):
    """Type constructors give MPICH's size, bounds and true extent (issue 3)."""
    make, expected = REFERENCE[name]
    datatype = make()
    assert (datatype.size, datatype.lb, datatype.extent, datatype.true_lb,
            datatype.true_extent) == expected
    assert datatype.Get_extent() == (expected[1], expected[2])
    datatype.Free()


def _packed(datatype, buffer, count=1):
    from shmrma.types import derived
    index = derived.Layout.of(datatype).byte_index(count, datatype.extent)
    return np.frombuffer(buffer, dtype=np.uint8)[index - datatype.true_lb
                                                 if datatype.true_lb < 0 else index]


def test_vector_layout_picks_the_strided_elements():
    """A vector's bytes are its blocks in type-map order (R39)."""
    data = np.arange(12, dtype="i4")
    vector = MPI.INT.Create_vector(3, 2, 4)
    picked = _packed(vector, data).view("i4")
    assert picked.tolist() == [0, 1, 4, 5, 8, 9]


def test_indexed_layout_keeps_type_map_order():
    """Blocks keep the order of the displacements, not address order."""
    data = np.arange(12, dtype="i4")
    indexed = MPI.INT.Create_indexed([2, 1], [5, 1])
    assert _packed(indexed, data).view("i4").tolist() == [5, 6, 1]


@pytest.mark.parametrize("base", ["DOUBLE", "vector", "resized"])
def test_blocks_built_in_lists_and_in_arrays_agree(base):
    """The two ways of building a type of blocks (derived._blocks: Python lists for a
    few blocks, numpy arrays for many) give the same blocks and bounds, negative
    starts, empty blocks and a non-dense old type included."""
    old = {"DOUBLE": MPI.DOUBLE, "vector": MPI.INT.Create_vector(2, 1, 3),
           "resized": MPI.SHORT.Create_resized(-2, 6)}[base]
    rng = np.random.default_rng(7)
    for _ in range(200):
        count = int(rng.integers(0, 9))
        lengths = [int(n) for n in rng.integers(0, 4, count)]
        starts = [int(n) for n in rng.integers(-40, 40, count)]
        few = derived._few_blocks(old, lengths, starts)
        many = derived._many_blocks(old, lengths, starts)
        assert derived.Layout.of(few).as_lists() == derived.Layout.of(many).as_lists()
        assert few.Get_extent() == many.Get_extent()
        assert few.Get_true_extent() == many.Get_true_extent()
        assert few.Get_size() == many.Get_size()


def test_subarray_layout_is_the_sub_box():
    data = np.arange(20, dtype="f8").reshape(4, 5)
    sub = MPI.DOUBLE.Create_subarray([4, 5], [2, 3], [1, 1])
    assert _packed(sub, data).view("f8").tolist() == data[1:3, 1:4].ravel().tolist()


@pytest.mark.parametrize("largest", [7, 24])
@pytest.mark.parametrize("base", ["DOUBLE", "INT", "vector", "contiguous"])
def test_subarrays_pack_and_unpack_the_numpy_slice(base, largest):
    """Random subarrays, both storage orders, of predefined elements (built a block per
    run of rows, planes or the whole box) and of derived ones (a block per element),
    few blocks (built in lists) and many (in arrays): Pack gives the slice's elements in
    storage order, each as its own type map, and Unpack puts them back where they were."""
    old = {"DOUBLE": MPI.DOUBLE, "INT": MPI.INT,
           "vector": MPI.DOUBLE.Create_vector(2, 1, 3).Commit(),
           "contiguous": MPI.DOUBLE.Create_contiguous(2).Commit()}[base]
    blocks = list(zip(*derived.Layout.of(old).as_lists()[:2]))
    rng = np.random.default_rng(len(base) + largest)
    for case in range(60):
        sizes = [int(n) for n in rng.integers(1, largest, int(rng.integers(1, 4)))]
        subsizes = [int(rng.integers(1, n + 1)) for n in sizes]
        starts = [int(rng.integers(0, n - m + 1)) for n, m in zip(sizes, subsizes)]
        order, storage = (MPI.ORDER_C, "C") if case % 2 else (MPI.ORDER_FORTRAN, "F")
        sub = old.Create_subarray(sizes, subsizes, starts, order=order).Commit()
        data = np.arange(int(np.prod(sizes)) * old.extent, dtype="u1")
        where = np.arange(int(np.prod(sizes))).reshape(sizes, order=storage)[
            tuple(slice(a, a + m) for a, m in zip(starts, subsizes))].ravel(order=storage)
        expected = b"".join(data[e * old.extent + at:e * old.extent + at + n].tobytes()
                            for e in where for at, n in blocks)
        packed = bytearray(sub.Pack_size(1, MPI.COMM_SELF))
        assert sub.Pack(data, packed, 0, MPI.COMM_SELF) == len(expected)
        assert bytes(packed[:len(expected)]) == expected, (sizes, subsizes, starts, storage)
        back = np.zeros_like(data)
        sub.Unpack(packed, 0, back, MPI.COMM_SELF)
        touched = np.frombuffer(expected, "u1")
        assert sorted(back[back != 0].tolist()) == sorted(touched[touched != 0].tolist())
        sub.Free()


def test_bad_constructor_arguments_raise():
    with pytest.raises(MPI.Exception) as info:
        MPI.INT.Create_contiguous(-1)
    assert info.value.Get_error_class() == MPI.ERR_COUNT
    with pytest.raises(MPI.Exception) as info:
        MPI.INT.Create_subarray([4], [3], [2])
    assert info.value.Get_error_class() == MPI.ERR_ARG
    # mpi4py checks the lengths of argument lists itself, with a ValueError
    with pytest.raises(ValueError, match="expecting 2 items, got 1"):
        MPI.INT.Create_indexed([1, 2], [0])
    with pytest.raises(ValueError, match="expecting 1 items, got 2"):
        MPI.Datatype.Create_struct([1], [0], [MPI.INT, MPI.FLOAT])


def test_dup_keeps_the_layout():
    vector = MPI.INT.Create_vector(2, 1, 3)
    twin = vector.Dup()
    data = np.arange(8, dtype="i4")
    assert _packed(twin, data).view("i4").tolist() == [0, 3]
    assert (twin.size, twin.extent) == (vector.size, vector.extent)


def _rma_through_derived_types():
    comm = MPI.COMM_WORLD
    rank = comm.rank
    peer = (rank + 1) % comm.size
    win = MPI.Win.Allocate(12 * 8, disp_unit=8, comm=comm)
    local = np.frombuffer(win.tomemory(), dtype="i8")
    local[:] = -1
    every_third = MPI.INT64_T.Create_vector(4, 1, 3).Commit()
    win.Fence()
    # R39: a strided target type lands the packed origin on every third element; the
    # origin is typed like the target (numpy's int64 alone would be MPI.LONG)
    win.Put([np.arange(4, dtype="i8") + 10 * rank, MPI.INT64_T], peer, (0, 1, every_third))
    every_third.Free()  # R60: the type may go as soon as the call returns
    win.Fence()
    after_put = local.tolist()
    # strided origin: read elements 0, 3, 6, 9 of the peer into a dense buffer
    pick = MPI.INT64_T.Create_indexed_block(1, [0, 3, 6, 9]).Commit()
    dense = np.zeros(4, dtype="i8")
    win.Get([dense, 4, MPI.INT64_T], peer, (0, 1, pick))
    win.Fence()
    # accumulate through a derived target type (one basic type, INT64_T on both sides: R45)
    win.Accumulate([np.ones(4, dtype="i8"), MPI.INT64_T], peer, (0, 1, pick), op=MPI.SUM)
    win.Fence()
    result = local.tolist()
    pick.Free()
    win.Free()
    return rank, after_put, dense.tolist(), result


@pytest.mark.timeout(60)
def test_put_get_accumulate_through_derived_types():
    """R39: target datatypes are interpreted at the target; strided origins too."""
    results = shmrma.launch(_rma_through_derived_types, 2, timeout=50)
    for rank, after_put, dense, result in results:
        writer = 1 - rank
        expected = [-1] * 12
        expected[0::3] = [10 * writer + k for k in range(4)]
        assert after_put == expected
        assert dense == [10 * rank + k for k in range(4)]
        expected[0::3] = [value + 1 for value in expected[0::3]]
        assert result == expected


def _datatype_errors():
    comm = MPI.COMM_WORLD
    win = MPI.Win.Allocate(64, disp_unit=1, comm=comm)
    local = np.frombuffer(win.tomemory(), dtype="u1")
    local[:] = 7
    win.Fence()
    found = {}
    uncommitted = MPI.INT.Create_contiguous(2)
    try:
        win.Put(np.zeros(2, dtype="i4"), 0, (0, 1, uncommitted))
    except MPI.Exception as exc:
        found["uncommitted"] = exc.Get_error_class()
    mixed = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.DOUBLE, MPI.INT]).Commit()
    try:
        win.Accumulate([bytearray(16), 1, mixed], 0, (0, 1, mixed))
    except MPI.Exception as exc:
        found["mixed"] = exc.Get_error_class()
    pair = MPI.INT.Create_contiguous(1).Commit()
    try:
        win.Fetch_and_op([np.zeros(1, "i4"), 1, pair], [np.zeros(1, "i4"), 1, pair], 0)
    except MPI.Exception as exc:
        found["fop_derived"] = exc.Get_error_class()
    win.Fence()
    unchanged = bool((local == 7).all())
    win.Free()
    return found, unchanged


@pytest.mark.timeout(60)
def test_datatype_errors_change_nothing():
    """R61 uncommitted -> ERR_TYPE; R45 mixed basic types -> ERR_TYPE; R49 FOP derived."""
    for found, unchanged in shmrma.launch(_datatype_errors, 2, timeout=50):
        assert found == {"uncommitted": MPI.ERR_TYPE, "mixed": MPI.ERR_TYPE,
                         "fop_derived": MPI.ERR_TYPE}
        assert unchanged


# -- darray (MPI-4.1 §5.1.4) ---------------------------------------------------------

B, C, N, DFLT = (MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC, MPI.DISTRIBUTE_NONE,
                 MPI.DISTRIBUTE_DFLT_DARG)
# arguments: (element indices in type-map order, extent, true lb, true extent), read
# off mpi4py 4.1.2 on MPICH 5.0.2 by packing an arange of ints through the type
DARRAYS = [
    ((6, 4, [7, 5, 3], [C, B, N], [2, DFLT, DFLT], [3, 2, 1], MPI.ORDER_C),
     list(range(60, 69)) + list(range(75, 84)), 420, 240, 96),
    ((6, 4, [7, 5, 3], [C, B, N], [2, DFLT, DFLT], [3, 2, 1], MPI.ORDER_F),
     [4, 5, 11, 12, 18, 19, 39, 40, 46, 47, 53, 54, 74, 75, 81, 82, 88, 89], 420, 16, 344),
    ((3, 2, [10], [B], [4], [3], MPI.ORDER_C), [8, 9], 40, 32, 8),
    ((3, 2, [10], [C], [3], [3], MPI.ORDER_C), [6, 7, 8], 40, 24, 12),
    ((4, 3, [9], [B], [DFLT], [4], MPI.ORDER_C), [], 36, 0, 0),   # nothing left for rank 3
]


@pytest.mark.parametrize("case", range(len(DARRAYS)))
def test_darray_type_map_matches_mpich(case):
    arguments, elements, extent, true_lb, true_extent = DARRAYS[case]
    darray = MPI.INT.Create_darray(*arguments)
    assert (darray.Get_extent(), darray.Get_true_extent(), darray.size) == (
        (0, extent), (true_lb, true_extent), 4 * len(elements))
    data = np.arange(105, dtype="i4")
    assert _packed(darray, data).view("i4").tolist() == elements


def test_darray_of_a_resized_type_spans_the_array_from_zero():
    """Like subarray, the type covers the whole array from 0, whatever the old lb."""
    spaced = MPI.INT.Create_resized(-4, 8)
    darray = spaced.Create_darray(4, 1, [6, 5], [B, C], [DFLT, 2], [2, 2])
    subarray = spaced.Create_subarray([6, 5], [2, 2], [1, 1])
    assert (darray.Get_extent(), darray.Get_true_extent()) == ((0, 240), (16, 92))
    assert (subarray.Get_extent(), subarray.Get_true_extent()) == ((0, 240), (48, 52))


@pytest.mark.parametrize("arguments, error_class, match", [
    ((4, 1, [6], [B], [1], [4]), MPI.ERR_ARG, "cannot hold"),
    ((4, 4, [6], [B], [DFLT], [4]), MPI.ERR_RANK, "rank 4"),
    ((4, 1, [6], [B], [DFLT], [2]), MPI.ERR_ARG, "multiplying"),
    ((4, 1, [6], [N], [DFLT], [4]), MPI.ERR_ARG, "psize 1"),
    ((4, 1, [6], [99], [DFLT], [4]), MPI.ERR_ARG, "distribution 99"),
    ((4, 1, [6], [C], [0], [4]), MPI.ERR_ARG, "distribution argument 0"),
    ((4, 1, [6], [B], [DFLT], [4], 7), MPI.ERR_ARG, "order"),
    ((4, 1, [0], [B], [DFLT], [4]), MPI.ERR_ARG, "gsize"),
])
def test_bad_darray_arguments_raise(arguments, error_class, match):
    with pytest.raises(MPI.Exception, match=match) as info:
        MPI.INT.Create_darray(*arguments)
    assert info.value.Get_error_class() == error_class


def test_darray_argument_lists_of_other_lengths_are_value_errors():
    with pytest.raises(ValueError, match="expecting 2 items, got 1"):
        MPI.INT.Create_darray(4, 0, [4, 4], [B], [DFLT, DFLT], [2, 2])


def test_contiguous_of_2_31_minus_1_stays_small():
    """Held by structure, its arguments recorded as given: one run, no per-element
    arrays (MPI-4.1 large counts): making it allocates under 1 MiB."""
    import tracemalloc
    MPI.BYTE.Create_contiguous(2).Free()   # numpy loaded before the count starts
    tracemalloc.start()
    big = MPI.BYTE.Create_contiguous(2**31 - 1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert big.decode()[2] == {"count": 2**31 - 1} and big.size == 2**31 - 1
    assert peak < 2**20


def test_large_layouts_agree_with_small_ones():
    """Layouts of up to 64 blocks are Python lists and larger ones numpy arrays: both
    give the same blocks, bounds and sizes (pair padding included)."""
    for count in (3, 70):   # below and above the list/array threshold
        vector = MPI.INT.Create_vector(count, 1, 2)
        data = np.arange(2 * count, dtype="i4")
        assert _packed(vector, data).view("i4").tolist() == list(range(0, 2 * count, 2))
        pairs = MPI.DOUBLE_INT.Create_vector(count, 1, 2)
        assert (pairs.size, pairs.Get_true_extent()) == (12 * count, (0, 32 * (count - 1) + 12))
        struct = MPI.Datatype.Create_struct([1, 1], [0, 8 * count], [vector, MPI.CHAR])
        assert struct.size == 4 * count + 1
        assert len(derived.Layout.of(struct)) == count + 1
