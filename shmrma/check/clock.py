"""Vector clocks of the race checker, and the job's checking segment.

A clock belongs to a *slot*: each world rank's main thread has slot r (its
rank), and each other thread of a rank that takes part (an MPI call, an access
to window memory) claims one of the job's extra slots (``SHMRMA_CHECK_THREADS``
of them, threads.py), since a rank's threads are unordered unless the program
orders them. Slot r's clock ``vc`` has one entry per slot; ``vc[r]`` is r's
epoch, which a *release* ends: the clock r had is published, then ``vc[r]``
grows. An event of r in epoch e happens before the current point of slot s when
``vc_s[r] >= e``, that is when s has *acquired* (joined, element-wise max) a clock
r published after it. Every MPI synchronization is a release at one side and an
acquire at the other (a rank's releases are found in the rings and cells of all
its slots):

- keyed releases, for events matched one to one (a Fence, a message, a Post and
  its Start): the releaser appends (key, clock) to its ring; the acquirer, who
  knows the same key, finds it there. Keys are unique, so an acquirer never takes
  a clock published later than the event it matched;
- cells, for "whoever came last" events (a lock hand-over, a counter's signals):
  the releaser overwrites its cell for the key; the acquirer joins what it finds.

The segment is made before the ranks fork (or by a singleton) and unlinked at
once, so it never outlives the job; the launcher reads the race count from it.
"""
import _thread
import threading
import time

from ..core import atomic, job, segments, settings
from ..core.lazy import numpy
from . import report

try:
    from .. import _racecheck
except ImportError:         # the C extension is not built: the Python path
    _racecheck = None
if atomic.BACKEND != "c":   # SHMRMA_NATIVE=0: the checker's Python path throughout
    _racecheck = None
# (Python 3.11 to 3.13: racecheck.c reads the interpreter's frames)
_user_site = getattr(_racecheck, "user_site", None)

RING = 1024             # keyed releases a rank keeps (an acquirer lags far fewer behind)
RECENT = 4              # of them, the latest ones an acquire looks at one by one first
CELLS = 1024            # cells a rank can publish (locks use window segments, not these)
SITES = 2048            # code sites a rank can name in reports
SITE_BYTES = 240
DEDUP = 8192            # distinct races remembered for reporting each once
HEADER = 64             # races, accesses checked, warnings (int64 each), slots claimed
OFF_RACES, OFF_WARNED, OFF_CLAIMED = 0, 16, 48
# an extra slot's row: its owner's rank + 1 (0: free), the count of threads it served,
# and the latest NAMES of them: (the epoch it started at, its name) each
NAMES, NAME_BYTES = 4, 48
SLOT_ENTRY = 16 + NAMES * (8 + NAME_BYTES)
# what a warning is about: each is printed once per job
WARN_OTHER, WARN_STORES, WARN_LOADS = range(3)
KEY_MASK = 2**63 - 1
POLL_S = 50e-6          # between looks for a release not published yet (rare)
MAX_C_WIDTH = 4097      # racecheck.c's acquire joins clocks of up to 4096 ranks


def key_of(*numbers):
    """A positive 63-bit key for a tuple of ints, the same in every process (Python
    does not randomize the hash of ints)."""
    return (hash(numbers) & KEY_MASK) or 1


