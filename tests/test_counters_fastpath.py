"""The synchronization counters' requests (shmrma/csrc/rma/counters.c) and the window
barrier (shmrma/csrc/rma/winbarrier.c: Fence, Barrier, Ibarrier) in C, against their
Python paths.

Every scenario runs with the fast paths on at every rank, off at every rank, and on
at even ranks only, and must end the same on every rank: the same values, the same
error classes (A14-A25 for the counters, R166-R172 for the barrier). A spy
records every call that reached a Python path; in the common cases there is none.
"""
import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import atomic
from shmrma.rma import counters, winbarrier
from mpitest import assert_every_mode_agrees, run_in_every_mode

RESTART = {"restart": "true"}


class Spy:
    """Records the Python paths taken: a request's Start or completion, a barrier's
    entry."""

    def __init__(self):
        self.calls = []
        self._wrap(counters._SyncRequest, "_start", "Start")
        self._wrap(counters._SyncRequest, "_finish", "Wait/Test")
        self._wrap(winbarrier.BarrierRequest, "_finish", "barrier Wait/Test")
        enter = winbarrier.enter

        def entered(*args):
            self.calls.append("barrier entry")
            return enter(*args)
        winbarrier.enter = entered

    def _wrap(self, cls, name, label):
        real = getattr(cls, name)

        def spy(*args):
            self.calls.append(label)
            return real(*args)
        setattr(cls, name, spy)

    def take(self):
        calls, self.calls = self.calls, []
        return calls


