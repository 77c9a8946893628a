"""The target's side of the race checker: its own stores to its window memory.

Plain Python stores (``grid[1:-1] = ...`` on ``win.tomemory()``) cannot be
intercepted, so the checker watches the memory instead: a shadow copy of every
rank's window memory lives in a shared segment, RMA that writes brings the shadow
up to date at once (under the target's checking lock), and whatever else makes the
memory differ from its shadow is a store of its owner. The owner looks (csrc
racecheck.c's diff) before each of its releases, at its own Lock and Unlock, and
before it atomically signals, so every store it made is in the log, stamped with
the epoch it was made in, before anything that synchronizes with it: the later
RMA of other ranks are checked against it as against any recorded access. An RMA
that finds a store its owner has not looked at yet (the memory differs from the
shadow on its bytes) races with it: the owner made it in its current epoch,
which no other rank has acquired.

A look that can find nothing returns at once: when the load watch (loads.py) took
every page of the memory away at the last look and none has faulted since, no
access reached it; else when the memory equals its shadow (one memcmp, unlocked).

Checked: the ALLOCATE and CREATE flavors, and the DYNAMIC flavor, whose regions
each get a shadow segment of their own from their Attach to their Detach, listed
in a table per rank (RegionShadows). Not shared windows, whose memory every rank
stores into directly (loads.py watches those). Not seen: loads.

The page watch (loads.py) sees the first store to each page after each look, with
its line, whatever value it wrote: the look records that word as a store at that
line, whether the memory shows it changed or not (a store of the value already
there, or one that another rank's RMA wrote over before the look).
"""
import bisect
import ctypes
import functools
import time
import zlib

from ..core import atomic
from ..core.lazy import numpy
from . import accesses, report, threads
from .accesses import LOCAL_STORE, STORE, Access
from .clock import WARN_STORES, clock, key_of

SHADOW_MAX = 256 << 20      # window bytes, all ranks together, above which stores go unchecked
SLOW_LOOKS = 1.0            # seconds of compares after which a rank says what they cost
MAX_RUNS = 1024             # store runs found at one look before nearby ones merge


