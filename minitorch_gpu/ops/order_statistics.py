"""Order statistics composed of sort, gather and the reductions: ``aminmax``, ``nanmedian``, ``quantile`` /
``nanquantile`` (every ``interpolation`` mode) and ``mode``.

Values are read from the input (or from its sorted values) with ``gather``, so their gradients are PyTorch's:
each value's gradient goes to the element it came from, and a quantile between two elements shares it by the
interpolation weight. The full reduction of ``nanmedian``, like PyTorch's, shares its gradient evenly among all
elements equal to the result.
"""
from .. import _dtype
from ..autograd.grad_mode import no_grad
from ..autograd.node import Op
from ..tensor import Tensor
from ._util import check_tensor, wrap_dim, write_out, write_outs
from .creation import arange
from .cumulative import cummax
from .elementwise import where
from .indexing import sort
from .reduction import _return_type, amax, amin, argmax
from .shape import cat

__all__ = ["aminmax", "nanmedian", "quantile", "nanquantile", "mode"]

_aminmax_result = _return_type("aminmax", ("min", "max"))
_nanmedian_result = _return_type("nanmedian", ("values", "indices"))
_mode_result = _return_type("mode", ("values", "indices"))
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """The minimum and maximum, over everything or along ``dim``, as a named tuple ``(min, max)``.

    >>> mt.aminmax(mt.tensor([3., 1., 2.]))
    minitorch_gpu.return_types.aminmax(
    min=tensor(1.),
    max=tensor(3.))
    """
    check_tensor(input, "aminmax", "input")
    dims = () if dim is None else dim
    if dim is not None and input.dim() > 0 and input.shape[wrap_dim(dim, input.dim())] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {wrap_dim(dim, input.dim())} to have non-zero size.")
    if dim is None and input.numel() == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    r = (amin(input, dims, keepdim), amax(input, dims, keepdim))
    return _aminmax_result(*write_outs(r, out, "aminmax", exact_dtype=True))


# ---------------------------------------------------------------------- nanmedian


class NanmedianBackward0(Op):
    """nanmedian of all elements; the gradient is shared evenly by the elements equal to it (by all the NaNs
    when every element is NaN), as PyTorch's is."""

    def forward(self, x):
        self.save_for_backward(x)
        with no_grad():
            flat = x.reshape(-1)
            if flat.numel() == 0:
                return x.new_full((), float("nan"))._data
            v, _ = _nanmedian_along(flat, 0)
            return v._data

    def backward(self, g):
        x = self.saved_tensors[0]
        v = self.saved_output
        hits = where(v.isnan(), x.isnan(), x == v).to(g.dtype)
        return hits * (g / hits.sum())

    save_output = True


