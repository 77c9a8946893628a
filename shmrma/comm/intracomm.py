"""Intracommunicators: creating them (Dup, Split, Create, Create_group) and
the predefined COMM_WORLD, COMM_SELF and COMM_NULL."""
import operator
import pickle
import zlib

from ..core import constants, errors, job
from ..core import errhandler as handlers
from ..coll.blocking import Collectives, own_allgather, own_bcast, own_dumps
from .comm import COMM_CLASSES, DUPLICATES, MADE_ABOVE, Comm, serve_errhandler
from ..p2p.communicator import CommState
from ..p2p.transport import HANDSHAKE
from ..coll.slots import claim_slot, release_slot
from ..p2p.transfers import Completed
from ..coll.nonblocking import NonblockingCollectives
from ..coll.persistent import PersistentCollectives
from ..p2p.request import Request, Status

_IDUP_TAG = -1000   # below every user tag: Idup's plans never meet Create_group's


class Intracomm(PersistentCollectives, NonblockingCollectives, Collectives, Comm):
    """``MPI.Intracomm``: an intracommunicator, for communication within one group."""

    def _check_kind(self, state):
        if state.inter:
            raise TypeError("expecting an intracommunicator, got an intercommunicator")

    def Idup(self, info=None):
        """Nonblocking duplicate: return (the new communicator, a Request).

        Nonblocking Dup: (the new communicator, a request). Rank 0 plans the new
        communicator at once and sends the plan; each rank's request completes when
        its plan is there, and only then is the new communicator usable, so no rank
        waits in Idup for the others (MPI-3.1 §6.4.2)."""
        state = self._s
        if state.rank == 0:
            plan = _allocate_or_error(1, [len(state.ranks)])
            for rank in range(1, len(state.ranks)):
                self._isend_bytes(own_dumps(plan), rank, _IDUP_TAG, True, HANDSHAKE)
            arrived = Completed(result=plan)
        else:
            arrived = self._irecv(0, _IDUP_TAG, None, HANDSHAKE, loads=pickle.loads)
        comm = self._own_class()._handle_of(None)
        return comm, _Duplication(arrived, self, comm, info)

    def Idup_with_info(self, info):
        """Nonblocking duplicate a communicator with hints ``info``."""
        return self.Idup(info)

    def __reduce__(self):
        if self is COMM_NULL:
            return "COMM_NULL"
        if self._which is not None:     # COMM_WORLD, COMM_SELF
            return self._which
        predefined = {job.current().world_context: COMM_WORLD,
                      job.SELF_CONTEXT: COMM_SELF}.get(
            getattr(self._state_value, "context", None))
        if predefined is not None:      # a new handle to COMM_WORLD or COMM_SELF
            return (type(self), (predefined,))
        return Comm.__reduce__(self)

    def Split(self, color=0, key=0):
        """Split communicator by color and key (color UNDEFINED: COMM_NULL)."""
        # checked after the exchange, so a bad color on one rank fails every rank
        # instead of leaving the others waiting for it
        return split_by(self, [_split_choice(rank, choice) for rank, choice
                               in enumerate(own_allgather(self, (color, key)))])

    # --- process topologies and intercommunicators: topology.py, graph.py and
    # intercomm.py, which build on this module, register how each is made
    # (MADE_ABOVE) ---
    def Create_intercomm(self, local_leader, peer_comm, remote_leader, tag=0):
        """Create an intercommunicator from this group and the remote leader's.

        Collective over this communicator; the two leaders meet over
        ``peer_comm`` with ``tag``."""
        return MADE_ABOVE["Create_intercomm"](self, local_leader, peer_comm, remote_leader,
                                              tag)

    def Spawn(self, command, args=None, maxprocs=1, info=None, root=0, errcodes=None):
        """Spawn ``maxprocs`` instances of a Python program; return an intercommunicator.

        Collective; the arguments are read at ``root`` (comm/spawn.py)."""
        return MADE_ABOVE["Spawn"](self, command, args, maxprocs, info, root, errcodes)

    def Spawn_multiple(self, command, args=None, maxprocs=None, info=None, root=0,
                       errcodes=None):
        """Spawn instances of several Python programs; return an intercommunicator."""
        return MADE_ABOVE["Spawn_multiple"](self, command, args, maxprocs, info, root,
                                            errcodes)

    def Accept(self, port_name, info=None, root=0):
        """Accept a connection on ``port_name``: an intercommunicator with the group
        that Connects to it. Collective; ``port_name`` is read at ``root`` only."""
        return MADE_ABOVE["Accept"](self, port_name, info, root)

    def Connect(self, port_name, info=None, root=0):
        """Connect to the group Accepting on ``port_name``: an intercommunicator.
        Collective; ``port_name`` is read at ``root`` only."""
        return MADE_ABOVE["Connect"](self, port_name, info, root)

    def Create_cart(self, dims, periods=None, reorder=False):
        """Create a Cartesian communicator (ranks beyond the grid get a null one)."""
        return MADE_ABOVE["Create_cart"](self, dims, periods, reorder)

    def Cart_map(self, dims, periods=None):
        """Return this process's rank in a Cartesian grid (it stays where it is)."""
        return MADE_ABOVE["Cart_map"](self, dims, periods)

    def Create_graph(self, index, edges, reorder=False):
        """Create a graph communicator (ranks beyond its nodes get a null one)."""
        return MADE_ABOVE["Create_graph"](self, index, edges, reorder)

    def Graph_map(self, index, edges):
        """Return this process's rank in a graph topology (it stays where it is)."""
        return MADE_ABOVE["Graph_map"](self, index, edges)

    def Create_dist_graph_adjacent(self, sources, destinations, sourceweights=None,
                                   destweights=None, info=None, reorder=False):
        """Create a distributed graph communicator from each rank's own edges."""
        return MADE_ABOVE["Create_dist_graph_adjacent"](
            self, sources, destinations, sourceweights, destweights, info, reorder)

    def Create_dist_graph(self, sources, degrees, destinations, weights=None, info=None,
                          reorder=False):
        """Create a distributed graph communicator from any ranks' edges."""
        return MADE_ABOVE["Create_dist_graph"](self, sources, degrees, destinations,
                                                    weights, info, reorder)

    def Split_type(self, split_type, key=0, info=None):
        """Split communicator by type: on one machine every type keeps all together."""
        if split_type == constants.UNDEFINED:
            return self.Split(constants.UNDEFINED, key)
        return self.Split(0, key)

    def Create(self, group):
        """Create a communicator of ``group`` (COMM_NULL for non-members); collective."""
        state = self._s
        world_ranks = checked_subset(group, state.world_to_rank)
        me = job.world_rank()
        if me not in world_ranks:
            return self.Split(constants.UNDEFINED, 0)
        # the ranks may pass different, disjoint groups (MPI-3.1 §6.4.2): each makes
        # its own communicator, told apart by its lowest world rank
        return self.Split(min(world_ranks), world_ranks.index(me))

    def Create_group(self, group, tag=0):
        """Create a communicator of ``group``; only its members call it.

        Collective over the members of ``group`` only."""
        state = self._s
        world_ranks = checked_subset(group, state.world_to_rank)
        me = job.world_rank()
        if me not in world_ranks:
            return COMM_NULL
        return _created_by_leader(self, world_ranks, tag)

    @classmethod
    def Create_from_group(cls, group, stringtag="org.mpi4py", info=None, errhandler=None):
        """Create a communicator from a group, without a parent communicator.

        A communicator of ``group`` (of a session's process set, or any group),
        collective over its members only (MPI-4.0 §7.4.2); concurrent calls by
        one process must use different ``stringtag``s."""
        from .group import Group
        from ..core.info import to_dict
        if not isinstance(group, Group):
            raise TypeError("Create_from_group takes an MPI.Group, not %r" % (group,))
        hints = to_dict(info)
        world_ranks = list(group.world_ranks)
        if job.world_rank() not in world_ranks:
            errors.fail(errors.ERR_GROUP, "Create_from_group: this process is not in the "
                        "group; only its members call it")
        stringtag = str(stringtag)
        tag = zlib.crc32(stringtag.encode()) & 0x7FFFFFFF
        comm = _created_by_leader(_SESSIONS, world_ranks, tag, stringtag)
        comm._s.info.update(hints)
        # the handler given, else the policy's or MPI-4.0's default (§11.3.1)
        comm.Set_errhandler(errhandler or handlers.for_new(handlers.ERRORS_ARE_FATAL))
        return comm


