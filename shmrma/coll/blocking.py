"""Collective operations of intracommunicators, on objects and on buffers.

Every blocking collective runs on the communicator's shared collective area
(coll/area.py): the members deposit their contributions in their slots, step
together, and read what they need straight from each other's slots; Barrier
alone uses the barrier slot. Every collective stays in step when a rank fails:
a rank whose arguments are wrong says so in the first step and every rank
raises (the others naming it), and a mismatch that only some ranks can see is
raised by them once every step is done, so nobody is left waiting.
"""
import operator
import pickle
import struct

from ..core import atomic, constants, errors
from ..types import buffers
from ..types import op as ops
from .area import (Call, exchange, fast_allgather, fast_allgather_bytes, fast_allgatherv,
                   fast_allreduce, fast_alltoall, fast_alltoallv, fast_bcast,
                   fast_bcast_bytes, fast_gather, fast_gatherv, fast_reduce,
                   fast_reduce_scatter_block, fast_scan, fast_scatter, fast_scatterv,
                   WholeItemsTooLarge, fold, local)
from .slots import slot_barrier
from ..p2p.transfers import _dumps, _loads
from ..types.derived import element_dtype

TABLE = struct.Struct("<qq")     # (offset, length) of one part in a stream with a table


class Collectives:
    """Mixin of Intracomm; relies on Comm's state and the collective area."""

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
        """Barrier synchronization: wait until every process of the group has called it."""
        slot_barrier(self._s)

    barrier = Barrier

    # --- objects -------------------------------------------------------------------
    # Each holds the communicator's lock for its name, as mpi4py's do (msgpickle.pxi),
    # once threads take turns (in_turn): two threads calling one at once on one
    # communicator then take turns. bcast's and allgather's C paths miss then.
    def bcast(self, obj=None, root=0):
        """Broadcast a Python object from the root to all processes; return it."""
        return self._bcast_objects(obj, root, _dumps, _loads, "bcast")

    def _bcast_objects(self, obj, root, dumps, loads, turn=None):
        me = self._s.rank
        data = _pickled_or_none(dumps, obj) if me == root else None
        taken = fast_bcast_bytes(self._state_value, data, root)
        if type(taken) is bytes:
            return obj if me == root else loads(taken)
        if turn is not None and taken is False and atomic.taking_turns():
            return in_turn(self, turn, self._bcast_in_python, obj, root, dumps, loads, data,
                           None)
        return self._bcast_in_python(obj, root, dumps, loads, data, taken)

    def _bcast_in_python(self, obj, root, dumps, loads, data, taken):
        me = self._s.rank
        call = Call(self, "bcast", taken or None)
        root = local(call, self._root, root)
        got = _Objects(loads)
        exchange(call, (data or local(call, dumps, obj)) if me == root else b"",
                 lambda lengths, first: got.want([root] if me != root else [], lengths),
                 root)
        return obj if me == root else got.load(root)

    def gather(self, sendobj, root=0):
        """Gather Python objects to the root: a list in rank order there, None elsewhere."""
        if atomic.taking_turns():
            return in_turn(self, "gather", self._gather_objects, sendobj, root)
        return self._gather_objects(sendobj, root)

    def _gather_objects(self, sendobj, root):
        call = Call(self, "gather")
        root = local(call, self._root, root)
        me = self._s.rank
        got = _Objects()
        exchange(call, local(call, _dumps, sendobj),
                 lambda lengths, first: got.want(self._others() if me == root else [], lengths))
        return got.with_own(sendobj, me, self.size) if me == root else None

    def allgather(self, sendobj):
        """Gather Python objects from all processes to all: a list in rank order."""
        return self._allgather_objects(sendobj, _dumps, _loads, "allgather")

    def _allgather_objects(self, sendobj, dumps, loads, turn=None):
        me = self._s.rank
        data = _pickled_or_none(dumps, sendobj)
        taken = fast_allgather_bytes(self._state_value, data)
        if type(taken) is list:
            return [sendobj if rank == me else loads(item) for rank, item in enumerate(taken)]
        if turn is not None and taken is False and atomic.taking_turns():
            return in_turn(self, turn, self._allgather_in_python, sendobj, dumps, loads,
                           data, None)
        return self._allgather_in_python(sendobj, dumps, loads, data, taken)

    def _allgather_in_python(self, sendobj, dumps, loads, data, taken):
        me = self._s.rank
        call = Call(self, "allgather", taken or None)
        got = _Objects(loads)
        exchange(call, data or local(call, dumps, sendobj),
                 lambda lengths, first: got.want(self._others(), lengths))
        return got.with_own(sendobj, me, self.size)

    def scatter(self, sendobj=None, root=0):
        """Scatter the root's sequence of size objects: return item i at rank i."""
        if atomic.taking_turns():
            return in_turn(self, "scatter", self._scatter_objects, sendobj, root)
        return self._scatter_objects(sendobj, root)

    def _scatter_objects(self, sendobj, root):
        call = Call(self, "scatter")
        root = local(call, self._root, root)
        me = self._s.rank
        items = local(call, _sequence_of_size, sendobj, self.size, "scatter") \
            if me == root else None
        stream = local(call, lambda: _table_stream(_dump_each(items))) if items else b""
        got = _Objects()
        exchange(call, stream, lambda lengths, first: got.want_entries(
            [root] if me != root else [], first, me))
        return items[me] if me == root else got.load(root)

    def alltoall(self, sendobj):
        """Send item j of each process's sequence to rank j; return the items received."""
        if atomic.taking_turns():
            return in_turn(self, "alltoall", self._alltoall_objects, sendobj)
        return self._alltoall_objects(sendobj)

    def _alltoall_objects(self, sendobj):
        call = Call(self, "alltoall")
        me = self._s.rank
        items = local(call, _sequence_of_size, sendobj, self.size, "alltoall")
        stream = local(call, lambda: _table_stream(_dump_each(items))) if items else None
        got = _Objects()
        exchange(call, stream, lambda lengths, first: got.want_entries(self._others(),
                                                                        first, me))
        return got.with_own(items[me], me, self.size)

    # reduce, allreduce and scan call Collectives' gathers, not a subclass's
    # override (mpi4py.util.pkl5 overrides them), as mpi4py's reductions do not
    def reduce(self, sendobj, op=ops.SUM, root=0):
        """Reduce Python objects with ``op`` to the root, in rank order; None elsewhere."""
        # as mpi4py: gathered to the root, which folds them in rank order
        values = Collectives.gather(self, sendobj, root)
        return _fold(values, op) if values is not None else None

    def allreduce(self, sendobj, op=ops.SUM):
        """Reduce Python objects with ``op``, in rank order; return the result everywhere."""
        # as mpi4py: every rank folds everyone's objects in rank order
        return _fold(Collectives.allgather(self, sendobj), op)

    def scan(self, sendobj, op=ops.SUM):
        """Inclusive scan of Python objects: rank r gets ranks 0..r reduced with ``op``."""
        return _fold(Collectives.allgather(self, sendobj)[:self._s.rank + 1], op)

    def exscan(self, sendobj, op=ops.SUM):
        """Exclusive scan of Python objects: rank r gets ranks 0..r-1 reduced (0: None)."""
        values = self.allgather(sendobj)    # every rank takes part, rank 0 included
        rank = self._s.rank
        return _fold(values[:rank], op) if rank else None

    # --- buffers -----------------------------------------------------------------
    def Bcast(self, buf, root=0):
        """Broadcast data from the root process to all other processes."""
        taken = fast_bcast(self._state_value, buf, root)
        if taken is True:
            return
        call = Call(self, "Bcast", taken or None)
        root = local(call, self._root, root)
        me = self._s.rank
        message = local(call, _message, buf, me != root)
        stream = message.data if message is not None and me == root else b""

        def plan(lengths, first):
            if me == root or not call.agrees(root, lengths[root], message.nbytes):
                return []
            return [(root, 0, message.nbytes, message.data)]
        exchange(call, stream, plan, root)    # root None: bad here, so everywhere
        if me != root:
            message.finish()

    def Gather(self, sendbuf, recvbuf, root=0):
        """Gather data to the root process from all processes."""
        taken = fast_gather(self._state_value, sendbuf, recvbuf, root)
        if taken is not True:
            self._gather("Gather", sendbuf, recvbuf, root, _data, self._parts_with_own, taken)

    def Gatherv(self, sendbuf, recvbuf, root=0):
        """Gather data of varying counts to the root process from all processes."""
        taken = fast_gatherv(self._state_value, sendbuf, recvbuf, root)
        if taken is not True:
            self._gather("Gatherv", sendbuf, recvbuf, root, _plain, self._vector_with_own,
                         taken)

    def _gather(self, name, sendbuf, recvbuf, root, data_of, parts_of, taken=None):
        """Every rank's send buffer into its part of the root's (root None: every
        rank's, the Allgather forms); ``taken``: what the C path handed over."""
        call = Call(self, name, taken or None)
        me = self._s.rank
        if root is not None:
            root = local(call, self._root, root)
            if me != root:
                exchange(call, local(call, data_of, sendbuf, False), _nothing)
                return
        parts = local(call, parts_of, sendbuf, recvbuf, name)
        exchange(call, parts and parts.part(me) if root is None else b"",
                 lambda lengths, first: self._wants(call, parts, lengths))
        parts.finish()

    def Allgather(self, sendbuf, recvbuf):
        """Gather data from all processes and distribute it to all."""
        taken = fast_allgather(self._state_value, sendbuf, recvbuf)
        if taken is not True:
            self._gather("Allgather", sendbuf, recvbuf, None, _data, self._parts_with_own,
                         taken)

    def Allgatherv(self, sendbuf, recvbuf):
        """Gather data of varying counts from all processes and distribute it to all."""
        taken = fast_allgatherv(self._state_value, sendbuf, recvbuf)
        if taken is not True:
            self._gather("Allgatherv", sendbuf, recvbuf, None, _plain, self._vector_with_own,
                         taken)

    def _wants(self, call, parts, lengths):
        """Every other rank's whole stream into its part, when the lengths agree."""
        return [(rank, 0, len(parts.part(rank)), parts.part(rank)) for rank in self._others()
                if call.agrees(rank, lengths[rank], len(parts.part(rank)))]

    def Scatter(self, sendbuf, recvbuf, root=0):
        """Scatter data from the root process to all processes."""
        taken = fast_scatter(self._state_value, sendbuf, recvbuf, root)
        if taken is not True:
            self._scatter("Scatter", sendbuf, recvbuf, root, self._parts_of, taken)

    def Scatterv(self, sendbuf, recvbuf, root=0):
        """Scatter data of varying counts from the root process to all processes."""
        taken = fast_scatterv(self._state_value, sendbuf, recvbuf, root)
        if taken is not True:
            self._scatter("Scatterv", sendbuf, recvbuf, root, self._vector_parts, taken)

    def _scatter(self, name, sendbuf, recvbuf, root, parts_of, taken=None):
        """The root's parts (after a table of where each lies) to their ranks; the
        root copies its own unless ``recvbuf`` is IN_PLACE."""
        call = Call(self, name, taken or None)
        root = local(call, self._root, root)
        me = self._s.rank
        if me == root:
            parts = local(call, parts_of, sendbuf, False)
            if parts is not None and _in_place(recvbuf) is not constants.IN_PLACE:
                local(call, self._copy_own, parts, recvbuf, name)
            exchange(call, parts and _parts_stream(parts, self.size, me), _nothing)
            return
        received = local(call, _plain_message, recvbuf, True)

        def plan(lengths, first):
            offset, length = _entry(first(root), me)
            if not call.agrees(root, length, received.nbytes):
                return []
            return [(root, offset, length, received.data)]
        exchange(call, b"", plan)
        received.finish()

    def Alltoall(self, sendbuf, recvbuf):
        """All to all scatter/gather: send one block to and receive one from every process."""
        taken = fast_alltoall(self._state_value, sendbuf, recvbuf)
        if taken is not True:
            self._alltoall("Alltoall", self._alltoall_parts, sendbuf, recvbuf, taken)

    def Alltoallv(self, sendbuf, recvbuf):
        """All to all scatter/gather with varying counts and displacements."""
        taken = fast_alltoallv(self._state_value, sendbuf, recvbuf)
        if taken is not True:
            self._alltoall("Alltoallv", self._alltoallv_parts, sendbuf, recvbuf, taken)

    def Alltoallw(self, sendbuf, recvbuf):
        """All to all scatter/gather with varying counts, displacements and datatypes."""
        # the parts travel packed, so C moves them as Alltoallv's bytes; a message
        # Python cannot parse goes to its path, which raises in step
        try:
            both = self._alltoallw_parts(sendbuf, recvbuf)
        except Exception:  # noqa: BLE001 - _alltoall parses it again and says it to all
            both = None
        try:
            taken = both and fast_alltoallv(self._state_value, both[0].bytes_message(),
                                            both[1].bytes_message())
            if taken is True:
                both[1].finish()
                return
            self._alltoall("Alltoallw", (lambda *_: both) if both else self._alltoallw_parts,
                           sendbuf, recvbuf, taken)
        finally:
            for message in both or ():
                message.release()

    def _alltoall(self, name, parts_of, sendbuf, recvbuf, taken=None):
        """Every rank's parts (after a table of where each lies) to their ranks."""
        call = Call(self, name, taken or None)
        both = local(call, parts_of, sendbuf, recvbuf)
        sends, receives = both if both else (None, None)
        me = self._s.rank

        def plan(lengths, first):
            wants = []
            for rank in self._others():
                offset, length = _entry(first(rank), me)
                into = receives.part(rank)
                if call.agrees(rank, length, len(into)):
                    wants.append((rank, offset, length, into))
            return wants
        exchange(call, sends and _parts_stream(sends, self.size, me), plan)
        receives.finish()

    # --- reductions --------------------------------------------------------------
    def Reduce(self, sendbuf, recvbuf, op=ops.SUM, root=0):
        """Reduce the data of all processes with ``op`` to the root process."""
        self._folding("Ireduce", self._reduce, sendbuf, recvbuf, op, root)

    def _folding(self, nonblocking, run, *args):
        """``run(*args)``; a user's op over items too large to fold in chunks of the
        collective area (every rank learns it at the first step) takes the
        ``nonblocking`` form of the call, which moves whole vectors, and waits."""
        try:
            run(*args)
        except WholeItemsTooLarge:
            getattr(self, nonblocking)(*args).Wait()

    def _reduce(self, sendbuf, recvbuf, op, root):
        taken = fast_reduce(self._state_value, sendbuf, recvbuf, op, root)
        if taken is True:
            return
        call = Call(self, "Reduce", taken or None)
        root = local(call, self._root, root)
        if self._s.rank != root:
            send = local(call, _reduce_send, sendbuf, op)
            fold(call, send and send.data, _nothing,
                 lambda parts: _folded(parts, op, send.datatype), None, _fold_unit(send, op),
                 whole=True)
            return
        send, receive = local(call, _reduce_buffers, sendbuf, recvbuf, op) or (None, None)
        self._fold(call, send, receive, op, lambda lengths: (0, self.size), whole=True)

    def Allreduce(self, sendbuf, recvbuf, op=ops.SUM):
        """Reduce the data of all processes with ``op``; the result goes to all."""
        self._folding("Iallreduce", self._allreduce, sendbuf, recvbuf, op)

    def _allreduce(self, sendbuf, recvbuf, op):
        taken = fast_allreduce(self._state_value, sendbuf, recvbuf, op)
        if taken is True:
            return
        call = Call(self, "Allreduce", taken or None)
        send, receive = local(call, _reduce_buffers, sendbuf, recvbuf, op) or (None, None)
        self._fold(call, send, receive, op, lambda lengths: (0, self.size), whole=True)

    def Scan(self, sendbuf, recvbuf, op=ops.SUM):
        """Inclusive scan: rank r receives the reduction of ranks 0..r."""
        self._folding("Iscan", lambda *args: self._scan("Scan", *args, 1), sendbuf, recvbuf, op)

    def Exscan(self, sendbuf, recvbuf, op=ops.SUM):
        """Exclusive scan: rank r receives the reduction of ranks 0..r-1 (rank 0 nothing)."""
        self._folding("Iexscan", lambda *args: self._scan("Exscan", *args, 0), sendbuf, recvbuf,
                      op)

    def _scan(self, name, sendbuf, recvbuf, op, inclusive):
        """Rank r folds ranks 0..r (Scan) or 0..r-1 (Exscan: rank 0 receives nothing)."""
        taken = fast_scan(self._state_value, sendbuf, recvbuf, op, inclusive)
        if taken is True:
            return
        call = Call(self, name, taken or None)
        send, receive = local(call, _reduce_buffers, sendbuf, recvbuf, op) or (None, None)
        last = self._s.rank + inclusive
        self._fold(call, send, receive, op, lambda lengths: (0, last) if last else None)

    def _fold(self, call, send, receive, op, ranks, block=None, whole=False):
        """Fold the ranks ``ranks(lengths)`` gives (first, last + 1) into ``receive``,
        over the byte range ``block`` of the vectors (all of it when None); ``whole``:
        every rank's whole vector (collarea.fold slices it at many ranks)."""
        def wanted(lengths):
            span = ranks(lengths)
            mine = len(send.data)
            # every rank's vector must match, folded here or not (MPI's rule)
            if not all(call.agrees(rank, length, mine) for rank, length in enumerate(lengths)):
                return None
            if span is None:
                return None
            low, high = block or (0, mine)
            return span[0], span[1], low, high

        def place(start, data):
            offset = start - (block[0] if block else 0)
            receive.data[offset:offset + len(data)] = data
        fold(call, send and send.data, wanted, lambda parts: _folded(parts, op, send.datatype),
             place, _fold_unit(send, op), whole)
        receive.finish()

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=ops.SUM):
        """Reduce with ``op``, then scatter equal blocks of the result to the processes."""
        self._folding("Ireduce_scatter_block", self._reduce_scatter_block, sendbuf, recvbuf, op)

    def _reduce_scatter_block(self, sendbuf, recvbuf, op):
        taken = fast_reduce_scatter_block(self._state_value, sendbuf, recvbuf, op)
        if taken is not True:
            self._reduce_and_scatter("Reduce_scatter_block", sendbuf, recvbuf, op, None, taken)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=ops.SUM):
        """Reduce with ``op``, then scatter blocks of ``recvcounts`` items to the ranks."""
        recvcounts = receive_counts(self, sendbuf, recvbuf, recvcounts)
        self._folding("Ireduce_scatter", lambda send, receive, counts, op:
                      self._reduce_and_scatter("Reduce_scatter", send, receive, op, counts),
                      sendbuf, recvbuf, recvcounts, op)

    def _reduce_and_scatter(self, name, sendbuf, recvbuf, op, counts, taken=None):
        """Rank r folds block r of everyone's vector."""
        call = Call(self, name, taken or None)
        send, receive, offsets = (local(call, self._scatter_buffers, sendbuf, recvbuf, op,
                                        counts) or (None, None, None))
        me = self._s.rank
        self._fold(call, send, receive, op, lambda lengths: (0, self.size),
                   offsets and (offsets[me], offsets[me + 1]))

    def _scatter_buffers(self, sendbuf, recvbuf, op, counts):
        """(send, receive, byte offsets of every rank's block) of Reduce_scatter
        (``counts`` items per rank) and Reduce_scatter_block (None: equal blocks).
        With IN_PLACE the whole vector is in recvbuf, and this rank's block of the
        result goes to its front."""
        if counts is None:
            send, receive = self._block_buffers(sendbuf, recvbuf)
            counts = [receive.count] * self.size
        else:
            send, receive, counts = self._vector_buffers(sendbuf, recvbuf, counts)
        op.check(send.datatype, "reduction")
        item = buffers.item_bytes(send.datatype)
        offsets = [0]
        for count in counts:
            offsets.append(offsets[-1] + count * item)
        return send, receive, offsets

    def _block_buffers(self, sendbuf, recvbuf):
        """Reduce_scatter_block's (send, receive), parsed as mpi4py parses them
        (for_reduce_scatter_block in its msgbuffer.pxi): a count given or inferred is
        the count of one block, the buffer split in one block per rank, both for
        the send buffer and, with IN_PLACE, for the receive buffer that holds the
        whole vector; recvcount is that one count (MPI-3.1, section 5.10.1)."""
        if _in_place(sendbuf) is constants.IN_PLACE:
            whole = buffers.message(recvbuf, writable=True, blocks=self.size)
            return _snapshot(whole), buffers.Prefix(whole, whole.count)
        receive = buffers.message(recvbuf, writable=True)
        send = buffers.message(sendbuf, writable=False, blocks=self.size)
        buffers.check_reduction_pair(send, receive)
        return send, receive

    def _vector_buffers(self, sendbuf, recvbuf, counts):
        """Reduce_scatter's (send, receive, counts), parsed as mpi4py parses them
        (for_reduce_scatter): the buffers' counts are whole, the send buffer's (or
        with IN_PLACE the receive buffer's) is the sum of the counts."""
        if _in_place(sendbuf) is constants.IN_PLACE:
            whole = buffers.message(recvbuf, writable=True)
            send = _snapshot(whole)
            counts = _block_counts(counts, self.size)
            receive = buffers.Prefix(whole, counts[self._s.rank])
        else:
            receive = buffers.message(recvbuf, writable=True)
            counts = _block_counts(counts, self.size)
            if counts[self._s.rank] != receive.count:
                raise ValueError("recvcounts[%d] is %d but the receive buffer holds %d "
                                 "items" % (self._s.rank, counts[self._s.rank],
                                            receive.count))
            send = buffers.message(sendbuf, writable=False)
            buffers.check_same_datatype(send, receive)
        if send.count != sum(counts):
            raise ValueError("the send buffer holds %d items, the blocks of all ranks %d; "
                             "make them equal" % (send.count, sum(counts)))
        return send, receive, counts

    # --- buffer plumbing ---
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
        if _in_place(sendbuf) is not constants.IN_PLACE:
            own, into = data_of(sendbuf, False), parts.part(self._s.rank)
            _check_part(own, len(into), name)
            into[:] = own
        return parts

    def _alltoallv_parts(self, sendbuf, recvbuf):
        receives = buffers.vector_message(recvbuf, True, self.size)
        if _in_place(sendbuf) is constants.IN_PLACE:    # send what recvbuf holds
            sends = buffers.VectorMessage(memoryview(bytes(receives.data)), receives.counts,
                                          receives.displs, receives.extent)
        else:
            sends = buffers.vector_message(sendbuf, False, self.size)
        own, into = sends.part(self._s.rank), receives.part(self._s.rank)
        _check_part(own, len(into), "Alltoallv")
        into[:] = own
        return sends, receives

    def _alltoallw_parts(self, sendbuf, recvbuf):
        # every part of the receive is written (unless the call fails), so its parts
        # start empty; with IN_PLACE they are what is sent. This rank's own part goes
        # from the send buffer straight into the receive buffer (with IN_PLACE it
        # stays where it is), not packed, copied and unpacked.
        me, in_place = self._s.rank, _in_place(sendbuf) is constants.IN_PLACE
        receives = buffers.vector_w_message(recvbuf, True, self.size, in_place, direct=me)
        if in_place:
            return receives.snapshot(), receives
        sends = buffers.vector_w_message(sendbuf, False, self.size, direct=me)
        _check_length(sends.direct_bytes(), receives.direct_bytes(), "Alltoallw")
        receives.copy_direct(sends)
        return sends, receives

    def _parts_with_own(self, sendbuf, recvbuf, name):
        """The receive buffer cut in one part per rank, this rank's part filled
        (Sync handles may travel: Gather and Allgather take HANDLE_SYNC)."""
        parts = _Parts.of(_message(recvbuf, True, self.size), self.size)
        return self._with_own(parts, sendbuf, _data, name)

    def _alltoall_parts(self, sendbuf, recvbuf):
        receives = _Parts.of(_message(recvbuf, True, self.size), self.size)
        source = (bytes(receives.whole) if _in_place(sendbuf) is constants.IN_PLACE
                  else _data(sendbuf, False, self.size))
        _check_part(source, len(receives.whole), "Alltoall")
        sends = _Parts(memoryview(source), self.size)
        receives[self._s.rank][:] = sends[self._s.rank]
        return sends, receives


