"""MPI-IO (MPI-3.1 chapter 13): MPI.File at 1, 2 and 3 ranks.

Open/Close/Delete and their errors (every rank raises the same class), sizes,
access modes, the three kinds of file pointer, views through derived filetypes
(holes written concurrently by every rank, which the range locks must keep),
nonblocking and split collective calls, statuses, and error handlers on files.
Reference behaviour: mpi4py 4.1.2 on MPICH 4 (ROMIO), checked case by case.
Every multi-rank body runs under ``shmrma.launch`` with a timeout.
"""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import shmrma
from shmrma import MPI

from mpitest import job_segments, raises_mpi

RDWR_NEW = MPI.MODE_RDWR | MPI.MODE_CREATE


def expect(error_class, fn, *args):
    """``fn(*args)`` raises MPI.Exception of ``error_class`` (inside a rank)."""
    try:
        fn(*args)
    except MPI.Exception as exc:
        assert exc.Get_error_class() == error_class, (error_class, exc.Get_error_class(),
                                                      str(exc))
        return
    raise AssertionError("%r did not raise class %d" % (fn, error_class))


def opened(path, amode=RDWR_NEW, comm=None):
    return MPI.File.Open(comm or MPI.COMM_WORLD, path, amode)


# --- opening and closing -----------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_open_close_delete_on_close(tmp_path, nprocs):
    """Open is collective and leaves no segment in /dev/shm (the shared pointer's is
    unlinked once mapped); DELETE_ON_CLOSE removes the file when Close returns."""
    kept, dropped = str(tmp_path / "kept"), str(tmp_path / "dropped")

    def body():
        before = set(job_segments())
        f = opened(kept)
        g = opened(dropped, RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
        MPI.COMM_WORLD.Barrier()
        assert set(job_segments()) <= before
        assert f.Get_amode() == RDWR_NEW and f.amode == RDWR_NEW
        assert (f.group_size, f.group_rank) == (MPI.COMM_WORLD.size, MPI.COMM_WORLD.rank)
        group = f.Get_group()
        assert MPI.Group.Compare(group, MPI.COMM_WORLD.Get_group()) == MPI.IDENT
        assert f and f != g and f == MPI.File(f) and not MPI.FILE_NULL
        g.Close()
        assert not g and g == MPI.FILE_NULL
        exists = os.path.exists(dropped)
        f.Close()
        return exists, os.path.exists(kept)
    assert shmrma.launch(body, nprocs, timeout=45) == [(False, True)] * nprocs


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 3])
def test_open_errors_raise_on_every_rank(tmp_path, nprocs):
    """The MPI error classes of a failed Open, as MPICH numbers them, on every rank,
    and no descriptor is left open."""
    existing = tmp_path / "existing"
    existing.write_bytes(b"x")

    def body():
        rank = MPI.COMM_WORLD.rank
        fds = len(os.listdir("/proc/self/fd"))
        expect(MPI.ERR_NO_SUCH_FILE, opened, str(tmp_path / "missing"), MPI.MODE_RDONLY)
        expect(MPI.ERR_NO_SUCH_FILE, opened, str(tmp_path / "no" / "dir"))
        expect(MPI.ERR_FILE_EXISTS, opened, str(existing), RDWR_NEW | MPI.MODE_EXCL)
        expect(MPI.ERR_BAD_FILE, opened, str(tmp_path), MPI.MODE_RDONLY)
        for amode in (0, MPI.MODE_RDONLY | MPI.MODE_RDWR, MPI.MODE_RDONLY | MPI.MODE_CREATE,
                      MPI.MODE_RDWR | MPI.MODE_SEQUENTIAL, MPI.MODE_RDWR | 1 << 20):
            expect(MPI.ERR_AMODE, opened, str(existing), amode)
        if MPI.COMM_WORLD.size > 1:   # one rank's bad amode fails them all
            expect(MPI.ERR_AMODE, opened, str(existing), 0 if rank == 1 else MPI.MODE_RDWR)
            expect(MPI.ERR_NOT_SAME, opened, str(existing),
                   MPI.MODE_RDWR | (MPI.MODE_UNIQUE_OPEN if rank == 1 else 0))
        expect(MPI.ERR_COMM, MPI.File.Open, MPI.COMM_NULL, str(existing))
        try:
            MPI.File.Open(MPI.COMM_WORLD, 3.5)
        except TypeError:
            pass
        else:
            raise AssertionError("a float file name was taken")
        # EXCL: rank 0 alone creates, so a new file opens on every rank
        f = opened(str(tmp_path / "fresh"), RDWR_NEW | MPI.MODE_EXCL)
        f.Close()
        return len(os.listdir("/proc/self/fd")) - fds
    assert shmrma.launch(body, nprocs, timeout=45) == [0] * nprocs