def duplicate(comm, info=None):
    """``comm.Dup``: a new communicator of the same group and topology, with a handle
    of ``comm``'s class (Self, as mpi4py's Dup: a subclass's Dup gives that subclass).
    One collective step: no Split's gather of colors first."""
    parent = comm._s
    base, slots = _agreed_plan(parent, [len(parent.ranks)])
    state = CommState(base, parent.ranks, slots[0], parent=parent)
    state.topology = parent.topology    # topologies never change: shared
    copy = comm._own_class()._handle_of(state)
    if info is not None:
        copy.Set_info(info)
    comm._copy_attributes_to(copy)
    return copy


class _Duplication(Request):
    """Idup's request: complete once rank 0's plan arrived; completing it makes
    ``comm`` the duplicate (or raises the error rank 0 met planning it)."""

    def __init__(self, arrived, parent, comm, info):
        self._null = False
        self._done = False
        self._status = Status()
        self._arrived, self._parent, self._comm, self._info = arrived, parent, comm, info

    def _poll(self):
        if not self._done and self._arrived._poll():
            plan = self._arrived._result
            if isinstance(plan, errors.Exception):
                self._error = plan
            else:
                base, slots = plan
                parent = self._parent._s
                state = CommState(base, parent.ranks, slots[0], parent=parent)
                state.topology = parent.topology
                self._comm._state_value = state
                serve_errhandler(self._comm)
                if self._info is not None:
                    self._comm.Set_info(self._info)
                self._parent._copy_attributes_to(self._comm)
            self._done = True
        return self._done

    def _describe(self):
        return "rank 0's plan of the communicator Idup creates"

    def _peers(self):
        return self._arrived._peers()


