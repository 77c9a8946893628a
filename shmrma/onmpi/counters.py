"""Synchronization counters on the mpi backend, in standard MPI-3 calls only.

Each window made through this namespace has a counter window beside it: every rank
allocates ``SHMRMA_SYNC_OBJECTS`` 64-bit words (default 256) with
MPI_Win_allocate, and the counter window stays in a Lock_all epoch from creation
to Free. A word holds a counter and its slot's generation:
``generation * 2**32 + value``, the value a signed 32-bit number, so a handle of
a freed counter is refused (A25) by the same atomic update that would change it.
Every change is a compare-and-swap loop, each operation flushed, so a refused
change changes nothing. The loop starts from the word this rank last saw there
(a read, or the word before its last change) instead of reading first: in the
usual patterns (a signal taking a re-armed counter from 1 to 0, a Start after a
poll saw 0) that guess is right, and a change costs one round trip, not two.

Semantics as on shared memory (checklist A14-A18, A23): Start of a Sync_object
request adds its count (early decrements stay banked; ERR_WIN_COUNTER when they
outnumber it); the request completes when the counter is back to <= 0. While a
Sync_ops request covering RMA is active, the user window is in a Lock_all epoch
(the counter epoch, A14); its completion flushes that target, then decrements
the target's counter exactly once (A15). Waiting polls with backoff.
"""
import os

import numpy as np
from mpi4py import MPI as _mpi

from .. import counters as rules
from .. import errors as shm
from ..synchandle import SYNC_NULL, Sync
from . import errors
from .requests import PyRequest, empty, make_progress

# the RMA kind (MODE_WIN_*) of each call the guard sees by name; any other accumulates
_KIND_OF_CALL = {"Put": rules.MODE_WIN_PUT, "Rput": rules.MODE_WIN_PUT,
                 "Get": rules.MODE_WIN_GET, "Rget": rules.MODE_WIN_GET}

CAPACITY_VARIABLE = "SHMRMA_SYNC_OBJECTS"
DEFAULT_CAPACITY = 256
_WORD = _mpi.INT64_T


def info_hints(info):
    """A dict of an mpi4py Info (None and INFO_NULL give {}), or the mapping given."""
    if info is None or (isinstance(info, _mpi.Info) and info == _mpi.INFO_NULL):
        return {}
    if isinstance(info, _mpi.Info):
        return dict(info.items())
    return info


def capacity():
    text = os.environ.get(CAPACITY_VARIABLE, str(DEFAULT_CAPACITY))
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        errors.fail(shm.ERR_ARG, "%s=%r: give the number of counters a rank may hold per "
                    "window, a positive integer" % (CAPACITY_VARIABLE, text))
    return value


def _split(word):
    value = ((word + 2**31) % 2**32) - 2**31       # the signed low 32 bits
    return value, (word - value) >> 32


def _join(value, generation):
    return (generation << 32) + value


