"""Max, average and adaptive pooling over 1-3 trailing spatial dims, and resampling (``interpolate``).

Pooling windows are a strided view of the padded input (no copy). Max pooling records, per output, the
flat index of the chosen element within its input plane (PyTorch's ``return_indices``); its backward
scatters the gradient there (``scatter_add``, whose own backward is a gather, so double backward works).
Where the backend has max-pooling primitives (the CPU's compiled loops) they do both in one pass each, and
the scatter runs only when a graph of the gradient is recorded.
Average pooling sums each window and divides by a per-position divisor table; its backward spreads
``grad / divisor`` over the windows with col2im, the adjoint of the window view. Adaptive average pooling
is separable: one averaging matrix per spatial dim, applied with ``matmul``.
"""
import functools
import itertools
import math
import warnings

import numpy as _np  # host-side only: divisor and bin tables, dtype limits

from ... import _dtype
from ...autograd.grad_mode import _state
from ...autograd.node import Op
from ...ops.indexing import IndexSelectBackward0, ScatterAddBackward0, ScatterBackward0
from ...ops._util import check_tensor
from ...tensor import Tensor
from .conv import Col2ImBackward0, _geometry

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d",
           "max_unpool2d", "max_unpool3d", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]


# ---------------------------------------------------------------------- arguments and output sizes

def _ints(value, k, fn, name):
    """kernel/stride/padding/dilation as a tuple of ``k`` ints (a single int repeats)."""
    if isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not bool")
    if isinstance(value, int):
        return (value,) * k
    if isinstance(value, (tuple, list)):
        vals = []
        for i, v in enumerate(value):
            if isinstance(v, bool) or not (isinstance(v, int) or hasattr(v, "__index__")):
                raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but found element of type "
                                f"{type(v).__name__} at pos {i}")
            vals.append(v.__index__())
        if len(vals) == 1:
            return tuple(vals) * k
        if len(vals) != k:
            if k == 1:
                raise RuntimeError(f"{fn}: {name} must be a single int, or a tuple of one int")
            raise RuntimeError(f"{fn}: {name} must either be a single int, or a tuple of {k} ints")
        return tuple(vals)
    if hasattr(value, "__index__") and not isinstance(value, Tensor):
        return (value.__index__(),) * k
    raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")


def _output_size(n, k, pad, stride, dilation, ceil_mode):
    """PyTorch's pooling_output_shape: with ceil_mode the last window must start inside the input or the
    left padding."""
    out = (n + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= n + pad:
        out -= 1
    return out


def _check_input(input, k, fn):
    check_tensor(input, fn, "input", 1)
    shape = input._data.shape
    if len(shape) not in (k + 1, k + 2) or any(n == 0 for n in shape[1:]):
        raise RuntimeError(f"non-empty {k + 1}D or {k + 2}D (batch mode) tensor expected for input")


def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, k, fn):
    """(kernel, stride, pads, dilation, blocks) of a pooling call, with PyTorch's checks. ``pads`` holds
    (low, high) per dim, ``high`` grown so that ceil_mode windows fit in the padded input."""
    kernel = _ints(kernel_size, k, fn, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) \
        else _ints(stride, k, fn, "stride")
    padding = _ints(padding, k, fn, "padding")
    dilation = _ints(dilation, k, fn, "dilation")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    _check_input(input, k, fn)
    dims = ("H", "W") if k == 2 else ("T", "H", "W") if k == 3 else ("W",)
    if any(v <= 0 for v in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got " +
                           " ".join(f"k{d}: {v}" for d, v in zip(dims, kernel)))
    if any(v < 0 for v in stride):
        raise RuntimeError("stride should be greater than zero, but got " +
                           " ".join(f"d{d}: {v}" for d, v in zip(dims, stride)))
    if any(v <= 0 for v in dilation):
        raise RuntimeError("dilation should be greater than zero, but got " +
                           " ".join(f"dilation{d}: {v}" for d, v in zip(dims, dilation)))
    for p, kk, d in zip(padding, kernel, dilation):
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > ((kk - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={kk} and dilation={d}")
    shape = input._data.shape
    spatial = shape[-k:]
    blocks = tuple(_output_size(n, kk, p, s, d, ceil_mode)
                   for n, kk, p, s, d in zip(spatial, kernel, padding, stride, dilation))
    if any(b < 1 for b in blocks):
        c = shape[-k - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + spatial))}). Calculated output size: "
                           f"({'x'.join(map(str, (c,) + blocks))}). Output size is too small")
    pads = tuple((p, max((b - 1) * s + d * (kk - 1) + 1 - n - p, 0))
                 for n, kk, p, s, d, b in zip(spatial, kernel, padding, stride, dilation, blocks))
    return kernel, stride, pads, dilation, blocks


