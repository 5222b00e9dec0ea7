"""DLPack interchange: ``Tensor.__dlpack__`` / ``__dlpack_device__`` and ``from_dlpack``.

Memory is shared both ways (no copy): a CPU tensor exports its NumPy array's buffer, a CUDA tensor its
CuPy array's, and an imported buffer becomes a tensor's array directly, so writes on either side are
seen on the other. Any producer works: NumPy, PyTorch, CuPy, JAX... (an object with ``__dlpack__`` and
``__dlpack_device__``) or a bare DLPack capsule (``torch.utils.dlpack.to_dlpack``).

bfloat16 has a DLPack type code (kDLBfloat) that NumPy does not know; it crosses as 16-bit unsigned
integers whose type code is rewritten in the capsule's DLTensor, which leaves the memory and its owner
untouched.
"""
import ctypes
import enum

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from ..backends import get_backend
from ..backends.cuda.device import current_device as _current_cuda_device
from ..tensor import Tensor

__all__ = ["from_dlpack"]


class DLDeviceType(enum.IntEnum):
    """Device codes of the DLPack specification (the ones this package can meet)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLROCM = 10
    kDLCUDAManaged = 13


_KDL_UINT = 1
_KDL_BFLOAT = 4

# DLTensor fields, as byte offsets (dlpack.h): data, device {type, id}, ndim, dtype {code, bits, lanes}
_DEV_TYPE, _DEV_ID, _DT_CODE, _DT_BITS, _DT_LANES = 8, 12, 20, 21, 22
# DLManagedTensorVersioned puts {version, manager_ctx, deleter, flags} (32 bytes) before its DLTensor;
# the legacy DLManagedTensor starts with it
_CAPSULE_NAMES = ((b"dltensor_versioned", 32), (b"dltensor", 0))

_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def _dltensor_address(capsule):
    """Address of the DLTensor of an unconsumed DLPack capsule."""
    for name, offset in _CAPSULE_NAMES:
        if _api.PyCapsule_IsValid(capsule, name):
            return _api.PyCapsule_GetPointer(capsule, name) + offset
    raise BufferError("from_dlpack: the capsule is not a DLPack tensor, or it was already consumed (a DLPack "
                      "capsule can be imported only once)")


def _u8(addr):
    return ctypes.c_uint8.from_address(addr)


class _CapsuleHolder:
    """Presents an already-made capsule to an array library's ``from_dlpack``."""

    def __init__(self, capsule, dev):
        self.capsule = capsule
        self.dev = dev

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.dev


# ---------------------------------------------------------------------- export

def __dlpack_device__(self):
    """``(device_type, device_id)`` in DLPack codes: ``(kDLCPU, 0)`` or ``(kDLCUDA, index)``."""
    d = self._be.device
    if d.type == "cpu" or getattr(self._be, "host_memory", False):
        # the simulated GPU keeps its arrays in host memory: claiming kDLCUDA would send consumers a host address
        return (DLDeviceType.kDLCPU, 0)
    return (DLDeviceType.kDLCUDA, d.index)


def _export_array(arr, stream, max_version):
    """The array's own capsule; consumers that predate a keyword get the call without it."""
    kwargs = {"stream": stream}
    if max_version is not None:
        kwargs["max_version"] = tuple(max_version)
    try:
        return arr.__dlpack__(**kwargs)
    except TypeError:
        if "max_version" not in kwargs:
            raise
        del kwargs["max_version"]
        return arr.__dlpack__(**kwargs)


