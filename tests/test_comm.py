"""Communicators: COMM_WORLD/SELF/NULL, Dup, Split, Split_type, Create,
Create_group, Get_group, Compare, names, info, Free, Barrier (docs/api.md).

Rules: issue 2 (behaviour as mpi4py + MPICH show it), R28 (a communicator's group
lists its members in order), R29 (unknown info keys are not an error), A39
(errors are MPI.Exception with a class and a message saying what to fix).
"""
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import job
from mpitest import raises_mpi


@pytest.mark.timeout(60)
def test_predefined_communicators():
    """Issue 2: COMM_WORLD and COMM_SELF with rank/size and names; COMM_NULL is
    falsy and raises ERR_COMM when used; COMM_WORLD and COMM_SELF cannot be freed
    (ERR_COMM) and keep working; Comm(comm) is a new handle to the same one (IDENT)."""
    def body():
        world, self_, null = MPI.COMM_WORLD, MPI.COMM_SELF, MPI.COMM_NULL
        out = {
            "world": (world.Get_rank(), world.Get_size(), world.rank, world.size),
            "self": (self_.Get_rank(), self_.Get_size()),
            "names": (world.Get_name(), self_.name, null.Get_name()),
            "bools": (bool(world), bool(self_), bool(null), MPI.Comm() == null),
            "kinds": (world.Is_intra(), world.Is_inter(), world.is_intra,
                      isinstance(world, MPI.Intracomm)),
            "compare": (world.Compare(world), MPI.Intracomm(world).Compare(world),
                        MPI.Comm(world) == world, self_.Compare(world)),
        }
        for comm in (world, self_):
            with raises_mpi(MPI.ERR_COMM, match="cannot be freed"):
                comm.Free()
        for call in (null.Get_rank, null.Get_size, null.Barrier, lambda: null.send(1, 0),
                     lambda: world.Compare(null), lambda: null.Dup()):
            with raises_mpi(MPI.ERR_COMM, match="COMM_NULL"):
                call()
        out["after"] = (world.allreduce(1), self_.allreduce(5), self_.bcast("s"))
        world.Set_name("renamed world")
        out["renamed"] = world.name
        return out

    results = shmrma.launch(body, 2, timeout=50)
    for rank, out in enumerate(results):
        assert out["world"] == (rank, 2, rank, 2)
        assert out["self"] == (0, 1)
        assert out["names"] == ("MPI_COMM_WORLD", "MPI_COMM_SELF", "MPI_COMM_NULL")
        assert out["bools"] == (True, True, False, True)
        assert out["kinds"] == (True, False, True, True)
        assert out["compare"] == (MPI.IDENT, MPI.IDENT, True, MPI.UNEQUAL)
        assert out["after"] == (2, 5, "s")
        assert out["renamed"] == "renamed world"