# ---------------------------------------------------------------------- array-level windows

def _pad_last(be, d, pads, value):
    """``d`` with its last ``len(pads)`` dims padded by (low, high) elements of ``value``."""
    if not any(lo or hi for lo, hi in pads):
        return d
    k = len(pads)
    lead = d.shape[:-k]
    shape = lead + tuple(n + lo + hi for n, (lo, hi) in zip(d.shape[-k:], pads))
    out = be.full(shape, value, d.dtype)
    inner = (slice(None),) * len(lead) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(d.shape[-k:], pads))
    be.copy_into(out[inner], d)
    return out


def _window_view(be, d, kernel, stride, dilation, blocks):
    """The view ``(*lead, *blocks, *kernel)`` of the windows over the last ``len(kernel)`` dims."""
    k = len(kernel)
    st = be.strides(d)
    shape = d.shape[:-k] + tuple(blocks) + tuple(kernel)
    strides = st[:-k] + tuple(st[-k + i] * stride[i] for i in range(k)) + \
        tuple(st[-k + i] * dilation[i] for i in range(k))
    return be.as_strided_view(d, shape, strides)


def _lowest(np_dtype):
    if np_dtype.kind == "f" or np_dtype.kind == "V":
        return float("-inf")
    if np_dtype.kind == "b":
        return False
    return int(_np.iinfo(np_dtype).min)


def _max_pool_arrays(be, d, kernel, stride, pads, dilation, blocks):
    """(max values, flat input indices) of every window."""
    k = len(kernel)
    spatial = d.shape[-k:]
    padded = _pad_last(be, d, pads, _lowest(d.dtype))
    win = _window_view(be, padded, kernel, stride, dilation, blocks)
    win = be.reshape(win, win.shape[:-k] + (math.prod(kernel),))
    vals, choice = be.max_dim(win, -1)
    return vals, be.max_pool_positions(choice, kernel, stride, pads, dilation, spatial)


class _MaxPoolOp(Op):
    """Forward receives the already computed values and indices; backward sends each output's gradient
    to the input element it came from."""

    def forward(self, x, values, indices):
        self.indices = indices
        self.in_shape = x._data.shape
        return values

    def backward(self, g):
        be = g._be
        shape = self.in_shape
        if not _state.grad:
            gx = be.max_pool_backward(g._data, self.indices, shape, self.nspatial)
            if gx is not None:
                return (Tensor._make(gx, be),)
        plane = math.prod(shape[-self.nspatial:])
        lead = math.prod(shape[:-self.nspatial])
        idx = be.reshape(self.indices, (lead, -1))
        z = Tensor._make(be.zeros((lead, plane), g._data.dtype), be)
        gx = ScatterAddBackward0.apply(z, g.reshape(lead, idx.shape[1]), dim=1, index=idx)
        return (gx.reshape(shape),)


class MaxPool1DWithIndicesBackward0(_MaxPoolOp):
    nspatial = 1


class MaxPool2DWithIndicesBackward0(_MaxPoolOp):
    nspatial = 2


class MaxPool3DWithIndicesBackward0(_MaxPoolOp):
    nspatial = 3


