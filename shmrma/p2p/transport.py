"""Point-to-point transport and MPI message matching.

Every ordered pair of ranks has a single-producer, single-consumer ring in the
world segment. A small message travels inline; a large one travels in its own
shared-memory segment whose name goes through the ring, so a send never waits
for its receiver (MPI's standard mode allows this buffering). When a ring is
full the record waits in a per-destination queue of the sender and is pushed
during later progress, which keeps per-pair order (MPI's non-overtaking rule).
A receiver drains rings into its local queue of unexpected messages and matches
them against posted receives in posting order.

Two engines implement this one protocol and one interface: the C extension's
``Transport`` (shmrma/csrc/p2p/transport.c), and ``Mailbox`` below, the fallback
that runs on the `atomics` package. ``mailbox()`` gives this process's engine.
The interface, in world ranks and sub-contexts:

    send(dest, context, tag, data, flags[, hold]) -> None (in the ring) or a ticket
    sent(dest, ticket) -> bool          the queued send went into the ring
    irecv(context, source, tag, target) -> Core   target None: an object receive
    cancel(core) -> bool                take a posted receive back
    find(context, source, tag, remove) -> Arrived or None   (Probe, Mprobe)
    deliver(arrived, target) -> Core    an Mprobe'd message received into target
    progress() -> doorbell value        drain the rings, push queued sends
    wait_core(core, timeout) -> bool    progress and wait until the core is done
    leftovers() -> (tags, posted)       unexpected messages' tags, posted receives
    queued, queued_dests(), doorbell    sends waiting for room, the ranks they wait
                                        for; this rank's wait cell
    ring_bytes, inline_max              each ring's size, the largest inline payload

A ``Core`` is a receive: ``done``, ``capacity`` (the target's bytes), and once
done ``source`` (world rank),
``tag``, ``count`` (bytes), ``flags``, ``error`` (ERR_TRUNCATE or 0) and, for
an object receive, ``payload`` (the bytes). A synchronous send's receiver
acknowledges the match itself, as soon as a receive takes the message.
"""
import atexit
import functools
import os
import struct
from collections import deque

from ..core import atomic, constants, errors, job, segments
from ..types import msgpickle
from ..types.status import Status

OFF_HEAD = 0      # bytes consumed, written by the receiver
OFF_TAIL = 64     # bytes produced, written by the sender
OFF_BLOCKED = 128  # the sender has records queued, waiting for room

RECORD = struct.Struct("<IiiiQ")  # record length, flags, context, tag, payload length
PAD_FLAG = -1
FLAG_PICKLED = 1
FLAG_IN_SEGMENT = 2
FLAG_SYNC = 4       # synchronous send: the receiver acknowledges the match
FLAG_STAGED = 8     # the payload is in the pair's staging ring (C engine)
FLAG_STAGING = 16   # not a message: the name of the sender's staging ring (C engine)
FLAG_DIRECT = 32    # staged, the receiver reads the payload from the sender's memory (C engine)
STAGING_HEADER = 64  # a staging ring's receiver head, alone on its line
SYNC_SHIFT = 8      # the flags above it carry the acknowledgement's id
SYNC_IDS = 1 << 23  # ids wrap below 2**31 (the flags are an int32)
# a communicator's sub-contexts: user messages, the collectives of an
# intercommunicator, Create_group's handshakes, nonblocking collectives,
# synchronous sends' acknowledgements, the blocks of partitioned sends, the
# handshakes that make intercommunicators (Create_intercomm, Merge, ...)
P2P, COLLECTIVE, HANDSHAKE, NONBLOCKING, SYNC_ACK, PARTITIONED, CONNECT = 0, 1, 2, 3, 4, 5, 6
MAX_TAG = 2**31 - 1     # the largest tag; the value of the TAG_UB attribute (MPI.TAG_UB: its keyval)
SUBCONTEXTS = 8
MASK32 = 0xFFFFFFFF


def _padded(n):
    return (n + 7) & ~7


def matches(context, source, tag, want_context, want_source, want_tag):
    return (context == want_context
            and (want_source == constants.ANY_SOURCE or want_source == source)
            and (want_tag == constants.ANY_TAG or want_tag == tag))


# --- the payload of a message staged in its own segment -----------------------

def stage(job_id, data):
    """Copy ``data`` into a new segment; its name (bytes) travels in the ring."""
    segment = segments.Segment.create(job_id, len(data))
    try:
        view = segment.buffer
        view[:] = data
        view.release()
    finally:
        segment.close()
    return segment.name.encode()


