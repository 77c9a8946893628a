"""A producer/consumer pipeline over the ranks signalled only with the proposal's
synchronization counters (000 §1.2.3; not a seed example of its own: it replaces
the usual Lock_all + Put + Flush + Fetch_and_op(flag) + polling hand-off).

Rank 0 produces NB blocks, ranks 1..n-2 transform and forward them, rank n-1
consumes them: rank r Puts block b into slot b % NSLOT of rank r+1's window
(NSLOT receive slots, so slots are reused many times).
  - "slot full": rank r+1 owns one counter per slot and sends the handles to r
    (pickled, A25/R154); r Starts put_req[s] = Sync_ops_init(r+1, MODE_WIN_PUT,
    full[s]) before its Put and Waits it after: the Wait completes the Put at the
    target and then decrements full[s] (A14, A15, R156, R165). The consumer's
    full_req[s] = Sync_object_init(full[s], 1, restart=true) is Started once and
    re-arms at every completing Wait (R163, A22); after it the slot's data is
    visible (R158).
  - "slot empty": rank r owns one counter per slot and sends the handles to r+1,
    whose free_req[s] = Sync_ops_init(r, 0, empty[s], restart=true) is a pure
    notification (sync_mode 0, R157). The producer Starts its empty_req[s]
    (count 1, no restart) only right before it needs slot s again, so the
    consumer's signal has usually arrived already and is banked (A16, R155): the
    Start then completes the request at once.
  - the end: the producer waits for one more "empty" per used slot, i.e. until
    the consumer has drained every slot, and every request completed since its
    last Start is freed (A23) before Free_sync_objects.
Checked: every stage verifies each block it receives against the serial value
(block b = 100 b + arange(BS), stage r maps v -> (3 v + r) mod MOD), the last rank
verifies all NB blocks in order and the order-sensitive checksum of the stream,
and exits nonzero on any mismatch.
    shmrma-run -n 4 scripts/proposal/counter_pipeline.py
"""
import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
assert size >= 2, "the pipeline needs at least a producer and a consumer"
NB, NSLOT, BS = 24, 3, 16
MOD = 1_000_003
RESTART = {"restart": "true"}


def block_at(stage, b):
    """The value of block b as rank `stage` receives it (stage 0: as produced)."""
    v = 100 * b + np.arange(BS, dtype=np.int64)
    for r in range(1, stage):
        v = (3 * v + r) % MOD
    return v


def checksum(blocks):
    total = 0
    for b, v in enumerate(blocks):
        total = (total * 31 + int(v.sum()) * (b + 1)) % MOD
    return total


slots = np.zeros((NSLOT, BS), dtype=np.int64)
win = MPI.Win.Create(slots, disp_unit=slots.itemsize, comm=comm)
producer, consumer = rank < size - 1, rank > 0

my_counters = win.Alloc_sync_objects(NSLOT * (producer + consumer))
full = my_counters[:NSLOT] if consumer else []           # my slots are full
empty = my_counters[-NSLOT:] if producer else []         # rank+1's slots are empty
sends = []
if consumer:
    sends.append(comm.isend(full, rank - 1, 1))
if producer:
    sends.append(comm.isend(empty, rank + 1, 2))
full_remote = comm.recv(source=rank + 1, tag=1) if producer else []
empty_remote = comm.recv(source=rank - 1, tag=2) if consumer else []
MPI.Request.Waitall(sends)

if producer:
    put_req = [win.Sync_ops_init(rank + 1, MPI.MODE_WIN_PUT, full_remote[s])
               for s in range(NSLOT)]
    empty_req = [win.Sync_object_init(empty[s], 1) for s in range(NSLOT)]
if consumer:
    full_req = [win.Sync_object_init(full[s], 1, RESTART) for s in range(NSLOT)]
    free_req = [win.Sync_ops_init(rank - 1, 0, empty_remote[s], RESTART)
                for s in range(NSLOT)]
    MPI.Prequest.Startall(full_req + free_req)

out = np.zeros(BS, dtype=np.int64)       # origin buffer of my Puts
received = []
for b in range(NB):
    s = b % NSLOT
    if consumer:
        full_req[s].Wait()               # block b is in my slot s (R158)
        data = slots[s].copy()
        free_req[s].Wait()               # slot s is empty again: signal rank-1
        if not np.array_equal(data, block_at(rank, b)):
            raise SystemExit("rank %d: block %d is %s, expected %s"
                             % (rank, b, data, block_at(rank, b)))
        received.append(data)
    if producer:
        if b >= NSLOT:
            empty_req[s].Start()         # the signal may be banked already (A16)
            empty_req[s].Wait()          # rank+1 consumed block b - NSLOT
        out[:] = block_at(1, b) if rank == 0 else (3 * data + rank) % MOD
        put_req[s].Start()               # opens the counter epoch to rank+1 (A14)
        win.Put(out, rank + 1, s * BS)
        put_req[s].Wait()                # Put complete at rank+1, then full[s] -= 1
if producer:                             # wait until rank+1 drained every slot
    for s in range(min(NB, NSLOT)):
        empty_req[s].Start()
        empty_req[s].Wait()

if rank == size - 1:
    expected = [block_at(size - 1, b) for b in range(NB)]
    if len(received) != NB or checksum(received) != checksum(expected):
        raise SystemExit("rank %d: %d blocks, checksum %d, expected %d"
                         % (rank, len(received), checksum(received), checksum(expected)))

for request in (put_req + empty_req if producer else []) + \
        (full_req + free_req if consumer else []):
    request.Free()                       # each was completed since its last Start (A23)
win.Free_sync_objects(my_counters)
win.Free()
print("rank %d: counter pipeline (%d blocks, %d slots) ok" % (rank, NB, NSLOT))
