"""Modified Bessel functions of the first kind: ``i0`` (``torch.i0``) and ``torch.special``'s ``i0e``, ``i1``,
``i1e`` (the ``e`` forms scaled by ``exp(-|x|)``).

Each is computed in float64 from Tensor ops and rounded once to the input's dtype: the power series
``I_v(x) = (x/2)^v sum_k (x^2/4)^k / (k! (k+v)!)`` up to ``|x| = _SERIES_TO`` (all terms positive: no
cancellation), and beyond it Hankel's asymptotic expansion of ``exp(-|x|) I_v(x)``. The backwards are
PyTorch's formulas, written with these same functions so that they can be differentiated again.
"""
import math

from .. import _dtype
from ..autograd._inplace import apply_inplace
from ..autograd.grad_mode import no_grad
from ..autograd.node import Op
from ._util import check_tensor, write_out
from .elementwise import where

__all__ = ["i0"]

# 50 series terms reach double precision to |x| = 30 (the 50th is 1e-23 of the sum there); from 30 on, 30 terms of
# the asymptotic expansion do (the 30th is about 30! / 60^30 ~ 1e-21 of the first)
_SERIES_TO = 30.0
_SERIES_TERMS = 50
_ASYMPTOTIC_TERMS = 30


def _bessel_i(x, order, scaled):
    """``I_order(x)`` (``exp(-|x|) I_order(x)`` when ``scaled``) of a float64 tensor, unrecorded."""
    ax = x.abs()
    small = ax <= _SERIES_TO
    # the power series, on |x| clamped into its range (the other elements take the expansion below)
    xs = where(small, x, 0.0)
    y = xs * xs * 0.25
    # (+ 0.0: I_1(-0) is +0 in PyTorch)
    term = y.new_ones(()) if order == 0 else xs * 0.5 + 0.0
    total = term
    for k in range(1, _SERIES_TERMS):
        term = term * y / (k * (k + order))
        total = total + term
    series = total * (-ax).exp() if scaled else total
    # Hankel's expansion of exp(-|x|) I_v(|x|): 1/sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4v^2 - (2j-1)^2) / (k! (8x)^k)
    xa = where(small, _SERIES_TO, ax)
    mu = 4.0 * order * order
    term = 1 / (2 * math.pi * xa).sqrt()
    total = term
    for k in range(1, _ASYMPTOTIC_TERMS):
        term = term * (-(mu - (2 * k - 1) ** 2) / (8 * k)) / xa
        total = total + term
    if order == 1:
        total = total * x.sign()  # I_1 is odd
    far = total if scaled else total * xa.exp()
    return where(small, series, far)


class _BesselOp(Op):
    """One of the four functions (``order``, ``scaled`` set by each node class), computed in float64 and rounded
    once to the input's dtype; each node defines its backward."""

    order = 0
    scaled = False

    def forward(self, x):
        self.save_for_backward(x)
        with no_grad():
            return _bessel_i(x.to(_dtype.float64), self.order, self.scaled).to(x.dtype)._data


class I0Backward0(_BesselOp):
    """``I_0``; d/dx = ``I_1``."""

    def backward(self, g):
        x, = self.saved_tensors
        return g * i1(x)


class SpecialI0EBackward0(_BesselOp):
    """``exp(-|x|) I_0(x)``; d/dx = ``i1e(x) - sgn(x) i0e(x)``."""

    scaled = True

    def backward(self, g):
        x, = self.saved_tensors
        return g * (i1e(x) - x.sign() * i0e(x))


class SpecialI1Backward0(_BesselOp):
    """``I_1``; d/dx = ``I_0(x) - I_1(x) / x``, 1/2 at 0."""

    order = 1

    def backward(self, g):
        x, = self.saved_tensors
        zero = x == 0
        xs = where(zero, 1.0, x)  # no 0/0 on the side that ``where`` drops
        return g * where(zero, 0.5, i0(x) - i1(xs) / xs)


class SpecialI1EBackward0(_BesselOp):
    """``exp(-|x|) I_1(x)``; d/dx = ``i0e(x) - i1e(x) (sgn(x) + 1/x)``, 1/2 at 0."""

    order = 1
    scaled = True

    def backward(self, g):
        x, = self.saved_tensors
        zero = x == 0
        xs = where(zero, 1.0, x)
        return g * where(zero, 0.5, i0e(x) - i1e(xs) * (xs.sign() + 1 / xs))


def _unary(name, cls, input, out):
    check_tensor(input, name, "input")
    x = input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())
    r = cls.apply(x)
    return r if out is None else write_out(r, out, name)


def i0(input, *, out=None):
    """Modified Bessel function of the first kind, order 0.

    >>> mt.i0(mt.tensor([0., 1.]))
    tensor([1.0000, 1.2661])
    """
    return _unary("i0", I0Backward0, input, out)


def i0e(input, *, out=None):
    """``exp(-|x|) * i0(x)``, finite for every finite ``x`` (``torch.special.i0e``)."""
    return _unary("i0e", SpecialI0EBackward0, input, out)


def i1(input, *, out=None):
    """Modified Bessel function of the first kind, order 1 (``torch.special.i1``)."""
    return _unary("i1", SpecialI1Backward0, input, out)


def i1e(input, *, out=None):
    """``exp(-|x|) * i1(x)`` (``torch.special.i1e``)."""
    return _unary("i1e", SpecialI1EBackward0, input, out)


def i0_(self):
    """In-place ``i0``."""
    return apply_inplace(self, i0)


METHODS = {"i0": i0, "i0_": i0_}