def fetch(name, nbytes, target=None):
    """Copy a staged payload into ``target`` (or a new bytearray, returned), then
    unlink its segment: a staged payload is read once."""
    data = target if target is not None else bytearray(nbytes)
    segment = segments.Segment.attach(name.decode(), nbytes)
    segment.unlink()
    try:
        with segment.buffer as view, memoryview(data) as into:
            into.cast("B")[:nbytes] = view
    finally:
        segment.close()
    return data


def discard(name, nbytes):
    """Unlink a staged payload no receive will read (a truncated message)."""
    segments.unlink(name.decode())


class Arrived:
    """A message that arrived and waits to be matched."""

    __slots__ = ("source", "context", "tag", "flags", "nbytes", "inline")

    def __init__(self, source, context, tag, flags, nbytes, inline):
        self.source = source
        self.context = context
        self.tag = tag
        self.flags = flags
        self.nbytes = nbytes
        self.inline = inline    # the payload, or the name of the segment holding it


class Core:
    """A receive: what it matches, where it goes, and how it completed."""

    __slots__ = ("context", "want_source", "want_tag", "target", "done", "capacity", "source",
                 "tag", "count", "flags", "error", "payload")

    def __init__(self, context, source, tag, target):
        self.context, self.want_source, self.want_tag = context, source, tag
        self.target = target
        self.done = False
        self.capacity = 0 if target is None else len(target)   # bytes (a byte view)
        self.source = self.tag = constants.ANY_SOURCE
        self.count = self.flags = self.error = 0
        self.payload = None


def _locked(method):
    """A Mailbox method run holding the rank's MPI lock, as the C engine's entry points
    are (csrc/p2p/transport.c): it then rings this rank's doorbell when it completed
    what another thread may wait for (a receive, a queued send)."""
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with atomic.mpi_lock:
            try:
                return method(self, *args, **kwargs)
            finally:
                if self.events != self.events_rung:
                    self.events_rung = self.events
                    if atomic.mpi_lock_shared():
                        atomic.cell_add(self.doorbell, 1)
    return locked


