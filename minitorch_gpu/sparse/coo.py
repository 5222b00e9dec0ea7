"""Sparse COO tensors: ``SparseTensor``, a Tensor subclass holding an int64 ``indices`` tensor (sparse_dim x nnz)
and a ``values`` tensor (nnz x dense dims), as PyTorch's ``torch.sparse_coo`` layout.

Every computation is a dense op on the indices or values, so a sparse tensor works on every device the dense
ops do (on CUDA: gathers, ``index_add`` and sorts, no kernel of its own). Coordinates are compared through
their row-major linear index over the sparse dims: coalescing is a ``unique`` of those indices and an
``index_add`` of the values. The ops are in ``ops.py``; this module holds the tensor, its construction,
coalescing, the conversions to and from dense, printing, and the refusal of every dense-only method.
"""
from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import _dtype
from .._layout import sparse_coo, strided
from .._mode import _state
from .._tensor_str import _add_suffixes, _tensor_str, autograd_suffixes, device_suffixes
from ..autograd.grad_mode import no_grad
from ..ops import conversion
from ..ops.creation import as_tensor
from ..ops.shape import cat, stack
from ..tensor import Tensor, register_methods
from ._autograd import SparseNode, record
from ._storage import NoStorage

__all__ = ["SparseTensor", "sparse_coo_tensor"]


# ---------------------------------------------------------------------- coordinates

