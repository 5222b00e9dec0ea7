"""Distances between rows: ``cdist`` (every pair of rows of two batches of matrices),
``pairwise_distance`` (row i of one against row i of the other) and ``cosine_similarity``.

Both are compositions of differentiable ops, so their gradients (and gradients of gradients) come from the
ops they are made of. The p-norm of differences goes through ``norm``, whose gradient is 0 where a difference
is 0 (PyTorch's subgradient for cdist); the Euclidean distance through matrix products (PyTorch's
``compute_mode``) guards its square root the same way.
"""
import builtins

from ._util import broadcast_shapes, check_tensor, wrap_dim
from .elementwise import where
from .shape import cat
from ._autocast import autocast_op

__all__ = ["cdist", "pairwise_distance", "cosine_similarity"]

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
_MM_FROM = 25  # PyTorch's threshold: more rows than this on either side takes the matrix-product path


def _euclid_by_matmul(x1, x2):
    """sqrt(|a|^2 - 2 a.b + |b|^2) for every pair of rows, as one matrix product of padded operands (as PyTorch
    does); rounding can push the square slightly below 0, so it is clamped, and its root is 0 with a zero
    gradient there."""
    n1 = x1.pow(2).sum(-1, keepdim=True)
    n2 = x2.pow(2).sum(-1, keepdim=True)
    a = cat([x1 * -2, n1, n1.new_ones(n1.shape)], -1)
    b = cat([x2, n2.new_ones(n2.shape), n2], -1)
    sq = a.matmul(b.transpose(-2, -1))
    pos = sq > 0
    return where(pos, where(pos, sq, 1.0).sqrt(), 0.0)


@autocast_op("cdist")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between every row of ``x1`` (..., P, M) and every row of ``x2`` (..., R, M), as a
    (..., P, R) tensor; batch dims broadcast.

    >>> mt.cdist(mt.tensor([[0.0, 0.0]]), mt.tensor([[3.0, 4.0], [0.0, 1.0]]))
    tensor([[5., 1.]])
    """
    check_tensor(x1, "cdist", "x1", 1)
    check_tensor(x2, "cdist", "x2", 2)
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {x.dtype._scalar_name}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    p = float(p)
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    rows = builtins.max(x1.shape[-2], x2.shape[-2])
    if p == 2 and (compute_mode == "use_mm_for_euclid_dist"
                   or (compute_mode == _MODES[0] and rows > _MM_FROM)):
        return _euclid_by_matmul(x1, x2)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        # the count of differing coordinates: piecewise constant, a zero gradient (PyTorch's)
        return where(diff != 0, 1.0, diff * 0).sum(-1)
    return diff.norm(p, dim=-1)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of ``x1 - x2 + eps`` over the last dim (rows compared one to one, broadcasting)."""
    check_tensor(x1, "pairwise_distance", "x1", 1)
    check_tensor(x2, "pairwise_distance", "x2", 2)
    nd = builtins.max(x1.dim(), x2.dim())
    diff = x1 - x2 + eps
    if nd == 0:
        return diff.abs() if p != 0 else (diff != 0).to(diff.dtype)
    return diff.norm(p, dim=-1, keepdim=keepdim)


@autocast_op("cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` (broadcast) along ``dim``: each is divided by its 2-norm,
    clamped below by ``eps``, before the dot product (PyTorch's order, which keeps the result within [-1, 1]).

    >>> mt.cosine_similarity(mt.tensor([[1., 0.]]), mt.tensor([[1., 1.]]))
    tensor([0.7071])
    """
    check_tensor(x1, "cosine_similarity", "x1")
    check_tensor(x2, "cosine_similarity", "x2", 2)
    shape = broadcast_shapes(x1.shape, x2.shape)
    a, b = x1.expand(shape), x2.expand(shape)
    d = wrap_dim(dim, len(shape))
    na = a.norm(2, d, keepdim=True).clamp_min(eps)
    nb = b.norm(2, d, keepdim=True).clamp_min(eps)
    return ((a / na) * (b / nb)).sum(d)
