"""Nonblocking collectives of intracommunicators: Ibarrier, Ibcast, Igather,
Iscatter, Iallgather, Ialltoall, Ireduce, Iallreduce.

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
from .collective import (NOTICE, NOTICE_RANKS, TAG, _check_part, _Parts, _plain,
                         _prefix_folds, _reduce_buffers, _reduce_send)
from .comm import NONBLOCKING
from .request import Request

_EMPTY = memoryview(bytearray(0))


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
                except errors.Exception as exc:
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


def _fold_into(receive, parts, op):
    """``receive`` = parts[0] op parts[1] op ... (rank order)."""
    import numpy
    dtype = receive.datatype.dtype
    arrays = [numpy.frombuffer(bytes(part), dtype=dtype) for part in parts]
    total = _prefix_folds(arrays, lambda a, b: op.apply(a, b, receive.datatype),
                          every=False)[-1]
    receive.data[:] = numpy.ascontiguousarray(total, dtype=dtype).tobytes()


class NonblockingCollectives:
    """Mixin of Intracomm (after Collectives)."""

    def Ibarrier(self):
        others = self._others()
        return _start(self, "Ibarrier", others, lambda: (
            {rank: b"" for rank in others}, [(rank, _EMPTY) for rank in others], None))

    def Ibcast(self, buf, root=0):
        root, others = self._root(root), self._others()
        if self._s.rank == root:
            return _start(self, "Ibcast", others, lambda: (
                dict.fromkeys(others, _plain(buf, False)), [], None))
        return _start(self, "Ibcast", [], lambda: ({}, [(root, _plain(buf, True))], None))

    def Igather(self, sendbuf, recvbuf, root=0):
        root = self._root(root)
        if self._s.rank != root:
            return _start(self, "Igather", [root], lambda: (
                {root: _plain(sendbuf, False)}, [], None))

        def plan():
            parts = self._own_part(sendbuf, recvbuf, "Igather")
            return {}, [(rank, parts[rank]) for rank in self._others()], None
        return _start(self, "Igather", [], plan)

    def Iscatter(self, sendbuf, recvbuf, root=0):
        root, others = self._root(root), self._others()
        if self._s.rank != root:
            return _start(self, "Iscatter", [], lambda: (
                {}, [(root, _plain(recvbuf, True))], None))

        def plan():
            parts = _Parts(_plain(sendbuf, False, self.size), self.size)
            if recvbuf is not constants.IN_PLACE:
                self._copy_own(parts, recvbuf, "Iscatter")
            return {rank: parts[rank] for rank in others}, [], None
        return _start(self, "Iscatter", others, plan)

    def Iallgather(self, sendbuf, recvbuf):
        others = self._others()

        def plan():
            parts = self._own_part(sendbuf, recvbuf, "Iallgather")
            mine = parts[self._s.rank]
            return (dict.fromkeys(others, mine), [(rank, parts[rank]) for rank in others],
                    None)
        return _start(self, "Iallgather", others, plan)

    def Ialltoall(self, sendbuf, recvbuf):
        others = self._others()

        def plan():
            sends, receives = self._alltoall_parts(sendbuf, recvbuf)
            receives[self._s.rank][:] = sends[self._s.rank]
            return ({rank: sends[rank] for rank in others},
                    [(rank, receives[rank]) for rank in others], None)
        return _start(self, "Ialltoall", others, plan)

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

    def _fold_plan(self, sendbuf, recvbuf, op, targets):
        """Send my contribution to ``targets``, take everyone's, fold at completion."""
        send, receive = _reduce_buffers(sendbuf, recvbuf, op)
        mine = bytes(send.data)
        scratch = {rank: memoryview(bytearray(send.nbytes)) for rank in self._others()}
        scratch[self._s.rank] = mine

        def finish():
            _fold_into(receive, [scratch[rank] for rank in range(self.size)], op)
        return (dict.fromkeys(targets, mine),
                [(rank, view) for rank, view in scratch.items() if rank != self._s.rank],
                finish)

    def _own_part(self, sendbuf, recvbuf, name):
        parts = _Parts(_plain(recvbuf, True, self.size), self.size)
        if sendbuf is not constants.IN_PLACE:
            own = _plain(sendbuf, False)
            _check_part(own, len(parts[0]), name)
            parts[self._s.rank][:] = own
        return parts
