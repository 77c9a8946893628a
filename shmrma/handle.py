"""The handle protocol of MPI objects (Datatype, Op, Group, Info): two Python objects
are equal when they refer to the same MPI object, like C handles, and a null handle
is false. mpi4py's objects are unhashable; ours hash by handle so the runtime can key
caches on them (Free() changes the handle, hence the hash)."""


class Handle:
    _handle = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if Handle in cls.__bases__:
            cls._kind = cls  # objects compare with others of the same MPI kind only

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
