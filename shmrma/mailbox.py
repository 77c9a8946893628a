"""Point-to-point transport and MPI message matching.

Every ordered pair of ranks has a single-producer, single-consumer ring in the
world segment. A small message travels inline; a large one travels in its own
shared-memory segment whose name goes through the ring, so a send never waits
for its receiver (MPI's standard mode allows this buffering). When a ring is
full the record waits in a per-destination queue of the sender and is pushed
during later progress, which keeps per-pair order (MPI's non-overtaking rule).
A receiver drains rings into its local queue of unexpected messages and matches
them against posted receives in posting order.
"""
import struct
from collections import deque

from . import atomic, constants, job, segments

OFF_HEAD = 0      # bytes consumed, written by the receiver
OFF_TAIL = 64     # bytes produced, written by the sender
OFF_BLOCKED = 128  # the sender has records queued, waiting for room

RECORD = struct.Struct("<IiiiQ")  # record length, flags, context, tag, payload length
PAD_FLAG = -1
FLAG_PICKLED = 1
FLAG_IN_SEGMENT = 2
FLAG_SYNC = 4       # synchronous send: the receiver acknowledges the match
SYNC_SHIFT = 8      # the flags above it carry the acknowledgement's id
SYNC_IDS = 1 << 23  # ids wrap below 2**31 (the flags are an int32)
MASK32 = 0xFFFFFFFF


def _padded(n):
    return (n + 7) & ~7


class Message:
    """A message that arrived and waits to be matched."""

    __slots__ = ("source", "context", "tag", "flags", "nbytes", "inline")

    def __init__(self, source, context, tag, flags, nbytes, inline):
        self.source = source
        self.context = context
        self.tag = tag
        self.flags = flags
        self.nbytes = nbytes
        self.inline = inline

    @property
    def pickled(self):
        return bool(self.flags & FLAG_PICKLED)

    @property
    def sync_id(self):
        """The id a synchronous send awaits its acknowledgement under, else None."""
        return self.flags >> SYNC_SHIFT if self.flags & FLAG_SYNC else None

    def matches(self, context, source, tag):
        return (self.context == context
                and (source == constants.ANY_SOURCE or source == self.source)
                and (tag == constants.ANY_TAG or tag == self.tag))

    def copy_into(self, target):
        """Copy the payload into the writable byte view ``target`` (len >= nbytes)."""
        if not self.flags & FLAG_IN_SEGMENT:
            target[:self.nbytes] = self.inline
            return
        segment = segments.Segment.attach(self.inline.decode(), self.nbytes)
        segment.unlink()
        try:
            view = segment.buffer
            target[:self.nbytes] = view
            view.release()
        finally:
            segment.close()

    def payload(self):
        if not self.flags & FLAG_IN_SEGMENT:
            return self.inline
        data = bytearray(self.nbytes)
        self.copy_into(memoryview(data))
        return data

    def discard(self):
        if self.flags & FLAG_IN_SEGMENT:
            segments.Segment.attach(self.inline.decode(), self.nbytes).unlink()


class Outgoing:
    """A send handed to the transport; ``done`` once its record is in the ring."""

    __slots__ = ("dest", "context", "tag", "flags", "nbytes", "inline", "done")

    def __init__(self, dest, context, tag, flags, nbytes, inline):
        self.dest = dest
        self.context = context
        self.tag = tag
        self.flags = flags
        self.nbytes = nbytes
        self.inline = inline
        self.done = False


