"""Special functions the array libraries lack: lgamma, digamma and polygamma (Hurwitz zeta).

They are written against ``self.xp``, once for NumPy and CuPy, and follow PyTorch's CPU formulas (Cephes'
digamma and zeta, the reflection formulas, the recurrences that push the argument up to where the asymptotic
series converge), evaluated in float64 whatever the input's float dtype and rounded once at the end. On CUDA
the unary primitives ``lgamma`` and ``digamma`` run elementwise.cu's op codes instead (see the primitive
table); ``polygamma`` takes an order besides the array and always runs here.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._types import Array, PrimitiveHost

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)
# Stirling's series for lgamma: the coefficients B_2k / (2k (2k - 1)) of y^-(2k-1)
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
_STIRLING_FROM = 15.0  # the series above is accurate to double precision from here on
# Cephes' digamma: the asymptotic series in 1 / x^2, used from x > 10, and digamma(10)
_PSI_A = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
          -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
          8.33333333333333333333E-2)
_PSI_10 = 2.25175258906672110764
# Cephes' Hurwitz zeta: the Euler-Maclaurin denominators (2k)! / B_2k
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042e-16
_EULER_GAMMA = 0.57721566490153286061


def _zeta_int(k: int) -> float:
    """Riemann zeta(k) for an integer k >= 2: 999 terms, then Euler-Maclaurin's tail from 1000 (its first omitted
    term is below 1e-22)."""
    n = 1000
    tail = n ** (1 - k) / (k - 1) + 0.5 * n ** -k + k / 12 * n ** (-k - 1) - k * (k + 1) * (k + 2) / 720 * n ** (-k - 3)
    return math.fsum([j ** -k for j in range(1, n)] + [tail])


# lgamma(1 + t) = -gamma t + sum_k (-1)^k zeta(k) / k t^k, for lgamma on [1/2, 5/2] (t = x - 1, or x - 2 and
# lgamma(2 + t) = lgamma(1 + t) + log1p(t)): the recurrence up to Stirling's series cancels there, around the zeros
# at 1 and 2, to an absolute error of several ulp of 30 (lgamma(1) came out 3.6e-15, not 0). These 56 terms reach
# double precision relative to the result for |t| <= 1/2.
_LGAMMA1P = tuple((-1) ** k * _zeta_int(k) / k for k in range(2, 58))


class SpecialMixin(PrimitiveHost):

    def _in_f64(self, x: Array) -> Array:
        return x.astype(np.float64) if x.dtype != np.float64 else x

    def _rounded(self, r: Array, like: Array, out: Array | None) -> Array:
        r = self.xp.asarray(r).astype(like.dtype, copy=False)
        if out is None:
            return r
        self.xp.copyto(out, r)
        return out

    def _sinpi(self, z: Array) -> Array:
        """sin(pi z), exactly 0 at the integers (a plain sin(pi z) is not), accurate for large |z|."""
        xp = self.xp
        r = z - 2.0 * xp.round(z * 0.5)  # in [-1, 1], same sine
        r = xp.where(r > 0.5, 1.0 - r, xp.where(r < -0.5, -1.0 - r, r))  # in [-1/2, 1/2], same sine
        return xp.sin(math.pi * r)

    def _lgamma_from_half(self, w: Array) -> Array:
        """lgamma for w >= 1/2 (or NaN): Stirling's series from _STIRLING_FROM on; below, the recurrence down to
        z = w - n in [1/2, 5/2], lgamma(w) = lgamma(z) + log((w - 1) ... (w - n)), and the series around the zeros
        at 1 and 2 for lgamma(z). Every step adds terms of one sign: no cancellation, a few ulp throughout."""
        xp = self.xp
        r = xp.empty_like(w)
        big = w >= _STIRLING_FROM
        if bool(big.any()):
            y = w[big]
            inv = 1.0 / y
            inv2 = inv * inv
            series = xp.zeros_like(y)
            for c in _STIRLING[::-1]:
                series = series * inv2 + c
            r[big] = xp.where(xp.isinf(y), xp.inf, (y - 0.5) * xp.log(y) - y + _HALF_LOG_2PI + series * inv)
        small = ~big
        if bool(small.any()):
            z = w[small]
            prod = xp.ones_like(z)
            for _ in range(math.ceil(_STIRLING_FROM - 2.5)):
                high = z > 2.5
                z = xp.where(high, z - 1.0, z)  # exact: z >= 1
                prod = xp.where(high, prod * z, prod)
            near_two = z > 1.5
            t = xp.where(near_two, z - 2.0, z - 1.0)
            s = xp.zeros_like(t)
            for c in _LGAMMA1P[::-1]:
                s = (s + c) * t
            s = (s - _EULER_GAMMA) * t + 0.0  # lgamma(1 + t); + 0.0: +0.0, not -0.0, at t = 0
            # lgamma(2 + t) = lgamma(1 + t) + log1p(t)
            r[small] = xp.where(near_two, s + xp.log1p(t), s) + xp.log(prod)
        return r

    def _lgamma(self, x: Array, out: Array | None = None) -> Array:
        """log |Gamma(x)|: +inf at the poles and at +-inf."""
        xp = self.xp
        z = self._in_f64(x)
        with np.errstate(all="ignore"):
            reflect = z < 0.5
            # lgamma(z) = log(pi / |sin(pi z)|) - lgamma(1 - z) below 1/2
            r = self._lgamma_from_half(xp.where(reflect, 1.0 - z, z))
            r = xp.where(reflect, _LOG_PI - xp.log(xp.abs(self._sinpi(z))) - r, r)
            r = xp.where(xp.isinf(z), xp.inf, r)
        return self._rounded(r, x, out)

    def _digamma(self, x: Array, out: Array | None = None) -> Array:
        """d/dx lgamma(x): NaN at the negative poles, -inf at +0 and +inf at -0 (PyTorch's convention)."""
        xp = self.xp
        z = self._in_f64(x)
        with np.errstate(all="ignore"):
            neg = z < 0
            r = z - xp.trunc(z)
            # pi / tan(pi x) = pi / tan(pi frac(x)): tan has period pi
            result = xp.where(neg, -math.pi / xp.tan(math.pi * r), 0.0)
            y = xp.where(neg, 1.0 - z, z)
            for _ in range(10):
                low = y < 10.0
                result = xp.where(low, result - 1.0 / y, result)
                y = xp.where(low, y + 1.0, y)
            w = 1.0 / (y * y)
            poly = xp.zeros_like(y)
            for c in _PSI_A:
                poly = poly * w + c
            tail = xp.where(y < 1.0e17, w * poly, 0.0)
            r = xp.where(y == 10.0, result + _PSI_10, result + xp.log(y) - 0.5 / y - tail)
            r = xp.where(neg & (z == xp.trunc(z)), xp.nan, r)
            r = xp.where(z == 0, xp.copysign(xp.inf, -z), r)
        return self._rounded(r, x, out)

    def _trigamma(self, z: Array) -> Array:
        """PyTorch's calc_trigamma on float64: reflection below 1/2, six recurrence steps, the series."""
        xp = self.xp
        reflect = z < 0.5
        s = xp.sin(math.pi * z)
        result = xp.where(reflect, -(math.pi * math.pi) / (s * s), 0.0)
        y = xp.where(reflect, 1.0 - z, z)
        for _ in range(6):
            result = result + 1.0 / (y * y)
            y = y + 1.0
        ixx = 1.0 / (y * y)
        result = result + (1.0 + 1.0 / (2.0 * y) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / y
        return xp.where(reflect, -result, result)

    def _zeta(self, s: float, q: Array) -> Array:
        """Hurwitz zeta(s, q) for a real order s > 1 (Cephes, as PyTorch): direct terms until q + i > 9, then
        the Euler-Maclaurin tail; each element stops as soon as its next term is below double precision."""
        xp = self.xp
        total = q ** -s
        a = q
        b = xp.zeros_like(q)
        done = xp.zeros(q.shape, dtype=bool)
        i = 0
        while True:
            active = ~done & ((i < 9) | (a <= 9.0))
            if not bool(active.any()):
                break
            i += 1
            a = xp.where(active, a + 1.0, a)
            b = xp.where(active, a ** -s, b)
            total = xp.where(active, total + b, total)
            done = done | (active & (-_MACHEP * total < b) & (b < _MACHEP * total))
        w = a
        total = xp.where(done, total, total + b * w / (s - 1.0) - 0.5 * b)
        coef = xp.ones_like(q)
        k = 0.0
        for d in _ZETA_A:
            coef = coef * (s + k)
            b = b / w
            t = coef * b / d
            total = xp.where(done, total, total + t)
            done = done | (xp.abs(t / total) < _MACHEP)
            k += 1.0
            coef = coef * (s + k)
            b = b / w
            k += 1.0
        poles = (q <= 0) & (q == xp.floor(q))
        return xp.where(poles, xp.inf, total)

    def polygamma(self, n: int, x: Array) -> Array:
        """The n-th derivative of digamma: digamma itself for n = 0; (-1)^(n+1) n! zeta(n + 1, x) beyond."""
        if n == 0:
            return self.unary("digamma", x)
        z = self._in_f64(x)
        with np.errstate(all="ignore"):
            if n == 1:
                r: Any = self._trigamma(z)
            else:
                sign = 1.0 if n % 2 else -1.0
                fact = float(math.factorial(n)) if n <= 170 else math.inf  # beyond, n! overflows a double
                r = self._zeta(float(n + 1), z) * (sign * fact)
        return self._rounded(r, x, None)