class CounterWindow:
    """The counters of one user window (see the module's docstring)."""

    def __init__(self, comm, window_id):
        self.id = window_id
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.slots = capacity()
        self.phase_slot = self.slots    # one more word: the window barrier's phase
        self.win = _mpi.Win.Allocate((self.slots + 1) * 8, 8, comm=comm)
        np.frombuffer(self.win.tomemory(), dtype="i8")[:] = 0
        comm.Barrier()
        self.win.Lock_all(_mpi.MODE_NOCHECK)
        self.free_slots = list(reversed(range(self.slots)))
        self.active = {}        # id -> started, uncompleted request (Win.Free checks)
        self.allocated = 0
        self._old = np.zeros(1, dtype="i8")
        self._new = np.zeros(1, dtype="i8")
        self._seen = np.zeros(1, dtype="i8")
        self._guess = {}        # (rank, slot) -> the word this rank expects there

    def read(self, rank, slot):
        """(value, generation) of a counter, read atomically."""
        return _split(self._read_word(rank, slot))

    def _read_word(self, rank, slot):
        make_progress()     # every wait polls here: peers' Flushes may need this rank
        self.win.Fetch_and_op([self._new, _WORD], [self._old, _WORD], rank, slot, _mpi.NO_OP)
        self.win.Flush(rank)
        word = self._guess[rank, slot] = int(self._old[0])
        return word

    def publish_phase(self, phase):
        """This rank entered window barrier ``phase`` (winbarrier.py)."""
        self._new[0] = phase
        self.win.Accumulate([self._new, _WORD], self.rank, self.phase_slot, _mpi.REPLACE)
        self.win.Flush(self.rank)

    def phase_of(self, rank):
        return self.read(rank, self.phase_slot)[0]

    def update(self, rank, slot, change):
        """Replace (value, generation) by ``change(value, generation)`` atomically.

        ``change`` may raise: then nothing was changed. Returns the new pair.
        ``change`` is tried on the guessed word first, so it must not act on what it
        sees beyond raising: a refusal of a guess is checked on a word read."""
        word = self._guess.get((rank, slot))
        if word is not None:
            try:
                new = change(*_split(word))
            except shm.Exception:
                word = None
        if word is None:
            word = self._read_word(rank, slot)
            new = change(*_split(word))
        while True:
            self._old[0], self._new[0] = word, _join(*new)
            self.win.Compare_and_swap([self._new, _WORD], [self._old, _WORD],
                                      [self._seen, _WORD], rank, slot)
            self.win.Flush(rank)
            seen = int(self._seen[0])
            self._guess[rank, slot] = seen
            if seen == word:
                return new
            word = seen
            new = change(*_split(word))

    def check(self, sync, call):
        """ERR_ARG unless ``sync`` names a counter of this window that is still allocated."""
        rules.check_handle(sync, self.id, self.size, call)
        if not 0 <= sync.slot < self.slots or self.read(sync.owner, sync.slot)[1] != \
                sync.generation:
            rules.fail_freed(call, sync.owner)

    def allocate(self, n):
        if n > len(self.free_slots):
            shm.fail(shm.ERR_NO_MEM, "Alloc_sync_objects: %d counters asked, %d of this "
                     "rank's %d left on this window; set %s higher before creating the "
                     "window" % (n, len(self.free_slots), self.slots, CAPACITY_VARIABLE))
        syncs = []
        for _ in range(n):
            slot = self.free_slots.pop()
            _, generation = self.update(self.rank, slot, lambda value, old: (0, old + 1))
            syncs.append(Sync(self.id, self.rank, "mpi", slot, generation))
        self.allocated += n
        return syncs

    def release(self, syncs):
        waited_on = {request.sync.slot for request in self.active.values()
                     if isinstance(request, SyncObjectRequest)}
        for index, sync in enumerate(syncs):
            self.check(sync, "Free_sync_objects")
            if sync.owner != self.rank:
                shm.fail(shm.ERR_ARG, "Free_sync_objects: counter %d was allocated by rank "
                         "%d, not by this rank" % (index, sync.owner))
            if sync.slot in waited_on:
                shm.fail(shm.ERR_RMA_SYNC, "Free_sync_objects: counter %d is waited on by "
                         "an active Sync_object request; complete it first" % index)
        rules.check_listed_once(syncs)
        for index, sync in enumerate(syncs):
            self.update(self.rank, sync.slot, lambda value, generation: (0, generation + 1))
            self.free_slots.append(sync.slot)
            self.allocated -= 1
            syncs[index] = SYNC_NULL

    def close(self):
        self.win.Unlock_all()
        self.win.Free()


class _SyncRequest(PyRequest):
    def __init__(self, owner, sync, restart):
        self._owner, self.sync, self._restart = owner, sync, restart
        self._completed = False

    @errors.translated
    def Start(self):
        if self._freed:
            shm.fail(shm.ERR_REQUEST, "Start on a freed synchronization request")
        if self._active:
            shm.fail(shm.ERR_REQUEST, "Start on an active synchronization request: complete "
                     "it with Wait or Test first")
        counters = self._owner._counters
        if counters is None:
            shm.fail(shm.ERR_WIN, "Start: the window of this request was freed")
        self._arm()
        self._active, self._completed = True, False
        counters.active[id(self)] = self

    def _deactivate(self):
        self._active = False
        self._owner._counters.active.pop(id(self), None)

    @errors.translated
    def Cancel(self):
        shm.fail(shm.ERR_REQUEST, "a synchronization request cannot be cancelled")

    @errors.translated
    def Free(self):
        if self._active and not (self._restart and self._completed):
            shm.fail(shm.ERR_REQUEST, "Free of an active synchronization request: complete "
                     "it with Wait or Test first (a restart request may be freed right "
                     "after a Wait or Test completed it)")
        if self._active:
            self._stop()
        self._freed = True

    def _stop(self):
        """Free of an active request (a restart one, between completions)."""
        self._deactivate()

    Test = errors.translated(PyRequest.Test)
    Wait = errors.translated(PyRequest.Wait)

    def _complete(self, status):
        empty(status)
        self._signal()
        self._completed = True


class SyncOpsRequest(_SyncRequest):
    """Sync_ops_init: flush the covered RMA to the target, then decrement its counter."""

    def __init__(self, owner, target, mode, sync, restart):
        super().__init__(owner, sync, restart)
        self._target, self._mode = target, mode

    def _arm(self):
        if self._mode:
            self._owner._open_counter_epoch(self._target, self._mode)

    def _ready(self):
        return True

    def _signal(self):
        counters, expected = self._owner._counters, self.sync.generation

        def decrement(value, generation):
            if generation != expected:
                rules.fail_freed("the counter this Sync_ops request signals; nothing was "
                                 "signalled", self._target)
            return value - 1, generation
        if self._mode:
            self._owner.Flush(self._target)     # the covered RMA are complete (A15)
        try:
            counters.update(self._target, self.sync.slot, decrement)
        except shm.Exception:
            self._deactivate()
            raise
        if not self._restart:
            self._deactivate()

    def _deactivate(self):
        super()._deactivate()
        if self._mode:
            self._owner._close_counter_epoch(self._target, self._mode)


