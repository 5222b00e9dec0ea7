"""The gamma distribution Gamma(concentration, rate), with reparameterised samples: the gradient of a sample
x with respect to the concentration a is the implicit one, dx/da = -(dF/da) / p(x), F the CDF at fixed x."""
from __future__ import annotations

from typing import Any

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..ops.elementwise import where
from ..ops.random import rand, randn
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, digamma, lgamma, tiny

__all__ = ["Gamma"]

_MAX_TERMS = 20000  # iterations of a series or continued fraction at the most; they converge in O(sqrt(a))


def _draw_standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) samples of alpha's shape (float64): Marsaglia and Tsang's squeeze method, redrawn where
    rejected; alpha < 1 is drawn as Gamma(alpha + 1) * U^(1/alpha)."""
    a = alpha.to(_dtype.float64)
    small = a < 1
    boosted = a + small.to(a.dtype)
    d = boosted - 1.0 / 3
    c = (9 * d).rsqrt()
    out = a * 0
    todo = out == 0
    while bool(todo.any().item()):
        z = randn(tuple(a.shape), dtype=a.dtype, device=a.device)
        u = rand(tuple(a.shape), dtype=a.dtype, device=a.device)
        v = (1 + c * z).pow(3)
        safe_v = v.clamp(min=1e-300)
        accept = (v > 0) & (u.log() < 0.5 * z * z + d - d * safe_v + d * safe_v.log())
        out = where(todo & accept, d * safe_v, out)
        todo = todo & ~accept
    if bool(small.any().item()):
        u = rand(tuple(a.shape), dtype=a.dtype, device=a.device)
        out = where(small, out * u.pow(1 / a), out)
    return out


def _log_prefactor(a: Tensor, x: Tensor) -> Tensor:
    return a * x.log() - x - lgamma(a)


def _lower_series(a: Tensor, x: Tensor) -> Tensor:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)); converges fast for x < a + 1."""
    term = a * 0 + 1
    total = term
    for n in range(1, _MAX_TERMS):
        term = term * x / (a + n)
        total = total + term
        if n % 16 == 0 and bool(((term / total).abs() < 1e-17).all().item()):
            break
    return (_log_prefactor(a, x) - a.log()).exp() * total


def _upper_fraction(a: Tensor, x: Tensor) -> Tensor:
    """Q(a, x) = 1 - P(a, x) by its continued fraction (modified Lentz); converges fast for x >= a + 1."""
    floor = 1e-300
    b = x + 1 - a
    c = b * 0 + 1 / floor
    d = b.reciprocal()
    h = d
    for i in range(1, _MAX_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = where(d.abs() < floor, d * 0 + floor, d)
        c = b + an / c
        c = where(c.abs() < floor, c * 0 + floor, c)
        d = d.reciprocal()
        step = d * c
        h = h * step
        if i % 8 == 0 and bool(((step - 1).abs() < 1e-15).all().item()):
            break
    return _log_prefactor(a, x).exp() * h


def _standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """dx/da of a Gamma(a, 1) sample x at fixed CDF value, in float64: the CDF's derivative in a by central
    differences of P (or of Q = 1 - P in the upper tail, where P rounds to 1), over the density."""
    a, x = alpha.to(_dtype.float64), x.to(_dtype.float64)
    upper = x >= a + 1
    h = a * 1e-5
    # each region evaluated only where it converges; the other elements get harmless stand-in arguments
    a_lo, x_lo = where(upper, a * 0 + 1, a), where(upper, x * 0 + 0.5, x)
    a_up, x_up = where(upper, a, a * 0 + 1), where(upper, x, x * 0 + 3)
    h_lo, h_up = where(upper, h * 0 + 1e-5, h), where(upper, h, h * 0 + 1e-5)
    dp_lo = (_lower_series(a_lo + h_lo, x_lo) - _lower_series(a_lo - h_lo, x_lo)) / (2 * h_lo)
    dp_up = -(_upper_fraction(a_up + h_up, x_up) - _upper_fraction(a_up - h_up, x_up)) / (2 * h_up)
    density = ((a - 1) * x.log() - x - lgamma(a)).exp()
    return -where(upper, dp_up, dp_lo) / density


class _StandardGamma(Function):
    """A Gamma(alpha, 1) sample with the implicit reparameterisation gradient."""

    @staticmethod
    def forward(ctx: Any, alpha: Tensor) -> Tensor:
        x = _draw_standard_gamma(alpha).to(alpha.dtype).clamp(min=tiny(alpha.dtype))
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        alpha, x = ctx.saved_tensors
        with no_grad():
            return grad * _standard_gamma_grad(alpha, x).to(alpha.dtype)


class Gamma(Distribution):
    """Gamma(concentration a, rate b): density b^a x^(a-1) e^(-b x) / Gamma(a) on x > 0.

    >>> Gamma(mt.tensor(2.0), mt.tensor(3.0)).mean
    tensor(0.6667)
    """
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))


    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = _StandardGamma.apply(self.concentration.expand(shape)) / self.rate.expand(shape)
        return x.clamp(min=tiny(x.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return _xlogy(a, b) + _xlogy(a - 1, value) - b * value - lgamma(a)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + lgamma(a) + (1.0 - a) * digamma(a)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, x = self.concentration.to(_dtype.float64), (self.rate * value).to(_dtype.float64)
        upper = x >= a + 1
        low = _lower_series(a, where(upper, x * 0 + 0.5, x))
        up = 1 - _upper_fraction(a, where(upper, x, a + 1))
        return where(upper, up, low).to(value.dtype)


def _xlogy(x: Tensor, y: Tensor) -> Tensor:
    """x * log(y), 0 where x is 0 (even for y = 0)."""
    return x * where(x == 0, y * 0 + 1, y).log()