def _scenarios(comm, win):
    rank, size = comm.rank, comm.size
    right, left = (rank + 1) % size, (rank - 1) % size
    memory = np.frombuffer(win.tomemory(), "i8")

    def handles(n=1):
        mine = win.Alloc_sync_objects(n)
        return mine, comm.allgather(mine)

    def ring(rounds=4):
        """A notification ring: Put to the right, signal, await the left's."""
        mine, everyone = handles()
        signal = win.Sync_ops_init(right, MPI.MODE_WIN_PUT, everyone[right][0], RESTART)
        arrived = win.Sync_object_init(mine[0], 1, RESTART)
        signal.Start()
        arrived.Start()
        seen = []
        for k in range(rounds):
            win.Put(np.array([100 * k + rank], "i8"), right, 0)
            signal.Wait()
            arrived.Wait()
            seen.append(int(memory[0]))
            comm.Barrier()      # the left neighbour's next Put comes after this read
        signal.Free()
        arrived.Free()
        win.Free_sync_objects(mine)
        return seen

    def per_message(rounds=3):
        """Sync_ops and Sync_object requests started for every message (no restart)."""
        mine, everyone = handles()
        signal = win.Sync_ops_init(right, MPI.MODE_WIN_PUT, everyone[right][0])
        arrived = win.Sync_object_init(mine[0], 1)
        seen = []
        for k in range(rounds):
            arrived.Start()
            comm.Barrier()      # armed everywhere before anyone signals
            signal.Start()
            win.Put(np.array([7 * k + rank], "i8"), right, 1)
            signal.Test()       # completes at once: every covered Put is complete
            arrived.Wait()
            seen.append(int(memory[1]))
            comm.Barrier()
        signal.Free()
        arrived.Free()
        win.Free_sync_objects(mine)
        return seen

    def early(signals, count, restart=False, before_wait=0):
        """`signals` early signals from the left (before Start), `before_wait` more
        after Start; a Sync_object request of `count` then waits (A16)."""
        mine, everyone = handles()
        signal = win.Sync_ops_init(right, MPI.MODE_WIN_ACCUMULATE, everyone[right][0],
                                   RESTART)
        arrived = win.Sync_object_init(mine[0], count, RESTART if restart else None)
        signal.Start()
        try:
            for _ in range(signals):
                signal.Wait()
            comm.Barrier()
            started = MPI.SUCCESS
            try:
                arrived.Start()
            except MPI.Exception as exc:
                started = exc.Get_error_class()
            comm.Barrier()
            for _ in range(before_wait):
                signal.Wait()
            comm.Barrier()
            waited = None
            if started == MPI.SUCCESS:
                try:
                    waited = arrived.Wait()
                except MPI.Exception as exc:
                    waited = exc.Get_error_class()
            comm.Barrier()
            return started, waited, bool(arrived._active)
        finally:
            signal.Free()
            arrived.Free()      # a restart request right after its Wait, or inactive (A23)
            comm.Barrier()
            win.Free_sync_objects(mine)

    def start_twice():
        mine, _ = handles()
        request = win.Sync_object_init(mine[0], 0)
        request.Start()
        try:
            request.Start()
        finally:
            request.Wait()
            request.Free()
            win.Free_sync_objects(mine)

    def sync_ops_in_start_epoch():
        mine, everyone = handles()
        group = win.Get_group().Incl([right])
        win.Post(win.Get_group().Incl([left]))
        win.Start(group)
        signal = win.Sync_ops_init(right, MPI.MODE_WIN_PUT, everyone[right][0])
        try:
            signal.Start()
        finally:
            win.Complete()
            win.Wait()
            signal.Free()
            comm.Barrier()
            win.Free_sync_objects(mine)

    def signal_freed_counter():
        mine, everyone = handles()
        signal = win.Sync_ops_init(right, MPI.MODE_WIN_PUT, everyone[right][0])
        comm.Barrier()
        win.Free_sync_objects(mine)
        comm.Barrier()
        signal.Start()
        try:
            signal.Wait()
        finally:
            signal.Free()

    def free_with_active_request():
        other = MPI.Win.Allocate(8, 8, comm=comm)
        mine = other.Alloc_sync_objects(1)
        request = other.Sync_object_init(mine[0], 0)
        request.Start()
        try:
            other.Free()
        except MPI.Exception as exc:
            refused = exc.Get_error_class()
        request.Wait()
        request.Free()
        other.Free_sync_objects(mine)
        other.Free()
        return refused

    def put_after_ibarrier():
        """A3: RMA after Ibarrier reaches a target that entered; the next barrier
        completes it for every member."""
        memory[2] = -1
        win.Fence()
        request = win.Ibarrier()
        win.Put(np.array([rank], "i8"), right, 2)
        request.Wait()
        win.Barrier()
        return int(memory[2])

    def ibarrier_test_loop():
        request = win.Ibarrier()
        while not request.Test():
            pass
        return bool(request)

    def ibarrier_in_lock_all():
        win.Lock_all()
        try:
            win.Ibarrier()
        finally:
            win.Unlock_all()

    def fence_noprecede_after_put():
        win.Fence()
        win.Put(np.zeros(1, "i8"), right, 3)
        try:
            win.Fence(MPI.MODE_NOPRECEDE)
        finally:
            win.Fence()

    return {
        "ring": ring,
        "per message": per_message,
        "early signals banked": lambda: early(2, 2),
        "more early signals than the count": lambda: early(2, 1),
        "restart re-arm over-banked": lambda: early(0, 1, restart=True, before_wait=3),
        "restart with early signals": lambda: early(1, 2, restart=True, before_wait=1),
        "Start twice": start_twice,
        "Sync_ops in a Start epoch": sync_ops_in_start_epoch,
        "signal a freed counter": signal_freed_counter,
        "Free with an active request": free_with_active_request,
        "Fence": lambda: [win.Fence() for _ in range(3)] and None,
        "Barrier": lambda: [win.Barrier() for _ in range(3)] and None,
        "Ibarrier Wait": lambda: [win.Ibarrier().Wait() for _ in range(3)] and None,
        "Ibarrier Test loop": ibarrier_test_loop,
        "Put after Ibarrier": put_after_ibarrier,
        "Fence bad assertion": lambda: win.Fence(1 << 20),
        "Ibarrier in Lock_all": ibarrier_in_lock_all,
        "Fence NOPRECEDE after a Put": fence_noprecede_after_put,
    }


def _all_modes():
    comm = MPI.COMM_WORLD
    win = MPI.Win.Allocate(64, 8, comm=comm)
    try:
        return run_in_every_mode(lambda comm: _scenarios(comm, win), Spy())
    finally:
        win.Fence()
        win.Free()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("nranks", [2, 3])
