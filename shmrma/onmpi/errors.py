"""Errors of the extensions on the mpi backend: mpi4py's ``MPI.Exception`` with the
MPI's own error classes, plus a message saying what to fix.

The checks themselves are shmrma's (synchandle, buffers, counters argument rules);
``translated`` turns the shmrma exception they raise into this one, class by name.
ERR_WIN_COUNTER is not an MPI class: it is added with MPI_Add_error_class, and
raised as an error code of that class (MPI_Add_error_code), because Open MPI 5's
MPI_Error_class does not map an added class to itself (it says ERR_UNKNOWN),
while it maps the code to the class, as MPICH does for both.
"""
import functools

from mpi4py import MPI as _mpi

from ..core import errors as shm

ERR_WIN_COUNTER = _mpi.Add_error_class()
_WIN_COUNTER_CODE = _mpi.Add_error_code(ERR_WIN_COUNTER)
for _added in (ERR_WIN_COUNTER, _WIN_COUNTER_CODE):
    _mpi.Add_error_string(_added, shm.error_string(shm.ERR_WIN_COUNTER))

_NAME_OF_CLASS = {value: name for name, value in vars(shm).items()
                  if name.startswith("ERR_") and isinstance(value, int)}


class Exception(_mpi.Exception):  # noqa: A001 - it is an MPI.Exception
    """An MPI.Exception of the MPI's error class, carrying what to fix."""

    def __init__(self, ierr, message=None):
        super().__init__(ierr)
        self.message = message

    def __str__(self):
        text = self.Get_error_string().strip()
        return "%s: %s" % (text, self.message) if self.message else text

    def __reduce__(self):
        return (type(self), (int(self.Get_error_code()), self.message))


def mpi_code(shm_class):
    """An MPI error code of the MPI's class named as shmrma's ``shm_class``."""
    name = _NAME_OF_CLASS.get(shm_class, "ERR_OTHER")
    if name == "ERR_WIN_COUNTER":
        return _WIN_COUNTER_CODE
    return getattr(_mpi, name, _mpi.ERR_OTHER)


def fail(shm_class, message):
    raise Exception(mpi_code(shm_class), message)


def translated(function):
    """``function`` raising this backend's exception where shmrma's would be raised."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except shm.Exception as exc:
            raise Exception(mpi_code(exc.ierr), exc.message) from None
    return call
