"""Cartesian process topologies (MPI-3.1 §7.5; beyond docs/api.md, for the stencil
programs shmrma's users prototype): MPI.Compute_dims, comm.Create_cart and
MPI.Cartcomm, with the results and error classes of mpi4py 4.1 on MPICH 5.0
(scripts/cartesian.py is also compared with it by tests/test_backends.py)."""
import pathlib

import pytest

import shmrma
from shmrma import MPI
from mpitest import nothing_left_behind

ROOT = pathlib.Path(__file__).resolve().parent.parent

# what MPICH 5.0's MPI_Dims_create gives (its most balanced grid)
MPICH_DIMS = [
    ((1, 0), []), ((7, 2), [7, 1]), ((12, 2), [4, 3]), ((16, 3), [4, 2, 2]),
    ((24, 2), [6, 4]), ((36, 2), [6, 6]), ((72, 2), [9, 8]), ((64, 3), [4, 4, 4]),
    ((96, 4), [4, 4, 3, 2]), ((128, 3), [8, 4, 4]), ((12, [0, 3]), [4, 3]),
    ((12, [2, 0, 0]), [2, 3, 2]), ((24, [0, 2, 0]), [4, 2, 3]),
    ((16, [0, 0, 1, 0]), [4, 2, 1, 2]), ((6, [3, 2]), [3, 2]),
]


@pytest.mark.parametrize("args, expected", MPICH_DIMS)
def test_compute_dims_gives_mpichs_grid(args, expected):
    assert MPI.Compute_dims(*args) == expected


@pytest.mark.parametrize("args", [(7, [2, 0]), (6, [4, 0]), (6, [2, 2]), (0, 2),
                                  (4, [-1, 0])])
def test_compute_dims_errors_are_err_dims(args):
    with pytest.raises(MPI.Exception) as caught:
        MPI.Compute_dims(*args)
    assert caught.value.Get_error_class() == MPI.ERR_DIMS
    assert "Compute_dims: " in str(caught.value)


@pytest.mark.timeout(60)
def test_cartesian_grid_coordinates_neighbours_and_sub_grids():
    """A 3 x 2 grid periodic in x: coordinates in row-major order, Shift gives
    PROC_NULL past a non-periodic edge and wraps a periodic one, Get_cart_rank
    wraps periodic coordinates, Sub keeps a dimension, Dup keeps the grid, a
    rank beyond a smaller grid gets COMM_NULL; misuse raises what mpi4py on
    MPICH raises, and nothing is left behind."""
    def body():
        comm = MPI.COMM_WORLD
        grid = comm.Create_cart([3, 2], periods=[True, False])
        rank = grid.Get_rank()
        out = {"topo": grid.Get_topo(), "kind": (grid.Get_topology(), comm.Get_topology()),
               "dim": (grid.Get_dim(), grid.ndim, grid.dims, grid.periods),
               "shift": (grid.Shift(0, 1), grid.Shift(1, 1), grid.Shift(0, -4)),
               "wrap": grid.Get_cart_rank([-1, 1]), "coords": grid.Get_coords(5)}
        column = grid.Sub([False, True])
        out["column"] = (column.Get_size(), column.Get_topo(), column.allgather(rank))
        twin = grid.Dup()
        out["dup"] = (type(twin).__name__, twin.Get_topo(), twin == grid)
        small = comm.Create_cart([2])
        out["small"] = None if small == MPI.COMM_NULL else small.Get_topo()
        errors = {}
        for name, call in (("shift", lambda: grid.Shift(2, 1)),
                           ("coords", lambda: grid.Get_coords(6)),
                           ("outside", lambda: grid.Get_cart_rank([0, 2])),
                           ("cart rank length", lambda: grid.Get_cart_rank([0])),
                           ("sub length", lambda: grid.Sub([True])),
                           ("periods length", lambda: comm.Create_cart([6], [True, True])),
                           ("too big", lambda: comm.Create_cart([7])),
                           ("not a grid", lambda: MPI.Cartcomm(comm))):
            try:
                call()
                errors[name] = None
            except MPI.Exception as exc:
                errors[name] = exc.Get_error_class()
            except (ValueError, TypeError) as exc:
                errors[name] = type(exc).__name__
        out["errors"] = errors
        for made in (column, twin, grid) + ((small,) if small != MPI.COMM_NULL else ()):
            made.Free()
        nothing_left_behind(comm)
        return rank, out

    for rank, out in shmrma.launch(body, 6, timeout=50):
        x, y = divmod(rank, 2)
        assert out["topo"] == ([3, 2], [1, 0], [x, y])
        assert out["kind"] == (MPI.CART, MPI.UNDEFINED)
        assert out["dim"] == (2, 2, [3, 2], [1, 0])
        west, east = ((x - 1) % 3) * 2 + y, ((x + 1) % 3) * 2 + y
        south = MPI.PROC_NULL if y == 0 else rank - 1
        north = MPI.PROC_NULL if y == 1 else rank + 1
        assert out["shift"] == ((west, east), (south, north), (((x + 4) % 3) * 2 + y,
                                                               ((x - 4) % 3) * 2 + y))
        assert out["wrap"] == 5 and out["coords"] == [2, 1]
        assert out["column"] == (2, ([2], [0], [y]), [2 * x, 2 * x + 1])
        assert out["dup"] == ("Cartcomm", out["topo"], False)
        assert out["small"] == (([2], [0], [rank]) if rank < 2 else None)
        assert out["errors"] == {
            "shift": MPI.ERR_ARG, "coords": MPI.ERR_RANK, "outside": MPI.ERR_ARG,
            "cart rank length": "ValueError", "sub length": "ValueError",
            "periods length": "ValueError", "too big": MPI.ERR_ARG,
            "not a grid": "TypeError"}


