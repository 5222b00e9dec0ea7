"""Shape arithmetic every layer shares: dim wrapping and broadcasting, with PyTorch's errors.

Pure functions of tuples of ints, below ``Tensor`` so that the tensor, autograd and op layers all use
one definition.
"""
from collections.abc import Iterable, Sequence
from typing import SupportsIndex

__all__ = ["wrap_dim", "wrap_dims", "broadcast_shapes", "is_expandable_to"]


def wrap_dim(dim: SupportsIndex, ndim: int) -> int:
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


def wrap_dims(dims: int | Iterable[SupportsIndex], ndim: int) -> tuple[int, ...]:
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


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
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


def is_expandable_to(shape: Sequence[int], desired: Sequence[int]) -> bool:
    """Whether ``shape`` broadcasts to ``desired``."""
    if len(shape) > len(desired):
        return False
    for a, b in zip(reversed(shape), reversed(desired)):
        if a != b and a != 1:
            return False
    return True
