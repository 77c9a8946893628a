"""Passive target synchronization (MPI-3.1 §11.5.3, §11.5.4): Lock, Unlock,
Lock_all, Unlock_all, the flushes and Sync.

Each rank's window lock is a fair reader-writer ticket lock in its control
block (Mellor-Crummey and Scott, as in Open MPI's osc/sm): a ticket from one
counter, writers admitted by the ``write`` word, readers by the ``read`` word.
It is FIFO, so neither readers nor writers starve, and releases add instead of
storing, so a release never wipes a concurrent arrival (lessons 15). The
target takes no part (R122). RMA completes when its call returns, so a flush
is a memory fence.
"""
from . import atomic, constants, errors, fastpath, job
from .assertions import MODE_NOCHECK, checked

LOCK_EXCLUSIVE = 234
LOCK_SHARED = 235


class WindowLock:
    """The reader-writer ticket lock of one rank's window."""

    def __init__(self, state, rank):
        from .window import OFF_LOCK_READ, OFF_LOCK_TICKET, OFF_LOCK_WRITE
        base = state.control_of(rank)
        self.ticket = base + OFF_LOCK_TICKET
        self.read = base + OFF_LOCK_READ
        self.write = base + OFF_LOCK_WRITE
        self.rank = rank

    def _await(self, cell, ticket, kind):
        while True:
            value = atomic.load32(cell)
            if value == ticket:
                return
            job.wait_cell(cell, value, lambda: "a %s lock on rank %d's window" % (kind, self.rank))

    def acquire(self, lock_type):
        ticket = atomic.fetch_add32(self.ticket, 1)
        if lock_type == LOCK_EXCLUSIVE:
            self._await(self.write, ticket, "exclusive")
        else:
            self._await(self.read, ticket, "shared")
            atomic.cell_add(self.read, 1)

    def release(self, lock_type):
        if lock_type == LOCK_EXCLUSIVE:
            atomic.cell_add(self.read, 1)
        atomic.cell_add(self.write, 1)


def _locked_unexposed(state, ranks, lock_type):
    """Take the locks of ``ranks`` in order; ERR_RMA_CONFLICT, with every lock given
    back, when one of those windows is exposed by a Post (R102; active._expose)."""
    from .window import OFF_EXPOSED
    taken = []
    for rank in ranks:
        lock = WindowLock(state, rank)
        lock.acquire(lock_type)
        taken.append(lock)
        if atomic.load32(state.control_of(rank) + OFF_EXPOSED):
            for held in taken:
                held.release(lock_type)
            errors.fail(errors.ERR_RMA_CONFLICT, "Lock of rank %d's window while it is "
                        "exposed by a Post (between its Post and Wait); a window may not be "
                        "locked and exposed at the same time (R102)" % rank)


def _lock_type(lock_type):
    if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
        errors.fail(errors.ERR_LOCKTYPE, "lock_type %r is neither LOCK_EXCLUSIVE nor "
                    "LOCK_SHARED" % (lock_type,))
    return lock_type


_fast_flush = fastpath.flush


class PassiveTarget:
    """Mixin of Win. The flushes try the fast path first (fastpath.py), which is
    the memory fence plus the R106 check."""

    _fast = None    # the window's fastpath table (rma.Communication binds it too)

    def Lock(self, rank, lock_type=LOCK_EXCLUSIVE, assertion=0):
        state = self._s
        rank = state.check_rank(rank, "Lock rank")
        _lock_type(lock_type)
        assertion = checked(assertion, "Lock")
        if rank == constants.PROC_NULL:
            return
        state.epoch.before_lock(rank)
        held = None if assertion & MODE_NOCHECK else lock_type
        if held is not None:
            _locked_unexposed(state, [rank], held)
        state.epoch.opened_lock(rank, held)

    def Unlock(self, rank):
        state = self._s
        rank = state.check_rank(rank, "Unlock rank")
        if rank == constants.PROC_NULL:
            return
        state.epoch.before_unlock(rank)
        atomic.fence()
        held = state.epoch.closed_lock(rank)
        if held is not None:
            WindowLock(state, rank).release(held)

    def Lock_all(self, assertion=0):
        state = self._s
        assertion = checked(assertion, "Lock_all")
        state.epoch.before_lock_all()
        if not assertion & MODE_NOCHECK:
            _locked_unexposed(state, range(len(state.sizes)), LOCK_SHARED)
        state.epoch.lock_all = True
        state.epoch.lock_all_nocheck = bool(assertion & MODE_NOCHECK)

    def Unlock_all(self):
        state = self._s
        state.epoch.before_unlock_all()
        atomic.fence()
        if not state.epoch.lock_all_nocheck:
            for rank in range(len(state.sizes)):
                WindowLock(state, rank).release(LOCK_SHARED)
        state.epoch.lock_all = False

    def Flush(self, rank):
        if not _fast_flush(self._fast, rank):
            self._flush(rank, "Flush")

    def Flush_local(self, rank):
        if not _fast_flush(self._fast, rank):
            self._flush(rank, "Flush_local")

    def Flush_all(self):
        if not _fast_flush(self._fast, None):
            self._flush(None, "Flush_all")

    def Flush_local_all(self):
        if not _fast_flush(self._fast, None):
            self._flush(None, "Flush_local_all")

    def Sync(self):
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
