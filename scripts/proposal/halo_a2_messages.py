"""Proposal 000 §1.2.4, Example A2 (checklist P08-A2): a halo exchange whose
"halo updated" signal is a synchronization counter and whose "halo free" signal
is a zero-byte message: each rank Irecvs one from and Isends one to every
neighbour (tag SYNCTAG) after update(A), and issues the Put to neighbour `index`
as soon as Waitany reports that neighbour's message (R57, R162).

As in A1, `my_halos_updated` (count 4) counts the neighbour directions whose Puts
into my halos have completed, and `put_req[i]` (Sync_ops_init, MODE_WIN_PUT)
completes my Puts to `toneighbor[i]` and decrements its counter (R152-R158, A15);
the Puts sit in the counter epochs the active put_req open (A14, R165). Handles
travel by pickling over comm.isend/irecv instead of the not yet existing
MPI.HANDLE_SYNC (A25, R154).

Filled in (as in halo_a1_barrier.py): toneighbor[] = north, south, west, east on a
px x py process torus (4 ranks: 2 x 2, so a neighbour appears twice and two of its
zero-byte messages match my two receives from it in order; 3 ranks: 3 x 1, the
west and east neighbour is the rank itself, R161/A18); frombuf/fromtype/totype are
subarray types of A; update(A) is an asymmetric 5-point integer stencil;
converged() is STEPS updates, and the first pass only fills the halos.
Fixed: the prose's "a simple barrier is used" is a leftover of A1 (A19); every
request (recv_req by Waitany, send_req, put_req, my_halos_updated_req) is
completed in each iteration (checklist P08-A2). The whole local array (interior
and halos, not the unused corners) must equal the serial numpy stencil on the
whole grid, exactly.
    shmrma-run -n 3 scripts/proposal/halo_a2_messages.py
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

my_counters = win.Alloc_sync_objects(1, MPI.INFO_NULL)
my_halos_updated = my_counters[0]
# the seed's Isend/Irecv/Waitall exchange with pickled handles (comm.isend/irecv)
send_req = [comm.isend(my_halos_updated, toneighbor[i], 1) for i in range(NUMBER_OF_NEIGHBOURS)]
recv_req = [comm.irecv(source=toneighbor[i], tag=1) for i in range(NUMBER_OF_NEIGHBOURS)]
to_halos_updated = MPI.Request.waitall(recv_req)
MPI.Request.Waitall(send_req)
my_halos_updated_req = win.Sync_object_init(my_halos_updated, NUMBER_OF_NEIGHBOURS,
                                            MPI.INFO_NULL)
put_req = [win.Sync_ops_init(toneighbor[i], MPI.MODE_WIN_PUT, to_halos_updated[i],
                             MPI.INFO_NULL) for i in range(NUMBER_OF_NEIGHBOURS)]


SYNCTAG = 7
dummy_buf = np.zeros(1, dtype=np.intc)
A[1:-1, 1:-1] = G0[pi * nx:(pi + 1) * nx, pj * ny:(pj + 1) * ny]
for step in range(STEPS + 1):
    MPI.Prequest.Startall(put_req)
    my_halos_updated_req.Start()
    if step:
        update(A)
    # my halo regions are free to be updated: a dummy message to every neighbour
    for i in range(NUMBER_OF_NEIGHBOURS):
        recv_req[i] = comm.Irecv([dummy_buf, 0, MPI.INT], toneighbor[i], SYNCTAG)
        send_req[i] = comm.Isend([dummy_buf, 0, MPI.INT], toneighbor[i], SYNCTAG)
    # Put into each neighbour's halo as soon as it is free
    done = set()
    for i in range(NUMBER_OF_NEIGHBOURS):
        index = MPI.Request.Waitany(recv_req)
        assert index not in done and 0 <= index < NUMBER_OF_NEIGHBOURS, (rank, index)
        done.add(index)
        win.Put([A, 1, fromtype[index]], toneighbor[index],
                [todisp[index], 1, totype[index]])
    MPI.Request.Waitall(put_req)         # my Puts are complete: signal the neighbours
    MPI.Request.Waitall(send_req)
    my_halos_updated_req.Wait()          # my four halos are updated (R158)
check(A, expected, "Example A2")

for request in put_req + [my_halos_updated_req]:
    request.Free()
win.Free_sync_objects(my_counters)
for datatype in fromtype + totype:
    datatype.Free()
win.Free()
print("rank %d: proposal Example A2 (%d x %d ranks, %d steps) ok" % (rank, px, py, STEPS))
