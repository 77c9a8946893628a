"""MPI reduction operations: the predefined ops, user-defined ops and their kernels.

Two calling conventions meet here, and every predefined op satisfies
``op.apply(a, b, t) == op(b, a)`` element by element (NaN aside: MAX and MIN
propagate it, as numpy does):

- ``op(x, y)`` on Python objects is mpi4py's ``Op.__call__`` (opimpl.pxi), the
  standard's f(x, y) with x the existing value: ``REPLACE(x, y) == y``,
  ``NO_OP(x, y) == x``.
- ``op.apply(a, b, datatype)`` on arrays follows MPI_Reduce_local and user
  functions, ``inoutvec = invec op inoutvec``: ``a`` is the incoming (origin)
  data, ``b`` the existing (target) data, and the result is what the target
  holds afterwards, as in MPI_Accumulate. REPLACE gives ``a``, NO_OP gives ``b``.

Which op is defined for which basic type follows MPICH (the table in tests/test_op.py
was read off mpi4py + MPICH's Reduce_local).
"""
import weakref as _weakref

from . import datatype as _datatype
from . import derived as _derived
from ..core.errors import ERR_OP, ERR_TYPE, fail
from ..core.handle import Handle, constant
from ..core.lazy import numpy as np

# Where an op is used decides which ops are legal (MPI 3.1 §11.3.4, R44, R52).
REDUCTION = "reduction"            # collective reductions and Reduce_local
ACCUMULATE = "accumulate"          # Accumulate, Raccumulate: NO_OP is not allowed
GET_ACCUMULATE = "get_accumulate"  # Get_accumulate, Rget_accumulate, Fetch_and_op
_WHERE = (REDUCTION, ACCUMULATE, GET_ACCUMULATE)


class OpHandle:
    """What an op handle refers to: either a predefined op or a user function."""

    def __init__(self, name, call, kernel, type_classes, commutative, function=None):
        self.name = name
        self.call = call                  # f(x, y) on Python objects
        self.kernel = kernel              # kernel(incoming, existing, out) on arrays
        self.type_classes = type_classes  # classes of basic types it is defined on
        self.commutative = commutative
        self.function = function          # the user's function(invec, inoutvec, datatype)
        self.predefined = function is None
        self.freed = False


