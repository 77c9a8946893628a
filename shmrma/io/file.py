"""MPI-IO (MPI-3.1 chapter 13): ``MPI.File``, as mpi4py 4.1.2 exposes it.

shmrma's ranks are processes of one machine, so a file is a POSIX file that every
rank opens itself and reads and writes with pread/pwrite on its own descriptor.
What this module builds is MPI's semantics on top:

- Open and Close are collective: every rank raises when one fails; rank 0 alone
  creates the file (so MODE_EXCL means what it says) and deletes it on close
  (MODE_DELETE_ON_CLOSE).
- A view tiles the filetype's byte blocks (derived.Layout) from ``disp``. The
  bytes the tiles select, in order, are the view's *stream*; a call's data is a
  stretch of it, mapped to file pieces with numpy, never a Python loop per
  element. Positions (file pointers, explicit offsets) count etypes of the stream.
- Writes lock the file range they touch (fcntl record locks, which processes
  share). A write through a view with holes reads, patches and writes back the
  span of its pieces (ROMIO's data sieving); the lock keeps it from undoing
  another rank's write into a hole. In atomic mode reads take a shared lock too.
- The shared file pointer is an atomic 64-bit counter in a small segment every
  rank maps (window.share_segment: unlinked as soon as all have mapped it).
- Each rank does its own I/O, so the collective ``_all`` calls need no exchange and
  the nonblocking ``I*`` calls complete before they return (ROMIO does the same on
  local file systems); the ordered calls and the pointer resets exchange what
  they must. A split collective does its work in ``*_begin``; ``*_end`` reports it.
"""
import errno
import fcntl
import operator
import os
import stat

from ..core import atomic, errhandler, errors
from ..types import buffers, derived
from . import datarep as representations
from ..types import datatype as datatypes
from ..coll.blocking import own_bcast
from ..p2p.transfers import Completed
from ..core.constants import ANY_SOURCE, ANY_TAG
from ..comm.group import GroupMembers
from ..core.handle import Handle, constant
from ..core.info import INFO_NULL, Info, to_dict
from ..core.lazy import numpy
from ..types.status import Status, check_arg
from ..rma.window import _agree, share_segment

# MPICH's values (mpi.h), so that logs read the same on both runtimes
MODE_CREATE = 1
MODE_RDONLY = 2
MODE_WRONLY = 4
MODE_RDWR = 8
MODE_DELETE_ON_CLOSE = 16
MODE_UNIQUE_OPEN = 32
MODE_EXCL = 64
MODE_APPEND = 128
MODE_SEQUENTIAL = 256
SEEK_SET = 600
SEEK_CUR = 602
SEEK_END = 604
DISPLACEMENT_CURRENT = -54278278
DISP_CUR = DISPLACEMENT_CURRENT
MAX_DATAREP_STRING = 128

_ACCESS_MODES = {MODE_RDONLY: os.O_RDONLY, MODE_WRONLY: os.O_WRONLY, MODE_RDWR: os.O_RDWR}
_ALL_MODES = (MODE_CREATE | MODE_RDONLY | MODE_WRONLY | MODE_RDWR | MODE_DELETE_ON_CLOSE
              | MODE_UNIQUE_OPEN | MODE_EXCL | MODE_APPEND | MODE_SEQUENTIAL)
SIEVE_BYTES = 1 << 20       # at most this span is read and written back per sieve

_ERRNO_CLASSES = {
    errno.ENOENT: errors.ERR_NO_SUCH_FILE, errno.EEXIST: errors.ERR_FILE_EXISTS,
    errno.EACCES: errors.ERR_ACCESS, errno.EPERM: errors.ERR_ACCESS,
    errno.EISDIR: errors.ERR_BAD_FILE, errno.ENOTDIR: errors.ERR_BAD_FILE,
    errno.ENAMETOOLONG: errors.ERR_BAD_FILE, errno.ENOSPC: errors.ERR_NO_SPACE,
    errno.EDQUOT: errors.ERR_QUOTA, errno.EROFS: errors.ERR_READ_ONLY,
    errno.ETXTBSY: errors.ERR_FILE_IN_USE, errno.EBUSY: errors.ERR_FILE_IN_USE,
}


def _os_problem(exc, what):
    """(error class, message) of an OSError, as MPICH classes errno."""
    return _ERRNO_CLASSES.get(exc.errno, errors.ERR_IO), "%s: %s" % (what, exc.strerror)


def _os_fail(exc, what):
    errors.fail(*_os_problem(exc, what))


def _path(filename):
    """The file name as bytes: str, bytes or os.PathLike, as mpi4py's asmpifspath."""
    return os.fsencode(os.fspath(filename))


