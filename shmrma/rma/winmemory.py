"""How a rank reaches each rank's window memory.

Shared memory (Allocate, Allocate_shared, Create over Alloc_mem) is mapped
here, so transfers are plain copies into the mapping. Private memory (Create
over an ordinary numpy array) lives in the other process only and is reached
with process_vm_readv/writev; accumulates on it read, combine and write back
under the target's accumulate lock, which keeps them atomic.

The race checker's load watch takes the pages of a rank's private window memory
away from that rank (check/loads.py), and process_vm_* refuse such pages
(EFAULT); once it calls reach_taken_pages(), a refused copy goes through
/proc/PID/mem instead, whose forced access (a debugger's) reaches them.
"""
import ctypes
import errno
import os

from ..core import atomic, errors
from ..core.lazy import numpy


class MappedMemory:
    """Window memory mapped into this process."""

    def __init__(self, view, address):
        self.view = view
        self.address = address

    def write(self, offset, data):
        self.view[offset:offset + len(data)] = data

    def read_into(self, offset, target):
        target[:] = self.view[offset:offset + len(target)]

    def gather(self, offset, index):
        return numpy.frombuffer(self.view, dtype=numpy.uint8)[offset + index]

    def scatter(self, offset, index, values):
        numpy.frombuffer(self.view, dtype=numpy.uint8)[offset + index] = values

    def release(self):
        try:
            self.view.release()
        except BufferError:
            pass  # exported to a buffer the program still holds; it keeps the mapping


class ProcessMemory:
    """Window memory private to another process."""

    def __init__(self, pid, address, rank):
        self.pid = pid
        self.address = address
        self.rank = rank
        self.view = None

    def write(self, offset, data):
        local = _writable_copy_address(data)
        self._copy(atomic.vm_write, offset, local[0], len(data))

    def read_into(self, offset, target):
        scratch = bytearray(len(target))
        self._copy(atomic.vm_read, offset, _address_of(scratch), len(target))
        target[:] = scratch

    def gather(self, offset, index):
        low = int(index.min())
        span = numpy.empty(int(index.max()) + 1 - low, dtype=numpy.uint8)
        self._copy(atomic.vm_read, offset + low, span.ctypes.data, len(span))
        return span[index - low]

    def scatter(self, offset, index, values):
        """Write only the bytes the index names: one copy per run of consecutive bytes,
        so bytes between them, which the target may be using, stay untouched."""
        values = numpy.ascontiguousarray(values, dtype=numpy.uint8)
        breaks = numpy.flatnonzero(numpy.diff(index) != 1) + 1
        starts = numpy.concatenate(([0], breaks))
        ends = numpy.concatenate((breaks, [len(index)]))
        for start, end in zip(starts.tolist(), ends.tolist()):
            self._copy(atomic.vm_write, offset + int(index[start]),
                       values.ctypes.data + start, end - start)

    def release(self):
        pass

    def _copy(self, copy, offset, local_address, nbytes):
        if nbytes == 0:
            return
        try:
            copy(self.pid, self.address + offset, local_address, nbytes)
        except OSError as exc:
            if exc.errno == errno.EFAULT and _reach_taken:
                try:
                    _forced_copy(self.pid, self.address + offset, local_address, nbytes,
                                 copy is atomic.vm_write)
                    return
                except OSError as forced:
                    exc = forced
            errors.fail(errors.ERR_RMA_SHARED, cannot_reach_message(self.rank, exc))


_reach_taken = []       # non-empty once reach_taken_pages() was called
_proc_mem = {}          # pid -> an open /proc/PID/mem


def reach_taken_pages():
    """From now on, reach the pages another rank took away from itself (the module's
    text) through /proc/PID/mem."""
    _reach_taken[:] = [True]


def _forced_copy(pid, remote, local, nbytes, write):
    fd = _proc_mem.get(pid)
    if fd is None:
        opened = os.open("/proc/%d/mem" % pid, os.O_RDWR | os.O_CLOEXEC)
        fd = _proc_mem.setdefault(pid, opened)     # one, if two threads opened it
        if fd != opened:
            os.close(opened)
    done = 0
    while done < nbytes:
        if write:
            moved = os.pwrite(fd, ctypes.string_at(local + done, nbytes - done), remote + done)
        else:
            chunk = os.pread(fd, nbytes - done, remote + done)
            ctypes.memmove(local + done, chunk, len(chunk))
            moved = len(chunk)
        if moved <= 0:
            raise OSError(errno.EFAULT, os.strerror(errno.EFAULT))
        done += moved


def cannot_reach_message(rank, exc):
    if exc.errno in (errno.EPERM, errno.EACCES):
        why = "this system forbids reading and writing another process's memory (%s)" % (
            exc.strerror,)
    else:
        why = "copying to/from rank %d's memory failed (%s)" % (rank, exc.strerror)
    return ("%s; allocate window memory with MPI.Alloc_mem(nbytes) and pass that to "
            "Win.Create, or use Win.Allocate / Win.Allocate_shared" % why)


def _address_of(writable):
    return ctypes.addressof(ctypes.c_char.from_buffer(writable)) if len(writable) else 0


def _writable_copy_address(data):
    """(address, keepalive) of the bytes of ``data``; copies read-only data once."""
    view = memoryview(data)
    if view.readonly:
        view = memoryview(bytearray(view))
    return _address_of(view), view


def probe_access(pid, address):
    """Raise ERR_RMA_SHARED now if another process's memory cannot be reached."""
    probe = bytearray(1)
    try:
        atomic.vm_read(pid, address, _address_of(probe), 1)
    except OSError as exc:
        return cannot_reach_message(-1, exc)
    return None
