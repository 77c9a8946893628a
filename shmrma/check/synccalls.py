"""The race checker's wrappers around the window synchronization calls (Fence, the
window barrier, PSCW, Lock and Unlock, Flush, Sync), window creation, Attach and
Detach, Change_comm and the synchronization counters: each releases or acquires the
vector clock that the synchronization carries (MPI-3.1 §11.5).

Each wrapper runs the real call first where the call may fail (a call that raised
made no access and no synchronization), and releases before the real call where
another rank may act on it at once (a Post, a Complete, a counter's signal), so the
matching acquire always finds the clock it needs.
"""
import functools
import operator
import zlib

from ..core import constants
from ..rma import dynamic
from ..rma.epoch import HELD_EXCLUSIVE
from ..types import memory
from . import loads, report, threads
from .clock import clock, key_of
from .completion import on_completion
from .windowcheck import (BARRIER, COMPLETE, COUNTER, FENCE, POST, check_of,
                          checked_window)


# --- window synchronization ----------------------------------------------------------

def install_window_sync(Win):
    from ..rma.passive import HELD_SHARED, LOCK_EXCLUSIVE
    real = {name: getattr(Win, name) for name in (
        "Fence", "Barrier", "Ibarrier", "Start", "Complete", "Post", "Wait", "Test", "Lock",
        "Unlock", "Lock_all", "Unlock_all", "Flush", "Flush_all", "Flush_local",
        "Flush_local_all", "Sync")}

    def Fence(self, assertion=0):
        check = check_of(self)
        if check is None:
            return real["Fence"](self, assertion)
        check.complete_locally()
        check.complete(check.everyone())       # a Fence completes every RMA of the epoch
        check.barrier_epoch = False
        seq, check.fences = check.fences, check.fences + 1
        check.release_all(FENCE, seq)
        real["Fence"](self, assertion)
        check.acquire_all(FENCE, seq)

    def Barrier(self, assertion=0):
        check = check_of(self)
        if check is None:
            return real["Barrier"](self, assertion)
        seq, check.barriers = check.barriers, check.barriers + 1
        check.complete_locally()
        check.complete(check.everyone())       # earlier RMA are complete at their targets
        check.barrier_epoch = True
        check.release_all(BARRIER, seq)
        real["Barrier"](self, assertion)
        check.acquire_all(BARRIER, seq)

    def Ibarrier(self, assertion=0):
        check = check_of(self)
        if check is None:
            return real["Ibarrier"](self, assertion)
        seq = check.barriers
        check.complete_locally()               # at the call (R167)
        check.complete(check.everyone())       # at the request's completion, R168
        check.release_all(BARRIER, seq)        # before the window is posted
        request = real["Ibarrier"](self, assertion)
        check.barriers += 1
        check.barrier_epoch = True
        check.entered = (seq, set())

        def completed():
            check.entered = None
            clock().look_at_stores()
            check.acquire_all(BARRIER, seq)
        on_completion(request, completed)
        return request

    def Post(self, group, assertion=0):
        check = check_of(self)
        if check is None:
            return real["Post"](self, group, assertion)
        origins = check.state.window_ranks(group, "Post")
        c = clock()
        for origin in origins:
            c.release(check.key(POST, check.me, origin, check.posts[origin]))
        real["Post"](self, group, assertion)
        for origin in origins:
            check.posts[origin] += 1
        check.post_group = list(origins)

    def Start(self, group, assertion=0):
        real["Start"](self, group, assertion)
        check = check_of(self)
        if check is None:
            return
        check.start_group = list(check.state.window_ranks(group, "Start"))
        c = clock()
        c.look_at_stores()
        for target in check.start_group:
            c.acquire_waiting(check.world[target],
                              check.key(POST, target, check.me, check.starts[target]),
                              "the race checker's record of rank %d's Post" % target)
            check.starts[target] += 1

    def Complete(self):
        check = check_of(self)
        if check is None:
            return real["Complete"](self)
        targets = check.start_group
        check.complete_locally(targets)
        check.complete(targets)
        c = clock()
        for target in targets:
            c.release(check.key(COMPLETE, check.me, target, check.completes[target]))
        real["Complete"](self)
        for target in targets:
            check.completes[target] += 1
        check.start_group = []

    def end_exposure(check):
        c = clock()
        c.look_at_stores()
        for origin in check.post_group:
            c.acquire(check.world[origin],
                      check.key(COMPLETE, origin, check.me, check.waits[origin]))
            check.waits[origin] += 1
        check.post_group = []

    def Wait(self):
        real["Wait"](self)
        check = check_of(self)
        if check is not None:
            end_exposure(check)

    def Test(self):
        done = real["Test"](self)
        check = check_of(self)
        if done and check is not None:
            end_exposure(check)
        return done

    def look_at_own_memory(check, rank=None):
        """Loads and stores made before a lock epoch on this rank's own memory (on any
        rank's, of a shared window), or in it, are recorded as such (stores.py,
        loads.py). With several threads taking part, at every lock epoch: the page
        watch sees the first access to a page after each look, and another thread's
        access after this one's is then seen too (a Get filling this rank's memory
        from one thread, a load of it from another)."""
        if check is not None and (rank in (None, check.me) or check.loads is not None
                                  and check.loads.shared or threads.several):
            check.look_local()

    def Lock(self, rank, lock_type=LOCK_EXCLUSIVE, assertion=0):
        look_at_own_memory(check_of(self), rank)
        real["Lock"](self, rank, lock_type, assertion)
        check = check_of(self)
        if check is None or rank == constants.PROC_NULL:
            return
        rank = operator.index(rank)
        from ..rma.assertions import MODE_NOCHECK
        # exclusive epochs are compared by exclusion, not by the order the lock
        # happened to give them (accesses.py): no clock moves here
        check.locks[rank] = (HELD_SHARED if assertion & MODE_NOCHECK
                             else HELD_EXCLUSIVE if lock_type == LOCK_EXCLUSIVE
                             else HELD_SHARED)

    def Unlock(self, rank):
        check = check_of(self)
        if check is None or rank == constants.PROC_NULL or rank not in check.locks:
            return real["Unlock"](self, rank)
        rank = operator.index(rank)
        # the origin buffers' compare reads them (maybe window memory) before the look
        # takes the pages away: a read after it would hide the program's next access
        check.complete_locally([rank])
        look_at_own_memory(check, rank)
        check.complete([rank])
        real["Unlock"](self, rank)
        del check.locks[rank]

    def Lock_all(self, assertion=0):
        look_at_own_memory(check_of(self))
        real["Lock_all"](self, assertion)
        check = check_of(self)
        if check is None:
            return
        check.lock_all = HELD_SHARED

    def Unlock_all(self):
        check = check_of(self)
        if check is None:
            return real["Unlock_all"](self)
        check.complete_locally()
        look_at_own_memory(check)
        check.complete(check.everyone())
        real["Unlock_all"](self)
        check.lock_all = None

    def flush(name, at_target):
        """A Flush call: it completes the caller's RMA locally, and at the target too
        unless it is a Flush_local (R109)."""
        def flush_call(self, *rank):
            real[name](self, *rank)
            check = check_of(self)
            if check is None or rank and rank[0] == constants.PROC_NULL:
                return
            targets = [operator.index(rank[0])] if rank else None
            check.complete_locally(targets)
            if at_target:
                check.complete(targets or check.everyone())
        flush_call.__name__ = name
        return flush_call

    Flush, Flush_all = flush("Flush", True), flush("Flush_all", True)
    Flush_local, Flush_local_all = flush("Flush_local", False), flush("Flush_local_all", False)

    def Sync(self):
        real["Sync"](self)
        check = check_of(self)
        if check is not None:   # from now on its loads may see any atomic on its words
            clock().watch(check.observe_local)
            check.synced = True

    for function in (Fence, Barrier, Ibarrier, Post, Start, Complete, Wait, Test, Lock, Unlock,
                     Lock_all, Unlock_all, Flush, Flush_all, Flush_local, Flush_local_all,
                     Sync):
        setattr(Win, function.__name__, functools.wraps(real[function.__name__])(function))