class Session:
    """The job's checking segment, shared by every rank (mapped before the fork)."""

    def __init__(self, segment, nranks, extra=0):
        self.segment, self.nranks, self.extra = segment, nranks, extra
        self.width = nranks + extra         # slots: entries of a clock
        self.rank_bytes = self._rank_size(self.width)
        self.thread_bytes = self._rank_size(self.width, sites=False)
        self._blocks = {}
        self.slots_at = HEADER + DEDUP * 8
        self.base = self.slots_at + extra * SLOT_ENTRY
        self._owners = {}       # a claimed extra slot -> its rank (a claim is for good)
        self._slots_of = {}     # rank -> (its slots, OFF_CLAIMED's count then)
        report.name_slots(self.who, self.owner)

    @classmethod
    def create(cls, job_id, nranks, extra=None):
        extra = settings.check_threads() if extra is None else extra
        width = nranks + extra
        size = (HEADER + DEDUP * 8 + extra * SLOT_ENTRY + nranks * cls._rank_size(width)
                + extra * cls._rank_size(width, sites=False))
        segment = segments.Segment.create(job_id, size)
        segment.unlink()        # mapped by every forked rank; nothing to sweep
        return cls(segment, nranks, extra)

    @staticmethod
    def _rank_size(width, sites=True):
        """A slot's part: a rank's main thread's names the rank's code sites, which
        its other threads share."""
        entry = (1 + width) * 8
        return _round(width * 8 + 64 + RING * entry + CELLS * entry
                      + (SITES * SITE_BYTES if sites else 0))

    # --- slots: a rank's main thread has its rank's, another thread an extra one ---
    def claim_slot(self, rank, name):
        """An extra slot for a thread of ``rank`` named ``name``, or None when every
        one is taken."""
        for slot in range(self.nranks, self.width):
            if atomic.cas64(self._slot_row(slot), 0, rank + 1) == 0:
                self._owners[slot] = rank
                self.name_slot(slot, name, 1)
                self.add(OFF_CLAIMED)
                return slot
        return None

    def name_slot(self, slot, name, epoch):
        """The thread ``name`` has the extra ``slot`` from ``epoch`` on (a later thread
        of the same rank may take an ended one's: reports name the thread whose epoch
        the access was in)."""
        row = self._slot_row(slot) - self.segment.address
        count = int(self._slot_view(row + 8, 1)[0])
        at = row + 16 + (count % NAMES) * (8 + NAME_BYTES)
        self._slot_view(at, 1)[0] = epoch
        text = name.encode("utf-8", "replace")[:NAME_BYTES - 1]
        self.segment.buffer[at + 8:at + 8 + NAME_BYTES] = text.ljust(NAME_BYTES, b"\0")
        self._slot_view(row + 8, 1)[0] = count + 1

    def _slot_view(self, offset, n):
        return numpy.ndarray((n,), numpy.int64, self.segment.buffer, offset)

    def owner(self, slot):
        """The world rank whose thread has ``slot``."""
        if slot < self.nranks:
            return slot
        rank = self._owners.get(slot)
        if rank is None:
            rank = atomic.load64(self._slot_row(slot)) - 1
            if rank >= 0:
                self._owners[slot] = rank
        return rank

    def thread_name(self, slot, epoch=None):
        """The name of the thread that had ``slot`` at ``epoch`` (now: None), "" for a
        rank's main thread or one no longer known."""
        if slot < self.nranks:
            return ""
        row = self._slot_row(slot) - self.segment.address
        count = int(self._slot_view(row + 8, 1)[0])
        for back in range(min(count, NAMES)):
            at = row + 16 + ((count - 1 - back) % NAMES) * (8 + NAME_BYTES)
            if epoch is None or int(self._slot_view(at, 1)[0]) <= epoch:
                return bytes(self.segment.buffer[at + 8:at + 8 + NAME_BYTES]).split(
                    b"\0")[0].decode("utf-8", "replace")
        return ""

    def _slot_row(self, slot):
        return self.header_address(self.slots_at + (slot - self.nranks) * SLOT_ENTRY)

    def slots_of(self, rank):
        """Every slot of ``rank``: its main thread's first (one atomic load when no
        slot was claimed since the last look)."""
        claimed = self.count(OFF_CLAIMED)
        known = self._slots_of.get(rank)
        if known is not None and known[1] == claimed:
            return known[0]
        slots = (rank,) + tuple(slot for slot in range(self.nranks, self.width)
                                if self.owner(slot) == rank) if claimed else (rank,)
        self._slots_of[rank] = (slots, claimed)
        return slots

    def who(self, slot, epoch=None):
        """How a report names the thread of ``slot`` (at ``epoch``, or now): "rank 1",
        or "rank 1's thread Worker" for one of its other threads."""
        rank = self.owner(slot)
        if slot < self.nranks:
            return "rank %d" % rank
        return "rank %d's thread %s" % (rank, self.thread_name(slot, epoch)
                                        or "(an earlier one)")

    def _array(self, offset, dtype, shape):
        return numpy.ndarray(shape, dtype=dtype, buffer=self.segment.buffer, offset=offset)

    def block(self, rank):
        """The views of one slot's part: clock, ring index, ring, cells, sites."""
        views = self._blocks.get(rank)
        if views is None:
            views = self._blocks[rank] = self._views(rank)
        return views

    def _views(self, slot):
        n, main = self.width, slot < self.nranks
        start = self.base + (slot * self.rank_bytes if main else self.nranks * self.rank_bytes
                             + (slot - self.nranks) * self.thread_bytes)
        ring_at = start + n * 8 + 64
        cells_at = ring_at + RING * (1 + n) * 8
        sites_at = cells_at + CELLS * (1 + n) * 8
        return (self._array(start, numpy.int64, (n,)),
                self.segment.address + start + n * 8,
                self._array(ring_at, numpy.int64, (RING, 1 + n)),
                self._array(cells_at, numpy.int64, (CELLS, 1 + n)),
                self._array(sites_at, "S%d" % SITE_BYTES, (SITES,)) if main else None)

    def header_address(self, offset):
        return self.segment.address + offset

    def count(self, offset):
        return atomic.load64(self.header_address(offset))

    def accesses(self):
        """RMA accesses checked by every rank's threads."""
        return sum(atomic.load64(self.block(slot)[1] + 8) for slot in range(self.width))

    def add(self, offset, n=1):
        return atomic.fetch_add64(self.header_address(offset), n)

    def first_report(self, digest):
        """True the first time any rank reports the race ``digest`` (a nonzero key)."""
        table = self.header_address(HEADER)
        for probe in range(DEDUP):
            cell = table + ((digest + probe) % DEDUP) * 8
            seen = atomic.cas64(cell, 0, digest)
            if seen in (0, digest):
                return seen == 0
        return True


