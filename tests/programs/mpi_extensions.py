"""shmrma's extensions (docs/api.md) on the mpi backend, with their errors (run by
tests/test_backends.py under `shmrma-run --backend mpi -n 2`). Each check prints
one "ok" line; an assertion failure aborts the job."""
import pickle
import sys

import numpy as np

from shmrma import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size


def error_class(call, *args):
    try:
        call(*args)
    except MPI.Exception as exc:
        assert str(exc).count(":") >= 1, str(exc)   # says what to fix
        return exc.Get_error_class()
    raise AssertionError("%s did not raise" % call.__name__)


def ok(what):
    sys.stdout.write("rank %d: %s ok\n" % (rank, what))
    sys.stdout.flush()


# the namespace: mpi4py's, with shmrma's classes in place and isinstance kept
import mpi4py.MPI
assert MPI.Exception is mpi4py.MPI.Exception and MPI.INT64_T is mpi4py.MPI.INT64_T
assert isinstance(comm.Isend(b"", rank, 9), MPI.Request)
comm.Recv(bytearray(0), rank, 9)
ok("namespace")

win = MPI.Win.Allocate(16, 8, comm=comm)
memory = np.frombuffer(win.tomemory(), dtype="i8")
mine = win.Alloc_sync_objects(2)
assert all(isinstance(s, MPI.Sync) and s.owner == rank for s in mine)

# R154: handles travel typed HANDLE_SYNC (point-to-point, Bcast, Allgather) and pickled
theirs = [MPI.SYNC_NULL, MPI.SYNC_NULL]
comm.Sendrecv([mine, MPI.HANDLE_SYNC], left, 1, [theirs, MPI.HANDLE_SYNC], right, 1)
assert [s.owner for s in theirs] == [right, right]
everyone = [MPI.SYNC_NULL] * size
comm.Allgather([mine, 1, MPI.HANDLE_SYNC], [everyone, MPI.HANDLE_SYNC])
assert [s.owner for s in everyone] == list(range(size))
rooted = list(mine) if rank == 0 else [MPI.SYNC_NULL] * 2
comm.Bcast([rooted, MPI.HANDLE_SYNC], root=0)
assert [s.owner for s in rooted] == [0, 0]
assert comm.sendrecv(mine[0], left, source=right) == theirs[0]
assert pickle.loads(pickle.dumps(MPI.SYNC_NULL)) == MPI.SYNC_NULL
received = [MPI.SYNC_NULL]
request = comm.Irecv([received, MPI.HANDLE_SYNC], right, 2)
comm.Send([np.zeros(16, "i8"), MPI.BYTE], left, 2)     # 128 bytes that are no handle
assert error_class(request.Wait) == MPI.ERR_TYPE and received == [MPI.SYNC_NULL]
# R154: typed HANDLE_SYNC in the other sends too; in reductions, other collectives
# and RMA it is ERR_TYPE, as on shared memory, and nothing moves
got = [MPI.SYNC_NULL]
pending = comm.Irecv([got, MPI.HANDLE_SYNC], right, 4)
comm.Ssend([mine[:1], MPI.HANDLE_SYNC], left, 4)
pending.Wait()
assert got[0].owner == right
out = [MPI.SYNC_NULL]
for misuse in (lambda: comm.Allreduce([mine, MPI.HANDLE_SYNC], [out, MPI.HANDLE_SYNC]),
               lambda: comm.Reduce([mine, MPI.HANDLE_SYNC], [out, MPI.HANDLE_SYNC]),
               lambda: comm.Scatter([mine, MPI.HANDLE_SYNC], [out, MPI.HANDLE_SYNC]),
               lambda: comm.Ibcast([mine, MPI.HANDLE_SYNC])):
    assert error_class(misuse) == MPI.ERR_TYPE
assert out == [MPI.SYNC_NULL]
ok("HANDLE_SYNC")

# R156, R158: a Put and its signal, mixed in Waitall/Testall/Waitany with MPI requests
arrived = win.Sync_object_init(mine[0], 1)
signal = win.Sync_ops_init(right, MPI.MODE_WIN_PUT, theirs[0])
memory[:] = -1
comm.Barrier()
for step in range(4):
    MPI.Prequest.Startall([arrived, signal])
    # two words: the neighbour, one step ahead at most, writes the other one
    win.Put([np.array([10 * step + rank], "i8"), MPI.INT64_T], right, step % 2)
    note = comm.Isend(b"x", left, 3)
    box = bytearray(1)
    MPI.Request.Waitall([signal, comm.Irecv(box, right, 3), note])
    while not MPI.Request.Testall([arrived]):
        pass
    assert memory[step % 2] == 10 * step + left, (step, memory)
