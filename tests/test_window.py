"""Windows: creation of every built flavor, layout, Shared_query, attributes, info,
group, names, error handlers, Free, creation errors and resource use.

Rules: MPI-3.1 §11.2 (R1-R33 in docs/rules.md), the windows of docs/api.md; a full
/dev/shm is an error, never SIGBUS; a creation error on one rank reaches every rank;
resources stay flat over many windows; no unmap while a view is exported; a size-0
rank gets its would-be address; Shared_query(PROC_NULL) works with one process;
alloc_shared_noncontig is honoured; bases are aligned; atomics survive re-creation.
Every multi-rank body runs under ``shmrma.launch`` with a timeout.
"""
import gc
import mmap
import os
import time

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.core import segments

from mpitest import job_segments, raises_mpi

PAGE = mmap.PAGESIZE


# --- helpers (run inside the ranks) ---------------------------------------------------

def expect(error_class, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` must raise MPI.Exception of ``error_class``; returns it."""
    try:
        fn(*args, **kwargs)
    except MPI.Exception as exc:
        assert exc.Get_error_class() == error_class, (
            "expected error class %d, got %d: %s" % (error_class, exc.Get_error_class(), exc))
        return exc
    raise AssertionError("%r did not raise MPI.Exception of class %d" % (fn, error_class))


def open_fds():
    """{(fd, what it points to)} of this process."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add((fd, os.readlink("/proc/self/fd/" + fd)))
        except OSError:
            pass    # the listing's own fd, closed by now
    return found


def new_fds(before):
    """How many fds are open now that were not in ``before`` (open_fds()). Counting
    only new ones: a forked rank may close an fd it inherited, which is no leak."""
    return len(open_fds() - before)


def map_lines():
    """Mappings of shared-memory segments in /proc/self/maps: what a window that is not
    unmapped leaves behind. Anonymous mappings are not counted: malloc and Python's
    arenas grow and split them over 10^4 windows whatever the windows do (a forked
    rank's [heap] line, an arena mmapped one loop later)."""
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if " /dev/shm/" in line)


def job_segment_names():
    """The job's names in /dev/shm but the pooled collective areas (mpitest)."""
    return job_segments()


def create(flavor, size, disp_unit=1, info=None, comm=None):
    """A window of ``flavor`` ("allocate", "shared", "create"); returns (win, mem)."""
    comm = comm or MPI.COMM_WORLD
    info = MPI.INFO_NULL if info is None else info
    if flavor == "allocate":
        return MPI.Win.Allocate(size, disp_unit, info, comm), None
    if flavor == "shared":
        return MPI.Win.Allocate_shared(size, disp_unit, info, comm), None
    mem = MPI.Alloc_mem(size)
    return MPI.Win.Create(mem, disp_unit, info, comm), mem


def destroy(win, mem):
    win.Free()
    if mem is not None:
        MPI.Free_mem(mem)


FLAVORS = ["allocate", "shared", "create"]
FLAVOR_CONSTANT = {"allocate": MPI.WIN_FLAVOR_ALLOCATE, "shared": MPI.WIN_FLAVOR_SHARED,
                   "create": MPI.WIN_FLAVOR_CREATE}


# --- creation ---------------------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("nprocs", [1, 2, 3, 4])
def test_every_flavor_creates_and_works_at_1_to_4_ranks(nprocs):
    """R1, R2, R6, R27: each built flavor is collective, gives every member a usable
    window (its size differing per rank), reports its flavor, and a Put
    around the ring lands at the target's displacement."""
    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        right = (rank + 1) % size
        seen = {}
        for flavor in FLAVORS:
            nbytes = 8 * (rank + 2)
            win, mem = create(flavor, nbytes, 8)
            assert win.flavor == FLAVOR_CONSTANT[flavor]
            assert win.Get_attr(MPI.WIN_CREATE_FLAVOR) == FLAVOR_CONSTANT[flavor]
            assert win.Get_attr(MPI.WIN_SIZE) == nbytes
            assert win.Get_attr(MPI.WIN_DISP_UNIT) == 8
            assert win.group_size == size and win.group_rank == rank
            local = np.frombuffer(win.tomemory(), dtype="i8")
            local[:] = -1
            win.Fence()
            win.Put(np.array([100 * rank + 7], dtype="i8"), right, 1)
            win.Fence()
            seen[flavor] = local.tolist()
            destroy(win, mem)
        return seen
    results = shmrma.launch(body, nprocs, timeout=45)
    for rank, seen in enumerate(results):
        left = (rank - 1) % nprocs
        for flavor in FLAVORS:
            expected = [-1] * (rank + 2)
            expected[1] = 100 * left + 7
            assert seen[flavor] == expected, (rank, flavor, seen[flavor])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["first", "middle", "last", "all"])
def test_shared_size_zero_rank_layout_and_query(where):
    """R2, R8, R11: a size-0 rank (first, middle, last, or every rank) takes
    no space; Shared_query gives each rank's exact size and disp_unit, PROC_NULL gives
    the lowest rank with size > 0 (or a zero-length buffer when all are 0); stores
    through those buffers are seen by every rank after a Barrier; RMA of any data to a
    size-0 rank is ERR_RMA_RANGE, an empty Put to it is fine."""
    sizes = {"first": [0, 128, 64], "middle": [64, 0, 128], "last": [128, 64, 0],
             "all": [0, 0, 0]}[where]
    units = [8, 4, 2]

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate_shared(sizes[rank], units[rank], comm=comm)
        assert win.Get_attr(MPI.WIN_SIZE) == sizes[rank]
        assert len(win.tomemory()) == sizes[rank]
        views = [win.Shared_query(r) for r in range(3)]
        for r, (buf, unit) in enumerate(views):
            assert len(buf) == sizes[r] and unit == units[r]
        nonzero = [r for r in range(3) if sizes[r]]
        for a, b in zip(nonzero, nonzero[1:]):
            # contiguous (R8): the next non-empty segment starts right after
            assert views[b][0].address == views[a][0].address + sizes[a]
        buf, unit = win.Shared_query(MPI.PROC_NULL)
        if nonzero:
            first = nonzero[0]
            assert (buf.address, len(buf), unit) == (views[first][0].address,
                                                     sizes[first], units[first])
        else:
            assert len(buf) == 0
        # stores through the local buffer, loads through Shared_query of another rank
        if sizes[rank]:
            win.tomemory()[:] = rank + 1
        comm.Barrier()
        contents = [bytes(views[r][0]) for r in range(3)]
        comm.Barrier()
        win.Lock_all()
        empty_rank = sizes.index(0)
        if nonzero:
            win.Put(bytearray(0), empty_rank)  # nothing to write: legal
        expect(MPI.ERR_RMA_RANGE, win.Put, bytearray(1), empty_rank)
        expect(MPI.ERR_RMA_RANGE, win.Get, bytearray(1), empty_rank)
        win.Unlock_all()
        win.Free()
        return contents
    for contents in shmrma.launch(body, 3, timeout=30):
        assert contents == [bytes([r + 1]) * sizes[r] for r in range(3)]


@pytest.mark.timeout(60)
def test_contiguous_layout_and_aligned_bases():
    """R8, A35: without alloc_shared_noncontig, rank i's segment starts at
    the byte after rank i-1's (sizes here are multiples of 64, so exact contiguity and
    64-byte alignment agree), the first base is page-aligned, and with odd sizes every
    base is still 64-byte aligned and segments follow in rank order without overlap."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        out = []
        for sizes in ([64, 192, 128, 64], [8, 24, 1, 40]):
            win = MPI.Win.Allocate_shared(sizes[rank], 1, comm=comm)
            addresses = [win.Shared_query(r)[0].address for r in range(4)]
            out.append(addresses)
            assert addresses[0] % PAGE == 0
            assert all(a % 64 == 0 for a in addresses), addresses
            for r in range(1, 4):
                assert addresses[r] >= addresses[r - 1] + sizes[r - 1], addresses
            if all(s % 64 == 0 for s in sizes):
                for r in range(1, 4):
                    assert addresses[r] == addresses[r - 1] + sizes[r - 1], addresses
            assert win.Get_attr(MPI.WIN_BASE) == addresses[rank]
            win.Free()
        return out
    shmrma.launch(body, 4, timeout=30)


@pytest.mark.timeout(60)
def test_alloc_shared_noncontig_page_aligned_and_echoed():
    """R9: alloc_shared_noncontig=true page-aligns every non-empty rank's
    segment, Shared_query still gives the right size, a size-0 rank gets a zero-length
    buffer, and Get_info echoes the key (false by default)."""
    sizes = [100, 0, 5000]

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        info = MPI.Info.Create({"alloc_shared_noncontig": "true"})
        win = MPI.Win.Allocate_shared(sizes[rank], 1, info, comm)
        info.Free()
        for r in range(3):
            buf, unit = win.Shared_query(r)
            assert len(buf) == sizes[r] and unit == 1
            if sizes[r]:
                assert buf.address % PAGE == 0, (r, hex(buf.address))
        buf, _ = win.Shared_query(MPI.PROC_NULL)
        assert buf.address == win.Shared_query(0)[0].address and len(buf) == 100
        assert win.Get_info().Get("alloc_shared_noncontig") == "true"
        # the segments are still shared
        win.tomemory()[:] = 10 + rank
        comm.Barrier()
        last = bytes(win.Shared_query(2)[0][:3])
        comm.Barrier()
        win.Free()
        plain = MPI.Win.Allocate_shared(8, 1, comm=comm)
        default = plain.Get_info().Get("alloc_shared_noncontig")
        plain.Free()
        return last, default
    for last, default in shmrma.launch(body, 3, timeout=30):
        assert last == bytes([12, 12, 12])
        assert default == "false"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", ["allocate", "create", "shared"])
def test_shared_query_every_rank_and_proc_null_on_each_flavor(flavor):
    """R7, R11, R12: Shared_query works on ALLOCATE, CREATE and SHARED
    windows (MPI 4.1): for every rank it gives that rank's memory and disp_unit,
    PROC_NULL gives the lowest rank with size > 0, a store by one rank is seen by the
    others after a Barrier, and a rank outside the group is ERR_RANK."""
    sizes = [0, 24, 16]
    units = [4, 8, 2]

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win, mem = create(flavor, sizes[rank], units[rank])
        views = [win.Shared_query(r) for r in range(3)]
        assert [(len(b), u) for b, u in views] == list(zip(sizes, units))
        buf, unit = win.Shared_query(MPI.PROC_NULL)
        assert (buf.address, len(buf), unit) == (views[1][0].address, 24, 8)
        if sizes[rank]:
            assert views[rank][0].address == win.Get_attr(MPI.WIN_BASE)
        # rank 1 writes rank 2's memory through its Shared_query buffer
        if rank == 1:
            views[2][0][:] = bytes(range(16))
        comm.Barrier()
        seen = bytes(views[2][0])
        for bad in (3, -7, 100):
            expect(MPI.ERR_RANK, win.Shared_query, bad)
        del buf, views
        comm.Barrier()
        destroy(win, mem)
        return seen
    assert shmrma.launch(body, 3, timeout=30) == [bytes(range(16))] * 3


@pytest.mark.timeout(60)
def test_shared_query_single_rank():
    """R11: with one process, Shared_query(PROC_NULL) returns its own
    segment, and a size-0 one-rank window gives a zero-length buffer."""
    def body():
        win = MPI.Win.Allocate_shared(32, 4, comm=MPI.COMM_WORLD)
        buf, unit = win.Shared_query(MPI.PROC_NULL)
        same = buf.address == win.Get_attr(MPI.WIN_BASE) and len(buf) == 32 and unit == 4
        del buf
        win.Free()
        empty = MPI.Win.Allocate_shared(0, 1, comm=MPI.COMM_SELF)
        buf, _ = empty.Shared_query(MPI.PROC_NULL)
        zero = len(buf) == 0 and len(empty.Shared_query(0)[0]) == 0
        del buf
        empty.Free()
        return same, zero
    assert shmrma.launch(body, 1, timeout=20) == [(True, True)]


@pytest.mark.timeout(60)
def test_stores_seen_by_every_rank_after_barrier():
    """R7, R12: each rank stores its id through its own segment, a Barrier, then every
    rank loads every segment through Shared_query and sees the ids."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        win = MPI.Win.Allocate_shared(8 * 16, 8, comm=comm)
        np.frombuffer(win.tomemory(), dtype="i8")[:] = rank * 1000 + np.arange(16)
        comm.Barrier()
        seen = [np.frombuffer(win.Shared_query(r)[0], dtype="i8").tolist() for r in range(3)]
        comm.Barrier()
        win.Free()
        return seen
    for seen in shmrma.launch(body, 3, timeout=30):
        assert seen == [[r * 1000 + i for i in range(16)] for r in range(3)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_size_zero_buffers_are_writable_like_mpi4py(flavor):
    """R2: the zero-length buffer of a size-0 rank is writable (readonly
    False), as mpi4py's, so generic code like ``win.tomemory()[:] = 0`` works."""
    def body():
        win, mem = create(flavor, 0)
        mine = win.tomemory()
        peer = win.Shared_query(1 - MPI.COMM_WORLD.Get_rank())[0]
        flags = (mine.readonly, peer.readonly, len(mine))
        mine[:] = 0
        win.Lock_all()
        win.Put(bytearray(0), 0)  # an empty Put to a size-0 rank is legal
        win.Unlock_all()
        del mine, peer
        destroy(win, mem)
        return flags
    assert shmrma.launch(body, 2, timeout=20) == [(False, False, 0)] * 2


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_buffer_protocol_exports_the_local_window_memory(flavor):
    """The buffer protocol, R1: memoryview(win) and numpy.frombuffer(win)
    give this rank's window memory, bytes of format "B", writable, as mpi4py's; a
    store through it is what the peer's Get reads; a size-0 rank exports 0 bytes."""
    def body():
        rank = MPI.COMM_WORLD.Get_rank()
        win, mem = create(flavor, 16 * rank, 8)
        view = memoryview(win)
        shape = (view.format, view.itemsize, view.nbytes, view.readonly)
        if rank == 1:
            np.frombuffer(win, dtype="i8")[:] = [7, 9]
        MPI.COMM_WORLD.Barrier()
        got = np.zeros(2, "i8")
        if rank == 0:
            win.Lock(1, MPI.LOCK_SHARED)
            win.Get(got, 1)
            win.Unlock(1)
        view.release()
        destroy(win, mem)
        return shape, got.tolist()
    assert shmrma.launch(body, 2, timeout=20) == [(("B", 1, 0, False), [7, 9]),
                                                  (("B", 1, 16, False), [0, 0])]


def test_buffer_protocol_of_dynamic_and_null_windows():
    """A dynamic window exports 0 bytes (mpi4py on MPICH does the same); WIN_NULL
    raises ERR_WIN, as mpi4py's memoryview(MPI.WIN_NULL) raises MPI.Exception."""
    win = MPI.Win.Create_dynamic(MPI.INFO_NULL, MPI.COMM_SELF)
    assert memoryview(win).nbytes == 0
    win.Free()
    with raises_mpi(MPI.ERR_WIN):
        memoryview(MPI.WIN_NULL)


# --- attributes, info, group, names, error handler ----------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", FLAVORS)
def test_attributes(flavor):
    """R25, R26, R27, A36: WIN_BASE is the local base, WIN_SIZE the requested size
    (not rounded up), WIN_DISP_UNIT this rank's unit, WIN_CREATE_FLAVOR the creating
    call and WIN_MODEL WIN_UNIFIED; attrs/flavor/model agree, and nothing changes
    after communication."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        nbytes = 10 + 3 * rank
        unit = 1 + rank
        win, mem = create(flavor, nbytes, unit)
        base = win.tomemory().address
        if mem is not None:
            assert base == mem.address
        before = (win.Get_attr(MPI.WIN_BASE), win.Get_attr(MPI.WIN_SIZE),
                  win.Get_attr(MPI.WIN_DISP_UNIT), win.Get_attr(MPI.WIN_CREATE_FLAVOR),
                  win.Get_attr(MPI.WIN_MODEL))
        assert before == (base, nbytes, unit, FLAVOR_CONSTANT[flavor], MPI.WIN_UNIFIED)
        assert win.attrs == (base, nbytes, unit)
        assert win.flavor == FLAVOR_CONSTANT[flavor] and win.model == MPI.WIN_UNIFIED
        win.Fence()
        win.Put(bytearray(b"\x05"), 1 - rank)
        win.Fence()
        after = (win.Get_attr(MPI.WIN_BASE), win.Get_attr(MPI.WIN_SIZE),
                 win.Get_attr(MPI.WIN_DISP_UNIT), win.Get_attr(MPI.WIN_CREATE_FLAVOR),
                 win.Get_attr(MPI.WIN_MODEL))
        assert after == before
        destroy(win, mem)
        return True
    assert shmrma.launch(body, 2, timeout=30) == [True, True]
    assert len({MPI.WIN_FLAVOR_CREATE, MPI.WIN_FLAVOR_ALLOCATE, MPI.WIN_FLAVOR_DYNAMIC,
                MPI.WIN_FLAVOR_SHARED}) == 4
    assert MPI.WIN_UNIFIED != MPI.WIN_SEPARATE


DEFAULT_HINTS = {"no_locks": "false", "accumulate_ordering": "rar,raw,war,waw",
                 "accumulate_ops": "same_op_no_op", "same_size": "false",
                 "same_disp_unit": "false"}


@pytest.mark.timeout(60)
def test_info_defaults_echo_and_unknown_keys():
    """R29, R31, R32, A45: Get_info reports the defaults of every honoured
    hint, echoes the values given at creation (Info or plain dict), ignores unknown keys
    without error, returns a new object each time, and a no_locks window can still be
    locked."""
    given = {"no_locks": "true", "accumulate_ordering": "rar,raw", "accumulate_ops":
             "same_op", "same_size": "true", "same_disp_unit": "true",
             "shmrma_no_such_hint": "42"}

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        out = {}
        for flavor in FLAVORS:
            win, mem = create(flavor, 16, 8)
            info = win.Get_info()
            out[flavor + "-default"] = dict(info.items())
            info.Set("no_locks", "true")  # a new object: the window keeps its hints
            assert win.Get_info().Get("no_locks") == "false"
            info.Free()
            destroy(win, mem)
            win, mem = create(flavor, 16, 8, info=dict(given))
            out[flavor + "-given"] = dict(win.Get_info().items())
            win.Lock(1 - rank)  # A45: the hint does not forbid locking
            win.Put(np.array([rank], dtype="i8"), 1 - rank)
            win.Unlock(1 - rank)
            destroy(win, mem)
        info = MPI.Info.Create(given)
        win = MPI.Win.Allocate_shared(8, 1, info, comm)
        info.Free()
        out["shared-info"] = dict(win.Get_info().items())
        win.Free()
        return out
    for out in shmrma.launch(body, 2, timeout=30):
        for flavor in FLAVORS:
            default = out[flavor + "-default"]
            for key, value in DEFAULT_HINTS.items():
                assert default.get(key) == value, (flavor, key, default)
            echoed = out[flavor + "-given"]
            for key, value in given.items():
                if key.startswith("shmrma_"):
                    assert key not in echoed
                else:
                    assert echoed.get(key) == value, (flavor, key, echoed)
        assert "shmrma_no_such_hint" not in out["shared-info"]
        assert out["shared-info"]["same_size"] == "true"
        assert out["shared-info"]["alloc_shared_noncontig"] == "false"


@pytest.mark.timeout(60)
def test_set_info_keeps_unmentioned_keys():
    """R30: Set_info changes only the keys it names; a hint set at creation survives."""
    def body():
        win = MPI.Win.Allocate(8, 1, {"accumulate_ordering": "rar"}, MPI.COMM_WORLD)
        win.Set_info({"no_locks": "true"})
        info = win.Get_info()
        result = (info.Get("accumulate_ordering"), info.Get("no_locks"))
        win.Free()
        return result
    assert shmrma.launch(body, 2, timeout=20) == [("rar", "true")] * 2


@pytest.mark.timeout(60)
def test_accumulate_ordering_is_normalised_and_validated():
    """R32, MPI-3.1 §11.7.2: accumulate_ordering is reported normalised (tokens in
    the order rar,raw,war,waw), 'none' as given, and a value with an unknown token is
    ignored in favour of the default."""
    def body():
        out = []
        for value in ("waw,rar", "none", "rar,bogus"):
            win = MPI.Win.Allocate(8, 1, {"accumulate_ordering": value}, MPI.COMM_WORLD)
            out.append(win.Get_info().Get("accumulate_ordering"))
            win.Free()
        return out
    assert shmrma.launch(body, 1, timeout=20) == [["rar,waw", "none", "rar,raw,war,waw"]]


@pytest.mark.timeout(60)
def test_default_communicator_is_comm_self():
    """R1: comm defaults to COMM_SELF, so each rank gets a window of its
    own."""
    def body():
        win = MPI.Win.Allocate(8, 8)
        shared = MPI.Win.Allocate_shared(8, 8)
        sizes = (win.group_size, win.group_rank, shared.group_size, len(shared.Shared_query(0)[0]))
        win.Free()
        shared.Free()
        return sizes
    assert shmrma.launch(body, 2, timeout=20) == [(1, 0, 1, 8)] * 2


@pytest.mark.timeout(60)
def test_group_and_group_properties_on_a_subcommunicator():
    """R28: Get_group returns the creating communicator's members in order (here the
    odd world ranks of 4), group_size and group_rank match the communicator, and the
    returned group is the caller's to free."""
    def body():
        world = MPI.COMM_WORLD
        rank = world.Get_rank()
        sub = world.Split(rank % 2, rank)
        win = MPI.Win.Allocate(8, 1, comm=sub)
        group = win.Get_group()
        world_group = world.Get_group()
        members = MPI.Group.Translate_ranks(group, list(range(group.Get_size())), world_group)
        facts = (group.Get_size(), group.Get_rank(), win.group_size, win.group_rank,
                 list(members), MPI.Group.Compare(group, sub.Get_group()))
        assert win.group.Get_size() == group.Get_size()
        group.Free()
        world_group.Free()
        win.Free()
        sub.Free()
        return facts
    results = shmrma.launch(body, 4, timeout=30)
    for rank, (size, grank, gsize, wrank, members, compare) in enumerate(results):
        assert (size, grank, gsize, wrank) == (2, rank // 2, 2, rank // 2)
        assert members == [rank % 2, rank % 2 + 2]
        assert compare == MPI.IDENT


@pytest.mark.timeout(60)
def test_names():
    """No numbered rule covers names: a window's name starts empty,
    Set_name/Get_name/name round-trip, and each window has its own name."""
    def body():
        a = MPI.Win.Allocate(8, comm=MPI.COMM_WORLD)
        b = MPI.Win.Allocate(8, comm=MPI.COMM_WORLD)
        first = a.Get_name()
        a.Set_name("halo window")
        b.name = "counters"
        names = (first, a.Get_name(), a.name, b.Get_name())
        a.Free()
        b.Free()
        return names
    assert shmrma.launch(body, 2, timeout=20) == [("", "halo window", "halo window",
                                                   "counters")] * 2


@pytest.mark.timeout(60)
def test_errhandler_set_and_get():
    """R33, A39: the default handler is ERRORS_RETURN (errors raise MPI.Exception);
    Set_errhandler(ERRORS_ARE_FATAL) is reported by Get_errhandler, and switching back
    to ERRORS_RETURN makes errors raise again."""
    def body():
        win = MPI.Win.Allocate(8, comm=MPI.COMM_WORLD)
        default = win.Get_errhandler() == MPI.ERRORS_RETURN
        expect(MPI.ERR_RMA_SYNC, win.Put, bytearray(1), 0)
        win.Set_errhandler(MPI.ERRORS_ARE_FATAL)
        fatal = win.Get_errhandler() == MPI.ERRORS_ARE_FATAL
        win.Set_errhandler(MPI.ERRORS_RETURN)
        back = win.Get_errhandler() == MPI.ERRORS_RETURN
        expect(MPI.ERR_RMA_SYNC, win.Put, bytearray(1), 0)
        win.Free()
        return default, fatal, back
    assert shmrma.launch(body, 2, timeout=20) == [(True, True, True)] * 2


def test_errhandler_handles_free_to_null_and_windows_do_not_pickle():
    """As mpi4py's test_win: Get_errhandler gives a handle of its own, equal to the
    handler set, which Free turns into ERRHANDLER_NULL (the MPI constants stay);
    a window pickles to ValueError, WIN_NULL by name and named 'MPI_WIN_NULL'."""
    import pickle
    win = MPI.Win.Allocate(8, comm=MPI.COMM_SELF)
    for handler in (MPI.ERRORS_ARE_FATAL, MPI.ERRORS_RETURN):
        before = win.Get_errhandler()
        win.Set_errhandler(handler)
        got = win.Get_errhandler()
        assert got == handler and got is not handler
        got.Free()
        assert got == MPI.ERRHANDLER_NULL and not got and handler != MPI.ERRHANDLER_NULL
        win.Set_errhandler(before)
        before.Free()
        assert before == MPI.ERRHANDLER_NULL
    with pytest.raises(ValueError, match="cannot pickle"):
        pickle.dumps(win)
    win.Free()
    assert pickle.loads(pickle.dumps(MPI.WIN_NULL)) is MPI.WIN_NULL
    assert MPI.WIN_NULL.Get_name() == "MPI_WIN_NULL" and win.Get_name() == "MPI_WIN_NULL"


# --- Free --------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_free_makes_the_handle_null_and_every_call_err_win():
    """R21: Free turns the handle into WIN_NULL; any later use of it (communication,
    synchronization, queries, a second Free) raises ERR_WIN; free() on it is a no-op.
    Get_name is mpi4py's exception: it names the null handle 'MPI_WIN_NULL'."""
    def body():
        win = MPI.Win.Allocate_shared(16, 1, comm=MPI.COMM_WORLD)
        assert win and win != MPI.WIN_NULL
        win.Free()
        assert not win and win == MPI.WIN_NULL
        buf = bytearray(1)
        calls = [
            lambda: win.Put(buf, 0), lambda: win.Get(buf, 0), lambda: win.Accumulate(buf, 0),
            lambda: win.Get_accumulate(buf, bytearray(1), 0),
            lambda: win.Fetch_and_op(buf, bytearray(1), 0),
            lambda: win.Compare_and_swap(buf, buf, bytearray(1), 0),
            lambda: win.Rput(buf, 0), lambda: win.Fence(), lambda: win.Lock(0),
            lambda: win.Unlock(0), lambda: win.Lock_all(), lambda: win.Unlock_all(),
            lambda: win.Flush(0), lambda: win.Flush_all(), lambda: win.Sync(),
            lambda: win.Shared_query(0), lambda: win.Get_attr(MPI.WIN_BASE),
            lambda: win.Get_info(), lambda: win.Get_group(), lambda: win.Set_name("x"), lambda: win.Get_errhandler(), lambda: win.tomemory(),
            lambda: win.Free(),
        ]
        for call in calls:
            expect(MPI.ERR_WIN, call)
        win.free()
        return win.Get_name()
    assert shmrma.launch(body, 2, timeout=20) == ["MPI_WIN_NULL"] * 2


@pytest.mark.timeout(60)
def test_free_is_a_barrier():
    """R23: Free is collective: rank 0's Free does not return before rank 1 (which
    sleeps 0.3 s first) has called it."""
    def body():
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8, comm=comm)
        comm.Barrier()
        if comm.Get_rank() == 1:
            time.sleep(0.3)
            entered = time.monotonic()
            win.Free()
            return entered
        win.Free()
        return time.monotonic()
    left_rank0, entered_rank1 = shmrma.launch(body, 2, timeout=20)
    assert left_rank0 >= entered_rank1


@pytest.mark.timeout(60)
def test_free_while_a_shared_query_buffer_is_held():
    """R24: freeing a window while the program still holds a buffer from
    Shared_query/tomemory never unmaps memory in use: the buffer stays readable and
    writable, and the mapping goes once the buffer is dropped."""
    def body():
        comm = MPI.COMM_WORLD
        MPI.Win.Allocate_shared(1 << 16, 1, comm=comm).Free()  # warm up lazy imports
        gc.collect()
        baseline = map_lines()
        win = MPI.Win.Allocate_shared(1 << 16, 1, comm=comm)
        peer = win.Shared_query(1 - comm.Get_rank())[0]
        mine = win.tomemory()
        mine[:] = 7
        comm.Barrier()
        win.Free()
        mine[:4] = 9  # still mapped
        total = int(np.frombuffer(peer, dtype=np.uint8).sum())
        del peer, mine
        gc.collect()
        return total, map_lines() - baseline
    for total, extra_maps in shmrma.launch(body, 2, timeout=20):
        assert total in (7 * (1 << 16), 7 * (1 << 16) + 8)  # the peer may have stored 9s
        assert extra_maps <= 0


# --- creation errors --------------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("culprit", [0, 1, 2])
def test_bad_size_or_disp_unit_on_one_rank_fails_everywhere(flavor, culprit):
    """R4: a negative size (ERR_SIZE) or a disp_unit <= 0 (ERR_DISP) passed
    by one rank only raises that class on every rank, leaks no fd or segment, and the
    ranks can create a window right after."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        mem = MPI.Alloc_mem(16) if flavor == "create" else None
        comm.allgather(None)    # the communicator's collective area is mapped (and
        comm.Barrier()          # its name gone) before the count: it is no window's
        fds, names = open_fds(), job_segment_names()
        classes = []
        for bad_size, bad_unit, error_class in ((-1, 1, MPI.ERR_SIZE), (16, 0, MPI.ERR_DISP),
                                                (16, -8, MPI.ERR_DISP)):
            size = bad_size if rank == culprit else 16
            unit = bad_unit if rank == culprit else 1
            if flavor == "create":
                if bad_size < 0:
                    continue  # Create takes its size from the buffer
                exc = expect(error_class, MPI.Win.Create, mem, unit, comm=comm)
            elif flavor == "shared":
                exc = expect(error_class, MPI.Win.Allocate_shared, size, unit, comm=comm)
            else:
                exc = expect(error_class, MPI.Win.Allocate, size, unit, comm=comm)
            classes.append(exc.Get_error_class())
        leaked = (new_fds(fds), job_segment_names() == names)
        comm.Barrier()
        win, wmem = create(flavor, 8)  # the ranks are still in step
        destroy(win, wmem)
        if mem is not None:
            MPI.Free_mem(mem)
        return classes, leaked[0], leaked[1]
    results = shmrma.launch(body, 3, timeout=30)
    assert len({tuple(classes) for classes, _, _ in results}) == 1
    for classes, extra_fds, same_names in results:
        assert extra_fds == 0 and same_names


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flavor", ["allocate", "shared"])
def test_exhausting_dev_shm_is_err_no_mem_on_every_rank(flavor):
    """Asking for more than /dev/shm can hold (on one rank only) raises
    ERR_NO_MEM on every rank, never SIGBUS, with a message about /dev/shm; nothing is
    left behind and the next creation works."""
    stats = os.statvfs("/dev/shm")
    if not stats.f_blocks:
        pytest.skip("/dev/shm has no size limit here")
    too_big = stats.f_blocks * stats.f_frsize + (1 << 30)

    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        comm.allgather(None)    # the collective area is mapped before the count
        comm.Barrier()
        fds, names = open_fds(), job_segment_names()
        make = MPI.Win.Allocate if flavor == "allocate" else MPI.Win.Allocate_shared
        exc = expect(MPI.ERR_NO_MEM, make, too_big if rank == 1 else 8, 1, comm=comm)
        win = make(8, 1, comm=comm)
        win.Free()
        comm.Barrier()
        return "/dev/shm" in str(exc), new_fds(fds), job_segment_names() == names
    assert shmrma.launch(body, 2, timeout=30) == [(True, 0, True)] * 2


@pytest.mark.timeout(60)
def test_numpy_size_and_disp_unit_accepted():
    """R2, R4 with mpi4py's argument rules: size and disp_unit may be any integer with
    __index__, e.g. numpy.int64 from a shape computation (mpi4py + MPICH accept them)."""
    def body():
        win = MPI.Win.Allocate(np.int64(64), np.int32(8), comm=MPI.COMM_WORLD)
        attrs = (win.Get_attr(MPI.WIN_SIZE), win.Get_attr(MPI.WIN_DISP_UNIT))
        win.Free()
        return attrs
    assert shmrma.launch(body, 2, timeout=20) == [(64, 8)] * 2


# --- resources -------------------------------------------------------------------------

LOOP_WINDOWS = 10_000


@pytest.mark.timeout(660)
def test_create_and_free_10000_windows_keeps_fds_and_maps_flat():
    """R24: creating and freeing 10,000 windows (ALLOCATE, SHARED and
    CREATE in turn) at 2 ranks leaves the open fd count, the /proc/self/maps line count
    and the job's /dev/shm names where they started."""
    def body():
        comm = MPI.COMM_WORLD
        mem = MPI.Alloc_mem(64)
        for flavor in ("allocate", "shared"):  # warm every code path first
            win, _ = create(flavor, 64)
            win.Free()
        MPI.Win.Create(mem, comm=comm).Free()
        comm.Barrier()
        gc.collect()  # garbage inherited from the forking process is not ours to count
        fds, maps, names = open_fds(), map_lines(), job_segment_names()
        started = time.monotonic()
        for i in range(LOOP_WINDOWS):
            kind = i % 3
            if kind == 0:
                win = MPI.Win.Allocate(64, 8, comm=comm)
            elif kind == 1:
                win = MPI.Win.Allocate_shared(64, 8, comm=comm)
            else:
                win = MPI.Win.Create(mem, 8, comm=comm)
            win.Free()
        elapsed = time.monotonic() - started
        comm.Barrier()
        extra_fds = new_fds(fds)  # Free closes segments itself, without the collector
        gc.collect()  # maps also count heap arenas: compare with the garbage gone
        result = (extra_fds, map_lines() - maps, job_segment_names() == names)
        comm.Barrier()  # nobody frees its Alloc_mem before everyone has listed /dev/shm
        MPI.Free_mem(mem)
        return result, elapsed
    results = shmrma.launch(body, 2, timeout=600)    # a hang guard: over 100 s loaded
    for (extra_fds, extra_maps, same_names), _ in results:
        assert (extra_fds, extra_maps, same_names) == (0, 0, True)


@pytest.mark.timeout(360)
def test_create_free_cycles_keep_atomics_working():
    """After each of 1,000 create/free cycles a Fetch_and_op by every rank
    on a fresh window still counts exactly."""
    def body():
        comm = MPI.COMM_WORLD
        one = np.ones(1, dtype="i8")
        got = np.zeros(1, dtype="i8")
        totals = set()
        for _ in range(1000):
            win = MPI.Win.Allocate_shared(8 if comm.Get_rank() == 0 else 0, 8, comm=comm)
            win.Lock_all()
            win.Fetch_and_op(one, got, 0)
            win.Unlock_all()
            comm.Barrier()
            totals.add(int(np.frombuffer(win.Shared_query(0)[0], dtype="i8")[0]))
            comm.Barrier()
            win.Free()
        return totals
    assert shmrma.launch(body, 2, timeout=300) == [{2}, {2}]    # a hang guard: 50 s+ loaded


# --- Win.Create over Alloc_mem ------------------------------------------------------------

@pytest.mark.timeout(60)
def test_create_over_alloc_mem_with_per_rank_sizes_and_units():
    """R3, R2, R24, A41(a): Win.Create over MPI.Alloc_mem memory (here a slice at an
    offset of it) with size and disp_unit differing per rank: a Put at disp d to rank r
    lands at byte d*disp_unit(r) of r's memory, and the memory is the user's again
    after Free."""
    units = [1, 4, 8]

    def body():
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        whole = MPI.Alloc_mem(256)
        whole[:] = 0
        exposed = whole[32:32 + 64 * (rank + 1)]
        win = MPI.Win.Create(exposed, units[rank], comm=comm)
        assert win.Get_attr(MPI.WIN_BASE) == whole.address + 32
        assert win.Get_attr(MPI.WIN_SIZE) == 64 * (rank + 1)
        win.Fence()
        for target in range(size):
            win.Put(bytearray([10 * rank + target + 1]), target, 3 + rank)
        win.Fence()
        snapshot = bytes(whole)
        win.Free()
        whole[0] = 99  # still the user's memory
        MPI.Free_mem(whole)
        return snapshot
    results = shmrma.launch(body, 3, timeout=30)
    for target, snapshot in enumerate(results):
        expected = bytearray(256)
        for origin in range(3):
            expected[32 + (3 + origin) * units[target]] = 10 * origin + target + 1
        assert snapshot == bytes(expected)


@pytest.mark.timeout(60)
def test_create_with_size_zero_rank_over_alloc_mem():
    """R2: Win.Create with an empty buffer on one rank gives that rank size 0; the
    others' memory is reachable and RMA to the empty rank is ERR_RMA_RANGE."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        mem = MPI.Alloc_mem(0 if rank == 0 else 8)
        win = MPI.Win.Create(mem, 1, comm=comm)
        size = win.Get_attr(MPI.WIN_SIZE)
        win.Lock_all()
        expect(MPI.ERR_RMA_RANGE, win.Put, bytearray(1), 0)
        win.Put(bytearray(b"\x2a"), 1)
        win.Unlock_all()
        comm.Barrier()
        value = bytes(mem[:1])
        win.Free()
        MPI.Free_mem(mem)
        return size, value
    assert shmrma.launch(body, 2, timeout=20) == [(0, b""), (8, b"\x2a")]


@pytest.mark.timeout(60)
def test_create_over_unusable_memory_on_one_rank_fails_everywhere():
    """R4, A41: when one rank gives Win.Create memory it cannot expose (a
    read-only bytes object: ERR_BASE), every rank raises that class, nothing leaks,
    and the ranks can create a window right after."""
    def body():
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        mem = MPI.Alloc_mem(64)
        comm.allgather(None)    # the collective area is mapped before the count
        comm.Barrier()
        fds, names = open_fds(), job_segment_names()
        given = bytes(64) if rank == 1 else mem
        exc = expect(MPI.ERR_BASE, MPI.Win.Create, given, 8, comm=comm)
        leaked = (new_fds(fds), job_segment_names() == names)
        comm.Barrier()
        win = MPI.Win.Create(mem, 8, comm=comm)
        win.Free()
        MPI.Free_mem(mem)
        return ("rank 1" in str(exc) or rank == 1), leaked
    assert shmrma.launch(body, 3, timeout=30) == [(True, (0, True))] * 3


@pytest.mark.timeout(60)
def test_a_segment_no_rank_can_make_or_map_fails_on_every_rank_at_once():
    """Creation errors are collective (R1-R3 as shmrma reads them for a runtime
    that cannot always allocate): a total beyond one segment (2**62 bytes at each of 3
    ranks, or 2**70 at one) is ERR_SIZE on every rank, and a rank that cannot map the
    segment (out of file descriptors) makes every rank raise ERR_OTHER, instead of
    leaving the others waiting; afterwards windows work and nothing is left behind."""
    def body():
        import errno as errnos
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        out = []
        for size in (2**62, 2**70 if rank == 0 else 8):
            for make in (MPI.Win.Allocate, MPI.Win.Allocate_shared):
                out.append(expect(MPI.ERR_SIZE, make, size, 1, comm=comm).Get_error_class())
        real_attach = segments.Segment.attach

        def no_descriptors(*args, **kwargs):
            raise OSError(errnos.EMFILE, "Too many open files")
        if rank == 1:
            segments.Segment.attach = no_descriptors
        try:
            out.append(expect(MPI.ERR_OTHER, MPI.Win.Allocate, 64, 1, comm=comm)
                       .Get_error_class())
        finally:
            segments.Segment.attach = real_attach
        win = MPI.Win.Allocate(64, 1, comm=comm)
        win.Free()
        return out
    results = shmrma.launch(body, 3, timeout=40)
    assert results == [[MPI.ERR_SIZE] * 4 + [MPI.ERR_OTHER]] * 3
