"""Indexing: __getitem__/__setitem__ (ints, slices with steps, None, Ellipsis, bool masks, integer
tensors), gather/scatter/index_select/index_add/index_copy/index_fill, masked ops, take/put, nonzero,
sort/argsort/topk/kthvalue/median, unique and one_hot.

``x[index]`` runs in two steps, as in PyTorch: the basic part of the index (ints, slices, None) makes a
view through ``make_view``; the advanced part (integer and boolean tensors) then gathers a copy
(``IndexBackward0``) whose gradient scatter-adds into zeros, so repeated indices accumulate. ``x[index] =
v`` writes through the same view: ``copy_`` for a basic index, ``index_put_`` for an advanced one, both
through ``apply_inplace`` so that autograd sees the write.

An advanced index is kept as a tuple for the backend: ``slice(None)`` for untouched dims, integer
arrays, and boolean masks (a k-dim mask covers k dims, as in NumPy, whose rules for placing the indexed
dims agree with PyTorch's once the ints have been applied as views).

In-place ops write straight into the tensor's memory when autograd has nothing to record, and otherwise
go through ``apply_inplace`` with their out-of-place form.
"""
import math
import warnings

import numpy as _np  # host-side only: turning Python lists / NumPy arrays used as indices into arrays

from .. import _dtype
from ..autograd.node import Op, bump_version
from ..autograd.grad_mode import _state
from ..tensor import Tensor
from ..autograd._inplace import apply_inplace, make_view
from ._util import (broadcast_shapes, check_same_device, check_tensor, is_expandable_to, scalar_for, sum_to,
                    wrap_dim, write_out, write_outs)
from .reduction import _return_type as _make_return_type
from .reduction import return_types
from ._autocast import autocast_op

__all__ = ["masked_fill", "masked_select", "masked_scatter", "gather", "scatter", "scatter_add", "scatter_reduce",
           "index_select", "index_add", "index_copy", "index_fill", "index_put", "take", "take_along_dim", "nonzero",
           "argwhere", "sort", "argsort", "msort", "topk", "kthvalue", "median", "unique", "unique_consecutive"]

_SCALARS = (bool, int, float, _np.bool_, _np.integer, _np.floating)
_INDEX_INT = (_dtype.int64, _dtype.int32)
_MASK_DTYPES = (_dtype.bool, _dtype.uint8)
_INT64 = _np.dtype(_np.int64)


def _return_type(name):
    cls = getattr(return_types, name, None)
    return cls if cls is not None else _make_return_type(name, ("values", "indices"))


_topk_result = _return_type("topk")
_sort_result = _return_type("sort")
_kthvalue_result = _return_type("kthvalue")
_median_result = _return_type("median")


def _on_device(t, be):
    """The array of tensor ``t`` on backend ``be`` (copied across devices when needed)."""
    if t._be is be:
        return t._data
    return be.asarray(t._be.to_numpy(t._data))


def _check_range(be, arr, n, make_error, lo=None):
    """Raise ``make_error(bad)`` for the first element of ``arr`` outside ``[lo, n)`` (``lo`` defaults to
    ``-n``: negative indices count from the end)."""
    if arr.size == 0:
        return
    lo = -n if lo is None else lo
    mn, mx = be.index_range(arr)
    if mn < lo or mx >= n:
        raise make_error(be.first_outside(arr, lo, n))


def _out_of_self(bad):
    """PyTorch's error for an index_select / index_add_ index outside the indexed dimension (its CPU kernels
    name neither the index nor the size)."""
    return IndexError("index out of range in self")


def _recording(self, *others):
    """Whether an in-place op on ``self`` with these operands must be recorded by autograd."""
    if not _state.grad:
        return False
    if self.requires_grad:
        return True
    for o in others:
        if isinstance(o, Tensor) and o.requires_grad:
            return True
    return False


def _direct_write(self, write, *args):
    """Run an in-place body, ``write(backend, array, *args)``, on self's memory (nothing to record) and bump
    its version."""
    self._check_inplace()
    if not self._be.writable(self._data):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")
    write(self._be, self._data, *args)
    bump_version(self)
    return self


def _copy_then(x, write, *args):
    """The out-of-place form of an in-place body: ``write`` run on a copy of x's array."""
    be = x._be
    out = be.copy(x._data)
    write(be, out, *args)
    return out


def _tensor_payload(be, value, np_dtype):
    """A 0-d tensor value as an array in the written tensor's device and dtype."""
    return be.astype(_on_device(value, be), np_dtype)


def _broadcast2(a, b):
    """The broadcast of two shapes, with PyTorch's message naming the first mismatching sizes."""
    if a == b:
        return a
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _zeros(shape, np_dtype, be):
    return Tensor._make(be.zeros(shape, np_dtype), be)


# ====================================================================== index parsing

_INT, _SLICE, _NONE, _ELL, _BOOL0, _MASK, _ARR = range(7)


def _seq_as_tuple(seq):
    """PyTorch reads a short list holding slices, None, Ellipsis, sequences or tensors as a tuple."""
    if len(seq) >= 32:
        return False
    for item in seq:
        if item is None or item is Ellipsis or isinstance(item, (slice, list, tuple, Tensor, _np.ndarray)):
            return True
    return False


def _host_index(seq):
    """A NumPy array for a list / tuple / ndarray used as an index: bool stays a mask, numbers become
    int64 (floats truncated, as PyTorch does for lists)."""
    if isinstance(seq, _np.ndarray):
        arr = seq
        if arr.dtype.kind == "f":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    else:
        arr = _np.asarray(_np.array(seq, dtype=object).tolist() if _has_tensor(seq) else seq)
    if arr.dtype == _np.bool_:
        return arr
    if arr.dtype.kind not in "iuf" and arr.size:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr.astype(_np.int64)


def _has_tensor(seq):
    for s in seq:
        if isinstance(s, Tensor) or (isinstance(s, (list, tuple)) and _has_tensor(s)):
            return True
    return False


def _classify(item, be):
    """(kind, payload, dims consumed) for one index item."""
    if item is None:
        return _NONE, None, 0
    if item is Ellipsis:
        return _ELL, None, 0
    cls = item.__class__
    if cls is int:
        return _INT, item, 1
    if cls is slice:
        return _SLICE, item, 1
    if cls is bool or cls is _np.bool_:
        return _BOOL0, bool(item), 0
    if isinstance(item, Tensor):
        dt = item.dtype
        if dt in _INDEX_INT:
            if item._data.ndim == 0:
                return _INT, int(item.item()), 1
            if item._be is not be and item._be.device.type != "cpu":
                raise RuntimeError(f"indices should be either on cpu or on the same device as the indexed tensor "
                                   f"({be.device})")
            return _ARR, _on_device(item, be), 1
        if dt in _MASK_DTYPES:
            if dt is _dtype.uint8:
                warnings.warn("indexing with dtype minitorch_gpu.uint8 is now deprecated, please use a dtype "
                              "minitorch_gpu.bool instead.", UserWarning, stacklevel=4)
            if item._data.ndim == 0:
                return _BOOL0, bool(item.item()), 0
            if item._be is not be and item._be.device.type != "cpu":
                raise RuntimeError(f"indices should be either on cpu or on the same device as the indexed tensor "
                                   f"({be.device})")
            return _MASK, be.astype(_on_device(item, be), _np.dtype(_np.bool_)), item._data.ndim
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if isinstance(item, _np.integer):
        return _INT, int(item), 1
    if isinstance(item, str):
        raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
    if isinstance(item, (list, tuple, _np.ndarray)):
        arr = _host_index(item)
        if arr.dtype == _np.bool_:
            if arr.ndim == 0:
                return _BOOL0, bool(arr), 0
            return _MASK, be.asarray(arr), arr.ndim
        if arr.ndim == 0:
            return _INT, int(arr), 1
        return _ARR, be.asarray(arr), 1
    if hasattr(item, "__index__") and not isinstance(item, float):
        return _INT, item.__index__(), 1
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                     f"indices (got {type(item).__name__})")


def _as_int(v):
    if v is None or v.__class__ is int:
        return v
    import operator
    return operator.index(v)


