"""Reduction operations: Python semantics, array kernels and legality (docs/api.md).

The legality table was read off mpi4py 4.1 + MPICH 5.0 (Op.Reduce_local on one
element of each type); the Python semantics are mpi4py's opimpl.pxi.
"""
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from shmrma.types import datatype as dt
from shmrma.core import errors
from shmrma.types import op as ops
from shmrma.types.op import ACCUMULATE, GET_ACCUMULATE, OP_NULL, REDUCTION, Op
from mpitest import raises_mpi

REDUCE_OPS = ["SUM", "PROD", "MAX", "MIN", "LAND", "BAND", "LOR", "BOR", "LXOR", "BXOR",
              "MAXLOC", "MINLOC"]
ARITHMETIC = {"SUM", "PROD", "MAX", "MIN", "LAND", "BAND", "LOR", "BOR", "LXOR", "BXOR"}

# basic type -> reduce ops MPICH's Reduce_local accepts for it
ALLOWED_IN_REDUCTIONS = {
    "BYTE": {"BAND", "BOR", "BXOR"},
    "PACKED": set(),
    "WCHAR": set(),
    "CHAR": ARITHMETIC,
    "SIGNED_CHAR": ARITHMETIC,
    "UNSIGNED_CHAR": ARITHMETIC,
    "SHORT": ARITHMETIC,
    "INT": ARITHMETIC,
    "UNSIGNED": ARITHMETIC,
    "LONG": ARITHMETIC,
    "LONG_LONG": ARITHMETIC,
    "UNSIGNED_LONG_LONG": ARITHMETIC,
    "INT8_T": ARITHMETIC,
    "UINT64_T": ARITHMETIC,
    "AINT": ARITHMETIC,
    "OFFSET": ARITHMETIC,
    "COUNT": ARITHMETIC,
    "FLOAT": {"SUM", "PROD", "MAX", "MIN"},
    "DOUBLE": {"SUM", "PROD", "MAX", "MIN"},
    "LONG_DOUBLE": {"SUM", "PROD", "MAX", "MIN"},
    "C_BOOL": {"LAND", "LOR", "LXOR"},
    "C_FLOAT_COMPLEX": {"SUM", "PROD"},
    "C_DOUBLE_COMPLEX": {"SUM", "PROD"},
    "C_LONG_DOUBLE_COMPLEX": {"SUM", "PROD"},
    "FLOAT_INT": {"MAXLOC", "MINLOC"},
    "DOUBLE_INT": {"MAXLOC", "MINLOC"},
    "LONG_INT": {"MAXLOC", "MINLOC"},
    "TWOINT": {"MAXLOC", "MINLOC"},
    "SHORT_INT": {"MAXLOC", "MINLOC"},
    "LONG_DOUBLE_INT": {"MAXLOC", "MINLOC"},
}


def user_op(commute=False):
    """A user op computing inoutvec = 10 * invec + inoutvec on C ints, mpi4py style."""
    def tenfold_plus(invec, inoutvec, datatype):
        inout = np.frombuffer(inoutvec, dtype="i")
        inout[:] = 10 * np.frombuffer(invec, dtype="i") + inout
    return Op.Create(tenfold_plus, commute=commute)


def add_ignoring_type(x, y, datatype):
    """A module-level user function, so that ops made from it can be pickled."""
    return x + y


# -- Python-object semantics (mpi4py Op.__call__) ---------------------------------

