"""Process topologies (MPI-3.1 chapter 7): what every topology communicator shares
(``MPI.Topocomm``: its neighbors, the neighborhood collectives of neighbor.py)
and the Cartesian one (``MPI.Compute_dims``, ``comm.Create_cart``, ``Cart_map``,
``MPI.Cartcomm``); graph.py has the graph topologies.

A topology communicator is an Intracomm (a Split of its parent; ``reorder``
never moves a rank) whose state holds its Topology, which never changes, so
duplicates share it. A Cartcomm's rank r sits at the coordinates of r in
row-major order. ``Compute_dims`` picks the factors MPICH picks, the most
balanced ones: of all non-increasing factorizations, the lexicographically
smallest (checked against MPICH 5.0 for 1-129 processes in 1-4 dimensions).
"""
import operator

from ..core import constants, errors
from ..types.buffers import is_integral
from .comm import COMM_CLASSES
from .intracomm import (COMM_NULL, MADE_ABOVE, Intracomm, plan_split, split_by, split_layout,
                        undo_plan)
from ..coll.blocking import own_allgather
from ..coll.neighbor import NeighborCollectives
from ..coll.persistent import PersistentNeighborCollectives


class Topology:
    """What a topology communicator knows of its neighbors, at every member. Each
    kind gives ``edges(rank)``: (in-neighbors, out-neighbors) of ``rank``, in MPI's
    order, PROC_NULL where a Cartesian grid has no neighbor."""

    kind = None

    def keys(self, rank):
        """(in-keys, out-keys) of ``rank``'s edges: the message along out-edge k to d
        is the one d takes along its in-edge from this rank with the same key. Between
        two ranks joined by several edges, the i-th out-edge meets the i-th in-edge
        (MPI-3.1 §7.6: as messages between them are ordered)."""
        inedges, outedges = self.edges(rank)
        return _occurrences(inedges), _occurrences(outedges)


def _occurrences(ranks):
    """For each entry, how many times its rank came before it."""
    seen, keys = {}, []
    for rank in ranks:
        keys.append(seen.get(rank, 0))
        seen[rank] = keys[-1] + 1
    return keys


class CartTopology(Topology):
    """The grid of a Cartcomm: ``dims`` and ``periods`` (0/1) per dimension."""

    kind = constants.CART

    def __init__(self, dims, periods):
        self.dims, self.periods = list(dims), [int(bool(p)) for p in periods]

    def coords_of(self, rank):
        coords = []
        for extent in reversed(self.dims):
            rank, coord = divmod(rank, extent)
            coords.append(coord)
        return coords[::-1]

    def rank_of(self, coords, call):
        if len(coords) != len(self.dims):
            raise ValueError("%s: %d coordinates for a grid of %d dimensions"
                             % (call, len(coords), len(self.dims)))
        rank = 0
        for axis, (coord, extent, periodic) in enumerate(zip(coords, self.dims,
                                                             self.periods)):
            coord = operator.index(coord)
            if periodic:
                coord %= extent
            elif not 0 <= coord < extent:
                errors.fail(errors.ERR_ARG, "%s: coordinate %d of dimension %d is outside "
                            "0..%d, and that dimension is not periodic"
                            % (call, coord, axis, extent - 1))
            rank = rank * extent + coord
        return rank

    def neighbor(self, rank, direction, step):
        """The rank ``step`` away along ``direction``; PROC_NULL past the edge of a
        dimension that is not periodic."""
        moved = self.coords_of(rank)
        moved[direction] += step
        extent = self.dims[direction]
        if not self.periods[direction] and not 0 <= moved[direction] < extent:
            return constants.PROC_NULL
        return self.rank_of(moved, "Shift")

    def edges(self, rank):
        """For each dimension the -1 then the +1 neighbor, both ways (MPI-3.1 §7.6)."""
        neighbors = [self.neighbor(rank, direction, step)
                     for direction in range(len(self.dims)) for step in (-1, 1)]
        return neighbors, neighbors

    def keys(self, rank):
        # what goes to the -1 neighbor arrives at it from its +1 neighbor: along a
        # periodic dimension of 1 or 2 processes, where both neighbors are one rank,
        # the direction tells the messages apart (as MPICH does)
        count = 2 * len(self.dims)
        return list(range(count)), [k ^ 1 for k in range(count)]


