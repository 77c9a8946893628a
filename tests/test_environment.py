"""Module functions of the MPI namespace: versions, timers, Init/Finalize, error
classes and MPI.Exception, Alloc_mem/Free_mem and MPI.buffer, addresses (docs/api.md).

Rules: issue 2 (behaviour as mpi4py 4.1 + MPICH 5.0 show it), A39 (errors are
MPI.Exception carrying an error class), R105/A41 (Alloc_mem memory is shared
memory a window can expose), R14 (Get_address/Aint_add give the absolute
addresses dynamic windows use).
"""
import array
import ctypes
import socket
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from mpitest import job_segments

ERROR_CLASSES = ["SUCCESS", "ERR_BUFFER", "ERR_COUNT", "ERR_TYPE", "ERR_TAG", "ERR_COMM",
                 "ERR_RANK", "ERR_ROOT", "ERR_GROUP", "ERR_OP", "ERR_ARG", "ERR_TRUNCATE",
                 "ERR_OTHER", "ERR_REQUEST", "ERR_INFO", "ERR_NO_MEM", "ERR_WIN", "ERR_BASE",
                 "ERR_SIZE", "ERR_DISP", "ERR_LOCKTYPE", "ERR_ASSERT", "ERR_RMA_CONFLICT",
                 "ERR_RMA_SYNC", "ERR_RMA_RANGE", "ERR_RMA_ATTACH", "ERR_RMA_SHARED",
                 "ERR_RMA_FLAVOR", "ERR_KEYVAL", "ERR_WIN_COUNTER"]