class Op(Handle):
    """``MPI.Op``: a reduction operation; ``Op()`` is a null handle."""

    # Does this object know its user function? Not when it comes from fromint(),
    # as in mpi4py, whose integer handle carries no Python function: such an object
    # still reduces, but cannot be called or pickled.
    _knows_function = True

    def __init__(self, op=None):
        if op is not None and not isinstance(op, Op):
            raise TypeError("Argument 'op' has incorrect type (expected Op, got %s)"
                            % type(op).__name__)
        self._handle = None if op is None else op._handle
        self._knows_function = op is None or op._knows_function

    @classmethod
    def fromint(cls, number):
        """Translate integer handle to object."""
        op = super().fromint(number)
        op._knows_function = op.is_predefined
        return op

    # -- handle protocol: handle.Handle; representation ---------------------

    def __repr__(self):
        handle = self._handle
        if handle is None:
            return "MPI.OP_NULL"
        if handle.predefined:
            return "MPI." + handle.name
        return "<MPI.Op %s commute=%s>" % (handle.name, handle.commutative)

    def __reduce__(self):
        handle = self._handle
        if handle is None:
            return "OP_NULL" if self is OP_NULL else (type(self), ())
        if handle.predefined:
            constant = PREDEFINED[handle.name]
            return handle.name if self is constant else (type(self), (constant,))
        if handle.freed:
            raise ValueError("cannot serialize a freed '%s.Op'" % __name__)
        if not self._knows_function:
            raise ValueError("cannot pickle user-defined reduction operation")
        return (Op.Create, (handle.function, handle.commutative))

    def _live(self, action):
        handle = self._handle
        if handle is None:
            fail(ERR_OP, "cannot %s OP_NULL" % action)
        if handle.freed:
            fail(ERR_OP, "cannot %s an operation that was freed" % action)
        return handle

    # -- mpi4py methods ------------------------------------------------------

    def __call__(self, x, y):
        handle = self._handle
        if handle is None or handle.freed:
            raise ValueError("cannot call OP_NULL or a freed operation")
        if not self._knows_function:
            raise ValueError("cannot call user-defined operation")
        return handle.call(x, y)

    @classmethod
    def Create(cls, function, commute=False):
        """A user-defined op calling ``function(invec, inoutvec, datatype)``."""
        function.__call__  # mpi4py's check: a non-callable raises AttributeError
        op = cls()
        op._handle = OpHandle(
            name=getattr(function, "__name__", repr(function)),
            call=lambda x, y: function(x, y, None),
            kernel=None, type_classes=None, commutative=bool(commute), function=function)
        _user_slots.take(op._handle)
        return op

    def Free(self):
        """Free a user-defined reduction operation."""
        handle = self._live("free")
        if handle.predefined:
            fail(ERR_OP, "cannot free the predefined operation %s" % handle.name)
        handle.freed = True
        _user_slots.give_back(handle)
        self._handle = None

    def _predefined(self):
        return self._handle.predefined

    def Is_commutative(self):
        """Query reduction operations for their commutativity."""
        return self._live("query the commutativity of").commutative

    is_commutative = property(Is_commutative)

    @property
    def is_predefined(self):
        """Is a predefined operation (or OP_NULL)."""
        return self._handle is None or self._handle.predefined

    def Reduce_local(self, inbuf, inoutbuf):
        """``inoutbuf = inbuf op inoutbuf`` element-wise, on this process only."""
        from . import buffers  # message parsing sits above the ops
        receive = buffers.message(inoutbuf, writable=True)
        send = buffers.message(inbuf, writable=False)
        buffers.check_reduction_pair(send, receive)
        self.check(receive.datatype, REDUCTION)
        element = _derived.element_dtype(receive.datatype)
        existing = np.frombuffer(receive.data, dtype=element)
        self.apply(np.frombuffer(send.data, dtype=element), existing, receive.datatype,
                   out=existing)
        receive.finish()

    # -- runtime -------------------------------------------------------------

    def check(self, datatype, where=REDUCTION, empty=False):
        """Raise ERR_OP unless this op may combine ``datatype`` in a call of kind ``where``.

        ``empty``: the call combines no element, so the op need not be defined on the
        type (MPICH accepts such a zero-count call, and mpi4py's suite relies on it).

        ``where`` is REDUCTION, ACCUMULATE or GET_ACCUMULATE. User-defined ops are
        accepted in reductions only; REPLACE and NO_OP in RMA only (R52), NO_OP not
        in Accumulate (R44). A null datatype raises ERR_TYPE.
        """
        if where not in _WHERE:
            raise ValueError("where must be one of %s, not %r" % (_WHERE, where))
        handle = self._live("use")
        datatype = _datatype.lookup(datatype)
        basic = datatype.basic
        if not datatype:
            fail(ERR_TYPE, "the datatype of a reduction or accumulate cannot be DATATYPE_NULL")
        if not handle.predefined:
            if where != REDUCTION:
                fail(ERR_OP, "user-defined operation %s cannot be used in RMA accumulate "
                             "calls; use a predefined operation" % handle.name)
            return
        if basic is None:
            fail(ERR_TYPE, "the datatype %r mixes basic types (a struct of several); a "
                           "predefined operation combines elements of one basic type" % datatype)
        _check_rma_only_ops(handle.name, where)
        if (handle.type_classes is not None and basic.type_class not in handle.type_classes
                and not empty):
            fail(ERR_OP, "MPI.%s is not defined for %r (a %s type); it is defined for %s "
                         "types" % (handle.name, basic, basic.type_class,
                                    " and ".join(handle.type_classes)))

    def apply(self, a, b, datatype, out=None):
        """Element-wise ``a op b`` (a incoming, b existing) as a new array, or into ``out``.

        ``a`` and ``b`` are arrays (or sequences) of ``datatype``'s elements; ``out``
        may be ``b`` itself to update it in place. The result keeps the element type:
        integer arithmetic wraps, logical ops give 0/1. Does not call check().
        """
        handle = self._live("apply")
        datatype = _datatype.lookup(datatype)
        element = _derived.element_dtype(datatype)
        a = np.asarray(a, dtype=element)
        b = np.asarray(b, dtype=element)
        if out is None:
            out = np.empty_like(b)
        if handle.predefined:
            handle.kernel(a, b, out)
        else:
            _call_user_function(handle.function, a, b, out, datatype)
        return out


def _check_rma_only_ops(name, where):
    if name in ("REPLACE", "NO_OP") and where == REDUCTION:
        fail(ERR_OP, "MPI.%s is only for RMA accumulate calls, not for collective "
                     "reductions" % name)
    if name == "NO_OP" and where == ACCUMULATE:
        fail(ERR_OP, "MPI.NO_OP cannot be used in Accumulate or Raccumulate; use "
                     "Get_accumulate or Fetch_and_op to read atomically")


def _call_user_function(function, a, b, out, datatype):
    """mpi4py hands user functions ``MPI.buffer`` objects of raw bytes (so that
    ``inoutvec[:] = array_of_any_type`` works); inoutvec ends up in ``out``."""
    out[...] = b
    function(_byte_buffer(a), _byte_buffer(out), datatype)


