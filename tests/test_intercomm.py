"""Intercommunicators (shmrma/comm/intercomm.py, shmrma/coll/inter.py): made by
Create_intercomm, Dup, Split, Create, Create_from_groups; Merge; point-to-point
across; every inter-collective of MPI-3.1 §5.2.2 in its buffer, object,
nonblocking and persistent forms; the errors a user can cause (issue 30).

The groups are uneven at 3 ranks (one rank against two) and even at 4.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from mpitest import HANG_S, raises_mpi


def groups_of(rank, nranks):
    """(this rank's group, the other group) in world ranks, as halves() makes them."""
    low = nranks // 2
    first, second = list(range(low)), list(range(low, nranks))
    return (first, second) if rank < low else (second, first)


def halves(world=None):
    """(color, the intracommunicator of this rank's half, the intercommunicator):
    ranks below size // 2 against the others, as mpi4py's own tests split them."""
    world = world or MPI.COMM_WORLD
    color = 0 if world.rank < world.size // 2 else 1
    intra = world.Split(color, 0)
    inter = intra.Create_intercomm(0, world, world.size // 2 if color == 0 else 0, tag=7)
    return color, intra, inter


@pytest.mark.timeout(HANG_S + 30)
@pytest.mark.parametrize("nranks", [3, 4])
def test_groups_handles_and_point_to_point_across(nranks):
    """The local group is the rank's own half, the remote group the other; a
    destination or source names a rank of the remote group, and a status reports
    one; handles convert as mpi4py's (toint/fromint give an Intercomm)."""
    def body():
        world = MPI.COMM_WORLD
        color, intra, inter = halves()
        out = {"sizes": (inter.Is_inter(), inter.is_intra, inter.rank, inter.size,
                         inter.remote_size),
               "groups": (inter.Get_group().Translate_ranks(list(range(inter.size)),
                                                           world.Get_group()),
                          inter.Get_remote_group().Translate_ranks(
                              list(range(inter.remote_size)), world.Get_group()),
                          inter.Get_remote_group().rank == MPI.UNDEFINED),
               "compare": (inter.Compare(inter), MPI.Comm.Compare(intra, inter),
                           type(MPI.Comm.fromint(inter.toint())).__name__,
                           MPI.Comm(inter).Is_inter())}
        for make in (lambda: MPI.Intercomm(intra), lambda: MPI.Intracomm(inter)):
            with pytest.raises(TypeError):
                make()
        # every rank sends its world rank to each remote rank, receives from each
        requests = [inter.isend(world.rank, dest, tag=3) for dest in range(inter.remote_size)]
        got, status = [], MPI.Status()
        for _ in range(inter.remote_size):
            value = inter.recv(source=MPI.ANY_SOURCE, tag=3, status=status)
            got.append((status.Get_source(), value))
        MPI.Request.waitall(requests)
        out["objects"] = sorted(got)
        buf = np.zeros(1, "i")
        out["sendrecv"] = None
        if inter.rank < min(inter.size, inter.remote_size):     # pairs across
            inter.Sendrecv(np.array([world.rank], "i"), inter.rank, 5, buf, MPI.ANY_SOURCE, 5,
                           status)
            out["sendrecv"] = (int(buf[0]), status.source)
        out["probe"] = inter.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)
        inter.Free()
        intra.Free()
        return out

    results = shmrma.launch(body, nranks, timeout=HANG_S)
    for rank, out in enumerate(results):
        mine, theirs = groups_of(rank, nranks)
        assert out["sizes"] == (True, False, mine.index(rank), len(mine), len(theirs))
        assert out["groups"] == (mine, theirs, True)
        assert out["compare"] == (MPI.IDENT, MPI.UNEQUAL, "Intercomm", True)
        assert out["objects"] == list(enumerate(theirs))
        assert out["probe"] is False
        paired = mine.index(rank) < min(len(mine), len(theirs))
        assert out["sendrecv"] == ((theirs[mine.index(rank)], mine.index(rank)) if paired
                                   else None)


def _inter_root(color, rank, root_color):
    """The root argument at this rank: ROOT at rank 0 of the root's group, PROC_NULL
    at the others there, the root's rank (0) in the other group."""
    if color != root_color:
        return 0
    return MPI.ROOT if rank == 0 else MPI.PROC_NULL


def _buffer_collectives(world, color, inter, start):
    """Every buffer collective once (``start`` runs a call: blocking, nonblocking or
    persistent); returns what each rank received, as lists."""
    me, rsize = world.rank, inter.remote_size
    out = {}
    root = _inter_root(color, inter.rank, 0)
    buf = np.array([me, 10 * me], "i") if root == MPI.ROOT else np.full(2, -1, "i")
    start("Bcast", buf, root=root)
    out["bcast"] = buf.tolist()
    gathered = np.full(rsize, -1, "i")
    start("Gather", np.array([me], "i"), gathered if root == MPI.ROOT else None, root=root)
    out["gather"] = gathered.tolist()
    counts = [k + 1 for k in range(rsize)]
    gatherv = np.full(sum(counts), -1, "i")
    start("Gatherv", np.full(inter.rank + 1, me, "i"),
          [gatherv, counts] if root == MPI.ROOT else None, root=root)
    out["gatherv"] = gatherv.tolist()
    part = np.full(2, -1, "i")
    start("Scatter", np.arange(2 * rsize, dtype="i") * (me + 1) if root == MPI.ROOT
          else None, part, root=root)
    out["scatter"] = part.tolist()
    partv = np.full(inter.rank + 1, -1, "i")
    start("Scatterv", [np.arange(sum(counts), dtype="i"), counts] if root == MPI.ROOT
          else None, partv, root=root)
    out["scatterv"] = partv.tolist()
    every = np.full(rsize, -1, "i")
    start("Allgather", np.array([me], "i"), every)
    out["allgather"] = every.tolist()
    everyv = np.full(sum(counts), -1, "i")
    start("Allgatherv", np.full(inter.rank + 1, me, "i"), [everyv, counts])
    out["allgatherv"] = everyv.tolist()
    sent = np.array([100 * me + j for j in range(rsize)], "i")
    each = np.full(rsize, -1, "i")
    start("Alltoall", sent, each)
    out["alltoall"] = each.tolist()
    eachv = np.full(rsize, -1, "i")
    start("Alltoallv", [sent, [1] * rsize], [eachv, [1] * rsize])
    out["alltoallv"] = eachv.tolist()
    eachw = np.full(rsize, -1, "i")
    start("Alltoallw", [sent, [1] * rsize, [4 * j for j in range(rsize)], [MPI.INT] * rsize],
          [eachw, [1] * rsize, [4 * j for j in range(rsize)], [MPI.INT] * rsize])
    out["alltoallw"] = eachw.tolist()
    reduced = np.full(2, -1, "i")
    root1 = _inter_root(color, inter.rank, 1)
    start("Reduce", np.array([me, 1], "i"), reduced if root1 == MPI.ROOT else None,
          op=MPI.SUM, root=root1)
    out["reduce"] = reduced.tolist()
    total = np.full(2, -1.0)
    start("Allreduce", np.array([me, 2.0 ** me]), total, op=MPI.MAX)
    out["allreduce"] = total.tolist()
    # Reduce_scatter_block (MPI-3.1 §5.10.1): both groups' vectors have the same count,
    # the group's size times its recvcount: here size * rsize, so a block of rsize
    block = np.full(rsize, -1, "i")
    start("Reduce_scatter_block", np.arange(inter.size * rsize, dtype="i") + me, block,
          op=MPI.SUM)
    out["reduce_scatter_block"] = block.tolist()
    # Reduce_scatter: both groups' counts add up to the same (7)
    local_counts = _seven_in(inter.size)
    mine = np.full(local_counts[inter.rank], -1, "i")
    start("Reduce_scatter", np.arange(7, dtype="i") * (me + 1), mine,
          recvcounts=local_counts, op=MPI.SUM)
    out["reduce_scatter"] = mine.tolist()
    start("Barrier")
    return out


def _seven_in(size):
    return [7 // size + (k < 7 % size) for k in range(size)]


def _expected(rank, nranks):
    mine, theirs = groups_of(rank, nranks)
    me, rsize = mine.index(rank), len(theirs)
    first = rank < nranks // 2          # the root's group for the rooted calls (root in group 0)
    out = {}
    out["bcast"] = [0, 0] if not first or me == 0 else [-1, -1]
    out["gather"] = theirs if first and me == 0 else [-1] * rsize
    counts = [k + 1 for k in range(rsize)]
    out["gatherv"] = ([w for k, w in enumerate(theirs) for _ in range(k + 1)]
                      if first and me == 0 else [-1] * sum(counts))
    out["scatter"] = [-1, -1] if first else [2 * me, 2 * me + 1]   # root is world rank 0
    start = sum(range(1, me + 1))
    out["scatterv"] = [-1] * (me + 1) if first else list(range(start, start + me + 1))
    out["allgather"] = theirs
    out["allgatherv"] = [w for k, w in enumerate(theirs) for _ in range(k + 1)]
    out["alltoall"] = out["alltoallv"] = out["alltoallw"] = [100 * w + me for w in theirs]
    out["reduce"] = ([sum(theirs), rsize] if not first and me == 0 else [-1, -1])
    out["allreduce"] = [max(theirs), 2.0 ** max(theirs)]
    out["reduce_scatter_block"] = [sum(theirs) + rsize * j
                                   for j in range(me * rsize, (me + 1) * rsize)]
    counts = _seven_in(len(mine))
    lo = sum(counts[:me])
    out["reduce_scatter"] = [sum(w + 1 for w in theirs) * i for i in range(lo, lo + counts[me])]
    return out


def _blocking(comm):
    return lambda name, *args, **kwargs: getattr(comm, name)(*args, **kwargs)


def _nonblocking(comm):
    return lambda name, *args, **kwargs: getattr(comm, "I" + name[0].lower() + name[1:])(
        *args, **kwargs).Wait()


def _persistent(comm):
    def start(name, *args, **kwargs):
        request = getattr(comm, name + "_init")(*args, **kwargs)
        for _ in range(2):      # started twice: each Start runs the call anew
            request.Start()
            request.Wait()
        request.Free()
    return start


@pytest.mark.timeout(HANG_S + 30)
@pytest.mark.parametrize("nranks", [3, 4])
@pytest.mark.parametrize("form", ["blocking", "nonblocking", "persistent"])
def test_buffer_collectives_move_data_between_the_groups(nranks, form):
    """MPI-3.1 §5.2.2: each call moves data from one group to the other only (a
    reduction gives a group the other group's vectors reduced), with MPI.ROOT and
    MPI.PROC_NULL at the root's group."""
    def body():
        world = MPI.COMM_WORLD
        color, intra, inter = halves()
        start = {"blocking": _blocking, "nonblocking": _nonblocking,
                 "persistent": _persistent}[form](inter)
        out = _buffer_collectives(world, color, inter, start)
        inter.Free()
        intra.Free()
        return out

    results = shmrma.launch(body, nranks, timeout=HANG_S)
    for rank, out in enumerate(results):
        assert out == _expected(rank, nranks), rank


@pytest.mark.timeout(HANG_S + 30)
@pytest.mark.parametrize("nranks", [3, 4])
def test_object_collectives_move_objects_between_the_groups(nranks):
    """mpi4py's object forms on an intercommunicator (its msgpickle.pxi): the root
    (MPI.ROOT) gets gather's list and reduce's result, the others None; allgather
    and allreduce give each group the other's objects, in their rank order."""
    def body():
        world = MPI.COMM_WORLD
        color, intra, inter = halves()
        me, rsize = world.rank, inter.remote_size
        root = _inter_root(color, inter.rank, 0)
        out = {"bcast": inter.bcast({"from": me}, root),
               "gather": inter.gather(("g", me), root),
               "scatter": inter.scatter([("s", me, j) for j in range(rsize)]
                                        if root == MPI.ROOT else None, root),
               "allgather": inter.allgather(me),
               "alltoall": inter.alltoall([(me, j) for j in range(rsize)]),
               "reduce": inter.reduce([me], MPI.SUM, root),
               "allreduce": inter.allreduce(me, MPI.MAX)}
        inter.barrier()
        inter.Free()
        intra.Free()
        return out

    results = shmrma.launch(body, nranks, timeout=HANG_S)
    for rank, out in enumerate(results):
        first = rank < nranks // 2
        mine, theirs = groups_of(rank, nranks)
        me = mine.index(rank)
        is_root = first and me == 0
        assert out["bcast"] == (None if first else {"from": 0})
        assert out["gather"] == ([("g", w) for w in theirs] if is_root else None)
        assert out["scatter"] == (None if first else ("s", 0, me))
        assert out["allgather"] == theirs
        assert out["alltoall"] == [(w, me) for w in theirs]
        assert out["reduce"] == (theirs if is_root else None)
        assert out["allreduce"] == max(theirs)


@pytest.mark.timeout(HANG_S + 30)
def test_merge_split_create_dup_and_create_from_groups():
    """Merge orders the group passing high=False first (the low group on a tie);
    Split and Create make one intercommunicator per color chosen in both groups
    (COMM_NULL elsewhere); Dup is CONGRUENT, with the attributes copied; a window
    on a merged communicator works; Create_from_groups is CONGRUENT with the
    intercommunicator whose groups it takes (MPI-4.0 §7.6.2)."""
    def body():
        world = MPI.COMM_WORLD
        color, intra, inter = halves()
        out = {}
        merged = inter.Merge(high=(color == 0))     # the upper half first
        out["merge_high"] = (merged.rank, merged.size)
        tie = inter.Merge()
        out["merge_tie"] = tie.rank
        win = MPI.Win.Allocate(8, 8, comm=merged)
        win.Fence()
        win.Put(np.array([world.rank], "q"), (merged.rank + 1) % merged.size)
        win.Fence()
        out["window"] = int(np.frombuffer(win.tomemory(), "q")[0])
        win.Free()
        split = inter.Split(inter.rank % 2, key=-inter.rank)
        out["split"] = (split.size, split.remote_size, split.rank) if split else None
        sub = inter.Create(inter.Get_group().Incl([0]))
        out["create"] = (sub.size, sub.remote_size) if sub else None
        keyval = MPI.Comm.Create_keyval(copy_fn=lambda *args: args[-1])
        inter.Set_attr(keyval, "kept")
        dup = inter.Dup()
        out["dup"] = (type(dup).__name__, dup.Compare(inter), dup.Get_attr(keyval),
                      dup.allgather(world.rank) == inter.allgather(world.rank))
        made = MPI.Intercomm.Create_from_groups(inter.Get_group(), 0,
                                                inter.Get_remote_group(), 0)
        out["from_groups"] = MPI.Comm.Compare(made, inter)
        for comm in (merged, tie, dup, made, inter, intra) + ((split,) if split else ()) \
                + ((sub,) if sub else ()):
            comm.Free()
        return out

    results = shmrma.launch(body, 5, timeout=HANG_S)
    for rank, out in enumerate(results):
        first = rank < 2        # groups [0, 1] and [2, 3, 4]
        me = rank if first else rank - 2
        assert out["merge_high"] == ((rank + 3) % 5, 5)
        assert out["merge_tie"] == rank
        assert out["window"] == [2, 3, 4, 0, 1][(out["merge_high"][0] - 1) % 5]
        assert out["split"] == ([(1, 2, 0), (1, 1, 0)][me] if first else
                                [(2, 1, 1), (1, 1, 0), (2, 1, 0)][me])
        assert out["create"] == ((1, 1) if me == 0 else None)
        assert out["dup"] == ("Intercomm", MPI.CONGRUENT, "kept", True)
        assert out["from_groups"] == MPI.CONGRUENT


@pytest.mark.timeout(HANG_S + 30)
def test_errors_are_the_mpi_class_at_every_rank_and_never_hang():
    """Scan and Exscan are not defined on an intercommunicator (ERR_COMM, §5.11); a
    bad root is ERR_ROOT; a rank whose arguments are wrong raises and the ranks
    that expected its data raise at Wait, naming it, instead of hanging; a buffer
    too small is ERR_TRUNCATE; remote leaders in one's own group are ERR_RANK; an
    intercommunicator's calls refuse an intracommunicator (TypeError), and an
    Intracomm has no Merge, as in mpi4py; ROOT on an intracommunicator is ERR_ROOT;
    a window over an intercommunicator is ERR_COMM (R4)."""
    def body():
        world = MPI.COMM_WORLD
        color, intra, inter = halves()
        buf = np.zeros(2, "i")
        for call in (lambda: inter.Scan(buf, buf.copy()), lambda: inter.exscan(1),
                     lambda: inter.Iscan(buf, buf.copy()), lambda: inter.Exscan_init(buf, buf)):
            with raises_mpi(MPI.ERR_COMM, match="not defined on an intercommunicator"):
                call()
        with raises_mpi(MPI.ERR_ROOT, match="MPI.ROOT"):
            inter.Bcast(buf, root=7)
        # rank 2 (in the second group) passes no buffer to Allgather: it raises, and
        # the first group, which expected its data, raises too
        out = {}
        try:
            inter.Allgather("not a buffer" if world.rank == 2 else np.array([1], "i"),
                            np.zeros(inter.remote_size, "i"))
            out["allgather"] = "returned"
        except TypeError as exc:
            out["allgather"] = ("TypeError", "expected a buffer object" in str(exc))
        except MPI.Exception as exc:
            out["allgather"] = (exc.Get_error_class(), "remote rank 0 raised" in str(exc))
        small = np.zeros(1, "i")
        root = _inter_root(color, inter.rank, 0)
        with pytest.raises(MPI.Exception) if color == 1 else _nothing():
            inter.Bcast(np.arange(2, dtype="i") if root == MPI.ROOT else small, root=root)
        with raises_mpi(MPI.ERR_RANK, match="remote_leader"):
            intra.Create_intercomm(0, world, world.rank)
        for call in (lambda: MPI.Intercomm.Merge(world), lambda: MPI.Intercomm.Split(world)):
            with pytest.raises(TypeError, match="intercommunicator"):
                call()
        out["merge_attr"] = hasattr(world, "Merge")
        with raises_mpi(MPI.ERR_ROOT):
            world.Bcast(buf, root=MPI.ROOT)
        for make in (lambda: MPI.Win.Allocate(8, comm=inter),
                     lambda: MPI.Win.Create(bytearray(8), comm=inter),
                     lambda: MPI.Win.Create_dynamic(comm=inter),
                     lambda: MPI.Win.Allocate_shared(8, comm=inter)):
            with raises_mpi(MPI.ERR_COMM, match="takes an intracommunicator"):
                make()      # R4
        inter.Barrier()         # still usable, in step
        inter.Free()
        intra.Free()
        return out

    results = shmrma.launch(body, 4, timeout=HANG_S)
    for rank, out in enumerate(results):
        assert out["allgather"] == (("TypeError", True) if rank == 2 else
                                    (MPI.ERR_ARG, True) if rank < 2 else "returned")
        assert out["merge_attr"] is False


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.timeout(HANG_S + 60)
def test_a_dead_rank_of_the_other_group_ends_the_job(run_shmrma, tmp_path):
    """A rank waiting in an inter-collective for a rank of the other group that died
    ends the job with the dead rank's status instead of hanging."""
    program = tmp_path / "dead_remote.py"
    program.write_text(
        "import os\nfrom mpi4py import MPI\nw = MPI.COMM_WORLD\n"
        "intra = w.Split(w.rank, 0)\n"
        "inter = intra.Create_intercomm(0, w, 1 - w.rank)\n"
        "if w.rank == 1:\n    os._exit(4)\n"
        "inter.Barrier()\n")
    result = run_shmrma(["-n", 2, "--timeout", HANG_S, program], timeout=HANG_S + 30)
    assert result.returncode == 4, result.stderr


@pytest.mark.timeout(HANG_S + 60)
@pytest.mark.parametrize("nranks", [2, 5, 8])
def test_outstanding_nonblocking_collectives_keep_their_order_under_repetition(nranks):
    """Several nonblocking inter-collectives outstanding at once, completed in
    another order, over many rounds, with p2p on the same intercommunicator in
    between: each gets its own data (their messages never mix)."""
    def body():
        world = MPI.COMM_WORLD
        color, intra, inter = halves()
        rsize = inter.remote_size
        bad = []
        for round_ in range(40):
            root = _inter_root(color, inter.rank, round_ % 2)
            value = np.array([world.rank + round_], "i")
            gathered = np.full(rsize, -1, "i")
            total = np.zeros(1, "i")
            bcast = np.array([round_], "i") if root == MPI.ROOT else np.full(1, -1, "i")
            requests = [inter.Iallgather(value, gathered), inter.Ibcast(bcast, root),
                        inter.Iallreduce(value, total, MPI.SUM), inter.Ibarrier()]
            inter.send(round_, inter.rank % rsize, tag=round_)
            for request in reversed(requests):
                request.Wait()
            theirs = inter.Get_remote_group().Translate_ranks(list(range(rsize)),
                                                               world.Get_group())
            if gathered.tolist() != [w + round_ for w in theirs] or \
                    int(total[0]) != sum(theirs) + rsize * round_:
                bad.append(round_)
            if root not in (MPI.ROOT, MPI.PROC_NULL) and int(bcast[0]) != round_:
                bad.append(("bcast", round_))
            while inter.Iprobe(MPI.ANY_SOURCE, round_):
                inter.recv(source=MPI.ANY_SOURCE, tag=round_)
        inter.Barrier()
        inter.Free()
        intra.Free()
        return bad

    assert shmrma.launch(body, nranks, timeout=HANG_S) == [[]] * nranks
