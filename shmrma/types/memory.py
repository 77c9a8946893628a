"""``MPI.buffer`` (alias ``MPI.memory``) and ``Alloc_mem``/``Free_mem``.

Memory from Alloc_mem lives in a shared-memory segment of the job, so a window
created over it later (Win.Create, Attach) can be reached by every rank
directly. A buffer is a one-dimensional uint8 numpy array with mpi4py's
``buffer`` methods; numpy is loaded only when a buffer is first made.
"""
import ctypes
import operator

from . import buffers
from ..core import errors, job, segments

_NOTHING = object()         # MPI.buffer() without an argument: no memory
_segments_by_address = {}
_buffer_class = None


def buffer_class():
    """The ``MPI.buffer`` class, built on first use so numpy loads lazily."""
    global _buffer_class
    if _buffer_class is None:
        _buffer_class = _make_buffer_class()
    return _buffer_class


def _make_buffer_class():
    import numpy

    class buffer(numpy.ndarray):  # noqa: N801 - mpi4py's name
        """Raw memory: ``address``, ``nbytes``, slicing, ``tobytes()``, the buffer protocol."""

        def __new__(cls, obj=_NOTHING):
            if obj is _NOTHING:
                return cls._over(memoryview(bytearray(0)), None, address=0)
            return cls._over(buffers.as_view(obj, writable=False), obj)

        @classmethod
        def _over(cls, view, source, address=None):
            """A buffer over the bytes of contiguous ``view``, exposed by ``source``;
            ``address`` names the memory of an empty one (numpy's pointer otherwise)."""
            result = numpy.frombuffer(view, dtype=numpy.uint8).view(cls)
            result._source = source   # numpy's .base keeps the memory alive, not this
            result._itemsize = view.itemsize
            result._empty_address = address
            return result

        def __array_finalize__(self, parent):
            # a slice of a buffer is exposed by that buffer, as in mpi4py
            self._source = parent if isinstance(parent, buffer) else None
            self._itemsize = 1
            self._empty_address = None

        @classmethod
        def frombuffer(cls, obj, readonly=False):
            """Buffer from buffer-like object.

            A buffer over ``obj``'s memory; a writable one unless ``readonly``
            (BufferError when ``obj`` cannot be written)."""
            result = cls._over(buffers.as_view(obj, writable=not readonly), obj)
            if readonly:
                result.flags.writeable = False
            return result

        @classmethod
        def allocate(cls, nbytes, clear=False):
            """Buffer allocation: ``nbytes`` new zeroed bytes."""
            if nbytes < 0:
                raise ValueError("nbytes must be non-negative, not %d" % nbytes)
            return cls(bytearray(nbytes))

        @classmethod
        def fromaddress(cls, address, nbytes, readonly=False):
            """Buffer from address and size in bytes."""
            if nbytes < 0:
                raise ValueError("nbytes must be non-negative, not %d" % nbytes)
            if address == 0 and nbytes:
                raise ValueError("cannot make a buffer of %d bytes at address 0" % nbytes)
            raw = (ctypes.c_char * nbytes).from_address(address) if nbytes else bytearray()
            result = cls._over(memoryview(raw), None, None if nbytes else address)
            if readonly:
                result.flags.writeable = False
            return result

        @property
        def address(self):
            """Buffer address."""
            if self.nbytes == 0 and self._empty_address is not None:
                return self._empty_address
            return self.ctypes.data

        @property
        def obj(self):
            """Object exposing buffer."""
            return self._source

        @property
        def readonly(self):
            """Buffer is read-only."""
            return not self.flags.writeable

        @property
        def format(self):
            """Format of each element: always "B" (bytes)."""
            return "B"

        def __len__(self):
            return self.nbytes

        def __bool__(self):
            # mpi4py's buffer is true when it holds bytes; numpy's truth value of an
            # array of several elements raises instead
            return self.nbytes != 0

        def __getitem__(self, item):
            if isinstance(item, slice) and item.step not in (None, 1):
                raise IndexError("slice with step not supported; take bytes a..b with "
                                 "buf[a:b]")
            result = numpy.ndarray.__getitem__(self, item)
            return int(result) if isinstance(result, numpy.integer) else result

        def __setitem__(self, item, value):
            # mpi4py's rules: an int sets (or fills) bytes, a buffer must match the
            # slice's length exactly (numpy alone would read bytes as a number
            # and broadcast a shorter array)
            if not self.flags.writeable:
                raise TypeError("buffer is read-only; write through a writable buffer")
            if not isinstance(value, (int, numpy.integer)):
                try:
                    value = numpy.frombuffer(value, dtype=numpy.uint8)
                except TypeError:
                    pass  # a list or another sequence: numpy's rules
                else:
                    span = numpy.ndarray.__getitem__(self, item)
                    if numpy.ndim(span) != 1 or len(span) != len(value):
                        raise ValueError("slice length does not match buffer: %d bytes "
                                         "into %d" % (len(value), numpy.size(span)))
            numpy.ndarray.__setitem__(self, item, value)

        @property
        def itemsize(self):
            """The item size of the memory's exporter (the bytes are still bytes)."""
            return self._itemsize

        def toreadonly(self):
            """Return a readonly version of the buffer object."""
            result = self.view(type(self))
            result._source = self if self._source is None else self._source
            result._itemsize, result._empty_address = self._itemsize, self._empty_address
            result.flags.writeable = False
            return result

        def cast(self, format, shape=None):
            """Cast to a memoryview with new format or shape."""
            view = memoryview(self).cast("B").cast(format)
            return view if shape is None else view.cast("B").cast(format, shape)

        def tobytes(self, order=None):
            """The bytes; ``order`` is ignored, as mpi4py ignores it (one dimension)."""
            return numpy.ndarray.tobytes(self)

        def release(self):
            """Release the underlying buffer exposed by the buffer object."""
            self._source = None

        def __repr__(self):
            return "<MPI.buffer address=%#x nbytes=%d readonly=%s>" % (
                self.address, self.nbytes, self.readonly)

    return buffer


