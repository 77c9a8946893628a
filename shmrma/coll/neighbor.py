"""Neighborhood collectives of topology communicators (MPI-3.1 §7.6-7.7):
Neighbor_allgather(v), Neighbor_alltoall(v/w), their nonblocking I-forms and
the object forms neighbor_allgather / neighbor_alltoall.

They run on the communicator's nonblocking-collective channel (coll/channel.py,
through nonblocking._start), and the blocking forms wait for their I-form:
each rank deposits one stream, read by its out-neighbors, and completes once
its in-neighbors deposited theirs: a table of (destination, key, offset,
length) per out-edge, then the parts (allgather's one part serves every
edge). The keys (topology.Topology.keys) pair each out-edge with the
in-edge that takes its part, even between ranks joined by several edges. An
edge to or from PROC_NULL carries nothing: its part of the receive buffer is
left as it was (as None in the object forms). A rank whose arguments are wrong
raises at the call and its neighbors at Wait, naming it; nobody waits forever.
"""
import struct

from ..core import atomic, constants, errors
from ..types import buffers
from .blocking import _Parts, in_turn
from ..p2p.transfers import _dumps, _loads
from .nonblocking import _start, _take

COUNT = struct.Struct("<q")
EDGE = struct.Struct("<iiqq")   # destination, key, offset, length of one out-edge's part


def _edge_stream(outgoing, destinations, keys, shared):
    """The parts going along the out-edges (``outgoing``: one per out-edge, or one
    for all when ``shared``), after a table saying where each edge's part lies."""
    edges = [(dest, key, index) for index, (dest, key) in enumerate(zip(destinations, keys))
             if dest != constants.PROC_NULL]
    parts = [outgoing] if shared else [outgoing[index] for _, _, index in edges]
    starts = [COUNT.size + EDGE.size * len(edges)]
    for part in parts:
        starts.append(starts[-1] + len(part))
    stream = bytearray(starts[-1])     # written once: no copy per part, then a join
    COUNT.pack_into(stream, 0, len(edges))
    for number, (dest, key, _) in enumerate(edges):
        which = 0 if shared else number
        EDGE.pack_into(stream, COUNT.size + number * EDGE.size, dest, key, starts[which],
                       len(parts[which]))
    for part, start, stop in zip(parts, starts, starts[1:]):
        stream[start:stop] = part
    return stream


def _edge_part(name, stream, source, me, key):
    """The part of ``source``'s table stream that goes to ``me`` along edge ``key``."""
    (count,) = COUNT.unpack_from(stream, 0)
    for index in range(count):
        dest, edge_key, offset, length = EDGE.unpack_from(stream,
                                                          COUNT.size + index * EDGE.size)
        if dest == me and edge_key == key:
            return stream[offset:offset + length]
    raise errors.Exception(errors.ERR_TOPOLOGY, (
        "%s: rank %d sends nothing along an edge this rank receives from it: the "
        "graph's edges disagree (every rank's sources must list each rank whose "
        "destinations list it, as often)") % (name, source))


