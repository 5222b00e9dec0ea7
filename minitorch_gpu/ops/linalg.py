"""Matrix products: matmul (``@``), mm, bmm, mv, dot, vdot, inner, outer, addmm, baddbmm, tensordot and
einsum.

Every product runs through the backend's ``matmul`` (or ``einsum``) primitive. Gradients of a product are
products again, written with the same nodes: the transposes they need (``grad @ b.T``) are flags of the
node rather than recorded transpose ops, so BLAS reads the transposed layout in place and double
backward goes through the same code.

Shape and dtype checks follow PyTorch's, messages included, and run before anything is computed.
"""
import functools
import math

from .. import _dtype, _op_range
from ..autograd.grad_mode import _state
from ..autograd.node import Op
from ..tensor import Tensor, _new_tensor
from ..autograd._inplace import apply_inplace
from ._util import check_out, check_same_device, check_tensor, scalar_for, sum_to, wrap_dims, write_out
from ._autocast import autocast_op

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm", "baddbmm",
           "tensordot", "einsum"]

def _not_for_bool(kernel, *ts):
    for t in ts:
        if t._data.dtype.kind == "b":
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


# ---------------------------------------------------------------------- nodes

class _MatmulNode(Op):
    """``op(a) @ op(b)`` for operands of >= 2 dims with broadcast batch dims; ``op`` transposes the last
    two dims when the node's flag says so."""

    def forward(self, a, b, ta=False, tb=False):
        self.save_for_backward(a, b)
        self.ta = ta
        self.tb = tb
        return a._be.matmul(a._data, b._data, ta, tb)

    def backward(self, g):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        ta, tb = self.ta, self.tb
        if not _state.grad and not _op_range.enabled:
            return self._backward_arrays(g, a, b, na, nb)
        ga = gb = None
        if na:
            # d op(a) = g @ op(b)^T; when a itself was transposed, transpose that product back
            ga = _mm_node(g, b, False, not tb) if not ta else _mm_node(b, g, tb, True)
            if ga._data.shape != a._data.shape:
                ga = sum_to(ga, a._data.shape)
        if nb:
            if b._data.ndim == 2 and a._data.ndim > 2 and not ta:
                # a matrix shared by every batch entry: its gradient is one GEMM over the flattened batch
                # instead of a batched product summed afterwards
                a2 = a.reshape(-1, a._data.shape[-1])
                g2 = g.reshape(-1, g._data.shape[-1])
                gb = _mm_node(a2, g2, True, False) if not tb else _mm_node(g2, a2, True, False)
            else:
                gb = _mm_node(a, g, not ta, False) if not tb else _mm_node(g, a, True, ta)
                if gb._data.shape != b._data.shape:
                    gb = sum_to(gb, b._data.shape)
        return ga, gb


    def _backward_arrays(self, g, a, b, na, nb):
        """``backward``'s products on the arrays, for a backward that records nothing (no node, no view ops)."""
        be = g._be
        gd, ad, bd = g._data, a._data, b._data
        ta, tb = self.ta, self.tb
        ga = gb = None
        if na:
            r = be.matmul(gd, bd, False, not tb) if not ta else be.matmul(bd, gd, tb, True)
            ga = _new_tensor(_sum_to_array(be, r, ad.shape), be)
        if nb:
            if bd.ndim == 2 and ad.ndim > 2 and not ta:
                a2, g2 = be.reshape(ad, (-1, ad.shape[-1])), be.reshape(gd, (-1, gd.shape[-1]))
                r = be.matmul(a2, g2, True, False) if not tb else be.matmul(g2, a2, True, False)
            else:
                r = be.matmul(ad, gd, not ta, False) if not tb else be.matmul(gd, ad, True, ta)
            gb = _new_tensor(_sum_to_array(be, r, bd.shape), be)
        return ga, gb


def _sum_to_array(be, r, shape):
    """Array ``r`` summed over its broadcast dims down to ``shape`` (``sum_to`` on arrays)."""
    if r.shape == shape:
        return r
    lead = r.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and r.shape[i + lead] != 1)
    if dims:
        r = be.sum(r, dims, True)
    return be.reshape(r, shape)


