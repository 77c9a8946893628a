"""Nonblocking collectives: Ibcast, Igather, Iscatter, Iallgather, Ialltoall,
Ireduce, Iallreduce (also IN_PLACE) and Ibarrier, all outstanding at once and
completed by one Waitall in reverse order; every rank checks what it got.

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
print("rank %d: Ibcast, Igather, Iscatter, Iallgather, Ialltoall, Ireduce, Iallreduce, "
      "Ibarrier ok" % rank, flush=True)