@pytest.mark.timeout(60)
def test_cartesian_example_runs(run_shmrma):
    result = run_shmrma(["-n", 6, "--timeout", 40, ROOT / "scripts" / "cartesian.py"],
                        timeout=50)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines())[0] == (
        "grid 3x2: rank 0 at (0, 0), west 4 east 2 south -1 north 1, row sum 6, "
        "from the south None")


# --- graph topologies and neighborhood collectives (MPI-3.1 §7.5.3-7.7) ------------
# Expected values below are what mpi4py 4.1.2 on MPICH 5.0 gives at 3 ranks.

def _ring_with_multi_edges(comm):
    """Each node's neighbors: the next node twice, the previous one twice, itself."""
    size = comm.Get_size()
    index, edges = [], []
    for node in range(size):
        edges += [(node + 1) % size] * 2 + [(node - 1) % size] * 2 + [node]
        index.append(len(edges))
    return index, edges


def _labels(comm, neighbors):
    return ["%d>%d#%d" % (comm.Get_rank(), dest, k) for k, dest in enumerate(neighbors)]


def _outcome(call):
    try:
        result = call()
    except MPI.Exception as exc:
        return exc.Get_error_class()
    except (ValueError, TypeError) as exc:
        return type(exc).__name__
    return result if isinstance(result, (list, tuple, int, type(None))) else \
        type(result).__name__