class Mailbox:
    """The transport and matching state of this process (the fallback engine)."""

    def __init__(self, world):
        self.world = world
        self.me = world.rank
        self.mem = world.mem
        nranks = world.size
        self.ring_bytes = world.layout.ring_bytes
        self.inline_max = self.ring_bytes // 4
        self.out_channels = [world.channel_offset(self.me, d) for d in range(nranks)]
        self.in_channels = [world.channel_offset(s, self.me) for s in range(nranks)]
        # a slot no process took yet has fresh channels, maybe not even reserved
        taken = world.processes()
        self.tails = [atomic.load32(world.base + c + OFF_TAIL) & MASK32 if d < taken else 0
                      for d, c in enumerate(self.out_channels)]
        self.heads = [atomic.load32(world.base + c + OFF_HEAD) & MASK32 if s < taken else 0
                      for s, c in enumerate(self.in_channels)]
        self.unexpected = [deque() for _ in range(nranks)]
        self.posted = []
        self.queues = [deque() for _ in range(nranks)]
        self.pushed = [0] * nranks      # tickets of queued sends pushed so far, per dest
        self.tickets = [0] * nranks     # tickets handed out so far, per dest
        self.queued = 0
        self.doorbell = world.doorbell(self.me)
        self.seen_bell = None
        self.events = self.events_rung = 0  # receives completed, queued sends pushed

    # --- sending -------------------------------------------------------------
    @_locked
    def send(self, dest, context, tag, data, flags, hold=False):
        """Hand ``data`` (bytes-like) to the transport: None once it is in the ring,
        else a ticket for sent() (the data was copied: the caller may reuse it; the C
        engine holds a large payload instead with ``hold``)."""
        nbytes = len(data)
        if nbytes > self.inline_max:
            data = stage(self.world.job_id, data)
            flags |= FLAG_IN_SEGMENT
        record = (context, tag, flags, nbytes, data)
        if not self.queues[dest] and self._push(dest, record):
            return None
        self.queues[dest].append((context, tag, flags, nbytes, bytes(data)))
        self.queued += 1
        self.tickets[dest] += 1
        self._flush_queue(dest)
        return self.tickets[dest]

    @_locked
    def sent(self, dest, ticket):
        return self.pushed[dest] >= ticket

    @_locked
    def queued_dests(self):
        """The ranks queued sends wait to reach."""
        return tuple(dest for dest, queue in enumerate(self.queues) if queue)

    def _push(self, dest, record):
        context, tag, flags, nbytes, inline = record
        base = self.world.base + self.out_channels[dest]
        ring = self.out_channels[dest] + job.CHANNEL_HEADER
        size = self.ring_bytes
        need = RECORD.size + _padded(len(inline))
        tail = self.tails[dest]
        used = (tail - atomic.load32(base + OFF_HEAD)) & MASK32
        position = tail % size
        skip = size - position if size - position < need else 0
        if used + skip + need > size:
            return False
        if skip:
            if skip >= RECORD.size:
                RECORD.pack_into(self.mem, ring + position, skip, PAD_FLAG, 0, 0, 0)
            position = 0
        RECORD.pack_into(self.mem, ring + position, need, flags, context, tag, nbytes)
        start = ring + position + RECORD.size
        end = start + len(inline)
        self.mem[start:end] = inline
        if flags & FLAG_IN_SEGMENT:
            # the receiver takes the name up to the padding's zeros; the ring there
            # still holds earlier records' bytes
            self.mem[end:ring + position + need] = bytes(ring + position + need - end)
        tail = (tail + skip + need) & MASK32
        self.tails[dest] = tail
        atomic.store32(base + OFF_TAIL, tail)
        atomic.cell_add(self.world.doorbell(dest), 1)
        return True

    def _flush_queue(self, dest):
        """Push queued sends while the ring has room. Out of room, flag the channel
        so the receiver rings this rank's doorbell once it makes room, then look
        once more: room made before the receiver could see the flag rings nobody."""
        queue = self.queues[dest]
        flagged = False
        while queue:
            if self._push(dest, queue[0]):
                queue.popleft()
                self.queued -= 1
                self.pushed[dest] += 1
                self.events += 1
            elif flagged:
                return
            else:
                atomic.store32(self.world.base + self.out_channels[dest] + OFF_BLOCKED, 1)
                flagged = True

    def _acknowledge(self, arrived):
        context = arrived.context - arrived.context % SUBCONTEXTS + SYNC_ACK
        self.send(arrived.source, context, arrived.flags >> SYNC_SHIFT, b"", 0)

    # --- receiving -----------------------------------------------------------
    @_locked
    def progress(self):
        """Move arrived records into the matching engine and push queued sends."""
        bell = atomic.load32(self.doorbell)
        if bell != self.seen_bell:
            self.seen_bell = bell
            for source in range(min(len(self.in_channels), self.world.processes())):
                self._drain(source)
        if self.queued:
            for dest, queue in enumerate(self.queues):
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
                self._arrived(Arrived(source, context, tag, flags, nbytes, inline))
            head = (head + length) & MASK32
        self.heads[source] = head
        atomic.store32(base + OFF_HEAD, head)
        if atomic.exchange32(base + OFF_BLOCKED, 0):
            atomic.cell_add(self.world.doorbell(source), 1)

    def _arrived(self, arrived):
        for index, core in enumerate(self.posted):
            if matches(arrived.context, arrived.source, arrived.tag, core.context,
                       core.want_source, core.want_tag):
                del self.posted[index]
                self._complete(arrived, core)
                return
        self.unexpected[arrived.source].append(arrived)

    @_locked
    def deliver(self, arrived, target):
        """A receive into ``target`` (None: an object receive) completed by ``arrived``."""
        core = Core(arrived.context, constants.ANY_SOURCE, constants.ANY_TAG, target)
        self._complete(arrived, core)
        return core

    def _complete(self, arrived, core):
        """Complete ``core`` with ``arrived`` (acknowledging a synchronous send)."""
        if arrived.flags & FLAG_SYNC:
            self._acknowledge(arrived)
        core.source, core.tag, core.flags = arrived.source, arrived.tag, arrived.flags
        core.count = nbytes = arrived.nbytes
        staged = arrived.flags & FLAG_IN_SEGMENT
        if core.target is None:
            core.payload = (fetch(arrived.inline, nbytes) if staged
                            else arrived.inline) if nbytes else b""
        elif nbytes > len(core.target):
            core.error = errors.ERR_TRUNCATE
            if staged:
                discard(arrived.inline, nbytes)
        elif staged:
            fetch(arrived.inline, nbytes, core.target)
        else:
            core.target[:nbytes] = arrived.inline
        core.done = True
        self.events += 1

    @_locked
    def find(self, context, source, tag, remove):
        """The first unexpected message matching, per source in arrival order."""
        sources = range(len(self.unexpected)) if source == constants.ANY_SOURCE else (source,)
        for src in sources:
            queue = self.unexpected[src]
            for index, arrived in enumerate(queue):
                if matches(arrived.context, arrived.source, arrived.tag, context, source, tag):
                    if remove:
                        del queue[index]
                    return arrived
        return None

    @_locked
    def leftovers(self):
        """(tags of the unexpected messages, number of posted receives): tests check
        that a call left nothing behind."""
        return [arrived.tag for queue in self.unexpected for arrived in queue], len(self.posted)

    @_locked
    def irecv(self, context, source, tag, target):
        """A receive, matched now with an unexpected message or posted for later."""
        core = Core(context, source, tag, target)
        self.progress()
        arrived = self.find(context, source, tag, remove=True)
        if arrived is not None:
            self._complete(arrived, core)
        else:
            self.posted.append(core)
        return core

    @_locked
    def cancel(self, core):
        try:
            self.posted.remove(core)
            return True
        except ValueError:
            return False

    # --- waiting -------------------------------------------------------------
    @_locked
    def wait_core(self, core, timeout):
        """Progress and wait (at most ``timeout`` seconds) until ``core`` is done."""
        bell = self.progress()
        if not core.done:
            atomic.cell_wait(self.doorbell, bell, timeout)
            self.progress()
        return core.done