# A14: the counter epoch admits only the RMA kinds of its active Sync_ops requests;
# R154: RMA typed HANDLE_SYNC is ERR_TYPE there (outside, mpi4py's TypeError)
MPI.Prequest.Startall([arrived, signal])
for misuse in (lambda: win.Put([bytearray(128), MPI.HANDLE_SYNC], right),
               lambda: win.Put([bytearray(8), MPI.BYTE], right, [0, 1, MPI.HANDLE_SYNC]),
               lambda: win.Accumulate([mine, MPI.HANDLE_SYNC], right, op=MPI.REPLACE)):
    assert error_class(misuse) == MPI.ERR_TYPE
scratch = np.array([5], "i8")
assert error_class(win.Get, [scratch, MPI.INT64_T], right, 1) == MPI.ERR_RMA_SYNC
assert error_class(win.Raccumulate, [scratch, MPI.INT64_T], right, 1, MPI.SUM) == \
    MPI.ERR_RMA_SYNC
assert scratch[0] == 5
win.Put([np.array([77], "i8"), MPI.INT64_T], right, 0)
MPI.Request.Waitall([signal, arrived])
assert memory[0] == 77
ok("Sync_ops + Sync_object")

# A17: Start on an active request, Cancel, Free of an active request: ERR_REQUEST
arrived.Start()
assert error_class(arrived.Start) == MPI.ERR_REQUEST
assert error_class(arrived.Cancel) == MPI.ERR_REQUEST
assert error_class(arrived.Free) == MPI.ERR_REQUEST
# Win.Free with a started request: ERR_RMA_SYNC, nothing freed (collective, so all ranks)
assert error_class(win.Free) == MPI.ERR_RMA_SYNC
signal.Start()
assert MPI.Request.Waitany([signal]) == 0
arrived.Wait()
ok("request errors")

# A16, R160: early signals are banked; more than the count is ERR_WIN_COUNTER
comm.Barrier()
pure = win.Sync_ops_init(right, 0, theirs[1])
for _ in range(2):
    pure.Start()
    pure.Wait()
comm.Barrier()
one = win.Sync_object_init(mine[1], 1)
assert error_class(one.Start) == MPI.ERR_WIN_COUNTER    # counter at -2, count 1: unchanged
two = win.Sync_object_init(mine[1], 2)
two.Start()
assert two.Test()       # the two early signals complete it at once

# A23: Free of a restart request between completions takes back its re-arming;
# a restart request whose re-arm finds too many signals ends with ERR_WIN_COUNTER
fresh_mine = win.Alloc_sync_objects(2)
fresh_theirs = comm.sendrecv(fresh_mine, left, source=right)
signals = [win.Sync_ops_init(right, 0, handle) for handle in fresh_theirs]


def signal_times(which, times):
    for _ in range(times):
        signals[which].Start()
        signals[which].Wait()
    comm.Barrier()      # every signal is at its counter


looping = win.Sync_object_init(fresh_mine[0], 1, {"restart": "true"})
looping.Start()
signal_times(0, 1)
looping.Wait()      # completed, and armed again
looping.Free()
after = win.Sync_object_init(fresh_mine[0], 1)
after.Start()
signal_times(0, 1)
assert after.Test()     # one signal is enough: the restart arming was taken back
flooded = win.Sync_object_init(fresh_mine[1], 1, {"restart": "true"})
flooded.Start()
comm.Barrier()      # armed before the neighbour's signals: they flood the re-arm
signal_times(1, 3)
assert error_class(flooded.Wait) == MPI.ERR_WIN_COUNTER
assert flooded.Test()   # inactive now: completes empty, and may be freed
for request in (flooded, after, *signals):
    request.Free()
comm.Barrier()
win.Free_sync_objects(fresh_mine)
ok("banking and ERR_WIN_COUNTER")