def install_attach(Win):
    """A dynamic window's loads are watched in the regions its rank attached, from
    the Attach to the Detach (loads.py)."""
    attach, detach = Win.Attach, Win.Detach

    def Attach(self, memory_object):
        attach(self, memory_object)
        check = check_of(self)
        if check is not None:
            address, nbytes, _ = dynamic.describe(memory_object)
            if check.stores is not None:
                check.stores.attached(address, nbytes)
            check.loads = loads.Loads.attached(check, address, nbytes)
            if check.loads is not None or check.stores is not None:
                check.look_from_now()

    def Detach(self, memory_object):
        check = check_of(self)
        if check is not None and (check.loads is not None or check.stores is not None):
            check.look_local()          # the loads and stores of the region so far
            address = memory.get_address(memory_object)
            for watch in (check.loads, check.stores):
                if watch is not None:
                    watch.detached(address)
        detach(self, memory_object)
    Win.Attach = functools.wraps(attach)(Attach)
    Win.Detach = functools.wraps(detach)(Detach)


def install_creation(Win):
    for name in ("Allocate", "Allocate_shared", "Create", "Create_dynamic"):
        made = getattr(Win, name).__func__

        def create(cls, *args, _made=made, **kwargs):
            win = _made(cls, *args, **kwargs)
            win._race_check = checked_window(win, report.call_site())
            return win
        setattr(Win, name, classmethod(functools.wraps(made)(create)))
    install_attach(Win)
    free = Win.Free

    def Free(self):
        check = check_of(self)
        if check is not None:
            check.look_local()      # the loads and stores since the rank's last call
            check.close()
        free(self)
    Win.Free = functools.wraps(free)(Free)
    change = Win.Change_comm

    def Change_comm(self, new_comm, peer_rank):
        """The window's check starts over in the new group (its log is laid out for
        the old one): collective over it, as the change is. Change_comm needs every
        epoch closed (R164), so what came before is ordered before what comes after."""
        check, site = check_of(self), report.call_site()
        result = change(self, new_comm, peer_rank)
        if check is not None:
            check.close()
        if getattr(result, "_state", None) is not None:
            result._race_check = checked_window(result, site)
        return result
    Win.Change_comm = functools.wraps(change)(Change_comm)