@pytest.mark.timeout(60)
def test_dup_split_and_split_type():
    """Issue 2, R28: Dup is CONGRUENT with its own traffic; Split orders members by
    (key, rank), gives COMM_NULL for UNDEFINED and SIMILAR for a reordering;
    Split_type(COMM_TYPE_SHARED) keeps every rank (one node); groups list members."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.rank
        out = {}
        dup = world.Dup()
        out["dup"] = (dup.Compare(world), dup.rank, dup.size, dup.name)
        dup.Set_name("my dup")
        world.send("on world", dest=(rank + 1) % 4, tag=1)
        out["separate"] = dup.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
        out["world_msg"] = world.recv(source=(rank - 1) % 4, tag=1)
        half = world.Split(color=rank // 2, key=-rank)
        out["half"] = (half.rank, half.size, half.Get_group().Translate_ranks(
            [0, 1], world.Get_group()), half.allgather(rank))
        reverse = world.Split(0, key=-rank)
        out["reverse"] = (reverse.rank, world.Compare(reverse))
        odd = world.Split(1 if rank % 2 else MPI.UNDEFINED, key=np.int64(rank))
        out["odd"] = odd == MPI.COMM_NULL if rank % 2 == 0 else (odd.rank, odd.size)
        shared = world.Split_type(MPI.COMM_TYPE_SHARED, key=rank % 2)
        out["shared"] = (shared.size, shared.rank, shared.Compare(world))
        out["shared_undefined"] = world.Split_type(MPI.UNDEFINED) == MPI.COMM_NULL
        group = world.Get_group()
        out["group"] = (group.Get_size(), group.Get_rank(), world.group.size)
        out["dup_name"] = dup.name
        for comm in (dup, half, reverse, shared) + ((odd,) if rank % 2 else ()):
            comm.Free()
        return out

    results = shmrma.launch(body, 4, timeout=50)
    for rank, out in enumerate(results):
        assert out["dup"] == (MPI.CONGRUENT, rank, 4, "")
        assert out["separate"] is False
        assert out["world_msg"] == "on world"
        low = 2 * (rank // 2)
        assert out["half"] == (1 - rank % 2, 2, [low + 1, low], [low + 1, low])
        assert out["reverse"] == (3 - rank, MPI.SIMILAR)
        assert out["odd"] == ((rank // 2, 2) if rank % 2 else True)
        assert out["shared"] == (4, [0, 2, 1, 3].index(rank), MPI.SIMILAR)
        assert out["shared_undefined"] is True
        assert out["group"] == (4, rank, 4)
        assert out["dup_name"] == "my dup"


@pytest.mark.timeout(60)
def test_create_and_create_group():
    """Issue 2: Create (collective over the parent) and Create_group (collective
    over the group only) give members a communicator in group order and others
    COMM_NULL; a group with processes outside the communicator is ERR_GROUP."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.rank
        out = {}
        group = world.Get_group().Incl([2, 0])
        created = world.Create(group)
        out["create"] = (None if created == MPI.COMM_NULL
                         else (created.rank, created.size, created.allgather(rank)))
        out["empty"] = world.Create(MPI.GROUP_EMPTY) == MPI.COMM_NULL
        if rank in (0, 2):
            by_group = world.Create_group(group, tag=5)
            out["create_group"] = (by_group.rank, by_group.bcast(rank * 10, root=0))
            by_group.Free()
            created.Free()
        else:
            out["create_group"] = world.Create_group(group) == MPI.COMM_NULL
        pair = world.Split(rank in (0, 2), 0)
        with raises_mpi(MPI.ERR_GROUP, match="not in this communicator"):
            pair.Create(world.Get_group())
        with raises_mpi(MPI.ERR_GROUP):
            pair.Create_group(world.Get_group())
        pair.Free()
        out["after"] = world.allreduce(1)
        return out

    results = shmrma.launch(body, 3, timeout=50)
    assert results[0]["create"] == (1, 2, [2, 0]) and results[2]["create"] == (0, 2, [2, 0])
    assert results[1]["create"] is None
    assert all(out["empty"] for out in results)
    assert results[0]["create_group"] == (1, 20) and results[2]["create_group"] == (0, 20)
    assert results[1]["create_group"] is True
    assert [out["after"] for out in results] == [3, 3, 3]


@pytest.mark.timeout(60)
def test_split_into_single_ranks_takes_no_step():
    """A Split that leaves every rank alone (color=rank, or UNDEFINED) agrees on
    nothing: each rank names its communicator itself, in no collective step, and
    gets a working one whose traffic stays apart from the parent's and from its
    other alone-communicators'."""
    def body():
        world = MPI.COMM_WORLD
        from shmrma.comm import intracomm
        steps = []
        planned = intracomm._agreed_plan
        intracomm._agreed_plan = lambda *args: steps.append(args) or planned(*args)
        try:
            alone = [world.Split(world.rank, 0) for _ in range(2)]
            some = world.Split(MPI.UNDEFINED if world.rank == 1 else world.rank, 0)
            pair = world.Split(0, world.rank)       # two members: planned as before
        finally:
            intracomm._agreed_plan = planned
        out = []
        for tag, comm in enumerate(alone):
            comm.send(("alone", tag), 0, 7)
        world.send(("world", world.rank), world.rank, 7)
        out.append([world.recv(source=world.rank, tag=7)] +
                   [comm.recv(source=0, tag=7) for comm in reversed(alone)])
        out.append([(comm.size, comm.rank, comm.allreduce(world.rank + 1)) for comm in alone])
        out.append(some == MPI.COMM_NULL)
        out.append(len({comm.py2f() for comm in alone + [world]}))
        out.append(len(steps))
        for comm in alone + [pair] + ([] if some == MPI.COMM_NULL else [some]):
            comm.Free()
        return out
    results = shmrma.launch(body, 3, timeout=50)
    for rank, (received, alone, none, handles, steps) in enumerate(results):
        assert received == [("world", rank), ("alone", 1), ("alone", 0)]
        assert alone == [(1, 0, rank + 1)] * 2
        assert none == (rank == 1)
        assert handles == 3
        assert steps == 1       # the pair's plan only


