"""``MPI.Session`` (MPI-4.0 §11.3): the sessions model.

A session names the job's process sets, ``mpi://WORLD`` (every rank) and
``mpi://SELF`` (this rank), makes groups of them, and
``Intracomm.Create_from_group(group, stringtag)`` (intracomm.py) turns a group
into a communicator, collectively over the group's members only. shmrma has one
job and no dynamic processes, so these are its only process sets.
"""
from ..core import constants, errors, job
from ..core import errhandler as handlers
from ..p2p.bsend import BufferAttachment, _attached
from .group import make_group
from ..core.handle import HandleBase, IntHandle, SameReferent, constant
from ..core.info import Info, to_dict

PSETS = ("mpi://WORLD", "mpi://SELF")
_THREAD_LEVELS = {constants.THREAD_SINGLE: "MPI_THREAD_SINGLE",
                  constants.THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
                  constants.THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED",
                  constants.THREAD_MULTIPLE: "MPI_THREAD_MULTIPLE"}


class SessionState:
    """What a session is, shared by its handles."""

    def __init__(self, info, handler):
        self.info = info
        self.errhandler = handler


class Session(HandleBase, SameReferent, IntHandle, handlers.ErrorHandling, BufferAttachment):
    """``MPI.Session``: a session context; ``Session()`` is SESSION_NULL."""

    _errhandler_kind = "Session"
    _buffer_owner = "this session"
    _state = None
    _referent_attr = "_state"   # for integer handles (handle.IntHandle)

    @classmethod
    def _of_referent(cls, state):
        session = cls()
        if state is not None:
            session._state = state
            handlers.switch_class(session, state.errhandler)
        return session

    def __init__(self, session=None):
        # Session(other) is a new handle to the same session, as in mpi4py
        if session is not None and not isinstance(session, Session):
            raise TypeError("Session() takes a Session, not %s" % type(session).__name__)
        if session is not None and session._state is not None:
            self._state = session._state
            handlers.switch_class(self, session._state.errhandler)

    @property
    def _s(self):
        state = self._state
        if state is None:
            errors.fail(errors.ERR_SESSION, "the session is SESSION_NULL (never initialized, "
                        "or finalized); start one with MPI.Session.Init()")
        return state

    def __reduce__(self):
        if self._state is None:
            return "SESSION_NULL" if self is SESSION_NULL else (type(self), ())
        raise ValueError("cannot pickle a live MPI.Session: it exists only in its process")

    # --- life ---
    @classmethod
    def Init(cls, info=None, errhandler=None):
        """Create a new session."""
        hints = to_dict(info)
        # as mpi4py: the policy's handler (rc.errors) wins over the one given
        handler = handlers.for_new(handlers.ERRORS_ARE_FATAL if errhandler is None else
                                   handlers.settable(errhandler, "Session"))
        session = cls()
        session._state = SessionState(hints, handler)
        handlers.switch_class(session, handler)
        return session

    def Finalize(self):
        """Finalize a session (the handle becomes SESSION_NULL)."""
        _attached.pop(self._s, None)    # finalizing detaches its buffer (MPI-4.1 §3.6.1)
        self._state = None

    def _free(self):
        self.Finalize()

    # --- process sets ---
    def Get_num_psets(self, info=None):
        """Return the number of process sets: mpi://WORLD and mpi://SELF."""
        self._s
        return len(PSETS)

    def Get_nth_pset(self, n, info=None):
        """Return the name of the ``n``-th process set."""
        self._s
        if not 0 <= n < len(PSETS):
            errors.fail(errors.ERR_ARG, "Get_nth_pset: there are %d process sets; n must be "
                        "0..%d, not %d" % (len(PSETS), len(PSETS) - 1, n))
        return PSETS[n]

    def Get_pset_info(self, pset_name):
        """Return the hints of a process set: its ``mpi_size``."""
        self._s
        return Info.Create({"mpi_size": str(len(_members(pset_name)))})

    def Create_group(self, pset_name):
        """Create a new group of the processes of a process set."""
        self._s
        return make_group(_members(pset_name))

    def Get_info(self):
        """Return the current hints for a session, with its ``thread_level``."""
        info = Info.Create(self._s.info)
        info.Set("thread_level", _THREAD_LEVELS[_thread_level(self._s.info)])
        return info



def _thread_level(hints):
    """A session's thread level: the one its info asked for ("thread_level", MPI-4.0
    §11.3.1), else the highest, as far as the process supports it."""
    from ..core.settings import supported_thread_level
    asked = {name: level for level, name in _THREAD_LEVELS.items()}.get(
        str(hints.get("thread_level", "")).upper(), constants.THREAD_MULTIPLE)
    return min(asked, supported_thread_level())


def _members(pset_name):
    """The world ranks of a process set."""
    world = job.current()
    if pset_name == "mpi://WORLD":
        return world.group
    if pset_name == "mpi://SELF":
        return [world.rank]
    errors.fail(errors.ERR_ARG, "no process set %r; shmrma's are %s"
                % (pset_name, ", ".join(PSETS)))


SESSION_NULL = constant(Session())
