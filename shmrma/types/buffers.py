"""Buffer specifications of messages, parsed exactly as mpi4py parses them.

A message is a buffer, or ``[buf, datatype]``, ``[buf, count]``,
``[buf, count, datatype]``, ``[buf, (count, displ), datatype]`` or
``[buf, count, displ, datatype]``; the datatype defaults to the one the
buffer's format names. The result is a byte view of exactly the data. The
vector collectives (Scatterv, Gatherv, ...) take the same forms with a count
and a displacement per rank (``vector_message``).
With ``MPI.HANDLE_SYNC`` the buffer is a list of ``MPI.Sync`` handles, which
travel in their wire form; only point-to-point calls and the non-reducing
collectives accept it (R154, A25).
"""
import ctypes
import mmap
import operator
import threading

from ..core import atomic, constants, errors
from . import derived, dlpack, synchandle
from . import datatype as datatypes


def as_view(obj, writable):
    """A C-contiguous memoryview of ``obj``'s memory; BufferError as mpi4py raises it.
    A Fortran-ordered buffer is taken as mpi4py takes it: its elements in memory
    order (numpy's ravel(order="K"), a view, not a copy)."""
    view = obj if isinstance(obj, memoryview) else dlpack.host_view(obj, writable)
    if writable and view.readonly:
        raise BufferError("the buffer is read-only but this call writes into it; "
                          "pass a writable buffer (e.g. bytearray or a numpy array)")
    if not view.c_contiguous:
        if not view.f_contiguous:
            raise BufferError("the buffer is not contiguous; pass a contiguous array "
                              "(numpy.ascontiguousarray) or describe the layout with a "
                              "datatype")
        import numpy
        view = memoryview(numpy.asarray(view).ravel(order="K"))     # contiguous: a view
    return view


def _bytes_of(view):
    """``view`` as a flat byte view (an empty array of any shape, such as (2, 0),
    which memoryview cannot cast, as an empty one)."""
    if view.format == "B" and view.ndim == 1:
        return view
    if not view.nbytes:
        return memoryview(bytearray(0))
    return view.cast("B")


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
                "reductions, derived datatypes or RMA" % call)


class PackedMessage(Message):
    """A message of a datatype with gaps (a column, a triangle): ``data`` holds its
    items packed, as they travel. A send packs at the parse; a receive's ``data``
    starts as the buffer's current items (collectives with IN_PLACE read this
    rank's part from it) and ``finish`` unpacks what arrived into the buffer."""

    __slots__ = ("whole", "items")

    def __init__(self, whole, first, items, count, writable):
        packed = items.pack(whole, first)
        data = memoryview(bytearray(packed) if writable else packed).cast("B")
        super().__init__(data, count, items.datatype, first)
        self.whole = whole
        self.items = items

    def finish(self, nbytes=None):
        self.items.unpack(self.data, self.whole, self.first, nbytes)


class Prefix(Message):
    """The first ``count`` items of a parsed message; finishing it finishes the whole
    (Reduce_scatter with IN_PLACE writes this rank's block at the buffer's front)."""

    __slots__ = ("whole",)

    def __init__(self, whole, count):
        super().__init__(whole.data[:count * item_bytes(whole.datatype)], count,
                         whole.datatype)
        self.whole = whole

    def finish(self, nbytes=None):
        self.whole.finish()


item_bytes = derived.packed_item_bytes


def _spread(data, start, count, datatype):
    """The Items of ``count`` items of ``datatype`` from byte ``start`` of ``data``,
    checked to lie inside it (items that touch no byte lie inside any buffer)."""
    items = derived.items_of(datatype, count)
    low, high = start + items.low, start + items.high
    if items.low < items.high and (low < 0 or high > len(data)):     # bytes touched
        raise ValueError("message: %d items of %s starting at byte %d reach bytes "
                         "%d..%d, outside the buffer of %d bytes"
                         % (count, type_name(datatype), start, low, high, len(data)))
    return items


def type_name(datatype):
    """A datatype as messages name it: its name, or what it is when it has none."""
    return datatype.Get_name() or "a derived datatype"


