"""Synchronization counters on the mpi backend, in standard MPI-3 calls only.

Each window made through this namespace has a counter window beside it: every rank
allocates ``SHMRMA_SYNC_OBJECTS`` 64-bit words (default 256) with
MPI_Win_allocate, and the counter window stays in a Lock_all epoch from creation
to Free. A word holds a counter and its slot's generation:
``generation * 2**32 + value``, the value a signed 32-bit number, so a handle of
a freed counter is refused (A25) by the same atomic update that would change it.

Only signals change a word remotely: a compare-and-swap, flushed, so a refused
signal changes nothing. It starts from the word this signaller last wrote there
instead of reading first: with one signaller per counter that guess is right, and
a signal costs one round trip, not two.

The owner arms its counters without touching the word: a Start's count is added to
an arming offset only the owner keeps (the owner alone reads a counter's value, to
complete its requests and to refuse a Start with ERR_WIN_COUNTER), so the counter's
value is the word's plus the offset. An offset that grows large is folded into the
word, before the word's value could run out of its 32 bits. Where the MPI says the
counter window's memory model is unified, the owner polls its own words with loads
(R62) and calls MPI_Win_sync once one is ready (R131), as Example 11.21 polls a
flag, not with an atomic and a flush at every look.

Semantics as on shared memory (A14-A18, A23): Start of a Sync_object
request adds its count (early decrements stay banked; ERR_WIN_COUNTER when they
outnumber it); the request completes when the counter is back to <= 0. While a
Sync_ops request covering RMA is active, the user window is in a Lock_all epoch
(the counter epoch, A14); its completion flushes that target, then decrements
the target's counter exactly once (A15). Waiting polls with backoff.
"""
import array
import functools
import operator
import os

import numpy as np
from mpi4py import MPI as _mpi

from ..rma import counters as rules
from ..core import errors as shm
from ..types.synchandle import SYNC_NULL, Sync
from . import errors
from .requests import PyRequest, empty, make_progress

# the RMA kind (MODE_WIN_*) of each call the guard sees by name; any other accumulates
_KIND_OF_CALL = {"Put": rules.MODE_WIN_PUT, "Rput": rules.MODE_WIN_PUT,
                 "Get": rules.MODE_WIN_GET, "Rget": rules.MODE_WIN_GET}

CAPACITY_VARIABLE = "SHMRMA_SYNC_OBJECTS"
DEFAULT_CAPACITY = 256
FOLD_AT = 1 << 30       # an arming offset this large is added to its word
_WORD = _mpi.INT64_T
_ANY, _ANY_TAG = _mpi.ANY_SOURCE, _mpi.ANY_TAG


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


def kind_of_call(name):
    return _KIND_OF_CALL.get(name, rules.MODE_WIN_ACCUMULATE)


def _value(word):
    return ((word + 2**31) & 0xffffffff) - 2**31       # the signed low 32 bits


def _split(word):
    value = _value(word)
    return value, (word - value) >> 32


def _join(value, generation):
    return (generation << 32) + value


