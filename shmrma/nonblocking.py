"""Nonblocking collectives of intracommunicators: Ibarrier, Ibcast, Igather(v),
Iscatter(v), Iallgather(v), Ialltoall(v), Ireduce, Iallreduce, Iscan, Iexscan,
Ireduce_scatter(_block).

At the call a rank sends at once everything it contributes (sends never wait
for their receiver) and posts a receive for everything it expects, on a
subcontext of their own; the request completes when those arrived, then
folds reductions in rank order. Messages between two ranks keep their order
and every rank calls the collectives in the same order, so several may be
outstanding. A rank whose arguments are wrong raises at the call, after
sending an empty notice where its data was awaited, so the others' Wait raises
too (naming it) instead of hanging. Sync handles do not travel here (ERR_TYPE).
"""
from . import constants, errors
from . import op as ops
from .collective import (_count_or_none, _exclusive, _inclusive, _Parts, _plain,
                         _plain_message, _prefix_folds, _reduce_buffers, _reduce_send, _total,
                         element_dtype)
from .comm import NONBLOCKING
from .request import Request

_EMPTY = memoryview(bytearray(0))
TAG = 0            # a rank's contribution
NOTICE = 1         # and above: an empty failure notice, NOTICE + class + NOTICE_RANKS * rank
NOTICE_RANKS = 256


class _Exchange(Request):
    """The request of a nonblocking collective: done once every expected message
    arrived (then ``finish`` runs once); a notice or a size mismatch is its error."""

    def __init__(self, comm, name, expected, finish=None):
        self._null = False
        self._done = False
        self._state, self._name, self._finish_with = comm._s, name, finish
        self._receives = [(rank, view, comm._irecv(rank, constants.ANY_TAG, view, NONBLOCKING))
                          for rank, view in expected]

    def _poll(self):
        if not self._done and all(receive._poll() for _, _, receive in self._receives):
            self._error = self._problem()
            if self._error is None and self._finish_with is not None:
                try:
                    self._finish_with()
                except Exception as exc:    # an MPI error, or a user op's own
                    self._error = exc
            self._done = True
        return self._done

    def _problem(self):
        for rank, view, receive in self._receives:
            status = receive._status
            if status.tag >= NOTICE:
                culprit, error_class = divmod(status.tag - NOTICE, NOTICE_RANKS)
                return errors.Exception(error_class, "%s: rank %d failed in this call (%s) "
                                        "and sent nothing; its own error says what to fix"
                                        % (self._name, culprit,
                                           errors.error_string(error_class)))
            if receive._error is not None:
                return receive._error
            if status.count != len(view):
                return errors.Exception(
                    errors.ERR_TRUNCATE if status.count > len(view) else errors.ERR_COUNT,
                    "%s: rank %d sent %d bytes where this rank expects %d; every rank "
                    "must pass the same count and datatype"
                    % (self._name, rank, status.count, len(view)))
        return None

    def _describe(self):
        waiting = [rank for rank, _, receive in self._receives if not receive._poll()]
        return "%s on %s: nothing yet from ranks %s" % (self._name, self._state.name or
                                                       "a communicator", waiting)

    def _peers(self):
        return self._state.ranks


def _start(comm, name, targets, plan):
    """Run ``plan()`` -> (data for each target rank, expected (rank, view) pairs,
    finish); send the data, or notices when ``plan`` raised (then raise it)."""
    try:
        sends, expected, finish = plan()
    except Exception as exc:
        error_class = (exc.Get_error_class() if isinstance(exc, errors.Exception)
                       else errors.ERR_ARG)
        notice = NOTICE + error_class + NOTICE_RANKS * comm._s.rank
        for rank in targets:
            comm._isend_bytes(b"", rank, notice, False, NONBLOCKING)
        raise
    for rank in targets:
        comm._isend_bytes(sends[rank], rank, TAG, False, NONBLOCKING)
    return _Exchange(comm, name, expected, finish)


