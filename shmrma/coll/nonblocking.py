"""Nonblocking collectives of intracommunicators: Ibarrier, Ibcast, Igather(v),
Iscatter(v), Iallgather(v), Ialltoall(v), Ireduce, Iallreduce, Iscan, Iexscan,
Ireduce_scatter(_block).

They run on the communicator's channel (coll/channel.py): at the call a rank
deposits the stream it contributes, without waiting for anyone; its request
completes once the ranks whose streams it needs deposited theirs, when it
copies or folds them (reductions in rank order) straight from shared memory.
Every rank calls the collectives in the same order, so several may be
outstanding. Each collective below is a plan: this rank's stream, the ranks
that read it, the ranks it reads, and what it does with their streams. A rank
whose arguments are wrong raises at the call, having deposited its error where
its stream was awaited, so the ranks that needed it raise at Wait (naming it)
instead of hanging. Sync handles do not travel here (ERR_TYPE).
"""
import collections

from ..core import atomic, constants, errors, job
from ..types import buffers
from ..types import op as ops
from .area import SLICED_ABOVE, SMALL_SLOT, slices
from .blocking import (TABLE, _entry, _Parts, _parts_stream, _plain, _plain_message,
                       _reduce_buffers, _reduce_send, receive_counts)
from .blocking import _fold_into as _fold_parts_into
from .blocking import _in_place
from .channel import Operation, SlicedFold, channel_of, mismatch
from ..p2p.request import Request


class _Collective(Request):
    """The request of a nonblocking collective: done once its operation is."""

    def __init__(self, comm, operation):
        self._null = False
        self._state, self._operation = comm._s, operation
        self._channel = channel_of(comm._s)

    @property
    def _done(self):
        return self._operation.done

    def _poll(self):
        operation = self._operation
        if not operation.done:
            self._channel.progress()
        if operation.done and operation.error is not None:
            self._error, operation.error = operation.error, None
        return operation.done

    def _describe(self):
        operation = self._operation
        if not operation.deposited:
            return ("%s on %s: its turn to deposit (a rank has not finished a collective "
                    "%d steps back)" % (operation.name, self._channel.label,
                                        self._channel.started - operation.step))
        if getattr(operation, "pending", None) is not None:     # a SlicedFold's second half
            return "%s on %s: rank %s has not folded its slice yet" % (
                operation.name, self._channel.label, operation.waiting_for)
        return "%s on %s: nothing yet from rank %s" % (operation.name, self._channel.label,
                                                       operation.waiting_for)

    def _peers(self):
        return self._state.ranks


def _start(comm, name, plan):
    """Run ``plan()`` -> (stream, readers, sources, finish) and start the collective;
    when plan raises, deposit its error class for the readers, then raise."""
    channel = channel_of(comm._s)
    try:
        stream, readers, sources, finish = plan()
    except Exception as exc:
        error_class = (exc.Get_error_class() if isinstance(exc, errors.Exception)
                       else errors.ERR_ARG)
        channel.start(Operation(name, None, comm._others(), [], None, error_class))
        raise
    kind = SlicedFold if isinstance(finish, _SlicedFold) else Operation
    operation = kind(name, stream, readers, sources, finish)
    channel.start(operation)
    return _Collective(comm, operation)


def _take(name, rank, view, into):
    """Copy rank's ``view`` into ``into``, which it must fill exactly."""
    if len(view) != len(into):
        raise mismatch(name, rank, len(view), len(into))
    into[:] = view


def _table_part(view, index):
    """Part ``index`` of a stream that starts with a table (collective._parts_stream)."""
    offset, length = _entry(view, index) if len(view) >= (index + 1) * TABLE.size else (0, 0)
    return view[offset:offset + length]


def _same_lengths(name, mine, views):
    """Raise the mismatch of the first stream not as long as ``mine``."""
    for rank, view in views.items():
        if len(view) != len(mine):
            _take(name, rank, view, mine)   # raises the mismatch


def _fold_into(name, op, send, receive, views, folded, me, block=None):
    """``receive`` = the vectors of the ranks ``folded`` (their streams, ``send`` for
    this rank) folded in rank order, over the byte range ``block`` (all when None);
    every stream must be as long as ``send``."""
    mine = memoryview(send.data).cast("B")
    _same_lengths(name, mine, views)
    if not folded:
        return      # Iexscan at rank 0: nothing to fold
    low, high = block or (0, len(mine))
    parts = [(mine if rank == me else views[rank])[low:high] for rank in folded]
    _fold_parts_into(parts, op, send.datatype, memoryview(receive.data).cast("B"))
    receive.finish()


