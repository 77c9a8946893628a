"""Error handlers of communicators and windows and sessions, and user error
classes and codes (docs/api.md; R33 for windows). Behaviour is mpi4py
4.1.2's on MPICH: user handlers are called as fn(obj, error_code) and the call
still raises; mpi4py keeps 32 live user handlers per kind.
"""
import pickle

import pytest

from shmrma import MPI
from mpitest import fatal_error_ends_the_job, raises_mpi


@pytest.fixture
def comm():
    dup = MPI.COMM_SELF.Dup()
    yield dup
    dup.Free()


def test_communicators_start_with_errors_return_and_give_handles_of_their_own(comm):
    got = comm.Get_errhandler()
    assert got == MPI.ERRORS_RETURN and got is not MPI.ERRORS_RETURN
    got.Free()
    assert got == MPI.ERRHANDLER_NULL and MPI.ERRORS_RETURN
    MPI.ERRORS_RETURN.Free()     # a constant stays what it is
    assert MPI.ERRORS_RETURN
    with raises_mpi(MPI.ERR_ARG):
        MPI.ERRHANDLER_NULL.Free()


def test_user_handler_is_called_then_the_call_raises(comm):
    calls = []
    handler = MPI.Comm.Create_errhandler(lambda obj, code: calls.append((obj, code)))
    try:
        comm.Set_errhandler(handler)
        assert comm.Get_errhandler() == handler
        comm.Call_errhandler(MPI.ERR_OTHER)
        assert calls == [(comm, MPI.ERR_OTHER)]
        other = MPI.Intracomm(comm)         # a later handle of the communicator
        with raises_mpi(MPI.ERR_RANK):
            other.Send(b"x", 5)
        assert calls[1] == (other, MPI.ERR_RANK)
        comm.Set_errhandler(MPI.ERRORS_RETURN)
        with raises_mpi(MPI.ERR_RANK):
            comm.Send(b"x", 5)
        assert len(calls) == 2
    finally:
        handler.Free()


def test_a_predefined_communicator_with_a_handler_still_pickles_by_name():
    handler = MPI.Comm.Create_errhandler(lambda obj, code: None)
    MPI.COMM_SELF.Set_errhandler(handler)
    try:
        assert pickle.loads(pickle.dumps(MPI.COMM_SELF)) is MPI.COMM_SELF
    finally:
        MPI.COMM_SELF.Set_errhandler(MPI.ERRORS_RETURN)
        handler.Free()


def test_set_errhandler_takes_predefined_and_own_kind_only(comm):
    window_handler = MPI.Win.Create_errhandler(lambda win, code: None)
    try:
        for wrong in (MPI.ERRHANDLER_NULL, window_handler, "ERRORS_RETURN"):
            with raises_mpi(MPI.ERR_ARG):
                comm.Set_errhandler(wrong)
        assert comm.Get_errhandler() == MPI.ERRORS_RETURN
    finally:
        window_handler.Free()
    with pytest.raises(TypeError):
        MPI.Comm.Create_errhandler(42)


def test_thirty_two_live_user_handlers_per_kind_as_mpi4py():
    handlers = [MPI.Comm.Create_errhandler(lambda obj, code: None) for _ in range(32)]
    with pytest.raises(RuntimeError, match="too many"):
        MPI.Comm.Create_errhandler(lambda obj, code: None)
    MPI.Win.Create_errhandler(lambda obj, code: None).Free()    # another kind
    handlers.pop().Free()
    handlers.append(MPI.Comm.Create_errhandler(lambda obj, code: None))
    for handler in handlers:
        handler.Free()


def test_handles_pickle_and_convert_to_integers():
    for constant in (MPI.ERRORS_RETURN, MPI.ERRORS_ARE_FATAL, MPI.ERRORS_ABORT):
        assert pickle.loads(pickle.dumps(constant)) is constant
        copy = pickle.loads(pickle.dumps(MPI.Errhandler(constant)))
        assert copy == constant and copy is not constant
        assert MPI.Errhandler.fromint(constant.toint()) == constant
    user = MPI.Comm.Create_errhandler(lambda obj, code: None)
    assert MPI.Errhandler.f2py(user.py2f()) == user
    with pytest.raises(ValueError, match="user-defined"):
        pickle.dumps(user)
    user.Free()


def test_window_user_handler_and_call():
    win = MPI.Win.Allocate(8, comm=MPI.COMM_SELF)
    calls = []
    handler = MPI.Win.Create_errhandler(lambda obj, code: calls.append(code))
    win.Set_errhandler(handler)
    win.Call_errhandler(MPI.ERR_OTHER)
    with raises_mpi(MPI.ERR_RMA_SYNC):
        win.Put(bytearray(1), 0)
    win.Set_errhandler(MPI.ERRORS_RETURN)
    win.Free()
    handler.Free()
    assert calls == [MPI.ERR_OTHER, MPI.ERR_RMA_SYNC]


@pytest.mark.timeout(120)
def test_errors_are_fatal_on_a_communicator_ends_the_job(capfd):
    """ERRORS_ARE_FATAL set on COMM_WORLD at rank 1: a Send to a bad rank ends
    the job, naming the call; rank 0, waiting in a Barrier, is released."""
    def body():
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
            comm.Send(b"x", 7)
            return "survived"
        comm.Barrier()
        return "rank 0 finished"
    fatal_error_ends_the_job(body, capfd, "Send")


def test_user_error_classes_codes_and_strings():
    error_class = MPI.Add_error_class()
    assert error_class > MPI.ERR_LASTCODE
    assert MPI.Get_error_class(error_class) == error_class
    assert MPI.Get_error_string(error_class) == ""
    code = MPI.Add_error_code(error_class)
    assert MPI.Get_error_class(code) == error_class and code != error_class
    MPI.Add_error_string(code, "my failure")
    assert MPI.Get_error_string(code) == "my failure"
    assert MPI.Exception(code).Get_error_class() == error_class
    for wrong in (lambda: MPI.Add_error_code(12345), lambda: MPI.Add_error_string(
            MPI.ERR_ARG, "x"), lambda: MPI.Remove_error_class(error_class),
            lambda: MPI.Remove_error_code(code), lambda: MPI.Remove_error_class(0)):
        with raises_mpi(MPI.ERR_ARG):
            wrong()
    assert MPI.Get_error_string(code) == "my failure"      # nothing changed
    MPI.Remove_error_string(code)
    MPI.Remove_error_code(code)
    MPI.Remove_error_class(error_class)
    assert MPI.Get_error_class(code) == MPI.ERR_UNKNOWN


def test_negative_exception_codes_are_err_unknown_as_mpi4py():
    assert MPI.Exception(-1) == MPI.ERR_UNKNOWN
    assert MPI.Exception(MPI.ERR_LASTCODE + 1) == MPI.ERR_LASTCODE + 1