def _in_place(buf):
    """IN_PLACE for None where IN_PLACE is valid: mpi4py takes None for it there
    (is_IN_PLACE in its msgbuffer.pxi), and programs pass it."""
    return constants.IN_PLACE if buf is None else buf


def _nothing(*args):
    """The plan or range of a rank that takes nothing."""
    return [] if len(args) == 2 else None


class _Objects:
    """The pickled objects a rank takes, one bytearray per sender."""

    def __init__(self, loads=_loads):
        self.loads = loads
        self.taken = {}

    def want(self, ranks, lengths):
        for rank in ranks:
            self.taken[rank] = bytearray(lengths[rank])
        return [(rank, 0, lengths[rank], memoryview(self.taken[rank])) for rank in ranks]

    def want_entries(self, ranks, first, me):
        """Entry ``me`` of each rank's table stream."""
        wants = []
        for rank in ranks:
            offset, length = _entry(first(rank), me)
            self.taken[rank] = bytearray(length)
            wants.append((rank, offset, length, memoryview(self.taken[rank])))
        return wants

    def load(self, rank):
        return self.loads(self.taken[rank])

    def with_own(self, own, me, size):
        return [own if rank == me else self.load(rank) for rank in range(size)]


def _pickled_or_none(dumps, obj):
    """The pickle of ``obj``, or None when it does not pickle (the Python path then
    raises that, in step with the others)."""
    try:
        return dumps(obj)
    except Exception:  # noqa: BLE001 - any pickling error is the Python path's to raise
        return None