@pytest.mark.timeout(60)
def test_freed_communicator_and_bad_split():
    """Issue 2, A39: a freed communicator raises ERR_COMM everywhere, Free twice
    too; a negative color is ERR_ARG on every rank, even when only one rank passed
    it (nobody is left waiting); afterwards the parent still works."""
    def body():
        world = MPI.COMM_WORLD
        comm = world.Dup()
        handle = comm
        comm.Free()
        out = [bool(comm), comm == MPI.COMM_NULL]
        for call in (comm.Get_rank, comm.Barrier, lambda: comm.bcast(1),
                     lambda: comm.Send(b"x", 0), comm.Dup, comm.Free, handle.Get_size):
            with raises_mpi(MPI.ERR_COMM):
                call()
        with raises_mpi(MPI.ERR_ARG, match="rank 1 passed color -3"):
            world.Split(-3 if world.rank == 1 else 0)
        with pytest.raises(TypeError, match="must be ints"):
            world.Split("red")
        out.append(world.allreduce(world.rank))
        other = world.Dup()         # MPI-3.1 §10.5.4: Disconnect waits for all, then frees
        other.Disconnect()
        out.append(bool(other))
        with raises_mpi(MPI.ERR_COMM):
            MPI.COMM_NULL.Disconnect()
        return out

    assert shmrma.launch(body, 3, timeout=50) == [[False, True, 3, False]] * 3


@pytest.mark.timeout(360)
def test_freeing_recycles_communicator_slots():
    """Issue 2: communicators hold a barrier slot each; creating and freeing more
    than there are slots works, and running out is an ERR_OTHER on every rank that
    says to free communicators (nobody hangs), after which freeing makes room."""
    def body():
        world = MPI.COMM_WORLD
        for _ in range(job.MAX_COMM_SLOTS + 10):
            comm = world.Dup()
            comm.Barrier()
            comm.Free()
        alive = []
        with raises_mpi(MPI.ERR_OTHER, match="Free"):
            for _ in range(job.MAX_COMM_SLOTS + 1):
                alive.append(world.Dup())
        count = len(alive)
        for comm in alive:
            comm.Free()
        last = world.Dup()
        result = last.allreduce(1)
        last.Free()
        return count, result

    results = shmrma.launch(body, 2, timeout=300)    # a hang guard: 9-44 s loaded
    assert results[0] == results[1]
    assert job.MAX_COMM_SLOTS - 10 < results[0][0] < job.MAX_COMM_SLOTS
    assert results[0][1] == 2


@pytest.mark.timeout(60)
def test_info_keeps_unknown_keys():
    """R29, issue 2: Set_info with unknown keys is no error; Get_info gives them back
    (a dict is accepted too); later Set_info calls keep keys they do not mention."""
    def body():
        comm = MPI.COMM_WORLD.Dup()
        comm.Set_info(MPI.Info.Create({"my_unknown_hint": "42"}))
        comm.Set_info({"another_key": "x"})
        info = comm.Get_info()
        items = dict(info.items())
        info.Free()
        dup = MPI.COMM_WORLD.Dup(info={"dup_hint": "yes"})
        dup_items = dict(dup.info.items())
        dup.Free()
        comm.Free()
        return items, dup_items

    items, dup_items = shmrma.launch(body, 1, timeout=50)[0]
    assert items["my_unknown_hint"] == "42" and items["another_key"] == "x"
    assert dup_items["dup_hint"] == "yes"


