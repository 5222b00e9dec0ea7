"""``torch.special``: PyTorch's special-function namespace, under its names, over the ops defined elsewhere.

Most entries are the same function objects as their ``torch.*`` counterparts (``special.expit is sigmoid``);
the few with no top-level twin (``ndtr``, ``ndtri``, ``log_ndtr``, ``erfcx``, ``entr``, ``multigammaln``, ``xlog1py``) are short compositions here or in
``ops.composite_math``.
"""
import math

from . import _dtype
from .ops.bessel import i0, i0e, i1, i1e
from .ops.incomplete_gamma import gammainc, gammaincc
from .ops.composite_math import entr, erfc, erfcx, log_ndtr, logit, ndtri, sinc, xlog1py, xlogy
from .ops.elementwise import UNARY_OPS, polygamma, round
from .ops.reduction import log_softmax, logsumexp, softmax
from .ops._util import check_tensor, write_out

__all__ = ["erf", "erfc", "erfinv", "expit", "logit", "xlogy", "xlog1py", "gammaln", "digamma", "psi",
           "polygamma", "multigammaln", "log_softmax", "softmax", "logsumexp", "sinc", "expm1", "exp2", "log1p",
           "round", "ndtr", "ndtri", "log_ndtr", "erfcx", "entr", "i0", "i0e", "i1", "i1e", "gammainc", "gammaincc"]

# the unary table's rows are built at import, so a type checker cannot see them as module attributes
erf, erfinv, digamma, exp2, expm1, log1p = (UNARY_OPS[n] for n in ("erf", "erfinv", "digamma", "exp2", "expm1",
                                                                    "log1p"))
expit = UNARY_OPS["sigmoid"]
gammaln = lgamma = UNARY_OPS["lgamma"]
psi = digamma

_SQRT_HALF = math.sqrt(0.5)


def ndtr(input, *, out=None):
    """The standard normal CDF, ``0.5 * erfc(-x / sqrt(2))`` (erfc keeps the far left tail's relative accuracy).

    >>> mt.special.ndtr(mt.tensor([0.]))
    tensor([0.5000])
    """
    check_tensor(input, "ndtr", "input")
    x = input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())
    r = erfc(x * -_SQRT_HALF) * 0.5
    return r if out is None else write_out(r, out, "ndtr")


def multigammaln(input, p, *, out=None):
    """Log of the multivariate gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{i < p} lgamma(x - i / 2)``.

    >>> mt.special.multigammaln(mt.tensor([2.5]), 2)
    tensor([0.8570])
    """
    check_tensor(input, "multigammaln", "input")
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, but got p={p}")
    if not bool((input > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2, but got min value {input.min().item()}")
    x = input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())
    r = lgamma(x)
    for i in range(1, p):
        r = r + lgamma(x - i / 2)
    r = r + p * (p - 1) / 4 * math.log(math.pi)
    return r if out is None else write_out(r, out, "multigammaln")