def Alloc_mem(size, info=None):
    """Shared memory of ``size`` bytes that any window of this job can expose."""
    size = operator.index(size)  # numpy integers too; TypeError otherwise, as in mpi4py
    if size < 0:
        errors.fail(errors.ERR_SIZE, "Alloc_mem size must be an int >= 0, not %r" % (size,))
    cls = buffer_class()
    if size == 0:
        return cls(bytearray(0))
    segment = segments.Segment.create(job.current().job_id, size)
    mem = cls(segment._map)
    mem._source = None  # as mpi4py's Alloc_mem memory; the mapping stays alive through numpy
    _segments_by_address[segment.address] = segment
    return mem


def Free_mem(mem):
    """Free memory allocated with Alloc_mem."""
    segment = _segments_by_address.pop(getattr(mem, "address", None), None)
    if segment is None:
        if getattr(mem, "nbytes", None) == 0:
            return
        errors.fail(errors.ERR_BASE, "Free_mem was given memory that Alloc_mem did not "
                    "return (or that was already freed); pass the buffer Alloc_mem "
                    "returned, once")
    segment.unlink()
    mem.release()  # the mapping goes when the last view of it does


def segment_of(address, nbytes):
    """The Alloc_mem segment holding [address, address+nbytes), or None."""
    for base, segment in _segments_by_address.items():
        if base <= address and address + nbytes <= base + segment.size:
            return segment
    return None


@job.on_new_rank
def _forget_allocations():
    _segments_by_address.clear()


def get_address(location):
    """Get the address of a location in memory.

    ``MPI.Get_address``: the address of a buffer's first byte; None is the null
    address, as MPI.BOTTOM is (mpi4py)."""
    if location is None:
        return 0
    if isinstance(location, int):
        return int(location)
    view = buffers.as_view(location, writable=False)
    if view.nbytes == 0:
        return 0
    if not view.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(view))
    import numpy
    return numpy.frombuffer(view, dtype=numpy.uint8).ctypes.data