@pytest.mark.timeout(60)
def test_barrier_waits_for_every_member(tmp_path):
    """Issue 2: Barrier returns only once every member has entered it, on COMM_WORLD
    and on a sub-communicator (where the non-members are not waited for). Each rank
    leaves a mark just before it enters a barrier; whoever leaves it finds every
    member's mark. Rank 1, alone in its group, leaves its sub-communicator's barrier
    before the others enter theirs (it would never, had it waited for them)."""
    def mark(name, rank):
        (tmp_path / ("%s.%d" % (name, rank))).touch()

    def marked(name, ranks):
        return all((tmp_path / ("%s.%d" % (name, rank))).exists() for rank in ranks)

    def body():
        world = MPI.COMM_WORLD
        rank = world.rank
        sub = world.Split(rank % 2, rank)
        members = [0, 2] if rank % 2 == 0 else [1]
        if rank != 1:
            while not marked("sub_left", [1]):  # rank 1 leaves its barrier alone
                time.sleep(0.001)
        if rank == 2:
            time.sleep(0.3)
        mark("sub", rank)
        sub.Barrier()
        sub_saw = marked("sub", members)
        if rank == 1:
            mark("sub_left", rank)
        world.Barrier()  # line everyone up again
        if rank == 1:
            time.sleep(0.3)
        mark("world", rank)
        world.barrier()
        world_saw = marked("world", range(3))
        sub.Free()
        return sub_saw, world_saw

    assert shmrma.launch(body, 3, timeout=50) == [(True, True)] * 3


def test_a_subclass_may_pass_the_communicator_to_new_as_mpi4py_allows():
    """mpi4py's demo reductions.py: class Intracomm(MPI.Intracomm) whose __new__
    calls super().__new__(cls, comm); the object is a handle to that communicator."""
    class Scalable(MPI.Intracomm):
        def __new__(cls, comm=None):
            return super().__new__(cls, comm)

    def body():
        comm = Scalable(MPI.COMM_WORLD)
        return comm == MPI.COMM_WORLD, comm.Get_size(), comm.allreduce(comm.Get_rank())
    assert shmrma.launch(body, 2, timeout=30) == [(True, 2, 1)] * 2


