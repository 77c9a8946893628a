"""The classes this backend puts in place of mpi4py's keep mpi4py's isinstance:
``isinstance(comm.Isend(...), MPI.Request)`` holds although mpi4py made that
request, so programs that check types run unchanged."""


class Extends(type):
    """Metaclass: an instance of the mpi4py class named by ``_widens`` counts as one."""

    def __instancecheck__(cls, obj):
        widens = cls.__dict__.get("_widens")
        return isinstance(obj, widens) if widens else type.__instancecheck__(cls, obj)