@pytest.mark.timeout(60)
def test_graph_topology_queries_and_errors_as_mpich():
    """Create_graph (the leading 0 of a "standard" index dropped, as mpi4py), its
    queries, Graph_map, a null Graphcomm beyond the graph's nodes, and the error
    classes MPICH gives for bad graphs."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        index, edges = _ring_with_multi_edges(comm)
        graph = comm.Create_graph([0] + index, edges)
        out = {"dims": (graph.Get_dims(), graph.nnodes, graph.nedges),
               "topo": graph.Get_topo(), "kind": graph.Get_topology(),
               "neighbors": (graph.Get_neighbors(rank), graph.neighbors, graph.nneighbors,
                             graph.Get_neighbors_count((rank + 1) % 3)),
               "degrees": (graph.degrees, graph.indegree, graph.inoutedges),
               "map": (comm.Graph_map(index, edges), comm.Graph_map([1], [0])),
               "dup": (type(graph.Dup()).__name__, graph.Dup().Get_topo() == graph.Get_topo()),
               "handle": type(MPI.Comm.fromint(graph.toint())).__name__}
        small = comm.Create_graph([1], [0])
        out["small"] = (type(small).__name__, bool(small), small == MPI.COMM_NULL)
        out["errors"] = {name: _outcome(call) for name, call in (
            ("rank", lambda: graph.Get_neighbors(3)),
            ("too big", lambda: comm.Create_graph([1] * 4, [0])),
            ("edge", lambda: comm.Create_graph([1], [5])),
            ("index", lambda: comm.Create_graph([2, 1], [0, 0])),
            ("short", lambda: comm.Create_graph([2], [0])),
            ("map", lambda: comm.Graph_map([1] * 4, [0])),
            ("not a graph", lambda: MPI.Graphcomm(comm.Create_cart([3]))),
            ("not a topology", lambda: MPI.Topocomm(comm)))}
        return rank, out

    for rank, out in shmrma.launch(body, 3, timeout=50):
        index, neighbors = [5, 10, 15], [[1, 1, 2, 2, 0], [2, 2, 0, 0, 1], [0, 0, 1, 1, 2]]
        assert out["dims"] == ((3, 15), 3, 15)
        assert out["topo"] == (index, sum(neighbors, []))
        assert out["kind"] == MPI.GRAPH
        assert out["neighbors"] == (neighbors[rank], neighbors[rank], 5, 5)
        assert out["degrees"] == ((5, 5), 5, (neighbors[rank], neighbors[rank]))
        assert out["map"] == (rank, 0 if rank == 0 else MPI.UNDEFINED)
        assert out["dup"] == ("Graphcomm", True) and out["handle"] == "Graphcomm"
        assert out["small"] == (("Graphcomm", True, False) if rank == 0 else
                                ("Graphcomm", False, True))
        assert out["errors"] == {"rank": MPI.ERR_RANK, "too big": MPI.ERR_ARG,
                                 "edge": MPI.ERR_ARG, "index": MPI.ERR_ARG,
                                 "short": MPI.ERR_ARG, "map": MPI.ERR_ARG,
                                 "not a graph": "TypeError", "not a topology": "TypeError"}


@pytest.mark.timeout(60)
def test_distributed_graphs_weights_and_order():
    """Create_dist_graph_adjacent keeps each rank's lists; weights follow MPICH's
    rules (UNWEIGHTED, WEIGHTS_EMPTY, one side only: ERR_TOPOLOGY); Create_dist_graph
    orders each rank's edges by the rank that gave them, then by their place there."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        sources, destinations = [(rank - 2) % size, (rank - 1) % size], [(rank + 1) % size]

        def neighbors(*args):
            return comm.Create_dist_graph_adjacent(*args).Get_dist_neighbors()
        out = {"plain": neighbors(sources, destinations),
               "weighted": neighbors(sources, destinations, [1, 2], [3]),
               "count": comm.Create_dist_graph_adjacent(sources, None).Get_dist_neighbors_count(),
               "sources' only": neighbors([0], [], [5], None),
               "dests' only": neighbors([], [0], None, [7]),
               "empty": neighbors([], [], MPI.WEIGHTS_EMPTY, MPI.WEIGHTS_EMPTY),
               "unweighted": neighbors(None, None, MPI.UNWEIGHTED, MPI.UNWEIGHTED),
               "proc null": neighbors([MPI.PROC_NULL], [MPI.PROC_NULL])}
        general = comm.Create_dist_graph([rank, 0], [size, 1],
                                         [(rank + k) % size for k in range(size)] + [rank],
                                         [10 * rank + k for k in range(size)] + [99])
        out["general"] = (general.Get_dist_neighbors_count(), general.Get_dist_neighbors(),
                          general.Get_topology(), type(general.Dup()).__name__)
        out["errors"] = {name: _outcome(call) for name, call in (
            ("one side", lambda: comm.Create_dist_graph_adjacent([0], [0], [3], None)),
            ("empty weights", lambda: comm.Create_dist_graph_adjacent([0], [], MPI.WEIGHTS_EMPTY)),
            ("weights", lambda: comm.Create_dist_graph_adjacent([0], [0], [1, 2], [1])),
            ("rank", lambda: comm.Create_dist_graph_adjacent([size], [0])),
            ("degrees", lambda: comm.Create_dist_graph([0], [1, 1], [0])),
            ("destination", lambda: comm.Create_dist_graph([0], [1], [-1])),
            ("not a dist graph", lambda: MPI.Distgraphcomm(comm.Create_cart([size]))))}
        return rank, out

    for rank, out in shmrma.launch(body, 3, timeout=50):
        sources, destinations = [(rank - 2) % 3, (rank - 1) % 3], [(rank + 1) % 3]
        assert out["plain"] == (sources, destinations, None)
        assert out["weighted"] == (sources, destinations, ([1, 2], [3]))
        assert out["count"] == (2, 0, False)
        assert out["sources' only"] == ([0], [], ([5], []))
        assert out["dests' only"] == ([], [0], None)
        assert out["empty"] == ([], [], ([], []))
        assert out["unweighted"] == ([], [], None)
        assert out["proc null"] == ([MPI.PROC_NULL], [MPI.PROC_NULL], None)
        # every rank r gives r -> r, r+1, r+2 (weights 10r + k) and 0 -> r (weight 99)
        inward = [(r, 10 * r + (rank - r) % 3) for r in range(3)]
        inward.insert(1 if rank == 0 else rank + 1, (0, 99))
        outward = [((rank + k) % 3, 10 * rank + k) for k in range(3)]
        outward += [(r, 99) for r in range(3)] if rank == 0 else []
        assert out["general"] == (
            (len(inward), len(outward), True),
            ([s for s, _ in inward], [d for d, _ in outward],
             ([w for _, w in inward], [w for _, w in outward])),
            MPI.DIST_GRAPH, "Distgraphcomm")
        assert out["errors"] == {"one side": MPI.ERR_TOPOLOGY, "empty weights": "ValueError",
                                 "weights": "ValueError", "rank": MPI.ERR_RANK,
                                 "degrees": "ValueError", "destination": MPI.ERR_RANK,
                                 "not a dist graph": "TypeError"}


