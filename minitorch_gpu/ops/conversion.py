"""Copies and conversions that autograd tracks: clone, to(device/dtype/other), the dtype shorthands
(float(), long(), ...), type(), type_as(), contiguous, copy_, cpu/cuda, and the memory formats."""
import builtins
import warnings

from .. import _dtype
from .._device import device as _device_cls
from ..autograd.node import Op, bump_version
from ..autograd.grad_mode import _state
from ..backends import get_backend
from ..backends.cuda import device as _cuda_probe
from ..tensor import Tensor
from ..autograd._inplace import apply_inplace
from ._util import check_tensor, sum_to
from .creation import zeros_like
from .legacy_types import LegacyTensorType

__all__ = ["clone", "memory_format", "contiguous_format", "preserve_format", "channels_last"]


class memory_format:
    """How a copy lays out its elements: ``contiguous_format`` (row-major), ``preserve_format`` (keep the
    source's stride order when it is dense) or ``channels_last`` (NHWC order for a 4-d NCHW tensor)."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"minitorch_gpu.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")


def _check_format(x, fmt):
    if fmt is None or fmt is preserve_format or fmt is contiguous_format:
        return
    if fmt is channels_last:
        if x._data.ndim != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
        return
    raise TypeError(f"memory_format must be a minitorch_gpu.memory_format, not {type(fmt).__name__}")


def _copy_array(be, arr, fmt):
    if fmt is None or fmt is preserve_format:
        return be.copy_preserve(arr)
    if fmt is channels_last:
        return be.copy_channels_last(arr)
    return be.copy(arr)


def transfer(arr, src_be, dst_be):
    """``arr`` (an array of ``src_be``) as an array of ``dst_be``: GPU to GPU directly, otherwise through host
    memory. Returns ``arr`` itself when both backends are the same."""
    if src_be is dst_be:
        return arr
    if src_be.device.type == "cuda" and dst_be.device.type == "cuda":
        return dst_be.asarray(arr, copy=True)
    return dst_be.asarray(src_be.to_numpy(arr))


class CloneBackward0(Op):
    def forward(self, x, memory_format=None):
        return _copy_array(x._be, x._data, memory_format)

    def backward(self, g):
        return (g,)


def clone(input, *, memory_format=None):
    """A copy with its own memory; gradients flow back to ``input``. The default ``preserve_format`` keeps a
    dense input's stride order (a transposed input clones to a transposed layout, like PyTorch)."""
    _check_format(input, memory_format)
    return CloneBackward0.apply(input, memory_format=memory_format)


class ToCopyBackward0(Op):
    @classmethod
    def apply(cls, x, **params):
        # Op.apply wraps the result with the input's backend; a copy to another device belongs to the target's
        r = super().apply(x, **params)
        r._be = params["be"]
        return r

    def forward(self, x, be, np_dtype, copy, memory_format=None):
        self.src_be = x._be
        self.src_dtype = x.dtype
        data = transfer(x._data, x._be, be)
        moved = data is not x._data
        if memory_format is not None and memory_format is not preserve_format:
            out = _copy_array(be, be.astype(data, np_dtype), memory_format)
            return out
        return be.astype(data, np_dtype, copy=copy and not moved)

    def backward(self, g):
        out = g
        if g._be is not self.src_be or g.dtype is not self.src_dtype:
            out = out.to(device=self.src_be.device, dtype=self.src_dtype)
        return (out,)


def _as_dtype(a):
    if isinstance(a, _dtype.dtype):
        return a
    if a is builtins.float or a is builtins.int or a is builtins.bool:
        return _dtype.to_dtype(a)
    return None


def _is_device_arg(a):
    return isinstance(a, (str, _device_cls)) or (isinstance(a, builtins.int) and not isinstance(a, builtins.bool))


