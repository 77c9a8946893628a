"""Predefined datatypes, typecodes and buffer formats (docs/api.md).

Expected values were read off mpi4py 4.1 on MPICH 5.0 (LP64 Linux), the
reference a shmrma program must behave like.
"""
import array
import ctypes
import pickle

import numpy as np
import pytest

from shmrma import MPI
from shmrma.types import derived
from shmrma.types import datatype as dt
from shmrma.core import errors
from shmrma.types.datatype import DATATYPE_NULL, Datatype
from mpitest import raises_mpi

# name: (Get_name, size, extent, tocode, typestr, typechar)
BASIC = {
    "BYTE": ("MPI_BYTE", 1, 1, "B", "u1", "B"),
    "PACKED": ("MPI_PACKED", 1, 1, "B", "u1", "B"),
    "CHAR": ("MPI_CHAR", 1, 1, "c", "S1", "c"),
    "WCHAR": ("MPI_WCHAR", 4, 4, "U", "U1", "U"),
    "SIGNED_CHAR": ("MPI_SIGNED_CHAR", 1, 1, "b", "i1", "b"),
    "UNSIGNED_CHAR": ("MPI_UNSIGNED_CHAR", 1, 1, "B", "u1", "B"),
    "SHORT": ("MPI_SHORT", 2, 2, "h", "i2", "h"),
    "UNSIGNED_SHORT": ("MPI_UNSIGNED_SHORT", 2, 2, "H", "u2", "H"),
    "INT": ("MPI_INT", 4, 4, "i", "i4", "i"),
    "UNSIGNED": ("MPI_UNSIGNED", 4, 4, "I", "u4", "I"),
    "LONG": ("MPI_LONG", 8, 8, "l", "i8", "l"),
    "UNSIGNED_LONG": ("MPI_UNSIGNED_LONG", 8, 8, "L", "u8", "L"),
    "LONG_LONG": ("MPI_LONG_LONG_INT", 8, 8, "q", "i8", "q"),
    "UNSIGNED_LONG_LONG": ("MPI_UNSIGNED_LONG_LONG", 8, 8, "Q", "u8", "Q"),
    "FLOAT": ("MPI_FLOAT", 4, 4, "f", "f4", "f"),
    "DOUBLE": ("MPI_DOUBLE", 8, 8, "d", "f8", "d"),
    "LONG_DOUBLE": ("MPI_LONG_DOUBLE", 16, 16, "g", "f16", "g"),
    "C_BOOL": ("MPI_C_BOOL", 1, 1, "b1", "b1", "?"),
    "INT8_T": ("MPI_INT8_T", 1, 1, "i1", "i1", "b"),
    "INT16_T": ("MPI_INT16_T", 2, 2, "i2", "i2", "h"),
    "INT32_T": ("MPI_INT32_T", 4, 4, "i4", "i4", "i"),
    "INT64_T": ("MPI_INT64_T", 8, 8, "i8", "i8", "l"),
    "UINT8_T": ("MPI_UINT8_T", 1, 1, "u1", "u1", "B"),
    "UINT16_T": ("MPI_UINT16_T", 2, 2, "u2", "u2", "H"),
    "UINT32_T": ("MPI_UINT32_T", 4, 4, "u4", "u4", "I"),
    "UINT64_T": ("MPI_UINT64_T", 8, 8, "u8", "u8", "L"),
    "C_FLOAT_COMPLEX": ("MPI_C_COMPLEX", 8, 8, "F", "c8", "F"),
    "C_DOUBLE_COMPLEX": ("MPI_C_DOUBLE_COMPLEX", 16, 16, "D", "c16", "D"),
    "C_LONG_DOUBLE_COMPLEX": ("MPI_C_LONG_DOUBLE_COMPLEX", 32, 32, "G", "c32", "G"),
    "AINT": ("MPI_AINT", 8, 8, "p", "i8", "p"),
    "OFFSET": ("MPI_OFFSET", 8, 8, "p", "i8", "p"),
    "COUNT": ("MPI_COUNT", 8, 8, "p", "i8", "p"),
}

# name: (Get_name, size, (lb, extent), (true_lb, true_extent)); C structs {value; int;}
PAIRS = {
    "FLOAT_INT": ("MPI_FLOAT_INT", 8, (0, 8), (0, 8)),
    "DOUBLE_INT": ("MPI_DOUBLE_INT", 12, (0, 16), (0, 12)),
    "LONG_INT": ("MPI_LONG_INT", 12, (0, 16), (0, 12)),
    "TWOINT": ("MPI_2INT", 8, (0, 8), (0, 8)),
    "SHORT_INT": ("MPI_SHORT_INT", 6, (0, 8), (0, 8)),
    "LONG_DOUBLE_INT": ("MPI_LONG_DOUBLE_INT", 20, (0, 32), (0, 20)),
}

