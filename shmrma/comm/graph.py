"""Graph process topologies (MPI-3.1 §7.5.3, §7.5.4): ``comm.Create_graph``,
``Graph_map`` and ``MPI.Graphcomm``; ``comm.Create_dist_graph``,
``Create_dist_graph_adjacent`` and ``MPI.Distgraphcomm``, with the weights
constants ``MPI.UNWEIGHTED`` and ``MPI.WEIGHTS_EMPTY``.

A Graphcomm's members all know the whole graph; a Distgraphcomm's member knows
its own edges only. Create_dist_graph gathers every rank's edges to every rank,
which keeps the edges into and out of it in the order of the ranks that gave
them, then of their places in those ranks' lists (MPICH keeps the order in which
its messages arrive, which is not defined; MPI leaves it open).
"""
import operator

from ..core import constants, errors
from .comm import COMM_CLASSES
from .intracomm import MADE_ABOVE, same_order
from .topology import Topocomm, Topology, agreed, with_topology

# ints told apart by identity, as mpi4py's (the addresses of MPI's sentinels)
UNWEIGHTED = int("0x7fa8_0000_1004", 16)
WEIGHTS_EMPTY = int("0x7fa8_0000_1000", 16)


class GraphTopology(Topology):
    """A general graph: ``index[i]`` is the number of edges of nodes 0..i, ``edges``
    their neighbors, node after node."""

    kind = constants.GRAPH

    def __init__(self, index, edges):
        self.index, self.edges_list = list(index), list(edges)

    def neighbors(self, rank):
        return self.edges_list[self.index[rank - 1] if rank else 0:self.index[rank]]

    def edges(self, rank):
        neighbors = self.neighbors(rank)
        return neighbors, neighbors


class DistGraphTopology(Topology):
    """The edges of one rank of a distributed graph, with their weights (None when
    the rank gave none)."""

    kind = constants.DIST_GRAPH

    def __init__(self, sources, destinations, weights):
        self.sources, self.destinations = list(sources), list(destinations)
        self.weights = weights

    def edges(self, rank):
        return self.sources, self.destinations


# --- Graphcomm ------------------------------------------------------------------

def _ints(values):
    return [operator.index(value) for value in values]


def _graph_arguments(index, edges):
    """(index, edges) as mpi4py reads them: an index that starts with 0 and ends
    with the number of edges is the "standard" one, the 0 dropped."""
    index, edges = _ints(index), _ints(edges)
    if index and index[0] == 0 and index[-1] == len(edges):
        index = index[1:]
    return index, edges


def _checked_graph(call, index, edges, size):
    """The graph of ``index`` and ``edges`` for a communicator of ``size`` ranks."""
    nnodes = len(index)
    if nnodes > size:
        errors.fail(errors.ERR_ARG, "%s: a graph of %d nodes needs %d processes, the "
                    "communicator has %d" % (call, nnodes, nnodes, size))
    if any(count < 0 for count in index) or index != sorted(index):
        errors.fail(errors.ERR_ARG, "%s: index %s must be non-decreasing counts >= 0 (the "
                    "edges of nodes 0..i)" % (call, index))
    total = index[-1] if index else 0
    if total > len(edges):
        errors.fail(errors.ERR_ARG, "%s: index says %d edges, edges has %d"
                    % (call, total, len(edges)))
    edges = edges[:total]     # MPI reads no further
    # MPICH takes a neighbor outside the graph (below the communicator's size) and
    # then hangs using it; every neighbor must be a node
    outside = [edge for edge in edges if not 0 <= edge < nnodes]
    if outside:
        errors.fail(errors.ERR_ARG, "%s: edges %s lead outside the graph's nodes 0..%d"
                    % (call, outside, nnodes - 1))
    return GraphTopology(index, edges)


