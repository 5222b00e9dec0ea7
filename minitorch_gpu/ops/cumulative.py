"""Running extremes and log-sum-exp along a dim: ``cummax``, ``cummin`` (values and indices) and
``logcumsumexp``.

No backend has a scan primitive for these, so each is a Hillis-Steele scan in Tensor ops: ``ceil(log2(n))``
rounds, each combining every position with the one ``s`` places before it (``s = 1, 2, 4, ...``). Every round
is a few whole-tensor ops, so every backend runs it without a kernel of its own. The combines are associative,
which is what makes the doubling correct.

cummax / cummin scan (value, index) pairs without recording, then read the values with ``gather``: its
backward is PyTorch's (the gradient goes to the index that supplied each value). logcumsumexp scans with
``logaddexp`` and takes PyTorch's backward, itself written with logcumsumexp (so it can be differentiated again).
"""
from .. import _dtype
from .._typeinfo import finfo
from ..autograd.grad_mode import no_grad
from ..autograd.node import Op
from ._util import check_tensor, wrap_dim, write_out, write_outs
from .creation import arange
from .elementwise import logaddexp, where
from .reduction import _return_type
from .shape import cat

__all__ = ["cummax", "cummin", "logcumsumexp"]

_cummax_result = _return_type("cummax", ("values", "indices"))
_cummin_result = _return_type("cummin", ("values", "indices"))


def _earlier(t, dim, s):
    """``t`` shifted ``s`` places later along ``dim``; each of the first ``s`` positions gets its own value
    (combining a value with itself leaves it unchanged, so those positions need no mask)."""
    n = t.shape[dim]
    return cat([t.narrow(dim, 0, s), t.narrow(dim, 0, n - s)], dim)


def _positions(x, dim):
    """The index along ``dim`` of every element of ``x``, as int64 of x's shape."""
    shape = [1] * x.dim()
    shape[dim] = x.shape[dim]
    return arange(x.shape[dim], device=x.device).reshape(shape).expand(x.shape)


def _running_extreme(name, result_cls, input, dim, out, later_wins):
    check_tensor(input, name, "input")
    if input.dim() == 0:
        wrap_dim(dim, 0)
        x = input.reshape(1)
        d = 0
    else:
        x = input
        d = wrap_dim(dim, input.dim())
    n = x.shape[d]
    if n == 0:
        vals, idx = x.clone(), x.new_zeros(x.shape, dtype=_dtype.int64)
        return result_cls(*write_outs((vals, idx), out, name, exact_dtype=True))
    with no_grad():
        v = x if x.dtype is not _dtype.bool else x.to(_dtype.uint8)
        i = _positions(x, d)
        floating = x.dtype.is_floating_point
        s = 1
        while s < n:
            va, ia = _earlier(v, d, s), _earlier(i, d, s)
            # the later entry wins ties (PyTorch reports the last index of the extreme), and a NaN wins outright
            take_later = later_wins(v, va)
            if floating:
                take_later = v.isnan() | (~va.isnan() & take_later)
            v = where(take_later, v, va)
            i = where(take_later, i, ia)
            s *= 2
    values = x.gather(d, i)
    if input.dim() == 0:
        values, i = values.reshape(()), i.reshape(())
    return result_cls(*write_outs((values, i), out, name, exact_dtype=True))


def cummax(input, dim, *, out=None):
    """Running maximum along ``dim`` and the index where each maximum was last reached; NaN propagates.

    >>> mt.cummax(mt.tensor([1., 3., 2., 5.]), 0).values
    tensor([1., 3., 3., 5.])
    """
    return _running_extreme("cummax", _cummax_result, input, dim, out, lambda later, earlier: later >= earlier)


def cummin(input, dim, *, out=None):
    """Running minimum along ``dim`` and the index where each minimum was last reached; NaN propagates.

    >>> mt.cummin(mt.tensor([3., 1., 2., 0.]), 0).values
    tensor([3., 1., 1., 0.])
    """
    return _running_extreme("cummin", _cummin_result, input, dim, out, lambda later, earlier: later <= earlier)


def _scan_logaddexp(x, d):
    """The inclusive logaddexp scan of ``x`` along ``d`` (at least 1-d)."""
    n = x.shape[d]
    pos = _positions(x, d) if n > 1 else None
    v = x
    s = 1
    while s < n:
        # NOTE: the first s positions would otherwise add themselves twice; they keep their value instead
        v = where(pos >= s, logaddexp(_earlier(v, d, s), v), v)
        s *= 2
    return v if n > 1 else v.clone()


class LogcumsumexpBackward0(Op):
    """The scan runs unrecorded; the backward is PyTorch's (after TensorFlow's): the positive and negative parts
    of the incoming gradient each go through a reversed logcumsumexp in log space, so that it stays finite where
    the chain rule through logaddexp would meet ``inf - inf``."""

    save_output = True

    def forward(self, x, dim):
        self.save_for_backward(x)
        self.dim = dim
        with no_grad():
            return _scan_logaddexp(x, dim)._data

    def backward(self, g):
        x, r = self.saved_tensors[0], self.saved_output
        d = self.dim
        lowest = finfo(g.dtype).min
        log_abs = g.abs().log()
        pos = where(g > 0, log_abs, lowest)
        neg = where(g < 0, log_abs, lowest)

        def reverse_scan(t):
            return logcumsumexp(t.flip(d), d).flip(d)
        return (reverse_scan(pos - r) + x).exp() - (reverse_scan(neg - r) + x).exp()


def logcumsumexp(input, dim, *, out=None):
    """``log(cumsum(exp(input), dim))`` without overflow or underflow.

    >>> mt.logcumsumexp(mt.tensor([0., 0.]), 0)
    tensor([0.0000, 0.6931])
    """
    check_tensor(input, "logcumsumexp", "input")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{input.dtype._scalar_name}'")
    x = input.reshape(1) if input.dim() == 0 else input
    r = LogcumsumexpBackward0.apply(x, dim=wrap_dim(dim, input.dim()))
    if input.dim() == 0:
        r = r.reshape(())
    return r if out is None else write_out(r, out, "logcumsumexp")


def _cummax_method(self, dim):
    return cummax(self, dim)


def _cummin_method(self, dim):
    return cummin(self, dim)


def _logcumsumexp_method(self, dim):
    return logcumsumexp(self, dim)


METHODS = {"cummax": _cummax_method, "cummin": _cummin_method, "logcumsumexp": _logcumsumexp_method}
