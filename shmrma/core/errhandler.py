"""Error handlers: ``ERRORS_RETURN`` raises ``MPI.Exception`` (mpi4py's default on
the objects it creates); ``ERRORS_ARE_FATAL`` and ``ERRORS_ABORT`` end the whole
job with a message; a user handler (``Comm.Create_errhandler(fn)`` and the like)
is called as ``fn(obj, error_code)`` before the call raises."""
import functools
import itertools
import operator
import os
import sys

from . import errors, job
from .handle import HandleBase, IntHandle

# mpi4py keeps 32 user handlers per kind of object (its C trampolines); shmrma
# allows as many live ones, so that a program that runs here runs on mpi4py
MAX_USER_HANDLERS = 32


class UserHandler:
    """What a user error handler is: its function and the kind it serves."""

    __slots__ = ("kind", "function", "number")

    def __init__(self, kind, function, number):
        self.kind, self.function, self.number = kind, function, number


_live_user_handlers = {}        # kind -> how many are not freed
_next_number = itertools.count(16)   # toint() numbers of user handlers
_by_number = {}                 # toint() -> target, for fromint/f2py


class Errhandler(HandleBase, IntHandle):
    """``MPI.Errhandler``. Handles compare by the handler they name, as mpi4py's do:
    ``comm.Get_errhandler()`` gives a new handle, which ``Free`` turns into
    ERRHANDLER_NULL; the module's constants stay what they are. ``_target`` is a
    predefined handler's name or a UserHandler."""

    _constant = False

    def __init__(self, errhandler=None):
        # Errhandler(other) is a new handle to the same handler, as in mpi4py;
        # the runtime makes handles to a target with _of_referent
        if errhandler is not None and not isinstance(errhandler, Errhandler):
            raise TypeError("Errhandler() takes an Errhandler, not %s"
                            % type(errhandler).__name__)
        self._target = None if errhandler is None else errhandler._target

    def __bool__(self):
        return self._target is not None

    def __eq__(self, other):
        if not isinstance(other, Errhandler):
            return NotImplemented
        return self._target == other._target

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None     # unhashable, as in mpi4py (Free changes what it refers to)

    def __repr__(self):
        if isinstance(self._target, UserHandler):
            return "<MPI.Errhandler for %s: %r>" % (self._target.kind, self._target.function)
        return "MPI.%s" % (self._target or "ERRHANDLER_NULL")

    def __reduce__(self):
        if isinstance(self._target, UserHandler):
            raise ValueError("cannot serialize a user-defined error handler: its function "
                             "lives in this process")
        if self._constant:
            return self._target or "ERRHANDLER_NULL"
        return (type(self), (PREDEFINED.get(self._target, ERRHANDLER_NULL),))

    def Free(self):
        """Free an error handler (the predefined ones stay)."""
        target = self._target
        if target is None:
            errors.fail(errors.ERR_ARG, "Free: the error handler is ERRHANDLER_NULL (never "
                        "made, or freed already)")
        if self._constant:
            return
        if isinstance(target, UserHandler) and _by_number.pop(target.number, None):
            _live_user_handlers[target.kind] -= 1
        self._target = None

    def toint(self):
        """Translate object to integer handle."""
        if isinstance(self._target, UserHandler):
            return self._target.number
        return _PREDEFINED_NUMBERS[self._target]

    @classmethod
    def fromint(cls, number):
        """Translate integer handle to object."""
        return cls._of_referent(_by_number.get(number))

    _referent_attr = "_target"


def create(kind, function):
    """A new user error handler for objects of ``kind`` ("Comm", "Win", "Session")."""
    if not callable(function):
        raise TypeError("the error handler function must be callable, not %r" % (function,))
    if _live_user_handlers.get(kind, 0) >= MAX_USER_HANDLERS:
        raise RuntimeError("cannot create too many user-defined error handlers")
    _live_user_handlers[kind] = _live_user_handlers.get(kind, 0) + 1
    target = UserHandler(kind, function, next(_next_number))
    _by_number[target.number] = target
    return Errhandler._of_referent(target)


def _constant(name=None):
    handler = Errhandler._of_referent(name)
    handler._constant = True
    return handler


ERRHANDLER_NULL = _constant()
ERRORS_RETURN = _constant("ERRORS_RETURN")
ERRORS_ARE_FATAL = _constant("ERRORS_ARE_FATAL")
ERRORS_ABORT = _constant("ERRORS_ABORT")
PREDEFINED = {handler._target: handler for handler in (ERRORS_RETURN, ERRORS_ARE_FATAL,
                                                        ERRORS_ABORT)}
_PREDEFINED_NUMBERS = {None: 0, "ERRORS_RETURN": 1, "ERRORS_ARE_FATAL": 2, "ERRORS_ABORT": 3}
_by_number.update({number: name for name, number in _PREDEFINED_NUMBERS.items() if name})


