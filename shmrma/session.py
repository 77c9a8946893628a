"""``MPI.Session``: MPI-4 sessions are not available in shmrma yet.

``Session.Init`` raises NotImplementedError, as mpi4py does on an MPI library
without sessions (MPI-3), so programs and mpi4py's tests can tell; the class
and ``SESSION_NULL`` exist for code that names them, and a null session
answers every call with ERR_SESSION, as in MPI. Use COMM_WORLD instead.
"""
from . import errhandler, errors


class Session:
    """``MPI.Session``; every handle is null (SESSION_NULL)."""

    def __init__(self, session=None):
        pass

    def __bool__(self):
        return False

    def __eq__(self, other):
        if not isinstance(other, Session):
            return NotImplemented
        return True     # every session is SESSION_NULL

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(Session)

    def __reduce__(self):
        return "SESSION_NULL"

    @classmethod
    def Init(cls, info=None, errhandler=None):
        raise NotImplementedError("MPI.Session.Init: shmrma has no MPI-4 sessions yet (its "
                                  "MPI version is 3.1); use COMM_WORLD")

    @classmethod
    def Create_errhandler(cls, errhandler_fn):
        return errhandler.create("Session", errhandler_fn)

    def _null(self, *args):
        errors.fail(errors.ERR_SESSION, "the session is SESSION_NULL; shmrma has no "
                    "sessions (Session.Init raises NotImplementedError)")

    Finalize = Get_num_psets = Get_nth_pset = Get_pset_info = Get_info = _null
    Create_group = Get_errhandler = Set_errhandler = Call_errhandler = _null


SESSION_NULL = Session()
