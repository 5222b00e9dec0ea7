"""Reductions (sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std, logsumexp, vector_norm, any/all,
count_nonzero), scans (cumsum, cumprod) and softmax / log_softmax.

Each differentiable op is an ``Op`` named like PyTorch's node. A backward first gives the gradient its
reduced dims back (``_restore``) and then broadcasts it, in Tensor ops only, so gradients of gradients
work. Softmax and log_softmax are backend primitives in both directions (fused kernels later); their
backward is itself an op (``SoftmaxBackwardDataBackward0``) whose own backward is written in Tensor ops.
"""
import builtins
import collections
import math
import types
import warnings

from .. import _dtype
from ..autograd.node import Op
from ..autograd.grad_mode import _state
from ..autograd._inplace import apply_inplace
from ..tensor import Tensor
from ._util import wrap_dim, wrap_dims, write_out, write_outs
from ._autocast import autocast_op

__all__ = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "var_mean",
           "std_mean", "logsumexp", "any", "all", "cumsum", "cumprod", "count_nonzero", "softmax",
           "log_softmax", "return_types"]

_INT64 = _dtype.int64.np_dtype


# ---------------------------------------------------------------------- return types

return_types = types.ModuleType("minitorch_gpu.return_types",
                                "Named tuples returned by ops with several results, like torch.return_types.")


def _return_type(name, fields):
    base = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"minitorch_gpu.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": "minitorch_gpu.return_types"})
    setattr(return_types, name, cls)
    return cls


_max_result = _return_type("max", ("values", "indices"))
_min_result = _return_type("min", ("values", "indices"))


# ---------------------------------------------------------------------- helpers

def _axes(dim, ndim):
    """The reduced axes as a tuple of non-negative ints, or None for all of them (``dim`` None or empty, or
    a 0-d input, whose only valid dims 0 and -1 name the whole tensor)."""
    if dim is None:
        return None
    if dim.__class__ is int:
        a = wrap_dim(dim, ndim)
        return (a,) if ndim else None
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return None
        axes = wrap_dims(dim, ndim)
    else:
        axes = (wrap_dim(dim, ndim),)
    return axes if ndim else None


def _count(shape, axes):
    return math.prod(shape) if axes is None else math.prod(shape[a] for a in axes)


def _keep_shape(shape, axes):
    out = list(shape)
    for a in (range(len(shape)) if axes is None else axes):
        out[a] = 1
    return tuple(out)


def _restore(g, in_shape, axes, keepdim):
    """A reduction's output (or its gradient) reshaped so that it broadcasts against the input."""
    if keepdim or not in_shape:
        return g
    return g.reshape(_keep_shape(in_shape, axes))


def _spread(g, in_shape, axes, keepdim, np_dtype=None):
    """A reduction's output gradient broadcast back over its input's shape (in ``np_dtype`` when given). Outside
    create_graph the gradient is a constant: the broadcast view of its array, without the two view nodes a
    reshape and an expand would record (about half of a tiny ``sum().backward()``)."""
    if not _state.grad and g.__class__ is Tensor:
        be = g._be
        d = g._data
        if not keepdim and in_shape:
            d = be.reshape(d, _keep_shape(in_shape, axes))
        if np_dtype is not None and d.dtype != np_dtype:
            d = be.astype(d, np_dtype)
        return Tensor._make(d if d.shape == in_shape else be.broadcast_to(d, in_shape), be)
    g = _restore(g, in_shape, axes, keepdim)
    if np_dtype is not None and g._data.dtype != np_dtype:
        g = g.to(_dtype.from_numpy_dtype(np_dtype))
    return g.expand(in_shape)


def _tensor(arr, be):
    return Tensor._make(arr, be)


def _mask(be, name, a, b=None):
    """A constant bool tensor from an elementwise comparison of backend arrays (``be.asarray`` because
    NumPy answers a 0-d comparison with a scalar)."""
    arr = be.unary(name, a) if b is None else be.binary(name, a, b)
    return _tensor(be.asarray(arr), be)


def _cast_input(input, dtype):
    """``input`` converted to ``dtype`` before an op (PyTorch's ``dtype=`` argument), differentiably."""
    if dtype is None:
        return input
    dt = _dtype.to_dtype(dtype)
    return input if dt is input.dtype else input.to(dt)


