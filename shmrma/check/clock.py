"""Vector clocks of the race checker, and the job's checking segment.

Rank r's clock ``vc`` has one entry per world rank; ``vc[r]`` is r's epoch, which
a *release* ends: the clock r had is published, then ``vc[r]`` grows. An event of
r in epoch e happens before the current point of rank s when ``vc_s[r] >= e``,
that is when s has *acquired* (joined, element-wise max) a clock r published
after it. Every MPI synchronization is a release at one side and an acquire at
the other:

- keyed releases, for events matched one to one (a Fence, a message, a Post and
  its Start): the releaser appends (key, clock) to its ring; the acquirer, who
  knows the same key, finds it there. Keys are unique, so an acquirer never takes
  a clock published later than the event it matched;
- cells, for "whoever came last" events (a lock hand-over, a counter's signals):
  the releaser overwrites its cell for the key; the acquirer joins what it finds.

The segment is made before the ranks fork (or by a singleton) and unlinked at
once, so it never outlives the job; the launcher reads the race count from it.
"""
import threading
import time

from ..core import atomic, job, segments
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
HEADER = 64             # races (int64), accesses checked (int64), warnings (int64 each)
OFF_RACES, OFF_WARNED = 0, 16
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

    def __init__(self, segment, nranks):
        self.segment, self.nranks = segment, nranks
        self.rank_bytes = self._rank_size(nranks)
        self._blocks = {}
        self.base = HEADER + DEDUP * 8

    @classmethod
    def create(cls, job_id, nranks):
        size = HEADER + DEDUP * 8 + nranks * cls._rank_size(nranks)
        segment = segments.Segment.create(job_id, size)
        segment.unlink()        # mapped by every forked rank; nothing to sweep
        return cls(segment, nranks)

    @staticmethod
    def _rank_size(nranks):
        entry = (1 + nranks) * 8
        return _round(nranks * 8 + 64 + RING * entry + CELLS * entry + SITES * SITE_BYTES)

    def _array(self, offset, dtype, shape):
        return numpy.ndarray(shape, dtype=dtype, buffer=self.segment.buffer, offset=offset)

    def block(self, rank):
        """The views of one rank's part: clock, ring index, ring, cells, sites."""
        views = self._blocks.get(rank)
        if views is None:
            views = self._blocks[rank] = self._views(rank)
        return views

    def _views(self, rank):
        n, start = self.nranks, self.base + rank * self.rank_bytes
        ring_at = start + n * 8 + 64
        cells_at = ring_at + RING * (1 + n) * 8
        sites_at = cells_at + CELLS * (1 + n) * 8
        return (self._array(start, numpy.int64, (n,)),
                self.segment.address + start + n * 8,
                self._array(ring_at, numpy.int64, (RING, 1 + n)),
                self._array(cells_at, numpy.int64, (CELLS, 1 + n)),
                self._array(sites_at, "S%d" % SITE_BYTES, (SITES,)))

    def header_address(self, offset):
        return self.segment.address + offset

    def count(self, offset):
        return atomic.load64(self.header_address(offset))

    def accesses(self):
        """RMA accesses checked by every rank."""
        return sum(atomic.load64(self.block(rank)[1] + 8) for rank in range(self.nranks))

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
    """This rank's vector clock and its releases and acquires."""

    def __init__(self, session, rank):
        self.session, self.me = session, rank
        self.vc, self.ring_index, self.ring, self.cells, self.sites = session.block(rank)
        # the count of accesses checked (C counts there too), beside the ring index
        self.counter_address = self.ring_index + 8
        self.vc[:] = 0
        self.vc[rank] = 1
        self.vc_address = self.vc.ctypes.data
        # release()'s arguments for this rank's ring in C, or () for the Python path
        # (publish and join_cell follow the same path)
        self._c_ring = self._ring_of(rank)[:4]
        self._site_numbers = {}
        # (id of a code object, instruction) -> its site number: an id hashes at once,
        # a code object hashes its constants, names and nested code each time
        self._frame_sites = {}
        self._site_codes = []   # those code objects, kept so that no other takes an id
        self._cells_found = {}  # (rank, key) -> the index of that rank's cell for the key
        self._cells_at = {}     # rank -> the address of its cells
        self._bases = {}        # ranks -> the addresses of their cells (join_cells)
        self.width = 1 + session.nranks         # of a cell or ring entry: key, clock
        self._cell_bytes = self.width * 8
        self._rings = {}        # rank -> acquire()'s arguments for its ring
        self._each = {}         # ranks -> acquire_each()'s rings
        self._watched = []      # windows whose local loads may observe atomics (Win.Sync)
        self._looks = []        # windows whose stores are found before each release
        # per thread, in a call over many requests: whether it looked yet (one_look)
        self._call = threading.local()
        self._warned = set()    # the kinds of warning this rank has counted already

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
        """Where each of ``ranks`` keeps the entry of its clock for this rank."""
        return tuple(self.session.block(rank)[0].ctypes.data + 8 * self.me for rank in ranks)

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
        """Join the clock ``rank`` released under ``key``; False when it is not there
        (not released yet, or so long ago that the ring reused its entry)."""
        if rank == self.me:
            return True
        ring = self._ring(rank)
        if ring:
            return _racecheck.acquire(*ring, key, self.vc_address)
        return self.acquire_here(rank, key)

    def acquire_each(self, ranks, key):
        """acquire() from each of ``ranks`` (a tuple), in one C call when C has every
        ring."""
        rings = self._each.get(ranks)
        if rings is None:
            rings = self._each[ranks] = tuple(self._ring(rank) for rank in ranks
                                              if rank != self.me)
        if rings and all(rings):
            _racecheck.acquire_each(rings, key, self.vc_address)
            return
        for rank in ranks:      # (none but this rank: nothing to join)
            self.acquire(rank, key)

    def _ring(self, rank):
        ring = self._rings.get(rank)
        if ring is None:
            ring = self._rings[rank] = self._ring_of(rank)
        return ring

    def _ring_of(self, rank):
        """acquire()'s arguments for ``rank``'s ring in C, or () for the Python path."""
        _, ring_index, ring, _, _ = self.session.block(rank)
        if _racecheck is None or ring.shape[1] > MAX_C_WIDTH:
            return ()
        return ring.ctypes.data, ring_index, RING, ring.shape[1], RECENT

    def acquire_here(self, rank, key):
        """acquire() in Python: the reference of racecheck.c's acquire, the fallback."""
        _, ring_index, ring, _, _ = self.session.block(rank)
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
        index = self._cell_index(rank, key)
        if index is None:
            return
        if self._c_ring:
            _racecheck.join(self._cells_at[rank] + index * self._cell_bytes,
                            self.width, self.vc_address)
        else:
            numpy.maximum(self.vc, self.session.block(rank)[3][index, 1:], out=self.vc)

    def join_cells(self, ranks, key):
        """join_cell() of each of ``ranks`` (a tuple), in one C call when it is there."""
        if not self._c_ring:
            for rank in ranks:
                self.join_cell(rank, key)
            return
        bases = self._bases.get(ranks)
        if bases is None:
            bases = self._bases[ranks] = tuple(self._cell_base(rank) for rank in ranks)
        _racecheck.join_keyed(bases, self._cell_bytes, CELLS, key, self.width,
                              self.vc_address)

    def _cell_base(self, rank):
        base = self._cells_at.get(rank)
        if base is None:
            base = self._cells_at[rank] = self.session.block(rank)[3].ctypes.data
        return base

    def _cell_index(self, rank, key, claim=False):
        """The index of ``rank``'s cell for ``key`` (a cell keeps its key for good, so
        where it was found is remembered), or None; with ``claim``, a free one for
        this rank to fill. Keys are read with atomic loads: a miss, a counter the rank
        never signalled, costs one each time."""
        index = self._cells_found.get((rank, key))
        if index is not None:
            return index
        base = self._cell_base(rank)
        for probe in range(CELLS):
            index = (key + probe) % CELLS
            seen = atomic.load64(base + index * self._cell_bytes)
            if seen == key or (claim and seen == 0):
                self._cells_found[rank, key] = index
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
            number = len(self._site_numbers)
            if number >= SITES:
                return SITES - 1
            self.sites[number] = text.encode("utf-8", "replace")[:SITE_BYTES]
            self._site_numbers[text] = number
        return number

    def site_text(self, rank, number):
        _, _, _, _, sites = self.session.block(rank)
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


def start_session(job_id, nranks):
    """Make the job's checking segment (the launcher, before it forks the ranks)."""
    global _session
    _session = Session.create(job_id, nranks)
    return _session


def session():
    return _session


def clock():
    """This rank's clock, made on first use (a singleton makes its own segment)."""
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