def create_graph(comm, index, edges, reorder=False):
    """``comm.Create_graph``: collective; ranks beyond the graph's nodes get a null
    Graphcomm."""
    def choices(graph):
        return [(0 if rank < len(graph.index) else constants.UNDEFINED, rank)
                for rank in range(comm.Get_size())]
    graph, _, made = agreed(comm, "Create_graph", lambda: _checked_graph(
        "Create_graph", *_graph_arguments(index, edges), comm.Get_size()), choices)
    return with_topology(Graphcomm, made, graph)


def graph_map(comm, index, edges):
    """``comm.Graph_map``: this rank's rank in the graph (it stays where it is), or
    UNDEFINED beyond it; local."""
    index, edges = _graph_arguments(index, edges)
    if len(index) > comm.Get_size():
        errors.fail(errors.ERR_ARG, "Graph_map: a graph of %d nodes needs %d processes, "
                    "the communicator has %d" % (len(index), len(index), comm.Get_size()))
    rank = comm.Get_rank()
    return rank if rank < len(index) else constants.UNDEFINED


class Graphcomm(Topocomm):
    """``MPI.Graphcomm``: an intracommunicator with a general graph."""

    _kind = constants.GRAPH
    _expecting = "a general graph communicator"

    def Get_dims(self):
        """Return the number of nodes and edges: (nnodes, nedges)."""
        graph = self._topology
        return len(graph.index), len(graph.edges_list)

    dims = property(Get_dims)
    nnodes = property(lambda self: self.Get_dims()[0], doc="Number of nodes.")
    nedges = property(lambda self: self.Get_dims()[1], doc="Number of edges.")

    def Get_topo(self):
        """Return the graph's (index, edges) arrays."""
        graph = self._topology
        return list(graph.index), list(graph.edges_list)

    topo = property(Get_topo)
    index = property(lambda self: self.Get_topo()[0], doc="Index array of the graph.")
    edges = property(lambda self: self.Get_topo()[1], doc="Edges array of the graph.")

    def Get_neighbors_count(self, rank):
        """Return the number of neighbors of the process of rank ``rank``."""
        return len(self.Get_neighbors(rank))

    def Get_neighbors(self, rank):
        """Return the list of neighbors of the process of rank ``rank``."""
        rank = operator.index(rank)
        if not 0 <= rank < self.Get_size():
            errors.fail(errors.ERR_RANK, "rank %d is not a node of this graph of %d nodes"
                        % (rank, self.Get_size()))
        return self._topology.neighbors(rank)

    nneighbors = property(lambda self: self.Get_neighbors_count(self.Get_rank()),
                          doc="Number of neighbors of this process.")
    neighbors = property(lambda self: self.Get_neighbors(self.Get_rank()),
                         doc="Neighbors of this process.")


# --- Distgraphcomm ----------------------------------------------------------------

def _weights(weights, count):
    """A list of ``count`` weights, [] for WEIGHTS_EMPTY, None for none (None or
    UNWEIGHTED), as mpi4py's asarray_weights reads them."""
    if weights is None or weights is UNWEIGHTED:
        return None
    if weights is WEIGHTS_EMPTY:
        if count > 0:
            raise ValueError("empty weights but nonzero degree")
        return []
    weights = _ints(weights)
    if len(weights) != count:
        raise ValueError("expecting %d items, got %d" % (count, len(weights)))
    return weights


def _check_ranks(call, ranks, size, what, proc_null):
    allowed = (constants.PROC_NULL,) if proc_null else ()
    outside = [rank for rank in ranks if not 0 <= rank < size and rank not in allowed]
    if outside:
        errors.fail(errors.ERR_RANK, "%s: %s %s are not ranks of this communicator of "
                    "size %d" % (call, what, outside, size))


