"""Derived datatypes: the type constructors of MPI-3.1 §4.1 and their byte layouts.

A derived type is compiled once, at construction, into blocks: byte offsets
and lengths of one item, in type-map order, each run of one basic type, with
adjacent runs merged. Copies through a type use a byte index built from the
blocks with numpy, never a Python loop per element. A predefined type is one
block of its extent (a pair type's padding travels with it, as in its C
struct), so "packed" bytes of a pair keep numpy's structured layout; a receive
writes only the members of each pair, its padding left as it was (Layout.members).
"""
import operator

from ..core import atomic, errors
from . import datatype as datatypes
from .datatype import (COMBINER_CONTIGUOUS, COMBINER_DARRAY, COMBINER_HINDEXED,
                       COMBINER_HINDEXED_BLOCK, COMBINER_HVECTOR, COMBINER_INDEXED,
                       COMBINER_INDEXED_BLOCK, COMBINER_RESIZED, COMBINER_STRUCT,
                       COMBINER_SUBARRAY, COMBINER_VECTOR, c_integer)
from ..core.lazy import numpy

if atomic.BACKEND == "c":
    from .. import _native      # copy_runs: a derived type's blocks, one memcpy each
else:
    _native = None

# array storage orders and distributions, as MPICH numbers them (mpi4py exposes these)
ORDER_C = 56
ORDER_FORTRAN = 57
ORDER_F = ORDER_FORTRAN
DISTRIBUTE_BLOCK = 121
DISTRIBUTE_CYCLIC = 122
DISTRIBUTE_NONE = 123
DISTRIBUTE_DFLT_DARG = -49767

_basics = []  # basic Datatypes by id, for the per-block basic-type ids
_paddings = []  # by id: the trailing padding of a pair type (DOUBLE_INT's last 4 bytes)


def _basic_id(datatype):
    for index, known in enumerate(_basics):
        if known is datatype:
            return index
    _basics.append(datatype)
    _paddings.append(datatype.extent - datatype.true_ub)
    return len(_basics) - 1


# blocks: up to this many, a layout is kept as Python lists, which build and merge
# faster than numpy can be called (most types; mpi4py.util.dtlib makes millions)
_SMALL = 64


def _merged(offsets, lengths, basic_ids):
    """Blocks as lists, empty ones dropped and adjacent runs of one basic type joined."""
    merged_offsets, merged_lengths, merged_ids = [], [], []
    for offset, length, basic_id in zip(offsets, lengths, basic_ids):
        if length <= 0:
            continue
        if (merged_offsets and merged_ids[-1] == basic_id
                and merged_offsets[-1] + merged_lengths[-1] == offset):
            merged_lengths[-1] += length
        else:
            merged_offsets.append(offset)
            merged_lengths.append(length)
            merged_ids.append(basic_id)
    return merged_offsets, merged_lengths, merged_ids


def _merged_arrays(offsets, lengths, basic_ids):
    """_merged() for numpy arrays."""
    offsets = numpy.asarray(offsets, dtype=numpy.int64)
    lengths = numpy.asarray(lengths, dtype=numpy.int64)
    basic_ids = numpy.asarray(basic_ids, dtype=numpy.int64)
    keep = lengths > 0
    if not keep.all():
        offsets, lengths, basic_ids = offsets[keep], lengths[keep], basic_ids[keep]
    if len(offsets) > 1:
        joins = ((offsets[1:] == offsets[:-1] + lengths[:-1])
                 & (basic_ids[1:] == basic_ids[:-1]))
        starts = numpy.flatnonzero(numpy.concatenate(([True], ~joins)))
        lengths = numpy.add.reduceat(lengths, starts)
        offsets, basic_ids = offsets[starts], basic_ids[starts]
    return offsets, lengths, basic_ids


def _concatenated(columns):
    """Columns of blocks joined: lists stay lists, anything else becomes an array."""
    if all(isinstance(column, list) for column in columns):
        return [value for column in columns for value in column]
    return numpy.concatenate(columns)


def _as_list(column):
    return column.tolist() if isinstance(column, numpy.ndarray) else column


