"""Which epochs are open on a window at this rank, and what they allow
(MPI-3.1 §11.5; R65, R66, R68, R72, R78, R79, R82, R90, R94, R106, A34).

A misuse raises ERR_RMA_SYNC before anything changes. The checks sit on the
hot path of every communication call, so the common case is one test. The
state lives in the window's fast path table (fastpath.py): the C fast path
checks calls against it and opens and closes epochs in it itself, so this
class keeps no copy of its own and the two never disagree.
"""
from ..core import constants, errors
from . import fastpath

# What a Lock epoch to a target holds (the table's locked(rank))
HELD_NONE, HELD_NOCHECK, HELD_SHARED, HELD_EXCLUSIVE = range(4)
# Table.lock_all
LOCK_ALL_HELD, LOCK_ALL_NOCHECK = 1, 2


def sync_error(message):
    errors.fail(errors.ERR_RMA_SYNC, message)


def _table_flag(name, doc):
    """A flag kept in the fast path's table, which checks calls against it too."""
    def get(self):
        return bool(getattr(self.table, name))

    def put(self, value):
        setattr(self.table, name, 1 if value else 0)
    return property(get, put, doc=doc)


class Epoch:
    fence_open = _table_flag("fence_open", "after a Fence without NOSUCCEED")
    rma_since_fence = _table_flag("rma_since_fence", "RMA issued since the last Fence")
    lock_all = _table_flag("lock_all", "a Lock_all epoch is open")
    start_open = _table_flag("start_open", "a Start epoch is open (its group may be empty)")

    def __init__(self, window):
        self.window = window
        self.nranks = len(window.sizes)
        self.table = fastpath.Table(self.nranks)

    # --- what is open ---
    @property
    def locks(self):
        """{target rank: HELD_*} of the open Lock epochs."""
        table = self.table
        if not table.nlocked:
            return {}
        return {rank: table.locked(rank) for rank in range(self.nranks) if table.locked(rank)}

    @property
    def start_group(self):
        """The targets of the open Start epoch."""
        if not self.table.start_open:
            return ()
        return tuple(rank for rank in range(self.nranks) if self.table.started(rank))

    @property
    def post_group(self):
        """The origins of the open exposure epoch, or None."""
        return self.table.post_group

    def covers_passively(self, rank):
        return self.table.lock_all or self.table.locked(rank)

    # --- opening and closing, for the Python paths ---
    def opened_lock(self, rank, held):
        self.table.set_locked(rank, held)

    def closed_lock(self, rank):
        """The HELD_* of the Lock epoch just closed."""
        held = self.table.locked(rank)
        self.table.set_locked(rank, HELD_NONE)
        return held

    def opened_start(self, ranks):
        for rank in ranks:
            self.table.set_started(rank, True)
        self.start_open = True

    def closed_start(self):
        """The targets of the Start epoch just closed."""
        ranks = self.start_group
        for rank in ranks:
            self.table.set_started(rank, False)
        self.start_open = False
        return ranks

    # --- counter epochs (Sync_ops_init, A14) ---
    def open_counter_epoch(self, target, mode):
        """The Python path of a Sync_ops request's Start (csrc/rma/counters.c's check)."""
        self._no_start("Start of a Sync_ops request")
        self._leave_fence("Start of a Sync_ops request")
        self.table.open_counter_epoch(target, mode)

    @property
    def counter_targets(self):
        """The targets of the active Sync_ops requests."""
        table = self.table
        if not table.ncounter:
            return []
        return [rank for rank in range(self.nranks) if table.counter_kinds(rank)]

    # --- communication calls ---
    def check_access(self, rank, call, kind):
        """An RMA call to ``rank`` of ``kind`` (a MODE_WIN_* bit) needs an access epoch
        that covers it (R65, R82, R165)."""
        table = self.table
        if table.lock_all or table.fence_open or table.locked(rank) or table.started(rank):
            return
        if table.ncounter and table.counter_kinds(rank) & kind:
            return
        if table.start_open:
            sync_error("%s to rank %d, which is not in the group of the open Start epoch "
                       "(%s)" % (call, rank, list(self.start_group)))
        sync_error("%s to rank %d outside an access epoch: open one first with Fence(), "
                   "Start(group), Lock(%d) or Lock_all()" % (call, rank, rank))

    def issued(self):
        """A call passed every check: it counts as RMA of the current fence epoch."""
        if self.fence_open:
            self.rma_since_fence = True

    def check_some_epoch(self, call):
        """RMA to PROC_NULL needs some open access epoch, whatever it covers (A38)."""
        table = self.table
        if not (table.lock_all or table.nlocked or table.fence_open or table.start_open
                or table.ncounter):
            sync_error("%s to PROC_NULL outside any access epoch: open one first with "
                       "Fence(), Start(group), Lock() or Lock_all()" % call)

    def check_request_access(self, rank, call):
        """Request-based calls are valid only in a passive-target epoch (R53)."""
        if not self.covers_passively(rank):
            sync_error("%s to rank %d needs a passive-target epoch: call Lock(%d) or "
                       "Lock_all() first (request-based RMA is not allowed in fence or "
                       "PSCW epochs)" % (call, rank, rank))

    # --- passive target ---
    def before_lock(self, rank):
        self._no_start("Lock(%d)" % rank)
        if self.lock_all:
            sync_error("Lock(%d) inside Lock_all: Unlock_all() first" % rank)
        if self.table.locked(rank):
            sync_error("rank %d is already locked by this rank; Unlock(%d) first" % (rank, rank))
        self._leave_fence("Lock(%d)" % rank)

    def before_lock_all(self):
        self._no_start("Lock_all")
        if self.lock_all:
            sync_error("Lock_all inside Lock_all: Unlock_all() first")
        if self.table.nlocked:
            sync_error("Lock_all while Lock epochs to ranks %s are open: Unlock them first"
                       % sorted(self.locks))
        self._leave_fence("Lock_all")

    def before_unlock(self, rank):
        if not self.table.locked(rank):
            sync_error("Unlock(%d) without a matching Lock(%d)%s"
                       % (rank, rank, " (this rank is inside Lock_all: use Unlock_all)"
                          if self.lock_all else ""))

    def before_unlock_all(self):
        if not self.lock_all:
            sync_error("Unlock_all without a matching Lock_all")

    def check_flush(self, rank, call):
        """Flushes and Sync are valid only in a passive-target epoch covering the rank (R106)."""
        if rank is None:
            if not (self.lock_all or self.table.nlocked):
                sync_error("%s outside a passive-target epoch: call Lock or Lock_all first"
                           % call)
        elif rank != constants.PROC_NULL and not self.covers_passively(rank):
            sync_error("%s(%d): no Lock or Lock_all epoch covers rank %d" % (call, rank, rank))

    # --- post/start/complete/wait ---
    def _no_start(self, call):
        if self.start_open:
            sync_error("%s inside a Start epoch: call Complete() first" % call)

    def _no_counter_epoch(self, call):
        if self.table.ncounter:
            sync_error("%s while Sync_ops requests to ranks %s are active: complete them "
                       "first (counter epochs may not overlap fence or PSCW epochs)"
                       % (call, self.counter_targets))

    def before_start(self):
        self._no_start("Start")
        self._no_counter_epoch("Start")
        if self.lock_all or self.table.nlocked:
            sync_error("Start inside a passive-target epoch: Unlock/Unlock_all first")
        self._leave_fence("Start")

    def before_complete(self):
        if not self.start_open:
            sync_error("Complete without a matching Start")

    def before_post(self):
        if self.post_group is not None:
            sync_error("Post while this rank is already posted: call Wait() or Test() "
                       "first")
        self._leave_fence("Post")

    def before_wait(self, call):
        if self.post_group is None:
            sync_error("%s without a matching Post%s" % (
                call, "; Test already returned True for the last one" if call == "Test"
                else ""))

    # --- fence ---
    def before_fence(self, noprecede, call="Fence"):
        self._no_counter_epoch(call)
        if self.lock_all or self.table.nlocked:
            sync_error("%s inside a passive-target epoch: close it with Unlock/Unlock_all "
                       "first" % call)
        if self.start_open or self.post_group is not None:
            sync_error("%s inside a post/start/complete/wait epoch: close it with "
                       "Complete/Wait first" % call)
        if noprecede and self.fence_open and self.rma_since_fence:
            sync_error("%s(MODE_NOPRECEDE) but this rank issued RMA since the last Fence "
                       "or barrier (the assertion is false)" % call)

    def after_fence(self, nosucceed):
        self.fence_open = not nosucceed
        self.rma_since_fence = False

    def _leave_fence(self, call):
        if self.fence_open and self.rma_since_fence:
            sync_error("%s while a fence epoch holds RMA not completed by a Fence: call "
                       "Fence() (with MODE_NOSUCCEED) first" % call)
        self.fence_open = False

    # --- freeing ---
    def check_free(self, call="Free"):
        """ERR_RMA_SYNC unless the window is quiet: no epoch, no Ibarrier, no started
        synchronization request (Win.Free, Win.Change_comm)."""
        if self.lock_all or self.table.nlocked:
            sync_error("%s with a passive-target epoch open: Unlock/Unlock_all first" % call)
        if self.start_open:
            sync_error("%s with a Start epoch open: Complete() first" % call)
        if self.post_group is not None:
            sync_error("%s with an exposure epoch open: Wait() first" % call)
        if self.fence_open and self.rma_since_fence:
            sync_error("%s with RMA not completed by a Fence: call Fence() first" % call)
        if self.table.barrier_pending:
            sync_error("%s with an Ibarrier request not completed: Wait for it first" % call)
        if self.table.sync_active:
            sync_error("%s with %d started synchronization requests not completed: "
                       "Wait for them first" % (call, self.table.sync_active))
