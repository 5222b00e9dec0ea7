"""Math ops PyTorch users reach for that are compositions of existing ops: trace, nansum / nanmean, xlogy, logit,
erfc, sinc, heaviside, ldexp and dist, and the ``torch.special`` functions with no top-level twin that build on
them (xlog1py, erfcx, entr, log_ndtr, ndtri).

Some are written in Tensor ops and get their gradient from the ops they are made of. Where PyTorch defines a
gradient the composition would not give (xlogy at ``x == 0``, logit outside its domain, sinc near 0, and the
error-function family, whose forwards are iterations rather than differentiable compositions), the op is an
``Op`` whose forward runs unrecorded and whose backward is PyTorch's formula, in Tensor ops (so it can be
differentiated again).
"""
import math
from typing import ClassVar

from .. import _dtype
from ..autograd._inplace import apply_inplace
from ..autograd.grad_mode import no_grad
from ..autograd.node import Op
from ..tensor import Tensor
from ._autocast import autocast_op
from ._util import broadcast_shapes, check_tensor, to_tensor_like, write_out
from .elementwise import clamp, where
from .reduction import _axes, _restore, sum, vector_norm
from .shape import diagonal

__all__ = ["trace", "nansum", "nanmean", "xlogy", "logit", "erfc", "sinc", "heaviside", "ldexp", "dist"]


def _floating(x):
    """``x`` itself when floating, else cast to the default float dtype (PyTorch's int-to-float promotion)."""
    return x if x.dtype.is_floating_point else x.to(_dtype.get_default_dtype())


# ---------------------------------------------------------------------- reductions


def trace(input):
    """Sum of the main diagonal of a matrix.

    >>> mt.trace(mt.tensor([[1., 2.], [3., 4.]]))
    tensor(5.)
    """
    check_tensor(input, "trace", "input")
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    if input.dtype is _dtype.bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    return sum(diagonal(input))


class NansumBackward0(Op):
    """The sum with NaN entries as zeros. The backward multiplies by the not-NaN mask, as PyTorch's does, rather than
    selecting (a ``where``): an infinite gradient, nanmean's over an all-NaN slice, then gives NaN there as in
    PyTorch."""

    def forward(self, x, dim=None, keepdim=False, dtype=None):
        self.save_for_backward(x)
        self.axes, self.keepdim = _axes(dim, x.dim()), keepdim
        with no_grad():
            return sum(where(x.isnan(), 0, x), dim, keepdim, dtype=dtype)._data

    def backward(self, g):
        x, = self.saved_tensors
        g = _restore(g, x.shape, self.axes, self.keepdim).to(x.dtype)
        return g * (~x.isnan()).to(x.dtype)


def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero; NaN entries get no gradient.

    >>> mt.nansum(mt.tensor([1., float('nan'), 2.]))
    tensor(3.)
    """
    check_tensor(input, "nansum", "input")
    if not input.dtype.is_floating_point:
        return sum(input, dim, keepdim, dtype=dtype, out=out)
    r = NansumBackward0.apply(input, dim=dim, keepdim=keepdim, dtype=dtype)
    return r if out is None else write_out(r, out, "nansum")


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean over the entries that are not NaN.

    >>> mt.nanmean(mt.tensor([1., float('nan'), 3.]))
    tensor(2.)
    """
    check_tensor(input, "nanmean", "input")
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype._scalar_name}")
    count = sum(~input.isnan(), dim, keepdim)
    r = nansum(input, dim, keepdim, dtype=dtype) / count
    return r if out is None else write_out(r, out, "nanmean")


@autocast_op("dist")
def dist(input, other, p=2):
    """The p-norm of ``input - other`` (broadcast).

    >>> mt.dist(mt.tensor([0., 0.]), mt.tensor([3., 4.]))
    tensor(5.)
    """
    check_tensor(input, "dist", "input")
    check_tensor(other, "dist", "other", 2)
    return vector_norm(input - other, p)


# ---------------------------------------------------------------------- elementwise


