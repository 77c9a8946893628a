"""MPI datatypes: the predefined basic and pair types, typecodes and buffer formats.

A `Datatype` object refers to a *handle* (`TypeHandle`); copies made with
``Datatype(other)`` share it, as two Python objects holding one MPI handle do in
mpi4py, so equality is handle identity and freeing through one object
invalidates the others. The handle carries the type map summary every call
needs (size, lb, extent, true extent) as plain integers, independent of numpy,
so derived datatypes only have to build a handle with their own layout.

Names, sizes, extents, typecodes and error classes follow mpi4py 4.x on MPICH,
the reference the tests compare against (mpi4py src/mpi4py/MPI.src/Datatype.pyx,
typemap.pxi, typestr.pxi, msgbuffer.pxi).
"""
import ctypes
import operator
import struct
import sys

from ..core import constants
from ..core.attributes import Attributes
from ..core.errors import ERR_ARG, ERR_TYPE, fail
from ..core.handle import Handle, constant
from ..core.info import as_mpi_string
from ..core.lazy import numpy as np

# Classes of basic types, as the reduction-operation rules of MPI group them
# (MPI 3.1 §5.9.2). MPICH also treats CHAR as a C integer; so do we.
INTEGER_CLASS = "integer"   # (INTEGER, LOGICAL, COMPLEX name Fortran types)
FLOATING = "floating point"
COMPLEX_CLASS = "complex"
LOGICAL_CLASS = "logical"
BYTE_CLASS = "byte"
PAIR = "value-index pair"
OPAQUE = "opaque"  # PACKED and WCHAR: no reduction op is defined on them
HANDLE = "handle"  # HANDLE_SYNC: Sync handles, in messages only (synchandle.py)
HANDLE_BYTES = 128  # the wire form of one Sync handle

# How a datatype was made (MPI-4.1 §5.1.13 MPI_Type_get_envelope), numbered as
# MPICH numbers them: these are the values mpi4py on MPICH exposes.
COMBINER_NAMED = 1
COMBINER_DUP = 2
COMBINER_CONTIGUOUS = 3
COMBINER_VECTOR = 4
COMBINER_HVECTOR = 6
COMBINER_INDEXED = 7
COMBINER_HINDEXED = 9
COMBINER_INDEXED_BLOCK = 10
COMBINER_STRUCT = 12
COMBINER_SUBARRAY = 13
COMBINER_DARRAY = 14
COMBINER_F90_REAL = 15
COMBINER_F90_COMPLEX = 16
COMBINER_F90_INTEGER = 17
COMBINER_RESIZED = 18
COMBINER_HINDEXED_BLOCK = 19
COMBINER_VALUE_INDEX = 20
_COMBINER_NAMES = {value: name[len("COMBINER_"):] for name, value in list(globals().items())
                   if name.startswith("COMBINER_")}

# type classes of Match_size (MPI-4.1 §19.1.9), MPICH's values
TYPECLASS_REAL = 1
TYPECLASS_INTEGER = 2
TYPECLASS_COMPLEX = 3
TYPECLASS_LOGICAL = 4


class TypeHandle:
    """What a datatype handle refers to: its layout summary and identity.

    ``basic`` is the predefined Datatype the type is built from (the type itself
    for a predefined one); accumulate calls compare it across their arguments.
    ``combiner`` and ``contents`` (integers, addresses, counts, datatypes) are the
    constructor and its arguments as MPI_Type_get_contents returns them, recorded
    at construction. ``refs`` counts the holders of the handle, as MPI counts them:
    the user's, one per type built from it and one per handle Get_contents gave
    out; it is freed, and its use an error, when the last one lets go.
    """

    def __init__(self, *, name, size, extent, dtype, basic=None, type_class,
                 typechar=None, typestr=None, code=None, lb=0, true_lb=None,
                 true_extent=None, predefined=False, committed=True):
        self.name = name
        self.size = size
        self.lb = lb
        self.extent = extent
        self.true_lb = lb if true_lb is None else true_lb
        self.true_extent = extent if true_extent is None else true_extent
        self._dtype = dtype           # a numpy dtype, or a callable making it on first use
        self.basic = basic
        self.type_class = type_class
        self.typechar = typechar      # mpi4py's Datatype.typechar
        self.typestr = typestr        # mpi4py's Datatype.typestr
        self.code = code              # what tocode() answers; None raises ValueError
        self.predefined = predefined
        self.committed = committed
        self.freed = False
        self.constant_name = None     # the module name of a predefined handle
        self.attributes = {}          # attributes.Attributes of every handle to it
        self.combiner = COMBINER_NAMED
        self.contents = ([], [], [], [])
        self.refs = 1
        self.alignment = None         # a pair type's, as its C struct aligns
        self.engine = None            # engine_type's answer where it is another type's
        self.items = {}               # derived.items_of's Items of it, by count

    @property
    def dtype(self):
        made = self._dtype      # read once: another thread may make it meanwhile
        if callable(made):
            made = self._dtype = made()
        return made

    def record(self, combiner, integers=(), counts=(), datatypes=()):
        """Keep the constructor and its arguments; the handle holds each argument type."""
        self.combiner = combiner
        self.contents = ([int(i) for i in integers], [], [int(c) for c in counts],
                         [_held(datatype) for datatype in datatypes])

    def release(self):
        """One holder lets go; the last frees the handle and lets go of its arguments."""
        self.refs -= 1
        if self.refs == 0:
            self.freed = True
            self.items = {}
            for datatype in self.contents[3]:
                if not datatype._handle.predefined:
                    datatype._handle.release()

    def duplicate(self):
        twin = TypeHandle(
            name="", size=self.size, extent=self.extent, dtype=self._dtype,
            basic=self.basic, type_class=self.type_class, typechar=self.typechar,
            typestr=self.typestr, code=self.code, lb=self.lb, true_lb=self.true_lb,
            true_extent=self.true_extent, committed=self.committed)
        twin.layout = getattr(self, "layout", None)  # a derived type's compiled blocks
        twin.engine = engine_type(self)
        return twin