@pytest.mark.parametrize("name,x,y,expected", [
    ("SUM", 2, 3, 5), ("PROD", 2, 3, 6), ("MAX", 2, 3, 3), ("MIN", 2, 3, 2),
    ("MIN", [1], [0], [0]), ("SUM", "a", "b", "ab"),
    ("LAND", 2, 0, False), ("LAND", 2, 3, True), ("LOR", 0, 0, False), ("LOR", 0, 5, True),
    ("LXOR", 1, 2, False), ("LXOR", 1, 0, True),
    ("BAND", 6, 3, 2), ("BOR", 6, 3, 7), ("BXOR", 6, 3, 5),
    ("MAXLOC", (1.0, 3), (1.0, 2), (1.0, 2)), ("MAXLOC", (2.0, 3), (1.0, 2), (2.0, 3)),
    ("MAXLOC", (1.0, 2), (1.0, 3), (1.0, 2)), ("MINLOC", (1, 3), (0, 5), (0, 5)),
    ("MINLOC", (0, 4), (0, 1), (0, 1)),
    # R52 / MPI-3.1 §11.3.4: REPLACE is f(a, b) = b, NO_OP is f(a, b) = a
    ("REPLACE", 1, 2, 2), ("NO_OP", 1, 2, 1)])
def test_python_semantics_match_mpi4py(name, x, y, expected):
    assert getattr(ops, name)(x, y) == expected


def test_op_null_and_freed_ops_cannot_be_called():
    with pytest.raises(ValueError):
        OP_NULL(1, 2)
    op = user_op()
    op.Free()
    with pytest.raises(ValueError):
        op(1, 2)


def test_user_op_call_passes_no_datatype_like_mpi4py():
    op = Op.Create(lambda x, y, datatype: (x, y, datatype))
    assert op(1, 2) == (1, 2, None)


# -- array kernels -----------------------------------------------------------------

INTEGER_TYPES = ["INT8_T", "UINT8_T", "SHORT", "INT", "UNSIGNED", "LONG", "UINT64_T", "CHAR"]
INTEGER_OPS = ["SUM", "PROD", "MAX", "MIN", "BAND", "BOR", "BXOR", "LAND", "LOR", "LXOR"]


def wrapped(value, dtype):
    """A Python int as the C integer of ``dtype`` holds it (two's complement wrap)."""
    bits = 8 * dtype.itemsize
    value %= 1 << bits
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


@st.composite
def integer_operands(draw):
    datatype = getattr(dt, draw(st.sampled_from(INTEGER_TYPES)))
    n = draw(st.integers(0, 20))
    arrays = [draw(hnp.arrays(datatype.dtype, n)) for _ in range(2)]
    return datatype, arrays[0], arrays[1]


@settings(max_examples=60, deadline=None)
@given(integer_operands(), st.sampled_from(INTEGER_OPS))
def test_integer_kernels_match_python_semantics(operands, name):
    """apply(a, b) == op(b, a) per element, wrapped to the C type."""
    datatype, incoming, existing = operands
    op = getattr(ops, name)
    result = op.apply(incoming, existing, datatype)
    expected = [wrapped(int(op(int(b), int(a))), datatype.dtype)
                for a, b in zip(incoming, existing)]
    assert result.dtype == datatype.dtype
    assert result.tolist() == expected


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["FLOAT", "DOUBLE"]), st.sampled_from(["SUM", "PROD", "MAX", "MIN"]),
       st.data())
def test_float_kernels_match_python_semantics(type_name, name, data):
    datatype = getattr(dt, type_name)
    elements = st.floats(-1e6, 1e6, width=8 * datatype.size)
    incoming, existing = (data.draw(hnp.arrays(datatype.dtype, 8, elements=elements))
                          for _ in range(2))
    op = getattr(ops, name)
    expected = np.array([op(b, a) for a, b in zip(incoming, existing)], dtype=datatype.dtype)
    assert np.array_equal(op.apply(incoming, existing, datatype), expected)


@st.composite
def pair_operands(draw):
    datatype = getattr(dt, draw(st.sampled_from(["DOUBLE_INT", "TWOINT", "SHORT_INT"])))
    values = st.integers(-3, 3)  # few values, so ties happen often
    n = draw(st.integers(0, 12))

    def pairs():
        return np.array([(draw(values), draw(st.integers(-5, 5))) for _ in range(n)],
                        dtype=datatype.dtype)
    return datatype, pairs(), pairs()


