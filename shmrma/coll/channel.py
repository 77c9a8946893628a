"""The nonblocking collectives of a communicator, on shared memory.

A nonblocking collective must not wait for anyone when it starts, may be
outstanding with others, and completes in the Test or Wait of any member. Each
communicator that starts one maps a *channel* area that every member shares:
per member, SLOTS slots used in turn (the i-th collective in slot i % SLOTS),
and the count of collectives each member has *finished* (read everything it
needed of, in order). Starting a collective *deposits* this member's stream (the
bytes it contributes) in its slot: inline when it fits, else in this rank's
outbox (below), the slot then saying where; the step number, written last,
marks the slot ready. Members that need the stream (the collective's readers)
have their doorbell rung. A member completes its collective once every member it
needs (its sources) has deposited that step: it reads their streams straight
from shared memory (copies, folds) and finishes the step.

A slot is deposited into again only when every member has finished the step
that used it before (SLOTS steps back), so nothing is overwritten while read;
should a member be that far behind, the deposit waits in this rank's queue and
is made by a later call (any wait runs the queue, see job.on_idle). A member
that is waited for by a deposit rings everyone once it finishes a step.

A rank whose arguments are wrong deposits its error class instead of a stream
and raises at once; the members that need its stream raise at Wait, naming it.

A large Iallreduce or Ireduce is *sliced* (a SlicedFold), as the blocking one is
(collarea.fold): once every member deposited, each folds one slice of all the
vectors, writes it over that slice of its own stream (which only it reads) and
says so in its slot's *folded* cell (the step, after the error class its fold
raised, if any); each that receives the result then takes the others' folded
slices from their streams as their cells say they are there, and finishes the
step (Ireduce's other members finish once their slice is out). A stream is given
back only once every member finished its step, so the slices are read in place.

The *outbox* holds the streams too long for a slot: one segment per rank,
shared by its communicators, used as a ring; a stream's bytes are given back
once every member of its communicator finished its step. A stream larger than
the free room moves the outbox to a larger segment (a new generation, which
readers map by name when they meet it); the old one goes when its last stream
does. Names derive from the job's secret (job.World.shared_name), so every
member finds them without telling each other, and nobody outside the job can.
The channel area is unlinked once every member mapped it (or when the last
member frees the communicator); a rank unlinks its outbox once every other rank
mapped it, or it is retired; whatever is left, the job's sweep unlinks.
"""
import collections
import struct

from ..core import atomic, errors, job, segments
from .area import error_class

if atomic.BACKEND == "c":
    from .._native import ChannelCore as _CHANNEL_BASE
else:
    _CHANNEL_BASE = object      # _ChannelState below

SLOTS = 16              # steps a member may be ahead of the slowest reader
INLINE = 1024           # stream bytes a slot holds; longer streams go to the outbox
LINE = 64
SLOT_HEADER = 64
# ready (the step, written last), error class, stream length, and where a long
# stream lies: outbox generation (0: inline), offset, outbox size
HEADER = struct.Struct("<iiqqqq")
# after HEADER in a slot's header: the step whose slice this member folded (written
# last) and the error class its fold raised (SlicedFold)
FOLDED = struct.Struct("<ii")
OFF_FOLDED = HEADER.size
OFF_MAPPED = 0          # members that mapped the channel area
OFF_GATED = 4           # members whose deposit waits for a slot to be finished
OUTBOX_MIN = 1 << 20
MASK32 = 0xFFFFFFFF


def channel_of(state):
    """The communicator's channel, mapped at its first nonblocking collective."""
    if state.nbc is None:
        state.nbc = Channel(state)
    return state.nbc


class _ChannelState:
    """What a channel keeps for its protocol, on the fallback engine: with the C
    extension it is _native.ChannelCore, which csrc/coll/nonblocking.c shares (the same fields and
    the same _finish_steps)."""

    def __init__(self):
        self.operations = []        # outstanding here, in step order
        self.started = self.deposited = self.finished = 0   # steps, each in order
        self.gated = self.freed = 0
        self.n = self.me = 0
        self._doorbells = ()

    def _bind(self, address, doorbells):
        self._doorbells = tuple(doorbells)

    def _finish_steps(self):
        """Pop the done operations at the head, in step order, and publish the count."""
        before, operations = self.finished, self.operations
        while operations and operations[0].read and operations[0].deposited:
            self.finished = operations.pop(0).step
        if self.finished != before and self.n > 1:
            atomic.store64(self._finished_at(self.me), self.finished)
            if atomic.load32(self.base + OFF_GATED):
                for rank, bell in enumerate(self._doorbells):
                    if rank != self.me:
                        atomic.cell_add(bell, 1)
        if not operations:
            _active.discard(self)
            if self.freed:
                self._close_if_done()