def _operands(name, input, other):
    """Both operands as float tensors of PyTorch's result dtype; one of them may be a Python number."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"{name}() expected at least one Tensor argument, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    ref = input if isinstance(input, Tensor) else other
    dt = _dtype.result_type(input, other)
    if not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    return to_tensor_like(input, ref, dt).to(dt), to_tensor_like(other, ref, dt).to(dt)


class XlogyBackward0(Op):
    """``x * log(y)``, 0 where ``x == 0`` unless ``y`` is NaN. PyTorch's gradient for ``x`` is ``log(y)`` even at
    ``x == 0`` (a ``where`` would zero it), and 0 where also ``y <= 0``."""

    shifted: ClassVar[bool] = False  # xlog1py: log1p(y) for log(y), y <= -1 for y <= 0, y + 1 for y

    def _log(self, y):
        return y.log1p() if self.shifted else y.log()

    def forward(self, x, y):
        self.save_for_backward(x, y)
        with no_grad():
            r = where(x == 0, 0, x * self._log(y))
            return where(y.isnan(), y, r)._data

    def backward(self, g):
        x, y = self.saved_tensors
        gx = gy = None
        if self.needs_input_grad[0]:
            gx = where((x == 0) & (y <= (-1 if self.shifted else 0)), 0, g * self._log(y))
        if self.needs_input_grad[1]:
            gy = g * x / (y + 1 if self.shifted else y)
        return gx, gy


class SpecialXlog1PyBackward0(XlogyBackward0):
    """``x * log1p(y)``, 0 where ``x == 0`` unless ``y`` is NaN."""

    shifted = True


def _xlogy_like(name, cls, input, other, out):
    x, y = _operands(name, input, other)
    if x.shape != y.shape:  # expand's backward sums each gradient back to its operand's shape
        shape = broadcast_shapes(x.shape, y.shape)
        x, y = x.expand(shape), y.expand(shape)
    r = cls.apply(x, y)
    return r if out is None else write_out(r, out, name)


def xlogy(input, other, *, out=None):
    """``input * log(other)``, with 0 where ``input`` is 0 (unless ``other`` is NaN).

    >>> mt.xlogy(mt.tensor([0., 2.]), mt.tensor([0., 1.]))
    tensor([0., 0.])
    """
    return _xlogy_like("xlogy", XlogyBackward0, input, other, out)


def xlog1py(input, other, *, out=None):
    """``input * log1p(other)``, with 0 where ``input`` is 0 (unless ``other`` is NaN); ``torch.special``'s.

    >>> mt.special.xlog1py(mt.tensor([0., 2.]), mt.tensor([-1., 0.]))
    tensor([0., 0.])
    """
    return _xlogy_like("xlog1py", SpecialXlog1PyBackward0, input, other, out)


class LogitBackward0(Op):
    """``log(x / (1 - x))`` of ``x`` clamped to ``[eps, 1 - eps]``. PyTorch's gradient is 0 outside that range
    with ``eps``, and NaN outside ``[0, 1]`` without it."""

    def forward(self, x, eps=None):
        self.save_for_backward(x)
        self.eps = eps
        with no_grad():
            z = x if eps is None else clamp(x, eps, 1 - eps)
            return (z / (1 - z)).log()._data

    def backward(self, g):
        x, = self.saved_tensors
        eps = self.eps
        lo, hi = (0.0, 1.0) if eps is None else (eps, 1 - eps)
        outside = (x < lo) | (x > hi)
        ends = (x == 0) | (x == 1)
        # the factor is built apart from g, on 1/2 where it is replaced, so that differentiating this backward
        # meets no 0 * inf on the sides ``where`` drops
        xs = where(outside | ends, 0.5, x)
        factor = 1 / (xs * (1 - xs))
        if eps is None:
            # +inf at the ends (PyTorch's, whatever the sign of a zero), NaN outside [0, 1]
            factor = where(outside, math.nan, where(ends, math.inf, factor))
        else:
            factor = where(outside, 0.0, factor)
        return g * factor


def logit(input, eps=None, *, out=None):
    """The inverse of sigmoid, ``log(p / (1 - p))``; with ``eps``, ``p`` is clamped to ``[eps, 1 - eps]`` first.

    >>> mt.logit(mt.tensor([0.5]))
    tensor([0.])
    """
    check_tensor(input, "logit", "input")
    r = LogitBackward0.apply(_floating(input), eps=None if eps is None else float(eps))
    return r if out is None else write_out(r, out, "logit")


# erfc's continued fraction for x >= _ERFC_CF_FROM: 60 levels reach double precision from 2 on (40 would leave
# 5e-14 at 2). Below 2, 1 - erf(x) in float64 loses at most log10(1 / erfc(2)) ~ 2.3 of its 16 digits.
_ERFC_CF_FROM = 2.0
_ERFC_CF_LEVELS = 60
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _erfc64(x, scaled):
    """erfc(x), or ``erfcx(x) = exp(x^2) erfc(x)`` when ``scaled``, of a float64 tensor (run unrecorded).

    From ``_ERFC_CF_FROM`` on, Laplace's continued fraction
    ``erfcx(x) = 1 / sqrt(pi) / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))``; below, ``1 - erf(x)``."""
    xc = clamp(x, min=_ERFC_CF_FROM)  # the fraction on every element, kept only where x is large
    t = xc
    for k in range(_ERFC_CF_LEVELS, 0, -1):
        t = xc + (k / 2) / t
    far = 1 / (math.sqrt(math.pi) * t)
    near = 1 - x.erf()
    if scaled:
        return where(x >= _ERFC_CF_FROM, far, near * (x * x).exp())
    return where(x >= _ERFC_CF_FROM, (-(xc * xc)).exp() * far, near)


class ErfcBackward0(Op):
    """``1 - erf(x)`` without the cancellation for large ``x``; computed in float64 and rounded once to the
    input's dtype."""

    def forward(self, x):
        self.save_for_backward(x)
        r = x._be.compiled_erfc(x._data)  # libm's, where the backend compiles it: ~150x faster than the fraction
        if r is not None:
            return r
        with no_grad():
            return _erfc64(x.to(_dtype.float64), False).to(x.dtype)._data

    def backward(self, g):
        x, = self.saved_tensors
        return g * ((-(x * x)).exp() * -_TWO_OVER_SQRT_PI)


