"""``MPI.Win`` on the mpi backend: mpi4py's window with shmrma's extensions.

A window made here also makes, collectively, what the extensions need: its id
(agreed by a broadcast), its counter window, a duplicate of its communicator for
the window barrier's MPI Ibarrier, and its group.
"""
import uuid

from mpi4py import MPI as _mpi

from ..core import errors as shm
from . import errors
from .comm import refuse_typed_handles
from .counters import CounterCalls, CounterWindow, kind_of_call
from .extends import Extends
from .winbarrier import TARGET_AT, BarrierCalls


_SPEC_TYPES = (list, tuple)


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

    def _update_rma_guard(self):
        """RMA calls go through ``_guarded`` while the window barrier or a counter
        epoch needs it, and straight to mpi4py otherwise (a wrapper costs 0.3 us)."""
        on = self._barrier_guard or self._counter_epochs
        for name, position in TARGET_AT.items():
            if not on:
                self.__dict__.pop(name, None)
            elif name not in self.__dict__:
                setattr(self, name, self._guarded(name, position))

    def _guarded(self, name, position):
        call = getattr(type(self), name).__get__(self)
        kind = kind_of_call(name)

        def guarded(*args, **kwargs):
            # (inline, as this runs on every RMA call of the epoch: a spec, a list or
            # a tuple, may be typed HANDLE_SYNC, R154)
            if kwargs or len(args) <= position:
                refuse_typed_handles(name, args, kwargs)
                target = args[position] if len(args) > position else kwargs.get("target_rank")
                if target is None:
                    return call(*args, **kwargs)            # mpi4py's TypeError
            else:
                for arg in args:
                    if type(arg) in _SPEC_TYPES:
                        refuse_typed_handles(name, args, kwargs)
                        break
                target = args[position]
            if self._barrier_guard:
                self._wait_entered(target)                  # A3
            elif not self._barrier_epoch and not self._covered.get(target, 0) & kind:
                self._refuse_uncovered(name, target)        # A14
            return call(*args, **kwargs)
        return guarded

    def Free(self):
        """Free a window, its counters too; collective."""
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
        """Change the window's communicator: unsupported on the mpi backend (it raises)."""
        raise errors.Exception(
            _mpi.ERR_UNSUPPORTED_OPERATION,
            "Win.Change_comm is not available on the mpi backend: MPI-3 cannot move a window "
            "to another communicator (a window's group is fixed at its creation). Free "
            "the window and create one over the new communicator, or run on the "
            "shared-memory backend")


WIN_NULL = Win()