@settings(max_examples=60, deadline=None)
@given(pair_operands(), st.sampled_from(["MAXLOC", "MINLOC"]))
def test_location_kernels_take_the_lower_index_on_ties(operands, name):
    datatype, incoming, existing = operands
    op = getattr(ops, name)
    result = op.apply(incoming, existing, datatype)
    expected = [op(tuple(b.tolist()), tuple(a.tolist())) for a, b in zip(incoming, existing)]
    assert result.dtype == datatype.dtype
    assert [tuple(item) for item in result.tolist()] == expected


def test_replace_gives_the_incoming_data_and_no_op_the_existing_data():
    """R43/R47: Accumulate with REPLACE is a put; NO_OP leaves the target as it was."""
    incoming, existing = np.array([1, 2, 3], "i"), np.array([7, 8, 9], "i")
    assert ops.REPLACE.apply(incoming, existing, dt.INT).tolist() == [1, 2, 3]
    assert ops.NO_OP.apply(incoming, existing, dt.INT).tolist() == [7, 8, 9]
    assert existing.tolist() == [7, 8, 9] and incoming.tolist() == [1, 2, 3]


def test_replace_and_no_op_work_on_pair_types():
    incoming = np.array([(1.0, 1)], dt.DOUBLE_INT.dtype)
    existing = np.array([(2.0, 2)], dt.DOUBLE_INT.dtype)
    assert ops.REPLACE.apply(incoming, existing, dt.DOUBLE_INT).tolist() == [(1.0, 1)]
    assert ops.NO_OP.apply(incoming, existing, dt.DOUBLE_INT).tolist() == [(2.0, 2)]


def test_logical_ops_give_zero_or_one_in_the_element_type():
    incoming, existing = np.array([5, 0, -3, 0], "i"), np.array([2, 7, 0, 0], "i")
    assert ops.LAND.apply(incoming, existing, dt.INT).tolist() == [1, 0, 0, 0]
    assert ops.LOR.apply(incoming, existing, dt.INT).tolist() == [1, 1, 1, 0]
    assert ops.LXOR.apply(incoming, existing, dt.INT).tolist() == [0, 1, 1, 0]
    booleans = ops.LXOR.apply([True, True], [True, False], dt.C_BOOL)
    assert booleans.dtype == np.bool_ and booleans.tolist() == [False, True]


def test_sum_wraps_around_like_c():
    assert ops.SUM.apply([127], [1], dt.INT8_T).tolist() == [-128]
    assert ops.SUM.apply([1], [2**64 - 1], dt.UINT64_T).tolist() == [0]


def test_complex_and_long_double_kernels():
    assert ops.PROD.apply([1j], [1j], dt.C_DOUBLE_COMPLEX).tolist() == [-1]
    result = ops.SUM.apply([0.5], [0.25], dt.LONG_DOUBLE)
    assert result.dtype == np.longdouble and result.tolist() == [0.75]


def test_bitwise_ops_on_bytes():
    assert ops.BXOR.apply([0xF0], [0xFF], dt.BYTE).tolist() == [0x0F]


@pytest.mark.parametrize("name", ["SUM", "LAND", "MAXLOC", "REPLACE", "NO_OP"])
def test_apply_can_update_the_existing_array_in_place(name):
    datatype = dt.TWOINT if name == "MAXLOC" else dt.INT
    incoming = np.ones(4, datatype.dtype)
    existing = np.zeros(4, datatype.dtype)
    expected = getattr(ops, name).apply(incoming, existing, datatype)
    result = getattr(ops, name).apply(incoming, existing, datatype, out=existing)
    assert result is existing and np.array_equal(existing, expected)


def test_apply_into_the_incoming_array_is_safe_for_location_ops():
    incoming = np.array([(5, 1), (1, 1)], dt.TWOINT.dtype)
    existing = np.array([(3, 0), (3, 0)], dt.TWOINT.dtype)
    ops.MAXLOC.apply(incoming, existing, dt.TWOINT, out=incoming)
    assert incoming.tolist() == [(5, 1), (3, 0)]


def test_apply_accepts_typecodes_and_derived_types():
    assert ops.SUM.apply([1], [2], "i").tolist() == [3]
    assert ops.SUM.apply([1], [2], dt.INT.Dup()).tolist() == [3]