def wait_for(box, condition, what, peers=()):
    """Make progress until ``condition()`` holds, sleeping on this rank's doorbell."""
    while True:
        bell = box.progress()
        job.run_idle_hooks()
        if condition():
            return
        job.wait_cell(box.doorbell, bell, what, peers, until=condition)


# --- the fast paths of point-to-point calls (shmrma/csrc/p2p/transport.c) ----------------
#
# comm.py calls them first; each answers False (or MISS), having done nothing,
# when it does not take the call, and always on the fallback engine.

MISS = type("Miss", (), {"__repr__": lambda self: "MISS"})()
PICKLE_PROTOCOL = msgpickle.DEFAULT_PROTOCOL
# MPI.pickle's, csrc/types/msgpickle.c's on the C engine (quicker for small objects)
dumps, loads = msgpickle.dumps, msgpickle.loads


def _miss(*args):
    return False


def _miss_object(*args):
    return MISS


class _PythonCommCore:
    """What a communicator carries for the fast paths; nothing on the fallback."""

    __slots__ = ("freed", "coll_seq", "large_seq", "coll_target", "large_target",
                 "coll_clear", "large_clear")

    def _bind(self, context, ranks, world_size, world_rank):
        self.coll_seq = self.large_seq = 0   # steps taken on the collective areas
        self.coll_target = self.large_target = 0     # (coll/area.py)
        self.coll_clear = self.large_clear = 0

    def _bind_area(self, large, address, slot):
        pass

    def _unbind_areas(self):
        pass


def _setup_native():
    from .. import _native
    _native.transport_setup(
        channel_header=job.CHANNEL_HEADER, off_head=OFF_HEAD, off_tail=OFF_TAIL,
        off_blocked=OFF_BLOCKED, flag_pickled=FLAG_PICKLED, flag_in_segment=FLAG_IN_SEGMENT,
        flag_sync=FLAG_SYNC, sync_shift=SYNC_SHIFT, pad_flag=PAD_FLAG,
        subcontexts=SUBCONTEXTS, sync_ack=SYNC_ACK, any_source=constants.ANY_SOURCE,
        any_tag=constants.ANY_TAG, err_truncate=errors.ERR_TRUNCATE, p2p=P2P,
        tag_ub=MAX_TAG, wait_slice=job.WAIT_SLICE, miss=MISS,
        flag_staged=FLAG_STAGED, flag_staging=FLAG_STAGING, flag_direct=FLAG_DIRECT,
        staging_header=STAGING_HEADER,
        status_type=Status)
    return _native


if atomic.BACKEND == "c":
    _native = _setup_native()
    CommCore, NativeCore = _native.CommCore, _native.Core
    p2p_send, p2p_recv, p2p_irecv = _native.p2p_send, _native.p2p_recv, _native.p2p_irecv
    p2p_sendobj, p2p_recvobj = _native.p2p_sendobj, _native.p2p_recvobj
else:
    CommCore, NativeCore = _PythonCommCore, None
    p2p_send = p2p_recv = p2p_irecv = _miss
    p2p_sendobj = p2p_recvobj = _miss_object


_mailbox = None