def _norm_slice(s, n):
    step = 1 if s.step is None else _as_int(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step < 0:
        raise ValueError("step must be greater than zero")
    start, stop, _ = slice(_as_int(s.start), _as_int(s.stop), step).indices(n)
    if stop < start:
        stop = start
    return slice(start, stop, step)


class _Parsed:
    """An index split into its basic part (a tuple of ints, slices and None giving a view) and its
    advanced part (entries ``(dim in the view, array, is_mask)``)."""
    __slots__ = ("basic", "adv", "trivial", "view_cls")


def _parse(x, index):
    if index.__class__ is tuple:
        items = index
    elif isinstance(index, list) and _seq_as_tuple(index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] "
                      "instead of x[seq].", UserWarning, stacklevel=3)
        items = tuple(index)
    else:
        items = (index,)
    be = x._be
    classified = [_classify(it, be) for it in items]
    shape = x._data.shape
    ndim = len(shape)
    specified = 0
    for kind, _, used in classified:
        specified += used
    if specified > ndim:
        if ndim == 0 and items is not index and items[0].__class__ is slice:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        if ndim == 0 and items is not index and (items[0].__class__ is int or isinstance(items[0], _np.integer)):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic = []
    adv = []
    dim = 0
    out = 0
    trivial = True
    view_cls = AliasBackward0
    for position, (kind, val, used) in enumerate(classified):
        if kind == _INT:
            n = shape[dim]
            if val < -n or val >= n:
                # PyTorch names the position of the item in the index, not the dim it applies to
                raise IndexError(f"index {val} is out of bounds for dimension {position} with size {n}")
            basic.append(val + n if val < 0 else val)
            dim += 1
            trivial = False
            view_cls = SelectBackward0
        elif kind == _SLICE:
            n = shape[dim]
            s = _norm_slice(val, n)
            basic.append(s)
            if s.start != 0 or s.stop != n or s.step != 1:
                trivial = False
            dim += 1
            out += 1
            view_cls = SliceBackward0
        elif kind == _NONE:
            basic.append(None)
            out += 1
            trivial = False
            view_cls = UnsqueezeBackward0
        elif kind == _ELL:
            k = ndim - specified
            basic.extend([slice(None)] * k)
            dim += k
            out += k
            specified += k
        elif kind == _BOOL0:
            basic.append(None)
            adv.append((out, be.arange_index(1 if val else 0), False))
            out += 1
            trivial = False
        elif kind == _MASK:
            basic.extend([slice(None)] * used)
            adv.append((out, val, True))
            dim += used
            out += used
        else:
            basic.append(slice(None))
            adv.append((out, val, False))
            dim += 1
            out += 1
    p = _Parsed()
    p.basic = tuple(basic)
    p.adv = adv
    p.trivial = trivial
    p.view_cls = view_cls
    return p


def _advanced(be, view_shape, adv):
    """Validate an advanced index against the view it applies to; returns (backend index tuple, shape
    of the result)."""
    if len(adv) == 1 and not adv[0][2]:
        # one integer array: the common case, kept short
        pos, arr, _ = adv[0]
        n = view_shape[pos]
        _check_range(be, arr, n, lambda bad: IndexError(
            f"index {bad} is out of bounds for dimension 0 with size {n}"))
        return (slice(None),) * pos + (arr,), view_shape[:pos] + arr.shape + view_shape[pos + 1:]
    for pos, arr, is_mask in adv:
        if is_mask:
            for j, m in enumerate(arr.shape):
                if m != view_shape[pos + j]:
                    raise IndexError(f"The shape of the mask {list(arr.shape)} at index {j} does not match the "
                                     f"shape of the indexed tensor {list(view_shape)} at index {pos + j}")
    ordinal = 0
    for pos, arr, is_mask in adv:
        if is_mask:
            ordinal += arr.ndim
            continue
        n = view_shape[pos]
        _check_range(be, arr, n, lambda bad, k=ordinal, n=n: IndexError(
            f"index {bad} is out of bounds for dimension {k} with size {n}"))
        ordinal += 1
    items = []
    cur = 0
    covered = []
    for pos, arr, is_mask in adv:
        items.extend([slice(None)] * (pos - cur))
        items.append(arr)
        span = arr.ndim if is_mask else 1
        covered.append((pos, pos + span))
        cur = pos + span
    # a mask stands for the 1-D coordinates of its True elements
    shapes = [(be.count_nonzero(arr),) if is_mask else arr.shape for _, arr, is_mask in adv]
    bshape = shapes[0] if len(shapes) == 1 else _broadcast_index_shapes(shapes)
    first, last = covered[0][0], covered[-1][1]
    adjacent = all(covered[i][1] == covered[i + 1][0] for i in range(len(covered) - 1))
    if adjacent:
        res = view_shape[:first] + tuple(bshape) + view_shape[last:]
    else:
        rest = [s for d, s in enumerate(view_shape) if not any(a <= d < b for a, b in covered)]
        res = tuple(bshape) + tuple(rest)
    return tuple(items), res


def _broadcast_index_shapes(shapes):
    """broadcast_shapes, with the IndexError PyTorch raises for index tensors that do not broadcast."""
    try:
        return broadcast_shapes(*shapes)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(x)) for x in shapes)) from None


# ====================================================================== basic views

class _BasicView(Op):
    """A view for an index of ints, slices and None (subclasses carry PyTorch's node names)."""

    def forward(self, x, idx):
        self.in_shape = x._data.shape
        self.idx = idx
        return x._be.basic_index(x._data, idx)

    def backward(self, g):
        return (BasicViewBackward.apply(g, shape=self.in_shape, idx=self.idx),)


class SelectBackward0(_BasicView):
    pass


class SliceBackward0(_BasicView):
    pass


class UnsqueezeBackward0(_BasicView):
    pass


class AliasBackward0(_BasicView):
    pass


class BasicViewBackward(Op):
    """The gradient of a basic view: zeros of the base's shape with the gradient in the viewed region."""

    def forward(self, g, shape, idx):
        self.idx = idx
        be = g._be
        out = be.zeros(shape, g._data.dtype)
        be.copy_into(be.basic_index(out, idx), g._data)
        return out

    def backward(self, gg):
        return (_basic_view(gg, self.idx, SliceBackward0),)

    def name(self):
        return "SliceBackwardBackward0"


def _basic_view(x, idx, cls):
    return make_view(cls, x, lambda t: _basic_view(t, idx, cls), idx=idx)


# ====================================================================== advanced indexing ops

class IndexBackward0(Op):
    """x[idx] for an advanced index: a copy; its gradient adds into zeros (repeated indices accumulate)."""

    def forward(self, x, idx):
        self.in_shape = x._data.shape
        self.idx = idx
        out = x._be.getitem(x._data, idx)
        if out.base is not None and _only_scalar_arrays(idx):
            # 0-d index arrays alone select like ints, which NumPy answers with a view
            out = x._be.copy(out)
        return out

    def backward(self, g):
        return (IndexAccumulate.apply(g, shape=self.in_shape, idx=self.idx),)


def _only_scalar_arrays(idx):
    return all(i.__class__ is slice or i.ndim == 0 for i in idx)


class IndexAccumulate(Op):
    """zeros(shape) with ``values`` added at ``idx``: the gradient of indexing (``index_put`` with
    accumulate into zeros)."""

    def forward(self, values, shape, idx):
        self.idx = idx
        be = values._be
        out = be.zeros(shape, values._data.dtype)
        be.add_at(out, idx, values._data)
        return out

    def backward(self, gg):
        return (IndexBackward0.apply(gg, idx=self.idx),)

    def name(self):
        return "IndexPutBackward0"


class IndexPutBackward0(Op):
    def forward(self, x, values, idx, accumulate):
        self.idx = idx
        self.accumulate = accumulate
        self.vshape = values._data.shape
        return _copy_then(x, _index_put_write, idx, values._data, accumulate)

    def backward(self, g):
        nx, nv = self.needs_input_grad
        gx = gv = None
        if nx:
            gx = g if self.accumulate else _zero_at(g, self.idx)
        if nv:
            gv = sum_to(IndexBackward0.apply(g, idx=self.idx), self.vshape)
        return gx, gv


def _index_put_write(be, a, idx, values, accumulate):
    be.index_put(a, idx, values, accumulate)


def _zero_at(g, idx):
    """g with the elements at ``idx`` set to zero (differentiable in g)."""
    return IndexPutBackward0.apply(g, _zeros((), g._data.dtype, g._be), idx=idx, accumulate=False)


