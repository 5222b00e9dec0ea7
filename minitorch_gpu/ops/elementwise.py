"""Elementwise ops: arithmetic, comparisons, logical ops, unary math, activations, where/lerp/clamp.

Each differentiable op is an ``Op`` subclass named like PyTorch's node (``AddBackward0``) holding its
forward (arrays through the backend) next to its backward (Tensor ops, so it can be differentiated
again), and a function that prepares operands (scalars, type promotion) and applies it.
"""
from .. import _dtype
from ..autograd.function import Op
from ._inplace import apply_inplace
from ._util import scalar_for, sum_to

__all__ = ["add", "mul"]


def _operands(a, b):
    """Backend arrays (or Python scalars) for a binary op, cast to PyTorch's result dtype."""
    from ..tensor import Tensor
    a_is_t = isinstance(a, Tensor)
    b_is_t = isinstance(b, Tensor)
    if a_is_t and b_is_t:
        ad, bd = a._data, b._data
        if ad.dtype == bd.dtype:
            return ad, bd, a
        if a._be is not b._be:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{a.device} and {b.device}!")
        dt = _dtype.result_type(a, b)
        npd = a._be.np_dtype(dt)
        return a._be.astype(ad, npd), b._be.astype(bd, npd), a
    ref = a if a_is_t else b
    other = b if a_is_t else a
    if not a_is_t and not b_is_t:
        raise TypeError("expected at least one tensor operand")
    dt = _dtype.result_type(ref, other)
    data = ref._be.astype(ref._data, ref._be.np_dtype(dt))
    s = scalar_for(other, dt)
    return (data, s, ref) if a_is_t else (s, data, ref)


class AddBackward0(Op):
    def forward(self, a, b, alpha=1):
        self.shapes = (a._data.shape, b._data.shape)
        self.alpha = alpha
        ad, bd, ref = _operands(a, b)
        be = ref._be
        if alpha != 1:
            bd = be.binary("mul", bd, scalar_for(alpha, _dtype.from_numpy_dtype(bd.dtype)))
        return be.binary("add", ad, bd)

    def backward(self, g):
        na, nb = self.needs_input_grad
        ga = sum_to(g, self.shapes[0]) if na else None
        gb = None
        if nb:
            gb = sum_to(g if self.alpha == 1 else g * self.alpha, self.shapes[1])
        return ga, gb


class MulBackward0(Op):
    def forward(self, a, b):
        self.save_for_backward(a, b)
        ad, bd, ref = _operands(a, b)
        return ref._be.binary("mul", ad, bd)

    def backward(self, g):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        return (sum_to(g * b, a.shape) if na else None,
                sum_to(g * a, b.shape) if nb else None)


def _as_tensor_pair(a, b):
    """Scalars become 0-d tensors so an Op sees only tensors (their dtype stays 'weak' via result_type)."""
    from ..tensor import Tensor
    if not isinstance(b, Tensor):
        b = _scalar_tensor(b, a)
    if not isinstance(a, Tensor):
        a = _scalar_tensor(a, b)
    return a, b


def _scalar_tensor(value, ref):
    """A 0-d tensor for a Python scalar that keeps PyTorch's 'weak' scalar typing in promotion."""
    from ..tensor import Tensor
    if isinstance(value, Tensor):
        return value
    dt = _dtype.result_type(ref, value)
    t = Tensor._make(ref._be.asarray(scalar_for(value, dt), ref._be.np_dtype(dt)), ref._be)
    return t


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, with broadcasting and type promotion."""
    a, b = _as_tensor_pair(input, other)
    r = AddBackward0.apply(a, b, alpha=alpha)
    return _maybe_out(r, out)


def mul(input, other, *, out=None):
    a, b = _as_tensor_pair(input, other)
    return _maybe_out(MulBackward0.apply(a, b), out)


def _maybe_out(r, out):
    if out is None:
        return r
    from ._inplace import write_result
    if tuple(out.shape) != tuple(r.shape):
        out._data = out._be.empty(r._data.shape, out._data.dtype)
    write_result(out, r)
    return out


def add_(self, other, *, alpha=1):
    return apply_inplace(self, add, other, alpha=alpha, keeps_self=False)


def mul_(self, other):
    return apply_inplace(self, mul, other)


METHODS = {
    "add": add, "__add__": add, "__radd__": lambda self, other: add(other, self), "add_": add_,
    "__iadd__": add_,
    "mul": mul, "__mul__": mul, "__rmul__": lambda self, other: mul(other, self), "mul_": mul_,
    "__imul__": mul_,
}
