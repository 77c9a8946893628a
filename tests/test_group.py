"""Process groups (docs/api.md; the groups of Start/Post and Get_group, R28, R92, R93).

Expected results were read off mpi4py 4.1 + MPICH 5.0 on a world of 4 ranks.
The calling process's world rank comes from shmrma.core.job, replaced here by a stub.
"""
import pickle
import sys
import types

import numpy as np
import pytest

import shmrma
from shmrma.core import errors
from shmrma.core.constants import IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL
from shmrma.comm.group import GROUP_EMPTY, GROUP_NULL, Group, make_group
from mpitest import raises_mpi


@pytest.fixture
def as_world_rank(monkeypatch):
    """Make shmrma.core.job.world_rank() answer a chosen rank, without starting a job."""
    job = sys.modules.get("shmrma.core.job")
    if job is None:
        try:
            import shmrma.core.job as job
        except ImportError:
            job = types.ModuleType("shmrma.core.job")
            monkeypatch.setitem(sys.modules, "shmrma.core.job", job)
            monkeypatch.setattr(shmrma, "job", job, raising=False)

    def set_rank(rank):
        monkeypatch.setattr(job, "world_rank", lambda: rank, raising=False)
    set_rank(0)
    return set_rank


@pytest.fixture
def world():
    return make_group(range(4))


def members(group):
    return list(group.world_ranks)


# -- accessors -------------------------------------------------------------------

def test_size_rank_and_world_ranks(world, as_world_rank):
    group = world.Incl([3, 1])
    as_world_rank(1)
    assert (group.Get_size(), group.size, group.Get_rank(), group.rank) == (2, 2, 1, 1)
    assert group.world_ranks == (3, 1)


def test_rank_is_undefined_for_non_members(world, as_world_rank):
    as_world_rank(2)
    assert world.Incl([0, 1]).rank == UNDEFINED and GROUP_EMPTY.rank == UNDEFINED


# -- Incl, Excl, ranges ------------------------------------------------------------

@pytest.mark.parametrize("call,ranks,expected", [
    ("Incl", [3, 1], [3, 1]), ("Incl", [], []), ("Incl", np.array([1, 2]), [1, 2]),
    ("Excl", [0, 2], [1, 3]), ("Excl", [0, 1, 2, 3], []), ("Excl", [], [0, 1, 2, 3]),
    ("Range_incl", [(0, 3, 2)], [0, 2]), ("Range_incl", [(3, 0, -1)], [3, 2, 1, 0]),
    ("Range_incl", [(0, 0, 1), (3, 2, -1)], [0, 3, 2]), ("Range_incl", [(1, 2, 5)], [1]),
    ("Range_excl", [(1, 2, 1)], [0, 3]), ("Range_excl", [], [0, 1, 2, 3])])
def test_subgroups(world, call, ranks, expected):
    assert members(getattr(world, call)(ranks)) == expected


def test_subgroups_translate_back_to_the_source_order(world):
    assert world.Incl([3, 1]).Translate_ranks(None, world) == [3, 1]


def test_empty_results_are_group_empty_like_mpich(world):
    assert world.Incl([]) == GROUP_EMPTY
    assert world.Excl([0, 1, 2, 3]) == GROUP_EMPTY
    assert world.Incl([]) is not GROUP_EMPTY


@pytest.mark.parametrize("call,ranks,bad", [
    ("Incl", [4], "rank 4"), ("Incl", [-1], "rank -1"), ("Incl", [1, 1], "rank 1 is listed twice"),
    ("Excl", [7], "rank 7"), ("Excl", [2, 0, 2], "rank 2 is listed twice"),
    ("Range_incl", [(0, 4, 1)], "rank 4"), ("Range_incl", [(0, 1, 1), (1, 2, 1)], "twice"),
    ("Range_excl", [(0, 1, 1), (1, 2, 1)], "twice"), ("Range_excl", [(-1, 0, 1)], "rank -1")])
