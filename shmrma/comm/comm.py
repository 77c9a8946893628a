"""``MPI.Comm``: what every communicator can do (its point-to-point calls, its
group, attributes, error handler, integer handles, Free); Intracomm and
Intercomm build on it (intracomm.py, intercomm.py). Its state is a
communicator.CommState."""
import numbers
import operator
import os
import sys
import warnings

from ..core import attributes, constants, errhandler, errors, job
from ..types import buffers
from ..p2p import transport as mailbox
from ..core.attributes import Attributes
from ..p2p.bsend import BufferAttachment, _attached
from ..p2p.communicator import CommState
from .group import make_group
from ..core.handle import IntHandle
from ..p2p.transport import P2P, SYNC_ACK
from ..p2p.message import Message, _Probe
from ..p2p.partitioned import PartitionedReceive, PartitionedSend
from ..coll.slots import release_slot
from ..types.status import Status, check_arg as check_status
from ..p2p.transfers import (_NO_BYTES, Completed, Joint, Persistent, Receive, Send,
                             SyncSend, _dumps, _loads, _next_sync_id, _null_status)


_fast_send, _fast_recv, _fast_irecv = mailbox.p2p_send, mailbox.p2p_recv, mailbox.p2p_irecv
_fast_sendobj, _fast_recvobj = mailbox.p2p_sendobj, mailbox.p2p_recvobj
_MISS, _NativeCore = mailbox.MISS, mailbox.NativeCore


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


# --- communicators ----------------------------------------------------------------

# integer handle -> the communicator it names (those toint() gave out, until freed)
_by_number = {}
# the class of a communicator handle by its kind: its topology (None: none), or
# INTER; filled by intracomm.py, intercomm.py, topology.py and graph.py, which build
# on this module (it never imports them)
COMM_CLASSES = {}
INTER = "inter"
# Dup's work by the kind of the communicator (not of the handle's class: mpi4py lets
# MPI.Comm(COMM_WORLD), or a subclass of Comm, duplicate its intracommunicator); every
# communicator here is an intracommunicator, whose Dup intracomm.py gives as None
DUPLICATES = {}
# name of a communicator method whose work lives in a module above this one (a
# topology, an intercommunicator, a port's connection) -> the function doing it,
# registered by topology.py, graph.py, intercomm.py and connect.py
MADE_ABOVE = {}