def _check_nonempty(name, input, axes):
    """PyTorch's errors for max/min-like reductions that have no identity."""
    shape = input._data.shape
    if axes is None:
        if input._data.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        return
    for a in axes:
        if shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")


# ---------------------------------------------------------------------- sum, mean, prod

class SumBackward0(Op):
    def forward(self, x, axes=None, keepdim=False, np_dtype=None):
        d = x._data
        self.in_shape = d.shape
        self.in_dtype = d.dtype
        self.axes = axes
        self.keepdim = keepdim
        return x._be.sum(d, axes, keepdim, np_dtype)

    def backward(self, g):
        return (_spread(g, self.in_shape, self.axes, self.keepdim, self.in_dtype),)


class SumBackward1(SumBackward0):
    """sum over given dims (PyTorch names the two overloads' nodes apart)."""


@autocast_op("sum")
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum of elements over all dims or over ``dim`` (an int or a tuple); integers and bools sum as int64.

    >>> mt.tensor([[1., 2.], [3., 4.]]).sum(1)
    tensor([3., 7.])
    """
    d = input._data
    if dtype is not None:
        np_dt = input._be.np_dtype(_dtype.to_dtype(dtype))
    elif d.dtype.kind in "biu":
        np_dt = _INT64
    else:
        np_dt = None
    axes = _axes(dim, d.ndim)
    r = (SumBackward0 if dim is None else SumBackward1).apply(input, axes=axes, keepdim=keepdim, np_dtype=np_dt)
    return r if out is None else write_out(r, out, "sum")


class MeanBackward0(Op):
    def forward(self, x, axes=None, keepdim=False):
        d = x._data
        self.in_shape = d.shape
        self.axes = axes
        self.keepdim = keepdim
        self.n = _count(d.shape, axes)
        return x._be.mean(d, axes, keepdim)

    def backward(self, g):
        if self.n:
            g = g * (1.0 / self.n)
        return (_spread(g, self.in_shape, self.axes, self.keepdim),)


class MeanBackward1(MeanBackward0):
    """mean over given dims."""


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean over all dims or over ``dim``; floating inputs only unless ``dtype`` is given (as PyTorch).

    >>> mt.tensor([1., 2., 3., 4.]).mean()
    tensor(2.5000)
    """
    if dtype is not None:
        dt = _dtype.to_dtype(dtype)
        if not dt.is_floating_point:
            raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be either a floating "
                               f"point or complex dtype. Got: {dt._scalar_name}")
        input = _cast_input(input, dt)
    elif not input.dtype.is_floating_point:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {input.dtype._scalar_name}")
    axes = _axes(dim, input._data.ndim)
    r = (MeanBackward0 if dim is None else MeanBackward1).apply(input, axes=axes, keepdim=keepdim)
    return r if out is None else write_out(r, out, "mean")


class ProdBackward0(Op):
    save_output = True

    def forward(self, x, axis=None, keepdim=False, np_dtype=None):
        self.save_for_backward(x)
        self.axis = axis
        self.keepdim = keepdim
        return x._be.prod(x._data, None if axis is None else (axis,), keepdim, np_dtype)

    def backward(self, g):
        x, out = self.saved_tensors
        in_shape = x._data.shape
        axes = None if self.axis is None else (self.axis,)
        g = _restore(g, in_shape, axes, self.keepdim)
        be = x._be
        if not be.any(be.binary("eq", x._data, 0)):
            return (g * _restore(out, in_shape, axes, self.keepdim) / x,)
        # with zeros, out / x is 0/0: use the product of everything before times everything after each
        # element (exclusive scans), which stays exact and differentiable
        if self.axis is None:
            flat = x.reshape(-1)
            others = _cumprod(flat, 0, exclusive=True) * _cumprod(flat, 0, reverse=True, exclusive=True)
            others = others.reshape(in_shape)
        else:
            others = (_cumprod(x, self.axis, exclusive=True) *
                      _cumprod(x, self.axis, reverse=True, exclusive=True))
        return (g * others,)


class ProdBackward1(ProdBackward0):
    """prod over one dim."""


