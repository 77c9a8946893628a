"""MPI process groups: ordered sets of WORLD ranks.

A `Group` refers to a handle holding an immutable tuple of world ranks;
``Group(other)`` shares it, so equality is handle identity (as in mpi4py) while
Compare() looks at the members, and freeing through one object invalidates the
others. Like MPICH, every constructor that ends up with no members returns the
GROUP_EMPTY handle. A bad rank is ERR_RANK wherever it appears, with a message
naming it and the group size; MPICH says ERR_ARG inside Range_incl/Range_excl
and lets a rank listed twice in Incl/Excl through (the standard calls that
erroneous). A zero stride or a range that never reaches its end is ERR_ARG.
"""
import operator

from ..core.constants import IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL
from ..core.errors import ERR_ARG, ERR_GROUP, ERR_RANK, fail
from ..core.handle import Handle, constant, reduce_named


class GroupHandle:
    """What a group handle refers to: the members' world ranks, in group order."""

    def __init__(self, world_ranks):
        self.world_ranks = tuple(world_ranks)
        self.freed = False
        self._rank_of = None

    def rank_of(self, world_rank):
        """The group rank of a world rank, or UNDEFINED when it is not a member."""
        if self._rank_of is None:
            self._rank_of = {member: rank for rank, member in enumerate(self.world_ranks)}
        return self._rank_of.get(world_rank, UNDEFINED)


class Group(Handle):
    """``MPI.Group``: a group of processes; ``Group()`` is a null handle."""

    def __init__(self, group=None):
        self._handle = None if group is None else _handle_of(group, "group")

    # -- handle protocol: handle.Handle; representation ---------------------

    def __repr__(self):
        if self._handle is None:
            return "MPI.GROUP_NULL"
        if self._handle is _EMPTY_HANDLE:
            return "MPI.GROUP_EMPTY"
        return "<MPI.Group world_ranks=%r>" % (self._handle.world_ranks,)

    def __reduce__(self):
        named = reduce_named(self, {"GROUP_NULL": GROUP_NULL, "GROUP_EMPTY": GROUP_EMPTY})
        if named is not None:
            return named
        raise ValueError("cannot serialize '%s.Group' instance" % __name__)

    def _live(self):
        handle = self._handle
        if handle is None:
            fail(ERR_GROUP, "GROUP_NULL is not a valid group")
        if handle.freed:
            fail(ERR_GROUP, "this group was freed")
        return handle

    @property
    def world_ranks(self):
        """The members' world ranks, in group order (ERR_GROUP for a null or freed group)."""
        return self._live().world_ranks

    # -- accessors -----------------------------------------------------------

    def Get_size(self):
        """Return the number of processes in a group."""
        return len(self.world_ranks)

    def Get_rank(self):
        """The calling process's rank in the group, or UNDEFINED if it is not a member."""
        handle = self._live()
        from ..core import job  # the job layer sits below; imported late so groups stay pure
        return handle.rank_of(job.world_rank())

    size = property(Get_size, doc="Number of processes.")
    rank = property(Get_rank, doc="Rank of this process.")

    def Translate_ranks(self, ranks=None, group=None):
        """Ranks in ``group`` (default: the world group) of ``ranks`` of this group.

        Non-members give UNDEFINED, PROC_NULL stays PROC_NULL.
        """
        members = self.world_ranks
        if ranks is None:
            ranks = range(len(members))
        ranks = _rank_list(ranks)
        for position, rank in enumerate(ranks):
            if rank != PROC_NULL:
                _check_rank(rank, len(members), "Translate_ranks", position)
        if group is None:
            return [rank if rank == PROC_NULL else members[rank] for rank in ranks]
        target = _live_handle_of(group, "group")
        return [rank if rank == PROC_NULL else target.rank_of(members[rank]) for rank in ranks]

    def Compare(self, group):
        """Compare two groups: IDENT, SIMILAR or UNEQUAL."""
        mine = self.world_ranks
        other = _live_handle_of(group, "group")
        if mine == other.world_ranks:
            return IDENT
        if sorted(mine) == sorted(other.world_ranks):
            return SIMILAR
        return UNEQUAL

    # -- constructors ----------------------------------------------------------

    def Dup(self):
        """Duplicate a group."""
        return make_group(self.world_ranks, type(self))

    def Incl(self, ranks):
        """A group of the listed members, in the listed order."""
        return self._included(ranks, "Incl")

    def Excl(self, ranks):
        """This group without the listed members, in this group's order."""
        return self._excluded(ranks, "Excl")

    def Range_incl(self, ranks):
        """Incl of the ranks that (first, last, stride) triplets walk through."""
        return self._included(_expand_ranges(ranks, "Range_incl"), "Range_incl")

    def Range_excl(self, ranks):
        """Excl of the ranks that (first, last, stride) triplets walk through."""
        return self._excluded(_expand_ranges(ranks, "Range_excl"), "Range_excl")

    def _included(self, ranks, call):
        members = self.world_ranks
        ranks = _checked_distinct_ranks(ranks, len(members), call)
        return make_group((members[rank] for rank in ranks), type(self))

    def _excluded(self, ranks, call):
        members = self.world_ranks
        excluded = set(_checked_distinct_ranks(ranks, len(members), call))
        return make_group((member for rank, member in enumerate(members)
                           if rank not in excluded), type(self))

    @classmethod
    def Union(cls, group1, group2):
        """Members of group1, then those of group2 not in group1, each in its order."""
        first, second = _pair_of_members(group1, group2)
        seen = set(first)
        return make_group(first + tuple(m for m in second if m not in seen), cls)

    @classmethod
    def Intersection(cls, group1, group2):
        """Members of group1 that are also in group2, in group1's order."""
        first, second = _pair_of_members(group1, group2)
        keep = set(second)
        return make_group((m for m in first if m in keep), cls)

    Intersect = Intersection

    @classmethod
    def Difference(cls, group1, group2):
        """Members of group1 that are not in group2, in group1's order."""
        first, second = _pair_of_members(group1, group2)
        drop = set(second)
        return make_group((m for m in first if m not in drop), cls)

    @classmethod
    def Create_from_session_pset(cls, session, pset_name):
        """The group of a session's process set (Session.Create_group)."""
        return make_group(session.Create_group(pset_name).world_ranks, cls)

    # -- destructor ------------------------------------------------------------

    def Free(self):
        """Free a group (GROUP_EMPTY cannot be freed)."""
        if self is GROUP_EMPTY:
            fail(ERR_GROUP, "cannot free the predefined group GROUP_EMPTY")
        handle = self._live()
        if handle is not _EMPTY_HANDLE:  # other empty groups share GROUP_EMPTY's handle
            handle.freed = True
        self._handle = None

    def _predefined(self):
        return self._handle is _EMPTY_HANDLE


