"""A Cartesian process grid: MPI.Compute_dims picks a balanced 2-D grid,
Create_cart makes it periodic in x only, each rank finds its neighbours with
Shift and sums its row with a Sub communicator.

    shmrma-run -n 4 scripts/cartesian.py
"""
from shmrma import MPI

comm = MPI.COMM_WORLD
dims = MPI.Compute_dims(comm.Get_size(), 2)
grid = comm.Create_cart(dims, periods=[True, False])
assert grid.Get_topology() == MPI.CART and comm.Get_topology() == MPI.UNDEFINED
rank = grid.Get_rank()
x, y = grid.Get_coords(rank)
assert grid.coords == [x, y] and grid.Get_cart_rank([x, y]) == rank
west, east = grid.Shift(0, 1)       # periodic: always a neighbour
south, north = grid.Shift(1, 1)     # not periodic: PROC_NULL at the edges
row = grid.Sub([True, False])       # the ranks that share my y
total = row.allreduce(rank)
# PROC_NULL takes part as a peer: the message comes from nobody and leaves nothing
got = grid.sendrecv(rank, dest=north, source=south)
print("grid %s: rank %d at (%d, %d), west %d east %d south %d north %d, row sum %d, "
      "from the south %s" % ("x".join(map(str, dims)), rank, x, y, west, east, south, north,
                             total, got), flush=True)
row.Free()
grid.Free()