@pytest.mark.timeout(60)
def test_neighbor_collectives_match_mpich():
    """The parts go along the edges as on MPICH: a Cartesian neighbor in direction -1
    gets what its neighbor sent in direction +1 (also when both are one rank), several
    edges between two ranks pair up in order, PROC_NULL edges leave their part of the
    receive buffer untouched (None in the object forms)."""
    import numpy as np

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        ring = comm.Create_cart([3], [True])
        line = comm.Create_cart([3], [False])
        pair = MPI.COMM_SELF.Create_cart([1, 1], [True, False])
        graph = comm.Create_graph(*_ring_with_multi_edges(comm))
        dist = comm.Create_dist_graph_adjacent([(rank - 1) % 3, (rank - 1) % 3, rank],
                                               [(rank + 1) % 3, rank, (rank + 1) % 3])
        out = {"ring": ring.neighbor_alltoall(["%d-minus" % rank, "%d-plus" % rank]),
               "pair": pair.neighbor_alltoall(["m0", "p0", "m1", "p1"]),
               "line": (line.neighbor_allgather(rank), line.neighbor_alltoall(["a", "b"])),
               "graph": graph.neighbor_alltoall(_labels(graph, graph.neighbors)),
               "dist": (dist.neighbor_alltoall(_labels(dist, dist.outedges)),
                        dist.neighbor_allgather(rank))}
        received = np.full(2, -5, "i")
        line.Neighbor_allgather(np.array([rank], "i"), received)
        gathered = np.full(6, -5, "i")
        line.Neighbor_allgatherv(np.array([rank, rank], "i"), [gathered, ([2, 2], [0, 3])])
        pairs = np.full(4, -5, "i")
        ring.Neighbor_alltoall(np.arange(4, dtype="i") + 10 * rank, [pairs, 2, MPI.INT])
        vector = np.full(6, -1, "i")
        dist.Neighbor_alltoallv([np.arange(6, dtype="i") + 100 * rank, ([1, 2, 3], [0, 1, 3])],
                                [vector, ([1, 3, 2], [0, 1, 4])])
        typed = np.full(4, -1.0)
        dist.Neighbor_alltoallw([np.array([rank, 0.5 + rank, 9.0]), ([1, 1, 1], [0, 8, 16]),
                                 [MPI.DOUBLE] * 3],
                                [typed, ([1, 1, 8], [0, 8, 16]),
                                 [MPI.DOUBLE, MPI.DOUBLE, MPI.BYTE]])
        first = ring.Ineighbor_allgather(np.array([rank], "i"), np.zeros(2, "i"))
        later = np.zeros(2, "i")
        second = ring.Ineighbor_alltoall(np.array([rank, -rank], "i"), later)
        MPI.Request.Waitall([second, first])
        out["buffers"] = (received.tolist(), gathered.tolist(), pairs.tolist(),
                          vector.tolist(), typed.tolist(), later.tolist())
        for made in (ring, line, pair, graph, dist):
            made.Free()
        nothing_left_behind(comm)
        return rank, out

    mpich = {
        "ring": [["2-plus", "1-minus"], ["0-plus", "2-minus"], ["1-plus", "0-minus"]],
        "graph": [["1>0#2", "1>0#3", "2>0#0", "2>0#1", "0>0#4"],
                  ["2>1#2", "2>1#3", "0>1#0", "0>1#1", "1>1#4"],
                  ["0>2#2", "0>2#3", "1>2#0", "1>2#1", "2>2#4"]],
        "dist": [(["2>0#0", "2>0#2", "0>0#1"], [2, 2, 0]), (["0>1#0", "0>1#2", "1>1#1"], [0, 0, 1]),
                 (["1>2#0", "1>2#2", "2>2#1"], [1, 1, 2])],
        "vector": [[200, 203, 204, 205, 1, 2], [0, 3, 4, 5, 101, 102],
                   [100, 103, 104, 105, 201, 202]]}
    for rank, out in shmrma.launch(body, 3, timeout=50):
        left = MPI.PROC_NULL if rank == 0 else rank - 1
        right = MPI.PROC_NULL if rank == 2 else rank + 1
        assert out["ring"] == mpich["ring"][rank]
        assert out["pair"] == ["p0", "m0", None, None]
        assert out["line"] == ([None if left < 0 else left, None if right < 0 else right],
                               [None if left < 0 else "b", None if right < 0 else "a"])
        assert out["graph"] == mpich["graph"][rank]
        assert out["dist"] == mpich["dist"][rank]
        received, gathered, pairs, vector, typed, later = out["buffers"]
        assert received == [-5 if left < 0 else left, -5 if right < 0 else right]
        assert gathered == ([-5, -5] if left < 0 else [left] * 2) + [-5] + \
            ([-5, -5] if right < 0 else [right] * 2) + [-5]
        west, east = 10 * ((rank - 1) % 3), 10 * ((rank + 1) % 3)
        assert pairs == [west + 2, west + 3, east, east + 1]
        assert vector == mpich["vector"][rank]
        # in-edges: twice from rank - 1 (its out-edges 0 and 2), then from itself
        assert typed == [(rank - 1) % 3, 9.0, 0.5 + rank, -1.0]
        assert later == [-((rank - 1) % 3), (rank + 1) % 3]


