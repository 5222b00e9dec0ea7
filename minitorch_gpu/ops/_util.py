"""Helpers shared by the op modules: dim wrapping, broadcasting, scalars, gradient reduction."""
from .. import _dtype
from ..autograd.grad_mode import _state

__all__ = ["wrap_dim", "wrap_dims", "sum_to", "is_expandable_to", "broadcast_shapes", "to_tensor_like",
           "scalar_for", "is_tensor", "METHODS_ATTR"]

METHODS_ATTR = "METHODS"


def is_tensor(x):
    from ..tensor import Tensor
    return isinstance(x, Tensor)


def wrap_dim(dim, ndim):
    """A non-negative dim for ``ndim`` dims; IndexError naming the valid range (0-d tensors accept -1, 0)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        if hasattr(dim, "__index__") and not isinstance(dim, bool):
            dim = dim.__index__()
        else:
            raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    n = ndim if ndim > 0 else 1
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims, ndim):
    """Normalise an int / tuple / list of dims; a repeated dim is a RuntimeError, as in PyTorch."""
    if isinstance(dims, int):
        return (wrap_dim(dims, ndim),)
    out = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        seen = set()
        for d in out:
            if d in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            seen.add(d)
    return out


def broadcast_shapes(*shapes):
    """The broadcast of shapes; RuntimeError naming the mismatching sizes and both shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, n in enumerate(s):
            cur = out[off + i]
            if cur == 1:
                out[off + i] = n
            elif n != 1 and n != cur:
                raise RuntimeError(
                    f"The size of tensor a ({cur}) must match the size of tensor b ({n}) at non-singleton dimension "
                    f"{off + i}: shapes {[list(x) for x in shapes]} cannot be broadcast together")
    return tuple(out)


def is_expandable_to(shape, desired):
    """Whether ``shape`` broadcasts to ``desired``."""
    if len(shape) > len(desired):
        return False
    for a, b in zip(reversed(shape), reversed(desired)):
        if a != b and a != 1:
            return False
    return True


def sum_to(grad, shape):
    """Reduce a broadcast gradient back to ``shape`` (the backward of broadcasting)."""
    shape = tuple(shape)
    gshape = grad._data.shape
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    elif grad._data.shape != shape:
        grad = grad.reshape(shape)
    return grad


def scalar_for(value, dtype):
    """A Python scalar converted so that the backend computes in ``dtype`` (ints wrap like PyTorch's)."""
    import builtins
    if dtype.is_floating_point:
        return builtins.float(value)
    if dtype is _dtype.bool:
        return builtins.bool(value)
    v = builtins.int(value)
    info_bits = dtype.itemsize * 8
    if dtype is _dtype.uint8:
        return v % 256
    lo, hi = -(1 << (info_bits - 1)), (1 << (info_bits - 1)) - 1
    if v < lo or v > hi:
        v = (v - lo) % (1 << info_bits) + lo
    return v


def to_tensor_like(value, ref, dtype=None):
    """A Python scalar (or array-like) as a tensor on ``ref``'s device, in ``dtype`` (default: its own)."""
    from ..tensor import Tensor
    if isinstance(value, Tensor):
        return value
    be = ref._be
    if dtype is None:
        dtype = _dtype.result_type(value)
    return Tensor._make(be.asarray(value, be.np_dtype(dtype)), be)


def grad_enabled():
    return _state.grad
