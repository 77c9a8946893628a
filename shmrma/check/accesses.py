"""The RMA accesses of one window, per target rank, in a segment its ranks share.

A record is one contiguous byte range of one call at one target: who issued it
(world rank), what it did (``kind``, op, basic type), where (code site), in which
epoch, and its *stamp*: PENDING until the origin completes it at the target
(Flush, Unlock, Complete, Fence, a counter's signal, an Rget's Wait), then the
origin's epoch at that moment. A record of rank o is ordered before the current
point of rank s when ``vc_s[o] >= stamp``; for o itself, when it is complete.

Two overlapping records conflict when one writes, they are not both atomic
accumulate-class accesses allowed to run concurrently, and neither is ordered
before the other. Accumulate-class accesses are atomic together element by
element (MPI-3.1 §11.7.1): of the same basic type, on elements that coincide
(two MPI.INT accumulates at bytes 0 and 1 of a window of disp_unit 1 overlap
without being the same elements: a race), and with the same op or NO_OP for
Accumulate (Get_accumulate, Fetch_and_op and Compare_and_swap among
themselves). Those of one origin are ordered among themselves per datatype
(§11.7.2, accumulate_ordering): two of different basic types from one origin to
the same bytes race unless the first was completed before the second.

Each target's records are changed under that target's checking lock, so of two
concurrent accesses the second always sees the first.
"""
import contextlib

from ..core import atomic, job
from ..core.lazy import numpy

try:        # the scan, add and complete in C (csrc/check/racecheck.c); numpy below otherwise
    from .. import _racecheck
except ImportError:
    _racecheck = None

PENDING = 2**62
# the epoch an access was made in (Access.epoch; report.py names each)
NO_EPOCH, FENCE, PSCW, LOCK_EXCLUSIVE, LOCK_SHARED, LOCK_ALL, COUNTER, BARRIER = range(8)
EXPOSURE = 8        # a target's own load or store between its Post and Wait
CACHE_LINE = 64           # the target's lock cell and record count
# STORE: a target's own store to its window memory (stores.py), complete when made;
# LOAD: a rank's load of window memory (loads.py), likewise; LOCAL_STORE: its store
# to a shared window's memory, seen where it was made (loads.py). Below every RMA
# kind: never atomic.
STORE, PUT, GET, ACCUMULATE, GET_ACCUMULATE, FETCH_AND_OP, COMPARE_AND_SWAP = range(7)
LOAD, LOCAL_STORE = -1, -2
CALL_NAMES = {LOAD: "Load", LOCAL_STORE: "Store", STORE: "Store", PUT: "Put", GET: "Get",
              ACCUMULATE: "Accumulate", GET_ACCUMULATE: "Get_accumulate",
              FETCH_AND_OP: "Fetch_and_op", COMPARE_AND_SWAP: "Compare_and_swap"}
READ, WRITTEN = 0, 1        # a call's buffer: read by the call (origin), or filled (result)
NO_OP_CODE = -1          # the op code of NO_OP (a read)
# a record's basic type code (windowcheck.basic_code): its name's hash in the low
# bits, its size in bytes from SIZE_SHIFT up (0: unknown, any alignment)
SIZE_SHIFT, NAME_MASK, MAX_SIZE = 24, (1 << 24) - 1, 63
CAPACITY = 4096          # records per target before pruning
ATOMICS = 256            # words per target used as flags or locks through atomics
ATOMIC_BYTES = 16        # an accumulate-class access of at most one element synchronizes
# a record, as csrc/check/check.h's struct record: every 8-byte field first, no padding
RECORD_FIELDS = [("low", "<i8"), ("high", "<i8"), ("stamp", "<i8"), ("origin", "<i4"),
                 ("kind", "<i4"), ("op", "<i4"), ("basic", "<i4"), ("site", "<i4"),
                 ("epoch", "<i4")]
RECORD_BYTES = 48


