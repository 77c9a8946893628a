"""The shared collective areas of a communicator, and the one protocol every
blocking collective runs on them.

A communicator's first collective that moves data maps a *small* area that all
its members share: a counter, then per member a read cell (below) and two slots
(the parities of consecutive steps), each a header and SMALL_SLOT bytes of data. A collective is
a sequence of *steps*; in a step every member deposits a header (its error
class, the length of what it brings, its element size) and up to a slot of
data, adds one to the counter, and waits until every member has arrived at this
step; then it reads whatever it needs from the others' slots. A broadcast's
step is lighter: only its root deposits (and adds one to the counter), and the
others wait for that deposit alone, read it, and say so in their *read cell* (a
wait cell on a line of its own before their slots: the last step they finished
reading); nobody waits for them. Steps alternate parities, so a member about to
deposit step s must know that every other finished reading step s - 2, the last
that used its slot of that parity: after a full step s - 1 it knows (they all
arrived at s - 1), after a broadcast it reads their read cells. Every member
knows the counter's value once all arrivals of a step are in (each step adds
the size, or one for a broadcast), and that every member finished reading step
s - 3 when it starts step s (the deposits of step s - 1 followed that), so no
wait ever looks further back: a slot is never overwritten while read, and the
root of back-to-back broadcasts waits only for the readers of the one before
last.

Every collective's first step is in the small area, so every member learns what
every other brings; a collective whose data all fit there is done in that one
step. When some member brings more, all of them know it, and they move the data
in chunks through the communicator's *large* area instead (mapped then, once,
with slots of up to 256 KiB): a communicator that never moves much never pays
for it (a window's own communicator, say).

Errors stay in step: a member whose arguments are wrong deposits its error class
in the first step, and every member sees it there and raises (the culprit its
own exception, the others one naming it). A mismatch only some members can see
(a part longer than its place) is raised by them at the end, after they took
part in every step, so nobody is left waiting.

A communicator's small area is a segment its rank 0 makes at its first collective
and names in the communicator's barrier slot; the others wait for that name
alone (no barrier: rank 0 needs nothing of theirs before the first step, whose
arrivals it waits for anyway). When its last member frees it, the area goes to a
pool in the world segment (POOL_ENTRIES of them, by communicator size), and the
next communicator of that size takes it instead of a new segment; every process
keeps the last areas it unmapped mapped (CACHED_AREAS), so a member that had it
maps nothing either.
Communicator creation costs a segment only when the pool has none. A large area
goes to the same pool (its entry's size carries POOL_LARGE), while the pool holds
fewer than LARGE_POOLED of them: a program that makes a communicator for each
large transfer (a parallel FFT's plans) maps none of its own, where creating,
reserving and mapping a few MiB cost more than the transfer. So the names of
the areas (AREA_KIND in them) stay in /dev/shm while the job runs; the job's
sweeper removes them at the end, however the job ends.

``exchange`` moves byte streams (each member's outgoing bytes) to whoever wants
parts of them; ``fold`` reduces vectors element-wise in rank order.
coll/blocking.py builds every blocking collective from the two;
shmrma/csrc/coll/ (area.c, reductions.c, parts.c) runs the common cases (plain buffers, pickles that fit
the small area) in C on the same areas and protocol, so a member on either path
meets the others.
"""
import struct
import threading

from ..core import atomic, constants, errors, job, segments
from .slots import slot_barrier

