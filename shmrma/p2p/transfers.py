"""The requests of point-to-point calls: a receive into a buffer or of an object, a
send waiting for room, a synchronous send waiting for its acknowledgement, the
persistent ones, and the requests made one (Isendrecv)."""
import itertools

from ..core import constants, errors
from . import transport as mailbox
from .request import Prequest, Request
from ..types.status import Status


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


class Receive(Request):
    """A receive into a buffer (``target`` set) or of a pickled object: the
    transport's core, and what completing it means for the caller."""

    _error_class = errors.SUCCESS
    _cancelled = False
    # most receives have no finish and unpickle nothing: class defaults, set only
    # when given (a window of Irecvs makes one of these per message)
    finish = None       # what turns the bytes received into the user's buffer
    loads = staticmethod(mailbox.loads)     # what turns them into an object (MPI.pickle's)

    def __init__(self, state, core, finish=None, loads=None):
        self._null = False
        self._done = False
        self.state = state
        self.core = core
        if finish is not None:
            self.finish = finish
        if loads is not None:
            self.loads = loads

    def _poll(self):
        if not self._done and self.core.done:
            self._complete()
        return self._done

    def Wait(self, status=None):
        """Wait for the receive to complete (Request.Wait, in fewer calls: a window of
        Irecvs waits for each of its requests)."""
        if not self._done:
            if self.core.done:
                self._complete()
            else:
                self._block()
        if status is None and self._error is None:
            self._null = True       # Request._finish with nothing to report or raise
        else:
            self._finish(status)
        return True

    def _source(self):
        """The sender's rank in the communicator, once complete."""
        source = self.core.source
        return self.state.world_to_rank.get(source, source)

    def _complete(self):
        core = self.core
        if core.error:
            self._error_class = core.error
            self._error = errors.Exception(
                errors.ERR_TRUNCATE,
                "a message of %d bytes from rank %d (tag %d) does not fit the receive "
                "buffer of %d bytes; post a larger buffer (Probe tells the size)"
                % (core.count, self._source(), core.tag, core.capacity))
        elif core.target is None:
            # an empty message is None, as mpi4py loads it (collective failure notices)
            self._result = self.loads(core.payload) if core.count else None
        elif self.finish is not None:
            self._convert(core.count)
        self._done = True

    def _report_to(self, status):
        # no Status is made in advance: most receives are waited for without one
        if self._cancelled:
            status._clear()
            status.cancelled = True
        elif self._done:
            status._fill(self._source(), self.core.tag, self.core.count, self._error_class)
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
    """A request that is complete when created (a send done at the call, PROC_NULL
    peers). Without ``status`` it reports the empty one (Request._report_to), made
    only if asked for: a window of Isends makes one of these per message."""

    def __init__(self, status=None, result=None):
        self._null = False      # in the instance: its dict made here is the cheapest
        if status is not None:
            self._status = status
        if result is not None:
            self._result = result

    def Wait(self, status=None):
        """Wait for a nonblocking operation to complete (it is: Request.Wait without
        its poll, for a window of Isends)."""
        if status is None and self._error is None and not self._null:
            self._null = True
            return True
        return Request.Wait(self, status)


_loads, _dumps = mailbox.loads, mailbox.dumps


def _null_status():
    status = Status()
    status._fill(constants.PROC_NULL, constants.ANY_TAG, 0)
    return status