class SpecialErfcxBackward0(Op):
    """The scaled complementary error function ``exp(x^2) erfc(x)``, finite where both factors are not."""

    save_output = True

    def forward(self, x):
        self.save_for_backward(x)
        with no_grad():
            return _erfc64(x.to(_dtype.float64), True).to(x.dtype)._data

    def backward(self, g):
        x, y = self.saved_tensors[0], self.saved_output
        return g * (2 * x * y - _TWO_OVER_SQRT_PI)


def erfcx(input, *, out=None):
    """Scaled complementary error function ``exp(x^2) * erfc(x)`` (``torch.special.erfcx``).

    >>> mt.special.erfcx(mt.tensor([0.]))
    tensor([1.])
    """
    check_tensor(input, "erfcx", "input")
    r = SpecialErfcxBackward0.apply(_floating(input))
    return r if out is None else write_out(r, out, "erfcx")


def erfc(input, *, out=None):
    """Complementary error function ``1 - erf(input)``, accurate where it is tiny.

    >>> mt.erfc(mt.tensor([0.]))
    tensor([1.])
    """
    check_tensor(input, "erfc", "input")
    r = ErfcBackward0.apply(_floating(input))
    return r if out is None else write_out(r, out, "erfc")


# ndtri's Newton steps: from erfinv's first guess (exact to rounding for most p) or, in the far tail where
# 2p - 1 rounds to -1, from the asymptotic inverse, 5 steps reach float64 precision
_NDTRI_STEPS = 5
_NDTRI_TAIL = 1e-10
_SQRT_2PI = math.sqrt(2 * math.pi)


