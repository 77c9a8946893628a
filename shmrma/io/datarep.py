"""Data representations of file views (MPI-3.1 §13.5): "native", "internal" (the
native one, as in MPICH), "external32" and those of ``MPI.Register_datarep``.

shmrma lays a view out in the file as in memory, so a representation serves a
view, and the data of a call, only where each of their basic types keeps its
native extent in it (external32 changes C long, wchar_t and the padded pair types;
a registered representation says through its extent_fn); elsewhere the call is
ERR_UNSUPPORTED_DATAREP, saying which type. The data then changes value by value:
external32 is big-endian (pack.py's conversions), a registered representation
converts with its read_fn and write_fn, called once per run of one basic type
over all the items of a call (None: the bytes as they are, MPI's
CONVERSION_FN_NULL).
"""
from ..core import errors
from ..types.pack import EXTERNAL32, _basics, _convert, _external_dtype
from ..types.pack import by_runs as _by_runs

NATIVE = "native"


class Representation:
    """The native representation: file bytes are memory bytes."""

    name = NATIVE
    converts = False

    def file_extent(self, basic):
        return basic.extent

    def check(self, datatype, role):
        """ERR_UNSUPPORTED_DATAREP unless every basic type of ``datatype`` has its
        native extent here (shmrma lays files out as memory)."""
        for basic, _ in _basics(datatype):
            extent = self.file_extent(basic)
            if extent != basic.extent:
                errors.fail(errors.ERR_UNSUPPORTED_DATAREP, "the %s's %s takes %d bytes in "
                            "%r but %d in memory; shmrma lays a file out as memory, so "
                            "only types of the same extent can be used there"
                            % (role, basic.Get_name(), extent, self.name, basic.extent))

    def type_extent(self, datatype):
        """Get_type_extent: the extent of ``datatype`` in the file."""
        if datatype.is_predefined:
            return self.file_extent(datatype)
        self.check(datatype, "datatype")
        return datatype.extent

    def to_file(self, packed, datatype, count):
        return packed

    def from_file(self, stored, datatype, count):
        return stored


class External32(Representation):
    name = EXTERNAL32
    converts = True

    def file_extent(self, basic):
        return _external_dtype(basic).itemsize

    def to_file(self, packed, datatype, count):
        return _by_runs(packed, datatype, count,
                        lambda data, basic, items: _convert(data, basic, items, True))

    def from_file(self, stored, datatype, count):
        return _by_runs(stored, datatype, count,
                        lambda data, basic, items: _convert(data, basic, items, False))


class Registered(Representation):
    """A representation of ``Register_datarep``."""

    converts = True

    def __init__(self, name, read_fn, write_fn, extent_fn):
        self.name, self.read_fn, self.write_fn, self.extent_fn = (name, read_fn, write_fn,
                                                                  extent_fn)

    def file_extent(self, basic):
        return int(self._call(self.extent_fn, basic))

    def to_file(self, packed, datatype, count):
        return self._convert(self.write_fn, packed, datatype, count, outward=True)

    def from_file(self, stored, datatype, count):
        return self._convert(self.read_fn, stored, datatype, count, outward=False)

    def _convert(self, function, data, datatype, count, outward):
        if function is None:
            return data

        def run(chunk, basic, items):
            # MPI's (userbuf, datatype, count, filebuf, position): memory on one side,
            # the file's bytes on the other, whichever way the data goes
            source, target = bytearray(chunk), bytearray(len(chunk))
            memory, stored = (source, target) if outward else (target, source)
            self._call(function, memoryview(memory), basic, items, memoryview(stored), 0)
            return bytes(target)
        return _by_runs(data, datatype, count, run)

    def _call(self, function, *args):
        try:
            return function(*args)
        except Exception as exc:  # noqa: BLE001 - the call fails with MPI's class for it
            raise errors.Exception(errors.ERR_CONVERSION, "the conversion function of data "
                                   "representation %r raised %r" % (self.name, exc)) from exc


_NATIVE = Representation()
_known = {NATIVE: _NATIVE, "internal": _NATIVE, EXTERNAL32: External32()}


def lookup(datarep):
    """The representation named ``datarep``; ERR_UNSUPPORTED_DATAREP when none is."""
    representation = _known.get(datarep)
    if representation is None:
        errors.fail(errors.ERR_UNSUPPORTED_DATAREP, "data representation %r is neither "
                    "native, internal, external32 nor one of Register_datarep" % (datarep,))
    return representation


def Register_datarep(datarep, read_fn, write_fn, extent_fn):
    """``MPI.Register_datarep``: a data representation that file views can name."""
    if not isinstance(datarep, str):
        raise TypeError("the data representation's name is a str, not %s"
                        % type(datarep).__name__)
    for role, function in (("read_fn", read_fn), ("write_fn", write_fn)):
        if function is not None and not callable(function):
            raise TypeError("%s must be callable or None, not %r" % (role, function))
    if not callable(extent_fn):
        raise TypeError("extent_fn must be callable, not %r" % (extent_fn,))
    if datarep in _known:
        errors.fail(errors.ERR_DUP_DATAREP, "Register_datarep: %r is registered already"
                    % datarep)
    _known[datarep] = Registered(datarep, read_fn, write_fn, extent_fn)