def test_bad_ranks_are_err_rank_naming_the_rank_and_the_size(world, call, ranks, bad):
    with raises_mpi(errors.ERR_RANK) as info:
        getattr(world, call)(ranks)
    assert bad in str(info.value) and "size 4" in str(info.value) and call in str(info.value)
    assert members(world) == [0, 1, 2, 3]


def test_ranks_of_an_empty_group_are_all_bad():
    with raises_mpi(errors.ERR_RANK) as info:
        GROUP_EMPTY.Incl([0])
    assert "no members" in str(info.value)


@pytest.mark.parametrize("ranges,message", [
    ([(0, 3, 0)], "stride 0"), ([(3, 0, 1)], "never reaches"), ([(0, 3, -1)], "never reaches")])
def test_bad_ranges_are_err_arg_as_in_mpich(world, ranges, message):
    for call in (world.Range_incl, world.Range_excl):
        with raises_mpi(errors.ERR_ARG) as info:
            call(ranges)
        assert message in str(info.value)


@pytest.mark.parametrize("ranks,error", [
    (None, TypeError), ([1.0], TypeError), (["1"], TypeError), (5, TypeError)])
def test_rank_lists_must_hold_integers(world, ranks, error):
    with pytest.raises(error):
        world.Incl(ranks)


def test_range_triplets_must_have_three_integers(world):
    with pytest.raises(ValueError):
        world.Range_incl([(0, 1)])
    with pytest.raises(TypeError):
        world.Range_incl([(0, 1.5, 1)])


# -- set operations ------------------------------------------------------------------

@pytest.fixture
def pair(world):
    return world.Incl([0, 1, 2]), world.Incl([2, 3, 1])


def test_set_operations_keep_mpi_order(pair):
    first, second = pair
    assert members(Group.Union(first, second)) == [0, 1, 2, 3]
    assert members(Group.Union(second, first)) == [2, 3, 1, 0]
    assert members(Group.Intersection(first, second)) == [1, 2]
    assert members(Group.Intersect(second, first)) == [2, 1]
    assert members(Group.Difference(first, second)) == [0]
    assert Group.Difference(first, first) == GROUP_EMPTY


def test_set_operations_are_classmethods_callable_from_instances(pair):
    first, second = pair
    assert members(first.Union(first, second)) == [0, 1, 2, 3]
    with pytest.raises(TypeError):
        first.Union(second)


def test_set_operations_reject_null_and_non_groups(pair):
    first, _ = pair
    for operation in (Group.Union, Group.Intersection, Group.Difference):
        with raises_mpi(errors.ERR_GROUP):
            operation(first, GROUP_NULL)
        with pytest.raises(TypeError, match="expected Group"):
            operation(first, 5)


# -- Translate_ranks and Compare -----------------------------------------------------

def test_translate_ranks(pair, world):
    first, second = pair
    assert second.Translate_ranks([0, 1, 2, PROC_NULL], first) == [2, UNDEFINED, 1, PROC_NULL]
    assert second.Translate_ranks() == [2, 3, 1]  # into the world group
    assert GROUP_EMPTY.Translate_ranks() == [] and GROUP_EMPTY.Translate_ranks([PROC_NULL]) == [-1]
    assert world.Translate_ranks([3, 0], GROUP_EMPTY) == [UNDEFINED, UNDEFINED]


@pytest.mark.parametrize("rank", [3, -5])
def test_translate_ranks_rejects_ranks_outside_the_group(pair, rank):
    first, second = pair
    with raises_mpi(errors.ERR_RANK) as info:
        second.Translate_ranks([rank], first)
    assert "rank %d" % rank in str(info.value) and "size 3" in str(info.value)


def test_translate_ranks_rejects_null_groups(pair):
    first, _ = pair
    with raises_mpi(errors.ERR_GROUP):
        first.Translate_ranks([0], GROUP_NULL)
    with raises_mpi(errors.ERR_GROUP):
        GROUP_NULL.Translate_ranks()
    with pytest.raises(TypeError):
        first.Translate_ranks([0], "world")


