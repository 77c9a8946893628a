"""``MPI.buffer`` (alias ``MPI.memory``) and ``Alloc_mem``/``Free_mem``.

Memory from Alloc_mem lives in a shared-memory segment of the job, so a window
created over it later (Win.Create, Attach) can be reached by every rank
directly. A buffer is a one-dimensional uint8 numpy array with mpi4py's
``buffer`` methods; numpy is loaded only when a buffer is first made.
"""
import ctypes
import operator

from . import dlpack, errors, job, segments

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

        def __new__(cls, obj=None):
            data = b"" if obj is None else obj
            array = numpy.frombuffer(data, dtype=numpy.uint8) if not isinstance(
                data, numpy.ndarray) else data.reshape(-1).view(numpy.uint8)
            view = array.view(cls)
            view._source = obj  # numpy's .base keeps the memory alive, not this
            return view

        def __array_finalize__(self, parent):
            self._source = getattr(parent, "_source", None)

        @classmethod
        def allocate(cls, nbytes, clear=False):
            if nbytes < 0:
                raise ValueError("nbytes must be non-negative, not %d" % nbytes)
            return cls(bytearray(nbytes))

        @classmethod
        def fromaddress(cls, address, nbytes, readonly=False):
            if nbytes < 0:
                raise ValueError("nbytes must be non-negative, not %d" % nbytes)
            if address == 0 and nbytes:
                raise ValueError("cannot make a buffer of %d bytes at address 0" % nbytes)
            raw = (ctypes.c_char * nbytes).from_address(address) if nbytes else bytearray()
            result = cls(raw)
            result._source = None  # mpi4py's obj of raw memory
            if readonly:
                result.flags.writeable = False
            return result

        @property
        def address(self):
            return self.ctypes.data if self.nbytes else 0

        @property
        def obj(self):
            return self._source

        @property
        def readonly(self):
            return not self.flags.writeable

        @property
        def format(self):
            return "B"

        def __len__(self):
            return self.nbytes

        def __bool__(self):
            # mpi4py's buffer is true when it holds bytes; numpy's truth value of an
            # array of several elements raises instead
            return self.nbytes != 0

        def __getitem__(self, item):
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

        def toreadonly(self):
            result = self.view(type(self))
            result.flags.writeable = False
            return result

        def cast(self, format, shape=None):
            view = memoryview(self).cast("B").cast(format)
            return view if shape is None else view.cast("B").cast(format, shape)

        def release(self):
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


def at_address(address, nbytes, writable):
    """``nbytes`` of this process's memory from ``address`` on, as a byte view: the
    buffer MPI.BOTTOM stands for, whose datatypes carry absolute addresses (from
    MPI.Get_address). A wrong address faults, as it does in C MPI."""
    if nbytes <= 0:
        return memoryview(bytearray(0))
    view = memoryview((ctypes.c_char * nbytes).from_address(address)).cast("B")
    return view if writable else view.toreadonly()


def get_address(location):
    """``MPI.Get_address``: the address of a buffer's first byte."""
    if isinstance(location, int):
        return int(location)
    try:
        view = memoryview(location)
    except TypeError:
        if not dlpack.is_producer(location):
            raise
        view = memoryview(dlpack.view(location))
    if view.nbytes == 0:
        return 0
    if not view.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(view))
    import numpy
    return numpy.frombuffer(view, dtype=numpy.uint8).ctypes.data
