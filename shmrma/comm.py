"""Communicators and point-to-point messaging (mpi4py's ``Comm``/``Intracomm``).

A communicator is a context id plus the world ranks of its members. Its
context id separates its traffic: user point-to-point, collectives and
Create_group handshakes each use their own sub-context, so a user's ANY_TAG
receive never takes a collective's message.
"""
import itertools
import numbers
import operator
import os
import sys
import threading
import warnings

from . import atomic, attributes, buffers, constants, errhandler, errors, job, mailbox
from .attributes import Attributes
from .group import make_group
from .handle import HandleBase, IntHandle, constant
from .partitioned import PartitionedReceive, PartitionedSend
from .request import Prequest, Request
from .status import Status, check_arg as check_status

from .mailbox import COLLECTIVE, HANDSHAKE, NONBLOCKING, P2P, SUBCONTEXTS, SYNC_ACK  # noqa: F401


class CommState(mailbox.CommCore):
    """What a communicator is, shared by its handle and its duplicates by reference;
    its base holds what the point-to-point fast paths need of it."""

    __slots__ = ("context", "ranks", "rank", "slot", "name", "world_to_rank", "info",
                 "topology", "area", "large_area", "nbc", "attributes", "locks", "commctx",
                 "errhandler")

    def __init__(self, context, ranks, slot, name="", parent=None):
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
        self.topology = None    # a topology.Topology for a Cartcomm, Graphcomm...
        self.attributes = {}    # attributes.Attributes of every handle to it
        self.locks = {}         # mpi4py's per-communicator locks (lock, commlock.py)
        self.commctx = None     # commlock.py's private duplicate, at first use
        # mpi4py sets its policy's handler on every communicator it makes or starts
        # with; without one, a new communicator inherits its parent's (MPI-3.1 §8.3)
        self.errhandler = errhandler.for_new(
            errhandler.ERRORS_ARE_FATAL if parent is None else parent.errhandler)

    def subcontext(self, kind):
        return self.context * SUBCONTEXTS + kind

    def lock(self, key):
        """mpi4py's lock of this communicator for ``key`` ("bcast", ...), made at first
        use: its object collectives hold it, so that two threads calling one at once
        on one communicator take turns instead of mixing their messages."""
        lock = self.locks.get(key)
        if lock is None:    # setdefault is one step: two threads get one lock
            lock = self.locks.setdefault(key, threading.Lock())
        return lock


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
# Bsend takes no room (every send is buffered in shared memory and is in the
# receiver's queue when it returns), but programs attach a buffer first, one at a
# time per owner: the process (MPI.Attach_buffer) or a communicator (MPI-4.1).
BSEND_OVERHEAD = 96     # MPICH's: what each Bsend takes of the attached buffer
_attached = {}          # None (the process) or a CommState -> the attached buffer


def _attach(owner, buf, where):
    if owner in _attached:
        errors.fail(errors.ERR_OTHER, "Attach_buffer: a buffer is attached to %s already; "
                    "Detach_buffer it first" % where)
    if buf is None or buf is constants.BUFFER_AUTOMATIC:
        buf = constants.BUFFER_AUTOMATIC
    else:
        buffers.as_view(buf, writable=True)     # BufferError when read-only, as mpi4py
    _attached[owner] = buf


def _detach(owner):
    """The buffer attached (BUFFER_AUTOMATIC included); with none, an empty
    MPI.buffer, as mpi4py on MPICH returns."""
    if owner in _attached:
        return _attached.pop(owner)
    from .memory import buffer_class
    return buffer_class().fromaddress(0, 0)


def Attach_buffer(buf):  # noqa: N802 - MPI's name
    _attach(None, buf, "the process")


def Detach_buffer():  # noqa: N802 - MPI's name
    return _detach(None)


def Flush_buffer():  # noqa: N802 - MPI's name
    """Nothing to wait for: a buffered message is in its receiver's queue once Bsend
    returned."""


def Iflush_buffer():  # noqa: N802 - MPI's name
    return Completed()