@pytest.mark.timeout(60)
def test_idup_does_not_wait_for_the_other_ranks():
    """MPI-3.1 §6.4.2: Idup is nonblocking. Rank 0 calls Idup and then sends to the
    others, which receive first and call Idup after: a blocking Dup would deadlock. The new
    communicator is usable once the request completed, congruent with its parent,
    with the info given (Idup_with_info); Waitall takes Idup's requests."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            first, request = comm.Idup()
            for rank in range(1, comm.size):
                comm.send("after Idup", rank)
        else:
            note = comm.recv(source=0)
            first, request = comm.Idup()
        unusable = bool(first) if not request.Test() else None
        request.Wait()
        info = MPI.Info.Create()
        info["mpi_assert_no_any_tag"] = "true"
        second, other = comm.Idup_with_info(info)
        MPI.Request.Waitall([other])
        out = (comm.rank and note, unusable, MPI.Comm.Compare(comm, first),
               MPI.Comm.Compare(first, second), first.allreduce(comm.rank),
               second.Get_info().Get("mpi_assert_no_any_tag"))
        first.Free()
        second.Free()
        info.Free()
        return out

    for rank, out in enumerate(shmrma.launch(body, 3, timeout=50)):
        assert out[0] == (0 if rank == 0 else "after Idup")
        assert out[1] in (None, False)          # not a communicator before completion
        assert out[2:] == (MPI.CONGRUENT, MPI.CONGRUENT, 3, "true")


def test_communicator_handles_pickle_as_in_mpi4py():
    """mpi4py's rules: COMM_NULL, COMM_WORLD and COMM_SELF pickle to themselves, a new
    handle to them to an equal new handle; any other communicator is a ValueError
    (it lives in one job). Comm() of anything but a communicator is a TypeError."""
    import pickle

    def body():
        world = MPI.COMM_WORLD
        again = [pickle.loads(pickle.dumps(c)) for c in (MPI.COMM_NULL, world, MPI.COMM_SELF)]
        handle = pickle.loads(pickle.dumps(MPI.Intracomm(world)))
        null = pickle.loads(pickle.dumps(MPI.Comm(MPI.COMM_NULL)))
        dup = world.Dup()
        try:
            pickle.dumps(dup)
            refused = None
        except ValueError as exc:
            refused = str(exc)
        dup.Free()
        try:
            MPI.Comm((1, 2, 3))
            typed = None
        except TypeError:
            typed = "TypeError"
        return ([a is b for a, b in zip(again, (MPI.COMM_NULL, world, MPI.COMM_SELF))],
                handle is not world and handle == world, null is not MPI.COMM_NULL and
                null == MPI.COMM_NULL, refused, typed)

    marks, handle, null, refused, typed = shmrma.launch(body, 1, timeout=30)[0]
    assert marks == [True, True, True] and handle and null and typed == "TypeError"
    assert "cannot serialize" in refused


def test_get_parent_is_the_null_intercommunicator():
    """MPI-3.1 §10.3.2: a process not spawned gets MPI_COMM_NULL from Get_parent;
    mpi4py types it Intercomm."""
    parent = MPI.Comm.Get_parent()
    assert isinstance(parent, MPI.Intercomm) and parent == MPI.COMM_NULL and not parent


@pytest.mark.timeout(60)
def test_buffers_attach_to_the_process_and_to_communicators():
    """MPI-4.1 §3.6: one buffer per owner (the process, each communicator); Detach
    gives back the object attached, BUFFER_AUTOMATIC for None; a second Attach is
    ERR_OTHER and keeps the first; a read-only buffer is a BufferError; Flush_buffer
    has nothing to wait for (a Bsend's message is queued when it returns); freeing a
    communicator detaches its buffer."""
    def body():
        comm = MPI.COMM_WORLD.Dup()
        mine = bytearray(1 << 10)
        comm.Attach_buffer(mine)
        MPI.Attach_buffer(None)
        with raises_mpi(MPI.ERR_OTHER, match="Detach_buffer it first"):
            comm.Attach_buffer(bytearray(8))
        try:
            MPI.COMM_SELF.Attach_buffer(b"read-only")
            read_only = None
        except BufferError:
            read_only = "BufferError"
        comm.Bsend(np.arange(3.0), (comm.rank + 1) % comm.size)
        comm.Flush_buffer()
        flushed = comm.Iflush_buffer().Test()
        got = np.zeros(3)
        comm.Recv(got, (comm.rank - 1) % comm.size)
        out = (comm.Detach_buffer() is mine, MPI.Detach_buffer(), read_only, flushed,
               got.tolist(), MPI.Detach_buffer().nbytes)
        comm.Attach_buffer(bytearray(8))
        comm.Free()
        return out

    for out in shmrma.launch(body, 2, timeout=50):
        assert out == (True, MPI.BUFFER_AUTOMATIC, "BufferError", True, [0.0, 1.0, 2.0], 0)


@pytest.mark.timeout(60)
def test_create_with_disjoint_groups_gives_each_its_own_communicator():
    """MPI-3.1 §6.4.2: the ranks may pass different, disjoint groups to Create; each
    group gets a communicator of its own (mpi4py.futures passes [root] at the root
    and the others at the others), and a rank in none gets COMM_NULL."""
    def body():
        world = MPI.COMM_WORLD
        everyone = world.Get_group()
        group = (everyone.Incl([0]) if world.rank == 0 else everyone.Excl([0, 4])
                 if world.rank != 4 else MPI.GROUP_EMPTY)
        comm = world.Create(group)
        out = (comm.size, comm.rank, comm.allgather(world.rank)) if comm else None
        if comm:
            comm.Free()
        return out

    assert shmrma.launch(body, 5, timeout=50) == [
        (1, 0, [0]), (3, 0, [1, 2, 3]), (3, 1, [1, 2, 3]), (3, 2, [1, 2, 3]), None]
