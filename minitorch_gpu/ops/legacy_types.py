"""PyTorch's legacy tensor types: ``mt.FloatTensor``, ``mt.LongTensor``, ... and ``mt.cuda.FloatTensor``, ...

Old scripts build tensors with them and test types with them. As in PyTorch they are not subclasses of
``Tensor`` but type objects that construct (through the legacy constructor of ``creation.py``) and answer
``isinstance``: a float32 CPU tensor is a ``FloatTensor``, a float32 CUDA tensor a ``cuda.FloatTensor``.

    >>> import minitorch_gpu as mt
    >>> mt.LongTensor([1, 2]).dtype, mt.FloatTensor(2, 3).shape, isinstance(mt.zeros(2), mt.FloatTensor)
    (minitorch_gpu.int64, minitorch_gpu.Size([2, 3]), True)
"""
from __future__ import annotations

from typing import Any

from .. import _dtype
from ..backends.cuda import device as _cuda_probe
from ..tensor import Tensor
from .creation import legacy_new

__all__ = ["LegacyTensorType", "CPU_TYPES", "CUDA_TYPES"]


class LegacyTensorType(type):
    """The type of the legacy tensor types (PyTorch's ``torch.tensortype``)."""

    dtype: Any
    is_cuda: bool
    is_sparse = False

    def __call__(cls, *args: Any, device: Any = None) -> Any:
        if cls.is_cuda:
            if not _cuda_probe.is_available():
                raise TypeError(f"type {cls.__module__}.{cls.__name__} not available: CUDA is not available (no "
                                "GPU was found or CuPy is not installed)")
            device = "cuda" if device is None else device
        return legacy_new(cls.dtype, device, args)

    def __instancecheck__(cls, obj: Any) -> bool:
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and obj.is_cuda == cls.is_cuda)


def _make_types(module: str, is_cuda: bool) -> dict[str, LegacyTensorType]:
    types = {}
    for dt in (_dtype.float32, _dtype.float64, _dtype.float16, _dtype.bfloat16, _dtype.int64, _dtype.int32,
               _dtype.int16, _dtype.int8, _dtype.uint8, _dtype.bool):
        name = dt._tensor_name
        doc = f"A legacy tensor type: constructs {dt} tensors on {'CUDA' if is_cuda else 'the CPU'} and is the " \
              f"type of those tensors for ``isinstance``."
        types[name] = LegacyTensorType(name, (), {"dtype": dt, "is_cuda": is_cuda, "__module__": module,
                                                  "__doc__": doc})
    return types


CPU_TYPES = _make_types("minitorch_gpu", False)
CUDA_TYPES = _make_types("minitorch_gpu.cuda", True)