def _generation(word):
    return (word + 2**31) >> 32


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
        # an atomic's new, compared and seen words (array items: cheap to set), and
        # their buffer specs
        self._cells = array.array("q", bytes(24))
        cells = memoryview(self._cells)
        self._swap = tuple([cells[i:i + 1], _WORD] for i in range(3))
        self._guess = {}        # (rank, slot) -> the word this rank expects there
        self._drift = {}        # (rank, slot) -> others' signals between two of mine
        self._armed = {}        # my slot -> its arming offset (the module's docstring)
        unified = self.win.Get_attr(_mpi.WIN_MODEL) == _mpi.WIN_UNIFIED
        # my words, as Python ints when indexed
        self._words = memoryview(self.win.tomemory()).cast("B").cast("q") if unified else None
        # Iprobe on it makes progress (MPICH probes a COMM_SELF duplicate locally)
        self._progress = comm.Dup() if unified else None
        self._looks = 0

    def read(self, rank, slot):
        """(value, generation) of a counter's word, read atomically."""
        return _split(self._read_word(rank, slot))

    def value(self, slot):
        """The value of one of my counters: its word's plus its arming offset."""
        words = self._words
        if words is None:
            word = self._read_word(self.rank, slot)
        else:
            # every few looks, progress for the peers' calls that need mine: a Flush
            # of this window (MPICH: Example A3's halo at 4 ranks takes 140 us an iteration
            # with it, 240 without) and an Iprobe, for another window on the
            # communicator (Open MPI's osc/sm counter window makes none)
            self._looks += 1
            if not self._looks & 3:
                self.win.Flush(self.rank)
                self._progress.Iprobe(_ANY, _ANY_TAG)
            word = words[slot]
        value = _value(word) + self._armed.get(slot, 0)
        if value <= 0 and words is not None:
            self.win.Sync()     # what I read after a ready counter is ordered after it (R131)
        return value

    def arm(self, slot, count, value=None):
        """Add ``count`` to my counter (``value``: its value as last read, when the
        arming is ordered right after that read); ERR_WIN_COUNTER, nothing changed,
        when the early signals outnumber it."""
        value = self.value(slot) if value is None else value
        if value + count < 0:
            shm.fail(shm.ERR_WIN_COUNTER, "Start: %d early signals are more than this "
                     "request's count %d; the counter would stay negative" % (-value, count))
        offset = self._armed[slot] = self._armed.get(slot, 0) + count
        if offset >= FOLD_AT:
            self.update(self.rank, slot, lambda word_value, generation: (
                word_value + offset, generation))
            self._armed[slot] = 0

    def disarm(self, slot, count):
        """Take back an arming of ``count``; banked signals stay."""
        self._armed[slot] = self._armed.get(slot, 0) - count

    def _read_word(self, rank, slot):
        make_progress()     # every wait polls here: peers' Flushes may need this rank
        new, _, seen = self._swap
        self.win.Fetch_and_op(new, seen, rank, slot, _mpi.NO_OP)
        self.win.Flush(rank)
        word = self._guess[rank, slot] = self._cells[2]
        return word

    def publish_phase(self, phase):
        """This rank entered window barrier ``phase`` (winbarrier.py)."""
        self._cells[0] = phase
        self.win.Accumulate(self._swap[0], self.rank, self.phase_slot, _mpi.REPLACE)
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
            seen = self._swapped(rank, slot, word, _join(*new))
            if seen == word:
                return new
            word = seen
            new = change(*_split(word))

    def signal(self, rank, slot, generation, refuse):
        """Decrement a counter by one (update() on the word: the hot path), or call
        ``refuse()`` to raise when its slot no longer holds ``generation``.

        The guess is the word this rank wrote there last, less the signals of other
        ranks that came in between the last time (a counter two neighbours signal
        in turn): right in the steady state of such patterns."""
        key = rank, slot
        last, drift = self._guess.get(key), self._drift.get(key, 0)
        word = None if last is None else last - drift
        if word is None or _generation(word) != generation:
            word = self._read_word(rank, slot)
        while _generation(word) == generation:
            seen = self._swapped(rank, slot, word, word - 1)
            if seen == word:
                return
            if last is not None:
                self._drift[key] = last - seen
            word = seen
        refuse()

    def _swapped(self, rank, slot, word, new):
        """Compare-and-swap of one word, flushed: the word seen there (``word``
        when swapped)."""
        cells = self._cells
        cells[0], cells[1] = new, word
        self.win.Compare_and_swap(*self._swap, rank, slot)
        self.win.Flush(rank)
        seen = cells[2]
        self._guess[rank, slot] = new if seen == word else seen
        return seen

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
            self._armed.pop(slot, None)
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
            self._armed.pop(sync.slot, None)
            self.free_slots.append(sync.slot)
            self.allocated -= 1
            syncs[index] = SYNC_NULL

    def close(self):
        if self._words is not None:
            self._words.release()
        self.win.Unlock_all()
        self.win.Free()
        if self._progress is not None:
            self._progress.Free()


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

    def _refuse(self):
        rules.fail_freed("the counter this Sync_ops request signals; nothing was signalled",
                         self._target)

    def _signal(self):
        if self._mode:
            self._owner.Flush(self._target)     # the covered RMA are complete (A15)
        try:
            self._owner._counters.signal(self._target, self.sync.slot, self.sync.generation,
                                         self._refuse)
        except shm.Exception:
            self._deactivate()
            raise
        if not self._restart:
            self._deactivate()

    @errors.translated
    def Wait(self, status=None):
        """Ready at once: the signal is made here (no poll)."""
        if status is not None:
            empty(status)
        if self._active:
            self._signal()
            self._completed = True
        return True

    def _deactivate(self):
        super()._deactivate()
        if self._mode:
            self._owner._close_counter_epoch(self._target, self._mode)