def Compute_dims(nnodes, dims):  # noqa: N802 - MPI's name
    """Return a balanced distribution of processes per coordinate direction.

    ``MPI.Compute_dims``: a balanced grid of ``nnodes`` processes; ``dims`` is
    the number of dimensions, or a list whose nonzero entries stay as given."""
    nnodes = operator.index(nnodes)
    dims = [0] * operator.index(dims) if is_integral(dims) else \
        [operator.index(d) for d in dims]
    if nnodes < 1 or any(d < 0 for d in dims):
        errors.fail(errors.ERR_DIMS, "Compute_dims: %d processes and dims %s; give at "
                    "least 1 process and dims >= 0 (0: free)" % (nnodes, dims))
    fixed = 1
    for d in dims:
        fixed *= d or 1
    free = dims.count(0)
    factors = _balanced(nnodes // fixed, free) if nnodes % fixed == 0 else None
    if factors is None:
        errors.fail(errors.ERR_DIMS, "Compute_dims: %d processes do not fit dims %s; the "
                    "fixed entries must multiply to a divisor of the process count, and "
                    "all of it when none is free" % (nnodes, dims))
    factors = iter(factors)
    return [d or next(factors) for d in dims]


def _balanced(n, count, largest=None):
    """``count`` non-increasing factors of ``n`` (none above ``largest``), the
    lexicographically smallest such list; None if there is none."""
    if count == 0:
        return [] if n == 1 else None
    for first in range(1, (n if largest is None else largest) + 1):
        if n % first == 0 and first ** count >= n:
            rest = _balanced(n // first, count - 1, first)
            if rest is not None:
                return [first] + rest
    return None


def create_cart(comm, dims, periods=None, reorder=False):
    """``comm.Create_cart``: collective; ranks beyond the grid get a null Cartcomm
    (all of them for a dimension of 0 processes, as MPICH)."""
    def parse():
        grid = CartTopology(*_grid_arguments(dims, periods))
        if any(d < 0 for d in grid.dims):
            errors.fail(errors.ERR_DIMS, "Create_cart: dims %s; a dimension has 0 or "
                        "more processes" % grid.dims)
        nodes = _product(grid.dims)
        if nodes > comm.Get_size():
            errors.fail(errors.ERR_ARG, "Create_cart: a %s grid needs %d processes, the "
                        "communicator has %d" % ("x".join(map(str, grid.dims)), nodes,
                                                 comm.Get_size()))
        return grid, nodes
    def choices(parsed):    # every rank knows every rank's place in the grid
        nodes = parsed[1]
        return [(0 if rank < nodes else constants.UNDEFINED, rank)
                for rank in range(comm.Get_size())]
    (grid, _), _, made = agreed(comm, "Create_cart", parse, choices)
    return with_topology(Cartcomm, made, grid)


def cart_map(comm, dims, periods=None):
    """``comm.Cart_map``: this rank's rank in the grid (it stays where it is), or
    UNDEFINED beyond it; local."""
    dims, _ = _grid_arguments(dims, periods)
    nodes = _product(dims)
    if nodes > comm.Get_size():
        errors.fail(errors.ERR_DIMS, "Cart_map: a %s grid needs %d processes, the "
                    "communicator has %d" % ("x".join(map(str, dims)), nodes,
                                             comm.Get_size()))
    # a negative dimension gives UNDEFINED everywhere, as MPICH answers (an accident
    # of its product test that mpi4py passes on)
    rank = comm.Get_rank()
    return rank if rank < nodes else constants.UNDEFINED


def _grid_arguments(dims, periods):
    """(dims, periods) as mpi4py reads them: ints, and periods None (none periodic),
    one bool for all dimensions, or one entry per dimension."""
    dims = [operator.index(d) for d in dims]
    if periods is None:
        periods = False
    if isinstance(periods, bool):
        periods = [periods] * len(dims)
    periods = [operator.index(p) for p in periods]
    if len(periods) != len(dims):
        raise ValueError("expecting %d items, got %d: one period per dimension"
                         % (len(dims), len(periods)))
    return dims, periods


def _product(values):
    product = 1
    for value in values:
        product *= value
    return product


def agreed(comm, call, parse, choices_of, share=False):
    """Run ``parse()`` at every rank of ``comm`` and split ``comm`` as
    ``choices_of(its result)`` says (every rank's (color, key)), collectively and
    in one step: (this rank's result, every rank's when ``share`` else None, this
    rank's new communicator), or the error a rank met, raised at every rank (the
    others naming it) so that nobody waits for a rank that gave up. Rank 0 plans
    the split before the step and sends its plan along; the plan is given back when
    a rank failed."""
    state = comm._s
    plan = layout = None
    try:
        mine, error, error_class = parse(), None, 0
        choices = choices_of(mine)
        layout = split_layout(choices, state.ranks)
        if state.rank == 0:
            plan = plan_split(layout)
    except (errors.Exception, ValueError, TypeError) as exc:
        mine, error = None, exc
        error_class = (exc.Get_error_class() if isinstance(exc, errors.Exception)
                       else errors.ERR_ARG)
    everyone = own_allgather(comm, (error_class, mine if share else None, plan))
    if error is not None or any(entry[0] for entry in everyone):
        if plan is not None:
            undo_plan(plan, layout)
        if error is not None:
            raise error
    for rank, (error_class, _, _) in enumerate(everyone):
        if error_class:
            errors.fail(error_class, "%s: rank %d could not use its arguments (its own "
                        "error says why); it is collective, so every rank fails"
                        % (call, rank))
    return (mine, [result for _, result, _ in everyone] if share else None,
            split_by(comm, choices, everyone[0][2], layout))


def with_topology(cls, comm, topology):
    """A ``cls`` handle to ``comm`` (a Split's result) with ``topology``; a null one
    where the Split gave COMM_NULL, as mpi4py gives."""
    if comm == COMM_NULL:
        return cls()
    comm._s.topology = topology
    return cls._handle_of(comm._s)


class Topocomm(PersistentNeighborCollectives, NeighborCollectives, Intracomm):
    """``MPI.Topocomm``: the intracommunicators with a topology, their neighbors and
    their neighborhood collectives (neighbor.py)."""

    _kind = None
    _expecting = "a topology communicator"

    def _check_kind(self, state):
        topology = state.topology
        if topology is None or self._kind not in (None, topology.kind):
            raise TypeError("expecting %s" % self._expecting)

    @property
    def _topology(self):
        return self._s.topology

    @property
    def inoutedges(self):
        """Incoming and outgoing neighbors: (inedges, outedges)."""
        inedges, outedges = self._topology.edges(self.Get_rank())
        return list(inedges), list(outedges)

    @property
    def degrees(self):
        """Number of incoming and outgoing neighbors: (indegree, outdegree)."""
        inedges, outedges = self._topology.edges(self.Get_rank())
        return len(inedges), len(outedges)

    indegree = property(lambda self: self.degrees[0], doc="Number of incoming neighbors.")
    outdegree = property(lambda self: self.degrees[1], doc="Number of outgoing neighbors.")
    inedges = property(lambda self: self.inoutedges[0], doc="Incoming neighbors.")
    outedges = property(lambda self: self.inoutedges[1], doc="Outgoing neighbors.")


class Cartcomm(Topocomm):
    """``MPI.Cartcomm``: an intracommunicator with a Cartesian grid."""

    _kind = constants.CART
    _expecting = "a Cartesian communicator"

    @property
    def _grid(self):
        return self._topology

    def Get_dim(self):
        """Return the number of dimensions of the grid."""
        return len(self._grid.dims)

    dim = ndim = property(Get_dim)

    def Get_topo(self):
        """Return the grid's (dims, periods, coords of this process)."""
        grid = self._grid
        return list(grid.dims), list(grid.periods), grid.coords_of(self.Get_rank())

    topo = property(Get_topo)
    dims = property(lambda self: list(self._grid.dims), doc="Dimensions of the grid.")
    periods = property(lambda self: list(self._grid.periods), doc="Periodicity.")
    coords = property(lambda self: self._grid.coords_of(self.Get_rank()),
                      doc="Coordinates of this process in the grid.")

    def Get_cart_rank(self, coords):
        """Translate grid coordinates to a rank."""
        return self._grid.rank_of(list(coords), "Get_cart_rank")

    def Get_coords(self, rank):
        """Translate a rank to grid coordinates."""
        rank = operator.index(rank)
        if not 0 <= rank < self.Get_size():
            errors.fail(errors.ERR_RANK, "Get_coords: rank %d is not in this grid of %d "
                        "processes" % (rank, self.Get_size()))
        return self._grid.coords_of(rank)

    def Shift(self, direction, disp):
        """Return a process's (source, dest) ranks for data shifting.

        (source, dest): the ranks ``disp`` steps back and forth along
        ``direction``; PROC_NULL past the edge of a dimension that is not periodic."""
        grid = self._grid
        direction, disp = operator.index(direction), operator.index(disp)
        if not 0 <= direction < len(grid.dims):
            errors.fail(errors.ERR_ARG, "Shift: direction %d is not a dimension of this "
                        "grid (0..%d)" % (direction, len(grid.dims) - 1))
        return tuple(grid.neighbor(self.Get_rank(), direction, step)
                     for step in (-disp, disp))

    def Sub(self, remain_dims):
        """Return Cartesian communicators that partition the grid.

        The grids of the kept dimensions: collective, one per combination of the
        dropped coordinates."""
        grid = self._grid

        def parse():
            keep = [bool(k) for k in remain_dims]
            if len(keep) != len(grid.dims):
                raise ValueError("Sub: %d entries in remain_dims for %d dimensions"
                                 % (len(keep), len(grid.dims)))
            return keep
        def choices(keep):      # colors: the dropped coordinates, which every rank
            def color_of(rank):     # can tell
                color = 0
                for coord, extent, kept in zip(grid.coords_of(rank), grid.dims, keep):
                    if not kept:
                        color = color * extent + coord
                return color
            return [(color_of(rank), rank) for rank in range(self.Get_size())]
        keep, _, made = agreed(self, "Sub", parse, choices)
        kept = [i for i, k in enumerate(keep) if k]
        return with_topology(Cartcomm, made, CartTopology([grid.dims[i] for i in kept],
                                                          [grid.periods[i] for i in kept]))


COMM_CLASSES[constants.CART] = Cartcomm
MADE_ABOVE.update(Create_cart=create_cart, Cart_map=cart_map)
