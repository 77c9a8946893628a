"""Communicators and point-to-point messaging (mpi4py's ``Comm``/``Intracomm``).

A communicator is a context id plus the world ranks of its members. Its
context id separates its traffic: user point-to-point, collectives and
Create_group handshakes each use their own sub-context, so a user's ANY_TAG
receive never takes a collective's message.
"""
import numbers
import operator
import os
import sys

from . import atomic, buffers, constants, errhandler, errors, job, mailbox
from .group import make_group
from .request import Prequest, Request, Status

from .mailbox import COLLECTIVE, HANDSHAKE, NONBLOCKING, P2P, SUBCONTEXTS, SYNC_ACK  # noqa: F401


class CommState(mailbox.CommCore):
    """What a communicator is, shared by its handle and its duplicates by reference;
    its base holds what the point-to-point fast paths need of it."""

    __slots__ = ("context", "ranks", "rank", "slot", "name", "world_to_rank", "info",
                 "topology", "area", "large_area", "nbc", "locks", "commctx", "errhandler")

    def __init__(self, context, ranks, slot, name=""):
        self.context = context
        self.ranks = tuple(ranks)
        me = job.world_rank()
        self.rank = self.ranks.index(me) if me in self.ranks else constants.UNDEFINED
        self.slot = slot
        self.name = name
        self.world_to_rank = {w: i for i, w in enumerate(self.ranks)}
        self.freed = False
        self.area = self.large_area = None   # the collective areas (collarea.py), at first use
        self.nbc = None         # the nonblocking collectives' channel (nbcarea.py), at first use
        self._bind(context, self.ranks, job.world_size(), me)
        self.info = {}
        self.topology = None    # a topology.CartTopology for a Cartcomm
        self.locks = None       # commlock.py's lock table, at first use
        self.commctx = None     # commlock.py's private duplicate, at first use
        # mpi4py sets ERRORS_RETURN on every communicator it makes or starts with
        self.errhandler = errhandler.ERRORS_RETURN

    def subcontext(self, kind):
        return self.context * SUBCONTEXTS + kind


# --- barrier slots in the world segment ---------------------------------------

def claim_slot(world, members):
    """Find a free barrier slot and give it ``members`` references."""
    start = world.new_contexts(0) % job.MAX_COMM_SLOTS
    for offset in range(job.MAX_COMM_SLOTS):
        slot = (start + offset) % job.MAX_COMM_SLOTS
        if slot == job.WORLD_SLOT:
            continue
        address = world.slot_address(slot) + job.OFF_SLOT_REFS
        if atomic.cas32(address, 0, members) == 0:
            atomic.store32(world.slot_address(slot) + job.OFF_SLOT_COUNT, 0)
            return slot
    errors.fail(errors.ERR_OTHER, "too many communicators alive at once (%d); free the ones "
                "you no longer need with comm.Free()" % job.MAX_COMM_SLOTS)


def _rank_number(rank):
    """A rank as an int: any int-like (numpy integers too), or a float with an integral
    value, which mpi4py takes (programs compute ranks as ``nprocs / 2``; mpi4py would
    truncate 1.5 too, which we refuse); anything else is TypeError."""
    try:
        return operator.index(rank)
    except TypeError:
        if isinstance(rank, numbers.Real) and float(rank).is_integer():
            return int(rank)
        raise


def release_slot(world, slot, references=1):
    """Give up ``references`` to the slot: True when they were its last."""
    address = world.slot_address(slot)
    left = atomic.fetch_add32(address + job.OFF_SLOT_REFS, -references) - references
    atomic.forget(address, job.SLOT_BYTES)  # the next communicator may take another slot
    return left == 0


def barrier_cells(state):
    """(arrival count, generation wait cell) of the communicator's counting barrier."""
    address = job.current().slot_address(state.slot)
    return address + job.OFF_SLOT_COUNT, address + job.OFF_SLOT_GENERATION


def slot_barrier(state):
    """Counting barrier on the communicator's slot: one native call when it opens fast."""
    size = len(state.ranks)
    if size == 1:
        return
    count_cell, generation_cell = barrier_cells(state)
    awaited = atomic.barrier_arrive(count_cell, generation_cell, size, job.WAIT_SLICE)
    if awaited is not None:
        job.wait_cell(generation_cell, awaited,
                      lambda: "Barrier on %s (%d ranks)" % (state.name or "a communicator",
                                                            size),
                      state.ranks)


