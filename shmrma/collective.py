"""Collective operations of intracommunicators, on objects and on buffers.

They travel on the communicator's collective sub-context with plain
point-to-point sends, which never wait for the receiver, so linear fan-in
and fan-out are deadlock-free; Barrier alone uses a shared-memory slot.
Every collective stays in step when a rank fails (see _Call): the others raise
instead of waiting, and nothing is left behind to derail the next collective.
"""
import operator

from . import buffers, constants, errors
from .derived import element_dtype
from . import op as ops
from .comm import COLLECTIVE, _dumps, slot_barrier
from .request import Status

TAG = 0            # a rank's contribution
NOTICE = 1         # and above: an empty failure notice, NOTICE + class + NOTICE_RANKS * rank
NOTICE_RANKS = 256
_NOWHERE = memoryview(bytearray(0))  # receive target that discards (see _Call.take)


class Collectives:
    """Mixin of Intracomm; relies on Comm's point-to-point core."""

    # --- plumbing -----------------------------------------------------------------
    def _root(self, root):
        size = len(self._s.ranks)
        root = operator.index(root)
        if not 0 <= root < size:
            errors.fail(errors.ERR_ROOT, "root %r is not a rank of this communicator of size "
                        "%d; use 0..%d" % (root, size, size - 1))
        return root

    def _others(self):
        me = self._s.rank
        return [r for r in range(len(self._s.ranks)) if r != me]

    # --- synchronization ------------------------------------------------------------
    def Barrier(self):
        slot_barrier(self._s)

    barrier = Barrier

    # --- objects -------------------------------------------------------------------
    def bcast(self, obj=None, root=0):
        root = self._root(root)
        call = _Call(self, "bcast")
        if self._s.rank == root:
            data = call.local(_dumps, obj)
            for rank in self._others():
                call.send(rank, data, pickled=True)
            call.done()
            return obj
        value, = call.take_objects([root])
        call.done()
        return value

    def gather(self, sendobj, root=0):
        root = self._root(root)
        call = _Call(self, "gather")
        me = self._s.rank
        if me != root:
            call.send(root, call.local(_dumps, sendobj), pickled=True)
            call.done()
            return None
        values = call.take_objects(self._others())
        call.done()
        values.insert(me, sendobj)
        return values

    def scatter(self, sendobj=None, root=0):
        root = self._root(root)
        call = _Call(self, "scatter")
        me = self._s.rank
        if me != root:
            value, = call.take_objects([root])
            call.done()
            return value
        payloads = call.local(_dump_each, sendobj, self.size, "scatter")
        for rank in self._others():
            call.send(rank, payloads and payloads[rank], pickled=True)
        call.done()
        return list(sendobj)[me]

    def allgather(self, sendobj):
        # a gather to rank 0 and a bcast from it, as one call
        call = _Call(self, "allgather")
        data = call.local(_dumps, sendobj)
        if self._s.rank != 0:
            call.send(0, data, pickled=True)
            values, = call.take_objects([0])
        else:
            values = [sendobj] + call.take_objects(self._others())
            whole = call.local(_dumps, values)
            for rank in self._others():
                call.send(rank, whole, pickled=True)
        call.done()
        return values

    def alltoall(self, sendobj):
        call = _Call(self, "alltoall")
        payloads = call.local(_dump_each, sendobj, self.size, "alltoall")
        for rank in self._others():
            call.send(rank, payloads and payloads[rank], pickled=True)
        values = call.take_objects(self._others())
        call.done()
        values.insert(self._s.rank, list(sendobj)[self._s.rank])
        return values

    def reduce(self, sendobj, op=ops.SUM, root=0):
        root = self._root(root)
        call = _Call(self, "reduce")
        me = self._s.rank
        if me != root:
            call.send(root, call.local(_dumps, sendobj), pickled=True)
            call.done()
            return None
        values = call.take_objects(self._others())
        values.insert(me, sendobj)
        result = call.local(_fold, values, op)
        call.done()
        return result

    def allreduce(self, sendobj, op=ops.SUM):
        # a reduce to rank 0 and a bcast from it, as one call
        return self._folded_objects("allreduce", sendobj, op, _total)

    def scan(self, sendobj, op=ops.SUM):
        return self._folded_objects("scan", sendobj, op, _inclusive)

    def exscan(self, sendobj, op=ops.SUM):
        return self._folded_objects("exscan", sendobj, op, _exclusive)

    def _folded_objects(self, name, sendobj, op, pick):
        """Every rank's object to rank 0, which folds them in rank order and sends
        rank r ``pick(folds, r)``, folds[k] being ranks 0..k folded."""
        call = _Call(self, name)
        data = call.local(_dumps, sendobj)
        if self._s.rank != 0:
            call.send(0, data, pickled=True)
            result, = call.take_objects([0])
        else:
            values = [sendobj] + call.take_objects(self._others())
            folds = call.local(_prefix_folds, values, op, pick in _PREFIXES)
            pickled = {}        # one pickle per distinct result (allreduce: one)
            for rank in self._others():
                value = folds and pick(folds, rank)
                if folds and id(value) not in pickled:
                    pickled[id(value)] = call.local(_dumps, value)
                call.send(rank, folds and pickled[id(value)], pickled=True)
            result = folds and pick(folds, 0)
        call.done()
        return result

    # --- buffers -----------------------------------------------------------------
    def Bcast(self, buf, root=0):
        root = self._root(root)
        call = _Call(self, "Bcast")
        if self._s.rank == root:
            data = call.local(_data, buf, False)
            for rank in self._others():
                call.send(rank, data)
        else:
            received = call.receiving(call.local(_message, buf, True))
            call.take([(root, received and received.data)])
        call.done()

    def Gather(self, sendbuf, recvbuf, root=0):
        root = self._root(root)
        call = _Call(self, "Gather")
        if self._s.rank != root:
            call.send(root, call.local(_data, sendbuf, False))
        else:
            parts = call.receiving(call.local(self._parts_with_own, sendbuf, recvbuf,
                                              "Gather"))
            call.take([(rank, parts and parts[rank]) for rank in self._others()])
        call.done()

    def Allgather(self, sendbuf, recvbuf):
        # a Gather to rank 0 and a Bcast from it, as one call
        call = _Call(self, "Allgather")
        parts = call.receiving(call.local(self._parts_with_own, sendbuf, recvbuf,
                                          "Allgather"))
        me = self._s.rank
        if me != 0:
            call.send(0, parts and parts[me])
            call.take([(0, parts and parts.whole)])
        else:
            call.take([(rank, parts and parts[rank]) for rank in self._others()])
            for rank in self._others():
                call.send(rank, parts and parts.whole)
        call.done()

    def Alltoall(self, sendbuf, recvbuf):
        call = _Call(self, "Alltoall")
        both = call.local(self._alltoall_parts, sendbuf, recvbuf)
        sends, receives = both if both else (None, None)
        call.receiving(receives)
        me = self._s.rank
        for rank in self._others():
            call.send(rank, sends and sends[rank])
        if both:
            receives[me][:] = sends[me]
        call.take([(rank, receives and receives[rank]) for rank in self._others()])
        call.done()

    def Scatter(self, sendbuf, recvbuf, root=0):
        self._scatter("Scatter", sendbuf, recvbuf, root, self._parts_of)

    def Scatterv(self, sendbuf, recvbuf, root=0):
        self._scatter("Scatterv", sendbuf, recvbuf, root, self._vector_parts)

    def Gatherv(self, sendbuf, recvbuf, root=0):
        root = self._root(root)
        call = _Call(self, "Gatherv")
        if self._s.rank != root:
            call.send(root, call.local(_plain, sendbuf, False))
        else:
            parts = call.receiving(call.local(self._vector_with_own, sendbuf, recvbuf,
                                              "Gatherv"))
            call.take([(rank, parts and parts.part(rank)) for rank in self._others()])
        call.done()

    def Allgatherv(self, sendbuf, recvbuf):
        # every rank sends its part to every other: sends never wait for the receiver
        call = _Call(self, "Allgatherv")
        parts = call.receiving(call.local(self._vector_with_own, sendbuf, recvbuf,
                                          "Allgatherv"))
        mine = parts and parts.part(self._s.rank)
        for rank in self._others():
            call.send(rank, mine)
        call.take([(rank, parts and parts.part(rank)) for rank in self._others()])
        call.done()

    def Alltoallv(self, sendbuf, recvbuf):
        call = _Call(self, "Alltoallv")
        both = call.local(self._alltoallv_parts, sendbuf, recvbuf)
        sends, receives = both if both else (None, None)
        call.receiving(receives)
        for rank in self._others():
            call.send(rank, sends and sends.part(rank))
        call.take([(rank, receives and receives.part(rank)) for rank in self._others()])
        call.done()

    def Scan(self, sendbuf, recvbuf, op=ops.SUM):
        self._prefix_buffers("Scan", sendbuf, recvbuf, op, _inclusive)

    def Exscan(self, sendbuf, recvbuf, op=ops.SUM):
        self._prefix_buffers("Exscan", sendbuf, recvbuf, op, _exclusive)

    def _prefix_buffers(self, name, sendbuf, recvbuf, op, pick):
        call = _Call(self, name)
        send, receive = call.local(_reduce_buffers, sendbuf, recvbuf, op) or (None, None)
        self._folded_buffers(call, send, receive, op, pick)

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=ops.SUM):
        self._reduce_and_scatter("Reduce_scatter_block", sendbuf, recvbuf, op, None)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=ops.SUM):
        if recvcounts is None:  # every rank's receive count, as mpi4py gathers them
            recvcounts = self.allgather(_count_or_none(recvbuf))
        self._reduce_and_scatter("Reduce_scatter", sendbuf, recvbuf, op, recvcounts)

    def _reduce_and_scatter(self, name, sendbuf, recvbuf, op, counts):
        """The folded vector cut in blocks, rank r getting block r."""
        call = _Call(self, name)
        send, receive, offsets = (call.local(self._scatter_buffers, sendbuf, recvbuf, op,
                                             counts) or (None, None, None))
        self._folded_buffers(call, send, receive, op,
                             lambda folds, rank: folds[-1][offsets[rank]:offsets[rank + 1]])

    def _folded_buffers(self, call, send, receive, op, pick):
        """Every rank's contribution to rank 0, which folds them in rank order and
        sends rank r ``pick(folds, r)`` (bytes; None leaves rank 0's buffer as it
        is), folds[k] being ranks 0..k folded."""
        call.receiving(receive)
        if self._s.rank != 0:
            call.send(0, send and send.data)
            call.take([(0, receive and receive.data)])
        else:
            folds = self._folds_at_root(call, send, op, pick in _PREFIXES)
            for rank in self._others():
                call.send(rank, folds and pick(folds, rank))
            own = folds and pick(folds, 0)
            if own is not None:
                receive.data[:len(own)] = own
        call.done()

    def _scatter_buffers(self, sendbuf, recvbuf, op, counts):
        """(send, receive, byte offsets of every rank's block) of Reduce_scatter
        (``counts`` items per rank) and Reduce_scatter_block (None: blocks of the
        receive count). With IN_PLACE the whole vector is in recvbuf, and this
        rank's block of the result goes to its front."""
        if sendbuf is constants.IN_PLACE:
            whole = buffers.message(recvbuf, writable=True)
            send = buffers.Message(memoryview(bytes(whole.data)), whole.count,
                                   whole.datatype)
            counts = _block_counts(counts, whole.count // self.size, self.size)
            mine = counts[self._s.rank]
            receive = buffers.Prefix(whole, mine)
        else:
            receive = buffers.message(recvbuf, writable=True)
            counts = _block_counts(counts, receive.count, self.size)
            if counts[self._s.rank] != receive.count:
                raise ValueError("recvcounts[%d] is %d but the receive buffer holds %d "
                                 "items" % (self._s.rank, counts[self._s.rank],
                                            receive.count))
            send = buffers.message(sendbuf, writable=False)
        if send.count != sum(counts):
            raise ValueError("the send buffer holds %d items, the blocks of all ranks %d; "
                             "make them equal" % (send.count, sum(counts)))
        op.check(send.datatype, "reduction")
        item = buffers.item_bytes(send.datatype)
        offsets = [0]
        for count in counts:
            offsets.append(offsets[-1] + count * item)
        return send, receive, offsets

    def Reduce(self, sendbuf, recvbuf, op=ops.SUM, root=0):
        root = self._root(root)
        call = _Call(self, "Reduce")
        if self._s.rank != root:
            send = call.local(_reduce_send, sendbuf, op)
            call.send(root, send and send.data)
        else:
            both = call.local(_reduce_buffers, sendbuf, recvbuf, op)
            call.receiving(both and both[1])
            self._reduce_at_root(call, both, op)
        call.done()

    def Allreduce(self, sendbuf, recvbuf, op=ops.SUM):
        # a Reduce to rank 0 and a Bcast from it, as one call; every rank checks
        # its buffers first, as mpi4py does
        call = _Call(self, "Allreduce")
        send, receive = call.local(_reduce_buffers, sendbuf, recvbuf, op) or (None, None)
        self._folded_buffers(call, send, receive, op, _total)

    # --- buffer plumbing ---
    def _scatter(self, name, sendbuf, recvbuf, root, parts_of):
        """Scatter and Scatterv: the root sends each rank its part of ``sendbuf``
        (cut by ``parts_of``) and copies its own, unless ``recvbuf`` is IN_PLACE."""
        root = self._root(root)
        call = _Call(self, name)
        if self._s.rank == root:
            parts = call.local(parts_of, sendbuf, False)
            for rank in self._others():
                call.send(rank, parts and parts.part(rank))
            if recvbuf is not constants.IN_PLACE:
                call.local(self._copy_own, parts, recvbuf, name)
        else:
            received = call.receiving(call.local(_plain_message, recvbuf, True))
            call.take([(root, received and received.data)])
        call.done()

    def _parts_of(self, buf, writable):
        return _Parts.of(_plain_message(buf, writable, self.size), self.size)

    def _vector_parts(self, buf, writable):
        return buffers.vector_message(buf, writable, self.size)

    def _copy_own(self, parts, recvbuf, name):
        if parts is not None:
            own, into = parts.part(self._s.rank), _plain_message(recvbuf, True)
            _check_part(own, into.nbytes, name)
            into.data[:] = own
            into.finish()

    def _vector_with_own(self, sendbuf, recvbuf, name):
        """The receive buffer's parts, this rank's filled from ``sendbuf``."""
        parts = buffers.vector_message(recvbuf, True, self.size)
        return self._with_own(parts, sendbuf, _plain, name)

    def _with_own(self, parts, sendbuf, data_of, name):
        """``parts`` with this rank's part filled from ``sendbuf`` (unless IN_PLACE)."""
        if sendbuf is not constants.IN_PLACE:
            own, into = data_of(sendbuf, False), parts.part(self._s.rank)
            _check_part(own, len(into), name)
            into[:] = own
        return parts

    def _alltoallv_parts(self, sendbuf, recvbuf):
        receives = buffers.vector_message(recvbuf, True, self.size)
        if sendbuf is constants.IN_PLACE:   # send what recvbuf holds, as laid out there
            sends = buffers.VectorMessage(memoryview(bytes(receives.data)), receives.counts,
                                          receives.displs, receives.extent)
        else:
            sends = buffers.vector_message(sendbuf, False, self.size)
        own, into = sends.part(self._s.rank), receives.part(self._s.rank)
        _check_part(own, len(into), "Alltoallv")
        into[:] = own
        return sends, receives

    def _parts_with_own(self, sendbuf, recvbuf, name):
        """The receive buffer cut in one part per rank, this rank's part filled
        (Sync handles may travel: Gather and Allgather take HANDLE_SYNC)."""
        parts = _Parts.of(_message(recvbuf, True, self.size), self.size)
        return self._with_own(parts, sendbuf, _data, name)

    def _alltoall_parts(self, sendbuf, recvbuf):
        receives = _Parts.of(_message(recvbuf, True, self.size), self.size)
        source = (bytes(receives.whole) if sendbuf is constants.IN_PLACE
                  else _data(sendbuf, False, self.size))
        _check_part(source, len(receives.whole), "Alltoall")
        return _Parts(memoryview(source), self.size), receives

    def _reduce_at_root(self, call, buffers_, op):
        """Take every other rank's contribution and fold them in rank order."""
        send, receive = buffers_ or (None, None)
        folds = self._folds_at_root(call, send, op, every=False)
        if folds:
            receive.data[:send.nbytes] = folds[-1]

    def _folds_at_root(self, call, send, op, every):
        """Every rank's contribution taken; the folds of ranks 0..k in rank order as
        bytes (only the last unless ``every``); None once this call failed."""
        import numpy
        scratch = {rank: send and memoryview(bytearray(send.nbytes)) for rank in self._others()}
        call.take(list(scratch.items()))
        if call.error is not None:
            return None
        dtype = element_dtype(send.datatype)
        scratch[self._s.rank] = send.data
        parts = [numpy.frombuffer(bytes(scratch[rank]), dtype=dtype) for rank in range(self.size)]
        folds = call.local(_prefix_folds, parts, lambda a, b: op.apply(a, b, send.datatype),
                           every)
        return folds and [fold if fold is None
                          else numpy.ascontiguousarray(fold, dtype=dtype).tobytes()
                          for fold in folds]


class _Call:
    """One collective call as this rank takes part in it.

    Every rank sends and receives the same messages whether it fails or not: a
    rank that cannot contribute (bad arguments, a mismatched size, an object that
    does not pickle, an op that raises) sends an empty notice instead, whose tag
    says which rank failed and with which error class, and a rank that cannot use
    what it receives still takes it. So a failure never leaves a peer waiting, nor
    a stale message for the next collective; each rank raises at the end: its own
    error first, else the first notice or size mismatch it saw.
    """

    def __init__(self, comm, name):
        self.comm = comm
        self.name = name
        self.error = None
        self.culprit = None
        self._receiving = []

    def receiving(self, message):
        """``message`` (a parsed receive buffer, or None): finished at done(), which
        unpacks it into the user's buffer (datatypes with gaps, HANDLE_SYNC lists)."""
        if message is not None:
            self._receiving.append(message)
        return message

    def local(self, function, *args):
        """``function(*args)``, or None (keeping the error) once this rank has failed."""
        if self.error is None:
            try:
                return function(*args)
            except Exception as exc:  # ValueError, BufferError, MPI.Exception, ...
                self.error = exc
                self.culprit = self.comm._s.rank
        return None

    def send(self, dest, data, pickled=False):
        """Send ``data`` to ``dest``, or a failure notice when this call failed."""
        if self.error is None and data is not None:
            self.comm._isend_bytes(data, dest, TAG, pickled, COLLECTIVE)
            return
        error_class = (self.error.Get_error_class() if isinstance(self.error, errors.Exception)
                       else errors.ERR_ARG)
        tag = NOTICE + error_class + NOTICE_RANKS * self.culprit
        self.comm._isend_bytes(b"", dest, tag, False, COLLECTIVE)

    def take(self, parts):
        """Receive one message from each (rank, view) pair; a view of None discards."""
        posted = [(rank, view, self.comm._irecv(rank, constants.ANY_TAG,
                                                _NOWHERE if view is None else view,
                                                COLLECTIVE))
                  for rank, view in parts]
        for rank, view, receive in posted:
            self._check(rank, view, receive)

    def take_objects(self, ranks):
        """The pickled object each rank sends (None from a rank that failed)."""
        posted = [self.comm._irecv(rank, constants.ANY_TAG, None, COLLECTIVE) for rank in ranks]
        return [self._check(rank, None, receive) for rank, receive in zip(ranks, posted)]

    def _check(self, rank, view, receive):
        """Complete one receive; note a notice or a size mismatch; returns its object."""
        status = Status()
        problem = value = None
        try:
            value = receive.wait(status)
        except errors.JobAborted:
            raise
        except errors.Exception as exc:
            problem = exc
        if status.tag >= NOTICE:
            culprit, error_class = divmod(status.tag - NOTICE, NOTICE_RANKS)
            self._failed(culprit, errors.Exception(
                error_class, "%s: rank %d failed in this call (%s) and could not take "
                "part; its own error says what to fix"
                % (self.name, culprit, errors.error_string(error_class))))
        elif view is not None and status.count != len(view):
            self._failed(self.comm._s.rank, errors.Exception(
                errors.ERR_TRUNCATE if status.count > len(view) else errors.ERR_COUNT,
                "%s: rank %d sent %d bytes where this rank expects %d; every rank must "
                "pass the same count and datatype" % (self.name, rank, status.count,
                                                      len(view))))
        elif problem is not None:
            self._failed(self.comm._s.rank, problem)
        return value

    def _failed(self, culprit, error):
        if self.error is None:
            self.error = error
            self.culprit = culprit

    def done(self):
        if self.error is not None:
            raise self.error
        for message in self._receiving:
            message.finish()


class _Parts:
    """A byte view cut in ``count`` equal parts; ``whole`` is the view, ``finish``
    what completes a receive into it (a HANDLE_SYNC list's conversion)."""

    def __init__(self, whole, count, finish=None):
        self.whole = whole
        self.size = len(whole) // count
        self.finish = finish or (lambda: None)

    @classmethod
    def of(cls, message, count):
        return cls(message.data, count, message.finish)

    def __getitem__(self, index):
        return self.whole[index * self.size:(index + 1) * self.size]

    part = __getitem__      # as buffers.VectorMessage's parts


def _message(buf, writable, blocks=0):
    return buffers.message(buf, writable, blocks, handles=True)


def _data(buf, writable, blocks=0):
    return _message(buf, writable, blocks).data


def _plain_message(buf, writable, blocks=0):
    """A message that cannot be Sync handles (HANDLE_SYNC: ERR_TYPE)."""
    return buffers.message(buf, writable, blocks)


def _plain(buf, writable, blocks=0):
    """The data of a message that cannot be Sync handles, to send."""
    return buffers.message(buf, writable, blocks).data




def _reduce_send(sendbuf, op):
    if sendbuf is constants.IN_PLACE:
        errors.fail(errors.ERR_BUFFER, "IN_PLACE is valid for Reduce only at the root; "
                    "pass the send buffer on the other ranks")
    send = buffers.message(sendbuf, writable=False)
    op.check(send.datatype, "reduction")
    return send


def _reduce_buffers(sendbuf, recvbuf, op):
    """(send, receive) messages of a reduction at a rank that receives the result."""
    receive = buffers.message(recvbuf, writable=True)
    if sendbuf is constants.IN_PLACE:
        send = buffers.Message(memoryview(bytes(receive.data)), receive.count,
                               receive.datatype)
    else:
        send = buffers.message(sendbuf, writable=False)
        if send.datatype != receive.datatype:
            raise ValueError("mismatch in send and receive MPI datatypes (%s and %s); "
                             "pass buffers of the same type"
                             % (send.datatype.Get_name(), receive.datatype.Get_name()))
        if send.count != receive.count:
            raise ValueError("mismatch in send count %d and receive count %d; pass buffers "
                             "of the same length" % (send.count, receive.count))
    op.check(send.datatype, "reduction")
    return send, receive


def _dump_each(items, size, call):
    return [_dumps(item) for item in _sequence_of_size(items, size, call)]


def _block_counts(counts, block, size):
    """Every rank's count of a reduce-scatter: as given, or ``block`` each."""
    if counts is None:
        return [block] * size
    if None in counts:
        raise ValueError("rank %d's receive buffer is not valid (its own error says why)"
                         % counts.index(None))
    counts = [operator.index(count) for count in counts]
    if len(counts) != size:
        raise ValueError("recvcounts: expecting %d counts (one per rank), got %d"
                         % (size, len(counts)))
    return counts


def _count_or_none(recvbuf):
    try:
        return buffers.message(recvbuf, writable=True).count
    except (ValueError, BufferError, TypeError, errors.Exception):
        return None     # the call itself raises it, and tells the others


def _prefix_folds(values, op, every=True):
    """[v0, v0 op v1, v0 op v1 op v2, ...]: MPI's rank order. Unless ``every``,
    only the last is kept (the others are None): a reduction needs no more."""
    folds = [values[0]]
    for value in values[1:]:
        folds.append(op(folds[-1], value))
        if not every:
            folds[-2] = None
    return folds


# what rank r gets of the folds (folds[k]: ranks 0..k folded)
def _total(folds, rank):
    return folds[-1]


def _inclusive(folds, rank):
    return folds[rank]


def _exclusive(folds, rank):
    return folds[rank - 1] if rank else None


_PREFIXES = (_inclusive, _exclusive)    # the picks that need every fold


def _fold(values, op):
    """values[0] op values[1] op ... in rank order, as MPI reduces."""
    return _prefix_folds(values, op, every=False)[-1]


def _sequence_of_size(items, size, call):
    if items is None or len(items) != size:
        raise ValueError("%s: expected a sequence of %d items (one per rank), got %r"
                         % (call, size, None if items is None else len(items)))
    return list(items)


def _check_part(data, expected, call):
    if len(data) != expected:
        errors.fail(errors.ERR_TRUNCATE if len(data) > expected else errors.ERR_COUNT,
                    "%s: this rank's send buffer holds %d bytes but its part of the receive "
                    "buffer holds %d; make them the same size" % (call, len(data), expected))
