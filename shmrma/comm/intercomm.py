"""``MPI.Intercomm``: two disjoint groups that talk across (MPI-3.1 §6.6).

An intercommunicator's state (InterState) binds its ``ranks`` to the world
ranks of the REMOTE group: every point-to-point path, Python and C, addresses
peers and reports sources through ``ranks``, so on an intercommunicator a
destination or source is a rank of the other group, as MPI says, with no code
of its own. Its rank and size are those of the local group (``local_ranks``).
Its collectives are coll/inter.py's. Each also holds a private
intracommunicator of its local group, which carries the broadcasts of its
creation calls.

Making one: the two groups' leaders swap their groups (and what else the call
needs), each leader broadcasts what it learned in its group, and the leader of
the low group (the one whose rank 0 has the lower world rank) allocates the
context ids and barrier slots (intracomm._allocate_or_error) and hands the plan
to every rank of the other group and, by a broadcast, of its own.
"""
import pickle
import zlib

from ..core import constants, errors, job
from ..coll.blocking import own_allgather, own_bcast, own_dumps
from ..coll.inter import InterCollectives, refuse_intra_only
from ..coll.persistent import PersistentCollectives
from ..p2p.communicator import CommState
from ..p2p.transfers import Completed
from ..p2p.transport import CONNECT
from .comm import COMM_CLASSES, INTER, Comm
from .group import Group, make_group
from .intracomm import (_SESSIONS, MADE_ABOVE, Intracomm, _allocate_or_error, _planned,
                        _split_choice, checked_subset, split_layout)

_TAG = 0    # every creation call on an intercommunicator: they are collective, in order


class InterState(CommState):
    """An intercommunicator: ``ranks`` the remote group's world ranks, ``local_ranks``
    the local group's, ``local`` a private Intracomm of the local group, ``low``
    whether this is the low group, ``coll_tag`` its next collective's tag."""

    __slots__ = ("local_ranks", "local", "low", "coll_tag")
    inter = True

    def __init__(self, context, remote_ranks, local_ranks, local, parent=None):
        super().__init__(context, remote_ranks, None, parent=parent)
        self.local_ranks = tuple(local_ranks)
        self.rank = self.local_ranks.index(job.world_rank())
        self.local = local
        self.low = self.local_ranks[0] < self.ranks[0]
        self.coll_tag = 0


def _pair_sizes(one, other):
    """The sizes a plan allocates for: the intercommunicator (no barrier slot), then
    the local communicators of the low group and of the high one."""
    low, high = (one, other) if one[0] < other[0] else (other, one)
    return [1, len(low), len(high)]


def _made(plan, local_ranks, remote_ranks, parent):
    """The state of an intercommunicator from its plan: contexts base (itself),
    base + 1 (the low group's local communicator), base + 2 (the high group's)."""
    base, slots = plan
    which = 1 if local_ranks[0] < remote_ranks[0] else 2
    local = Intracomm(CommState(base + which, local_ranks, slots[which], parent=parent))
    return InterState(base, remote_ranks, local_ranks, local, parent)


def _outcome(make):
    """``make()``, or the MPI error it raised (handed to the group, which all raise it)."""
    try:
        return make()
    except errors.Exception as exc:
        return exc


# --- Create_intercomm ---------------------------------------------------------------

def create_intercomm(comm, local_leader, peer_comm, remote_leader, tag=0):
    """``comm.Create_intercomm``: collective over ``comm``; its leader and the remote
    leader meet over ``peer_comm``."""
    tag = Comm._tag(tag)
    return led(comm, local_leader, "local_leader", lambda local_ranks: meet(
        local_ranks, peer_comm, remote_leader, tag))


def led(comm, leader, role, meet_with):
    """An intercommunicator of ``comm``'s group and the group its rank ``leader`` meets:
    the leader runs ``meet_with(local ranks)`` -> (remote ranks, plan) and hands the
    outcome (or its error, which every rank then raises) to the group."""
    state = comm._s
    leader = _leader(comm, leader, role)
    outcome = None
    if state.rank == leader:
        outcome = _outcome(lambda: meet_with(state.ranks))
    remote_ranks, plan = _planned(own_bcast(comm, outcome, leader))
    return Intercomm(_made(_planned(plan), state.ranks, remote_ranks, state))


