"""Buffer collectives that cut a buffer in one part per rank, equal (Scatter) or
each its own size and place (the vector forms Scatterv, Gatherv, Allgatherv,
Alltoallv), with MPI.IN_PLACE; then the prefix reductions (scan, exscan, Scan,
Exscan), the reductions whose result is scattered (Reduce_scatter_block,
Reduce_scatter) and the nonblocking Ibarrier. Every rank checks what it got.

    shmrma-run -n 4 scripts/collectives.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
last = size - 1

# Scatter: 3 items each from rank 0; then from the last rank, which keeps its own
# part where it is (IN_PLACE)
mine = np.empty(3, "i8")
comm.Scatter(np.arange(3 * size, dtype="i8") if rank == 0 else None, mine, root=0)
assert mine.tolist() == [3 * rank, 3 * rank + 1, 3 * rank + 2], mine
if rank == last:
    comm.Scatter(np.arange(2 * size) * 10.0, MPI.IN_PLACE, root=last)
else:
    halves = np.empty(2)
    comm.Scatter(None, halves, root=last)
    assert halves.tolist() == [20.0 * rank, 20.0 * rank + 10], halves

# Scatterv: rank r gets r + 1 items of 0, 1, 2, ...
counts = [r + 1 for r in range(size)]
displs = [sum(counts[:r]) for r in range(size)]
whole = np.arange(sum(counts), dtype="i4")
part = np.empty(rank + 1, "i4")
comm.Scatterv([whole, counts, displs, MPI.INT] if rank == 0 else None, part, root=0)
assert part.tolist() == list(range(displs[rank], displs[rank] + rank + 1)), part

# Gatherv at the last rank, into slots `size` items apart (displacements given)
slots = np.full(size * size, -1, "i4")
comm.Gatherv(part, [slots, (counts, [size * r for r in range(size)]), MPI.INT]
             if rank == last else None, root=last)
if rank == last:
    for r, slot in enumerate(slots.reshape(size, size)):
        assert slot[:r + 1].tolist() == whole[displs[r]:displs[r] + r + 1].tolist(), slots
        assert (slot[r + 1:] == -1).all(), slots

# Allgatherv: everyone gets the whole; even ranks put their part in place first
got = np.full(sum(counts), -1, "i4")
if rank % 2 == 0:
    got[displs[rank]:displs[rank] + rank + 1] = part
    comm.Allgatherv(MPI.IN_PLACE, [got, counts, displs, MPI.INT])
else:
    comm.Allgatherv(part, [got, counts, MPI.INT])      # displacements packed
assert got.tolist() == whole.tolist(), got

# Alltoallv: rank s sends d + 1 items of value 100 s + d to rank d
sent = np.concatenate([np.full(d + 1, 100 * rank + d, "i8") for d in range(size)])
received = np.empty((rank + 1) * size, "i8")
comm.Alltoallv([sent, [d + 1 for d in range(size)]], [received, rank + 1])
assert received.tolist() == [100 * s + rank for s in range(size) for _ in range(rank + 1)]

# prefix reductions in rank order: rank r gets ranks 0..r folded (Exscan: 0..r-1)
assert comm.scan(rank + 1) == sum(range(1, rank + 2))
assert comm.exscan(rank + 1) == (None if rank == 0 else sum(range(1, rank + 1)))
assert comm.scan([rank]) == list(range(rank + 1))        # list + list keeps the order
prefix = np.zeros(3, "i8")
comm.Scan(np.full(3, rank + 1, "i8"), prefix)
assert (prefix == sum(range(1, rank + 2))).all(), prefix
powers = np.full(2, -7.0)            # Exscan leaves rank 0's buffer as it was
comm.Exscan(np.full(2, 2.0), powers, op=MPI.PROD)
assert (powers == (-7.0 if rank == 0 else 2.0 ** rank)).all(), powers
highest = np.full(2, rank + 1, "i4")
comm.Scan(MPI.IN_PLACE, highest, op=MPI.MAX)
assert (highest == rank + 1).all(), highest

# the sum of every rank's vector, rank r keeping block r: equal blocks, then r + 1
# items each, the counts given or gathered from the receive buffers
block = np.empty(2, "i8")
comm.Reduce_scatter_block(np.arange(2 * size, dtype="i8"), block)
assert block.tolist() == [size * 2 * rank, size * (2 * rank + 1)], block
start = displs[rank]
for counts_given in (counts, None):
    summed = np.empty(rank + 1)
    comm.Reduce_scatter(np.arange(sum(counts), dtype="f8"), summed, counts_given)
    assert summed.tolist() == [size * v for v in range(start, start + rank + 1)], summed
# IN_PLACE: the vector is in the receive buffer, my block of the sum lands in front
vector = np.arange(2 * size, dtype="i8")
comm.Reduce_scatter_block(MPI.IN_PLACE, vector)
assert vector[:2].tolist() == block.tolist(), vector
vector = np.arange(sum(counts), dtype="f8")
comm.Reduce_scatter(MPI.IN_PLACE, vector, counts)
assert vector[:rank + 1].tolist() == summed.tolist(), vector

# a barrier that does not wait, overlapping a collective
entered = comm.Ibarrier()
comm.Allgatherv(part, [got, counts, MPI.INT])
entered.Wait()

print("rank %d: Scatter(v), Gatherv, Allgatherv, Alltoallv, scans, Reduce_scatter, "
      "Ibarrier ok" % rank, flush=True)