# --- shmrma's own objects ---------------------------------------------------------
# Creation calls and argument exchanges share shmrma's own data (plans, problems,
# counts) through these, never through comm.bcast/allgather: a subclass may
# override those (mpi4py.util.pkl5 does, and calls Dup from them), and MPI.pickle
# may hold a codec (json) that cannot carry that data.

def own_dumps(obj):
    return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)


def own_bcast(comm, obj, root=0):
    return Collectives._bcast_objects(comm, obj, root, own_dumps, pickle.loads)


def own_allgather(comm, obj):
    return Collectives._allgather_objects(comm, obj, own_dumps, pickle.loads)


def _table_stream(parts):
    """The parts (bytes-like) after a table of (offset, length) of each."""
    table = bytearray(TABLE.size * len(parts))
    offset = len(table)
    for index, part in enumerate(parts):
        TABLE.pack_into(table, index * TABLE.size, offset, len(part))
        offset += len(part)
    return b"".join([bytes(table)] + [bytes(part) for part in parts])


def _parts_stream(parts, size, own):
    """A buffer cut in parts (_Parts, buffers.VectorMessage) as a table stream: the
    table, then the parts one after another (what a rank sends, not the buffer they
    lie in: a vector collective's cost follows the bytes it moves); the table says
    where each part lies. Part ``own``, the sender's, is empty: the sender copies
    it itself. The C paths write the same stream (table_stream in
    csrc/coll/parts.c, deposit in csrc/coll/nonblocking.c)."""
    table = bytearray(TABLE.size * size)
    whole = memoryview(parts.data).cast("B")
    pieces, at = [table], len(table)
    for index in range(size):
        start, stop = parts.span(index) if index != own else (0, 0)
        TABLE.pack_into(table, index * TABLE.size, at, stop - start)
        pieces.append(whole[start:stop])
        at += stop - start
    return b"".join(pieces)


