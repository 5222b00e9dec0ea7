"""Binning: which bin each value falls in (``searchsorted``, ``bucketize``) and how many values fall in each bin
(``histc``, ``histogram``).

None of these is differentiable in PyTorch, and their results never require grad. The search is one vectorised
binary search over every value at once (the backend's ``searchsorted``); the histograms turn values into bin
numbers (PyTorch's linear interpolation for ``histc``, the exact edges for ``histogram``) and count them with the
backend's ``bin_counts``.
"""
import builtins

import numpy as _np  # host-side only: rounding the histogram range to the input's dtype

from .. import _dtype
from ..tensor import Tensor
from ._util import check_tensor, write_out, write_outs
from .creation import linspace
from .reduction import _return_type

__all__ = ["searchsorted", "bucketize", "histc", "histogram"]

_INT64 = _dtype.int64.np_dtype
_histogram_result = _return_type("histogram", ("hist", "bin_edges"))


def _values_tensor(v, like):
    """``v`` as a tensor on ``like``'s device: a Python number becomes a 0-d tensor."""
    if isinstance(v, Tensor):
        return v
    if isinstance(v, builtins.bool) or not isinstance(v, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"searchsorted(): argument 'input' must be Tensor or Number, not {type(v).__name__}")
    return Tensor._make(like._be.asarray(v, _dtype.result_type(like, v).np_dtype), like._be)


def _search(boundaries, values, right, sorter, out_int32):
    """The insertion points of ``values`` into ``boundaries``, compared in their promoted dtype."""
    be = boundaries._be
    npd = _dtype.result_type(boundaries, values).np_dtype
    b, v = boundaries._data, values._data
    if values._be is not be:
        v = be.asarray(values._be.to_numpy(v))
    b = be.astype(b, npd)
    v = be.astype(v, npd)
    r = be.searchsorted(b, v, right, None if sorter is None else sorter._data)
    return Tensor._make(be.astype(r, _dtype.int32.np_dtype) if out_int32 else r, be)


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, out=None, sorter=None):
    """Indices where ``input``'s values would be inserted into the ascending last dim of ``sorted_sequence``
    to keep it sorted (``side='right'`` / ``right=True``: after equal elements). ``sorter`` gives the order
    that sorts an unsorted sequence.

    >>> mt.searchsorted(mt.tensor([1, 3, 5, 7]), mt.tensor([3, 6, 9]))
    tensor([1, 3, 4])
    """
    check_tensor(sorted_sequence, "searchsorted", "sorted_sequence", 1)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side != "right":
            raise RuntimeError(f"torch.searchsorted(): side and right can't be set to opposites, got side of {side} "
                               "while right was True")
        right = side == "right"
    values = _values_tensor(input, sorted_sequence)
    bshape, vshape = tuple(sorted_sequence.shape), tuple(values.shape)
    if not bshape:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if len(bshape) != 1 and (len(bshape) != len(vshape) or bshape[:-1] != vshape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {_shape_str(bshape)} and input value tensor {_shape_str(vshape)}")
    if sorter is not None:
        if sorter.dtype is not _dtype.int64:
            raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{sorter.dtype._scalar_name}")
        if tuple(sorter.shape) != bshape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {_shape_str(bshape)}and got sorter tensor {_shape_str(tuple(sorter.shape))}")
        if sorter.numel():
            lo, hi = sorter._be.index_range(sorter._data)
            if lo < 0 or hi >= bshape[-1]:
                raise RuntimeError("torch.searchsorted(): sorter index out of range")
    r = _search(sorted_sequence, values, right, sorter, out_int32)
    return r if out is None else write_out(r, out, "searchsorted")


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value of ``input`` among the ascending 1-D ``boundaries``: ``i`` with
    ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= x < boundaries[i]``)."""
    check_tensor(boundaries, "bucketize", "boundaries", 2)
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    r = _search(boundaries, _values_tensor(input, boundaries), right, None, out_int32)
    return r if out is None else write_out(r, out, "bucketize")


def _check_bins(bins):
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")


def _check_float(input, kernel):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype._scalar_name}'")


def _finite_range(x):
    """(min, max) of a tensor's values as Python floats (0, 0 when empty)."""
    if x.numel() == 0:
        return 0.0, 0.0
    return float(x.detach().min().item()), float(x.detach().max().item())