class MmBackward0(_MatmulNode):
    """Matrix @ matrix."""


class BmmBackward0(_MatmulNode):
    """Batch of matrices @ batch of matrices, same batch size."""


class UnsafeViewBackward0(_MatmulNode):
    """Broadcast batched matmul; PyTorch reports its batched/folded matmul results under this name."""


def _mm_node(a, b, ta=False, tb=False):
    da, db = a._data.ndim, b._data.ndim
    if da == 2 and db == 2:
        return MmBackward0.apply(a, b, ta=ta, tb=tb)
    if da == 3 and db == 3 and a._data.shape[0] == b._data.shape[0]:
        return BmmBackward0.apply(a, b, ta=ta, tb=tb)
    return UnsafeViewBackward0.apply(a, b, ta=ta, tb=tb)


class MvBackward0(Op):
    """``op(mat) @ vec``: matrix times vector, ``op`` an optional transpose (vector @ matrix is mat^T @ vec)."""

    def forward(self, mat, vec, ta=False):
        self.save_for_backward(mat, vec)
        self.ta = ta
        return mat._be.matmul(mat._data, vec._data, ta, False)

    def backward(self, g):
        mat, vec = self.saved_tensors
        nm, nv = self.needs_input_grad
        gm = gv = None
        if nm:
            gm = g.reshape(-1, 1) * vec.reshape(1, -1) if not self.ta else vec.reshape(-1, 1) * g.reshape(1, -1)
        if nv:
            gv = MvBackward0.apply(mat, g, ta=not self.ta)
        return gm, gv


class DotBackward0(Op):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        return a._be.matmul(a._data, b._data)

    def backward(self, g):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        return (g * b if na else None), (g * a if nb else None)


class VdotBackward0(DotBackward0):
    """vdot of real vectors is dot."""


class _AddProductNode(Op):
    """``beta * input + alpha * (m1 @ m2)`` with ``input`` broadcast to the product's shape. With beta == 0
    the input is not read at all (so NaN in it does not propagate), as in PyTorch."""

    def forward(self, input, m1, m2, beta=1, alpha=1):
        self.save_for_backward(m1, m2)
        self.beta = beta
        self.alpha = alpha
        self.in_shape = input._data.shape
        be = m1._be
        inp = input._data
        if beta == 1 and alpha == 1 and inp.ndim == 1 and m1._data.ndim >= 2 and m2._data.ndim >= 2 \
                and inp.shape[0] == m2._data.shape[-1] and inp.dtype == m1._data.dtype:
            # a bias row: added in the GEMM's epilogue (one launch on CUDA)
            return be.matmul(m1._data, m2._data, bias=inp)
        r = be.matmul(m1._data, m2._data)
        if alpha != 1:
            r = be.binary("mul", r, alpha)
        if beta != 0:
            inp = input._data
            if beta != 1:
                inp = be.binary("mul", inp, beta)
            r = be.binary("add", r, inp)
        return r

    def backward(self, g):
        m1, m2 = self.saved_tensors
        ni, n1, n2 = self.needs_input_grad
        gi = g1 = g2 = None
        if ni:
            gi = sum_to(g if self.beta == 1 else g * self.beta, self.in_shape)
        if n1:
            g1 = _mm_node(g, m2, False, True)
            if self.alpha != 1:
                g1 = g1 * self.alpha
        if n2:
            g2 = _mm_node(m1, g, True, False)
            if self.alpha != 1:
                g2 = g2 * self.alpha
        return gi, g1, g2


class AddmmBackward0(_AddProductNode):
    pass


class BaddbmmBackward0(_AddProductNode):
    pass


# ---------------------------------------------------------------------- checks shared by the products

def _mm_dtype_check(a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype._cpp_typeid_name} != "
                           f"{b.dtype._cpp_typeid_name}")


def _mv_dtype_check(mat, vec):
    if mat._data.dtype != vec._data.dtype:
        v, m = vec.dtype._scalar_name, mat.dtype._scalar_name
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v}, {m}, and {v}")


def _dot_checks(a, b):
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a._data.ndim}D and {b._data.ndim}D tensors")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {a.dtype._scalar_name} and "
                           f"{b.dtype._scalar_name}")
    n, m = a._data.shape[0], b._data.shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number "
                           f"of elements, but got {n} and {m} elements respectively")
    check_same_device(a, b)
    _not_for_bool("dot", a)


