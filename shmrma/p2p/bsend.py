"""The buffer of the buffered send mode (MPI-3.1 §3.6, MPI-4.1's buffers of
communicators and sessions).

Bsend takes no room (every send is buffered in shared memory and is in the
receiver's queue when it returns), but programs attach a buffer first, one at a
time per owner: the process (MPI.Attach_buffer) or a communicator (MPI-4.1).
"""
from ..types import buffers
from ..core import constants, errors
from .transfers import Completed


BSEND_OVERHEAD = 96     # MPICH's: what each Bsend takes of the attached buffer
_attached = {}          # None (the process) or a CommState -> the attached buffer


def _attach(owner, buf, where):
    if owner in _attached:
        errors.fail(errors.ERR_OTHER, "Attach_buffer: a buffer is attached to %s already; "
                    "Detach_buffer it first" % where)
    if buf is None or buf is constants.BUFFER_AUTOMATIC:
        buf = constants.BUFFER_AUTOMATIC
    else:
        buffers.as_view(buf, writable=True)     # BufferError when read-only, as mpi4py
    _attached[owner] = buf


def _detach(owner):
    """The buffer attached (BUFFER_AUTOMATIC included); with none, an empty
    MPI.buffer, as mpi4py on MPICH returns."""
    if owner in _attached:
        return _attached.pop(owner)
    from ..types.memory import buffer_class
    return buffer_class().fromaddress(0, 0)


def Attach_buffer(buf):  # noqa: N802 - MPI's name
    """Attach a buffer for sending in buffered mode (shmrma takes nothing of it)."""
    _attach(None, buf, "the process")


def Detach_buffer():  # noqa: N802 - MPI's name
    """Remove an existing attached buffer; return it."""
    return _detach(None)


def Flush_buffer():  # noqa: N802 - MPI's name
    """Block until all buffered messages have been transmitted: at once here.

    Nothing to wait for: a buffered message is in its receiver's queue once Bsend
    returned."""


def Iflush_buffer():  # noqa: N802 - MPI's name
    """Nonblocking flush for buffered messages: a request already complete."""
    return Completed()


class BufferAttachment:
    """MPI-4.1's buffers of communicators and sessions: one per object (its state,
    ``_s``, which raises for a null or freed one), named in messages as
    ``_buffer_owner``."""

    _buffer_owner = "this communicator"

    def Attach_buffer(self, buf):
        """Attach a buffer for sending in buffered mode (shmrma takes nothing of it)."""
        _attach(self._s, buf, self._buffer_owner)

    def Detach_buffer(self):
        """Remove an existing attached buffer; return it."""
        return _detach(self._s)

    def Flush_buffer(self):
        """Block until all buffered messages have been transmitted: at once here."""
        if self._s is not None:     # a live object, else its error
            Flush_buffer()

    def Iflush_buffer(self):
        """Nonblocking flush for buffered messages: a request already complete."""
        return Iflush_buffer() if self._s is not None else None
