"""Nonblocking collectives: Ibcast, Igather, Iscatter, Iallgather, Ialltoall,
Ireduce, Iallreduce (also IN_PLACE), Ibarrier, then the vector forms Igatherv,
Iscatterv, Iallgatherv, Ialltoallv and Iscan, Iexscan, Ireduce_scatter(_block);
each group outstanding at once and completed by one Waitall in reverse order;
every rank checks what it got.

    shmrma-run -n 4 scripts/nonblocking_collectives.py
"""
import math

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
last = size - 1
requests = []   # started in this order, completed in the reverse one
data = np.arange(4, dtype="i8") * 10 if rank == last else np.zeros(4, "i8")
requests.append(comm.Ibcast(data, root=last))
gathered = np.full(2 * size, -1, "i4") if rank == 0 else None
requests.append(comm.Igather(np.full(2, rank, "i4"), gathered, root=0))
scattered = np.zeros(3)
requests.append(comm.Iscatter(np.arange(3.0 * size) if rank == 0 else None, scattered,
                              root=0))
everyone = np.zeros(size, "i8")
requests.append(comm.Iallgather(np.array([rank * rank], "i8"), everyone))
exchanged = np.zeros(size, "i4")
requests.append(comm.Ialltoall(np.array([100 * rank + d for d in range(size)], "i4"),
                               exchanged))
reduced = np.zeros(2)
requests.append(comm.Ireduce(np.full(2, rank + 1.0), reduced, op=MPI.SUM, root=last))
total = np.zeros(1, "i8")
requests.append(comm.Iallreduce(np.array([rank + 1], "i8"), total, op=MPI.PROD))
inplace = np.array([rank], "i4")
requests.append(comm.Iallreduce(MPI.IN_PLACE, inplace, op=MPI.MAX))
barrier = comm.Ibarrier()
MPI.Request.Waitall(requests[::-1] + [barrier])
assert data.tolist() == [0, 10, 20, 30], data
if rank == 0:
    assert gathered.tolist() == [r for r in range(size) for _ in range(2)], gathered
assert scattered.tolist() == [3.0 * rank, 3.0 * rank + 1, 3.0 * rank + 2], scattered
assert everyone.tolist() == [r * r for r in range(size)], everyone
assert exchanged.tolist() == [100 * s + rank for s in range(size)], exchanged
if rank == last:
    assert reduced.tolist() == [size * (size + 1) / 2] * 2, reduced
assert total[0] == math.factorial(size), total
assert inplace[0] == size - 1

# the vector forms (rank r has r + 1 items), the scans, the scattered reduction
counts = [r + 1 for r in range(size)]
displs = [sum(counts[:r]) for r in range(size)]
mine = np.full(rank + 1, rank, "i4")
whole = np.concatenate([np.full(r + 1, r, "i4") for r in range(size)])
requests = []
gatheredv = np.full(sum(counts), -1, "i4") if rank == last else None
requests.append(comm.Igatherv(mine, [gatheredv, counts, displs, MPI.INT]
                              if rank == last else None, root=last))
scatteredv = np.zeros(rank + 1, "i4")
requests.append(comm.Iscatterv([whole, counts] if rank == 0 else None, scatteredv, root=0))
everyonev = np.full(sum(counts), -1, "i4")
requests.append(comm.Iallgatherv(mine, [everyonev, counts]))
sent = np.concatenate([np.full(d + 1, 100 * rank + d, "i8") for d in range(size)])
receivedv = np.zeros((rank + 1) * size, "i8")
requests.append(comm.Ialltoallv([sent, [d + 1 for d in range(size)]], [receivedv, rank + 1]))
prefix = np.zeros(2, "i8")
requests.append(comm.Iscan(np.full(2, rank + 1, "i8"), prefix))
before = np.full(1, -1.0)
requests.append(comm.Iexscan(np.ones(1), before))
block = np.zeros(2, "i8")
requests.append(comm.Ireduce_scatter_block(np.arange(2 * size, dtype="i8"), block))
vector = np.arange(2 * size, dtype="i8")      # IN_PLACE: my block lands in front
requests.append(comm.Ireduce_scatter_block(MPI.IN_PLACE, vector))
uneven = np.zeros(rank + 1)
requests.append(comm.Ireduce_scatter(np.ones(sum(counts)), uneven, counts))
MPI.Request.Waitall(requests[::-1])
if rank == last:
    assert gatheredv.tolist() == whole.tolist(), gatheredv
assert scatteredv.tolist() == [rank] * (rank + 1), scatteredv
assert everyonev.tolist() == whole.tolist(), everyonev
assert receivedv.tolist() == [100 * s + rank for s in range(size) for _ in range(rank + 1)]
assert (prefix == sum(range(1, rank + 2))).all(), prefix
assert before[0] == (-1.0 if rank == 0 else rank), before
assert block.tolist() == vector[:2].tolist() == [size * 2 * rank, size * (2 * rank + 1)]
assert (uneven == size).all(), uneven

print("rank %d: Ibcast, Igather(v), Iscatter(v), Iallgather(v), Ialltoall(v), Ireduce, "
      "Iallreduce, Iscan, Iexscan, Ireduce_scatter(_block), Ibarrier ok" % rank, flush=True)