def _mm_shape_error(r1, c1, r2, c2):
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({r1}x{c1} and {r2}x{c2})")


def _bmm_shape_error(batch, k, batch2, k2):
    return RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k}] but got: "
                        f"[{batch2}, {k2}].")


def _check_expand(shape, target, dtype):
    """RuntimeError (PyTorch's expand message) unless ``shape`` broadcasts to ``target``."""
    if len(shape) > len(target):
        raise RuntimeError(f"expand(minitorch_gpu.{dtype._tensor_name}{{{list(shape)}}}, size={list(target)}): the "
                           f"number of sizes provided ({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for i, n in enumerate(shape):
        t = target[lead + i]
        if n != t and n != 1:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing size ({n}) at "
                               f"non-singleton dimension {lead + i}.  Target sizes: {list(target)}.  Tensor sizes: "
                               f"{list(shape)}")


# ---------------------------------------------------------------------- public products

def _sparse_product(a, b, out):
    """``a @ b`` with a sparse operand: sparse layouts bring their own products (``minitorch_gpu.sparse`` binds
    them as the sparse tensor's ``__matmul__`` / ``__rmatmul__``). Only a Tensor subclass can be sparse, so the
    callers test the classes first: plain tensors pay two identity tests."""
    return a.__matmul__(b, out=out) if a.is_sparse else b.__rmatmul__(a, out=out)


@autocast_op("matmul")
def matmul(input, other, *, out=None):
    """Matrix product with PyTorch's rules: 1-D operands are a row / column vector whose dim is dropped
    from the result, and the batch dims of >2-D operands broadcast."""
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        check_tensor(input, "matmul", "input", 1)
        check_tensor(other, "matmul", "other", 2)
    if (input.__class__ is not Tensor or other.__class__ is not Tensor) and (input.is_sparse or other.is_sparse):
        return _sparse_product(input, other, out)
    if out is not None:
        check_out(out, "matmul", input, other)
    da, db = input._data.ndim, other._data.ndim
    if da == 2 and db == 2:
        r = _mm(input, other)
    elif da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    elif da == 1 and db == 1:
        _dot_checks(input, other)
        r = DotBackward0.apply(input, other)
    elif da == 2 and db == 1:
        _mv_checks(input, other)
        r = MvBackward0.apply(input, other)
    elif da == 1 and db == 2:
        _mm_dtype_check(input, other)
        n, (k, m) = input._data.shape[0], other._data.shape
        if n != k:
            raise _mm_shape_error(1, n, k, m)
        check_same_device(input, other)
        _not_for_bool("addmm_impl_cpu_", input)
        r = MvBackward0.apply(other, input, ta=True)
    else:
        _batched_checks(input, other, out is not None)
        if db == 1:
            k = other._data.shape[0]
            r = UnsafeViewBackward0.apply(input, other.reshape(k, 1)).reshape(input._data.shape[:-1])
        elif da == 1:
            k = input._data.shape[0]
            r = UnsafeViewBackward0.apply(input.reshape(1, k), other)
            r = r.reshape(r._data.shape[:-2] + r._data.shape[-1:])
        else:
            r = UnsafeViewBackward0.apply(input, other)
    return write_out(r, out, "matmul", exact_dtype=True)


def _mv_checks(mat, vec, rows=None):
    _mv_dtype_check(mat, vec)
    n, k = mat._data.shape[-2:]
    m = vec._data.shape[0]
    if k != m:
        rows = n if rows is None else rows
        raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({m})")
    check_same_device(mat, vec)
    _not_for_bool("addmv_impl_cpu", mat)


