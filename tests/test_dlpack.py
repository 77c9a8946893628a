"""DLPack producers as buffers (shmrma/dlpack.py), as mpi4py 4 takes them: objects
with ``__dlpack__`` and ``__dlpack_device__`` on the host, legacy and versioned
capsules, the read-only flag honoured, the producer kept alive while the buffer is
in use; device memory (another DLPack device, ``__cuda_array_interface__``) is a
TypeError that says so. Used in RMA (R35-R37: origin and result buffers) and in
messages, through the one buffer parser (buffers.as_view).
"""
import gc
import weakref

import numpy as np
import pytest

import shmrma
from shmrma import MPI, dlpack


class Producer:
    """Only DLPack: no buffer protocol. ``versioned`` False gives a DLPack 0.x
    producer (no keyword arguments: a legacy capsule)."""

    def __init__(self, array, versioned=True, device=(1, 0)):
        self.array, self.versioned, self.device = array, versioned, device

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, **kwargs):
        if not self.versioned:
            if kwargs:
                raise TypeError("a DLPack 0.x producer takes no keyword arguments")
            return self.array.__dlpack__()
        return self.array.__dlpack__(**kwargs)


class FakeGPU:
    def __init__(self, array):
        self.__cuda_array_interface__ = {"version": 0, "shape": array.shape,
                                         "typestr": array.dtype.str,
                                         "data": (array.ctypes.data, False)}


@pytest.mark.parametrize("versioned", [True, False])
def test_a_producer_is_viewed_in_place_with_its_type(versioned):
    base = np.arange(6, dtype="i4").reshape(2, 3)
    view = dlpack.view(Producer(base, versioned))
    assert view.dtype == np.dtype("i4") and view.shape == (6,)
    assert view.ctypes.data == base.ctypes.data
    view[0] = 42                    # the memory itself, not a copy
    assert base[0, 0] == 42


def test_complex_float_and_bool_types_come_through():
    for dtype in ("c16", "c8", "f2", "?", "u8", "i1"):
        view = dlpack.view(Producer(np.zeros(3, dtype)))
        assert view.dtype == np.dtype(dtype), dtype


def test_a_read_only_tensor_is_a_read_only_buffer():
    base = np.arange(4, dtype="f8")
    base.flags.writeable = False
    assert not dlpack.view(Producer(base)).flags.writeable


def test_the_producer_stays_alive_while_the_buffer_is_in_use():
    class Owned(np.ndarray):
        pass
    base = np.arange(4, dtype="i8").view(Owned)
    alive = weakref.ref(base)
    view = dlpack.view(Producer(base))
    del base
    gc.collect()
    assert alive() is not None and view.sum() == 6
    del view
    gc.collect()
    assert alive() is None          # the deleter ran once the view was gone


def test_device_memory_is_a_type_error_that_says_so():
    with pytest.raises(TypeError, match="host memory"):
        dlpack.view(Producer(np.zeros(2), device=(2, 0)))        # kDLCUDA
    win = MPI.Win.Allocate(16, 8, comm=MPI.COMM_SELF)
    win.Lock(0)
    with pytest.raises(TypeError, match="GPU memory"):
        win.Put(FakeGPU(np.zeros(2)), 0)
    win.Unlock(0)
    win.Free()


def test_dlpack_buffers_in_rma_and_messages():
    """R35-R37 with DLPack origin and result buffers; a read-only one as a Get's
    result is BufferError, as mpi4py raises it."""
    def body():
        comm = MPI.COMM_WORLD
        rank, peer = comm.Get_rank(), 1 - comm.Get_rank()
        win = MPI.Win.Allocate(4 * 8, 8, comm=comm)
        mine = np.frombuffer(win.tomemory(), "i8")
        mine[:] = 0
        comm.Barrier()
        win.Lock(peer)
        win.Put(Producer(np.array([rank + 10, rank + 20], "i8"), versioned=False), peer)
        win.Flush(peer)
        got = np.zeros(2, "i8")
        win.Get(Producer(got), peer)
        win.Accumulate(Producer(np.array([1, 1], "i8")), peer, 2)
        locked = np.zeros(1, "i8")
        locked.flags.writeable = False
        try:
            win.Get(Producer(locked), peer)
            read_only = None
        except BufferError:
            read_only = "BufferError"
        win.Unlock(peer)
        comm.Barrier()
        received = np.zeros(3, "f8")
        if rank == 0:
            comm.Send(Producer(np.array([1.5, 2.5, 3.5])), 1)
        else:
            comm.Recv(Producer(received), 0)
        comm.Barrier()
        out = (got.tolist(), mine.tolist(), read_only, received.tolist())
        win.Free()
        return out
    first, second = shmrma.launch(body, 2, timeout=30)
    assert first[0] == [10, 20] and second[0] == [11, 21]      # what each Put there
    assert first[1] == [11, 21, 1, 1] and second[1] == [10, 20, 1, 1]
    assert first[2] == second[2] == "BufferError"
    assert second[3] == [1.5, 2.5, 3.5]
