"""``finfo`` and ``iinfo``: the numerical limits of each dtype, as PyTorch's ``torch.finfo`` / ``torch.iinfo``.

Float limits follow from each format's widths (sign, exponent and mantissa bits), so bfloat16 needs no array
library that knows it:

    >>> import minitorch_gpu as mt
    >>> mt.finfo(mt.float16).max, mt.finfo(mt.bfloat16).eps, mt.iinfo(mt.int8).min
    (65504.0, 0.0078125, -128)
"""
from __future__ import annotations

import math
from typing import Any

from . import _dtype

__all__ = ["finfo", "iinfo"]

# dtype -> (exponent bits, mantissa bits): IEEE 754 binary16/32/64 and bfloat16 (float32's exponent, 7 bits)
_FLOAT_FORMATS = {_dtype.float16: (5, 10), _dtype.bfloat16: (8, 7), _dtype.float32: (8, 23), _dtype.float64: (11, 52)}


def _check_dtype(fn: str, value: Any) -> Any:
    if not isinstance(value, _dtype.dtype):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be minitorch_gpu.dtype, not "
                        f"{type(value).__name__}")
    return value


class _TypeInfo:
    """The common part of finfo and iinfo: read-only attributes, equal when the dtype is."""

    __slots__ = ("bits", "min", "max", "dtype")
    _fields: tuple[str, ...] = ()
    bits: int
    dtype: str

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"attribute '{name}' of 'minitorch_gpu.{type(self).__name__}' objects is not writable")

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.dtype == self.dtype  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.dtype))

    def __repr__(self) -> str:
        parts = [f"{name}={getattr(self, name):g}" for name in self._fields]
        return f"{type(self).__name__}({', '.join(parts)}, dtype={self.dtype})"


class finfo(_TypeInfo):
    """Limits of a floating dtype (the default dtype when none is given): ``bits``, ``eps`` (the gap between
    1.0 and the next value), ``max``, ``min``, ``tiny`` = ``smallest_normal`` (the smallest positive normal
    value), ``resolution`` (10 ** -decimal digits) and ``dtype`` (its name)."""

    __slots__ = ("eps", "tiny", "smallest_normal", "resolution")
    _fields = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float

    def __init__(self, type: Any = None) -> None:
        dt = _dtype.get_default_dtype() if type is None else _check_dtype("finfo", type)
        if dt not in _FLOAT_FORMATS:
            raise TypeError("minitorch_gpu.finfo() requires a floating point input type. Use minitorch_gpu.iinfo "
                            "to handle 'minitorch_gpu.finfo'")
        exp_bits, mant_bits = _FLOAT_FORMATS[dt]
        max_exp = 2 ** (exp_bits - 1) - 1
        largest = math.ldexp(2.0 - math.ldexp(1.0, -mant_bits), max_exp)
        normal = math.ldexp(1.0, 1 - max_exp)
        # decimal digits that survive a round trip through the format, as C++'s numeric_limits::digits10
        digits10 = math.floor(mant_bits * math.log10(2))
        self._set(bits=dt.itemsize * 8, eps=math.ldexp(1.0, -mant_bits), max=largest, min=-largest, tiny=normal,
                  smallest_normal=normal, resolution=float(f"1e-{digits10}"), dtype=dt.name)


class iinfo(_TypeInfo):
    """Limits of an integer dtype: ``bits``, ``min``, ``max`` and ``dtype`` (its name)."""

    __slots__ = ()
    _fields = ("min", "max")
    max: int
    min: int

    def __init__(self, type: Any) -> None:
        dt = _check_dtype("iinfo", type)
        if dt is _dtype.bool:
            raise TypeError(f"{dt!r} is not supported by minitorch_gpu.iinfo")
        if dt.is_floating_point:
            raise TypeError("minitorch_gpu.iinfo() requires an integer input type. Use minitorch_gpu.finfo to "
                            "handle 'minitorch_gpu.iinfo'")
        bits = dt.itemsize * 8
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt.is_signed else (0, (1 << bits) - 1)
        self._set(bits=bits, min=lo, max=hi, dtype=dt.name)