def _torch_folds(a, b, has_out):
    """Whether PyTorch computes this >2-D matmul by folding the batch into one mm / mv (its
    ``should_fold``). It decides which of its kernels reports a bad shape or dtype, so our messages follow
    the same choice."""
    a_larger = a._data.ndim >= b._data.ndim
    big, small = (a, b) if a_larger else (b, a)
    if not (big._data.ndim >= 3 and small._data.ndim <= 2):
        return False
    if small.requires_grad and not has_out:
        return True
    if a._data.ndim == 2:
        return False
    if big._data.size == 0:
        return True
    shape = big._data.shape
    strides = big.stride()
    if not a_larger:
        # the folded operand is b transposed in its last two dims
        shape = shape[:-2] + (shape[-1], shape[-2])
        strides = strides[:-2] + (strides[-1], strides[-2])
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _broadcast_batch(x, y):
    n = max(len(x), len(y))
    x = (1,) * (n - len(x)) + tuple(x)
    y = (1,) * (n - len(y)) + tuple(y)
    out = []
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q and p != 1 and q != 1:
            raise RuntimeError(f"The size of tensor a ({p}) must match the size of tensor b ({q}) at non-singleton "
                               f"dimension {i}")
        out.append(q if p == 1 else p)
    return out


def _batched_checks(a, b, has_out):
    """Shape / dtype checks of a matmul with a >2-D operand, in the words of the PyTorch kernel that
    would run it."""
    sa, sb = a._data.shape, b._data.shape
    if _torch_folds(a, b, has_out):
        if len(sa) >= 3 and len(sb) == 1:
            _mv_checks(a, b, rows=math.prod(sa[:-1]))
            return
        if len(sa) >= 3:
            _mm_dtype_check(a, b)
            if sa[-1] != sb[0]:
                raise _mm_shape_error(math.prod(sa[:-1]), sa[-1], sb[0], sb[1])
            kernel = "addmm_impl_cpu_"
        elif len(sa) == 1:
            # folded as b^T @ a, a matrix-vector product
            rows = math.prod(sb[:-2]) * sb[-1]
            _mv_dtype_check(b, a)
            if sa[0] != sb[-2]:
                raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{sb[-2]}), vec ({sa[0]})")
            kernel = "addmv_impl_cpu"
        else:
            # folded as (b^T @ a^T)^T
            _mm_dtype_check(b, a)
            if sa[-1] != sb[-2]:
                raise _mm_shape_error(math.prod(sb[:-2]) * sb[-1], sb[-2], sa[1], sa[0])
            kernel = "addmm_impl_cpu_"
        check_same_device(a, b)
        _not_for_bool(kernel, a)
        return
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype._scalar_name} but found {b.dtype._scalar_name}")
    batch = math.prod(_broadcast_batch(sa[:-2], sb[:-2]))
    ka = sa[-1]
    kb = sb[-2] if len(sb) > 1 else sb[0]
    if ka != kb:
        raise _bmm_shape_error(batch, ka, batch, kb)
    check_same_device(a, b)
    _not_for_bool("bmm", a)


def _mm(a, b):
    if a._data.dtype != b._data.dtype:
        _mm_dtype_check(a, b)
    sa, sb = a._data.shape, b._data.shape
    if sa[1] != sb[0]:
        raise _mm_shape_error(sa[0], sa[1], sb[0], sb[1])
    if a._be is not b._be:
        check_same_device(a, b)
    if a._data.dtype.kind == "b":
        _not_for_bool("addmm_impl_cpu_", a)
    return MmBackward0.apply(a, b)


@autocast_op("mm")
def mm(input, mat2, *, out=None):
    """Matrix product of two 2-D tensors (no broadcasting)."""
    check_tensor(input, "mm", "input", 1)
    check_tensor(mat2, "mm", "mat2", 2)
    if (input.__class__ is not Tensor or mat2.__class__ is not Tensor) and (input.is_sparse or mat2.is_sparse):
        return _sparse_product(input, mat2, out)
    check_out(out, "mm", input, mat2)
    if input._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return write_out(_mm(input, mat2), out, "mm", exact_dtype=True)


def _bmm_checks(b1, b2):
    if b1._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b1._data.dtype != b2._data.dtype:
        raise RuntimeError(f"expected scalar type {b1.dtype._scalar_name} but found {b2.dtype._scalar_name}")
    s1, s2 = b1._data.shape, b2._data.shape
    if s2[0] != s1[0] or s2[1] != s1[2]:
        raise _bmm_shape_error(s1[0], s1[2], s2[0], s2[1])
    check_same_device(b1, b2)
    _not_for_bool("bmm", b1)


