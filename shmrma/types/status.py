"""``MPI.Status``: source, tag, error, byte count and cancelled flag of a completed
operation.

The fields live in five C ints laid out as MPICH's ``MPI_Status`` (count_lo,
count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR), because mpi4py hands out
that memory (``Status.tomemory``) and programs write through it; the C transport
fills a receive's status straight into them (shmrma/csrc/p2p/transport.c).
"""
import operator
from array import array

from ..core import constants, errors
from ..core.handle import IntHandle

COUNT_LO, COUNT_HI_AND_CANCELLED, SOURCE, TAG, ERROR = range(5)
# the Fortran status (py2f) is the same five ints, as MPICH's MPI_Status_c2f gives them
F_SOURCE, F_TAG, F_ERROR, F_STATUS_SIZE = SOURCE, TAG, ERROR, 5
_EMPTY = array("i", (0, 0, constants.ANY_SOURCE, constants.ANY_TAG, errors.SUCCESS))
_INT_MAX = 0x7FFFFFFF


def _int32(value):
    """The int a C int holds for the low 32 bits of ``value``."""
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value > _INT_MAX else value


class Status:
    """``MPI.Status``: the status of a message. ``Status(other)`` copies ``other``."""

    __slots__ = ("_fields", "__weakref__")    # weak references, as mpi4py's Status

    def __init__(self, status=None):
        if status is None:
            self._fields = _EMPTY[:]
        elif isinstance(status, Status):
            self._fields = status._fields[:]
        else:
            raise TypeError("Status() takes a Status to copy, not %s" % type(status).__name__)

    def _copy_from(self, other):
        self._fields[:] = other._fields

    def _clear(self):
        """The empty status of a null request: ANY_SOURCE, ANY_TAG, SUCCESS, count 0."""
        self._fields[:] = _EMPTY

    def _fill(self, source, tag, count, error=errors.SUCCESS):
        """A completed operation's status (not cancelled)."""
        fields = self._fields
        fields[SOURCE], fields[TAG], fields[ERROR] = source, tag, error
        fields[COUNT_HI_AND_CANCELLED] = 0
        if count <= _INT_MAX:
            fields[COUNT_LO] = count
        else:
            self.count = count

    # --- the fields ---
    def Get_source(self):
        """Get message source."""
        return self._fields[SOURCE]

    def Set_source(self, source):
        """Set message source."""
        self._fields[SOURCE] = operator.index(source)

    def Get_tag(self):
        """Get message tag."""
        return self._fields[TAG]

    def Set_tag(self, tag):
        """Set message tag."""
        self._fields[TAG] = operator.index(tag)

    def Get_error(self):
        """Get message error."""
        return self._fields[ERROR]

    def Set_error(self, error):
        """Set message error."""
        self._fields[ERROR] = operator.index(error)

    source = property(Get_source, Set_source, doc="Message source.")
    tag = property(Get_tag, Set_tag, doc="Message tag.")
    error = property(Get_error, Set_error, doc="Message error.")

    @property
    def count(self):
        """The byte count."""
        fields = self._fields
        return (fields[COUNT_LO] & 0xFFFFFFFF) | (fields[COUNT_HI_AND_CANCELLED] >> 1) << 32

    @count.setter
    def count(self, nbytes):
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            errors.fail(errors.ERR_COUNT, "a status count is a number of bytes >= 0, not %d"
                        % nbytes)
        fields = self._fields
        fields[COUNT_LO] = _int32(nbytes)
        fields[COUNT_HI_AND_CANCELLED] = fields[COUNT_HI_AND_CANCELLED] & 1 | (nbytes >> 32) << 1

    def Get_count(self, datatype=None):
        """Get the number of whole items of ``datatype`` (default: bytes), or UNDEFINED."""
        size = 1 if datatype is None else _datatype_size(datatype)
        if size == 0:
            return 0
        count = self.count
        return count // size if count % size == 0 else constants.UNDEFINED

    def Get_elements(self, datatype):
        """Get the number of basic elements in a message.

        The basic elements received (MPI-3.1 §4.1.11): a column of 5 doubles is 5,
        and a part of an item counts the elements it holds; UNDEFINED when the bytes
        end inside one."""
        elements = _derived().elements_in(_lookup(datatype), self.count)
        return constants.UNDEFINED if elements is None else elements

    def Set_elements(self, datatype, count):
        """Set the number of elements in a status.

        Set the count to ``count`` basic elements of ``datatype`` (for Grequest
        queries): Get_elements(datatype) answers ``count`` after it."""
        count = operator.index(count)
        if count < 0:
            errors.fail(errors.ERR_COUNT, "Set_elements takes a count of elements >= 0, "
                        "not %d" % count)
        self.count = _derived().bytes_of_elements(_lookup(datatype), count)

    def Is_cancelled(self):
        """Test to see if a request was cancelled."""
        return bool(self._fields[COUNT_HI_AND_CANCELLED] & 1)

    def Set_cancelled(self, flag):
        """Set the cancelled state associated with a status."""
        fields = self._fields
        fields[COUNT_HI_AND_CANCELLED] = fields[COUNT_HI_AND_CANCELLED] & ~1 | bool(flag)

    cancelled = property(Is_cancelled, Set_cancelled, doc="Cancelled state.")

    def tomemory(self):
        """The status's memory, as C ints: writes through it change the status."""
        return memoryview(self._fields)

    # --- comparison and pickling, as mpi4py's (field by field) ---
    def __eq__(self, other):
        if not isinstance(other, Status):
            return NotImplemented
        return self._fields == other._fields

    def __ne__(self, other):
        if not isinstance(other, Status):
            return NotImplemented
        return self._fields != other._fields

    __hash__ = None

    # --- the Fortran status: F_STATUS_SIZE ints, F_SOURCE, F_TAG, F_ERROR among them ---
    def py2f(self):
        """Return the Fortran status: a list of F_STATUS_SIZE ints."""
        return list(self._fields)

    @classmethod
    def f2py(cls, arg):
        """A new status of the first F_STATUS_SIZE ints of ``arg`` (what py2f gave)."""
        fields = [operator.index(arg[i]) for i in range(F_STATUS_SIZE)]
        status = cls()
        status._fields[:] = array("i", fields)
        return status

    def __getstate__(self):
        return {"source": self.source, "tag": self.tag, "error": self.error,
                "count": self.count, "cancelled": self.cancelled}

    def __setstate__(self, state):
        self._fields = _EMPTY[:]
        self.source, self.tag, self.error = state["source"], state["tag"], state["error"]
        self.count, self.cancelled = state.get("count", 0), state.get("cancelled", False)

    def __repr__(self):
        return "<Status source=%d tag=%d count=%d error=%d>" % (
            self.source, self.tag, self.count, self.error)


def check_arg(status):
    """A call's ``status`` argument is None or a Status: TypeError, as in mpi4py,
    before anything is done."""
    if status is not None and not isinstance(status, Status):
        raise TypeError("status must be an MPI.Status or None, not %s" % type(status).__name__)


def _datatype_size(datatype):
    from . import buffers
    return buffers.item_bytes(_lookup(datatype))


def _lookup(datatype):
    from . import datatype as datatypes
    return datatypes.lookup(datatype)


def _derived():
    from . import derived  # datatypes sit above the status
    return derived


def handle_of(obj):
    """mpi4py's ``MPI._handleof``: the MPI handle of a handle object (its int, as
    ``obj.handle``), the address of a Status's five C ints (what MPI_Status is)."""
    if isinstance(obj, IntHandle):
        return obj.handle
    if isinstance(obj, Status):
        return obj._fields.buffer_info()[0]
    raise TypeError("_handleof() takes an MPI object (Comm, Datatype, Status...), not %s"
                    % type(obj).__name__)
