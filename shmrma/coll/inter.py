"""Collectives of intercommunicators (MPI-3.1 §5.2.2): every call of §5 that is
defined on an intercommunicator, in its buffer, object, nonblocking and
persistent forms.

On an intercommunicator a collective moves data between the two groups only:
a Bcast goes from the root (the rank passing ``MPI.ROOT``; the others of its
group pass ``MPI.PROC_NULL``) to every rank of the other group, an Allreduce
gives each group the reduction of the other group's vectors, and so on. Each
call here is one exchange of point-to-point messages between the two groups,
on the communicator's collective sub-context with a tag counting its
collectives (every rank calls them in the same order, MPI-3.1 §5.13, so
outstanding nonblocking ones never mix): at the call a rank sends what each
remote rank needs of it (sends never wait for their receiver), and its request
completes once every message it needs arrived, when it copies or folds them
(reductions in the remote group's rank order). The blocking forms wait on it.

A rank whose arguments are wrong sends an error notice instead of its data to
the ranks that expect data from it, then raises; those raise at Wait, naming
it, instead of hanging.
"""
import operator

from ..core import constants, errors
from ..types import buffers
from ..types import op as ops
from ..p2p.request import Request
from ..p2p.transfers import _dumps, _loads
from ..p2p.transport import COLLECTIVE, MAX_TAG
from .blocking import (Collectives, _Parts, _data, _message, _plain, _plain_message,
                       _reduce_send, _sequence_of_size, own_dumps)
from .blocking import _fold as _fold_objects
from .blocking import _fold_into
from .channel import mismatch

_DATA, _NOTICE = b"\0", b"\1"   # the first byte of every message: data or an error notice


class _Exchange(Request):
    """An inter-collective's request: done once a message arrived from every
    remote rank in ``receives`` ({rank: Receive}); ``finish({rank: data})`` then
    puts their data in place and gives the result (the object forms')."""

    def __init__(self, comm, name, receives, finish):
        self._null = False
        self._done = False
        self._state, self._name = comm._s, name
        self._receives, self._finish_with = receives, finish

    def _poll(self):
        if not self._done and all(got._poll() for got in self._receives.values()):
            self._complete()
        return self._done

    def _complete(self):
        self._done = True
        views = {}
        for rank, got in self._receives.items():
            payload = memoryview(got._result or _DATA)
            if payload[:1] == _NOTICE:
                error_class, text = _loads(payload[1:])
                self._error = errors.Exception(
                    error_class, "%s: remote rank %d raised: %s" % (self._name, rank, text))
                return
            views[rank] = payload[1:]
        try:
            self._result = self._finish_with(views) if self._finish_with else None
        except Exception as exc:  # noqa: BLE001 - raised at Wait, as MPI reports it
            self._error = exc

    def _pending(self):
        return [rank for rank, got in self._receives.items() if not got._poll()]

    def _describe(self):
        return "%s on %s (an intercommunicator): nothing yet from remote rank %s" % (
            self._name, self._state.name or "a communicator",
            ", ".join(map(str, self._pending())))

    def _peers(self):
        return [self._state.ranks[rank] for rank in self._pending()]


def _notice(exc):
    error_class = (exc.Get_error_class() if isinstance(exc, errors.Exception)
                   else errors.ERR_ARG)
    return _NOTICE + own_dumps((error_class, "%s: %s" % (type(exc).__name__, exc)))


def _to_each(ranks, data):
    """The sends of one payload to every rank of ``ranks``."""
    return [(rank, data) for rank in ranks]


def _take(name, rank, view, into):
    """Copy remote rank's ``view`` into ``into``, which it must fill exactly."""
    if len(view) != len(into):
        raise mismatch(name, rank, len(view), len(into))
    into[:] = view


def _fold_views(name, views, receive, op, block=None):
    """``receive`` = the remote vectors (their byte range ``block``) folded in rank order."""
    into = memoryview(receive.data).cast("B")
    parts = []
    for rank in sorted(views):
        view = views[rank] if block is None else views[rank][block[0]:block[1]]
        if len(view) != len(into):
            raise mismatch(name, rank, len(view), len(into))
        parts.append(view)
    _fold_into(parts, op, receive.datatype, into)
    receive.finish()


