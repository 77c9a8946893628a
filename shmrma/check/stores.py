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

Checked: the ALLOCATE and CREATE flavors (not shared windows, whose memory every
rank stores into directly, nor dynamic ones). Not seen: loads, and a store that
writes the value already there.
"""
import time
import zlib

from ..lazy import numpy
from . import accesses, report
from .accesses import STORE, Access
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
        from ..window import WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_CREATE, share_segment
        from . import stores_watched
        sizes = list(state.sizes)
        if not stores_watched():
            return None
        if state.flavor not in (WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_CREATE) or not any(sizes):
            return None
        if sum(sizes) > SHADOW_MAX:
            clock().warn_once("a window holds more than %d MiB; the stores of its ranks to "
                              "their window memory are not checked" % (SHADOW_MAX >> 20))
            return None
        segment = share_segment(state.comm, -(-sum(sizes) // 8) * 8 + 8 * len(sizes),
                                "race checking")
        return cls(segment, sizes, state.rank, state.targets[state.rank].address)

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
        from ..window import _agree
        self.check, self.shadow = check, shadow
        self.grain = word_grain(check.state.units[check.me])
        self._found_runs(check.log.locked(check.me))
        _agree(check.state.comm, (None, None), "race checking")
        self.spent = 0.0        # seconds this rank's looks have compared memory
        session = clock().session
        self.clocks = [session.block(rank)[0] for rank in check.world]
        self._addresses = [self._mapped(target) for target in range(len(check.world))]
        shadow_address, nbytes = shadow.own()
        self._diff_args = ((shadow.own_address, shadow_address, nbytes, self.grain, MAX_RUNS,
                            check.log.lock_cell(check.me)) if nbytes else None)

    def _found_runs(self, lock=None):
        address, nbytes = self.shadow.own()
        if not nbytes:
            return [], []
        return accesses.diff(self.shadow.own_address, address, nbytes, self.grain, MAX_RUNS,
                             lock)

    def look(self):
        """Record this rank's stores since it last looked (before it releases). The
        memory is compared under the lock, the stores recorded under it again: an RMA
        in between finds neither the store nor a difference, and the store, recorded
        after it, meets its record."""
        check = self.check
        started = time.perf_counter()
        found = accesses.diff_native(*self._diff_args) if self._diff_args else None
        lows, highs = found if found is not None else self._found_runs(
            check.log.locked(check.me))
        self._spent(time.perf_counter() - started)
        if not lows:
            return
        c = clock()
        store = Access(numpy.array(lows, numpy.int64), numpy.array(highs, numpy.int64),
                       STORE, 0, 0, c.site(report.call_site()), check.local_epoch_kind())
        # every rank of the window is ordered after this rank's stores up to here
        seen = min([vc[c.me] for vc in self.clocks])
        races = check.log.add_local(check.me, c.me, store, c.vc, c.vc_address, c.epoch, seen,
                                     check._prune)
        for row in races:
            check._report(c, check.me, row, store)

    def _spent(self, seconds):
        before, self.spent = self.spent, self.spent + seconds
        if before < SLOW_LOOKS <= self.spent:
            clock().warn_once(
                "rank %d has spent %.0f s comparing its %d MiB of window memory with its "
                "shadow copy, at each synchronization call, to find its own stores; "
                "--check=no-stores leaves them out" % (
                    self.check.state.rank, self.spent, self.shadow.sizes[self.check.me] >> 20),
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

    def written(self, target, lows, highs, source=None):
        """Bring the shadow up to date after an RMA wrote the runs: with the bytes it
        wrote (``source``) when known, else with the memory as it is now."""
        copies = self.shadow.of_target(target, lows, highs)
        if source is not None:
            copies[0][:] = numpy.frombuffer(memoryview(source).cast("B"), numpy.uint8)
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
        c.report_once(key_of(zlib.crc32(("%d|unseen|%s|%d" % (target, here, access.kind))
                                        .encode())),
                      lambda: report.unseen_store(check.name(), target, run, c.me, access,
                                                  here))

    def close(self):
        self.shadow.close()


def word_grain(unit):
    """A store (or a load, loads.py) is known to the width of the displacement unit,
    at most a word."""
    return next(g for g in (8, 4, 2, 1) if unit % g == 0)