def _parse_to_args(args, kwargs):
    """(device, dtype, non_blocking, copy, memory_format) from the overloads ``to(dtype, non_blocking, copy)``,
    ``to(device, dtype, non_blocking, copy)`` and ``to(other, non_blocking, copy)``."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    fmt = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    rest = args
    if rest:
        a = rest[0]
        if isinstance(a, Tensor):
            device, dtype = a._be.device, a.dtype
            rest = rest[1:]
        elif _as_dtype(a) is not None:
            dtype = _as_dtype(a)
            rest = rest[1:]
        elif a is None or _is_device_arg(a):
            device = a
            rest = rest[1:]
            if rest and (rest[0] is None or _as_dtype(rest[0]) is not None):
                dtype = None if rest[0] is None else _as_dtype(rest[0])
                rest = rest[1:]
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__}, ...), "
                            "but expected one of: (device, dtype, non_blocking, copy), (dtype, non_blocking, "
                            "copy), (Tensor other, non_blocking, copy)")
    if len(rest) > 2 or not all(isinstance(r, builtins.bool) for r in rest):
        raise TypeError(f"to() received an invalid combination of arguments: {args!r}")
    if rest:
        non_blocking = rest[0]
        if len(rest) > 1:
            copy = rest[1]
    if dtype is not None:
        dtype = _dtype.to_dtype(dtype)
    return device, dtype, non_blocking, copy, fmt


def to(self, *args, **kwargs):
    """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)``: a converted copy that autograd
    tracks (for floating results), or ``self`` when nothing changes and ``copy`` is False."""
    device, dtype, _, copy, fmt = _parse_to_args(args, dict(kwargs) if kwargs else {})
    be = self._be if device is None else get_backend(device)
    dt = self.dtype if dtype is None else dtype
    if be is self._be and dt is self.dtype and not copy and (fmt is None or fmt is preserve_format):
        return self
    _check_format(self, fmt)
    return ToCopyBackward0.apply(self, be=be, np_dtype=be.np_dtype(dt), copy=copy, memory_format=fmt)


def _caster(dt):
    def cast(self, memory_format=None):
        if self.dtype is dt and memory_format is None:
            return self
        return to(self, dt, memory_format=memory_format)
    cast.__name__ = dt.name
    cast.__doc__ = f"This tensor as {dt} (itself if it already is)."
    return cast


def _parse_type_string(name):
    text = name
    for prefix in ("minitorch_gpu.", "torch."):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    else:
        raise ValueError(f"invalid type: '{name}'")
    on_cuda = text.startswith("cuda.")
    if on_cuda:
        text = text[len("cuda."):]
    dt = _dtype._BY_TENSOR_NAME.get(text)
    if dt is None:
        raise ValueError(f"invalid type: '{name}'")
    return dt, on_cuda


def type_(self, dtype=None, non_blocking=False, **kwargs):
    """With no argument the type name (``'minitorch_gpu.FloatTensor'``, ``'minitorch_gpu.cuda.FloatTensor'``),
    else this tensor cast to a dtype or a type name."""
    if dtype is None:
        prefix = "minitorch_gpu.cuda." if self._be.device.type == "cuda" else "minitorch_gpu."
        return prefix + self.dtype._tensor_name
    if isinstance(dtype, str):
        dt, on_cuda = _parse_type_string(dtype)
    elif isinstance(dtype, LegacyTensorType):  # ``x.type(mt.LongTensor)``
        dt, on_cuda = dtype.dtype, dtype.is_cuda
    else:
        return to(self, _dtype.to_dtype(dtype))
    if on_cuda != (self._be.device.type == "cuda"):
        return to(self, "cuda" if on_cuda else "cpu", dt)
    return to(self, dt)


def type_as(self, other):
    """This tensor with ``other``'s dtype (and device type)."""
    if self.dtype is other.dtype and self._be.device.type == other._be.device.type:
        return self
    dev = self._be.device if self._be.device.type == other._be.device.type else other._be.device
    return to(self, dev, other.dtype)


def cpu(self, memory_format=None):
    """This tensor in CPU memory (itself when already there)."""
    return to(self, "cpu", memory_format=memory_format)


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """This tensor on a GPU (the current one by default, or ``device``: an index, ``'cuda:1'``, ...).
    RuntimeError when CUDA is not available or the device does not exist."""
    if device is None:
        device = "cuda"
    elif isinstance(device, builtins.int) and not isinstance(device, builtins.bool):
        device = _device_cls("cuda", device)
    else:
        device = _device_cls(device)
        if device.type != "cuda":
            raise RuntimeError(f"Invalid device, must be cuda device (got {device})")
    return to(self, device, memory_format=memory_format)


