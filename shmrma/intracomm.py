"""Intracommunicators: creating them (Dup, Split, Create, Create_group) and
the predefined COMM_WORLD, COMM_SELF and COMM_NULL."""
import operator
import pickle
import zlib

from . import constants, errors, job
from .collective import Collectives, own_allgather, own_bcast, own_dumps
from .comm import HANDSHAKE, Comm, CommState, claim_slot, release_slot
from .nonblocking import NonblockingCollectives


class Intracomm(NonblockingCollectives, Collectives, Comm):
    """``MPI.Intracomm``."""

    def Dup(self, info=None):
        comm = self.Split(0, self._s.rank)
        if info is not None:
            comm.Set_info(info)
        return _handle_like(self, comm)

    Clone = Dup

    def Dup_with_info(self, info):
        return self.Dup(info)

    def Split(self, color=0, key=0):
        state = self._s
        # checked after the exchange, so a bad color on one rank fails every rank
        # instead of leaving the others waiting for it
        choices = [_split_choice(rank, choice)
                   for rank, choice in enumerate(own_allgather(self, (color, key)))]
        color = choices[state.rank][0]
        colors = sorted({c for c, _ in choices if c != constants.UNDEFINED})
        members = {c: sorted((k, r) for r, (cc, k) in enumerate(choices) if cc == c)
                   for c in colors}
        plan = None
        if state.rank == 0:
            plan = _allocate_or_error(len(colors), [len(members[c]) for c in colors])
        base, slots = _planned(own_bcast(self, plan, 0))
        if color == constants.UNDEFINED:
            return COMM_NULL
        index = colors.index(color)
        ranks = [state.ranks[r] for _, r in members[color]]
        return Intracomm(CommState(base + index, ranks, slots[index]))

    def Create_cart(self, dims, periods=None, reorder=False):
        from .topology import create_cart   # topology.py builds on this module
        return create_cart(self, dims, periods, reorder)

    def Split_type(self, split_type, key=0, info=None):
        if split_type == constants.UNDEFINED:
            return self.Split(constants.UNDEFINED, key)
        return self.Split(0, key)

    def Create(self, group):
        state = self._s
        world_ranks = _checked_subset(group, state)
        me = job.world_rank()
        if me not in world_ranks:
            return self.Split(constants.UNDEFINED, 0)
        return self.Split(0, world_ranks.index(me))

    def Create_group(self, group, tag=0):
        """Collective over the members of ``group`` only."""
        state = self._s
        world_ranks = _checked_subset(group, state)
        me = job.world_rank()
        if me not in world_ranks:
            return COMM_NULL
        return _created_by_leader(self, world_ranks, tag)

    @classmethod
    def Create_from_group(cls, group, stringtag="org.mpi4py", info=None, errhandler=None):
        """A communicator of ``group`` (of a session's process set, or any group),
        collective over its members only (MPI-4.0 §7.4.2); concurrent calls by
        one process must use different ``stringtag``s."""
        from .group import Group
        from .info import to_dict
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
        if errhandler is not None:
            comm.Set_errhandler(errhandler)
        return comm


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
        for slot, size in zip(slots, sizes):
            if slot is not None:
                release_slot(world, slot, size)
        return exc
    return base, slots


def _handle_like(model, comm):
    """``comm`` as a handle of ``model``'s class, as mpi4py's Dup makes
    (mpi4py.util.pkl5's Dup gives a pkl5.Intracomm); COMM_WORLD's gives an Intracomm."""
    cls = getattr(type(model), "_plain_class", type(model))    # not the handled variant
    return Intracomm(comm) if issubclass(cls, _Predefined) else cls(comm)


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
    return Intracomm(CommState(base, world_ranks, slots[0]))


def _planned(plan):
    if isinstance(plan, errors.Exception):
        raise plan
    return plan


def _checked_subset(group, state):
    world_ranks = list(group.world_ranks)
    outside = [w for w in world_ranks if w not in state.world_to_rank]
    if outside:
        errors.fail(errors.ERR_GROUP, "the group holds processes that are not in this "
                    "communicator (world ranks %s); build it from this communicator's "
                    "Get_group()" % outside)
    return world_ranks


class _Predefined(Intracomm):
    """COMM_WORLD and COMM_SELF: bound to the world of whichever rank uses them."""

    def __init__(self, which):
        self._which = which

    @property
    def _state_value(self):
        state = _predefined.get(self._which)
        if state is None:
            state = _predefined[self._which] = _make_predefined(self._which)
        return state

    def __reduce__(self):
        return self._which


def _make_predefined(which):
    world = job.current()
    if which == "COMM_WORLD":
        return CommState(job.WORLD_CONTEXT, range(world.size), job.WORLD_SLOT,
                         "MPI_COMM_WORLD")
    if which == "SESSIONS":
        return CommState(job.SESSION_CONTEXT, range(world.size), None, "sessions")
    return CommState(job.SELF_CONTEXT, [world.rank], None, "MPI_COMM_SELF")


_predefined = {}


@job.on_new_rank
def _forget_predefined():
    _predefined.clear()


COMM_WORLD = _Predefined("COMM_WORLD")
COMM_SELF = _Predefined("COMM_SELF")
_SESSIONS = _Predefined("SESSIONS")     # carries Create_from_group's handshakes only
COMM_NULL = Intracomm()
