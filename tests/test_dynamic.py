"""Dynamic windows (R14-R20, R26) and windows over private process memory (A41, issue 3)."""
import numpy as np
import pytest

import shmrma
from shmrma import MPI


def _dynamic_round_trip():
    comm = MPI.COMM_WORLD
    rank = comm.rank
    peer = (rank + 1) % comm.size
    win = MPI.Win.Create_dynamic(comm=comm)
    private = np.zeros(4, dtype="i8")
    shared_mem = MPI.Alloc_mem(32)
    shared = np.frombuffer(shared_mem, dtype="i8")
    shared[:] = 0
    win.Attach(private)
    win.Attach(shared_mem)
    addresses = comm.allgather((MPI.Get_address(private), MPI.Get_address(shared_mem)))
    private_at, shared_at = addresses[peer]
    win.Fence()
    win.Put(np.array([rank + 1], "i8"), peer, private_at + 8)        # R14: absolute address
    win.Accumulate(np.array([rank + 5], "i8"), peer, shared_at + 16)
    win.Fence()
    got = np.zeros(2, dtype="i8")
    win.Get(got, peer, shared_at)
    win.Fence()
    errors = {}
    try:
        win.Put(np.array([1], "i8"), peer, private_at + 32)          # past the region: R18
    except MPI.Exception as exc:
        errors["past"] = exc.Get_error_class()
    try:
        win.Put(np.zeros(8, "i8"), peer, private_at)                 # straddles the end: R18
    except MPI.Exception as exc:
        errors["straddle"] = exc.Get_error_class()
    win.Fence()
    comm.Barrier()
    win.Detach(private)                                              # R15: local
    comm.Barrier()
    try:
        win.Put(np.array([1], "i8"), peer, private_at)               # detached: R18
    except MPI.Exception as exc:
        errors["detached"] = exc.Get_error_class()
    win.Fence()
    attrs = win.attrs
    flavor = win.Get_attr(MPI.WIN_CREATE_FLAVOR)
    win.Attach(private)                                              # R19: re-attach is fine
    win.Free()                                                       # R20: detaches all
    result = (private.tolist(), shared.tolist(), got.tolist(), errors, attrs, flavor)
    MPI.Free_mem(shared_mem)
    return result


@pytest.mark.timeout(60)
def test_dynamic_window_reaches_attached_memory_only():
    """R14, R15, R18, R19, R20, R26: attached memory, absolute displacements, ranges."""
    for rank, (private, shared, got, errors, attrs, flavor) in enumerate(
            shmrma.launch(_dynamic_round_trip, 2, timeout=50)):
        writer = 1 - rank
        assert private == [0, writer + 1, 0, 0]
        assert shared == [0, 0, writer + 5, 0]
        assert got == [0, 0]
        assert errors == {"past": MPI.ERR_RMA_RANGE, "straddle": MPI.ERR_RMA_RANGE,
                          "detached": MPI.ERR_RMA_RANGE}
        assert attrs == (MPI.BOTTOM, 0, 1)
        assert flavor == MPI.WIN_FLAVOR_DYNAMIC


def test_attach_errors_change_nothing():
    """R16 overlap -> ERR_RMA_ATTACH, R17 non-dynamic -> ERR_RMA_FLAVOR, R19 -> ERR_BASE."""
    win = MPI.Win.Create_dynamic()
    memory = np.zeros(16, dtype="u1")
    win.Attach(memory[:8])
    with pytest.raises(MPI.Exception) as info:
        win.Attach(memory[4:12])
    assert info.value.Get_error_class() == MPI.ERR_RMA_ATTACH
    with pytest.raises(MPI.Exception) as info:
        win.Detach(memory[1:8])
    assert info.value.Get_error_class() == MPI.ERR_BASE
    with pytest.raises(MPI.Exception) as info:
        win.Shared_query(0)
    assert info.value.Get_error_class() == MPI.ERR_RMA_FLAVOR
    win.Attach(memory[8:])  # the failed calls left the table as it was
    win.Detach(memory[:8])
    win.Detach(memory[8:])
    win.Free()
    allocated = MPI.Win.Allocate(8)
    with pytest.raises(MPI.Exception) as info:
        allocated.Attach(memory)
    assert info.value.Get_error_class() == MPI.ERR_RMA_FLAVOR
    allocated.Free()