def _strides(sizes: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= s
    return out[::-1]


def linear_index(ind: Tensor, sizes: Sequence[int]) -> Tensor:
    """The row-major position of each coordinate (columns of ``ind``) in a tensor of shape ``sizes``."""
    if len(sizes) == 1:
        return ind.select(0, 0)
    strides = as_tensor(_strides(sizes), dtype=_dtype.int64, device=ind.device)
    return (ind * strides.unsqueeze(1)).sum(0)


def unravel(lin: Tensor, sizes: Sequence[int]) -> Tensor:
    """Coordinates (len(sizes) x n) of row-major positions ``lin``: the inverse of :func:`linear_index`."""
    if not sizes:
        return lin.new_zeros((0, lin.shape[0]))
    return stack([lin.floor_divide(st).remainder(sz) for st, sz in zip(_strides(sizes), sizes)])


def coalesced_indices(ind: Tensor, sizes: Sequence[int]) -> tuple[Tensor, Tensor]:
    """(distinct coordinates in row-major order, for each column of ``ind`` its column among them)."""
    uniq, inv = linear_index(ind, sizes).unique(sorted=True, return_inverse=True)
    return unravel(uniq, sizes), inv


def values_at(grad: Tensor, ind: Tensor, sizes: Sequence[int]) -> Tensor:
    """The entries of ``grad`` (sparse or dense, shape ``sizes`` + dense dims) at the coordinates ``ind``, zero
    where a sparse ``grad`` has none: PyTorch's ``sparse_mask``, written in differentiable ops."""
    lin = linear_index(ind, sizes)
    if not grad.is_sparse:
        return grad.reshape((-1,) + tuple(grad.shape[len(sizes):])).index_select(0, lin)
    g = grad.coalesce()
    gval = g.values()
    glin = linear_index(g._ind, sizes)
    # one sort of both coordinate sets pairs each wanted coordinate with grad's entry there, if any
    uniq, inv = cat([glin, lin]).unique(sorted=True, return_inverse=True)
    n = glin.shape[0]
    table = gval.new_zeros((uniq.shape[0],) + tuple(gval.shape[1:])).index_add(0, inv[:n], gval)
    return table.index_select(0, inv[n:])


# ---------------------------------------------------------------------- the tensor

# a new tensor's autograd state, as Tensor._make sets it (without counting device memory: the indices and
# values tensors are what holds it)
_NO_HISTORY = {"_requires_grad": False, "_grad_fn": None, "_output_nr": 0, "_grad": None, "_vc": None, "_base": None}


def make_sparse(ind: Tensor, val: Tensor, size: Sequence[int], coalesced: bool) -> SparseTensor:
    """A sparse tensor over ``ind`` and ``val`` (stored as given: detached, on one device), with no history."""
    t = object.__new__(SparseTensor)
    size = tuple(int(s) for s in size)
    t._data = NoStorage(size, val._data.dtype, val.device.type)
    t._be = val._be
    for name, value in _NO_HISTORY.items():
        setattr(t, name, value)
    t._inference = _state.inference
    t._ind = ind
    t._val = val
    t._coalesced = coalesced
    return t


class SparseCooTensorWithDimsAndTensorsBackward0(SparseNode):
    """values -> sparse tensor: each value's gradient is the gradient's entry at its coordinate (every
    duplicate of a coordinate gets all of it)."""

    sparse_sizes: tuple[int, ...]
    ind: Tensor

    def backward(self, grad):
        return (values_at(grad, self.ind, self.sparse_sizes),)


def build(ind: Tensor, val: Tensor, size: Sequence[int], coalesced: bool) -> SparseTensor:
    """:func:`make_sparse` from a values tensor that may carry history: the result's gradient flows to it."""
    out = make_sparse(ind, val.detach(), size, coalesced)
    node = SparseCooTensorWithDimsAndTensorsBackward0()
    node.sparse_sizes, node.ind = tuple(size[:ind.shape[0]]), ind
    return record(node, (val,), out)


class SparseTensor(Tensor):
    """A tensor in the sparse COO layout. Build one with ``mt.sparse_coo_tensor(indices, values, size)`` or
    ``dense.to_sparse()``.

    Example::

        i = mt.tensor([[0, 1, 1], [2, 0, 2]])
        s = mt.sparse_coo_tensor(i, mt.tensor([3., 4., 5.]), (2, 3))
        s.to_dense()   # tensor([[0., 0., 3.], [4., 0., 5.]])
    """

    __slots__ = ("_ind", "_val", "_coalesced")
    if TYPE_CHECKING:
        _ind: Tensor
        _val: Tensor
        _coalesced: bool

    # the refusals below assign __eq__; hashing stays by identity, as for every tensor
    __hash__ = Tensor.__hash__
    is_sparse = True
    layout = sparse_coo

    # ------------------------------------------------------------------ structure
    def sparse_dim(self) -> int:
        return int(self._ind.shape[0])

    def dense_dim(self) -> int:
        return self._val.dim() - 1

    def _nnz(self) -> int:
        return int(self._ind.shape[1])

    def is_coalesced(self) -> bool:
        return self._coalesced

    def _indices(self) -> Tensor:
        """The indices as stored (possibly uncoalesced), without autograd."""
        return self._ind

    def _values(self) -> Tensor:
        """The values as stored (possibly uncoalesced), without autograd."""
        return self._val

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor."""
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._ind.detach()

    def values(self) -> Tensor:
        """The values of a coalesced tensor; gradients flow back into this tensor."""
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        node = ValuesBackward0()
        node.size, node.ind = tuple(self.shape), self._ind
        return record(node, (self,), self._val.detach())

    def coalesce(self) -> SparseTensor:
        """This tensor with duplicate coordinates summed and coordinates in row-major order (itself when it
        already is)."""
        if self._coalesced:
            return self
        sizes = self.shape[:self.sparse_dim()]
        with no_grad():
            ind, inv = coalesced_indices(self._ind, sizes)
            val = self._val.new_zeros((ind.shape[1],) + tuple(self._val.shape[1:])).index_add_(0, inv, self._val)
        return record(CoalesceBackward0(), (self,), make_sparse(ind, val, self.shape, True))

    # ------------------------------------------------------------------ conversions
    def to_dense(self, dtype: Any = None, *, masked_grad: bool = True) -> Tensor:
        """The dense (strided) tensor this one represents; duplicate coordinates add up."""
        sd = self.sparse_dim()
        sizes = tuple(self.shape[:sd])
        n = 1
        for s in sizes:
            n *= s
        with no_grad():
            val = self._val if dtype is None else self._val.to(dtype)
            flat = val.new_zeros((n,) + tuple(val.shape[1:]))
            out = flat.index_add_(0, linear_index(self._ind, sizes), val).reshape(tuple(self.shape))
        node = ToDenseBackward0()
        node.sparse_sizes, node.ind = sizes, self._ind
        return record(node, (self,), out)

    def to_sparse(self, sparse_dim: int | None = None, *, layout: Any = None, blocksize: Any = None,
                  dense_dim: int | None = None) -> SparseTensor:
        if layout not in (None, sparse_coo) or blocksize is not None:
            raise RuntimeError(f"to_sparse: conversion from Sparse to {layout} is not supported here")
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               "!=self.sparse_dim() is not supported")
        return self

    def __reduce_ex__(self, proto):
        if self.requires_grad and not self.is_leaf:
            return Tensor.__reduce_ex__(self, proto)  # PyTorch's refusal
        return (_rebuild_sparse, (self._ind, self._val, tuple(self.shape), self._coalesced, self._requires_grad))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            return Tensor.__deepcopy__(self, memo)  # PyTorch's refusal
        if id(self) in memo:
            return memo[id(self)]
        new = make_sparse(self._ind.clone(), self._val.clone(), self.shape, self._coalesced)
        new._requires_grad = self._requires_grad
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        memo[id(self)] = new
        return new

    def detach(self) -> SparseTensor:
        """The same indices and values, with no history."""
        out = make_sparse(self._ind, self._val, self.shape, self._coalesced)
        out._inference = self._inference
        return out

    @property
    def data(self) -> SparseTensor:
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, SparseTensor):
            raise RuntimeError("data set to a tensor that requires gradients must be sparse as well")
        self._data, self._be = value._data, value._be
        self._ind, self._val, self._coalesced = value._ind, value._val, value._coalesced

    def clone(self, *, memory_format: Any = None) -> SparseTensor:
        out = make_sparse(self._ind.clone(), self._val.clone(), self.shape, self._coalesced)
        return record(CloneBackward0(), (self,), out)

    # ------------------------------------------------------------------ what has no storage to read
    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.to_dense().item()

    def numpy(self, *, force: bool = False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    data_ptr = tolist

    def stride(self, dim: int | None = None):
        raise RuntimeError("Sparse tensors do not have strides")

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return False

    @property
    def nbytes(self) -> int:
        raise RuntimeError("nbytes is not defined for sparse tensors.  If you want the size of the constituent "
                           "tensors, add the nbytes of the indices and values.  If you want the size of the  "
                           "equivalent dense tensor, multiply numel() by element_size()")

    def __repr__(self, *, tensor_contents: str | None = None) -> str:
        prefix = "tensor("
        indent = len(prefix)
        dt = self.dtype
        suffixes = device_suffixes(self) + [f"size={tuple(self.shape)}", f"nnz={self._nnz()}"]
        if dt not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool):
            suffixes.append(f"dtype={dt!r}")
        if tensor_contents is None:
            parts = []
            for name, part in (("indices", self._ind), ("values", self._val)):
                head = f"{name}=tensor("
                body = _tensor_str(part, indent + len(head)) if part.numel() else "[]"
                if not part.numel():
                    body += f", size={tuple(part.shape)}"
                parts.append(head + body + ")")
            tensor_contents = (",\n" + " " * indent).join(parts)
        suffixes.append(f"layout={self.layout!r}")
        return _add_suffixes(prefix + tensor_contents, suffixes + autograd_suffixes(self), indent,
                             force_newline=True)


def _rebuild_sparse(ind, val, size, coalesced, requires_grad):
    """Unpickle a sparse tensor (``__reduce_ex__``)."""
    t = make_sparse(ind, val, size, coalesced)
    t._requires_grad = requires_grad
    return t


# ---------------------------------------------------------------------- backward nodes of this module
# A node keeps the indices it needs as a plain attribute, not a saved tensor: no op writes into the indices of
# a sparse tensor, so there is no version to check, and they stay readable after a backward (as in PyTorch).

class ValuesBackward0(SparseNode):
    size: tuple[int, ...]
    ind: Tensor

    def backward(self, grad):
        return (build(self.ind, grad, self.size, True),)


class CoalesceBackward0(SparseNode):
    """Coalescing sums duplicates: each one's gradient is the gradient at its coordinate, which the sparse
    gradient already says."""

    def backward(self, grad):
        return (grad,)


class CloneBackward0(CoalesceBackward0):
    pass


class ToDenseBackward0(SparseNode):
    """The dense gradient, read at the input's (coalesced) coordinates: a sparse gradient, as in PyTorch."""

    sparse_sizes: tuple[int, ...]
    ind: Tensor

    def backward(self, grad):
        sizes = self.sparse_sizes
        with no_grad():
            cind, _ = coalesced_indices(self.ind, sizes)
        return (build(cind, values_at(grad, cind, sizes), tuple(grad.shape), True),)


class ToSparseBackward0(SparseNode):
    def backward(self, grad):
        return (grad.to_dense() if grad.is_sparse else grad,)


class ToCopyBackward0(SparseNode):
    src_device: Any
    src_dtype: Any

    def backward(self, grad):
        return (grad.to(device=self.src_device, dtype=self.src_dtype),)


# ---------------------------------------------------------------------- construction

def _as_index_tensor(indices: Any, device: Any) -> Tensor:
    ind = indices if isinstance(indices, Tensor) else as_tensor(indices, device=device)
    if ind.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(ind.shape)}")
    return ind.to(device=device, dtype=_dtype.int64)  # PyTorch takes any index dtype