def test_user_op_apply_hands_bytes_and_keeps_inputs():
    """A user function gets (invec, inoutvec, datatype) with inoutvec = existing data."""
    incoming, existing = np.array([1, 2], "i"), np.array([3, 4], "i")
    result = user_op().apply(incoming, existing, dt.INT)
    assert result.tolist() == [13, 24]
    assert incoming.tolist() == [1, 2] and existing.tolist() == [3, 4]


def test_user_op_sees_the_datatype_it_was_applied_with():
    seen = []
    Op.Create(lambda invec, inoutvec, datatype: seen.append((len(invec), datatype))).apply(
        [1, 2], [3, 4], "d")
    assert seen == [(16, dt.DOUBLE)]


def test_apply_on_op_null_raises_err_op():
    with raises_mpi(errors.ERR_OP):
        OP_NULL.apply([1], [2], dt.INT)


# -- legality: Op.check ---------------------------------------------------------------

@pytest.mark.parametrize("type_name", sorted(ALLOWED_IN_REDUCTIONS))
@pytest.mark.parametrize("op_name", REDUCE_OPS)
def test_reduction_legality_matches_mpich(type_name, op_name):
    """R44: an op undefined for the basic type raises ERR_OP, in reductions and RMA alike."""
    op, datatype = getattr(ops, op_name), getattr(dt, type_name)
    for where in (REDUCTION, ACCUMULATE, GET_ACCUMULATE):
        if op_name in ALLOWED_IN_REDUCTIONS[type_name]:
            op.check(datatype, where)
        else:
            with raises_mpi(errors.ERR_OP) as info:
                op.check(datatype, where)
            assert op_name in str(info.value) and type_name in str(info.value)


@pytest.mark.parametrize("type_name", sorted(ALLOWED_IN_REDUCTIONS))
def test_replace_and_no_op_are_rejected_in_reductions(type_name):
    """R52: REPLACE and NO_OP in a collective reduction raise ERR_OP."""
    for op in (ops.REPLACE, ops.NO_OP):
        with raises_mpi(errors.ERR_OP) as info:
            op.check(getattr(dt, type_name), REDUCTION)
        assert "reduction" in str(info.value)


@pytest.mark.parametrize("type_name", sorted(ALLOWED_IN_REDUCTIONS))
def test_replace_and_no_op_in_rma(type_name):
    """R43, R44, R47, R49: REPLACE in every accumulate call, NO_OP not in Accumulate."""
    datatype = getattr(dt, type_name)
    ops.REPLACE.check(datatype, ACCUMULATE)
    ops.REPLACE.check(datatype, GET_ACCUMULATE)
    ops.NO_OP.check(datatype, GET_ACCUMULATE)
    with raises_mpi(errors.ERR_OP) as info:
        ops.NO_OP.check(datatype, ACCUMULATE)
    assert "Get_accumulate" in str(info.value)


def test_user_ops_are_for_reductions_only():
    """R44: a user-defined op in an accumulate-family call raises ERR_OP."""
    op = user_op()
    op.check(dt.INT, REDUCTION)
    op.check(dt.DOUBLE_INT, REDUCTION)
    for where in (ACCUMULATE, GET_ACCUMULATE):
        with raises_mpi(errors.ERR_OP) as info:
            op.check(dt.INT, where)
        assert "user-defined" in str(info.value)


def test_check_uses_the_basic_type_of_derived_types_and_accepts_typecodes():
    ops.SUM.check(dt.DOUBLE.Dup(), ACCUMULATE)
    ops.SUM.check("d")
    with raises_mpi(errors.ERR_OP):
        ops.BAND.check(dt.DOUBLE.Dup())
    with raises_mpi(errors.ERR_OP):
        ops.BOR.check("f")