@pytest.mark.skipif(os.geteuid() == 0, reason="root opens any file")
def test_open_without_permission_is_err_access(tmp_path):
    locked = tmp_path / "locked"
    locked.write_bytes(b"")
    locked.chmod(0)
    with raises_mpi(MPI.ERR_ACCESS):
        MPI.File.Open(MPI.COMM_SELF, str(locked), MPI.MODE_RDONLY)


def test_delete_and_names(tmp_path):
    """Delete; str, bytes and pathlib names."""
    for name in (str(tmp_path / "a"), os.fsencode(tmp_path / "b"), tmp_path / "c"):
        f = MPI.File.Open(MPI.COMM_SELF, name, RDWR_NEW)
        f.Close()
        MPI.File.Delete(name)
        assert not os.path.exists(os.fsdecode(name))
    with raises_mpi(MPI.ERR_NO_SUCH_FILE):
        MPI.File.Delete(str(tmp_path / "a"))
    with raises_mpi(MPI.ERR_BAD_FILE):
        MPI.File.Delete(str(tmp_path))


def test_null_and_closed_files_are_err_file(tmp_path):
    f = MPI.File.Open(MPI.COMM_SELF, str(tmp_path / "f"), RDWR_NEW)
    other = MPI.File(f)
    f.Close()
    for handle in (MPI.FILE_NULL, f, other):
        for call in (handle.Get_size, handle.Close, handle.Sync, handle.Get_amode):
            with raises_mpi(MPI.ERR_FILE):
                call()
    assert pickle.loads(pickle.dumps(MPI.FILE_NULL)) is MPI.FILE_NULL
    g = MPI.File.Open(MPI.COMM_SELF, str(tmp_path / "f"), MPI.MODE_RDONLY)
    with pytest.raises(ValueError):
        pickle.dumps(g)
    assert MPI.File.fromint(g.toint()) == g and MPI.FILE_NULL.toint() == 0
    g.Close()


def test_subclass_shares_the_file(tmp_path):
    """mpi4py's ``MPI.File.__new__(cls, file)``: a subclass handle to the same file."""
    class MyFile(MPI.File):
        def __new__(cls, file=None):
            return MPI.File.__new__(cls, file)

    f = MPI.File.Open(MPI.COMM_SELF, str(tmp_path / "f"), RDWR_NEW)
    mine = MyFile(f)
    assert type(mine) is MyFile and mine == f
    mine.Write_at(0, b"abc")
    assert f.Get_size() == 3
    mine.Close()
    assert not mine


# --- sizes and access modes ------------------------------------------------------

@pytest.mark.timeout(60)
def test_sizes_are_collective(tmp_path):
    path = str(tmp_path / "f")

    def body():
        rank = MPI.COMM_WORLD.rank
        f = opened(path)
        f.Set_size(100)
        assert f.Get_size() == 100 and f.size == 100
        f.Preallocate(10)           # never shrinks
        assert f.Get_size() == 100
        f.Preallocate(200)
        assert f.Get_size() == 200
        expect(MPI.ERR_ARG, f.Set_size, -1)
        expect(MPI.ERR_ARG, f.Preallocate, -1)
        expect(MPI.ERR_ARG, f.Set_size, 10 + rank)     # ranks disagree: all raise
        assert f.Get_size() == 200
        f.Close()
        r = opened(path, MPI.MODE_RDONLY)
        expect(MPI.ERR_READ_ONLY, r.Set_size, 0)
        expect(MPI.ERR_READ_ONLY, r.Write_at, 0, b"x")
        r.Close()
        w = opened(path, MPI.MODE_WRONLY)
        expect(MPI.ERR_ACCESS, w.Read_at, 0, bytearray(1))
        w.Close()
        return True
    assert all(shmrma.launch(body, 3, timeout=45))


