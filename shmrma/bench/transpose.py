"""A pencil transpose, as a parallel FFT does it, run by every rank:

    shmrma-run -n 4 -m shmrma.bench.transpose [N] [CYCLES]
    mpiexec -n 4 python -m shmrma.bench.transpose [N] [CYCLES]   (SHMRMA_BENCH_IMPL=mpi4py)

An N x N x N array of float64 is split in pencils over a 2-D Cartesian
communicator (``Compute_dims``, ``Create_cart``, one ``Sub`` per dimension).
A cycle moves it from pencils along axis 2 to pencils along axis 1 (an
``Alltoallw`` of subarray types over the second dimension's communicator),
then along axis 0 (over the first's), and back the same way: the four
transfers of a forward and a backward 3-D FFT, written the way mpi4py-fft's
``Transfer`` writes them (counts of 1, displacements of 0, one committed
subarray type per peer). Rank 0 prints ``setup_us`` (the communicators and
types), ``cycle_us`` (a cycle, the mean over CYCLES after one untimed) and
``checked`` once every rank found the values where they belong. The same code
measures shmrma and mpi4py: only the ``MPI`` module differs.
"""
import sys

from .jobs import mpi_module


def block(n, parts, index):
    """(length, start) of block ``index`` of ``n`` items cut in ``parts``, the first
    n % parts blocks one longer."""
    quotient, rest = divmod(n, parts)
    return quotient + (index < rest), quotient * index + min(index, rest)


class Transfer:
    """An Alltoallw over ``comm`` from pencils A, whose ``axis_a`` is whole, to
    pencils B, whose ``axis_b`` is whole (mpi4py-fft's pencil.Transfer)."""

    def __init__(self, MPI, comm, shape_a, axis_a, shape_b, axis_b):
        self.comm = comm
        size = comm.Get_size()
        self.types_a = self._subarrays(MPI, size, shape_a, axis_a)
        self.types_b = self._subarrays(MPI, size, shape_b, axis_b)
        self.counts_displs = ([1] * size, [0] * size)

    @staticmethod
    def _subarrays(MPI, size, shape, axis):
        types = []
        for peer in range(size):
            length, start = block(shape[axis], size, peer)
            subsizes, starts = list(shape), [0] * len(shape)
            subsizes[axis], starts[axis] = length, start
            types.append(MPI.DOUBLE.Create_subarray(list(shape), subsizes, starts).Commit())
        return types

    def forward(self, a, b):
        self.comm.Alltoallw([a, self.counts_displs, self.types_a],
                            [b, self.counts_displs, self.types_b])

    def backward(self, b, a):
        self.comm.Alltoallw([b, self.counts_displs, self.types_b],
                            [a, self.counts_displs, self.types_a])

    def free(self):
        for datatype in self.types_a + self.types_b:
            datatype.Free()


def pencil(n, coords, dims, whole):
    """The slices of this rank's pencil whose axis ``whole`` is not split; the other
    two axes, in order, are split over the grid's dimensions 0 and 1."""
    split = [axis for axis in range(3) if axis != whole]
    out = [slice(0, n)] * 3
    for dim, axis in enumerate(split):
        length, start = block(n, dims[dim], coords[dim])
        out[axis] = slice(start, start + length)
    return tuple(out)


def main(argv):
    import numpy as np
    MPI = mpi_module()
    n = int(argv[0]) if argv else 64
    cycles = int(argv[1]) if len(argv) > 1 else 50
    world = MPI.COMM_WORLD
    world.Barrier()
    start = MPI.Wtime()
    dims = MPI.Compute_dims(world.Get_size(), 2)
    cart = world.Create_cart(dims)
    coords = cart.Get_coords(cart.Get_rank())
    rows, columns = cart.Sub([True, False]), cart.Sub([False, True])
    z, y, x = (pencil(n, coords, dims, axis) for axis in (2, 1, 0))
    shape = {name: tuple(s.stop - s.start for s in p) for name, p in zip("zyx", (z, y, x))}
    z_to_y = Transfer(MPI, columns, shape["z"], 2, shape["y"], 1)
    y_to_x = Transfer(MPI, rows, shape["y"], 1, shape["x"], 0)
    setup = MPI.Wtime() - start
    grid = np.arange(n ** 3, dtype="f8").reshape(n, n, n)
    arrays = {name: np.zeros(shape[name]) for name in "zyx"}
    arrays["z"][...] = grid[z]

    def cycle():
        z_to_y.forward(arrays["z"], arrays["y"])
        y_to_x.forward(arrays["y"], arrays["x"])
        y_to_x.backward(arrays["x"], arrays["y"])
        z_to_y.backward(arrays["y"], arrays["z"])
    cycle()
    world.Barrier()
    start = MPI.Wtime()
    for _ in range(cycles):
        cycle()
    elapsed = MPI.Wtime() - start
    z_to_y.forward(arrays["z"], arrays["y"])
    y_to_x.forward(arrays["y"], arrays["x"])
    right = all(np.array_equal(arrays[name], grid[where])
                for name, where in zip("zyx", (z, y, x)))
    right = world.allreduce(right, op=MPI.LAND)
    z_to_y.free()
    y_to_x.free()
    for comm in (rows, columns, cart):
        comm.Free()
    if world.Get_rank() == 0:
        print("setup_us %.2f" % (setup * 1e6))
        print("cycle_us %.2f" % (elapsed * 1e6 / cycles))
        print("checked %s" % ("yes" if right else "NO"), flush=True)
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