@pytest.mark.timeout(60)
def test_a_rank_with_bad_arguments_fails_its_neighbors_instead_of_hanging():
    """A rank whose arguments are wrong raises at the call; the ranks that needed its
    part raise at Wait naming it; a part of the wrong size, and edges the ranks
    disagree on, raise at the receiver; a bad topology argument on one rank fails
    every rank; the communicator stays usable."""
    import numpy as np

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        ring = comm.Create_cart([3], [True])
        out = {}
        try:
            ring.Neighbor_allgather(np.array([rank], "i"), np.zeros(3 if rank == 1 else 2, "i"))
            out["bad buffer"] = None
        except (MPI.Exception, ValueError) as exc:
            out["bad buffer"] = _outcome(lambda: (_ for _ in ()).throw(exc))
        out["bad count"] = _outcome(lambda: ring.Neighbor_allgather(
            np.zeros(2 if rank == 1 else 1, "i"), np.zeros(4 if rank == 1 else 2, "i")))
        crossed = comm.Create_dist_graph_adjacent([(rank + 1) % 3], [(rank + 1) % 3])
        out["crossed"] = _outcome(lambda: crossed.neighbor_allgather(rank))
        out["objects"] = _outcome(lambda: ring.neighbor_alltoall([1] * (1 if rank == 2 else 2)))
        out["create"] = _outcome(lambda: comm.Create_graph([2, 1] if rank == 1 else [1, 2],
                                                           [0, 0]))
        grid = comm.Create_cart([3, 1])
        out["sub"] = _outcome(lambda: grid.Sub([True] if rank == 1 else [True, False]))
        out["after"] = ring.neighbor_allgather(rank)
        return rank, out

    for rank, out in shmrma.launch(body, 3, timeout=50):
        left, right = (rank - 1) % 3, (rank + 1) % 3
        assert out["bad buffer"] == ("ValueError" if rank == 1 else MPI.ERR_ARG)
        assert out["bad count"] == (MPI.ERR_COUNT if rank == 1 else MPI.ERR_TRUNCATE)
        # each rank receives from its right neighbor, which sends only to its own right
        assert out["crossed"] == MPI.ERR_TOPOLOGY
        assert out["objects"] == ("ValueError" if rank == 2 else
                                  MPI.ERR_ARG if 2 in (left, right) else None)
        assert out["create"] == MPI.ERR_ARG
        assert out["sub"] == ("ValueError" if rank == 1 else MPI.ERR_ARG)
        assert out["after"] == [left, right]


