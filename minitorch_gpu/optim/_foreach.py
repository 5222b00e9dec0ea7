"""List operations on tensors (PyTorch's ``torch._foreach_*``) for the multi-tensor optimizer paths.

Each function takes lists of tensors that share one device and dtype (the optimizers group them first) and
makes one backend call for the whole list. In-place forms bump every written tensor's version counter, as
the per-tensor in-place ops do. None of this records autograd history: the foreach paths run under
``no_grad``, as in PyTorch.
"""
from ..autograd.function import bump_version
from ..tensor import Tensor

__all__ = ["_foreach_neg", "_foreach_neg_", "_foreach_sqrt", "_foreach_sqrt_", "_foreach_sign", "_foreach_sign_",
           "_foreach_abs", "_foreach_abs_", "_foreach_reciprocal", "_foreach_reciprocal_", "_foreach_exp",
           "_foreach_exp_", "_foreach_log", "_foreach_log_", "_foreach_add", "_foreach_add_", "_foreach_sub",
           "_foreach_sub_", "_foreach_mul", "_foreach_mul_", "_foreach_div", "_foreach_div_", "_foreach_maximum",
           "_foreach_maximum_", "_foreach_minimum", "_foreach_minimum_", "_foreach_pow", "_foreach_pow_",
           "_foreach_lerp", "_foreach_lerp_", "_foreach_addcmul", "_foreach_addcmul_", "_foreach_addcdiv",
           "_foreach_addcdiv_", "_foreach_copy_", "_foreach_zero_", "_foreach_clone", "_foreach_norm",
           "_foreach_clamp_", "_total_norm", "_foreach_clip_"]

TORCH_NAMESPACE = [n for n in __all__ if n.startswith("_foreach_") and n != "_foreach_clip_"]
"""The functions PyTorch exposes as ``torch._foreach_*`` (the package namespace re-exports these)."""


def _arrays(ts):
    return [t._data for t in ts]


def _wrap(arrays, like):
    be = like[0]._be
    return [Tensor._make(a, be) for a in arrays]


def _bump(ts):
    for t in ts:
        bump_version(t)
    return ts


def _is_list(x):
    return isinstance(x, (list, tuple))


def _unary(name, ts, inplace):
    if not ts:
        return []
    out = ts[0]._be.foreach_unary(name, _arrays(ts), inplace=inplace)
    return _bump(ts) if inplace else _wrap(out, ts)


def _foreach_neg(ts):
    return _unary("neg", ts, False)


def _foreach_neg_(ts):
    return _unary("neg", ts, True)


def _foreach_sqrt(ts):
    return _unary("sqrt", ts, False)


def _foreach_sqrt_(ts):
    return _unary("sqrt", ts, True)


def _foreach_sign(ts):
    return _unary("sign", ts, False)


def _foreach_sign_(ts):
    return _unary("sign", ts, True)


def _foreach_abs(ts):
    return _unary("abs", ts, False)


def _foreach_abs_(ts):
    return _unary("abs", ts, True)


def _foreach_reciprocal(ts):
    return _unary("reciprocal", ts, False)


def _foreach_reciprocal_(ts):
    return _unary("reciprocal", ts, True)


def _foreach_exp(ts):
    return _unary("exp", ts, False)


def _foreach_exp_(ts):
    return _unary("exp", ts, True)


def _foreach_log(ts):
    return _unary("log", ts, False)


def _foreach_log_(ts):
    return _unary("log", ts, True)


def _binary(name, ts, other, alpha, inplace):
    """``t <name> other`` where other is a number, one number per tensor, or a list of tensors."""
    if not ts:
        return []
    be = ts[0]._be
    xs = _arrays(ts)
    if _is_list(other) and other and isinstance(other[0], Tensor):
        out = be.foreach_list(name, xs, _arrays(other), alpha=alpha, inplace=inplace)
    else:
        if isinstance(other, Tensor):
            other = other.item()
        scal = [float(o) * alpha for o in other] if _is_list(other) else float(other) * alpha
        out = be.foreach_scalar(name, xs, scal, inplace=inplace)
    return _bump(ts) if inplace else _wrap(out, ts)


def _foreach_add(ts, other, alpha=1):
    return _binary("add", ts, other, alpha, False)


def _foreach_add_(ts, other, alpha=1):
    return _binary("add", ts, other, alpha, True)


def _foreach_sub(ts, other, alpha=1):
    return _binary("sub", ts, other, alpha, False)


def _foreach_sub_(ts, other, alpha=1):
    return _binary("sub", ts, other, alpha, True)


