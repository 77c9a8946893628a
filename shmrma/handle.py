"""The handle protocol of MPI objects (Datatype, Op, Group, Info): two Python objects
are equal when they refer to the same MPI object, like C handles, and a null handle
is false. mpi4py's objects are unhashable; ours hash by handle so the runtime can key
caches on them (Free() changes the handle, hence the hash).

``toint()``/``fromint()`` are MPI 4.1's integer handles (MPI_Op_toint...): an int
that names the MPI object, from which ``fromint`` makes a new Python object
referring to it. 0 is the null handle; the others are numbered in order of first
use, per kind, and name the object as long as something refers to it."""
import itertools
import operator
import weakref

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


class Handle:
    _handle = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if Handle in cls.__bases__:
            cls._kind = cls  # objects compare with others of the same MPI kind only
            cls._ints = _IntHandles()

    def toint(self):
        """The integer handle of the MPI object (0 for a null handle)."""
        return self._ints.number(self._handle)

    @classmethod
    def fromint(cls, number):
        """A new object referring to the MPI object of integer handle ``number``."""
        obj = cls()
        obj._handle = cls._ints.handle(number, cls._kind)
        return obj

    def __eq__(self, other):
        if not isinstance(other, self._kind):
            return NotImplemented
        return self._handle is other._handle

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(self._handle)

    def __bool__(self):
        return self._handle is not None


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