_MAX_OPS = {1: MaxPool1DWithIndicesBackward0, 2: MaxPool2DWithIndicesBackward0, 3: MaxPool3DWithIndicesBackward0}


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, k, fn):
    kernel, stride, pads, dilation, blocks = _pool_geometry(input, kernel_size, stride, padding, dilation,
                                                            ceil_mode, k, fn)
    if input._data.dtype.kind == "b":
        raise RuntimeError(f"\"{fn}\" not implemented for 'Bool'")
    be = input._be
    fast = be.max_pool_forward(input._data, kernel, stride, pads, dilation, blocks)
    vals, idx = fast if fast is not None else _max_pool_arrays(be, input._data, kernel, stride, pads, dilation,
                                                               blocks)
    out = _MAX_OPS[k].apply(input, values=vals, indices=idx)
    if return_indices:
        # the node keeps its own indices: writes to the returned ones must not redirect the gradient
        return out, Tensor._make(be.copy(idx) if out.requires_grad else idx, be)
    return out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling over (N, C, L) or (C, L); with ``return_indices`` also the argmax positions."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W); ``stride`` defaults to ``kernel_size``. With
    ``return_indices`` returns (output, indices), indices flat within each H*W plane."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d")


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool1d`` returning (output, indices)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1, "max_pool1d")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool2d`` returning (output, indices)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2, "max_pool2d")


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool3d`` returning (output, indices)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3, "max_pool3d")


# ---------------------------------------------------------------------- average pooling

@functools.lru_cache(maxsize=256)
def _divisors(spatial, kernel, stride, padding, blocks, count_include_pad):
    """Per output position, the number of elements PyTorch divides by: the window clipped to the padded
    input (with the padding counted) or to the input itself."""
    table = None
    for n, kk, s, p, b in zip(spatial, kernel, stride, padding, blocks):
        start = _np.arange(b, dtype=_np.int64) * s - p
        end = _np.minimum(start + kk, n + p)
        size = end - start
        if not count_include_pad:
            size = _np.minimum(end, n) - _np.maximum(start, 0)
        table = size if table is None else _np.multiply.outer(table, size)
    return table


class _AvgPoolOp(Op):
    """Window sums times 1/divisor (integer inputs: truncating division by the divisor ``div``)."""

    def forward(self, x, geom, inv, div):
        be = x._be
        d = x._data
        self.geom = geom
        self.inv = inv
        kernel, _, pads, stride, _, blocks, _ = geom
        k = len(kernel)
        self.in_shape = d.shape
        padded = _pad_last(be, d, pads, 0)
        if d.dtype.kind in "fV" and d.dtype.itemsize == 2:
            # half precision sums in float32, as PyTorch accumulates it
            padded = be.astype(padded, be.np_dtype(_dtype.float32))
        lead = (slice(None),) * (d.ndim - k)
        # one strided add per kernel offset: much faster than reducing over the window axes of a
        # strided view, which NumPy walks element by element
        total = None
        for off in itertools.product(*[range(n) for n in kernel]):
            part = padded[lead + tuple(slice(o, o + s * (b - 1) + 1, s) for o, s, b in zip(off, stride, blocks))]
            total = be.copy(part) if total is None else be.binary("add", total, part, out=total)
        if d.dtype.kind in "iu":
            return be.binary("trunc_divide", total, div)
        total = be.binary("mul", total, inv, out=total)
        return be.astype(total, d.dtype)

    def backward(self, g):
        be = g._be
        kernel = self.geom[0]
        k = len(kernel)
        shape = self.in_shape
        lead = math.prod(shape[:-k])
        blocks = self.geom[5]
        L = math.prod(blocks)
        scaled = g * Tensor._make(self.inv, be)
        kp = math.prod(kernel)
        cols = scaled.reshape(lead, 1, 1, L).expand(lead, 1, kp, L).reshape(lead, kp, L)
        gx = Col2ImBackward0.apply(cols, geom=self.geom, channels=1)
        return (gx.reshape(shape),)