def _unpack(msg, pairs=(list, tuple)):
    """(buffer, count, displ, datatype) from the list forms; None where not given.
    A count of one of the ``pairs`` types is (count, displ); the vector forms pass
    only tuple, as a list there is the counts."""
    if not isinstance(msg, (list, tuple)):
        return msg, None, None, None
    count = displ = datatype = None
    if len(msg) == 2:
        buf, second = msg
        if isinstance(second, (datatypes.Datatype, str)):
            datatype = second
        elif isinstance(second, pairs):
            count, displ = second
        else:
            count = second
    elif len(msg) == 3:
        buf, count, datatype = msg
        if isinstance(count, pairs):
            count, displ = count
    elif len(msg) == 4:
        buf, count, displ, datatype = msg
    else:
        raise ValueError("message: expecting 2 to 4 items, got %d" % len(msg))
    return buf, count, displ, datatype


def _positive_extent(datatype, what):
    """The extent of a datatype a message needs it of (to ``what``); ValueError, as
    mpi4py raises it, for a null datatype or one of extent <= 0."""
    if not datatype:
        raise ValueError("message: cannot %s, datatype is null; pass a datatype"
                         % what)
    lb, extent = datatype.Get_extent()
    if extent <= 0:
        raise ValueError("message: cannot %s, datatype extent %d (lb:%d, ub:%d); it "
                         "needs a positive extent" % (what, extent, lb, lb + extent))
    return extent


