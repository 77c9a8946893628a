"""Win.Change_comm of the 2008 proposal (its §1.2.6; A27, R164).

``win = win.Change_comm(new_comm, peer_rank)`` is collective over ``new_comm`` and
the window's communicator. Members that stay get the same window back, now over
``new_comm``'s group and numbered as in it; members of ``new_comm`` that were not
in the window call it on WIN_NULL and join with a zero-size segment (nothing
attached, for a dynamic window); members that are not in ``new_comm`` pass
COMM_NULL, leave, and get WIN_NULL.

Three agreement steps make every process either raise the same error with nothing
changed or go ahead: the old members agree over the window's communicator (A), the
new members over ``new_comm`` (B), then one old member in both tells the old ones
what B decided (C). ``peer_rank``, a rank of ``new_comm`` that is an old member, is
the leader that hands the window to the newcomers: an ALLOCATE or SHARED window's
segment was unlinked as soon as every rank had mapped it, so after step A (every
old member is inside the call, nobody writes) the leader copies it into a new
segment, which the old members then map in place of the first (same address: the
program's views stay valid) and the newcomers map anew.

Restrictions (A27): the window must be quiet (no epoch, Ibarrier or started
synchronization request) and hold no synchronization counters or requests, whose
handles name ranks of the old group (ERR_RMA_SYNC); members that stay keep their
relative order (ERR_COMM).
"""
import ctypes
import operator

from ..core import errors, job, segments
from ..coll.blocking import own_allgather, own_bcast
from .winmemory import MappedMemory

_DIFFERENT_PEERS = (errors.ERR_ARG, "the members pass different peer_rank values; pass "
                    "the same")
_EMPTY = ("", 0, 0, 0, 0)               # Win.Create's description of no memory


class Change:
    """One process's part in one Change_comm call."""

    def __init__(self, state, new_comm, peer_rank):
        self.state = state                      # None on a newcomer
        self.member = _is_member(new_comm, state is not None)
        self.new_comm = new_comm if self.member else None
        self.peer_rank = peer_rank
        self.problem = _local_problem(state, self.new_comm, peer_rank)
        self.moved = None                       # the leader's copy of the data segment
        self.entries = None                     # step B: one per member of new_comm
        self.old_to_new = {}                    # step A: {old rank: new rank} of who stays

    # --- agreement -------------------------------------------------------------
    def agree(self):
        """Steps A, B, C; raises on every process if any process found a problem."""
        bridge = self._step_a() if self.state is not None else None
        if self.member:
            self._step_b()
        if bridge is not None:
            self.problem = own_bcast(self.state.comm, self.problem, bridge)
        if self.problem is not None:
            if self.moved is not None:
                self.moved.unlink()
                self.moved.close()
            error_class, message = self.problem
            errors.fail(error_class, "Change_comm: %s" % message)

    def _step_a(self):
        """Old members: who stays, at which new rank; the leader copies the memory.
        Returns the old rank that relays step B's verdict (None: nobody stays)."""
        new_rank = self.new_comm.Get_rank() if self.member else None
        entries = own_allgather(self.state.comm, (self.problem, new_rank, self.peer_rank))
        staying = [(old, new, peer) for old, (_, new, peer) in enumerate(entries)
                   if new is not None]
        self.problem = _first_problem(entries) or _staying_problem(staying)
        self.old_to_new = {old: new for old, new, _ in staying}
        if self.problem is None and new_rank == self.peer_rank:
            self.moved = self._copy_data()
        leaders = [old for old, new, peer in staying if new == peer]
        return leaders[0] if leaders else (staying[0][0] if staying else None)

    def _step_b(self):
        """New members: each says what it brings; the leader adds the window's kind."""
        state = self.state
        mine = None
        if self.problem is None and state is not None:
            mine = {"size": state.sizes[state.rank], "unit": state.units[state.rank],
                    "place": _place(state)}
            if self.new_comm.Get_rank() == self.peer_rank:
                mine.update(flavor=state.flavor, hints=dict(state.hints),
                            segment=self.moved.name if self.moved else None,
                            segment_size=self.moved.size if self.moved else 0)
        self.entries = own_allgather(self.new_comm, (self.problem, self.peer_rank, mine))
        self.problem = _first_problem(self.entries) or _members_problem(self.entries)

    # --- the new window ------------------------------------------------------------
    def leader_entry(self):
        """What the leader brought: also flavor, hints, segment and segment_size."""
        return self.entries[self.peer_rank][2]

    def _brought(self, key, newcomer):
        """Each new rank's ``key`` in step B; ``newcomer`` for a process new to the window."""
        return [entry[2][key] if entry[2] else newcomer for entry in self.entries]

    def sizes_and_units(self):
        return self._brought("size", 0), self._brought("unit", 1)

    def places(self):
        """Win.Create's description of every member's memory, in the new numbering."""
        return self._brought("place", _EMPTY)

    def _copy_data(self):
        """The leader's copy of an ALLOCATE/SHARED segment, or a problem."""
        state = self.state
        if not state.one_segment or not state.data_segments:
            return None
        old = state.data_segments[0]
        try:
            moved = segments.Segment.create(job.current().job_id, old.size)
        except errors.Exception as exc:
            self.problem = (exc.Get_error_class(), "the leader (peer_rank %d) could not "
                            "copy the window memory: %s" % (self.peer_rank, exc.message))
            return None
        ctypes.memmove(moved.address, old.address, old.size)
        return moved

    def map_data(self, segment_name, size):
        """After agreement: old members map the leader's copy in place of their
        segment, newcomers map it; the leader unlinks it once all have."""
        if segment_name is None:
            return None
        if self.state is not None:
            mapped = self.state.data_segments[0]
            mapped.remap(segment_name)
        else:
            mapped = segments.Segment.attach(segment_name, size)
        self.new_comm.Barrier()
        if self.moved is not None:
            self.moved.unlink()
            self.moved.close()
        return mapped

    def newcomer_targets(self, state, data):
        """A newcomer's view of every member's memory (not DYNAMIC)."""
        if not state.one_segment:
            state.reach_created_memory(self.places(), None)
            return
        state.data_segments = [data] if data is not None else []
        for size, place in zip(state.sizes, self.places()):
            state.targets.append(MappedMemory(data.buffer[place:place + size], data.address + place)
                                 if size else MappedMemory(memoryview(bytearray(0)), 0))