def _foreach_mul(ts, other):
    return _binary("mul", ts, other, 1, False)


def _foreach_mul_(ts, other):
    return _binary("mul", ts, other, 1, True)


def _foreach_div(ts, other):
    return _binary("div", ts, other, 1, False)


def _foreach_div_(ts, other):
    return _binary("div", ts, other, 1, True)


def _foreach_maximum(ts, others):
    return _binary("maximum", ts, others, 1, False)


def _foreach_maximum_(ts, others):
    return _binary("maximum", ts, others, 1, True)


def _foreach_minimum(ts, others):
    return _binary("minimum", ts, others, 1, False)


def _foreach_minimum_(ts, others):
    return _binary("minimum", ts, others, 1, True)


def _foreach_pow(ts, exponent):
    """Every tensor to the power ``exponent`` (a number, one per tensor, or a list of tensors); or, with a number
    first, that number to the power of every tensor of the list (PyTorch's ``_foreach_pow(scalar, tensors)``)."""
    if not _is_list(ts):
        return [ts ** e for e in exponent]
    return _binary("pow", ts, exponent, 1, False)


def _foreach_pow_(ts, exponent):
    return _binary("pow", ts, exponent, 1, True)


def _foreach_lerp(ts, ends, weight):
    return _foreach_lerp_(_foreach_clone(ts), ends, weight)


def _foreach_lerp_(ts, ends, weight):
    if not ts:
        return ts
    ts[0]._be.foreach_lerp(_arrays(ts), _arrays(ends), float(weight), inplace=True)
    return _bump(ts)


def _values(value):
    return [float(v) for v in value] if _is_list(value) else float(value)


def _foreach_addcmul(ts, t1, t2, value=1):
    if not ts:
        return []
    out = ts[0]._be.foreach_addcmul(_arrays(ts), _arrays(t1), _arrays(t2), _values(value), inplace=False)
    return _wrap(out, ts)


def _foreach_addcmul_(ts, t1, t2, value=1):
    if not ts:
        return ts
    ts[0]._be.foreach_addcmul(_arrays(ts), _arrays(t1), _arrays(t2), _values(value), inplace=True)
    return _bump(ts)


def _foreach_addcdiv(ts, t1, t2, value=1):
    if not ts:
        return []
    out = ts[0]._be.foreach_addcdiv(_arrays(ts), _arrays(t1), _arrays(t2), _values(value), inplace=False)
    return _wrap(out, ts)


def _foreach_addcdiv_(ts, t1, t2, value=1):
    if not ts:
        return ts
    ts[0]._be.foreach_addcdiv(_arrays(ts), _arrays(t1), _arrays(t2), _values(value), inplace=True)
    return _bump(ts)


def _foreach_copy_(ts, src, non_blocking=False):
    """Copy ``src[i]`` into ``ts[i]`` (casting dtype and device, broadcasting as ``Tensor.copy_`` does)."""
    for t, s in zip(ts, src):
        t.copy_(s, non_blocking=non_blocking)
    return ts


def _foreach_zero_(ts):
    for t in ts:
        t.zero_()
    return ts


def _foreach_clone(ts):
    if not ts:
        return []
    be = ts[0]._be
    return [Tensor._make(be.copy(t._data), be) for t in ts]


def _foreach_norm(ts, ord=2):
    """The ``ord``-norm of every tensor (0-d tensors of its dtype): one backend call for the list (on CUDA, two
    launches whatever its length)."""
    if not ts:
        return []
    return _wrap(ts[0]._be.foreach_norm(_arrays(ts), float(ord)), ts)


def _foreach_clamp_(ts, bound):
    """Clamp every tensor to [-bound, bound] in place."""
    if not ts:
        return ts
    ts[0]._be.foreach_clamp_(_arrays(ts), float(bound))
    return _bump(ts)


def _total_norm(ts, ord=2):
    """The ``ord``-norm of the per-tensor norms (for ord > 0: of every element together), a 0-d tensor; the
    tensors share one device and dtype."""
    be = ts[0]._be
    return Tensor._make(be.total_norm(_arrays(ts), float(ord)), be)


def _foreach_clip_(ts, total, max_norm):
    """Scale every tensor in place by ``min(max_norm / (total + 1e-6), 1)``; ``total`` is a 0-d tensor on the
    tensors' device, read there (no host sync)."""
    if not ts:
        return ts
    ts[0]._be.foreach_clip_(_arrays(ts), total._data, float(max_norm))
    return _bump(ts)
