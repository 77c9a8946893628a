"""Synchronization counters of the 2008 "Flexible RMA Synchronization" proposal
(its §1.2; docs/rules.md R152-R165, A14-A18).

A counter is a signed 32-bit wait cell, one cache line apart from the next, in
a segment that holds only counters: each rank makes its own counter segments
when it allocates (Alloc_sync_objects is local), and other ranks map one the
first time they use a handle pointing into it. The owner unlinks its segments
when the window is freed, after the collective barrier of Win.Free, so no rank
maps one later; the launcher sweeps the job's names after a crash.

``Sync_object_init`` arms the counter by *adding* its count at every Start, so a
decrement that arrives early is banked (A16); the request completes when the
counter is back to 0. ``Sync_ops_init`` opens a counter epoch to its target
while active (A14) and, when Wait or Test completes it, fences and decrements
the remote counter exactly once (A15), waking its owner. Handles pickle, so
``comm.send(sync, dest)`` carries them; the receiver validates the window.

A received handle is checked before any of its memory is touched (A25): the
slot must lie in the segment, the segment must be one of this job's, and the
slot's line must hold the handle's generation (odd while allocated) and owner.
"""
import operator
import weakref

import posix_ipc

from ..core import atomic, errors, info as infos, job, segments
from ..p2p.request import Prequest, Request, Status
from ..types.synchandle import SYNC_NULL, Sync  # noqa: F401 (SYNC_NULL re-exported)

MODE_WIN_PUT = 1
MODE_WIN_GET = 2
MODE_WIN_ACCUMULATE = 4
ALL_SYNC_MODES = MODE_WIN_PUT | MODE_WIN_GET | MODE_WIN_ACCUMULATE
COUNTER_BYTES = 64          # one cache line per counter
COUNTERS_PER_SEGMENT = 64
SEGMENT_BYTES = COUNTERS_PER_SEGMENT * COUNTER_BYTES
OFF_GENERATION = 8          # in a counter's line: allocations + frees (odd while allocated)
OFF_OWNER = 12              # in a counter's line: the rank that allocated it (A25)
COUNT_MAX = 2**31 - 1       # a counter is a signed 32-bit word


if atomic.BACKEND == "c":
    from .. import _native
    _native.counters_setup(OFF_GENERATION, job.WAIT_SLICE, Request.Wait, Request.Test)
    _SyncCore = _native.SyncCore
    SYNC_OPS, SYNC_OBJECT = _native.SYNC_OPS, _native.SYNC_OBJECT
else:
    class _SyncCore:
        """csrc/rma/counters.c's SyncCore on the fallback: every call takes the Python path."""

        def Start(self):
            self._start()
    SYNC_OPS, SYNC_OBJECT = 1, 2


class Counters:
    """The counter segments a window's rank owns and maps (WindowState.counters)."""

    def __init__(self, state):
        self.state = state
        self.window = state.control.name if state.control else "local"
        self.owned = []             # segments this rank created
        self.free_slots = []        # (segment name, slot)
        self.mapped = {}            # segment name -> Segment
        self.requests = weakref.WeakValueDictionary()  # id -> request not freed (Change_comm)
        self.allocated = 0          # counters handed out and not freed

    def allocate(self, n):
        while len(self.free_slots) < n:
            segment = segments.Segment.create(job.current().job_id, SEGMENT_BYTES)
            self.owned.append(segment)
            self.mapped[segment.name] = segment
            self.free_slots += [(segment.name, slot)
                                for slot in reversed(range(COUNTERS_PER_SEGMENT))]
        taken = [self.free_slots.pop() for _ in range(n)]
        self.allocated += n
        syncs = []
        for name, slot in taken:
            address = self.address_in(name, slot)
            atomic.cell_store(address, 0)
            atomic.store32(address + OFF_OWNER, self.state.rank)  # before the handle exists
            generation = atomic.fetch_add32(address + OFF_GENERATION, 1) + 1
            syncs.append(Sync(self.window, self.state.rank, name, slot, generation))
        return syncs

    def release(self, sync):
        atomic.fetch_add32(self.address_in(sync.segment, sync.slot) + OFF_GENERATION, 1)
        self.allocated -= 1
        self.free_slots.append((sync.segment, sync.slot))

    def address_in(self, name, slot):
        """A slot of one of our own segments (allocate, release: always mapped)."""
        return self.mapped[name].address + slot * COUNTER_BYTES

    def address(self, sync, call):
        """The counter's address; ERR_ARG for a handle of another window, a stale
        one, or one whose fields name no counter of its owner (garbled or forged)."""
        check_fields(sync, call)
        check_handle(sync, self.window, len(self.state.sizes), call)
        address = self._segment(sync.segment, call).address + sync.slot * COUNTER_BYTES
        check_line(address, sync, call)
        return address

    def _segment(self, name, call):
        """Counter segment ``name``, mapped on first use; ERR_ARG if it cannot be."""
        segment = self.mapped.get(name)
        if segment is not None:
            return segment
        if not name.startswith("/" + segments.job_prefix(job.current().job_id)):
            fail_segment(call, name, "it is not a segment of this job")
        try:
            segment = segments.Segment.attach(name, SEGMENT_BYTES)
        except (errors.Exception, posix_ipc.Error, ValueError, OSError) as exc:
            # its owner has it until Win.Free, so a live handle never gets here
            fail_segment(call, name, "it cannot be mapped (%s)" % exc)
        self.mapped[name] = segment
        return segment

    def close(self):
        """At Win.Free, after its barrier: unmap everything, unlink what we made."""
        for segment in self.owned:
            segment.unlink()
        for segment in self.mapped.values():
            segment.close()
        self.owned, self.mapped, self.free_slots = [], {}, []