@pytest.mark.timeout(120)
def test_a_failed_topology_call_gives_back_what_rank_0_planned():
    """Rank 0 plans the new communicator before the ranks agree that every rank's
    arguments are right; a call that fails gives the plan's barrier slot back, so
    more failures than there are slots leave creation working."""
    from shmrma.core import job

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        failures = set()
        for _ in range(job.MAX_COMM_SLOTS + 10):
            try:        # rank 1's grid needs 3 processes: it fails, so does rank 0
                comm.Create_cart([3 if rank == 1 else 2])
            except MPI.Exception as exc:
                failures.add(exc.Get_error_class())
        grid = comm.Create_cart([2])
        line = grid.Sub([True])
        sizes = (grid.Get_size(), line.Get_size())
        line.Free()
        grid.Free()
        return failures, sizes

    for failures, sizes in shmrma.launch(body, 2, timeout=100):
        assert failures == {MPI.ERR_ARG} and sizes == (2, 2)


def test_topology_communicator_classes_and_handles():
    """Topocomm is the base of Cartcomm, Graphcomm and Distgraphcomm; each refuses
    another kind (TypeError, as mpi4py); Dup and Clone give the handle's own class,
    a subclass's too; toint/fromint give back the right class."""
    class MyGraphcomm(MPI.Graphcomm):
        def __new__(cls, comm=None):
            if comm is not None:
                comm = comm.Create_graph([1], [0])
            return super().__new__(cls, comm)

    mine = MyGraphcomm(MPI.COMM_SELF)
    cart = MPI.COMM_SELF.Create_cart([1], [True])
    try:
        assert isinstance(cart, MPI.Topocomm) and isinstance(mine, MPI.Topocomm)
        assert type(mine.Clone()) is MyGraphcomm and mine.Clone().Get_topo() == ([1], [0])
        assert type(MPI.Topocomm(cart)) is MPI.Topocomm and not MPI.Topocomm()
        assert type(MPI.Comm.fromint(cart.toint())) is MPI.Cartcomm
        assert type(MPI.COMM_WORLD.Dup()) is MPI.Intracomm
        assert MPI.Comm.fromint(MPI.COMM_NULL.toint()) == MPI.COMM_NULL
        for kind, other in ((MPI.Cartcomm, mine), (MPI.Graphcomm, cart),
                            (MPI.Distgraphcomm, cart), (MPI.Topocomm, MPI.COMM_SELF)):
            with pytest.raises(TypeError):
                kind(other)
        with pytest.raises(MPI.Exception) as caught:
            MPI.Comm.fromint(10 ** 6)
        assert caught.value.Get_error_class() == MPI.ERR_COMM
    finally:
        mine.Free()
        cart.Free()