def _leader(comm, rank, role):
    size = len(comm._s.ranks)
    rank = Comm._peer(comm, rank, role)
    if rank == constants.PROC_NULL:
        errors.fail(errors.ERR_RANK, "%s must be a rank of the communicator (0..%d), not "
                    "PROC_NULL" % (role, size - 1))
    return rank


def meet(local_ranks, peer_comm, remote_leader, tag, remote_ranks=None):
    """At the local leader: swap the groups with the remote leader over ``peer_comm``
    (``remote_ranks``: the remote group, already received); the low group's leader
    makes the plan and sends it. Returns (remote ranks, plan)."""
    if not isinstance(peer_comm, Comm):
        raise TypeError("Create_intercomm: peer_comm must be a communicator, not %s"
                        % type(peer_comm).__name__)
    peer = peer_comm._s
    remote_leader = _leader(peer_comm, remote_leader, "remote_leader")
    if peer.ranks[remote_leader] in local_ranks:
        errors.fail(errors.ERR_RANK, "Create_intercomm: remote_leader %d of peer_comm is in "
                    "this group; it must lead the other group" % remote_leader)
    peer_comm._isend_bytes(own_dumps(local_ranks), remote_leader, tag, True, CONNECT)
    if remote_ranks is None:
        remote_ranks = received(peer_comm, remote_leader, tag)
    if set(remote_ranks) & set(local_ranks):
        errors.fail(errors.ERR_COMM, "Create_intercomm: the two groups share processes "
                    "(world ranks %s); an intercommunicator's groups are disjoint"
                    % sorted(set(remote_ranks) & set(local_ranks)))
    if local_ranks[0] < remote_ranks[0]:
        plan = _allocate_or_error(3, _pair_sizes(local_ranks, remote_ranks))
        peer_comm._isend_bytes(own_dumps(plan), remote_leader, tag, True, CONNECT)
    else:
        plan = received(peer_comm, remote_leader, tag)
    return remote_ranks, plan


def received(comm, source, tag):
    return comm._irecv(source, tag, None, CONNECT, loads=pickle.loads).wait()


# --- agreeing across the two groups --------------------------------------------------

def _swapped(comm, mine):
    """(this group's leader's ``mine``, the remote leader's), at every rank."""
    state = comm._s
    both = None
    if state.rank == 0:
        comm._isend_bytes(own_dumps(mine), 0, _TAG, True, CONNECT)
        both = (mine, received(comm, 0, _TAG))
    return own_bcast(state.local, both, 0)


def _from_low_leader(comm, make):
    """What the low group's leader makes (``make()``: a plan, or the error making it
    met), at every rank of both groups."""
    state = comm._s
    if not state.low:
        return received(comm, 0, _TAG)
    made = None
    if state.rank == 0:
        made = _outcome(make)
        for rank in range(len(state.ranks)):
            comm._isend_bytes(own_dumps(made), rank, _TAG, True, CONNECT)
    return own_bcast(state.local, made, 0)


def _inter_state(comm):
    """``comm``'s state, which must be an intercommunicator's: ``MPI.Intercomm.Merge(
    COMM_WORLD)`` is a TypeError, as mpi4py's method descriptors make it."""
    state = comm._s
    if not state.inter:
        raise TypeError("an Intercomm method needs an intercommunicator, not an "
                        "intracommunicator")
    return state