def _byte_buffer(array):
    from .memory import buffer_class  # numpy-backed, built on first use
    return buffer_class()(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


class _UserSlots:
    """mpi4py keeps user functions in a registry of 32 slots (opimpl.pxi) and raises
    RuntimeError when all are taken; a slot is free again when its op is freed. We
    also free it when no object refers to the op any more (mpi4py leaks the slot of
    an op collected without Free(); nothing here needs that)."""

    COUNT = 32

    def __init__(self):
        self.slots = [None] * self.COUNT      # weak references to OpHandles

    def take(self, handle):
        for index, slot in enumerate(self.slots):
            if slot is None or slot() is None:
                self.slots[index] = _weakref.ref(handle)
                return
        raise RuntimeError("cannot create too many user-defined reduction operations: "
                           "%d are alive; Free() the ones no longer needed" % self.COUNT)

    def give_back(self, handle):
        self.slots = [None if slot is not None and slot() is handle else slot
                      for slot in self.slots]


_user_slots = _UserSlots()


# -- Python-object semantics, copied from mpi4py's opimpl.pxi ----------------------

def _py_max(x, y):
    return y if y > x else x


def _py_min(x, y):
    return y if y < x else x


def _py_loc(better):
    """MAXLOC/MINLOC on (value, index) pairs: the better value wins, ties take the lower index."""
    def loc(x, y):
        (u, i), (v, j) = x, y
        if better(u, v):
            return u, i
        if better(v, u):
            return v, j
        return (v, j) if j < i else (u, i)
    return loc


_PYTHON = {
    "MAX": _py_max,
    "MIN": _py_min,
    "SUM": lambda x, y: x + y,
    "PROD": lambda x, y: x * y,
    "LAND": lambda x, y: bool(x) & bool(y),
    "BAND": lambda x, y: x & y,
    "LOR": lambda x, y: bool(x) | bool(y),
    "BOR": lambda x, y: x | y,
    "LXOR": lambda x, y: bool(x) ^ bool(y),
    "BXOR": lambda x, y: x ^ y,
    "MAXLOC": _py_loc(lambda u, v: u > v),
    "MINLOC": _py_loc(lambda u, v: u < v),
    "REPLACE": lambda x, y: y,
    "NO_OP": lambda x, y: x,
}


# -- array kernels: kernel(incoming, existing, out) --------------------------------

# numpy functions are named, not referenced, so that importing this module does
# not import numpy (see lazy.py).

def _arithmetic(ufunc):
    def kernel(a, b, out):
        getattr(np, ufunc)(a, b, out=out)
    return kernel


def _logical(ufunc):
    def kernel(a, b, out):
        np.copyto(out, getattr(np, ufunc)(a, b), casting="unsafe")  # True/False become 1/0
    return kernel


def _location(compare):
    def kernel(a, b, out):
        value, index = b.dtype.names
        better = getattr(np, compare)(a[value], b[value])
        tie = (a[value] == b[value]) & (a[index] < b[index])
        out[...] = np.where(better | tie, a, b)  # np.where copies, so out may alias a or b
    return kernel


def _replace(a, b, out):
    out[...] = a


def _no_op(a, b, out):
    out[...] = b


_I, _F, _C = _datatype.INTEGER_CLASS, _datatype.FLOATING, _datatype.COMPLEX_CLASS
_L, _B, _P = _datatype.LOGICAL_CLASS, _datatype.BYTE_CLASS, _datatype.PAIR

# name, array kernel, basic type classes it is defined on (None: every class), commutative
_PREDEFINED_OPS = (
    ("MAX", _arithmetic("maximum"), (_I, _F), True),
    ("MIN", _arithmetic("minimum"), (_I, _F), True),
    ("SUM", _arithmetic("add"), (_I, _F, _C), True),
    ("PROD", _arithmetic("multiply"), (_I, _F, _C), True),
    ("LAND", _logical("logical_and"), (_I, _L), True),
    ("BAND", _arithmetic("bitwise_and"), (_I, _B), True),
    ("LOR", _logical("logical_or"), (_I, _L), True),
    ("BOR", _arithmetic("bitwise_or"), (_I, _B), True),
    ("LXOR", _logical("logical_xor"), (_I, _L), True),
    ("BXOR", _arithmetic("bitwise_xor"), (_I, _B), True),
    ("MAXLOC", _location("greater"), (_P,), True),
    ("MINLOC", _location("less"), (_P,), True),
    # MPICH reports REPLACE and NO_OP as not commutative
    ("REPLACE", _replace, None, False),
    ("NO_OP", _no_op, None, False),
)


def _predefined(name, kernel, type_classes, commutative):
    op = constant(Op())
    op._handle = OpHandle(name, _PYTHON[name], kernel, type_classes, commutative)
    return op


PREDEFINED = {row[0]: _predefined(*row) for row in _PREDEFINED_OPS}
OP_NULL = constant(Op())

globals().update(PREDEFINED)
# what MPI re-exports: mpi4py's names only
__all__ = ["Op", "OP_NULL"] + sorted(PREDEFINED)
