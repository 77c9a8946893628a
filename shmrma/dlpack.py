"""Buffers from DLPack producers (``__dlpack__`` and ``__dlpack_device__``), as
mpi4py 4 takes them: torch CPU tensors, JAX and numpy arrays, anything that
exports a DLPack capsule of host memory.

``view(obj)`` consumes one capsule, legacy (``dltensor``) or versioned
(``dltensor_versioned``, DLPack 1.x, whose READ_ONLY flag is honoured), and
returns a flat numpy array over the tensor's memory, contiguous in C or
Fortran order as mpi4py requires; the producer's deleter runs when that array
is gone, so the producer stays alive while the buffer is in use. Device memory
cannot be read by a CPU shared-memory runtime: a tensor on another device, and
an object with only ``__cuda_array_interface__``, is a TypeError that says so.
"""
import ctypes

# DLDeviceType codes whose memory this process can read (mpi4py's host kinds)
KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST = 1, 3, 11
HOST_DEVICES = (KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST)
FLAG_READ_ONLY = 1
# DLDataTypeCode -> the numpy type chars of its kind (kDLInt, kDLUInt, kDLFloat,
# kDLComplex, kDLBool); a char stands for its size here (long double: 16 bytes
# on x86-64, where float128 is how DLPack producers export it)
_KINDS = {0: "bhiq", 1: "BHIQ", 2: "efdg", 5: "FDG", 6: "?"}


def _format(code, bits, lanes):
    """The numpy type char of a DLPack data type; a complex number may also come as
    two lanes of its float type."""
    import numpy
    if lanes == 2 and code == 2:
        code, bits, lanes = 5, 2 * bits, 1
    if lanes != 1:
        return None
    for char in _KINDS.get(code, ""):
        if numpy.dtype(char).itemsize * 8 == bits:
            return char
    return None


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
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


def is_producer(obj):
    return hasattr(type(obj), "__dlpack__")


def device_error(obj):
    """The TypeError for an object that describes device memory (or None)."""
    if hasattr(obj, "__cuda_array_interface__"):
        return TypeError("%s describes GPU memory (__cuda_array_interface__), which "
                         "shmrma, a CPU shared-memory runtime, cannot read; copy it to "
                         "the host first (numpy.asarray(obj.get()) or similar)"
                         % type(obj).__name__)
    return None


class _Release:
    """Calls the producer's deleter once the memory is no longer viewed; holds the
    capsule until then (some producers tie the tensor's lifetime to it)."""

    def __init__(self, managed, capsule):
        self.managed, self.capsule = managed, capsule

    def __del__(self):
        deleter = self.managed.contents.deleter
        if deleter:
            deleter(ctypes.cast(self.managed, ctypes.c_void_p).value)


def _capsule(obj):
    try:
        return obj.__dlpack__(max_version=(1, 0))
    except TypeError:       # a producer of DLPack 0.x: no keyword arguments
        return obj.__dlpack__()


# a capsule keeps the pointer to its name: these must outlive every capsule renamed
_USED_NAMES = {b"dltensor_versioned": b"used_dltensor_versioned",
               b"dltensor": b"used_dltensor"}


def _consume(capsule):
    """(tensor, read-only, releaser) of a capsule, which is marked used."""
    for name, kind in ((b"dltensor_versioned", _ManagedVersioned), (b"dltensor", _Managed)):
        if _api.PyCapsule_IsValid(capsule, name):
            pointer = _api.PyCapsule_GetPointer(capsule, name)
            managed = ctypes.cast(pointer, ctypes.POINTER(kind))
            _api.PyCapsule_SetName(capsule, _USED_NAMES[name])
            read_only = kind is _ManagedVersioned and bool(managed.contents.flags &
                                                             FLAG_READ_ONLY)
            return managed.contents.dl_tensor, read_only, _Release(managed, capsule)
    raise TypeError("__dlpack__ returned %s, not a DLPack capsule" % type(capsule).__name__)


def _contiguous(tensor):
    """Is the tensor's memory one block, in C or Fortran order?"""
    ndim = tensor.ndim
    shape = [tensor.shape[i] for i in range(ndim)]
    if not tensor.strides or 0 in shape:
        return True
    strides = [tensor.strides[i] for i in range(ndim)]
    for order in (range(ndim - 1, -1, -1), range(ndim)):
        expected = 1
        for axis in order:
            if shape[axis] != 1 and strides[axis] != expected:
                break
            expected *= shape[axis]
        else:
            return True
    return False


def view(obj):
    """A flat numpy array over the memory of DLPack producer ``obj``."""
    import numpy
    device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (KDL_CPU, 0)
    if int(device[0]) not in HOST_DEVICES:
        raise TypeError("%s lives on DLPack device %r, not in host memory; shmrma, a CPU "
                        "shared-memory runtime, reads host memory only"
                        % (type(obj).__name__, tuple(device)))
    tensor, read_only, release = _consume(_capsule(obj))
    dtype = tensor.dtype
    char = _format(dtype.code, dtype.bits, dtype.lanes)
    if char is None:
        raise TypeError("%s: DLPack data type (code %d, %d bits, %d lanes) has no MPI "
                        "datatype" % (type(obj).__name__, dtype.code, dtype.bits, dtype.lanes))
    itemsize = numpy.dtype(char).itemsize
    if not _contiguous(tensor):
        raise BufferError("%s: the DLPack tensor is not contiguous; pass a contiguous "
                          "one" % type(obj).__name__)
    count = 1
    for axis in range(tensor.ndim):
        count *= tensor.shape[axis]
    address = (tensor.data or 0) + tensor.byte_offset
    memory = (ctypes.c_char * (count * itemsize)).from_address(address) if count else \
        bytearray(0)
    if count:
        memory.release = release    # the deleter runs when the last view of it is gone
    array = numpy.frombuffer(memory, dtype=char, count=count)
    if read_only:
        array.flags.writeable = False
    return array
