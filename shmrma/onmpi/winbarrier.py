"""The window barrier (the Ibarrier amendment) on the mpi backend, in MPI-3 calls.

MPICH's Win_start waits for the matching Post, so active-target epochs cannot
express a barrier that returns before the others arrive. The barrier uses a
passive-target epoch instead (Lock_all, shared with the counter epochs):

- ``Ibarrier`` flushes this rank's RMA of the ending phase to every target, then
  publishes "entered barrier k" in its word of the counter window, and starts an
  MPI Ibarrier over the window's group; the request completes when that does
  (every rank flushed), with a Win_sync so their data is visible in local loads.
- RMA issued after ``Ibarrier`` returns waits, the first time it goes to a target
  in the phase, until that target has published k (A3).
- With MODE_NOSUCCEED the epoch ends when the request completes: the window is
  free for other synchronization again.
"""
from mpi4py import MPI as _mpi

from ..core import errors as shm
from . import errors
from .requests import PyRequest, empty, poll_until

_KNOWN = (_mpi.MODE_NOCHECK | _mpi.MODE_NOSTORE | _mpi.MODE_NOPUT | _mpi.MODE_NOPRECEDE
          | _mpi.MODE_NOSUCCEED)
# the position of target_rank among each RMA call's arguments
TARGET_AT = {"Put": 1, "Get": 1, "Accumulate": 1, "Rput": 1, "Rget": 1, "Raccumulate": 1,
              "Get_accumulate": 2, "Rget_accumulate": 2, "Fetch_and_op": 2,
              "Compare_and_swap": 3}


class BarrierRequest(PyRequest):
    def __init__(self, owner, everyone_flushed, succeed):
        self._owner, self._flushed, self._succeed = owner, everyone_flushed, succeed
        self._active = True

    def _ready(self):
        return self._flushed.Test()

    def _complete(self, status):
        empty(status)
        self._active = False
        owner = self._owner
        owner._pending_barrier = None
        owner.Sync()            # the others' flushed RMA, visible to this rank's loads
        if not self._succeed:
            owner._leave_barrier_epoch()

    @errors.translated
    def Cancel(self):
        shm.fail(shm.ERR_REQUEST, "a window barrier request cannot be cancelled")


class BarrierCalls:
    """Mixin of the backend's Win: Ibarrier and Barrier on the window."""

    _pending_barrier = None
    _barrier_epoch = False
    _barrier_guard = False      # RMA waits for its target to enter the phase (A3)
    _phase = 0

    @errors.translated
    def Ibarrier(self, assertion=0):
        """Nonblocking window barrier among all members of the window; return a Request."""
        if assertion & ~_KNOWN:
            shm.fail(shm.ERR_ASSERT, "Ibarrier: assertion %#x has bits that are not "
                     "MODE_NOCHECK, MODE_NOSTORE, MODE_NOPUT, MODE_NOPRECEDE or "
                     "MODE_NOSUCCEED" % assertion)
        counters = self._extension("Ibarrier")
        if self._pending_barrier is not None:
            self._pending_barrier.Wait()
        if self._barrier_epoch:
            self.Flush_all()        # my RMA of the ending phase is complete at its targets
        else:
            self._open_counter_epoch()
            self._barrier_epoch = True
        self._phase += 1
        counters.publish_phase(self._phase)
        succeed = not assertion & _mpi.MODE_NOSUCCEED
        self._entered, self._barrier_guard = {}, succeed
        self._update_rma_guard()
        request = BarrierRequest(self, self._barrier_comm.Ibarrier(), succeed)
        self._pending_barrier = request
        return request

    def Barrier(self, assertion=0):
        """Window barrier among all members of the window."""
        self.Ibarrier(assertion).Wait()

    def _leave_barrier_epoch(self):
        self._barrier_epoch = False
        self._close_counter_epoch()

    def _end_barrier(self):
        """At Free: finish the last barrier and its epoch."""
        if self._pending_barrier is not None:
            self._pending_barrier.Wait()
        if self._barrier_epoch:
            self._leave_barrier_epoch()

    def _wait_entered(self, target):
        """The first RMA to ``target`` in a phase waits until it entered (A3)."""
        if self._entered.get(target) != self._phase:
            counters, phase = self._counters, self._phase
            poll_until(lambda: counters.phase_of(target) >= phase)
            self._entered[target] = phase
