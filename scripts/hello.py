"""Each rank greets, passes a token around the ring, and the ranks sum their ranks.

    shmrma-run -n 4 scripts/hello.py
"""
from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

right, left = (rank + 1) % size, (rank - 1) % size
token = comm.sendrecv(f"token from rank {rank}", dest=right, source=left)
total = comm.allreduce(rank, op=MPI.SUM)
comm.Barrier()
print(f"rank {rank} of {size}: got '{token}', sum of ranks = {total}", flush=True)
