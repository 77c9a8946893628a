"""Passive target synchronization (MPI-3.1 §11.5.3, §11.5.4): Lock, Unlock,
Lock_all, Unlock_all, the flushes and Sync.

Each rank's window lock is a fair reader-writer ticket lock in its control
block (Mellor-Crummey and Scott, as in Open MPI's osc/sm): a ticket from one
counter, writers admitted by the ``write`` word, readers by the ``read`` word.
It is FIFO, so neither readers nor writers starve, and releases add instead of
storing, so a release never wipes a concurrent arrival (a stored one can). The
target takes no part (R122). RMA completes when its call returns, so a flush
is a memory fence.

Every call tries the C fast path first (fastpath.py); a lock whose ticket is
not admitted within its spin comes back here to be waited for with the job's
abort and dead-peer checks.
"""
from ..core import atomic, constants, errors, job
from ..core.constants import LOCK_EXCLUSIVE, LOCK_SHARED
from . import fastpath
from .assertions import MODE_NOCHECK, checked
from .control import OFF_EXPOSED, OFF_LOCK_READ, OFF_LOCK_TICKET, OFF_LOCK_WRITE
from .epoch import (HELD_EXCLUSIVE, HELD_NOCHECK, HELD_SHARED, LOCK_ALL_HELD,
                    LOCK_ALL_NOCHECK)

_HELD = {LOCK_EXCLUSIVE: HELD_EXCLUSIVE, LOCK_SHARED: HELD_SHARED}


class WindowLock:
    """The reader-writer ticket lock of one rank's window."""

    def __init__(self, state, rank):
        base = state.control_of(rank)
        self.ticket = base + OFF_LOCK_TICKET
        self.read = base + OFF_LOCK_READ
        self.write = base + OFF_LOCK_WRITE
        self.rank = rank
        self.state = state
        self.mine = state.hold_cell(state.rank, rank)   # what this rank holds on it
        # a correct program frees the window (a collective) before any rank exits, so
        # any member's exit ends the wait
        self.peers = state.world_ranks

    def _await(self, cell, ticket, kind):
        job.wait_until(cell, lambda value: value == ticket,
                       lambda: "%s lock on rank %d's window (%s)"
                       % (kind, self.rank, self.holders()), self.peers)

    def holders(self):
        """Who holds this lock now, in words (for the --timeout report)."""
        held = {HELD_EXCLUSIVE: [], HELD_SHARED: []}
        for holder in range(len(self.state.sizes)):
            kind = atomic.load32(self.state.hold_cell(holder, self.rank))
            if kind in held:
                held[kind].append(str(holder))
        if held[HELD_EXCLUSIVE]:
            return "held exclusively by rank %s" % held[HELD_EXCLUSIVE][0]
        if held[HELD_SHARED]:
            return "held shared by rank%s %s" % ("s" * (len(held[HELD_SHARED]) > 1),
                                                  ", ".join(held[HELD_SHARED]))
        return "held by nobody: it waits behind earlier requests for it"

    def acquire(self, held):
        self.admit(atomic.fetch_add32(self.ticket, 1), held)

    def admit(self, ticket, held):
        """Wait until ``ticket`` (already drawn) is let in as HELD_SHARED or HELD_EXCLUSIVE."""
        if held == HELD_EXCLUSIVE:
            self._await(self.write, ticket, "an exclusive")
        else:
            self._await(self.read, ticket, "a shared")
            atomic.cell_add(self.read, 1)
        atomic.store32(self.mine, held)

    def release(self, held):
        atomic.store32(self.mine, 0)
        if held == HELD_EXCLUSIVE:
            atomic.cell_add(self.read, 1)
        atomic.cell_add(self.write, 1)


def _check_unexposed(state, ranks, held):
    """ERR_RMA_CONFLICT, with the locks of ``ranks`` given back, when the last of them
    is exposed by a Post (R102; active._expose raises the flag before reading the lock)."""
    if atomic.load32(state.control_of(ranks[-1]) + OFF_EXPOSED):
        for rank in ranks:
            WindowLock(state, rank).release(held)
        errors.fail(errors.ERR_RMA_CONFLICT, "Lock of rank %d's window while it is exposed "
                    "by a Post (between its Post and Wait); a window may not be locked and "
                    "exposed at the same time" % ranks[-1])


def _lock_type(lock_type):
    if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
        errors.fail(errors.ERR_LOCKTYPE, "lock_type %r is neither LOCK_EXCLUSIVE nor "
                    "LOCK_SHARED" % (lock_type,))
    return lock_type


