"""``float array ** Python number`` on the CPU, without glibc's slow ``pow``.

NumPy's ``power`` calls ``powf``/``pow`` per element, and glibc takes a path about 50x slower for a negative base
(about 50 ns an element for ``x ** 3.0``), so a transformer's ``x ** 3`` cost more than its matrix products.
PyTorch's CPU kernel computes the exponents of ``_TORCH_ROWS`` by multiplications, a square root or a division;
doing the same here gives its results bit for bit. Every other exponent goes through ``power`` on ``|x|``, which is
fast, with the sign of an odd integer power copied back and NaN written where a negative finite base has a
fractional power: the IEEE results of ``pow``, at about the speed of PyTorch's ``std::pow`` loop.

``scalar_pow(x, e)`` returns None where NumPy's ``power`` already does the right thing at full speed (integer
arrays, array exponents); the caller then uses it.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._types import Array

__all__ = ["scalar_pow"]


def _square(x: Array, out: Array) -> None:
    np.multiply(x, x, out=out)


def _cube(x: Array, out: Array) -> None:
    np.multiply(x, x, out=out)
    np.multiply(out, x, out=out)


def _rsqrt(x: Array, out: Array) -> None:
    np.sqrt(x, out=out)
    np.divide(1, out, out=out)


def _reciprocal(x: Array, out: Array) -> None:
    np.divide(1, x, out=out)


def _inv_square(x: Array, out: Array) -> None:
    np.multiply(x, x, out=out)
    np.divide(1, out, out=out)


# the exponents PyTorch's pow kernel special-cases, each computed into ``out`` in its order of operations
_TORCH_ROWS: dict[float, Callable[[Array, Array], None]] = {
    2.0: _square, 3.0: _cube, 0.5: np.sqrt, -0.5: _rsqrt, -1.0: _reciprocal, -2.0: _inv_square,
}

# elements per block of a two-step row: 256 KB of float32, so the second step reads what the first left in L2
# (a third faster than two passes over 1M elements)
_BLOCK = 1 << 16


def _run_blocked(body: Callable[[Array, Array], None], x: Array) -> Array:
    out = np.empty_like(x)
    if not x.flags.c_contiguous or x.size <= _BLOCK:
        body(x, out)
        return out
    xf, of = x.reshape(-1), out.reshape(-1)
    for start in range(0, xf.size, _BLOCK):
        body(xf[start:start + _BLOCK], of[start:start + _BLOCK])
    return out


# per float width: the integer type of that width and the exponent and quiet bits of a NaN, which OR-ed into
# any value make it NaN
_QUIET_NAN_BITS: dict[int, tuple[type[np.signedinteger[Any]], int]] = {2: (np.int16, 0x7E00), 4: (np.int32, 0x7FC00000), 8: (np.int64, 0x7FF8000000000000)}


def _pow_of_abs(x: Array, e: float) -> Array:
    """``x ** e`` for any float exponent, through ``power`` on ``|x|`` (never a negative base)."""
    negative = np.less(x, 0)
    if not negative.any():
        return np.power(x, e)
    r = np.power(np.abs(x), e)
    if math.isinf(e):
        # pow(x, +-inf) depends on |x| only (1 at x = -1, as at 1), which r holds; inf has no parity to copy
        return r
    if e.is_integer():
        if e % 2:
            np.copysign(r, x, out=r)  # (-a) ** odd = -(a ** odd), -0.0 and infinities included
        return r
    # a negative finite base has no real fractional power; -inf ** e equals inf ** e, which r holds already
    negative_finite = negative
    negative_finite &= np.greater(x, -np.inf)
    # NOTE: selecting with where() on a data-dependent mask runs at branch-misprediction speed; an OR of bits
    # does not branch
    int_t, nan_bits = _QUIET_NAN_BITS[r.dtype.itemsize]
    bits = np.negative(negative_finite.view(np.int8), dtype=int_t)
    np.bitwise_and(bits, int_t(nan_bits), out=bits)
    np.bitwise_or(r.view(int_t), bits, out=r.view(int_t))
    return r


def scalar_pow(x: Array, e: object) -> Array | None:
    """``x ** e`` for a float NumPy array and a Python float, as PyTorch's CPU kernel computes it; None for
    anything else."""
    if not isinstance(e, float) or x.dtype.kind != "f":
        return None
    if x.ndim == 0:
        # the in-place steps below need an array: NumPy turns 0-d results into scalars
        r = scalar_pow(x.reshape(1), e)
        return None if r is None else r.reshape(())
    row = _TORCH_ROWS.get(e)
    if row is not None:
        return _run_blocked(row, x)
    return _pow_of_abs(x, e)
