"""What a long wait costs the rank that waits (2 ranks, shmrma only).

Rank 1 makes rank 0 wait DELAY seconds (argv[1], default 0.4) in each kind of
blocking call; rank 0 measures the CPU time of its own thread (time.thread_time)
and the wall time of the wait, REPS times (argv[2], default 5). Rank 0 prints
its wait parameters, ``spin <microseconds> <yields>``, then one line per kind:
``wait <kind> <median wall s> <median CPU s>``. By the one
wait policy (README "How ranks wait") a wait spins once (SHMRMA_SPIN), yields,
then sleeps: its CPU is about one spin, whatever the wait lasts.

Last, ``switches counter-count-2 <median>``: the voluntary context switches of
a Sync_object Wait of count 2 asleep on its counter (no spin, no yield, one long
wait slice) while two signals come: 1 when only the signal that completes it
wakes it (csrc/counters.c).
"""
import resource
import statistics
import sys
import time

from shmrma import MPI, _native
from shmrma.core import atomic
from shmrma.p2p import request
from shmrma.rma import counters

DELAY = float(sys.argv[1]) if len(sys.argv) > 1 else 0.4
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank
win = MPI.Win.Allocate(64, 8, comm=comm)
other = comm.group.Incl([peer])
sync = comm.bcast(win.Alloc_sync_objects(1)[0] if rank == 0 else None)
signal = win.Sync_ops_init(0, 0, sync) if rank == 1 else None


def measured(wait):
    wall, cpu = time.monotonic(), time.thread_time()
    wait()
    return time.monotonic() - wall, time.thread_time() - cpu


def recv():
    if rank == 0:
        return measured(lambda: comm.Recv(bytearray(8), 1, tag=1))
    time.sleep(DELAY)
    comm.Send(bytearray(8), 0, tag=1)


def barrier():
    if rank == 0:
        return measured(comm.Barrier)
    time.sleep(DELAY)
    comm.Barrier()


def pscw_wait():
    if rank == 0:
        win.Post(other)
        return measured(win.Wait)
    win.Start(other)
    time.sleep(DELAY)
    win.Complete()


def lock():
    if rank == 0:
        comm.Recv(bytearray(1), 1, tag=2)
        result = measured(lambda: win.Lock(1))
        win.Unlock(1)
        return result
    win.Lock(1)
    comm.Send(b"x", 0, tag=2)
    time.sleep(DELAY)
    win.Unlock(1)


def counter_wait():
    if rank == 0:
        waiting = win.Sync_object_init(sync, 1)
        waiting.Start()
        comm.Barrier()
        result = measured(waiting.Wait)
        waiting.Free()
        return result
    comm.Barrier()
    time.sleep(DELAY)
    signal.Start()
    signal.Wait()


KINDS = {"Recv": recv, "Barrier": barrier, "Win.Wait": pscw_wait, "Lock": lock,
         "Sync_object.Wait": counter_wait}


def count_2_switches():
    """Voluntary context switches of rank 0's thread during a Sync_object Wait of
    count 2 asleep on its counter while rank 1 signals twice, each time once it sees
    the waiter asleep."""
    address = win._s.counters.address(sync, "bench")
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    if rank == 0:
        atomic.set_wait_params(0, 0)     # no spin, no yield: sleep at once
        _native.counters_setup(counters.OFF_GENERATION, 60.0, request.Request.Wait,
                               request.Request.Test)
        waiting = win.Sync_object_init(sync, 2)
        waiting.Start()
        comm.Barrier()
        before = resource.getrusage(who).ru_nvcsw
        waiting.Wait()
        switches = resource.getrusage(who).ru_nvcsw - before
        waiting.Free()
        return switches
    comm.Barrier()
    for _ in range(2):
        while atomic.load32(address + 4) == 0:   # the wait cell's sleepers
            pass
        time.sleep(0.02)        # a wrongly woken waiter is back asleep by now
        signal.Start()
        signal.Wait()


if rank == 0:
    print("spin %d %d" % atomic.get_wait_params(), flush=True)
for name, kind in KINDS.items():
    samples = []
    for _ in range(REPS):
        comm.Barrier()
        samples.append(kind())
    if rank == 0:
        print("wait %s %.4f %.4f" % (name, statistics.median(s[0] for s in samples),
                                     statistics.median(s[1] for s in samples)), flush=True)
switches = []
for _ in range(REPS):
    comm.Barrier()
    switches.append(count_2_switches())
if rank == 0:
    print("switches counter-count-2 %g" % statistics.median(switches), flush=True)
comm.Barrier()
if signal is not None:
    signal.Free()
win.Free_sync_objects([sync] if rank == 0 else [])
win.Free()
