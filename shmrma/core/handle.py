"""The handle protocol of MPI objects (Datatype, Op, Group, Info): two Python objects
are equal when they refer to the same MPI object, like C handles, and a null handle
is false. They are unhashable, as mpi4py's (Free() changes what they refer to).

``toint()``/``fromint()`` are MPI 4.1's integer handles (MPI_Op_toint...): an int
that names the MPI object, from which ``fromint`` makes a new Python object
referring to it. 0 is the null handle; the others are numbered in order of first
use, per kind, and name the object as long as something refers to it."""
import itertools
import operator
import weakref

from . import atomic
from .errors import ERR_ARG, fail


class _IntHandles:
    """The integer handles of one kind of MPI object."""

    def __init__(self):
        self.objects = weakref.WeakValueDictionary()   # int -> handle object
        self.numbers = weakref.WeakKeyDictionary()     # handle object -> int
        self.counter = itertools.count(1)

    def number(self, handle):
        if handle is None:
            return 0
        number = self.numbers.get(handle)
        if number is None:
            with atomic.mpi_lock:   # one number per handle, whichever threads ask
                number = self.numbers.get(handle)
                if number is None:
                    number = self.numbers[handle] = next(self.counter)
                    self.objects[number] = handle
        return number

    def handle(self, number, kind):
        number = operator.index(number)
        if number == 0:
            return None
        handle = self.objects.get(number)
        if handle is None:
            fail(ERR_ARG, "%d is not the integer handle of a live MPI.%s; pass what "
                          "toint() returned" % (number, kind.__name__))
        return handle


def _constructor_base():
    """HandleBase of shmrma._native (C: free on the runtime's own constructions),
    or its Python equivalent without the extension."""
    try:
        from .._native import HandleBase
        return HandleBase
    except ImportError:
        class HandleBase:
            def __new__(cls, *args, **kwargs):
                return object.__new__(cls)
        return HandleBase


# The base of handle classes constructed as mpi4py's are: ``__new__`` takes the
# handle to copy (ignoring it; ``__init__`` copies it), so a subclass may define
# ``def __new__(cls, x=None): return Base.__new__(cls, x)`` (test_subclass). A class
# whose __new__ is Python code must name it first among its bases: CPython checks
# that the C __new__ is reached through a chain of first bases (tp_base).
HandleBase = _constructor_base()


class IntHandle:
    """mpi4py's ``handle``/``fromhandle``, integer ``toint``/``fromint`` and Fortran
    ``py2f``/``f2py``: here all are one integer handle. A class listing IntHandle
    (or Handle) among its bases is a kind of MPI object, numbered on its own; by
    default its objects refer to what their attribute ``_referent_attr`` holds
    (None when null), and ``fromint`` makes ``cls()`` refer to it. Classes keeping
    their MPI object otherwise define toint and fromint."""

    _referent_attr = "_handle"
    _constant = False   # a module constant (MPI.INT, MPI.COMM_WORLD...): see free()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if IntHandle in cls.__bases__ or Handle in cls.__bases__:
            cls._kind = cls  # objects compare with others of the same MPI kind only
            cls._ints = _IntHandles()

    def toint(self):
        """The integer handle of the MPI object (0 for a null handle)."""
        return self._ints.number(getattr(self, self._referent_attr))

    @classmethod
    def fromint(cls, number):
        """A new object referring to the MPI object of integer handle ``number``."""
        return cls._of_referent(cls._ints.handle(number, cls._kind))

    @classmethod
    def _of_referent(cls, referent):
        """A new object of this class referring to ``referent`` (None: null)."""
        obj = cls()
        setattr(obj, cls._referent_attr, referent)
        return obj

    # --- mpi4py's safe free (objmodel.pxi safefree) ---
    def free(self):
        """Call Free if not null or predefined.

        Nothing for a module constant or a null handle; a handle to a predefined
        MPI object (``Datatype(MPI.INT)``) becomes null; another object is freed
        (Free, Close or Finalize: ``_free``)."""
        if self._constant or not self:
            return
        if self._predefined():
            self._nullify()
        else:
            self._free()

    def _predefined(self):
        """Does this non-null handle refer to a predefined MPI object?"""
        return False

    def _nullify(self):
        setattr(self, self._referent_attr, None)

    def _free(self):
        self.Free()

    @property
    def handle(self):
        """The MPI handle, an int (read-only)."""
        return self.toint()

    @classmethod
    def fromhandle(cls, handle):
        """A new object of this class referring to the MPI object ``handle`` names."""
        return cls.fromint(handle)

    def py2f(self):
        """Return the Fortran handle (the integer handle)."""
        return self.toint()

    @classmethod
    def f2py(cls, number):
        """Return the object of a Fortran handle (an integer handle)."""
        return cls.fromint(number)


class SameReferent:
    """Handles that compare equal when they refer to the same MPI object (through
    IntHandle's ``_referent_attr``), true unless null, unhashable as in mpi4py
    (Free changes what a handle refers to)."""

    def __eq__(self, other):
        if not isinstance(other, self._kind):
            return NotImplemented
        return getattr(self, self._referent_attr) is getattr(other, other._referent_attr)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None

    def __bool__(self):
        return getattr(self, self._referent_attr) is not None


class Handle(HandleBase, SameReferent, IntHandle):
    _handle = None


def constant(obj):
    """Mark ``obj`` a module constant (free() leaves it alone) and return it."""
    obj._constant = True
    return obj


def reduce_named(obj, constants):
    """mpi4py's pickling of predefined handles (objmodel.pxi, def_reduce): a
    constant pickles as its name, so it unpickles as the very same object; another
    object sharing a constant's handle, as ``type(obj)(constant)``, a new object
    equal to it (every handle class copies the handle of its argument). None when ``obj`` refers to no constant.
    ``constants`` maps names to the module-level constants."""
    for name, constant in constants.items():
        if obj is constant:
            return name
    for constant in constants.values():
        if obj._handle is constant._handle:
            return (type(obj), (constant,))
    return None
