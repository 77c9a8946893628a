"""Active target synchronization (MPI-3.1 §11.5.1, §11.5.2): Fence, and
Post/Start/Complete/Wait/Test.

Every RMA call is complete when it returns, so a Fence is a memory fence
plus a barrier over the window's group; it is always a barrier, even with
MODE_NOPRECEDE (A34: a store made before it must be seen after it).

Post/Start match per pair of ranks, never through a count of posts (a count lets
a Post meant for another epoch satisfy a Start): the post matrix holds, for every
(origin, target), how many Posts of the
target included the origin, and each origin counts the ones its Starts used,
so the k-th Start of an origin towards a target pairs with that target's k-th
Post towards it (R69, R91). Post never blocks (R86); Start waits for the
Posts of its group (R84 allows it); Complete only counts itself into every
target's completes cell and does not wait for the target (R85, R148); Wait
blocks until the cell has counted a Complete from every origin of the Post
group (R88), Test asks the same without blocking (R89). Counts wrap at 2**32
and are compared by difference.
"""
from .control import (COUNT_WRAP, OFF_COMPLETES, OFF_EXPOSED, OFF_LOCK_TICKET,
                      OFF_LOCK_WRITE, count_reached)
from ..core import atomic, errors, job
from . import fastpath, winbarrier
from .assertions import MODE_NOCHECK, MODE_NOPRECEDE, MODE_NOSUCCEED, checked

_fast_start, _fast_complete = fastpath.start, fastpath.complete
_fast_post, _fast_wait, _fast_test = fastpath.post, fastpath.wait, fastpath.test


class ActiveTarget:
    """Mixin of Win. Every call tries the C fast path first (fastpath.py)."""

    _sync = None    # the window's fastpath table (window.Win._from_state sets it)

    def Fence(self, assertion=0):
        """Perform an MPI fence synchronization on a window: a barrier of its group."""
        # every RMA call is complete when it returns: a Fence is the window barrier
        winbarrier.barrier(self._s, self._sync, assertion, "Fence")

    # --- access epochs: Start and Complete ---
    def Start(self, group, assertion=0):
        """Start an RMA access epoch to the processes of ``group``; wait for their Post."""
        if _fast_start(self._sync, group, assertion):
            return
        state = self._s
        targets = state.window_ranks(group, "Start")
        assertion = checked(assertion, "Start")
        epoch = state.epoch
        epoch.before_start()
        table = epoch.table
        for target in targets:
            # NOCHECK: the matching Post has happened (R114); count it, do not wait
            if not assertion & MODE_NOCHECK:
                _await_post(state, state.post_cell(state.rank, target),
                            table.posts_used(target), target)
            table.use_post(target)
        atomic.fence()
        epoch.opened_start(targets)

    def Complete(self):
        """Complete an RMA access epoch begun with Start; the targets are not waited for."""
        if _fast_complete(self._sync):
            return
        state = self._s
        state.epoch.before_complete()
        atomic.fence()      # every RMA of the epoch is visible before it is counted
        for target in state.epoch.closed_start():
            atomic.cell_add(state.control_of(target) + OFF_COMPLETES, 1)

    # --- exposure epochs: Post, Wait and Test ---
    def Post(self, group, assertion=0):
        """Start an RMA exposure epoch for the processes of ``group``; never blocks."""
        if _fast_post(self._sync, group, assertion):
            return
        state = self._s
        origins = state.window_ranks(group, "Post")
        checked(assertion, "Post")
        epoch = state.epoch
        epoch.before_post()
        _expose(state)
        table = epoch.table
        table.completes_due = (table.completes_due + len(origins)) % COUNT_WRAP
        table.post_group = origins
        atomic.fence()      # the owner's stores before the Post reach the origins (R120)
        for origin in origins:
            atomic.cell_add(state.post_cell(origin, state.rank), 1)

    def Wait(self):
        """Complete an RMA exposure epoch begun with Post: wait for the origins' Complete."""
        if _fast_wait(self._sync):
            return
        state = self._s
        epoch = state.epoch
        epoch.before_wait("Wait")
        job.wait_until(_completes_cell(state),
                       lambda count: count_reached(count, epoch.table.completes_due),
                       lambda: _waiting_for(state),
                       [state.world_ranks[r] for r in epoch.post_group])
        _end_exposure(state)

    def Test(self):
        """Test whether an RMA exposure epoch has completed; if so, end it as Wait does."""
        done = _fast_test(self._sync)
        if done is not None:
            return done
        state = self._s
        epoch = state.epoch
        epoch.before_wait("Test")
        if not count_reached(atomic.load32(_completes_cell(state)), epoch.table.completes_due):
            return False
        _end_exposure(state)
        return True


def _end_exposure(state):
    atomic.fence()      # the origins' RMA are visible to local loads (R88)
    atomic.store32(state.control_of(state.rank) + OFF_EXPOSED, 0)
    state.epoch.table.post_group = None


def _completes_cell(state):
    return state.control_of(state.rank) + OFF_COMPLETES


def _await_post(state, cell, used, target):
    """Wait until the post matrix cell counts more Posts than ``used``."""
    job.wait_until(cell, lambda value: value % COUNT_WRAP != used,
                   lambda: "the Post of rank %d matching this rank's Start" % target,
                   [state.world_ranks[target]])


def _waiting_for(state):
    return "Wait for the Complete of origins %s" % list(state.epoch.post_group)


def _expose(state):
    """Mark this rank exposed; ERR_RMA_CONFLICT when its window is locked (R102).

    The flag goes up before the lock words are read, and Lock reads the flag
    after taking the lock, so one of two racing calls always sees the other."""
    control = state.control_of(state.rank)
    atomic.store32(control + OFF_EXPOSED, 1)
    if atomic.load32(control + OFF_LOCK_TICKET) != atomic.load32(control + OFF_LOCK_WRITE):
        atomic.store32(control + OFF_EXPOSED, 0)
        errors.fail(errors.ERR_RMA_CONFLICT, "Post while this rank's window is locked by a "
                    "Lock or Lock_all epoch; a window may not be locked and exposed at the "
                    "same time")