class SyncObjectRequest(_SyncRequest):
    """Sync_object_init: complete when the local counter is back to <= 0."""

    def __init__(self, owner, sync, count, restart):
        super().__init__(owner, sync, restart)
        self._count = count
        self._last = None       # the counter's value at the read that completed it

    def _arm(self):
        self._owner._counters.arm(self.sync.slot, self._count)

    def _stop(self):
        """Take back the re-arming of the last completion; banked signals stay."""
        self._owner._counters.disarm(self.sync.slot, self._count)
        self._deactivate()

    def _ready(self):
        self._last = self._owner._counters.value(self.sync.slot)
        return self._last <= 0

    def _signal(self):
        if not self._restart:
            self._deactivate()
            return
        try:
            # re-armed at once (R163), as if right after the read that completed it;
            # early signals stay banked
            self._owner._counters.arm(self.sync.slot, self._count, self._last)
        except shm.Exception:
            self._deactivate()      # more signals than count came: the request ends
            raise


class CounterCalls:
    """Mixin of the backend's Win: the proposal's calls."""

    _counters = None
    _counter_epochs = 0
    _covered = {}       # target -> the RMA kinds its active Sync_ops requests cover

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
            self._covering, self._covered = {}, {}
        self._counter_epochs += 1
        if target is not None:
            self._covering.setdefault(target, []).append(mode)
            self._cover(target)
        if self._counter_epochs == 1:
            self._update_rma_guard()

    def _close_counter_epoch(self, target=None, mode=0):
        if target is not None:
            self._covering[target].remove(mode)
            self._cover(target)
        self._counter_epochs -= 1
        if not self._counter_epochs:
            self.Unlock_all()
            self._update_rma_guard()

    def _cover(self, target):
        """The RMA guard's mask of the kinds covered at ``target``, from the modes of
        the active Sync_ops requests there."""
        self._covered[target] = functools.reduce(operator.or_, self._covering[target], 0)

    def _refuse_uncovered(self, call, target):
        """ERR_RMA_SYNC for RMA in the counter epoch that no active Sync_ops request to
        its target covers (A14), as on shared memory; MPI's Lock_all would admit it."""
        errors.fail(shm.ERR_RMA_SYNC, "%s to rank %d: the window's epoch is the counter "
                    "epoch of Sync_ops requests, and none active to rank %d has this "
                    "kind of RMA in its sync_mode; start one whose mode includes it"
                    % (call, target, target))

    @errors.translated
    def Alloc_sync_objects(self, n, info=None):
        """Allocate ``n`` synchronization counters of this process; return Sync handles."""
        counters = self._extension("Alloc_sync_objects")
        return counters.allocate(rules.checked_number(n, "Alloc_sync_objects", "n"))

    @errors.translated
    def Free_sync_objects(self, syncs):
        """Free counters this process allocated; each entry of ``syncs`` becomes SYNC_NULL."""
        self._extension("Free_sync_objects").release(syncs)

    @errors.translated
    def Sync_ops_init(self, target_rank, sync_mode, sync_counter, info=None):
        """Create a persistent request that signals ``sync_counter`` of ``target_rank``."""
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
        """Create a persistent request that completes when counter ``sync_counter`` is 0."""
        counters = self._extension("Sync_object_init")
        count = rules.checked_number(count, "Sync_object_init", "count")
        counters.check(sync_counter, "Sync_object_init")
        rules.check_owner(sync_counter, counters.rank, "Sync_object_init")
        return SyncObjectRequest(self, sync_counter, count,
                                 rules.restart_of(info_hints(info), "Sync_object_init"))