if _CHANNEL_BASE is object:
    _CHANNEL_BASE = _ChannelState


class Channel(_CHANNEL_BASE):
    """A communicator's nonblocking collectives as this member runs them."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.n, self.me = len(state.ranks), state.rank
        self.world = job.current()
        self.label = state.name or "a communicator"
        self.region = _map(state, self.nbytes())
        self.base = self.region.address
        self.mem = self.region.buffer
        self._bind(self.base, [self.world.doorbell(rank) for rank in state.ranks])

    def nbytes(self):
        return LINE * (1 + self.n) + self.n * SLOTS * (SLOT_HEADER + INLINE)

    def _finished_at(self, rank):
        return self.base + LINE * (1 + rank)

    def _slot(self, rank, step):
        """Offset of rank's slot for ``step`` in the area (its header)."""
        return LINE * (1 + self.n) + (rank * SLOTS + step % SLOTS) * (SLOT_HEADER + INLINE)

    def slowest(self):
        """The fewest steps any member has finished."""
        return min(self.finished if rank == self.me else
                   atomic.load64(self._finished_at(rank)) for rank in range(self.n))

    # --- starting, progress ---
    # Both hold the rank's MPI lock (csrc/native.h): another thread may progress
    # this channel too (_progress_all), and the outbox and _active are the rank's.
    def start(self, operation):
        with atomic.mpi_lock:
            self.started += 1
            operation.step = self.started
            self.operations.append(operation)
            _active.add(self)
            self.progress()

    def progress(self):
        """Deposit what may be, complete what can be, finish steps in order."""
        with atomic.mpi_lock:
            for operation in self.operations:
                if not operation.deposited and not self._deposit(operation):
                    break
            for operation in self.operations:
                if not operation.read and operation.deposited:
                    operation.try_read(self)
            self._finish_steps()

    def _deposit(self, operation):
        step = operation.step
        if self.n > 1 and step - SLOTS > self.slowest():
            if not self.gated:      # say so, then look again: a finisher rings us then
                self.gated = 1
                atomic.fetch_add32(self.base + OFF_GATED, 1)
                return self._deposit(operation)
            return False
        if self.gated:
            self.gated = 0
            atomic.fetch_add32(self.base + OFF_GATED, -1)
        if self.n > 1:
            self._write(operation)
            for rank in operation.readers:
                atomic.cell_add(self.world.doorbell(self.state.ranks[rank]), 1)
        operation.deposited = True
        self.deposited = step
        if not operation.sources:
            operation.complete({})
        return True

    def _write(self, operation):
        """The stream (or the error) into this member's slot, the step last."""
        offset = self._slot(self.me, operation.step)
        stream = operation.stream
        error, length, where = operation.error_class, 0, (0, 0, 0)
        if not error and stream is not None:
            length = len(stream)
            try:
                where = _outbox().put(stream, self, operation.step) if length > INLINE else where
            except errors.Exception as exc:     # no room for an outbox: its readers learn it
                operation.error = exc
                error, length = exc.Get_error_class(), 0
            if not error and not where[0]:
                data = offset + SLOT_HEADER
                self.mem[data:data + length] = stream
        HEADER.pack_into(self.mem, offset, 0, error, length, *where)
        atomic.store32(self.base + offset, operation.step & MASK32)

    def _read(self, operation):
        """Complete ``operation`` if every source deposited its step."""
        views = self._source_views(operation)
        if views is not None:
            operation.complete(views)

    def _source_views(self, operation):
        """Each source's stream once every source deposited its step, else None
        (``operation`` completed with the error a source deposited, if any)."""
        step = operation.step & MASK32
        for rank in operation.sources:
            if atomic.load32(self.base + self._slot(rank, operation.step)) != step:
                operation.waiting_for = rank
                return None
        views = {}
        for rank in operation.sources:
            error = HEADER.unpack_from(self.mem, self._slot(rank, operation.step))[1]
            if error:
                operation.complete(None, failed(operation.name, rank, error))
                return None
            views[rank] = self._stream_view(rank, operation.step)
        return views

    def _read_sliced(self, operation):
        """A SlicedFold: fold this member's slice once every source deposited, then
        take the others' as they publish them."""
        if operation.pending is None:
            views = self._source_views(operation)
            if views is None:
                return
            self._fold_own(operation, views)
        self._take_folded(operation)

    def _fold_own(self, operation, views):
        """Fold this member's slice into its own stream, then publish it (or the
        error the fold raised, completing with it)."""
        error = 0
        try:
            operation.fold.fold_slice(views, self._stream_view(self.me, operation.step))
        except Exception as exc:    # a mismatch, a user op's own error
            error = error_class(exc)
            operation.complete(None, exc)
        folded = self.base + self._slot(self.me, operation.step) + OFF_FOLDED
        FOLDED.pack_into(self.mem, folded - self.base, 0, error)
        atomic.store32(folded, operation.step & MASK32)
        for rank in operation.sources:
            atomic.cell_add(self.world.doorbell(self.state.ranks[rank]), 1)
        operation.pending = list(operation.sources) if operation.fold.takes and not error \
            else []

    def _take_folded(self, operation):
        """Take each other member's folded slice that is published (in any order: a
        late member holds up no other's); complete once all are taken."""
        step = operation.step
        for rank in list(operation.pending):
            folded = self._slot(rank, step) + OFF_FOLDED
            if atomic.load32(self.base + folded) != step & MASK32:
                operation.waiting_for = rank
                continue
            error = FOLDED.unpack_from(self.mem, folded)[1]
            if error:
                operation.complete(None, failed(operation.name, rank, error))
                return
            low, high = operation.fold.cut[rank]
            operation.fold.take(low, self._stream_view(rank, step)[low:high])
            operation.pending.remove(rank)
        if not operation.pending and not operation.read:
            operation.complete({})

    def _stream_view(self, rank, step):
        """Rank's stream for ``step``: in its slot, or in its outbox (this member's own
        outbox when its own)."""
        offset = self._slot(rank, step)
        _, _, length, generation, start, size = HEADER.unpack_from(self.mem, offset)
        if generation and rank == self.me:
            return _outbox().buffer_of(generation)[start:start + length]
        if generation:
            return _outbox_of(self.state.ranks[rank], generation, size)[start:start + length]
        return self.mem[offset + SLOT_HEADER:offset + SLOT_HEADER + length]

    def free(self):
        """The communicator was freed: unmap once nothing of ours is read any more."""
        with atomic.mpi_lock:
            self.freed = 1
            self._close_if_done()

    def _close_if_done(self):
        if self.freed and not self.operations and self.region is not None and \
                not _outbox().holds(self):
            self._bind(0, ())
            mem, self.mem = self.mem, None
            mem.release()
            self.region.close()
            self.region = None