class AvgPool1DBackward0(_AvgPoolOp):
    pass


class AvgPool2DBackward0(_AvgPoolOp):
    pass


class AvgPool3DBackward0(_AvgPoolOp):
    pass


_AVG_OPS = {1: AvgPool1DBackward0, 2: AvgPool2DBackward0, 3: AvgPool3DBackward0}


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, k, fn):
    kernel, stride, pads, _, blocks = _pool_geometry(input, kernel_size, stride, padding, 1, ceil_mode, k, fn)
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, int):
            raise TypeError(f"{fn}(): argument 'divisor_override' must be int, not "
                            f"{type(divisor_override).__name__}")
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
    d = input._data
    if d.dtype.kind == "b":
        raise RuntimeError(f"\"{fn}\" not implemented for 'Bool'")
    be = input._be
    spatial = d.shape[-k:]
    padding = tuple(lo for lo, _ in pads)
    if divisor_override is not None:
        div = _np.full(blocks, divisor_override, dtype=_np.int64)
    else:
        div = _divisors(tuple(spatial), kernel, stride, padding, blocks, bool(count_include_pad))
    inv = be.asarray(1.0 / div, d.dtype if d.dtype.kind in "fV" else None)
    # the column geometry of the windows, for the backward's col2im
    geom = _geometry(kernel, (1,) * k, pads, stride, spatial, blocks)
    int_div = be.asarray(div) if d.dtype.kind in "iu" else None
    return _AVG_OPS[k].apply(input, geom=geom, inv=inv, div=int_div)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling over (N, C, L) or (C, L)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling over (N, C, H, W) or (C, H, W). ``count_include_pad`` counts the zero padding
    in the divisor; ``divisor_override`` replaces the divisor."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2,
                     "avg_pool2d")


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3,
                     "avg_pool3d")


# ---------------------------------------------------------------------- adaptive pooling

def _adaptive_sizes(input, output_size, k, fn):
    check_tensor(input, fn, "input", 1)
    shape = input._data.shape
    if len(shape) not in (k + 1, k + 2) or any(n == 0 for n in shape[1:]):
        raise RuntimeError(f"{fn}(): Expected {k + 1}D or {k + 2}D tensor, but got {list(shape)}")
    if isinstance(output_size, int) and not isinstance(output_size, bool):
        sizes = (output_size,) * k
    elif isinstance(output_size, (tuple, list)):
        sizes = tuple(output_size)
    else:
        raise TypeError(f"{fn}(): argument 'output_size' must be tuple of ints, not {type(output_size).__name__}")
    if len(sizes) != k:
        raise RuntimeError(f"{fn}: output_size must be {k}")
    spatial = shape[-k:]
    sizes = tuple(n if s is None else int(s) for s, n in zip(sizes, spatial))
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(map(str, sizes))}}}")
    return spatial, sizes


