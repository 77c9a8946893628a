"""MPI-3.1 Example 11.17: the checkerboard (double buffer) pattern with two windows,
win0 over A0 and win1 over A1, on a ring (R114, R67, R115, R81-R88).
Post(MODE_NOCHECK | MODE_NOPUT) and Start(MODE_NOCHECK) are legal because a Barrier
precedes the loop and each rank posts one window before it completes its accesses
to the other (R114); an exposure epoch of one window overlaps the access epoch of the
other (R67); the Gets never write the exposed window (NOPUT, R115). Every rank
replays the whole computation on the global arrays and checks its own slice of A0
and A1, halos included, after each half-iteration, so a Get that read a neighbour's
array at the wrong time, or a halo not yet filled, fails.
Filled in: Ai = [left halo, M cells, right halo] int64 arrays created as windows;
neighbors = {left, right} (symmetric, as the example assumes); the halos start from
the initial data; converged() is a fixed count of NITER iterations, so every rank
decides alike (the `if (!converged)` inside the loop asks about the next iteration);
update2(X, Y) sets X's cells to X's 3-point stencil (halos included) plus Y's cells,
update1(X) to 3*X + 1, all modulo a prime; the Gets fetch the neighbours' boundary
cells into this rank's halos.
    shmrma-run -n 4 scripts/examples/ex11_17_double_buffer.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
left, right = (rank - 1) % size, (rank + 1) % size
M, NITER, MOD = 4, 4, 1000003
PRIME = np.int64(MOD)


def update2(x, y):
    """x's cells from x's stencil (its halos included) and y's cells."""
    x[1:-1] = (x[:-2] + x[1:-1] + x[2:] + y[1:-1]) % PRIME


def update1(x):
    """x's cells from x's cells only."""
    x[1:-1] = (3 * x[1:-1] + 1) % PRIME


class Replay:
    """The same computation on the global periodic arrays, to check against."""

    def __init__(self):
        self.g0 = np.arange(size * M, dtype="i8") + 1
        self.g1 = np.arange(size * M, dtype="i8") * 7 + 1000

    def step2(self, which):
        x, y = (self.g1, self.g0) if which == 1 else (self.g0, self.g1)
        x[:] = (np.roll(x, 1) + x + np.roll(x, -1) + y) % PRIME

    def step1(self, which):
        x = self.g1 if which == 1 else self.g0
        x[:] = (3 * x + 1) % PRIME

    def mine(self, which):
        """This rank's cells of array `which`, with the neighbours' cells as halos."""
        g = self.g1 if which == 1 else self.g0
        return np.concatenate(([g[rank * M - 1]], g[rank * M:(rank + 1) * M],
                               [g[(rank + 1) * M % (size * M)]]))


def check(name, local, expected, halos=True):
    parts = slice(None) if halos else slice(1, -1)
    assert np.array_equal(local[parts], expected[parts]), (rank, name, local, expected)


replay = Replay()
A0, A1 = replay.mine(0), replay.mine(1)          # the halos start from the initial data
win0 = MPI.Win.Create(A0, disp_unit=A0.itemsize, comm=comm)
win1 = MPI.Win.Create(A1, disp_unit=A1.itemsize, comm=comm)
world = comm.Get_group()
neighbors = world.Incl(sorted({left, right}))
neighbor = [left, right]
tobuf0, tobuf1 = [A0[0:1], A0[-1:]], [A1[0:1], A1[-1:]]
fromdisp = [M, 1]                      # left's last cell, right's first cell


def converged(iteration):
    return iteration >= NITER


if not converged(0):
    win0.Post(neighbors, MPI.MODE_NOCHECK | MPI.MODE_NOPUT)
comm.Barrier()
# the barrier is needed because the start call inside the loop uses the nocheck option
iteration = 0
while not converged(iteration):
    # communication on A0 and computation on A1
    update2(A1, A0)                    # local update of A1 that depends on A0 (and A1)
    replay.step2(1)
    win0.Start(neighbors, MPI.MODE_NOCHECK)
    for i in range(len(neighbor)):
        win0.Get(tobuf0[i], neighbor[i], fromdisp[i])
    update1(A1)                        # concurrent with the communication that updates A0
    replay.step1(1)
    win1.Post(neighbors, MPI.MODE_NOCHECK | MPI.MODE_NOPUT)
    win0.Complete()
    win0.Wait()
    check("A0", A0, replay.mine(0))    # fresh halos of A0
    check("A1", A1, replay.mine(1), halos=False)

    # communication on A1 and computation on A0
    update2(A0, A1)                    # local update of A0 that depends on A1 (and A0)
    replay.step2(0)
    win1.Start(neighbors, MPI.MODE_NOCHECK)
    for i in range(len(neighbor)):
        win1.Get(tobuf1[i], neighbor[i], fromdisp[i])
    update1(A0)                        # depends on A0 only, concurrent with the Gets
    replay.step1(0)
    if not converged(iteration + 1):
        win0.Post(neighbors, MPI.MODE_NOCHECK | MPI.MODE_NOPUT)
    win1.Complete()
    win1.Wait()
    check("A1", A1, replay.mine(1))    # fresh halos of A1
    check("A0", A0, replay.mine(0), halos=False)
    iteration += 1
neighbors.Free()
world.Free()
win1.Free()
win0.Free()
print("rank %d: Example 11.17 ok" % rank)