# mpi4py's MPI._typedict on LP64 Linux + MPICH (without MPICH's float16 extension)
TYPECODES = {
    "?": "C_BOOL", "b": "SIGNED_CHAR", "h": "SHORT", "i": "INT", "l": "LONG",
    "q": "LONG_LONG", "B": "UNSIGNED_CHAR", "H": "UNSIGNED_SHORT", "I": "UNSIGNED",
    "L": "UNSIGNED_LONG", "Q": "UNSIGNED_LONG_LONG", "f": "FLOAT", "d": "DOUBLE",
    "g": "LONG_DOUBLE", "Zf": "C_FLOAT_COMPLEX", "Zd": "C_DOUBLE_COMPLEX",
    "F": "C_FLOAT_COMPLEX", "D": "C_DOUBLE_COMPLEX", "Zg": "C_LONG_DOUBLE_COMPLEX",
    "G": "C_LONG_DOUBLE_COMPLEX", "i1": "INT8_T", "i2": "INT16_T", "i4": "INT32_T",
    "i8": "INT64_T", "f4": "FLOAT", "f8": "DOUBLE", "f16": "LONG_DOUBLE",
    "c8": "C_FLOAT_COMPLEX", "c16": "C_DOUBLE_COMPLEX", "c32": "C_LONG_DOUBLE_COMPLEX",
    "b1": "C_BOOL", "u1": "UINT8_T", "u2": "UINT16_T", "u4": "UINT32_T", "u8": "UINT64_T",
    "n": "COUNT", "N": "UNSIGNED_LONG", "p": "AINT", "P": "UNSIGNED_LONG",
    "c": "CHAR", "a": "CHAR", "S": "CHAR", "S1": "CHAR", "s": "CHAR", "1s": "CHAR",
    "U": "WCHAR", "U1": "WCHAR", "u": "UINT16_T", "1u": "UINT16_T", "w": "WCHAR",
    "1w": "WCHAR", "M": "INT64_T", "M8": "INT64_T", "m": "INT64_T", "m8": "INT64_T",
}


# -- predefined types ------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(BASIC))
def test_basic_type_matches_mpi4py_on_mpich(name):
    mpi_name, size, extent, code, typestr, typechar = BASIC[name]
    datatype = getattr(dt, name)
    assert datatype.Get_name() == datatype.name == mpi_name
    assert datatype.Get_size() == datatype.size == size
    assert datatype.Get_extent() == (0, extent) and (datatype.lb, datatype.ub) == (0, extent)
    assert datatype.Get_true_extent() == (0, extent)
    assert (datatype.true_lb, datatype.true_extent, datatype.true_ub) == (0, extent, extent)
    assert (datatype.tocode(), datatype.typestr, datatype.typechar) == (code, typestr, typechar)
    assert datatype.is_predefined and datatype.committed and datatype


@pytest.mark.parametrize("name", sorted(BASIC))
def test_basic_type_numpy_element_has_its_size_and_is_its_own_basic_type(name):
    """R45: accumulate calls compare the basic types of their datatypes."""
    datatype = getattr(dt, name)
    assert datatype.dtype.itemsize == datatype.size
    assert datatype.basic is datatype


@pytest.mark.parametrize("name,numpy_type", [
    ("INT", np.intc), ("LONG", np.int_), ("UNSIGNED_LONG_LONG", np.ulonglong),
    ("FLOAT", np.float32), ("LONG_DOUBLE", np.longdouble), ("C_BOOL", np.bool_),
    ("C_LONG_DOUBLE_COMPLEX", np.clongdouble), ("CHAR", np.int8), ("BYTE", np.uint8),
    ("AINT", np.intp), ("UINT16_T", np.uint16)])
def test_numpy_element_types(name, numpy_type):
    assert getattr(dt, name).dtype == np.dtype(numpy_type)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_pair_type_is_laid_out_like_the_c_struct(name):
    mpi_name, size, extent, true_extent = PAIRS[name]
    pair = getattr(dt, name)
    assert (pair.name, pair.size, pair.Get_extent(), pair.Get_true_extent()) == PAIRS[name]
    assert pair.dtype.itemsize == extent[1]
    assert pair.dtype.names == ("value", "index")
    assert pair.dtype.fields["index"][0] == np.dtype(np.intc)
    assert pair.basic is pair and pair.is_predefined
    assert (pair.typestr, pair.typechar) == ("V%d" % extent[1], "V")
    with pytest.raises(ValueError, match="cannot map"):
        pair.tocode()


def test_double_int_is_16_bytes_with_the_index_after_the_double():
    assert dt.DOUBLE_INT.dtype.itemsize == 16
    assert dt.DOUBLE_INT.dtype.fields["index"][1] == 8


def test_aliases_are_the_same_objects_as_in_mpi4py():
    assert dt.BOOL is dt.C_BOOL
    assert dt.C_COMPLEX is dt.C_FLOAT_COMPLEX
    assert dt.INT_INT is dt.TWOINT
    assert dt.SIGNED_INT is dt.INT and dt.UNSIGNED_INT is dt.UNSIGNED


def test_distinct_predefined_types_are_not_equal_even_with_the_same_layout():
    assert dt.INT != dt.INT32_T
    assert dt.BYTE != dt.UNSIGNED_CHAR
    assert dt.LONG != dt.LONG_LONG


def test_get_value_index_finds_the_pair_types():
    assert Datatype.Get_value_index(dt.DOUBLE, dt.INT) is dt.DOUBLE_INT
    assert Datatype.Get_value_index(dt.SHORT, dt.INT) is dt.SHORT_INT
    assert Datatype.Get_value_index(dt.INT, dt.DOUBLE) is DATATYPE_NULL
    with pytest.raises(TypeError):
        Datatype.Get_value_index("d", dt.INT)


# -- DATATYPE_NULL and errors ------------------------------------------------------

def test_datatype_null_is_false_and_has_no_element():
    assert not DATATYPE_NULL and DATATYPE_NULL.is_predefined
    assert DATATYPE_NULL.dtype is None and DATATYPE_NULL.basic is None
    assert DATATYPE_NULL.type_class is None and not DATATYPE_NULL.committed
    assert DATATYPE_NULL.Get_name() == "MPI_DATATYPE_NULL"
    assert (DATATYPE_NULL.typestr, DATATYPE_NULL.typechar) == ("", "")
    assert Datatype() == DATATYPE_NULL and Datatype() is not DATATYPE_NULL