def _entry(first, index):
    """(offset, length) of part ``index`` in a table stream whose first chunk is ``first``."""
    return TABLE.unpack_from(first, index * TABLE.size)


class _Parts:
    """A byte view cut in ``count`` equal parts; ``whole`` is the view, ``finish``
    what completes a receive into it (unpacking a derived datatype, converting a
    HANDLE_SYNC list)."""

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

    @property
    def data(self):
        return self.whole

    def span(self, index):
        return index * self.size, (index + 1) * self.size


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


def _fold_unit(send, op):
    """The bytes a fold may cut the vectors at: one basic element for a predefined op,
    which works element by element (a column of doubles folds 8 bytes at a time, so
    an item larger than a chunk of the collective area still folds), one whole item
    for a user's function, which is handed whole items."""
    if send is None:
        return 0
    if op.is_predefined:
        return element_dtype(send.datatype).itemsize
    return buffers.item_bytes(send.datatype)


def _folded(parts, op, datatype):
    """The bytes of ``parts`` (equal byte views) folded element-wise in rank order."""
    import numpy
    dtype = element_dtype(datatype)
    arrays = [numpy.frombuffer(part, dtype=dtype) for part in parts]
    result = _fold(arrays, lambda a, b: op.apply(a, b, datatype))
    return numpy.ascontiguousarray(result, dtype=dtype).tobytes()


