"""Every public MPI call reports itself to the rank's recorder (install()).

Each method of the public classes (communicators, windows, requests, messages,
files) whose name is an MPI call (capitalized, as ``Win.Put``) or one of
mpi4py's lowercase calls (``comm.bcast``) is replaced, on the class, by a
wrapper that times it. Only a thread's outermost call is recorded: the calls
an MPI call makes inside (Sendrecv's Isend, a window's Barrier) are its own
cost. A call is named after the class mpi4py documents it on: a method of the
collectives' or the window's parts is ``Comm.Allreduce`` or ``Win.Put``.
"""
import functools
import inspect
import sys
import time
import types
from threading import get_ident

from ..core import atomic
from ..types import buffers
from . import recorder

# mpi4py's lowercase calls (pickled objects), which count as MPI calls too
LOWERCASE = frozenset("""
    send recv isend irecv bsend ibsend ssend issend sendrecv probe iprobe mprobe improbe
    barrier ibarrier bcast ibcast gather igather scatter iscatter allgather iallgather
    alltoall ialltoall reduce ireduce allreduce iallreduce scan iscan exscan iexscan
    neighbor_allgather neighbor_alltoall wait test waitall testall waitany testany
    waitsome testsome get_status cancel
""".split())

# arguments that name the peer, the tag, and the data of a call (Sendrecv's
# peer is its source: the rank it may wait for)
PEERS = ("source", "dest", "target_rank", "root", "rank")
TAGS = ("tag", "recvtag", "sendtag")
DATA = ("buf", "sendbuf", "origin", "origin_addr")

# receives whose requests the trace follows to the call that completes them, and
# those calls (links.py draws a message's arrow to it)
POSTS = frozenset(("Comm.Irecv", "Comm.irecv"))
COMPLETIONS = frozenset("Request." + name for name in (
    "Wait", "Test", "Waitall", "Testall", "Waitany", "Waitsome", "wait", "test", "waitall",
    "testall", "waitany"))

# calls whose group the trace keeps (links.py draws a Post's arrow to its Start)
GROUPS = frozenset(("Win.Post", "Win.Start"))
# calls that make the requests of the proposal's counters, which the trace
# follows (links.py draws a signal's arrow to the wait it ended)
COUNTER_INITS = frozenset(("Win.Sync_ops_init", "Win.Sync_object_init"))

# the classes of the runtime that carry parts of a public class's calls
PUBLIC_NAME = {
    "Collectives": "Comm", "NonblockingCollectives": "Comm", "PersistentCollectives": "Comm",
    "InterCollectives": "Comm", "BufferAttachment": "Comm",
    "NeighborCollectives": "Topocomm", "PersistentNeighborCollectives": "Topocomm",
    "Communication": "Win", "ActiveTarget": "Win", "PassiveTarget": "Win",
    "WindowBarrier": "Win", "CounterCalls": "Win",
}

_busy = set()       # threads inside a recorded call
_installed = set()    # classes whose calls are wrapped


# the classes a program meets, by the names mpi4py gives them
PUBLIC = ("Comm", "Intracomm", "Intercomm", "Topocomm", "Cartcomm", "Graphcomm",
          "Distgraphcomm", "Win", "File", "Message", "Request", "Prequest", "Grequest")
# the classes whose objects have names (Get_name) a call's record gives
_NAMED = frozenset(PUBLIC[:8])


def classes(roots=None):
    """(class, public name) of every class whose calls are recorded, each before
    those derived from it: ``roots`` and the classes derived from them; by
    default the public ones and every kind of request the runtime makes (a
    Sync_ops_init request's Wait is Request.Wait)."""
    if roots is None:
        roots = _runtime_roots()
    found, queue = [], list(roots)
    while queue:
        kind = queue.pop(0)
        if kind in (known for known, _ in found):
            continue
        public = next(base.__name__ for base in kind.__mro__ if base.__name__ in PUBLIC)
        found.append((kind, public))
        queue += kind.__subclasses__()
    return found


def _runtime_roots():
    # the modules that derive the runtime's own classes from the public ones
    from ..coll import inter, nonblocking, persistent  # noqa: F401
    from ..comm import graph, intercomm, intracomm, topology  # noqa: F401
    from ..p2p import partitioned, transfers  # noqa: F401
    from ..rma import calls, counters, winbarrier  # noqa: F401
    from ..comm.comm import Comm
    from ..io.file import File
    from ..p2p import message, request
    from ..rma import window
    return [Comm, window.Win, File, message.Message, request.Request]


def install(roots=None, assign=setattr):
    """Wrap the calls of every class not wrapped yet: the runtime's, or those of
    ``roots`` and the classes derived from them; each wrapper is set on its
    class by ``assign`` (setattr's signature)."""
    for kind, public in classes(roots):
        if kind in _installed:
            continue
        _installed.add(kind)
        for name in dir(kind):
            if name[:1].isupper() or name in LOWERCASE:
                _wrap(kind, name, public, assign)