@pytest.mark.parametrize("call", [
    lambda t: t.Get_size(), lambda t: t.size, lambda t: t.Get_extent(), lambda t: t.extent,
    lambda t: t.lb, lambda t: t.ub, lambda t: t.Get_true_extent(), lambda t: t.true_extent,
    lambda t: t.true_lb, lambda t: t.true_ub, lambda t: t.Commit(), lambda t: t.Dup(),
    lambda t: t.Free(), lambda t: t.Set_name("x")])
def test_datatype_null_calls_raise_err_type(call):
    with raises_mpi(errors.ERR_TYPE) as info:
        call(DATATYPE_NULL)
    assert "DATATYPE_NULL" in str(info.value)
    assert DATATYPE_NULL.Get_name() == "MPI_DATATYPE_NULL"


def test_datatype_null_has_no_typecode():
    with pytest.raises(ValueError, match="cannot map to character code"):
        DATATYPE_NULL.tocode()


@pytest.mark.parametrize("name", ["INT", "DOUBLE_INT", "BYTE", "C_BOOL"])
def test_freeing_a_predefined_type_raises_err_type_and_changes_nothing(name):
    datatype = getattr(dt, name)
    before = (datatype.size, datatype.Get_extent(), datatype.name)
    with raises_mpi(errors.ERR_TYPE) as info:
        datatype.Free()
    assert name in str(info.value)
    assert datatype and (datatype.size, datatype.Get_extent(), datatype.name) == before
    datatype.free()  # mpi4py's helper skips predefined types
    assert datatype


def test_commit_returns_the_same_object():
    assert dt.INT.Commit() is dt.INT


# -- Dup, Free, copies -----------------------------------------------------------

def test_dup_is_a_new_committed_type_with_the_same_layout_and_no_name():
    """R61 needs committed types; a Dup keeps the committed state and the basic type (R45)."""
    twin = dt.DOUBLE_INT.Dup()
    assert twin != dt.DOUBLE_INT and not twin.is_predefined and twin.committed
    assert (twin.size, twin.Get_extent(), twin.Get_true_extent()) == (12, (0, 16), (0, 12))
    assert twin.name == "" and twin.basic is dt.DOUBLE_INT and twin.dtype == dt.DOUBLE_INT.dtype
    assert dt.INT.Dup().tocode() == "i" and dt.INT.Dup().Dup().typestr == "i4"
    assert dt.INT.Create_dup().basic is dt.INT


def test_free_of_a_dup_nulls_it_and_invalidates_copies_of_the_handle():
    twin = dt.INT.Dup()
    alias = Datatype(twin)
    assert alias == twin and alias is not twin
    twin.Free()
    assert twin == DATATYPE_NULL and not twin
    with raises_mpi(errors.ERR_TYPE) as info:
        alias.Get_size()
    assert "freed" in str(info.value)
    with raises_mpi(errors.ERR_TYPE):
        twin.Free()
    assert dt.INT.size == 4


def test_free_helper_frees_derived_and_skips_null():
    twin = dt.INT.Dup()
    twin.free()
    assert twin == DATATYPE_NULL
    twin.free()


def test_copy_constructor_shares_the_handle_and_checks_its_argument():
    copy = Datatype(dt.INT)
    assert copy == dt.INT and copy is not dt.INT and copy.is_predefined
    with pytest.raises(TypeError, match="expected Datatype"):
        Datatype("i")


def test_equality_hash_and_ordering():
    assert dt.INT == Datatype(dt.INT) and not dt.INT != Datatype(dt.INT)
    assert dt.INT != "i" and not dt.INT == "i"
    with pytest.raises(TypeError):     # unhashable, as in mpi4py
        hash(dt.INT)
    with pytest.raises(TypeError):
        dt.INT < dt.LONG


# -- names ---------------------------------------------------------------------------

def test_set_name_on_a_dup_is_seen_through_every_copy_and_truncated_like_mpich():
    twin = dt.INT.Dup()
    twin.Set_name("mine")
    assert Datatype(twin).name == "mine"
    twin.name = b"bytes too"
    assert twin.Get_name() == "bytes too"
    twin.Set_name("x" * 200)
    assert len(twin.name) == 127


def test_set_name_rejects_non_text_and_keeps_the_old_name():
    twin = dt.INT.Dup()
    twin.Set_name("kept")
    with pytest.raises(TypeError):
        twin.Set_name(5)
    with pytest.raises(ValueError):
        twin.Set_name("a\0b")
    assert twin.name == "kept"


def test_set_name_on_a_predefined_type_is_allowed_as_in_mpich():
    try:
        dt.SHORT.Set_name("renamed")
        assert dt.SHORT.name == "renamed"
    finally:
        dt.SHORT.Set_name("MPI_SHORT")


def test_repr_names_the_type():
    assert repr(dt.INT) == "MPI.INT" and repr(DATATYPE_NULL) == "MPI.DATATYPE_NULL"
    assert repr(dt.BOOL) == "MPI.C_BOOL"
    assert "size=4" in repr(dt.INT.Dup())


# -- typecodes -------------------------------------------------------------------------

@pytest.mark.parametrize("code,name", sorted(TYPECODES.items()))
def test_typecodes_map_like_mpi4py(code, name):
    assert Datatype.fromcode(code) is getattr(dt, name)
    assert dt.from_typecode(code) is getattr(dt, name)
    assert dt.lookup(code) is getattr(dt, name)


