"""Initialization, timers, versions and error strings of the MPI namespace."""
import operator
import socket
import time

from . import __version__, errors

VERSION = 3
SUBVERSION = 1

_state = {"initialized": True, "finalized": False}


def Init():
    _state["initialized"] = True


def Init_thread(required=3):
    Init()
    return required


def Query_thread():
    return 3


def Is_initialized():
    return _state["initialized"]


def Is_finalized():
    return _state["finalized"]


def Finalize():
    from . import mailbox
    mailbox.flush_before_exit()
    _state["finalized"] = True


def Is_thread_main():
    import threading
    return threading.current_thread() is threading.main_thread()


Wtime = time.perf_counter


def Wtick():
    return time.get_clock_info("perf_counter").resolution


def Get_version():
    return (VERSION, SUBVERSION)


def Get_library_version():
    return "shmrma %s (MPI %d.%d one-sided communication on shared memory)" % (
        __version__, VERSION, SUBVERSION)


def get_vendor():
    return ("shmrma", tuple(int(p) for p in __version__.split(".")[:3]))


def Pcontrol(level):
    """Profiling control: shmrma has no profiling layer to tell, so the level only
    has to be an int (as MPICH, which ignores it too)."""
    operator.index(level)


def Get_hw_resource_info():
    """MPI-4.1's hardware resource information: none is described (MPICH also
    returns an empty Info)."""
    from .info import Info
    return Info.Create()


def Get_processor_name():
    return socket.gethostname()


def Get_error_class(errorcode):
    return errors.error_class_of(errorcode)


def Get_error_string(errorcode):
    return errors.error_string(errorcode)


def Add_error_class():
    return errors.add_error_class()


def Add_error_code(errorclass):
    return errors.add_error_code(errorclass)


def Add_error_string(errorcode, string):
    errors.add_error_string(errorcode, string)


def Remove_error_class(errorclass):
    errors.remove_error_class(errorclass)


def Remove_error_code(errorcode):
    errors.remove_error_code(errorcode)


def Remove_error_string(errorcode):
    errors.remove_error_string(errorcode)


def Aint_add(base, disp):
    return int(base) + int(disp)


def Aint_diff(addr1, addr2):
    return int(addr1) - int(addr2)
