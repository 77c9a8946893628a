"""The target's side of the race checker: its own loads of its window memory, and
the loads and stores of a shared window's memory by every rank.

A load leaves the memory as it was, so no comparison finds it (stores.py): the
checker takes the pages of the rank's window memory away from it after each of
its synchronization calls (csrc/check/pagewatch.c), and the first access to each page
faults; the handler notes the address and the Python line and gives the page
back. Before the rank's next release (and before an acquire-only call, at the
points stores.py looks) the notes become load records, stamped with the epoch
they were made in, checked against the other ranks' RMA like any access, and
the pages are taken away again.

So a load is seen when it is the first access to its page since the rank's last
synchronization call (a store first on the page hides the loads after it), at
its exact address, a word wide. After the first periods, the pages taken away in
most periods are those other ranks' RMA wrote lately (FULL_PERIODS below): a
load that comes before the first RMA write ever to its page, late in a run, can
go unseen. Watched:
- the ALLOCATE flavor, whose memory other ranks reach through their own mappings
  (a page taken away here changes nothing for them), and which gives each rank
  whole pages;
- the CREATE flavor, the pages wholly inside the window's memory (an edge page
  may hold other objects' bytes too): Alloc_mem memory, which the others map
  too, or private memory, which they reach with process_vm_*, and through
  /proc/PID/mem on a page taken away (winmemory.reach_taken_pages);
- the DYNAMIC flavor, each region from its Attach to its Detach, the pages wholly
  inside it too.

A shared window's memory (ALLOCATE_SHARED) is loaded and stored by every rank
directly, so each rank watches all of it, and its stores too: a page it loaded
comes back read-only, so its first store faults as well (x86-64 tells a store
from a load). They become load and store records of the rank whose memory they
reached, checked against the others' loads, stores and RMA.

A fault costs a few microseconds, and a stencil touches every page of its memory in
each synchronization period, so the watch keeps to a budget: once its faults, page
changes and records have cost a twentieth of the time since the window was
created, past its first GRACE_PERIODS periods (or a fiftieth of a second of them,
whichever comes first), it leaves the next periods unwatched until it is back
within budget (it says so, once). A program with few synchronizations, a test, is
watched throughout; a long loop one period in several, where a race that
repeats each iteration shows. The grace is counted in periods, not seconds, so
that a test is watched alike on any machine, and a short run on a fast one does
not spend a fiftieth of a second of watching before the budget applies.

What the watch costs is counted in this thread's CPU time (time.thread_time), not in
wall-clock time: on a busy machine the time a rank waits for a CPU in the middle of
a fault or a record is not the watch's cost, and counting it would stop the watch in
the very periods a loaded test run needs watched.
"""
import bisect
import contextlib
import mmap
import os
import threading
import time

from ..core.lazy import numpy
from . import report, threads
from .accesses import LOAD, LOCAL_STORE, Access
from .clock import WARN_LOADS, clock
from .stores import word_grain
from .wordwatch import paged

try:
    from .. import _pagewatch
except ImportError:         # the C extension is not built: loads go unchecked
    _pagewatch = None

# Every page is taken away in the first periods and one in FULL_EVERY after; in the
# others only the pages other ranks' RMA wrote in the records the log still holds
# (the halo rows of a stencil, not its interior), where loads of the period can
# race with them, and where the next writes are likely to land.
FULL_PERIODS, FULL_EVERY = 16, 8
BUDGET = 0.05            # the share of the run time the watch may cost, past its grace:
GRACE_PERIODS = 64       # watched whatever they cost, but for
GRACE = 0.02             # these seconds at most
MAX_NOTES = 4096        # csrc/check/pagewatch.c's MAX_FAULTS
MAX_WATCHED = 64        # and its MAX_REGIONS
# what its watch() returns when the memory holds no whole page, or every slot is taken
NO_PAGE, ALL_TAKEN = -1, -2