@pytest.mark.timeout(60)
def test_sequential_and_append_modes(tmp_path):
    path = str(tmp_path / "f")
    (tmp_path / "f").write_bytes(b"0123")

    def body():
        f = opened(path, MPI.MODE_RDWR | MPI.MODE_APPEND)
        assert (f.Get_position(), f.Get_position_shared()) == (4, 4)
        f.Close()
        s = opened(path, MPI.MODE_WRONLY | MPI.MODE_SEQUENTIAL)
        for call, args in ((s.Write_at, (0, b"x")), (s.Seek, (0,)), (s.Write, (b"x",)),
                           (s.Get_position, ()), (s.Get_position_shared, ())):
            expect(MPI.ERR_UNSUPPORTED_OPERATION, call, *args)
        expect(MPI.ERR_ARG, s.Set_view, 0)
        s.Write_shared(b"ab")
        MPI.COMM_WORLD.Barrier()
        s.Set_view(MPI.DISPLACEMENT_CURRENT, MPI.BYTE)   # starts where the pointer was
        s.Write_ordered(b"z")
        s.Close()
        return None
    shmrma.launch(body, 2, timeout=45)
    assert (tmp_path / "f").read_bytes() == b"abab" + b"zz"


# --- the three file pointers -----------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_explicit_offsets_and_statuses(tmp_path, nprocs):
    path = str(tmp_path / "f")

    def body():
        rank = MPI.COMM_WORLD.rank
        f = opened(path, RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
        f.Set_view(0, MPI.INT)
        status = MPI.Status()
        f.Write_at_all(3 * rank, np.full(3, rank, "i"), status)
        assert status.Get_count(MPI.INT) == 3 and status.Get_elements(MPI.BYTE) == 12
        MPI.COMM_WORLD.Barrier()
        whole = np.full(3 * nprocs + 2, -1, "i")
        f.Read_at(0, whole, status)         # stops at the end of the file
        assert status.Get_count(MPI.INT) == 3 * nprocs
        assert (status.source, status.tag, status.error) == (MPI.ANY_SOURCE, MPI.ANY_TAG, 0)
        assert whole.tolist() == [r for r in range(nprocs) for _ in range(3)] + [-1, -1]
        expect(MPI.ERR_ARG, f.Read_at, -1, whole)
        expect(MPI.ERR_IO, f.Write_at, 0, [bytearray(6), MPI.BYTE])   # 1.5 ints
        with pytest.raises(BufferError):
            f.Read_at(0, b"read-only")
        request = f.Iread_at(3 * rank, whole[:3])
        request.Wait(status)
        assert status.Get_count(MPI.INT) == 3 and whole[:3].tolist() == [rank] * 3
        f.Close()
        return True
    assert all(shmrma.launch(body, nprocs, timeout=45))


@pytest.mark.timeout(60)
def test_individual_pointer(tmp_path):
    path = str(tmp_path / "f")

    def body():
        f = opened(path, RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
        f.Set_view(8, MPI.DOUBLE)
        f.Seek(2 * MPI.COMM_WORLD.rank)
        f.Write_all(np.arange(2.0))
        assert f.Get_position() == 2 * MPI.COMM_WORLD.rank + 2
        MPI.COMM_WORLD.Barrier()
        f.Seek(0, MPI.SEEK_END)
        end = f.Get_position()
        f.Seek(-1, MPI.SEEK_CUR)
        assert f.Get_position() == end - 1 and f.Get_byte_offset(end) == 8 + 8 * end
        expect(MPI.ERR_ARG, f.Seek, -end - 1, MPI.SEEK_END)
        expect(MPI.ERR_ARG, f.Seek, 0, 7)
        expect(MPI.ERR_ARG, f.Get_byte_offset, -1)
        assert f.Get_position() == end - 1      # unchanged by the errors
        value = np.zeros(3)
        status = MPI.Status()
        f.Read(value, status)                   # one double left before the end
        assert status.Get_count(MPI.DOUBLE) == 1 and f.Get_position() == end
        f.Close()
        return end
    assert shmrma.launch(body, 3, timeout=45) == [6] * 3


@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 2, 3])
def test_shared_and_ordered_pointers(tmp_path, nprocs):
    """Write_shared places each rank's block once, somewhere; Write_ordered in rank
    order; both move the one pointer every rank sees."""
    path = str(tmp_path / "f")

    def body():
        comm, rank = MPI.COMM_WORLD, MPI.COMM_WORLD.rank
        f = opened(path, RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
        f.Set_view(0, MPI.SHORT)
        f.Write_shared(np.full(rank + 1, rank, "h"))
        comm.Barrier()
        total = nprocs * (nprocs + 1) // 2
        assert f.Get_position_shared() == total
        written = np.zeros(total, "h")
        f.Read_at(0, written)
        blocks = sorted(np.split(written, np.flatnonzero(np.diff(written)) + 1),
                        key=lambda b: b[0])
        assert [b.tolist() for b in blocks] == [[r] * (r + 1) for r in range(nprocs)]
        f.Write_ordered(np.full(nprocs - rank, rank + 10, "h"))
        assert f.Get_position_shared() == 2 * total
        f.Seek_shared(total)
        back = np.zeros(nprocs - rank, "h")
        f.Read_ordered(back)
        assert back.tolist() == [rank + 10] * (nprocs - rank)
        f.Seek_shared(-1, MPI.SEEK_END)
        assert f.Get_position_shared() == 2 * total - 1
        expect(MPI.ERR_ARG, f.Seek_shared, -1)
        if nprocs > 1:
            expect(MPI.ERR_ARG, f.Seek_shared, rank)    # ranks disagree: all raise
        assert f.Get_position_shared() == 2 * total - 1
        f.Close()
        return True
    assert all(shmrma.launch(body, nprocs, timeout=45))


@pytest.mark.timeout(60)
def test_one_ranks_bad_arguments_fail_every_rank(tmp_path):
    """A collective call where one rank's arguments are wrong: that rank raises its
    own exception, the others ERR_ARG (or its class), and none is left waiting."""
    path = str(tmp_path / "f")

    def body():
        rank = MPI.COMM_WORLD.rank
        f = opened(path, RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
        outcomes = []
        for call, good, bad in ((f.Write_ordered, (b"ab",), (None,)),
                                (f.Set_view, (0, MPI.BYTE), ("zero", MPI.BYTE)),
                                (f.Set_size, (8,), (2.5,)),
                                (f.Seek_shared, (0,), (None,))):
            try:
                call(*(bad if rank == 1 else good))
                outcomes.append("returned")
            except MPI.Exception as exc:
                outcomes.append(exc.Get_error_class())
            except TypeError:
                outcomes.append("TypeError")
        f.Set_view(0, MPI.SHORT)
        if rank == 2:   # one rank's Write_ordered of 3 bytes: not whole etypes
            expect(MPI.ERR_IO, f.Write_ordered, b"abc")
        else:
            expect(MPI.ERR_IO, f.Write_ordered, b"ab")
        assert f.Get_size() == 0
        f.Close()
        return outcomes
    results = shmrma.launch(body, 3, timeout=45)
    assert results[1] == ["TypeError"] * 4
    assert results[0] == results[2] == [MPI.ERR_ARG] * 4


# --- views ---------------------------------------------------------------------------

@pytest.mark.timeout(90)
@pytest.mark.parametrize("nprocs", [2, 3])
def test_interleaved_views_keep_every_ranks_writes(tmp_path, nprocs):
    """Each rank owns every nprocs-th int (a resized single-int filetype): their
    writes through holes, at once and many times, must lose nothing (range locks)."""
    path = str(tmp_path / "f")
    count = 3000

    def body():
        comm, rank = MPI.COMM_WORLD, MPI.COMM_WORLD.rank
        f = opened(path, RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
        column = MPI.INT.Create_resized(0, 4 * nprocs).Commit()
        f.Set_view(4 * rank, MPI.INT, column)
        column.Free()                               # the view keeps its own
        for round_ in range(4):
            f.Write_at_all(0, np.arange(count, dtype="i") * 10 + rank + round_)
        comm.Barrier()
        mine = np.zeros(count, "i")
        f.Read_at_all(0, mine)
        assert (mine == np.arange(count) * 10 + rank + 3).all()
        disp, etype, filetype, datarep = f.Get_view()
        assert (disp, etype, datarep) == (4 * rank, MPI.INT, "native")
        assert filetype.extent == 4 * nprocs and not filetype.is_predefined
        filetype.Free()
        assert f.Get_byte_offset(5) == 4 * rank + 5 * 4 * nprocs
        f.Set_view(0, MPI.INT)
        whole = np.zeros(count * nprocs, "i")
        f.Read_all(whole)
        f.Close()
        return whole.reshape(count, nprocs)
    for whole in shmrma.launch(body, nprocs, timeout=75):
        expected = np.arange(count).reshape(-1, 1) * 10 + np.arange(nprocs) + 3
        assert (whole == expected).all()


def test_views_with_gaps_in_memory_and_file(tmp_path):
    """A strided memory datatype and a vector filetype; the stream ends in a hole,
    where SEEK_END lands on the next data."""
    f = MPI.File.Open(MPI.COMM_SELF, str(tmp_path / "f"), RDWR_NEW)
    every_other = MPI.INT.Create_vector(3, 1, 2).Commit()
    filetype = MPI.INT.Create_vector(2, 1, 3).Commit()     # ints 0 and 3 of 4
    f.Set_view(4, MPI.INT, filetype)
    memory = np.arange(6, dtype="i")
    f.Write([memory, 1, every_other])                       # 0, 2, 4
    raw = np.frombuffer((tmp_path / "f").read_bytes(), "i")
    # from byte 4, tiles of extent 4 ints holding their ints 0 and 3: file ints 1, 4,
    # then 5 (tile 1's first); the file ends there, before tile 1's second
    assert raw.tolist() == [0, 0, 0, 0, 2, 4]
    f.Seek(0, MPI.SEEK_END)
    assert f.Get_position() == 3
    back = np.zeros(6, "i")
    f.Read_at(0, [back, 1, every_other])
    assert back.tolist() == [0, 0, 2, 0, 4, 0]
    assert f.Get_type_extent(MPI.DOUBLE) == 8
    f.Close()


def test_set_view_errors_change_nothing(tmp_path):
    f = MPI.File.Open(MPI.COMM_SELF, str(tmp_path / "f"), RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
    f.Set_view(4, MPI.INT)
    f.Seek(2)
    uncommitted = MPI.INT.Create_contiguous(2)
    three_bytes = MPI.BYTE.Create_contiguous(3).Commit()
    for error_class, args in ((MPI.ERR_UNSUPPORTED_DATAREP, (0, MPI.INT, MPI.INT, "foo")),
                              (MPI.ERR_UNSUPPORTED_DATAREP, (0, MPI.LONG, MPI.LONG, "external32")),
                              (MPI.ERR_TYPE, (0, MPI.INT, uncommitted)),
                              (MPI.ERR_ARG, (0, MPI.INT, three_bytes)),
                              (MPI.ERR_ARG, (-4, MPI.INT)),
                              (MPI.ERR_ARG, (MPI.DISPLACEMENT_CURRENT, MPI.INT))):
        with raises_mpi(error_class):
            f.Set_view(*args)
    assert f.Get_view()[0] == 4 and f.Get_position() == 2
    f.Set_view(0, MPI.INT, MPI.INT, "internal")     # MPICH names it native
    assert f.Get_view()[3] == "native" and f.Get_position() == 0
    f.Close()


def test_external32_views(tmp_path):
    """external32 in a view: big-endian in the file, native in memory; a type whose
    external32 size differs from memory (C long: 4 bytes) is ERR_UNSUPPORTED_DATAREP,
    in the view or in a call's buffer, and moves no pointer."""
    path = tmp_path / "f"
    f = MPI.File.Open(MPI.COMM_SELF, str(path), RDWR_NEW)
    f.Set_view(0, MPI.INT, MPI.INT, "external32")
    assert f.Get_view()[3] == "external32"
    pairs = MPI.Datatype.Create_struct([1, 1], [0, 4], [MPI.INT, MPI.FLOAT]).Commit()
    f.Write([np.array([1, 2], "i"), MPI.INT])
    f.Write([np.array([(3, 0.5)], "i4,f4"), 1, pairs])     # one struct: two runs
    assert path.read_bytes() == bytes([0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0x3F, 0, 0, 0])
    back = np.zeros(1, "i4,f4")
    f.Read_at(2, [back, 1, pairs])
    assert back.tolist() == [(3, 0.5)]
    assert f.Get_type_extent(MPI.LONG) == 4 and f.Get_type_extent(MPI.INT) == 4
    with raises_mpi(MPI.ERR_UNSUPPORTED_DATAREP):
        f.Write(np.array([5], "l"))
    with raises_mpi(MPI.ERR_TYPE):
        f.Get_type_extent(MPI.INT.Create_contiguous(2))
    assert f.Get_position() == 4 and f.Get_size() == 16
    f.Close()


def test_register_datarep(tmp_path):
    """Register_datarep: the name once only (ERR_DUP_DATAREP); its write_fn and read_fn
    convert each call's data; None copies the bytes; its extent_fn must keep the
    memory extents; a conversion that raises is ERR_CONVERSION."""
    calls = []

    def write_fn(userbuf, datatype, count, filebuf, position):
        calls.append((datatype, count, position))
        np.frombuffer(filebuf, "i4", count)[:] = np.frombuffer(userbuf, "i4", count) + 100

    def read_fn(userbuf, datatype, count, filebuf, position):
        np.frombuffer(userbuf, "i4", count)[:] = np.frombuffer(filebuf, "i4", count) - 100

    def extent_fn(datatype):
        return datatype.extent

    MPI.Register_datarep("shmrma-test-plus100", read_fn, write_fn, extent_fn)
    MPI.Register_datarep("shmrma-test-plain", None, None, extent_fn)
    MPI.Register_datarep("shmrma-test-wide", None, None, lambda datatype: 2 * datatype.extent)
    MPI.Register_datarep("shmrma-test-broken", None, lambda *args: 1 / 0, extent_fn)
    with raises_mpi(MPI.ERR_DUP_DATAREP):
        MPI.Register_datarep("shmrma-test-plain", None, None, extent_fn)
    with raises_mpi(MPI.ERR_DUP_DATAREP):
        MPI.Register_datarep("external32", None, None, extent_fn)
    path = tmp_path / "f"
    f = MPI.File.Open(MPI.COMM_SELF, str(path), RDWR_NEW)
    f.Set_view(0, MPI.INT, MPI.INT, "shmrma-test-plus100")
    f.Write(np.array([1, 2, 3], "i4"))
    assert calls == [(MPI.INT, 3, 0)]
    assert np.frombuffer(path.read_bytes(), "i4").tolist() == [101, 102, 103]
    back = np.zeros(3, "i4")
    f.Read_at(0, back)
    assert back.tolist() == [1, 2, 3] and f.Get_view()[3] == "shmrma-test-plus100"
    f.Set_view(0, MPI.INT, MPI.INT, "shmrma-test-plain")
    f.Read_at(0, back)
    assert back.tolist() == [101, 102, 103]
    with raises_mpi(MPI.ERR_UNSUPPORTED_DATAREP):
        f.Set_view(0, MPI.INT, MPI.INT, "shmrma-test-wide")
    f.Set_view(0, MPI.INT, MPI.INT, "shmrma-test-broken")
    for write in (f.Write, f.Write_shared, f.Write_ordered):
        with raises_mpi(MPI.ERR_CONVERSION):
            write(np.array([1], "i4"))
    assert (f.Get_size(), f.Get_position(), f.Get_position_shared()) == (12, 0, 0)
    f.Close()


# --- split collectives, atomicity, info ----------------------------------------------

@pytest.mark.timeout(60)
def test_split_collectives(tmp_path):
    path = str(tmp_path / "f")

    def body():
        rank = MPI.COMM_WORLD.rank
        f = opened(path, RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
        data = np.full(4, rank, "i8")
        f.Write_ordered_begin(data)
        expect(MPI.ERR_IO, f.Write_all_begin, data)          # one at a time
        expect(MPI.ERR_IO, f.Write_all_end, data)            # not the one begun
        status = MPI.Status()
        f.Write_ordered_end(data, status)
        assert status.Get_count(MPI.INT64_T) == 4
        expect(MPI.ERR_IO, f.Read_at_all_end, data)          # none begun
        back = np.zeros(4, "i8")
        f.Read_at_all_begin(32 * rank, back)
        f.Read_at_all_end(back, status)
        assert back.tolist() == [rank] * 4 and status.Get_count(MPI.INT64_T) == 4
        f.Close()
        return True
    assert all(shmrma.launch(body, 3, timeout=45))


def test_atomicity_info_sync(tmp_path):
    f = MPI.File.Open(MPI.COMM_SELF, str(tmp_path / "f"), RDWR_NEW,
                      MPI.Info.Create({"access_style": "read_once"}))
    assert f.Get_atomicity() is False
    f.atomicity = True
    f.Write_at(0, b"atomic")
    buf = bytearray(6)
    f.Read_at(0, buf)
    assert f.atomicity is True and buf == b"atomic"
    f.Sync()
    f.Set_info(MPI.Info.Create({"cb_nodes": "1"}))
    assert dict(f.Get_info().items()) == {"access_style": "read_once", "cb_nodes": "1"}
    f.Close()


# --- error handlers ---------------------------------------------------------------------

def test_error_handlers_on_files(tmp_path):
    assert MPI.FILE_NULL.Get_errhandler() == MPI.ERRORS_RETURN
    f = MPI.File.Open(MPI.COMM_SELF, str(tmp_path / "f"), RDWR_NEW | MPI.MODE_DELETE_ON_CLOSE)
    assert f.Get_errhandler() == MPI.ERRORS_RETURN
    seen = []
    handler = MPI.File.Create_errhandler(lambda file, code: seen.append((file, code)))
    f.Set_errhandler(handler)
    assert f.Get_errhandler() == handler
    with raises_mpi(MPI.ERR_ARG):
        f.Seek(-1)                          # the handler runs, then the call raises
    f.Call_errhandler(MPI.ERR_OTHER)
    assert seen == [(f, MPI.ERR_ARG), (f, MPI.ERR_OTHER)]
    with pytest.raises(ValueError):
        pickle.dumps(handler)
    f.Set_errhandler(MPI.ERRORS_RETURN)
    with raises_mpi(MPI.ERR_ARG):
        f.Set_errhandler(MPI.ERRHANDLER_NULL)
    MPI.FILE_NULL.Set_errhandler(handler)      # Open and Delete report to FILE_NULL's
    try:
        with raises_mpi(MPI.ERR_NO_SUCH_FILE):
            MPI.File.Open(MPI.COMM_SELF, str(tmp_path / "missing"))
        with raises_mpi(MPI.ERR_NO_SUCH_FILE):
            MPI.File.Delete(str(tmp_path / "missing"))
    finally:
        MPI.FILE_NULL.Set_errhandler(MPI.ERRORS_RETURN)
    assert seen[2:] == [(MPI.FILE_NULL, MPI.ERR_NO_SUCH_FILE)] * 2
    handler.Free()
    assert handler == MPI.ERRHANDLER_NULL
    f.Close()
    made = [MPI.File.Create_errhandler(lambda file, code: None) for _ in range(32)]
    with pytest.raises(RuntimeError):
        MPI.File.Create_errhandler(lambda file, code: None)
    for made_handler in made:
        made_handler.Free()


def test_errors_are_fatal_on_a_file_ends_the_job(tmp_path):
    program = tmp_path / "fatal.py"
    program.write_text(
        "from shmrma import MPI\n"
        "f = MPI.File.Open(MPI.COMM_WORLD, %r, MPI.MODE_RDWR | MPI.MODE_CREATE)\n"
        "f.Set_errhandler(MPI.ERRORS_ARE_FATAL)\n"
        "if MPI.COMM_WORLD.rank == 1:\n"
        "    f.Seek(-1)\n"
        "MPI.COMM_WORLD.Barrier()\n" % str(tmp_path / "data"))
    result = subprocess.run([sys.executable, "-m", "shmrma.run", "-n", "2", "--timeout", "30",
                             str(program)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "File.Seek" in result.stderr
