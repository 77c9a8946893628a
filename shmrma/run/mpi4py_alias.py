"""Inside a shmrma job, ``import mpi4py`` and ``from mpi4py import MPI`` are shmrma.

Every mpi4py program says ``from mpi4py import MPI``. Started by shmrma-run, each
rank would load the installed mpi4py, whose MPI knows nothing of the job: every
rank would be a world of one, and an ``allreduce`` would return its own value. So
the launcher makes each rank answer the name ``mpi4py.MPI`` with shmrma's MPI
namespace (``install``; ``SHMRMA_MPI4PY=0`` or ``shmrma-run --no-mpi4py-alias``
leave the installed one). The package ``mpi4py`` itself stays the installed one,
so its pure-Python modules (mpi4py.futures, mpi4py.util, mpi4py.run, mpi4py.bench)
run on shmrma's MPI; where mpi4py is not installed, a stand-in package holds
``rc`` and ``MPI``.

As in mpi4py, ``mpi4py.rc`` and the ``MPI4PY_RC_*`` environment variables (which
win over it) are read when ``mpi4py.MPI`` is first imported:

- ``initialize``: False leaves MPI uninitialized (``Is_initialized()``) until the
  program calls ``MPI.Init`` or ``MPI.Init_thread``;
- ``threads`` and ``thread_level``: the level asked of ``Init_thread`` (what
  ``Query_thread`` then reports, at most what shmrma supports);
- ``errors``: the error handler of COMM_WORLD, COMM_SELF and every communicator,
  window, file and session made afterwards ("exception", the default:
  ERRORS_RETURN, which raises; "abort", "fatal": ERRORS_ABORT, ERRORS_ARE_FATAL;
  "default": MPI's own defaults, errhandler.for_new);
- ``finalize``, ``fast_reduce``, ``recv_mprobe``, ``irecv_bufsz`` are checked
  (an unexpected value is a RuntimeWarning, as in mpi4py) and change nothing:
  a rank always delivers its queued sends at exit, and shmrma's object messages
  have their own protocol.
"""
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import warnings

from ..core import constants, errhandler, settings
from .. import environment
from ..types import msgpickle

# the version of mpi4py whose API shmrma follows (the stand-in's __version__)
MPI4PY_VERSION = "4.1.2"

_DEFAULTS = {"initialize": True, "threads": True, "thread_level": "multiple",
             "finalize": None, "fast_reduce": True, "recv_mprobe": True,
             "irecv_bufsz": 32768, "errors": "exception"}
_THREAD_LEVELS = {"single": constants.THREAD_SINGLE, "funneled": constants.THREAD_FUNNELED,
                  "serialized": constants.THREAD_SERIALIZED,
                  "multiple": constants.THREAD_MULTIPLE}
_ERRORS = {"default": None, "exception": errhandler.ERRORS_RETURN,
           "abort": errhandler.ERRORS_ABORT, "fatal": errhandler.ERRORS_ARE_FATAL}
# the words mpi4py reads as booleans in MPI4PY_RC_* variables
_TRUE, _FALSE = ("true", "yes", "on", "y", "1"), ("false", "no", "off", "n", "0")


def install():
    """Make this rank's ``mpi4py.MPI`` shmrma's MPI, unless SHMRMA_MPI4PY=0. A rank
    forked from a process that had loaded the installed one (a test session that
    calls shmrma.launch) drops it from its modules, so that its imports find ours."""
    if not settings.mpi4py_alias():
        return
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    inherited = sys.modules.get("mpi4py.MPI")
    if inherited is not None and inherited.__name__ == "mpi4py.MPI":
        del sys.modules["mpi4py.MPI"]
        package = sys.modules.get("mpi4py")
        if getattr(package, "MPI", None) is inherited:
            del package.MPI