class Intercomm(PersistentCollectives, InterCollectives, Comm):
    """``MPI.Intercomm``: an intercommunicator, between two disjoint groups."""

    def _check_kind(self, state):
        if not state.inter:
            raise TypeError("expecting an intercommunicator, got an intracommunicator")

    # --- the two groups ---
    def Get_size(self):
        """Return the number of processes in the local group."""
        return len(_inter_state(self).local_ranks)

    def Get_group(self):
        """Return a new group of the local group's processes."""
        return make_group(_inter_state(self).local_ranks)

    def Get_remote_size(self):
        """Return the number of processes in the remote group."""
        return len(_inter_state(self).ranks)

    def Get_remote_group(self):
        """Return a new group of the remote group's processes."""
        return make_group(_inter_state(self).ranks)

    size = property(Get_size)
    group = property(Get_group)
    remote_size = property(Get_remote_size)
    remote_group = property(Get_remote_group)

    # --- making communicators ---
    def Merge(self, high=False):
        """Merge the two groups into an intracommunicator.

        The group passing ``high=False`` comes first; when both pass the same,
        the low group (the one holding the lower world rank first) does."""
        state = _inter_state(self)
        mine, theirs = _swapped(self, bool(high))
        first = (not mine and theirs) or (mine == theirs and state.low)
        ranks = state.local_ranks + state.ranks if first else state.ranks + state.local_ranks
        base, slots = _planned(_from_low_leader(
            self, lambda: _allocate_or_error(1, [len(ranks)])))
        return Intracomm(CommState(base, ranks, slots[0], parent=state))

    def Split(self, color=0, key=0):
        """Split each group by color and key: a new intercommunicator per color
        chosen in both groups (COMM_NULL where a color is only in one)."""
        state = _inter_state(self)
        choices = [_split_choice(rank, choice)
                   for rank, choice in enumerate(own_allgather(state.local, (color, key)))]
        _, theirs = _swapped(self, choices)
        _, ours_by_color = split_layout(choices, state.local_ranks)
        _, theirs_by_color = split_layout(theirs, state.ranks)
        colors = sorted(ours_by_color.keys() & theirs_by_color.keys())
        pairs = [(ours_by_color[c], theirs_by_color[c]) for c in colors]

        def plan():
            return _allocate_or_error(3 * len(colors), [size for local, remote in pairs
                                                        for size in _pair_sizes(local, remote)])
        base, slots = _planned(_from_low_leader(self, plan))
        mine = choices[state.rank][0]
        if mine not in colors:
            return Intercomm()
        index = colors.index(mine)
        local, remote = pairs[index]
        made = _made((base + 3 * index, slots[3 * index:3 * index + 3]), local, remote, state)
        return Intercomm(made)

    def Split_type(self, split_type, key=0, info=None):
        """Split each group by type: on one machine every type keeps all together."""
        return self.Split(constants.UNDEFINED if split_type == constants.UNDEFINED else 0,
                          key)

    def Create(self, group):
        """Create an intercommunicator of a subgroup of each group; collective."""
        members = checked_subset(group, _inter_state(self).local_ranks)
        me = job.world_rank()
        if me not in members:
            return self.Split(constants.UNDEFINED, 0)
        return self.Split(0, members.index(me))

    def Dup(self, info=None):
        """A new intercommunicator of the same groups, of this handle's class."""
        state = _inter_state(self)
        copy = self._own_class()._handle_of(Intercomm._handle_of(state).Split(0, state.rank)._s)
        if info is not None:
            copy.Set_info(info)
        self._copy_attributes_to(copy)
        return copy

    def Idup(self, info=None):
        """Duplicate: return (the new intercommunicator, a completed Request).

        The duplicate is made before Idup returns (the other group's leader must
        have called it too)."""
        return self.Dup(info), Completed()

    def Idup_with_info(self, info):
        """Nonblocking duplicate with hints ``info``."""
        return self.Idup(info)

    @classmethod
    def Create_from_groups(cls, local_group, local_leader, remote_group, remote_leader,
                           stringtag="org.mpi4py", info=None, errhandler=None):
        """Create an intercommunicator from a local and a remote group.

        MPI-4.0 §7.6.2: collective over both groups' members, with no parent
        communicator; ``stringtag`` tells concurrent calls apart."""
        if not isinstance(remote_group, Group):
            raise TypeError("Create_from_groups takes an MPI.Group, not %r" % (remote_group,))
        remote = list(remote_group.world_ranks)
        if not 0 <= remote_leader < len(remote):
            errors.fail(errors.ERR_RANK, "Create_from_groups: remote_leader %r is not a rank "
                        "of the remote group (0..%d)" % (remote_leader, len(remote) - 1))
        # the handler given (else the default), which the new one inherits
        local = Intracomm.Create_from_group(local_group, stringtag, info, errhandler)
        tag = zlib.crc32(str(stringtag).encode()) & 0x7FFFFFFF
        try:
            return create_intercomm(local, local_leader, _SESSIONS, remote[remote_leader], tag)
        finally:
            local.Free()

    def Free(self):
        """Free an intercommunicator (and its local group's private communicator)."""
        local = _inter_state(self).local
        Comm.Free(self)
        local.Free()


refuse_intra_only(Intercomm)
COMM_CLASSES[INTER] = Intercomm
MADE_ABOVE["Create_intercomm"] = create_intercomm
