"""mpi4py's private helpers that mpi4py.util.pkl5 imports from MPI
(commimpl.pxi ``_comm_lock``/``_comm_lock_table``, pympicommctx.h
``_commctx_intra``/``_commctx_inter``), and what pkl5 relies on around them:
shmrma's own exchanges (Split, window creation) go neither through a
subclass's overrides nor through MPI.pickle. Behaviour is mpi4py 4.1.2's; no
numbered rule covers it.
"""
import json
import threading

import numpy as np
import pytest

import shmrma
from shmrma import MPI


def test_lock_table_is_per_communicator_and_shared_by_its_handles():
    comm = MPI.COMM_SELF.Dup()
    try:
        table = MPI._comm_lock_table(comm)
        assert table == {} and MPI._comm_lock_table(MPI.Intracomm(comm)) is table
        lock = MPI._comm_lock(comm, "send")
        assert isinstance(lock, type(threading.Lock()))
        assert table == {"send": lock} and MPI._comm_lock(comm, "send") is lock
        assert MPI._comm_lock(comm) is table[None]
        assert MPI._comm_lock_table(MPI.COMM_SELF) is not table
    finally:
        comm.Free()
    with pytest.raises(MPI.Exception):
        MPI._comm_lock_table(comm)


def test_commctx_intra_gives_one_cached_duplicate_and_counting_tags():
    comm = MPI.COMM_SELF.Dup()
    first, tag0 = MPI._commctx_intra(comm)
    second, tag1 = MPI._commctx_intra(MPI.Intracomm(comm))
    assert (tag0, tag1) == (0, 1)
    assert first == second and first != comm
    assert comm.Compare(first) == MPI.CONGRUENT
    comm.Free()
    assert not first     # freed with its communicator, as mpi4py's keyval does
    with pytest.raises(MPI.Exception):
        first.Get_size()


def test_commctx_takes_the_kind_of_communicator_mpi4py_types_it_with():
    with pytest.raises(TypeError, match="expected Intracomm"):
        MPI._commctx_intra(MPI.Comm())
    with pytest.raises(TypeError, match="expected Intercomm"):
        MPI._commctx_inter(MPI.COMM_SELF)
    with pytest.raises(MPI.Exception) as caught:    # shmrma has no live intercomm
        MPI._commctx_inter(MPI.Intercomm())
    assert caught.value.Get_error_class() == MPI.ERR_COMM


class Overriding(MPI.Intracomm):
    """As mpi4py.util.pkl5.Intracomm: object collectives that use _commctx_intra."""

    def allgather(self, sendobj):
        dup, _ = MPI._commctx_intra(self)
        return dup.allgather(sendobj)

    def bcast(self, obj, root=0):
        raise AssertionError("shmrma's own exchanges must not call an override")


@pytest.mark.timeout(60)
def test_creation_calls_use_neither_overrides_nor_mpi_pickle():
    """Dup inside an overriding subclass's allgather (pkl5's case) must not
    re-enter it; with json in MPI.pickle, Split, Create_group, windows and
    Reduce_scatter still work."""
    def body():
        comm = Overriding(MPI.COMM_WORLD)
        gathered = comm.allgather(comm.rank)
        MPI.pickle.__init__(lambda obj: json.dumps(obj).encode(), json.loads)
        try:
            half = comm.Split(comm.rank % 2, 0)
            group = comm.Create_group(comm.Get_group().Incl([0, 1]))
            win = MPI.Win.Allocate(8, comm=comm)
            win.Free()
            out = np.zeros(1, dtype="i")
            comm.Reduce_scatter(np.ones(comm.size, dtype="i"), out, None, MPI.SUM)
            sizes = (half.size, group.size if group else 0, int(out[0]))
            half.Free()
            if group:
                group.Free()
        finally:
            MPI.pickle.__init__()
        return gathered, sizes

    results = shmrma.launch(body, 3, timeout=40)
    assert [r[0] for r in results] == [[0, 1, 2]] * 3
    assert [r[1] for r in results] == [(2, 2, 3), (1, 2, 3), (2, 0, 3)]


def test_alltoall_and_scatter_take_none_and_iterables_as_mpi4py():
    comm = MPI.COMM_SELF
    assert comm.alltoall(None) == [None]
    assert comm.scatter(None) is None
    assert comm.alltoall(iter(["x"])) == ["x"]
    assert comm.scatter(iter(["y"])) == "y"
    with pytest.raises(ValueError, match="expected 1 items"):
        comm.alltoall([1, 2])


def test_dup_gives_a_handle_of_the_same_class_as_mpi4py():
    """pkl5's Intracomm.Dup must give a pkl5 Intracomm (mpi4py's New(type(self)))."""
    dup = Overriding(MPI.COMM_SELF).Dup()
    assert type(dup) is Overriding and dup.allgather(5) == [5]
    world_dup = MPI.COMM_WORLD.Dup()
    assert type(world_dup) is MPI.Intracomm
    handler = MPI.Comm.Create_errhandler(lambda obj, code: None)
    dup.Set_errhandler(handler)        # its class is now the handled variant
    twin = dup.Dup()
    assert type(twin) is Overriding
    for comm in (twin, dup, world_dup):
        comm.Free()
    handler.Free()