class _Finder(importlib.abc.MetaPathFinder):
    """Answers ``mpi4py.MPI``, and ``mpi4py`` itself where it is not installed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "mpi4py.MPI":
            return importlib.util.spec_from_loader(fullname, _MPILoader())
        if fullname == "mpi4py" and importlib.machinery.PathFinder.find_spec(
                fullname) is None:
            return importlib.util.spec_from_loader(fullname, _StandInLoader(),
                                                   is_package=True)
        return None


class _MPILoader(importlib.abc.Loader):
    """Gives shmrma's MPI module for ``mpi4py.MPI``, started as ``mpi4py.rc`` says."""

    def create_module(self, spec):
        from .. import MPI
        return MPI

    def exec_module(self, module):
        start(sys.modules.get("mpi4py.rc"))


class _StandInLoader(importlib.abc.Loader):
    """The ``mpi4py`` package where mpi4py is not installed: ``rc`` and ``MPI``."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__version__ = MPI4PY_VERSION
        module.rc = sys.modules["mpi4py.rc"] = Rc()
        module.__all__ = ["MPI"]


class Rc:
    """mpi4py's runtime configuration options (``mpi4py.rc``), where the stand-in
    package holds them: the same names, defaults and checks."""

    def __init__(self, **kwargs):
        vars(self).update(_DEFAULTS)
        self(**kwargs)

    def __setattr__(self, name, value):
        if name not in _DEFAULTS:
            raise TypeError("object has no attribute %r" % name)
        super().__setattr__(name, value)

    def __call__(self, **kwargs):
        for name in kwargs:
            if name not in _DEFAULTS:
                raise TypeError("unexpected argument %r" % name)
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __repr__(self):
        return "<mpi4py.rc>"


# --- what rc asks for ------------------------------------------------------------

def start(rc):
    """Start MPI as mpi4py would at its import, with ``rc`` (None: the defaults)."""
    options = {name: _option(rc, name) for name in _DEFAULTS}
    initialize = _boolean(options, "initialize", True)
    threads = _boolean(options, "threads", True)
    level = _choice(options, "thread_level", _THREAD_LEVELS, "multiple")
    handler = _choice(options, "errors", _ERRORS, "exception")
    if options["finalize"] is not None:
        _boolean(options, "finalize", initialize)
    _boolean(options, "fast_reduce", True)
    _boolean(options, "recv_mprobe", True)
    bufsz = options["irecv_bufsz"]
    if type(bufsz) is not int or bufsz < 0:
        _warn("irecv_bufsz", bufsz)
    msgpickle.reread_environment()
    _set_policy(handler)
    environment.uninitialized()
    if initialize:
        environment.Init_thread(level if threads else constants.THREAD_SINGLE)


def _set_policy(handler):
    """The error handler of the predefined communicators and every object made next."""
    from ..comm.intracomm import COMM_SELF, COMM_WORLD
    errhandler.set_policy(handler)
    for comm in (COMM_SELF, COMM_WORLD):
        comm.Set_errhandler(errhandler.for_new(errhandler.ERRORS_ARE_FATAL))


def _option(rc, name):
    """rc's value of ``name``, or the MPI4PY_RC_<NAME> variable's, which wins (and is
    written back into rc), as mpi4py reads them."""
    text = os.environ.get("MPI4PY_RC_" + name.upper())
    if text is None:
        return getattr(rc, name, _DEFAULTS[name])
    value = _from_text(text, _DEFAULTS[name])
    try:
        setattr(rc, name, value)
    except (AttributeError, TypeError):
        pass
    return value


def _from_text(text, default):
    word = text.strip().lower()
    if type(default) is int and word.isdigit():
        return int(word)
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    return text.lower()


def _boolean(options, name, default):
    value = options[name]
    if value in (True, "yes"):
        return True
    if value in (False, "no"):
        return False
    _warn(name, value)
    return default


def _choice(options, name, choices, default):
    value = options[name]
    if isinstance(value, str) and value in choices:
        return choices[value]
    _warn(name, value)
    return choices[default]


def _warn(name, value):
    warnings.warn("mpi4py.rc.%s: unexpected value %r" % (name, value), RuntimeWarning,
                  stacklevel=2)
