"""Communicators on the mpi backend: mpi4py's, carrying lists of ``MPI.Sync``
handles typed ``MPI.HANDLE_SYNC`` (docs/api.md, extensions) in point-to-point calls and
non-reducing collectives.

A handle message travels as its wire form (shmrma's synchandle: 128 bytes per
handle) typed MPI_BYTE, and a receive turns the bytes back into handles in the
program's list when it completes. Communicators made from these ones (Dup,
Split, Create, ...) are of this class too, so handles travel on them as well.
"""
import functools
import itertools

from mpi4py import MPI as _mpi

from ..types import buffers
from ..types.datatype import HANDLE_SYNC
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


@errors.translated
def _refuse(call):
    buffers.refuse_handles(call)


def refuse_typed_handles(call, args, kwargs):
    """ERR_TYPE when an argument is a buffer or target spec typed HANDLE_SYNC (R154),
    as on shared memory, where mpi4py would raise TypeError for a datatype it does
    not know. Quick, as it runs on every RMA call: a spec's datatype is its last
    item ([buf, type], [buf, count, type], [disp, count, type])."""
    for arg in itertools.chain(args, kwargs.values()) if kwargs else args:
        if type(arg) in (list, tuple) and len(arg) > 1 and arg[-1] is HANDLE_SYNC:
            _refuse(call)


def refusing_handles(method):
    """``method`` refusing HANDLE_SYNC: handles travel only in point-to-point calls
    and Bcast, Gather, Allgather, Alltoall."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        refuse_typed_handles(method.__name__, args, kwargs)
        return method(self, *args, **kwargs)
    return call


def _sending(method):
    """A send of the (buf, dest, tag) family whose buffer may hold handles."""
    @functools.wraps(method)
    def send(self, buf, dest, tag=0):
        return method(self, _wire(buf, False)[0], dest, tag)
    return send


# buffer-taking calls that cannot carry handles (reductions, vector and
# nonblocking collectives)
REFUSING = ("Reduce", "Allreduce", "Scan", "Exscan", "Reduce_scatter",
            "Reduce_scatter_block", "Ireduce", "Iallreduce", "Iscan", "Iexscan",
            "Ireduce_scatter", "Ireduce_scatter_block", "Scatter", "Scatterv", "Gatherv",
            "Allgatherv", "Alltoallv", "Alltoallw", "Ibcast", "Igather", "Igatherv",
            "Iscatter", "Iscatterv", "Iallgather", "Iallgatherv", "Ialltoall",
            "Ialltoallv", "Ialltoallw", "Send_init", "Ssend_init", "Bsend_init",
            "Rsend_init", "Recv_init", "Sendrecv_replace")


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

    # more methods: mpi4py's, wrapped as WRAPPED (below the class) says

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


WRAPPED = {
    _derived: ("Dup", "Split", "Split_type", "Create", "Create_group"),
    _sending: ("Send", "Isend", "Ssend", "Issend", "Bsend", "Ibsend", "Rsend", "Irsend"),
    refusing_handles: REFUSING,
}
for _wrap, _names in WRAPPED.items():
    for _name in _names:
        setattr(Intracomm, _name, _wrap(getattr(_mpi.Intracomm, _name)))