def _wrap(kind, name, public, assign):
    attr = inspect.getattr_static(kind, name)
    method = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
    if getattr(method, "about", None) is not None or not _is_method(method):
        return      # not a method, or wrapped already (on a class it derives from)
    # named after the most general public class that has it: a request's Wait is
    # Request.Wait, an Intracomm's Send Comm.Send
    definer = next(base for base in kind.__mro__ if name in vars(base))
    named = PUBLIC_NAME.get(definer.__name__) or next(
        (base.__name__ for base in reversed(kind.__mro__)
         if base.__name__ in PUBLIC and hasattr(base, name)), public)
    label = "%s.%s" % (named, name)
    on_object = public in _NAMED and not isinstance(attr, (classmethod, staticmethod))
    wrapped = observed(method, label, on_object)
    if isinstance(attr, classmethod):
        wrapped = classmethod(wrapped)
    elif isinstance(attr, staticmethod):
        wrapped = staticmethod(wrapped)
    assign(kind, name, wrapped)


def _is_method(attr):
    """A function of Python or C, or a method a C extension's compiler made (a
    Cython function, as in mpi4py's classes); not a class, property or value."""
    return (isinstance(attr, (types.FunctionType, types.BuiltinFunctionType,
                              types.MethodDescriptorType))
            or type(attr).__name__ == "cython_function_or_method")


def observed(method, label, on_object):
    """``method`` timed and reported to the recorder as the call ``label``; the
    first argument is the communicator or window it works on when ``on_object``.
    The C extension's Observed does it (csrc/observe/observed.c); this
    function's wrapper is its fallback."""
    about = Call(method, label, on_object)
    if recorder.NATIVE is not None:
        return recorder.NATIVE.Observed(method, about)
    return _observed(method, about)


def _observed(method, about):
    now, active, frame = time.monotonic_ns, recorder.active, sys._getframe

    @functools.wraps(method)
    def call(*args, **kwargs):
        thread = get_ident()
        if thread in _busy:
            return method(*args, **kwargs)
        _busy.add(thread)
        atomic.waited()         # waits outside a call are nobody's
        result = None
        start = now()           # even before a recorder runs: a singleton's first call
        try:                    # starts it
            result = method(*args, **kwargs)
            return result
        finally:
            end = now()
            try:
                log = active[0]
                if log is not None:
                    log.call(about, frame(1), start, end, args, kwargs, result)
            finally:
                _busy.discard(thread)
    call.about = about
    return call


class Call:
    """A call's name, and where its peer, tag and data are among its arguments."""

    def __init__(self, method, label, on_object):
        self.label, self.on_object = label, on_object
        self.renames = label.endswith(".Set_name")     # the recorder's names go stale
        self.posts = label in POSTS
        # how it says which requests it completed: its name, lowercase ("" for none)
        self.completes = label.rpartition(".")[2].lower() if label in COMPLETIONS else ""
        try:
            parameters = list(inspect.signature(method).parameters.values())
        except (TypeError, ValueError):     # a C method that does not say
            parameters = []
        names = [parameter.name for parameter in parameters]
        self.defaults = {parameter.name: parameter.default for parameter in parameters
                         if parameter.default is not parameter.empty}
        self.peer = _position(names, PEERS)
        self.tag = _position(names, TAGS)
        # a call that receives and sends (Sendrecv): where it sends, and with what tag
        both = "source" in names and "dest" in names
        self.to = _position(names, ("dest",)) if both else None
        self.to_tag = _position(names, ("sendtag",)) if both else None
        self.requests = _position(names, ("requests",))
        self.group = _position(names, ("group",)) if label in GROUPS else None
        self.makes_counter = label in COUNTER_INITS
        self.counter_handle = _position(names, ("sync_counter",))
        self.data = _position(names, DATA)

    def nbytes(self, args, kwargs):
        """The bytes of the call's data, -1 when it has none or they cannot be told."""
        if self.data is None:
            return -1
        data = self._named(self.data, args, kwargs)
        nbytes = getattr(data, "nbytes", None)      # an array: the common case, at once
        return buffers.message_bytes(data) if nbytes is None else nbytes

    def peer_and_tag(self, args, kwargs):
        """The call's peer and tag, -1 for none."""
        return [_integer(self._named(where, args, kwargs)) for where in (self.peer, self.tag)]

    def destination(self, args, kwargs):
        """Where a call that also receives sends, and its tag: -1, -1 for none."""
        return [_integer(self._named(where, args, kwargs)) for where in (self.to, self.to_tag)]

    def completing(self, args, kwargs):
        """What a completion call was given: its requests, or the request itself."""
        if self.requests is not None:
            return self._named(self.requests, args, kwargs)
        return args[0] if args else None

    def group_of(self, args, kwargs):
        """The group a Post or Start names, or None."""
        return self._named(self.group, args, kwargs)

    def handle_of(self, args, kwargs):
        """The counter handle a Sync_ops_init or Sync_object_init names, or None."""
        return self._named(self.counter_handle, args, kwargs)

    def _named(self, where, args, kwargs):
        """The argument at ``where`` (its position and keyword), its default when
        not given; None when the call has no such argument."""
        if where is None:
            return None
        index, name = where
        return args[index] if index < len(args) else kwargs.get(name, self.defaults.get(name))

    def target(self, args):
        """The communicator, window or file the call was made on, or None."""
        return args[0] if args and self.on_object else None


def _position(names, wanted):
    for name in wanted:
        if name in names:
            return names.index(name), name
    return None


def _integer(value):
    try:
        return int(value) if value is not None and int(value) >= 0 else -1
    except (TypeError, ValueError):
        return -1