class _SlicedFold:
    """A whole fold that every member splits (nbcarea.SlicedFold runs it): this
    member folds its slice of every vector into the receive buffer (a scratch one
    at a member that receives nothing: Ireduce's others) and over that slice of
    its own stream, and takes the others' folded slices if it receives; the
    slices are the blocking fold's (collarea.slices)."""

    def __init__(self, name, op, send, receive, me, nranks):
        self.name, self.op, self.send, self.me = name, op, send, me
        self.receive, self.takes = receive, receive is not None
        mine = memoryview(send.data).cast("B")
        self.cut = slices(len(mine), nranks, buffers.item_bytes(send.datatype))
        low, high = self.cut[me]
        self.result = memoryview(receive.data).cast("B") if self.takes else \
            memoryview(bytearray(high - low))
        self.start = 0 if self.takes else low     # where result lies in the vector

    @staticmethod
    def wanted(nranks, send):
        """Is a whole fold of ``send`` at ``nranks`` members sliced (as collarea.fold
        slices one that the small area does not carry)?"""
        return nranks > SLICED_ABOVE and len(memoryview(send.data).cast("B")) > SMALL_SLOT

    def fold_slice(self, views, own):
        _same_lengths(self.name, own, views)
        low, high = self.cut[self.me]
        parts = [(own if rank == self.me else views[rank])[low:high]
                 for rank in range(len(self.cut))]
        into = self.result[low - self.start:high - self.start]
        _fold_parts_into(parts, self.op, self.send.datatype, into)
        own[low:high] = into

    def take(self, start, data):
        self.result[start:start + len(data)] = data

    def finish(self):
        if self.takes:
            self.receive.finish()


