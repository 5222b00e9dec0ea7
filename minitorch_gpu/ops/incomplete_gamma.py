"""The regularized incomplete gamma functions ``torch.special.gammainc`` (P(a, x), PyTorch's ``igamma``) and
``gammaincc`` (Q(a, x) = 1 - P, ``igammac``).

Cephes' method, in float64 Tensor ops so every backend runs it: P's power series where ``x < a`` or ``x <= 1``,
Q's continued fraction elsewhere, each used for the other through ``1 - ``, which costs nothing there since the
computed one is the smaller. Both loops run on every element, in blocks of iterations, until every element has
converged; elements of the other branch ride along on a harmless value. The gradient is for ``x`` only, as in
PyTorch: ``+-exp((a - 1) log x - x - lgamma(a))``.
"""
import math

from .. import _dtype
from ..autograd.grad_mode import no_grad
from ..autograd.node import Op
from ._util import broadcast_shapes, write_out
from .elementwise import where
from .composite_math import _operands

__all__: list[str] = []  # torch.special only

_EPS = 2.0 ** -53
_BIG = 2.0 ** 52  # the continued fraction's numerators and denominators are rescaled beyond this
_BLOCK = 16  # iterations between convergence checks (each check waits for the device)
_MAX_ITERATIONS = 2000


def _series(a, x, lg):
    """P(a, x) by its power series: exp(a log x - x - lgamma a) / a * sum_n x^n / ((a+1)...(a+n))."""
    r = a
    c = a.new_ones(())
    total = c
    done = 0
    while done < _MAX_ITERATIONS:
        for _ in range(_BLOCK):
            r = r + 1
            c = c * x / r
            total = total + c
        done += _BLOCK
        if not bool(((c / total).abs() > _EPS).any()):
            break
    return total * (a * x.log() - x - lg).exp() / a


def _fraction(a, x, lg):
    """Q(a, x) by Legendre's continued fraction (Cephes' igamc recurrence)."""
    y = 1 - a
    z = x + y + 1
    c = a.new_zeros(())
    pkm2, qkm2 = x.new_ones(x.shape), x
    pkm1, qkm1 = x + 1, z * x
    ans = pkm1 / qkm1
    # NOTE: an element stops where it converged, as Cephes' scalar loop does: iterated further, its convergents
    # drift by rounding and their relative change would never again fall below _EPS
    converged = ans != ans  # all False (no element has started)
    done = 0
    while done < _MAX_ITERATIONS:
        for _ in range(_BLOCK):
            c = c + 1
            y = y + 1
            z = z + 2
            yc = y * c
            pk = pkm1 * z - pkm2 * yc
            qk = qkm1 * z - qkm2 * yc
            nonzero = qk != 0
            r = pk / where(nonzero, qk, 1.0)
            step = nonzero & ~converged
            converged = converged | (step & (((ans - r) / r).abs() <= _EPS))
            ans = where(step, r, ans)
            pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
            big = pk.abs() > _BIG
            scale = where(big, _EPS, 1.0)
            pkm2, pkm1, qkm2, qkm1 = pkm2 * scale, pkm1 * scale, qkm2 * scale, qkm1 * scale
        done += _BLOCK
        if bool(converged.all()):
            break
    return ans * (a * x.log() - x - lg).exp()


def _igamma64(a, x, upper):
    """P(a, x), or Q(a, x) when ``upper``, of float64 tensors of one shape, unrecorded."""
    nan = a.isnan() | x.isnan() | (a < 0) | (x < 0) | ((a == 0) & (x == 0))
    trivial = (x == 0) | (a == 0) | x.isinf()
    ok = ~nan & ~trivial
    use_series = (x <= 1) | (x < a)
    # each branch on its own elements; the others get a = x = 1, on which both converge at once
    sa, sx = where(ok & use_series, a, 1.0), where(ok & use_series, x, 1.0)
    fa, fx = where(ok & ~use_series, a, 1.0), where(ok & ~use_series, x, 2.0)
    p = _series(sa, sx, sa.lgamma())
    q = _fraction(fa, fx, fa.lgamma())
    lower = where(use_series, p, 1 - q)
    # P is 0 at x = 0 and 1 where a = 0 < x or x = inf
    edge = where(x == 0, 0.0, 1.0)
    lower = where(trivial, edge, lower)
    r = (where(use_series, 1 - p, q) if upper else lower)
    if upper:
        r = where(trivial, 1 - edge, r)
    return where(nan, math.nan, r)


class _IgammaOp(Op):
    upper = False

    def forward(self, a, x):
        self.save_for_backward(a, x)
        with no_grad():
            return _igamma64(a.to(_dtype.float64), x.to(_dtype.float64), self.upper).to(x.dtype)._data

    def backward(self, g):
        a, x = self.saved_tensors
        if self.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{type(self).__name__[:-9].lower()}' with respect to "
                                      "'self' (the shape parameter) is not implemented.")
        d = ((a - 1) * x.log() - x - a.lgamma()).exp()
        return None, g * (-d if self.upper else d)


class IgammaBackward0(_IgammaOp):
    """The lower regularized incomplete gamma function P(a, x)."""


class IgammacBackward0(_IgammaOp):
    """The upper regularized incomplete gamma function Q(a, x)."""
    upper = True


def _igamma(name, kernel, cls, input, other, out):
    a, x = _operands(name, input, other)
    for t in (input, other):
        if hasattr(t, "dtype") and not t.dtype.is_floating_point:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{t.dtype._scalar_name}'")
    if a.shape != x.shape:
        shape = broadcast_shapes(a.shape, x.shape)
        a, x = a.expand(shape), x.expand(shape)
    r = cls.apply(a, x)
    return r if out is None else write_out(r, out, name)


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function ``P(input, other)`` (``torch.special.gammainc``).

    >>> mt.special.gammainc(mt.tensor([1.]), mt.tensor([2.]))
    tensor([0.8647])
    """
    return _igamma("gammainc", "igamma_cpu", IgammaBackward0, input, other, out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P`` (``torch.special.gammaincc``).

    >>> mt.special.gammaincc(mt.tensor([1.]), mt.tensor([2.]))
    tensor([0.1353])
    """
    return _igamma("gammaincc", "igammac_cpu", IgammacBackward0, input, other, out)
