"""The mpi4py-shaped namespace: ``from shmrma import MPI``. Names only, no logic."""
# flake8: noqa: F401
from .core import settings as _settings

if _settings.backend() == "mpi":
    # mpi4py's namespace with shmrma's extensions; this module gives way to it
    import sys as _sys
    from .onmpi import namespace as _namespace
    _sys.modules[__name__] = _namespace
else:
    from .core.constants import *  # noqa: F403
    from .core.errors import *  # noqa: F403
    from .core.errors import Exception
    from .environment import (Add_error_class, Add_error_code, Add_error_string,
                              Remove_error_class, Remove_error_code, Remove_error_string,
                              Aint_add, Aint_diff, Finalize, Get_error_class,
                              Get_error_string, Get_hw_resource_info, Get_library_version,
                              Get_processor_name, Get_version, Init, Pcontrol, Init_thread,
                              Is_finalized, Is_initialized, Is_thread_main, Query_thread,
                              VERSION, SUBVERSION, Wtick, Wtime, get_vendor,
                              _set_abort_status)
    from .types.memory import Alloc_mem, Free_mem, get_address as Get_address
    from .p2p.request import REQUEST_NULL, Grequest, Prequest, Request, Status
    from .types.status import F_ERROR, F_SOURCE, F_STATUS_SIZE, F_TAG
    from .types.status import handle_of as _handleof
    from .core.attributes import (APPNUM, IO, LASTUSEDCODE, TAG_UB, UNIVERSE_SIZE,
                                  WTIME_IS_GLOBAL)
    from .types.msgpickle import Pickle, pickle
    from .p2p.bsend import (BSEND_OVERHEAD, Attach_buffer, Detach_buffer, Flush_buffer,
                            Iflush_buffer)
    from .comm.comm import Comm
    from .p2p.message import MESSAGE_NO_PROC, MESSAGE_NULL, Message
    from .comm.intercomm import Intercomm
    from .comm import spawn as _spawn  # noqa: F401 - gives Intracomm its Spawn calls
    from .comm.connect import (close_port as Close_port, lookup_name as Lookup_name,
                               open_port as Open_port, publish_name as Publish_name,
                               unpublish_name as Unpublish_name)
    from .comm.intracomm import COMM_NULL, COMM_SELF, COMM_WORLD, Intracomm
    from .comm.commlock import (comm_lock as _comm_lock, commctx_inter as _commctx_inter,
                                commctx_intra as _commctx_intra,
                                lock_table as _comm_lock_table)
    from .comm.topology import Cartcomm, Compute_dims, Topocomm
    from .comm.graph import UNWEIGHTED, WEIGHTS_EMPTY, Distgraphcomm, Graphcomm
    from .comm.group import GROUP_EMPTY, GROUP_NULL, Group
    from .core.info import INFO_ENV, INFO_NULL, Info
    from .types.datatype import *  # noqa: F403
    from .types.datatype import (Datatype, _datatype_create, _datatype_decode, _typealign,
                                 _typecode, _typedict, _typedict_c, _typedict_f)
    from .types.op import *  # noqa: F403
    from .types.op import Op
    from .types.derived import (DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC, DISTRIBUTE_DFLT_DARG,
                                DISTRIBUTE_NONE, ORDER_C, ORDER_F, ORDER_FORTRAN)
    from .types import pack as _pack  # noqa: F401 - gives Datatype its Pack calls
    from .comm.session import SESSION_NULL, Session
    from .core.errhandler import (ERRHANDLER_NULL, ERRORS_ABORT, ERRORS_ARE_FATAL,
                                  ERRORS_RETURN, Errhandler)
    from .rma.assertions import (MODE_NOCHECK, MODE_NOPRECEDE, MODE_NOPUT, MODE_NOSTORE,
                                 MODE_NOSUCCEED)
    from .rma.passive import LOCK_EXCLUSIVE, LOCK_SHARED
    from .rma.counters import (MODE_WIN_ACCUMULATE, MODE_WIN_GET, MODE_WIN_PUT, SYNC_NULL,
                               Sync)
    from .rma.window import (WIN_BASE, WIN_CREATE_FLAVOR, WIN_DISP_UNIT,
                             WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_CREATE, WIN_FLAVOR_DYNAMIC,
                             WIN_FLAVOR_SHARED, WIN_MODEL, WIN_NULL, WIN_SEPARATE,
                             WIN_SIZE, WIN_UNIFIED, Win)
    from .io.file import (DISP_CUR, DISPLACEMENT_CURRENT, FILE_NULL, MAX_DATAREP_STRING,
                          MODE_APPEND, MODE_CREATE, MODE_DELETE_ON_CLOSE, MODE_EXCL,
                          MODE_RDONLY, MODE_RDWR, MODE_SEQUENTIAL, MODE_UNIQUE_OPEN,
                          MODE_WRONLY, SEEK_CUR, SEEK_END, SEEK_SET, File)
    from .io.datarep import Register_datarep


    def __getattr__(name):
        # MPI.buffer / MPI.memory are numpy-backed; build them only when asked for.
        if name in ("buffer", "memory"):
            from .types.memory import buffer_class
            return buffer_class()
        raise AttributeError("module 'shmrma.MPI' has no attribute %r" % name)


# Under SHMRMA_CHECK=1 (shmrma-run --check) the race checker wraps the calls it watches;
# under SHMRMA_TRACE or SHMRMA_PROFILE (--trace, --profile), the recorder every call.
if _settings.checking():
    from .check.hooks import install as _install_race_checker
    _install_race_checker()
if _settings.observing() and _settings.backend() != "mpi":
    from .observe.session import install as _install_recorder
    _install_recorder()