def mailbox():
    global _mailbox
    if _mailbox is None:
        _mailbox = _new_engine(job.current())
    return _mailbox


def _new_engine(world):
    """The C transport when the extension is in use, else the Python one."""
    if atomic.BACKEND != "c":
        return Mailbox(world)
    from functools import partial
    layout = world.layout
    staging = _Staging(world)
    return _native.Transport(
        world.base, world.rank, world.size, layout.channels_offset, layout.channel_bytes,
        layout.ring_bytes, layout.ranks_offset, job.RANK_BLOCK, job.OFF_DOORBELL,
        stage=partial(stage, world.job_id), fetch=fetch, discard=discard,
        staging_bytes=staging.capacity, chunk_bytes=min(CHUNK_BYTES, staging.capacity // 4),
        new_staging=staging.create, attach_staging=staging.attach,
        direct_min=direct_min(), read_peers=os.environ.get("SHMRMA_VM_READV", "1") != "0",
        taken_offset=job.OFF_NEXT_RANK)


CHUNK_BYTES = 256 * 1024   # a staged message moves in chunks, copied in and out in turn


def direct_min():
    """The smallest send its receiver reads straight from the sender's memory:
    SHMRMA_DIRECT_MIN bytes (unset or 0, the default: none).

    Such a send (Send, Isend, Ssend, an object's send: those whose buffer stays
    the sender's until they complete; never Bsend) is one copy (process_vm_readv)
    instead of two through the staging ring, and completes once its receiver read
    it. It is off by default because it measured slower where it was built: on a
    KVM guest process_vm_readv moves about 13 GB/s (it pins and maps the sender's
    pages one by one) where the staging ring's two pipelined copies reach 20 to
    46 GB/s at 4 MiB (MPICH about 23). When a receiver cannot read its sender
    (EPERM, or SHMRMA_VM_READV=0) the message streams through the staging ring
    and so does every later one of that pair."""
    text = os.environ.get("SHMRMA_DIRECT_MIN", "0")
    try:
        value = int(text)
    except ValueError:
        raise ValueError("SHMRMA_DIRECT_MIN=%r: give a number of bytes (0: off)" % text)
    return value if value > 0 else (1 << 62)


def staging_bytes(nranks):
    """A staging ring's capacity: 512 MiB shared among the pairs of ranks, 256 KiB to
    2 MiB each (only pairs that exchange large messages make one). Small enough to
    stay in the caches as messages go round it in chunks; a message of any size
    streams through it, the receiver copying a chunk out as the sender copies the
    next one in. Measured at 2 ranks (osu_bw, 3 runs each): 16 and 64 MiB messages
    move at 9-12 GB/s with a ring of 1, 2, 4 or 8 MiB alike (memory-bound, as
    MPICH's 9-12); 4 MiB ones at 11-30 GB/s whichever, from one run to the next."""
    pairs = max(nranks * (nranks - 1), 1)
    return max(256 << 10, min(2 << 20, (512 << 20) // pairs & ~63))


class _Staging:
    """The staging rings of this rank (C engine): created as a sender, mapped as a
    receiver, and kept for the rank's lifetime."""

    def __init__(self, world):
        self.job_id = world.job_id
        self.capacity = staging_bytes(world.size)
        self.regions = []

    def create(self, dest):
        """(address, capacity, name) of a new staging ring to ``dest``, or None when
        /dev/shm has no room for one (a message then goes in a segment of its own)."""
        try:
            region = segments.PopulatedRegion.create(self.job_id,
                                                     STAGING_HEADER + self.capacity)
        except errors.Exception as exc:
            if exc.Get_error_class() == errors.ERR_NO_MEM:
                return None
            raise
        self.regions.append(region)
        return region.address, self.capacity, region.name.encode()

    def attach(self, name):
        region = segments.PopulatedRegion.attach(name.decode(),
                                                 STAGING_HEADER + self.capacity)
        region.unlink()     # both ends have it mapped: no name is left behind
        self.regions.append(region)
        return region.address, self.capacity


@job.on_new_rank
def _new_rank_engine():
    """A new rank gets its own engine at once: the fast paths serve only calls made
    once this rank's engine exists."""
    global _mailbox
    _mailbox = None
    mailbox()


@atexit.register
def flush_before_exit():
    """Push sends still queued for lack of room, so no message is lost at exit."""
    box = _mailbox
    if box is None or not box.queued:
        return
    wait_for(box, lambda: not box.queued,
             "room to deliver %d queued sends before exit" % box.queued, box.queued_dests())