# --- the buffer of the buffered send mode ---------------------------------------
BSEND_OVERHEAD = 96     # MPICH's: what each Bsend takes of the attached buffer
_attached = []


def Attach_buffer(buf):  # noqa: N802 - MPI's name
    """Bsend takes no room (every send is buffered in shared memory), but programs
    attach a buffer first, and one attached buffer at a time is the rule."""
    if _attached:
        errors.fail(errors.ERR_OTHER, "Attach_buffer: a buffer is attached already; "
                    "Detach_buffer it first")
    _attached.append(buf)


def Detach_buffer():  # noqa: N802 - MPI's name
    """The buffer Attach_buffer attached (None when there is none)."""
    return _attached.pop() if _attached else None


_sync_ids = [0]
_NO_BYTES = memoryview(bytearray(0))   # where an acknowledgement is received


def _next_sync_id():
    _sync_ids[0] = (_sync_ids[0] + 1) % mailbox.SYNC_IDS
    return _sync_ids[0]


class SyncSend(Request):
    """Issend: complete once the message is out and its receiver matched it."""

    def __init__(self, send, acknowledged, dest):
        self._null = False
        self._send, self._acknowledged, self._dest = send, acknowledged, dest

    def _poll(self):
        return self._send._poll() and self._acknowledged._poll()

    def _describe(self):
        return "rank %d to start receiving a synchronous send (Ssend/Issend)" % self._dest

    def _peers(self):
        return self._acknowledged._peers()


# --- requests of point-to-point calls --------------------------------------------

class Receive(Request):
    """A receive into a buffer (``target`` set) or of a pickled object: the
    transport's core, and what completing it means for the caller."""

    def __init__(self, state, core, finish=None, loads=None):
        self._null = False
        self._done = False
        self.state = state
        self.core = core
        self.finish = finish        # what turns the bytes received into the user's buffer
        self.loads = loads or _loads    # what turns them into an object (MPI.pickle's)
        self._status = Status()

    def _poll(self):
        if not self._done and self.core.done:
            self._complete()
        return self._done

    def _complete(self):
        core = self.core
        source = self.state.world_to_rank.get(core.source, core.source)
        self._status._fill(source, core.tag, core.count)
        if core.error:
            self._status.error = core.error
            self._error = errors.Exception(
                errors.ERR_TRUNCATE,
                "a message of %d bytes from rank %d (tag %d) does not fit the receive "
                "buffer of %d bytes; post a larger buffer (Probe tells the size)"
                % (core.count, source, core.tag, core.capacity))
        elif core.target is None:
            # an empty message is None, as mpi4py loads it (collective failure notices)
            self._result = self.loads(core.payload) if core.count else None
        else:
            self._convert(core.count)
        self._done = True

    def _convert(self, nbytes):
        if self.finish is None:
            return
        try:
            self.finish(nbytes)
        except errors.Exception as exc:   # handles received from a non-handle send
            self._status.error = exc.Get_error_class()
            self._error = exc

    def _describe(self):
        core = self.core
        source = ("any rank" if core.want_source == constants.ANY_SOURCE
                  else "rank %d" % self.state.world_to_rank[core.want_source])
        tag = "any tag" if core.want_tag == constants.ANY_TAG else "tag %d" % core.want_tag
        return "a message from %s with %s" % (source, tag)

    def _peers(self):
        want = self.core.want_source
        return () if want == constants.ANY_SOURCE else (want,)

    def Cancel(self):
        if not self._done and mailbox.mailbox().cancel(self.core):
            self._status.cancelled = True
            self._done = True


class Send(Request):
    """A send: complete once its record is in the destination's ring."""

    def __init__(self, dest, ticket, what):
        self._null = False
        self.dest, self.ticket = dest, ticket
        self.what = what
        self._status = Status()

    def _poll(self):
        if self.ticket is not None and mailbox.mailbox().sent(self.dest, self.ticket):
            self.ticket = None
        return self.ticket is None

    def _describe(self):
        return self.what

    def _peers(self):
        return (self.dest,)