def _fold_into(parts, op, datatype, into):
    """``into`` (a writable byte view) = ``parts`` folded in rank order: in place for a
    predefined op, with no array made per step (fresh memory costs a page fault a
    page); a user's function gets its own arrays, as in _folded."""
    if not op.is_predefined:
        into[:] = _folded(parts, op, datatype)
        return
    import numpy
    dtype = element_dtype(datatype)
    out = numpy.frombuffer(into, dtype=dtype)
    out[...] = numpy.frombuffer(parts[0], dtype=dtype)
    for part in parts[1:]:
        op.apply(out, numpy.frombuffer(part, dtype=dtype), datatype, out=out)


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
    if _in_place(sendbuf) is constants.IN_PLACE:
        send = _snapshot(receive)
    else:
        send = buffers.message(sendbuf, writable=False)
        buffers.check_reduction_pair(send, receive)
    op.check(send.datatype, "reduction")
    return send, receive


def in_turn(comm, key, call, *args):
    """``call(*args)`` holding mpi4py's lock of the communicator for ``key``
    (CommState.lock), as its object collectives do once the process runs a second
    thread (atomic.taking_turns: until then one thread alone calls them, and holding
    it would cost a fifth of a bcast). A program that looks at the locks
    (MPI._comm_lock_table) makes them take turns from then on, as mpi4py's always do."""
    with comm._s.lock(key):
        return call(*args)


