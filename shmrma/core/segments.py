"""POSIX shared-memory segments: the one place that knows /dev/shm.

A segment is created with its space reserved up front (posix_fallocate), so a
full /dev/shm is an ERR_NO_MEM at creation and never a SIGBUS at first touch.
Names carry the job id so the launcher can sweep whatever a crash left behind.
"""
import ctypes
import errno
import mmap
import os

import posix_ipc

from . import atomic, errors

SHM_DIR = "/dev/shm"
_MAP_FIXED = 0x10
_MAP_POPULATE = 0x8000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
NAME_PREFIX = "shmrma."
CACHE_LINE = 64


def job_prefix(job_id):
    return "%s%s." % (NAME_PREFIX, job_id)


def new_name(job_id, kind=""):
    """A new segment name of the job: its prefix, ``kind`` (a word that tells what
    lives there), then random."""
    return "/%s%s%s" % (job_prefix(job_id), kind, os.urandom(8).hex())


def shm_free_bytes():
    stats = os.statvfs(SHM_DIR)
    return stats.f_bavail * stats.f_frsize


class Segment:
    """A mapped shared-memory segment; ``address`` is where this process sees it."""

    __slots__ = ("name", "size", "_map", "_anchor", "address", "_named", "_fd")

    def __init__(self, name, size, fd, keep_fd=False):
        self.name = name
        self.size = size
        self._fd = fd if keep_fd else None
        try:
            self._map = mmap.mmap(fd, size, mmap.MAP_SHARED,
                                  mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        if not keep_fd:
            os.close(fd)
        # The ctypes anchor pins the mapping: mmap refuses to close while it lives.
        self._anchor = ctypes.c_char.from_buffer(self._map)
        self.address = ctypes.addressof(self._anchor)
        self._named = True

    @classmethod
    def create(cls, job_id, size, reserved=None, keep_fd=False, kind=""):
        """Create, reserve and map a new segment of ``size`` bytes (size > 0), the
        first ``reserved`` of them reserved now (default all); ``keep_fd`` keeps
        its descriptor, for reserve() to reserve more later; ``kind`` goes into
        its name (new_name)."""
        name, fd = _create_reserved(job_id, size, size if reserved is None else reserved,
                                    kind)
        try:
            return cls(name, size, fd, keep_fd) if keep_fd else cls(name, size, fd)
        except BaseException:
            _unlink_quietly(name)
            raise

    def reserve(self, nbytes):
        """Reserve the first ``nbytes`` (ERR_NO_MEM when /dev/shm has no room); those
        reserved already cost nothing. Only a segment created with keep_fd can."""
        _reserve(self._fd, nbytes)

    @classmethod
    def attach(cls, name, size):
        """Map an existing segment created by another rank."""
        return cls(name, size, _open_existing(name))

    @property
    def buffer(self):
        return memoryview(self._map)

    def remap(self, name):
        """Map segment ``name`` (of this size) at this segment's address, in place of
        its memory: every view of this segment then sees the other one. Win.Change_comm
        moves window memory this way, so a newcomer can map it although the first
        segment was unlinked long ago, and the program's views stay valid."""
        try:
            fd = posix_ipc.SharedMemory(name, 0).fd
        except posix_ipc.ExistentialError:
            errors.fail(errors.ERR_RMA_SHARED, "shared-memory segment %s is gone before this "
                        "rank could map it" % name)
        try:
            placed = _libc.mmap(ctypes.c_void_p(self.address), ctypes.c_size_t(self.size),
                                mmap.PROT_READ | mmap.PROT_WRITE,
                                mmap.MAP_SHARED | _MAP_FIXED, fd, ctypes.c_long(0))
        finally:
            os.close(fd)
        if placed != self.address:
            errors.fail(errors.ERR_NO_MEM, "cannot map segment %s at the window's address: %s"
                        % (name, os.strerror(ctypes.get_errno())))
        self.unlink()   # the segment replaced, if still named; its memory goes with the last map
        self.name = name

    def unlink(self):
        if self._named:
            self._named = False
            _unlink_quietly(self.name)

    def close(self):
        """Unmap; raises BufferError while views of the memory are still exported."""
        if self._map is None:
            return
        anchor, self._anchor = self._anchor, None
        del anchor
        atomic.forget(self.address, self.size)
        try:
            self._map.close()
        except BufferError:
            self._anchor = ctypes.c_char.from_buffer(self._map)
            raise
        self._map = None
        self.address = 0

    @property
    def closed(self):
        return self._map is None


class Region:
    """A segment mapped without a file descriptor: Python's mmap keeps a duplicate of
    the segment's open as long as the mapping lives, and a process holding one
    mapping per communicator would run out of descriptors. ``buffer`` is a byte
    view of it; ``close`` unmaps (every view of it must be gone by then)."""

    __slots__ = ("name", "size", "address", "_named")
    populate = False    # map every page at once (MAP_POPULATE), not at its first touch

    def __init__(self, name, size, fd):
        self.name, self.size, self._named = name, size, True
        flags = mmap.MAP_SHARED | (_MAP_POPULATE if self.populate else 0)
        try:
            address = _libc.mmap(None, ctypes.c_size_t(size), mmap.PROT_READ | mmap.PROT_WRITE,
                                 flags, fd, ctypes.c_long(0))
        finally:
            os.close(fd)
        if address in (None, ctypes.c_void_p(-1).value):
            errors.fail(errors.ERR_NO_MEM, "cannot map segment %s: %s"
                        % (name, os.strerror(ctypes.get_errno())))
        self.address = address

    create = classmethod(Segment.create.__func__)
    attach = classmethod(Segment.attach.__func__)
    unlink = Segment.unlink

    @classmethod
    def create_or_attach(cls, name, size):
        """Segment ``name`` of ``size`` bytes: created here, or mapped if another rank
        created it first (every rank asks for the same size, and reserves it: a
        rank that comes before the creator reserved it reserves it itself)."""
        try:
            shm = posix_ipc.SharedMemory(name, posix_ipc.O_CREX, mode=0o600)
        except posix_ipc.ExistentialError:
            shm = posix_ipc.SharedMemory(name, 0)
        fd = shm.fd
        try:
            _reserve(fd, size)
        except BaseException:
            os.close(fd)
            raise
        return cls(name, size, fd)

    @property
    def buffer(self):
        return memoryview((ctypes.c_char * self.size).from_address(self.address)).cast("B")

    def close(self):
        if self.address:
            atomic.forget(self.address, self.size)
            _libc.munmap(ctypes.c_void_p(self.address), ctypes.c_size_t(self.size))
            self.address = 0


class PopulatedRegion(Region):
    """A Region whose pages are all mapped when it is: memory a process goes through
    over and over (a staging ring), where a page fault at each first touch of a
    page would cost more than the copies themselves."""

    __slots__ = ()
    populate = True


def _create_reserved(job_id, size, reserved, kind=""):
    """A new segment's name and open descriptor, ``size`` bytes long, the first
    ``reserved`` of them reserved."""
    name = new_name(job_id, kind)
    shm = posix_ipc.SharedMemory(name, posix_ipc.O_CREX, mode=0o600)
    fd = shm.fd
    try:
        if reserved < size:
            os.ftruncate(fd, size)
        _reserve(fd, reserved)
    except BaseException:
        os.close(fd)
        _unlink_quietly(name)
        raise
    return name, fd


def _open_existing(name):
    try:
        return posix_ipc.SharedMemory(name, 0).fd
    except posix_ipc.ExistentialError:
        errors.fail(errors.ERR_RMA_SHARED,
                    "shared-memory segment %s is gone before this rank could map it "
                    "(its creator unlinked it or the job is ending)" % name)


def _reserve(fd, size):
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EFBIG, errno.ENOMEM):
            errors.fail(errors.ERR_NO_MEM, no_space_message(size))
        raise


def no_space_message(size):
    return ("cannot reserve %d bytes of shared memory in %s: only %d bytes are free "
            "there; free space in %s, enlarge it (e.g. docker --shm-size) or ask "
            "for less memory" % (size, SHM_DIR, shm_free_bytes(), SHM_DIR))


def unlink(name):
    """Unlink the segment ``name`` (gone already: nothing to do)."""
    _unlink_quietly(name)


def _unlink_quietly(name):
    try:
        posix_ipc.unlink_shared_memory(name)
    except posix_ipc.ExistentialError:
        pass


def job_segments(job_id):
    """Names of the segments of a job that are still linked in /dev/shm."""
    prefix = job_prefix(job_id)
    try:
        return sorted(n for n in os.listdir(SHM_DIR) if n.startswith(prefix))
    except FileNotFoundError:
        return []


def sweep(job_id):
    """Unlink every segment of the job still named; returns how many there were."""
    names = job_segments(job_id)
    for name in names:
        _unlink_quietly("/" + name)
    return len(names)