def same_order(comm):
    """Every rank's Split choice for a communicator of the same ranks in the same
    order (a distributed graph)."""
    return [(0, rank) for rank in range(comm.Get_size())]


def split_by(comm, choices, plan=None, layout=None):
    """The communicators of a Split of ``comm`` whose every rank's (color, key) is
    ``choices``, known at every rank (a topology's, or gathered by Split): one
    collective step, rank 0 allocating them all and broadcasting the plan; none
    when ``plan`` is rank 0's plan_split, which every rank got already, or when
    every communicator has one member.
    ``layout`` is split_layout(choices, ...) when the caller made it already."""
    state = comm._s
    color = choices[state.rank][0]
    colors, members = layout or split_layout(choices, state.ranks)
    if plan is None and all(len(members[c]) == 1 for c in colors):
        # communicators of one member each (Split(color=rank)): nothing to agree on, a
        # context id is unique job-wide whoever takes it, so each takes its own
        if color == constants.UNDEFINED:
            return COMM_NULL
        return Intracomm(CommState(job.current().new_contexts(1), members[color], None,
                                   parent=state))
    base, slots = (_agreed_plan(state, [len(members[c]) for c in colors]) if plan is None
                   else _planned(plan))
    if color == constants.UNDEFINED:
        return COMM_NULL
    index = colors.index(color)
    return Intracomm(CommState(base + index, members[color], slots[index],
                               parent=state))


def split_layout(choices, ranks):
    """(the colors of a Split's communicators in order, each one's world ranks, ordered
    by key, then rank): one pass over every rank's (color, key) in ``choices``."""
    by_color = {}
    for rank, (color, key) in enumerate(choices):
        if color != constants.UNDEFINED:
            by_color.setdefault(color, []).append((key, rank))
    colors = sorted(by_color)
    return colors, {c: [ranks[r] for _, r in sorted(by_color[c])] for c in colors}


def plan_split(layout):
    """Rank 0's plan for split_by(comm, choices, plan) of that ``layout``, made before
    the other ranks know of it (they get it in a collective step of the caller's), or
    the error that prevented it; undo_plan gives it back if the call fails after all."""
    colors, members = layout
    return _allocate_or_error(len(colors), [len(members[c]) for c in colors])


def undo_plan(plan, layout):
    """Give back the barrier slots of a plan_split plan that will not be used."""
    if isinstance(plan, errors.Exception):
        return
    colors, members = layout
    _give_back(job.current(), plan[1], [len(members[c]) for c in colors])


def _agreed_plan(state, sizes):
    """Context ids and barrier slots for new communicators of ``sizes`` members, made
    from the communicator ``state``: rank 0 allocates them and broadcasts the plan,
    or the error it met, which every member then raises."""
    plan = _allocate_or_error(len(sizes), sizes) if state.rank == 0 else None
    if len(state.ranks) == 1:
        return _planned(plan)       # nobody to tell (COMM_SELF.Dup)
    return _planned(own_bcast(Intracomm._handle_of(state), plan, 0))


def _split_choice(rank, choice):
    color, key = choice
    try:
        color, key = operator.index(color), operator.index(key)
    except TypeError:
        raise TypeError("Split: rank %d passed color %r and key %r; both must be ints"
                        % (rank, color, key)) from None
    if color < 0 and color != constants.UNDEFINED:
        errors.fail(errors.ERR_ARG, "Split: rank %d passed color %d; a color is an int >= 0 "
                    "or UNDEFINED" % (rank, color))
    return color, key