@autocast_op("prod")
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product of all elements, or along one ``dim``; integers and bools multiply as int64.

    >>> mt.tensor([[1., 2.], [3., 4.]]).prod(0)
    tensor([3., 8.])
    """
    input = _cast_input(input, dtype)
    d = input._data
    # integers accumulate as int64 unless a dtype was asked for (NumPy would widen that one too)
    np_dt = (_INT64 if dtype is None else d.dtype) if d.dtype.kind in "biu" else None
    if dim is None:
        r = ProdBackward0.apply(input, axis=None, keepdim=False, np_dtype=np_dt)
    else:
        axis = wrap_dim(dim, d.ndim)
        r = ProdBackward1.apply(input, axis=axis if d.ndim else None, keepdim=keepdim, np_dtype=np_dt)
    return r if out is None else write_out(r, out, "prod")


# ---------------------------------------------------------------------- scans

class CumsumBackward0(Op):
    def forward(self, x, axis, np_dtype=None, reverse=False, exclusive=False):
        self.axis = axis
        self.reverse = reverse
        self.exclusive = exclusive
        return x._be.cumsum(x._data, axis, np_dtype, reverse, exclusive)

    def backward(self, g):
        # each output sums the inputs before it, so each input's gradient sums the gradients after it
        return (_cumsum(g, self.axis, not self.reverse, self.exclusive),)


def _cumsum(x, axis, reverse=False, exclusive=False):
    return CumsumBackward0.apply(x, axis=axis, reverse=reverse, exclusive=exclusive)


class CumprodBackward0(Op):
    save_output = True

    def forward(self, x, axis, np_dtype=None, reverse=False, exclusive=False):
        self.save_for_backward(x)
        self.axis = axis
        self.reverse = reverse
        self.exclusive = exclusive
        return x._be.cumprod(x._data, axis, np_dtype, reverse, exclusive)

    def backward(self, g):
        x, y = self.saved_tensors
        axis, rev, ex = self.axis, self.reverse, self.exclusive
        be = x._be
        is_zero = be.binary("eq", x._data, 0)
        if not be.any(is_zero):
            # d y_k / d x_i = y_k / x_i for every k that includes i
            return (_cumsum(g * y, axis, not rev, ex) / x,)
        if _state.grad:
            return (_cumprod_grad_differentiable(x, g, axis, rev, ex),)
        # With zeros, y_k / x_i is 0/0. The product over a scan prefix without element i is the product of
        # the input with zeros replaced by 1 (xs), as long as that prefix holds no zero other than i. Count
        # the zeros seen so far (c): a non-zero x_i gets the terms where c == 0, a zero x_i (only the first
        # zero can get anything) the terms where c == 1. O(n) and exact, but the masks hide how the result
        # depends on the zeros, so create_graph takes the path above.
        zero = _tensor(be.asarray(is_zero), be)
        xs = x.masked_fill(zero, 1)
        gy = g * _cumprod(xs, axis, rev, ex)
        c = be.cumsum(is_zero, axis, _INT64, rev, ex)
        first = _cumsum(gy.masked_fill(_mask(be, "ne", c, 0), 0), axis, not rev, ex)
        second = _cumsum(gy.masked_fill(_mask(be, "ne", c, 1), 0), axis, not rev, ex)
        not_zero = _mask(be, "logical_not", is_zero)
        return ((first.masked_fill(zero, 0) + second.masked_fill(not_zero, 0)) / xs,)


def _cumprod_grad_differentiable(x, g, axis, rev, ex):
    """cumprod's input gradient with zeros in x, written so that its own derivative is right too:
    grad_i = sum over the outputs k whose prefix holds i of g_k * (prefix product with x_i replaced by 1).
    The n copies of x (one per i) cost O(n^2) along the scanned dim; PyTorch also goes quadratic here."""
    shape = x._data.shape
    if not shape:
        return _cumprod_grad_differentiable(x.reshape(1), g.reshape(1), 0, rev, ex).reshape(())
    be = x._be
    n = shape[axis]
    eye, keep, inc = be.scan_masks(n, x._data.dtype, rev, ex)
    pair_shape = (1,) * axis + (n, n) + (1,) * (len(shape) - axis - 1)
    spread = shape[:axis] + (1,) + shape[axis:]
    # copies[..., i, j, ...] = x_j for j != i and 1 for j == i
    copies = x.reshape(spread) * _tensor(keep.reshape(pair_shape), be) + _tensor(eye.reshape(pair_shape), be)
    prefix = _cumprod(copies, axis + 1, rev, ex)
    weighted = g.reshape(spread) * _tensor(inc.reshape(pair_shape), be)
    return (prefix * weighted).sum(axis + 1)


def _cumprod(x, axis, reverse=False, exclusive=False):
    return CumprodBackward0.apply(x, axis=axis, reverse=reverse, exclusive=exclusive)


def _scan(op, name, input, dim, dtype, out):
    input = _cast_input(input, dtype)
    d = input._data
    axis = wrap_dim(dim, d.ndim)
    # integers accumulate as int64 unless a dtype was asked for (NumPy would widen that one too)
    np_dt = (_INT64 if dtype is None else d.dtype) if d.dtype.kind in "biu" else None
    r = op.apply(input, axis=axis, np_dtype=np_dt)
    return r if out is None else write_out(r, out, name)


@autocast_op("cumsum")
def cumsum(input, dim, *, dtype=None, out=None):
    """Running sum along ``dim``; integers and bools accumulate as int64.

    >>> mt.tensor([1., 2., 3.]).cumsum(0)
    tensor([1., 3., 6.])
    """
    return _scan(CumsumBackward0, "cumsum", input, dim, dtype, out)


@autocast_op("cumprod")
def cumprod(input, dim, *, dtype=None, out=None):
    """Running product along ``dim``; the gradient is exact with zeros in the input.

    >>> mt.tensor([1., 2., 3.]).cumprod(0)
    tensor([1., 2., 6.])
    """
    return _scan(CumprodBackward0, "cumprod", input, dim, dtype, out)


def cumsum_(self, dim, *, dtype=None):
    return apply_inplace(self, cumsum, dim, keeps_self=False, dtype=dtype)


def cumprod_(self, dim, *, dtype=None):
    return apply_inplace(self, cumprod, dim, dtype=dtype)


# ---------------------------------------------------------------------- max, min, amax, amin, argmax, argmin

class AmaxBackward0(Op):
    save_output = True
    _prim = "amax"
    # PyTorch's amax/amin give a NaN gradient to a slice whose result is NaN; its max()/min() send the
    # gradient to the NaN inputs instead
    _nan_is_tie = False

    def forward(self, x, axes=None, keepdim=False):
        self.save_for_backward(x)
        self.axes = axes
        self.keepdim = keepdim
        return getattr(x._be, self._prim)(x._data, axes, keepdim)

    def backward(self, g):
        x, out = self.saved_tensors
        in_shape = x._data.shape
        value = out._data.reshape(_keep_shape(in_shape, self.axes))
        w = x._be.tie_weights(x._data, value, self.axes, self._nan_is_tie)
        return (_restore(g, in_shape, self.axes, self.keepdim) * _tensor(w, x._be),)


class AminBackward0(AmaxBackward0):
    _prim = "amin"


class MaxBackward1(AmaxBackward0):
    """max() over everything: ties share the gradient, as with amax."""
    _nan_is_tie = True


class MinBackward1(AminBackward0):
    """min() over everything."""
    _nan_is_tie = True


class MaxBackward0(Op):
    """max(dim): the gradient goes to the returned index only."""

    def forward(self, x, values, indices, axis, keepdim):
        self.in_shape = x._data.shape
        self.in_np_dtype = x._data.dtype
        self.axis = axis
        self.keepdim = keepdim
        self.indices = indices
        return values

    def backward(self, g):
        if self.axis is None:
            return (g,)
        be = g._be
        mask = be.index_mask(self.indices, self.in_shape, self.axis, _dtype.bool.np_dtype)
        # a select, as PyTorch scatters the gradient into zeros: the other positions get exactly 0, not g * 0
        # (-0.0 for a negative g, NaN for a NaN or infinite one)
        return (_restore(g, self.in_shape, (self.axis,), self.keepdim).where(_tensor(mask, be), 0.0),)


class MinBackward0(MaxBackward0):
    """min(dim)."""


def _extreme(name, input, dim, keepdim, out, full_op, dim_op, result_cls):
    if isinstance(dim, Tensor):
        return getattr(input, "maximum" if name == "max" else "minimum")(dim)
    if dim is None:
        _check_nonempty(name, input, None)
        r = full_op.apply(input, axes=None, keepdim=False)
        return r if out is None else write_out(r, out, name)
    d = input._data
    be = input._be
    axis = wrap_dim(dim, d.ndim)
    if d.ndim == 0:
        vals, idx = be.copy(d), be.zeros((), _INT64)
        axis = None
    else:
        _check_nonempty(name, input, (axis,))
        vals, idx = getattr(be, name + "_dim")(d, axis, keepdim)
    values = dim_op.apply(input, values=vals, indices=idx, axis=axis, keepdim=keepdim)
    res = result_cls(values, _tensor(idx, be))
    if out is not None:
        return result_cls(*write_outs(res, out, name, exact_dtype=True))
    return res


def max(input, dim=None, keepdim=False, *, out=None):
    """The maximum of all elements; with ``dim``, ``(values, indices)`` along it (first index among ties);
    with a tensor as second argument, the elementwise maximum.

    >>> mt.tensor([[1., 5.], [4., 2.]]).max(1)
    minitorch_gpu.return_types.max(
    values=tensor([5., 4.]),
    indices=tensor([1, 0]))
    """
    return _extreme("max", input, dim, keepdim, out, MaxBackward1, MaxBackward0, _max_result)


def min(input, dim=None, keepdim=False, *, out=None):
    """The minimum of all elements; with ``dim``, ``(values, indices)``; with a tensor, ``minimum``."""
    return _extreme("min", input, dim, keepdim, out, MinBackward1, MinBackward0, _min_result)


def _amax_amin(name, op, input, dim, keepdim, out):
    axes = _axes(dim, input._data.ndim)
    _check_nonempty(name, input, axes)
    r = op.apply(input, axes=axes, keepdim=keepdim)
    return r if out is None else write_out(r, out, name, dtype_error=(
        "Expected the dtype for input and out to match, but got {result} for input's dtype and {out} for out's "
        "dtype."))


def amax(input, dim=(), keepdim=False, *, out=None):
    """Maximum over ``dim`` (an int or tuple; all dims by default); ties share the gradient evenly.

    >>> mt.tensor([[1., 5.], [4., 2.]]).amax(0)
    tensor([4., 5.])
    """
    return _amax_amin("amax", AmaxBackward0, input, dim, keepdim, out)


def amin(input, dim=(), keepdim=False, *, out=None):
    """Minimum over ``dim`` (an int or tuple; all dims by default); ties share the gradient evenly."""
    return _amax_amin("amin", AminBackward0, input, dim, keepdim, out)


def _arg(name, input, dim, keepdim, out):
    d = input._data
    be = input._be
    if d.dtype.kind == "b":
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        if d.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        r = _tensor(getattr(be, name)(d, None, keepdim), be)
    else:
        axis = wrap_dim(dim, d.ndim)
        if d.ndim == 0:
            r = _tensor(be.zeros((), _INT64), be)
        else:
            _check_nonempty(name, input, (axis,))
            r = _tensor(getattr(be, name)(d, axis, keepdim), be)
    return r if out is None else write_out(r, out, name, exact_dtype=True)


def argmax(input, dim=None, keepdim=False, *, out=None):
    """Index of the maximum (of the flattened tensor when ``dim`` is None), as int64.

    >>> mt.tensor([[1., 5.], [4., 2.]]).argmax(1)
    tensor([1, 0])
    """
    return _arg("argmax", input, dim, keepdim, out)


def argmin(input, dim=None, keepdim=False, *, out=None):
    """Index of the minimum (of the flattened tensor when ``dim`` is None), as int64."""
    return _arg("argmin", input, dim, keepdim, out)


# ---------------------------------------------------------------------- var, std

def _correction(name, dim, unbiased, correction):
    """(dim, correction) from PyTorch's three spellings: correction=, unbiased=, and var(input, unbiased)."""
    if isinstance(dim, builtins.bool):
        if unbiased is not None:
            raise TypeError(f"{name}() received an invalid combination of arguments: a bool dim and unbiased")
        unbiased, dim = dim, None
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments: both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _var_args(name, input, dim, unbiased, correction):
    if not input.dtype.is_floating_point:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dim, correction = _correction(name, dim, unbiased, correction)
    axes = _axes(dim, input._data.ndim)
    n = _count(input._data.shape, axes)
    if n - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return axes, correction


