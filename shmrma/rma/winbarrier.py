"""The window barrier of the Ibarrier amendment (docs/rules.md, sources):
``win.Ibarrier(assertion)`` -> Request and ``win.Barrier(assertion)``, a
nonblocking fence over the window's group (A1-A3, R166-R172).

Every rank's control block counts the barriers it entered. Ibarrier is a Fence
that does not wait: the same epoch rules and assertions, RMA issued before it
is complete at the origin when it returns (every call is complete at return,
R167), the rank counts itself in and rings every member's doorbell, and a
fence-like epoch to every member opens at once. RMA issued before the request
completes waits, where needed, until its target has entered the same barrier
(A3, R169: the fast path declines and rma.Communication._access waits). The
request completes when every member has entered (R168): then every RMA any of
them issued before its Ibarrier is complete here. Blocking and nonblocking
forms mix in one barrier (R170); the request cannot be freed or cancelled
(R171). Ibarrier and the request's Wait and Test run in C (csrc/rma/winbarrier.c)
and come here when C declines.
"""
from ..core import atomic, errors, job
from .assertions import MODE_NOPRECEDE, MODE_NOSUCCEED, checked
from .control import COUNT_WRAP, OFF_BARRIER_ENTERED, count_reached
from ..p2p.request import Request

if atomic.BACKEND == "c":
    from .. import _native
    _BarrierCore = _native.BarrierCore
else:
    class _BarrierCore:
        """csrc/rma/winbarrier.c's BarrierCore on the fallback: every call runs in Python."""

def _entered(state, rank):
    """Has ``rank`` entered the barrier this rank entered last?"""
    return count_reached(atomic.load32(state.control_of(rank) + OFF_BARRIER_ENTERED),
                         state.epoch.table.barrier_seq)


def await_entry(state, rank):
    """Block until ``rank`` entered this rank's latest barrier (RMA after Ibarrier, A3)."""
    job.wait_until(state.control_of(rank) + OFF_BARRIER_ENTERED,
                   lambda count: count_reached(count, state.epoch.table.barrier_seq),
                   lambda: "rank %d to enter the window barrier (RMA after Ibarrier waits "
                   "for its target)" % rank, [state.world_ranks[rank]])


class BarrierRequest(_BarrierCore, Request):
    """The request of Ibarrier: complete once every member entered the barrier."""

    def __init__(self, state, seq):
        self._null = False
        self._done = False
        self._state = state
        self._table = state.epoch.table
        self._seq = seq

    def _poll(self):
        if not self._done:
            state = self._state
            if state.epoch.table.barrier_seq != self._seq:
                self._done = True       # a later barrier of this rank completes this one
            elif all(_entered(state, rank) for rank in range(len(state.sizes))):
                atomic.fence()          # the members' RMA before the barrier is visible
                state.epoch.table.barrier_pending = 0
                self._done = True
        return self._done

    def _describe(self):
        state = self._state
        missing = [rank for rank in range(len(state.sizes)) if not _entered(state, rank)]
        return "the window barrier (Ibarrier) of ranks %s" % missing

    def _peers(self):
        return self._state.world_ranks

    def Free(self):
        errors.fail(errors.ERR_REQUEST, "an Ibarrier request cannot be freed; complete it "
                    "with Wait or Test")

    def Cancel(self):
        errors.fail(errors.ERR_REQUEST, "an Ibarrier request cannot be cancelled")


def enter(state, assertion, call):
    """Count this rank into its next window barrier, under the fence's rules: the
    barrier's number (the Python path of Fence, Barrier and Ibarrier)."""
    assertion = checked(assertion, call)
    epoch = state.epoch
    epoch.before_fence(bool(assertion & MODE_NOPRECEDE), call)
    table = epoch.table
    atomic.fence()
    table.barrier_seq = (table.barrier_seq + 1) % COUNT_WRAP
    table.barrier_pending = 1
    atomic.cell_add(state.control_of(state.rank) + OFF_BARRIER_ENTERED, 1)
    world = job.current()
    for member in state.world_ranks:    # members waiting on their doorbell re-check
        if member != world.rank:
            atomic.cell_add(world.doorbell(member), 1)
    epoch.after_fence(bool(assertion & MODE_NOSUCCEED))
    return table.barrier_seq


def barrier(state, table, assertion, call):
    """Fence and Barrier: enter the window barrier and wait until every member did."""
    entered = _fast_barrier(table, assertion)
    if entered is True:
        return
    if entered is False:
        entered = enter(state, assertion, call)
    BarrierRequest(state, entered).Wait()


class WindowBarrier:
    """Mixin of Win."""

    def Ibarrier(self, assertion=0):
        """Nonblocking window barrier: Post, Start, Complete and Wait among all members.

        Return a Request. An RMA call issued after it returns waits, if need be, until its
        target has entered the same barrier; once the request completes, every RMA call issued
        before the barrier by any member is complete at its target. Blocking and nonblocking
        forms may be mixed across processes."""
        request = _fast_ibarrier(self._sync, assertion, self._s)
        if request is not False:
            return request
        state = self._s
        return BarrierRequest(state, enter(state, assertion, "Ibarrier"))

    def Barrier(self, assertion=0):
        """Window barrier: Post, Start, Complete and Wait among all members of the window."""
        barrier(self._s, self._sync, assertion, "Barrier")


if atomic.BACKEND == "c":
    _native.winbarrier_setup(BarrierRequest, job.WAIT_SLICE, Request.Wait, Request.Test)
    _fast_barrier, _fast_ibarrier = _native.win_barrier, _native.win_ibarrier
else:
    def _fast_barrier(table, assertion):
        return False

    def _fast_ibarrier(table, assertion, state):
        return False