def _getitem(self, index):
    """``self[index]``: a view for ints, slices, None and Ellipsis; a copy once tensors or masks appear."""
    cls = index.__class__
    if cls is int:
        shape = self._data.shape
        if not shape:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                             "in C++ to convert a 0-dim tensor to a number")
        n = shape[0]
        if index < -n or index >= n:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {n}")
        return _basic_view(self, (index + n if index < 0 else index,), SelectBackward0)
    if cls is slice:
        shape = self._data.shape
        if not shape:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        return _basic_view(self, (_norm_slice(index, shape[0]),), SliceBackward0)
    if cls is Tensor and index._data.ndim and index._be is self._be and self._data.ndim:
        # one index tensor on the same device: straight to the gather
        dt = index.dtype
        if dt is _dtype.int64 or dt is _dtype.int32:
            n = self._data.shape[0]
            _check_range(self._be, index._data, n, lambda bad: IndexError(
                f"index {bad} is out of bounds for dimension 0 with size {n}"))
            return IndexBackward0.apply(self, idx=(index._data,))
        if dt is _dtype.bool and index._data.shape == self._data.shape[:index._data.ndim]:
            return IndexBackward0.apply(self, idx=(index._data,))
    p = _parse(self, index)
    if not p.adv:
        return _basic_view(self, p.basic, p.view_cls)
    src = self
    if not p.trivial:
        src = p.view_cls.apply(self, idx=p.basic)
    idx, _ = _advanced(self._be, src._data.shape, p.adv)
    return IndexBackward0.apply(src, idx=idx)


def _strip_leading_ones(shape):
    i = 0
    while i < len(shape) and shape[i] == 1:
        i += 1
    return shape[i:]


def _check_copy_shape(vshape, target, dtype):
    if len(vshape) > len(target):
        raise RuntimeError(f"expand(minitorch_gpu.{dtype._tensor_name}{{{list(vshape)}}}, size={list(target)}): the "
                           f"number of sizes provided ({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(vshape)})")
    lead = len(target) - len(vshape)
    for i, s in enumerate(vshape):
        t = target[lead + i]
        if s != t and s != 1:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing size ({s}) at "
                               f"non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  Tensor sizes: "
                               f"{list(vshape)}")


def _scalar_tensor(self, value):
    """A Python scalar as a 0-d tensor in self's dtype (``x[i] = 2.7`` truncates into an int tensor)."""
    be = self._be
    dt = self.dtype
    return Tensor._make(be.asarray(scalar_for(value, dt), be.np_dtype(dt)), be)


def _setitem(self, index, value):
    """``self[index] = value``: a copy into the basic view, or ``index_put_`` for an advanced index."""
    if isinstance(value, Tensor):
        v = value
    elif isinstance(value, _SCALARS):
        v = None
    else:
        raise TypeError(f"can't assign a {type(value).__name__} to a minitorch_gpu.{self.dtype._tensor_name}")
    p = _parse(self, index)
    be = self._be
    recording = _recording(self, v)
    if v is None:
        # a scalar is written as is by the backend, or becomes a 0-d tensor for autograd
        if not recording:
            scalar = scalar_for(value, self.dtype)
            if not p.adv:
                target = be.basic_index(self._data, p.basic)
                _direct_write(self, lambda _be, a: be.copy_into(target, scalar))
            else:
                target = self._data if p.trivial else be.basic_index(self._data, p.basic)
                idx, _ = _advanced(be, target.shape, p.adv)
                _direct_write(self, lambda _be, a: _index_put_write(be, target, idx, scalar, False))
            return
        v = _scalar_tensor(self, value)
    vshape = _strip_leading_ones(v._data.shape)
    if not p.adv:
        target = be.basic_index(self._data, p.basic)
        _check_copy_shape(vshape, target.shape, v.dtype)
        if not recording:
            vdata = _on_device(v, be)
            _direct_write(self, lambda _be, a: be.copy_into(target, vdata))
            return
        if len(vshape) != v._data.ndim:
            v = v.reshape(vshape)
        view = self if p.trivial else _basic_view(self, p.basic, p.view_cls)
        view.copy_(v)
        return
    if v.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {self.dtype._scalar_name} "
                           f"for the destination and {v.dtype._scalar_name} for the source.")
    target = self._data if p.trivial else be.basic_index(self._data, p.basic)
    idx, res_shape = _advanced(be, target.shape, p.adv)
    if not is_expandable_to(vshape, res_shape):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v._data.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(res_shape)}")
    if not recording:
        vdata = _on_device(v, be)
        if len(vshape) != vdata.ndim:
            vdata = vdata.reshape(vshape)
        _direct_write(self, lambda _be, a: _index_put_write(be, target, idx, vdata, False))
        return
    if v._be is not be:
        v = v.to(self.device)
    if len(vshape) != v._data.ndim:
        v = v.reshape(vshape)
    view = self if p.trivial else _basic_view(self, p.basic, p.view_cls)
    apply_inplace(view, _index_put_op, v, idx=idx, accumulate=False, keeps_self=False)


def _index_put_op(x, values, idx, accumulate):
    return IndexPutBackward0.apply(x, values, idx=idx, accumulate=accumulate)


def _put_indices(self, indices, values, name):
    """Validate ``index_put``'s arguments; returns the backend index tuple."""
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices' (position 1) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    check_tensor(values, name, "values", 2)
    be = self._be
    adv = []
    dim = 0
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        dt = t.dtype
        if dt in _MASK_DTYPES:
            adv.append((dim, be.astype(_on_device(t, be), _np.dtype(_np.bool_)), True))
            dim += t._data.ndim
        elif dt in _INDEX_INT:
            adv.append((dim, _on_device(t, be), False))
            dim += 1
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if dim > self._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self._data.ndim} (got {dim})")
    if not adv:
        raise RuntimeError("index_put(): expected at least one index tensor")
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {self.dtype._scalar_name} "
                           f"for the destination and {values.dtype._scalar_name} for the source.")
    idx, res_shape = _advanced(be, self._data.shape, adv)
    if not is_expandable_to(values._data.shape, res_shape):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(res_shape)}")
    return idx