class Layout:
    """One item of a datatype as merged byte blocks: offsets, lengths and basic-type
    ids in type-map order. A small layout is held as lists, a large one as numpy
    arrays; ``offsets``, ``lengths`` and ``basic_ids`` are always arrays (made on
    first use), and the layout's own computations use whichever form it holds."""

    __slots__ = ("_lists", "_arrays", "_index", "_alignment", "_distinct", "_members",
                 "_packed_size", "_true_bounds")

    def __init__(self, offsets, lengths, basic_ids):
        if len(offsets) <= _SMALL:
            self._lists = _merged(_as_list(offsets), _as_list(lengths), _as_list(basic_ids))
            self._arrays = None
        else:
            self._lists = None
            self._arrays = _merged_arrays(offsets, lengths, basic_ids)
        self._index = None
        self._alignment = None
        self._distinct = None
        self._members = False       # not computed yet (None: no padding in the blocks)
        self._packed_size = self._true_bounds = None    # computed at first use (a
        # layout never changes, and every message of its type asks for them)

    @classmethod
    def of_runs(cls, offsets, lengths, basic_id):
        """A layout of runs (lists, lengths > 0) of one basic type, in order: what a
        few runs know of themselves is known at once (most types are this; they are
        made often: mpi4py.util.dtlib builds one per numpy dtype it sees)."""
        layout = cls(offsets, lengths, [basic_id] * len(offsets))
        layout._distinct = [basic_id]
        if layout._lists is not None and offsets:    # else found at first use
            offsets, lengths, _ = layout._lists
            layout._packed_size = sum(lengths)
            layout._true_bounds = (min(offsets), max(map(sum, zip(offsets, lengths))))
        return layout

    @classmethod
    def of(cls, datatype):
        handle = datatype._handle
        layout = getattr(handle, "layout", None)
        if layout is None:
            basic = handle.basic._handle
            if basic is not handle:   # a Dup or Fortran kind of a predefined type
                layout = handle.layout = cls.of(handle.basic)
            else:
                layout = handle.layout = cls([0], [handle.extent], [_basic_id(handle.basic)])
        return layout

    @property
    def _columns(self):
        """The blocks as numpy arrays."""
        if self._arrays is None:
            self._arrays = tuple(numpy.array(column, dtype=numpy.int64)
                                 for column in self._lists)
        return self._arrays

    offsets = property(lambda self: self._columns[0])
    lengths = property(lambda self: self._columns[1])
    basic_ids = property(lambda self: self._columns[2])

    def __len__(self):
        return len(self._lists[0]) if self._lists is not None else len(self._arrays[0])

    def as_lists(self):
        """(offsets, lengths, basic ids) as lists (made anew for a large layout)."""
        if self._lists is not None:
            return self._lists
        return tuple(column.tolist() for column in self._arrays)

    def block(self, i):
        """(offset, length, basic id) of block i, as ints."""
        if self._lists is not None:
            offsets, lengths, basic_ids = self._lists
            return offsets[i], lengths[i], basic_ids[i]
        return tuple(int(column[i]) for column in self._arrays)

    @property
    def packed_size(self):
        if self._packed_size is None:
            self._packed_size = (sum(self._lists[1]) if self._lists is not None
                                 else int(self._arrays[1].sum()))
        return self._packed_size

    def replicated(self, displacements):
        """This layout repeated at each byte displacement, in order."""
        return Layout(*self.replicated_blocks(displacements))

    def replicated_blocks(self, displacements):
        """The (offsets, lengths, basic ids) of replicated(), not yet merged."""
        count = len(displacements)
        if self._lists is not None and count * len(self) <= _SMALL:
            offsets, lengths, basic_ids = self._lists
            return ([d + offset for d in _as_list(displacements) for offset in offsets],
                    lengths * count, basic_ids * count)
        displacements = numpy.asarray(displacements, dtype=numpy.int64).reshape(-1, 1)
        return ((displacements + self.offsets).ravel(), numpy.tile(self.lengths, count),
                numpy.tile(self.basic_ids, count))

    @property
    def distinct_basic_ids(self):
        if self._distinct is None:
            self._distinct = sorted(set(self.as_lists()[2]))
        return self._distinct

    def byte_index(self, count, extent):
        """Byte offsets of every byte of ``count`` items spaced by ``extent``, packed order."""
        if self._index is None:
            starts = numpy.repeat(self.offsets - numpy.cumsum(self.lengths) + self.lengths,
                                  self.lengths)
            self._index = starts + numpy.arange(self.packed_size, dtype=numpy.int64)
        items = numpy.arange(count, dtype=numpy.int64).reshape(-1, 1) * extent
        return (items + self._index).ravel()

    @property
    def true_bounds(self):
        if self._true_bounds is None:
            self._true_bounds = self._bounds({})
        return self._true_bounds

    def mpi_true_bounds(self):
        """True bounds without the trailing padding of pair types (MPI's true extent)."""
        distinct = self.distinct_basic_ids
        if len(distinct) == 1 and len(self):     # the last block ends with the padding
            low, high = self.true_bounds
            return low, high - _paddings[distinct[0]]
        return self._bounds({i: _paddings[i] for i in distinct})

    def _bounds(self, padding_of):
        """(lowest byte, end of the highest block less its basic type's padding)."""
        if not len(self):
            return 0, 0
        if self._lists is not None:
            offsets, lengths, basic_ids = self._lists
            return min(offsets), max(offset + length - padding_of.get(basic_id, 0)
                                     for offset, length, basic_id
                                     in zip(offsets, lengths, basic_ids))
        ends = self.offsets + self.lengths
        if padding_of:
            ends = ends - numpy.array([padding_of[i] for i in self.basic_ids.tolist()],
                                      dtype=numpy.int64)
        return int(self.offsets.min()), int(ends.max())

    @property
    def members(self):
        """Which packed bytes of one item are the type map's, as a bool array, or None
        when all are: the padding of a pair type (DOUBLE_INT's last 4 bytes) travels
        with it but is no member of it, and MPI writes only the members."""
        if self._members is False:
            self._members = self._member_mask()
        return self._members

    def _member_mask(self):
        masks = {i: _pair_members(_basics[i]) for i in self.distinct_basic_ids}
        if all(mask is None for mask in masks.values()):
            return None
        _, lengths, basic_ids = self.as_lists()
        return numpy.concatenate([
            numpy.ones(length, dtype=bool) if masks[basic_id] is None
            else numpy.tile(masks[basic_id], length // len(masks[basic_id]))
            for length, basic_id in zip(lengths, basic_ids)])

    def basic(self):
        """The one basic type of every block, or None when they differ (a mixed struct)."""
        ids = self.distinct_basic_ids
        return _basics[ids[0]] if len(ids) == 1 else None


ITEMS_KEPT = 16      # Items a type's handle keeps (items_of), by count


def items_of(datatype, count):
    """Items(datatype, count), kept on the type's handle by count: they describe no
    buffer, a handle's layout never changes, and a program's calls give the same
    types and counts again and again (Alltoallw parses its types at every call)."""
    handle = datatype._handle
    if handle is None or handle.freed:
        return Items(datatype, count)       # which raises what the program must hear
    kept = handle.items
    items = kept.get(count)
    if items is None:
        # their own handle object to the type: the program's may be freed meanwhile
        own = datatypes.Datatype.__new__(datatypes.Datatype)
        own._handle = handle
        items = Items(own, count)
        if len(kept) >= ITEMS_KEPT:
            kept.clear()
        kept[count] = items
    return items


class Items:
    """``count`` items of ``datatype`` laid out from item 0 at byte 0: their packed
    size, the bytes they touch (``low``..``high``), and copies between that layout
    and packed bytes, either one dense run or through a byte index of the layout.
    Messages pack and unpack through it as RMA does: one mechanism for both."""

    __slots__ = ("datatype", "count", "dense", "nbytes", "low", "high", "_index",
                 "_members")

    def __init__(self, datatype, count):
        self.datatype = datatype
        self.count = count
        extent = datatype.extent
        if datatype.is_predefined:
            self.dense, self.nbytes, self.low, self.high = True, count * extent, 0, count * extent
        else:
            layout = Layout.of(datatype)
            true_low, true_high = layout.true_bounds
            self.dense = is_dense(datatype)
            self.nbytes = count * layout.packed_size
            span = (count - 1) * extent
            # items of a type of size 0 touch no byte, wherever their extent
            # spaces them (MPI-3.1 section 4.1: a type map of no entries)
            touches = count and len(layout)
            self.low = min(0, span) + true_low if touches else 0
            self.high = max(0, span) + true_high if touches else 0
        self._index = None
        self._members = False

    @property
    def members(self):
        """Which packed bytes are the type map's (Layout.members), or None when all."""
        if self._members is False:
            mask = Layout.of(self.datatype).members if has_padding(self.datatype) else None
            self._members = None if mask is None else numpy.tile(mask, self.count)
        return self._members

    @property
    def index(self):
        if self._index is None:
            self._index = Layout.of(self.datatype).byte_index(self.count, self.datatype.extent)
        return self._index

    def pack(self, data, first):
        """The packed bytes of the items whose item 0 starts at byte ``first`` of ``data``."""
        if self.dense:
            return data[first + self.low:first + self.low + self.nbytes]
        if _native is not None:
            packed = numpy.empty(self.nbytes, dtype=numpy.uint8)
            self._copy_runs(data, packed, first, self.nbytes, False)
            return packed
        return numpy.frombuffer(data, dtype=numpy.uint8)[first + self.index]

    def pack_into(self, data, first, out):
        """pack(), written into the writable bytes ``out``."""
        if not self.dense and _native is not None:
            self._copy_runs(data, out, first, self.nbytes, False)
        else:
            out[:] = memoryview(self.pack(data, first)).cast("B")

    def _copy_runs(self, data, packed, first, nbytes, unpack):
        """csrc/types/buffers.c's copy_runs over this type's blocks: a memcpy each."""
        layout = Layout.of(self.datatype)
        _native.copy_runs(data, packed, layout.offsets, layout.lengths, self.count,
                          self.datatype.extent, first, nbytes, unpack)

    def unpack(self, packed, data, first, nbytes=None):
        """Write packed bytes (the first ``nbytes`` of them, by default all) into the
        items whose item 0 starts at byte ``first`` of the writable ``data``."""
        nbytes = self.nbytes if nbytes is None else nbytes
        members = self.members
        if members is not None:     # a pair's padding is left as it is, as MPI leaves it
            keep = members[:nbytes]
            numpy.frombuffer(data, dtype=numpy.uint8)[first + self.index[:nbytes][keep]] = \
                numpy.frombuffer(packed, dtype=numpy.uint8, count=nbytes)[keep]
        elif self.dense:
            start = first + self.low
            data[start:start + nbytes] = memoryview(packed).cast("B")[:nbytes]
        elif _native is not None:
            self._copy_runs(data, packed, first, nbytes, True)
        else:
            numpy.frombuffer(data, dtype=numpy.uint8)[first + self.index[:nbytes]] = \
                numpy.frombuffer(packed, dtype=numpy.uint8, count=nbytes)


def _pair_members(basic):
    """The bytes of one item of a predefined type that are its members, as a bool
    array, or None when every byte is one (all but the pair types with padding)."""
    dtype = basic.dtype
    if dtype.names is None or basic.Get_size() == dtype.itemsize:
        return None
    mask = numpy.zeros(dtype.itemsize, dtype=bool)
    for field, offset in dtype.fields.values():
        mask[offset:offset + field.itemsize] = True
    return mask


def has_padding(datatype):
    """Do the items of ``datatype`` hold bytes that are no member of its type map
    (a pair type's padding), which a receive must leave as they are?"""
    return datatype.size < packed_item_bytes(datatype) and Layout.of(datatype).members \
        is not None


def packed_item_bytes(datatype):
    """Bytes one item of ``datatype`` takes packed: a predefined type travels whole
    extents (a pair type's padding goes along, as numpy lays it out), a derived
    type the bytes of its layout."""
    if datatype.is_predefined:
        return datatype.Get_extent()[1]
    return Layout.of(datatype).packed_size


def _element_runs(datatype):
    """One item's type signature as (packed bytes of a basic element, elements) runs."""
    if datatype.is_predefined:
        return [(packed_item_bytes(datatype), 1)]
    _, lengths, basic_ids = Layout.of(datatype).as_lists()
    sizes = [packed_item_bytes(_basics[basic_id]) for basic_id in basic_ids]
    return [(size, length // size) for size, length in zip(sizes, lengths) if size]


def elements_in(datatype, nbytes):
    """The basic elements in ``nbytes`` packed bytes of ``datatype`` items (whole items
    and the front of one more, MPI_Get_elements), or None when they end inside a
    basic element."""
    runs = _element_runs(datatype)
    item_bytes = sum(size * count for size, count in runs)
    if not item_bytes:
        return 0
    items, rest = divmod(nbytes, item_bytes)
    elements = items * sum(count for _, count in runs)
    for size, count in runs:
        if rest < size * count:
            return None if rest % size else elements + rest // size
        rest -= size * count
        elements += count
    return elements


def bytes_of_elements(datatype, elements):
    """The packed bytes of the first ``elements`` basic elements of ``datatype`` items
    (MPI_Status_set_elements: the count a status then holds)."""
    runs = _element_runs(datatype)
    per_item = sum(count for _, count in runs)
    if not per_item:
        return 0
    items, rest = divmod(elements, per_item)
    nbytes = items * sum(size * count for size, count in runs)
    for size, count in runs:
        taken = min(rest, count)
        nbytes, rest = nbytes + taken * size, rest - taken
    return nbytes


def element_dtype(datatype):
    """The numpy dtype of a datatype's packed elements, as reductions fold them: its
    basic type's (a column of doubles folds as doubles); a struct of several basic
    types has none, so user-defined ops see its packed items as opaque records."""
    basic = datatype.basic
    if basic is not None:
        return basic.dtype
    return numpy.dtype("V%d" % packed_item_bytes(datatype))


def _old(datatype, call):
    datatype = datatypes.lookup(datatype)
    datatype._live("build a %s from" % call)
    if datatype.type_class == datatypes.HANDLE:
        errors.fail(errors.ERR_TYPE, "cannot build a %s from HANDLE_SYNC: Sync handles "
                    "travel only as a list of handles typed HANDLE_SYNC" % call)
    return datatype


def _make(layout, lb, ub, basic):
    """A new uncommitted, unnamed derived type of ``layout`` (its constructor records
    itself with _made)."""
    true_lb, true_ub = layout.mpi_true_bounds()
    handle = datatypes.TypeHandle(
        name="", size=_mpi_size(layout), extent=ub - lb, lb=lb, true_lb=true_lb,
        true_extent=true_ub - true_lb, dtype=None, basic=basic,
        type_class=basic.type_class if basic is not None else None, committed=False)
    handle.layout = layout
    result = datatypes.Datatype()
    result._handle = handle
    return result


def _made(datatype, combiner, old_types, integers=(), counts=()):
    """``datatype`` with its constructor and arguments recorded for Get_contents."""
    datatype._handle.record(combiner, integers, counts, old_types)
    if len(old_types) == 1 and same_as_old(datatype, old_types[0]):
        datatype._handle.engine = datatypes.engine_type(old_types[0]._handle)
    return datatype


def same_as_old(datatype, old):
    """Has ``datatype`` the type map and bounds of the one type it is built from?
    MPICH's datatype engine then holds it as that type (datatype.engine_type)."""
    new, was = datatype._handle, old._handle
    if (new.lb, new.extent, new.size) != (was.lb, was.extent, was.size):
        return False
    layout, old_layout = Layout.of(datatype), Layout.of(old)
    return len(layout) == len(old_layout) <= _SMALL and \
        layout.as_lists() == old_layout.as_lists()


def _mpi_size(layout):
    """MPI size: bytes of data, so a pair counts its value and index, not its padding."""
    if len(layout.distinct_basic_ids) == 1:
        basic = _basics[layout.distinct_basic_ids[0]]
        return layout.packed_size // basic.extent * basic.Get_size()
    size = 0
    _, lengths, basic_ids = layout.as_lists()
    for basic_id, length in zip(basic_ids, lengths):
        basic = _basics[basic_id]
        size += length // basic.extent * basic.Get_size()
    return size


def _blocks(old, blocklengths, starts):
    """A type of blocks of copies of ``old``: block i holds blocklengths[i] copies, one
    extent apart, from byte starts[i] (every constructor but subarray, darray, struct
    and resized). Held by its structure: when ``old`` is one dense run, a block is one
    run, whatever its length (Create_contiguous(2**31 - 1) is one block, not 2**31
    entries); other types repeat their runs per copy."""
    if len(blocklengths) <= _SMALL:
        return _few_blocks(old, _as_list(blocklengths), _as_list(starts))
    return _many_blocks(old, blocklengths, starts)


def _many_blocks(old, blocklengths, starts):
    """_blocks() in numpy arrays."""
    lengths = numpy.asarray(blocklengths, dtype=numpy.int64).reshape(-1)
    starts = numpy.asarray(starts, dtype=numpy.int64).reshape(-1)
    keep = lengths > 0
    lengths, starts = lengths[keep], starts[keep]
    extent, layout = old.extent, Layout.of(old)
    if not len(lengths):
        return _make(Layout([], [], []), 0, 0, old.basic)
    last = starts + (lengths - 1) * extent
    lb = int(numpy.minimum(starts, last).min()) + old.lb
    ub = int(numpy.maximum(starts, last).max()) + old.ub
    basic = old.basic if layout.basic() is not None else None
    if is_dense(old) and extent > 0:
        offset, _, basic_id = layout.block(0)
        runs = Layout(starts + offset, lengths * extent, numpy.full(len(lengths), basic_id))
        return _make(runs, lb, ub, basic)
    first_of_block = numpy.repeat(numpy.cumsum(lengths) - lengths, lengths)
    within = numpy.arange(int(lengths.sum()), dtype=numpy.int64) - first_of_block
    copies = numpy.repeat(starts, lengths) + within * extent
    return _make(layout.replicated(copies), lb, ub, basic)


def _few_blocks(old, blocklengths, starts):
    """_blocks() of a few blocks, in Python lists: numpy's calls cost more than the
    work there (a contiguous or vector type is built in a few microseconds)."""
    kept = [(start, length) for start, length in zip(starts, blocklengths) if length > 0]
    extent, layout = old.extent, Layout.of(old)
    if not kept:
        return _make(Layout([], [], []), 0, 0, old.basic)
    ends = [start + (length - 1) * extent for start, length in kept]
    lb = min(min(start for start, _ in kept), min(ends)) + old.lb
    ub = max(max(start for start, _ in kept), max(ends)) + old.ub
    basic = old.basic if layout.basic() is not None else None
    if is_dense(old) and extent > 0:
        offset, _, basic_id = layout.block(0)
        runs = Layout.of_runs([start + offset for start, _ in kept],
                              [length * extent for _, length in kept], basic_id)
        return _make(runs, lb, ub, basic)
    if sum(length for _, length in kept) > _SMALL:
        copies = numpy.concatenate([numpy.arange(length, dtype=numpy.int64) * extent + start
                                    for start, length in kept])
    else:
        copies = [start + j * extent for start, length in kept for j in range(length)]
    return _make(layout.replicated(copies), lb, ub, basic)


def _non_negative(value, what, call):
    if value < 0:
        errors.fail(errors.ERR_COUNT if "count" in what else errors.ERR_ARG,
                    "%s: %s must be >= 0, not %d" % (call, what, value))
    return value


def _same_length(items, expected):
    """mpi4py's check of an argument list against the count the first one gave."""
    items = list(items)
    if len(items) != expected:
        raise ValueError("expecting %d items, got %d" % (expected, len(items)))
    return items


def create_contiguous(self, count):
    """Create a contiguous datatype of ``count`` items."""
    old = _old(self, "contiguous type")
    count = _non_negative(c_integer(count), "count", "Create_contiguous")
    return _made(_blocks(old, [count], [0]), COMBINER_CONTIGUOUS, [old], counts=[count])


def create_vector(self, count, blocklength, stride):
    """Create a vector (strided) datatype, stride in items."""
    old = _old(self, "vector")
    return _strided(old, count, blocklength, stride, old.extent, COMBINER_VECTOR,
                    "Create_vector")


def create_hvector(self, count, blocklength, stride):
    """Create a vector (strided) datatype with stride in bytes."""
    old = _old(self, "hvector")
    return _strided(old, count, blocklength, stride, 1, COMBINER_HVECTOR, "Create_hvector")


def _strided(old, count, blocklength, stride, stride_unit, combiner, call):
    count = _non_negative(c_integer(count), "count", call)
    blocklength = _non_negative(c_integer(blocklength), "blocklength", call)
    stride = c_integer(stride)
    step = stride * stride_unit
    if count <= _SMALL:       # lists: numpy's calls cost more than the work
        lengths, starts = [blocklength] * count, [i * step for i in range(count)]
    else:
        lengths = numpy.full(count, blocklength)
        starts = numpy.arange(count, dtype=numpy.int64) * step
    return _made(_blocks(old, lengths, starts), combiner, [old],
                 counts=[count, blocklength, stride])


def create_indexed(self, blocklengths, displacements):
    """Create an indexed datatype, displacements in items."""
    old = _old(self, "indexed type")
    return _indexed(old, blocklengths, displacements, old.extent, COMBINER_INDEXED,
                    "Create_indexed")


def create_hindexed(self, blocklengths, displacements):
    """Create an indexed datatype with displacements in bytes."""
    old = _old(self, "hindexed type")
    return _indexed(old, blocklengths, displacements, 1, COMBINER_HINDEXED,
                    "Create_hindexed")


def create_indexed_block(self, blocklength, displacements):
    """Create an indexed datatype with constant-sized blocks."""
    old = _old(self, "indexed-block type")
    return _indexed(old, blocklength, displacements, old.extent, COMBINER_INDEXED_BLOCK,
                    "Create_indexed_block")


def create_hindexed_block(self, blocklength, displacements):
    """Create an indexed datatype with constant-sized blocks, displacements in bytes."""
    old = _old(self, "hindexed-block type")
    return _indexed(old, blocklength, displacements, 1, COMBINER_HINDEXED_BLOCK,
                    "Create_hindexed_block")


def _indexed(old, blocklengths, displacements, unit, combiner, call):
    """The four indexed constructors: one block length for all (the _block ones) or
    one per displacement; displacements in extents of ``old`` (unit) or bytes (1)."""
    displacements = [operator.index(d) for d in displacements]
    if combiner in (COMBINER_INDEXED_BLOCK, COMBINER_HINDEXED_BLOCK):
        blocklength = _non_negative(c_integer(blocklengths), "blocklength", call)
        lengths, recorded = [blocklength] * len(displacements), [blocklength]
    else:
        lengths = [_non_negative(operator.index(b), "blocklength", call)
                   for b in blocklengths]
        displacements = _same_length(displacements, len(lengths))
        recorded = lengths
    result = _blocks(old, lengths, [d * unit for d in displacements])
    return _made(result, combiner, [old],
                 counts=[len(displacements)] + recorded + displacements)


def create_subarray(self, sizes, subsizes, starts, order=ORDER_C):
    """Create a datatype for a subarray of a multidimensional array."""
    old = _old(self, "subarray")
    call = "Create_subarray"
    sizes = [operator.index(size) for size in sizes]
    subsizes = [operator.index(n) for n in _same_length(subsizes, len(sizes))]
    starts = [operator.index(n) for n in _same_length(starts, len(sizes))]
    order = c_integer(order)
    if not sizes:
        errors.fail(errors.ERR_ARG, "%s: sizes, subsizes and starts need one entry per "
                    "dimension, and there must be at least one" % call)
    for size, subsize, start in zip(sizes, subsizes, starts):
        if size < 1 or subsize < 1 or start < 0 or start + subsize > size:
            errors.fail(errors.ERR_ARG, "%s: a %d-wide subarray at %d does not fit in a "
                        "dimension of %d" % (call, subsize, start, size))
    indices = [range(start, start + n) for start, n in zip(starts, subsizes)]
    result = _array_type(old, sizes, indices, order, call)
    return _made(result, COMBINER_SUBARRAY, [old], integers=[len(sizes), order],
                 counts=sizes + subsizes + starts)


def _array_type(old, sizes, indices, order, call):
    """The elements of a ``sizes`` array of ``old`` whose index in dimension d is in
    indices[d] (sorted, each once), in the array's storage ``order``; the type spans
    the whole array from 0 (subarray and darray, MPI-4.1 §5.1.3-4)."""
    if order not in (ORDER_C, ORDER_FORTRAN):
        errors.fail(errors.ERR_ARG, "%s: order must be ORDER_C or ORDER_FORTRAN, not %r"
                    % (call, order))
    if order == ORDER_FORTRAN:
        sizes, indices = sizes[::-1], indices[::-1]
    strides = [1] * len(sizes)          # elements, innermost dimension last
    for d in range(len(sizes) - 2, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    old_layout, extent = Layout.of(old), old.extent
    layout = _runs_of_rows(old_layout, extent, sizes, indices, strides)
    if layout is None:
        layout = old_layout.replicated(_flat_indices(indices, strides, extent))
    basic = old.basic if old_layout.basic() is not None else None
    return _make(layout, 0, strides[0] * sizes[0] * extent, basic)


def _runs_of_rows(old_layout, extent, sizes, indices, strides):
    """_array_type's layout a block per row, or None where an element does not fill
    its extent or the indices nearest the innermost are not one run: the innermost
    dimensions taken whole and the next one's run make one block (a row, a plane,
    the whole box), not a block per element (a subarray has thousands)."""
    if not (len(old_layout) == 1 and old_layout.block(0)[:2] == (0, extent)):
        return None
    inner = len(sizes) - 1
    while inner > 0 and len(indices[inner]) == sizes[inner]:
        inner -= 1
    run = indices[inner]
    if not len(run) or run[-1] - run[0] != len(run) - 1:
        return None
    rows = _flat_indices(indices[:inner], strides[:inner], extent,
                         int(run[0]) * strides[inner] * extent)
    block, basic_id = len(run) * strides[inner] * extent, old_layout.block(0)[2]
    return Layout(rows, [block] * len(rows), [basic_id] * len(rows))


def _flat_indices(indices, strides, extent=1, base=0):
    """The byte offset (``extent`` bytes an element, from ``base``) of every combination
    of indices[d] (d outermost first), in order: a list when there are few, else an
    array."""
    count = 1
    for index in indices:
        count *= len(index)
    if count <= _SMALL:
        flat = [base]
        for index, stride in zip(indices, strides):
            step = stride * extent
            flat = [offset + int(i) * step for offset in flat for i in index]
        return flat
    flat = numpy.full(1, base, dtype=numpy.int64)
    for index, stride in zip(indices, strides):
        step = numpy.asarray(index, dtype=numpy.int64) * (stride * extent)
        flat = (flat[:, None] + step[None, :]).ravel()
    return flat


def create_darray(self, size, rank, gsizes, distribs, dargs, psizes, order=ORDER_C):
    """Create a datatype for a distributed array on a Cartesian process grid.

    This rank's part of an array distributed over a row-major process grid
    (MPI-4.1 §5.1.4): the elements it owns, in the array's storage order."""
    old = _old(self, "darray")
    call = "Create_darray"
    gsizes = [operator.index(g) for g in gsizes]
    distribs, dargs, psizes = ([operator.index(v) for v in _same_length(values, len(gsizes))]
                               for values in (distribs, dargs, psizes))
    size, rank, order = c_integer(size), c_integer(rank), c_integer(order)
    if size < 1 or not 0 <= rank < size:
        errors.fail(errors.ERR_RANK if size >= 1 else errors.ERR_ARG,
                    "%s: rank %d is not in a group of %d processes" % (call, rank, size))
    if not gsizes or min(gsizes) < 1 or min(psizes) < 1 or int(numpy.prod(psizes)) != size:
        errors.fail(errors.ERR_ARG, "%s: need at least one dimension, every gsize and psize "
                    ">= 1 and psizes multiplying to size %d (got gsizes %s, psizes %s)"
                    % (call, size, gsizes, psizes))
    coordinates = numpy.unravel_index(rank, psizes)
    indices = [_owned(call, *dimension) for dimension in
               zip(gsizes, distribs, dargs, psizes, coordinates)]
    result = _array_type(old, gsizes, indices, order, call)
    return _made(result, COMBINER_DARRAY, [old],
                 integers=[size, rank, len(gsizes)] + distribs + dargs + psizes + [order],
                 counts=gsizes)


def _owned(call, gsize, distrib, darg, psize, coordinate):
    """Indices of one dimension owned by the process at ``coordinate`` of ``psize``."""
    if distrib == DISTRIBUTE_NONE:
        if psize != 1:
            errors.fail(errors.ERR_ARG, "%s: an undistributed dimension (DISTRIBUTE_NONE) "
                        "needs psize 1, not %d" % (call, psize))
        return numpy.arange(gsize)
    if distrib not in (DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC):
        errors.fail(errors.ERR_ARG, "%s: distribution %r is not DISTRIBUTE_BLOCK, "
                    "DISTRIBUTE_CYCLIC or DISTRIBUTE_NONE" % (call, distrib))
    if darg == DISTRIBUTE_DFLT_DARG:
        darg = -(-gsize // psize) if distrib == DISTRIBUTE_BLOCK else 1
    if darg < 1:
        errors.fail(errors.ERR_ARG, "%s: distribution argument %d must be >= 1 or "
                    "DISTRIBUTE_DFLT_DARG" % (call, darg))
    if distrib == DISTRIBUTE_BLOCK and darg * psize < gsize:
        errors.fail(errors.ERR_ARG, "%s: blocks of %d on %d processes cannot hold %d "
                    "elements" % (call, darg, psize, gsize))
    # blocks of darg elements dealt round-robin; a block distribution deals one round
    index = numpy.arange(gsize)
    return index[(index // darg) % psize == coordinate]


def create_struct(cls, blocklengths, displacements, datatypes):
    """Create a general composite (struct) datatype."""
    call = "Create_struct"
    lengths = [_non_negative(operator.index(b), "blocklength", call) for b in blocklengths]
    displacements = [operator.index(d) for d in _same_length(displacements, len(lengths))]
    members = [_old(member, "struct") for member in _same_length(datatypes, len(lengths))]
    parts, lows, highs = [], [], []
    for length, start, member in zip(lengths, displacements, members):
        if length:
            extent = member.extent
            copies = ([start + j * extent for j in range(length)] if length <= _SMALL
                      else numpy.arange(length, dtype=numpy.int64) * extent + start)
            parts.append(Layout.of(member).replicated_blocks(copies))
            lows.append(start + member.lb)
            highs.append(start + (length - 1) * extent + member.ub)
    if parts:
        layout = Layout(*(_concatenated(column) for column in zip(*parts)))
        lb, ub = min(lows), max(highs)
    else:
        layout, lb, ub = Layout([], [], []), 0, 0
    alignment = _struct_alignment(lengths, members)
    ub = lb + -(-(ub - lb) // alignment) * alignment
    result = _make(layout, lb, ub, layout.basic())
    return _made(result, COMBINER_STRUCT, members,
                 counts=[len(lengths)] + lengths + displacements)


def _struct_alignment(lengths, members):
    """What a struct's extent is rounded up to, as MPICH 5.0 rounds it. MPI-4.1
    section 5.1.6 lets the extent of a struct hold an epsilon of padding, "the least
    non-negative increment needed to round extent(Typemap) to the next multiple of
    max k_i", k_i the alignment of each type; MPICH's datatype engine (yaksa's
    yaksi_type_create_struct) takes it so: a struct whose members are all one type
    (datatype.engine_type; zero blocklengths counted) it makes an hindexed type,
    whose extent is not padded, and any other it rounds up to the largest alignment
    of its members of nonzero blocklength. So Create_struct([2, 2], [0, 11],
    [INT, INT]) has extent 19 and [INT, FLOAT] at [0, 5] 12, as MPICH gives them.
    Open MPI (opal_datatype_add) rounds every struct to the largest alignment of its
    members of nonzero count, one type or not (19 would be 20 there); shmrma follows
    MPICH, the library its results are compared with."""
    if len({datatypes.engine_type(member._handle) for member in members}) <= 1:
        return 1
    return max([_alignment(member) for length, member in zip(lengths, members) if length],
               default=1)


def _alignment(datatype):
    """What MPICH rounds a struct's extent up to: the largest C alignment of the basic
    types in a member (a complex type aligns as its parts, a pair as its C struct)."""
    layout = Layout.of(datatype)
    if layout._alignment is None:
        layout._alignment = max([datatypes.c_alignment(_basics[i]) or 1
                                 for i in layout.distinct_basic_ids], default=1)
    return layout._alignment


def create_resized(self, lb, extent):
    """Create a datatype with a new lower bound and extent (also Resized)."""
    old = _old(self, "resized type")
    lb, extent = c_integer(lb), c_integer(extent)
    return _made(_make(Layout.of(old), lb, lb + extent, old.basic), COMBINER_RESIZED, [old],
                 counts=[lb, extent])


def is_dense(datatype):
    """True when ``count`` items are ``count * extent`` contiguous packed bytes."""
    handle = datatype._handle
    if handle.predefined:
        return True
    layout = Layout.of(datatype)
    return len(layout) == 1 and layout.block(0)[:2] == (handle.lb, handle.extent)


def install():
    """Give Datatype mpi4py's constructor methods, under mpi4py's names (tests build
    COMBINER_<NAME> from a method's __name__)."""
    Datatype = datatypes.Datatype
    for function in (create_contiguous, create_vector, create_hvector, create_indexed,
                     create_hindexed, create_indexed_block, create_hindexed_block,
                     create_subarray, create_darray, create_struct, create_resized):
        name = "C" + function.__name__[1:]
        function.__name__ = function.__qualname__ = name
        setattr(Datatype, name, function)
    Datatype.Create_struct = classmethod(create_struct)
    Datatype.Resized = create_resized  # mpi4py's compatibility alias


install()
