"""Communicators on the mpi backend: mpi4py's, carrying lists of ``MPI.Sync``
handles typed ``MPI.HANDLE_SYNC`` (API.md §9) in point-to-point calls and
non-reducing collectives.

A handle message travels as its wire form (shmrma's synchandle: 128 bytes per
handle) typed MPI_BYTE, and a receive turns the bytes back into handles in the
program's list when it completes. Communicators made from these ones (Dup,
Split, Create, ...) are of this class too, so handles travel on them as well.
"""
from mpi4py import MPI as _mpi

from .. import buffers
from ..datatype import HANDLE_SYNC
from . import errors
from .extends import Extends
from .requests import PyRequest


def _is_handles(spec):
    return isinstance(spec, (list, tuple)) and len(spec) >= 2 and spec[-1] is HANDLE_SYNC


@errors.translated
def _wire(spec, writable, parts=0):
    """(what mpi4py sends or receives, the HandleMessage or None) for a buffer spec."""
    if not _is_handles(spec):
        return spec, None
    message = buffers.message(spec, writable, blocks=parts, handles=True)
    return [message.data, _mpi.BYTE], message


@errors.translated
def _finish(message, nbytes=None):
    if message is not None:
        message.finish(nbytes)


class HandleReceive(PyRequest):
    """An Irecv of handles: the MPI's request, then the handles into the list."""

    def __init__(self, inner, message):
        self._inner, self._message = inner, message
        self._status = _mpi.Status()
        self._arrived = False
        self._active = True

    def _ready(self):
        if not self._arrived:
            self._arrived = self._inner.Test(self._status)
        return self._arrived

    def _complete(self, status):
        self._active = False
        if status is not None:
            status.source, status.tag = self._status.source, self._status.tag
            status.error = self._status.error
        _finish(self._message, self._status.Get_count(_mpi.BYTE))

    def Cancel(self):
        self._inner.Cancel()


def _derived(method):
    """A method making a new communicator that returns one of this class."""
    def make(self, *args, **kwargs):
        made = method(self, *args, **kwargs)
        return Intracomm(made) if isinstance(made, _mpi.Intracomm) else made
    make.__name__, make.__doc__ = method.__name__, method.__doc__
    return make


class Intracomm(_mpi.Intracomm, metaclass=Extends):
    """``MPI.Intracomm`` whose messages may hold Sync handles."""

    _widens = _mpi.Intracomm

    Dup = _derived(_mpi.Intracomm.Dup)
    Split = _derived(_mpi.Intracomm.Split)
    Split_type = _derived(_mpi.Intracomm.Split_type)
    Create = _derived(_mpi.Intracomm.Create)
    Create_group = _derived(_mpi.Intracomm.Create_group)

    def Send(self, buf, dest, tag=0):
        super().Send(_wire(buf, False)[0], dest, tag)

    def Isend(self, buf, dest, tag=0):
        return super().Isend(_wire(buf, False)[0], dest, tag)

    def Recv(self, buf, source=_mpi.ANY_SOURCE, tag=_mpi.ANY_TAG, status=None):
        wire, message = _wire(buf, True)
        if message is None:
            return super().Recv(buf, source, tag, status)
        status = _mpi.Status() if status is None else status
        super().Recv(wire, source, tag, status)
        _finish(message, status.Get_count(_mpi.BYTE))

    def Irecv(self, buf, source=_mpi.ANY_SOURCE, tag=_mpi.ANY_TAG):
        wire, message = _wire(buf, True)
        inner = super().Irecv(wire, source, tag)
        return inner if message is None else HandleReceive(inner, message)

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=_mpi.ANY_SOURCE,
                 recvtag=_mpi.ANY_TAG, status=None):
        wire, message = _wire(recvbuf, True)
        status = _mpi.Status() if status is None and message else status
        super().Sendrecv(_wire(sendbuf, False)[0], dest, sendtag, wire, source, recvtag,
                         status)
        if message is not None:
            _finish(message, status.Get_count(_mpi.BYTE))

    def Bcast(self, buf, root=0):
        wire, message = _wire(buf, True)
        super().Bcast(wire, root)
        _finish(message)

    def Gather(self, sendbuf, recvbuf, root=0):
        wire, message = _wire(recvbuf, True, self.Get_size())
        super().Gather(_wire(sendbuf, False)[0], wire, root)
        _finish(message)

    def Allgather(self, sendbuf, recvbuf):
        wire, message = _wire(recvbuf, True, self.Get_size())
        super().Allgather(_wire(sendbuf, False)[0], wire)
        _finish(message)

    def Alltoall(self, sendbuf, recvbuf):
        wire, message = _wire(recvbuf, True, self.Get_size())
        super().Alltoall(_wire(sendbuf, False, self.Get_size())[0], wire)
        _finish(message)
