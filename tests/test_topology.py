"""Cartesian process topologies (MPI-3.1 §7.5; beyond API.md, for the stencil
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