@pytest.mark.parametrize("name", sorted(BASIC))
def test_tocode_round_trips_through_fromcode_for_all_but_the_byte_like_types(name):
    datatype = getattr(dt, name)
    back = Datatype.fromcode(datatype.tocode())
    assert back.size == datatype.size
    if name not in ("BYTE", "PACKED", "OFFSET", "COUNT"):
        assert back is datatype


@pytest.mark.parametrize("code", ["x", "i4 ", "=i", "<i", "f3", "2i", "T{d:a:i:b:}", "", 5])
def test_unknown_typecodes(code):
    """Codes mpi4py on MPICH cannot map either ("e" and "f2" it maps to FLOAT16_T)."""
    with pytest.raises(ValueError, match="cannot map code"):
        Datatype.fromcode(code)
    with pytest.raises(KeyError, match="cannot map"):
        dt.from_typecode(code)
    with pytest.raises(KeyError, match="cannot map"):
        dt.lookup(code)


def test_unhashable_typecode_is_a_type_error_as_in_mpi4py():
    with pytest.raises(TypeError):
        Datatype.fromcode([1])
    with pytest.raises(TypeError):
        dt.lookup([1])


def test_lookup_returns_datatypes_unchanged():
    twin = dt.INT.Dup()
    assert dt.lookup(twin) is twin and dt.lookup(DATATYPE_NULL) is DATATYPE_NULL


# -- buffer formats --------------------------------------------------------------

@pytest.mark.parametrize("numpy_type,name", [
    ("i1", "SIGNED_CHAR"), ("u1", "UNSIGNED_CHAR"), ("i2", "SHORT"), ("u2", "UNSIGNED_SHORT"),
    ("i4", "INT"), ("u4", "UNSIGNED"), ("i8", "LONG"), ("u8", "UNSIGNED_LONG"),
    ("longlong", "LONG_LONG"), ("ulonglong", "UNSIGNED_LONG_LONG"), ("f4", "FLOAT"),
    ("f8", "DOUBLE"), ("longdouble", "LONG_DOUBLE"), ("c8", "C_FLOAT_COMPLEX"),
    ("c16", "C_DOUBLE_COMPLEX"), ("clongdouble", "C_LONG_DOUBLE_COMPLEX"), ("?", "C_BOOL"),
    ("S1", "CHAR"), ("U1", "WCHAR"), ("<i4", "INT")])
def test_numpy_buffers(numpy_type, name):
    view = memoryview(np.zeros(3, numpy_type))
    assert dt.from_buffer_format(view.format, view.itemsize) is getattr(dt, name)


@pytest.mark.parametrize("obj,name", [
    (bytearray(4), "UNSIGNED_CHAR"), (b"abc", "UNSIGNED_CHAR"),
    (array.array("b", [1]), "SIGNED_CHAR"),
    (array.array("i", [1]), "INT"), (array.array("d", [1]), "DOUBLE"),
    (array.array("q", [1]), "LONG_LONG"), (array.array("L", [1]), "UNSIGNED_LONG"),
    ((ctypes.c_int * 2)(), "INT"), ((ctypes.c_double * 2)(), "DOUBLE"),
    ((ctypes.c_ubyte * 2)(), "UNSIGNED_CHAR")])
def test_other_buffer_exporters(obj, name):
    view = memoryview(obj)
    assert dt.from_buffer_format(view.format, view.itemsize) is getattr(dt, name)


def test_buffer_format_rules_of_mpi4py():
    """No format is BYTE; "B" is UNSIGNED_CHAR, as mpi4py 4.1.2 on MPICH gives a
    bytearray (its Allreduce with SUM or LAND works there, with [buf, MPI.BYTE] it is
    ERR_OP; datatype.from_buffer_format says why)."""
    assert dt.from_buffer_format(None) is dt.BYTE
    assert dt.from_buffer_format("B") is dt.UNSIGNED_CHAR
    assert dt.from_buffer_format("<B") is dt.UNSIGNED_CHAR
    assert dt.from_buffer_format("@i") is dt.INT
    assert dt.from_buffer_format("<i4") is dt.INT32_T
    assert dt.from_buffer_format("Zd", 16) is dt.C_DOUBLE_COMPLEX


def test_non_native_byte_order_is_a_buffer_error():
    view = memoryview(np.zeros(2, ">i4"))
    with pytest.raises(BufferError, match="non-native byte order"):
        dt.from_buffer_format(view.format, view.itemsize)


@pytest.mark.parametrize("fmt", ["=i", "!i", "T{d:a:i:b:}", "2i", "5s"])
def test_formats_without_a_datatype_are_key_errors(fmt):
    with pytest.raises(KeyError, match="cannot map"):
        dt.from_buffer_format(fmt)