@autocast_op("bmm")
def bmm(input, mat2, *, out=None):
    """Batched matrix product of two 3-D tensors with the same batch size."""
    check_tensor(input, "bmm", "input", 1)
    check_tensor(mat2, "bmm", "mat2", 2)
    check_out(out, "bmm", input, mat2)
    _bmm_checks(input, mat2)
    return write_out(BmmBackward0.apply(input, mat2), out, "bmm", exact_dtype=True)


@autocast_op("mv")
def mv(input, vec, *, out=None):
    """Matrix (2-D) times vector (1-D)."""
    check_tensor(input, "mv", "input", 1)
    check_tensor(vec, "mv", "vec", 2)
    check_out(out, "mv", input, vec)
    if input._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input._data.ndim}, {vec._data.ndim}")
    _mv_checks(input, vec)
    return write_out(MvBackward0.apply(input, vec), out, "mv", exact_dtype=True)


@autocast_op("dot")
def dot(input, tensor, *, out=None):
    """Inner product of two 1-D tensors of the same size and dtype."""
    check_tensor(input, "dot", "input", 1)
    check_tensor(tensor, "dot", "tensor", 2)
    check_out(out, "dot", input, tensor)
    _dot_checks(input, tensor)
    return write_out(DotBackward0.apply(input, tensor), out, "dot", exact_dtype=True)


@autocast_op("vdot")
def vdot(input, other, *, out=None):
    """dot with the first argument conjugated; the same as dot for real tensors."""
    check_tensor(input, "vdot", "input", 1)
    check_tensor(other, "vdot", "other", 2)
    check_out(out, "vdot", input, other)
    _dot_checks(input, other)
    return write_out(VdotBackward0.apply(input, other), out, "vdot", exact_dtype=True)


def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors (dtypes promote, as for ``*``)."""
    check_tensor(input, "outer", "input", 1)
    check_tensor(vec2, "outer", "vec2", 2)
    check_out(out, "outer", input, vec2)
    if input._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input._data.ndim}-D")
    if vec2._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2._data.ndim}-D")
    return write_out(input.reshape(-1, 1) * vec2, out, "outer", exact_dtype=True)


def ger(input, vec2, *, out=None):
    """Alias of :func:`outer`."""
    return outer(input, vec2, out=out)


def inner(input, other, *, out=None):
    """Sum of products over the last dim of both tensors (a plain product when either is 0-d)."""
    check_tensor(input, "inner", "input", 1)
    check_tensor(other, "inner", "other", 2)
    check_out(out, "inner", input, other)
    if input._data.ndim == 0 or other._data.ndim == 0:
        return write_out(input * other, out, "inner", exact_dtype=True)
    if input._data.shape[-1] != other._data.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return write_out(tensordot(input, other, dims=([-1], [-1])), out, "inner", exact_dtype=True)


def _scalar_arg(value, dt):
    """alpha / beta in the tensors' dtype (truncated for integer tensors, as PyTorch does)."""
    return scalar_for(value, dt) if not dt.is_floating_point else float(value)


@autocast_op("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product's shape."""
    check_tensor(input, "addmm", "input", 1)
    check_tensor(mat1, "addmm", "mat1", 2)
    check_tensor(mat2, "addmm", "mat2", 3)
    check_out(out, "addmm", input, mat1, mat2)
    if mat1._data.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1._data.ndim}-D tensor")
    if mat2._data.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {mat2._data.ndim}-D tensor")
    if input._data.dtype != mat2._data.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {input.dtype._scalar_name} and "
                           f"{mat2.dtype._scalar_name}")
    if mat1._data.dtype != mat2._data.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {mat1.dtype._scalar_name} and "
                           f"{mat2.dtype._scalar_name}")
    s1, s2 = mat1._data.shape, mat2._data.shape
    if s1[1] != s2[0]:
        raise _mm_shape_error(s1[0], s1[1], s2[0], s2[1])
    _check_expand(input._data.shape, (s1[0], s2[1]), input.dtype)
    check_same_device(input, mat1, mat2)
    _not_for_bool("addmm_impl_cpu_", mat1)
    dt = mat1.dtype
    r = AddmmBackward0.apply(input, mat1, mat2, beta=_scalar_arg(beta, dt), alpha=_scalar_arg(alpha, dt))
    return write_out(r, out, "addmm", exact_dtype=True)