class InterCollectives:
    """The collectives of an Intercomm, on its point-to-point methods (comm.Comm)."""

    # --- plumbing ----------------------------------------------------------------
    def _remote_ranks(self):
        return range(len(self._s.ranks))

    def _inter_root(self, root):
        """ROOT, PROC_NULL or the root's rank in the remote group."""
        root = operator.index(root)
        size = len(self._s.ranks)
        if root in (constants.ROOT, constants.PROC_NULL) or 0 <= root < size:
            return root
        errors.fail(errors.ERR_ROOT, "root %r is invalid on an intercommunicator: the root "
                    "passes MPI.ROOT, the others of its group MPI.PROC_NULL, and the other "
                    "group the root's rank there (0..%d)" % (root, size - 1))

    def _exchange(self, name, readers, plan):
        """Start one exchange: ``plan()`` -> (sends [(remote rank, data)], sources,
        finish). ``readers``: the remote ranks that expect data from this rank,
        whom an error of ``plan`` is told."""
        state = self._s
        tag = state.coll_tag
        state.coll_tag = tag + 1 if tag < MAX_TAG else 0
        try:
            sends, sources, finish = plan()
        except Exception as exc:
            notice = _notice(exc)
            for rank in readers:
                self._isend_bytes(notice, rank, tag, False, COLLECTIVE)
            raise
        framed = {}     # one copy per distinct payload (a broadcast sends one to all)
        for rank, data in sends:
            message = framed.get(id(data))
            if message is None:
                message = framed[id(data)] = b"".join((_DATA, data))
            self._isend_bytes(message, rank, tag, False, COLLECTIVE)
        receives = {rank: self._irecv(rank, tag, None, COLLECTIVE, loads=bytes)
                    for rank in sources}
        return _Exchange(self, name, receives, finish)

    def _rooted(self, name, root, at_root, at_others):
        """A collective with a root: ``at_root()`` and ``at_others(root)`` give
        (readers, plan) for the root and for the other group; PROC_NULL does nothing."""
        root = self._inter_root(root)
        if root == constants.PROC_NULL:
            readers, plan = [], lambda: ([], [], None)
        elif root == constants.ROOT:
            readers, plan = at_root()
        else:
            readers, plan = at_others(root)
        return self._exchange(name, readers, plan)

    # --- synchronization -----------------------------------------------------------
    def Ibarrier(self):
        """Nonblocking barrier: complete once every rank of the other group called it."""
        everyone = list(self._remote_ranks())
        return self._exchange("Ibarrier", everyone,
                              lambda: (_to_each(everyone, b""), everyone, None))

    def Barrier(self):
        """Barrier: return once every rank of the other group has called it."""
        self.Ibarrier().Wait()

    barrier = Barrier

    # --- buffers -----------------------------------------------------------------------
    def Ibcast(self, buf, root=0):
        """Nonblocking broadcast from the root (MPI.ROOT) to the other group."""
        everyone = list(self._remote_ranks())

        def send():
            return _to_each(everyone, _message(buf, False).data), [], None

        def receive(root):
            received = _message(buf, True)
            return [], [root], lambda views: self._into_one("Bcast", views, received)
        return self._rooted("Ibcast", root, lambda: (everyone, send),
                            lambda root: ([], lambda: receive(root)))

    def Bcast(self, buf, root=0):
        """Broadcast data from the root (MPI.ROOT) to every rank of the other group."""
        self.Ibcast(buf, root).Wait()

    @staticmethod
    def _into_one(name, views, received):
        (rank, view), = views.items()
        _take(name, rank, view, received.data)
        received.finish()

    def Igather(self, sendbuf, recvbuf, root=0):
        """Nonblocking gather from the other group to the root (MPI.ROOT)."""
        return self._igather("Igather", sendbuf, recvbuf, root, _data, self._block_parts)

    def Igatherv(self, sendbuf, recvbuf, root=0):
        """Nonblocking gather of varying counts from the other group to the root."""
        return self._igather("Igatherv", sendbuf, recvbuf, root, _plain, self._vector_parts)

    def Gather(self, sendbuf, recvbuf, root=0):
        """Gather data from every rank of the other group to the root (MPI.ROOT)."""
        self.Igather(sendbuf, recvbuf, root).Wait()

    def Gatherv(self, sendbuf, recvbuf, root=0):
        """Gather data of varying counts from the other group to the root (MPI.ROOT)."""
        self.Igatherv(sendbuf, recvbuf, root).Wait()

    def _igather(self, name, sendbuf, recvbuf, root, data_of, parts_of):
        everyone = list(self._remote_ranks())

        def receive():
            parts = parts_of(recvbuf, True)
            return [], everyone, lambda views: self._into_parts(name, views, parts)
        return self._rooted(name, root, lambda: ([], receive), lambda root: (
            [root], lambda: ([(root, data_of(sendbuf, False))], [], None)))

    def _block_parts(self, buf, writable):
        size = len(self._s.ranks)
        return _Parts.of(_message(buf, writable, size), size)

    def _plain_parts(self, buf, writable):
        size = len(self._s.ranks)
        return _Parts.of(_plain_message(buf, writable, size), size)

    def _vector_parts(self, buf, writable):
        return buffers.vector_message(buf, writable, len(self._s.ranks))

    @staticmethod
    def _into_parts(name, views, parts):
        for rank, view in views.items():
            _take(name, rank, view, parts.part(rank))
        parts.finish()

    def Iscatter(self, sendbuf, recvbuf, root=0):
        """Nonblocking scatter from the root (MPI.ROOT) to the other group."""
        return self._iscatter("Iscatter", sendbuf, recvbuf, root, self._plain_parts)

    def Iscatterv(self, sendbuf, recvbuf, root=0):
        """Nonblocking scatter of varying counts from the root to the other group."""
        return self._iscatter("Iscatterv", sendbuf, recvbuf, root, self._vector_parts)

    def Scatter(self, sendbuf, recvbuf, root=0):
        """Scatter data from the root (MPI.ROOT) to every rank of the other group."""
        self.Iscatter(sendbuf, recvbuf, root).Wait()

    def Scatterv(self, sendbuf, recvbuf, root=0):
        """Scatter data of varying counts from the root to the other group."""
        self.Iscatterv(sendbuf, recvbuf, root).Wait()

    def _iscatter(self, name, sendbuf, recvbuf, root, parts_of):
        everyone = list(self._remote_ranks())

        def send():
            parts = parts_of(sendbuf, False)
            return [(rank, parts.part(rank)) for rank in everyone], [], None

        def receive(root):
            received = _plain_message(recvbuf, True)
            return [], [root], lambda views: self._into_one(name, views, received)
        return self._rooted(name, root, lambda: (everyone, send),
                            lambda root: ([], lambda: receive(root)))

    def Iallgather(self, sendbuf, recvbuf):
        """Nonblocking allgather: every rank gets the other group's data."""
        return self._iallgather("Iallgather", sendbuf, recvbuf, _data, self._block_parts)

    def Iallgatherv(self, sendbuf, recvbuf):
        """Nonblocking allgather of varying counts from the other group."""
        return self._iallgather("Iallgatherv", sendbuf, recvbuf, _plain, self._vector_parts)

    def Allgather(self, sendbuf, recvbuf):
        """Gather the data of every rank of the other group, at every rank."""
        self.Iallgather(sendbuf, recvbuf).Wait()

    def Allgatherv(self, sendbuf, recvbuf):
        """Gather data of varying counts from the other group, at every rank."""
        self.Iallgatherv(sendbuf, recvbuf).Wait()

    def _iallgather(self, name, sendbuf, recvbuf, data_of, parts_of):
        everyone = list(self._remote_ranks())

        def plan():
            data, parts = data_of(sendbuf, False), parts_of(recvbuf, True)
            return (_to_each(everyone, data), everyone,
                    lambda views: self._into_parts(name, views, parts))
        return self._exchange(name, everyone, plan)

    def Ialltoall(self, sendbuf, recvbuf):
        """Nonblocking all-to-all between the two groups."""
        return self._ialltoall("Ialltoall", sendbuf, recvbuf, self._block_parts)

    def Ialltoallv(self, sendbuf, recvbuf):
        """Nonblocking all-to-all of varying counts between the two groups."""
        return self._ialltoall("Ialltoallv", sendbuf, recvbuf, self._vector_parts)

    def Ialltoallw(self, sendbuf, recvbuf):
        """Nonblocking all-to-all of varying counts and datatypes between the groups."""
        return self._ialltoall("Ialltoallw", sendbuf, recvbuf, lambda buf, writable:
                               buffers.vector_w_message(buf, writable, len(self._s.ranks)))

    def Alltoall(self, sendbuf, recvbuf):
        """All-to-all: block j of each rank's send buffer to rank j of the other group."""
        self.Ialltoall(sendbuf, recvbuf).Wait()

    def Alltoallv(self, sendbuf, recvbuf):
        """All-to-all of varying counts between the two groups."""
        self.Ialltoallv(sendbuf, recvbuf).Wait()

    def Alltoallw(self, sendbuf, recvbuf):
        """All-to-all of varying counts and datatypes between the two groups."""
        self.Ialltoallw(sendbuf, recvbuf).Wait()

    def _ialltoall(self, name, sendbuf, recvbuf, parts_of):
        everyone = list(self._remote_ranks())

        def plan():
            sends, receives = parts_of(sendbuf, False), parts_of(recvbuf, True)
            return ([(rank, sends.part(rank)) for rank in everyone], everyone,
                    lambda views: self._into_parts(name, views, receives))
        return self._exchange(name, everyone, plan)

    # --- reductions ------------------------------------------------------------------
    def Ireduce(self, sendbuf, recvbuf, op=ops.SUM, root=0):
        """Nonblocking reduce of the other group's vectors to the root (MPI.ROOT)."""
        everyone = list(self._remote_ranks())

        def receive():
            received = buffers.message(recvbuf, writable=True)
            op.check(received.datatype, "reduction")
            return [], everyone, lambda views: _fold_views("Reduce", views, received, op)

        def send(root):
            return [(root, _reduce_send(sendbuf, op).data)], [], None
        return self._rooted("Ireduce", root, lambda: ([], receive),
                            lambda root: ([root], lambda: send(root)))

    def Reduce(self, sendbuf, recvbuf, op=ops.SUM, root=0):
        """Reduce the other group's vectors with ``op`` to the root (MPI.ROOT)."""
        self.Ireduce(sendbuf, recvbuf, op, root).Wait()

    def Iallreduce(self, sendbuf, recvbuf, op=ops.SUM):
        """Nonblocking allreduce: each group gets the reduction of the other's vectors."""
        return self._reduce_exchange("Iallreduce", sendbuf, recvbuf, op, None)

    def Allreduce(self, sendbuf, recvbuf, op=ops.SUM):
        """Reduce the other group's vectors with ``op``; the result goes to every rank."""
        self.Iallreduce(sendbuf, recvbuf, op).Wait()

    def Ireduce_scatter_block(self, sendbuf, recvbuf, op=ops.SUM):
        """Nonblocking reduce-scatter in equal blocks between the two groups."""
        return self._reduce_exchange("Ireduce_scatter_block", sendbuf, recvbuf, op, "blocks")

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=ops.SUM):
        """Reduce the other group's vectors; rank i of this group gets block i."""
        self.Ireduce_scatter_block(sendbuf, recvbuf, op).Wait()

    def Ireduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=ops.SUM):
        """Nonblocking reduce-scatter with this group's ``recvcounts``."""
        if recvcounts is None:
            raise TypeError("Reduce_scatter on an intercommunicator needs recvcounts, one "
                            "count per rank of this group")
        return self._reduce_exchange("Ireduce_scatter", sendbuf, recvbuf, op, recvcounts)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=ops.SUM):
        """Reduce the other group's vectors; rank i gets ``recvcounts[i]`` items."""
        self.Ireduce_scatter(sendbuf, recvbuf, recvcounts, op).Wait()

    def _reduce_exchange(self, name, sendbuf, recvbuf, op, scatter):
        """Allreduce (``scatter`` None), Reduce_scatter_block ("blocks": each group's
        vector is cut in one equal block per rank of the other group, MPI-3.1
        §5.10.1) and Reduce_scatter (this group's counts: the other group sends its
        whole vector, and each rank folds its own block of them)."""
        everyone = list(self._remote_ranks())

        def plan():
            if sendbuf is constants.IN_PLACE or sendbuf is None:
                errors.fail(errors.ERR_BUFFER, "%s: IN_PLACE is not valid on an "
                            "intercommunicator; pass a send buffer" % name)
            cut = scatter
            if scatter in (None, "blocks"):
                send = buffers.message(sendbuf, writable=False)
                receive = buffers.message(recvbuf, writable=True)
                buffers.check_same_datatype(send, receive)
            else:   # recvcounts: checked against the buffers as on an intracommunicator
                send, receive, cut = Collectives._vector_buffers(self, sendbuf, recvbuf,
                                                                 scatter)
            op.check(send.datatype, "reduction")
            sends, block = self._reduce_parts(send, cut, everyone)
            return sends, everyone, lambda views: _fold_views(name, views, receive, op, block)
        return self._exchange(name, everyone, plan)

    def _reduce_parts(self, send, scatter, everyone):
        """(what goes to each remote rank, the byte range this rank folds); ``scatter``
        is None, "blocks" or this group's checked counts."""
        data = memoryview(send.data).cast("B")
        if scatter is None:
            return _to_each(everyone, data), None
        if scatter == "blocks":
            size = len(data) // len(everyone)
            return [(rank, data[rank * size:(rank + 1) * size]) for rank in everyone], None
        me, item = self.Get_rank(), buffers.item_bytes(send.datatype)
        start = sum(scatter[:me]) * item
        return _to_each(everyone, data), (start, start + scatter[me] * item)

    # --- objects -----------------------------------------------------------------
    def bcast(self, obj=None, root=0):
        """Broadcast a Python object from the root (MPI.ROOT) to the other group.

        The other group's ranks return it; the root and PROC_NULL return None."""
        everyone = list(self._remote_ranks())
        return self._rooted("bcast", root, lambda: (everyone, lambda: (
            _to_each(everyone, _dumps(obj)), [], None)),
            lambda root: ([], lambda: ([], [root], lambda views: _loads(views[root])))).wait()

    def gather(self, sendobj, root=0):
        """Gather the other group's objects to the root (MPI.ROOT): a list there."""
        everyone = list(self._remote_ranks())
        return self._rooted("gather", root, lambda: ([], lambda: (
            [], everyone, lambda views: [_loads(views[rank]) for rank in everyone])),
            lambda root: ([root], lambda: ([(root, _dumps(sendobj))], [], None))).wait()

    def scatter(self, sendobj=None, root=0):
        """Scatter the root's sequence of objects, one to each rank of the other group."""
        everyone = list(self._remote_ranks())

        def send():
            items = _sequence_of_size(sendobj, len(everyone), "scatter")
            return [(rank, _dumps(items[rank])) for rank in everyone], [], None
        return self._rooted("scatter", root, lambda: (everyone, send), lambda root: (
            [], lambda: ([], [root], lambda views: _loads(views[root])))).wait()

    def allgather(self, sendobj):
        """Gather the other group's objects at every rank: a list in their rank order."""
        everyone = list(self._remote_ranks())
        return self._exchange("allgather", everyone, lambda: (
            _to_each(everyone, _dumps(sendobj)), everyone,
            lambda views: [_loads(views[rank]) for rank in everyone])).wait()

    def alltoall(self, sendobj):
        """Send item j of each rank's sequence to rank j of the other group."""
        everyone = list(self._remote_ranks())

        def plan():
            items = _sequence_of_size(sendobj, len(everyone), "alltoall")
            return ([(rank, _dumps(items[rank])) for rank in everyone], everyone,
                    lambda views: [_loads(views[rank]) for rank in everyone])
        return self._exchange("alltoall", everyone, plan).wait()

    def reduce(self, sendobj, op=ops.SUM, root=0):
        """Reduce the other group's objects with ``op``, in rank order, to the root."""
        values = InterCollectives.gather(self, sendobj, root)
        return _fold_objects(values, op) if values else None

    def allreduce(self, sendobj, op=ops.SUM):
        """Reduce the other group's objects with ``op``, in rank order, at every rank."""
        return _fold_objects(InterCollectives.allgather(self, sendobj), op)


# the collectives MPI defines on intracommunicators only (MPI-3.1 §5.2.2, §5.11)
INTRA_ONLY = ("Scan", "Exscan", "Iscan", "Iexscan", "scan", "exscan", "Scan_init",
              "Exscan_init")


def refuse_intra_only(cls):
    """Give ``cls`` each call of INTRA_ONLY as one raising ERR_COMM."""
    for name in INTRA_ONLY:
        setattr(cls, name, _refusal(name))
    return cls


def _refusal(name):
    def refuse(self, *args, **kwargs):
        self._s     # a null communicator is ERR_COMM for its own reason
        errors.fail(errors.ERR_COMM, "%s is not defined on an intercommunicator (MPI-3.1 "
                    "§5.11); Merge it into an intracommunicator first" % name)
    refuse.__name__ = name
    refuse.__doc__ = "Not defined on an intercommunicator: raises ERR_COMM."
    return refuse