@autocast_op("index_put")
def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written at ``input[indices]`` (added when ``accumulate``)."""
    idx = _put_indices(input, indices, values, "index_put")
    if values._be is not input._be:
        values = values.to(input.device)
    return IndexPutBackward0.apply(input, values, idx=idx, accumulate=bool(accumulate))


def index_put_(self, indices, values, accumulate=False):
    """In-place ``index_put``; returns self."""
    idx = _put_indices(self, indices, values, "index_put_")
    if not _recording(self, values):
        return _direct_write(self, _index_put_write, idx, _on_device(values, self._be), bool(accumulate))
    if values._be is not self._be:
        values = values.to(self.device)
    return apply_inplace(self, _index_put_op, values, idx=idx, accumulate=bool(accumulate), keeps_self=False)


# ====================================================================== gather / scatter

def _check_index_dtype(index, name, allowed=_INDEX_INT):
    check_tensor(index, name, "index")
    if index.dtype not in allowed:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def _nd(t):
    return t._data.ndim or 1


def _size(shape, d):
    return shape[d] if shape else 1


class GatherBackward0(Op):
    def forward(self, x, dim, index):
        self.in_shape = x._data.shape
        self.dim = dim
        self.index = index
        return x._be.gather(x._data, dim, index)

    def backward(self, g):
        z = _zeros(self.in_shape, g._data.dtype, g._be)
        return (ScatterAddBackward0.apply(z, g, dim=self.dim, index=self.index),)


# PyTorch's own words for an out= dtype these ops refuse (write_out fills in {out})
_INDEX_SELECT_OUT_DTYPE = "index_select(): self and result must have the same scalar type"
_MASKED_SELECT_OUT_DTYPE = "masked_select(): self and result must have the same scalar type"
_NONZERO_OUT_DTYPE = "nonzero: Expected out tensor to have scalar type Long but got scalar type{out}"


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """``out[i][j] = input[i][index[i][j]]`` (for dim 1): values picked along ``dim``."""
    _check_index_dtype(index, "gather")
    check_same_device(input, index)
    dim = wrap_dim(dim, input._data.ndim)
    if _nd(index) != _nd(input):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    ishape, xshape = index._data.shape, input._data.shape
    for d in range(_nd(input)):
        if d != dim and _size(ishape, d) > _size(xshape, d):
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(ishape)} to be no larger "
                               f"than self {list(xshape)} apart from dimension {dim}")
    n = _size(xshape, dim)
    _check_range(input._be, index._data, n, lambda bad: RuntimeError(
        f"index {bad} is out of bounds for dimension {dim} with size {n}"), lo=0)
    r = GatherBackward0.apply(input, dim=dim, index=index._data)
    return r if out is None else write_out(r, out, "gather", exact_dtype=True)


def _pad_to(g, shape):
    """g placed at the start of zeros(shape): the gradient of a source larger than its index."""
    if g._data.shape == tuple(shape):
        return g
    idx = tuple(slice(0, n) for n in g._data.shape)
    return BasicViewBackward.apply(g, shape=tuple(shape), idx=idx)


def _scatter_write(be, a, dim, index, payload, reduce=None):
    """The body of every scatter: ``payload`` (an array or a scalar) written, or combined by ``reduce``,
    into ``a`` at ``index`` along ``dim``."""
    be.scatter_into(a, dim, index, payload, reduce)


class ScatterBackward0(Op):
    """scatter with a source tensor."""

    def forward(self, x, src, dim, index):
        self.dim = dim
        self.index = index
        self.src_shape = src._data.shape
        return _copy_then(x, _scatter_write, dim, index, src._data)

    def backward(self, g):
        nx, ns = self.needs_input_grad
        gx = ScatterBackward1.apply(g, dim=self.dim, index=self.index, value=0) if nx else None
        gs = _pad_to(GatherBackward0.apply(g, dim=self.dim, index=self.index), self.src_shape) if ns else None
        return gx, gs


class ScatterBackward1(Op):
    """scatter with a scalar value."""

    def forward(self, x, dim, index, value):
        self.dim = dim
        self.index = index
        return _copy_then(x, _scatter_write, dim, index, value)

    def backward(self, g):
        return (ScatterBackward1.apply(g, dim=self.dim, index=self.index, value=0),)


class ScatterReduceNotImplemented(Op):
    """scatter with ``reduce=``: PyTorch has no derivative for it, so backward raises."""

    def forward(self, x, src, dim, index, value, reduce):
        return _copy_then(x, _scatter_write, dim, index, value if src is None else src._data, reduce)

    def backward(self, g):
        raise RuntimeError("derivative for aten::scatter is not implemented")

    def name(self):
        return "NotImplemented"


class ScatterAddBackward0(Op):
    def forward(self, x, src, dim, index):
        self.dim = dim
        self.index = index
        self.src_shape = src._data.shape
        return _copy_then(x, _scatter_write, dim, index, src._data, "add")

    def backward(self, g):
        nx, ns = self.needs_input_grad
        gs = _pad_to(GatherBackward0.apply(g, dim=self.dim, index=self.index), self.src_shape) if ns else None
        return (g if nx else None), gs


def _scatter_args(input, dim, index, src, value, reduce, name):
    """Validate scatter's arguments; returns (dim, src tensor or None, scalar value or None)."""
    if src is not None and not isinstance(src, Tensor):
        if value is not None:
            raise TypeError(f"{name}() got multiple values for argument 'value'")
        value, src = src, None
    if src is None and value is None:
        raise TypeError(f"{name}() missing 1 required positional argument: 'src' or 'value'")
    _check_index_dtype(index, "scatter")
    check_same_device(input, index)
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and isinstance(src, Tensor):
        warnings.warn("The reduce argument of minitorch_gpu.scatter with Tensor src is deprecated and will be removed "
                      "in a future PyTorch release. Use minitorch_gpu.scatter_reduce instead for more reduction "
                      "options.", UserWarning, stacklevel=3)
    dim = wrap_dim(dim, input._data.ndim)
    if _nd(index) != _nd(input):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    ishape, xshape = index._data.shape, input._data.shape
    if src is not None:
        check_same_device(input, src)
        if _nd(src) != _nd(index):
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        if src.dtype is not input.dtype:
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        sshape = src._data.shape
        for d in range(_nd(input)):
            if (d != dim and _size(ishape, d) > _size(xshape, d)) or _size(ishape, d) > _size(sshape, d):
                raise RuntimeError(f"Expected index {list(ishape)} to be no larger than self {list(xshape)} apart "
                                   f"from dimension {dim} and to be no larger size than src {list(sshape)}")
    else:
        if isinstance(value, Tensor):
            raise TypeError(f"{name}(): value must be a number")
        for d in range(_nd(input)):
            if d != dim and _size(ishape, d) > _size(xshape, d):
                raise RuntimeError(f"Expected index {list(ishape)} to be no larger than self {list(xshape)} apart "
                                   f"from dimension {dim}")
        value = scalar_for(value, input.dtype)
    n = _size(xshape, dim)
    _check_range(input._be, index._data, n, lambda bad: RuntimeError(
        f"index {bad} is out of bounds for dimension {dim} with size {n}"), lo=0)
    return dim, src, value


def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    """A copy of ``input`` with ``src`` (or a scalar ``value``) written at ``index`` along ``dim``;
    ``reduce='add'|'multiply'`` combines with the existing values instead."""
    dim, src, value = _scatter_args(input, dim, index, src, value, reduce, "scatter")
    idx = index._data
    if reduce is not None:
        if src is None:
            r = ScatterReduceNotImplemented.apply(input, None, dim=dim, index=idx, value=value, reduce=reduce)
        else:
            r = ScatterReduceNotImplemented.apply(input, src, dim=dim, index=idx, value=None, reduce=reduce)
    elif src is None:
        r = ScatterBackward1.apply(input, dim=dim, index=idx, value=value)
    else:
        r = ScatterBackward0.apply(input, src, dim=dim, index=idx)
    return write_out(r, out, "scatter", exact_dtype=True)


def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """In-place ``scatter``; returns self."""
    dim, src_t, val = _scatter_args(self, dim, index, src, value, reduce, "scatter_")
    if not _recording(self, src_t):
        payload = val if src_t is None else src_t._data
        return _direct_write(self, _scatter_write, dim, index._data, payload, reduce)
    return apply_inplace(self, scatter, dim, index, src_t, value=val, reduce=reduce,
                         keeps_self=False)