class BufferAttachment:
    """MPI-4.1's buffers of communicators and sessions: one per object (its state,
    ``_s``, which raises for a null or freed one), named in messages as
    ``_buffer_owner``."""

    _buffer_owner = "this communicator"

    def Attach_buffer(self, buf):
        _attach(self._s, buf, self._buffer_owner)

    def Detach_buffer(self):
        return _detach(self._s)

    def Flush_buffer(self):
        if self._s is not None:     # a live object, else its error
            Flush_buffer()

    def Iflush_buffer(self):
        return Iflush_buffer() if self._s is not None else None


_sync_ids = itertools.count(1)     # next() is one step: threads never share an id
_NO_BYTES = memoryview(bytearray(0))   # where an acknowledgement is received


def _next_sync_id():
    return next(_sync_ids) % mailbox.SYNC_IDS


class Joint(Request):
    """Requests made one: complete once all its parts are. It reports the status,
    result and error of its last part (Isendrecv: the receive)."""

    def __init__(self, *parts):
        self._null = False
        self._parts = parts

    def _poll(self):
        return all(part._poll() for part in self._parts)

    def _pending(self):
        return next((part for part in self._parts if not part._poll()), self._parts[-1])

    def _describe(self):
        return self._pending()._describe()

    def _peers(self):
        return self._pending()._peers()

    def _report_to(self, status):
        self._parts[-1]._report_to(status)

    def _finish(self, status):
        """Finish every part (raising the first one's error once all are), report."""
        self._null = True
        error = None
        for part in self._parts:
            try:
                part._finish(None)
            except errors.Exception as exc:
                error = error or exc
        if status is not None:
            self._report_to(status)
        self._result = self._parts[-1]._result
        if error is not None:
            raise error


class SyncSend(Joint):
    """Issend: complete once the message is out and its receiver matched it (the
    acknowledgement arrived); it reports an empty status, as a send does."""

    def __init__(self, send, acknowledged, dest):
        super().__init__(send, acknowledged)
        self._dest = dest

    def _describe(self):
        return "rank %d to start receiving a synchronous send (Ssend/Issend)" % self._dest

    def _report_to(self, status):
        status._clear()


# --- requests of point-to-point calls --------------------------------------------

class Receive(Request):
    """A receive into a buffer (``target`` set) or of a pickled object: the
    transport's core, and what completing it means for the caller."""

    _source = constants.ANY_SOURCE     # the sender's rank, once complete
    _error_class = errors.SUCCESS
    _cancelled = False

    def __init__(self, state, core, finish=None, loads=None):
        self._null = False
        self._done = False
        self.state = state
        self.core = core
        self.finish = finish        # what turns the bytes received into the user's buffer
        self.loads = loads or _loads    # what turns them into an object (MPI.pickle's)

    def _poll(self):
        if not self._done and self.core.done:
            self._complete()
        return self._done

    def _complete(self):
        core = self.core
        self._source = source = self.state.world_to_rank.get(core.source, core.source)
        if core.error:
            self._error_class = core.error
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

    def _report_to(self, status):
        # no Status is made in advance: most receives are waited for without one
        if self._cancelled:
            status._clear()
            status.cancelled = True
        elif self._done:
            status._fill(self._source, self.core.tag, self.core.count, self._error_class)
        else:
            status._clear()

    def _convert(self, nbytes):
        if self.finish is None:
            return
        try:
            self.finish(nbytes)
        except errors.Exception as exc:   # handles received from a non-handle send
            self._error_class = exc.Get_error_class()
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
            self._cancelled = True
            self._done = True


class Send(Request):
    """A send: complete once its record is in the destination's ring."""

    def __init__(self, dest, ticket, what):
        self._null = False
        self.dest, self.ticket = dest, ticket
        self.what = what

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
        self._check_startable(self._inner is not None)
        self._inner = self._operation()

    def _poll(self):
        return self._inner is None or self._inner._poll()

    def _describe(self):
        return self._inner._describe() if self._inner is not None else "nothing"

    def _report_to(self, status):
        if self._inner is None:
            status._clear()
        else:
            self._inner._report_to(status)

    def _peers(self):
        return self._inner._peers() if self._inner is not None else ()

    def _finish(self, status):
        inner, self._inner = self._inner, None
        if inner is None:
            if status is not None:
                status._clear()
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