class SpecialNdtriBackward0(Op):
    """The inverse of the standard normal CDF. The lower half (p <= 1/2; the upper half by symmetry, 1 - p being
    exact there) solves ``log_ndtr(x) = log(p)`` by Newton's method in log space, which keeps its relative
    accuracy however small p is. Backward: ``sqrt(2 pi) exp(x^2 / 2)`` (PyTorch's)."""

    save_output = True

    def forward(self, p):
        with no_grad():
            p64 = p.to(_dtype.float64)
            upper = p64 > 0.5
            q = where(upper, 1 - p64, p64)
            inside = (q > 0) & (q <= 0.5)
            qs = where(inside, q, 0.25)  # the iteration runs on a harmless value elsewhere
            lq = qs.log()
            tail = -2 * lq
            guess_tail = -(tail - tail.log() - math.log(2 * math.pi)).sqrt()
            x = where(qs < _NDTRI_TAIL, guess_tail, (2 * qs - 1).erfinv() * math.sqrt(2))
            for _ in range(_NDTRI_STEPS):
                lf = _log_ndtr64(x)
                x = x - (lf - lq) * (lf + x * x * 0.5).exp() * _SQRT_2PI
            x = where(q == 0, -math.inf, where(inside, x, math.nan))
            r = where(upper, -x, x)
            return r.to(p.dtype)._data

    def backward(self, g):
        r = self.saved_output
        return g * ((r * r * 0.5).exp() * _SQRT_2PI)


def ndtri(input, *, out=None):
    """The quantile function of the standard normal distribution, the inverse of ``ndtr``
    (``torch.special.ndtri``).

    >>> mt.special.ndtri(mt.tensor([0.5, 0.975]))
    tensor([0.0000, 1.9600])
    """
    check_tensor(input, "ndtri", "input")
    r = SpecialNdtriBackward0.apply(_floating(input))
    return r if out is None else write_out(r, out, "ndtri")


class SincBackward0(Op):
    """Normalized sinc, 1 at 0. The backward is PyTorch's closed form ``(pi x cos(pi x) - sin(pi x)) / (pi x^2)``
    (0 where ``x^2`` underflows): the chain rule through ``sin(pi x) / (pi x)`` would add an infinite incoming gradient's two
    opposite terms into NaN, and underflow differently far out."""

    def forward(self, x):
        self.save_for_backward(x)
        with no_grad():
            zero = x == 0
            px = where(zero, 1, x) * math.pi  # the zeros replaced: no 0/0 on the side ``where`` drops
            return where(zero, 1, px.sin() / px)._data

    def backward(self, g):
        x, = self.saved_tensors
        px = x * math.pi
        sq = x * x * math.pi
        # 0 wherever x * x underflows (PyTorch's rule); the division there runs on 1s, so it leaves no NaN behind
        small = sq == 0
        return where(small, 0, g * (px * px.cos() - px.sin()) / where(small, 1, sq))


class SpecialEntrBackward0(Op):
    """``-x log(x)``: 0 at 0, -inf below; PyTorch's gradient ``-(1 + log(x))`` (+inf at 0, NaN below)."""

    def forward(self, x):
        self.save_for_backward(x)
        with no_grad():
            pos = where(x > 0, x, 1)  # the log runs on 1s elsewhere: no warnings, no NaN to select around
            r = where(x > 0, -x * pos.log(), where(x == 0, 0.0, -math.inf))
            return where(x.isnan(), x, r)._data

    def backward(self, g):
        x, = self.saved_tensors
        return g * -(1 + x.log())


def entr(input, *, out=None):
    """Elementwise entropy term ``-x * log(x)`` (``torch.special.entr``).

    >>> mt.special.entr(mt.tensor([0., 1.]))
    tensor([0., -0.])
    """
    check_tensor(input, "entr", "input")
    r = SpecialEntrBackward0.apply(_floating(input))
    return r if out is None else write_out(r, out, "entr")


_LOG_HALF = math.log(0.5)