AREA_HEADER = 64                # the step counter, a wait cell, alone on its line
SLOT_HEADER = 64
HEADER = struct.Struct("<iiqq")  # error class, ready, length of the stream, element size
READY_OFFSET = 4                # the step a slot holds, written after its header and data
READ_LINE = 64                  # a member's read cell, alone on its line before its slots
SMALL_SLOT = 8 * 1024           # holds a table of 16 bytes per rank up to 512 ranks
NAME_OFFSET = 8                 # in the communicator's barrier slot (job.SLOT_BYTES)
NAME_BYTES = 48
FAILED_OFFSET = 56              # a member could not map the large area (an int32)
MASK32 = 0xFFFFFFFF
POOL_ENTRIES = 32               # areas kept for new communicators, at job.OFF_AREA_POOL
POOL_ENTRY = 64                 # state (int32), communicator size (int32), name
POOL_SIZE, POOL_NAME = 4, 8     # offsets in an entry
POOL_EMPTY, POOL_BUSY, POOL_READY = 0, 1, 2
POOL_LARGE = 1 << 30            # in an entry's size: a large area, of a communicator of size
LARGE_POOLED = 4                # large areas the pool keeps (their memory stays reserved)
CACHED_AREAS = 16               # areas a process keeps mapped after its communicator's Free
AREA_KIND = "area-"             # in the names of areas (segments.new_name)
AREA_NAMED, AREA_FAILED, AREA_TRY = 1, 2, 4     # the slot's area cell (job.OFF_SLOT_AREA)
_ZEROS = bytes(READ_LINE + SLOT_HEADER)
_POOL_TABLE = struct.Struct("<" + "ii%dx" % (POOL_ENTRY - 8) * POOL_ENTRIES)  # states, sizes


