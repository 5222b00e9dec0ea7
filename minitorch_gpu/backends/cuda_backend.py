"""The CUDA backend: CuPy arrays on one GPU.

Every primitive runs with the backend's GPU current, so tensors on ``cuda:1`` work while ``cuda:0``
is the current device, as in PyTorch.
"""
import functools

from .._device import device
from .._dtype import bfloat16
from .base import Backend


def _on_device(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        cp = self.xp
        if cp.cuda.runtime.getDevice() == self.index:
            return fn(self, *args, **kwargs)
        with cp.cuda.Device(self.index):
            return fn(self, *args, **kwargs)
    return wrapper


class CupyBackend(Backend):
    name = "cupy"

    def __init__(self, index):
        import cupy
        self.xp = cupy
        self.index = index
        self.device = device("cuda", index)

    def np_dtype(self, dtype):
        if dtype is bfloat16:
            raise TypeError("bfloat16 is not supported on CUDA devices by the CuPy backend; use float16 or "
                            "float32 on the GPU (bfloat16 works on the CPU with ml_dtypes installed)")
        return Backend.np_dtype(self, dtype)

    def to_numpy(self, arr):
        return self.xp.asnumpy(arr)

    def asarray(self, obj, np_dtype=None, copy=False):
        if copy:
            return self.xp.array(obj, dtype=np_dtype, copy=True)
        return self.xp.asarray(obj, dtype=np_dtype)

    def data_ptr(self, arr):
        return arr.data.ptr

    def copy_into(self, dst, src):
        xp = self.xp
        if isinstance(src, xp.ndarray) and xp.may_share_memory(dst, src):
            # CuPy copies element by element in parallel; overlapping source and destination need a buffer
            src = src.copy()
        Backend.copy_into(self, dst, xp.asarray(src) if hasattr(src, "__array__") else src)

    def synchronize(self):
        self.xp.cuda.Device(self.index).synchronize()


def _wrap_all(cls):
    for name in dir(cls):
        if name.startswith("_") or name in ("supports", "np_dtype", "strides", "is_contiguous"):
            continue
        attr = getattr(cls, name)
        if callable(attr):
            setattr(cls, name, _on_device(attr))
    return cls


_wrap_all(CupyBackend)


def make_cuda_backend(index):
    return CupyBackend(index)