def _check_indices(ind: Tensor, size: Sequence[int]) -> None:
    """PyTorch's invariant checks: no negative index, none past its dim's size (one round trip to the device)."""
    if ind.shape[1] == 0:
        return
    lo, hi = ind.amin(1).tolist(), ind.amax(1).tolist()
    for d, (a, b) in enumerate(zip(lo, hi)):
        if a < 0:
            raise RuntimeError(f"found negative index {a} for dim {d}")
        if b >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                               f"index {b}")


def sparse_coo_tensor(indices: Any, values: Any, size: Sequence[int] | None = None, *, dtype: Any = None,
                      device: Any = None, pin_memory: bool = False, requires_grad: bool = False,
                      check_invariants: bool | None = None, is_coalesced: bool | None = None) -> SparseTensor:
    """A sparse COO tensor with ``values[k]`` at coordinate ``indices[:, k]`` (duplicates add up), of shape
    ``size`` (default: the smallest that holds every index). Gradients flow to ``values``.

    Example::

        s = mt.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3., 4., 5.], (2, 3))
    """
    if isinstance(values, Tensor):
        if device is not None or dtype is not None:
            values = values.to(device=device, dtype=dtype)
    else:
        values = as_tensor(values, dtype=dtype, device=device)
    ind = _as_index_tensor(indices, values.device)
    if values.dim() == 0:
        raise RuntimeError("values must have at least one dimension (nnz x dense dims)")
    sd, nnz = ind.shape
    if values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {values.shape[0]}")
    dense_shape = tuple(values.shape[1:])
    if size is None:
        sparse_sizes = [0] * sd if nnz == 0 else [int(v) + 1 for v in ind.amax(1).tolist()]
        size = tuple(sparse_sizes) + dense_shape
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sd + len(dense_shape):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                               f"sparse_dim = {sd}, dense_dim = {len(dense_shape)}")
        if size[sd:] != dense_shape:
            raise RuntimeError(f"values has incorrect size, expected {list((nnz,) + size[sd:])}, got "
                               f"{list(values.shape)}")
    if check_invariants is not False:
        # PyTorch checks only when asked; an index out of range would make every later op wrong, so ours always do
        _check_indices(ind, size)
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    out = build(ind, values, size, coalesced)
    if requires_grad:
        out.requires_grad_(True)
    return out


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout: Any = None, blocksize: Any = None,
              dense_dim: int | None = None) -> SparseTensor:
    """This dense tensor in the sparse COO layout: its nonzero entries (over the first ``sparse_dim`` dims; the
    remaining dims stay dense in the values)."""
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise RuntimeError(f"to_sparse: layout {layout} is not supported; only minitorch_gpu.sparse_coo is")
    nd = self.dim()
    if sparse_dim is None:
        sparse_dim = nd if dense_dim is None else nd - dense_dim
    if sparse_dim < 0 or sparse_dim > nd:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{nd}] range, but {sparse_dim} is "
                           "given")
    if sparse_dim == 0 and nd > 0:
        raise RuntimeError("dense_to_sparse: sparse_dim argument must be in >0 when self.dim()>0")
    sizes = tuple(self.shape[:sparse_dim])
    with no_grad():
        x = self.detach()
        nz = x != 0
        if sparse_dim < nd:
            nz = nz.reshape(sizes + (-1,)).any(-1)
        ind = nz.nonzero().t() if sparse_dim else x.new_zeros((0, 1), dtype=_dtype.int64)
        val = x.reshape((-1,) + tuple(self.shape[sparse_dim:])).index_select(0, linear_index(ind, sizes)) \
            if sparse_dim else x.reshape((1,) + tuple(self.shape))
        out = make_sparse(ind.contiguous(), val, self.shape, True)
    return record(ToSparseBackward0(), (self,), out)


