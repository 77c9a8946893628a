"""The grid, decomposition and window the seed's halo examples share (halo_a1_barrier,
halo_a2_messages, halo_a3_counters): a 2-D periodic integer grid split into nx x ny
blocks over a px x py process torus (4 ranks: 2 x 2, so a neighbour appears twice;
3 ranks: 3 x 1, the west and east neighbour is the rank itself, R161/A18); each
rank's block with a one-cell halo is the window memory A; frombuf/fromtype/totype
of the seed are subarray types of A; update(A) is an asymmetric 5-point integer
stencil, checked against the same stencil computed serially on the whole grid.
Not a program: the examples import it, and they free the window and the datatypes
made here. Run directly, it frees them itself (a correct MPI program frees its
windows before MPI finalizes) and prints nothing.
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
py = max(d for d in range(1, int(size ** 0.5) + 1) if size % d == 0)
px = size // py                         # 4 ranks: 2 x 2; 3 ranks: 3 x 1
pi, pj = divmod(rank, py)
nx, ny = 4, 5                           # my block; A has a one-cell halo around it
STEPS = 6
MOD = 1_000_003


def stencil(c, n, s, w, e):
    return (c + 2 * n + 3 * s + 5 * w + 7 * e) % MOD


def update(A):
    A[1:-1, 1:-1] = stencil(A[1:-1, 1:-1], A[:-2, 1:-1], A[2:, 1:-1],
                            A[1:-1, :-2], A[1:-1, 2:])


def serial(G, steps):
    for _ in range(steps):
        G = stencil(G, np.roll(G, 1, 0), np.roll(G, -1, 0), np.roll(G, 1, 1),
                    np.roll(G, -1, 1))
    return G


def check(A, G, what):
    """A (with halos) must match the serial grid G around my block; corners unused."""
    expected = np.pad(G, 1, mode="wrap")[pi * nx:pi * nx + nx + 2, pj * ny:pj * ny + ny + 2]
    mask = np.ones(A.shape, bool)
    mask[[0, 0, -1, -1], [0, -1, 0, -1]] = False
    if not np.array_equal(A[mask], expected[mask]):
        raise SystemExit("rank %d: %s: mismatch\n%s\nexpected\n%s" % (rank, what, A, expected))


G0 = np.random.default_rng(2008).integers(0, MOD, size=(px * nx, py * ny))
expected = serial(G0, STEPS)

A = np.zeros((nx + 2, ny + 2), dtype=np.int64)
win = MPI.Win.Create(A, disp_unit=A.itemsize, comm=comm)
toneighbor = [((pi - 1) % px) * py + pj, ((pi + 1) % px) * py + pj,    # north, south
              pi * py + (pj - 1) % py, pi * py + (pj + 1) % py]        # west, east
NUMBER_OF_NEIGHBOURS = len(toneighbor)


def sub(sizes, starts):
    return MPI.INT64_T.Create_subarray([nx + 2, ny + 2], sizes, starts).Commit()


row, col = (1, ny), (nx, 1)
fromtype = [sub(row, (1, 1)), sub(row, (nx, 1)), sub(col, (1, 1)), sub(col, (1, ny))]
totype = [sub(row, (nx + 1, 1)), sub(row, (0, 1)), sub(col, (1, ny + 1)), sub(col, (1, 0))]
todisp = [0] * NUMBER_OF_NEIGHBOURS


def exchange_handle(handle, tag):
    """The seed's Isend/Irecv/Waitall of one counter handle with every neighbour,
    typed MPI.HANDLE_SYNC (R154): what neighbour i sent lands in item i."""
    received = [MPI.SYNC_NULL] * NUMBER_OF_NEIGHBOURS
    requests = [comm.Irecv([received, (1, i), MPI.HANDLE_SYNC], toneighbor[i], tag)
                for i in range(NUMBER_OF_NEIGHBOURS)]
    requests += [comm.Isend([[handle], MPI.HANDLE_SYNC], toneighbor[i], tag)
                 for i in range(NUMBER_OF_NEIGHBOURS)]
    MPI.Request.Waitall(requests)
    return received


def put_halos():
    """My boundary rows and columns into the halos of my four neighbours."""
    for i in range(NUMBER_OF_NEIGHBOURS):
        win.Put([A, 1, fromtype[i]], toneighbor[i], [todisp[i], 1, totype[i]])


def initial_grid():
    A[:] = 0
    A[1:-1, 1:-1] = G0[pi * nx:(pi + 1) * nx, pj * ny:(pj + 1) * ny]


if __name__ == "__main__":            # run directly: free what this module created
    for datatype in fromtype + totype:
        datatype.Free()
    win.Free()
