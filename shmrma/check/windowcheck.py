"""The race checker's view of one window on one rank (WindowCheck): its log of
accesses, the quick path of a Put or Get, the look at the rank's own memory before
a synchronization, and the keys its synchronizations release and acquire.
"""
import collections
import zlib

from ..core.lazy import numpy
from ..rma.epoch import HELD_EXCLUSIVE
from ..rma.window import WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_DYNAMIC, share_segment
from . import accesses, loads, origin, report, stores, threads
from .accesses import PUT, Access
from .clock import clock, key_of


FENCE, BARRIER, POST, COMPLETE, MESSAGE, COLLECTIVE, COUNTER = range(1, 8)
CAS_CODE = -2
DECLINED = object()     # what WindowCheck.quick_access returns when it did nothing
# a target as WindowCheck.quick_access sees it: its log's cells, its memory and shadow
# addresses (None when its stores are not checked), its displacement unit and size
QuickTarget = collections.namedtuple(
    "QuickTarget", "records count_cell lock_cell memory shadow unit size")

basic_codes = {}       # numpy dtype -> the code of the basic type its arrays travel as


def code_of(name):
    return zlib.crc32(name.encode()) & 0x3fffffff


def basic_code(basic):
    """The code of a basic datatype in the access log: its name's (the low bits)
    and its size in bytes (accesses.SIZE_SHIFT up): accumulates of one basic type
    are atomic together only element by element, where their elements coincide."""
    if basic is None:
        return 0
    return (zlib.crc32(basic.Get_name().encode()) & accesses.NAME_MASK) | \
        (min(basic.Get_size(), accesses.MAX_SIZE) << accesses.SIZE_SHIFT)


# --- windows -----------------------------------------------------------------------

