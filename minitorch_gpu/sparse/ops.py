"""The ops of sparse COO tensors, each with its backward beside it: transpose, scalar mul/div, neg, sparse add/sub,
sums, sparse x dense products and softmax over the specified entries.

A sparse x dense product is a gather of the dense rows the coordinates name, scaled by the values, and an
``index_add`` into the output rows: O(nnz x N) work on any device, no kernel of its own. Gradients of a sparse
input have PyTorch's layouts: sparse, on the input's coalesced coordinates, except through ``mm``, ``matmul``
and ``@``, which differentiate the dense product.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from .. import _dtype
from .._shapes import wrap_dim
from ..autograd.grad_mode import no_grad
from ..ops._util import check_same_device
from ..ops.creation import as_tensor
from ..ops.shape import cat
from ..tensor import Tensor
from ._autograd import SparseNode, record
from ._storage import unsupported
from .coo import SparseTensor, build, coalesced_indices, linear_index, make_sparse, values_at

__all__ = ["mm", "matmul", "sum", "softmax", "log_softmax", "transpose", "t", "mul", "div", "neg", "add", "sub",
           "rmatmul"]


def _pattern(s: SparseTensor) -> Tensor:
    """The coordinates of ``s`` once coalesced (where its gradients live)."""
    if s._coalesced:
        return s._ind
    with no_grad():
        return coalesced_indices(s._ind, s.shape[:s.sparse_dim()])[0]


# ---------------------------------------------------------------------- transpose

class TransposeBackward0(SparseNode):
    dim0: int
    dim1: int

    def backward(self, grad):
        return (grad.transpose(self.dim0, self.dim1),)


class TBackward0(TransposeBackward0):
    pass


def transpose(self: SparseTensor, dim0: int, dim1: int, _node: type[TransposeBackward0] = TransposeBackward0
              ) -> SparseTensor:
    """Swap two sparse dims (their index rows) or two dense dims (the values' dims)."""
    nd, sd = self.dim(), self.sparse_dim()
    d0, d1 = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    if (d0 < sd) != (d1 < sd):
        raise RuntimeError(f"transpose(): can't transpose a sparse dimension ({min(d0, d1)}) with a dense dimension "
                           f"({max(d0, d1)}) of a sparse tensor")
    size = list(self.shape)
    size[d0], size[d1] = size[d1], size[d0]
    with no_grad():
        if d0 == d1:
            ind, val = self._ind, self._val
        elif d0 < sd:
            rows = list(range(sd))
            rows[d0], rows[d1] = rows[d1], rows[d0]
            ind, val = self._ind.index_select(0, as_tensor(rows, device=self.device)), self._val
        else:
            ind, val = self._ind, self._val.transpose(d0 - sd + 1, d1 - sd + 1)
    coalesced = self._coalesced and (d0 == d1 or d0 >= sd or self._nnz() <= 1)
    node = _node()
    node.dim0, node.dim1 = d0, d1
    return record(node, (self,), make_sparse(ind, val, size, coalesced))


def t(self: SparseTensor) -> SparseTensor:
    """The transpose of a sparse matrix (itself below 2 dims)."""
    sd, dd = self.sparse_dim(), self.dense_dim()
    if sd > 2 or dd:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {sd} sparse and "
                           f"{dd} dense dimensions")
    if sd < 2:
        return self
    return transpose(self, 0, 1, TBackward0)


# ---------------------------------------------------------------------- scalar products

class MulBackward0(SparseNode):
    scalar: Any

    def backward(self, grad):
        s, other = self.saved_tensors
        g_self = g_other = None
        if self.needs_input_grad[0]:
            g_self = grad * (self.scalar if other is None else other)
        if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
            sc = s.coalesce()
            g_other = (values_at(grad, sc._ind, s.shape[:s.sparse_dim()]) * sc._val).sum().reshape(other.shape)
        return (g_self,) if other is None else (g_self, g_other)


class DivBackward0(MulBackward0):
    pass


class NegBackward0(MulBackward0):
    pass


