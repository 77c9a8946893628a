"""Initialization, timers, versions and error strings of the MPI namespace."""
import operator
import socket
import time

from . import __version__
from .core import constants, errors
from .core.settings import supported_thread_level

VERSION = 3
SUBVERSION = 1


# A rank is initialized when it starts, at the level mpi4py asks by default (the
# supported one, None until first asked); mpi4py_alias.py undoes that for
# rc.initialize = False, and Init or Init_thread then chooses the level.
_state = {"initialized": True, "finalized": False, "thread_level": None}


def Init():
    """Initialize the MPI execution environment (as MPICH, at THREAD_SINGLE)."""
    Init_thread(constants.THREAD_SINGLE)


def Init_thread(required=constants.THREAD_MULTIPLE):
    """Initialize with the thread level ``required``; returns the level provided."""
    required = operator.index(required)
    if not constants.THREAD_SINGLE <= required <= constants.THREAD_MULTIPLE:
        errors.fail(errors.ERR_ARG, "Init_thread: required must be THREAD_SINGLE, "
                    "THREAD_FUNNELED, THREAD_SERIALIZED or THREAD_MULTIPLE, not %d" % required)
    if not _state["initialized"]:   # a second Init is harmless, as shmrma always was
        _state["thread_level"] = min(required, supported_thread_level())
    _state["initialized"] = True
    return Query_thread()


def Query_thread():
    """The thread level provided."""
    if _state["thread_level"] is None:
        _state["thread_level"] = supported_thread_level()
    return _state["thread_level"]


def Is_initialized():
    """Whether MPI was initialized."""
    return _state["initialized"]


def Is_finalized():
    """Whether MPI was finalized."""
    return _state["finalized"]


def Finalize():
    """Terminate the MPI execution environment: deliver the sends still queued."""
    from .p2p import transport as mailbox
    mailbox.flush_before_exit()
    _state["finalized"] = True


def uninitialized():
    """Back to the state before Init (mpi4py's rc.initialize = False)."""
    _state["initialized"] = False


def _set_abort_status(status):
    """mpi4py's helper for ``python -m mpi4py``: end the job with ``status`` at exit,
    as ``COMM_WORLD.Abort(status)`` would (0: end normally)."""
    from .core import job
    job.abort_at_exit(operator.index(status))


def Is_thread_main():
    """Indicate whether this thread is the main thread of the process."""
    import threading
    return threading.current_thread() is threading.main_thread()


Wtime = time.perf_counter


def Wtick():
    """Return the resolution of Wtime, in seconds."""
    return time.get_clock_info("perf_counter").resolution


def Get_version():
    """Obtain the version number of the MPI standard: (3, 1)."""
    return (VERSION, SUBVERSION)


def Get_library_version():
    """Obtain the version string of the MPI library (shmrma's)."""
    return "shmrma %s (MPI %d.%d one-sided communication on shared memory)" % (
        __version__, VERSION, SUBVERSION)


def get_vendor():
    """Information about the MPI implementation: ("shmrma", its version tuple)."""
    return ("shmrma", tuple(int(p) for p in __version__.split(".")[:3]))


def Pcontrol(level):
    """Control profiling: a no-op, as shmrma has no profiling layer.

    Profiling control: shmrma has no profiling layer to tell, so the level only
    has to be an int (as MPICH, which ignores it too)."""
    operator.index(level)


def Get_hw_resource_info():
    """Return the hardware resource information: an empty Info.

    MPI-4.1's hardware resource information: none is described (MPICH also
    returns an empty Info)."""
    from .core.info import Info
    return Info.Create()


def Get_processor_name():
    """Obtain the name of the calling processor (the host name)."""
    return socket.gethostname()


def Get_error_class(errorcode):
    """Convert an error code into an error class."""
    return errors.error_class_of(errorcode)


def Get_error_string(errorcode):
    """Return the error string for a given error class or error code."""
    return errors.error_string(errorcode)


def Add_error_class():
    """Add an error class to the known error classes; return it."""
    return errors.add_error_class()


def Add_error_code(errorclass):
    """Add an error code to an error class; return it."""
    return errors.add_error_code(errorclass)


def Add_error_string(errorcode, string):
    """Associate an error string with an error class or error code."""
    errors.add_error_string(errorcode, string)


def Remove_error_class(errorclass):
    """Remove an error class from the known error classes."""
    errors.remove_error_class(errorclass)


def Remove_error_code(errorcode):
    """Remove an error code from the known error codes."""
    errors.remove_error_code(errorcode)


def Remove_error_string(errorcode):
    """Remove the error string of an error class or error code."""
    errors.remove_error_string(errorcode)


def Aint_add(base, disp):
    """Return the sum of base address and displacement."""
    return int(base) + int(disp)


def Aint_diff(addr1, addr2):
    """Return the difference between absolute addresses."""
    return int(addr1) - int(addr2)
