"""Collective operations of intracommunicators, on objects and on buffers.

They travel on the communicator's collective sub-context with plain
point-to-point sends, which never wait for the receiver, so linear fan-in
and fan-out are deadlock-free; Barrier alone uses a shared-memory slot.
"""
from . import buffers, constants, errors
from . import op as ops
from .comm import COLLECTIVE, Comm, slot_barrier

TAG = 0


class Collectives:
    """Mixin of Intracomm; relies on Comm's point-to-point core."""

    # --- plumbing -----------------------------------------------------------------
    def _root(self, root):
        size = len(self._s.ranks)
        if not isinstance(root, int) or not 0 <= root < size:
            errors.fail(errors.ERR_ROOT, "root %r is not a rank of this communicator of size "
                        "%d; use 0..%d" % (root, size, size - 1))
        return root

    def _put(self, dest, data, pickled):
        return self._isend_bytes(data, dest, TAG, pickled, COLLECTIVE)

    def _take_object(self, source):
        return self._irecv(source, TAG, None, COLLECTIVE).wait()

    def _take_into(self, source, view):
        self._irecv(source, TAG, view, COLLECTIVE).Wait()

    def _others(self):
        me = self._s.rank
        return [r for r in range(len(self._s.ranks)) if r != me]

    # --- synchronization ------------------------------------------------------------
    def Barrier(self):
        slot_barrier(self._s)

    barrier = Barrier

    # --- objects -------------------------------------------------------------------
    def bcast(self, obj=None, root=0):
        from .comm import _dumps
        root = self._root(root)
        if self._s.rank == root:
            data = _dumps(obj)
            for rank in self._others():
                self._put(rank, data, True)
            return obj
        return self._take_object(root)

    def gather(self, sendobj, root=0):
        from .comm import _dumps
        root = self._root(root)
        me = self._s.rank
        if me != root:
            self._put(root, _dumps(sendobj), True)
            return None
        return [sendobj if r == me else self._take_object(r) for r in range(self.size)]

    def scatter(self, sendobj=None, root=0):
        from .comm import _dumps
        root = self._root(root)
        me = self._s.rank
        if me != root:
            return self._take_object(root)
        items = _sequence_of_size(sendobj, self.size, "scatter")
        for rank in self._others():
            self._put(rank, _dumps(items[rank]), True)
        return items[me]

    def allgather(self, sendobj):
        return self.bcast(self.gather(sendobj, 0), 0)

    def alltoall(self, sendobj):
        from .comm import _dumps
        items = _sequence_of_size(sendobj, self.size, "alltoall")
        me = self._s.rank
        for rank in self._others():
            self._put(rank, _dumps(items[rank]), True)
        return [items[me] if r == me else self._take_object(r) for r in range(self.size)]

    def reduce(self, sendobj, op=ops.SUM, root=0):
        values = self.gather(sendobj, root)
        if values is None:
            return None
        result = values[0]
        for value in values[1:]:
            result = op(result, value)
        return result

    def allreduce(self, sendobj, op=ops.SUM):
        return self.bcast(self.reduce(sendobj, op, 0), 0)

    # --- buffers -----------------------------------------------------------------
    def Bcast(self, buf, root=0):
        root = self._root(root)
        if self._s.rank == root:
            data = buffers.message(buf, writable=False).data
            for rank in self._others():
                self._put(rank, data, False)
        else:
            self._take_into(root, buffers.message(buf, writable=True).data)

    def Gather(self, sendbuf, recvbuf, root=0):
        root = self._root(root)
        me = self._s.rank
        if me != root:
            self._put(root, buffers.message(sendbuf, writable=False).data, False)
            return
        target = buffers.message(recvbuf, writable=True).data
        part = _part_size(target, self.size, "Gather")
        if sendbuf is not constants.IN_PLACE:
            own = buffers.message(sendbuf, writable=False).data
            _check_part(own, part, "Gather")
            target[me * part:(me + 1) * part] = own
        for rank in self._others():
            self._take_into(rank, target[rank * part:(rank + 1) * part])

    def Allgather(self, sendbuf, recvbuf):
        if sendbuf is constants.IN_PLACE and self._s.rank != 0:
            target = buffers.message(recvbuf, writable=True).data
            part = _part_size(target, self.size, "Allgather")
            sendbuf = bytes(target[self.rank * part:(self.rank + 1) * part])
        self.Gather(sendbuf, recvbuf, 0)
        self.Bcast(recvbuf, 0)

    def Alltoall(self, sendbuf, recvbuf):
        target = buffers.message(recvbuf, writable=True).data
        part = _part_size(target, self.size, "Alltoall")
        source = (bytes(target) if sendbuf is constants.IN_PLACE
                  else buffers.message(sendbuf, writable=False).data)
        _check_part(source, part * self.size, "Alltoall")
        me = self._s.rank
        for rank in self._others():
            self._put(rank, source[rank * part:(rank + 1) * part], False)
        target[me * part:(me + 1) * part] = source[me * part:(me + 1) * part]
        for rank in self._others():
            self._take_into(rank, target[rank * part:(rank + 1) * part])

    def Reduce(self, sendbuf, recvbuf, op=ops.SUM, root=0):
        root = self._root(root)
        me = self._s.rank
        if sendbuf is constants.IN_PLACE:
            if me != root:
                errors.fail(errors.ERR_BUFFER, "IN_PLACE is valid for Reduce only at the root")
            sendbuf = recvbuf
        send = buffers.message(sendbuf, writable=False)
        op.check(send.datatype, "reduction")
        if me != root:
            self._put(root, send.data, False)
            return
        receive = buffers.message(recvbuf, writable=True)
        _check_part(receive.data, send.nbytes, "Reduce")
        self._fold_into(receive, send, op)

    def _fold_into(self, receive, send, op):
        import numpy
        dtype = send.datatype.dtype
        parts = []
        scratch = bytearray(send.nbytes)
        for rank in range(self.size):
            if rank == self._s.rank:
                parts.append(numpy.frombuffer(bytes(send.data), dtype=dtype))
            else:
                self._take_into(rank, memoryview(scratch))
                parts.append(numpy.frombuffer(bytes(scratch), dtype=dtype))
        result = parts[0]
        for part in parts[1:]:
            result = op.apply(result, part, send.datatype)
        receive.data[:send.nbytes] = numpy.ascontiguousarray(result, dtype=dtype).tobytes()

    def Allreduce(self, sendbuf, recvbuf, op=ops.SUM):
        if sendbuf is constants.IN_PLACE:
            receive = buffers.message(recvbuf, writable=True)
            sendbuf = [bytes(receive.data), receive.datatype]
        self.Reduce(sendbuf, recvbuf if self._s.rank == 0 else None, op, 0)
        self.Bcast(recvbuf, 0)


def _sequence_of_size(items, size, call):
    if items is None or len(items) != size:
        raise ValueError("%s: expected a sequence of %d items (one per rank), got %r"
                         % (call, size, None if items is None else len(items)))
    return list(items)


def _part_size(target, size, call):
    if len(target) % size:
        errors.fail(errors.ERR_COUNT, "%s: the receive buffer of %d bytes does not split into "
                    "%d equal parts" % (call, len(target), size))
    return len(target) // size


def _check_part(data, expected, call):
    if len(data) != expected:
        errors.fail(errors.ERR_TRUNCATE if len(data) > expected else errors.ERR_COUNT,
                    "%s: this rank's buffer holds %d bytes but the receive side expects %d"
                    % (call, len(data), expected))