def _number(v):
    """A C++-style rendering of a double in PyTorch's messages: 1, 2.5, inf, nan."""
    return f"{v:g}"


def histc(input, bins=100, min=0, max=0, *, out=None):
    """A histogram of ``input``'s values in ``bins`` equal bins between ``min`` and ``max`` (both 0: the
    values' own range); values outside the range are ignored, ``max`` itself counts in the last bin."""
    check_tensor(input, "histc", "input", 1)
    _check_float(input, "histogram_cpu")
    bins = int(bins)
    _check_bins(bins)
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = _finite_range(input)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if not (_np.isfinite(lo) and _np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_number(lo)}, {_number(hi)}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    be = input._be
    d = input._data
    npd = d.dtype
    # PyTorch interpolates in the input's dtype between the edges rounded to it
    lo_t, hi_t = float(npd.type(lo)), float(npd.type(hi))
    width = float(npd.type(hi_t) - npd.type(lo_t))
    pos = be.binary("div", be.binary("mul", be.binary("sub", d, lo_t), float(bins)), width)
    pos = be.astype(be.unary("floor", pos), _INT64)
    pos = be.where(be.binary("eq", pos, bins), bins - 1, pos)
    inside = be.binary("logical_and", be.binary("ge", d, lo_t), be.binary("le", d, hi_t))
    counts = be.bin_counts(be.where(inside, pos, -1).reshape(-1), bins, None, npd)
    r = Tensor._make(counts, be)
    return r if out is None else write_out(r, out, "histc")


def histogram(input, bins, *, range=None, weight=None, density=False, out=None):
    """A histogram of ``input``'s values: ``bins`` equal bins over ``range`` (default: the values' range), or
    the bins between consecutive edges of a 1-D tensor ``bins``. Each bin holds its left edge; the last one its
    right edge too. Returns ``(hist, bin_edges)``; ``weight`` weighs each value, ``density`` normalises the
    histogram to integrate to 1."""
    check_tensor(input, "histogram", "input", 1)
    _check_float(input, "histogramdd")
    if isinstance(bins, Tensor):
        if bins.dtype is not input.dtype:
            raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {input.dtype._cpp_name} and bins for dimension 0 with dtype "
                               f"{bins.dtype._cpp_name}")
        edges = bins
    else:
        n = int(bins)
        _check_bins(n)
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
            if lo > hi:
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {_number(lo)} max "
                                   f"{_number(hi)} for dimension 0")
        elif input.numel():
            lo, hi = _finite_range(input)
        else:
            lo, hi = 0.0, 1.0
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = linspace(lo, hi, n + 1, dtype=input.dtype, device=input.device)
    if edges.dim() != 1 or edges.numel() < 1:
        raise RuntimeError("torch.histogram(): bins tensor should have one dimension, but got "
                           f"{edges.dim()} dimensions")
    nb = edges.numel() - 1
    be = input._be
    d = input._data.reshape(-1)
    e = edges._data
    if edges._be is not be:
        e = be.asarray(edges._be.to_numpy(e))
    npd = d.dtype
    # the bin of x is the last edge <= x; x equal to the last edge belongs to the last bin
    pos = be.binary("sub", be.searchsorted(e, d, True, None), 1)
    pos = be.where(be.binary("eq", pos, nb), nb - 1, pos)
    inside = be.binary("logical_and", be.binary("ge", d, e[:1]), be.binary("le", d, e[-1:]))
    w = None if weight is None else weight._data.reshape(-1)
    h = Tensor._make(be.bin_counts(be.where(inside, pos, -1), nb, w, npd), be)
    if density:
        widths = edges[1:] - edges[:-1]
        h = h / (h.sum() * widths)
    r = _histogram_result(h, edges if isinstance(bins, Tensor) else edges.detach())
    return r if out is None else write_outs(r, out, "histogram")


METHODS = {"histc": histc, "histogram": histogram}
