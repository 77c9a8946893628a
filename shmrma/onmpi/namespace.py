"""``from shmrma import MPI`` on the mpi backend: mpi4py's namespace with shmrma's
extensions (docs/api.md) in place of the classes they extend. Names only."""
# flake8: noqa: F401
from mpi4py import MPI as _mpi
from mpi4py.MPI import *  # noqa: F403
from mpi4py.MPI import Exception

from ..rma.counters import MODE_WIN_ACCUMULATE, MODE_WIN_GET, MODE_WIN_PUT
from ..types.datatype import HANDLE_SYNC
from ..types.synchandle import SYNC_NULL, Sync
from .comm import Intracomm
from .errors import ERR_WIN_COUNTER
from .requests import Prequest, Request
from .win import WIN_NULL, Win

COMM_WORLD = Intracomm(_mpi.COMM_WORLD)
COMM_SELF = Intracomm(_mpi.COMM_SELF)
