"""In-place ops and views: how they keep autograd right.

Every in-place op is its out-of-place op plus a write: ``apply_inplace(self, fn, *args)`` computes
``fn(old_self, *args)`` (recording a node as usual), writes the result into ``self``'s memory and bumps
the version counter shared with every view, then gives ``self`` the new node as its history. When
``self`` is a view, the base's history is rewritten instead (a ``CopySlices`` node: the base's old
gradient outside the view, the new value's gradient inside it), and the view's own ``grad_fn`` is
regenerated from the base on next use. This is the graph rewrite PyTorch's autograd mechanics
describe; because each piece is an ordinary op, gradients of gradients stay right.
"""
from .. import _dtype
from ..autograd.function import Node, VersionCounter, _seq, bump_version
from ..autograd.grad_mode import _state, no_grad

__all__ = ["apply_inplace", "make_view", "write_result", "CopySlices"]


def write_result(self, res):
    """Write ``res`` into ``self``'s memory (after dtype and shape checks); bump the version."""
    if res.dtype is not self.dtype and not _dtype.can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {res.dtype._tensor_name[:-6]} can't be cast to the desired output type "
                           f"{self.dtype._tensor_name[:-6]}")
    if res._data.shape != self._data.shape:
        from ._util import is_expandable_to
        if not is_expandable_to(res._data.shape, self._data.shape):
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                               f"{list(res._data.shape)}")
    self._be.copy_into(self._data, res._data)
    bump_version(self)


def _snapshot(self, copy):
    """A stand-in for ``self`` before the write: same history, and its own copy of the data when the op's
    backward needs the old value."""
    from ..tensor import Tensor
    t = Tensor._make(self._be.copy(self._data) if copy else self._data, self._be)
    t._grad_fn = self.grad_fn
    t._output_nr = self._output_nr
    t._requires_grad = self.requires_grad
    return t


def apply_inplace(self, fn, *args, keeps_self=True, **kwargs):
    """Run ``fn(self, *args, **kwargs)`` out of place and store the result in ``self``; returns ``self``.

    ``keeps_self=False`` tells that fn's backward never reads the value of its first argument, which
    saves a copy when autograd is recording.
    """
    from ..tensor import Tensor
    self._check_inplace()
    recording = _state.grad and (self.requires_grad or any(
        isinstance(a, Tensor) and a.requires_grad for a in args) or any(
        isinstance(a, Tensor) and a.requires_grad for a in kwargs.values()))
    if not recording:
        if _state.grad:
            with no_grad():
                res = fn(self, *args, **kwargs)
        else:
            res = fn(self, *args, **kwargs)
        write_result(self, res)
        return self

    base = self._base
    if base is None:
        if self._grad_fn is None and self._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        old = _snapshot(self, keeps_self)
        res = fn(old, *args, **kwargs)
        write_result(self, res)
        self._grad_fn = res._grad_fn
        self._output_nr = res._output_nr
        self._requires_grad = res._requires_grad
        return self

    if base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    old = _snapshot(self, keeps_self)
    res = fn(old, *args, **kwargs)
    write_result(self, res)
    if res._requires_grad or base._requires_grad:
        node = CopySlices(base, self._view_fn, res)
        base._grad_fn = node
        base._output_nr = 0
        base._requires_grad = True
        self._regenerate_view_grad_fn()
    return self


class CopySlices(Node):
    """History of a base after one of its views was written in place."""

    def __init__(self, base, view_fn, src):
        self.next_functions = (base._edge() if base._requires_grad else (None, 0),
                               src._edge() if src._requires_grad else (None, 0))
        self._seq_nr = next(_seq)
        self.view_fn = view_fn
        self.base_shape = base._data.shape
        self.base_be = base._be
        self.src_shape = src._data.shape

    def name(self):
        return "CopySlices"

    def _run(self, grads):
        from ..tensor import Tensor
        from ._util import sum_to
        g = grads[0]
        grad_base = grad_src = None
        if self.next_functions[0][0] is not None:
            be = self.base_be
            mask = Tensor._make(be.zeros(self.base_shape, be.np_dtype(_dtype.bool)), be)
            with no_grad():
                region = self.view_fn(mask)
            be.copy_into(region._data, True)
            grad_base = g.masked_fill(mask, 0)
        if self.next_functions[1][0] is not None:
            grad_src = sum_to(self.view_fn(g), self.src_shape)
        return (grad_base, grad_src)


def make_view(op_cls, x, replay, **params):
    """Apply a view op (its forward must return a view of ``x._data``) and record view metadata:
    the root base, the shared version counter, and ``replay`` (``view = replay(x)``) composed with the
    replay that produced ``x`` itself."""
    out = op_cls.apply(x, **params)
    if x._base is None:
        root = x
        prev = None
    else:
        root = x._base
        prev = x._view_fn
    vc = x._vc
    if vc is None:
        vc = x._vc = VersionCounter()
    out._base = root
    out._vc = vc
    out._view_fn = replay if prev is None else (lambda b: replay(prev(b)))
    out._view_version = vc.value
    out._inference = x._inference
    return out