_fast_flush = fastpath.flush
_fast_lock, _fast_unlock = fastpath.lock, fastpath.unlock
_fast_lock_all, _fast_unlock_all = fastpath.lock_all, fastpath.unlock_all


class PassiveTarget:
    """Mixin of Win. The flushes try the fast path first (fastpath.py), which is
    the memory fence plus the R106 check."""

    _fast = None    # the window's fastpath table (rma.Communication binds it too)

    def Lock(self, rank, lock_type=LOCK_EXCLUSIVE, assertion=0):
        """Begin an RMA access epoch at the target process."""
        done = _fast_lock(self._sync, rank, lock_type, assertion)
        if done is True:
            return
        state = self._s
        if done is not False:       # a ticket the fast path drew: wait for it here
            held = _HELD[lock_type]
            WindowLock(state, rank).admit(done, held)
            _check_unexposed(state, [rank], held)
            state.epoch.opened_lock(rank, held)
            return
        rank = state.check_rank(rank, "Lock rank")
        _lock_type(lock_type)
        assertion = checked(assertion, "Lock")
        if rank == constants.PROC_NULL:
            return
        state.epoch.before_lock(rank)
        if assertion & MODE_NOCHECK:
            held = HELD_NOCHECK
        else:
            held = _HELD[lock_type]
            WindowLock(state, rank).acquire(held)
            _check_unexposed(state, [rank], held)
        state.epoch.opened_lock(rank, held)

    def Unlock(self, rank):
        """Complete an RMA access epoch at the target process."""
        if _fast_unlock(self._sync, rank):
            return
        state = self._s
        rank = state.check_rank(rank, "Unlock rank")
        if rank == constants.PROC_NULL:
            return
        state.epoch.before_unlock(rank)
        atomic.fence()
        held = state.epoch.closed_lock(rank)
        if held != HELD_NOCHECK:
            WindowLock(state, rank).release(held)

    def Lock_all(self, assertion=0):
        """Begin an RMA access epoch at all processes (shared locks)."""
        done = _fast_lock_all(self._sync, assertion)
        if done is True:
            return
        state = self._s
        if done is not False:       # ranks below `first` held; `first` drew `ticket`
            first, ticket = done
            WindowLock(state, first).admit(ticket, HELD_SHARED)
            _check_unexposed(state, list(range(first + 1)), HELD_SHARED)
            self._lock_all_from(state, first + 1)
            return
        assertion = checked(assertion, "Lock_all")
        state.epoch.before_lock_all()
        if assertion & MODE_NOCHECK:
            state.epoch.table.lock_all = LOCK_ALL_NOCHECK
            return
        self._lock_all_from(state, 0)

    @staticmethod
    def _lock_all_from(state, first):
        """Take the shared locks of ranks ``first``.. in rank order (those below are held)."""
        for rank in range(first, len(state.sizes)):
            WindowLock(state, rank).acquire(HELD_SHARED)
            _check_unexposed(state, list(range(rank + 1)), HELD_SHARED)
        state.epoch.table.lock_all = LOCK_ALL_HELD

    def Unlock_all(self):
        """Complete an RMA access epoch at all processes."""
        if _fast_unlock_all(self._sync):
            return
        state = self._s
        state.epoch.before_unlock_all()
        atomic.fence()
        if state.epoch.table.lock_all == LOCK_ALL_HELD:
            for rank in range(len(state.sizes)):
                WindowLock(state, rank).release(HELD_SHARED)
        state.epoch.lock_all = False

    def Flush(self, rank):
        """Complete all outstanding RMA operations at a target (a memory fence here)."""
        if not _fast_flush(self._fast, rank):
            self._flush(rank, "Flush")

    def Flush_local(self, rank):
        """Complete locally all outstanding RMA operations at a target (a memory fence)."""
        if not _fast_flush(self._fast, rank):
            self._flush(rank, "Flush_local")

    def Flush_all(self):
        """Complete all outstanding RMA operations at all targets (a memory fence)."""
        if not _fast_flush(self._fast, None):
            self._flush(None, "Flush_all")

    def Flush_local_all(self):
        """Complete locally all outstanding RMA operations at all targets (a memory fence)."""
        if not _fast_flush(self._fast, None):
            self._flush(None, "Flush_local_all")

    def Sync(self):
        """Synchronize public and private copies of the window (a memory fence)."""
        if not _fast_flush(self._fast, None):
            self._flush(None, "Sync")

    def _flush(self, rank, call):
        state = self._s
        if self._fast is None:
            self._fast = fastpath.bind(state)
        if rank is not None:
            rank = state.check_rank(rank, "%s rank" % call)
        state.epoch.check_flush(rank, call)
        atomic.fence()