def engine_type(handle):
    """The type MPICH's datatype engine (yaksa, in MPICH 5.0) holds for a datatype,
    as a key that is equal for two datatypes the engine holds as one type. Create_struct
    pads a struct's extent unless all its members are one type in this sense
    (derived.create_struct says why). The engine moves bytes, not values, so it
    holds every predefined type without arithmetic of its own (integers of any
    signedness, characters, bytes, booleans, logicals, even FLOAT16_T) as an
    integer of its size, while float, double, long double, each complex and each
    value-index pair stay types of their own: measured with mpi4py + MPICH 5.0 on
    every pair of predefined types. A Dup is the type it duplicates, and so is a
    derived type that derived.same_as_old found equal to the one type it is built
    from (Create_contiguous(1), a vector of one block of one, Create_resized to the
    same bounds, a struct of one member at 0); any other derived type is its own."""
    if handle.engine is not None:
        return handle.engine
    if not handle.predefined:
        return handle
    if handle.type_class == PAIR:
        return (PAIR, str(handle.dtype))
    if handle.type_class == COMPLEX_CLASS or (handle.type_class == FLOATING
                                              and handle.size > 2):
        return (handle.type_class, handle.size)
    return (INTEGER_CLASS, handle.size)


class Datatype(Handle, Attributes):
    """``MPI.Datatype``: a handle to a datatype; ``Datatype()`` is a null handle."""

    def __init__(self, datatype=None):
        self._handle = _handle_of(datatype, "datatype")

    # -- handle protocol: handle.Handle; representation ---------------------

    def __repr__(self):
        handle = self._handle
        if handle is None:
            return "MPI.DATATYPE_NULL"
        if handle.constant_name:
            return "MPI." + handle.constant_name
        return "<MPI.Datatype %r size=%d extent=%d>" % (handle.name, handle.size, handle.extent)

    def __reduce__(self):
        handle = self._handle
        if handle is None:
            return "DATATYPE_NULL" if self is DATATYPE_NULL else (type(self), ())
        if handle.constant_name:
            constant = PREDEFINED[handle.constant_name]
            return handle.constant_name if self is constant else (type(self), (constant,))
        if handle.freed:
            raise ValueError("cannot serialize '%s.Datatype' instance" % __name__)
        # as mpi4py does: rebuilt from its decoding, whose argument types pickle in
        # turn; the rebuilt argument types are temporaries, freed once it is built, so
        # each must be its own object (pickle would load a shared one once, then the
        # second use would find it freed)
        arguments = [datatype if datatype._handle.constant_name else Datatype(datatype)
                     for datatype in handle.contents[3]]
        return (_datatype_create, _decode(handle, arguments) + (True,))

    def _live(self, action):
        """The handle, or ERR_TYPE saying why ``action`` cannot be done."""
        handle = self._handle
        if handle is None:
            fail(ERR_TYPE, "cannot %s DATATYPE_NULL" % action)
        if handle.freed:
            fail(ERR_TYPE, "cannot %s a datatype that was freed" % action)
        return handle

    # -- attribute caching (attributes.py) -----------------------------------
    _attribute_kind = "Datatype"

    def _attributes(self):
        return self._live("reach the attributes of").attributes

    # -- runtime attributes --------------------------------------------------

    @property
    def dtype(self):
        """numpy dtype of one element (structured for pair types); None when null."""
        return None if self._handle is None else self._handle.dtype

    @property
    def basic(self):
        """The predefined Datatype this type is made of; None when null."""
        return None if self._handle is None else self._handle.basic

    @property
    def type_class(self):
        """Reduction class of the basic type (INTEGER_CLASS, FLOATING, ...); None when null."""
        return None if self._handle is None else self._handle.type_class

    @property
    def committed(self):
        """Whether the datatype was committed."""
        return self._handle is not None and self._handle.committed

    # -- sizes and extents ---------------------------------------------------

    def Get_size(self):
        """Return the number of bytes occupied by entries in the datatype."""
        return self._live("get the size of").size

    def Get_extent(self):
        """Return the lower bound and extent of the datatype: (lb, extent)."""
        handle = self._live("get the extent of")
        return (handle.lb, handle.extent)

    def Get_true_extent(self):
        """Return the true lower bound and extent of the datatype: (lb, extent)."""
        handle = self._live("get the true extent of")
        return (handle.true_lb, handle.true_extent)

    size = property(Get_size, doc="Size in bytes.")
    # the hot ones read the handle directly (mpi4py.util.dtlib reads them millions of times)
    extent = property(lambda self: self._live("get the extent of").extent, doc="Extent.")
    lb = property(lambda self: self._live("get the extent of").lb, doc="Lower bound.")
    ub = property(lambda self: sum(self.Get_extent()), doc="Upper bound.")
    true_extent = property(lambda self: self.Get_true_extent()[1], doc="True extent.")
    true_lb = property(lambda self: self.Get_true_extent()[0], doc="True lower bound.")
    true_ub = property(lambda self: sum(self.Get_true_extent()), doc="True upper bound.")

    # -- life cycle ----------------------------------------------------------

    def Commit(self):
        """Commit the datatype; return it."""
        self._live("commit").committed = True
        return self

    def Dup(self):
        """Duplicate a datatype (also Create_dup)."""
        handle = self._live("duplicate")
        twin = handle.duplicate()
        twin.record(COMBINER_DUP, datatypes=[self])
        duplicate = type(self)()
        duplicate._handle = twin
        self._copy_attributes_to(duplicate)
        return duplicate

    Create_dup = Dup

    def Free(self):
        """Free the datatype (a predefined one cannot be freed)."""
        handle = self._live("free")
        if handle.predefined:
            fail(ERR_TYPE, "cannot free the predefined datatype %r" % self)
        if handle.refs == 1:          # the last handle: the type goes, its attributes too
            self._drop_attributes()
        self._handle = None
        handle.release()

    def _predefined(self):
        return self._handle.predefined

    # -- decoding (MPI-4.1 §5.1.13) ------------------------------------------------

    def Get_envelope(self):
        """(number of integers, addresses, counts, datatypes, combiner) of the contents."""
        handle = self._live("get the envelope of")
        integers, addresses, counts, datatypes = handle.contents
        return (len(integers), len(addresses), len(counts), len(datatypes), handle.combiner)

    envelope = property(Get_envelope, doc="Envelope.")

    def Get_contents(self):
        """The constructor's arguments; each derived type in them is a new handle to free."""
        handle = self._live("get the contents of")
        if handle.combiner == COMBINER_NAMED:
            fail(ERR_TYPE, "a named datatype has no contents: call Get_contents only when "
                 "Get_envelope()'s combiner is not COMBINER_NAMED")
        integers, addresses, counts, datatypes = handle.contents
        return (list(integers), list(addresses), list(counts),
                [_held(datatype) for datatype in datatypes])

    contents = property(Get_contents, doc="Contents.")

    def decode(self):
        """(old type, combiner name, constructor keyword arguments), as mpi4py decodes."""
        handle = self._live("decode")
        if handle.combiner == COMBINER_NAMED:
            return (self, "NAMED", {})
        return _decode(handle, self.Get_contents()[3])

    combiner = property(lambda self: self._live("get the envelope of").combiner,
                        doc="Combiner.")
    is_named = property(lambda self: self.combiner == COMBINER_NAMED,
                        doc="Is a named datatype.")

    @property
    def is_predefined(self):
        """Is a predefined datatype (or DATATYPE_NULL).

        Null, named or a Fortran kind (mpi4py: combiner NAMED, VALUE_INDEX or F90_*;
        Get_value_index here only ever gives named pairs)."""
        return self._handle is None or self._handle.predefined

    # -- names ---------------------------------------------------------------

    def Get_name(self):
        """Get the print name for this datatype."""
        if self._handle is None:
            return "MPI_DATATYPE_NULL"
        return self._live("get the name of").name

    def Set_name(self, name):
        """Set the print name for this datatype."""
        text = as_mpi_string(name, "datatype name")
        self._live("set the name of").name = text[:constants.MAX_OBJECT_NAME - 1]

    name = property(Get_name, Set_name, doc="Print name.")

    # -- Python and numpy interoperability -------------------------------------

    def tocode(self):
        """Get character code or type string from predefined MPI datatype."""
        handle = self._handle
        if handle is None or handle.code is None:
            raise ValueError("cannot map to character code or type string")
        return handle.code

    @classmethod
    def fromcode(cls, code):
        """Get predefined MPI datatype from character code or type string."""
        try:
            return _TYPECODES[code]
        except KeyError:
            raise ValueError("cannot map code %r to MPI datatype" % (code,)) from None

    @property
    def typestr(self):
        """Type string (numpy's array interface form)."""
        handle = self._handle
        if handle is None:
            return ""
        return handle.typestr or "V%d" % handle.extent

    @property
    def typechar(self):
        """Character code."""
        handle = self._handle
        if handle is None:
            return ""
        return handle.typechar or "V"

    @classmethod
    def Get_value_index(cls, value, index):
        """The predefined pair type of (value, index), or DATATYPE_NULL if there is none."""
        handles = []
        for argument, role in ((value, "value"), (index, "index")):
            handle = _handle_of(argument, role)
            if handle is None or handle.freed:
                fail(ERR_TYPE, "Get_value_index: the %s type is %s" % (
                    role, "DATATYPE_NULL" if handle is None else "freed"))
            handles.append(handle)
        return _PAIR_OF.get(tuple(handles), DATATYPE_NULL)

    # -- Fortran parametrized and size-specific types (MPI-4.1 §19.1.9) ------------

    @classmethod
    def Create_f90_integer(cls, r):
        """Return a bounded integer datatype of at least ``r`` decimal digits."""
        r = c_integer(r)
        for digits, name in _F90_INTEGERS:
            if r <= digits:
                return _f90_type(COMBINER_F90_INTEGER, (r,), name)
        fail(ERR_ARG, "Create_f90_integer: no integer kind has %d decimal digits (at most %d)"
             % (r, _F90_INTEGERS[-1][0]))

    @classmethod
    def Create_f90_real(cls, p, r):
        """Return a bounded real datatype of precision ``p`` and range ``r``."""
        return _f90_floating(COMBINER_F90_REAL, p, r)

    @classmethod
    def Create_f90_complex(cls, p, r):
        """Return a bounded complex datatype of precision ``p`` and range ``r``."""
        return _f90_floating(COMBINER_F90_COMPLEX, p, r)

    @classmethod
    def Match_size(cls, typeclass, size):
        """The size-specific (else default) Fortran type of ``typeclass`` and ``size`` bytes."""
        typeclass, size = c_integer(typeclass), c_integer(size)
        prefix = _TYPECLASS_PREFIXES.get(typeclass)
        if prefix is None:
            fail(ERR_ARG, "Match_size: typeclass %r is not TYPECLASS_INTEGER, TYPECLASS_REAL, "
                 "TYPECLASS_COMPLEX or TYPECLASS_LOGICAL" % (typeclass,))
        for name in ("%s%d" % (prefix, size), prefix):
            datatype = PREDEFINED.get(name)
            if datatype and datatype.size == size:
                return datatype
        fail(ERR_ARG, "Match_size: there is no %s type of %d bytes" % (prefix, size))