def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    """In-place :func:`addmm` (``self`` must already have the product's shape)."""
    return apply_inplace(self, addmm, mat1, mat2, beta=beta, alpha=alpha, keeps_self=False)


@autocast_op("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``; ``input`` broadcasts to the product's shape."""
    check_tensor(input, "baddbmm", "input", 1)
    check_tensor(batch1, "baddbmm", "batch1", 2)
    check_tensor(batch2, "baddbmm", "batch2", 3)
    check_out(out, "baddbmm", input, batch1, batch2)
    _bmm_checks(batch1, batch2)
    if input._data.dtype != batch1._data.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {input.dtype._cpp_typeid_name}, batch1: "
                           f"{batch1.dtype._cpp_typeid_name}, batch2: {batch2.dtype._cpp_typeid_name}")
    s1, s2 = batch1._data.shape, batch2._data.shape
    _check_expand(input._data.shape, (s1[0], s1[1], s2[2]), input.dtype)
    check_same_device(input, batch1)
    dt = batch1.dtype
    r = BaddbmmBackward0.apply(input, batch1, batch2, beta=_scalar_arg(beta, dt), alpha=_scalar_arg(alpha, dt))
    return write_out(r, out, "baddbmm", exact_dtype=True)


def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    """In-place :func:`baddbmm`."""
    return apply_inplace(self, baddbmm, batch1, batch2, beta=beta, alpha=alpha, keeps_self=False)