class SyncObjectRequest(_SyncRequest):
    """Sync_object_init: complete when the local counter is back to <= 0."""

    def __init__(self, owner, sync, count, restart):
        super().__init__(owner, sync, restart)
        self._count = count

    def _arm(self):
        count = self._count

        def add(value, generation):
            if value + count < 0:
                shm.fail(shm.ERR_WIN_COUNTER, "Start: %d early signals are more than this "
                         "request's count %d; the counter would stay negative"
                         % (-value, count))
            return value + count, generation
        self._owner._counters.update(self._owner._counters.rank, self.sync.slot, add)

    def _stop(self):
        """Take back the re-arming of the last completion; banked signals stay."""
        count = self._count
        self._owner._counters.update(self._owner._counters.rank, self.sync.slot,
                                     lambda value, generation: (value - count, generation))
        self._deactivate()

    def _ready(self):
        counters = self._owner._counters
        return counters.read(counters.rank, self.sync.slot)[0] <= 0

    def _signal(self):
        if not self._restart:
            self._deactivate()
            return
        try:
            self._arm()     # re-arm at once (R163); early signals stay banked
        except shm.Exception:
            self._deactivate()      # more signals than count came: the request ends
            raise


class CounterCalls:
    """Mixin of the backend's Win: the proposal's calls."""

    _counters = None
    _counter_epochs = 0

    def _extension(self, call):
        if self._counters is None:
            shm.fail(shm.ERR_WIN, "%s: this window has no counters; on the mpi backend "
                     "only windows made with shmrma's MPI.Win (Create, Allocate, "
                     "Allocate_shared, Create_dynamic) have them" % call)
        return self._counters

    def _open_counter_epoch(self, target=None, mode=0):
        """Into the Lock_all epoch: a Sync_ops request's (target, RMA kinds), or the
        window barrier's (no target: it covers every RMA)."""
        if not self._counter_epochs:
            self.Lock_all(_mpi.MODE_NOCHECK)
            self._covering = {}
        self._counter_epochs += 1
        if target is not None:
            self._covering.setdefault(target, []).append(mode)
        if self._counter_epochs == 1:
            self._update_rma_guard()

    def _close_counter_epoch(self, target=None, mode=0):
        if target is not None:
            self._covering[target].remove(mode)
        self._counter_epochs -= 1
        if not self._counter_epochs:
            self.Unlock_all()
            self._update_rma_guard()

    def _check_covered(self, call, target):
        """ERR_RMA_SYNC for RMA in the counter epoch that no active Sync_ops request to
        its target covers (A14), as on shared memory; MPI's Lock_all would admit it."""
        kind = _KIND_OF_CALL.get(call, rules.MODE_WIN_ACCUMULATE)
        if not any(mode & kind for mode in self._covering.get(target, ())):
            errors.fail(shm.ERR_RMA_SYNC, "%s to rank %d: the window's epoch is the counter "
                        "epoch of Sync_ops requests, and none active to rank %d has this "
                        "kind of RMA in its sync_mode; start one whose mode includes it"
                        % (call, target, target))

    @errors.translated
    def Alloc_sync_objects(self, n, info=None):
        counters = self._extension("Alloc_sync_objects")
        return counters.allocate(rules.checked_number(n, "Alloc_sync_objects", "n"))

    @errors.translated
    def Free_sync_objects(self, syncs):
        self._extension("Free_sync_objects").release(syncs)

    @errors.translated
    def Sync_ops_init(self, target_rank, sync_mode, sync_counter, info=None):
        counters = self._extension("Sync_ops_init")
        target = int(target_rank)
        if not 0 <= target < counters.size:
            shm.fail(shm.ERR_RANK, "Sync_ops_init target_rank: %r is not a rank of the "
                     "window (0..%d)" % (target_rank, counters.size - 1))
        mode = rules.checked_mode(sync_mode)
        counters.check(sync_counter, "Sync_ops_init")
        rules.check_owner(sync_counter, target, "Sync_ops_init")
        return SyncOpsRequest(self, target, mode, sync_counter,
                              rules.restart_of(info_hints(info), "Sync_ops_init"))

    @errors.translated
    def Sync_object_init(self, sync_counter, count, info=None):
        counters = self._extension("Sync_object_init")
        count = rules.checked_number(count, "Sync_object_init", "count")
        counters.check(sync_counter, "Sync_object_init")
        rules.check_owner(sync_counter, counters.rank, "Sync_object_init")
        return SyncObjectRequest(self, sync_counter, count,
                                 rules.restart_of(info_hints(info), "Sync_object_init"))