def test_fast_slow_and_mixed_paths_end_the_same(nranks):
    """A14-A25, R163, R166-R172: every scenario gives the same values and error classes
    on every path."""
    results = shmrma.launch(_all_modes, nranks, timeout=100)
    assert_every_mode_agrees(results, lambda took: True)
    outcomes = results[0][0][0]
    assert outcomes["ring"] == ("ok", [100 * k + nranks - 1 for k in range(4)])
    assert outcomes["per message"] == ("ok", [7 * k + nranks - 1 for k in range(3)])
    assert outcomes["early signals banked"] == ("ok", (MPI.SUCCESS, True, False))
    assert outcomes["more early signals than the count"] == (
        "ok", (MPI.ERR_WIN_COUNTER, None, False))
    assert outcomes["restart re-arm over-banked"] == (
        "ok", (MPI.SUCCESS, MPI.ERR_WIN_COUNTER, False))
    assert outcomes["restart with early signals"] == ("ok", (MPI.SUCCESS, True, True))
    assert outcomes["Start twice"] == ("MPI.Exception", MPI.ERR_REQUEST)
    assert outcomes["Sync_ops in a Start epoch"] == ("MPI.Exception", MPI.ERR_RMA_SYNC)
    assert outcomes["signal a freed counter"] == ("MPI.Exception", MPI.ERR_ARG)
    assert outcomes["Free with an active request"] == ("ok", MPI.ERR_RMA_SYNC)
    assert outcomes["Put after Ibarrier"] == ("ok", nranks - 1)
    assert outcomes["Ibarrier Test loop"] == ("ok", False)
    assert outcomes["Fence bad assertion"] == ("MPI.Exception", MPI.ERR_ASSERT)
    assert outcomes["Ibarrier in Lock_all"] == ("MPI.Exception", MPI.ERR_RMA_SYNC)
    assert outcomes["Fence NOPRECEDE after a Put"] == ("MPI.Exception", MPI.ERR_RMA_SYNC)


@pytest.mark.timeout(120)
@pytest.mark.skipif(atomic.BACKEND != "c", reason="the fallback engine has no C path")
def test_the_c_path_takes_the_common_cases():
    """Start, Wait and Test of the counters' requests, Fence, Barrier and Ibarrier with
    its Wait take no Python path when nothing is wrong and nothing waits long; with the
    fast paths off, every one does."""
    for fast, slow, _ in shmrma.launch(_all_modes, 2, timeout=100):
        for name in ("ring", "per message", "early signals banked", "restart with early "
                     "signals", "Fence", "Barrier", "Ibarrier Wait"):
            assert fast[1][name] == [], (name, fast[1][name])
        assert fast[1]["Start twice"] == ["Start"]      # the second, which raises
        assert "Start" in fast[1]["more early signals than the count"]
        assert "Start" in fast[1]["Sync_ops in a Start epoch"]
        assert "Wait/Test" in fast[1]["signal a freed counter"]
        assert "barrier entry" in fast[1]["Fence bad assertion"]
        for name in ("ring", "Fence", "Barrier", "Ibarrier Wait"):
            assert slow[1][name], name


@pytest.mark.timeout(60)
@pytest.mark.skipif(atomic.BACKEND != "c", reason="the fallback engine has no C path")
def test_a_sleeping_wait_of_count_2_ends_at_the_second_signal():
    """csrc/rma/counters.c: a Sync_object Wait of count 2 asleep on its counter goes on
    sleeping after the first signal, which leaves the counter at 1 (the signaller
    waits to see it asleep again before the second: a Wait that ended early would
    leave it waiting until the job's timeout), and ends after the second. (That only
    the second signal wakes it, so that it goes to sleep exactly once, is a count of
    context switches that benchmarks/bench_waits.py measures.)"""
    def body():
        import time
        from shmrma import _native
        from shmrma.p2p import request
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8, 8, comm=comm)
        sync = comm.bcast(win.Alloc_sync_objects(1)[0] if comm.rank == 0 else None)
        address = win._s.counters.address(sync, "test")
        out = None
        if comm.rank == 0:
            atomic.set_wait_params(0, 0)     # no spin, no yield: sleep at once
            # one long wait slice: the C path waits all along
            _native.counters_setup(counters.OFF_GENERATION, 5.0, request.Request.Wait,
                                   request.Request.Test)
            waiting = win.Sync_object_init(sync, 2)
            waiting.Start()
            comm.Barrier()
            waiting.Wait()
            out = time.monotonic()
            waiting.Free()
        else:
            signal = win.Sync_ops_init(0, 0, sync)
            comm.Barrier()
            for _ in range(2):
                while atomic.load32(address + 4) == 0:  # the wait cell's sleepers
                    pass
                time.sleep(0.02)        # a wrongly woken waiter is back asleep by now
                out = time.monotonic()
                signal.Start()
                signal.Wait()
            signal.Free()
        comm.Barrier()
        win.Free_sync_objects([sync] if comm.rank == 0 else [])
        win.Free()
        return out
    wait_returned, second_signal = shmrma.launch(body, 2, timeout=50)
    assert wait_returned >= second_signal   # the one clock of the machine: an order