@autocast_op("scatter_add")
def scatter_add(input, dim, index, src, *, out=None):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeated indices accumulate)."""
    check_tensor(src, "scatter_add", "src", 3)
    dim, src, _ = _scatter_args(input, dim, index, src, None, None, "scatter_add")
    r = ScatterAddBackward0.apply(input, src, dim=dim, index=index._data)
    return write_out(r, out, "scatter_add", exact_dtype=True)


def scatter_add_(self, dim, index, src):
    """In-place ``scatter_add``; returns self."""
    check_tensor(src, "scatter_add_", "src", 3)
    dim, src, _ = _scatter_args(self, dim, index, src, None, None, "scatter_add_")
    if not _recording(self, src):
        return _direct_write(self, _scatter_write, dim, index._data, src._data, "add")
    return apply_inplace(self, scatter_add, dim, index, src, keeps_self=False)


_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_write(be, a, dim, index, src, reduce, include_self):
    be.scatter_reduce_into(a, dim, index, src, reduce, include_self)


class ScatterReduceBackward0(Op):
    save_output = True

    def forward(self, x, src, dim, index, reduce, include_self):
        self.save_for_backward(x, src)
        self.dim = dim
        self.index = index
        self.reduce = reduce
        self.include_self = include_self
        return _copy_then(x, _scatter_reduce_write, dim, index, src._data, reduce, include_self)

    def backward(self, g):
        x, src, result = self.saved_tensors
        dim, index, reduce = self.dim, self.index, self.reduce
        be = g._be
        idx_t = Tensor._make(index, be)
        src_shape = src._data.shape
        if src_shape != index.shape:
            src = _basic_view(src, tuple(slice(0, n) for n in index.shape), SliceBackward0)
        nx, ns = self.needs_input_grad
        gx = gs = None
        if reduce == "sum":
            gx = g
            gs = g.gather(dim, idx_t) if ns else None
        elif reduce == "mean":
            count = _zeros(g._data.shape, g._data.dtype, be) if not self.include_self else g.new_ones(g.shape)
            count = count.scatter_add(dim, idx_t, src.new_ones(src.shape).to(g.dtype))
            count = count.masked_fill(count == 0, 1)
            gx = g / count
            gs = (g / count).gather(dim, idx_t) if ns else None
        elif reduce == "prod":
            if nx:
                masked_self = x.masked_fill(x == 0, 1)
                masked_result = masked_self.scatter_reduce(dim, idx_t, src, "prod", include_self=self.include_self)
                gx = g * masked_result / masked_self
            if ns:
                src_zero = src == 0
                zeros_per_slot = _zeros(x._data.shape, g._data.dtype, be).scatter_add(dim, idx_t, src_zero.to(g.dtype))
                single_zero = src_zero.logical_and(zeros_per_slot.gather(dim, idx_t) == 1)
                masked_src_result = x.scatter_reduce(dim, idx_t, src.masked_fill(single_zero, 1), "prod",
                                                     include_self=self.include_self)
                gs = (g * masked_src_result).gather(dim, idx_t).where(
                    single_zero, (g * result).gather(dim, idx_t) / src.masked_fill(src_zero, 1))
        else:
            # amax / amin: every element equal to the result shares its gradient evenly
            self_hit = (x == result).to(g.dtype)
            src_hit = (src == result.gather(dim, idx_t)).to(g.dtype)
            share = g / self_hit.scatter_add(dim, idx_t, src_hit)
            gx = self_hit * share
            gs = src_hit * share.gather(dim, idx_t) if ns else None
        if nx and not self.include_self:
            scattered = Tensor._make(be.scatter_mask(x._data.shape, dim, index), be)
            gx = gx.masked_fill(scattered, 0)
        if gs is not None:
            gs = _pad_to(gs, src_shape)
        return (gx if nx else None), gs


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """A copy of ``input`` where each element of ``src`` is combined into the position ``index`` names
    along ``dim`` with ``reduce`` (sum, prod, mean, amax or amin); ``include_self=False`` leaves the
    original values of those positions out of the reduction."""
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    check_tensor(src, "scatter_reduce", "src", 4)
    dim, src, _ = _scatter_args(input, dim, index, src, None, None, "scatter_reduce")
    return write_out(ScatterReduceBackward0.apply(input, src, dim=dim, index=index._data, reduce=reduce,
                                             include_self=bool(include_self)), out, "scatter_reduce", exact_dtype=True)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place ``scatter_reduce``; returns self."""
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    check_tensor(src, "scatter_reduce_", "src", 4)
    dim, src, _ = _scatter_args(self, dim, index, src, None, None, "scatter_reduce_")
    if not _recording(self, src):
        return _direct_write(self, _scatter_reduce_write, dim, index._data, src._data, reduce, bool(include_self))
    return apply_inplace(self, scatter_reduce, dim, index, src, reduce, include_self=include_self)


# ====================================================================== index_select / index_add / copy / fill

def _vector_index(index):
    """A 1-D backend array for a 0-d or 1-D index tensor."""
    d = index._data
    return d.reshape(1) if d.ndim == 0 else d


class IndexSelectBackward0(Op):
    def forward(self, x, dim, index):
        self.in_shape = x._data.shape
        self.dim = dim
        self.index = index
        return x._be.index_select(x._data, dim, index)

    def backward(self, g):
        z = _zeros(self.in_shape, g._data.dtype, g._be)
        return (IndexAddBackward0.apply(z, g, dim=self.dim, index=self.index, alpha=1),)


def index_select(input, dim, index, *, out=None):
    """The slices of ``input`` at positions ``index`` (a 1-D integer tensor) along ``dim``."""
    check_tensor(index, "index_select", "index")
    if index.dtype not in _INDEX_INT:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index._data.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    check_same_device(input, index)
    dim = wrap_dim(dim, input._data.ndim)
    idx = _vector_index(index)
    if input._data.ndim == 0 and idx.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {idx.size} value(s)")
    n = _size(input._data.shape, dim)
    # PyTorch's CPU kernels word this by path: a dedicated dim-1 kernel raises RuntimeError, the others IndexError
    _check_range(input._be, idx, n, (lambda bad: RuntimeError(
        f"INDICES element is out of DATA bounds, id={bad} axis_dim={n}")) if dim == 1 else _out_of_self, lo=0)
    r = IndexSelectBackward0.apply(input, dim=dim, index=idx)
    return r if out is None else write_out(r, out, "index_select", dtype_error=_INDEX_SELECT_OUT_DTYPE)


def _dim_index(dim, index):
    """The backend index tuple selecting ``index`` along ``dim``."""
    return (slice(None),) * dim + (index,)


def _index_add_write(be, a, dim, index, s, alpha):
    """``alpha * s`` added into ``a`` at ``index`` along ``dim`` (repeated indices accumulate)."""
    if alpha != 1:
        s = be.binary("mul", s, scalar_for(alpha, _dtype.from_numpy_dtype(s.dtype)))
    t = a.reshape(1) if a.ndim == 0 else a
    be.add_at(t, _dim_index(dim, index), s.reshape(1) if s.ndim == 0 else s)


class IndexAddBackward0(Op):
    def forward(self, x, src, dim, index, alpha):
        self.dim = dim
        self.index = index
        self.alpha = alpha
        self.src_shape = src._data.shape
        return _copy_then(x, _index_add_write, dim, index, src._data, alpha)

    def backward(self, g):
        nx, ns = self.needs_input_grad
        gs = None
        if ns:
            gs = IndexSelectBackward0.apply(g, dim=self.dim, index=self.index)
            if self.alpha != 1:
                gs = gs * self.alpha
            if gs._data.shape != self.src_shape:
                gs = gs.reshape(self.src_shape)
        return (g if nx else None), gs


def _index_source_args(input, dim, index, source, name):
    """Checks shared by index_add / index_copy; returns (dim, 1-D index array)."""
    check_tensor(source, name, "source")
    check_same_device(input, index)
    check_same_device(input, source)
    dim = wrap_dim(dim, input._data.ndim)
    idx = _vector_index(index)
    xshape, sshape = input._data.shape, source._data.shape
    if input._data.ndim == 0:
        if source._data.size != 1 or idx.size != 1:
            raise RuntimeError(f"{name}(): a 0-dim self needs one index and a one-element source")
        return dim, idx
    if source._data.ndim == 0 and input._data.ndim == 1:
        pass
    elif source._data.ndim != input._data.ndim or any(
            sshape[d] != xshape[d] for d in range(input._data.ndim) if d != dim):
        if name == "index_copy_":
            if source._data.ndim != input._data.ndim:
                raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality "
                                 f"must match. Source dimensionality ({source._data.ndim}), destination "
                                 f"dimensionality ({input._data.ndim})")
            d = next(d for d in range(input._data.ndim) if d != dim and sshape[d] != xshape[d])
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                               f"slice shape: {xshape[d]} at dimension {d} and source slice shape: {sshape[d]} at "
                               f"dimension {d}.")
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(xshape)} source.shape = {list(sshape)}")
    n_src = sshape[dim] if source._data.ndim else 1
    if idx.size != n_src:
        if name == "index_copy_":
            raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) "
                             f"({n_src})")
        raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to source.size(dim): "
                           f"({n_src}), for dim: {dim}")
    return dim, idx


def _index_add_args(input, dim, index, source):
    check_tensor(index, "index_add", "index")
    if index.dtype not in _INDEX_INT:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {index.dtype._scalar_name}")
    if index._data.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {index._data.ndim} with type: "
                         f"{index.dtype._scalar_name} and size: {list(index.shape)}")
    if isinstance(source, Tensor) and source.dtype is not input.dtype:
        raise RuntimeError(f"index_add_(): self ({input.dtype._scalar_name}) and source "
                           f"({source.dtype._scalar_name}) must have the same scalar type")
    dim, idx = _index_source_args(input, dim, index, source, "index_add_")
    n = _size(input._data.shape, dim)
    nd = input._data.ndim
    # PyTorch's CPU kernel takes a scatter_add path (RuntimeError naming the index) along the first or last
    # dimension of a tensor of two or more, and its own loop (IndexError) otherwise
    error = _out_of_self if nd <= 1 or 0 < dim < nd - 1 else (lambda bad: RuntimeError(
        f"index {bad} is out of bounds for dimension {dim} with size {n}"))
    _check_range(input._be, idx, n, error, lo=0)
    return dim, idx