def _dump_each(items):
    return [_dumps(item) for item in items]


def _block_counts(counts, size):
    """Every rank's count of a Reduce_scatter, as given."""
    if None in counts:
        raise ValueError("rank %d's receive buffer is not valid (its own error says why)"
                         % counts.index(None))
    counts = [operator.index(count) for count in counts]
    if len(counts) != size:
        raise ValueError("recvcounts: expecting %d counts (one per rank), got %d"
                         % (size, len(counts)))
    return counts


def _snapshot(whole):
    """A copy of a receive buffer's items, the send side of an IN_PLACE reduction
    (the fold overwrites the buffer)."""
    return buffers.Message(memoryview(bytes(whole.data)), whole.count, whole.datatype)


def receive_counts(comm, sendbuf, recvbuf, recvcounts):
    """Reduce_scatter's recvcounts: as given or, left out, every rank's receive count,
    gathered as mpi4py gathers them (for_reduce_scatter in its msgbuffer.pxi). With
    IN_PLACE mpi4py gathers nothing (the receive buffer holds the whole vector, so
    it tells no rank's count) and takes the missing counts for a TypeError; so does
    this, at every rank, before any of them waits for the others."""
    if recvcounts is not None:
        return recvcounts
    if _in_place(sendbuf) is constants.IN_PLACE:
        raise TypeError("Reduce_scatter with IN_PLACE needs recvcounts, one count per "
                        "rank: the receive buffer holds the whole vector")
    return own_allgather(comm, _count_or_none(recvbuf))


def _count_or_none(recvbuf):
    try:
        return buffers.message(recvbuf, writable=True).count
    except (ValueError, BufferError, TypeError, errors.Exception):
        return None     # the call itself raises it, and tells the others


def _fold(values, op):
    """values[0] op values[1] op ... in rank order, as MPI reduces."""
    result = values[0]
    for value in values[1:]:
        result = op(result, value)
    return result


def _sequence_of_size(items, size, call):
    # as mpi4py's pickle_dumpv: None stands for one None per rank, and any
    # iterable will do
    items = [None] * size if items is None else list(items)
    if len(items) != size:
        raise ValueError("%s: expected %d items (one per rank), got %d"
                         % (call, size, len(items)))
    return items


def _check_part(data, expected, call):
    _check_length(len(data), expected, call)


def _check_length(sent, expected, call):
    """This rank's ``sent`` bytes to itself fill its part of the receive buffer."""
    if sent != expected:
        errors.fail(errors.ERR_TRUNCATE if sent > expected else errors.ERR_COUNT,
                    "%s: this rank's send buffer holds %d bytes but its part of the receive "
                    "buffer holds %d; make them the same size" % (call, sent, expected))