class VarBackward0(Op):
    def forward(self, x, axes=None, correction=1, keepdim=False):
        self.save_for_backward(x)
        self.axes = axes
        self.keepdim = keepdim
        self.dof = _count(x._data.shape, axes) - correction
        return x._be.var(x._data, axes, correction, keepdim)

    def backward(self, g):
        x, = self.saved_tensors
        scale = 2.0 / self.dof if self.dof > 0 else math.inf
        g = _restore(g * scale, x._data.shape, self.axes, self.keepdim)
        return (g * (x - x.mean(self.axes, keepdim=True)),)


class StdBackward0(Op):
    save_output = True

    def forward(self, x, axes=None, correction=1, keepdim=False):
        self.save_for_backward(x)
        self.axes = axes
        self.keepdim = keepdim
        self.dof = _count(x._data.shape, axes) - correction
        return x._be.std(x._data, axes, correction, keepdim)

    def backward(self, g):
        x, std = self.saved_tensors
        in_shape = x._data.shape
        std = _restore(std, in_shape, self.axes, self.keepdim)
        g = _restore(g, in_shape, self.axes, self.keepdim)
        be = x._be
        # d std = d var / (2 std); a zero std (constant input) gets a zero gradient, as in PyTorch
        std_is_zero = _mask(be, "eq", std._data, 0)
        scale = (g / std.masked_fill(std_is_zero, 1)).masked_fill(std_is_zero, 0)
        inv_dof = 1.0 / self.dof if self.dof > 0 else math.inf
        return (scale * inv_dof * (x - x.mean(self.axes, keepdim=True)),)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` with Bessel's ``correction`` (1 by default; ``unbiased=False`` means 0).

    >>> mt.tensor([1., 2., 3., 4.]).var()
    tensor(1.6667)
    """
    axes, correction = _var_args("var", input, dim, unbiased, correction)
    r = VarBackward0.apply(input, axes=axes, correction=correction, keepdim=keepdim)
    return r if out is None else write_out(r, out, "var")


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation over ``dim`` (see ``var`` for ``correction`` / ``unbiased``).

    >>> mt.tensor([1., 2., 3., 4.]).std()
    tensor(1.2910)
    """
    axes, correction = _var_args("std", input, dim, unbiased, correction)
    r = StdBackward0.apply(input, axes=axes, correction=correction, keepdim=keepdim)
    return r if out is None else write_out(r, out, "std")


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim``."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    v = var(input, dim, keepdim=keepdim, correction=correction)
    return v, mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim``."""
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    s = std(input, dim, keepdim=keepdim, correction=correction)
    return s, mean(input, dim, keepdim)


# ---------------------------------------------------------------------- logsumexp, norms

class LogsumexpBackward0(Op):
    save_output = True

    def forward(self, x, axes=None, keepdim=False):
        self.save_for_backward(x)
        self.axes = axes
        self.keepdim = keepdim
        return x._be.logsumexp(x._data, axes, keepdim)

    def backward(self, g):
        x, out = self.saved_tensors
        in_shape = x._data.shape
        out = _restore(out, in_shape, self.axes, self.keepdim)
        return (_restore(g, in_shape, self.axes, self.keepdim) * (x - out).exp(),)


@autocast_op("logsumexp")
def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) over ``dim``, computed without overflow; integers give the default float dtype.

    >>> mt.tensor([0., 0.]).logsumexp(0)
    tensor(0.6931)
    """
    if not input.dtype.is_floating_point:
        input = input.to(_dtype.get_default_dtype())
    axes = _axes(dim, input._data.ndim)
    r = LogsumexpBackward0.apply(input, axes=axes, keepdim=keepdim)
    if out is None:
        return r
    if isinstance(out, Tensor) and not out.dtype.is_floating_point:
        raise RuntimeError(f"logsumexp(): Expected floating point type for result tensor, but got: "
                           f"{out.dtype._scalar_name}")
    return write_out(r, out, "logsumexp")


def _fmt_ord(p):
    return str(int(p)) if math.isfinite(p) and p == int(p) else str(p)


class LinalgVectorNormBackward0(Op):
    save_output = True

    def forward(self, x, ord=2.0, axes=None, keepdim=False):
        self.save_for_backward(x)
        self.ord = ord
        self.axes = axes
        self.keepdim = keepdim
        return x._be.vector_norm(x._data, ord, axes, keepdim)

    def backward(self, g):
        x, norm_ = self.saved_tensors
        p = self.ord
        be = x._be
        in_shape = x._data.shape
        g = _restore(g, in_shape, self.axes, self.keepdim)
        n = _restore(norm_, in_shape, self.axes, self.keepdim)
        if p == 0:
            return (_tensor(be.zeros(in_shape, x._data.dtype), be),)
        if p == 1:
            return (g * x.sign(),)
        if math.isinf(p):
            # the max (min) of |x|: ties share the gradient, as with amax
            w = be.tie_weights(be.unary("abs", x._data), n._data, self.axes)
            return (g * x.sign() * _tensor(w, be),)
        # A zero norm (all of x zero) has gradient 0, as in PyTorch; dividing by 1 there instead of 0 keeps
        # inf and NaN (and NumPy's warnings about them) out of the masked-away values.
        norm_is_zero = _mask(be, "eq", n._data, 0)
        safe_n = n.masked_fill(norm_is_zero, 1)
        if p == 2:
            # PyTorch's g * (x / norm) with 0 where the norm is 0: a NaN g stays NaN there, the zeros take g's sign
            return (g * (x / safe_n).masked_fill(norm_is_zero, 0),)
        if p < 1:
            # |x|^(p-1) is infinite at x = 0, where the derivative is taken as 0: sign(0) = 0 times |1|^(p-1)
            safe_abs = x.abs().masked_fill(_mask(be, "eq", x._data, 0), 1)
            return (x.sign() * safe_abs.pow(p - 1) * (g * n.pow(1 - p)),)
        s = x.sign() * x.abs().pow(p - 1) if p < 2 else x * x.abs().pow(p - 2)
        return (s * (g / safe_n.pow(p - 1)).masked_fill(norm_is_zero, 0),)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """(sum |x|^ord)^(1/ord) over ``dim`` (all dims by default); ``ord`` may be inf, -inf or 0.

    >>> vector_norm(mt.tensor([3., 4.]))
    tensor(5.)
    """
    if not x.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{x.dtype._scalar_name}")
    if dtype is not None:
        dt = _dtype.to_dtype(dtype)
        if not dt.is_floating_point:
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got "
                               f"{dt._scalar_name}")
        x = _cast_input(x, dt)
    if isinstance(ord, (str, builtins.bool)):
        raise TypeError(f"linalg.vector_norm: ord must be a number, got {type(ord).__name__}")
    try:
        ord = float(ord)
    except (TypeError, ValueError):
        raise TypeError(f"linalg.vector_norm: ord must be a number, got {type(ord).__name__}") from None
    axes = _axes(dim, x._data.ndim)
    if ord < 0 or ord == math.inf:
        # these norms are a max or min (or a negative power of one), which have no value for no elements
        if axes is None and x._data.size == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on an empty tensor "
                               "because the operation does not have an identity")
        for a in axes or ():
            if x._data.shape[a] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on the dimension "
                                   f"{a} because this dimension is empty and the operation does not have an "
                                   "identity")
    r = LinalgVectorNormBackward0.apply(x, ord=ord, axes=axes, keepdim=keepdim)
    return r if out is None else write_out(r, out, "linalg_vector_norm", exact_dtype=True)


# ---------------------------------------------------------------------- any, all, count_nonzero

def _logical(name, input, dim, keepdim, out):
    d = input._data
    be = input._be
    r = getattr(be, name)(d, _axes(dim, d.ndim), keepdim)
    if d.dtype == _dtype.uint8.np_dtype:
        r = be.astype(r, d.dtype)  # PyTorch keeps uint8 for uint8 inputs
    r = _tensor(r, be)
    return r if out is None else write_out(r, out, name, dtype_error=(
        f"{name} only supports bool tensor for result, got: {{out}}"))


def any(input, dim=None, keepdim=False, *, out=None):
    """Whether any element (along ``dim``, an int or tuple) is non-zero; bool result.

    >>> mt.tensor([[0, 1], [0, 0]]).any(1)
    tensor([ True, False])
    """
    return _logical("any", input, dim, keepdim, out)


def all(input, dim=None, keepdim=False, *, out=None):
    """Whether every element (along ``dim``, an int or tuple) is non-zero; bool result."""
    return _logical("all", input, dim, keepdim, out)


def count_nonzero(input, dim=None):
    """Number of non-zero elements, over all dims or ``dim`` (an int or tuple), as int64.

    >>> mt.tensor([[0, 1], [2, 0]]).count_nonzero()
    tensor(2)
    """
    d = input._data
    return _tensor(input._be.count_nonzero_dims(d, _axes(dim, d.ndim)), input._be)


# ---------------------------------------------------------------------- softmax, log_softmax

class SoftmaxBackward0(Op):
    save_output = True

    def forward(self, x, axis):
        self.axis = axis
        return x._be.softmax_forward(x._data, axis)

    def backward(self, g):
        return (SoftmaxBackwardDataBackward0.apply(g, self.saved_output, axis=self.axis),)


class SoftmaxBackwardDataBackward0(Op):
    """softmax's input gradient y * (g - sum(g * y)) as an op, so that it can be differentiated again."""

    def forward(self, g, y, axis):
        self.save_for_backward(g, y)
        self.axis = axis
        return g._be.softmax_backward(y._data, g._data, axis)

    def backward(self, gg):
        g, y = self.saved_tensors
        axis = self.axis
        need_g, need_y = self.needs_input_grad
        # the Jacobian of softmax is symmetric, so the gradient wrt g is the same map applied to gg
        grad_g = SoftmaxBackwardDataBackward0.apply(gg, y, axis=axis) if need_g else None
        grad_y = None
        if need_y:
            s = (g * y).sum(axis, keepdim=True)
            grad_y = gg * (g - s) - g * (gg * y).sum(axis, keepdim=True)
        return grad_g, grad_y


class LogSoftmaxBackward0(Op):
    save_output = True

    def forward(self, x, axis):
        self.axis = axis
        return x._be.log_softmax_forward(x._data, axis)

    def backward(self, g):
        return (LogSoftmaxBackwardDataBackward0.apply(g, self.saved_output, axis=self.axis),)


class LogSoftmaxBackwardDataBackward0(Op):
    """log_softmax's input gradient g - exp(y) * sum(g) as an op, differentiable again."""

    def forward(self, g, y, axis):
        self.save_for_backward(g, y)
        self.axis = axis
        return g._be.log_softmax_backward(y._data, g._data, axis)

    def backward(self, gg):
        g, y = self.saved_tensors
        axis = self.axis
        need_g, need_y = self.needs_input_grad
        p = y.exp()
        grad_g = gg - (gg * p).sum(axis, keepdim=True) if need_g else None
        grad_y = -(gg * p * g.sum(axis, keepdim=True)) if need_y else None
        return grad_g, grad_y


def _softmax_like(name, op, input, dim, dtype):
    input = _cast_input(input, dtype)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}" not implemented for \'{input.dtype._scalar_name}\'')
    ndim = input._data.ndim
    axis = wrap_dim(dim, ndim)
    return op.apply(input, axis=axis if ndim else None)


@autocast_op("softmax")
def softmax(input, dim, dtype=None):
    """exp(input) normalised to sum to 1 along ``dim`` (computed stably); ``dtype`` casts the input first.

    >>> mt.tensor([0., 0.]).softmax(0)
    tensor([0.5000, 0.5000])
    """
    return _softmax_like("softmax", SoftmaxBackward0, input, dim, dtype)


@autocast_op("log_softmax")
def log_softmax(input, dim, dtype=None):
    """log(softmax(input)) along ``dim``, computed directly (stable for very negative logits)."""
    return _softmax_like("log_softmax", LogSoftmaxBackward0, input, dim, dtype)


METHODS = {
    "sum": sum, "mean": mean, "prod": prod, "max": max, "min": min, "amax": amax, "amin": amin,
    "argmax": argmax, "argmin": argmin, "var": var, "std": std, "logsumexp": logsumexp,
    "any": any, "all": all, "count_nonzero": count_nonzero, "cumsum": cumsum, "cumprod": cumprod,
    "cumsum_": cumsum_, "cumprod_": cumprod_, "softmax": softmax, "log_softmax": log_softmax,
}
