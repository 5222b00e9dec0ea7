"""``torch.testing.make_tensor``: a tensor of random values for tests, from the default generator."""
from __future__ import annotations

import math
from typing import Any

from .. import _dtype
from .._dtype import dtype as DType
from ..ops import creation, random
from ..tensor import Tensor

__all__ = ["make_tensor"]

# PyTorch's default value ranges: [-9, 9) for floats, [-9, 10) for integers, [0, 10) for unsigned ones
_FLOAT_RANGE = (-9.0, 9.0)
_INT_RANGE = (-9, 10)
# the smallest normal value of each float dtype, which replaces zero under exclude_zero
_TINY = {_dtype.float16: 2.0 ** -14, _dtype.bfloat16: 2.0 ** -126, _dtype.float32: 2.0 ** -126,
         _dtype.float64: 2.0 ** -1022}


def _range(dt: DType, low: float | None, high: float | None) -> tuple[float, float]:
    lo_default, hi_default = _FLOAT_RANGE if dt.is_floating_point else (0, 10) if dt is _dtype.uint8 else _INT_RANGE
    lo = lo_default if low is None else low
    hi = hi_default if high is None else high
    for name, v in (("low", lo), ("high", hi)):
        if isinstance(v, float) and math.isnan(v):
            raise ValueError(f"`{name}` cannot be NaN, but got {name}={v}.")
    if lo > hi:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {lo} > {hi}.")
    return lo, hi


def make_tensor(*shape: Any, dtype: DType, device: Any, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` filled with random values in [low, high) (floats: [-9, 9) by default, integers:
    [-9, 10), bool: False / True).

    >>> make_tensor(2, 3, dtype=mt.float32, device="cpu").shape
    minitorch_gpu.Size([2, 3])
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dt = _dtype.to_dtype(dtype)
    if requires_grad and not dt.is_floating_point:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes")
    if dt is _dtype.bool:
        t = random.randint(0, 2, shape, device=device).to(_dtype.bool)
    elif dt.is_floating_point:
        lo, hi = _range(dt, low, high)
        t = random.rand(*shape, dtype=dt, device=device) * (hi - lo) + lo
    else:
        lo, hi = _range(dt, low, high)
        t = random.randint(math.ceil(lo), max(math.ceil(hi), math.ceil(lo) + 1), shape, dtype=dt, device=device)
    if exclude_zero:
        # zero becomes the smallest positive value of the dtype (one, for integers)
        tiny = _TINY.get(dt, 1)
        t = t.masked_fill(t == 0, tiny)
    if noncontiguous and t.numel() > 1:
        # the same values, every other element of a buffer twice as long in the last dim
        t = creation.empty(*shape[:-1], shape[-1] * 2, dtype=dt, device=device)[..., ::2].copy_(t)
    return t.requires_grad_(requires_grad)