class Persistent(Prequest):
    """Send_init, Recv_init and the other ``*_init``: inactive until Start, which
    makes the operation anew from the same arguments (a send reads its buffer
    then); Wait or Test completes it and leaves it inactive, to be started again."""

    _persistent = True

    def __init__(self, operation):
        self._null = False
        self._operation = operation     # makes one nonblocking operation
        self._inner = None

    @property
    def _inactive(self):
        return self._inner is None

    def Start(self):
        if self._null:
            errors.fail(errors.ERR_REQUEST, "Start on a freed persistent request")
        if self._inner is not None:
            errors.fail(errors.ERR_REQUEST, "Start on an active persistent request: "
                        "complete it with Wait or Test first")
        self._inner = self._operation()

    def _poll(self):
        return self._inner is None or self._inner._poll()

    def _describe(self):
        return self._inner._describe() if self._inner is not None else "nothing"

    def _peers(self):
        return self._inner._peers() if self._inner is not None else ()

    def _finish(self, status):
        inner, self._inner = self._inner, None
        if inner is None:
            if status is not None:
                status._copy_from(Status())
            return
        inner._finish(status)
        self._result = inner._result

    def Cancel(self):
        if self._inner is not None:
            self._inner.Cancel()


class Completed(Request):
    """A request that is complete when created (PROC_NULL peers)."""

    def __init__(self, status=None, result=None):
        self._null = False
        self._status = status or Status()
        self._result = result


_loads, _dumps = mailbox.loads, mailbox.dumps
_fast_send, _fast_recv, _fast_irecv = mailbox.p2p_send, mailbox.p2p_recv, mailbox.p2p_irecv
_fast_sendobj, _fast_recvobj = mailbox.p2p_sendobj, mailbox.p2p_recvobj
_MISS, _NativeCore = mailbox.MISS, mailbox.NativeCore


def _null_status():
    status = Status()
    status._fill(constants.PROC_NULL, constants.ANY_TAG, 0)
    return status


# --- communicators ----------------------------------------------------------------