# --- synchronization counters -------------------------------------------------------

def _counter_key(sync):
    return key_of(COUNTER, zlib.crc32(sync.segment.encode()), sync.slot, sync.generation)


def install_counters(Win):
    from ..rma import counters
    ops_init, object_init = Win.Sync_ops_init, Win.Sync_object_init

    def Sync_ops_init(self, target_rank, sync_mode, sync_counter, info=None):
        request = ops_init(self, target_rank, sync_mode, sync_counter, info)
        check = check_of(self)
        if check is not None:
            request._race_signal = (check, target_rank, request._mode,
                                    _counter_key(sync_counter))
        return request

    def Sync_object_init(self, sync_counter, count, info=None):
        request = object_init(self, sync_counter, count, info)
        check = check_of(self)
        if check is not None:
            request._race_counter = (check, _counter_key(sync_counter))
        return request

    Win.Sync_ops_init = functools.wraps(ops_init)(Sync_ops_init)
    Win.Sync_object_init = functools.wraps(object_init)(Sync_object_init)

    def signalling(request):
        signal = getattr(request, "_race_signal", None)
        if signal is not None and request._active:
            check, target, mode, key = signal
            if mode:    # a pure notification completes no RMA
                check.complete_locally((target,), mode)
            check.signal(target, mode, key)

    def signalled(request):
        waited = getattr(request, "_race_counter", None)
        if waited is not None:
            check, key = waited
            c = clock()
            c.look_at_stores()
            c.join_cells(check.others, key)

    cls = counters.SyncOpsRequest
    wait, test = cls.Wait, cls.Test

    def Wait(self, status=None):
        signalling(self)
        return wait(self, status)

    def Test(self, status=None):
        signalling(self)
        return test(self, status)
    cls.Wait, cls.Test = Wait, Test

    cls = counters.SyncObjectRequest
    object_wait, object_test = cls.Wait, cls.Test

    def ObjectWait(self, status=None):
        result = object_wait(self, status)
        signalled(self)
        return result

    def ObjectTest(self, status=None):
        done = object_test(self, status)
        if done:
            signalled(self)
        return done
    cls.Wait, cls.Test = ObjectWait, ObjectTest