class NonblockingCollectives:
    """Mixin of Intracomm; it uses the buffer helpers of collective.Collectives."""

    def Ibarrier(self):
        """Nonblocking barrier synchronization; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Ibarrier"], None, None, None, 0)
        if request is not False:
            return request
        others = self._others()
        return _start(self, "Ibarrier", lambda: (b"", others, others, None))

    def Ibcast(self, buf, root=0):
        """Nonblocking broadcast; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Ibcast"], buf, None, None, root)
        if request is not False:
            return request
        root, others = self._root(root), self._others()
        if self._s.rank == root:
            return _start(self, "Ibcast", lambda: (_plain(buf, False), others, [], None))
        return _start(self, "Ibcast", lambda: self._receive_plan("Ibcast", root, buf, None))

    def _receive_plan(self, name, root, buf, index):
        """A rank that only receives ``buf`` from ``root``: its whole stream, or part
        ``index`` of it (Iscatter)."""
        received = _plain_message(buf, True)

        def finish(views):
            view = views[root] if index is None else _table_part(views[root], index)
            _take(name, root, view, received.data)
            received.finish()
        return b"", [], [root], finish

    def Igather(self, sendbuf, recvbuf, root=0):
        """Nonblocking gather; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Igather"], sendbuf, recvbuf, None, root)
        if request is not False:
            return request
        return self._igather("Igather", sendbuf, recvbuf, root, self._own_part)

    def Igatherv(self, sendbuf, recvbuf, root=0):
        """Nonblocking gather with varying counts; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Igatherv"], sendbuf, recvbuf, None, root)
        if request is not False:
            return request
        return self._igather("Igatherv", sendbuf, recvbuf, root, self._vector_with_own)

    def _igather(self, name, sendbuf, recvbuf, root, with_own):
        root = self._root(root)
        if self._s.rank != root:
            return _start(self, name, lambda: (_plain(sendbuf, False), [root], [], None))

        def plan():
            parts = with_own(sendbuf, recvbuf, name)
            return b"", [], self._others(), self._taker(name, parts, lambda view, rank: view)
        return _start(self, name, plan)

    def _taker(self, name, parts, part_of):
        """The finish that takes ``part_of(view, rank)`` of each other rank into its
        part of ``parts``."""
        def finish(views):
            for rank, view in views.items():
                _take(name, rank, part_of(view, rank), parts.part(rank))
            parts.finish()
        return finish

    def Iscatter(self, sendbuf, recvbuf, root=0):
        """Nonblocking scatter; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Iscatter"], sendbuf, recvbuf, None, root)
        if request is not False:
            return request
        return self._iscatter("Iscatter", sendbuf, recvbuf, root, self._parts_of)

    def Iscatterv(self, sendbuf, recvbuf, root=0):
        """Nonblocking scatter with varying counts; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Iscatterv"], sendbuf, recvbuf, None, root)
        if request is not False:
            return request
        return self._iscatter("Iscatterv", sendbuf, recvbuf, root, self._vector_parts)

    def _iscatter(self, name, sendbuf, recvbuf, root, parts_of):
        root, me = self._root(root), self._s.rank
        if me != root:
            return _start(self, name, lambda: self._receive_plan(name, root, recvbuf, me))

        def plan():
            parts = parts_of(sendbuf, False)
            if _in_place(recvbuf) is not constants.IN_PLACE:
                self._copy_own(parts, recvbuf, name)
            return _parts_stream(parts, self.size, me), self._others(), [], None
        return _start(self, name, plan)

    def Iallgather(self, sendbuf, recvbuf):
        """Nonblocking gather to all; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Iallgather"], sendbuf, recvbuf, None, 0)
        if request is not False:
            return request
        return self._iallgather("Iallgather", sendbuf, recvbuf, self._own_part)

    def Iallgatherv(self, sendbuf, recvbuf):
        """Nonblocking gather to all with varying counts; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Iallgatherv"], sendbuf, recvbuf, None, 0)
        if request is not False:
            return request
        return self._iallgather("Iallgatherv", sendbuf, recvbuf, self._vector_with_own)

    def _iallgather(self, name, sendbuf, recvbuf, with_own):
        others = self._others()

        def plan():
            parts = with_own(sendbuf, recvbuf, name)
            return (parts.part(self._s.rank), others, others,
                    self._taker(name, parts, lambda view, rank: view))
        return _start(self, name, plan)

    def Ialltoall(self, sendbuf, recvbuf):
        """Nonblocking all to all scatter/gather; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Ialltoall"], sendbuf, recvbuf, None, 0)
        if request is not False:
            return request
        return self._ialltoall("Ialltoall", sendbuf, recvbuf, self._alltoall_parts)

    def Ialltoallv(self, sendbuf, recvbuf):
        """Nonblocking all to all with varying counts; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Ialltoallv"], sendbuf, recvbuf, None, 0)
        if request is not False:
            return request
        return self._ialltoall("Ialltoallv", sendbuf, recvbuf, self._alltoallv_parts)

    def Ialltoallw(self, sendbuf, recvbuf):
        """Nonblocking all to all with varying counts and datatypes; return a Request."""
        return self._ialltoall("Ialltoallw", sendbuf, recvbuf, self._alltoallw_parts)

    def _ialltoall(self, name, sendbuf, recvbuf, parts_of):
        others, me = self._others(), self._s.rank

        def plan():
            sends, receives = parts_of(sendbuf, recvbuf)
            return (_parts_stream(sends, self.size, me), others, others,
                    self._taker(name, receives, lambda view, rank: _table_part(view, me)))
        return _start(self, name, plan)

    # --- reductions ---
    def Ireduce(self, sendbuf, recvbuf, op=ops.SUM, root=0):
        """Nonblocking reduce to the root; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Ireduce"], sendbuf, recvbuf, op, root)
        if request is not False:
            return request
        root = self._root(root)
        if self._s.rank != root:
            return _start(self, "Ireduce", lambda: self._whole_fold_plan(
                "Ireduce", op, (_reduce_send(sendbuf, op), None), root))
        return _start(self, "Ireduce", lambda: self._whole_fold_plan(
            "Ireduce", op, _reduce_buffers(sendbuf, recvbuf, op), root))

    def Iallreduce(self, sendbuf, recvbuf, op=ops.SUM):
        """Nonblocking reduce to all; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Iallreduce"], sendbuf, recvbuf, op, 0)
        if request is not False:
            return request
        return _start(self, "Iallreduce", lambda: self._whole_fold_plan(
            "Iallreduce", op, _reduce_buffers(sendbuf, recvbuf, op), None))

    def Iscan(self, sendbuf, recvbuf, op=ops.SUM):
        """Nonblocking inclusive scan; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Iscan"], sendbuf, recvbuf, op, 0)
        if request is not False:
            return request
        return self._prefix("Iscan", sendbuf, recvbuf, op, 1)

    def Iexscan(self, sendbuf, recvbuf, op=ops.SUM):
        """Nonblocking exclusive scan; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Iexscan"], sendbuf, recvbuf, op, 0)
        if request is not False:
            return request
        return self._prefix("Iexscan", sendbuf, recvbuf, op, 0)

    def _prefix(self, name, sendbuf, recvbuf, op, inclusive):
        """Each rank's vector to the ranks above it; rank r folds ranks 0..r (Iscan)
        or 0..r-1 (Iexscan: rank 0 receives nothing)."""
        rank = self._s.rank
        above, below = list(range(rank + 1, self.size)), list(range(rank))
        return _start(self, name, lambda: self._fold_plan(
            name, op, _reduce_buffers(sendbuf, recvbuf, op), above, below,
            list(range(rank + inclusive))))

    def _fold_plan(self, name, op, buffers, readers, sources, folded, block=None):
        """This rank's vector to ``readers``; at completion the vectors of ``folded``
        (``sources``' and maybe this rank's) folded into the receive buffer."""
        send, receive = buffers
        me = self._s.rank
        return send.data, readers, sources, lambda views: _fold_into(
            name, op, send, receive, views, folded, me, block)

    def _whole_fold_plan(self, name, op, buffers, root):
        """Every rank's whole vector folded at ``root`` (None: everywhere; receive is
        None off the root): sliced among the ranks when large (_SlicedFold), every
        rank then reading every other's vector; else each receiving rank reads the
        others' and folds them all."""
        others, every, me = self._others(), list(range(self.size)), self._s.rank
        send, receive = buffers
        if _SlicedFold.wanted(self.size, send):
            return send.data, others, others, _SlicedFold(name, op, send, receive, me,
                                                          self.size)
        if root is None:
            return self._fold_plan(name, op, buffers, others, others, every)
        if me != root:
            return send.data, [root], [], None
        return self._fold_plan(name, op, buffers, [], others, every)

    def Ireduce_scatter_block(self, sendbuf, recvbuf, op=ops.SUM):
        """Nonblocking reduce-scatter of equal blocks; return a Request."""
        request = _fast_start(self._s.nbc, _KIND["Ireduce_scatter_block"], sendbuf, recvbuf,
                              op, 0)
        if request is not False:
            return request
        return self._ireduce_scatter("Ireduce_scatter_block", sendbuf, recvbuf, op, None)

    def Ireduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=ops.SUM):
        """Nonblocking reduce-scatter of ``recvcounts`` blocks; return a Request."""
        # the C path takes the recvcounts in the root's place
        request = _fast_start(self._s.nbc, _KIND["Ireduce_scatter"], sendbuf, recvbuf, op,
                              recvcounts)
        if request is not False:
            return request
        recvcounts = receive_counts(self, sendbuf, recvbuf, recvcounts)
        return self._ireduce_scatter("Ireduce_scatter", sendbuf, recvbuf, op, recvcounts)

    def _ireduce_scatter(self, name, sendbuf, recvbuf, op, counts):
        """Every rank's whole vector to every other; rank r folds block r of them."""
        others, me, every = self._others(), self._s.rank, list(range(self.size))

        def plan():
            send, receive, offsets = self._scatter_buffers(sendbuf, recvbuf, op, counts)
            return self._fold_plan(name, op, (send, receive), others, others, every,
                                   (offsets[me], offsets[me + 1]))
        return _start(self, name, plan)

    def _own_part(self, sendbuf, recvbuf, name):
        parts = _Parts.of(_plain_message(recvbuf, True, self.size), self.size)
        return self._with_own(parts, sendbuf, _plain, name)


