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
from .._shapes import is_expandable_to
from ..tensor import VersionCounter, _move_retain
from . import anomaly
from .grad_mode import _state, no_grad
from .node import Node, _next_seq, bump_version, edge_of, sum_to

__all__ = ["apply_inplace", "make_view", "write_result", "rebase_view", "CopySlices"]

_VIEW_META_ERRORS = {
    "no_grad": (
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this "
        "use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view "
        "and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or "
        "both outside (if you want the inplace to be tracked)."),
    "inference": (
        "A view was created in inference mode and is being modified inplace in normal mode. Given that this use "
        "case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and "
        "the inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or "
        "both outside (if you want the inplace to be tracked)."),
    "custom_function": (
        "Output {nr} of {fn} is a view and is being modified inplace. This view was created inside a custom "
        "Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would "
        "override the custom backward associated with the custom Function, leading to incorrect gradients. This "
        "behavior is forbidden. You can fix this by cloning the output of the custom Function."),
}


def write_result(self, res):
    """Write ``res`` into ``self``'s memory (after dtype and shape checks); bump the version."""
    if res.dtype is not self.dtype and not _dtype.can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {res.dtype._scalar_name} can't be cast to the desired output type "
                           f"{self.dtype._scalar_name}")
    if res._data.shape != self._data.shape:
        if not is_expandable_to(res._data.shape, self._data.shape):
            raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                               f"{list(res._data.shape)}")
    self._be.copy_into(self._data, res._data)
    bump_version(self)


def _snapshot(self, copy):
    """A stand-in for ``self`` before the write: same history, and its own copy of the data when the op's
    backward needs the old value."""
    t = self._make(self._be.copy(self._data) if copy else self._data, self._be)
    t._grad_fn = self.grad_fn
    t._output_nr = self._output_nr
    t._requires_grad = self._requires_grad or t._grad_fn is not None
    return t


def _any_requires_grad(args, kwargs):
    for a in args:
        if getattr(a, "requires_grad", False) is True:
            return True
    for a in kwargs.values():
        if getattr(a, "requires_grad", False) is True:
            return True
    return False


def _check_view_meta(self):
    meta = self._view_meta
    if meta is None:
        multi = self.__dict__.get("_multi_output_op")
        if multi is not None:
            # ops returning several views (unbind, split) record one node for all of them: a CopySlices
            # rewrite of one output cannot be expressed through it
            raise RuntimeError(
                f"Output {self._output_nr} of {multi} is a view and is being modified inplace. This view is the "
                "output of a function that returns multiple views. Such functions do not allow the output views "
                "to be modified inplace. You should replace the inplace operation by an out-of-place one.")
        return
    msg = _VIEW_META_ERRORS[meta]
    if meta == "custom_function":
        fn = self._grad_fn
        msg = msg.format(nr=self._output_nr, fn=fn.name() if fn is not None else "a custom Function")
    raise RuntimeError(msg)


def apply_inplace(self, fn, *args, keeps_self=True, **kwargs):
    """Run ``fn(self, *args, **kwargs)`` out of place and store the result in ``self``; returns ``self``.

    ``keeps_self=False`` tells that fn's backward never reads the value of its first argument, which
    saves a copy when autograd is recording.
    """
    self._check_inplace()
    grad_on = _state.grad
    if not grad_on or not (self.requires_grad or _any_requires_grad(args, kwargs)):
        if grad_on:
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
        old_fn, old_nr = self._grad_fn, self._output_nr
        res = fn(_snapshot(self, keeps_self), *args, **kwargs)
        write_result(self, res)
        self._grad_fn = res._grad_fn
        self._output_nr = res._output_nr
        self._requires_grad = res._requires_grad
        if self._retains_grad:
            _move_retain(self, old_fn, old_nr)
        return self

    _check_view_meta(self)
    if base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    res = fn(_snapshot(self, keeps_self), *args, **kwargs)
    write_result(self, res)
    if res._requires_grad or base._requires_grad:
        rebase_view(self, res)
    return self


def rebase_view(view, src):
    """After ``view``'s memory was overwritten with ``src``'s value, give its base a CopySlices history
    (gradient outside the view to the old base, inside it to ``src``) and regenerate the view's own."""
    base = view._base
    node = CopySlices(base, view._view_fn, src)
    old_fn, old_nr = base._grad_fn, base._output_nr
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    if base._retains_grad:
        _move_retain(base, old_fn, old_nr)
    view._regenerate_view_grad_fn()


class CopySlices(Node):
    """History of a base after one of its views was written in place."""

    def __init__(self, base, view_fn, src):
        self.next_functions = (edge_of(base), edge_of(src))
        self._seq_nr = _next_seq()
        if anomaly._mode["enabled"]:
            self._trace = anomaly._stack()
        self.view_fn = view_fn
        self.base_shape = base._data.shape
        self.base_be = base._be
        self.src_shape = src._data.shape

    def name(self):
        return "CopySlices"

    def _run(self, grads):
        g = grads[0]
        grad_base = grad_src = None
        if self.next_functions[0][0] is not None:
            be = self.base_be
            mask = g._make(be.zeros(self.base_shape, be.np_dtype(_dtype.bool)), be)
            with no_grad():
                region = self.view_fn(mask)
            be.copy_into(region._data, True)
            grad_base = g.masked_fill(mask, 0)
        if self.next_functions[1][0] is not None:
            # the replayed view needs a layout like the base's; the incoming gradient may be an expand
            if not g._be.is_contiguous(g._data):
                g = g.contiguous()
            grad_src = sum_to(self.view_fn(g), self.src_shape)
        return (grad_base, grad_src)


class _ViewReplay:
    """Re-applies a chain of view ops to a tensor (``view = replay(base)``), iteratively so that a view
    of a view of ... of any depth replays without recursion."""
    __slots__ = ("fn", "prev")

    def __init__(self, fn, prev):
        self.fn = fn
        self.prev = prev

    def __call__(self, t):
        chain = []
        r = self
        while r is not None:
            if r.__class__ is _ViewReplay:
                chain.append(r.fn)
                r = r.prev
            else:
                chain.append(r)
                break
        for f in reversed(chain):
            t = f(t)
        return t


def make_view(op_cls, x, replay, **params):
    """Apply a view op (its forward must return a view of ``x._data``) and record view metadata:
    the root base, the shared version counter, and ``replay`` (``view = replay(x)``) composed with the
    replay that produced ``x`` itself."""
    out = op_cls.apply(x, **params)
    if x._base is None:
        root = x
        replay_fn = _ViewReplay(replay, None)
    else:
        root = x._base
        replay_fn = _ViewReplay(replay, x._view_fn)
    vc = x._vc
    if vc is None:
        vc = x._vc = VersionCounter()
    out._base = root
    out._vc = vc
    d = out.__dict__
    d["_view_fn"] = replay_fn
    d["_view_version"] = vc.value
    out._inference = x._inference
    if not _state.grad:
        # PyTorch's CreationMeta: an in-place write through this view under grad mode would be ambiguous
        d["_view_meta"] = "inference" if _state.inference else "no_grad"
    elif x._view_meta is not None:
        d["_view_meta"] = x._view_meta
    return out
