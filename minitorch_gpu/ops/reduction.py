"""Reductions (sum, mean, prod, max, min, var, std, norm, logsumexp, any, all, cumsum, cumprod) and
softmax / log_softmax."""
from .. import _dtype
from ..autograd.function import Op
from ._util import wrap_dims

__all__ = ["sum"]


def _axes(dim, ndim):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    return wrap_dims(dim, ndim)


class SumBackward0(Op):
    def forward(self, x, dim=None, keepdim=False, dtype=None):
        self.in_shape = x._data.shape
        axes = _axes(dim, x._data.ndim)
        self.axes = axes
        self.keepdim = keepdim
        d = x._data
        if dtype is None and not x.dtype.is_floating_point:
            dtype = _dtype.int64  # PyTorch sums integers and bools as int64
        np_dt = None if dtype is None else x._be.np_dtype(dtype)
        return x._be.reduce("sum", d, axis=axes, keepdims=keepdim, dtype=np_dt)

    def backward(self, g):
        if not self.keepdim and self.axes is not None:
            shape = list(self.in_shape)
            for a in self.axes:
                shape[a] = 1
            g = g.reshape(shape)
        elif not self.keepdim:
            g = g.reshape((1,) * len(self.in_shape))
        return (g.expand(self.in_shape),)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum of elements, over all dims or over ``dim`` (an int or a tuple)."""
    if dtype is not None:
        dtype = _dtype.to_dtype(dtype)
    return SumBackward0.apply(input, dim=dim, keepdim=keepdim, dtype=dtype)


METHODS = {"sum": sum}
