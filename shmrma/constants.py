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



class BottomType(int):
    """``MPI.BOTTOM``: the address-zero base of absolute displacements."""

    def __new__(cls):
        return int.__new__(cls, 0)

    def __repr__(self):
        return "BOTTOM"

    def __reduce__(self):
        return "BOTTOM"


class InPlaceType(int):
    """``MPI.IN_PLACE``: take this rank's contribution from the receive buffer."""

    def __new__(cls):
        return int.__new__(cls, -1)

    def __repr__(self):
        return "IN_PLACE"

    def __reduce__(self):
        return "IN_PLACE"


class BufferAutomaticType(int):
    """``MPI.BUFFER_AUTOMATIC``: buffered sends need no attached buffer (MPI-4.1)."""

    def __new__(cls):
        return int.__new__(cls, -2)     # MPICH's address

    def __repr__(self):
        return "BUFFER_AUTOMATIC"

    def __reduce__(self):
        return "BUFFER_AUTOMATIC"


BOTTOM = BottomType()
IN_PLACE = InPlaceType()
BUFFER_AUTOMATIC = BufferAutomaticType()

# kinds of process topology, as MPICH numbers them (Comm.Get_topology)
GRAPH = 1
CART = 2
DIST_GRAPH = 3