def test_check_errors_for_null_handles_and_bad_arguments():
    with raises_mpi(errors.ERR_OP):
        OP_NULL.check(dt.INT)
    with raises_mpi(errors.ERR_TYPE):
        ops.SUM.check(dt.DATATYPE_NULL)
    with pytest.raises(KeyError):
        ops.SUM.check("not a typecode")
    with pytest.raises(ValueError, match="where"):
        ops.SUM.check(dt.INT, "allreduce")


# -- handles: commutativity, Free, copies ---------------------------------------------

@pytest.mark.parametrize("name", REDUCE_OPS + ["REPLACE", "NO_OP"])
def test_predefined_commutativity_as_mpich_reports_it(name):
    op = getattr(ops, name)
    expected = name not in ("REPLACE", "NO_OP")
    assert op.Is_commutative() is expected and op.is_commutative is expected
    assert op.is_predefined and op


def test_user_op_commutativity_is_what_create_was_told():
    assert user_op(commute=True).Is_commutative() is True
    assert user_op().is_commutative is False
    assert not user_op().is_predefined


def test_op_null():
    assert not OP_NULL and OP_NULL.is_predefined and Op() == OP_NULL
    with raises_mpi(errors.ERR_OP):
        OP_NULL.Is_commutative()
    with raises_mpi(errors.ERR_OP):
        OP_NULL.Free()


@pytest.mark.parametrize("name,x,y,expected", [
    ("SUM", 2, 3, 5), ("MAXLOC", (1, 0), (2, 1), (2, 1)), ("REPLACE", 1, 2, 2), ("NO_OP", 1, 2, 1)])
def test_freeing_a_predefined_op_raises_err_op_and_changes_nothing(name, x, y, expected):
    op = getattr(ops, name)
    with raises_mpi(errors.ERR_OP) as info:
        op.Free()
    assert name in str(info.value)
    op.free()  # mpi4py's helper skips predefined ops
    assert op and op.is_predefined and op(x, y) == expected


def test_freeing_a_user_op_makes_it_op_null_and_invalidates_copies():
    op = user_op()
    alias = Op(op)
    op.Free()
    assert op == OP_NULL and not op
    with raises_mpi(errors.ERR_OP):
        alias.check(dt.INT)
    with pytest.raises(ValueError):
        alias(1, 2)
    with pytest.raises(ValueError, match="freed"):
        pickle.dumps(alias)
    with raises_mpi(errors.ERR_OP):
        op.Free()
    other = user_op()
    other.free()
    assert other == OP_NULL


def test_create_needs_a_callable_like_mpi4py():
    with pytest.raises(AttributeError):
        Op.Create(5)


def test_copy_constructor_equality_and_hash():
    copy = Op(ops.SUM)
    assert copy == ops.SUM and copy is not ops.SUM and copy != ops.PROD
    with pytest.raises(TypeError):     # unhashable, as in mpi4py
        hash(copy)
    assert ops.SUM != "SUM"
    with pytest.raises(TypeError, match="expected Op"):
        Op("SUM")


def test_repr():
    assert repr(ops.SUM) == "MPI.SUM" and repr(OP_NULL) == "MPI.OP_NULL"
    assert "tenfold_plus" in repr(user_op())


def test_pickling_keeps_predefined_ops_and_recreates_user_ops():
    assert pickle.loads(pickle.dumps(ops.MAXLOC)) is ops.MAXLOC
    assert pickle.loads(pickle.dumps(OP_NULL)) is OP_NULL
    assert pickle.loads(pickle.dumps(Op(ops.SUM))) == ops.SUM
    assert pickle.loads(pickle.dumps(Op())) == OP_NULL
    clone = pickle.loads(pickle.dumps(Op.Create(add_ignoring_type, commute=True)))
    assert clone(1, 2) == 3 and clone.Is_commutative() and not clone.is_predefined


# -- user functions get MPI.buffer objects, as in mpi4py ------------------------------

