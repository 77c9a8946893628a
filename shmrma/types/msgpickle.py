"""``MPI.Pickle`` and ``MPI.pickle``: how object messages are serialized.

Every lowercase call (send, recv, bcast, ...) pickles with the one instance
``MPI.pickle``; ``MPI.pickle.__init__(json.dumps, json.loads)`` switches them
all, as in mpi4py (msgpickle.pxi). Other instances (mpi4py.util.pkl5 makes
one) only serve their own ``dumps``/``loads`` calls.

``dumps`` and ``loads`` below are what the messaging layer calls. On the C
engine they are shmrma/csrc/types/msgpickle.c's, which writes the pickles of small
objects itself while MPI.pickle holds pickle's own functions at protocol 4 or
5, and otherwise calls MPI.pickle's functions; ``_engage`` tells it which.
"""
import os
import pickle as _pickle

from ..core import atomic



def _from_environment():
    """mpi4py's defaults, which MPI4PY_PICKLE_PROTOCOL and _THRESHOLD change."""
    return (int(os.environ.get("MPI4PY_PICKLE_PROTOCOL", _pickle.HIGHEST_PROTOCOL)),
            int(os.environ.get("MPI4PY_PICKLE_THRESHOLD", 1024 ** 2 // 4)))  # 0.25 MiB


DEFAULT_PROTOCOL, DEFAULT_THRESHOLD = _from_environment()


class Pickle:
    """Pickle/unpickle Python objects."""

    __slots__ = ("_dumps", "_loads", "_protocol", "_threshold", "__weakref__")

    def __new__(cls, *args, **kwargs):
        # the defaults even if __init__ is skipped, as mpi4py's __cinit__ sets them
        self = object.__new__(cls)
        self._dumps, self._loads = _pickle.dumps, _pickle.loads
        self._protocol, self._threshold = DEFAULT_PROTOCOL, DEFAULT_THRESHOLD
        return self

    def __init__(self, dumps=None, loads=None, protocol=None, threshold=None):
        self._dumps = _pickle.dumps if dumps is None else dumps
        self._loads = _pickle.loads if loads is None else loads
        self._protocol = self._default_protocol(protocol)
        self._threshold = DEFAULT_THRESHOLD if threshold is None else threshold
        _engage(self)

    def _default_protocol(self, protocol):
        # None means pickle's default protocol for pickle.dumps; any other
        # function is then called without one
        if protocol is None and self._dumps is _pickle.dumps:
            return DEFAULT_PROTOCOL
        return protocol

    def dumps(self, obj):
        """Serialize object to pickle data stream."""
        if self._protocol is None:
            return self._dumps(obj)
        return self._dumps(obj, self._protocol)

    def loads(self, data):
        """Deserialize object from pickle data stream."""
        return self._loads(data)

    def dumps_oob(self, obj):
        """Serialize object to pickle data stream and out-of-band buffers.

        The buffers of at least THRESHOLD bytes travel apart (protocol 5)."""
        protocol = DEFAULT_PROTOCOL if self._protocol is None else self._protocol
        buffers = []
        threshold = self._threshold

        def out_of_band(pickle_buffer):
            view = pickle_buffer.raw()
            if view.nbytes < threshold:
                return True
            buffers.append(_as_buffer(view))
            return False

        data = self._dumps(obj, max(protocol, 5), buffer_callback=out_of_band)
        return data, buffers

    def loads_oob(self, data, buffers):
        """Deserialize object from pickle data stream and out-of-band buffers."""
        return self._loads(data, buffers=buffers)

    @property
    def PROTOCOL(self):  # noqa: N802 - mpi4py's name
        """Protocol version."""
        return self._protocol

    @PROTOCOL.setter
    def PROTOCOL(self, protocol):  # noqa: N802
        self._protocol = self._default_protocol(protocol)
        _engage(self)

    @property
    def THRESHOLD(self):  # noqa: N802 - mpi4py's name
        """Out-of-band threshold."""
        return self._threshold

    @THRESHOLD.setter
    def THRESHOLD(self, threshold):  # noqa: N802
        self._threshold = DEFAULT_THRESHOLD if threshold is None else threshold


def _as_buffer(view):
    from .memory import buffer_class
    return buffer_class()(view)


_messages = None    # the instance object messages use: ``pickle`` below


def _engage(pkl):
    """Make the messaging layer pickle as ``pkl`` does, when it is MPI.pickle."""
    if pkl is not _messages:
        return
    pickles = pkl._dumps is _pickle.dumps and pkl._loads is _pickle.loads
    if _native is not None:
        _native.pickle_setup(pkl._dumps, pkl._loads, pkl._protocol, pickles)


if atomic.BACKEND == "c":
    from .. import _native
    dumps, loads = _native.dumps, _native.loads
else:
    _native = None

    def dumps(obj):
        data = _messages.dumps(obj)
        if type(data) is not bytes:   # as csrc/types/msgpickle.c: messages carry bytes
            raise TypeError("MPI.pickle's dumps returned %s; it must return bytes"
                            % type(data).__name__)
        return data

    def loads(data):
        return _messages._loads(data)

_messages = pickle = Pickle()
_engage(pickle)


def reread_environment():
    """Take the defaults from the environment again, as mpi4py does when its MPI
    module is imported (a program may set them before ``from mpi4py import MPI``,
    after shmrma's MPI was loaded); MPI.pickle's settings still at the old
    defaults follow."""
    global DEFAULT_PROTOCOL, DEFAULT_THRESHOLD
    old = DEFAULT_PROTOCOL, DEFAULT_THRESHOLD
    DEFAULT_PROTOCOL, DEFAULT_THRESHOLD = _from_environment()
    if pickle._dumps is _pickle.dumps and pickle._protocol == old[0]:
        pickle.PROTOCOL = DEFAULT_PROTOCOL
    if pickle._threshold == old[1]:
        pickle.THRESHOLD = DEFAULT_THRESHOLD