def _scalar_operand(self: SparseTensor, other: Any, op: str) -> Any:
    if isinstance(other, numbers.Number) and not isinstance(other, complex):
        return other
    if isinstance(other, Tensor) and not other.is_sparse and other.numel() == 1 and other.dim() <= self.dim():
        if other.dim():  # a 0-d tensor is a scalar, wherever it lives (as in PyTorch)
            check_same_device(self, other)
        return other
    kind = "sparse" if isinstance(other, Tensor) and other.is_sparse else "non-scalar"
    raise RuntimeError(f"{op}(sparse, {kind}): a sparse COO tensor can only be multiplied or divided by a scalar "
                       "or a one-element dense tensor here; convert with .to_dense() first")


def mul(self: SparseTensor, other: Any, _node: type[MulBackward0] = MulBackward0) -> SparseTensor:
    """The product with a scalar (a number or a one-element dense tensor): the values scaled."""
    other = _scalar_operand(self, other, "mul")
    with no_grad():
        val = self._val * (other.reshape(()) if isinstance(other, Tensor) else other)
    out = make_sparse(self._ind, val, self.shape, self._coalesced)
    node = _node()
    if isinstance(other, Tensor):
        return record(node, (self, other), out, saved=(self, other))
    node.scalar = other
    return record(node, (self,), out, saved=(None, None))


def div(self: SparseTensor, other: Any) -> SparseTensor:
    other = _scalar_operand(self, other, "div")
    return mul(self, 1.0 / other if not isinstance(other, Tensor) else other.reciprocal(), DivBackward0)


def neg(self: SparseTensor) -> SparseTensor:
    return mul(self, -1, NegBackward0)


# ---------------------------------------------------------------------- sparse + sparse

class AddBackward0(SparseNode):
    alpha: Any
    dtypes: tuple[Any, Any]

    def backward(self, grad):
        g_self = grad if grad.dtype is self.dtypes[0] else grad.to(self.dtypes[0])
        g_other = grad * self.alpha if self.alpha != 1 else grad
        if g_other.dtype is not self.dtypes[1]:
            g_other = g_other.to(self.dtypes[1])
        return (g_self, g_other)


class SubBackward0(AddBackward0):
    pass


def add(self: SparseTensor, other: Any, *, alpha: Any = 1, _node: type[AddBackward0] = AddBackward0
        ) -> SparseTensor:
    """The sum of two sparse tensors of one shape (``self + alpha * other``), coalesced."""
    if not (isinstance(other, Tensor) and other.is_sparse):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if tuple(self.shape) != tuple(other.shape):
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(self.shape)} != "
                           f"{list(other.shape)}")
    if self.sparse_dim() != other.sparse_dim():
        raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse dimensions, but got "
                           f"{self.sparse_dim()} and {other.sparse_dim()}")
    check_same_device(self, other)
    dt = _dtype.promote_types(self.dtype, other.dtype)
    sizes = self.shape[:self.sparse_dim()]
    with no_grad():
        b = other._val.to(dt)
        val = cat([self._val.to(dt), b * alpha if alpha != 1 else b])
        ind, inv = coalesced_indices(cat([self._ind, other._ind], 1), sizes)
        val = val.new_zeros((ind.shape[1],) + tuple(val.shape[1:])).index_add_(0, inv, val)
    node = _node()
    node.alpha, node.dtypes = alpha, (self.dtype, other.dtype)
    return record(node, (self, other), make_sparse(ind, val, self.shape, True))


def sub(self: SparseTensor, other: Any, *, alpha: Any = 1) -> SparseTensor:
    if not (isinstance(other, Tensor) and other.is_sparse):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    return add(self, other, alpha=-alpha, _node=SubBackward0)


# ---------------------------------------------------------------------- sums

class SparseSumBackward0(SparseNode):
    """Each stored entry's gradient is the output gradient where that entry was summed into."""

    sizes: tuple[int, ...]
    keep: list[int] | None
    ind: Tensor
    dense_reduced: list[int]
    dense_shape: tuple[int, ...]
    dtype: Any

    def backward(self, grad):
        cind = _pattern_of(self.ind, self.sizes)
        n = cind.shape[1]
        if self.keep is None:  # every sparse dim reduced: a dense gradient over the remaining dense dims
            gv = grad.unsqueeze(0).expand((n,) + tuple(grad.shape))
        else:
            keep = as_tensor(self.keep, device=cind.device)
            gv = values_at(grad, cind.index_select(0, keep), [self.sizes[d] for d in self.keep])
        for d in self.dense_reduced:
            gv = gv.unsqueeze(d)
        gv = gv.expand((n,) + self.dense_shape).contiguous()
        if gv.dtype is not self.dtype:
            gv = gv.to(self.dtype)
        return (build(cind, gv, self.sizes + self.dense_shape, True),)


