"""Integer constants of the MPI namespace (values as in MPICH, for familiar logs)."""

UNDEFINED = -32766
PROC_NULL = -1
ANY_SOURCE = -2
ANY_TAG = -1
ROOT = -3
KEYVAL_INVALID = 0x24000000   # MPICH's: no attribute key (mpi4py's tests compare keys with it)

# group and communicator comparison
IDENT = 0
CONGRUENT = 1
SIMILAR = 2
UNEQUAL = 3

# Split_type
COMM_TYPE_SHARED = 1

# Win.Lock's lock types (MPICH's values)
LOCK_EXCLUSIVE = 234
LOCK_SHARED = 235

# threads (shmrma ranks are processes; every level is honoured trivially)
THREAD_SINGLE = 0
THREAD_FUNNELED = 1
THREAD_SERIALIZED = 2
THREAD_MULTIPLE = 3

MAX_INFO_KEY = 255
MAX_INFO_VAL = 1024
MAX_PROCESSOR_NAME = 128
MAX_ERROR_STRING = 512
MAX_OBJECT_NAME = 128
MAX_LIBRARY_VERSION_STRING = 8192



def _buffer_int():
    """EmptyBufferInt of shmrma._native (an int exporting an empty buffer), or int
    without the extension (then the constants export no buffer)."""
    try:
        from .._native import EmptyBufferInt
        return EmptyBufferInt
    except ImportError:
        return int


class _BufferConstant(_buffer_int()):
    """What mpi4py's BOTTOM, IN_PLACE and BUFFER_AUTOMATIC are: equal to and hashed
    as their MPICH address (an int: ``int()``, ``operator.index``), pickled and
    shown by name, exporting an empty buffer of no object, and not numbers (no
    arithmetic or ordering: TypeError)."""

    _name = None
    _address = 0

    def __new__(cls):
        return super().__new__(cls, cls._address)

    def __repr__(self):
        return self._name

    def __reduce__(self):
        return self._name


def _not_a_number(operation):
    def refuse(self, *args):
        raise TypeError("MPI.%s is a constant, not a number: %s is not defined on it"
                        % (self._name, operation))
    return refuse


for _operation in ("add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod "
                   "divmod rdivmod pow rpow lshift rlshift rshift rrshift and rand or ror "
                   "xor rxor neg pos invert abs lt le gt ge").split():
    setattr(_BufferConstant, "__%s__" % _operation, _not_a_number(_operation))


class BottomType(_BufferConstant):
    """``MPI.BOTTOM``: the address-zero base of absolute displacements."""

    _name, _address = "BOTTOM", 0


class InPlaceType(_BufferConstant):
    """``MPI.IN_PLACE``: take this rank's contribution from the receive buffer."""

    _name, _address = "IN_PLACE", -1


class BufferAutomaticType(_BufferConstant):
    """``MPI.BUFFER_AUTOMATIC``: buffered sends need no attached buffer (MPI-4.1)."""

    _name, _address = "BUFFER_AUTOMATIC", -2     # MPICH's address


BOTTOM = BottomType()
IN_PLACE = InPlaceType()
BUFFER_AUTOMATIC = BufferAutomaticType()

# kinds of process topology, as MPICH numbers them (Comm.Get_topology)
GRAPH = 1
CART = 2
DIST_GRAPH = 3