def index_add(input, dim, index, source, *, alpha=1, out=None):
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim`` (repeats accumulate)."""
    dim, idx = _index_add_args(input, dim, index, source)
    r = IndexAddBackward0.apply(input, source, dim=dim, index=idx, alpha=alpha)
    return write_out(r, out, "index_add", exact_dtype=True)


def index_add_(self, dim, index, source, *, alpha=1):
    """In-place ``index_add``; returns self."""
    dim, idx = _index_add_args(self, dim, index, source)
    if not _recording(self, source):
        return _direct_write(self, _index_add_write, dim, idx, source._data, alpha)
    return apply_inplace(self, index_add, dim, index, source, alpha=alpha, keeps_self=False)


class IndexCopyBackward0(Op):
    def forward(self, x, src, dim, index):
        self.dim = dim
        self.index = index
        self.src_shape = src._data.shape
        return _copy_then(x, _index_copy_into, dim, index, src._data)

    def backward(self, g):
        nx, ns = self.needs_input_grad
        gx = IndexFillBackward0.apply(g, dim=self.dim, index=self.index, value=0) if nx else None
        gs = None
        if ns:
            gs = IndexSelectBackward0.apply(g, dim=self.dim, index=self.index)
            if gs._data.shape != self.src_shape:
                gs = gs.reshape(self.src_shape)
        return gx, gs


def _index_copy_into(be, a, dim, index, s):
    t = a.reshape(1) if a.ndim == 0 else a
    if getattr(s, "ndim", 1) == 0:
        s = s.reshape(1)
    be.setitem(t, _dim_index(dim, index), s)


def _index_copy_args(input, dim, index, source):
    check_tensor(index, "index_copy", "index")
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {index.dtype._scalar_name}")
    if index._data.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index._data.ndim})")
    if isinstance(source, Tensor) and source.dtype is not input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{input.dtype._scalar_name} and (source) {source.dtype._scalar_name}")
    dim, idx = _index_source_args(input, dim, index, source, "index_copy_")
    n = _size(input._data.shape, dim)
    _check_range(input._be, idx, n, lambda bad: IndexError(
        f"index_copy_(): index {bad} is out of bounds for dimension {dim} with size {n}"), lo=0)
    return dim, idx


@autocast_op("index_copy")
def index_copy(input, dim, index, source, *, out=None):
    """A copy of ``input`` with the slices of ``source`` written at positions ``index`` along ``dim``."""
    dim, idx = _index_copy_args(input, dim, index, source)
    return write_out(IndexCopyBackward0.apply(input, source, dim=dim, index=idx), out, "index_copy",
                     exact_dtype=True)


def index_copy_(self, dim, index, source):
    """In-place ``index_copy``; returns self."""
    dim, idx = _index_copy_args(self, dim, index, source)
    if not _recording(self, source):
        return _direct_write(self, _index_copy_into, dim, idx, source._data)
    return apply_inplace(self, index_copy, dim, index, source, keeps_self=False)


class IndexFillBackward0(Op):
    """index_fill with a scalar value."""

    def forward(self, x, dim, index, value):
        self.dim = dim
        self.index = index
        return _copy_then(x, _index_copy_into, dim, index, value)

    def backward(self, g):
        return (IndexFillBackward0.apply(g, dim=self.dim, index=self.index, value=0),)


class IndexFillBackward1(Op):
    """index_fill with a 0-d tensor value (which gets the gradient of every filled element)."""

    def forward(self, x, value, dim, index):
        self.dim = dim
        self.index = index
        self.v_dtype = value.dtype
        return _copy_then(x, _index_copy_into, dim, index, _tensor_payload(x._be, value, x._data.dtype))

    def backward(self, g):
        nx, nv = self.needs_input_grad
        gx = IndexFillBackward0.apply(g, dim=self.dim, index=self.index, value=0) if nx else None
        gv = None
        if nv:
            # a position named twice is filled once, so it counts once
            uniq = g._be.unique(self.index, False, False)[0]
            gv = IndexSelectBackward0.apply(g, dim=self.dim, index=uniq).sum()
            if gv.dtype is not self.v_dtype:
                gv = gv.to(self.v_dtype)
        return gx, gv


def _index_fill_args(input, dim, index, value):
    check_tensor(index, "index_fill", "index")
    if index.dtype is not _dtype.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index._data.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    check_same_device(input, index)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
    elif not isinstance(value, _SCALARS):
        raise TypeError(f"index_fill(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    dim = wrap_dim(dim, input._data.ndim)
    idx = _vector_index(index)
    n = _size(input._data.shape, dim)
    _check_range(input._be, idx, n, lambda bad: IndexError(
        f"index {bad} is out of bounds for dimension {dim} with size {n}"))
    return dim, idx


def index_fill(input, dim, index, value):
    """A copy of ``input`` with ``value`` in the slices at positions ``index`` along ``dim``."""
    dim, idx = _index_fill_args(input, dim, index, value)
    if isinstance(value, Tensor):
        return IndexFillBackward1.apply(input, value, dim=dim, index=idx)
    return IndexFillBackward0.apply(input, dim=dim, index=idx, value=scalar_for(value, input.dtype))


def index_fill_(self, dim, index, value):
    """In-place ``index_fill``; returns self."""
    dim, idx = _index_fill_args(self, dim, index, value)
    v = value if isinstance(value, Tensor) else None
    if not _recording(self, v):
        payload = (_tensor_payload(self._be, v, self._data.dtype) if v is not None
                   else scalar_for(value, self.dtype))
        return _direct_write(self, _index_copy_into, dim, idx, payload)
    return apply_inplace(self, index_fill, dim, index, value, keeps_self=False)


# ====================================================================== masked ops

def _masked_fill_array(be, x, mask, payload):
    """x with ``payload`` where ``mask`` is True (broadcast together): masked_fill's body."""
    return be.where(mask, payload, x)


def _masked_fill_write(be, a, mask, payload):
    # one select and a copy back outruns a boolean-mask store, broadcast masks most of all
    be.copy_into(a, _masked_fill_array(be, a, mask, payload))


class MaskedFillBackward0(Op):
    """masked_fill with a scalar value."""

    def forward(self, x, mask, value):
        self.save_for_backward(mask)
        self.in_shape = x._data.shape
        be = x._be
        return _masked_fill_array(be, x._data, mask._data, be.asarray(value, x._data.dtype))

    def backward(self, g):
        mask, = self.saved_tensors
        return (sum_to(g.masked_fill(mask, 0), self.in_shape), None)


class MaskedFillBackward1(Op):
    """masked_fill with a 0-d tensor value, which gets the gradient of every filled element."""

    def forward(self, x, mask, value):
        self.save_for_backward(mask)
        self.in_shape = x._data.shape
        self.v_dtype = value.dtype
        be = x._be
        return _masked_fill_array(be, x._data, mask._data, _tensor_payload(be, value, x._data.dtype))

    def backward(self, g):
        mask, = self.saved_tensors
        nx, _, nv = self.needs_input_grad
        gx = sum_to(g.masked_fill(mask, 0), self.in_shape) if nx else None
        gv = None
        if nv:
            be = mask._be
            keep_out = Tensor._make(be.unary("logical_not", mask._data), be)
            gv = g.masked_fill(keep_out, 0).sum()
            if gv.dtype is not self.v_dtype:
                gv = gv.to(self.v_dtype)
        return gx, None, gv


def _masked_fill_args(input, mask, value):
    check_tensor(mask, "masked_fill", "mask")
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype._cpp_typeid_name}")
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
    elif not isinstance(value, _SCALARS):
        raise TypeError(f"masked_fill(): argument 'value' must be Number or Tensor, not {type(value).__name__}")
    if mask._be is not input._be:
        raise RuntimeError(f"expected mask and self to be on the same device, but got mask on {mask.device} and "
                           f"self on {input.device}")
    return _broadcast2(input._data.shape, mask._data.shape)


