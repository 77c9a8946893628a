"""Packing (MPI-3.1 §4.2, §4.3): ``Datatype.Pack``, ``Unpack``, ``Pack_size`` and
the canonical ``Pack_external``, ``Unpack_external``, ``Pack_external_size``.

``Pack`` writes the items of an input buffer (as many whole items of the datatype
as it holds, as mpi4py counts them) in type-map order at ``position`` of an output
buffer, the way messages pack them (derived.Items); no header, so Pack_size(0) is
0. The "external32" representation (§13.5.2) is big-endian with the standard's
fixed sizes: C long and unsigned long are 4 bytes, wchar_t 2, long double the
16-byte IEEE binary128; pair types are their two members without padding. A value
that does not fit its external size is ERR_CONVERSION, never cut silently.
"""
from . import derived
from ..core import errors
from .datatype import PREDEFINED, Datatype
from .buffers import as_view
from ..core.lazy import numpy as np

EXTERNAL32 = "external32"
_NARROWED = {"LONG": "i4", "UNSIGNED_LONG": "u4", "WCHAR": "u2"}
_PAIR_VALUES = {"FLOAT_INT": "FLOAT", "DOUBLE_INT": "DOUBLE", "LONG_INT": "LONG",
                "SHORT_INT": "SHORT", "TWOINT": "INT", "LONG_DOUBLE_INT": "LONG_DOUBLE"}


class Packing:
    """The packing calls of a Datatype (install() gives them to it: they build on
    buffers, which builds on datatypes)."""

    def Pack(self, inbuf, outbuf, position, comm):
        """Pack into contiguous memory according to datatype; return the new position."""
        return _store(_packed(self, inbuf), outbuf, position, "Pack")

    def Unpack(self, inbuf, position, outbuf, comm):
        """Unpack from contiguous memory according to datatype; return the new position."""
        return _load(self, inbuf, position, outbuf, "Unpack", external=False)

    def Pack_size(self, count, comm):
        """Return the number of bytes that packing ``count`` items needs."""
        return _count(count, "Pack_size") * derived.packed_item_bytes(self)

    def Pack_external(self, datarep, inbuf, outbuf, position):
        """Pack in the "external32" representation; return the new position."""
        _datarep(datarep, "Pack_external")
        return _store(_to_external(_packed(self, inbuf), self), outbuf, position,
                      "Pack_external")

    def Unpack_external(self, datarep, inbuf, position, outbuf):
        """Unpack from the "external32" representation; return the new position."""
        _datarep(datarep, "Unpack_external")
        return _load(self, inbuf, position, outbuf, "Unpack_external", external=True)

    def Pack_external_size(self, datarep, count):
        """Return the number of bytes that packing ``count`` items in "external32" needs."""
        _datarep(datarep, "Pack_external_size")
        return _count(count, "Pack_external_size") * _external_item_bytes(self)


def _count(count, call):
    if count < 0:
        errors.fail(errors.ERR_COUNT, "%s: count %d is negative" % (call, count))
    return count


def _datarep(datarep, call):
    if datarep != EXTERNAL32:
        errors.fail(errors.ERR_UNSUPPORTED_DATAREP, "%s: data representation %r; the "
                    "one defined is %r" % (call, datarep, EXTERNAL32))


