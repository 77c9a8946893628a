"""Buffer specifications of messages, parsed exactly as mpi4py parses them.

A message is a buffer, or ``[buf, datatype]``, ``[buf, count]``,
``[buf, count, datatype]``, ``[buf, (count, displ), datatype]`` or
``[buf, count, displ, datatype]``; the datatype defaults to the one the
buffer's format names. The result is a byte view of exactly the data.
With ``MPI.HANDLE_SYNC`` the buffer is a list of ``MPI.Sync`` handles, which
travel in their wire form; only point-to-point calls and the non-reducing
collectives accept it (checklist R154, A25).
"""
import operator

from . import constants, errors, synchandle
from . import datatype as datatypes


def as_view(obj, writable):
    """A C-contiguous byte memoryview of ``obj``; BufferError as mpi4py raises it."""
    if isinstance(obj, memoryview):
        view = obj
    else:
        try:
            view = memoryview(obj)
        except TypeError:
            raise TypeError("expected a buffer object (bytes, bytearray, numpy array, "
                            "MPI.buffer...), not %s" % type(obj).__name__) from None
    if writable and view.readonly:
        raise BufferError("the buffer is read-only but this call writes into it; "
                          "pass a writable buffer (e.g. bytearray or a numpy array)")
    if not view.c_contiguous:
        raise BufferError("the buffer is not C-contiguous; pass a contiguous array "
                          "(numpy.ascontiguousarray) or describe the layout with a datatype")
    return view


def _format_datatype(view):
    return datatypes.from_buffer_format(view.format, view.itemsize)


class Message:
    """A parsed message: ``data`` (byte view), ``count`` and ``datatype``.

    For a datatype with gaps (``message(..., sparse=True)``), ``data`` is the
    whole buffer and item 0 starts at byte ``first``.
    """

    __slots__ = ("data", "count", "datatype", "first")

    def __init__(self, data, count, datatype, first=0):
        self.data = data
        self.count = count
        self.datatype = datatype
        self.first = first

    @property
    def nbytes(self):
        return len(self.data)

    def finish(self, nbytes=None):
        """Called when a receive into ``data`` is complete (see HandleMessage)."""


class HandleMessage(Message):
    """``total`` Sync handles of a list, from item ``displ``, as a message: ``data``
    is their wire form, and ``finish`` turns what a receive wrote into ``data``
    back into handles in the list."""

    __slots__ = ("items", "displ")

    def __init__(self, items, displ, total, count, datatype):
        wire = synchandle.pack(items[displ:displ + total])
        super().__init__(memoryview(wire), count, datatype)
        self.items = items
        self.displ = displ

    def finish(self, nbytes=None):
        received = synchandle.unpack(self.data[:nbytes])
        self.items[self.displ:self.displ + len(received)] = received


def _handles(items, count, displ, datatype, writable, parts):
    """The HandleMessage of ``[list of Sync, (count, displ,) HANDLE_SYNC]``."""
    kinds = list if writable else (list, tuple)
    if not isinstance(items, kinds):
        raise TypeError("a HANDLE_SYNC message is a %s of MPI.Sync handles, not %s"
                        % ("list" if writable else "list or tuple", type(items).__name__))
    displ = 0 if displ is None else operator.index(displ)
    available = len(items) - displ
    if count is None:
        if available < 0 or available % parts:
            raise ValueError("message: cannot infer count, %d handles after displacement %d "
                             "are not a multiple of %d (one part per rank); give the count"
                             % (max(available, 0), displ, parts))
        count = available // parts
    count = operator.index(count)
    if displ < 0 or count < 0 or count * parts > available:
        raise ValueError("message: %d x %d handles at displacement %d do not fit a list of "
                         "%d" % (parts, count, displ, len(items)))
    return HandleMessage(items, displ, count * parts, count, datatype)


def refuse_handles(call):
    errors.fail(errors.ERR_TYPE, "%s cannot take HANDLE_SYNC: Sync handles travel only in "
                "point-to-point calls and Bcast/Gather/Allgather/Alltoall, never in "
                "reductions, derived datatypes or RMA (R154)" % call)


def item_bytes(datatype):
    """Bytes one item of ``datatype`` takes in a message.

    A predefined type travels whole extents: the padding inside a pair type such
    as DOUBLE_INT (12 bytes of data, extent 16) goes along, as numpy lays it out.
    """
    return datatype.Get_extent()[1] if datatype.is_predefined else datatype.Get_size()


