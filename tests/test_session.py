"""MPI.Session (MPI-4.0 §11.3) and Intracomm.Create_from_group (§7.4.2), as
mpi4py 4.1.2 exposes them: shmrma's process sets are mpi://WORLD and
mpi://SELF; Create_from_group is collective over the group's members only,
matched by its stringtag. No numbered rule covers sessions.
"""
import pickle

import pytest

import shmrma
from shmrma import MPI
from mpitest import raises_mpi


def test_a_session_names_its_process_sets_and_their_groups():
    session = MPI.Session.Init()
    try:
        assert session and session != MPI.SESSION_NULL and MPI.Session(session) == session
        names = [session.Get_nth_pset(n) for n in range(session.Get_num_psets())]
        assert names == ["mpi://WORLD", "mpi://SELF"]
        assert session.Get_pset_info("mpi://SELF").Get("mpi_size") == "1"
        group = session.Create_group("mpi://WORLD")
        assert (group.Get_size(), group.Get_rank()) == (1, 0)
        selfish = MPI.Group.Create_from_session_pset(session, "mpi://SELF")
        assert MPI.Group.Compare(selfish, group) == MPI.IDENT
        # the level shmrma supports; a session asks for less with its info
        assert session.Get_info().Get("thread_level") == "MPI_THREAD_MULTIPLE"
        single = MPI.Session.Init({"thread_level": "MPI_THREAD_SINGLE"})
        assert single.Get_info().Get("thread_level") == "MPI_THREAD_SINGLE"
        single.Finalize()
        for call, arg in ((session.Get_nth_pset, 2), (session.Get_nth_pset, -1),
                          (session.Get_pset_info, "mpi://NOPE"), (session.Create_group, "x")):
            with raises_mpi(MPI.ERR_ARG):
                call(arg)
        with pytest.raises(ValueError):
            pickle.dumps(session)
    finally:
        session.Finalize()
    assert not session and session == MPI.SESSION_NULL
    with raises_mpi(MPI.ERR_SESSION):
        session.Get_num_psets()
    assert pickle.loads(pickle.dumps(MPI.SESSION_NULL)) is MPI.SESSION_NULL


def test_session_error_handlers():
    calls = []
    handler = MPI.Session.Create_errhandler(lambda obj, code: calls.append(code))
    comm_handler = MPI.Comm.Create_errhandler(lambda obj, code: None)
    session = MPI.Session.Init(errhandler=handler)
    try:
        # mpi4py sets its rc.errors policy's handler on every session it starts, over
        # the one given: mpi4py 4.1.2 on MPICH says ERRORS_RETURN here too
        assert session.Get_errhandler() == MPI.ERRORS_RETURN
        session.Set_errhandler(handler)
        assert session.Get_errhandler() == handler
        with raises_mpi(MPI.ERR_ARG):
            session.Get_nth_pset(5)
        assert calls == [MPI.ERR_ARG]
        with raises_mpi(MPI.ERR_ARG):
            session.Set_errhandler(comm_handler)
    finally:
        session.Finalize()
        handler.Free()
        comm_handler.Free()


@pytest.mark.timeout(60)
def test_create_from_group_is_collective_over_the_members_only():
    """Ranks 0 and 2 make a communicator while rank 1 does not take part (it
    makes one of its own with another stringtag meanwhile); every rank makes a
    WORLD one; a rank outside the group gets ERR_GROUP."""
    def body():
        session = MPI.Session.Init()
        me = MPI.COMM_WORLD.rank
        out = {}
        if me in (0, 2):
            pair = session.Create_group("mpi://WORLD").Incl([0, 2])
            comm = MPI.Intracomm.Create_from_group(pair, "test.pair",
                                                   errhandler=MPI.ERRORS_RETURN)
            out["pair"] = comm.allgather(me)
            comm.Free()
        else:
            alone = MPI.Intracomm.Create_from_group(session.Create_group("mpi://SELF"),
                                                    "test.alone")
            out["alone"] = alone.size
            alone.Free()
            try:
                MPI.Intracomm.Create_from_group(
                    session.Create_group("mpi://WORLD").Incl([0]), "test.outside")
            except MPI.Exception as exc:
                out["outside"] = exc.Get_error_class()
        world = MPI.Intracomm.Create_from_group(session.Create_group("mpi://WORLD"))
        out["world"] = world.allgather(me)
        world.Free()
        session.Finalize()
        return out

    results = shmrma.launch(body, 3, timeout=40)
    assert results[0]["pair"] == results[2]["pair"] == [0, 2]
    assert results[1] == {"alone": 1, "outside": MPI.ERR_GROUP, "world": [0, 1, 2]}
    assert results[0]["world"] == [0, 1, 2]


def test_a_session_has_its_own_buffer_for_buffered_sends():
    """MPI-4.1 §3.6: Session.Attach_buffer/Detach_buffer/Flush_buffer/Iflush_buffer, one
    buffer per session beside the process's and each communicator's; a second Attach
    is ERR_OTHER; after Finalize the handle is SESSION_NULL (ERR_SESSION)."""
    session = MPI.Session.Init()
    mine = bytearray(256)
    session.Attach_buffer(mine)
    MPI.COMM_SELF.Attach_buffer(MPI.BUFFER_AUTOMATIC)       # another owner: no conflict
    with raises_mpi(MPI.ERR_OTHER, match="attached to this session already"):
        session.Attach_buffer(bytearray(8))
    session.Flush_buffer()
    assert session.Iflush_buffer().Test()
    assert session.Detach_buffer() is mine
    assert MPI.COMM_SELF.Detach_buffer() is MPI.BUFFER_AUTOMATIC
    session.Attach_buffer(None)
    session.Finalize()
    with raises_mpi(MPI.ERR_SESSION):
        session.Attach_buffer(mine)
    again = MPI.Session.Init()
    again.Attach_buffer(mine)       # a new session starts with no buffer
    assert again.Detach_buffer() is mine
    again.Finalize()