class _SyncRequest(_SyncCore, Prequest):
    """Start, Wait and Test run in C (csrc/rma/counters.c) and come here when C declines;
    the request's state lives in SyncCore's fields, which both read and write."""

    _persistent = True

    def __init__(self, state, kind, counter, restart):
        self._state = state
        self._table = state.epoch.table
        state.counters.requests[id(self)] = self
        self._null = False
        self._done = True       # inactive: nothing to wait for
        self._active = False
        self._completed = False     # completed since its last Start (A23: Free allowed)
        self._counter, self._restart = counter, restart
        self._kind = kind       # last: C takes the calls once the fields are set

    @property
    def _inactive(self):
        return not self._active

    def _start(self):
        state = self._state
        if self._null:
            errors.fail(errors.ERR_REQUEST, "Start on a freed synchronization request")
        if self._active:
            errors.fail(errors.ERR_REQUEST, "Start on an active synchronization request: "
                        "complete it with Wait or Test first")
        if state.counters is None:
            errors.fail(errors.ERR_WIN, "Start: the window of this request was freed")
        self._arm()
        self._active, self._completed = True, False
        state.epoch.table.sync_active += 1

    def _deactivate(self):
        self._active = False
        self._state.epoch.table.sync_active -= 1

    def _peers(self):
        return self._state.world_ranks

    def Cancel(self):
        errors.fail(errors.ERR_REQUEST, "a synchronization request cannot be cancelled")

    def Free(self):
        if self._active and not (self._restart and self._completed):
            errors.fail(errors.ERR_REQUEST, "Free of an active synchronization request: "
                        "complete it with Wait or Test first (a restart request may be "
                        "freed right after a Wait or Test completed it)")
        if self._active:
            self._disarm()
            self._deactivate()
        self._null = True
        if self._state.counters is not None:
            self._state.counters.requests.pop(id(self), None)

    def _disarm(self):
        """Undo what the automatic restart armed (Free of a completed restart request)."""

    def _finish(self, status):
        if status is not None:
            status._copy_from(Status())
        if self._active:
            try:
                self._complete()
            except errors.Exception as exc:
                if status is not None:
                    status.error = exc.Get_error_class()   # A24: the error field is set
                raise
            self._completed = True


class SyncOpsRequest(_SyncRequest):
    """Sync_ops_init: signals its target's counter when Wait or Test completes it."""

    def __init__(self, state, target, mode, counter, generation, restart):
        self._target, self._mode, self._generation = target, mode, generation
        self._doorbell = job.current().doorbell(state.world_ranks[target])
        super().__init__(state, SYNC_OPS, counter, restart)

    def _arm(self):
        self._state.epoch.open_counter_epoch(self._target, self._mode)

    def _poll(self):
        return True         # every covered RMA is complete when its call returns

    def _describe(self):
        return "a Sync_ops request to rank %d" % self._target

    def _complete(self):
        atomic.fence()      # the covered RMA reach the target before the signal (A15)
        if atomic.load32(self._counter + OFF_GENERATION) != self._generation:
            self._deactivate()
            errors.fail(errors.ERR_ARG, "the counter this Sync_ops request signals was "
                        "freed by its owner (rank %d); nothing was signalled"
                        % self._target)
        before = atomic.cell_add(self._counter, -1)
        self._zeroed = before == 1      # it ended the owner's wait (--trace's arrows)
        atomic.cell_add(self._doorbell, 1)
        if not self._restart:
            self._deactivate()

    def _deactivate(self):
        super()._deactivate()
        self._state.epoch.table.close_counter_epoch(self._target, self._mode)


