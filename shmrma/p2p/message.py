"""``MPI.Message``: matched probes (Mprobe, Improbe) and the receives of the message
they took out of matching (MPI-3.1 §3.8.2); probes of both kinds."""
from ..types import buffers
from ..core import constants, errors
from . import transport as mailbox
from ..core.handle import HandleBase, IntHandle, constant
from .transport import P2P
from .transfers import Completed, Receive, _null_status


class _Matched:
    """What a Message refers to: a message taken out of matching, until received
    (``arrived`` is None then, for every Message copied from the same one)."""

    __slots__ = ("state", "arrived", "__weakref__")   # weakref: integer handles

    def __init__(self, state, arrived):
        self.state, self.arrived = state, arrived


class _NoProc:
    """The handle of a message from PROC_NULL."""


_NO_PROC = _NoProc()


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
        """Blocking test for a matched message: wait and return it as a Message.

        Probe, and take the message out of matching: only the Message's Recv
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
        """Nonblocking receive of matched message; return a Request."""
        if self._handle is _NO_PROC or buf is None:
            return self._receive()
        received = buffers.message(buf, writable=True, handles=True)
        return self._receive(received.data, received.finish)

    def Recv(self, buf, status=None):
        """Blocking receive of matched message."""
        self.Irecv(buf).Wait(status)

    def irecv(self):
        """Nonblocking receive of matched message (a Python object); return a Request."""
        return self._receive()

    def recv(self, status=None):
        """Blocking receive of matched message; return the Python object."""
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