def test_compare(pair, world):
    first, second = pair
    assert first.Compare(first) == IDENT and first.Compare(first.Dup()) == IDENT
    assert first.Compare(world.Incl([2, 1, 0])) == SIMILAR
    assert first.Compare(second) == UNEQUAL
    assert GROUP_EMPTY.Compare(world.Incl([])) == IDENT
    with raises_mpi(errors.ERR_GROUP):
        first.Compare(GROUP_NULL)


# -- handles: null, empty, Dup, Free -------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda g: g.Get_size(), lambda g: g.Get_rank(), lambda g: g.world_ranks, lambda g: g.Dup(),
    lambda g: g.Incl([]), lambda g: g.Excl([]), lambda g: g.Range_incl([]),
    lambda g: g.Compare(GROUP_EMPTY), lambda g: g.Free()])
def test_group_null_raises_err_group(call, as_world_rank):
    with raises_mpi(errors.ERR_GROUP):
        call(GROUP_NULL)
    assert GROUP_NULL == Group() and not GROUP_NULL


def test_group_empty():
    assert GROUP_EMPTY and GROUP_EMPTY.size == 0 and GROUP_EMPTY.Dup() == GROUP_EMPTY


def test_freeing_group_empty_raises_err_group_and_keeps_it():
    with raises_mpi(errors.ERR_GROUP) as info:
        GROUP_EMPTY.Free()
    assert "GROUP_EMPTY" in str(info.value)
    GROUP_EMPTY.free()  # mpi4py's helper skips predefined groups
    assert GROUP_EMPTY and GROUP_EMPTY.size == 0


def test_an_empty_group_returned_by_a_call_can_be_freed(world):
    empty = world.Incl([])
    empty.Free()
    assert empty == GROUP_NULL and GROUP_EMPTY.size == 0


def test_dup_is_a_new_handle_with_the_same_members(world):
    twin = world.Dup()
    assert twin != world and twin.world_ranks == world.world_ranks


def test_free_nulls_the_group_and_invalidates_copies(world):
    alias = Group(world)
    assert alias == world and alias is not world
    world.Free()
    assert world == GROUP_NULL and not world
    with raises_mpi(errors.ERR_GROUP) as info:
        alias.Get_size()
    assert "freed" in str(info.value)
    with raises_mpi(errors.ERR_GROUP):
        Group.Union(alias, GROUP_EMPTY)
    with raises_mpi(errors.ERR_GROUP):
        world.Free()


def test_free_helper(world):
    GROUP_NULL.free()
    world.free()
    assert world == GROUP_NULL


def test_equality_hash_and_type_checks(world):
    assert world == Group(world) and world != world.Dup() and world != (0, 1, 2, 3)
    with pytest.raises(TypeError):     # unhashable, as in mpi4py
        hash(world)
    with pytest.raises(TypeError, match="expected Group"):
        Group([0, 1])


def test_repr(world):
    assert repr(GROUP_NULL) == "MPI.GROUP_NULL" and repr(GROUP_EMPTY) == "MPI.GROUP_EMPTY"
    assert "(0, 1, 2, 3)" in repr(world)


def test_only_the_predefined_groups_pickle_like_mpi4py(world):
    assert pickle.loads(pickle.dumps(GROUP_EMPTY)) is GROUP_EMPTY
    assert pickle.loads(pickle.dumps(GROUP_NULL)) is GROUP_NULL
    with pytest.raises(ValueError, match="cannot serialize"):
        pickle.dumps(world)


@pytest.mark.parametrize("constant", [GROUP_EMPTY, GROUP_NULL])
def test_a_copy_of_a_predefined_group_unpickles_as_a_new_equal_group(constant):
    # mpi4py's def_reduce: only the constant itself comes back as itself
    clone = pickle.loads(pickle.dumps(Group(constant)))
    assert clone is not constant and clone == constant and type(clone) is Group


def test_make_group_copies_its_input():
    ranks = [2, 0]
    group = make_group(ranks)
    ranks.append(1)
    assert group.world_ranks == (2, 0) and make_group([]) == GROUP_EMPTY