class Comm(errhandler.ErrorHandling):
    """``MPI.Comm``; the base class is COMM_NULL's type."""

    _errhandler_kind = "Comm"

    _state_value = None

    def __new__(cls, comm=None):
        # mpi4py's signature: subclasses call super().__new__(cls, comm) (its demo
        # reductions.py does); __init__ does the rest
        return super().__new__(cls)

    def __init__(self, comm=None):
        # Comm(other) is a new handle to the same communicator, as in mpi4py
        self._state_value = state = comm._state_value if isinstance(comm, Comm) else comm
        if state is not None and state.errhandler is not errhandler.ERRORS_RETURN:
            errhandler.switch_class(self, state.errhandler)  # as its other handles

    @property
    def _s(self):
        state = self._state_value
        if state is None:
            errors.fail(errors.ERR_COMM, "the communicator is COMM_NULL (what Split or "
                        "Create give a process outside the new group); use one this "
                        "process belongs to")
        if state.freed:
            errors.fail(errors.ERR_COMM, "the communicator was freed; use one that is still "
                        "alive, or Dup a new one before freeing")
        return state

    def __bool__(self):
        return self._state_value is not None and not self._state_value.freed

    def __eq__(self, other):
        if not isinstance(other, Comm):
            return NotImplemented
        return self._state_value is other._state_value

    def __hash__(self):
        return id(self._state_value)

    # --- identity ---
    def Get_rank(self):
        return self._s.rank

    def Get_size(self):
        return len(self._s.ranks)

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_group(self):
        return make_group(self._s.ranks)

    group = property(Get_group)

    def Get_name(self):
        if not self:
            return "MPI_COMM_NULL"  # as mpi4py answers for COMM_NULL
        return self._s.name

    def Set_name(self, name):
        self._s.name = str(name)

    name = property(Get_name, Set_name)

    def Get_topology(self):
        """MPI.CART for a Cartcomm, else MPI.UNDEFINED."""
        topology = self._s.topology
        return constants.UNDEFINED if topology is None else topology.kind

    topology = property(Get_topology)

    @property
    def is_topo(self):
        return self._s.topology is not None

    def Is_inter(self):
        self._s     # COMM_NULL is neither: ERR_COMM
        return False

    def Is_intra(self):
        self._s
        return True

    is_inter = property(Is_inter)
    is_intra = property(Is_intra)

    def Get_info(self):
        from .info import Info
        return Info.Create(self._s.info)

    def Set_info(self, info):
        from .info import to_dict
        self._s.info.update(to_dict(info))

    info = property(Get_info, Set_info)

    def Compare(self, comm):
        mine, theirs = self._s, comm._s
        if mine is theirs:
            return constants.IDENT
        if mine.ranks == theirs.ranks:
            return constants.CONGRUENT
        if sorted(mine.ranks) == sorted(theirs.ranks):
            return constants.SIMILAR
        return constants.UNEQUAL

    def Abort(self, errorcode=0):
        world = job.current()
        sys.stderr.write("shmrma: rank %d called Abort(%d); ending the job\n"
                         % (world.rank, errorcode))
        sys.stderr.flush()
        world.fail(world.rank)
        os._exit(errorcode & 0xFF or 1)

    def Free(self):
        state = self._s
        if state.context in (job.WORLD_CONTEXT, job.SELF_CONTEXT):
            errors.fail(errors.ERR_COMM, "COMM_WORLD and COMM_SELF cannot be freed; free "
                        "only communicators you created (Dup, Split, Create...)")
        if state.slot is not None and release_slot(job.current(), state.slot):
            from . import nbcarea
            nbcarea.unlink_channel(state)   # the last member out: nobody maps it any more
        if state.commctx is not None:
            state.commctx.dup.Free()    # mpi4py frees it with its communicator
        state._unbind_areas()       # the fast paths must not reach them any more
        for area in (state.area, state.large_area):     # collarea.Area objects
            if area is not None:
                area.close()
        if state.nbc is not None:
            state.nbc.free()
        state.freed = True
        self._state_value = None

    # --- argument checks ---
    def _peer(self, rank, role, wildcard=False):
        state = self._s
        rank = _rank_number(rank)
        if rank == constants.PROC_NULL or (wildcard and rank == constants.ANY_SOURCE):
            return rank
        if not 0 <= rank < len(state.ranks):
            errors.fail(errors.ERR_RANK, "%s %r is not a rank of this communicator of size "
                        "%d; use 0..%d%s" % (role, rank, len(state.ranks), len(state.ranks) - 1,
                                             ", ANY_SOURCE or PROC_NULL" if wildcard
                                             else " or PROC_NULL"))
        return rank

    @staticmethod
    def _tag(tag, wildcard=False):
        tag = operator.index(tag)
        if wildcard and tag == constants.ANY_TAG:
            return tag
        if not 0 <= tag <= constants.TAG_UB:
            errors.fail(errors.ERR_TAG, "tag %r is invalid; tags are 0..%d%s"
                        % (tag, constants.TAG_UB, " or ANY_TAG" if wildcard else ""))
        return tag

    # --- point-to-point core ---
    def _isend_bytes(self, data, dest, tag, pickled, kind=P2P, synchronous=False, hold=False):
        """Send ``data``. With ``hold`` a large payload that must wait for room is held,
        not copied: the caller's request completes only once it is sent (the user's
        own sends); the other sends never hold a buffer the caller may reuse."""
        state = self._s
        dest = self._peer(dest, "destination")
        tag = self._tag(tag) if kind == P2P else tag
        if dest == constants.PROC_NULL:
            return Completed()
        flags = mailbox.FLAG_PICKLED if pickled else 0
        if synchronous:
            sync_id = _next_sync_id()
            flags |= mailbox.FLAG_SYNC | sync_id << mailbox.SYNC_SHIFT
        world_dest = state.ranks[dest]
        ticket = mailbox.mailbox().send(world_dest, state.subcontext(kind), tag, data, flags,
                                        hold)
        sent = Send(world_dest, ticket, "room to send to rank %d" % dest)
        if not synchronous:
            return sent
        return SyncSend(sent, self._irecv(dest, sync_id, _NO_BYTES, SYNC_ACK), dest)

    def _irecv(self, source, tag, target, kind=P2P, finish=None, loads=None):
        state = self._s
        source = self._peer(source, "source", wildcard=True)
        tag = self._tag(tag, wildcard=True) if kind == P2P else tag
        if source == constants.PROC_NULL:
            return Completed(_null_status())
        world_source = source if source == constants.ANY_SOURCE else state.ranks[source]
        core = mailbox.mailbox().irecv(state.subcontext(kind), world_source, tag, target)
        return Receive(state, core, finish, loads)

    # --- buffers ---
    # As in mpi4py, the buffer of a PROC_NULL peer is not looked at.
    def _send_data(self, buf, dest):
        if self._peer(dest, "destination") == constants.PROC_NULL:
            return b""
        return buffers.message(buf, writable=False, handles=True).data

    def _recv_message(self, buf, source):
        if self._peer(source, "source", wildcard=True) == constants.PROC_NULL:
            return None
        return buffers.message(buf, writable=True, handles=True)

    def Isend(self, buf, dest, tag=0):
        if _fast_send(self._state_value, buf, dest, tag, 0):
            return Completed()
        return self._isend_bytes(self._send_data(buf, dest), dest, tag, False, hold=True)

    def Send(self, buf, dest, tag=0):
        if not _fast_send(self._state_value, buf, dest, tag, 0):
            self._isend_bytes(self._send_data(buf, dest), dest, tag, False, hold=True).Wait()

    def Issend(self, buf, dest, tag=0):
        return self._isend_bytes(self._send_data(buf, dest), dest, tag, False,
                                 synchronous=True, hold=True)

    def Ssend(self, buf, dest, tag=0):
        self.Issend(buf, dest, tag).Wait()

    def Ibsend(self, buf, dest, tag=0):
        """Buffered mode: a send that has to wait for room is copied, so it never waits
        for its receiver (the attached buffer takes nothing: shared memory buffers)."""
        return self._isend_bytes(self._send_data(buf, dest), dest, tag, False)

    def Bsend(self, buf, dest, tag=0):
        self.Ibsend(buf, dest, tag)

    # every send completes without its receiver, so the ready mode is the standard one
    Rsend = Send
    Irsend = Isend

    def Send_init(self, buf, dest, tag=0):
        return self._persistent_send(self.Isend, buf, dest, tag)

    Bsend_init = Rsend_init = Send_init

    def Ssend_init(self, buf, dest, tag=0):
        return self._persistent_send(self.Issend, buf, dest, tag)

    def _persistent_send(self, isend, buf, dest, tag):
        self._send_data(buf, dest)      # arguments checked now, as MPI does
        self._tag(tag)
        return Persistent(lambda: isend(buf, dest, tag))

    def Recv_init(self, buf, source=constants.ANY_SOURCE, tag=constants.ANY_TAG):
        self._recv_message(buf, source)
        self._tag(tag, wildcard=True)
        return Persistent(lambda: self.Irecv(buf, source, tag))

    def Irecv(self, buf, source=constants.ANY_SOURCE, tag=constants.ANY_TAG):
        core = _fast_irecv(self._state_value, buf, source, tag)
        if core is not False:
            return Receive(self._state_value, core)
        received = self._recv_message(buf, source)
        if received is None:
            return self._irecv(source, tag, None)
        return self._irecv(source, tag, received.data, finish=received.finish)

    def Recv(self, buf, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        core = _fast_recv(self._state_value, buf, source, tag, status)
        if core is False:
            self.Irecv(buf, source, tag).Wait(status)
        elif core is not True:      # not there within a slice, or an error to raise
            Receive(self._state_value, core).Wait(status)

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=constants.ANY_SOURCE,
                 recvtag=constants.ANY_TAG, status=None):
        # Check the receive before sending and send before posting the receive, so
        # an error in either argument raises with nothing sent and nothing posted
        # (sends never wait for their receiver, so this order cannot deadlock).
        self._recv_message(recvbuf, source)
        self._tag(recvtag, wildcard=True)
        self.Send(sendbuf, dest, sendtag)
        self.Recv(recvbuf, source, recvtag, status)

    def Sendrecv_replace(self, buf, dest, sendtag=0, source=constants.ANY_SOURCE,
                         recvtag=constants.ANY_TAG, status=None):
        # the send copies ``buf`` out before it returns (every send is buffered), so
        # the receive may then overwrite it
        self._recv_message(buf, source)
        self._tag(recvtag, wildcard=True)
        self.Send(buf, dest, sendtag)
        self.Recv(buf, source, recvtag, status)

    def Probe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        probe = _Probe(self, source, tag)
        probe.wait()
        probe.report(status)
        return True

    def Iprobe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        probe = _Probe(self, source, tag)
        mailbox.mailbox().progress()
        if probe.found():
            probe.report(status)
            return True
        return False

    def Mprobe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Probe, and take the message out of matching: only the Message's Recv
        receives it (a receive posted meanwhile cannot)."""
        probe = _Probe(self, source, tag)
        probe.wait()
        probe.report(status)
        return _claimed(probe)

    def Improbe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """A Message when one matches now, else None."""
        probe = _Probe(self, source, tag)
        mailbox.mailbox().progress()
        if not probe.found():
            return None
        probe.report(status)
        return _claimed(probe)

    # --- pickled objects ---
    def isend(self, obj, dest, tag=0):
        sent = _fast_sendobj(self._state_value, obj, dest, tag)
        if sent is True:
            return Completed()
        return self._isend_bytes(_dumps(obj) if sent is _MISS else sent, dest, tag, True,
                                 hold=True)

    def send(self, obj, dest, tag=0):
        sent = _fast_sendobj(self._state_value, obj, dest, tag)
        if sent is not True:
            self._isend_bytes(_dumps(obj) if sent is _MISS else sent, dest, tag, True,
                              hold=True).Wait()

    def issend(self, obj, dest, tag=0):
        return self._isend_bytes(_dumps(obj), dest, tag, True, synchronous=True, hold=True)

    def ssend(self, obj, dest, tag=0):
        self.issend(obj, dest, tag).Wait()

    def ibsend(self, obj, dest, tag=0):
        return self._isend_bytes(_dumps(obj), dest, tag, True)

    def bsend(self, obj, dest, tag=0):
        self.ibsend(obj, dest, tag)

    def irecv(self, buf=None, source=constants.ANY_SOURCE, tag=constants.ANY_TAG):
        core = _fast_irecv(self._state_value, None, source, tag)
        if core is not False:
            return Receive(self._state_value, core)
        return self._irecv(source, tag, None)

    def recv(self, buf=None, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        got = _fast_recvobj(self._state_value, source, tag, status)
        if got is _MISS:
            return self._irecv(source, tag, None).wait(status)
        if type(got) is _NativeCore:     # not there within a slice
            return Receive(self._state_value, got).wait(status)
        return got

    def sendrecv(self, sendobj, dest, sendtag=0, recvbuf=None, source=constants.ANY_SOURCE,
                 recvtag=constants.ANY_TAG, status=None):
        self._peer(source, "source", wildcard=True)  # as in Sendrecv: check, send, receive
        self._tag(recvtag, wildcard=True)
        self.send(sendobj, dest, sendtag)
        return self.recv(recvbuf, source, recvtag, status)

    def probe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        return self.Probe(source, tag, status)

    def iprobe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        return self.Iprobe(source, tag, status)

    mprobe = Mprobe
    improbe = Improbe


def _claimed(probe):
    if probe.message is None:
        return MESSAGE_NO_PROC
    found = probe.message     # the first match, so the first with its own source and tag
    return Message(probe.state, mailbox.mailbox().find(found.context, found.source, found.tag,
                                                       True))


class Message:
    """``MPI.Message``: a message Mprobe took out of matching; Recv or recv (and
    their I-forms) receive it once, then it is MESSAGE_NULL."""

    def __init__(self, state=None, message=None, no_proc=False):
        self._state, self._message, self._no_proc = state, message, no_proc

    def __bool__(self):
        return self._message is not None or self._no_proc

    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented
        return self is other or (not self and not other)

    __hash__ = None

    def _receive(self, target=None, finish=None):
        if self._no_proc:
            return Completed(_null_status())
        if self._message is None:
            errors.fail(errors.ERR_REQUEST, "the message was received already (or is "
                        "MESSAGE_NULL); Mprobe for a new one")
        message, self._message = self._message, None
        core = mailbox.mailbox().deliver(message, target)
        receive = Receive(self._state, core, finish)
        receive._poll()
        return receive

    def Irecv(self, buf):
        if self._no_proc or buf is None:
            return self._receive()
        received = buffers.message(buf, writable=True, handles=True)
        return self._receive(received.data, received.finish)

    def Recv(self, buf, status=None):
        self.Irecv(buf).Wait(status)

    def irecv(self):
        return self._receive()

    def recv(self, status=None):
        return self._receive().wait(status)

MESSAGE_NULL = Message()
MESSAGE_NO_PROC = Message(no_proc=True)


class _Probe:
    def __init__(self, comm, source, tag):
        self.state = comm._s
        self.source = comm._peer(source, "source", wildcard=True)
        self.tag = comm._tag(tag, wildcard=True)
        self.message = None
        world_source = (self.source if self.source in (constants.ANY_SOURCE, constants.PROC_NULL)
                        else self.state.ranks[self.source])
        self.world_source = world_source
        self.peers = () if world_source < 0 else (world_source,)

    def found(self):
        if self.source == constants.PROC_NULL:
            return True
        self.message = mailbox.mailbox().find(self.state.subcontext(P2P), self.world_source,
                                              self.tag, False)
        return self.message is not None

    def wait(self):
        if not self.found():
            mailbox.wait_for(mailbox.mailbox(), self.found, self.describe, self.peers)

    def describe(self):
        return "Probe for a message from %s" % (
            "any rank" if self.source == constants.ANY_SOURCE else "rank %d" % self.source)

    def report(self, status):
        if status is None:
            return
        if self.message is None:
            status._copy_from(_null_status())
        else:
            status._fill(self.state.world_to_rank[self.message.source], self.message.tag,
                         self.message.nbytes)
