"""Shape ops: views (view, reshape, transpose, permute, expand, squeeze, unsqueeze, narrow, ...) and
copying shape ops (cat, stack, flip, roll, tril, triu, repeat, ...).

A view op's forward returns a view of the input array and goes through ``make_view`` so that a write
through the view is seen by the base and tracked by autograd.
"""
from ..autograd.function import Op
from ._inplace import make_view
from ._util import is_expandable_to

__all__ = ["reshape", "expand"]


def _infer_shape(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if not isinstance(s, int) or isinstance(s, bool):
            raise TypeError(f"shape must be a sequence of ints, got {shape}")
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for i, s in enumerate(shape):
        if i not in neg:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
    return tuple(shape)


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(int(s) if hasattr(s, "__index__") else s for s in shape)


class ViewBackward0(Op):
    def forward(self, x, shape):
        self.in_shape = x._data.shape
        v = x._be.reshape_view(x._data, shape)
        if v is None:
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        return v

    def backward(self, g):
        return (g.reshape(self.in_shape),)


class ReshapeAliasBackward0(Op):
    """reshape that had to copy (the input's strides allow no view)."""

    def forward(self, x, shape):
        self.in_shape = x._data.shape
        return x._be.reshape(x._be.ascontiguous(x._data), shape)

    def backward(self, g):
        return (g.reshape(self.in_shape),)


def view(input, *shape):
    """A view with a new shape (one dim may be -1); RuntimeError when the strides allow no view."""
    from .. import _dtype
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        raise RuntimeError("view(dtype) is not supported")
    shape = _infer_shape(_shape_arg(shape), input._data.size)
    return make_view(ViewBackward0, input, lambda t: t.view(shape), shape=shape)


def reshape(input, *shape):
    """Like ``view`` when the strides allow it, else a copy."""
    shape = _infer_shape(_shape_arg(shape), input._data.size)
    if input._be.reshape_view(input._data, shape) is not None:
        return make_view(ViewBackward0, input, lambda t: t.view(shape), shape=shape)
    return ReshapeAliasBackward0.apply(input, shape=shape)


class ExpandBackward0(Op):
    def forward(self, x, shape):
        self.in_shape = x._data.shape
        return x._be.broadcast_to(x._data, shape)

    def backward(self, g):
        from ._util import sum_to
        return (sum_to(g, self.in_shape),)


def expand(input, *sizes):
    """A broadcast view (no copy); -1 keeps a dim's size."""
    sizes = _shape_arg(sizes)
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand(minitorch_gpu.{input.dtype._tensor_name}{{{list(shape)}}}, size={list(sizes)}): "
                           f"the number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   "non-existing dimension")
            out.append(s)
        else:
            cur = shape[i - lead]
            if s == -1:
                out.append(cur)
            elif cur != 1 and s != cur:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                                   f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                                   f"{list(shape)}")
            else:
                out.append(s)
    out = tuple(out)
    if out == shape:
        return make_view(ViewBackward0, input, lambda t: t.view(out), shape=out)
    return make_view(ExpandBackward0, input, lambda t: t.expand(out), shape=out)


METHODS = {"view": view, "reshape": reshape, "expand": expand}