def mapped_file(address):
    """The file /proc/self/maps shows at ``address`` (None for anonymous memory)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            low, high = (int(x, 16) for x in fields[0].split("-"))
            if low <= address < high:
                return fields[5] if len(fields) > 5 else None
    return None


def test_keyval_invalid_is_mpichs_and_no_other_constant():
    """Issue 15: MPI.KEYVAL_INVALID exists with MPICH's value (mpi4py's test_win reads
    it at class definition) and no attribute key equals it."""
    assert MPI.KEYVAL_INVALID == 0x24000000
    assert MPI.KEYVAL_INVALID not in (MPI.WIN_BASE, MPI.WIN_SIZE, MPI.WIN_DISP_UNIT,
                                      MPI.WIN_CREATE_FLAVOR, MPI.WIN_MODEL)


def test_versions_names_and_timers():
    """Issue 2: Get_version() is (3, 1); get_vendor() names shmrma and its
    version; library version and processor name are non-empty strings; Wtime is a
    float clock in seconds that advances; Wtick is its resolution."""
    assert MPI.Get_version() == (3, 1) == (MPI.VERSION, MPI.SUBVERSION)
    name, version = MPI.get_vendor()
    assert name == "shmrma"
    assert version == tuple(int(p) for p in shmrma.__version__.split("."))[:3]
    assert len(version) == 3
    assert "shmrma" in MPI.Get_library_version() and shmrma.__version__ in \
        MPI.Get_library_version()
    assert MPI.Get_processor_name() == socket.gethostname()
    outer = time.monotonic()
    start = MPI.Wtime()
    assert isinstance(start, float)
    time.sleep(0.02)
    inner = MPI.Wtime() - start
    outer = time.monotonic() - outer
    # seconds: at least the 0.02 s slept, at most what a seconds clock read around it
    assert 0.019 <= inner <= outer + 1e-6, (inner, outer)
    assert 0 < MPI.Wtick() < 1e-3


@pytest.mark.timeout(60)
def test_init_finalize_and_sends_pending_at_finalize():
    """Issue 2: initialization is automatic (Init is harmless), Finalize
    sets Is_finalized; sends still queued for lack of ring room when a rank
    finalizes are delivered, not lost."""
    def body():
        comm = MPI.COMM_WORLD
        states = [MPI.Is_initialized(), MPI.Is_finalized()]
        MPI.Init()
        states.append(MPI.Is_initialized())
        if comm.rank == 0:
            for i in range(300):  # about 5 rings of 64 KiB: most wait in the queue
                comm.Isend(np.full(256, i, dtype=np.int32), dest=1, tag=3)
        else:
            time.sleep(0.3)
            buf = np.zeros(256, dtype=np.int32)
            for i in range(300):
                comm.Recv(buf, source=0, tag=3)
                assert (buf == i).all(), (i, buf[:3])
        MPI.Finalize()
        states.append(MPI.Is_finalized())
        return states

    assert shmrma.launch(body, 2, timeout=50) == [[True, False, True, True]] * 2


def test_error_classes_strings_and_exception():
    """A39: every error class is its own class; Get_error_string gives a
    distinct text for each; MPI.Exception is a RuntimeError with Get_error_class,
    Get_error_code, Get_error_string, error_class, and compares equal to its class."""
    classes = [getattr(MPI, name) for name in ERROR_CLASSES]
    assert len(set(classes)) == len(classes)
    strings = [MPI.Get_error_string(c) for c in classes]
    assert all(isinstance(s, str) and s for s in strings)
    assert len(set(strings)) == len(strings)
    for value in classes:
        assert MPI.Get_error_class(value) == value
    exc = MPI.Exception(MPI.ERR_TAG)
    assert isinstance(exc, RuntimeError)
    assert (exc.Get_error_class(), exc.Get_error_code(), exc.error_class, exc.error_code,
            int(exc)) == (MPI.ERR_TAG,) * 5
    assert exc.Get_error_string() == MPI.Get_error_string(MPI.ERR_TAG) == exc.error_string
    assert exc == MPI.ERR_TAG and exc != MPI.ERR_RANK and MPI.ERR_TAG == exc
    assert exc == MPI.Exception(MPI.ERR_TAG) and exc != MPI.Exception(MPI.ERR_RANK)
    assert bool(exc) and not bool(MPI.Exception(MPI.SUCCESS))
    with pytest.raises(MPI.Exception) as raised:
        MPI.COMM_NULL.Get_size()
    assert raised.value.Get_error_class() == MPI.ERR_COMM
    assert "COMM_NULL" in str(raised.value)  # the message says what was wrong


def test_exception_orders_and_hashes_like_its_int():
    """Issue 2 (mpi4py): MPI.Exception orders against ints (e < 100) and hashes as
    its error code, so it can stand where an int error code is expected."""
    exc = MPI.Exception(MPI.ERR_TAG)
    assert exc < MPI.ERR_TAG + 1 and exc > 0 and exc <= MPI.ERR_TAG and exc >= MPI.ERR_TAG
    assert hash(exc) == hash(MPI.ERR_TAG)


@pytest.mark.timeout(60)
def test_alloc_mem_is_shared_memory():
    """Issue 2, R105/A41: Alloc_mem returns an MPI.buffer over a shared-memory
    segment of the job (a window can expose it to every rank); Free_mem removes the
    segment. A size of 0 is legal, an int-like one (numpy) too; a negative size is an
    MPI.Exception; memory that Alloc_mem did not return is refused with an
    MPI.Exception."""
    def body():
        out = {}
        mem = MPI.Alloc_mem(4096, MPI.INFO_NULL)
        out["type"] = (isinstance(mem, MPI.buffer), mem.nbytes, len(mem), mem.readonly)
        out["segments"] = len(job_segments())
        out["mapped"] = mapped_file(mem.address)
        mem[:] = 0
        mem[:3] = b"abc"
        out["bytes"] = mem.tobytes()[:4]
        MPI.Free_mem(mem)
        out["segments_after"] = len(job_segments())
        small = MPI.Alloc_mem(np.int64(16), {"unknown_hint": "1"})
        MPI.Free_mem(small)
        empty = MPI.Alloc_mem(0)
        out["empty"] = empty.nbytes
        MPI.Free_mem(empty)
        for bad in (lambda: MPI.Alloc_mem(-1), lambda: MPI.Free_mem(MPI.buffer.allocate(8))):
            try:
                bad()
                out.setdefault("errors", []).append(None)
            except MPI.Exception as exc:
                out.setdefault("errors", []).append(exc.Get_error_class())
        out["segments_end"] = len(job_segments())
        return out

    out = shmrma.launch(body, 1, timeout=50)[0]
    assert out["type"] == (True, 4096, 4096, False)
    assert out["segments"] == 1
    assert out["mapped"] is not None and out["mapped"].startswith("/dev/shm/shmrma.")
    assert out["bytes"] == b"abc\x00"
    assert out["segments_after"] == 0 and out["segments_end"] == 0
    assert out["empty"] == 0
    assert out["errors"][0] in (MPI.ERR_SIZE, MPI.ERR_ARG)  # MPICH says ERR_ARG
    assert out["errors"][1] == MPI.ERR_BASE


@pytest.mark.timeout(60)
def test_buffer_interface():
    """Issue 2 (mpi4py's MPI.buffer): address, nbytes, readonly, format,
    itemsize, obj, len; slicing returns buffers at the right address; m[:] = 0
    fills; a slice takes bytes of exactly its length; tobytes, toreadonly (writes
    raise TypeError), cast, release; the buffer protocol with numpy.frombuffer."""
    def body():
        m = MPI.Alloc_mem(16)
        assert MPI.memory is MPI.buffer
        assert (m.nbytes, len(m), m.readonly, m.format, m.itemsize) == (16, 16, False, "B", 1)
        assert m.obj is None and isinstance(m.address, int) and m.address != 0
        m[:] = 0
        assert m.tobytes() == bytes(16)
        m[:] = 7
        assert m.tobytes() == b"\x07" * 16
        m[0] = 255
        assert m[0] == 255 and isinstance(m[0], int) and m[-1] == 7
        part = m[2:6]
        assert isinstance(part, MPI.buffer) and len(part) == 4
        assert part.address == m.address + 2
        m[0:4] = b"abcd"
        m[4:8] = bytearray(b"efgh")
        assert m.tobytes()[:8] == b"abcdefgh"
        with pytest.raises(ValueError):
            m[0:4] = b"abc"          # the length must match, as in mpi4py
        with pytest.raises(ValueError):
            m[0:4] = b"a"            # no broadcasting of a short buffer
        with pytest.raises(IndexError):
            m[16]
        readonly = m.toreadonly()
        assert readonly.readonly and readonly.address == m.address and len(readonly) == 16
        with pytest.raises(TypeError):
            readonly[0] = 1
        with pytest.raises(TypeError):
            readonly[:] = 0
        ints = m.cast("i")
        assert isinstance(ints, memoryview) and len(ints) == 4 and ints.format == "i"
        assert m.cast("i", (2, 2)).shape == (2, 2)
        view = np.frombuffer(m, dtype=np.uint8)
        view[15] = 42
        assert m[15] == 42                      # numpy writes through to the memory
        assert memoryview(m).nbytes == 16 and not memoryview(m).readonly
        assert MPI.Get_address(m) == m.address
        # truth value as mpi4py's: non-empty is true (numpy's raises for size > 1);
        # mpi4py's RMA tests and its nxtval demo test `if mem:`
        assert bool(m) and bool(m[0:1]) and not m[0:0] and not MPI.buffer()
        assert bool(MPI.buffer(bytearray(3))) and not MPI.Alloc_mem(0)
        MPI.Free_mem(m)
        return True

    assert shmrma.launch(body, 1, timeout=50) == [True]


def test_buffer_constructors():
    """Issue 2: buffer.allocate (clear zeroes it; a negative size is
    ValueError), buffer.fromaddress aliasing existing memory (readonly on request;
    address 0 only for 0 bytes), MPI.buffer(obj) keeps obj, release() drops it."""
    zeroed = MPI.buffer.allocate(8, clear=True)
    assert isinstance(zeroed, MPI.buffer) and zeroed.tobytes() == bytes(8)
    assert not zeroed.readonly and MPI.buffer.allocate(3).nbytes == 3
    with pytest.raises(ValueError):
        MPI.buffer.allocate(-1)
    data = bytearray(b"hello")
    alias = MPI.buffer.fromaddress(MPI.Get_address(data), 5)
    assert alias.tobytes() == b"hello" and alias.address == MPI.Get_address(data)
    alias[0:1] = b"j"
    assert data == bytearray(b"jello")
    assert MPI.buffer.fromaddress(MPI.Get_address(data), 5, readonly=True).readonly
    assert MPI.buffer.fromaddress(0, 0).nbytes == 0
    with pytest.raises(ValueError):
        MPI.buffer.fromaddress(0, 4)
    wrapped = MPI.buffer(data)
    assert wrapped.obj is data and wrapped.nbytes == 5 and not wrapped.readonly
    assert MPI.buffer(b"xy").readonly
    assert MPI.buffer().nbytes == 0 and MPI.buffer().obj is None
    wrapped.release()
    assert wrapped.obj is None


def test_buffer_frombuffer_and_what_a_buffer_reports_as_in_mpi4py():
    """mpi4py's asbuffer.pxi: frombuffer asks for writable memory unless
    readonly (BufferError otherwise); itemsize is the exporter's; MPI.buffer() is
    writable at address 0 while MPI.buffer(None) is a TypeError; a slice is exposed
    by its buffer; no step; tobytes ignores the order; non-contiguous memory is a
    BufferError."""
    data = array.array("i", [1, 2, 3])
    buf = MPI.buffer.frombuffer(data)
    assert buf.obj is data and not buf.readonly and buf.itemsize == 4 and buf.format == "B"
    assert MPI.buffer.frombuffer(bytearray(2), readonly=True).readonly
    with pytest.raises(BufferError):
        MPI.buffer.frombuffer(b"abc")
    assert MPI.buffer.frombuffer(b"abc", readonly=True).tobytes() == b"abc"
    for bad in (None, 0, 0.0, [], ()):
        with pytest.raises(TypeError):
            MPI.buffer(bad)
        with pytest.raises(TypeError):
            MPI.buffer.frombuffer(bad)
    empty = MPI.buffer()
    assert empty.address == 0 and not empty.readonly and empty.itemsize == 1
    assert buf[0:4].obj is buf and buf[0:4].itemsize == 1
    with pytest.raises(IndexError, match="step"):
        buf[::2]
    assert buf.tobytes("i") == data.tobytes()
    with pytest.raises(BufferError, match="contiguous"):
        MPI.buffer(np.zeros((2, 3))[:, 0])
    with pytest.raises(BufferError, match="contiguous"):
        MPI.Get_address(np.zeros((2, 3))[:, 0])
    assert MPI.buffer(np.zeros((2, 3), order="F")).nbytes == 48
    assert MPI.buffer.fromaddress(4096, 0).address == 4096
    assert buf.toreadonly().obj is data and buf.toreadonly().itemsize == 4


def test_addresses():
    """R14, issue 2: Get_address gives the absolute address of a buffer's first byte
    (numpy array, bytearray, read-only bytes); Aint_add and Aint_diff do address
    arithmetic."""
    array = np.zeros(4)
    assert MPI.Get_address(array) == array.ctypes.data
    assert MPI.Get_address(array[1:]) == array.ctypes.data + 8
    data = bytearray(4)
    assert MPI.Get_address(data) == ctypes.addressof(ctypes.c_char.from_buffer(data))
    assert isinstance(MPI.Get_address(b"abc"), int) and MPI.Get_address(b"abc") != 0
    base = MPI.Get_address(array)
    assert MPI.Aint_add(base, 24) == base + 24
    assert MPI.Aint_diff(MPI.Aint_add(base, 24), base) == 24
    assert MPI.Aint_diff(100, 5) == 95
    assert MPI.Get_address(None) == MPI.Get_address(MPI.BOTTOM) == 0     # as mpi4py