def c_integer(value):
    """A scalar argument converted as mpi4py's Cython signatures (``int r``, ``Count
    count``) convert it: an integer, or anything with __int__ (so a float truncates,
    as on mpi4py), else TypeError. Elements of argument lists must be integers."""
    try:
        return operator.index(value)
    except TypeError:
        if not hasattr(type(value), "__int__"):
            raise TypeError("an integer is required, not %s" % type(value).__name__) from None
        return int(value)


def _held(datatype):
    """A new Datatype on ``datatype``'s handle, counted as one more holder of it."""
    handle = datatype._handle
    if handle.constant_name:
        return PREDEFINED[handle.constant_name]
    if not handle.predefined:
        handle.refs += 1
    held = Datatype()
    held._handle = handle
    return held


def _handle_of(datatype, argument):
    if datatype is None:
        return None
    if not isinstance(datatype, Datatype):
        raise TypeError("Argument '%s' has incorrect type (expected Datatype, got %s)"
                        % (argument, type(datatype).__name__))
    return datatype._handle


# -- predefined basic types -------------------------------------------------------

# name, numpy type of one element, reduction class, mpi4py typechar where numpy's
# differs, MPICH print name where it is not "MPI_" + name. The C99 fixed-width
# types and C_BOOL answer tocode() with their type string ("i4", "b1"), the others
# with their typechar, as mpi4py's DatatypeCode does.
_FIXED_WIDTH = {"C_BOOL", "INT8_T", "INT16_T", "INT32_T", "INT64_T",
                "UINT8_T", "UINT16_T", "UINT32_T", "UINT64_T", "INTEGER1", "INTEGER2",
                "INTEGER4", "INTEGER8", "REAL4", "REAL8", "REAL16", "COMPLEX8",
                "COMPLEX16", "COMPLEX32"}