def _nanmedian_along(x, dim):
    """(values, indices) of the lower median of the non-NaN entries along ``dim`` (NaN where all are NaN)."""
    s, idx = sort(x, dim, stable=True)  # NaN sorts last
    if x.dtype.is_floating_point:
        count = (~x.isnan()).sum(dim, keepdim=True)
    else:
        count = x.new_full([1 if i == dim else n for i, n in enumerate(x.shape)], x.shape[dim], dtype=_dtype.int64)
    k = ((count - 1) // 2).clamp_min(0)
    i = idx.gather(dim, k)
    return x.gather(dim, i).squeeze(dim), i.squeeze(dim)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """The lower median ignoring NaNs, of all elements or as (values, indices) along ``dim``; NaN only where
    every entry is NaN.

    >>> mt.nanmedian(mt.tensor([1., float('nan'), 3., 2.]))
    tensor(2.)
    """
    check_tensor(input, "nanmedian", "input")
    if dim is None:
        r = NanmedianBackward0.apply(input)
        return r if out is None else write_out(r, out, "nanmedian")
    x, d = _reduced_dim(input, dim, "nanmedian")
    with no_grad():
        _, i = _nanmedian_along(x, d)
    return _selected(_nanmedian_result, "nanmedian", input, x, d, i.unsqueeze(d), keepdim, out)


def _reduced_dim(input, dim, name):
    """(``input`` made at least 1-d, ``dim`` wrapped) for a reduction along ``dim`` that takes one of its
    elements; an empty ``dim`` raises PyTorch's IndexError."""
    x = input.reshape(1) if input.dim() == 0 else input
    d = wrap_dim(dim, input.dim())
    if x.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    return x, d


def _selected(result, name, input, x, d, i, keepdim, out):
    """The named tuple (values, indices) of the elements of ``x`` (from :func:`_reduced_dim`) at the indices ``i``
    (of size 1 along ``d``), shaped as PyTorch returns such a reduction; values read with ``gather``, so their
    gradient goes to the selected elements."""
    values = x.gather(d, i)
    if not keepdim or input.dim() == 0:
        values, i = values.squeeze(d), i.squeeze(d)
    if input.dim() == 0:
        values, i = values.reshape(()), i.reshape(())
    return result(*write_outs((values, i), out, name, exact_dtype=True))


# ---------------------------------------------------------------------- quantile


def _quantile(name, input, q, dim, keepdim, interpolation, out, ignore_nan):
    check_tensor(input, name, "input")
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    if isinstance(q, Tensor):
        if q.dim() > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qt = q.to(input.device)
    else:
        qt = input.new_full((), float(q))
    if not bool(((qt >= 0) & (qt <= 1)).all()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    # everything along one last dim: the whole tensor flattened, or ``dim`` moved last
    if dim is None:
        x = input.reshape(-1)
        out_shape = [1] * input.dim() if keepdim else []
    else:
        d = wrap_dim(dim, input.dim())
        x = input.unsqueeze(0) if input.dim() == 0 else input.movedim(d, -1)
        out_shape = list(input.shape)
        if input.dim() > 0:
            if keepdim:
                out_shape[d] = 1
            else:
                del out_shape[d]
    s, _ = sort(x, -1)  # NaN sorts last
    n = x.shape[-1]
    nan = s.isnan()
    if ignore_nan:
        last = (~nan).sum(-1, keepdim=True) - 1  # the last non-NaN entry: -1 where all are NaN
    else:
        last = s.new_full(s.shape[:-1] + (1,), n - 1, dtype=_dtype.int64)
    qv = qt.reshape(-1)  # (Q,)
    # ranks of shape (..., Q); as in PyTorch, a slice with a NaN (quantile) reads its last entry and one of only
    # NaNs (nanquantile) its first, both NaN, and the gradient goes there
    rank = qv * last.to(s.dtype)
    if ignore_nan:
        rank = where(last < 0, 0.0, rank)
    else:
        rank = where(nan.any(-1, keepdim=True), float(n - 1), rank)
    if interpolation == "lower":
        rank = rank.floor()
    elif interpolation == "higher":
        rank = rank.ceil()
    elif interpolation == "nearest":
        rank = rank.round()  # half to even, as PyTorch's
    lo = rank.floor().to(_dtype.int64)
    hi = rank.ceil().to(_dtype.int64)
    below = s.gather(-1, lo)
    if interpolation in ("lower", "higher", "nearest"):
        r = below
    else:
        above = s.gather(-1, hi)
        weight = 0.5 if interpolation == "midpoint" else rank - lo.to(s.dtype)
        r = below.lerp(above, weight)
    # (..., Q) -> (Q, out_shape...), or out_shape alone for a scalar q
    r = r.movedim(-1, 0).reshape([qv.numel()] + out_shape)
    if qt.dim() == 0:
        r = r.squeeze(0)
    return r if out is None else write_out(r, out, name)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The ``q``-th quantiles (a number or a 1-d tensor in [0, 1]) of all elements or along ``dim``; NaN where a
    slice holds a NaN.

    >>> mt.quantile(mt.tensor([1., 2., 3., 4.]), 0.5)
    tensor(2.5000)
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, out, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``quantile`` of the entries that are not NaN; NaN only where a slice holds nothing else.

    >>> mt.nanquantile(mt.tensor([1., float('nan'), 3.]), 0.5)
    tensor(2.)
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, out, True)


# ---------------------------------------------------------------------- mode


def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the last index where it
    occurs.

    >>> mt.mode(mt.tensor([3, 1, 3, 1, 2])).values
    tensor(1)
    """
    check_tensor(input, "mode", "input")
    x, d = _reduced_dim(input, dim, "mode")
    n = x.shape[d]
    with no_grad():
        # sorted stably, a run of equal values keeps the original order: its last entry holds the last index
        s, idx = sort(x, d, stable=True)
        shape = [1] * x.dim()
        shape[d] = n
        pos = arange(n, device=x.device).reshape(shape).expand(x.shape)
        if n > 1:
            # each position's run start: itself where a new value begins, then carried forward by a running max
            new_run = s.narrow(d, 1, n - 1) != s.narrow(d, 0, n - 1)
            starts = cat([pos.narrow(d, 0, 1), where(new_run, pos.narrow(d, 1, n - 1), 0)], d)
            run_start = cummax(starts, d).values
        else:
            run_start = pos
        run_length = pos - run_start + 1
        # argmax takes the first longest run: the smallest of the most frequent values
        end = argmax(run_length, d, keepdim=True)
        i = idx.gather(d, end)
    return _selected(_mode_result, "mode", input, x, d, i, keepdim, out)


METHODS = {"aminmax": aminmax, "nanmedian": nanmedian, "quantile": quantile, "nanquantile": nanquantile,
           "mode": mode}
