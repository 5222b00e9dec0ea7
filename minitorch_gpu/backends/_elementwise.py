"""Elementwise primitives: unary, binary and ternary maps, by name, plus the special functions (erf,
erfinv, sigmoid, gelu, softplus) that the array modules lack or compute unstably.

``unary(name, x, out=None)`` and ``binary(name, a, b, out=None)`` look the name up in a per-backend table
built once from the primitive table (``_elementwise_table.PRIMITIVES``): each row names either the array
library's function or the method below that computes it, so a call costs one dict lookup. Bodies are written
against ``self.xp`` so they serve NumPy and CuPy alike.

Inputs arrive already in their result dtype (the op layer applies PyTorch's promotion); a Python scalar
operand keeps the array's dtype (NEP 50 "weak" scalars), which is PyTorch's rule as well. With a 16-bit float
array a Python float computes in float32 with the scalar's float32 value and rounds once (PyTorch's "opmath";
the op layer rounds the scalar to the 16-bit type first where PyTorch does): the CUDA kernels do that in one pass.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from ._elementwise_table import Prim, by_arity
from ._types import Array, NpDtype, Operand, PrimitiveHost

_SQRT1_2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_GELU_TANH_BETA = 0.7978845608028654  # sqrt(2 / pi)
_GELU_TANH_KAPPA = 0.044715
# signed integers as wide as each float dtype: bit-level selection
_INT_OF_SIZE: dict[int, type[np.signedinteger[Any]]] = {2: np.int16, 4: np.int32, 8: np.int64}

_Body = TypeVar("_Body", bound=Callable[..., Any])
Map = Callable[..., Any]
"""A unary or binary map: ``fn(x[, y], out=None)``."""


def _lift_0d(fn: _Body) -> _Body:
    """Run a multi-step primitive on a 1-element view of a 0-d input: NumPy turns 0-d results into scalars,
    which the in-place steps (``out=``) cannot write to."""
    @functools.wraps(fn)
    def run(self: Any, x: Array, *args: Any, **kwargs: Any) -> Array:
        if x.ndim == 0:
            out = kwargs.get("out")
            if out is not None:
                kwargs["out"] = out.reshape(1)
            args = tuple(a.reshape(1) if getattr(a, "ndim", None) == 0 else a for a in args)
            r = fn(self, x.reshape(1), *args, **kwargs)
            return r.reshape(()) if out is None else out
        return fn(self, x, *args, **kwargs)
    return cast(_Body, run)


def _copy_to(xp: Any, out: Array | None, r: Array) -> Array:
    """``r``, or ``out`` holding it: for bodies that compute into a temporary."""
    if out is None:
        return r
    xp.copyto(out, r)
    return out


class ElementwiseMixin(PrimitiveHost):
    _ndarray: type
    _utab: dict[str, Map]
    _btab: dict[str, Map]

    # ---------------------------------------------------------------- dispatch tables
    def _map_of(self, row: Prim) -> Map:
        if row.body is not None:
            fn: Map = getattr(self, row.body)
            return fn
        if row.xp is None:
            raise TypeError(f"primitive {row.name} has neither an array-library function nor a body")
        ufunc: Map = getattr(self.xp, row.xp)
        return ufunc

    def _build_tables(self) -> None:
        self._ndarray = self.xp.ndarray
        self._utab = {name: self._map_of(row) for name, row in by_arity("unary").items()}
        self._btab = {name: self._map_of(row) for name, row in by_arity("binary").items()}

    def unary(self, name: str, x: Array, out: Array | None = None) -> Array:
        try:
            fn = self._utab[name]
        except AttributeError:
            self._build_tables()
            fn = self._utab[name]
        r = fn(x) if out is None else fn(x, out=out)
        # NumPy returns a scalar for 0-d operands; tensors always hold arrays
        return r if r.__class__ is self._ndarray else self.xp.asarray(r)

    def binary(self, name: str, a: Operand, b: Operand, out: Array | None = None) -> Array:
        try:
            fn = self._btab[name]
        except AttributeError:
            self._build_tables()
            fn = self._btab[name]
        if a.__class__ is float or b.__class__ is float:
            arr = b if a.__class__ is float else a
            nd: Any = self._ndarray
            if arr.__class__ is nd and arr.dtype.itemsize == 2 and arr.dtype.kind in "fV":
                return self._binary_low_scalar(fn, a, b, arr, out)
        r = fn(a, b) if out is None else fn(a, b, out=out)
        return r if r.__class__ is self._ndarray else self.xp.asarray(r)

    def _binary_low_scalar(self, fn: Map, a: Operand, b: Operand, arr: Array, out: Array | None) -> Array:
        """``fn(a, b)`` of a 16-bit float array ``arr`` and a Python float: in float32, the scalar's float32 value,
        a float result rounded once to the array's dtype (a comparison's bool result as it is)."""
        xp = self.xp
        wide = arr.astype(np.float32)
        # a scalar beyond float32's range is inf, and so is a result beyond the 16-bit range, as PyTorch converts
        with np.errstate(all="ignore"):
            s = np.float32(b if arr is a else a)
            r = xp.asarray(fn(wide, s) if arr is a else fn(s, wide))
            if r.dtype == np.float32:
                if out is None:
                    return r.astype(arr.dtype)
                xp.copyto(out, r, casting="unsafe")
                return out
        return _copy_to(xp, out, r)

    def where(self, cond: Array, a: Operand, b: Operand) -> Array:
        return self.xp.asarray(self.xp.where(cond, a, b))

    @_lift_0d
    def threshold_backward(self, g: Array, x: Array, threshold: float) -> Array:
        """0 where ``x <= threshold``, else ``g``: the gradient of relu (``x`` its output, threshold 0). A NaN ``x``
        passes ``g``, as in PyTorch."""
        xp = self.xp
        drop = xp.less_equal(x, threshold)
        if g.shape != drop.shape or g.dtype.kind not in "fV" or g.dtype.itemsize not in _INT_OF_SIZE:
            return xp.asarray(xp.where(drop, g.dtype.type(0), g))
        # NOTE: where() with a data-dependent mask runs at branch-misprediction speed in NumPy (a random
        # half-positive mask costs ~15x a multiply); selecting by bit mask is branch-free, and exact where
        # g * mask is not (an inf or NaN gradient at a masked position must still give 0)
        bits_t = _INT_OF_SIZE[g.dtype.itemsize]
        bits = xp.subtract(drop.view(np.int8), 1, dtype=bits_t)  # 0 where dropped, else -1: every bit set
        xp.bitwise_and(bits, g.view(bits_t), out=bits)
        return bits.view(g.dtype)

    def isclose(self, a: Array, b: Array, rtol: float, atol: float, equal_nan: bool) -> Array:
        """|a - b| <= atol + rtol |b| or a == b (so equal infinities are close); an infinite difference never
        is. Floats narrower than float32 compare in float32, integers in float64; no NumPy warnings for
        the inf - inf on the way."""
        xp = self.xp
        close = xp.equal(a, b)
        kind = a.dtype.kind
        if kind == "b":
            return xp.asarray(close)
        ct = np.float64 if kind in "iu" else (np.float32 if a.dtype.itemsize < 4 else a.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            ac, bc = a.astype(ct, copy=False), b.astype(ct, copy=False)
            diff = xp.abs(ac - bc)
            tol = xp.abs(bc) * rtol + atol
            close = close | ((diff <= tol) & xp.isfinite(diff))
        if equal_nan and kind not in "iu":
            close = close | (xp.isnan(a) & xp.isnan(b))
        return xp.asarray(close)

    def narrow(self, x: Array, np_dtype: NpDtype) -> Array:
        """``x`` rounded to a narrower float dtype (float32 -> float16 / bfloat16); values beyond its range
        become inf silently, as PyTorch's casts do."""
        if self.xp is np:
            with np.errstate(over="ignore"):
                return np.asarray(x.astype(np_dtype))
        return x.astype(np_dtype)

    def isnan_any(self, x: Array) -> bool:
        return bool(self.xp.isnan(x).any())

    def isfinite_all(self, x: Array) -> bool:
        """Whether no element of ``x`` is inf or NaN."""
        xp = self.xp
        # a finite sum proves it in one pass without a temporary; only an inf/NaN sum (or an overflow)
        # needs the elementwise test
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, or an overflowing sum
            total = x.sum()
        if bool(xp.isfinite(total)):
            return True
        return bool(xp.isfinite(x).all())

    def clamp(self, x: Array, lo: Operand | None, hi: Operand | None) -> Array:
        """min(max(x, lo), hi): NaN propagates from x and from the bounds, and lo > hi gives hi (PyTorch)."""
        xp = self.xp
        if lo is not None and hi is not None and x.dtype.kind in "fiu":
            # the same two selects, in one pass without a temporary (ml_dtypes' bfloat16, kind "V", has no clip
            # loop: NumPy would compute it in float32)
            return xp.asarray(xp.clip(x, lo, hi))
        if lo is not None:
            x = xp.maximum(x, lo)
        if hi is not None:
            x = xp.minimum(x, hi)
        return xp.asarray(x)

    @_lift_0d
    def round(self, x: Array, decimals: int = 0) -> Array:
        """Round half to even; ``decimals`` scales by a power of ten first, as PyTorch does."""
        xp = self.xp
        if decimals == 0:
            return xp.rint(x)
        if decimals > 0:
            f = 10.0 ** decimals
            return xp.true_divide(xp.rint(x * f), f).astype(x.dtype, copy=False)
        f = 10.0 ** (-decimals)
        return xp.multiply(xp.rint(x / f), f).astype(x.dtype, copy=False)

    # ---------------------------------------------------------------- unary bodies (named by the primitive table)
    @_lift_0d
    def _sign(self, x: Array, out: Array | None = None) -> Array:
        # PyTorch's sign is 0 for NaN (NumPy's is NaN) and keeps bool as bool
        xp = self.xp
        if x.dtype.kind == "b":
            return x.copy() if out is None else xp.copyto(out, x)
        if x.dtype.kind in "iu":
            return xp.sign(x) if out is None else xp.sign(x, out=out)
        r = xp.greater(x, 0).astype(x.dtype)
        r -= xp.less(x, 0)
        if out is not None:
            xp.copyto(out, r)
            return out
        return r

    @_lift_0d
    def _rsqrt(self, x: Array, out: Array | None = None) -> Array:
        if x.dtype.itemsize == 2:
            # one rounding, from float32, as PyTorch's half kernels do (sqrt then reciprocal in half rounds twice)
            r = self.narrow(self._rsqrt(x.astype(np.float32)), x.dtype)
            if out is not None:
                self.xp.copyto(out, r)
                return out
            return r
        r = self.xp.sqrt(x, out=out)
        return self.xp.reciprocal(r, out=r)

    @_lift_0d
    def _frac(self, x: Array, out: Array | None = None) -> Array:
        # x - trunc(x) into trunc's own buffer: one temporary fewer
        r = self.xp.trunc(x)
        self.xp.subtract(x, r, out=r)
        return _copy_to(self.xp, out, r)

    def _scaled(self, x: Array, factor: float, out: Array | None, ufunc: str) -> Array:
        """x times a constant (degrees <-> radians): a SIMD multiply where NumPy's own ufunc has a scalar loop;
        2-byte floats keep NumPy's ufunc, which computes them in float32 before rounding."""
        if x.dtype.kind == "f" and x.dtype.itemsize >= 4:
            return self.xp.multiply(x, x.dtype.type(factor), out=out)
        fn = getattr(self.xp, ufunc)
        return fn(x) if out is None else fn(x, out=out)

    def _deg2rad(self, x: Array, out: Array | None = None) -> Array:
        return self._scaled(x, math.pi / 180, out, "deg2rad")

    def _rad2deg(self, x: Array, out: Array | None = None) -> Array:
        return self._scaled(x, 180 / math.pi, out, "rad2deg")

    def _logical_not(self, x: Array, out: Array | None = None) -> Array:
        # x == 0 is the same predicate (NaN is true, so not-NaN is false) with NumPy's SIMD comparison loop
        xp = self.xp
        if x.dtype.kind in "fiu":
            return xp.equal(x, 0) if out is None else xp.equal(x, 0, out=out)
        return xp.logical_not(x) if out is None else xp.logical_not(x, out=out)

    def _truth(self, v: Operand) -> Operand:
        """``v != 0`` for a numeric array (the same truth value: NaN is true), else ``v``: NumPy's logical ufuncs
        turn each float or integer element into a bool in a scalar loop, its comparison has a SIMD one (1M
        float32: logical_and 1.0 ms, two comparisons and an and of the bools 0.2 ms)."""
        return self.xp.not_equal(v, 0) if getattr(v, "ndim", 0) and v.dtype.kind in "fiu" else v

    def _logical_and(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        return self.xp.logical_and(self._truth(a), self._truth(b), out=out)

    def _logical_or(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        return self.xp.logical_or(self._truth(a), self._truth(b), out=out)

    def _logical_xor(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        return self.xp.logical_xor(self._truth(a), self._truth(b), out=out)

    def _relu(self, x: Array, out: Array | None = None) -> Array:
        # clip and maximum keep NaN, like PyTorch's relu. NOTE: NumPy's maximum against a scalar has no SIMD
        # loop (about 6x slower than clip here); clip also keeps -0.0 as PyTorch does (maximum gives +0.0)
        if x.dtype.kind == "f":
            return self.xp.clip(x, x.dtype.type(0), x.dtype.type(np.inf), out=out)
        if x.dtype.kind == "V":
            # bfloat16: clip returns float32 there and maximum gives +0.0 at -0.0
            return _copy_to(self.xp, out, self.xp.where(self.xp.less(x, 0), x.dtype.type(0), x))
        return self.xp.maximum(x, x.dtype.type(0), out=out)

    @_lift_0d
    def _sigmoid(self, x: Array, out: Array | None = None) -> Array:
        """1 / (1 + exp(-x)), PyTorch's formula: where exp(-x) overflows the result is exactly 0 (sigmoid(-inf) is 0;
        a clamped exponent would leave the dtype's smallest normal there). 2-byte floats compute in float32, as
        PyTorch's CPU kernels do."""
        xp = self.xp
        dt = x.dtype
        low = dt.itemsize == 2
        if low:
            x = x.astype(np.float32)
        t = xp.negative(x)
        with np.errstate(over="ignore"):
            xp.exp(t, out=t)
        t += 1
        xp.reciprocal(t, out=t)
        if low:
            t = t.astype(dt)
        if out is not None:
            xp.copyto(out, t)
            return out
        return t

    @_lift_0d
    def _erf_out(self, x: Array, out: Array | None = None) -> Array:
        r = self._erf(x)
        if out is not None:
            self.xp.copyto(out, r)
            return out
        return r

    @_lift_0d
    def _erfinv_out(self, x: Array, out: Array | None = None) -> Array:
        r = self._erfinv(x)
        if out is not None:
            self.xp.copyto(out, r)
            return out
        return r

    # ---------------------------------------------------------------- binary bodies (named by the primitive table)
    def _pow(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        xp = self.xp
        b_arr = hasattr(b, "dtype")
        if b_arr and b.dtype.kind in "iu":
            if not hasattr(a, "dtype"):
                a = xp.asarray(a, dtype=b.dtype)
            neg = b < 0
            if a.dtype.kind in "iu" and neg.any():
                # NumPy refuses negative integer exponents; PyTorch gives 1 / a ** |b| in integer arithmetic:
                # 1 for a == 1, +-1 for a == -1, else 0
                r = xp.power(a, xp.abs(b))
                one = a == 1
                minus_one = (a == -1) if a.dtype.kind == "i" else xp.zeros_like(one)
                odd = (b % 2) != 0
                special = xp.where(one, 1, xp.where(minus_one, xp.where(odd, -1, 1), 0)).astype(r.dtype)
                r = xp.where(neg, special, r)
                if out is not None:
                    xp.copyto(out, r)
                    return out
                return r
        return xp.power(a, b) if out is None else xp.power(a, b, out=out)

    @staticmethod
    def _check_int_divisor(a: Operand, b: Operand) -> None:
        """PyTorch raises on integer division by zero (NumPy returns 0 with a warning)."""
        b_arr = hasattr(b, "dtype")
        if (b if b_arr else a).dtype.kind not in "iub":
            return
        if b_arr:
            if not b.all():
                raise RuntimeError("ZeroDivisionError")
        elif b == 0:
            raise RuntimeError("ZeroDivisionError")

    def _floor_divide(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        self._check_int_divisor(a, b)
        return self.xp.floor_divide(a, b) if out is None else self.xp.floor_divide(a, b, out=out)

    def _remainder(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        self._check_int_divisor(a, b)
        xp = self.xp
        if getattr(a, "dtype", None) is not None and a.dtype.kind in "iu" and (
                b.dtype.kind in "iu" if hasattr(b, "dtype") else b.__class__ is int):
            # a - floor(a / b) * b, exact in wrapping integer arithmetic (the true remainder fits): NumPy's integer
            # floor division by a number has a fast path, its remainder has none and takes a branch per element
            # on negative dividends (1M int32 by 8: 7.4 ms against 0.35 ms)
            q = xp.floor_divide(a, b)
            q = xp.multiply(q, b, out=q) if hasattr(q, "shape") and q.shape else q * b
            return xp.subtract(a, q) if out is None else xp.subtract(a, q, out=out)
        r = xp.remainder(a, b) if out is None else xp.remainder(a, b, out=out)
        if r.dtype.kind == "f":
            r = xp.asarray(r)  # NumPy returns a scalar for 0-d operands
            # NumPy gives a zero the divisor's sign; PyTorch keeps fmod's (the dividend's): remainder(-0.0, 1.0) is
            # -0.0, remainder(3.0, -1.0) is 0.0
            xp.copysign(r, a, out=r, where=r == 0)
        return r

    def _fmod(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        self._check_int_divisor(a, b)
        return self.xp.fmod(a, b) if out is None else self.xp.fmod(a, b, out=out)

    def _trunc_divide(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        """Division rounded toward zero (``div(..., rounding_mode='trunc')``)."""
        xp = self.xp
        if (b if hasattr(b, "dtype") else a).dtype.kind in "iub":
            self._check_int_divisor(a, b)
            # a - fmod(a, b) is an exact multiple of b, so the floor division is exact
            r = xp.floor_divide(xp.subtract(a, xp.fmod(a, b)), b)
        else:
            r = xp.trunc(xp.true_divide(a, b))
        if out is not None:
            xp.copyto(out, r)
            return out
        return r

    # ---------------------------------------------------------------- activations
    @_lift_0d
    def gelu(self, x: Array, approximate: str = "none") -> Array:
        """x * Phi(x) (``approximate='none'``) or its tanh approximation, in x's dtype."""
        dt = x.dtype
        low = dt.itemsize == 2
        if low:
            x = x.astype(np.float32)
        if approximate == "tanh":
            t = self._gelu_tanh_gate(x, clamp=False)[0]
            t *= x
        else:
            t = self._gelu_cdf(x)
            t *= x
        return t.astype(dt) if low else t

    @_lift_0d
    def gelu_backward(self, g: Array, x: Array, approximate: str = "none") -> Array:
        """g * d gelu(x) / dx."""
        xp = self.xp
        dt = x.dtype
        low = dt.itemsize == 2
        if low:
            x = x.astype(np.float32)
            g = g.astype(np.float32)
        if approximate == "tanh":
            # d/dx x s(u) = s + x 2 s (1 - s) u', u' = beta (1 + 3 kappa x^2), with 1 - s = e s
            s, d = self._gelu_tanh_gate(x)
            d *= s
            d *= s
            du = x * x
            du *= x.dtype.type(3 * _GELU_TANH_KAPPA)
            du += x.dtype.type(1)
            d *= du
            d *= x
            d *= x.dtype.type(2 * _GELU_TANH_BETA)
            d += s
            r = d
        else:
            cdf = self._gelu_cdf(x)
            pdf = x * x
            pdf *= x.dtype.type(-0.5)
            xp.exp(pdf, out=pdf)
            pdf *= x.dtype.type(_INV_SQRT_2PI)
            pdf *= x
            cdf += pdf
            r = cdf
        r *= g
        return r.astype(dt) if low else r

    def silu(self, x: Array) -> Array:
        """x * sigmoid(x)."""
        return self.binary("mul", x, self.unary("sigmoid", x))

    def sigmoid_backward(self, g: Array, y: Array) -> Array:
        """g * y (1 - y): the gradient of sigmoid from its output ``y`` (``g`` already in y's dtype)."""
        if y.dtype.itemsize == 2:
            return self.narrow(self.sigmoid_backward(g.astype(np.float32), y.astype(np.float32)), y.dtype)
        return self.binary("mul", g, self.binary("mul", y, self.binary("sub", 1.0, y)))

    def tanh_backward(self, g: Array, y: Array) -> Array:
        """g * (1 - y^2): the gradient of tanh from its output ``y`` (``g`` already in y's dtype). 2-byte floats
        compute in float32 and round once, as PyTorch's kernels do (y^2 rounded to bfloat16 first put the gradient
        at tanh(2) two units in the last place off)."""
        if y.dtype.itemsize == 2:
            return self.narrow(self.tanh_backward(g.astype(np.float32), y.astype(np.float32)), y.dtype)
        return self.binary("mul", g, self.binary("sub", 1.0, self.binary("mul", y, y)))

    @_lift_0d
    def softplus(self, x: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
        """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch's linear region)."""
        xp = self.xp
        dt = x.dtype
        low = dt.itemsize == 2
        xc = x.astype(np.float32) if low else x
        xb = xc * xc.dtype.type(beta) if beta != 1 else xc.copy()
        lin = xb > threshold
        xp.minimum(xb, xc.dtype.type(threshold), out=xb)
        xp.exp(xb, out=xb)
        xp.log1p(xb, out=xb)
        if beta != 1:
            xb /= xc.dtype.type(beta)
        r = xp.where(lin, xc, xb)
        return r.astype(dt) if low else r

    def _gelu_tanh_gate(self, x: Array, clamp: bool = True) -> tuple[Array, Array]:
        """(s, e): s = (1 + tanh(u)) / 2 = 1 / (1 + e), e = exp(-2u), u = beta (x + kappa x^3); tanh-gelu is x s. As
        a sigmoid it keeps full relative accuracy where tanh(u) is near -1 (1 + tanh there cancels to an ulp of 1,
        or to 0), so the gradient for large negative x is as small as it should be; and 1 - s = e s needs no
        subtraction either. With ``clamp`` the exponent stays below overflow, so e is finite (the gradient's e s
        would be inf * 0); without, s is exactly 0 where e overflows, as PyTorch's 1 + tanh(u) is (its gelu of
        -inf is NaN, of -1e30 is -0.0)."""
        xp = self.xp
        e = x * x
        e *= x.dtype.type(_GELU_TANH_KAPPA)
        e += x.dtype.type(1)
        e *= x
        e *= x.dtype.type(-2 * _GELU_TANH_BETA)
        if clamp:
            xp.minimum(e, _exp_limit(e.dtype), out=e)
        with np.errstate(over="ignore", invalid="ignore"):
            xp.exp(e, out=e)
        s = xp.add(e, x.dtype.type(1))
        return xp.reciprocal(s, out=s), e

    # ---------------------------------------------------------------- erf / erfinv
    def _gelu_cdf(self, x: Array) -> Array:
        """Phi(x) = (1 + erf(x / sqrt 2)) / 2 for a float32 or float64 ``x``, as a new array."""
        xp = self.xp
        z = x * x.dtype.type(_SQRT1_2)
        if xp is np and x.dtype == np.float32:
            r = _erf_f32(xp, z, half=True, overwrite=True)
            r += np.float32(0.5)
            return r
        r = self._erf(z)
        r += x.dtype.type(1)
        r *= x.dtype.type(0.5)
        return r

    def _erf(self, x: Array) -> Array:
        """erf in x's dtype. float64: piecewise Chebyshev interpolants of erf(x)/x (about 2 ulp); narrower
        floats: a rational minimax fit evaluated in float32 (a few float32 ulp)."""
        xp = self.xp
        if xp is not np:
            try:
                from cupyx.scipy.special import erf as cupy_erf
                # CuPy computes half inputs in float64 and returns that; PyTorch keeps the dtype
                return cupy_erf(x).astype(x.dtype, copy=False)
            except ImportError:
                pass
        dt = x.dtype
        if dt == np.float64:
            return _erf_f64(xp, x)
        r = _erf_f32(xp, x.astype(np.float32) if dt != np.float32 else x)
        return r.astype(dt) if dt != np.float32 else r

    def _erfinv(self, x: Array) -> Array:
        """Inverse error function: a closed-form first guess refined by Halley steps on float64 erf."""
        xp = self.xp
        if xp is not np:
            try:
                from cupyx.scipy.special import erfinv as cupy_erfinv
                return cupy_erfinv(x)
            except ImportError:
                pass
        dt = x.dtype
        y64 = x.astype(np.float64)
        r = _erfinv_f64(xp, y64)
        return r if dt == np.float64 else r.astype(dt)


def _exp_limit(dt: NpDtype) -> Any:
    """Largest argument whose exp is finite in ``dt``."""
    return dt.type(math.log(float(np.finfo(dt).max)) * 0.999)


# ---------------------------------------------------------------------- erf approximations
# float64: erf(x) = x * g(|x|) with g(x) = erf(x) / x, interpolated on [0, 6) by 12 Chebyshev polynomials of
# degree 13 (one per interval of width 1/2), whose coefficients are computed once from math.erf (correctly
# rounded libm values) at 40 first-kind Chebyshev points per interval. g is bounded away from 0 on [0, 6], so the
# relative error of erf is that of g: about 2 ulp. Beyond 6, erf is +-1 to double precision.
_ERF64_TOP = 6.0
_ERF64_WIDTH = 0.5
_ERF64_DEG = 13
_ERF64_NODES = 40
_erf64_table: list[np.ndarray[Any, Any]] = []


def _erf64_coefficients() -> np.ndarray[Any, Any]:
    if _erf64_table:
        return _erf64_table[0]
    width, deg, m = _ERF64_WIDTH, _ERF64_DEG, _ERF64_NODES
    n_int = int(math.ceil(_ERF64_TOP / width))
    j = np.arange(m)
    nodes = np.sin(np.pi * (m - 1 - 2 * j) / (2 * m))  # cos(pi (j + 1/2) / m), symmetric to the last bit
    # T_k(node_j) = cos(pi k (2j + 1) / (2m)); reducing the angle with integer arithmetic keeps every entry
    # accurate to an ulp (the three-term recurrence loses ~k^2 ulps near the interval ends)
    ang = (np.arange(deg + 1)[None, :] * (2 * j[:, None] + 1)) % (4 * m)
    ang = np.where(ang > 2 * m, 4 * m - ang, ang)
    sgn = np.where(ang > m, -1.0, 1.0)
    ang = np.where(ang > m, 2 * m - ang, ang)
    tk = sgn * np.cos(np.pi * ang / (2 * m))
    table = np.empty((deg + 1, n_int))
    for i in range(n_int):
        centre = i * width + width / 2
        pts = centre + nodes * (width / 2)
        vals = [math.erf(p) / p if p != 0.0 else 2.0 / math.sqrt(math.pi) for p in pts.tolist()]
        # exact sums (fsum): a plain dot product of 40 terms would cost ~1 ulp of each coefficient
        cheb = [math.fsum(tk[:, k] * vals) * (2.0 / m) for k in range(deg + 1)]
        cheb[0] /= 2
        table[:, i] = np.polynomial.chebyshev.cheb2poly(np.array(cheb))[:deg + 1]
    _erf64_table.append(table)
    return table


def _erf_f64(xp: Any, x: Array) -> Array:
    table = _erf64_coefficients()
    if xp is not np:
        table = xp.asarray(table)
    width = _ERF64_WIDTH
    n_int = table.shape[1]
    xc = xp.clip(x, -_ERF64_TOP, _ERF64_TOP)
    xa = xp.abs(xc)
    idx = (xa * (1.0 / width)).astype(np.intp)
    xp.minimum(idx, n_int - 1, out=idx)
    xp.maximum(idx, 0, out=idx)  # NaN casts to an arbitrary integer; its t stays NaN anyway
    t = idx * width
    t += width / 2
    xp.subtract(xa, t, out=t)
    t *= 2.0 / width
    acc = xp.take(table[-1], idx)
    for k in range(table.shape[0] - 2, -1, -1):
        acc *= t
        acc += xp.take(table[k], idx)
    acc *= xc
    return acc


# float32 (and the 2-byte floats through it): erf(x) = x P(s) / Q(s), s = x^2 / 16, on |x| <= 4 (erf(4) rounds
# to 1 in float32). P, Q of degree 5 come from a relative-error minimax fit (linearised least squares with
# Lawson reweighting, in float64 against math.erf); the fit's relative error is 2.5e-8 and the float32 Horner
# evaluation adds at most a few ulp. All coefficients are positive, so the evaluation has no cancellation.
_ERF32_P = (1.1283791392975586, 3.0967330082891698, 13.594073783468733, 15.906318686540226, 18.64938948096302,
            2.0832915688465734)
_ERF32_Q = (1.0, 8.077729057911256, 29.52968085616319, 62.28917803204715, 77.69819610218812,
            39.237956613183236)
_ERF32_TOP = 4.0


# The same fit in s = x^2: coefficient k divided by 16^k, which saves the pass that scales s. Powers of two
# scale every rounding step exactly, so the results are bit-identical. The _HALF variant of P gives erf / 2
# (what Phi(x) = 1/2 + erf(x / sqrt 2) / 2 needs, one pass fewer) exactly as well.
_ERF32_PS = tuple(np.float32(c / 16.0 ** k) for k, c in enumerate(_ERF32_P))
_ERF32_PS_HALF = tuple(np.float32(0.5 * c / 16.0 ** k) for k, c in enumerate(_ERF32_P))
_ERF32_QS = tuple(np.float32(c / 16.0 ** k) for k, c in enumerate(_ERF32_Q))


def _horner(s: Array, coefs: tuple[Any, ...]) -> Array:
    """sum(coefs[k] * s**k), as a new array."""
    r = s * coefs[-1]
    r += coefs[-2]
    for c in coefs[-3::-1]:
        r *= s
        r += c
    return r


def _erf_f32(xp: Any, x: Array, half: bool = False, overwrite: bool = False) -> Array:
    """erf of a float32 array (``half``: erf / 2). ``overwrite`` lets it clip ``x`` in place, saving an
    allocation when the caller's ``x`` is a temporary."""
    f = np.float32
    xc = xp.clip(x, f(-_ERF32_TOP), f(_ERF32_TOP), out=x if overwrite else None)
    s = xc * xc
    p = _horner(s, _ERF32_PS_HALF if half else _ERF32_PS)
    q = _horner(s, _ERF32_QS)
    p /= q
    p *= xc
    return p


def _erfinv_f64(xp: Any, y: Array) -> Array:
    """erfinv on float64: Winitzki's closed-form approximation (relative error ~2e-3) as a first guess, then
    three Halley steps (cubic convergence) on the float64 erf; +-1 map to +-inf and |y| > 1 to NaN."""
    a = 0.147
    ya = xp.abs(y)
    inside = ya < 1
    yc = xp.where(inside, y, 0.0)
    ln = xp.log1p(-yc * yc)
    t1 = 2.0 / (math.pi * a) + 0.5 * ln
    x = xp.sqrt(xp.sqrt(t1 * t1 - ln / a) - t1)
    x = xp.copysign(x, yc)
    two_over_sqrtpi = 2.0 / math.sqrt(math.pi)
    for _ in range(3):
        err = _erf_f64(xp, x) - yc
        deriv = two_over_sqrtpi * xp.exp(-x * x)
        # Halley: f / f' / (1 - f f'' / (2 f'^2)), with f'' = -2 x f'
        step = err / deriv
        x = x - step / (1.0 + x * step)
    out = xp.where(inside, x, xp.where(ya == 1, xp.copysign(np.inf, y), np.nan))
    return out