class Comm(IntHandle, Attributes, errhandler.ErrorHandling, BufferAttachment):
    """``MPI.Comm``: a communication context; the base class is COMM_NULL's type."""

    _errhandler_kind = "Comm"

    _state_value = None
    _attribute_kind = "Comm"
    _which = None   # COMM_WORLD and COMM_SELF: their name (intracomm.py)
    _referent_attr = "_state_value"     # what free() nullifies (handle.IntHandle)

    def _predefined(self):
        return self._state_value.context in (job.current().world_context, job.SELF_CONTEXT)

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
        self._s     # a null or freed communicator raises here
        return DUPLICATES[None](self, info)

    def Clone(self):
        """Clone an existing communicator: a Dup of it."""
        return self.Dup()

    def Dup_with_info(self, info):
        """Duplicate a communicator with hints ``info``."""
        return self.Dup(info)

    # --- integer and Fortran handles (MPI-4.1 MPI_Comm_toint, MPI_Comm_c2f) ---
    def toint(self):
        """Translate object to integer handle.

        The integer handle of the communicator: 0 for COMM_NULL; Comm.fromint
        makes a handle to it while it lives."""
        state = self._state_value
        if state is None or state.freed:
            return 0
        _by_number[state.context + 1] = state
        return state.context + 1

    @classmethod
    def fromint(cls, number):
        """Translate integer handle to object.

        A handle to the communicator of integer handle ``number``, of the class its
        kind asks for (Intracomm, Cartcomm, Graphcomm, Distgraphcomm), as mpi4py's."""
        number = operator.index(number)
        if number == 0:     # COMM_NULL, of COMM_NULL's class (Intracomm here)
            return COMM_CLASSES[None]()
        state = _by_number.get(number)
        if state is None or state.freed:
            errors.fail(errors.ERR_COMM, "%d is not the integer handle of a live "
                        "communicator; pass what toint() returned" % number)
        kind = INTER if state.inter else None if state.topology is None \
            else state.topology.kind
        return COMM_CLASSES[kind]._handle_of(state)

    # --- attributes (attributes.py) ---
    def _attributes(self):
        return self._s.attributes

    def _predefined_attribute(self, keyval):
        state = self._s
        return {attributes.TAG_UB: mailbox.MAX_TAG,
                attributes.IO: constants.ANY_SOURCE,       # every rank can do I/O
                attributes.WTIME_IS_GLOBAL: 1,      # Wtime reads the machine's one clock
                attributes.UNIVERSE_SIZE: job.current().universe,
                attributes.LASTUSEDCODE: errors.last_used_code()}.get(keyval) \
            if state is not None else None

    @classmethod
    def Join(cls, fd):
        """Create an intercommunicator with the process at the other end of socket ``fd``.

        Both processes call it; each must be a rank of this job (comm/connect.py)."""
        return MADE_ABOVE["Join"](fd)

    @classmethod
    def Get_parent(cls):
        """Return the parent intercommunicator.

        The intercommunicator with the processes that spawned this one; the null
        intercommunicator in a process nobody spawned (comm/spawn.py)."""
        return MADE_ABOVE["Get_parent"]()

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
        """Return the rank of this process in a communicator."""
        return self._s.rank

    def Get_size(self):
        """Return the number of processes in a communicator."""
        return len(self._s.ranks)

    rank = property(Get_rank)
    size = property(Get_size)

    def Get_group(self):
        """Return a new group of the processes of a communicator."""
        return make_group(self._s.ranks)

    group = property(Get_group)

    def Get_name(self):
        """Get the print name for this communicator."""
        if not self:
            return "MPI_COMM_NULL"  # as mpi4py answers for COMM_NULL
        return self._s.name

    def Set_name(self, name):
        """Set the print name for this communicator."""
        self._s.name = str(name)

    name = property(Get_name, Set_name)

    def Get_topology(self):
        """Return the type of topology (if any) associated with a communicator.

        MPI.CART, MPI.GRAPH or MPI.DIST_GRAPH for a communicator with that
        topology, else MPI.UNDEFINED."""
        topology = self._s.topology
        return constants.UNDEFINED if topology is None else topology.kind

    topology = property(Get_topology)

    @property
    def is_topo(self):
        """Whether the communicator has a topology."""
        return self._s.topology is not None

    def Is_inter(self):
        """Return whether the communicator is an intercommunicator."""
        return self._s.inter    # COMM_NULL is neither: ERR_COMM

    def Is_intra(self):
        """Return whether the communicator is an intracommunicator."""
        return not self.Is_inter()

    is_inter = property(Is_inter)
    is_intra = property(Is_intra)

    def Get_info(self):
        """Return the current hints for a communicator, as a new Info."""
        from ..core.info import Info
        return Info.Create(self._s.info)

    def Set_info(self, info):
        """Set new values for the hints associated with a communicator."""
        from ..core.info import to_dict
        self._s.info.update(to_dict(info))

    info = property(Get_info, Set_info)

    def Compare(self, comm):
        """Compare two communicators: IDENT, CONGRUENT, SIMILAR or UNEQUAL."""
        mine, theirs = self._s, comm._s
        if mine is theirs:
            return constants.IDENT
        if mine.inter != theirs.inter:
            return constants.UNEQUAL
        # an intercommunicator compares both its groups (MPI-3.1 §6.4.1)
        groups = [(state.ranks, getattr(state, "local_ranks", ())) for state in (mine, theirs)]
        if groups[0] == groups[1]:
            return constants.CONGRUENT
        if [sorted(g) for g in groups[0]] == [sorted(g) for g in groups[1]]:
            return constants.SIMILAR
        return constants.UNEQUAL

    def Abort(self, errorcode=0):
        """Terminate the MPI execution environment: the whole job ends."""
        world = job.current()
        sys.stderr.write(job.abort_line(world.rank, self._s.name, errorcode))
        sys.stderr.flush()
        world.fail(world.rank)
        os._exit(errorcode & 0xFF or 1)

    def Disconnect(self):
        """Disconnect from a communicator: wait for all its members, then free it.

        MPI-3.1 §10.5.4: collective; every member's communication on it is done
        when all have arrived (a Barrier), then it is freed."""
        self.Barrier()
        self.Free()

    def Free(self):
        """Free a communicator (COMM_WORLD and COMM_SELF cannot be freed)."""
        state = self._s
        if state.context in (job.current().world_context, job.SELF_CONTEXT):
            errors.fail(errors.ERR_COMM, "COMM_WORLD and COMM_SELF cannot be freed; free "
                        "only communicators you created (Dup, Split, Create...)")
        if state.slot is not None and release_slot(job.current(), state.slot):
            from ..coll import area as collarea, channel as nbcarea
            nbcarea.unlink_channel(state)   # the last member out: nobody maps it any more
            collarea.recycle(state)         # its areas, for the next communicators
        self._drop_attributes()
        if state.commctx is not None:
            state.commctx.dup.Free()    # mpi4py frees it with its communicator
        state._unbind_areas()       # the fast paths must not reach them any more
        _attached.pop(state, None)  # freeing detaches its buffer (MPI-4.1 §3.6.1)
        if state.area is not None:      # collarea.Area objects
            state.area.close(keep=True)     # mapped still, for the next that takes it
        if state.large_area is not None:
            state.large_area.close(keep=True)
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
        """Nonblocking send; return a Request (Irsend too: ready mode is standard mode)."""
        if _fast_send(self._state_value, buf, dest, tag, 0):
            return Completed()
        return self._isend_bytes(self._send_data(buf, dest), dest, tag, False, hold=True)

    def Send(self, buf, dest, tag=0):
        """Blocking send (Rsend too: ready mode is standard mode)."""
        if not _fast_send(self._state_value, buf, dest, tag, 0):
            self._isend_bytes(self._send_data(buf, dest), dest, tag, False, hold=True).Wait()

    def Issend(self, buf, dest, tag=0):
        """Nonblocking send in synchronous mode: complete once the receive has matched."""
        return self._isend_bytes(self._send_data(buf, dest), dest, tag, False,
                                 synchronous=True, hold=True)

    def Ssend(self, buf, dest, tag=0):
        """Blocking send in synchronous mode: return once the receive has matched."""
        self.Issend(buf, dest, tag).Wait()

    def Ibsend(self, buf, dest, tag=0):
        """Nonblocking send in buffered mode; return a Request.

        Buffered mode: a send that has to wait for room is copied, so it never waits
        for its receiver (the attached buffer takes nothing: shared memory buffers)."""
        return self._isend_bytes(self._send_data(buf, dest), dest, tag, False)

    def Bsend(self, buf, dest, tag=0):
        """Blocking send in buffered mode: return without waiting for the receiver."""
        self.Ibsend(buf, dest, tag)

    # every send completes without its receiver, so the ready mode is the standard one
    Rsend = Send
    Irsend = Isend

    def Send_init(self, buf, dest, tag=0):
        """Create a persistent request for a send (also Bsend_init and Rsend_init)."""
        return self._persistent_send(self.Isend, buf, dest, tag)

    Bsend_init = Rsend_init = Send_init

    def Ssend_init(self, buf, dest, tag=0):
        """Create a persistent request for a send in synchronous mode."""
        return self._persistent_send(self.Issend, buf, dest, tag)

    def _persistent_send(self, isend, buf, dest, tag):
        self._send_data(buf, dest)      # arguments checked now, as MPI does
        self._tag(tag)
        return Persistent(lambda: isend(buf, dest, tag))

    def Recv_init(self, buf, source=constants.ANY_SOURCE, tag=constants.ANY_TAG):
        """Create a persistent request for a receive."""
        self._recv_message(buf, source)
        self._tag(tag, wildcard=True)
        return Persistent(lambda: self.Irecv(buf, source, tag))

    def Psend_init(self, buf, partitions, dest, tag=0, info=None):
        """Create a partitioned send request.

        A partitioned send (MPI-4): Start, then Pready each partition (``info``
        holds hints only, none of which applies here)."""
        return PartitionedSend(self, buf, partitions, dest, tag)

    def Precv_init(self, buf, partitions, source=constants.ANY_SOURCE, tag=constants.ANY_TAG,
                   info=None):
        """Create a partitioned receive request.

        A partitioned receive (MPI-4): Start, then Parrived tells each partition."""
        return PartitionedReceive(self, buf, partitions, source, tag)

    def Irecv(self, buf, source=constants.ANY_SOURCE, tag=constants.ANY_TAG):
        """Nonblocking receive; return a Request."""
        core = _fast_irecv(self._state_value, buf, source, tag)
        if core is not False:
            return Receive(self._state_value, core)
        return self._irecv_message(self._recv_message(buf, source), source, tag)

    def Recv(self, buf, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Blocking receive."""
        core = _fast_recv(self._state_value, buf, source, tag, status)
        if core is False:
            check_status(status)
            self.Irecv(buf, source, tag).Wait(status)
        elif core is not True:      # not there within a slice, or an error to raise
            Receive(self._state_value, core).Wait(status)

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=constants.ANY_SOURCE,
                 recvtag=constants.ANY_TAG, status=None):
        """Send a message and receive one."""
        # Check the receive before sending and send before posting the receive, so
        # an error in either argument raises with nothing sent and nothing posted
        # (sends never wait for their receiver, so this order cannot deadlock).
        self._recv_message(recvbuf, source)
        self._tag(recvtag, wildcard=True)
        self.Send(sendbuf, dest, sendtag)
        self.Recv(recvbuf, source, recvtag, status)

    def Sendrecv_replace(self, buf, dest, sendtag=0, source=constants.ANY_SOURCE,
                         recvtag=constants.ANY_TAG, status=None):
        """Send a message and receive one into the same buffer."""
        self.Isendrecv_replace(buf, dest, sendtag, source, recvtag).Wait(status)

    def Isendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=constants.ANY_SOURCE,
                  recvtag=constants.ANY_TAG):
        """Nonblocking send and receive; return one Request.

        Nonblocking Sendrecv (MPI-4): one request, reporting the receive's status."""
        self._recv_message(recvbuf, source)     # checked before anything is sent
        self._tag(recvtag, wildcard=True)
        sent = self.Isend(sendbuf, dest, sendtag)
        return Joint(sent, self.Irecv(recvbuf, source, recvtag))

    def Isendrecv_replace(self, buf, dest, sendtag=0, source=constants.ANY_SOURCE,
                          recvtag=constants.ANY_TAG):
        """Nonblocking send and receive into the same buffer; return one Request.

        Nonblocking Sendrecv_replace (MPI-4). The send copies ``buf`` out before it
        returns (no ``hold``: every send is buffered), so the receive may then
        overwrite it."""
        self._recv_message(buf, source)
        self._tag(recvtag, wildcard=True)
        sent = self._isend_bytes(self._send_data(buf, dest), dest, sendtag, False)
        return Joint(sent, self.Irecv(buf, source, recvtag))

    def Probe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Blocking test for a message: wait until one matches; return True."""
        probe = _Probe(self, source, tag)
        probe.wait()
        probe.report(status)
        return True

    def Iprobe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Nonblocking test for a message: whether one matches now."""
        probe = _Probe(self, source, tag)
        mailbox.mailbox().progress()
        if probe.found():
            probe.report(status)
            return True
        return False

    def Mprobe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Blocking test for a matched message: wait and return it as a Message."""
        return Message.Probe(self, source, tag, status)

    def Improbe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Nonblocking test for a matched message: a Message, or None if none matches."""
        return Message.Iprobe(self, source, tag, status)

    # --- pickled objects ---
    def isend(self, obj, dest, tag=0):
        """Nonblocking send of a Python object; return a Request."""
        sent = _fast_sendobj(self._state_value, obj, dest, tag)
        if sent is True:
            return Completed()
        return self._isend_bytes(_dumps(obj) if sent is _MISS else sent, dest, tag, True,
                                 hold=True)

    def send(self, obj, dest, tag=0):
        """Send a Python object in standard mode."""
        sent = _fast_sendobj(self._state_value, obj, dest, tag)
        if sent is not True:
            self._isend_bytes(_dumps(obj) if sent is _MISS else sent, dest, tag, True,
                              hold=True).Wait()

    def issend(self, obj, dest, tag=0):
        """Nonblocking send of a Python object in synchronous mode; return a Request."""
        return self._isend_bytes(_dumps(obj), dest, tag, True, synchronous=True, hold=True)

    def ssend(self, obj, dest, tag=0):
        """Send a Python object in synchronous mode."""
        self.issend(obj, dest, tag).Wait()

    def ibsend(self, obj, dest, tag=0):
        """Nonblocking send of a Python object in buffered mode; return a Request."""
        return self._isend_bytes(_dumps(obj), dest, tag, True)

    def bsend(self, obj, dest, tag=0):
        """Send a Python object in buffered mode."""
        self.ibsend(obj, dest, tag)

    def irecv(self, buf=None, source=constants.ANY_SOURCE, tag=constants.ANY_TAG):
        """Nonblocking receive of a Python object; return a Request (its wait gives it)."""
        core = _fast_irecv(self._state_value, None, source, tag)
        if core is not False:
            return Receive(self._state_value, core)
        return self._irecv(source, tag, None)

    def recv(self, buf=None, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Receive a Python object and return it (``buf`` is deprecated)."""
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
        """Send a Python object and receive one; return the one received."""
        self._peer(source, "source", wildcard=True)  # as in Sendrecv: check, send, receive
        self._tag(recvtag, wildcard=True)
        self.send(sendobj, dest, sendtag)
        return self.recv(recvbuf, source, recvtag, status)

    def probe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Blocking test for a message: wait until one matches; return True."""
        return self.Probe(source, tag, status)

    def iprobe(self, source=constants.ANY_SOURCE, tag=constants.ANY_TAG, status=None):
        """Nonblocking test for a message: whether one matches now."""
        return self.Iprobe(source, tag, status)

    mprobe = Mprobe
    improbe = Improbe


def serve_errhandler(handle):
    """A new handle routes errors to its communicator's handler, as its others do."""
    if handle._state_value.errhandler is not errhandler.ERRORS_RETURN:
        errhandler.switch_class(handle, handle._state_value.errhandler)
