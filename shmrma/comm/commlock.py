"""Per-communicator locks and the private duplicate that mpi4py.util.pkl5 and
mpi4py's object reductions talk on (mpi4py's commimpl.pxi ``_comm_lock``,
``_comm_lock_table`` and msgpickle.pxi / pympicommctx.h ``_commctx_intra`` and
``_commctx_inter``).

Both hang off the communicator itself (its CommState), so every handle of one
communicator shares them, and Comm.Free frees the duplicate with it.
"""
from ..core import atomic
from ..p2p import transport as mailbox
from .intercomm import Intercomm
from .intracomm import Intracomm


def lock_table(comm):
    """The communicator's {key: threading.Lock} table (comm.CommState.lock). A
    program that looks at it sees each object collective's lock once it ran, as in
    mpi4py: from now on they take them (collective.in_turn)."""
    atomic.take_turns()
    return comm._s.locks


def comm_lock(comm, key=None):
    """The communicator's lock for ``key``, created on first use."""
    return comm._s.lock(key)


class _Context:
    """The duplicate of a communicator and the next tag to use on it."""

    __slots__ = ("dup", "tag")

    def __init__(self, dup):
        self.dup = dup
        self.tag = 0

    def next_tag(self):
        if self.tag >= mailbox.MAX_TAG:   # wraps as pympicommctx.h's does
            self.tag = 0
        tag, self.tag = self.tag, self.tag + 1
        return tag


def commctx_intra(comm):
    """(a handle to the communicator's cached duplicate, a new tag on it).

    The first call on a communicator is collective (it duplicates it)."""
    state = _checked(comm, Intracomm)._s
    with comm_lock(comm, "@commctx_intra"):
        if state.commctx is None:
            state.commctx = _Context(comm.Dup())
        tag = state.commctx.next_tag()
        return Intracomm(state.commctx.dup), tag


def commctx_inter(comm):
    """(a handle to the intercommunicator's cached duplicate, a new tag on it, its
    local group's communicator, whether this is the low group); the first call is
    collective over both groups (it duplicates the intercommunicator)."""
    state = _checked(comm, Intercomm)._s
    with comm_lock(comm, "@commctx_inter"):
        if state.commctx is None:
            state.commctx = _Context(comm.Dup())
        tag = state.commctx.next_tag()
        dup = state.commctx.dup._s
        return Intercomm(dup), tag, dup.local, dup.low


def _checked(comm, kind):
    # mpi4py's Cython signature refuses other types so
    if not isinstance(comm, kind):
        raise TypeError("Argument 'comm' has incorrect type (expected %s, got %s)"
                        % (kind.__name__, type(comm).__name__))
    return comm