def failed(name, rank, error_class):
    """The error of a collective whose source ``rank`` deposited its error instead."""
    return errors.Exception(error_class, "%s: rank %d failed in this call (%s) and sent "
                            "nothing; its own error says what to fix"
                            % (name, rank, errors.error_string(error_class)))


def mismatch(name, rank, got, expected):
    """The error of a collective whose source ``rank`` brought ``got`` bytes."""
    return errors.Exception(
        errors.ERR_TRUNCATE if got > expected else errors.ERR_COUNT,
        "%s: rank %d sent %d bytes where this rank expects %d; every rank must pass the "
        "same count and datatype" % (name, rank, got, expected))


class Operation:
    """One member's part in one nonblocking collective: what it deposits (``stream``,
    or ``error_class`` when its arguments were wrong), who reads it (``readers``),
    whose streams it needs (``sources``) and what it does with them
    (``finish(views)``, views mapping each source to its stream)."""

    def __init__(self, name, stream, readers, sources, finish, error_class=0):
        self.name = name
        self.stream, self.readers, self.sources = stream, readers, sources
        self.finish_with, self.error_class = finish, error_class
        self.step = 0
        self.deposited = self.read = False
        self.error = None
        self.waiting_for = None

    def complete(self, views, error=None):
        """Read the sources' streams (once): the error the request raises, if any."""
        self.stream = None
        if error is not None:
            self.error = self.error or error
        elif self.finish_with is not None and self.error is None:
            try:
                self.finish_with(views)
            except Exception as exc:  # a mismatch, a user op's own error
                self.error = exc
        self.finish_with = None
        self.read = True    # last: the thread that waits for it takes it as done
        job.wake_threads()

    def try_read(self, channel):
        channel._read(self)

    @property
    def done(self):
        return self.deposited and self.read


class SlicedFold(Operation):
    """A whole reduction that the members split (see the module docstring): ``fold``
    has ``cut`` (each member's (start, stop) slice of the vector's bytes),
    ``fold_slice(views, own)`` (fold this member's slice of the sources' streams and
    its own stream ``own`` over that slice of ``own``), ``takes`` (does this member
    take the others' folded slices), ``take(start, data)`` (a folded slice into the
    result) and ``finish()``."""

    def __init__(self, name, stream, readers, sources, fold):
        super().__init__(name, stream, readers, sources, lambda views: fold.finish())
        self.fold = fold
        self.pending = None     # members whose folded slice is awaited, once ours is out

    def try_read(self, channel):
        channel._read_sliced(self)


# --- the outbox ---------------------------------------------------------------