@autocast_op("matmul")
def _matmul_method(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    if self._data.ndim == 2 and other._data.ndim == 2:
        return _mm(self, other)
    return matmul(self, other)


@autocast_op("matmul")
def _rmatmul_method(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


# ---------------------------------------------------------------------- einsum

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ELL = "..."


class EinsumBackward0(Op):
    """An einsum over explicit letters (each operand's dims spelled out, output after ``->``).

    The gradient of operand ``i`` is again an einsum: of the other operands and the output gradient,
    producing operand ``i``'s letters. Three details make that exact: a letter repeated inside operand
    ``i`` (a diagonal) gets a fresh letter tied to the first by an identity matrix, which places the
    gradient on the diagonal; letters that only operand ``i`` has (summed away in forward) come back by
    broadcasting; and dims where operand ``i`` had size 1 against a larger size elsewhere are summed.
    """

    def forward(self, *tensors, subs, out):
        self.save_for_backward(*tensors)
        self.subs = subs
        self.out = out
        return tensors[0]._be.einsum(",".join(subs) + "->" + out, *(t._data for t in tensors))

    def backward(self, g):
        tensors = self.saved_tensors
        need = self.needs_input_grad
        return tuple(self._grad(i, g, tensors) if need[i] else None for i in range(len(tensors)))

    def _grad(self, i, g, tensors):
        subs, out = self.subs, self.out
        x = tensors[i]
        shape = x._data.shape
        used = set("".join(subs)) | set(out)
        fresh = (c for c in _LETTERS if c not in used)
        target = []
        eyes = []
        for c, n in zip(subs[i], shape):
            if c in target:
                f = next(fresh)
                eyes.append((c, f, n))
                target.append(f)
            else:
                target.append(c)
        avail = set(out)
        for j, s in enumerate(subs):
            if j != i:
                avail.update(s)
        for c, f, _ in eyes:
            avail.add(c)
            avail.add(f)
        keep = "".join(c for c in target if c in avail)
        op_subs = [s for j, s in enumerate(subs) if j != i] + [out]
        op_tensors = [t for j, t in enumerate(tensors) if j != i] + [g]
        be = g._be
        for c, f, n in eyes:
            op_subs.append(c + f)
            op_tensors.append(Tensor._make(be.eye(n, n, g._data.dtype), be))
        r = _einsum_apply(op_subs, keep, op_tensors)
        # dims where operand i broadcast (size 1) collect the gradient of every position they fed
        kept_sizes = [shape[p] for p, c in enumerate(target) if c in avail]
        red = tuple(d for d, (rn, kn) in enumerate(zip(r._data.shape, kept_sizes)) if kn == 1 and rn != 1)
        if red:
            r = r.sum(red, keepdim=True)
        if len(keep) != len(target):
            rs = r._data.shape
            r = r.reshape(tuple(rs[keep.index(c)] if c in avail else 1 for c in target))
        if r._data.shape != shape:
            r = r.expand(shape)
        return r


def _einsum_apply(subs, out, tensors):
    return EinsumBackward0.apply(*tensors, subs=tuple(subs), out=out)


def _parse_term(equation, start, end, what):
    """Tokens (letters and ``...``) of ``equation[start:end]``; ``what`` names it in errors."""
    toks = []
    ell = False
    i = start
    while i < end:
        c = equation[i]
        if c == " ":
            i += 1
            continue
        if c == ".":
            if ell:
                if what == "output":
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
                raise RuntimeError(f"einsum(): found '.' for {what} for which an ellipsis was already found")
            if i + 3 <= end and equation[i:i + 3] == "...":
                toks.append(_ELL)
                ell = True
                i += 3
                continue
            if what == "output":
                raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
            raise RuntimeError(f"einsum(): found '.' for {what} that is not part of any ellipsis")
        if c.isascii() and c.isalpha():
            toks.append(c)
            i += 1
            continue
        raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, subscripts must "
                           "be in [a-zA-Z]")
    return toks


@functools.lru_cache(maxsize=512)
def _parse_equation(equation, shapes):
    """Per-operand letter strings (ellipsis spelled out with fresh letters) and the output letters for
    operands of these shapes, after PyTorch's checks. Cached: a model calls the same einsum each step."""
    arrow = equation.find("->")
    lhs_end = arrow if arrow >= 0 else len(equation)
    terms = []
    start = 0
    for i in range(lhs_end + 1):
        if i == lhs_end or equation[i] == ",":
            terms.append(_parse_term(equation, start, i, f"operand {len(terms)}"))
            start = i + 1
    out_toks = _parse_term(equation, arrow + 2, len(equation), "output") if arrow >= 0 else None
    if len(shapes) > len(terms):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(shapes) < len(terms):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")

    letters = set(c for toks in terms for c in toks if c != _ELL)
    ell_dims = 0
    for i, (toks, shape) in enumerate(zip(terms, shapes)):
        nl = len(toks) - (1 if _ELL in toks else 0)
        nd = len(shape)
        if _ELL in toks:
            if nl > nd:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) is more than the number "
                                   f"of dimensions ({nd}) for operand {i}")
            ell_dims = max(ell_dims, nd - nl)
        elif nl != nd:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) does not match the number "
                               f"of dimensions ({nd}) for operand {i} and no ellipsis was given")
    free = [c for c in _LETTERS if c not in letters]
    if ell_dims > len(free):
        raise RuntimeError("einsum(): too many dimensions: at most 52 distinct subscripts are supported")
    ell_letters = "".join(free[:ell_dims])

    subs = []
    sizes = {}
    for i, (toks, shape) in enumerate(zip(terms, shapes)):
        n_ell = len(shape) - (len(toks) - 1) if _ELL in toks else 0
        s = []
        for tok in toks:
            if tok == _ELL:
                s.extend(ell_letters[ell_dims - n_ell:])
            else:
                s.append(tok)
        own = {}
        for d, (c, n) in enumerate(zip(s, shape)):
            if c in own:
                if own[c] != n:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't "
                                       f"match, {n} != {own[c]}")
                continue
            own[c] = n
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = n
            elif n != 1 and n != seen:
                if c in ell_letters:
                    k = d - s.index(ell_letters[ell_dims - n_ell]) if n_ell else d
                    raise RuntimeError(f"einsum(): dimension {k} covered by ellipsis in operand {i} has size {n} which "
                                       f"does not broadcast with previously seen ellipsis with size {seen} for the "
                                       "respective dimension")
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which does not broadcast "
                                   f"with previously seen size {seen}")
        subs.append("".join(s))

    if out_toks is None:
        counts = {}
        for s in subs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = ell_letters + "".join(sorted(c for c in letters if counts[c] == 1))
    else:
        out = []
        for c in out_toks:
            if c == _ELL:
                out.extend(ell_letters)
                continue
            if c in out:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if c not in letters:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
            out.append(c)
        out = "".join(out)
    return subs, out


