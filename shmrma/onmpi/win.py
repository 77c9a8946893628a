"""``MPI.Win`` on the mpi backend: mpi4py's window with shmrma's extensions.

A window made here also makes, collectively, what the extensions need: its id
(agreed by a broadcast), its counter window, a duplicate of its communicator for
the window barrier's MPI Ibarrier, and its group.
"""
import uuid

from mpi4py import MPI as _mpi

from .. import errors as shm
from . import errors
from .comm import refusing_handles
from .counters import CounterCalls, CounterWindow
from .extends import Extends
from .winbarrier import BarrierCalls


def _made(name):
    """The window constructor ``name`` that also sets up the extensions on the new window."""
    def make(cls, *args, **kwargs):
        win = getattr(super(Win, cls), name)(*args, **kwargs)
        win._extend()
        return win
    make.__name__, make.__doc__ = name, getattr(_mpi.Win, name).__doc__
    return classmethod(make)


class Win(BarrierCalls, CounterCalls, _mpi.Win, metaclass=Extends):
    """``MPI.Win``: mpi4py's, plus counters, the window barrier and Change_comm."""

    _widens = _mpi.Win

    Create = _made("Create")
    Allocate = _made("Allocate")
    Allocate_shared = _made("Allocate_shared")
    Create_dynamic = _made("Create_dynamic")

    def _extend(self):
        group = self.Get_group()
        comm = _mpi.COMM_WORLD.Create_group(group)
        group.Free()
        self._barrier_comm = comm
        window_id = comm.bcast(uuid.uuid4().hex[:16] if comm.Get_rank() == 0 else None)
        self._counters = CounterWindow(comm, window_id)

    def Free(self):
        counters = self._counters
        if counters is not None and counters.active:
            errors.fail(shm.ERR_RMA_SYNC, "Win.Free: %d synchronization requests on this "
                        "window are started and not completed; complete them with Wait or "
                        "Test first" % len(counters.active))
        if counters is not None:
            self._end_barrier()
            counters.close()
            self._barrier_comm.Free()
            self._counters = self._barrier_comm = None
        super().Free()

    def Change_comm(self, new_comm, peer_rank):
        raise errors.Exception(
            _mpi.ERR_UNSUPPORTED_OPERATION,
            "Win.Change_comm is not available on the mpi backend: MPI-3 cannot move a window "
            "to another communicator (a window's group is fixed at its creation). Free "
            "the window and create one over the new communicator, or run on the "
            "shared-memory backend")


for _name in ("Put", "Get", "Accumulate", "Get_accumulate", "Fetch_and_op",
              "Compare_and_swap", "Rput", "Rget", "Raccumulate", "Rget_accumulate"):
    setattr(Win, _name, refusing_handles(getattr(_mpi.Win, _name)))     # R154

WIN_NULL = Win()