class GroupMembers:
    """The group calls of an object whose state (``_s``) keeps its ``world_ranks`` and
    this process's ``rank`` among them (windows, files)."""

    def Get_group(self):
        """Return a new group of the processes of the window or file."""
        return make_group(self._s.world_ranks)

    group = property(Get_group)

    @property
    def group_size(self):
        """Number of processes in the group."""
        return len(self._s.world_ranks)

    @property
    def group_rank(self):
        """Rank of this process in the group."""
        return self._s.rank


def make_group(world_ranks, cls=Group):
    """A new group of these world ranks; no members gives the GROUP_EMPTY handle."""
    group = cls()
    handle = GroupHandle(world_ranks)
    group._handle = handle if handle.world_ranks else _EMPTY_HANDLE
    return group


def _handle_of(group, argument):
    if not isinstance(group, Group):
        raise TypeError("Argument '%s' has incorrect type (expected Group, got %s)"
                        % (argument, type(group).__name__))
    return group._handle


def _live_handle_of(group, argument):
    _handle_of(group, argument)
    return group._live()


def _pair_of_members(group1, group2):
    return (_live_handle_of(group1, "group1").world_ranks,
            _live_handle_of(group2, "group2").world_ranks)


def _rank_list(ranks):
    return [operator.index(rank) for rank in ranks]


def _check_rank(rank, size, call, position):
    if not 0 <= rank < size:
        valid = "valid ranks are 0..%d" % (size - 1) if size else "it has no members"
        fail(ERR_RANK, "%s: rank %d (at index %d) is not in the group of size %d; %s"
             % (call, rank, position, size, valid))


def _checked_distinct_ranks(ranks, size, call):
    ranks = _rank_list(ranks)
    first_seen = {}
    for position, rank in enumerate(ranks):
        _check_rank(rank, size, call, position)
        if rank in first_seen:
            fail(ERR_RANK, "%s: rank %d is listed twice (at index %d and %d) for a group of "
                           "size %d; ranks must be distinct" % (call, rank, first_seen[rank],
                                                                position, size))
        first_seen[rank] = position
    return ranks


def _expand_ranges(triplets, call):
    """The ranks of (first, last, stride) triplets; MPICH rejects empty walks, so do we."""
    ranks = []
    for first, last, stride in triplets:
        first, last, stride = (operator.index(v) for v in (first, last, stride))
        if stride == 0:
            fail(ERR_ARG, "%s: range (%d, %d, %d) has stride 0" % (call, first, last, stride))
        if (last - first) * stride < 0:
            fail(ERR_ARG, "%s: range (%d, %d, %d) never reaches %d with stride %d"
                 % (call, first, last, stride, last, stride))
        ranks.extend(range(first, last + (1 if stride > 0 else -1), stride))
    return ranks


GROUP_NULL = constant(Group())
_EMPTY_HANDLE = GroupHandle(())
GROUP_EMPTY = constant(Group())
GROUP_EMPTY._handle = _EMPTY_HANDLE

__all__ = ["Group", "GROUP_NULL", "GROUP_EMPTY"]  # what MPI may re-export