class SumBackward0(SparseSumBackward0):
    pass


def _pattern_of(ind: Tensor, sizes: Sequence[int]) -> Tensor:
    with no_grad():
        return coalesced_indices(ind, sizes)[0]


def sum(input: SparseTensor, dim: Any = None, dtype: Any = None) -> Tensor:
    """``torch.sparse.sum``: the sum over ``dim`` (one dim or several; all by default). Reducing every sparse dim
    gives a dense tensor, otherwise a coalesced sparse one.

    Example::

        mt.sparse.sum(s)        # a 0-d dense tensor
        mt.sparse.sum(s, 1)     # per-row sums, sparse
    """
    _check_sparse(input, "sparse.sum")
    nd, sd = input.dim(), input.sparse_dim()
    if dim is None:
        dims = list(range(nd))
    else:
        dims = sorted({wrap_dim(d, nd) for d in (dim if isinstance(dim, (list, tuple)) else [dim])})
    sizes = tuple(input.shape[:sd])
    dense_reduced = [d - sd + 1 for d in dims if d >= sd]
    keep = [d for d in range(sd) if d not in dims]
    with no_grad():
        val = input._val if dtype is None else input._val.to(dtype)
        if dense_reduced:
            val = val.sum(dense_reduced)
        if not keep:
            out: Tensor = val.sum(0)
        else:
            kind, inv = coalesced_indices(input._ind.index_select(0, as_tensor(keep, device=input.device)),
                                          [sizes[d] for d in keep])
            val = val.new_zeros((kind.shape[1],) + tuple(val.shape[1:])).index_add_(0, inv, val)
            out = make_sparse(kind, val, [sizes[d] for d in keep] + list(val.shape[1:]), True)
    node = SumBackward0() if dim is None else SparseSumBackward0()
    node.sizes, node.keep, node.dense_reduced = sizes, (keep or None), dense_reduced
    node.dense_shape, node.dtype, node.ind = tuple(input.shape[sd:]), input.dtype, input._ind
    return record(node, (input,), out)