def _inferred_count(nbytes, datatype, parts):
    """The count of each of ``parts`` equal parts of ``nbytes`` bytes of items."""
    if nbytes == 0:
        return 0
    extent = _positive_extent(datatype, "infer count")
    if nbytes % extent:
        raise ValueError("message: cannot infer count, buffer length %d is not a multiple "
                         "of the datatype extent %d" % (nbytes, extent))
    if (nbytes // extent) % parts:
        raise ValueError("message: cannot infer count, number of entries %d is not a "
                         "multiple of required number of blocks %d (one per rank); pass a "
                         "buffer of a multiple of %d items or give the count"
                         % (nbytes // extent, parts, parts))
    return nbytes // extent // parts


def message_bytes(msg):
    """The bytes a message specification names, as far as saying it costs no
    parse (for --trace and --profile): ``count`` items of ``datatype`` when both
    are given, else the whole buffer; -1 for none or one this cannot tell."""
    try:
        buf, count, _, datatype = _unpack(msg)
        if isinstance(count, int) and datatype is not None:
            if not isinstance(datatype, (datatypes.Datatype, str)):
                return count * datatype.Get_size()      # another MPI's (the mpi backend)
            return count * item_bytes(datatypes.lookup(datatype))
        if buf is None:
            return -1
        nbytes = getattr(buf, "nbytes", None)
        return memoryview(buf).nbytes if nbytes is None else nbytes
    except Exception:       # the call itself says what is wrong with it
        return -1


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
    if listed and buf is constants.BOTTOM and count not in (None, 0) and datatype:
        return _bottom_message(datatype, operator.index(count), max(blocks, 1), writable)
    if listed and (buf is None or buf is constants.BOTTOM):
        if count not in (None, 0) and buf is constants.BOTTOM:
            raise ValueError("message: MPI.BOTTOM with a count of %r needs a datatype whose "
                             "displacements are absolute addresses (MPI.Get_address)"
                             % (count,))
        if count not in (None, 0):
            raise ValueError("message: a count of %r needs a buffer, got None" % (count,))
        dtype = datatype if datatype is not None else datatypes.BYTE
        return Message(memoryview(bytearray(0)), 0, dtype)
    if buf is None:
        raise TypeError("message: expecting a buffer or a list/tuple such as "
                        "[buf, count, datatype], got None")
    view = as_view(buf, writable)
    datatype = _format_datatype(view) if datatype is None else datatype
    data = _bytes_of(view)
    displ = 0 if displ is None else operator.index(displ)
    if displ < 0:
        raise ValueError("message: negative displacement %d" % displ)
    start = 0
    if displ > 0:
        start = displ * _positive_extent(datatype, "handle displacement")
        if start > len(data):
            raise ValueError("message: displacement %d out of bounds, the buffer holds %d "
                             "items" % (displ, len(data) // (start // displ)))
    parts = max(blocks, 1)
    if count is None:
        count = _inferred_count(len(data) - start, datatype, parts)
    count = operator.index(count)
    if count < 0:
        raise ValueError("message: negative count %d" % count)
    total = count * parts
    if not datatype and total == 0:     # MPICH lets nothing of a null type through
        return Message(data[:0], 0, datatype)
    size = item_bytes(datatype)
    padded = writable and derived.has_padding(datatype)
    if not datatype.is_predefined or padded:
        items = _spread(data, start, total, datatype)
        if sparse:      # RMA copies through the layout itself
            return Message(data, count, datatype, first=start)
        if not items.dense or padded:   # a receive writes only the type map's bytes
            return PackedMessage(data, start, items, count, writable)
        start += items.low
    end = start + total * size
    if end > len(data):
        raise ValueError("message: %d items of %s at displacement %d need %d bytes, "
                         "the buffer has %d" % (total, type_name(datatype), displ, end,
                                                len(data)))
    return Message(data[start:end], count, datatype)


def check_same_datatype(send, receive):
    """ValueError unless a reduction's send and receive messages have the same
    datatype, as mpi4py checks it."""
    if send.datatype != receive.datatype:
        raise ValueError("mismatch in send and receive MPI datatypes (%s and %s); "
                         "pass buffers of the same type"
                         % (type_name(send.datatype), type_name(receive.datatype)))


def check_reduction_pair(send, receive):
    """ValueError unless a reduction's send and receive messages have the same
    datatype and count (mpi4py's chk_cro_args)."""
    check_same_datatype(send, receive)
    if send.count != receive.count:
        raise ValueError("mismatch in send count %d and receive count %d; pass buffers "
                         "of the same length" % (send.count, receive.count))


class VectorMessage:
    """A buffer cut in one part per rank: ``part(i)`` is the bytes of rank i's
    ``counts[i]`` items from item ``displs[i]`` on (``extent`` bytes each)."""

    __slots__ = ("data", "counts", "displs", "extent", "_packed")

    def __init__(self, data, counts, displs, extent, packed=None):
        self.data, self.counts, self.displs, self.extent = data, counts, displs, extent
        self._packed = packed

    def part(self, index):
        start, stop = self.span(index)
        return self.data[start:stop]

    def span(self, index):
        """(start, stop) of rank ``index``'s part in ``data``."""
        start = self.displs[index] * self.extent
        return start, start + self.counts[index] * self.extent

    def finish(self):
        """Unpack what receives wrote into ``data`` (a datatype with gaps)."""
        if self._packed is not None:
            self._packed.finish()


def _packed_vector(data, counts, displs, datatype, writable):
    """The VectorMessage of a datatype with gaps: the items from the lowest part's
    first to the highest part's last, packed; the parts index into that."""
    used = [(displ, displ + count) for count, displ in zip(counts, displs) if count]
    low = min((first for first, _ in used), default=0)
    high = max((end for _, end in used), default=0)
    extent = datatype.Get_extent()[1]
    items = _spread(data, low * extent, high - low, datatype)
    packed = PackedMessage(data, low * extent, items, high - low, writable)
    return VectorMessage(packed.data, counts, [displ - low for displ in displs],
                         item_bytes(datatype), packed)


def vector_message(msg, writable, blocks):
    """Parse the message of a vector collective as mpi4py does: ``[buf, counts,
    displs, datatype]``, ``[buf, (counts, displs), datatype]``, ``[buf, counts,
    datatype]``, ``[buf, counts]``, ``[buf, datatype]`` or a buffer. Counts left
    out split the buffer as evenly as it goes (the first ranks get one more item),
    an int is every rank's count; displacements (in items) left out pack the
    parts, an int strides them."""
    buf, counts, displs, datatype = _unpack(msg, pairs=tuple)
    datatype = None if datatype is None else datatypes.lookup(datatype)
    if datatype is not None and datatype.type_class == datatypes.HANDLE:
        refuse_handles("a vector collective")
    if buf is None or buf is constants.BOTTOM:
        if datatype is None:
            raise ValueError("message: a buffer of None needs a datatype")
        data = memoryview(bytearray(0))
    else:
        view = as_view(buf, writable)
        datatype = _format_datatype(view) if datatype is None else datatype
        data = _bytes_of(view)
    if counts is None and len(data):
        extent = _positive_extent(datatype, "infer count")
    else:   # given counts take any extent, as in mpi4py: a type of size 0 moves nothing
        extent = datatype.Get_extent()[1]       # ERR_TYPE for a null datatype, as in MPI
    counts = _counts_of(counts, len(data), extent, blocks)
    displs = _displs_of(displs, counts, blocks)
    for rank, (count, displ) in enumerate(zip(counts, displs)):
        if count < 0 or displ < 0:
            raise ValueError("message: rank %d's count %d or displacement %d is negative"
                             % (rank, count, displ))
        if datatype.is_predefined and (displ + count) * extent > len(data):
            raise ValueError("message: rank %d's %d items from item %d reach byte %d, "
                             "outside the buffer of %d bytes"
                             % (rank, count, displ, (displ + count) * extent, len(data)))
    padded = writable and derived.has_padding(datatype)
    if not datatype.is_predefined or padded:
        for count, displ in zip(counts, displs):
            _spread(data, displ * extent, count, datatype)
        if not (derived.is_dense(datatype) and datatype.lb == 0) or padded:
            return _packed_vector(data, counts, displs, datatype, writable)
    return VectorMessage(data, counts, displs, extent)


# Byte buffers of packed parts given back by finished calls, for the next to reuse:
# a fresh buffer of a MiB costs its page faults (glibc maps every allocation that
# large anew and unmaps it at free), more than the copy it holds.
SCRATCH_KEPT = 4
SCRATCH_LARGEST = 64 << 20
_scratch = []
_scratch_lock = threading.Lock()        # threads call collectives at once


def scratch(nbytes):
    """A writable byte view of ``nbytes`` whose buffer give_back() may reuse."""
    with _scratch_lock:
        for index, buffer in enumerate(_scratch):
            if len(buffer) >= nbytes:
                del _scratch[index]
                return memoryview(buffer)[:nbytes]
    return memoryview(bytearray(nbytes))


def give_back(view):
    """Keep scratch()'s buffer for the next call; ``view`` is not used again."""
    buffer = view.obj
    if not isinstance(buffer, bytearray) or len(buffer) > SCRATCH_LARGEST:
        return
    with _scratch_lock:
        if len(_scratch) < SCRATCH_KEPT:
            _scratch.append(buffer)
        else:
            smallest = min(range(len(_scratch)), key=lambda i: len(_scratch[i]))
            if len(_scratch[smallest]) < len(buffer):
                _scratch[smallest] = buffer


class VectorWMessage:
    """Alltoallw's buffer: rank i's ``counts[i]`` items of ``types[i]`` from byte
    ``displs[i]`` of ``whole``. The parts' types differ, so each travels packed: the
    parts lie one after another in ``data``, and ``finish`` unpacks what receives
    wrote there into ``whole``. ``packed``: the parts hold what ``whole`` holds
    (a receive need not, when every part of it will be written). ``direct``: the
    index of a part that goes from one whole to the other (copy_direct: this
    rank's own): an empty part here, neither packed nor unpacked."""

    __slots__ = ("data", "whole", "_items", "_firsts", "_starts", "_direct")

    def __init__(self, whole, items, firsts, packed=True, direct=None):
        self.whole, self._items, self._firsts = whole, items, firsts
        self._direct = direct
        self._starts = [0]
        for index, item in enumerate(items):
            self._starts.append(self._starts[-1] + (item.nbytes if index != direct else 0))
        self.data = scratch(self._starts[-1])      # every byte is written before use
        for index, (item, first) in enumerate(zip(items, firsts)):
            if item.count and packed and index != direct:
                item.pack_into(whole, first, self.part(index))

    def release(self):
        """Done with the parts: their buffer may serve the next call (give_back)."""
        give_back(self.data)
        self.data = None

    def bytes_message(self):
        """The packed parts as a vector message of bytes, as Alltoallv takes it."""
        sizes = [stop - start for start, stop in zip(self._starts, self._starts[1:])]
        return [self.data, (sizes, self._starts[:-1]), datatypes.BYTE]

    def part(self, index):
        start, stop = self.span(index)
        return self.data[start:stop]

    def span(self, index):
        return self._starts[index], self._starts[index + 1]

    def snapshot(self):
        """A copy of the packed parts, to send (Alltoallw with IN_PLACE)."""
        copy = VectorWMessage.__new__(VectorWMessage)
        copy.whole, copy._items, copy._firsts = None, self._items, self._firsts
        copy._starts, copy.data = self._starts, memoryview(bytes(self.data))
        copy._direct = self._direct
        return copy

    def finish(self):
        for index, (item, first) in enumerate(zip(self._items, self._firsts)):
            if item.count and index != self._direct:
                item.unpack(self.part(index), self.whole, first)

    def direct_bytes(self):
        """The packed size of part ``direct``."""
        return self._items[self._direct].nbytes

    def copy_direct(self, source):
        """Write part ``direct`` of ``source`` (a VectorWMessage whose part holds as
        many bytes, not overlapping this one) straight into this message's buffer:
        one copy when both parts are dense, else packed in between."""
        index = self._direct
        item, first = self._items[index], self._firsts[index]
        given, given_first = source._items[index], source._firsts[index]
        nbytes = given.nbytes
        if not nbytes:
            return
        if item.dense and given.dense and item.members is None:
            start, start_given = first + item.low, given_first + given.low
            self.whole[start:start + nbytes] = source.whole[start_given:start_given + nbytes]
            return
        packed = scratch(nbytes)
        try:
            given.pack_into(source.whole, given_first, packed)
            item.unpack(packed, self.whole, first)
        finally:
            give_back(packed)


def vector_w_message(msg, writable, blocks, packed=True, direct=None):
    """Parse Alltoallw's message as mpi4py does: ``[buf, counts, displs, datatypes]``,
    ``[buf, (counts, displs), datatypes]`` or ``[buf, datatypes]`` (then one item of
    each type at byte 0). Displacements are in bytes; with MPI.BOTTOM they are
    absolute addresses (MPI.Get_address), usually inside the datatypes. ``packed``
    and ``direct``: as VectorWMessage's."""
    buf, counts, displs, types = _unpack_w(msg)
    types = _per_rank(types, blocks, "datatypes", datatypes.lookup)
    if any(datatype.type_class == datatypes.HANDLE for datatype in types):
        refuse_handles("Alltoallw")
    bottom = buf is constants.BOTTOM
    if counts is None and displs is None:
        counts, displs = [1] * blocks, [0] * blocks
    elif bottom and (counts is None or displs is None):
        raise ValueError("message: BOTTOM requires %s" % ("counts" if counts is None
                                                           else "displs"))
    counts, displs = _per_rank(counts, blocks, "counts"), _per_rank(displs, blocks, "displs")
    if any(count < 0 for count in counts):
        raise ValueError("message: negative count in %s" % (counts,))
    items = [derived.items_of(datatype, count) for datatype, count in zip(types, counts)]
    if bottom:
        used = [(displ + item.low, displ + item.high)
                for displ, item in zip(displs, items) if item.count]
        low = min((start for start, _ in used), default=0)
        high = max((stop for _, stop in used), default=0)
        whole = _at_address(low, high - low, writable)
        return VectorWMessage(whole, items, [displ - low for displ in displs], packed,
                              direct)
    whole = as_view(buf, writable)
    whole = _bytes_of(whole)
    for datatype, count, displ in zip(types, counts, displs):
        _spread(whole, displ, count, datatype)
    return VectorWMessage(whole, items, displs, packed, direct)


def _bottom_message(datatype, count, parts, writable):
    """A message at MPI.BOTTOM: its datatype holds absolute addresses (MPI.Get_address,
    as in a struct type naming several arrays), so the memory its items reach is the
    buffer, from the lowest of them on."""
    if count < 0:
        raise ValueError("message: negative count %d" % count)
    if datatype.is_predefined:
        raise ValueError("message: MPI.BOTTOM needs a datatype whose displacements are "
                         "absolute addresses (MPI.Get_address), not %s"
                         % datatype.Get_name())
    items = derived.Items(datatype, count * parts)
    data = _at_address(items.low, items.high - items.low, writable)
    if not items.dense:
        return PackedMessage(data, -items.low, items, count, writable)
    return Message(data, count, datatype)


def _at_address(address, nbytes, writable):
    """``nbytes`` of this process's memory from ``address`` on, as a byte view: the
    buffer MPI.BOTTOM stands for, whose datatypes carry absolute addresses (from
    MPI.Get_address). A wrong address faults, as it does in C MPI."""
    if nbytes <= 0:
        return memoryview(bytearray(0))
    if address < mmap.PAGESIZE:
        raise ValueError("message: MPI.BOTTOM with a datatype reaching address %d: its "
                         "displacements must be absolute addresses (MPI.Get_address)"
                         % address)
    view = memoryview((ctypes.c_char * nbytes).from_address(address)).cast("B")
    return view if writable else view.toreadonly()


def _unpack_w(msg):
    if len(msg) == 2:
        return msg[0], None, None, msg[1]
    if len(msg) == 3:
        buf, (counts, displs), types = msg
        return buf, counts, displs, types
    if len(msg) == 4:
        return tuple(msg)
    raise ValueError("message: expecting 2 to 4 items, got %d" % len(msg))


def is_integral(value):
    """An int (or numpy integer) rather than a sequence, as mpi4py tells them apart."""
    if isinstance(value, (list, tuple, str, bytes)):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _per_rank(values, blocks, what, each=operator.index):
    values = [each(value) for value in values]
    if len(values) != blocks:
        raise ValueError("message: expecting %d %s (one per rank), got %d"
                         % (blocks, what, len(values)))
    return values


def _counts_of(counts, nbytes, extent, blocks):
    if counts is None:
        if nbytes % extent:
            raise ValueError("message: cannot infer counts, buffer length %d is not a "
                             "multiple of the datatype extent %d" % (nbytes, extent))
        items = nbytes // extent
        return [items // blocks + (items % blocks > rank) for rank in range(blocks)]
    if is_integral(counts):
        return [operator.index(counts)] * blocks
    return _per_rank(counts, blocks, "counts")


def _displs_of(displs, counts, blocks):
    if displs is None:
        starts, start = [], 0
        for count in counts:
            starts.append(start)
            start += count
        return starts
    if is_integral(displs):
        return [operator.index(displs) * rank for rank in range(blocks)]
    return _per_rank(displs, blocks, "displacements")


_KERNEL_TYPECODES = "bBhHiIlLqQfd"     # the formats the C paths' kernels combine


def _kernel_typecode(datatype):
    """The buffer format whose datatype reduces as ``datatype`` does: the same element
    type (typestr, which needs no numpy) and reduction class (MPI.INT64_T as an int64
    array's MPI.LONG), else ""."""
    for code in _KERNEL_TYPECODES:
        twin = datatypes.from_buffer_format(code)
        if (twin.type_class, twin.typestr) == (datatype.type_class, datatype.typestr) and \
                datatype.type_class in (datatypes.INTEGER_CLASS, datatypes.FLOATING):
            return code
    return ""


def _predefined_datatypes():
    """(datatype, extent, typecode) of the predefined datatypes a message may name on
    the C paths (message_get, vector_get in csrc/types/buffers.c): those of positive
    extent, but the Sync handles' (they never take it) and the pair types with
    padding, whose size is less than their extent (a receive leaves their padding as
    it is, which the C path's copies of whole parts would not). The typecode is the
    buffer format whose datatype reduces as this one does, so that a reduction of
    ``[buf, MPI.INT]`` is the one of an int32 array; "" for the others (MPI.BYTE,
    MPI.C_BOOL, ...), which the C paths copy and leave to Python to reduce."""
    unique = {id(datatype): datatype for datatype in datatypes.PREDEFINED.values()}
    return tuple((datatype, datatype.Get_extent()[1], _kernel_typecode(datatype))
                 for datatype in unique.values()
                 if datatype is not datatypes.DATATYPE_NULL
                 and datatype.type_class != datatypes.HANDLE
                 and datatype.Get_size() == datatype.Get_extent()[1] > 0)


def _format_datatypes():
    """(format, datatype) of the formats the C paths take (format_size in
    csrc/types/buffers.c), "" for a buffer without one: what from_buffer_format says."""
    return (("", datatypes.from_buffer_format(None)),) + tuple(
        (code, datatypes.from_buffer_format(code)) for code in _KERNEL_TYPECODES + "?")


if atomic.BACKEND == "c":
    from .. import _native
    _native.datatypes_setup(_predefined_datatypes(), _format_datatypes())