class Loads:
    """This rank's watch on its loads of one window's memory (with the window's
    WindowCheck: its log, epochs and reports): of its own memory, or (``shared``)
    its loads and stores of every rank's memory of a shared window. A dynamic
    window's memory is the regions the rank attaches, watched from their Attach to
    their Detach (there an address is its own displacement)."""

    def __init__(self, check, slots, shared):
        from ..rma.window import WIN_FLAVOR_DYNAMIC
        self.check, self.shared = check, shared
        state = check.state
        if state.flavor == WIN_FLAVOR_DYNAMIC:
            self.ranks, self.starts, self.ends, self.base = [check.me], [0], [1 << 62], 0
        else:
            self.ranks = [t for t in range(len(state.sizes)) if state.sizes[t]
                          and (shared or t == check.me)]
            self.starts = [state.targets[t].address for t in self.ranks]
            self.ends = [start + state.sizes[t] for start, t in zip(self.starts, self.ranks)]
            self.base = state.targets[check.me].address
        self.grains = {t: word_grain(state.units[t]) for t in self.ranks}
        self.regions = {}       # slot -> (its first page's offset, pages, the address given)
        for slot, address in slots:
            self._watch(slot, address)
        self.periods, self.armed, self.warned = 0, False, False
        self.fully_armed = False    # the last arm took every page away
        self.resume_at = 0.0    # arm() leaves the pages be until then (over budget)
        self.started, self.spent = time.perf_counter(), 0.0
        from ..core import job
        # ranks sharing a CPU wait out each other's faults too
        self.fault_cost = _fault_cost() * max(1.0, job.current().processes()
                                              / (os.cpu_count() or 1))
        self.arm()

    def _watch(self, slot, address):
        low, high = _pagewatch.span(slot)
        self.regions[slot] = (low - self.base, (high - low) // mmap.PAGESIZE, address)

    @classmethod
    def of(cls, check):
        """The watch on this rank's loads of the window, or None when they are not
        watched (see the module's text)."""
        from ..core.settings import loads_watched
        watched = _watched_memory(check.state, check.me) if loads_watched() else None
        slot = None if watched is None else _slot(*watched[:2])
        return None if slot is None else cls(check, [(slot, watched[0])], watched[2])

    @classmethod
    def attached(cls, check, address, nbytes):
        """The watch of a dynamic window (``check.loads``, or a new one) with the region
        just attached at ``address`` added; None while there is nothing to watch."""
        from ..core.settings import loads_watched
        slot = _slot(address, nbytes) if loads_watched() else None
        if slot is None:
            return check.loads
        if check.loads is None:
            return cls(check, [(slot, address)], False)
        check.loads._watch(slot, address)
        if check.loads.armed:
            _pagewatch.arm(slot)
        return check.loads

    def detached(self, address):
        """Stop watching the region attached at ``address`` (after the last look at it)."""
        for slot, (_, _, start) in list(self.regions.items()):
            if start == address:
                _pagewatch.unwatch(slot)
                del self.regions[slot]

    def take(self):
        """The accesses noted since the last take, the pages given back (the store
        watch compares them next): [(address, frames, wrote, thread id)]."""
        if not self.armed:
            return []       # no page was away: nothing faulted, nothing to give back
        started = time.thread_time()
        noted, lost, faults = [], 0, 0
        for slot in self.regions:
            more, missed, taken = _pagewatch.take(slot)
            _pagewatch.disarm(slot)
            noted, lost, faults = noted + more, lost + missed, faults + taken
        self.armed = False
        self.spent += faults * self.fault_cost + time.thread_time() - started
        if lost:
            clock().warn_once("more than %d first loads of window pages between two "
                              "synchronization calls: the later ones were not checked"
                              % MAX_NOTES)
        return noted

    def untouched(self):
        """Whether no access reached the watched memory since the last look: every
        page was taken away then, none faulted since (each is still away), and no
        system call reached them (unwatched)."""
        return self.fully_armed and not any(_pagewatch.faults(slot) for slot in self.regions)

    def paused(self):
        """Whether the watch is over budget and arm() would leave the pages be."""
        return time.perf_counter() < self.resume_at

    def arm(self):
        """Take the pages away for the next period, when the budget allows."""
        if self.paused():
            return
        if self._over_budget():
            # back within budget then, for nothing is spent while no page is away
            self.resume_at = self.started + self.spent / BUDGET
            if self.warned:
                return
            self.warned = True
            clock().warn_once(
                "the watch on the ranks' loads of their window memory (a page fault at "
                "the first access to each page after each synchronization call) has cost "
                "%d%% of the run time on rank %d: from now on it watches only some "
                "synchronization periods (--check=no-loads leaves it out)"
                % (BUDGET * 100, self.check.state.rank), WARN_LOADS)
            return
        started = time.thread_time()
        self.periods += 1
        # with several threads, another thread's access may come at any period: every
        # page, every time
        full = (self.shared or threads.several or self.periods <= FULL_PERIODS
                or self.periods % FULL_EVERY == 0)
        check, every = self.check, True
        for slot, (first, pages, _) in self.regions.items():
            flags = None if full else check.log.written_pages(
                check.me, clock().me, first, mmap.PAGESIZE, pages)
            if flags is None:
                _pagewatch.arm(slot)
            else:
                every = False
                if any(flags):
                    _pagewatch.arm_pages(slot, flags)
        self.armed, self.fully_armed = True, every
        _watching.add(self)
        self.spent += time.thread_time() - started

    def _over_budget(self):
        in_grace = self.periods < GRACE_PERIODS and self.spent <= GRACE
        return not in_grace and self.spent > BUDGET * (time.perf_counter() - self.started)

    def quiet(self):
        """A context in which the runtime's own accesses to the memory go unnoted
        (an RMA call to this rank itself); the pages are taken away again after."""
        return _Quiet(self)

    def record(self, noted, polls):
        """Record the noted accesses (grouped by target, kind and line) and report the
        races they make; loads are left out when they are ``polls``. Its time counts
        against the watch's budget."""
        started = time.thread_time()
        self._record(noted, polls)
        self.spent += time.thread_time() - started

    def split_stores(self, noted):
        """The noted accesses split in two: the stores to this rank's own memory (not
        a shared window's) by the thread looking, as {site: [offsets]}, which the
        store look records with what it finds (stores.py), and the rest (another
        thread's stores are recorded as its own, with its clock)."""
        if self.shared:
            return {}, noted
        stored, rest = {}, []
        looking = threading.get_native_id()
        for item in noted:
            address, frames, wrote, thread = item
            offset = address - self.starts[0]
            if wrote and thread == looking and 0 <= offset < self.ends[0] - self.starts[0]:
                stored.setdefault(report.user_site(frames), []).append(offset)
            else:
                rest.append(item)
        return stored, rest

    def _record(self, noted, polls):
        """Record the noted accesses, each with the clock of the thread that made it."""
        check = self.check
        groups = {}
        for address, frames, wrote, thread in noted:
            at = bisect.bisect_right(self.starts, address) - 1
            if at < 0 or address >= self.ends[at] or polls and not wrote:
                continue        # padding between ranks' memories
            key = (thread, self.ranks[at], LOCAL_STORE if wrote else LOAD,
                   report.user_site(frames))
            groups.setdefault(key, []).append(address - self.starts[at])
        here, looking = clock(), threading.get_native_id()
        for (thread, target, kind, site), offsets in groups.items():
            c = threads.clock_of_native(thread) if thread != looking else here
            grain = self.grains[target]
            # (not numpy.unique: its first call imports numpy.ma, 14 ms of the budget)
            lows = numpy.array(sorted({offset // grain * grain for offset in offsets}),
                               numpy.int64)
            local = Access(lows, lows + grain, kind, 0, 0, c.site(site),
                           check.local_epoch_kind(target))
            seen = c.seen_by_all(c.entries_for_me(check.world))
            races = check.log.add_local(target, c.me, local, c.vc, c.vc_address, c.epoch,
                                        seen, check._prune)
            for row in races:
                check._report(c, target, row, local)

    def close(self):
        _watching.discard(self)
        for slot in self.regions:
            _pagewatch.unwatch(slot)
        self.regions = {}


_watching = set()       # the watches of this process's windows


@contextlib.contextmanager
def unwatched():
    """Every watched page given back for the duration (a system call on a buffer
    that may be window memory), and taken away again after."""
    armed = [slot for watch in _watching if watch.armed for slot in watch.regions]
    armed += paged()        # pending result buffers' pages (origin.py)
    for slot in armed:
        _pagewatch.disarm(slot)
    for watch in _watching:
        watch.fully_armed = False       # what the call wrote faulted nowhere: look
    try:
        yield
    finally:
        for slot in armed:
            _pagewatch.arm(slot)


class _Quiet:
    __slots__ = ("loads", "before")

    def __init__(self, loads):
        self.loads = loads

    def __enter__(self):
        self.before = _pagewatch.set_quiet(True)

    def __exit__(self, *exc):
        _pagewatch.set_quiet(self.before)
        if not self.before:
            self.loads.arm()


def _watched_memory(state, me):
    """(address, bytes, shared) of the memory this rank watches, or None."""
    from ..rma.window import WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_CREATE, WIN_FLAVOR_SHARED
    if state.flavor == WIN_FLAVOR_SHARED:
        # every rank loads and stores every rank's memory: the whole segment
        if not state.data_segments:
            return None
        segment = state.data_segments[0]
        return segment.address, _whole_pages(segment.size), True
    memory, size = state.targets[me], state.sizes[me]
    if not size or not getattr(memory, "address", 0):
        return None
    if state.flavor == WIN_FLAVOR_ALLOCATE:
        # each rank has whole pages of its own (window.Layout): the last, partly
        # padding, is watched too, so a window of a few words is
        return memory.address, _whole_pages(size), False
    if state.flavor == WIN_FLAVOR_CREATE:
        # the pages wholly inside the window's memory
        return memory.address, size, False
    return None


def _slot(address, nbytes):
    """The page watch's slot for the memory, or None when it is not watched (and why,
    once)."""
    if _pagewatch is None:
        clock().warn_once("shmrma's C extension is not built: the ranks' loads of their "
                          "window memory are not checked")
        return None
    slot = _pagewatch.watch(address, nbytes)
    if slot == NO_PAGE:
        return None
    if slot == ALL_TAKEN:
        clock().warn_once("more than %d windows or attached regions at once: the loads of "
                          "the later ones are not checked" % MAX_WATCHED, WARN_LOADS)
        return None
    return slot


def _whole_pages(nbytes):
    return -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE


def _fault_cost(_measured=[]):
    """The seconds a fault costs, measured once per process on four pages of its own."""
    if not _measured:
        pages = 4
        scratch = mmap.mmap(-1, pages * mmap.PAGESIZE)
        view = numpy.frombuffer(scratch, numpy.uint8)
        slot = _pagewatch.watch(view.ctypes.data, len(view))
        rounds, started = 16, time.thread_time()
        for _ in range(rounds):
            _pagewatch.arm(slot)
            _pagewatch.disarm(slot)
        arming = (time.thread_time() - started) / rounds
        started = time.thread_time()
        for _ in range(rounds):
            _pagewatch.arm(slot)
            view[::mmap.PAGESIZE].sum()
        faulting = (time.thread_time() - started) / rounds
        _pagewatch.take(slot)
        _pagewatch.unwatch(slot)
        del view
        scratch.close()
        _measured.append(max(faulting - arming / 2, 0.0) / pages)
    return _measured[0]