# R163, A16: a restart counter signalled by two ranks in turn (each rank signals its
# own and its neighbour's), over many completions: the owner arms it without an RMA
# call, an arming offset past FOLD_AT is folded into the word, and each completion
# takes exactly its count (no signal lost, none counted twice)
from shmrma.onmpi import counters as backend_counters
counter_window = win._counters
assert counter_window._words is not None       # MPICH's Allocate: unified, loads poll
backend_counters.FOLD_AT, fold_at = 8, backend_counters.FOLD_AT
pair = win.Alloc_sync_objects(1)
pair_theirs = comm.sendrecv(pair, left, source=right)
both = win.Sync_object_init(pair[0], 2, {"restart": "true"})
to_me = win.Sync_ops_init(rank, 0, pair[0], {"restart": "true"})
to_right = win.Sync_ops_init(right, 0, pair_theirs[0], {"restart": "true"})
MPI.Prequest.Startall([both, to_me, to_right])
comm.Barrier()
for _ in range(40):
    MPI.Request.Waitall([to_me, to_right])
    both.Wait()
comm.Barrier()
assert not both.Test()      # every signal was taken by one completion: none left over
value, generation = counter_window.read(rank, pair[0].slot)
assert generation == pair[0].generation and value > -8, (value, generation)   # folded
assert counter_window.value(pair[0].slot) == 2      # armed for the next round
for request in (both, to_me, to_right):
    request.Free()
comm.Barrier()
win.Free_sync_objects(pair)
backend_counters.FOLD_AT = fold_at
ok("two signallers and folding")

# argument errors (A18, A25) and SHMRMA_SYNC_OBJECTS
assert error_class(win.Sync_ops_init, right, 8, theirs[0]) == MPI.ERR_ARG
assert error_class(win.Sync_object_init, theirs[0], 1) == MPI.ERR_ARG
assert error_class(win.Sync_ops_init, right, 0, MPI.SYNC_NULL) == MPI.ERR_ARG
assert error_class(win.Alloc_sync_objects, -1) == MPI.ERR_COUNT
assert error_class(win.Alloc_sync_objects, 10 ** 6) == MPI.ERR_NO_MEM
assert error_class(win.Free_sync_objects, [mine[1], mine[1]]) == MPI.ERR_ARG  # listed twice
stale = win.Sync_ops_init(right, 0, theirs[1])
comm.Barrier()
for request in (arrived, signal, pure, one, two):
    request.Free()
spare = [mine[1]]
win.Free_sync_objects(spare)
assert spare == [MPI.SYNC_NULL]
comm.Barrier()
assert error_class(win.Sync_ops_init, right, 0, theirs[1]) == MPI.ERR_ARG   # freed (A25)
stale.Start()
assert error_class(stale.Wait) == MPI.ERR_ARG      # made before the free: signals nothing
# the slot again, under a new generation: its new handle signals once, exactly
again = win.Alloc_sync_objects(1)
fresh = comm.sendrecv(again[0], left, source=right)
assert fresh.slot == theirs[1].slot and fresh != theirs[1]
waiting = win.Sync_object_init(again[0], 1)
waiting.Start()
comm.Barrier()
assert not waiting.Test()
comm.Barrier()
signal_again = win.Sync_ops_init(right, 0, fresh)
signal_again.Start()
signal_again.Wait()
waiting.Wait()
win.Free_sync_objects(again)
ok("argument errors")

# the window barrier (A1-A3) and its assertion check
assert error_class(win.Ibarrier, 1 << 30) == MPI.ERR_ASSERT
win.Barrier()
for step in range(4):     # two words: the neighbour's next Put may come while I read
    win.Put([np.array([100 + step + rank], "i8"), MPI.INT64_T], right, step % 2)
    request = win.Ibarrier()
    assert isinstance(request, MPI.Request)
    request.Wait()
    assert memory[step % 2] == 100 + step + left, (step, memory)
win.Barrier(MPI.MODE_NOSUCCEED)
win.Fence()         # the window is free for other synchronization after NOSUCCEED
win.Fence(MPI.MODE_NOSUCCEED)
ok("window barrier")

# Change_comm: MPI-3 cannot move a window; the error names what to do instead
assert error_class(win.Change_comm, comm, 0) == MPI.ERR_UNSUPPORTED_OPERATION
assert error_class(MPI.WIN_NULL.Change_comm, comm, 0) == MPI.ERR_UNSUPPORTED_OPERATION
win.Free_sync_objects([mine[0]])
del memory
win.Free()
ok("Change_comm error")