class Outbox:
    """This rank's streams too long for a slot (see the module docstring)."""

    def __init__(self):
        self.generation = 0
        self.region = None
        self.size = 0
        self.head = LINE            # where the next stream goes; [0, LINE) counts mappers
        self.streams = collections.deque()  # (start, end, generation, channel, step)
        self.retired = {}           # generation -> region still holding streams

    def put(self, stream, channel, step):
        """Copy ``stream`` in: (generation, offset, size) to find it by."""
        self.release()
        length = len(stream)
        start = self._room(length)
        if start is None:
            self._grow(length)
            start = LINE
        self.region.buffer[start:start + length] = stream
        self.head = start + length
        self.streams.append((start, start + length, self.generation, channel, step))
        return self.generation, start, self.size

    def buffer_of(self, generation):
        """The buffer of this outbox's ``generation`` (the current or a retired one)."""
        region = self.region if generation == self.generation else self.retired[generation]
        return region.buffer

    def _room(self, length):
        """Where ``length`` bytes fit in the current generation, or None."""
        mine = [s for s in self.streams if s[2] == self.generation]
        if self.region is None:
            return None
        if not mine:
            return LINE if LINE + length <= self.size else None
        tail = mine[0][0]
        if self.head > tail:        # used: [tail, head); free: the end, then the start
            if self.head + length <= self.size:
                return self.head
            return LINE if LINE + length <= tail else None
        return self.head if self.head + length <= tail else None

    def _grow(self, length):
        if self.region is not None:
            if any(s[2] == self.generation for s in self.streams):
                self.retired[self.generation] = self.region
            else:
                self._drop(self.region)
        size = OUTBOX_MIN
        while size < 2 * (length + LINE):
            size *= 2
        self.generation += 1
        world = job.current()
        self.region = segments.Region.create_or_attach(
            world.shared_name("outbox.%d.%d" % (world.rank, self.generation)), size)
        self.size, self.head = size, LINE

    def release(self):
        """Give back the streams every member of their communicator finished."""
        while self.streams:
            _, _, generation, channel, step = self.streams[0]
            if channel.n > 1 and step > channel.slowest():
                break
            self.streams.popleft()
            if generation in self.retired and \
                    not any(s[2] == generation for s in self.streams):
                self._drop(self.retired.pop(generation))
            channel._close_if_done()

    def holds(self, channel):
        return any(s[3] is channel for s in self.streams)

    @staticmethod
    def _drop(region):
        region.unlink()
        region.close()


_outboxes = []          # this rank's (one, made at first use)
_mapped = {}            # (world rank, generation) -> the other ranks' outboxes mapped here
_active = set()         # channels with collectives not yet finished here


def _outbox():
    if not _outboxes:
        _outboxes.append(Outbox())
    return _outboxes[0]


def _outbox_of(world_rank, generation, size):
    """A view of another rank's outbox, mapped at first sight; the last rank to map
    a generation unlinks its name."""
    key = (world_rank, generation)
    if key not in _mapped:
        world = job.current()
        region = segments.Region.attach(
            world.shared_name("outbox.%d.%d" % (world_rank, generation)), size)
        _mapped[key] = region
        if atomic.fetch_add32(region.address, 1) + 1 == world.size - 1:
            region.unlink()
    return _mapped[key].buffer


@job.on_idle
def _progress_all():
    """A rank waiting for anything runs its collectives' deposits and reads: others
    may be waiting for them."""
    with atomic.mpi_lock:
        for channel in list(_active):
            channel.progress()
        if _outboxes:
            _outboxes[0].release()


@job.on_new_rank
def _forget():
    _outboxes.clear()
    _mapped.clear()
    _active.clear()


def _map(state, nbytes):
    """The channel area: created by the first member to start a collective, mapped by
    the others when they start theirs; the last to map it unlinks its name."""
    from .area import _PrivateRegion
    size = len(state.ranks)
    if size == 1:
        return _PrivateRegion(nbytes)
    world = job.current()
    atomic.store32(world.slot_address(state.slot) + job.OFF_SLOT_CHANNEL, 1)
    region = segments.Region.create_or_attach(world.shared_name("nbc.%d" % state.context),
                                              nbytes)
    if atomic.fetch_add32(region.address + OFF_MAPPED, 1) + 1 == size:
        region.unlink()
    return region


def unlink_channel(state):
    """The last member frees the communicator: its channel's name goes, mapped or not
    (not looked for when no member made one: most communicators never do)."""
    world = job.current()
    if len(state.ranks) > 1 and atomic.load32(world.slot_address(state.slot) +
                                              job.OFF_SLOT_CHANNEL):
        segments.unlink(world.shared_name("nbc.%d" % state.context))