_BASIC_TYPES = (
    ("PACKED", "B", OPAQUE, None, None),
    ("BYTE", "B", BYTE_CLASS, None, None),
    ("CHAR", "b", INTEGER_CLASS, "c", None),           # C char is signed on Linux
    ("WCHAR", "i4", OPAQUE, "U", None),          # wchar_t is a 32-bit int on Linux
    ("SIGNED_CHAR", "b", INTEGER_CLASS, None, None),
    ("SHORT", "h", INTEGER_CLASS, None, None),
    ("INT", "i", INTEGER_CLASS, None, None),
    ("LONG", "l", INTEGER_CLASS, None, None),
    ("LONG_LONG", "q", INTEGER_CLASS, None, "MPI_LONG_LONG_INT"),
    ("UNSIGNED_CHAR", "B", INTEGER_CLASS, None, None),
    ("UNSIGNED_SHORT", "H", INTEGER_CLASS, None, None),
    ("UNSIGNED", "I", INTEGER_CLASS, None, None),
    ("UNSIGNED_LONG", "L", INTEGER_CLASS, None, None),
    ("UNSIGNED_LONG_LONG", "Q", INTEGER_CLASS, None, None),
    ("FLOAT", "f", FLOATING, None, None),
    ("DOUBLE", "d", FLOATING, None, None),
    ("LONG_DOUBLE", "g", FLOATING, None, None),
    ("C_BOOL", "?", LOGICAL_CLASS, None, None),
    ("INT8_T", "i1", INTEGER_CLASS, None, None),
    ("INT16_T", "i2", INTEGER_CLASS, None, None),
    ("INT32_T", "i4", INTEGER_CLASS, None, None),
    ("INT64_T", "i8", INTEGER_CLASS, None, None),
    ("UINT8_T", "u1", INTEGER_CLASS, None, None),
    ("UINT16_T", "u2", INTEGER_CLASS, None, None),
    ("UINT32_T", "u4", INTEGER_CLASS, None, None),
    ("UINT64_T", "u8", INTEGER_CLASS, None, None),
    ("C_FLOAT_COMPLEX", "F", COMPLEX_CLASS, None, "MPI_C_COMPLEX"),
    ("C_DOUBLE_COMPLEX", "D", COMPLEX_CLASS, None, None),
    ("C_LONG_DOUBLE_COMPLEX", "G", COMPLEX_CLASS, None, None),
    ("AINT", "p", INTEGER_CLASS, "p", None),
    ("OFFSET", "q", INTEGER_CLASS, "p", None),
    ("COUNT", "q", INTEGER_CLASS, "p", None),
    ("FLOAT16_T", "e", FLOATING, None, "MPIX_C_FLOAT16"),
    # Fortran's, as MPICH sizes them with gfortran on LP64 Linux
    ("CHARACTER", "b", OPAQUE, "c", None),
    ("LOGICAL", "i4", LOGICAL_CLASS, "i", None),
    ("INTEGER", "i4", INTEGER_CLASS, "i", None),
    ("REAL", "f", FLOATING, None, None),
    ("DOUBLE_PRECISION", "d", FLOATING, None, None),
    ("COMPLEX", "F", COMPLEX_CLASS, None, None),
    ("DOUBLE_COMPLEX", "D", COMPLEX_CLASS, None, None),
    ("INTEGER1", "i1", INTEGER_CLASS, None, None),
    ("INTEGER2", "i2", INTEGER_CLASS, None, None),
    ("INTEGER4", "i4", INTEGER_CLASS, None, None),
    ("INTEGER8", "i8", INTEGER_CLASS, None, None),
    ("REAL4", "f", FLOATING, None, None),
    ("REAL8", "d", FLOATING, None, None),
    ("REAL16", "g", FLOATING, None, None),
    ("COMPLEX8", "F", COMPLEX_CLASS, None, None),
    ("COMPLEX16", "D", COMPLEX_CLASS, None, None),
    ("COMPLEX32", "G", COMPLEX_CLASS, None, None),
)
# what mpi4py on MPICH names but that MPI has not built: DATATYPE_NULL there too
_ABSENT = ("BFLOAT16_T", "COMPLEX4", "INTEGER16", "LOGICAL1", "LOGICAL2", "LOGICAL4",
           "LOGICAL8", "LOGICAL16", "REAL2")