def _spread(data, start, count, datatype):
    """A message of a datatype with gaps: the whole buffer, item 0 at ``start``."""
    if count:
        low = start + datatype.true_lb
        high = start + (count - 1) * datatype.extent + datatype.true_ub
        if low < 0 or high > len(data):
            raise ValueError("message: %d items of %s starting at byte %d reach bytes "
                             "%d..%d, outside the buffer of %d bytes"
                             % (count, datatype.Get_name(), start, low, high, len(data)))
    return Message(data, count, datatype, first=start)


def _unpack(msg):
    """(buffer, count, displ, datatype) from the list forms; None where not given."""
    if not isinstance(msg, (list, tuple)):
        return msg, None, None, None
    count = displ = datatype = None
    if len(msg) == 2:
        buf, second = msg
        if isinstance(second, (datatypes.Datatype, str)):
            datatype = second
        elif isinstance(second, (list, tuple)):
            count, displ = second
        else:
            count = second
    elif len(msg) == 3:
        buf, count, datatype = msg
        if isinstance(count, (list, tuple)):
            count, displ = count
    elif len(msg) == 4:
        buf, count, displ, datatype = msg
    else:
        raise ValueError("message: expecting 2 to 4 items, got %d" % len(msg))
    return buf, count, displ, datatype


def message(msg, writable, blocks=0, sparse=False, handles=False):
    """Parse a message specification into a Message.

    ``blocks`` is the number of equal parts a collective splits the buffer
    into (one per rank); as in mpi4py, the count, given or inferred, is then
    the count of one part, and ``data`` spans all the parts. ``sparse`` admits
    derived datatypes with gaps (RMA copies through their layout). ``handles``
    admits HANDLE_SYNC, which everything else refuses with ERR_TYPE.
    """
    listed = isinstance(msg, (list, tuple))
    buf, count, displ, datatype = _unpack(msg)
    datatype = None if datatype is None else datatypes.lookup(datatype)
    if datatype is not None and datatype.type_class == datatypes.HANDLE:
        if not handles:
            refuse_handles("this call")
        return _handles(buf, count, displ, datatype, writable, max(blocks, 1))
    if listed and (buf is None or buf is constants.BOTTOM):
        if count not in (None, 0):
            raise ValueError("message: a count of %r needs a buffer, got None" % (count,))
        dtype = datatype if datatype is not None else datatypes.BYTE
        return Message(memoryview(bytearray(0)), 0, dtype)
    if buf is None:
        raise TypeError("message: expecting a buffer or a list/tuple such as "
                        "[buf, count, datatype], got None")
    view = as_view(buf, writable)
    datatype = _format_datatype(view) if datatype is None else datatype
    data = view.cast("B") if view.format != "B" or view.ndim != 1 else view
    if count is None and not datatype:
        raise ValueError("message: cannot infer count, datatype is null; pass a datatype "
                         "or [buf, count, datatype]")
    extent = datatype.Get_extent()[1]
    size = item_bytes(datatype)
    displ = 0 if displ is None else int(displ)
    if displ < 0:
        raise ValueError("message: negative displacement %d" % displ)
    start = displ * extent
    parts = max(blocks, 1)
    if count is None:
        available = len(data) - start
        if extent == 0 or available < 0 or available % extent:
            raise ValueError("message: buffer length %d is not a multiple of the "
                             "datatype extent %d" % (len(data), extent))
        count = available // extent
        if count % parts:
            raise ValueError("message: cannot infer count, number of entries %d is not a "
                             "multiple of required number of blocks %d (one per rank); "
                             "pass a buffer of a multiple of %d items or give the count"
                             % (count, parts, parts))
        count //= parts
    count = int(count)
    if count < 0:
        raise ValueError("message: negative count %d" % count)
    if sparse and not datatype.is_predefined:
        return _spread(data, start, count, datatype)
    total = count * parts
    end = start + (total - 1) * extent + size if total else start
    if end > len(data):
        raise ValueError("message: %d items of %s at displacement %d need %d bytes, "
                         "the buffer has %d" % (total, datatype.Get_name(), displ, end,
                                                len(data)))
    if size != extent and total > 1:
        raise ValueError("message: datatype %s is not contiguous (size %d, extent %d); "
                         "only contiguous datatypes travel in messages"
                         % (datatype.Get_name(), size, extent))
    return Message(data[start:end], count, datatype)