def test_fortran_and_float16_types_as_mpi4py_names_them_on_mpich():
    """mpi4py on MPICH: float16 is MPIX_C_FLOAT16 (typecode "e"), the Fortran types
    have gfortran's sizes, FLOAT32_T/FLOAT64_T are FLOAT/DOUBLE, and what MPICH has
    not built (BFLOAT16_T, LOGICAL1, ...) is DATATYPE_NULL; a 2**31-1 contiguous type
    is held by its structure (one run), not per element."""
    assert dt.from_buffer_format("e") is MPI.FLOAT16_T
    assert (MPI.FLOAT16_T.Get_size(), MPI.FLOAT16_T.Get_name()) == (2, "MPIX_C_FLOAT16")
    sizes = {"CHARACTER": 1, "LOGICAL": 4, "INTEGER": 4, "REAL": 4, "DOUBLE_PRECISION": 8,
             "COMPLEX": 8, "DOUBLE_COMPLEX": 16, "INTEGER8": 8, "REAL16": 16, "COMPLEX32": 32}
    for name, size in sizes.items():
        assert getattr(MPI, name).Get_size() == size, name
    assert MPI.FLOAT32_T is MPI.FLOAT and MPI.FLOAT64_T is MPI.DOUBLE
    for name in ("BFLOAT16_T", "LOGICAL1", "INTEGER16", "REAL2"):
        assert getattr(MPI, name) == MPI.DATATYPE_NULL, name
    big = MPI.BYTE.Create_contiguous(2**31 - 1).Commit()
    assert big.Get_size() == 2**31 - 1 and len(derived.Layout.of(big).offsets) == 1
    big.Free()


def test_item_size_disagreeing_with_the_format_is_a_buffer_error():
    with pytest.raises(BufferError, match="8"):
        dt.from_buffer_format("i", 8)


# -- pickling (what comm.send of a datatype needs) -------------------------------------

@pytest.mark.parametrize("name", ["INT", "DOUBLE_INT", "BOOL", "DATATYPE_NULL"])
def test_predefined_types_pickle_to_themselves(name):
    constant = getattr(dt, name)
    assert pickle.loads(pickle.dumps(constant)) is constant


def test_copies_and_dups_pickle_to_equivalent_handles():
    assert pickle.loads(pickle.dumps(Datatype(dt.INT))) == dt.INT
    assert pickle.loads(pickle.dumps(Datatype())) == DATATYPE_NULL
    twin = pickle.loads(pickle.dumps(dt.DOUBLE_INT.Dup()))
    assert twin.basic is dt.DOUBLE_INT and not twin.is_predefined and twin.extent == 16


def test_a_freed_handle_cannot_be_pickled():
    twin = dt.INT.Dup()
    alias = Datatype(twin)
    twin.Free()
    with pytest.raises(ValueError, match="cannot serialize"):
        pickle.dumps(alias)


# -- decoding: envelope, contents, decode (MPI-4.1 §5.1.13) ----------------------------

def test_combiner_and_typeclass_constants_are_mpichs():
    """mpi4py on MPICH exposes MPICH's numbers; a program may log or compare them."""
    assert (MPI.COMBINER_NAMED, MPI.COMBINER_DUP, MPI.COMBINER_CONTIGUOUS,
            MPI.COMBINER_VECTOR, MPI.COMBINER_HVECTOR, MPI.COMBINER_INDEXED,
            MPI.COMBINER_HINDEXED, MPI.COMBINER_INDEXED_BLOCK, MPI.COMBINER_STRUCT,
            MPI.COMBINER_SUBARRAY, MPI.COMBINER_DARRAY, MPI.COMBINER_F90_REAL,
            MPI.COMBINER_F90_COMPLEX, MPI.COMBINER_F90_INTEGER, MPI.COMBINER_RESIZED,
            MPI.COMBINER_HINDEXED_BLOCK, MPI.COMBINER_VALUE_INDEX) == (
        1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 14, 15, 16, 17, 18, 19, 20)
    assert (MPI.TYPECLASS_REAL, MPI.TYPECLASS_INTEGER, MPI.TYPECLASS_COMPLEX,
            MPI.TYPECLASS_LOGICAL) == (1, 2, 3, 4)
    assert (MPI.ORDER_C, MPI.ORDER_FORTRAN, MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC,
            MPI.DISTRIBUTE_NONE, MPI.DISTRIBUTE_DFLT_DARG) == (56, 57, 121, 122, 123, -49767)


def test_named_types_decode_to_themselves():
    for datatype in (MPI.INT, MPI.DOUBLE_INT, MPI.BYTE):
        assert datatype.Get_envelope() == datatype.envelope == (0, 0, 0, 0, MPI.COMBINER_NAMED)
        assert datatype.is_named and datatype.is_predefined
        assert datatype.decode() == (datatype, "NAMED", {})
        assert datatype.decode()[0] is datatype
    with raises_mpi(errors.ERR_TYPE):
        MPI.INT.Get_contents()
    with raises_mpi(errors.ERR_TYPE):
        DATATYPE_NULL.Get_envelope()
    assert DATATYPE_NULL.is_predefined


D = MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_DFLT_DARG
# constructor: (envelope, contents without the datatypes, decode's keywords), read off
# mpi4py 4.1.2 on MPICH 5.0.2 (its large-count constructors put every count in c[])
DECODED = {
    "Dup": (lambda: MPI.INT.Dup(), (0, 0, 0, 1, 2), ([], [], []), {}),
    "Create_contiguous": (lambda: MPI.INT.Create_contiguous(3), (0, 0, 1, 1, 3),
                          ([], [], [3]), {"count": 3}),
    "Create_vector": (lambda: MPI.INT.Create_vector(2, 3, 4), (0, 0, 3, 1, 4),
                      ([], [], [2, 3, 4]), {"count": 2, "blocklength": 3, "stride": 4}),
    "Create_hvector": (lambda: MPI.INT.Create_hvector(2, 3, 40), (0, 0, 3, 1, 6),
                       ([], [], [2, 3, 40]), {"count": 2, "blocklength": 3, "stride": 40}),
    "Create_indexed": (lambda: MPI.INT.Create_indexed([1, 2], [0, 5]), (0, 0, 5, 1, 7),
                       ([], [], [2, 1, 2, 0, 5]),
                       {"blocklengths": [1, 2], "displacements": [0, 5]}),
    "Create_hindexed": (lambda: MPI.INT.Create_hindexed([1, 2], [0, 40]), (0, 0, 5, 1, 9),
                        ([], [], [2, 1, 2, 0, 40]),
                        {"blocklengths": [1, 2], "displacements": [0, 40]}),
    "Create_indexed_block": (lambda: MPI.INT.Create_indexed_block(2, [0, 5]),
                             (0, 0, 4, 1, 10), ([], [], [2, 2, 0, 5]),
                             {"blocklength": 2, "displacements": [0, 5]}),
    "Create_hindexed_block": (lambda: MPI.INT.Create_hindexed_block(2, [0, 40]),
                              (0, 0, 4, 1, 19), ([], [], [2, 2, 0, 40]),
                              {"blocklength": 2, "displacements": [0, 40]}),
    "Create_subarray": (lambda: MPI.INT.Create_subarray([4, 5], [2, 3], [1, 1]),
                        (2, 0, 6, 1, 13), ([2, 56], [], [4, 5, 2, 3, 1, 1]),
                        {"sizes": [4, 5], "subsizes": [2, 3], "starts": [1, 1], "order": 56}),
    "Create_darray": (lambda: MPI.INT.Create_darray(4, 1, [8, 8], [D[0]] * 2, [D[1]] * 2,
                                                    [2, 2]),
                      (10, 0, 2, 1, 14), ([4, 1, 2, 121, 121, -49767, -49767, 2, 2, 56], [],
                                          [8, 8]),
                      {"size": 4, "rank": 1, "gsizes": [8, 8], "distribs": [121, 121],
                       "dargs": [-49767, -49767], "psizes": [2, 2], "order": 56}),
    "Create_resized": (lambda: MPI.INT.Create_resized(-4, 20), (0, 0, 2, 1, 18),
                       ([], [], [-4, 20]), {"lb": -4, "extent": 20}),
}


@pytest.mark.parametrize("name", sorted(DECODED))
def test_constructors_record_what_mpich_reports(name):
    make, envelope, contents, keywords = DECODED[name]
    datatype = make()
    assert datatype.Get_envelope() == datatype.envelope == envelope
    assert datatype.combiner == envelope[-1] and not datatype.is_named
    assert not datatype.is_predefined
    *numbers, types = datatype.Get_contents()
    assert tuple(numbers) == contents and types == [MPI.INT]
    old, combiner, decoded = datatype.decode()
    assert (old, combiner, decoded) == (MPI.INT, name.replace("Create_", "").upper(), keywords)
    rebuilt = getattr(old, name)(**decoded)   # what mpi4py's pickling does
    assert (rebuilt.envelope, rebuilt.Get_extent(), rebuilt.Get_true_extent(),
            rebuilt.size) == (envelope, datatype.Get_extent(), datatype.Get_true_extent(),
                              datatype.size)


def test_struct_contents_hold_their_member_types():
    pair = MPI.INT.Create_contiguous(2)
    struct = MPI.Datatype.Create_struct([1, 2], [0, 8], [MPI.DOUBLE, pair])
    assert struct.envelope == (0, 0, 5, 2, MPI.COMBINER_STRUCT)
    old, combiner, keywords = struct.decode()
    assert old == DATATYPE_NULL and combiner == "STRUCT"
    assert keywords["blocklengths"] == [1, 2] and keywords["displacements"] == [0, 8]
    assert keywords["datatypes"] == [MPI.DOUBLE, pair]


def test_contents_are_new_handles_that_outlive_the_users_own():
    """Get_contents hands out a handle to each derived argument type: freeing it leaves
    the user's, and freeing the user's leaves the one the derived type holds (MPI's
    reference counts; MPICH returns the same handle value, so they compare equal)."""
    inner = MPI.INT.Create_contiguous(2)
    outer = inner.Create_vector(2, 1, 3)
    (given,) = outer.Get_contents()[3]
    assert given == inner and given is not inner
    given.Free()
    assert inner.size == 8
    inner.Free()
    (again,) = outer.contents[3]
    assert again.size == 8 and again.decode()[1] == "CONTIGUOUS"
    again.Free()
    outer.Free()
    with raises_mpi(errors.ERR_TYPE):   # the last holder let go: now it is freed
        again.Get_size()


def test_the_last_free_of_a_dup_still_invalidates_its_copies():
    twin = MPI.INT.Dup()
    alias = Datatype(twin)
    twin.Free()
    with raises_mpi(errors.ERR_TYPE):
        alias.decode()


def test_derived_types_pickle_by_their_decoding():
    """mpi4py pickles a derived type as its decoding and rebuilds it, committed; the
    same member twice, nested Dups and a resized struct come back whole."""
    base = MPI.INT.Dup().Create_contiguous(2).Dup()
    struct = MPI.Datatype.Create_struct([1, 1], [0, 16], [base, base])
    resized = struct.Create_resized(-8, 48)
    for original in (base, struct, resized, MPI.INT.Create_darray(
            4, 1, [8, 8], [D[0]] * 2, [D[1]] * 2, [2, 2])):
        copy = pickle.loads(pickle.dumps(original))
        assert copy != original and copy.committed
        assert (copy.envelope, copy.size, copy.Get_extent(), copy.Get_true_extent()) == (
            original.envelope, original.size, original.Get_extent(),
            original.Get_true_extent())
        assert (derived.Layout.of(copy).offsets.tolist()
                == derived.Layout.of(original).offsets.tolist())
    assert base.size == 8   # pickling freed only its own temporaries


