"""Buffers from objects without the buffer protocol, as mpi4py 4 takes them
(asbuffer.pxi, asdlpack.pxi): DLPack producers (``__dlpack__`` and
``__dlpack_device__``: torch CPU tensors, JAX arrays, ...) on the host, and the
refusal of device memory.

``host_view(obj, writable)`` is mpi4py's PyMPI_GetBuffer: the buffer protocol
first, then DLPack, then ``__cuda_array_interface__``. A DLPack capsule, legacy
(``dltensor``) or versioned (``dltensor_versioned``, DLPack 1.x, whose READ_ONLY
flag is honoured), is checked as mpi4py checks it (version, shape, strides,
contiguity in C or Fortran order, writability: BufferError) and read without
being consumed, as mpi4py reads it: the view holds the capsule, whose destructor
lets the producer go once the memory is no longer viewed. The element format is
mpi4py's (dlpack_get_format): a data type it has no format for is bytes.

Device memory cannot be read by a CPU shared-memory runtime: a tensor on a device
the CPU cannot address, and an object with ``__cuda_array_interface__``, is a
TypeError that says so (mpi4py would hand the device pointer to a CUDA-aware MPI).
"""
import ctypes
import operator

# DLDeviceType codes whose memory this process can read (mpi4py's
# check_cpu_accessible: CPU, CUDA host, ROCm host, CUDA managed)
KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST, KDL_CUDA_MANAGED = 1, 3, 11, 13
HOST_DEVICES = (KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST, KDL_CUDA_MANAGED)
FLAG_READ_ONLY = 1
# DLDataTypeCode -> the struct format chars of its kind, by size in bits
# (mpi4py's dlpack_get_format; on x86-64 'l' comes before 'q' and has its size)
_INT, _UINT, _FLOAT, _COMPLEX, _BOOL = 0, 1, 2, 5, 6
_FORMATS = {
    _INT: {8: "b", 16: "h", 32: "i", 64: "l"},
    _UINT: {8: "B", 16: "H", 32: "I", 64: "L"},
    _FLOAT: {16: "e", 32: "f", 64: "d", 128: "g"},
    _COMPLEX: {64: "Zf", 128: "Zd", 256: "Zg"},    # no numpy complex of halves: bytes
    _BOOL: {8: "?"},
}
_FLOAT_PAIRS = {32: "Zf", 64: "Zd", 128: "Zg"}      # two lanes of a float: a complex
# numpy's names of the complex formats
_NUMPY = {"Zf": "F", "Zd": "D", "Zg": "G"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _Deleter)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter), ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def host_view(obj, writable):
    """A memoryview of ``obj``'s memory, found as mpi4py finds it: the buffer
    protocol, else DLPack, else refused as device memory; the buffer protocol's
    own TypeError for anything else."""
    try:
        return memoryview(obj)
    except TypeError as error:
        try:
            return memoryview(view(obj, writable))
        except NotImplementedError:
            pass
        refuse_device_memory(obj)
        raise TypeError("expected a buffer object (bytes, bytearray, numpy array, "
                        "MPI.buffer, a DLPack producer...), not %s"
                        % type(obj).__name__) from error


def refuse_device_memory(obj):
    """TypeError for an object that describes GPU memory; nothing otherwise."""
    if hasattr(obj, "__cuda_array_interface__"):
        raise TypeError("%s describes GPU memory (__cuda_array_interface__), which "
                        "shmrma, a CPU shared-memory runtime, cannot read; copy it to "
                        "the host first (numpy.asarray(obj.get()) or similar)"
                        % type(obj).__name__)


def _capsule(obj, device_type):
    """(capsule, versioned) from the producer, asking for DLPack 1.0 first."""
    stream = {} if device_type == KDL_CPU else {"stream": -1}
    try:
        return obj.__dlpack__(max_version=(1, 0), copy=False, **stream), True
    except TypeError:       # a producer of DLPack 0.x: no such keyword arguments
        return obj.__dlpack__(**stream), False