def _dense_to_dense(self: Tensor, dtype: Any = None, *, masked_grad: bool = True) -> Tensor:
    return self if dtype is None else self.to(dtype)


def _convert(method: Any) -> Any:
    """A sparse conversion (``to``, ``cuda``, ``double``, ...) from its dense one, applied to the values: the
    same arguments, parsing and errors; the indices follow the values' device."""

    def convert(self: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        val = method(self._val, *args, **kwargs)
        if val is self._val:
            return self
        out = make_sparse(self._ind.to(val.device), val, self.shape, self._coalesced)
        node = ToCopyBackward0()
        node.src_device, node.src_dtype = self.device, self.dtype
        return record(node, (self,), out)

    convert.__name__ = getattr(method, "__name__", "to")
    convert.__doc__ = method.__doc__
    return convert


for _name in ("to", "cpu", "cuda", "float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte",
              "bool", "type_as"):
    setattr(SparseTensor, _name, _convert(conversion.METHODS[_name]))


# ---------------------------------------------------------------------- dense tensors' side of the layout

def _strided_only(op: str, kind: str = "sparse coordinate tensor") -> Any:
    def refuse(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{op} expected {kind} layout but got Strided")
    refuse.__name__ = op
    return refuse


def _no_cpu_kernel(op: str) -> Any:
    def refuse(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        backend = "CUDA" if self.is_cuda else "CPU"
        raise NotImplementedError(f"Could not run 'aten::{op}' with arguments from the '{backend}' backend.")
    refuse.__name__ = op
    return refuse


register_methods({
    "layout": property(lambda self: strided, doc="How the elements are stored: ``minitorch_gpu.strided``."),
    "to_sparse": to_sparse,
    "to_dense": _dense_to_dense,
    "sparse_dim": lambda self: 0,
    "dense_dim": lambda self: self.dim(),
    "coalesce": _strided_only("coalesce"),
    "is_coalesced": _strided_only("is_coalesced"),
    "indices": _strided_only("indices"),
    "values": _strided_only("values", "sparse tensor"),
    "_nnz": _no_cpu_kernel("_nnz"),
    "_indices": _no_cpu_kernel("_indices"),
    "_values": _no_cpu_kernel("_values"),
})