def _allocate_or_error(count, sizes):
    """Context ids and barrier slots for ``count`` new communicators, or the error
    that prevented it: the leader hands either to every member, so all raise it."""
    world = job.current()
    base = world.new_contexts(count)
    slots = []
    try:
        for size in sizes:
            slots.append(claim_slot(world, size) if size > 1 else None)
    except errors.Exception as exc:
        _give_back(world, slots, sizes)
        return exc
    return base, slots


def _give_back(world, slots, sizes):
    """Give back the barrier slots of communicators that will not be made."""
    for slot, size in zip(slots, sizes):
        if slot is not None:
            release_slot(world, slot, size)


def _created_by_leader(channel, world_ranks, tag, label=None):
    """A communicator of ``world_ranks`` (all in ``channel``): its first member
    allocates it and hands the plan to the others over ``channel``'s handshakes
    with ``tag``; ``label`` travels along and must match (Create_from_group's
    stringtag, whose hash is the tag)."""
    state = channel._s
    leader = state.world_to_rank[world_ranks[0]]
    if state.rank == leader:
        plan = _allocate_or_error(1, [len(world_ranks)])
        for world in world_ranks[1:]:
            channel._isend_bytes(own_dumps((label, plan)), state.world_to_rank[world], tag,
                                 True, HANDSHAKE)
    else:
        sent_label, plan = channel._irecv(leader, tag, None, HANDSHAKE,
                                          loads=pickle.loads).wait()
        if sent_label != label:
            errors.fail(errors.ERR_INTERN, "Create_from_group: stringtags %r and %r share a "
                        "hash and were used at once; use other stringtags"
                        % (label, sent_label))
    base, slots = _planned(plan)
    return Intracomm(CommState(base, world_ranks, slots[0], parent=state))


def _planned(plan):
    if isinstance(plan, errors.Exception):
        raise plan
    return plan


def checked_subset(group, members):
    """The world ranks of ``group``, which must all be in ``members``, else ERR_GROUP."""
    world_ranks = list(group.world_ranks)
    outside = [w for w in world_ranks if w not in members]
    if outside:
        errors.fail(errors.ERR_GROUP, "the group holds processes that are not in this "
                    "communicator (world ranks %s); build it from this communicator's "
                    "Get_group()" % outside)
    return world_ranks


class _Unbound(Intracomm):
    """COMM_WORLD and COMM_SELF before this process is a rank: each rank binds them
    to its world when it starts (or at their first use, when that comes first),
    making them plain Intracomm handles: ``type(COMM_WORLD)`` is Intracomm, as in
    mpi4py, and reaching its state is as fast as any communicator's (an instance
    attribute, no property)."""

    @property
    def _state_value(self):
        job.current()   # a program run without the launcher becomes a rank here
        if type(self) is _Unbound:
            _bind(self)
        return self._state_value


def _bind(handle):
    handle.__class__ = Intracomm
    handle._state_value = _make_predefined(handle._which)


def _predefined_comm(which):
    handle = super(Comm, _Unbound).__new__(_Unbound)
    handle._which = which
    handle._constant = True     # free() leaves it alone (handle.IntHandle)
    return handle


def _make_predefined(which):
    world = job.current()
    if which == "COMM_WORLD":
        return CommState(world.world_context, world.group, world.world_slot,
                         "MPI_COMM_WORLD")
    if which == "SESSIONS":
        return CommState(job.SESSION_CONTEXT, range(world.size), None, "sessions")
    return CommState(job.SELF_CONTEXT, [world.rank], None, "MPI_COMM_SELF")


COMM_WORLD = _predefined_comm("COMM_WORLD")
COMM_SELF = _predefined_comm("COMM_SELF")
_SESSIONS = _predefined_comm("SESSIONS")     # carries Create_from_group's handshakes only


@job.on_new_rank
def _bind_predefined():
    for handle in (COMM_WORLD, COMM_SELF, _SESSIONS):
        _bind(handle)
COMM_NULL = Intracomm()
COMM_NULL._constant = True     # free() leaves it alone (handle.IntHandle)
COMM_CLASSES[None] = Intracomm
DUPLICATES[None] = duplicate


def _collectives_on_comm():
    """mpi4py defines the collective calls on Comm, so code calls them as
    ``MPI.Comm.Bcast(comm, ...)`` (mpi4py.util.pkl5 does); shmrma's live in the
    mixins above, which build on comm.py, so Comm gets them here."""
    for mixin in (PersistentCollectives, NonblockingCollectives, Collectives):
        for name, member in vars(mixin).items():
            if name[:1].isalpha() and callable(member) and name not in vars(Comm):
                setattr(Comm, name, member)


_collectives_on_comm()