def _fold_into(receive, parts, op, pick=_total, rank=0):
    """``receive`` = ``pick`` of the folds of ``parts`` in rank order (all of them,
    or this rank's prefix for the scans; nothing when pick gives None)."""
    import numpy
    dtype = element_dtype(receive.datatype)
    arrays = [numpy.frombuffer(bytes(part), dtype=dtype) for part in parts]
    folds = _prefix_folds(arrays, lambda a, b: op.apply(a, b, receive.datatype),
                          every=pick is not _total)
    result = pick(folds, rank)
    if result is not None:
        receive.data[:] = numpy.ascontiguousarray(result, dtype=dtype).tobytes()
        receive.finish()


def _receive_plan(root, buf):
    """The plan of a rank that only receives ``buf`` from ``root`` (Ibcast, Iscatter)."""
    received = _plain_message(buf, True)
    return {}, [(root, received.data)], received.finish


class NonblockingCollectives:
    """Mixin of Intracomm; it uses the buffer helpers of collective.Collectives."""

    def Ibarrier(self):
        others = self._others()
        return _start(self, "Ibarrier", others, lambda: (
            {rank: b"" for rank in others}, [(rank, _EMPTY) for rank in others], None))

    def Ibcast(self, buf, root=0):
        root, others = self._root(root), self._others()
        if self._s.rank == root:
            return _start(self, "Ibcast", others, lambda: (
                dict.fromkeys(others, _plain(buf, False)), [], None))
        return _start(self, "Ibcast", [], lambda: _receive_plan(root, buf))

    def Igather(self, sendbuf, recvbuf, root=0):
        return self._igather("Igather", sendbuf, recvbuf, root, self._own_part)

    def Igatherv(self, sendbuf, recvbuf, root=0):
        return self._igather("Igatherv", sendbuf, recvbuf, root, self._vector_with_own)

    def _igather(self, name, sendbuf, recvbuf, root, with_own):
        root = self._root(root)
        if self._s.rank != root:
            return _start(self, name, [root], lambda: ({root: _plain(sendbuf, False)}, [],
                                                       None))

        def plan():
            parts = with_own(sendbuf, recvbuf, name)
            return {}, [(rank, parts.part(rank)) for rank in self._others()], parts.finish
        return _start(self, name, [], plan)

    def Iscatter(self, sendbuf, recvbuf, root=0):
        return self._iscatter("Iscatter", sendbuf, recvbuf, root, self._parts_of)

    def Iscatterv(self, sendbuf, recvbuf, root=0):
        return self._iscatter("Iscatterv", sendbuf, recvbuf, root, self._vector_parts)

    def _iscatter(self, name, sendbuf, recvbuf, root, parts_of):
        root, others = self._root(root), self._others()
        if self._s.rank != root:
            return _start(self, name, [], lambda: _receive_plan(root, recvbuf))

        def plan():
            parts = parts_of(sendbuf, False)
            if recvbuf is not constants.IN_PLACE:
                self._copy_own(parts, recvbuf, name)
            return {rank: parts.part(rank) for rank in others}, [], None
        return _start(self, name, others, plan)

    def Iallgather(self, sendbuf, recvbuf):
        return self._iallgather("Iallgather", sendbuf, recvbuf, self._own_part)

    def Iallgatherv(self, sendbuf, recvbuf):
        return self._iallgather("Iallgatherv", sendbuf, recvbuf, self._vector_with_own)

    def _iallgather(self, name, sendbuf, recvbuf, with_own):
        others = self._others()

        def plan():
            parts = with_own(sendbuf, recvbuf, name)
            return (dict.fromkeys(others, parts.part(self._s.rank)),
                    [(rank, parts.part(rank)) for rank in others], parts.finish)
        return _start(self, name, others, plan)

    def Ialltoall(self, sendbuf, recvbuf):
        return self._ialltoall("Ialltoall", sendbuf, recvbuf, self._alltoall_with_own)

    def Ialltoallv(self, sendbuf, recvbuf):
        return self._ialltoall("Ialltoallv", sendbuf, recvbuf, self._alltoallv_parts)

    def _ialltoall(self, name, sendbuf, recvbuf, with_own):
        others = self._others()

        def plan():
            sends, receives = with_own(sendbuf, recvbuf)
            return ({rank: sends.part(rank) for rank in others},
                    [(rank, receives.part(rank)) for rank in others], receives.finish)
        return _start(self, name, others, plan)

    def _alltoall_with_own(self, sendbuf, recvbuf):
        sends, receives = self._alltoall_parts(sendbuf, recvbuf)
        receives[self._s.rank][:] = sends[self._s.rank]
        return sends, receives

    def Ireduce(self, sendbuf, recvbuf, op=ops.SUM, root=0):
        root = self._root(root)
        if self._s.rank != root:
            return _start(self, "Ireduce", [root], lambda: (
                {root: _reduce_send(sendbuf, op).data}, [], None))
        return _start(self, "Ireduce", [], lambda: self._fold_plan(sendbuf, recvbuf, op,
                                                                   []))

    def Iallreduce(self, sendbuf, recvbuf, op=ops.SUM):
        others = self._others()
        return _start(self, "Iallreduce", others,
                      lambda: self._fold_plan(sendbuf, recvbuf, op, others))

    def Iscan(self, sendbuf, recvbuf, op=ops.SUM):
        return self._prefix("Iscan", sendbuf, recvbuf, op, _inclusive)

    def Iexscan(self, sendbuf, recvbuf, op=ops.SUM):
        return self._prefix("Iexscan", sendbuf, recvbuf, op, _exclusive)

    def _prefix(self, name, sendbuf, recvbuf, op, pick):
        """Each rank's contribution to the ranks above it; each folds the prefix."""
        rank = self._s.rank
        above, below = list(range(rank + 1, self.size)), list(range(rank))
        return _start(self, name, above, lambda: self._fold_plan(
            sendbuf, recvbuf, op, above, below, pick))

    def Ireduce_scatter_block(self, sendbuf, recvbuf, op=ops.SUM):
        return self._ireduce_scatter("Ireduce_scatter_block", sendbuf, recvbuf, op, None)

    def Ireduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=ops.SUM):
        if recvcounts is None:  # every rank's receive count, as mpi4py gathers them
            recvcounts = self.allgather(_count_or_none(recvbuf))
        return self._ireduce_scatter("Ireduce_scatter", sendbuf, recvbuf, op, recvcounts)

    def _ireduce_scatter(self, name, sendbuf, recvbuf, op, counts):
        """Block r of every rank's vector goes to rank r, which folds them."""
        others, rank = self._others(), self._s.rank

        def plan():
            send, receive, offsets = self._scatter_buffers(sendbuf, recvbuf, op, counts)
            source = memoryview(bytes(send.data))
            blocks = [source[offsets[r]:offsets[r + 1]] for r in range(self.size)]
            scratch = {other: memoryview(bytearray(receive.nbytes)) for other in others}
            scratch[rank] = blocks[rank]

            def finish():
                _fold_into(receive, [scratch[r] for r in range(self.size)], op)
            return ({other: blocks[other] for other in others},
                    [(other, scratch[other]) for other in others], finish)
        return _start(self, name, others, plan)

    def _fold_plan(self, sendbuf, recvbuf, op, targets, sources=None, pick=_total):
        """Send my contribution to ``targets``, take those of ``sources`` (every
        other rank when None), fold them with mine in rank order at completion."""
        send, receive = _reduce_buffers(sendbuf, recvbuf, op)
        mine, rank = bytes(send.data), self._s.rank
        sources = self._others() if sources is None else sources
        scratch = {source: memoryview(bytearray(send.nbytes)) for source in sources}
        scratch[rank] = mine

        def finish():
            _fold_into(receive, [scratch[r] for r in sorted(scratch)], op, pick,
                       sorted(scratch).index(rank))
        return (dict.fromkeys(targets, mine),
                [(source, scratch[source]) for source in sources], finish)

    def _own_part(self, sendbuf, recvbuf, name):
        parts = _Parts.of(_plain_message(recvbuf, True, self.size), self.size)
        return self._with_own(parts, sendbuf, _plain, name)
