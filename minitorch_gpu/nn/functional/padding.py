"""``F.pad``: constant, reflect, replicate and circular padding.

Constant padding is one op whose backward is constant padding again with the pads negated (a crop), so
gradients of any order stay exact. The other modes are a gather: each padded dim reads the input at a
computed index per output position, applied as ``index_select`` one dim at a time, whose backward
(``index_add``) sums the gradient of every copy of an edge element back into it.
"""
import numpy as _np  # host-side only: the index tables of the non-constant modes

from ...autograd.node import Op
from ...ops.indexing import IndexSelectBackward0
from ...ops._util import check_tensor
from ...tensor import Tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


class ConstantPadNdBackward0(Op):
    """``input`` with ``value`` around it; negative pads crop."""

    def forward(self, x, pad, value):
        self.pad = pad
        be = x._be
        d = x._data
        shape = list(d.shape)
        src = [slice(None)] * d.ndim
        dst = [slice(None)] * d.ndim
        for i in range(len(pad) // 2):
            dim = d.ndim - 1 - i
            lo, hi = pad[2 * i], pad[2 * i + 1]
            n = shape[dim]
            # the part of the input that survives negative pads, and where it lands in the output
            src[dim] = slice(max(-lo, 0), n - max(-hi, 0))
            new = n + lo + hi
            dst[dim] = slice(max(lo, 0), new - max(hi, 0))
            shape[dim] = new
        out = be.full(tuple(shape), value, d.dtype)
        be.copy_into(out[tuple(dst)], d[tuple(src)])
        return out

    def backward(self, g):
        return (ConstantPadNdBackward0.apply(g, pad=tuple(-p for p in self.pad), value=0),)


def _check_pad_arg(pad):
    if isinstance(pad, (int, float, bool)) or not hasattr(pad, "__iter__"):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(pad).__name__}")
    out = []
    for i, p in enumerate(pad):
        if isinstance(p, Tensor):
            p = p.item()
        if isinstance(p, bool) or not isinstance(p, (int, _np.integer)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of "
                            f"type {type(p).__name__} at pos {i}")
        out.append(int(p))
    return tuple(out)


def _gather_index(mode, n, lo, hi):
    """Positions of the input read by each output position along one padded dim."""
    i = _np.arange(-lo, n + hi, dtype=_np.int64)
    if mode == "reflect":
        period = 2 * (n - 1)
        i = _np.abs(i) % period if period else _np.zeros_like(i)
        i = _np.where(i >= n, period - i, i)
    elif mode == "replicate":
        i = _np.clip(i, 0, n - 1)
    else:
        # PyTorch crops negative pads first and wraps around what is left
        start = max(-lo, 0)
        kept = n - start - max(-hi, 0)
        i = (_np.arange(-max(lo, 0), kept + max(hi, 0), dtype=_np.int64) % kept) + start
    return i


def _check_non_constant(input, mode, pad):
    shape = input._data.shape
    ndim = len(shape)
    k = len(pad) // 2
    if k not in (1, 2, 3) or ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {ndim}D input tensor.\n"
                                  "Supported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode in ("reflect", "replicate"):
        # the batch dim may be empty, the others may not
        if any(n == 0 for n in shape[ndim - k - 1:]):
            raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                               f"other non-zero dimensions for input, but got: {list(shape)}")
    for i in range(k):
        dim = ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = shape[dim]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                               f"dimension, but got: padding ({lo}, {hi}) at dimension {dim} of input {list(shape)}")
        if mode == "circular":
            if lo > n or hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if n + lo + hi <= 0 and n > 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        if n + lo + hi < 0:
            bad = list(shape)
            for j in range(k):
                bad[ndim - 1 - j] = shape[ndim - 1 - j] + pad[2 * j] + pad[2 * j + 1]
            raise RuntimeError(f"Trying to create tensor with negative dimension {n + lo + hi}: {bad}")


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims of ``input``: ``pad = (left, right, top, bottom, ...)`` starting
    from the last dim. ``mode`` is 'constant' (with ``value``, default 0), 'reflect', 'replicate' or
    'circular'; negative pads crop."""
    check_tensor(input, "pad", "input", 1)
    pad = _check_pad_arg(pad)
    if value is not None:
        if isinstance(value, Tensor):
            value = value.item()
        if not isinstance(value, (int, float, bool, _np.number)):
            raise TypeError(f"pad(): argument 'value' (position 4) must be float, not {type(value).__name__}")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    ndim = input._data.ndim
    if len(pad) // 2 > ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {ndim}")
    if mode == "constant":
        shape = input._data.shape
        for i in range(len(pad) // 2):
            n = shape[ndim - 1 - i]
            if n + min(pad[2 * i], 0) + min(pad[2 * i + 1], 0) < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        if not any(pad):
            return input.clone()
        v = 0 if value is None else value
        return ConstantPadNdBackward0.apply(input, pad=pad, value=v)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_non_constant(input, mode, pad)
    be = input._be
    out = input
    for i in range(len(pad) // 2):
        dim = ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo == 0 and hi == 0:
            continue
        n = out._data.shape[dim]
        if n == 0:
            continue
        idx = be.asarray(_gather_index(mode, n, lo, hi))
        out = IndexSelectBackward0.apply(out, dim=dim, index=idx)
    return out.clone() if out is input else out