def create_dist_graph_adjacent(comm, sources, destinations, sourceweights=None,
                               destweights=None, info=None, reorder=False):
    """``comm.Create_dist_graph_adjacent``: collective; each rank gives the edges into
    and out of it (PROC_NULL allowed: no message goes along such an edge). ``info``
    is a hint, which shmrma does not need."""
    call = "Create_dist_graph_adjacent"

    def parse():
        inward = [] if sources is None else _ints(sources)
        outward = [] if destinations is None else _ints(destinations)
        in_weights = _weights(sourceweights, len(inward))
        out_weights = _weights(destweights, len(outward))
        _check_ranks(call, inward, comm.Get_size(), "sources", True)
        _check_ranks(call, outward, comm.Get_size(), "destinations", True)
        # MPICH's rule: weighted when the sources' weights are given, and then the
        # destinations' too unless there are none (and the other way round)
        if (outward and out_weights is None and in_weights is not None) or \
                (inward and in_weights is None and out_weights is not None):
            errors.fail(errors.ERR_TOPOLOGY, "%s: weights for one side only; give both "
                        "sourceweights and destweights, or neither" % call)
        weights = None if in_weights is None else (in_weights, out_weights or [])
        return DistGraphTopology(inward, outward, weights)
    graph, _, made = agreed(comm, call, parse, lambda _: same_order(comm))
    return with_topology(Distgraphcomm, made, graph)


def create_dist_graph(comm, sources, degrees, destinations, weights=None, info=None,
                      reorder=False):
    """``comm.Create_dist_graph``: collective; each rank gives any edges (``degrees[i]``
    edges from ``sources[i]``, to the next entries of ``destinations``), and every
    rank learns the edges into and out of it. ``info`` is a hint, which shmrma does
    not need."""
    call = "Create_dist_graph"

    def parse():
        starts, counts = _ints(sources), _ints(degrees)
        if len(counts) != len(starts):
            raise ValueError("expecting %d items, got %d" % (len(starts), len(counts)))
        if any(count < 0 for count in counts):
            errors.fail(errors.ERR_ARG, "%s: degrees %s must be >= 0" % (call, counts))
        ends = _ints(destinations)
        if len(ends) != sum(counts):
            raise ValueError("expecting %d items, got %d" % (sum(counts), len(ends)))
        given = _weights(weights, len(ends))
        _check_ranks(call, starts, comm.Get_size(), "sources", False)
        _check_ranks(call, ends, comm.Get_size(), "destinations", False)
        froms = [start for start, count in zip(starts, counts) for _ in range(count)]
        return given is not None, list(zip(froms, ends, given or [1] * len(ends)))
    (weighted, _), everyone, made = agreed(comm, call, parse, lambda _: same_order(comm),
                                           share=True)
    me = comm.Get_rank()
    every_edge = [edge for _, edges in everyone for edge in edges]
    inward = [(start, weight) for start, end, weight in every_edge if end == me]
    outward = [(end, weight) for start, end, weight in every_edge if start == me]
    weights_of = ([weight for _, weight in inward], [weight for _, weight in outward]) \
        if weighted else None
    graph = DistGraphTopology([start for start, _ in inward], [end for end, _ in outward],
                              weights_of)
    return with_topology(Distgraphcomm, made, graph)


class Distgraphcomm(Topocomm):
    """``MPI.Distgraphcomm``: an intracommunicator with a distributed graph."""

    _kind = constants.DIST_GRAPH
    _expecting = "a distributed graph communicator"

    def Get_dist_neighbors_count(self):
        """Return the number of neighbors: (indegree, outdegree, weighted)."""
        graph = self._topology
        return len(graph.sources), len(graph.destinations), graph.weights is not None

    def Get_dist_neighbors(self):
        """Return adjacency information: (sources, destinations, weights or None).

        The weights are (sourceweights, destweights)."""
        graph = self._topology
        weights = graph.weights
        return (list(graph.sources), list(graph.destinations),
                None if weights is None else (list(weights[0]), list(weights[1])))


COMM_CLASSES[constants.GRAPH] = Graphcomm
COMM_CLASSES[constants.DIST_GRAPH] = Distgraphcomm
MADE_ABOVE.update(Create_graph=create_graph, Graph_map=graph_map,
                       Create_dist_graph_adjacent=create_dist_graph_adjacent,
                       Create_dist_graph=create_dist_graph)
