"""The race checker's wrappers around messages and collectives, which order ranks
too: a message is a release by its sender and an acquire by its receiver; a
collective orders its ranks as its data flows (to the root, from it, among all).

Point-to-point messages take the Python path while checking (the C fast paths do
not report the message they matched).
"""
import functools
import inspect

from ..core import constants
from ..p2p import transport as mailbox
from .clock import clock, key_of
from .completion import on_completion
from .windowcheck import COLLECTIVE, MESSAGE



class _Counts(dict):
    def take(self, key):
        seq = self.get(key, 0)
        self[key] = seq + 1
        return seq


_sent, _received = _Counts(), _Counts()
_collective_seqs = {}       # context -> collectives called on it (the same on every rank)


def install_messages(Comm):
    """A message is a release by its sender and an acquire by its receiver, keyed by
    (context, source, destination, tag, n): MPI's non-overtaking rule makes the n-th
    message of a source with a tag the n-th receive of that source and tag."""
    from ..comm import comm as comm_module
    comm_module._fast_send = comm_module._fast_recv = comm_module._fast_irecv = mailbox._miss
    comm_module._fast_sendobj = comm_module._fast_recvobj = mailbox._miss_object
    send = Comm._isend_bytes

    def _isend_bytes(self, data, dest, tag, pickled, kind=comm_module.P2P, *args, **kwargs):
        state = self._s
        try:
            peer = self._peer(dest, "destination")
        except Exception:       # noqa: BLE001 - the real call raises the right error
            peer = constants.PROC_NULL
        if peer == constants.PROC_NULL:
            return send(self, data, dest, tag, pickled, kind, *args, **kwargs)
        c = clock()
        route = (state.subcontext(kind), c.me, state.ranks[peer], tag)
        c.release(key_of(MESSAGE, *route, _sent.get(route, 0)))
        request = send(self, data, dest, tag, pickled, kind, *args, **kwargs)
        _sent.take(route)
        return request
    Comm._isend_bytes = functools.wraps(send)(_isend_bytes)

    complete = comm_module.Receive._complete

    def _complete(self):
        c = clock()
        c.look_at_stores()      # what the rank did before the receive is not ordered by it
        complete(self)
        core = self.core
        if core.error or core.source < 0:
            return
        route = (core.context, core.source, c.me, core.tag)
        c.acquire(core.source, key_of(MESSAGE, *route, _received.take(route)))
    comm_module.Receive._complete = _complete


ALL, FROM_ROOT, TO_ROOT, SCAN, EXSCAN, NEIGHBORS = range(6)
_FLOWS = {
    ALL: "Barrier barrier allgather alltoall allreduce Allgather Allgatherv Alltoall "
         "Alltoallv Alltoallw Allreduce Reduce_scatter_block Reduce_scatter Ibarrier "
         "Iallgather Iallgatherv Ialltoall Ialltoallv Ialltoallw Iallreduce "
         "Ireduce_scatter_block Ireduce_scatter",
    FROM_ROOT: "bcast scatter Bcast Scatter Scatterv Ibcast Iscatter Iscatterv",
    TO_ROOT: "gather reduce Gather Gatherv Reduce Igather Igatherv Ireduce",
    SCAN: "scan Scan Iscan", EXSCAN: "exscan Exscan Iexscan",
    NEIGHBORS: " ".join(prefix + name for prefix in ("Neighbor_", "Ineighbor_")
                        for name in ("allgather", "allgatherv", "alltoall", "alltoallv",
                                     "alltoallw")) + " neighbor_allgather neighbor_alltoall"}


def _sources(flow, state, root):
    """The ranks whose contributions reach this rank in a collective of this flow."""
    rank, size = state.rank, len(state.ranks)
    if flow == NEIGHBORS:
        inedges, _ = state.topology.edges(rank)
        return [source for source in inedges if source != constants.PROC_NULL]
    if flow == ALL:
        return range(size)
    if flow == FROM_ROOT:
        return (root,)
    if flow == TO_ROOT:
        return range(size) if rank == root else ()
    return range(rank + 1) if flow == SCAN else range(rank)


def _collective(function, flow):
    signature = inspect.signature(function)
    rooted = "root" in signature.parameters

    @functools.wraps(function)
    def checked(self, *args, **kwargs):
        state = self._s
        root = (signature.bind(self, *args, **kwargs).arguments.get("root", 0)
                if rooted else 0)
        seq = _collective_seqs.get(state.context, 0)
        c = clock()
        key = key_of(COLLECTIVE, state.context, seq)
        c.release(key)
        result = function(self, *args, **kwargs)
        _collective_seqs[state.context] = seq + 1
        sources = tuple(state.ranks[r] for r in _sources(flow, state, root))

        def acquire():
            c.acquire_each(sources, key)
        if function.__name__.startswith("I"):
            on_completion(result, acquire)
        else:
            acquire()
        return result
    return checked


def install_collectives(classes):
    for flow, names in _FLOWS.items():
        for name in names.split():
            for cls in classes:
                if name in vars(cls):
                    setattr(cls, name, _collective(vars(cls)[name], flow))