def test_get_value_index_refuses_null_types():
    for value, index in ((DATATYPE_NULL, MPI.INT), (MPI.INT, DATATYPE_NULL)):
        with raises_mpi(errors.ERR_TYPE) as info:
            Datatype.Get_value_index(value, index)
        assert "DATATYPE_NULL" in str(info.value)
    assert Datatype.Get_value_index(MPI.DOUBLE, MPI.INT) is MPI.DOUBLE_INT
    assert Datatype.Get_value_index(MPI.INT, MPI.SHORT) == DATATYPE_NULL


# -- Fortran parametrized types and Match_size (MPI-4.1 §19.1.9) ----------------------

@pytest.mark.parametrize("call, expected", [
    (lambda: Datatype.Create_f90_integer(2), (1, "i1", "b", 17, [2])),
    (lambda: Datatype.Create_f90_integer(3), (2, "i2", "h", 17, [3])),
    (lambda: Datatype.Create_f90_integer(9), (4, "i4", "i", 17, [9])),
    (lambda: Datatype.Create_f90_integer(18), (8, "i8", "l", 17, [18])),
    (lambda: Datatype.Create_f90_real(6, 30), (4, "f4", "f", 15, [6, 30])),
    (lambda: Datatype.Create_f90_real(7, MPI.UNDEFINED), (8, "f8", "d", 15, [7, -32766])),
    (lambda: Datatype.Create_f90_real(15, 308), (16, "f16", "g", 15, [15, 308])),
    (lambda: Datatype.Create_f90_complex(6, 30), (8, "c8", "F", 16, [6, 30])),
    (lambda: Datatype.Create_f90_complex(15, 300), (16, "c16", "D", 16, [15, 300])),
])
def test_f90_types_as_mpich_gives_them(call, expected):
    """Kinds and codes as on MPICH: predefined, unnamed, one handle per arguments."""
    size, code, typechar, combiner, integers = expected
    datatype = call()
    assert (datatype.size, datatype.tocode(), datatype.typechar) == (size, code, typechar)
    assert datatype.envelope == (len(integers), 0, 0, 0, combiner)
    assert datatype.Get_contents() == (integers, [], [], [])
    assert datatype.is_predefined and not datatype.is_named and datatype.name == ""
    assert call() == datatype and datatype != Datatype.Match_size(MPI.TYPECLASS_INTEGER, 4)
    assert pickle.loads(pickle.dumps(datatype)) == datatype
    assert datatype.Dup().envelope == (0, 0, 0, 1, MPI.COMBINER_DUP)
    with raises_mpi(errors.ERR_TYPE):
        datatype.Free()
    assert datatype.size == size


def test_f90_requests_no_kind_can_meet_raise_err_arg():
    with raises_mpi(errors.ERR_ARG, "decimal digits"):
        Datatype.Create_f90_integer(19)
    with raises_mpi(errors.ERR_ARG, "precision 34"):
        Datatype.Create_f90_real(34, MPI.UNDEFINED)
    with raises_mpi(errors.ERR_ARG, "exponent range 4932"):
        Datatype.Create_f90_complex(6, 4932)
    # asking nothing gets the smallest kind, as on MPICH
    assert Datatype.Create_f90_real(MPI.UNDEFINED, MPI.UNDEFINED).size == 4
    with pytest.raises(TypeError, match="integer is required"):
        Datatype.Create_f90_integer("3")


def test_scalar_arguments_convert_as_mpi4pys_cython_signatures_do():
    """mpi4py on MPICH truncates a float given for an int or Count argument (a list
    element must be an integer) and refuses a string."""
    assert Datatype.Create_f90_integer(2.5).decode()[2] == {"r": 2}
    assert MPI.INT.Create_contiguous(2.5).decode()[2] == {"count": 2}
    assert MPI.INT.Create_contiguous(np.int32(3)).size == 12
    assert Datatype.Match_size(2, 4.0) is MPI.INTEGER4
    with pytest.raises(TypeError):
        MPI.INT.Create_contiguous("3")
    with pytest.raises(TypeError):
        MPI.INT.Create_indexed([1.5], [0])


def test_match_size_finds_mpichs_types():
    assert Datatype.Match_size(MPI.TYPECLASS_INTEGER, 8) is MPI.INTEGER8
    assert Datatype.Match_size(MPI.TYPECLASS_REAL, 16) is MPI.REAL16
    assert Datatype.Match_size(MPI.TYPECLASS_COMPLEX, 8) is MPI.COMPLEX8
    assert Datatype.Match_size(MPI.TYPECLASS_LOGICAL, 4) is MPI.LOGICAL
    for typeclass, size in ((MPI.TYPECLASS_LOGICAL, 1), (MPI.TYPECLASS_REAL, 2),
                            (MPI.TYPECLASS_INTEGER, 16), (MPI.TYPECLASS_COMPLEX, 4)):
        with raises_mpi(errors.ERR_ARG, "no"):
            Datatype.Match_size(typeclass, size)
    with raises_mpi(errors.ERR_ARG, "TYPECLASS"):
        Datatype.Match_size(99, 4)


# -- mpi4py's private helpers (mpi4py.util.dtlib uses them) ---------------------------