def _tensor(capsule, versioned):
    """(DLTensor, read-only) of a capsule of the expected kind; BufferError otherwise."""
    name, kind = ((b"dltensor_versioned", _ManagedVersioned) if versioned
                  else (b"dltensor", _Managed))
    if not _api.PyCapsule_IsValid(capsule, name):
        raise BufferError("dlpack: invalid capsule object (expected an unused %r capsule)"
                          % name.decode())
    managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, name),
                          ctypes.POINTER(kind)).contents
    if not versioned:
        return managed.dl_tensor, False
    if managed.version.major < 1:
        raise BufferError("dlpack: unexpected version %d of a versioned capsule"
                          % managed.version.major)
    return managed.dl_tensor, bool(managed.flags & FLAG_READ_ONLY)


def _check_shape(tensor):
    ndim = tensor.ndim
    if ndim < 0:
        raise BufferError("dlpack: number of dimensions is negative (%d)" % ndim)
    if ndim > 0 and not tensor.shape:
        raise BufferError("dlpack: shape is NULL for %d dimensions" % ndim)
    if any(tensor.shape[axis] < 0 for axis in range(ndim)):
        raise BufferError("dlpack: shape item is negative")
    if tensor.strides and any(tensor.strides[axis] < 0 for axis in range(ndim)):
        raise BufferError("dlpack: strides item is negative")


def _is_contiguous(tensor, order):
    """mpi4py's dlpack_is_contig: strides in elements, dimensions of 1 ignored."""
    ndim = tensor.ndim
    if not tensor.strides:
        return order == "C" or ndim <= 1
    axes = range(ndim) if order == "F" else range(ndim - 1, -1, -1)
    size = 1
    for axis in axes:
        dim = tensor.shape[axis]
        if dim > 1 and size != tensor.strides[axis]:
            return False
        size *= dim
    return True


def _format(dtype):
    """(format, itemsize) of a DLPack data type, as mpi4py gives them."""
    if dtype.lanes != 1:
        if dtype.code == _FLOAT and dtype.lanes == 2 and dtype.bits in _FLOAT_PAIRS:
            return _FLOAT_PAIRS[dtype.bits], dtype.bits // 8 * 2
        return "B", 1
    char = _FORMATS.get(dtype.code, {}).get(dtype.bits)
    return (char, (dtype.bits + 7) // 8) if char else ("B", 1)


def view(obj, writable=False):
    """A flat numpy array over the memory of DLPack producer ``obj`` (mpi4py's
    Py_GetDLPackBuffer); NotImplementedError when ``obj`` is not one."""
    import numpy
    try:
        dlpack_device = obj.__dlpack_device__
        obj.__dlpack__
    except AttributeError:
        raise NotImplementedError("dlpack: missing support") from None
    device_type, device_id = dlpack_device()
    device_type, device_id = operator.index(device_type), operator.index(device_id)
    if device_type not in HOST_DEVICES:
        raise TypeError("%s lives on DLPack device %r, not in host memory; shmrma, a CPU "
                        "shared-memory runtime, reads host memory only"
                        % (type(obj).__name__, (device_type, device_id)))
    capsule, versioned = _capsule(obj, device_type)
    tensor, read_only = _tensor(capsule, versioned)
    _check_shape(tensor)
    if not (_is_contiguous(tensor, "C") or _is_contiguous(tensor, "F")):
        raise BufferError("dlpack: buffer is not contiguous; pass a contiguous tensor")
    if read_only and writable:
        raise BufferError("dlpack: buffer is not writable (the producer marked it "
                          "read-only) but this call writes into it")
    count = 1
    for axis in range(tensor.ndim):
        count *= tensor.shape[axis]
    nbytes = count * ((tensor.dtype.bits * tensor.dtype.lanes + 7) // 8)
    char, itemsize = _format(tensor.dtype)
    address = (tensor.data or 0) + tensor.byte_offset
    memory = (ctypes.c_char * nbytes).from_address(address) if nbytes else bytearray(0)
    if nbytes:
        memory.capsule = capsule        # the producer's memory lives as long as this
    array = numpy.frombuffer(memory, dtype=_NUMPY.get(char, char),
                             count=nbytes // itemsize)
    if read_only:
        array.flags.writeable = False
    return array