def _items(datatype, nbytes):
    extent = datatype.Get_extent()[1]
    return derived.Items(datatype, nbytes // extent if extent > 0 else 0)


def _packed(datatype, inbuf):
    data = as_view(inbuf, False).cast("B")
    return memoryview(_items(datatype, len(data)).pack(data, 0)).cast("B")


def _store(packed, outbuf, position, call):
    out = as_view(outbuf, True).cast("B")
    end = position + len(packed)
    if position < 0 or end > len(out):
        errors.fail(errors.ERR_TRUNCATE, "%s: %d bytes at position %d do not fit the "
                    "output buffer of %d bytes" % (call, len(packed), position, len(out)))
    out[position:end] = packed
    return end


def _load(datatype, inbuf, position, outbuf, call, external):
    """Unpack as many items as ``outbuf`` holds from ``position`` of ``inbuf``."""
    source = as_view(inbuf, False).cast("B")
    out = as_view(outbuf, True).cast("B")
    items = _items(datatype, len(out))
    size = items.count * _external_item_bytes(datatype) if external else items.nbytes
    if position < 0 or position + size > len(source):
        errors.fail(errors.ERR_TRUNCATE, "%s: %d bytes at position %d reach past the "
                    "input buffer of %d bytes" % (call, size, position, len(source)))
    packed = source[position:position + size]
    items.unpack(_from_external(packed, datatype, items.count) if external else packed,
                 out, 0)
    return position + size


# --- external32 ---------------------------------------------------------------------

def _basics(datatype):
    """(basic Datatype, number of its items) of one item, in type-map order."""
    layout = derived.Layout.of(datatype)
    runs = []
    for length, basic_id in zip(layout.lengths.tolist(), layout.basic_ids.tolist()):
        basic = derived._basics[basic_id]
        runs.append((basic, length // basic.Get_extent()[1]))
    return runs


def _external_item_bytes(datatype):
    return sum(count * _external_size(basic) for basic, count in _basics(datatype))


def _external_dtype(basic):
    """The big-endian numpy dtype of one ``basic`` item in external32 (long doubles:
    opaque 16-byte binary128 values, converted by _long_doubles)."""
    name = basic._handle.constant_name or basic.Get_name()
    if name in _PAIR_VALUES:
        value = _external_dtype(PREDEFINED[_PAIR_VALUES[name]])
        return np.dtype([("value", value), ("index", ">i4")])
    native = basic._handle.dtype
    if _is_long_double(native):
        return np.dtype("V%d" % native.itemsize)
    code = _NARROWED.get(name, native.str[1:])
    return np.dtype(">" + code if native.itemsize > 1 else code)


def _is_long_double(dtype):
    return dtype.kind == "V" or dtype.kind == "f" and dtype.itemsize == 16 or \
        dtype.kind == "c" and dtype.itemsize == 32


def by_runs(data, datatype, count, convert, width_in=None, width_out=None):
    """``count`` packed items of ``datatype``, each run of one basic type converted
    across all items at once by ``convert(bytes, basic, how_many)``: a run of n items
    of ``basic`` is ``width_in(basic) * n`` bytes in and ``width_out(basic) * n`` out
    (its extent both ways by default). No Python loop per item."""
    width_in = width_in or _extent
    width_out = width_out or width_in
    if not count or not len(data):
        return memoryview(bytearray(0)) if not count else data
    runs = []
    for basic, items in _basics(datatype):
        if runs and runs[-1][0] is basic:
            runs[-1][1] += items
        else:
            runs.append([basic, items])
    row_in = sum(width_in(basic) * items for basic, items in runs)
    row_out = sum(width_out(basic) * items for basic, items in runs)
    table = np.frombuffer(data, np.uint8, count * row_in).reshape(count, row_in)
    out = np.empty((count, row_out), np.uint8)
    start_in = start_out = 0
    for basic, items in runs:
        wide_in, wide_out = width_in(basic) * items, width_out(basic) * items
        converted = convert(table[:, start_in:start_in + wide_in].tobytes(), basic,
                            items * count)
        out[:, start_out:start_out + wide_out] = np.frombuffer(
            converted, np.uint8).reshape(count, wide_out)
        start_in, start_out = start_in + wide_in, start_out + wide_out
    return memoryview(out).cast("B")


def _extent(basic):
    return basic.Get_extent()[1]


def _external_size(basic):
    return _external_dtype(basic).itemsize


def _to_external(packed, datatype):
    """Native packed bytes of ``datatype`` items as external32 bytes."""
    count = len(packed) // max(derived.packed_item_bytes(datatype), 1)
    return by_runs(packed, datatype, count, lambda data, basic, n: _convert(data, basic, n, True),
                   _extent, _external_size)


def _from_external(external, datatype, count):
    return by_runs(external, datatype, count,
                   lambda data, basic, n: _convert(data, basic, n, False),
                   _external_size, _extent)


def _convert(data, basic, items, outward):
    native, external = basic._handle.dtype, _external_dtype(basic)
    source = np.frombuffer(data, dtype=native if outward else external, count=items)
    target = np.zeros(items, dtype=external if outward else native)
    for field in native.names or (None,):
        src = source if field is None else source[field]
        dst = target if field is None else target[field]
        _convert_values(src, dst, basic)
    return target.tobytes()


def _convert_values(src, dst, basic):
    if _is_long_double(src.dtype):
        raw = np.ascontiguousarray(src).tobytes()
        dst[...] = np.frombuffer(_long_doubles(raw, src.dtype.kind != "V"), dtype=dst.dtype)
        return
    if dst.dtype.kind in "iu" and src.dtype.kind in "iu" and dst.dtype.itemsize < \
            src.dtype.itemsize and len(src):
        info = np.iinfo(dst.dtype)
        if src.min() < info.min or src.max() > info.max:
            errors.fail(errors.ERR_CONVERSION, "Pack_external: a value of %s does not fit in "
                        "its %d bytes of external32" % (basic.Get_name(),
                                                        dst.dtype.itemsize))
    dst[...] = src


def _long_doubles(raw, outward):
    """16-byte units: x87 80-bit long doubles (numpy's on x86) to big-endian IEEE
    binary128 (``outward``), or back; the fraction's extra bits are zero."""
    if np.finfo(np.longdouble).nmant != 63:
        errors.fail(errors.ERR_UNSUPPORTED_DATAREP, "external32 long double: this "
                    "machine's long double is not the x87 80-bit format shmrma converts")
    if outward:
        words = np.frombuffer(raw, dtype="<u8").reshape(-1, 2)
        mantissa, sign_exponent = words[:, 0], words[:, 1] & np.uint64(0xFFFF)
        high = (sign_exponent << np.uint64(48)) | \
            ((mantissa & np.uint64(0x7FFFFFFFFFFFFFFF)) >> np.uint64(15))
        low = (mantissa & np.uint64(0x7FFF)) << np.uint64(49)
        return np.stack([high, low], axis=1).astype(">u8").tobytes()
    words = np.frombuffer(raw, dtype=">u8").reshape(-1, 2).astype(np.uint64)
    high, low = words[:, 0], words[:, 1]
    sign_exponent = high >> np.uint64(48)
    integer_bit = ((sign_exponent & np.uint64(0x7FFF)) != 0).astype(np.uint64) << np.uint64(63)
    mantissa = integer_bit | ((high & np.uint64(0xFFFFFFFFFFFF)) << np.uint64(15)) | \
        (low >> np.uint64(49))
    return np.stack([mantissa, sign_exponent], axis=1).astype("<u8").tobytes()


def install():
    for name, call in vars(Packing).items():
        if not name.startswith("_"):
            setattr(Datatype, name, call)


install()
