"""Copies and conversions that autograd tracks: clone, to(device/dtype), the dtype shorthands
(float(), long(), ...), contiguous, copy_, cpu/cuda."""
from .. import _dtype
from .._device import device as _device_cls
from ..autograd.function import Op
from ..backends import get_backend
from ._inplace import apply_inplace

__all__ = ["clone"]


class CloneBackward0(Op):
    def forward(self, x, memory_format=None):
        return x._be.copy(x._data)

    def backward(self, g):
        return (g,)


def clone(input, *, memory_format=None):
    """A copy with its own memory; gradients flow back to ``input``."""
    return CloneBackward0.apply(input)


class ToCopyBackward0(Op):
    def forward(self, x, be, np_dtype, copy):
        self.src_be = x._be
        self.src_dtype = x._data.dtype
        data = x._data
        if be is not x._be:
            # across devices through host memory: NumPy <-> CuPy, or between two GPUs
            data = be.asarray(x._be.to_numpy(data))
        return be.astype(data, np_dtype, copy=copy and be is x._be)

    def backward(self, g):
        out = g
        if g._be is not self.src_be:
            out = out.to(self.src_be.device)
        if g._data.dtype != self.src_dtype:
            out = out.to(_dtype.from_numpy_dtype(self.src_dtype))
        return (out,)


def _parse_to_args(args, kwargs):
    from ..tensor import Tensor
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {list(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, (str, _device_cls, int)) and not isinstance(a, bool):
            device = a
        elif isinstance(a, bool):
            copy = a
        elif a is None:
            continue
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return device, dtype, copy


def to(self, *args, **kwargs):
    """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``; returns self when nothing
    changes and copy is False."""
    device, dtype, copy = _parse_to_args(args, dict(kwargs))
    be = self._be if device is None else get_backend(device)
    dt = self.dtype if dtype is None else _dtype.to_dtype(dtype)
    if be is self._be and dt is self.dtype and not copy:
        return self
    return ToCopyBackward0.apply(self, be=be, np_dtype=be.np_dtype(dt), copy=copy)


def _caster(dt):
    def cast(self, memory_format=None):
        return to(self, dt)
    cast.__name__ = dt.name
    return cast


def type_(self, dtype=None, non_blocking=False):
    """With no argument the type name (``'minitorch_gpu.FloatTensor'``), else a cast."""
    if dtype is None:
        return "minitorch_gpu." + self.dtype._tensor_name
    return to(self, _dtype.to_dtype(dtype))


def cpu(self, memory_format=None):
    return to(self, "cpu")


def cuda(self, device=None, non_blocking=False, memory_format=None):
    if device is None:
        device = "cuda"
    elif isinstance(device, int):
        device = _device_cls("cuda", device)
    return to(self, device)


def contiguous(self, memory_format=None):
    if self._be.is_contiguous(self._data):
        return self
    return clone(self)


class CopyBackwards(Op):
    def forward(self, dst, src):
        self.src_shape = src._data.shape
        self.src_be = src._be
        self.src_dtype = src._data.dtype
        data = src._data
        if src._be is not dst._be:
            data = dst._be.asarray(src._be.to_numpy(data))
        return dst._be.astype(dst._be.broadcast_to(data, dst._data.shape), dst._data.dtype, copy=True)

    def backward(self, g):
        from ._util import sum_to
        ndst, nsrc = self.needs_input_grad
        gdst = g.mul(0) if ndst else None
        gsrc = None
        if nsrc:
            gsrc = sum_to(g, self.src_shape)
            if gsrc._be is not self.src_be:
                gsrc = gsrc.to(self.src_be.device)
            if gsrc._data.dtype != self.src_dtype:
                gsrc = gsrc.to(_dtype.from_numpy_dtype(self.src_dtype))
        return gdst, gsrc


def _copy(dst, src):
    from ..tensor import Tensor
    if not isinstance(src, Tensor):
        from .creation import tensor
        src = tensor(src, dtype=dst.dtype, device=dst.device)
    from ._util import is_expandable_to
    if not is_expandable_to(src._data.shape, dst._data.shape):
        raise RuntimeError(f"The size of tensor a ({list(dst.shape)}) must match the size of tensor b "
                           f"({list(src.shape)}): cannot copy a tensor of shape {list(src.shape)} into one of shape "
                           f"{list(dst.shape)}")
    return CopyBackwards.apply(dst, src)


def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast, moved across devices) into self, in place."""
    return apply_inplace(self, _copy, src, keeps_self=False)


METHODS = {
    "clone": clone, "to": to, "type": type_, "cpu": cpu, "cuda": cuda, "contiguous": contiguous,
    "copy_": copy_,
    "float": _caster(_dtype.float32), "double": _caster(_dtype.float64), "half": _caster(_dtype.float16),
    "bfloat16": _caster(_dtype.bfloat16), "long": _caster(_dtype.int64), "int": _caster(_dtype.int32),
    "short": _caster(_dtype.int16), "char": _caster(_dtype.int8), "byte": _caster(_dtype.uint8),
    "bool": _caster(_dtype.bool),
}