def __dlpack__(self, stream=None, *, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule sharing this tensor's memory (a copy only with ``copy=True`` or when
    ``dl_device`` asks for the host copy of a CUDA tensor).

    ``stream`` is the consumer's CUDA stream (an int; None or -1 on the CPU): the export is ordered after
    the work queued on this tensor's stream.
    """
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    be = self._be
    arr = self._data
    if not hasattr(arr, "__dlpack__"):
        # a NumPy scalar (what some reductions produce) exports as the 0-d array it stands for
        arr = be.asarray(arr)
    own = self.__dlpack_device__()
    on_cpu = own[0] == DLDeviceType.kDLCPU
    if dl_device is not None and (int(dl_device[0]), int(dl_device[1])) != (int(own[0]), int(own[1])):
        if int(dl_device[0]) != DLDeviceType.kDLCPU:
            raise BufferError(f"Can't export a tensor on {self.device} to DLPack device {tuple(dl_device)}")
        if copy is False:
            raise BufferError(f"Can't export a tensor on {self.device} to the CPU without a copy (copy=False)")
        arr = be.to_numpy(arr)
        on_cpu = True
        stream = None
    elif copy:
        arr = be.copy(arr)
    if on_cpu:
        if stream is not None and stream != -1:
            raise BufferError(f"stream must be None (or -1) for a CPU tensor, got {stream}")
        stream = None
    bf16 = arr.dtype.kind == "V" and arr.dtype.itemsize == 2
    if bf16:
        arr = arr.view("uint16")
    if on_cpu or not _is_cupy(be):
        capsule = _export_array(arr, stream, max_version)
    else:
        with be.xp.cuda.Device(self.device.index):
            capsule = _export_array(arr, stream, max_version)
    if bf16:
        _u8(_dltensor_address(capsule) + _DT_CODE).value = _KDL_BFLOAT
    return capsule


# ---------------------------------------------------------------------- import

def _device_of(dev):
    """Our device string for a DLPack ``(device_type, device_id)``."""
    kind, idx = int(dev[0]), int(dev[1])
    if kind in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
        return "cpu"
    if kind in (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged):
        return f"cuda:{idx}"
    raise BufferError(f"from_dlpack: unsupported DLPack device type {kind} (only CPU and CUDA memory can be "
                      "imported)")


def _is_cupy(be):
    return hasattr(be.xp, "cuda")


def _consumer_stream(be):
    """The stream a CUDA producer must order its export before: our current one (1 = legacy default)."""
    cp = be.xp
    with cp.cuda.Device(be.device.index):
        ptr = cp.cuda.get_current_stream().ptr
    return 1 if ptr == 0 else ptr


def _fetch_capsule(ext, on_cuda, be):
    if on_cuda and _is_cupy(be):
        # CuPy before 14 reads only unversioned capsules
        return ext.__dlpack__(stream=_consumer_stream(be))
    kwargs = {"max_version": (1, 0)}
    try:
        return ext.__dlpack__(**kwargs)
    except TypeError:
        # producers written before DLPack 1.0 take no max_version
        del kwargs["max_version"]
        return ext.__dlpack__(**kwargs)


class _LegacyOwner:
    """A consumed legacy DLManagedTensor: its producer's deleter runs when the last array using the memory
    is gone."""

    def __init__(self, managed):
        self.managed = managed

    def __del__(self):
        try:
            deleter = ctypes.c_void_p.from_address(self.managed + 56).value
            if deleter:
                _DELETER(deleter)(self.managed)
        except Exception:  # interpreter shutdown: ctypes may already be gone
            pass


def _host_dtype(code, bits):
    kinds = {0: "int", 1: "uint", 2: "float"}
    if code == _KDL_BFLOAT and bits == 16:
        return _dtype.bfloat16.np_dtype
    if code == 6 and bits == 8:
        return np.dtype(np.bool_)
    if code in kinds:
        try:
            return np.dtype(f"{kinds[code]}{bits}")
        except TypeError:
            pass
    raise TypeError(f"from_dlpack: DLPack dtype (code {code}, {bits} bits) has no minitorch_gpu equivalent")


def _import_legacy_host(capsule, addr):
    """A writable NumPy array over a legacy ("dltensor") CPU capsule's memory.

    NumPy imports legacy capsules read-only (they cannot say whether the producer allows writes), while
    PyTorch treats them as writable; this reads the DLTensor itself so imports behave as in PyTorch.
    """
    rd = ctypes.c_void_p.from_address
    data = rd(addr).value or 0
    ndim = ctypes.c_int32.from_address(addr + 16).value
    dt = _host_dtype(_u8(addr + _DT_CODE).value, _u8(addr + _DT_BITS).value)
    shape_p, strides_p = rd(addr + 24).value, rd(addr + 32).value
    offset = ctypes.c_uint64.from_address(addr + 40).value
    shape = tuple(ctypes.c_int64.from_address(shape_p + 8 * i).value for i in range(ndim))
    item = dt.itemsize
    if strides_p:
        strides = tuple(ctypes.c_int64.from_address(strides_p + 8 * i).value * item for i in range(ndim))
    else:
        strides, step = [], item
        for n in reversed(shape):
            strides.append(step)
            step *= n
        strides = tuple(reversed(strides))
    managed = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    if any(n == 0 for n in shape):
        arr = np.empty(shape, dt)
        _api.PyCapsule_SetName(capsule, b"used_dltensor")
        _LegacyOwner(managed)  # nothing to view: the producer's memory is released now
        return arr
    lo = sum((n - 1) * st for n, st in zip(shape, strides) if st < 0)
    hi = sum((n - 1) * st for n, st in zip(shape, strides) if st > 0) + item
    buf_t = type("_DLPackBuffer", (ctypes.c_char * (hi - lo),), {})
    buf = buf_t.from_address(data + offset + lo)
    arr = np.ndarray(shape, dt, buffer=buf, offset=-lo, strides=strides)
    # from here on the memory is ours to release: the capsule must not free it again
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    buf.owner = _LegacyOwner(managed)
    return arr


def _import_capsule(be, capsule, dev):
    addr = _dltensor_address(capsule)
    if be.device.type == "cpu" and _api.PyCapsule_IsValid(capsule, b"dltensor"):
        return _import_legacy_host(capsule, addr)
    code, bits = _u8(addr + _DT_CODE).value, _u8(addr + _DT_BITS).value
    lanes = ctypes.c_uint16.from_address(addr + _DT_LANES).value
    if lanes != 1:
        raise BufferError(f"from_dlpack: vector dtypes (lanes={lanes}) are not supported")
    bf16 = code == _KDL_BFLOAT and bits == 16
    if bf16:
        if not be.supports(_dtype.bfloat16):
            raise TypeError(f"from_dlpack: bfloat16 tensors are not supported on {be.device} by the installed "
                            "CuPy (it needs CuPy 14 for bfloat16 arrays)")
        _u8(addr + _DT_CODE).value = _KDL_UINT
    holder = _CapsuleHolder(capsule, dev)
    if _is_cupy(be):
        cp = be.xp
        with cp.cuda.Device(be.device.index):
            arr = cp.from_dlpack(holder)
    else:
        arr = be.xp.from_dlpack(holder)
    if bf16:
        arr = arr.view(be.np_dtype(_dtype.bfloat16))
    if arr.dtype not in _dtype._BY_NP:
        raise TypeError(f"from_dlpack: dtype {arr.dtype} has no minitorch_gpu equivalent (supported: float64, "
                        "float32, float16, bfloat16, int64, int32, int16, int8, uint8, bool)")
    return arr


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with ``ext_tensor``: any object with ``__dlpack__`` and
    ``__dlpack_device__`` (NumPy array, PyTorch / CuPy / JAX tensor, one of ours) or a DLPack capsule.

    Its device is the producer's. ``device`` moves the result (a copy, refused with ``copy=False``);
    ``copy=True`` always copies.
    """
    if _is_capsule(ext_tensor):
        if device is not None or copy is not None:
            raise ValueError("device and copy kwargs not supported when ext_tensor is already a DLPack capsule.")
        addr = _dltensor_address(ext_tensor)
        dev = (ctypes.c_int32.from_address(addr + _DEV_TYPE).value, ctypes.c_int32.from_address(addr + _DEV_ID).value)
        capsule = ext_tensor
    elif hasattr(ext_tensor, "__dlpack__") and hasattr(ext_tensor, "__dlpack_device__"):
        dev = tuple(int(v) for v in ext_tensor.__dlpack_device__())
        capsule = None
    else:
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ and __dlpack_device__ or a DLPack "
                        f"capsule, got {type(ext_tensor).__name__}")
    src = _device_cls(_device_of(dev))
    target = src if device is None else _device_cls(device)
    if target.type == "cuda" and target.index is None:
        target = _device_cls("cuda", _current_cuda_device())
    cross = target != src
    if cross and copy is False:
        raise ValueError(f"cannot move DLPack tensor from device {src} to {target} without copying. Set copy=None "
                         "or copy=True.")
    be = get_backend(src)
    if capsule is None:
        capsule = _fetch_capsule(ext_tensor, src.type == "cuda", be)
    arr = _import_capsule(be, capsule, dev)
    t = Tensor._make(arr, be)
    if cross:
        return t.to(target)
    if copy:
        return Tensor._make(be.copy(arr), be)
    return t


METHODS = {"__dlpack__": __dlpack__, "__dlpack_device__": __dlpack_device__}