def _is_member(new_comm, old_member):
    from ..comm.comm import Comm
    if not isinstance(new_comm, Comm):
        raise TypeError("Change_comm: new_comm must be an MPI.Intracomm, not %s"
                        % type(new_comm).__name__)
    if new_comm:
        return True
    if not old_member:
        errors.fail(errors.ERR_COMM, "Change_comm on WIN_NULL needs the communicator this "
                    "process joins the window with, not COMM_NULL")
    return False


def _local_problem(state, new_comm, peer_rank):
    """(error class, message) of what this process alone sees wrong, or None."""
    try:
        peer_rank = operator.index(peer_rank)
    except TypeError:
        return errors.ERR_ARG, "peer_rank must be an int, not %r" % (peer_rank,)
    if new_comm is not None and not 0 <= peer_rank < new_comm.Get_size():
        return errors.ERR_RANK, ("peer_rank %d is not a rank of new_comm (size %d)"
                                 % (peer_rank, new_comm.Get_size()))
    if state is None:
        return None
    try:
        state.epoch.check_free("Change_comm")
    except errors.Exception as exc:
        return exc.Get_error_class(), exc.message
    if state.counters.allocated or len(state.counters.requests):
        return errors.ERR_RMA_SYNC, (
            "rank %d holds %d synchronization counters and %d synchronization requests of "
            "this window; their handles name ranks of the old group, so free them first "
            "(Free_sync_objects, Request.Free)"
            % (state.rank, state.counters.allocated, len(state.counters.requests)))
    return None


def _first_problem(entries):
    return next((entry[0] for entry in entries if entry[0] is not None), None)


def _staying_problem(staying):
    if not staying:
        return errors.ERR_RANK, ("no member of the window is in new_comm, so peer_rank "
                                 "cannot name one; new_comm must keep at least one")
    if len({peer for _, _, peer in staying}) > 1:
        return _DIFFERENT_PEERS
    news = [new for _, new, _ in staying]
    if news != sorted(news):
        return errors.ERR_COMM, ("the members that stay must keep their relative order in "
                                 "new_comm (window ranks %s become %s)"
                                 % ([old for old, _, _ in staying], news))
    if staying[0][2] not in news:
        return errors.ERR_RANK, ("peer_rank %d of new_comm is not a member of the window; "
                                 "name a process in both" % staying[0][2])
    return None


def _members_problem(entries):
    return _DIFFERENT_PEERS if len({peer for _, peer, _ in entries}) > 1 else None


def _place(state):
    """Where this rank's memory is, for a newcomer to reach it."""
    if state.one_segment:
        target = state.targets[state.rank]
        return (target.address - state.data_segments[0].address
                if state.sizes[state.rank] else 0)
    return state.places[state.rank] if state.places else _EMPTY