# --- the C path (shmrma/csrc/coll/nonblocking.c) ---------------------------------------------

if atomic.BACKEND == "c":
    from .. import _native
    from . import channel as nbcarea

    class _FastCollective(_native.NbcOp, Request):
        """A nonblocking collective started in C, whose Wait and Test run in C; when
        they cannot, they go on here, as any request's."""

        def _poll(self):
            if not self.read:
                self._channel.progress()
            if self.read and self.error is not None:
                self._error, self.error = self.error, None
            return bool(self.read)

        def _describe(self):
            return "%s on %s: a rank has not started it yet" % (self.name,
                                                                self._channel.label)

        def _peers(self):
            return self._channel.state.ranks

    _native.nbc_setup(slots=nbcarea.SLOTS, inline=nbcarea.INLINE,
                      slot_header=nbcarea.SLOT_HEADER, line=nbcarea.LINE,
                      off_gated=nbcarea.OFF_GATED, wait_slice=job.WAIT_SLICE,
                      active=nbcarea._active, failed=nbcarea.failed, mismatch=mismatch,
                      request_type=_FastCollective, python_wait=Request.Wait,
                      python_test=Request.Test, in_place=constants.IN_PLACE)
    _fast_start = _native.nbc_start
    # the C path numbers its kinds by their names' order in NBC_KINDS
    _KIND = {name: number for number, name in enumerate(_native.NBC_KINDS)}
else:
    def _fast_start(*args):
        return False
    _KIND = collections.defaultdict(type(None))     # any kind: no C path