def _round(n, line=64):
    return -(-n // line) * line


class Clock:
    """The vector clock of one thread of this rank (its slot's), and its releases and
    acquires. ``rank`` is the world rank, ``me`` the slot (the rank's own for its
    main thread); ``main`` is the rank's main thread's clock, whose lists of windows
    to look at before a release every thread of the rank shares."""

    def __init__(self, session, rank, slot=None, main=None):
        self.session, self.rank = session, rank
        self.me = rank if slot is None else slot
        self.vc, self.ring_index, self.ring, self.cells, self.sites = session.block(self.me)
        # the count of accesses checked (C counts there too), beside the ring index
        self.counter_address = self.ring_index + 8
        self.vc[:] = 0
        self.vc[self.me] = 1
        self.vc_address = self.vc.ctypes.data
        # the epoch of its latest RMA call while other threads take part (a call made
        # before any did is ordered before them all): threads.siblings
        self.last_call = 0
        # release()'s arguments for this slot's ring in C, or () for the Python path
        # (publish and join_cell follow the same path)
        self._c_ring = self._ring_of(self.me)[:4]
        # the rank's code sites, which its threads share (main's table): text -> number
        self._site_numbers = {} if main is None else main._site_numbers
        # (id of a code object, instruction) -> its site number: an id hashes at once,
        # a code object hashes its constants, names and nested code each time
        self._frame_sites = {} if main is None else main._frame_sites
        # those code objects, kept so that no other takes an id
        self._site_codes = [] if main is None else main._site_codes
        if main is not None:
            self.sites = main.sites
        self._cells_found = {}  # (slot, key) -> the index of that slot's cell for the key
        self._cells_at = {}     # slot -> the address of its cells
        self._bases = {}        # ranks -> (the addresses of their slots' cells, claims)
        self.width = 1 + session.width          # of a cell or ring entry: key, clock
        self._cell_bytes = self.width * 8
        self._rings = {}        # slot -> acquire()'s arguments for its ring
        self._each = {}         # ranks -> (acquire_each()'s rings, claims)
        self._entries = {}      # ranks -> (entries_for_me(ranks), claims)
        # windows whose local loads may observe atomics (Win.Sync), windows whose
        # stores are found before each release: the rank's, whichever thread releases
        self._watched = [] if main is None else main._watched
        self._looks = [] if main is None else main._looks
        # per thread, in a call over many requests: whether it looked yet (one_look)
        self._call = threading.local() if main is None else main._call
        self._warned = set() if main is None else main._warned  # warnings counted here

    @property
    def accesses(self):
        """RMA accesses this rank had checked (the summary adds every rank's)."""
        return atomic.load64(self.counter_address)

    @accesses.setter
    def accesses(self, n):
        atomic.store64(self.counter_address, n)

    @property
    def epoch(self):
        return int(self.vc[self.me])

    def end_epoch(self):
        self.vc[self.me] += 1

    def entries_for_me(self, ranks):
        """Where each thread of ``ranks`` (a tuple) keeps the entry of its clock for
        this slot (kept until a thread claims a slot)."""
        claims = self.session.count(OFF_CLAIMED)
        known = self._entries.get(ranks)
        if known is None or known[1] != claims:
            known = self._entries[ranks] = (tuple(
                self.session.block(slot)[0].ctypes.data + 8 * self.me
                for rank in ranks for slot in self.session.slots_of(rank)), claims)
        return known[0]

    @staticmethod
    def seen_by_all(entries):
        """The latest epoch of this rank that every rank has acquired, from
        entries_for_me(their ranks)."""
        return min([atomic.load64(address) for address in entries])

    # --- local loads the checker cannot see ---
    def watch(self, observe):
        """Call ``observe`` (it joins what this rank's loads may have seen) now, before
        every release and at every access, until ``unwatch``."""
        if observe not in self._watched:
            self._watched.append(observe)
        observe()

    def unwatch(self, observe):
        if observe in self._watched:
            self._watched.remove(observe)

    def observe_local(self):
        for observe in self._watched:
            observe()

    # --- local stores the checker cannot see (stores.py) ---
    def look_before_releases(self, look, on=True):
        """Call ``look`` (it records this rank's stores) before every release."""
        if on:
            self._looks.append(look)
        elif look in self._looks:
            self._looks.remove(look)

    def prepare_release(self):
        """What a release needs first: what this rank's loads saw, and its stores."""
        self.observe_local()
        self.look_at_stores()

    def look_at_stores(self):
        """Record this rank's stores so far: before a release, and before an acquire
        that no release of the same call precedes (stores made before a wait are
        not ordered by what the wait acquires). Once in a call over many requests
        (one_look): none of the program's code runs between its completions."""
        looked = getattr(self._call, "looked", None)
        if looked:
            return
        for look in self._looks:
            look()
        if looked is False:
            self._call.looked = True

    def one_look(self):
        """Enter a call over many requests (Waitall): its first release or acquire
        looks at this rank's loads and stores, the later ones need not (in the
        calling thread: another may store meanwhile). Returns what to give back to
        end_one_look."""
        before = getattr(self._call, "looked", None)
        if before is None:
            self._call.looked = False
        return before

    def end_one_look(self, before):
        self._call.looked = before

    # --- keyed releases ---
    def release(self, key):
        self.prepare_release()
        if self._c_ring:
            _racecheck.release(*self._c_ring, key, self.vc_address, self.me)
        else:
            self.release_here(key)

    def release_here(self, key):
        """release()'s write in Python: the reference of racecheck.c's, the fallback."""
        index = atomic.load64(self.ring_index)
        entry = self.ring[index % RING]
        entry[0] = 0                # readers skip the entry while it changes
        atomic.fence()
        entry[1:] = self.vc
        atomic.fence()
        entry[0] = key
        atomic.store64(self.ring_index, index + 1)
        self.end_epoch()

    def acquire(self, rank, key):
        """Join the clock ``rank`` (any of its threads) released under ``key``; False
        when it is not there (not released yet, or so long ago that the ring reused
        its entry)."""
        found = False
        for slot in self.session.slots_of(rank):
            if slot != self.me:
                ring = self._ring(slot)
                found |= bool(_racecheck.acquire(*ring, key, self.vc_address) if ring
                              else self.acquire_here(slot, key))
        return found or rank == self.rank      # (a rank's own release: program order)

    def acquire_each(self, ranks, key):
        """acquire() from each of ``ranks`` (a tuple), in one C call when C has every
        ring."""
        claims = self.session.count(OFF_CLAIMED)
        known = self._each.get(ranks)
        if known is None or known[1] != claims:
            rings = tuple(self._ring(slot) for rank in ranks
                          for slot in self.session.slots_of(rank) if slot != self.me)
            known = self._each[ranks] = (rings, claims)
        rings = known[0]
        if rings and all(rings):
            _racecheck.acquire_each(rings, key, self.vc_address)
            return
        for rank in ranks:      # (none but this rank: nothing to join)
            self.acquire(rank, key)

    def _ring(self, slot):
        ring = self._rings.get(slot)
        if ring is None:
            ring = self._rings[slot] = self._ring_of(slot)
        return ring

    def _ring_of(self, slot):
        """acquire()'s arguments for ``slot``'s ring in C, or () for the Python path."""
        _, ring_index, ring, _, _ = self.session.block(slot)
        if _racecheck is None or ring.shape[1] > MAX_C_WIDTH:
            return ()
        return ring.ctypes.data, ring_index, RING, ring.shape[1], RECENT

    def acquire_here(self, slot, key):
        """acquire() from one slot in Python: the reference of racecheck.c's acquire,
        the fallback."""
        _, ring_index, ring, _, _ = self.session.block(slot)
        newest = atomic.load64(ring_index)
        for back in range(1, RECENT + 1):   # usually among its latest releases
            if ring[(newest - back) % RING, 0] == key:
                entry = ring[(newest - back) % RING]
                break
        else:
            found = numpy.flatnonzero(ring[:, 0] == key)
            if not len(found):
                return False
            entry = ring[found[numpy.argmin((newest - 1 - found) % RING)]]  # the latest
        clock = entry[1:].copy()
        atomic.fence()
        if entry[0] != key:     # reused while we copied: so long ago it cannot matter
            return False
        numpy.maximum(self.vc, clock, out=self.vc)
        return True

    def acquire_waiting(self, rank, key, what):
        """Join the clock ``rank`` releases under ``key``, waiting for it (a Start that
        did not wait for its Post, under MODE_NOCHECK, finds it later)."""
        peers = (rank,)
        while not self.acquire(rank, key):
            problem = job.job_problem(peers, what)
            if problem is not None:
                raise problem
            job.run_idle_hooks()
            time.sleep(POLL_S)

    # --- cells ---
    def publish(self, key):
        """Overwrite this rank's cell for ``key`` with its clock, and end the epoch."""
        self.prepare_release()
        index = self._cell_index(self.me, key, claim=True)
        if index is None:
            self.warn_once("too many counters to follow; some signals are not checked")
            return
        if self._c_ring:
            _racecheck.publish(self._cells_at[self.me] + index * self._cell_bytes,
                               self.width, key, self.vc_address, self.me)
        else:
            self.publish_here(self.cells[index], key)

    def own_cell(self, key):
        """The address of this rank's cell for ``key`` (claimed the first time), for
        racecheck.c; None without C, or when every cell is taken (publish() says so)."""
        if not self._c_ring:
            return None
        index = self._cell_index(self.me, key, claim=True)
        return None if index is None else self._cell_base(self.me) + index * self._cell_bytes

    def publish_here(self, cell, key):
        """publish()'s write in Python: the reference of racecheck.c's, the fallback."""
        cell[1:] = self.vc      # every entry only grows: a torn read is still safe
        atomic.fence()
        cell[0] = key
        self.end_epoch()

    def join_cell(self, rank, key):
        """Join what each thread of ``rank`` published in its cell for ``key``."""
        for slot in self.session.slots_of(rank):
            index = self._cell_index(slot, key)
            if index is None:
                continue
            if self._c_ring:
                _racecheck.join(self._cells_at[slot] + index * self._cell_bytes,
                                self.width, self.vc_address)
            else:
                numpy.maximum(self.vc, self.session.block(slot)[3][index, 1:], out=self.vc)

    def join_cells(self, ranks, key):
        """join_cell() of each of ``ranks`` (a tuple), in one C call when it is there."""
        if not self._c_ring:
            for rank in ranks:
                self.join_cell(rank, key)
            return
        claims = self.session.count(OFF_CLAIMED)
        known = self._bases.get(ranks)
        if known is None or known[1] != claims:
            known = self._bases[ranks] = (tuple(
                self._cell_base(slot) for rank in ranks
                for slot in self.session.slots_of(rank)), claims)
        _racecheck.join_keyed(known[0], self._cell_bytes, CELLS, key, self.width,
                              self.vc_address)

    def _cell_base(self, slot):
        base = self._cells_at.get(slot)
        if base is None:
            base = self._cells_at[slot] = self.session.block(slot)[3].ctypes.data
        return base

    def _cell_index(self, slot, key, claim=False):
        """The index of ``slot``'s cell for ``key`` (a cell keeps its key for good, so
        where it was found is remembered), or None; with ``claim``, a free one for
        this slot to fill. Keys are read with atomic loads: a miss, a counter the
        slot never signalled, costs one each time."""
        index = self._cells_found.get((slot, key))
        if index is not None:
            return index
        base = self._cell_base(slot)
        for probe in range(CELLS):
            index = (key + probe) % CELLS
            seen = atomic.load64(base + index * self._cell_bytes)
            if seen == key or (claim and seen == 0):
                self._cells_found[slot, key] = index
                return index
            if seen == 0:
                return None
        return None

    # --- code sites ---
    def site_here(self, skip=0):
        """site_of(report.user_frame(skip)) for the caller: the site of the program's
        code that made the current call, in one C call where the site is known."""
        if _user_site is None:
            return self.site_of(report.user_frame(skip + 1))
        found = _user_site(report.PACKAGE_DIR, self._frame_sites, skip + 2)
        if found is None or found < 0:      # not named yet, or no frame of the program's
            return self.site_of(report.user_frame(skip + 1))
        return found

    def site_of(self, frame):
        """The site number of a frame's current line (site() of its text), kept per
        code object and instruction (cheaper to read than the line); None: unknown."""
        if frame is None:
            return self.site("<unknown>")
        code = frame.f_code
        key = (id(code), frame.f_lasti)
        number = self._frame_sites.get(key)
        if number is None:
            number = self._frame_sites[key] = self.site(
                report.shown_site(code.co_filename, frame.f_lineno))
            self._site_codes.append(code)
        return number

    def site(self, text):
        number = self._site_numbers.get(text)
        if number is None:
            with _naming:       # the rank's threads name sites in one table
                number = self._site_numbers.get(text)
                if number is None:
                    number = len(self._site_numbers)
                    if number >= SITES:
                        return SITES - 1
                    self.sites[number] = text.encode("utf-8", "replace")[:SITE_BYTES]
                    self._site_numbers[text] = number
        return number

    def site_text(self, slot, number):
        _, _, _, _, sites = self.session.block(self.session.owner(slot))
        return bytes(sites[number]).decode("utf-8", "replace")

    def report_once(self, digest, text):
        """Count a race and print ``text()`` unless a rank printed the race ``digest``
        already (each pair of code sites is reported once across the job)."""
        if not self.session.first_report(digest):
            return
        self.session.add(OFF_RACES)
        import sys
        sys.stderr.write(text())
        sys.stderr.flush()

    def warn_once(self, text, about=WARN_OTHER):
        """Print ``text`` unless a rank printed a warning ``about`` the same already."""
        import sys
        if about in self._warned:
            return      # the cell is past 0 for good: skip the shared line's traffic
        self._warned.add(about)
        if atomic.fetch_add64(self.session.header_address(OFF_WARNED + 8 * about), 1) == 0:
            sys.stderr.write("shmrma-check: warning: %s\n" % text)


_session = None
_clock = None
_naming = _thread.allocate_lock()      # (a raw lock: threads.py checks the others)


def start_session(job_id, nranks):
    """Make the job's checking segment (the launcher, before it forks the ranks)."""
    global _session
    _session = Session.create(job_id, nranks)
    return _session


def session():
    return _session


_main_thread = None     # threads.py's [ident of the rank's main thread, its native id]
_thread_clock = None    # threads.py's: the calling thread's Clock (another thread)
_get_ident = threading.get_ident


def follow_threads(main_thread, thread_clock):
    """Give each thread its own clock from now on (threads.py)."""
    global _main_thread, _thread_clock
    _main_thread, _thread_clock = main_thread, thread_clock


def clock():
    """The calling thread's clock: the rank's, made on first use (a singleton makes
    its own segment), for its main thread; its own for another (threads.py)."""
    if _thread_clock is not None and _get_ident() != _main_thread[0]:
        return _thread_clock()
    return _clock if _clock is not None else clock_of_main()


def started():
    """Whether this rank's clock is made (the checker runs in this process)."""
    return _clock is not None


def clock_of_main():
    """The clock of the rank's main thread."""
    global _clock, _session
    if _clock is None:
        world = job.current()
        if _session is None or _session.nranks != world.size:
            _session = Session.create(world.job_id, world.size)
            import atexit       # no launcher to sum up: this singleton does
            atexit.register(_singleton_summary, _session)
        _clock = Clock(_session, world.rank)
    return _clock


def summary(session):
    """(the end-of-job line, whether a race was found)."""
    races, checked = session.count(OFF_RACES), session.accesses()
    if races:
        return ("shmrma-check: %d data race%s found in %d RMA accesses checked (each pair of "
                "code sites reported once, above)\n" % (races, "" if races == 1 else "s",
                                                         checked), True)
    return "shmrma-check: no data race found in %d RMA accesses checked\n" % checked, False


def _singleton_summary(session):
    import sys
    sys.stderr.write(summary(session)[0])


@job.on_new_rank
def _forget_clock():
    global _clock
    _clock = None