def masked_fill(input, mask, value):
    """``input`` with ``value`` where ``mask`` (a bool tensor broadcastable with input) is True."""
    _masked_fill_args(input, mask, value)
    if isinstance(value, Tensor):
        return MaskedFillBackward1.apply(input, mask, value)
    return MaskedFillBackward0.apply(input, mask, value=scalar_for(value, input.dtype))


def masked_fill_(self, mask, value):
    """In-place ``masked_fill``; the mask must broadcast to self's shape. Returns self."""
    bshape = _masked_fill_args(self, mask, value)
    if bshape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(bshape)}")
    v = value if isinstance(value, Tensor) else None
    if not _recording(self, v):
        be = self._be
        payload = (_tensor_payload(be, v, self._data.dtype) if v is not None
                   else be.asarray(scalar_for(value, self.dtype), self._data.dtype))
        return _direct_write(self, _masked_fill_write, mask._data, payload)
    return apply_inplace(self, masked_fill, mask, value, keeps_self=False)


class MaskedSelectBackward0(IndexBackward0):
    pass


def masked_select(input, mask, *, out=None):
    """A 1-D tensor of the elements of ``input`` where ``mask`` is True (both broadcast together)."""
    check_tensor(mask, "masked_select", "mask")
    if mask.dtype is not _dtype.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    check_same_device(input, mask)
    shape = _broadcast2(mask._data.shape, input._data.shape)
    x = input if input._data.shape == shape else input.expand(shape)
    m = mask._data if mask._data.shape == shape else mask._be.broadcast_to(mask._data, shape)
    if not shape:
        # a 0-d selection still gives a 1-D result
        x = x.reshape(1)
        m = m.reshape(1)
    r = MaskedSelectBackward0.apply(x, idx=(m,))
    return write_out(r, out, "masked_select", dtype_error=_MASKED_SELECT_OUT_DTYPE)


def _masked_scatter_write(be, a, mask, source):
    """Consecutive elements of ``source`` written into ``a`` where ``mask`` (broadcast to a) is True;
    returns how many."""
    m = be.broadcast_to(mask, a.shape)
    n = be.count_nonzero(m)
    be.setitem(a, m, source.reshape(-1)[:n])
    return n


class MaskedScatterBackward0(Op):
    def forward(self, x, mask, source):
        be = x._be
        self.save_for_backward(mask)
        self.in_shape = x._data.shape
        self.src_shape = source._data.shape
        shape = broadcast_shapes(x._data.shape, mask._data.shape)
        out = be.copy(be.broadcast_to(x._data, shape))
        self.n = _masked_scatter_write(be, out, mask._data, source._data)
        self.shape = shape
        return out

    def backward(self, g):
        mask, = self.saved_tensors
        nx, _, ns = self.needs_input_grad
        gx = sum_to(g.masked_fill(mask, 0), self.in_shape) if nx else None
        gs = None
        if ns:
            be = g._be
            picked = masked_select(g, mask)
            gs = IndexAccumulate.apply(picked, shape=(math.prod(self.src_shape),), idx=(be.arange_index(self.n),))
            gs = gs.reshape(self.src_shape)
        return gx, None, gs


def _masked_scatter_args(input, mask, source):
    check_tensor(mask, "masked_scatter", "mask")
    check_tensor(source, "masked_scatter", "source")
    if mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype._cpp_typeid_name}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{input.dtype._scalar_name} and {source.dtype._scalar_name}")
    check_same_device(input, mask)
    check_same_device(input, source)
    shape = broadcast_shapes(input._data.shape, mask._data.shape)
    be = input._be
    if source._data.size < be.count_nonzero(be.broadcast_to(mask._data, shape)):
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return shape


def masked_scatter(input, mask, source):
    """A copy of ``input`` with consecutive elements of ``source`` written where ``mask`` is True."""
    _masked_scatter_args(input, mask, source)
    return MaskedScatterBackward0.apply(input, mask, source)


def masked_scatter_(self, mask, source):
    """In-place ``masked_scatter``; returns self."""
    shape = _masked_scatter_args(self, mask, source)
    if shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")
    if not _recording(self, source):
        return _direct_write(self, _masked_scatter_write, mask._data, source._data)
    return apply_inplace(self, masked_scatter, mask, source, keeps_self=False)


# ====================================================================== take / put / take_along_dim

class TakeBackward0(IndexBackward0):
    pass


def take(input, index):
    """Elements of ``input`` read as a flat 1-D tensor, at ``index`` (the result has index's shape)."""
    check_tensor(index, "take", "index", 2)
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype._scalar_name}")
    check_same_device(input, index)
    n = input._data.size
    _check_range(input._be, index._data, n, lambda bad: IndexError(
        f"out of range: tried to access index {bad} on a tensor of {n} elements."))
    return TakeBackward0.apply(input.reshape(-1), idx=(index._data,))