class Shadow:
    """The shadow copies of one window's memory, one per rank, in a shared segment."""

    def __init__(self, segment, sizes, me, own_address):
        self.segment, self.me = segment, me
        self.offsets = numpy.concatenate(([0], numpy.cumsum([-(-s // 8) * 8 for s in sizes])))
        self.sizes, self.own_address = sizes, own_address
        self.view = numpy.frombuffer(segment.buffer, numpy.uint8)

    @classmethod
    def of(cls, state):
        """A window's shadow (collective), or None when its stores are not checked."""
        from ..rma.window import WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_CREATE
        from ..core.settings import stores_watched
        sizes = list(state.sizes)
        if not stores_watched():
            return None
        if state.flavor not in (WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_CREATE) or not any(sizes):
            return None
        if sum(sizes) > SHADOW_MAX:
            clock().warn_once("a window holds more than %d MiB; the stores of its ranks to "
                              "their window memory are not checked" % (SHADOW_MAX >> 20))
            return None
        segment = _shared_or_none(state.comm, -(-sum(sizes) // 8) * 8 + 8 * len(sizes))
        if segment is None:
            return None
        return cls(segment, sizes, state.rank, state.targets[state.rank].address)

    def covers(self, target, lows, highs):
        """Whether the runs are inside ``target``'s memory (the others: the real call
        raises ERR_RMA_RANGE)."""
        return 0 <= lows[0] and highs[-1] <= self.sizes[target]

    def own_bytes(self):
        return self.sizes[self.me]

    def own(self):
        """(address, bytes) of this rank's shadow."""
        return self.segment.address + int(self.offsets[self.me]), self.sizes[self.me]

    def of_target(self, target, lows, highs):
        """The shadow bytes of ``target`` at the runs (a view per run)."""
        base = int(self.offsets[target])
        return [self.view[base + int(low):base + int(high)] for low, high in zip(lows, highs)]

    def close(self):
        self.view = None
        self.segment.close()


class Stores:
    """This rank's look at its own window memory, and RMA's part in keeping the
    shadow true (with the window's WindowCheck: its log, name and reports)."""

    def __init__(self, check, shadow):
        """Collective: every rank's shadow holds its memory as created before any
        rank can reach it (a Lock_all right after the creation may)."""
        from ..rma.window import _agree
        self._start(check, shadow)
        self._found_runs(check.log.locked(check.me))
        _agree(check.state.comm, (None, None), "race checking")
        self._addresses = [self._mapped(target) for target in range(len(check.world))]
        shadow_address, nbytes = shadow.own()
        self._diff_args = ((shadow.own_address, shadow_address, nbytes, self.grain, MAX_RUNS,
                            check.log.lock_cell(check.me)) if nbytes else None)
        # unchanged(): whether this rank's memory is as it last looked (no store since,
        # or none it can find): the look would record nothing; one C call, or False
        # (not known) without C
        # (an RMA to the memory holds its lock from before its write until the shadow
        # has it: while the lock is held, memory equal to the shadow proves nothing)
        lock = check.log.lock_cell(check.me)
        self.unchanged = ((lambda same=functools.partial(accesses._native.same,
                                                         *self._diff_args[:3]):
                           not atomic.load32(lock) and same())
                          if nbytes and accesses._native is not None else
                          (lambda: True) if not nbytes else (lambda: False))
        self._look_args = (self._diff_args + check.log.cells[check.me][:2]
                           if nbytes and accesses._native is not None else None)

    def _start(self, check, shadow):
        self.check, self.shadow = check, shadow
        # covers(target, lows, highs): whether the stores to those bytes are checked
        self.covers = shadow.covers
        self.grain = word_grain(check.state.units[check.me])
        self.spent = 0.0        # seconds this rank's looks have compared memory

    def _found_runs(self, lock=None):
        address, nbytes = self.shadow.own()
        if not nbytes:
            return [], []
        return accesses.diff(self.shadow.own_address, address, nbytes, self.grain, MAX_RUNS,
                             lock)

    def look(self, stored=None):
        """Record this rank's stores since it last looked (before it releases): in C,
        the memory is compared and the stores found recorded under the rank's lock
        throughout (an RMA meets either the store's record or a difference); else
        compared under the lock, the stores recorded under it again (an RMA in
        between finds neither the store nor a difference, and the store, recorded
        after it, meets its record). ``stored``: the stores the page watch saw
        ({site: [offsets]}, loads.py), recorded with their lines (two steps)."""
        check, c = self.check, clock()
        started = time.perf_counter()
        epoch = check.local_epoch_kind()
        # with several threads of this rank taking part, a store the compare finds
        # (not the page watch, which knows the thread) is not known to be the looking
        # thread's: it is left out (recorded with the wrong clock, it could be taken
        # for a race, or hide one)
        several = threads.several
        done = (None if self._look_args is None or stored or several
                else accesses._native.look_stores(
                    *self._look_args, STORE, epoch, c.site_here, c.me, c.vc_address,
                    accesses.CAPACITY, c.epoch, c.entries_for_me(check.world)))
        if done is None:        # no C, the lock stayed busy, or lines to give: two steps
            found = accesses.diff_native(*self._diff_args) if self._diff_args else None
            lows, highs = found if found is not None else self._found_runs(
                check.log.locked(check.me))
            races, site = None, None
        else:
            lows, highs, races, site = done
        self._spent(time.perf_counter() - started)
        if several:
            self._record_with_lines(stored or {}, [], [], epoch)
        elif stored:
            self._record_with_lines(stored, lows, highs, epoch)
        elif lows and (races is None or races):
            self._record(lows, highs, c.site_here() if site is None else site, epoch, races)

    def _record(self, lows, highs, site, epoch, found=None, kind=STORE):
        """Record the stores found at the byte runs (unless C did: ``found``, the
        racing records' indices), and report what they race with."""
        check, c = self.check, clock()
        store = Access(numpy.array(lows, numpy.int64), numpy.array(highs, numpy.int64),
                       kind, 0, 0, site, epoch)
        if found is not None:
            races = check.log.records[check.me][found]
        else:
            # every rank of the window is ordered after this rank's stores up to here
            seen = c.seen_by_all(c.entries_for_me(check.world))
            races = check.log.add_local(check.me, c.me, store, c.vc, c.vc_address, c.epoch,
                                         seen, check._prune)
        for row in races:
            check._report(c, check.me, row, store)

    def _record_with_lines(self, stored, lows, highs, epoch):
        """Record the runs the look found and the stores the page watch saw: each word
        the watch saw a store to at its line, whether the look found it changed or
        not (a store of the value already there, or one another rank's RMA wrote
        over since); the rest of the runs as stores found at this call."""
        # a store's width is the displacement unit's; with a unit of 1 (bytes, or
        # addresses) it is not known: the widest scalar store's
        grain = self.grain
        width, words = grain if grain > 1 else 8, {}
        for site, offsets in stored.items():
            for offset in offsets:
                words.setdefault(offset // grain * grain, site)
        seen = sorted(words)
        lined, unlined = {}, ([], [])
        for word in seen:
            lined.setdefault(words[word], []).append(word)
        for low, high in zip(lows, highs):
            for word in seen[bisect.bisect_left(seen, low - width + 1):
                             bisect.bisect_left(seen, high)]:
                if low < word:
                    unlined[0].append(low)
                    unlined[1].append(word)
                low = max(low, word + width)
            if low < high:
                unlined[0].append(low)
                unlined[1].append(high)
        c = clock()
        for site, lows_of_site in lined.items():
            at = numpy.array(lows_of_site, numpy.int64)
            ends = numpy.minimum(at + width, [self._end_of(word) for word in lows_of_site])
            self._record(at, ends, c.site(site), epoch, kind=LOCAL_STORE)
        if unlined[0]:
            self._record(*unlined, c.site_here(), epoch)

    def _end_of(self, offset):
        """The end of the memory holding ``offset``."""
        return self.shadow.own_bytes()

    def _spent(self, seconds):
        before, self.spent = self.spent, self.spent + seconds
        if before < SLOW_LOOKS <= self.spent:
            clock().warn_once(
                "rank %d has spent %.0f s comparing its %d MiB of window memory with its "
                "shadow copy, at each synchronization call, to find its own stores; "
                "--check=no-stores leaves them out" % (
                    self.check.state.rank, self.spent, self.shadow.own_bytes() >> 20),
                WARN_STORES)

    # --- at an RMA to a target (its checking lock held) ---
    def addresses(self, target):
        """(memory, shadow) addresses of ``target``'s memory here, or None when it is
        not mapped into this process (private memory: the Python path reads it)."""
        return self._addresses[target]

    def _mapped(self, target):
        memory = self.check.state.targets[target]
        if not getattr(memory, "address", 0) or getattr(memory, "view", None) is None:
            return None
        return memory.address, self.shadow.segment.address + int(self.shadow.offsets[target])

    def unseen(self, target, lows, highs):
        """The first byte run of ``target``'s memory at the runs that its owner
        stored into and has not looked at yet, or None."""
        memory = self.check.state.targets[target]
        for low, high, copy in zip(lows, highs, self.shadow.of_target(target, lows, highs)):
            now = numpy.empty(int(high - low), numpy.uint8)
            memory.read_into(int(low), memoryview(now))
            differ = numpy.flatnonzero(now != copy)
            if len(differ):
                copy[:] = now       # reported now, not again at the owner's look
                return int(low + differ[0]), int(low + differ[-1] + 1)
        return None

    def written(self, target, lows, highs, source=None, update=None):
        """Bring the shadow up to date after an RMA wrote the runs: with the bytes it
        wrote (``source``) when known, else with what ``update`` makes of the bytes
        the shadow held (an accumulate's), else with the memory as it is now."""
        copies = self.shadow.of_target(target, lows, highs)
        if source is not None:
            copies[0][:] = numpy.frombuffer(memoryview(source).cast("B"), numpy.uint8)
            return
        if update is not None and len(copies) == 1:
            try:
                after = update(copies[0])
            except (TypeError, ValueError):     # a form it does not know: the memory
                after = None
            if after is not None:
                copies[0][:] = after
                return
        memory = self.check.state.targets[target]
        for low, copy in zip(lows, copies):
            memory.read_into(int(low), memoryview(copy))

    def report_unseen(self, target, run, access):
        """An RMA met a store of ``target`` made since its last synchronization."""
        c, check = clock(), self.check
        grain = word_grain(check.state.units[target])
        run = (run[0] // grain * grain, -(-run[1] // grain) * grain)   # whole words
        here = c.site_text(c.me, access.site)
        c.report_once(unseen_key(target, here, access.kind),
                      lambda: report.unseen_store(check.name(), target, run, c.me, access,
                                                  here, check.dynamic))

    def close(self):
        self.shadow.close()


class RegionShadows:
    """The shadow copies of a dynamic window's attached regions: each region a shadow
    segment of its own, made by its rank at Attach and listed in that rank's table
    (dynamic.RegionTable's layout: address, size, the segment's name) in a segment
    of the window; the others map a segment when they first write into its region."""

    def __init__(self, segment, me, nranks):
        from ..rma.dynamic import TABLE_BYTES, RegionTable
        self.segment, self.me = segment, me
        self.tables = [RegionTable(segment.buffer, rank * TABLE_BYTES, segment.address)
                       for rank in range(nranks)]
        self.mine = {}          # region address -> (its shadow segment, size)
        self.mapped = {}        # name -> (rank, its shadow segment mapped here)
        self.read = {}          # rank -> (its table's version, its entries then)

    @classmethod
    def of(cls, state):
        """A dynamic window's region shadows (collective), or None when its stores
        are not checked."""
        from ..rma.dynamic import table_bytes
        from ..rma.window import WIN_FLAVOR_DYNAMIC
        from ..core.settings import stores_watched
        if state.flavor != WIN_FLAVOR_DYNAMIC or not stores_watched():
            return None
        n = len(state.sizes)
        segment = _shared_or_none(state.comm, table_bytes(n))
        return None if segment is None else cls(segment, state.rank, n)

    def attach(self, address, nbytes):
        """Shadow the region just attached: a copy of it as it is now."""
        from ..core import errors, job, segments
        try:
            shadow = segments.Segment.create(job.current().job_id, nbytes)
        except errors.Exception as exc:
            _no_room(exc)
            return
        ctypes.memmove(shadow.address, address, nbytes)
        self.tables[self.me].attach(address, nbytes, shadow.name)
        self.mine[address] = (shadow, nbytes)

    def detach(self, address):
        found = self.mine.pop(address, None)
        if found is not None:
            self.tables[self.me].detach(address)
            found[0].unlink()
            found[0].close()

    def own(self):
        """[(region address, its shadow's address, bytes)] of this rank's regions, by
        address."""
        return sorted((address, shadow.address, nbytes)
                      for address, (shadow, nbytes) in self.mine.items())

    def own_bytes(self):
        return sum(nbytes for _, nbytes in self.mine.values())

    def _regions(self, target, lows, highs):
        """The (address, shadow address) of ``target``'s region holding each run, or
        None when a run is in none (the real call raises ERR_RMA_RANGE)."""
        entries = self._entries(target)
        found = []
        for low, high in zip(lows, highs):
            region = next(((address, size, name) for address, size, name in entries
                           if address <= low and high <= address + size), None)
            if region is None:
                return None
            found.append((region[0], self._shadow_address(target, *region)))
        return found

    def _entries(self, target):
        """``target``'s table, read again only when its version moved (then the
        shadows of the regions it detached are unmapped here)."""
        table = self.tables[target]
        version = atomic.load32(table.version)
        cached = self.read.get(target)
        if cached is None or cached[0] != version or version & 1:
            cached = self.read[target] = (version, table.entries())
            live = {name for _, _, name in cached[1]}
            for name in [name for name, (rank, _) in self.mapped.items()
                         if rank == target and name not in live]:
                self.mapped.pop(name)[1].close()
        return cached[1]

    def _shadow_address(self, target, address, size, name):
        if target == self.me:
            return self.mine[address][0].address
        if name not in self.mapped:
            from ..core import segments
            self.mapped[name] = (target, segments.Segment.attach(name, size))
        return self.mapped[name][1].address

    def covers(self, target, lows, highs):
        return self._regions(target, lows, highs) is not None

    def of_target(self, target, lows, highs):
        """The shadow bytes of ``target`` at the runs (a view per run)."""
        return [numpy.frombuffer((ctypes.c_char * int(high - low)).from_address(
                    shadow + int(low - address)), numpy.uint8)
                for (address, shadow), low, high in zip(self._regions(target, lows, highs),
                                                         lows, highs)]

    def close(self):
        for address in list(self.mine):
            self.detach(address)
        for _, shadow in self.mapped.values():
            shadow.close()
        self.mapped = {}
        self.tables = []
        self.segment.close()


def unseen_key(target, site, kind):
    """The key of the report of an RMA (``kind`` at ``site``) that met a store of
    ``target`` not looked at yet; the owner's look, which may find the same store
    later with its line (the page watch), does not report it again."""
    return key_of(zlib.crc32(("%d|unseen|%s|%d" % (target, site, kind)).encode()))


class DynamicStores(Stores):
    """Stores of a dynamic window, in the regions its rank attached (their offsets
    are their addresses, the window's displacements). RMA to them takes the Python
    path, which reads and writes the shadow through RegionShadows."""

    def __init__(self, check, shadow):
        self._start(check, shadow)

    def look(self, stored=None):
        check, lows, highs = self.check, [], []
        started = time.perf_counter()
        for address, shadow, nbytes in self.shadow.own():
            found = accesses.diff(address, shadow, nbytes, self.grain, MAX_RUNS,
                                  check.log.locked(check.me))
            lows += [address + low for low in found[0]]
            highs += [address + high for high in found[1]]
        self._spent(time.perf_counter() - started)
        epoch = check.local_epoch_kind()
        if stored:
            self._record_with_lines(stored, lows, highs, epoch)
        elif lows:
            self._record(lows, highs, clock().site_here(), epoch)

    def addresses(self, target):
        return None

    def _end_of(self, offset):
        return next((address + nbytes for address, _, nbytes in self.shadow.own()
                     if address <= offset < address + nbytes), offset + 1)

    def unchanged(self):
        return False        # not known without comparing each region: look

    def attached(self, address, nbytes):
        if nbytes:
            self.shadow.attach(address, nbytes)

    def detached(self, address):
        self.shadow.detach(address)


def _shared_or_none(comm, nbytes):
    """A segment every rank of ``comm`` maps (collective), or None on every rank when
    /dev/shm has no room for it: the stores then go unchecked, the program runs on."""
    from ..core import errors
    from ..rma.window import share_segment
    try:
        return share_segment(comm, nbytes, "race checking")
    except errors.Exception as exc:
        _no_room(exc)
        return None


def _no_room(exc):
    from ..core import errors
    if exc.Get_error_class() != errors.ERR_NO_MEM:
        raise exc
    clock().warn_once("the stores to window memory are not checked: no room for their "
                      "shadow copy (%s)" % exc, WARN_STORES)


def word_grain(unit):
    """A store (or a load, loads.py) is known to the width of the displacement unit,
    at most a word."""
    return next(g for g in (8, 4, 2, 1) if unit % g == 0)