def _sublist_equation(args):
    """The equation of einsum's sublist form ``einsum(op1, [0, 1], op2, [1, 2], [0, 2])``."""
    def term(sub):
        parts = []
        for s in sub:
            if s is Ellipsis:
                parts.append("...")
                continue
            if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < 52:
                raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
            parts.append(_LETTERS[s])
        return "".join(parts)

    operands = list(args[0::2])
    subl = list(args[1::2])
    out = None
    if len(operands) > len(subl):
        out = operands.pop()
        out = "->" + term(out)
    return ",".join(term(s) for s in subl) + (out or ""), operands


@autocast_op("einsum")
def einsum(*args):
    """Sum of products over the subscripts of an equation, e.g. ``einsum('bij,bjk->bik', a, b)``.

    Operands may also be passed as one list, or in the sublist form ``einsum(a, [0, 1], b, [1, 2])``.
    ``...`` stands for broadcast batch dims; size-1 dims broadcast against any size.
    """
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if isinstance(args[0], str):
        equation = args[0]
        operands = args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    elif isinstance(args[0], Tensor):
        equation, operands = _sublist_equation(args)
    else:
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not {type(args[0]).__name__}")
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(t).__name__}")
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    subs, out = _parse_equation(equation, tuple(t._data.shape for t in operands))
    first = operands[0]
    for t in operands[1:]:
        if t._data.dtype != first._data.dtype:
            raise RuntimeError(f"expected scalar type {first.dtype._scalar_name} but found {t.dtype._scalar_name}")
    check_same_device(*operands)
    if not first.dtype.is_floating_point:
        if len(operands) > 1:
            _not_for_bool("bmm", first)
        elif any(c not in out for c in subs[0]):
            # a sum over an integer or bool operand is an int64 sum, as for Tensor.sum
            operands = (first.to(_dtype.int64),)
    return _einsum_apply(subs, out, operands)


@autocast_op("tensordot")
def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` trailing dims of ``a`` with leading dims of ``b`` (an int), or the listed dims
    (``dims=([1, 2], [0, 1])``)."""
    check_tensor(a, "tensordot", "a", 1)
    check_tensor(b, "tensordot", "b", 2)
    check_out(out, "tensordot", a, b)
    if isinstance(dims, Tensor):
        if dims._data.size == 1:
            dims = int(dims.item())
        else:
            dims = dims.tolist()
    if isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a._data.ndim or dims > b._data.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a = list(range(-dims, 0))
        dims_b = list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    else:
        raise RuntimeError("tensordot expects dims to be an int or a pair of dimension lists")
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    wa = wrap_dims(dims_a, a._data.ndim)
    wb = wrap_dims(dims_b, b._data.ndim)
    sa, sb = a._data.shape, b._data.shape
    for da, db, ua, ub in zip(wa, wb, dims_a, dims_b):
        if sa[da] != sb[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa[da]} in dim {ua} and "
                               f"second has size {sb[db]} in dim {ub}")
    check_same_device(a, b)
    letters = iter(_LETTERS)
    la = [next(letters) for _ in range(a._data.ndim)]
    lb = [next(letters) for _ in range(b._data.ndim)]
    for da, db in zip(wa, wb):
        lb[db] = la[da]
    res = [c for d, c in enumerate(la) if d not in wa] + [c for d, c in enumerate(lb) if d not in wb]
    if a._data.dtype.kind == "b":
        _not_for_bool("bmm", a)
    r = _einsum_apply(["".join(la), "".join(lb)], "".join(res), (a, b))
    return write_out(r, out, "tensordot", exact_dtype=True)


METHODS = {
    "matmul": matmul, "__matmul__": _matmul_method, "__rmatmul__": _rmatmul_method,
    "mm": mm, "bmm": bmm, "mv": mv, "dot": dot, "vdot": vdot, "inner": inner, "outer": outer, "ger": ger,
    "addmm": addmm, "addmm_": addmm_, "baddbmm": baddbmm, "baddbmm_": baddbmm_,
}