class SyncObjectRequest(_SyncRequest):
    """Sync_object_init: complete when the local counter is back to 0."""

    def __init__(self, state, counter, count, restart):
        self._count = count
        super().__init__(state, SYNC_OBJECT, counter, restart)

    def _arm(self, call="Start"):
        before = atomic.fetch_add32(self._counter, self._count)
        if before + self._count < 0:
            atomic.fetch_add32(self._counter, -self._count)
            errors.fail(errors.ERR_WIN_COUNTER, "%s: %d early signals are more than this "
                        "request's count %d; the counter would stay negative"
                        % (call, -before, self._count))
        self._done = False
        self._armed_positive = before + self._count > 0    # the round waits for a signal

    def _disarm(self):
        # subtract rather than store: signals banked since the re-arm stay (A16)
        atomic.fetch_add32(self._counter, -self._count)

    def _poll(self, value=None):
        if not self._done:
            if value is None:
                value = atomic.load32(self._counter)
            if value <= 0:
                atomic.fence()  # the signalling origins' data is visible here (R158)
                self._done = True
        return self._done

    def _describe(self):
        return "a Sync_object request (counter at %d)" % atomic.load32(self._counter)

    def _block(self):
        # the one wait policy: spin, yield, then sleep on the word itself
        job.wait_until(self._counter, self._poll, self._describe, self._peers())

    def _complete(self):
        self._waited_round = self._armed_positive
        if not self._restart:
            self._deactivate()
            return
        self._done = True
        try:
            self._arm("the automatic restart of Wait/Test")  # early signals stay banked
        except errors.Exception:
            self._deactivate()  # inactive, as without restart: Free, Start, Win.Free work
            raise


def restart_of(info, call):
    """Whether info asks for a self re-arming request (key ``restart``, R163)."""
    value = infos.to_dict(info).get("restart", "false").strip().lower()
    if value not in ("true", "false"):
        errors.fail(errors.ERR_INFO_VALUE, "%s: info restart=%r; use 'true' or 'false'"
                    % (call, value))
    return value == "true"


def checked_number(n, call, what):
    """``n`` as an int, ERR_COUNT when negative."""
    n = operator.index(n)
    if n < 0:
        errors.fail(errors.ERR_COUNT, "%s: %s must be >= 0, not %d" % (call, what, n))
    return n


def checked_mode(sync_mode):
    mode = operator.index(sync_mode)
    if mode & ~ALL_SYNC_MODES or mode < 0:
        errors.fail(errors.ERR_ARG, "Sync_ops_init: sync_mode %r has bits outside "
                    "MODE_WIN_PUT, MODE_WIN_GET and MODE_WIN_ACCUMULATE" % (sync_mode,))
    return mode


def check_owner(sync, owner, call):
    """The handle must be ``owner``'s counter (A18): a Sync_ops target's, or ours."""
    if sync.owner == owner:
        return
    if call == "Sync_ops_init":
        errors.fail(errors.ERR_ARG, "Sync_ops_init: the counter belongs to rank %d, not "
                    "to target %d; pass the handle the target sent you"
                    % (sync.owner, owner))
    errors.fail(errors.ERR_ARG, "%s: the counter belongs to rank %d; only its owner "
                "waits on it" % (call, sync.owner))


def check_handle(sync, window, size, call):
    """ERR_ARG unless ``sync`` is a live-looking handle of ``window`` (``size`` ranks)."""
    if not isinstance(sync, Sync):
        raise TypeError("%s: expecting an MPI.Sync handle, not %s"
                        % (call, type(sync).__name__))
    if not sync:
        errors.fail(errors.ERR_ARG, "%s: SYNC_NULL is not a counter" % call)
    if sync.window != window or not 0 <= sync.owner < size:
        errors.fail(errors.ERR_ARG, "%s: this Sync handle belongs to another window" % call)


def fail_freed(call, owner):
    errors.fail(errors.ERR_ARG, "%s: this Sync handle's counter was freed by its owner "
                "(rank %d); ask it for a new handle" % (call, owner))


def check_fields(sync, call):
    """ERR_ARG for a shm handle with a field of the wrong type or a slot outside its
    segment: ``address`` reads the slot's line straight from memory."""
    if not (isinstance(sync, Sync) and sync):
        return                  # check_handle says what is wrong
    if not (all(type(n) is int for n in (sync.owner, sync.slot, sync.generation))
            and isinstance(sync.segment, str)):
        errors.fail(errors.ERR_ARG, "%s: this Sync handle is garbled: owner, slot and "
                    "generation must be ints and segment a name, not %r" % (call, sync._key()))
    if not 0 <= sync.slot < COUNTERS_PER_SEGMENT:
        errors.fail(errors.ERR_ARG, "%s: this Sync handle names slot %d, outside the %d "
                    "counters of a segment; the handle is garbled"
                    % (call, sync.slot, COUNTERS_PER_SEGMENT))