def _bins(n, out):
    """PyTorch's adaptive bins: output i covers [floor(i*n/out), ceil((i+1)*n/out))."""
    i = _np.arange(out, dtype=_np.int64)
    start = (i * n) // out
    end = -((-(i + 1) * n) // out)
    return start, end


@functools.lru_cache(maxsize=256)
def _averaging_matrix(n, out, np_dtype):
    start, end = _bins(n, out)
    m = _np.zeros((out, n), dtype=_np.float64)
    for i, (s, e) in enumerate(zip(start, end)):
        m[i, s:e] = 1.0 / (e - s)
    return m.astype(np_dtype)


def _adaptive_avg(input, output_size, k, fn):
    spatial, sizes = _adaptive_sizes(input, output_size, k, fn)
    d = input._data
    if d.dtype.kind not in "fV":
        raise RuntimeError(f"\"{fn}\" not implemented for '{input.dtype._scalar_name}'")
    if all(s == 1 for s in sizes):
        # global pooling, the common head of a CNN
        return input.mean(tuple(range(-k, 0)), keepdim=True)
    be = input._be
    out = input
    nd = d.ndim
    for i in range(k):
        n, o = spatial[i], sizes[i]
        if n == o:
            continue
        m = Tensor._make(be.asarray(_averaging_matrix(n, o, d.dtype)), be)
        dim = nd - k + i
        if dim == nd - 1:
            out = out.matmul(m.t())
        else:
            out = out.transpose(dim, -1).matmul(m.t()).transpose(dim, -1)
    return out.contiguous() if out is not input else input.clone()


def adaptive_avg_pool1d(input, output_size):
    """1-D average pooling to a fixed output length."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """2-D average pooling to a fixed output size (an int, or a pair whose None entries keep the input size)."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    """3-D average pooling to a fixed output size."""
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def _adaptive_max_arrays(be, d, spatial, sizes):
    """(values, flat indices) of adaptive max pooling: each bin read through an index table whose rows
    repeat their last element up to the widest bin (repeats do not change a max)."""
    tables = []
    for n, o in zip(spatial, sizes):
        start, end = _bins(n, o)
        w = int((end - start).max()) if o else 1
        tables.append(_np.minimum(start[:, None] + _np.arange(w)[None, :], (end - 1)[:, None]))
    return be.adaptive_max_pool(d, tables)


def _adaptive_max(input, output_size, return_indices, k, fn):
    spatial, sizes = _adaptive_sizes(input, output_size, k, fn)
    be = input._be
    vals, idx = _adaptive_max_arrays(be, input._data, spatial, sizes)
    out = _ADAPTIVE_MAX_OPS[k].apply(input, values=vals, indices=idx)
    if return_indices:
        return out, Tensor._make(be.copy(idx) if out.requires_grad else idx, be)
    return out


class AdaptiveMaxPool1DBackward0(_MaxPoolOp):
    nspatial = 1


class AdaptiveMaxPool2DBackward0(_MaxPoolOp):
    nspatial = 2


class AdaptiveMaxPool3DBackward0(_MaxPoolOp):
    nspatial = 3


_ADAPTIVE_MAX_OPS = {1: AdaptiveMaxPool1DBackward0, 2: AdaptiveMaxPool2DBackward0, 3: AdaptiveMaxPool3DBackward0}


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """1-D max pooling to a fixed output length."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """2-D max pooling to a fixed output size."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-D max pooling to a fixed output size."""
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool1d`` returning (output, indices)."""
    return _adaptive_max(input, output_size, True, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool2d`` returning (output, indices)."""
    return _adaptive_max(input, output_size, True, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool3d`` returning (output, indices)."""
    return _adaptive_max(input, output_size, True, 3, "adaptive_max_pool3d")


# ---------------------------------------------------------------------- power-average pooling

def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, k, fn):
    kernel = _ints(kernel_size, k, fn, "kernel_size")
    max_fn, avg_fn = {1: (max_pool1d, avg_pool1d), 2: (max_pool2d, avg_pool2d), 3: (max_pool3d, avg_pool3d)}[k]
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_fn(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_fn(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_fn(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # the window mean times the window size is the window sum; sign * relu(abs) keeps PyTorch's handling
    # of negative sums (NaN after the root, as in PyTorch)
    return (out.sign() * out.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x**p) ** (1/p)`` over 1-D windows (p = inf: max of |x|)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x**p) ** (1/p)`` over 2-D windows (p = inf: max of |x|)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x**p) ** (1/p)`` over 3-D windows (p = inf: max of |x|)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")


# ---------------------------------------------------------------------- max unpooling

def _unpool_output_size(input, kernel, stride, padding, output_size):
    shape = input._data.shape
    k = len(kernel)
    default = [(shape[-k + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(k)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == k + 2:
        output_size = output_size[2:]
    if len(output_size) != k:
        raise ValueError(f"output_size should be a sequence containing {k} or {k + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(k):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {lo} and {hi})')
    return output_size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, k, fn):
    for name, t, pos in (("input", input, 1), ("indices", indices, 2)):
        check_tensor(t, fn, name, pos)
    kernel = _ints(kernel_size, k, fn, "kernel_size")
    stride = kernel if stride is None else _ints(stride, k, fn, "stride")
    padding = _ints(padding, k, fn, "padding")
    if indices.dtype is not _dtype.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype._scalar_name}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    sizes = [int(v) for v in _unpool_output_size(input, kernel, stride, padding, output_size)]
    plane = math.prod(sizes)
    shape = input._data.shape
    lead = shape[:-k]
    n = math.prod(lead)
    idx = input._be.reshape(input._be.ascontiguous(indices._data), (n, -1))
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= plane):
        bad = idx[(idx < 0) | (idx >= plane)]
        shown = sizes + [1] if len(sizes) == 1 else sizes  # 1-D unpooling runs as 2-D in PyTorch
        raise RuntimeError(f"Found an invalid max index: {int(bad[0])} (output volumes are of size "
                           f"{'x'.join(map(str, shown))})")
    be = input._be
    zeros = Tensor._make(be.zeros((n, plane), input._data.dtype), be)
    out = ScatterBackward0.apply(zeros, input.reshape(n, -1), dim=1, index=idx)
    return out.reshape(tuple(lead) + tuple(sizes))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d``: each value placed at its index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool2d``: each value placed at its (flat H*W) index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool3d``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


# ---------------------------------------------------------------------- resampling (interpolate)
# Every mode is separable: nearest modes gather along each spatial dim in turn (index_select), linear and
# cubic modes multiply each dim by a (out, in) matrix of interpolation weights, 'area' is adaptive
# average pooling. Indices and weights follow PyTorch's formulas in its accumulation precision (float32
# for nearest, float32 or float64 for the others), so they pick the same source elements.

_ALIGN_MODES = ("linear", "bilinear", "bicubic", "trilinear")
_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _nearest_index(n_in, n_out, scale, exact):
    if not exact and n_out == n_in:
        return _np.arange(n_out, dtype=_np.int64)
    if not exact and n_out == 2 * n_in:
        return _np.arange(n_out, dtype=_np.int64) >> 1
    s = _np.float32(1.0 / scale) if scale is not None else _np.float32(n_in) / _np.float32(n_out)
    dst = _np.arange(n_out, dtype=_np.float32)
    if exact:
        dst = dst + _np.float32(0.5)
    return _np.minimum(_np.floor(dst * s).astype(_np.int64), n_in - 1)


def _source_scale(n_in, n_out, align_corners, scale, acc):
    if align_corners:
        return acc(n_in - 1) / acc(n_out - 1) if n_out > 1 else acc(0)
    return acc(1.0 / scale) if scale is not None else acc(n_in) / acc(n_out)


def _interp_matrix(n_in, n_out, align_corners, scale, cubic, acc):
    """(n_out, n_in) weights of linear or cubic interpolation along one dim."""
    s = _source_scale(n_in, n_out, align_corners, scale, acc)
    dst = _np.arange(n_out, dtype=acc)
    src = s * dst if align_corners else s * (dst + acc(0.5)) - acc(0.5)
    m = _np.zeros((n_out, n_in), dtype=_np.float64)
    rows = _np.arange(n_out)
    if not cubic:
        src = _np.maximum(src, acc(0))
        i0 = src.astype(_np.int64)
        step = (i0 < n_in - 1).astype(_np.int64)
        lam1 = src - i0.astype(acc)
        lam0 = acc(1) - lam1
        _np.add.at(m, (rows, i0), lam0)
        _np.add.at(m, (rows, i0 + step), lam1)
        return m
    a = acc(-0.75)
    i0 = _np.floor(src).astype(_np.int64)
    t = src - i0.astype(acc)

    def near(x):
        return ((a + acc(2)) * x - (a + acc(3))) * x * x + acc(1)

    def far(x):
        return ((a * x - acc(5) * a) * x + acc(8) * a) * x - acc(4) * a

    weights = (far(t + acc(1)), near(t), near(acc(1) - t), far(acc(2) - t))
    for k, w in enumerate(weights):
        _np.add.at(m, (rows, _np.clip(i0 - 1 + k, 0, n_in - 1)), w)
    return m


def _along_dims(x, mats):
    """``x`` with each trailing spatial dim multiplied by its matrix (None: left as is)."""
    nd = x._data.ndim
    k = len(mats)
    for i, m in enumerate(mats):
        if m is None:
            continue
        dim = nd - k + i
        if dim == nd - 1:
            x = x.matmul(m.t())
        else:
            x = x.transpose(dim, -1).matmul(m.t()).transpose(dim, -1)
    return x


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resample the spatial dims of (N, C, *spatial) to ``size`` or by ``scale_factor``. ``mode``: 'nearest',
    'nearest-exact', 'linear' (3-D input), 'bilinear' / 'bicubic' (4-D), 'trilinear' (5-D) or 'area';
    ``align_corners`` (interpolating modes) maps corner pixel centres onto each other."""
    check_tensor(input, "interpolate", "input", 1)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    spatial = input._data.shape[2:]
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scales = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(spatial)} and output size of {size}. Please "
                                 f"provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                                 f"...,oK) format.")
            out_size = [int(s) for s in size]
        else:
            out_size = [int(size)] * dim
    elif scale_factor is not None:
        out_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(spatial)} and scale_factor of shape "
                                 f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 f"scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and out_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        out_size = [int(math.floor(float(n) * s)) for n, s in zip(spatial, scales)]
        scales = None
    if out_size is None:
        out_size = [int(float(n) * s) for n, s in zip(spatial, scales)]
    if antialias:
        if not (mode in ("bilinear", "bicubic") and input.dim() == 4):
            raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
                             "tensor as input")
        raise NotImplementedError("interpolate(): antialias=True is not supported")
    if input.dim() not in (3, 4, 5) or mode not in ("nearest", "nearest-exact", "area") + _ALIGN_MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    need = _MODE_DIMS.get(mode)
    if need is not None and need != dim:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need + 2}D input")
    if any(s <= 0 for s in out_size):
        names = ("D", "H", "W")[3 - dim:]
        fmt = lambda sizes: ", ".join(f"{n}: {v}" for n, v in zip(names, sizes))  # noqa: E731
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({fmt(spatial)}) "
                           f"{'and ' if dim == 1 else ''}output ({fmt(out_size)})")
    if mode == "area":
        return _adaptive_avg(input, tuple(out_size), dim, f"adaptive_avg_pool{dim}d")
    be = input._be
    scale_of = (lambda i: None) if scales is None else (lambda i: scales[i])
    if mode in ("nearest", "nearest-exact"):
        out = input
        for i, (n, o) in enumerate(zip(spatial, out_size)):
            idx = _nearest_index(n, o, scale_of(i), mode == "nearest-exact")
            if o == n and (idx == _np.arange(n)).all():
                continue
            out = IndexSelectBackward0.apply(out, dim=2 + i, index=be.asarray(idx))
        return out if out is not input else input.clone()
    if input._data.dtype.kind not in "fV":
        raise NotImplementedError(f"\"upsample_{mode}{dim}d\" not implemented for '{input.dtype._scalar_name}'")
    acc = _np.float64 if input._data.dtype == _np.float64 else _np.float32
    mats = []
    for i, (n, o) in enumerate(zip(spatial, out_size)):
        m = _interp_matrix(n, o, align_corners, scale_of(i), mode == "bicubic", acc)
        identity = m.shape[0] == m.shape[1] and (m == _np.eye(n)).all()
        mats.append(None if identity else Tensor._make(be.asarray(m.astype(input._data.dtype)), be))
    out = _along_dims(input, mats)
    return out.contiguous() if out is not input else input.clone()


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