# integer handle -> the communicator it names (those toint() gave out, until freed)
_by_number = {}
# the class of a communicator handle by its topology kind (None: none), filled by
# intracomm.py and topology.py, which build on this module
TOPOLOGY_CLASSES = {}


class Comm(IntHandle, Attributes, errhandler.ErrorHandling, BufferAttachment):
    """``MPI.Comm``; the base class is COMM_NULL's type."""

    _errhandler_kind = "Comm"

    _state_value = None
    _attribute_kind = "Comm"
    _which = None   # COMM_WORLD and COMM_SELF: their name (intracomm.py)
    _referent_attr = "_state_value"     # what free() nullifies (handle.IntHandle)

    def _predefined(self):
        return self._state_value.context in (job.WORLD_CONTEXT, job.SELF_CONTEXT)

    def __new__(cls, comm=None):
        # Comm(other) is a new handle to the same communicator, as in mpi4py, made
        # here as mpi4py's __cinit__ makes it: a subclass's __new__ may pass another
        # communicator than the one it was called with (test_subclass's do), and
        # Python then calls __init__ with the original one
        if not isinstance(comm, (Comm, CommState, type(None))):
            raise TypeError("Comm(): expecting a communicator to take a new handle of, "
                            "got %s" % type(comm).__name__)
        state = comm._state_value if isinstance(comm, Comm) else comm
        handle = super().__new__(cls)
        handle._state_value = state
        if state is not None:
            handle._check_kind(state)
            serve_errhandler(handle)
        return handle

    def __init__(self, comm=None):
        """The handle is made in __new__."""
    def _check_kind(self, state):
        """TypeError when ``state`` is not a communicator of this class's kind
        (a Cartcomm handle needs a Cartesian topology...)."""

    @classmethod
    def _handle_of(cls, state):
        """A handle of this class to ``state``, made as mpi4py's New(type(self)) makes
        one: without calling a subclass's __new__ (Dup and Clone return Self)."""
        handle = super(Comm, cls).__new__(cls)
        handle._state_value = state
        if state is not None:
            serve_errhandler(handle)
        return handle

    def _own_class(self):
        """The class of this handle's duplicates (not the error-handling variant of
        it, errhandler.switch_class)."""
        return getattr(type(self), "_plain_class", type(self))

    def Dup(self, info=None):
        """A new communicator of the same group and topology, of this handle's class."""
        from .intracomm import duplicate    # every shmrma communicator is an intracomm
        return duplicate(self, info)

    def Clone(self):
        return self.Dup()

    def Dup_with_info(self, info):
        return self.Dup(info)

    # --- integer and Fortran handles (MPI-4.1 MPI_Comm_toint, MPI_Comm_c2f) ---
    def toint(self):
        """The integer handle of the communicator: 0 for COMM_NULL; Comm.fromint
        makes a handle to it while it lives."""
        state = self._state_value
        if state is None or state.freed:
            return 0
        _by_number[state.context + 1] = state
        return state.context + 1

    @classmethod
    def fromint(cls, number):
        """A handle to the communicator of integer handle ``number``, of the class its
        kind asks for (Intracomm, Cartcomm, Graphcomm, Distgraphcomm), as mpi4py's."""
        number = operator.index(number)
        if number == 0:     # COMM_NULL, of COMM_NULL's class (Intracomm here)
            return TOPOLOGY_CLASSES[None]()
        state = _by_number.get(number)
        if state is None or state.freed:
            errors.fail(errors.ERR_COMM, "%d is not the integer handle of a live "
                        "communicator; pass what toint() returned" % number)
        kind = None if state.topology is None else state.topology.kind
        return TOPOLOGY_CLASSES[kind]._handle_of(state)

    # --- attributes (attributes.py) ---
    def _attributes(self):
        return self._s.attributes

    def _predefined_attribute(self, keyval):
        state = self._s
        return {attributes.TAG_UB: mailbox.MAX_TAG,
                attributes.IO: constants.ANY_SOURCE,       # every rank can do I/O
                attributes.WTIME_IS_GLOBAL: 1,      # Wtime reads the machine's one clock
                attributes.UNIVERSE_SIZE: job.world_size(),     # no Spawn: the job is all
                attributes.LASTUSEDCODE: errors.last_used_code()}.get(keyval) \
            if state is not None else None

    @classmethod
    def Get_parent(cls):
        """The null intercommunicator, as MPI gives a process nobody spawned: every
        shmrma rank starts under shmrma-run (Spawn is not there)."""
        from .intercomm import Intercomm    # a subclass of this one
        return Intercomm()

    def __reduce__(self):
        # as mpi4py: a null handle pickles (the predefined ones by name, in their
        # classes); a communicator is local to its job and cannot travel
        if self._state_value is None:
            return (type(self), ())
        raise ValueError("cannot serialize '%s' instance: a communicator lives in one job; "
                         "send what it is made of (its group's ranks) instead"
                         % type(self).__name__)

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

    __hash__ = None     # unhashable, as in mpi4py (Free changes what it refers to)

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
        """MPI.CART, MPI.GRAPH or MPI.DIST_GRAPH for a communicator with that
        topology, else MPI.UNDEFINED."""
        topology = self._s.topology
        return constants.UNDEFINED if topology is None else topology.kind

    topology = property(Get_topology)

    @property
    def is_topo(self):
        return self._s.topology is not None

    _inter = False      # Intercomm's is True

    def Is_inter(self):
        self._s     # COMM_NULL is neither: ERR_COMM
        return self._inter

    def Is_intra(self):
        return not self.Is_inter()

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
        sys.stderr.write(job.abort_line(world.rank, self._s.name, errorcode))
        sys.stderr.flush()
        world.fail(world.rank)
        os._exit(errorcode & 0xFF or 1)

    def Disconnect(self):
        """MPI-3.1 §10.5.4: collective; every member's communication on it is done
        when all have arrived (a Barrier), then it is freed."""
        self.Barrier()
        self.Free()

    def Free(self):
        state = self._s
        if state.context in (job.WORLD_CONTEXT, job.SELF_CONTEXT):
            errors.fail(errors.ERR_COMM, "COMM_WORLD and COMM_SELF cannot be freed; free "
                        "only communicators you created (Dup, Split, Create...)")
        if state.slot is not None and release_slot(job.current(), state.slot):
            from . import nbcarea
            nbcarea.unlink_channel(state)   # the last member out: nobody maps it any more
        self._drop_attributes()
        if state.commctx is not None:
            state.commctx.dup.Free()    # mpi4py frees it with its communicator
        state._unbind_areas()       # the fast paths must not reach them any more
        _attached.pop(state, None)  # freeing detaches its buffer (MPI-4.1 §3.6.1)
        for area in (state.area, state.large_area):     # collarea.Area objects
            if area is not None:
                area.close()
        if state.nbc is not None:
            state.nbc.free()
        _by_number.pop(state.context + 1, None)
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
        if not 0 <= tag <= mailbox.MAX_TAG:
            errors.fail(errors.ERR_TAG, "tag %r is invalid; tags are 0..%d%s"
                        % (tag, mailbox.MAX_TAG, " or ANY_TAG" if wildcard else ""))
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

    def _irecv_message(self, received, source, tag):
        """Receive into a parsed message (None for PROC_NULL)."""
        if received is None:
            return self._irecv(source, tag, None)
        return self._irecv(source, tag, received.data, finish=received.finish)

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

    def Psend_init(self, buf, partitions, dest, tag=0, info=None):
        """A partitioned send (MPI-4): Start, then Pready each partition (``info``
        holds hints only, none of which applies here)."""
        return PartitionedSend(self, buf, partitions, dest, tag)

    def Precv_init(self, buf, partitions, source=constants.ANY_SOURCE, tag=constants.ANY_TAG,
                   info=None):
        """A partitioned receive (MPI-4): Start, then Parrived tells each partition."""
        return PartitionedReceive(self, buf, partitions, source, tag)

    def Irecv(self, buf, source=constants.ANY_SOURCE, tag=constants.ANY_TAG):
        core = _fast_irecv(self._state_value, buf, source, tag)
        if core is not False:
            return Receive(self._state_value, core)
        return self._irecv_message(self._recv_message(buf, source), source, tag)

    def Recv(self, buf, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        core = _fast_recv(self._state_value, buf, source, tag, status)
        if core is False:
            check_status(status)
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
        self.Isendrecv_replace(buf, dest, sendtag, source, recvtag).Wait(status)

    def Isendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=constants.ANY_SOURCE,
                  recvtag=constants.ANY_TAG):
        """Nonblocking Sendrecv (MPI-4): one request, reporting the receive's status."""
        self._recv_message(recvbuf, source)     # checked before anything is sent
        self._tag(recvtag, wildcard=True)
        sent = self.Isend(sendbuf, dest, sendtag)
        return Joint(sent, self.Irecv(recvbuf, source, recvtag))

    def Isendrecv_replace(self, buf, dest, sendtag=0, source=constants.ANY_SOURCE,
                          recvtag=constants.ANY_TAG):
        """Nonblocking Sendrecv_replace (MPI-4). The send copies ``buf`` out before it
        returns (no ``hold``: every send is buffered), so the receive may then
        overwrite it."""
        self._recv_message(buf, source)
        self._tag(recvtag, wildcard=True)
        sent = self._isend_bytes(self._send_data(buf, dest), dest, sendtag, False)
        return Joint(sent, self.Irecv(buf, source, recvtag))

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
        return Message.Probe(self, source, tag, status)

    def Improbe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        return Message.Iprobe(self, source, tag, status)

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
        if buf is not None:
            return self._recv_into(buf, source, tag, status)
        got = _fast_recvobj(self._state_value, source, tag, status)
        if got is _MISS:
            check_status(status)
            return self._irecv(source, tag, None).wait(status)
        if type(got) is _NativeCore:     # not there within a slice
            return Receive(self._state_value, got).wait(status)
        return got

    def _recv_into(self, buf, source, tag, status):
        """recv into a given buffer (or one of ``buf`` bytes): deprecated, as in mpi4py,
        and bounded by it (a larger message is ERR_TRUNCATE)."""
        warnings.warn("the 'buf' argument is deprecated", UserWarning, stacklevel=3)
        check_status(status)
        target = None       # as in mpi4py, the buffer of a PROC_NULL source is not looked at
        if self._peer(source, "source", wildcard=True) != constants.PROC_NULL:
            if isinstance(buf, numbers.Integral):
                buf = bytearray(operator.index(buf))
            target = buffers.as_view(buf, writable=True).cast("B")
        reported = status if status is not None else Status()
        self._irecv(source, tag, target).Wait(reported)
        nbytes = reported.count
        return _loads(target[:nbytes]) if nbytes else None

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