def sum_method(self: SparseTensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    if keepdim:
        raise RuntimeError("sum(): keepdim=True is not supported for sparse COO tensors here; use "
                           "minitorch_gpu.sparse.sum(input, dim) and unsqueeze the result")
    return sum(self, dim, dtype)


# ---------------------------------------------------------------------- products

class SparseAddmmBackward0(SparseNode):
    """sparse @ dense. The sparse operand's gradient is (grad @ dense.T) read at its coordinates only (O(nnz x N),
    never the dense product), as ``torch.sparse.mm`` gives it; ``masked = False`` gives the whole dense product
    instead, as PyTorch's ``mm``, ``matmul`` and ``@`` do."""

    masked = True

    def backward(self, grad):
        s, d = self.saved_tensors
        g_s = g_d = None
        if self.needs_input_grad[0]:
            if self.masked:
                cind = _pattern(s)
                gv = (grad.index_select(0, cind[0]) * d.index_select(0, cind[1])).sum(1)
                g_s = build(cind, gv, s.shape, True)
            else:
                g_s = grad.mm(d.t())
        if self.needs_input_grad[1]:
            g_d = _spmm(t(s), grad, SparseAddmmBackward0)
        return (g_s, g_d)


class MmBackward0(SparseAddmmBackward0):
    masked = False


class MvBackward0(SparseNode):
    """sparse matrix @ dense vector: the matrix's gradient is the dense outer product, as PyTorch's ``mv``."""

    def backward(self, grad):
        s, v = self.saved_tensors
        g_s = g_v = None
        if self.needs_input_grad[0]:
            g_s = grad.unsqueeze(1) * v.unsqueeze(0)
        if self.needs_input_grad[1]:
            g_v = _spmm(t(s), grad.unsqueeze(1), SparseAddmmBackward0).squeeze(1)
        return (g_s, g_v)


class DenseSparseMmBackward0(SparseNode):
    """dense @ sparse through ``mm``/``matmul``/``@``: the gradient of the sparse operand is dense, as there."""

    def name(self) -> str:
        return "MmBackward0"

    def backward(self, grad):
        d, s = self.saved_tensors
        g_d = g_s = None
        if self.needs_input_grad[0]:
            g_d = _spmm(s, grad.t(), SparseAddmmBackward0).t()
        if self.needs_input_grad[1]:
            g_s = d.t().mm(grad)
        return (g_d, g_s)


def _check_sparse(x: Any, fn: str) -> None:
    if not (isinstance(x, Tensor) and x.is_sparse):
        raise RuntimeError(f"{fn}(): expected a sparse COO tensor as its first argument, got "
                           f"{'a strided tensor' if isinstance(x, Tensor) else type(x).__name__}")


def _spmm(s: SparseTensor, d: Tensor, node_cls: type[SparseAddmmBackward0]) -> Tensor:
    """sparse (M x K) @ dense (K x N) -> dense (M x N): the dense rows the column indices name, scaled by the
    values, added into the rows the row indices name."""
    if s.sparse_dim() != 2 or s.dense_dim():
        raise RuntimeError(f"addmm: matrices expected, got {s.sparse_dim()}D tensor")
    if d.is_sparse:
        raise unsupported("mm", s.device.type)
    if d.dim() != 2:
        if d.dim() < 2:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(d.dim(), 1)}, "
                             f"{max(d.dim(), 1) - 1}], but got 1)")
        raise RuntimeError(f"addmm: matrices expected, got {d.dim()}D tensor")
    m, k = s.shape
    if d.shape[0] != k:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {k}, got {d.shape[0]}")
    if d.dtype is not s.dtype:
        raise RuntimeError(f"expected scalar type {s.dtype._scalar_name} but found {d.dtype._scalar_name}")
    check_same_device(s, d)
    rows, cols = s._ind.select(0, 0), s._ind.select(0, 1)
    with no_grad():
        out = d.new_zeros((m, d.shape[1])).index_add_(0, rows, s._val.unsqueeze(1) * d.index_select(0, cols))
    saved = (s, d if s.requires_grad else None)
    return record(node_cls(), (s, d), out, saved=saved)


def _dense_spmm(d: Tensor, s: SparseTensor) -> Tensor:
    """dense (M x K) @ sparse (K x N), as ``(s.T @ d.T).T``."""
    with no_grad():
        out = _spmm(t(s), d.t(), SparseAddmmBackward0).t()
    saved = (d if s.requires_grad else None, s if d.requires_grad else None)
    return record(DenseSparseMmBackward0(), (d, s), out, saved=saved)


def mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``torch.sparse.mm``: sparse x dense -> dense (and dense x sparse -> dense; dense x dense as ``mm``).
    The gradient of a sparse operand is sparse, on its coalesced coordinates.

    Example::

        adj = mt.sparse_coo_tensor(edges, weights, (n, n))
        h = mt.sparse.mm(adj, x)    # neighbour sums, dense (n, features)
    """
    if not isinstance(mat1, Tensor) or not isinstance(mat2, Tensor):
        raise TypeError(f"mm(): argument 'mat2' must be Tensor, not {type(mat2).__name__}"
                        if isinstance(mat1, Tensor) else
                        f"mm(): argument 'mat1' must be Tensor, not {type(mat1).__name__}")
    if isinstance(mat1, SparseTensor):
        return _spmm(mat1, mat2, SparseAddmmBackward0)
    if isinstance(mat2, SparseTensor):
        return _spmm(t(mat2), mat1.t(), SparseAddmmBackward0).t()
    return mat1.mm(mat2)


def matmul(self: SparseTensor, other: Any, *, out: Any = None) -> Tensor:
    """``self @ other`` for a sparse matrix and a dense matrix or vector (``torch.mm``/``matmul``/``@``)."""
    if out is not None:
        raise RuntimeError("matmul(): out= is not supported with a sparse operand")
    if not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if other.dim() == 1 and not other.is_sparse:
        with no_grad():
            out = _spmm(self, other.unsqueeze(1), SparseAddmmBackward0).squeeze(1)
        saved = (self if other.requires_grad else None, other if self.requires_grad else None)
        return record(MvBackward0(), (self, other), out, saved=saved)
    return _spmm(self, other, MmBackward0)


def rmatmul(self: SparseTensor, other: Any, *, out: Any = None) -> Tensor:
    """``other @ self`` for a dense matrix or vector ``other``."""
    if out is not None:
        raise RuntimeError("matmul(): out= is not supported with a sparse operand")
    if not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'input' (position 1) must be Tensor, not {type(other).__name__}")
    if other.dim() == 1:
        return _dense_spmm(other.unsqueeze(0), self).squeeze(0)
    return _dense_spmm(other, self)


# ---------------------------------------------------------------------- softmax over the specified entries

class SparseSoftmaxBackward0(SparseNode):
    log = False
    axis: int | None
    grp: Tensor | None
    groups: int
    ind: Tensor
    sizes: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: Any

    def backward(self, grad):
        y, = self.saved_tensors
        gv = values_at(grad, self.ind, self.sizes)
        if self.log:
            gi = gv - y.exp() * self.group_sum(gv)
        else:
            gi = y * (gv - self.group_sum(gv * y))
        if gi.dtype is not self.dtype:
            gi = gi.to(self.dtype)
        return (build(self.ind, gi, self.shape, True),)

    def group_sum(self, x: Tensor) -> Tensor:
        """Each entry replaced by the sum over its softmax group."""
        if self.axis is not None:
            return x.sum(self.axis, keepdim=True)
        grp = self.grp
        return x.new_zeros((self.groups,) + tuple(x.shape[1:])).index_add(0, grp, x).index_select(0, grp)


class SparseLogSoftmaxBackward0(SparseSoftmaxBackward0):
    log = True


def _softmax(input: SparseTensor, dim: int, dtype: Any, node_cls: type[SparseSoftmaxBackward0]) -> SparseTensor:
    _check_sparse(input, "sparse.softmax")
    nd, sd = input.dim(), input.sparse_dim()
    dim = wrap_dim(dim, nd)
    sizes = tuple(input.shape[:sd])
    node = node_cls()
    with no_grad():
        x = input.coalesce()
        ind, val = x._ind, (x._val if dtype is None else x._val.to(dtype))
        if dim >= sd:  # a dense dim: softmax of the values along it
            node.axis, node.grp, node.groups = dim - sd + 1, None, 0
            y = val.log_softmax(node.axis) if node_cls.log else val.softmax(node.axis)
        else:
            others = [d for d in range(sd) if d != dim]
            if others:
                key = linear_index(ind.index_select(0, as_tensor(others, device=ind.device)),
                                   [sizes[d] for d in others])
            else:
                key = ind.new_zeros(ind.shape[1:])
            uniq, grp = key.unique(sorted=True, return_inverse=True)
            node.axis, node.grp, node.groups = None, grp, int(uniq.shape[0])
            idx = grp.reshape((-1,) + (1,) * (val.dim() - 1)).expand(tuple(val.shape))
            top = val.new_zeros((node.groups,) + tuple(val.shape[1:])).scatter_reduce(0, idx, val, "amax",
                                                                                    include_self=False)
            shifted = val - top.index_select(0, grp)
            e = shifted.exp()
            total = e.new_zeros(top.shape).index_add(0, grp, e).index_select(0, grp)
            y = shifted - total.log() if node_cls.log else e / total
    node.ind, node.sizes, node.shape, node.dtype = ind, sizes, tuple(input.shape), input.dtype
    return record(node, (input,), make_sparse(ind, y, input.shape, True), saved=(y,))


def softmax(input: SparseTensor, dim: int, dtype: Any = None) -> SparseTensor:
    """``torch.sparse.softmax``: softmax along ``dim`` over the specified entries only (the unspecified ones
    count as -inf, so they stay unspecified). The result is coalesced."""
    return _softmax(input, dim, dtype, SparseSoftmaxBackward0)


def log_softmax(input: SparseTensor, dim: int, dtype: Any = None) -> SparseTensor:
    """``torch.sparse.log_softmax``: log of :func:`softmax`, computed stably."""
    return _softmax(input, dim, dtype, SparseLogSoftmaxBackward0)