def _put_args(input, index, source, name):
    if not isinstance(index, Tensor) or not isinstance(source, Tensor):
        raise TypeError(f"{name}(): index and source must be Tensors")
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {index.dtype._scalar_name}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{name}(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{input.dtype._scalar_name} and source.dtype = {source.dtype._scalar_name}")
    if source._data.size != index._data.size:
        raise IndexError(f"{name}(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source._data.size}, index.numel() = {index._data.size}")
    check_same_device(input, index)
    check_same_device(input, source)
    n = input._data.size
    _check_range(input._be, index._data, n, lambda bad: IndexError(
        f"out of range: tried to access index {bad} on a tensor of {n} elements."))


def put(input, index, source, accumulate=False):
    """A copy of ``input`` (read as flat) with ``source`` written (or added) at ``index``."""
    _put_args(input, index, source, "put")
    shape = input._data.shape
    flat = input.reshape(-1)
    idx = (index._data.reshape(-1),)
    res = IndexPutBackward0.apply(flat, source.reshape(-1), idx=idx, accumulate=bool(accumulate))
    return res.reshape(shape)


def _put_write(be, a, index, source, accumulate):
    """index_put's body on ``a`` read as flat (through a copy when ``a`` has no flat view)."""
    idx, values = (index.reshape(-1),), source.reshape(-1)
    flat = be.reshape_view(a, (-1,))
    if flat is not None:
        _index_put_write(be, flat, idx, values, accumulate)
        return
    buf = be.copy(a.reshape(-1))
    _index_put_write(be, buf, idx, values, accumulate)
    be.copy_into(a, buf.reshape(a.shape))


def put_(self, index, source, accumulate=False):
    """In-place ``put``; returns self."""
    _put_args(self, index, source, "put_")
    if not _recording(self, source):
        return _direct_write(self, _put_write, index._data, source._data, bool(accumulate))
    return apply_inplace(self, put, index, source, accumulate=accumulate, keeps_self=False)


def take_along_dim(input, indices, dim=None, *, out=None):
    """Values of ``input`` at ``indices`` along ``dim`` (shapes broadcast apart from ``dim``); with no dim,
    both are read flat."""
    check_tensor(indices, "take_along_dim", "indices")
    if indices.dtype is not _dtype.int64:
        raise RuntimeError(f"minitorch_gpu.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype._scalar_name}")
    if dim is None:
        r = gather(input.reshape(-1), 0, indices.reshape(-1))
        return write_out(r, out, "take_along_dim", exact_dtype=True)
    if input._data.ndim != indices._data.ndim:
        raise RuntimeError(f"minitorch_gpu.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {input._data.ndim} dimensions for input, and {indices._data.ndim} "
                           f"dimensions for indices")
    dim = wrap_dim(dim, input._data.ndim)
    xs = list(input._data.shape)
    is_ = list(indices._data.shape)
    xs_d, is_d = xs[dim], is_[dim]
    xs[dim] = is_d
    bshape = list(broadcast_shapes(tuple(is_), tuple(xs)))
    ishape = tuple(bshape)
    bshape[dim] = xs_d
    xshape = tuple(bshape)
    x = input if input._data.shape == xshape else input.expand(xshape)
    i = indices if indices._data.shape == ishape else indices.expand(ishape)
    return write_out(gather(x, dim, i), out, "take_along_dim", exact_dtype=True)


# ====================================================================== nonzero

def nonzero(input, *, out=None, as_tuple=False):
    """Coordinates of the nonzero elements: an (n, ndim) int64 tensor, or with ``as_tuple`` one 1-D
    tensor per dim."""
    be = input._be
    if as_tuple:
        return tuple(Tensor._make(a, be) for a in be.nonzero_tuple(input._data))
    return write_out(Tensor._make(be.argwhere(input._data), be), out, "nonzero", dtype_error=_NONZERO_OUT_DTYPE)


def argwhere(input):
    """Like ``nonzero(input)``: an (n, ndim) int64 tensor of coordinates."""
    be = input._be
    return Tensor._make(be.argwhere(input._data), be)


# ====================================================================== sort / topk / kthvalue / median

class _SelectAlongDim(Op):
    """Values picked along ``dim`` at known ``indices`` (sort, topk, kthvalue, median over a dim): the
    gradient goes back to the picked positions."""

    def forward(self, x, values, indices, dim, keepdim):
        self.in_shape = x._data.shape
        self.indices = indices
        self.dim = dim
        self.keepdim = keepdim
        return values

    def backward(self, g):
        if g._data.shape != self.indices.shape:
            g = g.reshape(self.indices.shape)
        z = _zeros(self.in_shape, g._data.dtype, g._be)
        return (ScatterAddBackward0.apply(z, g, dim=self.dim, index=self.indices),)


class SortBackward0(_SelectAlongDim):
    pass


class TopkBackward0(_SelectAlongDim):
    pass


class KthvalueBackward0(_SelectAlongDim):
    pass


class MedianBackward1(_SelectAlongDim):
    pass


def sort(input, dim=-1, descending=False, *, stable=False, out=None):
    """(values, indices) sorted along ``dim``; equal elements keep their order; NaN sorts as largest."""
    dim = wrap_dim(dim, input._data.ndim)
    be = input._be
    v, i = be.sort(input._data, dim, bool(descending))
    values = SortBackward0.apply(input, values=v, indices=i, dim=dim, keepdim=True)
    return _sort_result(*write_outs((values, Tensor._make(i, be)), out, "sort", exact_dtype=True))


def argsort(input, dim=-1, descending=False, *, stable=False):
    """Indices that sort ``input`` along ``dim``."""
    dim = wrap_dim(dim, input._data.ndim)
    be = input._be
    if input._data.ndim == 0:
        return Tensor._make(be.zeros((), _INT64), be)
    return Tensor._make(be.argsort(input._data, dim, bool(descending)), be)


def msort(input):
    """``input`` sorted along its first dim."""
    return sort(input, 0)[0]


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices, largest first."""
    dim = wrap_dim(dim, input._data.ndim)
    k = int(k)
    n = _size(input._data.shape, dim)
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    be = input._be
    v, i = be.topk(input._data, k, dim, bool(largest))
    values = TopkBackward0.apply(input, values=v, indices=i, dim=dim, keepdim=True)
    return _topk_result(*write_outs((values, Tensor._make(i, be)), out, "topk", exact_dtype=True))


def _kth(input, k, dim, keepdim, cls, nan_first):
    be = input._be
    x = input._data
    if x.ndim == 0:
        x = x.reshape(1)
    v, i = be.kth_smallest(x, k, dim, nan_first=nan_first)
    # the node keeps the indices with the reduced dim (size 1) to scatter its gradient back
    i_keep = i
    if input._data.ndim == 0:
        v, i, i_keep = v.reshape(()), i.reshape(()), i.reshape(())
    elif not keepdim:
        v, i = v.squeeze(dim), i.squeeze(dim)
    values = cls.apply(input, values=v, indices=i_keep, dim=dim, keepdim=keepdim)
    return values, Tensor._make(i, be)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The k-th smallest element (1-based) along ``dim`` and its index."""
    dim = wrap_dim(dim, input._data.ndim)
    k = int(k)
    n = _size(input._data.shape, dim)
    if n == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {dim} to have non-zero size.")
    if k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if isinstance(out, (tuple, list)) and len(out) == 2 and all(isinstance(o, Tensor) for o in out):
        # PyTorch's kthvalue words its out= dtype checks itself
        if out[0].dtype is not input.dtype:
            raise RuntimeError("output values must be of same type as input")
        if out[1].dtype is not _dtype.int64:
            raise RuntimeError("output indices must be of scalar type Long")
    res = _kth(input, k - 1, dim, keepdim, KthvalueBackward0, False)
    return _kthvalue_result(*write_outs(res, out, "kthvalue", exact_dtype=True))


class MedianBackward0(Op):
    """median over all elements: the gradient is shared evenly by every element equal to the median."""

    def forward(self, x):
        be = x._be
        self.in_shape = x._data.shape
        flat = x._data.reshape(-1)
        n = flat.size
        if n == 0:
            self.empty = True
            return be.full((), float("nan"), x._data.dtype)
        self.empty = False
        v, _ = be.kth_smallest(flat, (n - 1) // 2, 0, nan_first=True)
        v = v.reshape(())
        nan = be.isnan_mask(v).reshape(())
        hits = be.isnan_mask(x._data) if bool(nan) else be.binary("eq", x._data, v)
        self.hits = hits
        self.count = be.count_nonzero(hits)
        return v

    def backward(self, g):
        be = g._be
        if self.empty:
            return (_zeros(self.in_shape, g._data.dtype, be),)
        share = Tensor._make(be.astype(self.hits, g._data.dtype), be)
        return (share * (g * (1.0 / self.count)),)


def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median of all elements, or (values, indices) along ``dim``; NaN wins when present."""
    if dim is None:
        return MedianBackward0.apply(input)
    dim = wrap_dim(dim, input._data.ndim)
    n = _size(input._data.shape, dim)
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {dim} to have non-zero size.")
    res = _kth(input, (n - 1) // 2, dim, keepdim, MedianBackward1, True)
    return _median_result(*write_outs(res, out, "median", exact_dtype=True))


# ====================================================================== unique / one_hot

def _unique_results(be, values, inverse, counts, return_inverse, return_counts):
    out = [Tensor._make(values, be)]
    if return_inverse:
        out.append(Tensor._make(inverse, be))
    if return_counts:
        out.append(Tensor._make(counts, be))
    return out[0] if len(out) == 1 else tuple(out)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (sorted), optionally with the inverse mapping and counts; with ``dim``, the
    distinct slices along ``dim``."""
    be = input._be
    if dim is None:
        values, inverse, counts = be.unique(input._data, return_inverse, return_counts)
    else:
        dim = wrap_dim(dim, input._data.ndim)
        values, inverse, counts = be.unique_dim(input._data, dim, return_inverse, return_counts)
    return _unique_results(be, values, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse each run of equal consecutive elements (or slices along ``dim``) to one."""
    be = input._be
    if dim is not None:
        dim = wrap_dim(dim, input._data.ndim)
    values, inverse, counts = be.unique_consecutive(input._data, dim, return_inverse, return_counts)
    return _unique_results(be, values, inverse, counts, return_inverse, return_counts)


def one_hot(tensor, num_classes=-1):
    """An int64 tensor with one more dim of size ``num_classes``: 1 at each value's class, 0 elsewhere."""
    if not isinstance(tensor, Tensor) or tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    be = tensor._be
    x = tensor._data
    num_classes = int(num_classes)
    if x.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return Tensor._make(be.zeros(x.shape + (max(num_classes, 0),), _INT64), be)
    lo, hi = be.index_range(x)
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._make(be.one_hot(x, num_classes), be)


METHODS = {
    "__getitem__": _getitem, "__setitem__": _setitem,
    "masked_fill": masked_fill, "masked_fill_": masked_fill_, "masked_select": masked_select,
    "masked_scatter": masked_scatter, "masked_scatter_": masked_scatter_,
    "gather": gather, "scatter": scatter, "scatter_": scatter_, "scatter_add": scatter_add,
    "scatter_add_": scatter_add_, "scatter_reduce": scatter_reduce, "scatter_reduce_": scatter_reduce_,
    "index_select": index_select, "index_add": index_add, "index_add_": index_add_,
    "index_copy": index_copy, "index_copy_": index_copy_, "index_fill": index_fill, "index_fill_": index_fill_,
    "index_put": index_put, "index_put_": index_put_, "take": take, "put": put, "put_": put_,
    "take_along_dim": take_along_dim, "nonzero": nonzero, "argwhere": argwhere, "sort": sort,
    "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue, "median": median, "unique": unique,
    "unique_consecutive": unique_consecutive,
}
