"""Buffer specifications of messages, parsed exactly as mpi4py parses them.

A message is a buffer, or ``[buf, datatype]``, ``[buf, count]``,
``[buf, count, datatype]``, ``[buf, (count, displ), datatype]`` or
``[buf, count, displ, datatype]``; the datatype defaults to the one the
buffer's format names. The result is a byte view of exactly the data.
"""
from . import constants
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
    """A parsed message: ``data`` (byte view), ``count`` and ``datatype``."""

    __slots__ = ("data", "count", "datatype")

    def __init__(self, data, count, datatype):
        self.data = data
        self.count = count
        self.datatype = datatype

    @property
    def nbytes(self):
        return len(self.data)


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


def message(msg, writable):
    """Parse a message specification into a Message."""
    buf, count, displ, datatype = _unpack(msg)
    if buf is None or buf is constants.BOTTOM and isinstance(msg, (list, tuple)):
        if count not in (None, 0):
            raise ValueError("message: a count of %r needs a buffer, got None" % (count,))
        dtype = datatypes.lookup(datatype) if datatype is not None else datatypes.BYTE
        return Message(memoryview(b""), 0, dtype)
    view = as_view(buf, writable)
    datatype = _format_datatype(view) if datatype is None else datatypes.lookup(datatype)
    data = view.cast("B") if view.format != "B" or view.ndim != 1 else view
    extent = datatype.Get_extent()[1]
    size = datatype.Get_size()
    displ = 0 if displ is None else int(displ)
    if displ < 0:
        raise ValueError("message: negative displacement %d" % displ)
    start = displ * extent
    if count is None:
        available = len(data) - start
        if extent == 0 or available < 0 or available % extent:
            raise ValueError("message: buffer length %d is not a multiple of the "
                             "datatype extent %d" % (len(data), extent))
        count = available // extent
    count = int(count)
    if count < 0:
        raise ValueError("message: negative count %d" % count)
    end = start + (count - 1) * extent + size if count else start
    if end > len(data):
        raise ValueError("message: %d items of %s at displacement %d need %d bytes, "
                         "the buffer has %d" % (count, datatype.Get_name(), displ, end,
                                                len(data)))
    if size != extent and count > 1:
        raise ValueError("message: datatype %s is not contiguous (size %d, extent %d); "
                         "only contiguous datatypes travel in messages"
                         % (datatype.Get_name(), size, extent))
    return Message(data[start:end], count, datatype)