def _amode_problem(amode):
    """Why ``amode`` is no valid access mode (MPI-3.1 §13.2.1), or None."""
    access = amode & (MODE_RDONLY | MODE_WRONLY | MODE_RDWR)
    if amode & ~_ALL_MODES:
        return "unknown bits 0x%x; combine the MPI.MODE_* flags" % (amode & ~_ALL_MODES)
    if access not in _ACCESS_MODES:
        return ("exactly one of MODE_RDONLY, MODE_WRONLY and MODE_RDWR is needed, "
                "amode is %d" % amode)
    if access == MODE_RDONLY and amode & (MODE_CREATE | MODE_EXCL):
        return "MODE_RDONLY cannot go with MODE_CREATE or MODE_EXCL"
    if access == MODE_RDWR and amode & MODE_SEQUENTIAL:
        return "MODE_RDWR cannot go with MODE_SEQUENTIAL"
    return None


def _intracomm(comm):
    from ..comm.comm import Comm
    if not isinstance(comm, Comm):
        raise TypeError("Open takes an MPI.Intracomm, not %s" % type(comm).__name__)
    if comm.Is_inter():
        errors.fail(errors.ERR_COMM, "files are opened over an intracommunicator, not an "
                    "intercommunicator")
    return comm


# --- the view --------------------------------------------------------------------
class View:
    """A file view: ``disp``, etype, filetype and data representation, and the map
    from the bytes of its stream to pieces of the file."""

    def __init__(self, disp, etype, filetype, representation):
        self.disp, self.etype, self.filetype = disp, etype, filetype
        self.representation = representation
        self.esize = derived.packed_item_bytes(etype)
        layout = derived.Layout.of(filetype)
        self.offsets, self.lengths = layout.offsets, layout.lengths
        self.starts = numpy.cumsum(self.lengths) - self.lengths     # in the tile's stream
        self.tile_bytes = layout.packed_size
        self.tile_extent = filetype.extent
        self.contiguous = derived.is_dense(filetype)
        self.first = int(self.offsets[0]) if len(self.offsets) else 0

    def pieces(self, start, nbytes):
        """(file offsets, lengths) of stream bytes ``start``..``start + nbytes``, in
        stream order."""
        if nbytes <= 0:
            return numpy.zeros(0, numpy.int64), numpy.zeros(0, numpy.int64)
        if self.contiguous:
            return (numpy.array([self.disp + self.first + start], numpy.int64),
                    numpy.array([nbytes], numpy.int64))
        tile, extent = self.tile_bytes, self.tile_extent
        tiles = numpy.arange(start // tile, (start + nbytes - 1) // tile + 1,
                             dtype=numpy.int64).reshape(-1, 1)
        stream = (tiles * tile + self.starts).ravel()
        files = (self.disp + tiles * extent + self.offsets).ravel()
        lengths = numpy.tile(self.lengths, len(tiles))
        low = numpy.maximum(stream, start)
        high = numpy.minimum(stream + lengths, start + nbytes)
        keep = high > low
        return (files + low - stream)[keep], (high - low)[keep]

    def stream_before(self, size):
        """How many stream bytes lie before byte ``size`` of the file."""
        if self.contiguous:
            return max(0, size - self.disp - self.first)
        if not self.tile_bytes:
            return 0
        ends = self.offsets + self.lengths
        full = max(0, (size - self.disp - int(ends.max())) // self.tile_extent + 1)
        partial = numpy.clip(size - (self.disp + full * self.tile_extent + self.offsets),
                             0, self.lengths).sum()
        return full * self.tile_bytes + int(partial)

    def byte_offset(self, stream_byte):
        """The file offset of stream byte ``stream_byte``."""
        if self.contiguous or not self.tile_bytes:
            return self.disp + self.first + stream_byte
        tile, within = divmod(stream_byte, self.tile_bytes)
        block = int(numpy.searchsorted(self.starts, within, side="right")) - 1
        return (self.disp + tile * self.tile_extent + int(self.offsets[block])
                + within - int(self.starts[block]))

    def handles(self):
        """Get_view's etype and filetype: new handles of derived types, which the
        caller frees, and the predefined ones themselves."""
        return tuple(t if t.is_predefined else t.Dup() for t in (self.etype, self.filetype))


def _kept(datatype, role):
    """The datatype a view keeps: a live committed one, a duplicate when derived (the
    caller may free its own)."""
    datatype = datatypes.lookup(datatype)
    datatype._live("take as the %s of a view" % role)
    if not datatype.committed:
        errors.fail(errors.ERR_TYPE, "Set_view: the %s is not committed; call Commit() "
                    "first" % role)
    return datatype if datatype.is_predefined else datatype.Dup()


# --- moving bytes ----------------------------------------------------------------
def _groups(files, lengths):
    """(first, end, low, high) of runs of pieces whose starts lie within one
    SIEVE_BYTES, spanning file bytes low..high; a run whose span is much larger (a
    long piece in it) is split into single pieces, which are no waste to move alone."""
    if not len(files):
        return []
    keys = (files - files.min()) // SIEVE_BYTES
    cuts = (numpy.flatnonzero(numpy.diff(keys)) + 1).tolist()
    groups = []
    for first, end in zip([0] + cuts, cuts + [len(files)]):
        low = int(files[first:end].min())
        high = int((files[first:end] + lengths[first:end]).max())
        if end - first > 1 and high - low > 2 * SIEVE_BYTES:
            groups.extend((i, i + 1, int(files[i]), int(files[i] + lengths[i]))
                          for i in range(first, end))
        else:
            groups.append((first, end, low, high))
    return groups


def _sieve_index(files, lengths, low):
    """Positions, in a span read from byte ``low``, of the pieces' bytes in order."""
    return derived.Layout(files - low, lengths, numpy.zeros(len(files))).byte_index(1, 0)


def _read_pieces(fd, files, lengths, out):
    """Fill ``out`` (bytes of the pieces, in order) from the file."""
    done = numpy.concatenate(([0], numpy.cumsum(lengths))).tolist()
    for first, end, low, high in _groups(files, lengths):
        where = out[done[first]:done[end]]
        if end - first == 1:
            os.preadv(fd, [where], low)
            continue
        span = numpy.zeros(high - low, numpy.uint8)
        got = os.preadv(fd, [span], low)
        span[got:] = 0
        numpy.frombuffer(where, numpy.uint8)[:] = span[
            _sieve_index(files[first:end], lengths[first:end], low)]


def _write_pieces(fd, files, lengths, data):
    """Write ``data`` (bytes of the pieces, in order) to the file."""
    done = numpy.concatenate(([0], numpy.cumsum(lengths))).tolist()
    for first, end, low, high in _groups(files, lengths):
        part = data[done[first]:done[end]]
        if end - first == 1:
            _write_fully(fd, part, low)
            continue
        span = numpy.zeros(high - low, numpy.uint8)
        os.preadv(fd, [span], low)
        span[_sieve_index(files[first:end], lengths[first:end], low)] = \
            numpy.frombuffer(part, numpy.uint8)
        _write_fully(fd, memoryview(span), low)


def _write_fully(fd, data, offset):
    data = memoryview(data).cast("B")
    while len(data):
        written = os.pwrite(fd, data, offset)
        data, offset = data[written:], offset + written


class _Locked:
    """An fcntl record lock on file bytes ``low``..``high`` (none when empty)."""

    def __init__(self, fd, kind, low, high):
        self.fd, self.kind, self.low, self.length = fd, kind, low, high - low

    def __enter__(self):
        if self.length > 0:
            fcntl.lockf(self.fd, self.kind, self.length, self.low)

    def __exit__(self, *exc):
        if self.length > 0:
            fcntl.lockf(self.fd, fcntl.LOCK_UN, self.length, self.low)


# --- one rank's open file ------------------------------------------------------------
class FileState:
    """Everything one rank knows of an open file; every handle to it shares this."""

    def __init__(self, comm, fd, path, amode, hints):
        self.comm, self.fd, self.path, self.amode = comm, fd, path, amode
        self.hints = hints
        self.world_ranks = tuple(comm._s.ranks)
        self.rank = comm.Get_rank()
        self.atomic = False
        self.position = 0               # the individual file pointer, in etypes
        self.split = None               # (call, bytes moved) of a split collective begun
        # the policy's (mpi4py's rc.errors), else FILE_NULL's, the files' default
        self.errhandler = errhandler.for_new(_null_file_errhandler[0])
        self.view = View(0, datatypes.BYTE, datatypes.BYTE, representations.lookup("native"))
        self.pointer = None
        self.closed = False

    @classmethod
    def open(cls, comm, filename, amode, info):
        """Collective: every rank opens the file, or every rank raises."""
        comm = _intracomm(comm).Dup()
        fd = path = hints = None

        def check():
            nonlocal path, hints
            path, hints = _path(filename), to_dict(info)
            mode = operator.index(amode)
            problem = _amode_problem(mode)
            if problem:
                errors.fail(errors.ERR_AMODE, "File.Open: " + problem)
            return mode
        try:
            mode = _same_value(comm, "File.Open", check, errors.ERR_NOT_SAME)
            fd = cls._open_in_turn(comm, path, mode)
            state = cls(comm, fd, path, mode, hints)
            state.pointer = share_segment(comm, 8, "File.Open")
        except BaseException:
            if fd is not None:
                os.close(fd)
            comm.Free()
            raise
        if mode & MODE_APPEND:      # every file pointer starts at the end (§13.2.1)
            state.position = os.fstat(fd).st_size
            if state.rank == 0:
                atomic.store64(state.pointer.address, state.position)
            comm.Barrier()
        return state

    @staticmethod
    def _open_in_turn(comm, path, amode):
        """Rank 0 opens first, creating the file if asked; then the others open it."""
        flags = _ACCESS_MODES[amode & (MODE_RDONLY | MODE_WRONLY | MODE_RDWR)] | os.O_CLOEXEC
        creating = (os.O_CREAT if amode & MODE_CREATE else 0) | (
            os.O_EXCL if amode & MODE_EXCL else 0)
        fd = problem = None
        if comm.Get_rank() == 0:
            fd, problem = _open_one(path, flags | creating)
        try:
            _agree(comm, (problem, None), "File.Open")
            if comm.Get_rank() != 0:
                fd, problem = _open_one(path, flags)
            _agree(comm, (problem, None), "File.Open")
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        return fd

    def close(self):
        """Collective: close this rank's descriptor; rank 0 deletes the file when asked."""
        self.closed = True
        os.close(self.fd)
        self.comm.Barrier()         # every rank is done with the file
        if self.amode & MODE_DELETE_ON_CLOSE:
            if self.rank == 0:
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass
            self.comm.Barrier()     # gone when Close returns, on every rank
        self.pointer.close()
        self.comm.Free()

    # --- checks ---
    def check_access(self, writing, call):
        access = self.amode & (MODE_RDONLY | MODE_WRONLY | MODE_RDWR)
        if writing and access == MODE_RDONLY:
            errors.fail(errors.ERR_READ_ONLY, "%s: the file was opened MODE_RDONLY" % call)
        if not writing and access == MODE_WRONLY:
            errors.fail(errors.ERR_ACCESS, "%s: the file was opened MODE_WRONLY" % call)

    def check_random_access(self, call):
        if self.amode & MODE_SEQUENTIAL:
            errors.fail(errors.ERR_UNSUPPORTED_OPERATION, "%s: the file was opened "
                        "MODE_SEQUENTIAL, where only the shared file pointer moves" % call)

    def prepare(self, msg, writing, call):
        """Check a call's data against the view before any pointer moves: (how many
        etypes they are, the bytes a write puts in the file, None for a read). ERR_IO
        unless whole etypes; ERR_UNSUPPORTED_DATAREP and ERR_CONVERSION from the
        view's data representation."""
        self.check_access(writing, call)
        representation, nbytes = self.view.representation, len(msg.data)
        if representation.converts and nbytes:
            representation.check(msg.datatype, "buffer's datatype")
        esize = self.view.esize
        if nbytes and (not esize or nbytes % esize):
            errors.fail(errors.ERR_IO, "%s: %d bytes of data are not a whole number of "
                        "etypes of %d bytes; only whole etypes are accessed" %
                        (call, nbytes, esize))
        payload = representation.to_file(msg.data, msg.datatype, msg.count) if writing \
            else None
        return (nbytes // esize if esize else 0), payload

    # --- the transfer itself ---
    def transfer(self, position, msg, payload):
        """Write ``payload`` (from prepare), or read the message's bytes when it is
        None, at etype ``position`` of the view; the number of bytes moved (a read
        stops at the end of the file)."""
        writing = payload is not None
        view, fd = self.view, self.fd
        start, nbytes = position * view.esize, len(msg.data)
        if nbytes and not view.tile_bytes:
            errors.fail(errors.ERR_IO, "the view's filetype selects no bytes of the file")
        if not writing:
            nbytes = max(0, min(nbytes, view.stream_before(os.fstat(fd).st_size) - start))
        files, lengths = view.pieces(start, nbytes)
        low = int(files.min()) if len(files) else 0
        high = int((files + lengths).max()) if len(files) else 0
        representation = view.representation
        try:
            if writing:
                with _Locked(fd, fcntl.LOCK_EX, low, high):
                    _write_pieces(fd, files, lengths, payload)
            else:
                kind = fcntl.LOCK_SH if self.atomic else None
                stored = msg.data
                if representation.converts:     # whole items, the unread part zeros
                    stored = memoryview(bytearray(len(msg.data)))
                with _Locked(fd, kind, low, high if kind else low):
                    _read_pieces(fd, files, lengths, stored)
                if representation.converts:
                    msg.data[:nbytes] = representation.from_file(
                        stored, msg.datatype, msg.count)[:nbytes]
                msg.finish(nbytes)
        except OSError as exc:
            _os_fail(exc, "writing the file" if writing else "reading the file")
        return nbytes

    # --- the shared file pointer ---
    def shared_add(self, count):
        return atomic.fetch_add64(self.pointer.address, count)

    def shared_load(self):
        return atomic.load64(self.pointer.address)

    def reset_pointers(self):
        """Collective: both file pointers to 0 (rank 0 resets the shared one); returns,
        once every rank sees the reset, where the shared pointer was before it."""
        self.position = 0
        before = None
        if self.rank == 0:
            before = atomic.exchange64(self.pointer.address, 0)
        return own_bcast(self.comm, before, 0)


def _open_one(path, flags):
    """(fd, None) or (None, problem) of opening ``path``; a directory is no file."""
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        return None, _os_problem(exc, "cannot open %r" % os.fsdecode(path))
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        return None, (errors.ERR_BAD_FILE, "%r is a directory" % os.fsdecode(path))
    return fd, None


def _collectively(comm, call, check):
    """Collective: ``check()`` parses and checks this rank's arguments and returns its
    value; then every rank hears the others. A rank whose check failed raises its own
    exception, the others MPI.Exception of its class (ERR_ARG for a TypeError and the
    like), so that none waits in a collective another gave up. Every rank's value."""
    problem = failure = value = None
    try:
        value = check()
    except Exception as exc:  # noqa: BLE001 - the other ranks must hear of any
        failure = exc
        problem = ((exc.Get_error_class(), exc.message) if isinstance(exc, errors.Exception)
                   else (errors.ERR_ARG, "%s: %s" % (type(exc).__name__, exc)))
    try:
        return _agree(comm, (problem, value), call)
    except errors.Exception:
        if failure is not None:
            raise failure from None
        raise


def _same_value(comm, call, check, error_class=errors.ERR_ARG):
    """_collectively, for a value every rank must pass alike: ``error_class`` (ERR_ARG
    as MPICH, mostly) on every rank when they differ."""
    values = _collectively(comm, call, check)
    if len(set(values)) > 1:
        errors.fail(error_class, "%s: every rank must pass the same value, got %s"
                    % (call, values))
    return values[0]


# --- error handlers on files (MPI-3.1 §8.3.3, errhandler.py) -----------------------
# FILE_NULL's handler is the one files get at Open, and handles Open's and Delete's
# errors (MPI-3.1 §13.7)
_null_file_errhandler = [errhandler.ERRORS_RETURN]


def _by_null_handler(where, call, *args):
    """Run a call made on no file (Open, Delete): errors go to FILE_NULL's handler."""
    try:
        return call(*args)
    except errors.Exception as exc:
        errhandler.invoke(_null_file_errhandler[0], FILE_NULL, exc.ierr, where)
        raise


# --- MPI.File --------------------------------------------------------------------------
class File(Handle, GroupMembers, errhandler.ErrorHandling):
    """``MPI.File``: a handle to an open file; the base class is FILE_NULL's type.
    (Handle first: File.__new__ reaches handle.HandleBase's, see there.)"""

    _errhandler_kind = "File"

    def __new__(cls, file=None):
        handle = super().__new__(cls)
        if file is not None:
            if not isinstance(file, File):
                raise TypeError("File() takes a File, not %s" % type(file).__name__)
            handle._handle = file._handle
            if file._handle is not None:
                errhandler.switch_class(handle, file._handle.errhandler)
        return handle

    def __init__(self, file=None):
        pass

    def __reduce__(self):
        if self is FILE_NULL:
            return "FILE_NULL"
        if self._handle is None:
            return (type(self), ())
        raise ValueError("cannot serialize '%s.File' instance: an open file lives in one "
                         "job" % __name__)

    @property
    def _s(self):
        state = self._handle
        if state is None or state.closed:
            errors.fail(errors.ERR_FILE, "the file is FILE_NULL or closed; use a file from "
                        "File.Open")
        return state

    def _free(self):
        if not self._handle.closed:     # not closed through another handle
            self.Close()

    # --- manipulation (§13.2) ---
    @classmethod
    def Open(cls, comm, filename, amode=MODE_RDONLY, info=INFO_NULL):
        """Open a file; collective over ``comm``."""
        state = _by_null_handler("File.Open", FileState.open, comm, filename, amode, info)
        file = File.__new__(cls)
        file._handle = state
        errhandler.switch_class(file, state.errhandler)
        return file

    def Close(self):
        """Close a file."""
        state = self._s
        state.close()
        self._handle = None
        errhandler.switch_class(self, errhandler.ERRORS_RETURN)

    @classmethod
    def Delete(cls, filename, info=INFO_NULL):
        """Delete a file."""
        path = _path(filename)
        to_dict(info)
        _by_null_handler("File.Delete", _delete, path)

    def Set_size(self, size):
        """Set the file size; collective."""
        self._resize(size, "Set_size", os.ftruncate)

    def Preallocate(self, size):
        """Preallocate storage space for a file; collective."""
        def preallocate(fd, size):
            if size > 0:
                os.posix_fallocate(fd, 0, size)
        self._resize(size, "Preallocate", preallocate)

    def _resize(self, size, call, change):
        """Collective: rank 0 changes the file's size; every rank sees it when done."""
        state = self._s

        def check():
            state.check_access(True, call)
            if operator.index(size) < 0:
                errors.fail(errors.ERR_ARG, "%s: the size must be >= 0, not %d" % (call, size))
            return operator.index(size)
        size = _same_value(state.comm, call, check)
        problem = None
        if state.rank == 0:
            try:
                change(state.fd, size)
            except OSError as exc:
                problem = _os_problem(exc, call)
        _agree(state.comm, (problem, None), call)

    def Get_size(self):
        """Return the file size, in bytes."""
        return os.fstat(self._s.fd).st_size

    size = property(Get_size)

    def Get_amode(self):
        """Return the file access mode."""
        return self._s.amode

    amode = property(Get_amode)

    def Set_info(self, info):
        """Set new values for the hints associated with a file."""
        self._s.hints.update(to_dict(info))

    def Get_info(self):
        """Return the current hints for a file, as a new Info."""
        return Info.Create(self._s.hints)

    info = property(Get_info, Set_info)

    # --- views (§13.3) ---
    def Set_view(self, disp=0, etype=datatypes.BYTE, filetype=None, datarep="native",
                 info=INFO_NULL):
        """Set the file view; collective."""
        name = "native" if datarep is None else datarep
        state = self._s
        view = hints = None

        def check():
            nonlocal view, disp, hints
            disp, hints = operator.index(disp), to_dict(info)
            representation = representations.lookup(name)
            if state.amode & MODE_SEQUENTIAL and disp != DISPLACEMENT_CURRENT:
                errors.fail(errors.ERR_ARG, "Set_view: a file opened MODE_SEQUENTIAL takes "
                            "disp=DISPLACEMENT_CURRENT")
            current = disp == DISPLACEMENT_CURRENT and state.amode & MODE_SEQUENTIAL
            if disp < 0 and not current:
                errors.fail(errors.ERR_ARG, "Set_view: disp must be >= 0, not %d" % disp)
            view = _new_view(0 if current else disp, etype, filetype, representation)
            return representation.name, view.esize
        _same_value(state.comm, "Set_view", check)
        shared = state.reset_pointers()
        if disp == DISPLACEMENT_CURRENT:    # where the shared pointer was, in the old view
            view.disp = state.view.byte_offset(shared * state.view.esize)
        state.view = view
        state.hints.update(hints)

    def Get_view(self):
        """Return the file view: (disp, etype, filetype, datarep)."""
        view = self._s.view
        etype, filetype = view.handles()
        return view.disp, etype, filetype, view.representation.name

    def Get_type_extent(self, datatype):
        """Return the extent of datatype in the file."""
        state = self._s
        datatype = datatypes.lookup(datatype)
        datatype._live("take the file extent of")
        if not datatype.committed:      # as MPICH
            errors.fail(errors.ERR_TYPE, "Get_type_extent: the datatype is not committed; "
                        "call Commit() first")
        return state.view.representation.type_extent(datatype)

    def Get_byte_offset(self, offset):
        """Return the absolute byte position in the file of a view offset."""
        state = self._s
        offset = operator.index(offset)
        if offset < 0:
            errors.fail(errors.ERR_ARG, "Get_byte_offset: the offset must be >= 0, not %d"
                        % offset)
        return state.view.byte_offset(offset * state.view.esize)

    # --- the individual file pointer ---
    def Seek(self, offset, whence=SEEK_SET):
        """Update the individual file pointer."""
        state = self._s
        state.check_random_access("Seek")
        state.position = _sought(state, operator.index(offset), whence, state.position,
                                 "Seek")

    def Get_position(self):
        """Return the current position of the individual file pointer."""
        state = self._s
        state.check_random_access("Get_position")
        return state.position

    # --- the shared file pointer ---
    def Seek_shared(self, offset, whence=SEEK_SET):
        """Update the shared file pointer; collective."""
        state = self._s
        where = None
        offset, whence = _same_value(state.comm, "Seek_shared",
                                     lambda: (operator.index(offset), whence))
        if state.rank == 0:
            try:
                where = (None, _sought(state, offset, whence, state.shared_load(),
                                       "Seek_shared"))
            except errors.Exception as exc:
                where = ((exc.Get_error_class(), exc.message), None)
            if where[0] is None:
                atomic.store64(state.pointer.address, where[1])
        problem, _ = own_bcast(state.comm, where, 0)
        if problem is not None:
            errors.fail(*problem)

    def Get_position_shared(self):
        """Return the current position of the shared file pointer."""
        state = self._s
        state.check_random_access("Get_position_shared")   # as MPICH
        return state.shared_load()

    # --- data access (§13.4): one mechanism, named for each pointer and mode ---
    def _data(self, call, pointer, writing, buf, offset=None):
        """Read or write ``buf`` at the ``pointer``'s position ("explicit" offset,
        "individual", "shared" or "ordered"); the number of bytes moved."""
        state = self._s
        if offset is not None:
            offset = operator.index(offset)
        if pointer == "ordered":
            return _ordered(state, buf, writing, call)
        msg = buffers.message(buf, not writing)
        count, payload = state.prepare(msg, writing, call)
        if pointer == "shared":
            position = state.shared_add(count)
        else:
            state.check_random_access(call)
            position = state.position if offset is None else offset
        if position < 0:
            errors.fail(errors.ERR_ARG, "%s: the offset must be >= 0, not %d" % (call, position))
        nbytes = state.transfer(position, msg, payload)
        if pointer == "individual":
            state.position = position + nbytes // state.view.esize
        return nbytes

    def _blocking(self, call, pointer, writing, buf, status, offset=None):
        check_arg(status)
        _report(status, self._data(call, pointer, writing, buf, offset))

    def _nonblocking(self, call, pointer, writing, buf, offset=None):
        """Done before it returns: a completed request carrying the status."""
        return Completed(_report(Status(), self._data(call, pointer, writing, buf, offset)))

    def _begin(self, call, pointer, writing, buf, offset=None):
        state = self._s
        if state.split is not None:
            errors.fail(errors.ERR_IO, "%s: %s is still in progress; only one split "
                        "collective per file at a time, end it first" % (call, state.split[0]))
        state.split = (call, self._data(call, pointer, writing, buf, offset))

    def _end(self, call, writing, buf, status):
        state = self._s
        check_arg(status)
        buffers.message(buf, not writing)    # parsed as mpi4py does; begin moved the data
        begun = call.replace("_end", "_begin")
        if state.split is None or state.split[0] != begun:
            errors.fail(errors.ERR_IO, "%s: no %s is in progress%s" % (
                call, begun, "" if state.split is None else " (%s is)" % state.split[0]))
        _report(status, state.split[1])
        state.split = None

    def Read_at(self, offset, buf, status=None):
        """Read using explicit offset."""
        self._blocking("Read_at", "explicit", False, buf, status, offset)

    def Read_at_all(self, offset, buf, status=None):
        """Collective read using explicit offset."""
        self._blocking("Read_at_all", "explicit", False, buf, status, offset)

    def Write_at(self, offset, buf, status=None):
        """Write using explicit offset."""
        self._blocking("Write_at", "explicit", True, buf, status, offset)

    def Write_at_all(self, offset, buf, status=None):
        """Collective write using explicit offset."""
        self._blocking("Write_at_all", "explicit", True, buf, status, offset)

    def Iread_at(self, offset, buf):
        """Nonblocking read using explicit offset (done at once: the request is complete)."""
        return self._nonblocking("Iread_at", "explicit", False, buf, offset)

    def Iread_at_all(self, offset, buf):
        """Nonblocking collective read using explicit offset (done at once)."""
        return self._nonblocking("Iread_at_all", "explicit", False, buf, offset)

    def Iwrite_at(self, offset, buf):
        """Nonblocking write using explicit offset (done at once: the request is complete)."""
        return self._nonblocking("Iwrite_at", "explicit", True, buf, offset)

    def Iwrite_at_all(self, offset, buf):
        """Nonblocking collective write using explicit offset (done at once)."""
        return self._nonblocking("Iwrite_at_all", "explicit", True, buf, offset)

    def Read(self, buf, status=None):
        """Read using individual file pointer."""
        self._blocking("Read", "individual", False, buf, status)

    def Read_all(self, buf, status=None):
        """Collective read using individual file pointer."""
        self._blocking("Read_all", "individual", False, buf, status)

    def Write(self, buf, status=None):
        """Write using individual file pointer."""
        self._blocking("Write", "individual", True, buf, status)

    def Write_all(self, buf, status=None):
        """Collective write using individual file pointer."""
        self._blocking("Write_all", "individual", True, buf, status)

    def Iread(self, buf):
        """Nonblocking read using individual file pointer (done at once)."""
        return self._nonblocking("Iread", "individual", False, buf)

    def Iread_all(self, buf):
        """Nonblocking collective read using individual file pointer (done at once)."""
        return self._nonblocking("Iread_all", "individual", False, buf)

    def Iwrite(self, buf):
        """Nonblocking write using individual file pointer (done at once)."""
        return self._nonblocking("Iwrite", "individual", True, buf)

    def Iwrite_all(self, buf):
        """Nonblocking collective write using individual file pointer (done at once)."""
        return self._nonblocking("Iwrite_all", "individual", True, buf)

    def Read_shared(self, buf, status=None):
        """Read using shared file pointer."""
        self._blocking("Read_shared", "shared", False, buf, status)

    def Write_shared(self, buf, status=None):
        """Write using shared file pointer."""
        self._blocking("Write_shared", "shared", True, buf, status)

    def Iread_shared(self, buf):
        """Nonblocking read using shared file pointer (done at once)."""
        return self._nonblocking("Iread_shared", "shared", False, buf)

    def Iwrite_shared(self, buf):
        """Nonblocking write using shared file pointer (done at once)."""
        return self._nonblocking("Iwrite_shared", "shared", True, buf)

    def Read_ordered(self, buf, status=None):
        """Collective read using shared file pointer, in rank order."""
        self._blocking("Read_ordered", "ordered", False, buf, status)

    def Write_ordered(self, buf, status=None):
        """Collective write using shared file pointer, in rank order."""
        self._blocking("Write_ordered", "ordered", True, buf, status)

    # split collectives (§13.4.5)
    def Read_at_all_begin(self, offset, buf):
        """Start a split collective read using explicit offset."""
        self._begin("Read_at_all_begin", "explicit", False, buf, offset)

    def Read_at_all_end(self, buf, status=None):
        """Complete a split collective read using explicit offset."""
        self._end("Read_at_all_end", False, buf, status)

    def Write_at_all_begin(self, offset, buf):
        """Start a split collective write using explicit offset."""
        self._begin("Write_at_all_begin", "explicit", True, buf, offset)

    def Write_at_all_end(self, buf, status=None):
        """Complete a split collective write using explicit offset."""
        self._end("Write_at_all_end", True, buf, status)

    def Read_all_begin(self, buf):
        """Start a split collective read using individual file pointer."""
        self._begin("Read_all_begin", "individual", False, buf)

    def Read_all_end(self, buf, status=None):
        """Complete a split collective read using individual file pointer."""
        self._end("Read_all_end", False, buf, status)

    def Write_all_begin(self, buf):
        """Start a split collective write using individual file pointer."""
        self._begin("Write_all_begin", "individual", True, buf)

    def Write_all_end(self, buf, status=None):
        """Complete a split collective write using individual file pointer."""
        self._end("Write_all_end", True, buf, status)

    def Read_ordered_begin(self, buf):
        """Start a split collective read using shared file pointer."""
        self._begin("Read_ordered_begin", "ordered", False, buf)

    def Read_ordered_end(self, buf, status=None):
        """Complete a split collective read using shared file pointer."""
        self._end("Read_ordered_end", False, buf, status)

    def Write_ordered_begin(self, buf):
        """Start a split collective write using shared file pointer."""
        self._begin("Write_ordered_begin", "ordered", True, buf)

    def Write_ordered_end(self, buf, status=None):
        """Complete a split collective write using shared file pointer."""
        self._end("Write_ordered_end", True, buf, status)

    # --- consistency (§13.6) ---
    def Set_atomicity(self, flag):
        """Set the atomicity mode."""
        self._s.atomic = bool(flag)

    def Get_atomicity(self):
        """Return the atomicity mode."""
        return self._s.atomic

    atomicity = property(Get_atomicity, Set_atomicity)

    def Sync(self):
        """Cause all previous writes to be transferred to the storage device."""
        try:
            os.fsync(self._s.fd)
        except OSError as exc:
            _os_fail(exc, "Sync")

    # --- error handling: FILE_NULL's is the default of files (errhandler.py) ---
    def Get_errhandler(self):
        """Get the error handler for a file (for FILE_NULL: the default of new files)."""
        if self._handle is None:
            return errhandler.Errhandler(_null_file_errhandler[0])
        return super().Get_errhandler()

    def Set_errhandler(self, errhandler_):
        """Set the error handler for a file (for FILE_NULL: the default of new files)."""
        if self._handle is None:
            _null_file_errhandler[0] = errhandler.settable(errhandler_, "File")
            return
        super().Set_errhandler(errhandler_)

    def Call_errhandler(self, errorcode):
        """Call the error handler installed on a file."""
        if self._handle is None:
            errhandler.invoke(_null_file_errhandler[0], self, operator.index(errorcode),
                              "File.Call_errhandler")
            return
        super().Call_errhandler(errorcode)


def _report(status, nbytes):
    """Fill ``status`` (if any) as MPICH fills a file call's: ``nbytes`` moved."""
    if status is not None:
        status._fill(ANY_SOURCE, ANY_TAG, nbytes)
    return status


def _ordered(state, buf, writing, call):
    """Collective: the ranks' data one after another, in rank order, from the shared
    file pointer, which moves past all of it."""
    msg = payload = None

    def check():
        nonlocal msg, payload
        msg = buffers.message(buf, not writing)
        count, payload = state.prepare(msg, writing, call)
        return count
    counts = _collectively(state.comm, call, check)
    base = state.shared_add(sum(counts)) if state.rank == 0 else None
    base = own_bcast(state.comm, base, 0)
    return state.transfer(base + sum(counts[:state.rank]), msg, payload)


def _new_view(disp, etype, filetype, representation):
    etype = _kept(etype, "etype")
    filetype = etype if filetype is None else _kept(filetype, "filetype")
    representation.check(etype, "etype")
    representation.check(filetype, "filetype")
    view = View(disp, etype, filetype, representation)
    if view.esize and view.tile_bytes % view.esize:
        errors.fail(errors.ERR_ARG, "Set_view: the filetype holds %d bytes, not a whole "
                    "number of etypes of %d bytes" % (view.tile_bytes, view.esize))
    if view.tile_bytes and view.tile_extent <= 0:
        errors.fail(errors.ERR_ARG, "Set_view: the filetype's extent must be positive to "
                    "tile the file, not %d" % view.tile_extent)
    if len(view.offsets) and int(view.offsets.min()) < 0:
        errors.fail(errors.ERR_ARG, "Set_view: the filetype reaches before its start; "
                    "displacements in a filetype must be >= 0")
    return view


def _sought(state, offset, whence, current, call):
    """The pointer position Seek/Seek_shared move to."""
    if whence == SEEK_SET:
        position = offset
    elif whence == SEEK_CUR:
        position = current + offset
    elif whence == SEEK_END:
        view = state.view
        end = view.stream_before(os.fstat(state.fd).st_size)
        position = (end // view.esize if view.esize else 0) + offset
    else:
        errors.fail(errors.ERR_ARG, "%s: whence must be SEEK_SET, SEEK_CUR or SEEK_END, "
                    "not %r" % (call, whence))
    if position < 0:
        errors.fail(errors.ERR_ARG, "%s: the pointer would move to %d, before the start of "
                    "the view" % (call, position))
    return position


def _delete(path):
    try:
        if stat.S_ISDIR(os.stat(path).st_mode):
            errors.fail(errors.ERR_BAD_FILE, "File.Delete: %r is a directory"
                        % os.fsdecode(path))
        os.unlink(path)
    except OSError as exc:
        _os_fail(exc, "File.Delete: cannot delete %r" % os.fsdecode(path))


FILE_NULL = constant(File())