def test_user_function_gets_mpi_buffers_that_take_any_same_sized_buffer():
    import array
    from shmrma import MPI

    def add_through_arrays(invec, inoutvec, datatype):
        assert isinstance(invec, MPI.buffer) and isinstance(inoutvec, MPI.buffer)
        total = np.frombuffer(invec, "i") + np.frombuffer(inoutvec, "i")
        inoutvec[:] = array.array("i", total.tolist())  # mpi4py's test_op does this
    assert Op.Create(add_through_arrays).apply([1, 2], [3, 4], dt.INT).tolist() == [4, 6]


# -- the user-function registry: 32 slots, as in mpi4py (opimpl.pxi) ------------------

def test_a_33rd_live_user_op_is_a_runtime_error_until_one_is_freed():
    alive = [user_op() for _ in range(ops._UserSlots.COUNT)]
    with pytest.raises(RuntimeError, match="too many"):
        user_op()
    alive.pop().Free()
    alive.append(user_op())
    alive.pop()                     # dropped without Free: its slot comes back too
    alive.append(user_op())
    for op in alive:
        op.Free()


# -- integer handles ------------------------------------------------------------------

def test_fromint_of_a_user_op_reduces_but_cannot_be_called_or_pickled():
    op = user_op()
    clone = Op.fromint(op.toint())
    assert clone == op and clone is not op
    assert clone.apply([1], [2], dt.INT).tolist() == [12]
    with pytest.raises(ValueError, match="cannot call"):
        clone(1, 2)
    with pytest.raises(ValueError, match="cannot pickle"):
        pickle.dumps(clone)
    assert Op.fromint(ops.SUM.toint())(2, 3) == 5
    op.Free()
    known = Op.Create(add_ignoring_type)
    assert pickle.loads(pickle.dumps(Op(known)))(1, 2) == 3     # a copy knows the function
    known.Free()


# -- Reduce_local ---------------------------------------------------------------------

@pytest.mark.parametrize("name,expected", [("SUM", [11, 22, 33]), ("MAX", [10, 20, 30]),
                                           ("MIN", [1, 2, 3]), ("PROD", [10, 40, 90])])
def test_reduce_local_combines_into_the_inout_buffer(name, expected):
    inbuf, inoutbuf = np.array([1, 2, 3], "i"), np.array([10, 20, 30], "i")
    ops.PREDEFINED[name].Reduce_local(inbuf, inoutbuf)
    assert inoutbuf.tolist() == expected and inbuf.tolist() == [1, 2, 3]


def test_reduce_local_with_a_user_op_and_with_message_specs():
    inoutbuf = np.array([5, 6], "i")
    user_op().Reduce_local([np.array([1, 2], "i"), dt.INT], [inoutbuf, 2, dt.INT])
    assert inoutbuf.tolist() == [15, 26]
    column = dt.INT.Create_vector(2, 1, 2).Commit()     # items 0 and 2
    inoutbuf = np.array([1, 100, 2, 200], "i")
    ops.SUM.Reduce_local([np.array([10, 0, 20, 0], "i"), 1, column], [inoutbuf, 1, column])
    assert inoutbuf.tolist() == [11, 100, 22, 200]


@pytest.mark.parametrize("inbuf,inoutbuf", [
    ([np.zeros(3, "i"), 2, dt.INT], [np.zeros(3, "i"), 3, dt.INT]),
    ([np.zeros(3, "i"), 1, dt.INT], [np.zeros(3, "h"), 1, dt.SHORT])])
def test_reduce_local_mismatch_is_a_value_error_as_in_mpi4py(inbuf, inoutbuf):
    with pytest.raises(ValueError, match="mismatch"):
        ops.SUM.Reduce_local(inbuf, inoutbuf)


def test_reduce_local_errors_change_nothing():
    inoutbuf = np.array([1, 2], "d")
    with raises_mpi(errors.ERR_OP):
        ops.BAND.Reduce_local(np.array([3, 4], "d"), inoutbuf)
    with raises_mpi(errors.ERR_OP):
        OP_NULL.Reduce_local(np.array([3, 4], "d"), inoutbuf)
    with pytest.raises(BufferError):
        ops.SUM.Reduce_local(inoutbuf, b"0123456789abcdef")
    assert inoutbuf.tolist() == [1, 2]
