"""Error handlers: ``ERRORS_RETURN`` raises ``MPI.Exception`` (mpi4py's default on
the objects it creates); ``ERRORS_ARE_FATAL`` ends the whole job with a message."""
import functools
import os
import sys

from . import errors, job


class Errhandler:
    """``MPI.Errhandler``. Handles compare by the handler they name, as mpi4py's do:
    ``win.Get_errhandler()`` gives a new handle, which ``Free`` turns into
    ERRHANDLER_NULL; the module's constants stay what they are."""

    _constant = False

    def __init__(self, name=None):
        self._name = name

    def __bool__(self):
        return self._name is not None

    def __eq__(self, other):
        if not isinstance(other, Errhandler):
            return NotImplemented
        return self._name == other._name

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return "MPI.%s" % (self._name or "ERRHANDLER_NULL")

    def __reduce__(self):
        return self._name or "ERRHANDLER_NULL"

    def Free(self):
        if not self._constant:
            self._name = None


def _constant(name=None):
    handler = Errhandler(name)
    handler._constant = True
    return handler


ERRHANDLER_NULL = _constant()
ERRORS_RETURN = _constant("ERRORS_RETURN")
ERRORS_ARE_FATAL = _constant("ERRORS_ARE_FATAL")
ERRORS_ABORT = _constant("ERRORS_ABORT")
PREDEFINED = {handler._name: handler for handler in (ERRORS_RETURN, ERRORS_ARE_FATAL,
                                                      ERRORS_ABORT)}


def fatal(exc, where):
    """What ERRORS_ARE_FATAL does: say what went wrong, then end the job."""
    world = job.current()
    sys.stderr.write("shmrma: fatal error on rank %d in %s: %s\n" % (world.rank, where, exc))
    sys.stderr.flush()
    world.fail(world.rank)
    os._exit(1)


def fatal_variant(cls):
    """A subclass of ``cls`` whose public methods end the job on MPI.Exception.

    An object switches to it when ERRORS_ARE_FATAL is set, so the default
    (raising) path costs nothing extra.
    """
    def guard(name, method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except errors.Exception as exc:
                fatal(exc, "%s.%s" % (cls.__name__, name))
        return guarded

    namespace = {}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            if name[:1].isupper() and callable(member) and not isinstance(
                    member, (classmethod, staticmethod, type)):
                namespace[name] = guard(name, member)
    return type(cls.__name__, (cls,), namespace)