class WindowCheck:
    """The checker's view of one window on this rank."""

    def __init__(self, win, site):
        from ..core import job
        state = win._s
        self.state, self.world = state, state.world_ranks
        n = len(self.world)
        width = clock().session.width           # a clock's entries: the job's slots
        self.segment = share_segment(state.comm, accesses.segment_bytes(n, width),
                                     "race checking")
        self.id = key_of(zlib.crc32(self.segment.name.encode()))
        self.me = state.rank
        self.others = tuple(rank for rank in self.world if rank != job.world_rank())
        self.log = accesses.WindowLog(
            self.segment, self.world, width, lambda: clock().warn_once(
                "a window's access log is full; older accesses are forgotten"))
        self.site, self.win = site, win
        self.fences = self.barriers = 0
        self.barrier_epoch = False      # the last of Fence and window barrier was a barrier
        self.entered = None     # (seq, targets known entered) while an Ibarrier is pending
        self.posts, self.starts = [0] * n, [0] * n
        self.completes, self.waits = [0] * n, [0] * n
        self.start_group, self.post_group = [], []
        self.locks = {}             # target -> passive.HELD_* (or NOCHECK)
        self.pending = set()        # targets where this rank may have pending accesses
        self.lock_all = None
        from ..core.settings import loads_watched
        self.buffers = origin.Buffers(lambda text: clock().warn_once(text),
                                      watch_words=loads_watched())
        self.last_site = 0          # of the latest access
        self.last_held = []         # the buffers the latest call holds (for its request)
        shadow = stores.Shadow.of(state)
        regions = stores.RegionShadows.of(state) if shadow is None else None
        self.stores = (stores.Stores(self, shadow) if shadow is not None else
                       stores.DynamicStores(self, regions) if regions is not None else None)
        self.loads = loads.Loads.of(self)
        # the load watch's pages hold all the memory whose stores are checked (an
        # ALLOCATE window's: whole pages; a CREATE window's edge pages are not watched)
        self.pages_hold_memory = state.flavor == WIN_FLAVOR_ALLOCATE
        self.quick = self._quick_targets()     # quick_access's view of the targets
        self.synced = False     # a Win.Sync since the last look: its loads may be polls
        self.looking = False    # look_local runs before this rank's releases
        self.dynamic = state.flavor == WIN_FLAVOR_DYNAMIC   # offsets are addresses
        if self.loads is not None or self.stores is not None and state.sizes[self.me]:
            self.look_from_now()

    def look_from_now(self):
        """Look at this rank's own loads and stores before each of its releases."""
        if not self.looking:
            clock().look_before_releases(self.look_local)
            self.looking = True

    def close(self):
        """Stop checking the window (before it is freed or changes its group)."""
        self.win._race_check = None
        self.buffers.let_go()       # (calls never completed: their watches end here)
        clock().unwatch(self.observe_local)
        clock().look_before_releases(self.look_local, on=False)
        if self.loads is not None:
            self.loads.close()
        if self.stores is not None:
            self.stores.close()
        self.segment.close()

    def look_local(self):
        """Record this rank's own loads and stores of the window's memory since it
        last looked: before its releases, and before an acquire no release precedes.
        A look that would find nothing returns at once."""
        loads = self.loads
        if self._nothing_new():
            self.synced = False
            return
        # after Win.Sync, a load may have seen an atomic that came after the last
        # join (a flag polled, then reset): the stores found now come after what
        # the loads could have seen, as at a release (R131)
        clock().observe_local()
        noted = loads.take() if loads is not None else None
        if self.stores is not None:
            # a store the page watch saw is recorded by the look, with its line,
            # even where it wrote the value already there
            stored, noted = loads.split_stores(noted) if noted else (None, noted)
            self.stores.look(stored)
        if noted:       # polling with loads and Sync is valid (R128, R131)
            loads.record(noted, polls=self.synced)
        self.synced = False
        if loads is not None:
            loads.arm()

    def _nothing_new(self):
        """Whether no load or store of this rank reached its memory since it last
        looked, and its look would change nothing."""
        loads, stores = self.loads, self.stores
        if loads is not None and loads.armed:
            # (memory taken away is not compared: that would fault) every page away
            # since and none faulted: no access at all, where the pages hold it all
            return loads.untouched() and (stores is None or self.pages_hold_memory)
        if loads is not None and not loads.paused():
            return False        # the look takes the pages away
        return stores is None or stores.unchanged()

    def local_epoch_kind(self, target=None):
        """The epoch of this rank's own loads and stores of ``target``'s memory (its
        own by default): its lock on it, its exposure epoch, the fence or barrier
        epoch it is in, else none."""
        target = self.me if target is None else target
        if self.locks.get(target) is not None or self.lock_all is not None:
            return self.epoch_kind(target)
        if self.post_group and target == self.me:
            return accesses.EXPOSURE
        if self.barrier_epoch:
            return accesses.BARRIER
        return accesses.FENCE if self.fences else accesses.NO_EPOCH

    def name(self):
        given = self.win.Get_name() if self.win else ""
        return ('window "%s"' % given) if given else "the window created at %s" % self.site

    def epoch_kind(self, target):
        held = self.locks.get(target)
        if held is not None:
            return accesses.LOCK_EXCLUSIVE if held == HELD_EXCLUSIVE else accesses.LOCK_SHARED
        if self.lock_all is not None:
            return accesses.LOCK_ALL
        if target in self.start_group:
            return accesses.PSCW
        table = self.state.epoch.table
        if table.counter_kinds(target):
            return accesses.COUNTER
        return accesses.BARRIER if self.barrier_epoch else accesses.FENCE

    # --- accesses ---
    def access(self, target, lows, highs, kind, op, basic, locked=False):
        """Check and record an access (``locked``: the target's lock is held)."""
        c = clock()
        if not locked:
            c.observe_local()
        access = self._new_access(c, target, lows, highs, kind, op, basic)
        races = self.log.record(target, c.me, access, c.vc, c.vc_address, self._prune,
                                locked)
        self._checked(c, target, access, races)
        return access

    def _new_access(self, c, target, lows, highs, kind, op, basic):
        access = Access(lows, highs, kind, op, basic, c.site_here(),
                        self.epoch_kind(target))
        if threads.several:
            c.last_call = c.vc[c.me]
        self.pending.add(target)
        self.last_site = access.site
        return access

    def _checked(self, c, target, access, races):
        c.accesses += 1
        for row in _distinct(races):
            self._report(c, target, row, access)

    def shadowed_access(self, target, lows, highs, what, perform, source=None):
        """Perform, check and record an access to memory whose stores are checked in
        C, under the target's lock (stores.py); None when C declines (nothing done)."""
        kind, op, basic = what
        c = clock()
        addresses = self.stores.addresses(target)
        if addresses is None:
            return None
        access = self._new_access(c, target, lows, highs, kind, op, basic)
        done = self.log.shadowed(target, c.me, access, c.vc_address, addresses,
                                 target != self.me, accesses.writes(kind, op), perform,
                                 source)
        if done is None:
            return None
        result, races, unseen = done
        if races is None:       # the log was full: the Python path prunes
            races = self.log.record(target, c.me, access, c.vc, c.vc_address, self._prune)
        self._checked(c, target, access, races)
        if unseen is not None:
            self.stores.report_unseen(target, unseen, access)
        return (result,)

    def quick_access(self, kind, target, disp, array, perform, role):
        """A Put or Get of a numpy array at an int displacement, the common case, made
        and recorded in one C call (racecheck.c's quick: what shadowed_access or access
        does for it) and few Python steps. DECLINED, having done nothing, for any other
        case (the general path then does it)."""
        quick = self.quick
        if (quick is None or type(target) is not int or type(array) is not numpy.ndarray
                or not 0 <= target < len(quick) or self.entered is not None
                or not (disp is None or type(disp) is int)):
            return DECLINED
        where, basic = quick[target], basic_codes.get(array.dtype)
        if where is None or basic is None:
            return DECLINED
        c = clock()
        c.observe_local()
        site = c.site_here(2)       # past _put_or_get and the call's wrapper
        epoch = self.epoch_kind(target)
        done = accesses._native.quick(where, kind, disp or 0, array, basic, site, epoch, c.me,
                                      c.vc_address, accesses.CAPACITY, kind == PUT,
                                      target != self.me, perform, c.counter_address)
        if done is False:
            return DECLINED
        self.pending.add(target)
        self.last_site = site
        if threads.several:
            c.last_call = c.vc[c.me]
        if done is not None:        # a race, an unseen store, or not recorded yet
            low = (disp or 0) * where.unit
            self._quick_report(c, target, Access(numpy.array([low]),
                                                 numpy.array([low + array.nbytes]), kind, 0,
                                                 basic, site, epoch), *done)
        self.last_held = self.buffers.hold_array(target, kind, site, array, role)
        if self.buffers.clashes:
            self.report_clashes()
        return None

    def _quick_report(self, c, target, access, found, unseen):
        """A quick access that races (``found``: the racing records' indices, None
        when it is not recorded yet, the log full or its lock busy: the Python path
        records it, waiting and pruning), or met a store its target had not looked at
        (``unseen``)."""
        races = (self.log.record(target, c.me, access, c.vc, c.vc_address, self._prune)
                 if found is None else self.log.records[target][found])
        self._checked(c, target, access, races)
        if unseen is not None:
            self.stores.report_unseen(target, unseen, access)

    def _quick_targets(self):
        """Per target, what quick_access needs (a QuickTarget), or None where it
        declines: memory not mapped here under checked stores, or this rank's loads
        watched on it (an RMA's own copies are not loads); None for all without C."""
        if accesses._native is None:
            return None
        if self.stores is not None and type(self.stores) is not stores.Stores:
            return None     # a dynamic window's: its offsets are addresses
        found = []
        for target in range(len(self.world)):
            addresses = (None, None) if self.stores is None else self.stores.addresses(target)
            own = self.loads is not None and (target == self.me or self.loads.shared)
            found.append(None if addresses is None or own else QuickTarget(
                *self.log.cells[target], *addresses, self.state.units[target],
                self.state.sizes[target]))
        return found

    def _report(self, c, target, row, access):
        row_site = c.site_text(int(row["origin"]), int(row["site"]))
        here = c.site_text(c.me, access.site)
        if (access.kind in (accesses.STORE, accesses.LOCAL_STORE) and target == self.me
                and not c.session.first_report(stores.unseen_key(target, row_site,
                                                                 int(row["kind"])))):
            return      # that RMA reported meeting this store already, when it came
        pair = sorted([(row_site, int(row["kind"])), (here, access.kind)])
        c.report_once(key_of(*(zlib.crc32(("%s|%d" % p).encode()) for p in pair)),
                      lambda: report.race(self.name(), target, row, row_site, c.me, access,
                                          here, self.dynamic))

    def _prune(self, target, rows):
        """Forget the records every rank of the window is ordered after."""
        session = clock().session
        seen = numpy.min([session.block(slot)[0] for w in self.world
                          for slot in session.slots_of(w)], axis=0)
        return self.log.keep(target, rows, seen[rows["origin"]] < rows["stamp"])

    def complete(self, targets, modes=7, only=None):
        """Stamp this rank's pending accesses at ``targets`` (of the kinds in ``modes``,
        or just one request's: ``only``); only targets it has accessed are looked at."""
        if not modes and only is None:
            return              # no kind of RMA (a counter's pure notification)
        c = clock()
        others = self._completed_siblings(c) if threads.several else ()
        for target in self.pending.intersection(targets):
            self.log.complete(target, c.me, c.epoch, modes, only)
            for sibling in others:
                self.log.complete(target, sibling, int(c.vc[sibling]), modes, only)
            if modes == 7 and only is None:
                self.pending.discard(target)

    @staticmethod
    def _completed_siblings(c):
        """The slots of this rank's other threads whose every RMA call is ordered
        before this point of ``c``'s thread: a completion here completes theirs too
        (a Flush completes the process's calls issued before it, MPI-3.1 section
        11.5.4); those of a thread not known to have made its calls before it stay
        pending, as their order is not known."""
        return [sibling.me for sibling in threads.siblings(c.me)
                if sibling.last_call <= c.vc[sibling.me]]

    def signal(self, target, mode, key):
        """A counter's signal: the RMA of the kinds in ``mode`` to ``target`` complete
        there (A15), then this rank's clock published under the counter's ``key``; in
        one C call (racecheck.c's signal) where it can, else complete() and
        Clock.publish()."""
        c = clock()
        c.prepare_release()
        pending = target in self.pending
        cell = c.own_cell(key)
        if cell is None or accesses._native is None or not accesses._native.signal(
                *self.log.cells[target], mode if pending else 0, cell, c.width, key,
                c.vc_address, c.me):
            self.complete((target,), mode)
            c.publish(key)
        elif pending and mode == 7:
            self.pending.discard(target)

    def complete_locally(self, targets=None, modes=7, only=None):
        """The origin's buffers of the calls now complete locally (R35): report those
        the program changed since (at ``targets``, None for all; see origin.Buffers)."""
        if not modes and only is None:
            return
        changed = self.buffers.complete(targets, modes, only)
        if not changed:
            return
        c = clock()
        here = report.call_site()
        for held, bytes_changed, seen in changed:
            made = c.site_text(c.me, held.site)
            # the program's accesses the word watch saw, with their line (another
            # call's are found when it is made: report_clashes)
            # (a page fault's address is the access's own: no need to name the buffer)
            seen = [(first, last, frames) for first, last, frames, exact in seen
                    if exact or origin.names_the_buffer(made, held.kind, frames)]
            for first, last, frames in seen:
                there = report.user_site(frames)
                c.report_once(key_of(zlib.crc32(("%s|%s|%d" % (made, there,
                                                                held.role)).encode())),
                              lambda: report.result_access_race(
                                  self.name(), held, first, last, c.me, made, there, here))
            if bytes_changed is not None and not seen:
                first, last = bytes_changed
                c.report_once(
                    key_of(zlib.crc32(("%s|%s|%d" % (made, here, held.role)).encode())),
                    lambda: report.buffer_race(self.name(), held, first, last, c.me, made,
                                               here))

    def report_clashes(self):
        """Report the calls just made on buffers that pending calls of this rank still
        fill or read (origin.Buffers.clashes), each pair of sites once."""
        clashes = self.buffers.take_clashes()
        if not clashes:
            return
        c = clock()
        for held, fresh, (first, last) in clashes:
            made, there = c.site_text(c.me, held.site), c.site_text(c.me, fresh.site)
            c.report_once(key_of(zlib.crc32(("%s|%s|%d|%d" % (made, there, held.role,
                                                               fresh.role)).encode())),
                          lambda: report.buffer_clash(self.name(), held, fresh, first, last,
                                                      c.me, made, there))

    def observe_local(self):
        c = clock()
        self.log.acquire_words(self.me, c.vc, c.me)

    def everyone(self):
        return range(len(self.world))

    # --- synchronization ---
    def key(self, *numbers):
        return key_of(self.id, *numbers)

    def release_all(self, kind, seq):
        clock().release(self.key(kind, seq))

    def acquire_all(self, kind, seq):
        clock().acquire_each(self.world, self.key(kind, seq))




def _distinct(rows):
    seen = set()
    for row in rows:
        mark = (int(row["origin"]), int(row["site"]), int(row["kind"]))
        if mark not in seen:
            seen.add(mark)
            yield row


def check_of(win):
    return getattr(win, "_race_check", None)


def checked_window(win, site):
    """The window's check (collective), or None on every rank when /dev/shm has no
    room for its record: the window then goes unchecked, the program runs on."""
    from ..core import errors
    try:
        return WindowCheck(win, site)
    except errors.Exception as exc:
        if exc.Get_error_class() != errors.ERR_NO_MEM:
            raise
        clock().warn_once("the window created at %s is not checked: no room for the race "
                          "checker's record of it (%s)" % (site, exc))
        return None
