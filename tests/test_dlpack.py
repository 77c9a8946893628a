"""DLPack producers as buffers (shmrma/types/dlpack.py), as mpi4py 4 takes them: objects
with ``__dlpack__`` and ``__dlpack_device__`` on the host, legacy and versioned
capsules, the read-only flag honoured, the producer kept alive while the buffer is
in use; device memory (another DLPack device, ``__cuda_array_interface__``) is a
TypeError that says so. Used in RMA (R35-R37: origin and result buffers), in
messages, MPI.buffer and Get_address, through the one buffer parser
(buffers.as_view). The checks of a capsule and their errors are mpi4py's
(asdlpack.pxi), exercised with hand-made capsules as mpi4py's test_msgspec does.
"""
import ctypes
import gc
import weakref

import numpy as np
import pytest

import shmrma
from shmrma import MPI
from shmrma.types import dlpack


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
    if np.lib.NumpyVersion(np.__version__) < "2.1.0":
        # numpy 2.0 (the last for Python 3.9) exports no versioned capsule, so no
        # READ_ONLY flag, and refuses a read-only array; the flag itself is tested on
        # hand-made capsules (test_the_read_only_flag_refuses_writes_only)
        pytest.skip("numpy %s exports no read-only DLPack tensor (2.1 does)" % np.__version__)
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


# -- hand-made capsules: every field of the tensor under the test's control -----------

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
NAMES = {True: b"dltensor_versioned", False: b"dltensor"}   # outlive every capsule
USED = b"used_dltensor"
CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


