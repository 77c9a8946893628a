"""The classes this backend puts in place of mpi4py's keep mpi4py's isinstance:
``isinstance(comm.Isend(...), MPI.Request)`` holds although mpi4py made that
request, so programs that check types run unchanged."""
from mpi4py import MPI as _mpi


class Extends(type):
    """Metaclass: an instance of the mpi4py class named by ``_widens`` counts as one."""

    def __instancecheck__(cls, obj):
        widens = cls.__dict__.get("_widens")
        return isinstance(obj, widens) if widens else type.__instancecheck__(cls, obj)


def info_hints(info):
    """A dict of an mpi4py Info (None and INFO_NULL give {}), or the mapping given."""
    if info is None or (isinstance(info, _mpi.Info) and info == _mpi.INFO_NULL):
        return {}
    if isinstance(info, _mpi.Info):
        return dict(info.items())
    return info
