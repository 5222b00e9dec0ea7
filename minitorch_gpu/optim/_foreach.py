"""List operations on tensors (PyTorch's ``torch._foreach_*``) for the multi-tensor optimizer paths.

Each function takes lists of tensors that share one device and dtype (the optimizers group them first) and
makes one backend call for the whole list. In-place forms bump every written tensor's version counter, as
the per-tensor in-place ops do. None of this records autograd history: the foreach paths run under
``no_grad``, as in PyTorch.
"""
from ..autograd.function import bump_version
from ..tensor import Tensor

__all__ = ["_foreach_neg", "_foreach_sqrt", "_foreach_sqrt_", "_foreach_sign", "_foreach_add", "_foreach_add_",
           "_foreach_mul", "_foreach_mul_", "_foreach_div_", "_foreach_maximum_", "_foreach_lerp_",
           "_foreach_addcmul", "_foreach_addcmul_", "_foreach_addcdiv_", "_foreach_clone", "_foreach_norm",
           "_foreach_clamp_", "_total_norm", "_foreach_clip_"]


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


def _foreach_sqrt(ts):
    return _unary("sqrt", ts, False)


def _foreach_sqrt_(ts):
    return _unary("sqrt", ts, True)


def _foreach_sign(ts):
    return _unary("sign", ts, False)


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


def _foreach_mul(ts, other):
    return _binary("mul", ts, other, 1, False)


def _foreach_mul_(ts, other):
    return _binary("mul", ts, other, 1, True)


def _foreach_div_(ts, other):
    return _binary("div", ts, other, 1, True)


def _foreach_maximum_(ts, others):
    return _binary("maximum", ts, others, 1, True)


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


def _foreach_addcdiv_(ts, t1, t2, value=1):
    if not ts:
        return ts
    ts[0]._be.foreach_addcdiv(_arrays(ts), _arrays(t1), _arrays(t2), _values(value), inplace=True)
    return _bump(ts)


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