class NeighborCollectives:
    """Mixin of topology.Topocomm: the neighborhood collectives."""

    def _neighbor_collective(self, name, prepare, gather):
        """Start collective ``name``; ``prepare(indegree, outdegree)`` parses the
        arguments into (outgoing, take, finish): outgoing, the bytes for every
        out-neighbor (``gather``) or a list of one part per out-edge; ``take(j, source,
        part)`` what in-edge j brought; ``finish()`` once all did."""
        me = self._s.rank
        topology = self._s.topology
        inedges, outedges = topology.edges(me)
        inkeys, outkeys = topology.keys(me)
        readers = sorted(set(outedges) - {constants.PROC_NULL, me})
        sources = sorted(set(inedges) - {constants.PROC_NULL, me})

        def plan():
            outgoing, take, finish = prepare(len(inedges), len(outedges))
            stream = _edge_stream(outgoing, outedges, outkeys, gather)

            def complete(views):
                views = dict(views)
                views[me] = memoryview(stream).cast("B")     # edges to itself
                for index, (source, key) in enumerate(zip(inedges, inkeys)):
                    if source != constants.PROC_NULL:
                        take(index, source, _edge_part(name, views[source], source, me, key))
                finish()
            return stream, readers, sources, complete
        return _start(self, name, plan)

    def _into_parts(self, name, parts):
        """The ``take`` that copies in-edge j's part into ``parts.part(j)``."""
        return lambda index, source, part: _take(name, source, part, parts.part(index))

    # --- gather to all neighbors ---
    def Ineighbor_allgather(self, sendbuf, recvbuf):
        """Nonblocking neighbor gather: each in-neighbor's data; return a Request."""
        def prepare(indegree, outdegree):
            send = buffers.message(sendbuf, False).data
            receive = _Parts.of(buffers.message(recvbuf, True, indegree), max(indegree, 1))
            return send, self._into_parts("Neighbor_allgather", receive), receive.finish
        return self._neighbor_collective("Neighbor_allgather", prepare, True)

    def Ineighbor_allgatherv(self, sendbuf, recvbuf):
        """Nonblocking neighbor gather with varying counts; return a Request."""
        def prepare(indegree, outdegree):
            send = buffers.message(sendbuf, False).data
            receive = buffers.vector_message(recvbuf, True, indegree)
            return send, self._into_parts("Neighbor_allgatherv", receive), receive.finish
        return self._neighbor_collective("Neighbor_allgatherv", prepare, True)

    # --- all to all neighbors ---
    def Ineighbor_alltoall(self, sendbuf, recvbuf):
        """Nonblocking neighbor all to all: block j to out-neighbor j; return a Request."""
        def prepare(indegree, outdegree):
            send = _Parts.of(buffers.message(sendbuf, False, outdegree), max(outdegree, 1))
            receive = _Parts.of(buffers.message(recvbuf, True, indegree), max(indegree, 1))
            return self._alltoall_plan("Neighbor_alltoall", send, receive, outdegree)
        return self._neighbor_collective("Neighbor_alltoall", prepare, False)

    def Ineighbor_alltoallv(self, sendbuf, recvbuf):
        """Nonblocking neighbor all to all with varying counts; return a Request."""
        def prepare(indegree, outdegree):
            send = buffers.vector_message(sendbuf, False, outdegree)
            receive = buffers.vector_message(recvbuf, True, indegree)
            return self._alltoall_plan("Neighbor_alltoallv", send, receive, outdegree)
        return self._neighbor_collective("Neighbor_alltoallv", prepare, False)

    def Ineighbor_alltoallw(self, sendbuf, recvbuf):
        """Nonblocking neighbor all to all with varying datatypes; return a Request."""
        def prepare(indegree, outdegree):
            receive = buffers.vector_w_message(recvbuf, True, indegree)  # as mpi4py: first
            send = buffers.vector_w_message(sendbuf, False, outdegree)
            return self._alltoall_plan("Neighbor_alltoallw", send, receive, outdegree)
        return self._neighbor_collective("Neighbor_alltoallw", prepare, False)

    def _alltoall_plan(self, name, send, receive, outdegree):
        return ([send.part(index) for index in range(outdegree)],
                self._into_parts(name, receive), receive.finish)

    # --- blocking forms: the I-form, waited for ---
    def Neighbor_allgather(self, sendbuf, recvbuf):
        """Neighbor gather: one block to all out-neighbors, one from each in-neighbor."""
        self.Ineighbor_allgather(sendbuf, recvbuf).Wait()

    def Neighbor_allgatherv(self, sendbuf, recvbuf):
        """Neighbor gather with varying counts."""
        self.Ineighbor_allgatherv(sendbuf, recvbuf).Wait()

    def Neighbor_alltoall(self, sendbuf, recvbuf):
        """Neighbor all to all: block j to out-neighbor j, one from each in-neighbor."""
        self.Ineighbor_alltoall(sendbuf, recvbuf).Wait()

    def Neighbor_alltoallv(self, sendbuf, recvbuf):
        """Neighbor all to all with varying counts and displacements."""
        self.Ineighbor_alltoallv(sendbuf, recvbuf).Wait()

    def Neighbor_alltoallw(self, sendbuf, recvbuf):
        """Neighbor all to all with varying counts, displacements and datatypes."""
        self.Ineighbor_alltoallw(sendbuf, recvbuf).Wait()

    # --- objects ---
    def neighbor_allgather(self, sendobj):
        """Gather a Python object from each in-neighbor; return a list.

        Every in-neighbor's object, in in-edge order (None along PROC_NULL)."""
        if atomic.taking_turns():   # mpi4py's communicator lock (collective.in_turn)
            return in_turn(self, "neighbor_allgather", self._objects, "neighbor_allgather",
                           lambda outdegree: _dumps(sendobj), True)
        return self._objects("neighbor_allgather", lambda outdegree: _dumps(sendobj), True)

    def neighbor_alltoall(self, sendobj):
        """Send a Python object to each out-neighbor; return those received.

        Object j of ``sendobj`` to out-neighbor j; the in-neighbors' objects for
        this rank, in in-edge order (None along PROC_NULL)."""
        def outgoing(outdegree):
            items = [None] * outdegree if sendobj is None else list(sendobj)
            if len(items) != outdegree:
                raise ValueError("expecting %d items, got %d" % (outdegree, len(items)))
            return [_dumps(item) for item in items]
        if atomic.taking_turns():
            return in_turn(self, "neighbor_alltoall", self._objects, "neighbor_alltoall",
                           outgoing, False)
        return self._objects("neighbor_alltoall", outgoing, False)

    def _objects(self, name, outgoing, gather):
        received = []

        def prepare(indegree, outdegree):
            received.extend([None] * indegree)

            def take(index, source, part):
                received[index] = _loads(bytes(part))
            return outgoing(outdegree), take, lambda: None
        self._neighbor_collective(name, prepare, gather).Wait()
        return received