# The handler new communicators, windows, files and sessions start with, as
# mpi4py's ``rc.errors`` chooses it (mpi4py_alias.py applies it): "exception",
# its default, sets ERRORS_RETURN on every object mpi4py makes, "abort" and "fatal"
# ERRORS_ABORT and ERRORS_ARE_FATAL; "default" (None here) leaves MPI's own
# defaults: a new communicator inherits its parent's handler (MPI-3.1 §8.3), a
# window or session starts with ERRORS_ARE_FATAL, a file with FILE_NULL's (§13.7).
_policy = [ERRORS_RETURN]


def set_policy(handler):
    """Make ``handler`` (a predefined one, or None for MPI's defaults) the policy."""
    _policy[0] = handler


def for_new(mpi_default):
    """The handler a new object starts with: the policy's, else ``mpi_default``."""
    return _policy[0] or mpi_default


def settable(handler, kind):
    """The handler an object of ``kind`` keeps for Set_errhandler(handler): a
    predefined constant or the user handler; ERR_ARG for anything else."""
    target = handler._target if isinstance(handler, Errhandler) else None
    if isinstance(target, UserHandler) and target.kind == kind:
        return Errhandler._of_referent(target)
    if target in PREDEFINED:
        return PREDEFINED[target]
    errors.fail(errors.ERR_ARG, "the error handler must be ERRORS_RETURN, ERRORS_ARE_FATAL, "
                "ERRORS_ABORT or one from %s.Create_errhandler, not %r" % (kind, handler))


class ErrorHandling:
    """The error-handler calls of Comm and Win: ``_errhandler_kind`` names the
    kind, and the object's state (``_s``) keeps the handler for all its handles;
    the calling handle's class routes its errors to it (switch_class)."""

    _errhandler_kind = None

    @classmethod
    def Create_errhandler(cls, errhandler_fn):
        """Create a new error handler for objects of this class."""
        return create(cls._errhandler_kind, errhandler_fn)

    def Get_errhandler(self):
        """Get the error handler for this object."""
        return Errhandler(self._s.errhandler)     # a handle of its own

    def Set_errhandler(self, errhandler):
        """Set the error handler for this object."""
        state = self._s
        state.errhandler = handler = settable(errhandler, self._errhandler_kind)
        switch_class(self, handler)

    def Call_errhandler(self, errorcode):
        """Call the error handler installed on this object."""
        invoke(self._s.errhandler, self, operator.index(errorcode),
               "%s.Call_errhandler" % self._errhandler_kind)

    @property
    def _errhandler(self):
        try:
            return self._s.errhandler
        except errors.Exception:    # a null or freed object: its calls raise
            return ERRORS_RETURN


def invoke(handler, obj, error_code, where):
    """What ``handler`` does about ``error_code`` on ``obj`` (Call_errhandler, and a
    failed call on an object whose handler is not ERRORS_RETURN)."""
    target = handler._target
    if isinstance(target, UserHandler):
        try:
            target.function(obj, error_code)
        except BaseException as exc:  # noqa: BLE001 - as mpi4py: unrecoverable
            fatal(exc, "the user error handler called from %s" % where)
    elif target in ("ERRORS_ARE_FATAL", "ERRORS_ABORT") and error_code != errors.SUCCESS:
        fatal(errors.Exception(error_code), where)


def fatal(exc, where):
    """What ERRORS_ARE_FATAL does: say what went wrong, then end the job."""
    world = job.current()
    sys.stderr.write("shmrma: fatal error on rank %d in %s: %s\n" % (world.rank, where, exc))
    sys.stderr.flush()
    world.fail(world.rank)
    os._exit(1)


def handled_variant(cls):
    """A subclass of ``cls`` whose public methods hand an MPI.Exception to the
    object's error handler (``obj._errhandler``) before it propagates.

    An object switches to it when a handler other than ERRORS_RETURN is set,
    so the default (raising) path costs nothing extra.
    """
    def guard(name, method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except errors.Exception as exc:
                invoke(self._errhandler, self, exc.ierr, "%s.%s" % (cls.__name__, name))
                raise
        return guarded

    # the module and name of cls, so that pickling by name (COMM_WORLD) still works
    namespace = {"_plain_class": cls, "__module__": cls.__module__,
                 "__qualname__": cls.__qualname__}
    for klass in reversed(cls.__mro__):
        for name, member in vars(klass).items():
            if name[:1].isupper() and callable(member) and not isinstance(
                    member, (classmethod, staticmethod, type)):
                namespace[name] = guard(name, member)
    return type(cls.__name__, (cls,), namespace)


_variants = {}


def switch_class(obj, handler):
    """Give ``obj`` the class that serves ``handler``: its own for ERRORS_RETURN, the
    handled variant of it otherwise."""
    plain = getattr(type(obj), "_plain_class", type(obj))
    if handler is ERRORS_RETURN:
        target = plain
    else:
        target = _variants.get(plain)
        if target is None:
            target = _variants[plain] = handled_variant(plain)
    if type(obj) is not target:     # assigning __class__ slows the object's attributes
        obj.__class__ = target
