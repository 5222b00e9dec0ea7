"""Helpers shared by the op modules: dim wrapping, broadcasting, scalars, gradient reduction.

Dim wrapping and broadcasting are defined once in ``_shapes`` (below Tensor) and ``sum_to`` in autograd;
they are re-exported here because every op module needs them.
"""
import builtins

from .. import _dtype
from .._mode import _state
from .._shapes import broadcast_shapes, is_expandable_to, wrap_dim, wrap_dims
from ..autograd.node import sum_to
from ..tensor import Tensor

__all__ = ["wrap_dim", "wrap_dims", "sum_to", "is_expandable_to", "broadcast_shapes", "to_tensor_like",
           "scalar_for", "is_tensor", "METHODS_ATTR"]

METHODS_ATTR = "METHODS"


def is_tensor(x):
    return isinstance(x, Tensor)


def scalar_for(value, dtype):
    """A Python scalar converted so that the backend computes in ``dtype`` (ints wrap like PyTorch's)."""
    if dtype.is_floating_point:
        return builtins.float(value)
    if dtype is _dtype.bool:
        return builtins.bool(value)
    v = builtins.int(value)
    info_bits = dtype.itemsize * 8
    if dtype is _dtype.uint8:
        return v % 256
    lo, hi = -(1 << (info_bits - 1)), (1 << (info_bits - 1)) - 1
    if v < lo or v > hi:
        v = (v - lo) % (1 << info_bits) + lo
    return v


def to_tensor_like(value, ref, dtype=None):
    """A Python scalar (or array-like) as a tensor on ``ref``'s device, in ``dtype`` (default: its own)."""
    if isinstance(value, Tensor):
        return value
    be = ref._be
    if dtype is None:
        dtype = _dtype.result_type(value)
    return Tensor._make(be.asarray(value, be.np_dtype(dtype)), be)


def grad_enabled():
    return _state.grad