# name, type of the value (the index is always a C int), MPICH print name
_PAIR_TYPES = (
    ("FLOAT_INT", "FLOAT", None),
    ("DOUBLE_INT", "DOUBLE", None),
    ("LONG_INT", "LONG", None),
    ("TWOINT", "INT", "MPI_2INT"),
    ("SHORT_INT", "SHORT", None),
    ("LONG_DOUBLE_INT", "LONG_DOUBLE", None),
)

# mpi4py's other names for the same handles (Datatype.pyx "Convenience aliases")
_ALIASES = {
    "BOOL": "C_BOOL", "C_COMPLEX": "C_FLOAT_COMPLEX", "INT_INT": "TWOINT",
    "UNSIGNED_INT": "UNSIGNED", "SIGNED_SHORT": "SHORT", "SIGNED_INT": "INT",
    "SIGNED_LONG": "LONG", "SIGNED_LONG_LONG": "LONG_LONG",
    "SINT8_T": "INT8_T", "SINT16_T": "INT16_T", "SINT32_T": "INT32_T", "SINT64_T": "INT64_T",
    "FLOAT32_T": "FLOAT", "FLOAT64_T": "DOUBLE",
}


# numpy's view of each element type (kind, char, itemsize), known without numpy:
# importing numpy costs 0.1 s and a thread, and most ranks never need it.
_NATIVE_SIZES = {c: struct.calcsize(c) for c in "bhilqBHILQefd?"}
_NATIVE_SIZES["g"] = ctypes.sizeof(ctypes.c_longdouble)
_NATIVE_SIZES["p"] = ctypes.sizeof(ctypes.c_ssize_t)
_KIND_OF = dict.fromkeys("bhilqp", "i")
_KIND_OF.update(dict.fromkeys("BHILQ", "u"))
_KIND_OF.update({"e": "f", "f": "f", "d": "f", "g": "f", "?": "b"})
_CHAR_OF_SIZE = {("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "l",
                 ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "L"}


def _element(spec):
    """(kind, char, itemsize) that numpy gives ``numpy.dtype(spec)`` on this platform."""
    if spec in ("F", "D", "G"):
        _, _, size = _element(spec.lower())
        return "c", spec, 2 * size
    if len(spec) == 2 and spec[0] in "iu":
        kind, size = spec[0], int(spec[1])
        return kind, _CHAR_OF_SIZE[kind, size], size
    return _KIND_OF[spec], "l" if spec == "p" else spec, _NATIVE_SIZES[spec]


def _typestr(typechar, kind, itemsize):
    special = {"?": "b1", "c": "S1", "U": "U1"}
    return special.get(typechar) or "%s%d" % (kind, itemsize)


def _predefined(name, handle):
    handle.predefined = True
    handle.constant_name = name
    datatype = constant(Datatype())
    datatype._handle = handle
    handle.basic = datatype
    return datatype


def _basic_type(name, numpy_type, type_class, typechar, mpi_name):
    kind, char, itemsize = _element(numpy_type)
    typechar = typechar or char
    typestr = _typestr(typechar, kind, itemsize)
    return _predefined(name, TypeHandle(
        name=mpi_name or "MPI_" + name, size=itemsize, extent=itemsize,
        dtype=lambda: np.dtype(numpy_type), type_class=type_class, typechar=typechar,
        typestr=typestr, code=typestr if name in _FIXED_WIDTH else typechar))


def _pair_type(name, value_name, mpi_name):
    """A pair type laid out like its C struct {value; int index;}."""
    value = PREDEFINED[value_name]._handle
    int_size = _NATIVE_SIZES["i"]
    index_offset = -(-value.size // int_size) * int_size
    alignment = max(min(value.size, 16), int_size)
    index_end = index_offset + int_size
    extent = -(-index_end // alignment) * alignment

    def dtype():
        return np.dtype({"names": ["value", "index"], "formats": [value.dtype, np.intc]},
                        align=True)
    pair = _predefined(name, TypeHandle(
        name=mpi_name or "MPI_" + name, size=value.size + int_size,
        extent=extent, true_extent=index_end, dtype=dtype, type_class=PAIR))
    pair._handle.alignment = alignment
    return pair


PREDEFINED = {}
for _row in _BASIC_TYPES:
    PREDEFINED[_row[0]] = _basic_type(*_row)
for _row in _PAIR_TYPES:
    PREDEFINED[_row[0]] = _pair_type(*_row)
PREDEFINED.update({alias: PREDEFINED[name] for alias, name in _ALIASES.items()})
PREDEFINED["HANDLE_SYNC"] = _predefined("HANDLE_SYNC", TypeHandle(
    name="MPI_HANDLE_SYNC", size=HANDLE_BYTES, extent=HANDLE_BYTES,
    dtype=lambda: np.dtype("V%d" % HANDLE_BYTES), type_class=HANDLE))

DATATYPE_NULL = Datatype()
PREDEFINED.update(dict.fromkeys(_ABSENT, DATATYPE_NULL))
_PAIR_OF = {(PREDEFINED[value]._handle, PREDEFINED["INT"]._handle): PREDEFINED[name]
            for name, value, _ in _PAIR_TYPES}

globals().update(PREDEFINED)
# what MPI re-exports: mpi4py's names only, not the runtime helpers below
__all__ = (["Datatype", "DATATYPE_NULL"] + sorted(PREDEFINED)
           + ["COMBINER_" + name for name in _COMBINER_NAMES.values()]
           + ["TYPECLASS_" + name for name in ("INTEGER", "REAL", "COMPLEX", "LOGICAL")])


# -- decoding and pickling ---------------------------------------------------------

def _indexed_parameters(integers, counts, datatypes):
    n = counts[0]
    return {"blocklengths": counts[1:n + 1], "displacements": counts[n + 1:2 * n + 1]}


def _subarray_parameters(integers, counts, datatypes):
    n = integers[0]
    return {"sizes": counts[:n], "subsizes": counts[n:2 * n], "starts": counts[2 * n:3 * n],
            "order": integers[1]}


def _darray_parameters(integers, counts, datatypes):
    n = integers[2]
    return {"size": integers[0], "rank": integers[1], "gsizes": counts[:n],
            "distribs": integers[3:3 + n], "dargs": integers[3 + n:3 + 2 * n],
            "psizes": integers[3 + 2 * n:3 + 3 * n], "order": integers[3 + 3 * n]}


def _named_counts(*names):
    return lambda integers, counts, datatypes: dict(zip(names, counts))


def _named_integers(*names):
    return lambda integers, counts, datatypes: dict(zip(names, integers))


# constructor keyword arguments from contents laid out as MPI_Type_get_contents_c
# lays them out (mpi4py's datatype_decode, large-count branch: shmrma's constructors
# are the large-count ones, as mpi4py's are)
_PARAMETERS = {
    COMBINER_DUP: _named_counts(),
    COMBINER_CONTIGUOUS: _named_counts("count"),
    COMBINER_VECTOR: _named_counts("count", "blocklength", "stride"),
    COMBINER_HVECTOR: _named_counts("count", "blocklength", "stride"),
    COMBINER_INDEXED: _indexed_parameters,
    COMBINER_HINDEXED: _indexed_parameters,
    COMBINER_INDEXED_BLOCK: lambda i, counts, d: {"blocklength": counts[1],
                                                  "displacements": counts[2:]},
    COMBINER_STRUCT: lambda i, c, datatypes: dict(_indexed_parameters(i, c, datatypes),
                                                  datatypes=datatypes),
    COMBINER_SUBARRAY: _subarray_parameters,
    COMBINER_DARRAY: _darray_parameters,
    COMBINER_RESIZED: _named_counts("lb", "extent"),
    COMBINER_F90_INTEGER: _named_integers("r"),
    COMBINER_F90_REAL: _named_integers("p", "r"),
    COMBINER_F90_COMPLEX: _named_integers("p", "r"),
}
_PARAMETERS[COMBINER_HINDEXED_BLOCK] = _PARAMETERS[COMBINER_INDEXED_BLOCK]


def _decode(handle, datatypes):
    """(old type, combiner name, keyword arguments) of a derived or Fortran type whose
    argument types are ``datatypes``: mpi4py's Datatype.decode()."""
    integers, _, counts, _ = handle.contents
    old = datatypes[0] if len(datatypes) == 1 else DATATYPE_NULL
    parameters = _PARAMETERS[handle.combiner](integers, counts, datatypes)
    return (old, _COMBINER_NAMES[handle.combiner], parameters)


def _datatype_create(datatype, combiner, params, free=False):
    """mpi4py's MPI._datatype_create: the committed type that ``Create_<combiner>`` of
    ``datatype`` makes from ``params``; with ``free``, the argument types are
    temporaries (an unpickled type's) and are freed once it is built."""
    temporaries = params["datatypes"] if "datatypes" in params else [datatype]
    try:
        return getattr(datatype, "Create_" + combiner.lower())(**params).Commit()
    finally:
        if free:
            for temporary in temporaries:
                temporary.free()


def _datatype_decode(datatype, mark=False):
    """mpi4py's MPI._datatype_decode (``mark`` only matters to its handle bookkeeping)."""
    return datatype.decode()


# -- Fortran kinds -------------------------------------------------------------------

# gfortran's kinds on x86-64 as MPICH selects them: the smallest integer kind with
# at least r decimal digits; the smallest real (complex) kind with at least p digits
# of precision and a decimal exponent range of at least r (UNDEFINED, or a negative
# value, asks nothing). MPICH also has 2-byte reals (p <= 3, r <= 4) and 16-byte
# integers (r <= 38); shmrma has neither (REAL2 and INTEGER16 are DATATYPE_NULL), so
# those requests take the next kind up or fail, as gfortran's own selected_*_kind do.
# No kind: ERR_ARG, a bad argument (MPICH says ERR_OTHER; the standard names none).
_F90_INTEGERS = ((2, "INTEGER1"), (4, "INTEGER2"), (9, "INTEGER4"), (18, "INTEGER8"))
_F90_FLOATING = ((6, 37, "REAL4", "COMPLEX8"), (15, 307, "REAL8", "COMPLEX16"),
                 (33, 4931, "REAL16", "COMPLEX32"))
_F90_TYPES = {}  # the handle of each (combiner, arguments): a repeated call returns it
_TYPECLASS_PREFIXES = {TYPECLASS_INTEGER: "INTEGER", TYPECLASS_REAL: "REAL",
                       TYPECLASS_COMPLEX: "COMPLEX", TYPECLASS_LOGICAL: "LOGICAL"}


def _f90_floating(combiner, p, r):
    p, r = c_integer(p), c_integer(r)
    call = "Create_f90_real" if combiner == COMBINER_F90_REAL else "Create_f90_complex"
    for precision, exponents, real, complex_ in _F90_FLOATING:
        if p <= precision and r <= exponents:
            name = real if combiner == COMBINER_F90_REAL else complex_
            return _f90_type(combiner, (p, r), name)
    fail(ERR_ARG, "%s: no kind has precision %d and exponent range %d (at most %d and %d)"
         % (call, p, r, _F90_FLOATING[-1][0], _F90_FLOATING[-1][1]))


def _f90_type(combiner, arguments, sized_name):
    """The predefined (unnamed, unfreeable) type of a Fortran kind: the layout, codes
    and reduction class of the size-specific type ``sized_name``."""
    key = (combiner,) + arguments
    handle = _F90_TYPES.get(key)
    if handle is None:
        handle = _F90_TYPES[key] = PREDEFINED[sized_name]._handle.duplicate()
        handle.predefined = True
        handle.record(combiner, integers=arguments)
    datatype = Datatype()
    datatype._handle = handle
    return datatype


# -- mpi4py's private helpers that mpi4py.util.dtlib uses -------------------------------

_ALIGNMENT_OF = {char: ctypes.alignment(ctype) for chars, ctype in (
    ("?", ctypes.c_bool), ("bBcS", ctypes.c_char), ("hH", ctypes.c_short),
    ("iI", ctypes.c_int), ("lL", ctypes.c_long), ("qQ", ctypes.c_longlong),
    ("fF", ctypes.c_float), ("dD", ctypes.c_double), ("gG", ctypes.c_longdouble),
    ("U", ctypes.c_wchar), ("pP", ctypes.c_void_p)) for char in chars}
_ALIGNMENT_OF["e"] = _ALIGNMENT_OF["E"] = ctypes.alignment(ctypes.c_float) // 2


def _typecode(datatype):
    """mpi4py's MPI._typecode: what tocode() answers, or None."""
    handle = _handle_of(datatype, "datatype")
    return None if handle is None else handle.code


def c_alignment(datatype):
    """The C alignment of a predefined type (or a Dup of one with a typecode), None
    for derived types: mpi4py's MPI._typealign."""
    handle = _handle_of(datatype, "datatype")
    if handle is None:
        return None
    if handle.typechar is not None:
        return _ALIGNMENT_OF.get(handle.typechar)
    return handle.alignment


# -- typecodes and buffer formats ------------------------------------------------

# mpi4py's TypeDict (typemap.pxi) as it resolves on LP64 Linux with MPICH: later
# entries there override earlier ones, so "i4" is INT32_T and not INT, "B" is
# UNSIGNED_CHAR and not BYTE; numpy's float16 ("e") is MPICH's MPIX_C_FLOAT16.
_LONG_DOUBLE_BYTES = _NATIVE_SIZES["g"]
_CODES_OF = {
    "C_BOOL": "? b1",
    "SIGNED_CHAR": "b", "SHORT": "h", "INT": "i", "LONG": "l", "LONG_LONG": "q",
    "UNSIGNED_CHAR": "B", "UNSIGNED_SHORT": "H", "UNSIGNED": "I",
    "UNSIGNED_LONG": "L N P", "UNSIGNED_LONG_LONG": "Q",
    "FLOAT": "f f4", "DOUBLE": "d f8", "LONG_DOUBLE": "g f%d" % _LONG_DOUBLE_BYTES,
    "C_FLOAT_COMPLEX": "F Zf c8", "C_DOUBLE_COMPLEX": "D Zd c16",
    "C_LONG_DOUBLE_COMPLEX": "G Zg c%d" % (2 * _LONG_DOUBLE_BYTES),
    "INT8_T": "i1", "INT16_T": "i2", "INT32_T": "i4", "INT64_T": "i8 M M8 m m8",
    "UINT8_T": "u1", "UINT16_T": "u2 u 1u", "UINT32_T": "u4", "UINT64_T": "u8",
    "CHAR": "c a S S1 s 1s", "WCHAR": "U U1 w 1w",
    "AINT": "p", "COUNT": "n", "FLOAT16_T": "e f2",
}
# mpi4py's CTypeDict and FTypeDict: the C types alone, and Fortran's by its letters
_C_CODES_OF = {
    "C_BOOL": "? b1", "SIGNED_CHAR": "b", "SHORT": "h", "INT": "i", "LONG": "l",
    "LONG_LONG": "q", "UNSIGNED_CHAR": "B", "UNSIGNED_SHORT": "H", "UNSIGNED": "I",
    "UNSIGNED_LONG": "L", "UNSIGNED_LONG_LONG": "Q",
    "FLOAT": "f f4", "DOUBLE": "d f8", "LONG_DOUBLE": "g f%d" % _LONG_DOUBLE_BYTES,
    "C_FLOAT_COMPLEX": "F c8", "C_DOUBLE_COMPLEX": "D c16",
    "C_LONG_DOUBLE_COMPLEX": "G c%d" % (2 * _LONG_DOUBLE_BYTES),
    "INT8_T": "i1", "INT16_T": "i2", "INT32_T": "i4", "INT64_T": "i8",
    "UINT8_T": "u1", "UINT16_T": "u2", "UINT32_T": "u4", "UINT64_T": "u8",
    "FLOAT16_T": "f2",
}
_FORTRAN_CODES_OF = {
    "LOGICAL": "l", "INTEGER": "i", "REAL": "r s", "DOUBLE_PRECISION": "d",
    "COMPLEX": "c", "DOUBLE_COMPLEX": "z",
    "LOGICAL1": "l1", "LOGICAL2": "l2", "LOGICAL4": "l4", "LOGICAL8": "l8",
    "LOGICAL16": "l16", "INTEGER1": "i1", "INTEGER2": "i2", "INTEGER4": "i4",
    "INTEGER8": "i8", "INTEGER16": "i16", "REAL2": "r2", "REAL4": "r4", "REAL8": "r8",
    "REAL16": "r16", "COMPLEX4": "c4", "COMPLEX8": "c8", "COMPLEX16": "c16",
    "COMPLEX32": "c32",
}


def _code_table(codes_of):
    """typecode -> Datatype, leaving out the types this runtime has as null (as
    mpi4py's AddTypeMap leaves out what the MPI library lacks)."""
    return {code: PREDEFINED[name] for name, codes in codes_of.items()
            for code in codes.split() if PREDEFINED[name]}


_TYPECODES = _code_table(_CODES_OF)
# mpi4py's private tables, which packages built on it read (mpi4py-fft, for one);
# _typedict is the very table the buffer parser uses, as in mpi4py
_typedict, _typedict_c, _typedict_f = (_TYPECODES, _code_table(_C_CODES_OF),
                                       _code_table(_FORTRAN_CODES_OF))

_NATIVE_ORDER = "<" if sys.byteorder == "little" else ">"
_FOREIGN_ORDER = ">" if sys.byteorder == "little" else "<"


def from_typecode(code):
    """The predefined Datatype of a typecode string, as a buffer spec's datatype.

    Raises KeyError for an unknown code, like mpi4py's message parsing (the
    classmethod Datatype.fromcode raises ValueError instead, like mpi4py's).
    """
    try:
        return _TYPECODES[code]
    except KeyError:
        raise KeyError("cannot map %r to MPI datatype" % (code,)) from None


def lookup(datatype):
    """What every call taking a datatype uses: a Datatype as is, else a typecode."""
    if isinstance(datatype, Datatype):
        return datatype
    return from_typecode(datatype)


def from_buffer_format(fmt, itemsize=None):
    """The Datatype of a buffer exporting PEP 3118 format ``fmt``.

    mpi4py's rules (msgbuffer.pxi getdatatype/getformat): no format is BYTE; a
    leading "@", or the native one of "<" / ">", is dropped; the other byte order
    raises BufferError; the rest is looked up as a typecode ("=" and "!" are not
    dropped, so they end in KeyError). A bytearray's "B" is UNSIGNED_CHAR there:
    getdatatype's test for BYTE compares the format's address with mpi4py's own
    "B" string, which only its device-buffer views carry (with MPICH, an
    Allreduce of a bytearray with LAND or SUM works, of ``[buf, MPI.BYTE]`` is
    ERR_OP). ``itemsize``, when given, must agree with the type found: an
    exporter whose format and item size disagree would have its data misread.
    """
    if fmt is None:
        return PREDEFINED["BYTE"]
    if fmt[:1] == _FOREIGN_ORDER:
        raise BufferError("format string %r with non-native byte order" % fmt)
    if fmt[:1] in ("@", _NATIVE_ORDER):
        fmt = fmt[1:]
    datatype = from_typecode(fmt)
    if itemsize is not None and itemsize != datatype.extent:
        raise BufferError("buffer format %r means %d-byte items but the buffer says %d"
                          % (fmt, datatype.extent, itemsize))
    return datatype


_typealign = c_alignment  # mpi4py's name