def large_slot_bytes(nranks):
    """Data bytes of each slot of the large area: 4 MiB shared among the members,
    16 KiB to 256 KiB each, so a small job moves large vectors in few steps."""
    share = (4 * 1024 * 1024 // max(nranks, 1)) & ~63
    return max(16 * 1024, min(256 * 1024, share))


class Area:
    """An area as this member maps it; ``prefix`` names the communicator's fields
    for it: its steps taken so far (CommCore.coll_seq or .large_seq), the counter's
    value once the last step's arrivals are in (_target) and the last step every
    member finished reading, as far as this member knows (_clear)."""

    def __init__(self, state, region, slot, prefix):
        self.region = region
        self.mem = region.buffer
        self.address = region.address
        self.nranks = len(state.ranks)
        self.me = state.rank
        self.slot = slot
        self.sequence, self.target, self.clear = (prefix + "_seq", prefix + "_target",
                                                  prefix + "_clear")
        self.block = READ_LINE + 2 * (SLOT_HEADER + slot)
        self.counter = self.address
        self.peers = state.ranks
        self.label = state.name or "a communicator"

    @staticmethod
    def nbytes(nranks, slot):
        return AREA_HEADER + nranks * (READ_LINE + 2 * (SLOT_HEADER + slot))

    def offset(self, rank, parity):
        """Where rank's slot of this parity starts in the area (its header)."""
        return (AREA_HEADER + rank * self.block + READ_LINE +
                parity * (SLOT_HEADER + self.slot))

    def read_cell(self, rank):
        return self.address + AREA_HEADER + rank * self.block

    def header(self, rank, parity):
        return HEADER.unpack_from(self.mem, self.offset(rank, parity))

    def data(self, rank, parity, start, stop):
        base = self.offset(rank, parity) + SLOT_HEADER
        return self.mem[base + start:base + stop]

    def close(self, keep=False):
        """Unmap the area; ``keep``: keep its mapping for a communicator that takes
        it from the pool (_cached)."""
        mem, self.mem = self.mem, None
        if mem is None:
            return
        mem.release()
        if keep and isinstance(self.region, segments.Region):
            _keep_mapped(self.region)
        else:
            self.region.close()


def area_of(state):
    """The communicator's small area, mapped at its first use (collectively)."""
    if state.area is None:
        state.area = Area(state, _region(state, SMALL_SLOT, _map_small), SMALL_SLOT, "coll")
        state._bind_area(False, state.area.address, SMALL_SLOT)
    return state.area


def large_area_of(state):
    """The communicator's large area, mapped when a collective first needs it (all
    members know from the first step that it does)."""
    if state.large_area is None:
        slot = large_slot_bytes(len(state.ranks))
        state.large_area = Area(state, _region(state, slot, _map_large), slot, "large")
        state._bind_area(True, state.large_area.address, slot)
    return state.large_area


class _PrivateRegion:
    """A communicator of one shares with nobody: its area is plain memory."""

    def __init__(self, nbytes):
        import ctypes
        self.array = (ctypes.c_char * (nbytes + 64))()
        skip = -ctypes.addressof(self.array) % 64     # cache-line aligned, as a segment
        self.address = ctypes.addressof(self.array) + skip
        self.buffer = memoryview(self.array).cast("B")[skip:skip + nbytes]

    def close(self):
        self.buffer.release()


_cached = {}        # segment name -> Region: areas this process unmapped last, still mapped
_cache_lock = threading.Lock()      # threads make and free communicators at once


def _keep_mapped(region):
    atomic.forget(region.address, region.size)     # a new communicator's, from now on
    with _cache_lock:
        _cached[region.name] = region
        while len(_cached) > CACHED_AREAS:      # its name stays: it can be mapped again
            _cached.pop(next(iter(_cached))).close()


def _mapped(name, nbytes):
    """Area segment ``name``: this process's mapping of it when it kept one."""
    with _cache_lock:
        region = _cached.pop(name, None)
    if region is not None and region.size == nbytes:
        return region
    if region is not None:
        region.close()
    return segments.Region.attach(name, nbytes)


def _pool_entries(world, wanted, size=None):
    """The addresses of the pool's entries in state ``wanted`` (and of ``size``) as one
    plain read of the table sees them: candidates, which a compare-and-swap on an
    entry's state then takes or not (one read instead of 64 atomic loads at every
    communicator's first collective)."""
    table = _POOL_TABLE.unpack_from(world.mem, job.OFF_AREA_POOL)
    states = table[0::2]
    if wanted not in states:
        return
    first = world.base + job.OFF_AREA_POOL
    for index, state in enumerate(states):
        if state == wanted and (size is None or table[2 * index + 1] == size):
            yield first + index * POOL_ENTRY


def _pool_take(world, size):
    """The name of a pooled small area for a communicator of ``size``, taken out of
    the pool; None when it has none."""
    for entry in _pool_entries(world, POOL_READY, size):
        if atomic.cas32(entry, POOL_READY, POOL_BUSY) != POOL_READY:
            continue
        if atomic.load32(entry + POOL_SIZE) != size:   # given again meanwhile, another size
            atomic.store32(entry, POOL_READY)
            continue
        at = entry - world.base + POOL_NAME
        name = bytes(world.mem[at:at + NAME_BYTES]).rstrip(b"\0").decode()
        atomic.store32(entry, POOL_EMPTY)
        return name
    return None


def recycle(state):
    """The last member out of a communicator gives its areas to the pool (a large
    one while the pool holds fewer than LARGE_POOLED), or unlinks them; their
    mappings stay in this process's cache."""
    world, size = job.current(), len(state.ranks)
    for area, pooled_as in ((state.area, size), (state.large_area, size | POOL_LARGE)):
        if area is None or not isinstance(area.region, segments.Region):
            continue
        name = area.region.name
        full = pooled_as & POOL_LARGE and _large_pooled(world) >= LARGE_POOLED
        if full or not _pool_give(world, name, pooled_as):
            segments.unlink(name)


def _pool_give(world, name, pooled_as):
    """Put area ``name`` in an empty entry of the pool: False when it has none."""
    for entry in _pool_entries(world, POOL_EMPTY):
        if atomic.cas32(entry, POOL_EMPTY, POOL_BUSY) == POOL_EMPTY:
            at = entry - world.base + POOL_NAME
            world.mem[at:at + NAME_BYTES] = name.encode().ljust(NAME_BYTES, b"\0")
            atomic.store32(entry + POOL_SIZE, pooled_as)
            atomic.store32(entry, POOL_READY)
            return True
    return False


def _large_pooled(world):
    """The large areas the pool holds, as one plain read of its table sees them."""
    table = _POOL_TABLE.unpack_from(world.mem, job.OFF_AREA_POOL)
    return sum(1 for state, size in zip(table[0::2], table[1::2])
               if state == POOL_READY and size & POOL_LARGE)


def _pooled_or_made(world, size, nbytes, large=False):
    """Rank 0's small area, or its ``large`` one: a pooled one (cleared: a new
    communicator's steps start from zero), else a new segment."""
    slot = large_slot_bytes(size) if large else SMALL_SLOT
    name = _pool_take(world, size | POOL_LARGE if large else size)
    if name is None:
        return segments.Region.create(world.job_id, nbytes, kind=AREA_KIND)
    region = _mapped(name, nbytes)
    _clear(region.buffer, size, slot)
    return region


def _clear(mem, nranks, slot):
    """Zero what a step reads before a member wrote it in this communicator: the
    counter's line, and each member's read cell and two slot headers. A slot's data
    is read only once its header says which step put it there, so the rest keeps
    the last communicator's bytes (clearing 5 lines instead of 33 KiB at 2 ranks,
    lines the other processes wrote last)."""
    mem[0:AREA_HEADER] = bytes(AREA_HEADER)
    first, block = READ_LINE + SLOT_HEADER, READ_LINE + 2 * (SLOT_HEADER + slot)
    for start in range(AREA_HEADER, AREA_HEADER + nranks * block, block):
        mem[start:start + first] = _ZEROS[:first]
        second = start + first + slot
        mem[second:second + SLOT_HEADER] = _ZEROS[:SLOT_HEADER]


def _region(state, slot, mapper):
    """The memory of an area of ``slot`` bytes per slot (collective): plain memory for
    a communicator of one, else ``mapper(state, nbytes, world, its barrier slot's
    address, where an area's name goes there in the world segment)``."""
    nbytes = Area.nbytes(len(state.ranks), slot)
    if len(state.ranks) == 1:
        return _PrivateRegion(nbytes)
    world = job.current()
    cell = world.slot_address(state.slot)
    return mapper(state, nbytes, world, cell, cell - world.base + NAME_OFFSET)


def _map_small(state, nbytes, world, cell, name_at):
    """Map the small area: rank 0 takes a pooled one or creates the segment, names it
    in the communicator's barrier slot and sets the slot's area cell (AREA_NAMED, or
    AREA_FAILED with its own error); the others wait for that cell alone and map the
    name. A member that cannot map a name rank 0 could raises ERR_NO_MEM alone: the
    others wait in the first step until it takes part or exits. Its name stays
    (recycle() gives it back to the pool).

    The cell says which try it answers (AREA_TRY * tries before, every member
    counting its own), so a collective tried again after a failure never reads the
    last try's answer: a member that reads a later try's knows this one failed."""
    size, published = len(state.ranks), cell + job.OFF_SLOT_AREA
    tries = state.area_tries
    state.area_tries += 1       # a success maps it for good: nobody tries again
    named = AREA_TRY * tries + AREA_NAMED
    if state.rank == 0:
        try:
            region = _pooled_or_made(world, size, nbytes)
        except (errors.Exception, OSError):
            atomic.cell_store(published, AREA_TRY * tries + AREA_FAILED)
            raise
        world.mem[name_at:name_at + NAME_BYTES] = region.name.encode().ljust(NAME_BYTES,
                                                                             b"\0")
        atomic.cell_store(published, named)
        return region
    last = AREA_TRY * (tries - 1) + AREA_FAILED if tries else 0
    if job.wait_cell(published, last, lambda: "the collective area of %s (%d ranks)" % (
            state.name or "a communicator", size), state.ranks) != named:
        raise errors.Exception(errors.ERR_NO_MEM, "rank 0 of the communicator could not "
                               "make its collective area; see its own error")
    name = bytes(world.mem[name_at:name_at + NAME_BYTES]).rstrip(b"\0").decode()
    try:
        return _mapped(name, nbytes)
    except (errors.Exception, OSError) as exc:
        raise errors.Exception(errors.ERR_NO_MEM, "cannot map the collective area of "
                               "the communicator: %s" % exc) from None


def _map_large(state, nbytes, world, cell, name_at):
    """Map a large area: rank 0 takes a pooled one or creates the segment and puts
    its name in the communicator's barrier slot, the others map it (or find it
    still mapped: _mapped). A failure anywhere is every member's, and rank 0 then
    unlinks the name. The first barrier keeps the name of the small area there
    until every member read it (the root of a broadcast gets here without waiting
    for the others' first step)."""
    size = len(state.ranks)
    failed_at = cell + FAILED_OFFSET
    region = error = None
    name = b""
    slot_barrier(state)
    if state.rank == 0:
        atomic.store32(failed_at, 0)
        try:
            region = _pooled_or_made(world, size, nbytes, large=True)
            name = region.name.encode()
        except (errors.Exception, OSError) as exc:
            error = exc
        world.mem[name_at:name_at + NAME_BYTES] = name.ljust(NAME_BYTES, b"\0")
    slot_barrier(state)
    if state.rank != 0:
        name = bytes(world.mem[name_at:name_at + NAME_BYTES]).rstrip(b"\0")
        if name:
            try:
                region = _mapped(name.decode(), nbytes)
            except (errors.Exception, OSError) as exc:
                error = exc
                atomic.store32(failed_at, 1)
    slot_barrier(state)
    if error is None and (atomic.load32(failed_at) or region is None):
        error = errors.Exception(errors.ERR_NO_MEM, "a member of the communicator could "
                                 "not map its collective area; see its own error")
    if error is not None:
        if region is not None:
            region.close()
            if state.rank == 0:     # every member tried to map it by the last barrier
                segments.unlink(region.name)
        if not isinstance(error, errors.Exception):
            error = errors.Exception(errors.ERR_NO_MEM, "cannot map the collective area "
                                     "of the communicator: %s" % error)
        raise error
    return region


# --- steps ----------------------------------------------------------------------

def step(state, area, error, length, chunk, unit=0, only=None):
    """Deposit this member's header and ``chunk`` (bytes-like, at most a slot), arrive,
    and wait until every member arrived: the parity the others' slots hold. With
    ``only`` (a broadcast's root) the root deposits and waits for nobody, and the
    others deposit nothing and wait for the root's deposit; they call ``read_done``
    once they read it."""
    sequence = _next_step(state, area)
    parity = sequence & 1
    if only is not None and only != area.me:
        _advance(state, area.target, 1)
        if area.nranks > 1:
            ready = area.address + area.offset(only, parity) + READY_OFFSET
            _await(area, sequence, area.counter,
                   lambda value: atomic.load32(ready) & MASK32 == sequence)
        return parity
    offset = area.offset(area.me, parity)
    if area.nranks > 1:
        _await_clear(state, area, (sequence - 2) & MASK32)
    HEADER.pack_into(area.mem, offset, error, 0, length, unit)
    if chunk is not None and len(chunk):
        start = offset + SLOT_HEADER
        area.mem[start:start + len(chunk)] = chunk
    # the read cell before the deposit: whoever sees the deposit sees it, so nobody
    # waits for it. A root reads nothing of its own broadcast; a full step's reads
    # of the step before are done.
    atomic.store32(area.read_cell(area.me), (sequence if only is not None else sequence - 1)
                   & MASK32)
    atomic.store32(area.address + offset + READY_OFFSET, sequence)
    if area.nranks > 1:
        target = _advance(state, area.target, 1 if only is not None else area.nranks)
        atomic.cell_add(area.counter, 1)
        if only is None:
            _await(area, sequence, area.counter,
                   lambda value: (value - target) & MASK32 < 1 << 31)
            setattr(state, area.clear, (sequence - 1) & MASK32)
    return parity


def read_done(state, area, only):
    """A broadcast's receiver (not ``only``, its root) finished reading the step: its
    read cell, and whoever waits for it (the root, to reuse its slot)."""
    if only is not None and only != area.me and area.nranks > 1:
        atomic.cell_store(area.read_cell(area.me), getattr(state, area.sequence))


def _next_step(state, area):
    """Count the step; at its start every member finished reading the steps up to
    three before (see the module's docstring)."""
    sequence = _advance(state, area.sequence, 1)
    if _before(getattr(state, area.clear), sequence - 3):
        setattr(state, area.clear, (sequence - 3) & MASK32)
    return sequence


def _advance(state, name, by):
    value = (getattr(state, name) + by) & MASK32
    setattr(state, name, value)
    return value


def _before(a, b):
    """Is step a before step b (mod 2**32)?"""
    return (a - b) & MASK32 >= 1 << 31


def _await_clear(state, area, sequence):
    """Wait until every other member finished reading step ``sequence``; learn the
    last step they all did."""
    if not _before(getattr(state, area.clear), sequence):
        return
    least = getattr(state, area.sequence)
    for rank in range(area.nranks):
        if rank != area.me:
            cell = area.read_cell(rank)
            _await(area, sequence, cell, lambda value: not _before(value & MASK32, sequence),
                   rank)
            read = atomic.load32(cell) & MASK32
            least = read if _before(read, least) else least
    setattr(state, area.clear, least)


def _await(area, sequence, cell, condition, reader=None):
    """Wait on ``cell`` (the counter, which every deposit bumps, or a read cell) until
    ``condition(value)`` holds."""
    job.wait_until(cell, condition, lambda: _describe(area, sequence, reader), area.peers)


def error_class(exc):
    """What a member deposits for an exception it raises: its class, ERR_ARG for
    a non-MPI one (a ValueError, a user op's own exception)."""
    return exc.Get_error_class() if isinstance(exc, errors.Exception) else errors.ERR_ARG


def _describe(area, sequence, reader=None):
    text = "step %d of a collective on %s (%d ranks)" % (sequence, area.label, area.nranks)
    if reader is None:
        return text
    return "%s: rank %d to finish reading it" % (text, reader)


def wait_check(state, sequence, first, reader):
    """Between the slices of a step's wait in C: say what this rank waits for
    (``reader`` >= 0: that member's reading of the step), and return the job's
    problem (an abort, a dead peer) if there is one, else None. C raises it only
    if the step is still not done after: a peer publishes its exit after its last
    contribution, so the problem read first never blames a peer that did arrive."""
    text = _describe(area_of(state), sequence, reader if reader >= 0 else None)
    world = job.current()
    if first:
        world.note_waiting(text)
    problem = job.job_problem(state.ranks, text)
    if problem is None:
        job.run_idle_hooks()
    return problem


def wait_over():
    job.current().clear_waiting()


class Call:
    """One collective as this member runs it: the first error seen wins, and is
    raised at the end, after every step. ``resumed`` is what the C path answers
    when it took this member's first step and left the rest to Python:
    (parity, lengths, units)."""

    def __init__(self, comm, name, resumed=None):
        self.state = comm._s
        self.name = name
        self.area = area_of(self.state)
        self.error = None
        self.resumed = resumed

    def failed(self, exc):
        if self.error is None:
            self.error = exc

    def agrees(self, rank, got, expected):
        """Does ``rank`` bring the ``expected`` bytes? If not, the error to raise at
        the end: ERR_TRUNCATE when it brings more, ERR_COUNT when less."""
        if got == expected:
            return True
        self.failed(errors.Exception(
            errors.ERR_TRUNCATE if got > expected else errors.ERR_COUNT,
            "%s: rank %d sent %d bytes where this rank expects %d; every rank must "
            "pass the same count and datatype" % (self.name, rank, got, expected)))
        return False

    def first_step(self, length, chunk, unit=0, only=None):
        """Step 0: deposit, then raise what some member's arguments did wrong.
        Answers the parity and every member's (length, unit). With ``only`` (a
        broadcast's root) the members read the root's header alone, and the root
        nobody's: a member other than the root that failed here goes on stepping
        and raises at the end (the others do not wait for it)."""
        area = self.area
        seen = range(area.nranks) if only is None else [only] if only != area.me else []
        if self.resumed is not None:
            parity = self.resumed[0]    # the C path took it
        else:
            own = self.error
            parity = step(self.state, area, error_class(own) if own is not None else 0,
                          length if own is None else 0, chunk if own is None else None, unit,
                          only)
            if own is not None and (only is None or only == area.me):
                raise own
        lengths, units = [0] * area.nranks, [0] * area.nranks
        if only is not None:
            lengths[area.me] = length
        for rank in seen:
            error, _, lengths[rank], units[rank] = area.header(rank, parity)
            if error:
                read_done(self.state, area, only)
                raise errors.Exception(
                    error, "%s: rank %d failed in this call (%s) and could not take part; "
                    "its own error says what to fix"
                    % (self.name, rank, errors.error_string(error)))
        return parity, lengths, units

    def done(self):
        if self.error is not None:
            raise self.error


def local(call, function, *args):
    """``function(*args)``, or None with the exception kept for the first step."""
    try:
        return function(*args)
    except Exception as exc:  # ValueError, BufferError, MPI.Exception, a user op's own
        call.failed(exc)
        return None


# --- moving byte streams -----------------------------------------------------------

def exchange(call, stream, plan, only=None):
    """Every member's ``stream`` (bytes-like; None once the call failed here) to
    whoever wants parts of it; ``plan(lengths, first)`` answers the parts this member
    takes: (rank, offset in its stream, length, destination view), from every
    member's stream length and ``first(rank)``, the start of its stream (at least a
    small slot of it, or all of it). With ``only`` (a broadcast's root) the others
    take from the root alone and nobody waits for them (first_step)."""
    small = call.area
    stream = memoryview(stream).cast("B") if stream is not None else memoryview(b"")
    parity, lengths, _ = call.first_step(len(stream), stream[:small.slot], 0, only)
    wants = local(call, plan, lengths, lambda rank: small.data(
        rank, parity, 0, min(small.slot, lengths[rank]))) or ()
    if max(lengths) <= small.slot:
        _take(small, parity, 0, small.slot, wants)
    read_done(call.state, small, only)
    if max(lengths) > small.slot:
        area = large_area_of(call.state)
        size = area.slot
        for index in range(-(-max(lengths) // size)):
            parity = step(call.state, area, 0, len(stream),
                          stream[index * size:(index + 1) * size], 0, only)
            _take(area, parity, index * size, size, wants)
            read_done(call.state, area, only)
    call.done()


def _take(area, parity, start, size, wants):
    """Copy what each want holds of the chunk [start, start + size) of its rank's stream."""
    stop = start + size
    for rank, offset, length, into in wants:
        low, high = max(offset, start), min(offset + length, stop)
        if low < high:
            into[low - offset:high - offset] = area.data(rank, parity, low - start,
                                                         high - start)


# --- reductions -----------------------------------------------------------------

class WholeItemsTooLarge(Exception):
    """A fold of items a user's function must see whole, each larger than a chunk of
    the large area: every member learns it from the units of the first step, so all
    of them leave the fold, and the caller moves the vectors another way."""


def _chunk(slot, unit):
    """The bytes of a step's chunk of a vector of ``unit``-byte elements."""
    return slot - slot % max(unit, 1)


SLICED_ABOVE = 2    # from 3 ranks on, large folds are sliced (see fold)


def fold(call, send, receive_range, fold_parts, place, itemsize, whole=False):
    """Reduce every member's ``send`` bytes (equal lengths) element-wise in rank order,
    chunk by chunk. ``receive_range(lengths)`` answers (first rank, last rank + 1,
    byte start, byte stop) this member folds, or None; ``fold_parts(parts)`` gives
    the bytes of parts (equal byte views, rank order) folded, ``place(start, data)``
    puts folded bytes where the result goes.

    A ``whole`` fold (every rank's whole vector: Allreduce, Reduce) of data the large
    area carries, at more than SLICED_ABOVE ranks, is sliced: in a first step of
    each chunk every member folds one slice of it, in a second it publishes its
    slice and takes the others' (a reduce-scatter, then an allgather), so each
    member reads its share of the data, not all of it."""
    small = call.area
    send = memoryview(send).cast("B") if send is not None else memoryview(b"")
    parity, lengths, units = call.first_step(len(send), send[:_chunk(small.slot, itemsize)],
                                             itemsize)
    # chunks hold whole elements; every member agrees on their size from the units
    unit = max(units)
    if len({unit for unit in units if unit}) > 1:
        call.failed(errors.Exception(errors.ERR_TYPE, "%s: the ranks pass datatypes of "
                                     "different sizes; pass the same datatype everywhere"
                                     % call.name))
    if unit > large_slot_bytes(small.nranks):
        call.done()
        raise WholeItemsTooLarge(unit)
    wanted = local(call, receive_range, lengths)

    def combine(start, parts):
        place(start, fold_parts(parts))
    if max(lengths) <= _chunk(small.slot, unit):
        _combine(call, small, parity, 0, small.slot, wanted, combine)
    elif whole and small.nranks > SLICED_ABOVE:
        _sliced(call, large_area_of(call.state), send, max(lengths), unit, fold_parts,
                place if wanted is not None else None)
    else:
        area = large_area_of(call.state)
        size = _chunk(area.slot, unit)
        for index in range(-(-max(lengths) // size)):
            start = index * size
            parity = step(call.state, area, 0, len(send), send[start:start + size])
            _combine(call, area, parity, start, size, wanted, combine)
    call.done()


def slices(length, nranks, unit):
    """(start, stop) of each rank's slice of a chunk of ``length`` bytes: equal whole
    elements, the last rank taking what is left."""
    size = length // nranks - length // nranks % max(unit, 1)
    return [(rank * size, (rank + 1) * size if rank < nranks - 1 else length)
            for rank in range(nranks)]


def _sliced(call, area, send, total, unit, fold_parts, place):
    """A whole fold through the large area, two steps per chunk (see fold)."""
    size = _chunk(area.slot, unit)
    me, nranks = area.me, area.nranks
    for start in range(0, total, size):
        length = min(size, total - start)
        cut = slices(length, nranks, unit)
        parity = step(call.state, area, 0, len(send), send[start:start + length])
        low, high = cut[me]
        mine = None
        if call.error is None:
            mine = local(call, fold_parts, [area.data(rank, parity, low, high)
                                            for rank in range(nranks)])
        parity = step(call.state, area, 0, len(send), mine if mine is not None
                      else bytes(high - low))
        if place is not None and call.error is None:
            for rank, (low, high) in enumerate(cut):
                place(start + low, area.data(rank, parity, 0, high - low))


def _combine(call, area, parity, start, size, wanted, combine):
    """Fold what this member wants of the chunk [start, start + size)."""
    if wanted is None or call.error is not None:
        return      # (still stepping: the others fold, and count on this member)
    first, last, low, high = wanted
    low, high = max(low, start), min(high, start + size)
    if low < high:
        parts = [area.data(rank, parity, low - start, high - start)
                 for rank in range(first, last)]
        local(call, combine, low, parts)


if atomic.BACKEND == "c":
    from .. import _native
    _native.collectives_setup(area_header=AREA_HEADER, slot_header=SLOT_HEADER,
                              read_line=READ_LINE, wait_slice=job.WAIT_SLICE, check=wait_check,
                              over=wait_over,
                              in_place=constants.IN_PLACE, sliced_above=SLICED_ABOVE,
                              map_area=area_of, map_large_area=large_area_of)
    fast_bcast, fast_reduce = _native.coll_bcast, _native.coll_reduce
    fast_allreduce = _native.coll_allreduce
    fast_scan, fast_reduce_scatter_block = _native.coll_scan, _native.coll_reduce_scatter_block
    fast_gather, fast_allgather = _native.coll_gather, _native.coll_allgather
    fast_scatter, fast_alltoall = _native.coll_scatter, _native.coll_alltoall
    fast_alltoallv = _native.coll_alltoallv
    fast_gatherv, fast_allgatherv = _native.coll_gatherv, _native.coll_allgatherv
    fast_scatterv = _native.coll_scatterv
    fast_allgather_bytes, fast_bcast_bytes = (_native.coll_allgather_bytes,
                                              _native.coll_bcast_bytes)
else:
    def _miss(*args):
        return False
    fast_bcast = fast_reduce = fast_allreduce = fast_scan = fast_reduce_scatter_block = _miss
    fast_gather = fast_allgather = fast_scatter = fast_alltoall = fast_alltoallv = _miss
    fast_gatherv = fast_allgatherv = fast_scatterv = _miss
    fast_allgather_bytes = fast_bcast_bytes = _miss