class Mailbox:
    """The transport and matching state of this process."""

    def __init__(self, world):
        self.world = world
        self.me = world.rank
        self.mem = world.mem
        nranks = world.size
        self.ring_bytes = world.layout.ring_bytes
        self.inline_max = self.ring_bytes // 4
        self.out_channels = [world.channel_offset(self.me, d) for d in range(nranks)]
        self.in_channels = [world.channel_offset(s, self.me) for s in range(nranks)]
        self.tails = [atomic.load32(world.base + c + OFF_TAIL) & MASK32 for c in self.out_channels]
        self.heads = [atomic.load32(world.base + c + OFF_HEAD) & MASK32 for c in self.in_channels]
        self.unexpected = [deque() for _ in range(nranks)]
        self.posted = []
        self.queued = [deque() for _ in range(nranks)]
        self.queued_count = 0
        self.doorbell = world.doorbell(self.me)
        self.seen_bell = None

    # --- sending -------------------------------------------------------------
    def send(self, dest, context, tag, data, pickled=False, sync_id=None):
        """Hand ``data`` (bytes-like) to the transport; returns an Outgoing. With a
        ``sync_id`` the receiver acknowledges the match (comm.Receive.deliver)."""
        data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        nbytes = len(data)
        flags = FLAG_PICKLED if pickled else 0
        if sync_id is not None:
            flags |= FLAG_SYNC | sync_id << SYNC_SHIFT
        if nbytes > self.inline_max:
            data = self._stage_in_segment(data)
            flags |= FLAG_IN_SEGMENT
        out = Outgoing(dest, context, tag, flags, nbytes, data)
        if not self.queued[dest] and self._push(out):
            return out
        out.inline = bytes(out.inline)  # the caller may reuse its buffer once we return
        self.queued[dest].append(out)
        self.queued_count += 1
        self._flush_queue(dest)
        return out

    def _stage_in_segment(self, data):
        segment = segments.Segment.create(self.world.job_id, len(data))
        try:
            view = segment.buffer
            view[:] = data
            view.release()
        finally:
            segment.close()
        return segment.name.encode()

    def _push(self, out):
        base = self.world.base + self.out_channels[out.dest]
        ring = self.out_channels[out.dest] + job.CHANNEL_HEADER
        size = self.ring_bytes
        need = RECORD.size + _padded(len(out.inline))
        tail = self.tails[out.dest]
        used = (tail - atomic.load32(base + OFF_HEAD)) & MASK32
        position = tail % size
        skip = size - position if size - position < need else 0
        if used + skip + need > size:
            return False
        if skip:
            if skip >= RECORD.size:
                RECORD.pack_into(self.mem, ring + position, skip, PAD_FLAG, 0, 0, 0)
            position = 0
        RECORD.pack_into(self.mem, ring + position, need, out.flags, out.context, out.tag,
                         out.nbytes)
        start = ring + position + RECORD.size
        end = start + len(out.inline)
        self.mem[start:end] = out.inline
        if out.flags & FLAG_IN_SEGMENT:
            # the receiver takes the name up to the padding's zeros; the ring there
            # still holds earlier records' bytes
            self.mem[end:ring + position + need] = bytes(ring + position + need - end)
        tail = (tail + skip + need) & MASK32
        self.tails[out.dest] = tail
        atomic.store32(base + OFF_TAIL, tail)
        atomic.cell_add(self.world.doorbell(out.dest), 1)
        out.done = True
        return True

    def _flush_queue(self, dest):
        """Push queued sends while the ring has room. Out of room, flag the channel
        so the receiver rings this rank's doorbell once it makes room, then look
        once more: room made before the receiver could see the flag rings nobody."""
        queue = self.queued[dest]
        flagged = False
        while queue:
            if self._push(queue[0]):
                queue.popleft()
                self.queued_count -= 1
            elif flagged:
                return
            else:
                atomic.store32(self.world.base + self.out_channels[dest] + OFF_BLOCKED, 1)
                flagged = True

    # --- receiving -----------------------------------------------------------
    def progress(self):
        """Move arrived records into the matching engine and push queued sends."""
        bell = atomic.load32(self.doorbell)
        if bell != self.seen_bell:
            self.seen_bell = bell
            for source in range(len(self.in_channels)):
                self._drain(source)
        if self.queued_count:
            for dest, queue in enumerate(self.queued):
                if queue:
                    self._flush_queue(dest)
        return bell

    def _drain(self, source):
        base = self.world.base + self.in_channels[source]
        tail = atomic.load32(base + OFF_TAIL) & MASK32
        head = self.heads[source]
        if head == tail:
            return
        ring = self.in_channels[source] + job.CHANNEL_HEADER
        size = self.ring_bytes
        while head != tail:
            position = head % size
            if size - position < RECORD.size:
                head = (head + size - position) & MASK32
                continue
            length, flags, context, tag, nbytes = RECORD.unpack_from(self.mem, ring + position)
            if flags != PAD_FLAG:
                start = ring + position + RECORD.size
                inline_len = nbytes if not flags & FLAG_IN_SEGMENT else length - RECORD.size
                inline = bytes(self.mem[start:start + inline_len])
                if flags & FLAG_IN_SEGMENT:
                    inline = inline.rstrip(b"\0")
                self._arrived(Message(source, context, tag, flags, nbytes, inline))
            head = (head + length) & MASK32
        self.heads[source] = head
        atomic.store32(base + OFF_HEAD, head)
        if atomic.exchange32(base + OFF_BLOCKED, 0):
            atomic.cell_add(self.world.doorbell(source), 1)

    def _arrived(self, message):
        for index, receive in enumerate(self.posted):
            if message.matches(receive.context, receive.source, receive.tag):
                del self.posted[index]
                receive.deliver(message)
                return
        self.unexpected[message.source].append(message)

    def claim(self, message):
        """Take ``message`` (found by ``find``) out of the unexpected ones: Mprobe."""
        self.unexpected[message.source].remove(message)

    def find(self, context, source, tag, remove):
        """The first unexpected message matching, per source in arrival order."""
        sources = range(len(self.unexpected)) if source == constants.ANY_SOURCE else (source,)
        for src in sources:
            queue = self.unexpected[src]
            for index, message in enumerate(queue):
                if message.matches(context, source, tag):
                    if remove:
                        del queue[index]
                    return message
        return None

    def post(self, receive):
        """Match a receive (an object with context/source/tag and deliver()) now or later."""
        self.progress()
        message = self.find(receive.context, receive.source, receive.tag, remove=True)
        if message is not None:
            receive.deliver(message)
        else:
            self.posted.append(receive)

    def cancel(self, receive):
        try:
            self.posted.remove(receive)
            return True
        except ValueError:
            return False

    # --- waiting -------------------------------------------------------------
    def wait_for(self, condition, what, peers=()):
        """Make progress until ``condition()`` holds, sleeping on this rank's doorbell."""
        while True:
            bell = self.progress()
            if condition():
                return
            job.wait_cell(self.doorbell, bell, what, peers)


_mailbox = None


def mailbox():
    global _mailbox
    if _mailbox is None:
        import atexit
        _mailbox = Mailbox(job.current())
        atexit.register(flush_before_exit)
    return _mailbox


@job.on_new_rank
def _forget_mailbox():
    global _mailbox
    _mailbox = None


def flush_before_exit():
    """Push sends still queued for lack of room, so no message is lost at exit."""
    box = _mailbox
    if box is None or not box.queued_count:
        return
    dests = tuple(d for d, queue in enumerate(box.queued) if queue)
    box.wait_for(lambda: not box.queued_count,
                 "room to deliver %d queued sends before exit" % box.queued_count, dests)