def _private_memory_window():
    comm = MPI.COMM_WORLD
    rank = comm.rank
    peer = (rank + 1) % comm.size
    local = np.arange(6, dtype="i8") * (rank + 1)
    win = MPI.Win.Create(local, disp_unit=8, comm=comm)
    win.Fence()
    seen = np.zeros(2, dtype="i8")
    win.Get(seen, peer, 1)
    win.Fence()
    win.Put(np.array([100 + rank], "i8"), peer, 0)
    win.Accumulate(np.array([1, 1], "i8"), peer, 4, op=MPI.SUM)
    win.Fence()
    old = np.zeros(1, "i8")
    win.Lock(peer)
    win.Fetch_and_op(np.array([10], "i8"), old, peer, 3)
    swapped = np.zeros(1, "i8")
    win.Compare_and_swap(np.array([-7], "i8"), np.array([2 * (peer + 1)], "i8"), swapped,
                         peer, 2)
    win.Unlock(peer)
    comm.Barrier()
    model = win.model
    win.Free()
    return seen.tolist(), local.tolist(), old.tolist(), swapped.tolist(), model


@pytest.mark.timeout(60)
def test_window_over_private_numpy_memory():
    """Win.Create on ordinary arrays: every call reaches the other process's memory."""
    results = shmrma.launch(_private_memory_window, 2, timeout=50)
    for rank, (seen, local, old, swapped, model) in enumerate(results):
        peer = 1 - rank
        assert seen == [1 * (peer + 1), 2 * (peer + 1)]
        mine = rank + 1
        assert local == [100 + peer, mine, -7, 3 * mine + 10, 4 * mine + 1, 5 * mine + 1]
        assert old == [3 * (peer + 1)]
        assert swapped == [2 * (peer + 1)]
        assert model == MPI.WIN_UNIFIED


def _many_ranks_accumulate_into_private_memory():
    comm = MPI.COMM_WORLD
    counter = np.zeros(1, dtype="i8")
    win = MPI.Win.Create(counter, disp_unit=8, comm=comm)
    win.Lock_all()
    one = np.ones(1, "i8")
    for _ in range(200):
        win.Accumulate(one, 0, 0, op=MPI.SUM)
    win.Unlock_all()
    comm.Barrier()
    total = int(counter[0])
    win.Free()
    return total


@pytest.mark.timeout(60)
def test_accumulates_into_private_memory_are_atomic():
    """R135: accumulates from several ranks under the per-target lock lose nothing."""
    totals = shmrma.launch(_many_ranks_accumulate_into_private_memory, 3, timeout=50)
    assert totals[0] == 3 * 200


def _derived_types_on_private_memory():
    comm = MPI.COMM_WORLD
    rank = comm.rank
    peer = 1 - rank
    local = np.full(8, -1, dtype="i8")
    win = MPI.Win.Create(local, disp_unit=8, comm=comm)
    every_other = MPI.INT64_T.Create_vector(4, 1, 2).Commit()
    win.Fence()
    # origins typed INT64_T like the target (numpy's int64 alone is MPI.LONG; R45)
    win.Put([np.arange(4, dtype="i8") + 10 * rank, MPI.INT64_T], peer, (0, 1, every_other))
    win.Fence()
    back = np.zeros(4, dtype="i8")
    win.Get([back, MPI.INT64_T], peer, (0, 1, every_other))
    win.Accumulate([np.ones(4, dtype="i8"), MPI.INT64_T], peer, (1, 1, every_other))
    win.Fence()
    every_other.Free()
    win.Free()
    return local.tolist(), back.tolist()


@pytest.mark.timeout(60)
def test_derived_types_on_private_memory_touch_only_their_bytes():
    """R39 over process_vm: a strided Put writes only its elements; the gaps keep their
    values (the target may be using them), Get and Accumulate go through the layout."""
    for rank, (local, back) in enumerate(shmrma.launch(_derived_types_on_private_memory, 2,
                                                       timeout=50)):
        writer = 1 - rank
        assert local[0::2] == [10 * writer + k for k in range(4)]
        assert local[1::2] == [0, 0, 0, 0]  # -1 + 1 from the accumulate into the gaps
        assert back == [10 * rank + k for k in range(4)]
