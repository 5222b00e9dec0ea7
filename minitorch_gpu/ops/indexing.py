"""Indexing: __getitem__/__setitem__ (ints, slices with steps, None, Ellipsis, bool masks, integer
tensors), gather/scatter/index_select/index_add, masked ops, nonzero, sort/topk/unique, one_hot."""
from .. import _dtype
from ..autograd.function import Op
from ._inplace import apply_inplace

__all__ = ["masked_fill"]


class MaskedFillBackward0(Op):
    def forward(self, x, mask, value):
        self.save_for_backward(mask)
        be = x._be
        m = mask._data
        if m.shape != x._data.shape:
            m = be.broadcast_to(m, x._data.shape)
        return be.where(m, be.astype(be.asarray(value), x._data.dtype), x._data)

    def backward(self, g):
        mask, = self.saved_tensors
        return (g.masked_fill(mask, 0), None)


def masked_fill(input, mask, value):
    """``input`` with ``value`` where ``mask`` (a bool tensor broadcastable to input) is True."""
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    from ._util import is_expandable_to
    if not is_expandable_to(mask._data.shape, input._data.shape):
        raise RuntimeError(f"The size of tensor a ({list(input.shape)}) must match the size of tensor b "
                           f"({list(mask.shape)}) for masked_fill")
    return MaskedFillBackward0.apply(input, mask, value=value)


def masked_fill_(self, mask, value):
    return apply_inplace(self, masked_fill, mask, value, keeps_self=False)


METHODS = {"masked_fill": masked_fill, "masked_fill_": masked_fill_}
