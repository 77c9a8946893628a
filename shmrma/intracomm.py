"""Intracommunicators: creating them (Dup, Split, Create, Create_group) and
the predefined COMM_WORLD, COMM_SELF and COMM_NULL."""
from . import constants, errors, job
from .collective import Collectives
from .comm import HANDSHAKE, Comm, CommState, claim_slot


class Intracomm(Collectives, Comm):
    """``MPI.Intracomm``."""

    def Dup(self, info=None):
        comm = self.Split(0, self._s.rank)
        if info is not None:
            comm.Set_info(info)
        return comm

    Clone = Dup

    def Dup_with_info(self, info):
        return self.Dup(info)

    def Split(self, color=0, key=0):
        state = self._s
        if color != constants.UNDEFINED and (not isinstance(color, int) or color < 0):
            errors.fail(errors.ERR_ARG, "color %r is invalid; use an int >= 0 or UNDEFINED"
                        % (color,))
        choices = self.allgather((color, key))
        colors = sorted({c for c, _ in choices if c != constants.UNDEFINED})
        members = {c: sorted((k, r) for r, (cc, k) in enumerate(choices) if cc == c)
                   for c in colors}
        plan = None
        if state.rank == 0:
            plan = _allocate(len(colors), [len(members[c]) for c in colors])
        base, slots = self.bcast(plan, 0)
        if color == constants.UNDEFINED:
            return COMM_NULL
        index = colors.index(color)
        ranks = [state.ranks[r] for _, r in members[color]]
        return Intracomm(CommState(base + index, ranks, slots[index]))

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
        leader = state.world_to_rank[world_ranks[0]]
        if state.rank == leader:
            plan = _allocate(1, [len(world_ranks)])
            for world in world_ranks[1:]:
                self._isend_bytes(_pickle(plan), state.world_to_rank[world], tag, True,
                                  HANDSHAKE)
        else:
            plan = self._irecv(leader, tag, None, HANDSHAKE).wait()
        base, slots = plan
        return Intracomm(CommState(base, world_ranks, slots[0]))


def _pickle(obj):
    from .comm import _dumps
    return _dumps(obj)


def _allocate(count, sizes):
    """Context ids and barrier slots for ``count`` new communicators."""
    world = job.current()
    base = world.new_contexts(count)
    return base, [claim_slot(world, size) if size > 1 else None for size in sizes]


def _checked_subset(group, state):
    world_ranks = list(group.world_ranks)
    outside = [w for w in world_ranks if w not in state.world_to_rank]
    if outside:
        errors.fail(errors.ERR_GROUP, "the group holds processes that are not in this "
                    "communicator (world ranks %s)" % outside)
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
    return CommState(job.SELF_CONTEXT, [world.rank], None, "MPI_COMM_SELF")


_predefined = {}


@job.on_new_rank
def _forget_predefined():
    _predefined.clear()


COMM_WORLD = _Predefined("COMM_WORLD")
COMM_SELF = _Predefined("COMM_SELF")
COMM_NULL = Intracomm()