def record_dtype():
    """The numpy dtype of a record (made on first use: numpy loads only when needed)."""
    return numpy.dtype(RECORD_FIELDS)


def segment_bytes(nranks, width):
    """A window's log: per target of its ``nranks``, the records and the clocks
    (``width`` entries: the job's slots, clock.py) of the words used as flags."""
    return nranks * _target_bytes(nranks, width)


def _target_bytes(nranks, width):
    cells = ATOMICS * (1 + width) * 8
    return -(-(CACHE_LINE + CAPACITY * RECORD_BYTES + cells) // CACHE_LINE) * CACHE_LINE


class Access:
    """What one call did at one target: its byte runs (sorted, disjoint) and kind."""

    __slots__ = ("lows", "highs", "kind", "op", "basic", "site", "epoch")

    def __init__(self, lows, highs, kind, op, basic, site, epoch):
        self.lows, self.highs = lows, highs
        self.kind, self.op, self.basic, self.site, self.epoch = kind, op, basic, site, epoch

    @property
    def writes(self):
        return writes(self.kind, self.op)


# the kinds that write the target: always, or unless their op is NO_OP (a read)
_WRITING = (STORE, LOCAL_STORE, PUT, ACCUMULATE, COMPARE_AND_SWAP)
_WRITING_UNLESS_NO_OP = (GET_ACCUMULATE, FETCH_AND_OP)


def writes(kind, op):
    """Whether an access of ``kind`` with op code ``op`` writes the target."""
    return kind in _WRITING or (kind in _WRITING_UNLESS_NO_OP and op != NO_OP_CODE)


def _writes(kinds, ops):
    """writes() over arrays of records' kinds and ops."""
    return numpy.isin(kinds, _WRITING) | (numpy.isin(kinds, _WRITING_UNLESS_NO_OP)
                                          & (ops != NO_OP_CODE))


class WindowLog:
    """The access records of one window, in its checking segment."""

    def __init__(self, segment, world_ranks, width, on_full=lambda: None):
        self.segment, self.world_ranks = segment, world_ranks
        self.on_full = on_full          # told when the oldest records had to go
        n = len(world_ranks)
        self.stride = _target_bytes(n, width)
        self.records, self.atomics = [], []
        for target in range(n):
            start = target * self.stride
            self.records.append(numpy.ndarray((CAPACITY,), record_dtype(), segment.buffer,
                                              start + CACHE_LINE))
            self.atomics.append(numpy.ndarray((ATOMICS, 1 + width), numpy.int64,
                                              segment.buffer,
                                              start + CACHE_LINE + CAPACITY * RECORD_BYTES))
        self.none = [records[:0] for records in self.records]   # no racing records
        # per target, (its records, count cell, lock cell) addresses, as C takes them
        self.cells = [(self._records_address(t), self._count_cell(t), self._lock_cell(t))
                      for t in range(n)]

    def lock_cell(self, target):
        return self._lock_cell(target)

    def _lock_cell(self, target):
        return self.segment.address + target * self.stride

    def _count_cell(self, target):
        return self.segment.address + target * self.stride + 8

    def _records_address(self, target):
        return self.segment.address + target * self.stride + CACHE_LINE

    def locked(self, target):
        return _TargetLock(self._lock_cell(target), self.world_ranks)

    def rows(self, target):
        return self.records[target][:atomic.load64(self._count_cell(target))]

    def conflicts(self, target, me, vc, access, vc_address=None):
        """The records that race with ``access`` by world rank ``me`` whose clock is
        ``vc`` (at ``vc_address`` when known), the log's lock held."""
        if _native is None:
            return self.conflicts_numpy(target, me, vc, access)
        count = atomic.load64(self._count_cell(target))
        found = _native.scan(self._records_address(target), count, access.lows,
                             access.highs, access.kind, access.op, access.basic, access.site,
                             access.epoch, me, vc_address or vc.ctypes.data)
        return self.records[target][found] if found else self.none[target]

    def conflicts_numpy(self, target, me, vc, access):
        rows = self.rows(target)
        if not len(rows):
            return rows
        # the first run ending after each record's start; it overlaps if it starts before its end
        at = numpy.searchsorted(access.highs, rows["low"], side="right")
        inside = at < len(access.lows)
        overlap = numpy.zeros(len(rows), bool)
        overlap[inside] = access.lows[at[inside]] < rows["high"][inside]
        if not overlap.any():
            return rows[:0]
        rows, at = rows[overlap], at[overlap]
        writes = _writes(rows["kind"], rows["op"]) | access.writes
        both_atomic = (rows["kind"] >= ACCUMULATE) & (access.kind >= ACCUMULATE)
        same_basic = rows["basic"] == access.basic
        size = max((access.basic >> SIZE_SHIFT) & MAX_SIZE, 1)
        coincide = (access.lows[at] - rows["low"]) % size == 0
        allowed = both_atomic & same_basic & coincide & (
            (rows["op"] == access.op) | (rows["op"] == NO_OP_CODE) | (access.op == NO_OP_CODE)
            | ((rows["kind"] > ACCUMULATE) & (access.kind > ACCUMULATE)))
        # an exclusive lock epoch excludes every other lock epoch on its target
        locked = (rows["epoch"] >= LOCK_EXCLUSIVE) & (rows["epoch"] <= LOCK_ALL)
        if access.epoch == LOCK_EXCLUSIVE:
            allowed |= locked & (rows["origin"] != me)
        elif LOCK_EXCLUSIVE <= access.epoch <= LOCK_ALL:
            allowed |= (rows["epoch"] == LOCK_EXCLUSIVE) & (rows["origin"] != me)
        mine = rows["origin"] == me
        ordered = numpy.where(mine, (rows["stamp"] != PENDING) | (both_atomic & same_basic),
                              vc[rows["origin"]] >= rows["stamp"])
        return rows[writes & ~allowed & ~ordered]

    # An atomic on one word is a release and an acquire of that word: a flag set with
    # Accumulate or Fetch_and_op and polled with Fetch_and_op(NO_OP), or a lock taken
    # with Compare_and_swap (Example 11.20), orders what each side completed before it.
    # The release goes before the real call, the acquire after, so an acquirer that saw
    # the word changed also sees the clock.
    def _word_cell(self, target, lows, highs, kind):
        if kind < ACCUMULATE or highs[-1] - lows[0] > ATOMIC_BYTES:
            return None
        table, word = self.atomics[target], int(lows[0]) + 1
        for probe in range(ATOMICS):
            cell = table[(word + probe) % ATOMICS]
            if cell[0] in (0, word):
                cell[0] = word
                return cell
        return None

    @staticmethod
    def synchronizes(lows, highs, kind):
        """Whether an access is an atomic on one word, which orders as a release and
        an acquire of that word."""
        return kind >= ACCUMULATE and highs[-1] - lows[0] <= ATOMIC_BYTES

    def release_word(self, target, lows, highs, kind, vc):
        """Merge ``vc`` into the word's clock, before the atomic is performed (the
        target's lock held)."""
        cell = self._word_cell(target, lows, highs, kind)
        if cell is not None:
            numpy.maximum(cell[1:], vc, out=cell[1:])

    def acquire_word(self, target, access, vc):
        """Join the word's clock into ``vc`` (lock held): an atomic read of a flag.
        The clock before, when the join changed it, else None (most atomics of a
        rank on a word it used already: nothing to judge again)."""
        cell = self._word_cell(target, access.lows, access.highs, access.kind)
        if cell is None or not (cell[1:] > vc).any():
            return None
        before = vc.copy()
        numpy.maximum(vc, cell[1:], out=vc)
        return before

    def acquire_words(self, target, vc, me):
        """The target's own loads after Win.Sync (R131), which the checker cannot
        see, as mpi4py.util.sync's spin loops make them: join the clock of every word
        of its memory an atomic reached, and take those atomics as seen, so its own
        atomics on the word come after them, whatever their op (R140)."""
        with self.locked(target):
            table = self.atomics[target]
            for cell in table[numpy.flatnonzero(table[:, 0])]:
                numpy.maximum(vc, cell[1:], out=vc)
                rows = self.rows(target)
                seen = ((rows["low"] == cell[0] - 1) & (rows["kind"] >= ACCUMULATE)
                        & (rows["origin"] != me))
                if seen.any():
                    rows["stamp"][seen] = numpy.minimum(rows["stamp"][seen],
                                                        cell[1:][rows["origin"][seen]])

    def _with_plain_stores(self, target, me, before, access, races):
        """The races of an atomic on one word, the plain stores to that word judged by
        the clock the atomic had before it joined the word's. The word's atomics
        order what their callers completed before them for whoever reads the word
        after (a flag, a lock), but a plain store to the word itself is no part of
        that chain: it reaches the public copy at its owner's next Unlock, Fence,
        Post or Win.Sync (MPI-3.1 §11.7, rule 6), not at an atomic. So a store that
        only the word's own atomics order before another rank's atomic races with
        it in every run, whichever came first (a counter its owner sets with a
        store while the others may already update it: mpi4py's demo
        nxtval-mpi3.py); a Barrier, a Fence or a message orders it."""
        plain = self.conflicts_numpy(target, me, before, access)
        plain = plain[(plain["kind"] == STORE) | (plain["kind"] == LOCAL_STORE)]
        if not len(plain):
            return races
        others = races[(races["kind"] != STORE) & (races["kind"] != LOCAL_STORE)]
        return numpy.concatenate((others, plain))

    def record(self, target, me, access, vc, vc_address, prune, locked=False):
        """Check and record an access by world rank ``me`` whose clock is ``vc``: the
        records it races with. In C when it can (not an atomic on one word, whose
        clock is joined first; the lock free within a few tries; room in the log),
        else here, waiting for the lock (``locked``: held already) and pruning a full
        log."""
        if _native is not None and not locked and not self.synchronizes(
                access.lows, access.highs, access.kind):
            found = _native.record(self._records_address(target), self._count_cell(target),
                                   access.lows, access.highs, access.kind, access.op,
                                   access.basic, access.site, access.epoch, me,
                                   self._lock_cell(target), vc_address, CAPACITY)
            if found is not None:
                return self.records[target][found] if found else self.none[target]
        with contextlib.nullcontext() if locked else self.locked(target):
            before = self.acquire_word(target, access, vc)
            races = self.conflicts(target, me, vc, access, vc_address)
            if before is not None:
                races = self._with_plain_stores(target, me, before, access, races)
            if not self.add(target, me, access, prune):
                self.on_full()
                self.keep(target, self.rows(target), slice(CAPACITY // 2, None))
                self.add(target, me, access, prune)
        return races

    def shadowed(self, target, me, access, vc_address, addresses, unseen, writes, perform,
                 source=None):
        """record() in C with the call inside the target's lock, keeping its shadow
        (csrc/check/racecheck.c's shadowed): None when C declines, having done nothing,
        else (the call's result, the racing records or None when the log is full,
        the run of a store the target had not looked at, or None)."""
        if _native is None or self.synchronizes(access.lows, access.highs, access.kind):
            return None
        done = _native.shadowed(self._records_address(target), self._count_cell(target),
                                access.lows, access.highs, access.kind, access.op,
                                access.basic, access.site, access.epoch, me,
                                self._lock_cell(target), vc_address, CAPACITY, *addresses,
                                unseen, writes, perform, source)
        if done is None:
            return None
        result, found, run = done
        if found is not None:
            found = self.records[target][found] if found else self.none[target]
        return result, found, run

    def add(self, target, me, access, prune, stamp=PENDING):
        """Record the access (lock held), pending or (a store) complete with ``stamp``;
        False when the log has no room even pruned."""
        if _native is None:
            return self.add_numpy(target, me, access, prune, stamp)
        for attempt in range(2):
            count = _native.add(self._records_address(target),
                                atomic.load64(self._count_cell(target)), access.lows,
                                access.highs, access.kind, access.op, access.basic,
                                access.site, access.epoch, me, CAPACITY, stamp)
            if count >= 0:
                atomic.store64(self._count_cell(target), count)
                return True
            if not attempt:
                prune(target, self.rows(target))
        return False

    def written_pages(self, target, me, first, page, pages):
        """A flag per page of ``target``'s memory (``page`` bytes each from byte
        ``first``) that records of other origins than ``me`` write, read without the
        lock (a hint, loads.py); None without C."""
        if _native is None:
            return None
        return _native.written_pages(self._records_address(target),
                                     atomic.load64(self._count_cell(target)), me, first, page,
                                     pages)

    def add_local(self, target, me, local, vc, vc_address, stamp, seen, prune):
        """Record the stores or loads (``local.kind``) of rank ``me`` to its memory
        (``target``), made in epoch ``stamp``, after forgetting its records of that
        kind stamped ``seen`` or earlier (every rank is ordered after them); the
        records they race with."""
        if _native is not None:
            found = _native.stores(self._records_address(target), self._count_cell(target),
                                   local.lows, local.highs, local.kind, local.epoch,
                                   local.site, me, self._lock_cell(target), vc_address,
                                   CAPACITY, stamp, seen)
            if found is not None:
                return self.records[target][found] if found else self.none[target]
        with self.locked(target):
            rows = self.rows(target)
            gone = ((rows["kind"] == local.kind) & (rows["origin"] == me)
                    & (rows["stamp"] <= seen))
            if gone.any():
                self.keep(target, rows, ~gone)
            races = self.conflicts(target, me, vc, local, vc_address)
            if not self.add(target, me, local, prune, stamp):
                self.on_full()
                self.keep(target, self.rows(target), slice(CAPACITY // 2, None))
                self.add(target, me, local, prune, stamp)
            return races.copy()

    def add_numpy(self, target, me, access, prune, stamp=PENDING):
        """Append the access's runs as pending records (lock held). A repeat of a
        recorded access (a polling loop) renews that record instead: a later access
        races with whatever the earlier one raced with, and reports the same sites;
        one that continues the last record (a loop over elements) extends it."""
        count = atomic.load64(self._count_cell(target))
        runs = len(access.lows)
        if runs == 1 and count:
            rows = self.records[target][:count]
            same = numpy.flatnonzero(
                (rows["low"] == access.lows[0]) & (rows["high"] == access.highs[0])
                & (rows["origin"] == me) & (rows["site"] == access.site)
                & (rows["kind"] == access.kind) & (rows["op"] == access.op)
                & (rows["epoch"] == access.epoch))
            if len(same):
                rows["stamp"][same[0]] = stamp
                return True
            last = rows[-1]     # a loop over consecutive elements: one record
            if (last["high"] == access.lows[0] and last["origin"] == me
                    and last["stamp"] == stamp and last["site"] == access.site
                    and last["kind"] == access.kind and last["op"] == access.op
                    and last["basic"] == access.basic and last["epoch"] == access.epoch):
                last["high"] = access.highs[0]
                return True
        if count + runs > CAPACITY:
            count = prune(target, self.rows(target))
            if count + runs > CAPACITY:
                return False
        new = self.records[target][count:count + runs]
        new["low"], new["high"] = access.lows, access.highs
        new["stamp"], new["origin"], new["kind"] = stamp, me, access.kind
        new["op"], new["basic"], new["site"], new["epoch"] = (access.op, access.basic,
                                                              access.site, access.epoch)
        atomic.store64(self._count_cell(target), count + runs)
        return True

    def keep(self, target, rows, keep):
        """Keep only the rows marked ``keep`` (lock held); returns the new count."""
        kept = rows[keep].copy()
        self.records[target][:len(kept)] = kept
        atomic.store64(self._count_cell(target), len(kept))
        return len(kept)

    def complete(self, target, me, epoch, modes=7, only=None):
        """Stamp this rank's pending records at ``target`` of the kinds in ``modes``;
        with ``only`` (low, high, kind), just those of one request's access."""
        if _native is not None and _native.complete_locked(*self.cells[target], me, epoch,
                                                           modes, *(only or ())):
            return
        with self.locked(target):
            if _native is not None:
                _native.complete(self._records_address(target),
                                 atomic.load64(self._count_cell(target)), me, epoch, modes,
                                 *(only or ()))
                return
            rows = self.rows(target)
            if not len(rows):
                return
            kinds = rows["kind"]
            covered = numpy.where(kinds == PUT, modes & 1, numpy.where(kinds == GET, modes & 2,
                                                                       modes & 4)) != 0
            if only is not None:
                low, high, kind = only
                covered &= (kinds == kind) & (rows["low"] >= low) & (rows["high"] <= high)
            due = (rows["origin"] == me) & (rows["stamp"] == PENDING) & covered
            rows["stamp"][due] = epoch


def diff_native(memory, shadow, nbytes, grain, max_runs, lock_cell):
    """diff() in C under the lock at ``lock_cell``; None when the lock stayed busy or
    C is not there."""
    if _native is None:
        return None
    return _native.diff(memory, shadow, nbytes, grain, max_runs, lock_cell)


def diff(memory, shadow, nbytes, grain, max_runs, lock=None):
    """(lows, highs) of the runs of ``grain``-byte words where memory differs from its
    shadow, the shadow updated on them (csrc/check/racecheck.c's diff; numpy when it is not
    built, without merging), under ``lock`` (a _TargetLock) when given."""
    if _native is not None:
        found = _native.diff(memory, shadow, nbytes, grain, max_runs,
                             lock.cell if lock is not None else 0)
        if found is not None:
            return found
    if lock is not None:
        with lock:
            return diff(memory, shadow, nbytes, grain, max_runs)
    import ctypes
    words = nbytes // grain * grain
    now = numpy.frombuffer((ctypes.c_char * nbytes).from_address(memory), numpy.uint8)
    copy = numpy.frombuffer((ctypes.c_char * nbytes).from_address(shadow), numpy.uint8)
    differ = now != copy
    changed = numpy.flatnonzero(numpy.concatenate((
        differ[:words].reshape(-1, grain).any(axis=1).repeat(grain), differ[words:])))
    copy[changed] = now[changed]
    if not len(changed):
        return [], []
    breaks = numpy.flatnonzero(numpy.diff(changed) != 1) + 1
    return (changed[numpy.concatenate(([0], breaks))].tolist(),
            (changed[numpy.concatenate((breaks - 1, [len(changed) - 1]))] + 1).tolist())


def use_native(enabled):
    """Choose the C access log (when built) or the numpy one; tests compare both."""
    global _native
    _native = _racecheck if enabled else None


_native = None
if _racecheck is not None and atomic.BACKEND == "c":
    _racecheck.setup(PENDING, LOAD, PUT, GET, ACCUMULATE, GET_ACCUMULATE, FETCH_AND_OP,
                     NO_OP_CODE, LOCK_EXCLUSIVE, LOCK_ALL, SIZE_SHIFT, MAX_SIZE)
    _native = _racecheck


class _TargetLock:
    __slots__ = ("cell", "peers")

    def __init__(self, cell, peers):
        self.cell, self.peers = cell, peers

    def __enter__(self):
        while atomic.cas32(self.cell, 0, 1) != 0:
            job.wait_cell(self.cell, 1, "the race checker's lock", self.peers)

    def __exit__(self, *exc):
        atomic.cell_store(self.cell, 0)