class _Matched:
    """What a Message refers to: a message taken out of matching, until received
    (``arrived`` is None then, for every Message copied from the same one)."""

    __slots__ = ("state", "arrived", "__weakref__")   # weakref: integer handles

    def __init__(self, state, arrived):
        self.state, self.arrived = state, arrived


class _NoProc:
    """The handle of a message from PROC_NULL."""


_NO_PROC = _NoProc()


def serve_errhandler(handle):
    """A new handle routes errors to its communicator's handler, as its others do."""
    if handle._state_value.errhandler is not errhandler.ERRORS_RETURN:
        errhandler.switch_class(handle, handle._state_value.errhandler)


class Message(HandleBase, IntHandle):
    """``MPI.Message``: a message Mprobe took out of matching; Recv or recv (and
    their I-forms) receive it once, then it is MESSAGE_NULL. ``Message(other)``
    is another handle to ``other``'s message."""

    def _predefined(self):
        return self._handle is _NO_PROC

    def _free(self):
        """Nothing to free: a message goes when it is received (mpi4py's free)."""

    def __init__(self, message=None):
        if message is not None and not isinstance(message, Message):
            raise TypeError("Message() takes a Message, not %s" % type(message).__name__)
        self._handle = None if message is None else message._handle

    def __bool__(self):
        return self._handle is not None

    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented
        return self._handle is other._handle

    __hash__ = None

    def __reduce__(self):
        # as mpi4py: the predefined handles by name, other handles not at all
        for name in ("MESSAGE_NULL", "MESSAGE_NO_PROC"):
            constant = globals()[name]
            if self is constant:
                return name
            if self._handle is constant._handle:
                return (type(self), (constant,))
        raise ValueError("cannot serialize '%s.%s' instance"
                         % (type(self).__module__, type(self).__name__))

    # --- matching probes (Comm.Mprobe and Comm.Improbe) ---
    @classmethod
    def Probe(cls, comm, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Probe, and take the message out of matching: only the Message's Recv
        receives it (a receive posted meanwhile cannot)."""
        probe = _Probe(comm, source, tag, claim=True)
        probe.wait()
        probe.report(status)
        return cls._claimed(probe)

    @classmethod
    def Iprobe(cls, comm, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """A Message when one matches now, else None."""
        probe = _Probe(comm, source, tag, claim=True)
        mailbox.mailbox().progress()
        if not probe.found():
            return None
        probe.report(status)
        return cls._claimed(probe)

    probe, iprobe = Probe, Iprobe   # the objects' messages are received with recv

    @classmethod
    def _claimed(cls, probe):
        message = cls()
        if probe.message is None:
            message._handle = _NO_PROC
            return message
        message._handle = _Matched(probe.state, probe.message)     # taken out of matching
        return message

    # --- matched receives ---
    def _receive(self, target=None, finish=None):
        handle = self._handle
        if handle is _NO_PROC:
            if self is not MESSAGE_NO_PROC:    # the predefined handle stays as it is
                self._handle = None
            return Completed(_null_status())
        if handle is None or handle.arrived is None:
            errors.fail(errors.ERR_REQUEST, "the message was received already (or is "
                        "MESSAGE_NULL); Mprobe for a new one")
        arrived, handle.arrived, self._handle = handle.arrived, None, None
        core = mailbox.mailbox().deliver(arrived, target)
        receive = Receive(handle.state, core, finish)
        receive._poll()
        return receive

    def Irecv(self, buf):
        if self._handle is _NO_PROC or buf is None:
            return self._receive()
        received = buffers.message(buf, writable=True, handles=True)
        return self._receive(received.data, received.finish)

    def Recv(self, buf, status=None):
        self.Irecv(buf).Wait(status)

    def irecv(self):
        return self._receive()

    def recv(self, status=None):
        return self._receive().wait(status)


MESSAGE_NULL = constant(Message())
MESSAGE_NO_PROC = constant(Message())
MESSAGE_NO_PROC._handle = _NO_PROC


class _Probe:
    """A probe; one that claims (Mprobe, Improbe) takes the message it finds out of
    matching in the same step, so no other thread's probe or receive matches it."""

    def __init__(self, comm, source, tag, claim=False):
        self.claim = claim
        self.state = comm._s
        self.source = comm._peer(source, "source", wildcard=True)
        self.tag = comm._tag(tag, wildcard=True)
        self.message = None
        world_source = (self.source if self.source in (constants.ANY_SOURCE, constants.PROC_NULL)
                        else self.state.ranks[self.source])
        self.world_source = world_source
        self.peers = () if world_source < 0 else (world_source,)

    def found(self):
        if self.source == constants.PROC_NULL or (self.claim and self.message is not None):
            return True
        self.message = mailbox.mailbox().find(self.state.subcontext(P2P), self.world_source,
                                              self.tag, self.claim)
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