def _is_channels_last(arr):
    if arr.ndim != 4:
        return False
    n, c, h, w = arr.shape
    s = [st // arr.itemsize for st in arr.strides]
    expect_w = c
    return (c == 1 or s[1] == 1) and (w == 1 or s[3] == expect_w) and (h == 1 or s[2] == w * c) and \
        (n == 1 or s[0] == h * w * c)


def contiguous(self, memory_format=None):
    """This tensor if it is laid out row-major (or in ``memory_format``), else such a copy."""
    if memory_format is None or memory_format is contiguous_format or memory_format is preserve_format:
        if self._be.is_contiguous(self._data):
            return self
        return CloneBackward0.apply(self, memory_format=contiguous_format)
    _check_format(self, memory_format)
    if _is_channels_last(self._data):
        return self
    return CloneBackward0.apply(self, memory_format=memory_format)


class CopyBackwards(Op):
    def forward(self, dst, src):
        self.src_shape = src._data.shape
        self.src_be = src._be
        self.src_dtype = src.dtype
        data = transfer(src._data, src._be, dst._be)
        be = dst._be
        if data.shape != dst._data.shape:
            data = be.broadcast_to(data, dst._data.shape)
        return be.astype(data, dst._data.dtype, copy=True)

    def backward(self, g):
        ndst, nsrc = self.needs_input_grad
        gdst = zeros_like(g) if ndst else None
        gsrc = None
        if nsrc:
            gsrc = sum_to(g, self.src_shape)
            if gsrc._be is not self.src_be or gsrc.dtype is not self.src_dtype:
                gsrc = gsrc.to(device=self.src_be.device, dtype=self.src_dtype)
        return gdst, gsrc


def _check_copy_shapes(dst_shape, src_shape):
    if len(src_shape) > len(dst_shape):
        raise RuntimeError(f"output with shape {list(dst_shape)} doesn't match the broadcast shape "
                           f"{list(src_shape[:len(src_shape) - len(dst_shape)]) + list(dst_shape)}")
    off = len(dst_shape) - len(src_shape)
    for i, n in enumerate(src_shape):
        d = dst_shape[off + i]
        if n != d and n != 1:
            raise RuntimeError(f"The size of tensor a ({d}) must match the size of tensor b ({n}) at "
                               f"non-singleton dimension {off + i}")


def _copy(dst, src):
    return CopyBackwards.apply(dst, src)


def copy_(self, src, non_blocking=False):
    """Copy ``src`` into self in place: broadcast to self's shape, cast to self's dtype, moved across devices.
    Gradients flow to ``src`` (and not to self's old value)."""
    check_tensor(src, "copy_", "other", 1)
    _check_copy_shapes(self._data.shape, src._data.shape)
    if not (_state.grad and (self.requires_grad or src.requires_grad)):
        self._check_inplace()
        self._be.copy_into(self._data, transfer(src._data, src._be, self._be))
        bump_version(self)
        return self
    return apply_inplace(self, _copy, src, keeps_self=False)


class PinMemoryBackward0(Op):
    def forward(self, x, cuda_be):
        return cuda_be.pin(x._be.to_numpy(x._data))

    def backward(self, g):
        return (g,)


def _pinning_backend(device, method):
    """The CUDA backend whose page-locked memory ``pin_memory`` / ``is_pinned`` use, or None with no GPU."""
    if device is not None:
        warnings.warn(f"The argument 'device' of Tensor.{method}() is deprecated. Please do not pass this "
                      "argument.", DeprecationWarning, stacklevel=3)
        if _device_cls(device).type != "cuda":
            raise RuntimeError(f"{_device_cls(device).type.upper()} device type not an accelerator.")
    if not _cuda_probe.is_available():
        return None
    return get_backend("cuda" if device is None else device)


def pin_memory(self, device=None):
    """This CPU tensor copied into page-locked host memory (itself if it already is there), from which a copy
    to the GPU can run asynchronously. RuntimeError without a GPU, as in PyTorch.

        >>> x = mt.arange(4.).pin_memory()  # doctest: +SKIP (needs a GPU or the simulator)
        >>> x.is_pinned(), x.to("cuda", non_blocking=True).device
        (True, device(type='cuda', index=0))
    """
    if self._be.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{type_(self)}' only dense CPU "
                           "tensors can be pinned")
    be = _pinning_backend(device, "pin_memory")
    if be is None:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if be.is_pinned(self._data):
        return self
    return PinMemoryBackward0.apply(self, cuda_be=be)


def is_pinned(self, device=None):
    """Whether this tensor lies in page-locked host memory (``pin_memory``); False for GPU tensors and
    whenever there is no GPU."""
    be = _pinning_backend(device, "is_pinned")
    return be is not None and self._be.device.type == "cpu" and be.is_pinned(self._data)


def is_contiguous(self, memory_format=None):
    """Whether the elements are laid out densely in row-major order (or in ``memory_format``'s order)."""
    if memory_format is channels_last:
        return _is_channels_last(self._data)
    return self._be.is_contiguous(self._data)


METHODS = {
    "is_contiguous": is_contiguous,
    "clone": clone, "to": to, "type": type_, "type_as": type_as, "cpu": cpu, "cuda": cuda,
    "contiguous": contiguous, "copy_": copy_, "pin_memory": pin_memory, "is_pinned": is_pinned,
    "float": _caster(_dtype.float32), "double": _caster(_dtype.float64), "half": _caster(_dtype.float16),
    "bfloat16": _caster(_dtype.bfloat16), "long": _caster(_dtype.int64), "int": _caster(_dtype.int32),
    "short": _caster(_dtype.int16), "char": _caster(_dtype.int8), "byte": _caster(_dtype.uint8),
    "bool": _caster(_dtype.bool),
}