class Tensor:
    """A DLPack producer over a numpy array; ``tensor`` is its DLTensor, which a test
    may spoil. Its capsules own nothing (as mpi4py's test's), so taking one twice is
    fine."""

    def __init__(self, array, versioned=True):
        self.array, self.versioned = array, versioned
        self.managed = (dlpack._ManagedVersioned if versioned else dlpack._Managed)()
        if versioned:
            self.managed.version.major = 1
        self.shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
        self.strides = (ctypes.c_int64 * max(array.ndim, 1))(
            *(stride // array.itemsize for stride in array.strides))
        tensor = self.tensor = self.managed.dl_tensor
        tensor.data, tensor.ndim = array.ctypes.data, array.ndim
        tensor.device.device_type = dlpack.KDL_CPU
        tensor.dtype.code, tensor.dtype.bits = CODES[array.dtype.kind], array.itemsize * 8
        tensor.dtype.lanes = 1
        tensor.shape, tensor.strides = self.shape, self.strides

    def __dlpack_device__(self):
        return (dlpack.KDL_CPU, 0)

    def __dlpack__(self, stream=None, max_version=None, copy=None):
        if max_version is not None and not self.versioned:
            raise TypeError("a DLPack 0.x producer takes no max_version")
        return _api.PyCapsule_New(ctypes.addressof(self.managed), NAMES[self.versioned],
                                  None)


@pytest.mark.parametrize("versioned", [True, False])
def test_a_capsule_is_read_not_consumed_so_it_can_be_read_again(versioned):
    producer = Tensor(np.arange(4, dtype="i4"), versioned)
    capsule = producer.__dlpack__()
    # a legacy producer takes no keywords: that is how a legacy capsule is expected
    producer.__dlpack__ = (lambda **kwargs: capsule) if versioned else (lambda: capsule)
    assert MPI.Get_address(producer) == MPI.Get_address(producer) == \
        producer.array.ctypes.data
    _api.PyCapsule_SetName(capsule, USED)          # a consumer took it
    with pytest.raises(BufferError, match="invalid capsule"):
        MPI.Get_address(producer)
    producer.__dlpack__ = lambda **kwargs: None
    with pytest.raises(BufferError, match="invalid capsule"):
        MPI.Get_address(producer)


def test_checks_of_the_tensor_are_mpi4pys_buffer_errors():
    producer = Tensor(np.arange(8, dtype="i4").reshape(2, 2, 2))
    tensor = producer.tensor
    producer.managed.version.major = 0
    with pytest.raises(BufferError, match="version"):
        MPI.Get_address(producer)
    producer.managed.version.major = 1
    MPI.Get_address(producer)
    for spoil, match in ((lambda: setattr(tensor, "ndim", -1), "negative"),
                         (lambda: producer.shape.__setitem__(0, -1), "shape item"),
                         (lambda: producer.strides.__setitem__(0, -1), "strides item"),
                         (lambda: setattr(tensor, "shape", None), "shape is NULL"),
                         (lambda: producer.strides.__setitem__(0, 1), "not contiguous")):
        saved = (tensor.ndim, tuple(producer.shape), tuple(producer.strides))
        spoil()
        with pytest.raises(BufferError, match=match):
            MPI.Get_address(producer)
        tensor.ndim, tensor.shape, tensor.strides = saved[0], producer.shape, producer.strides
        producer.shape[:], producer.strides[:] = saved[1], saved[2]
    producer.strides[:] = [1, 2, 4]                 # Fortran order: contiguous too
    assert MPI.buffer(producer).nbytes == 32
    tensor.ndim, tensor.shape, tensor.strides = 0, None, None     # a scalar
    assert MPI.buffer(producer).nbytes == 4


def test_the_read_only_flag_refuses_writes_only():
    send, receive = Tensor(np.arange(4, dtype="i4")), Tensor(np.zeros(4, "i4"))
    send.managed.flags = receive.managed.flags = dlpack.FLAG_READ_ONLY
    assert MPI.buffer(receive).readonly
    with pytest.raises(BufferError, match="not writable"):
        MPI.COMM_SELF.Sendrecv(send, 0, 0, receive, 0, 0)
    receive.managed.flags = 0
    MPI.COMM_SELF.Sendrecv(send, 0, 0, receive, 0, 0)
    assert receive.array.tolist() == [0, 1, 2, 3]


def test_byte_offset_moves_the_start():
    producer = Tensor(np.array([10, 11, 12, 13], "u1"))
    for offset in range(4):
        producer.tensor.byte_offset = offset
        assert MPI.buffer(producer)[0] == 10 + offset


def test_types_mpi4py_has_no_format_for_travel_as_bytes():
    producer = Tensor(np.arange(4, dtype="u2"))
    producer.tensor.dtype.code = 3                  # kDLOpaqueHandle
    view = dlpack.view(producer)
    assert view.dtype == np.dtype("u1") and view.nbytes == 8
    producer.tensor.dtype.code, producer.tensor.dtype.bits = 1, 8
    producer.tensor.dtype.lanes = 2                 # two lanes of bytes: bytes
    assert dlpack.view(producer).dtype == np.dtype("u1")
    floats = Tensor(np.arange(4, dtype="f4"))
    floats.tensor.dtype.lanes, floats.tensor.shape[0] = 2, 2   # two lanes of floats: complex
    assert dlpack.view(floats).dtype == np.dtype("c8")


@pytest.mark.parametrize("device,error", [(None, TypeError), ((None, 0), TypeError),
                                          ((1, None), TypeError), ((1,), ValueError),
                                          ((1, 0, 1), ValueError)])
def test_a_bad_device_is_mpi4pys_error(device, error):
    producer = Tensor(np.arange(2, dtype="i4"))
    producer.__dlpack_device__ = (lambda: device) if device else None
    with pytest.raises(error):
        MPI.Get_address(producer)


def test_mpi_buffer_of_a_producer_and_frombuffer():
    producer = Tensor(np.arange(4, dtype="i4"))
    buf = MPI.buffer.frombuffer(producer)
    assert buf.obj is producer and buf.itemsize == 4 and buf.nbytes == 16
    assert buf.cast("i").tolist() == [0, 1, 2, 3]
    buf[0:4] = np.array([7], "i4")
    assert producer.array[0] == 7