def check_line(address, sync, call):
    """The slot's line must show the handle's counter: same generation, odd (allocated),
    and allocated by the handle's owner (else Sync_ops would signal another rank's)."""
    generation = atomic.load32(address + OFF_GENERATION)
    if generation != sync.generation:
        fail_freed(call, sync.owner)
    if generation % 2 == 0:
        errors.fail(errors.ERR_ARG, "%s: this Sync handle names slot %d of segment %s, which "
                    "holds no allocated counter; the handle is garbled"
                    % (call, sync.slot, sync.segment))
    owner = atomic.load32(address + OFF_OWNER)
    if owner != sync.owner:
        errors.fail(errors.ERR_ARG, "%s: this Sync handle names rank %d as owner, but its "
                    "counter was allocated by rank %d; the handle is garbled"
                    % (call, sync.owner, owner))


def check_listed_once(syncs):
    """ERR_ARG when Free_sync_objects lists one counter twice: freed twice, its slot
    would later be handed out twice."""
    first = {}
    for index, sync in enumerate(syncs):
        if sync in first:
            errors.fail(errors.ERR_ARG, "Free_sync_objects: entries %d and %d are the same "
                        "counter; list each counter once" % (first[sync], index))
        first[sync] = index


def fail_segment(call, name, why):
    errors.fail(errors.ERR_ARG, "%s: this Sync handle names counter segment %r, but %s; "
                "the handle is garbled or its window was freed" % (call, name, why))


class CounterCalls:
    """Mixin of Win: the proposal's calls."""

    def Alloc_sync_objects(self, n, info=None):
        """Allocate ``n`` synchronization counters of this process; return Sync handles."""
        return self._s.counters.allocate(checked_number(n, "Alloc_sync_objects", "n"))

    def Free_sync_objects(self, syncs):
        """Free counters this process allocated; each entry of ``syncs`` becomes SYNC_NULL."""
        state = self._s
        waited_on = {request._counter for request in list(state.counters.requests.values())
                     if isinstance(request, SyncObjectRequest) and request._active}
        for index, sync in enumerate(syncs):
            address = state.counters.address(sync, "Free_sync_objects")
            if sync.owner != state.rank:
                errors.fail(errors.ERR_ARG, "Free_sync_objects: counter %d was allocated by "
                            "rank %d, not by this rank" % (index, sync.owner))
            if address in waited_on:
                errors.fail(errors.ERR_RMA_SYNC, "Free_sync_objects: counter %d is waited on "
                            "by an active Sync_object request; complete it first"
                            % index)
        check_listed_once(syncs)
        for index, sync in enumerate(syncs):
            state.counters.release(sync)
            syncs[index] = SYNC_NULL

    def Sync_ops_init(self, target_rank, sync_mode, sync_counter, info=None):
        """Create a persistent request that signals ``sync_counter`` of ``target_rank``.

        While it is active, RMA of the kinds in ``sync_mode`` (MODE_WIN_PUT, MODE_WIN_GET,
        MODE_WIN_ACCUMULATE or-ed, or 0) to ``target_rank`` needs no other epoch. Wait or Test
        completes it: those calls are then complete at the target, and the counter is
        decremented once. ``sync_counter`` comes from ``target_rank``; info ``restart="true"``
        re-arms it at each completion."""
        state = self._s
        target = state.check_rank(target_rank, "Sync_ops_init target_rank", allow_null=False)
        mode = checked_mode(sync_mode)
        counter = state.counters.address(sync_counter, "Sync_ops_init")
        check_owner(sync_counter, target, "Sync_ops_init")
        return SyncOpsRequest(state, target, mode, counter, sync_counter.generation,
                              restart_of(info, "Sync_ops_init"))

    def Sync_object_init(self, sync_counter, count, info=None):
        """Create a persistent request that completes when counter ``sync_counter`` is 0.

        The counter is this process's own. Each Start adds ``count`` to it; decrements that
        arrive early are kept (ERR_WIN_COUNTER when more than ``count``). Info
        ``restart="true"`` re-arms it at each completion, without Start."""
        state = self._s
        count = checked_number(count, "Sync_object_init", "count")
        if count > COUNT_MAX:
            errors.fail(errors.ERR_COUNT, "Sync_object_init: count %d does not fit the "
                        "counter, a signed 32-bit word; use at most %d" % (count, COUNT_MAX))
        counter = state.counters.address(sync_counter, "Sync_object_init")
        check_owner(sync_counter, state.rank, "Sync_object_init")
        return SyncObjectRequest(state, counter, count, restart_of(info, "Sync_object_init"))