def _log_ndtr64(x):
    """log(ndtr(x)) of a float64 tensor, unrecorded (see ``SpecialLogNdtrBackward0``)."""
    z = x * -math.sqrt(0.5)
    upper = (_erfc64(-z, False) * -0.5).log1p()
    lower = _erfc64(z, True).log() + _LOG_HALF - z * z
    return where(x < -1, lower, upper)


class SpecialLogNdtrBackward0(Op):
    """``log(ndtr(x))``: ``log1p(-erfc(x / sqrt 2) / 2)`` from -1 up, and ``log(erfcx(-x / sqrt 2) / 2) - x^2 / 2``
    below, where ndtr itself would underflow. Backward: the normal density over ndtr, ``exp(-x^2/2 - r)/sqrt(2pi)``
    (PyTorch's)."""

    save_output = True

    def forward(self, x):
        self.save_for_backward(x)
        with no_grad():
            return _log_ndtr64(x.to(_dtype.float64)).to(x.dtype)._data

    def backward(self, g):
        x, r = self.saved_tensors[0], self.saved_output
        return g * ((-(r + x * x * 0.5)).exp() * (1 / math.sqrt(2 * math.pi)))


def log_ndtr(input, *, out=None):
    """Log of the standard normal CDF, accurate far into both tails (``torch.special.log_ndtr``).

    >>> mt.special.log_ndtr(mt.tensor([0.]))
    tensor([-0.6931])
    """
    check_tensor(input, "log_ndtr", "input")
    r = SpecialLogNdtrBackward0.apply(_floating(input))
    return r if out is None else write_out(r, out, "log_ndtr")


def sinc(input, *, out=None):
    """Normalized sinc, ``sin(pi x) / (pi x)``, 1 at 0 (where its gradient is 0).

    >>> mt.sinc(mt.tensor([0., 0.5]))
    tensor([1.0000, 0.6366])
    """
    check_tensor(input, "sinc", "input")
    r = SincBackward0.apply(_floating(input))
    return r if out is None else write_out(r, out, "sinc")


def heaviside(input, values, *, out=None):
    """Step function: 0 for negative ``input``, 1 for positive, ``values`` where ``input`` is 0.

    >>> mt.heaviside(mt.tensor([-1., 0., 2.]), mt.tensor([0.5]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    check_tensor(input, "heaviside", "input")
    check_tensor(values, "heaviside", "values", 2)
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    with no_grad():  # a step function: PyTorch records no gradient either
        r = where(input == 0, values, (input > 0).to(input.dtype))
    return r if out is None else write_out(r, out, "heaviside")


def ldexp(input, other, *, out=None):
    """``input * 2 ** other``, in floating point.

    >>> mt.ldexp(mt.tensor([1.]), mt.tensor([3]))
    tensor([8.])
    """
    check_tensor(input, "ldexp", "input")
    check_tensor(other, "ldexp", "other", 2)
    x, e = _operands("ldexp", input, other)
    r = x * 2 ** e
    return r if out is None else write_out(r, out, "ldexp")


def _xlogy_method(self, other):
    return xlogy(self, other)


def _logit_method(self, eps=None):
    return logit(self, eps)


# in-place forms: computed out of place, then written back (PyTorch's rule: the result must fit self's dtype)
def erfc_(self):
    return apply_inplace(self, erfc)


def sinc_(self):
    return apply_inplace(self, sinc)


def logit_(self, eps=None):
    return apply_inplace(self, logit, eps)


def xlogy_(self, other):
    return apply_inplace(self, xlogy, other)


def ldexp_(self, other):
    return apply_inplace(self, ldexp, other)


def heaviside_(self, values):
    return apply_inplace(self, heaviside, values, keeps_self=False)


METHODS = {
    "trace": trace, "nansum": nansum, "nanmean": nanmean, "dist": dist, "xlogy": _xlogy_method,
    "logit": _logit_method, "erfc": erfc, "sinc": sinc, "heaviside": heaviside, "ldexp": ldexp,
    "erfc_": erfc_, "sinc_": sinc_, "logit_": logit_, "xlogy_": xlogy_, "ldexp_": ldexp_, "heaviside_": heaviside_,
}