def test_typealign_and_typecode_as_mpi4py_on_mpich():
    expected = {"CHAR": 1, "INT": 4, "DOUBLE": 8, "LONG_DOUBLE": 16, "C_DOUBLE_COMPLEX": 8,
                "C_LONG_DOUBLE_COMPLEX": 16, "DOUBLE_INT": 8, "LONG_DOUBLE_INT": 16,
                "SHORT_INT": 4, "PACKED": 1, "COMPLEX": 4, "WCHAR": 4, "FLOAT16_T": 2}
    for name, alignment in expected.items():
        assert MPI._typealign(getattr(MPI, name)) == alignment, name
    assert MPI._typealign(MPI.INT.Dup()) == 4 and MPI._typealign(MPI.DOUBLE_INT.Dup()) is None
    assert MPI._typealign(MPI.INT.Create_contiguous(2)) is None
    assert MPI._typealign(DATATYPE_NULL) is None
    assert (MPI._typecode(MPI.INT32_T), MPI._typecode(MPI.INT_INT)) == ("i4", None)


@pytest.mark.parametrize("name, padding", [
    ("C_DOUBLE_COMPLEX", 8), ("C_FLOAT_COMPLEX", 4), ("C_LONG_DOUBLE_COMPLEX", 16),
    ("LONG_DOUBLE_INT", 16), ("DOUBLE_INT", 8), ("SHORT_INT", 4), ("LONG_DOUBLE", 16),
    ("FLOAT16_T", 2), ("COMPLEX32", 16)])
def test_a_struct_extent_rounds_to_its_members_c_alignment(name, padding):
    """{T; char} ends at T's C alignment past T, as on MPICH (not at T's extent)."""
    member = getattr(MPI, name)
    for form in (member, member.Dup(), member.Create_contiguous(1)):
        struct = Datatype.Create_struct([1, 1], [0, member.extent], [form, MPI.CHAR])
        assert struct.extent - member.extent == padding


# What mpi4py 4.1.2 on MPICH 5.0.2 (LP64 Linux) holds in its private typecode tables,
# grouped by type name (MPICH's LONG_LONG_INT is LONG_LONG, _C_FLOAT16 FLOAT16_T).
TYPEDICT_C = {
    "C_BOOL": "? b1", "SIGNED_CHAR": "b", "SHORT": "h", "INT": "i", "LONG": "l",
    "LONG_LONG": "q", "UNSIGNED_CHAR": "B", "UNSIGNED_SHORT": "H", "UNSIGNED": "I",
    "UNSIGNED_LONG": "L", "UNSIGNED_LONG_LONG": "Q", "FLOAT": "f f4", "DOUBLE": "d f8",
    "LONG_DOUBLE": "g f16", "C_FLOAT_COMPLEX": "F c8", "C_DOUBLE_COMPLEX": "D c16",
    "C_LONG_DOUBLE_COMPLEX": "G c32", "INT8_T": "i1", "INT16_T": "i2", "INT32_T": "i4",
    "INT64_T": "i8", "UINT8_T": "u1", "UINT16_T": "u2", "UINT32_T": "u4",
    "UINT64_T": "u8", "FLOAT16_T": "f2"}
TYPEDICT_F = {
    "LOGICAL": "l", "INTEGER": "i", "REAL": "r s", "DOUBLE_PRECISION": "d",
    "COMPLEX": "c", "DOUBLE_COMPLEX": "z", "INTEGER1": "i1", "INTEGER2": "i2",
    "INTEGER4": "i4", "INTEGER8": "i8", "REAL4": "r4", "REAL8": "r8", "REAL16": "r16",
    "COMPLEX8": "c8", "COMPLEX16": "c16", "COMPLEX32": "c32"}


def _by_code(groups):
    return {code: name for name, codes in groups.items() for code in codes.split()}


def test_typedicts_hold_what_mpi4py_on_mpich_holds():
    """mpi4py-fft and shared-memory lock packages read MPI._typedict; the C and
    Fortran tables leave out the types that are null here (LOGICAL1, INTEGER16,
    REAL2, COMPLEX4), as mpi4py leaves out what MPICH lacks."""
    expected = dict(TYPECODES, e="FLOAT16_T", f2="FLOAT16_T")   # MPICH's float16 too
    assert sorted(MPI._typedict) == sorted(expected)
    assert all(MPI._typedict[code] is getattr(dt, name) for code, name in expected.items())
    for table, expected in ((MPI._typedict_c, TYPEDICT_C), (MPI._typedict_f, TYPEDICT_F)):
        assert sorted(table) == sorted(_by_code(expected))
        assert all(table[code] is getattr(MPI, name)
                   for code, name in _by_code(expected).items())
    assert len(MPI._typedict) == 57


def test_typedict_is_the_table_buffers_are_parsed_with():
    """As in mpi4py, a code added to MPI._typedict is a datatype a buffer may name."""
    MPI._typedict["x9"] = MPI.INT
    try:
        assert dt.lookup("x9") is MPI.INT
    finally:
        del MPI._typedict["x9"]
    with pytest.raises(KeyError):
        dt.lookup("x9")


def test_an_empty_array_of_any_shape_is_an_empty_message():
    """numpy.zeros((2, 0)) (mpi4py's inter-collective tests send such arrays) is a
    message of no items, in the plain and the vector forms, not a cast error."""
    from shmrma.types import buffers
    for writable in (False, True):
        message = buffers.message(np.zeros((2, 0), "i"), writable)
        assert (message.count, len(message.data), message.datatype) == (0, 0, dt.INT)
        vector = buffers.vector_message(np.zeros((3, 0), "d"), writable, 3)
        assert (vector.counts, len(vector.data)) == ([0, 0, 0], 0)
