"""repr of tensors, in PyTorch's format.

The rules are PyTorch's so that printed output can be compared line for line: one number format per
tensor, chosen from its nonzero finite values (integer-valued floats print as ``1.``; scientific notation
when the magnitudes span more than 1000x, exceed 1e8 or go below 1e-4), right-aligned to a common width,
wrapped at ``linewidth``, and summarized with ``...`` (``edgeitems`` per side) above ``threshold``
elements. Suffixes name what is not implied: a non-default device or dtype, ``grad_fn`` or
``requires_grad``, and the size of empty tensors.

Only the elements that are printed leave the device: a summarized tensor is cut to its corner blocks
before the copy to the host.
"""
import contextlib
import math

import numpy as np

from . import _dtype
from ._device import get_default_device
from .backends.cuda.device import current_device as _current_cuda_device
from .tensor import Tensor, register_methods

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]


class _PrintOptions:
    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Set how tensors print (as ``torch.set_printoptions``).

    ``profile`` ('default', 'short' or 'full') resets the four sizes first; the other arguments then
    override it. ``sci_mode`` True / False forces or forbids scientific notation; None (also what a call
    without it sets) lets each tensor choose.
    """
    # an unknown profile name changes nothing, as in PyTorch
    for k, v in _PROFILES.get(profile, {}).items():
        setattr(PRINT_OPTS, k, v)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current print options, as keyword arguments for :func:`set_printoptions`."""
    return {k: getattr(PRINT_OPTS, k) for k in _PrintOptions.__slots__}


@contextlib.contextmanager
def printoptions(**kwargs):
    """Change the print options inside a ``with`` block only."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# ---------------------------------------------------------------------- number formatting

class _Formatter:
    """One format for every element of a tensor, with the width of its widest element."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if flat.size == 0:
            return
        if not floating:
            # the longest decimal of a set of integers is that of its largest or its most negative member
            lo, hi = flat.min().item(), flat.max().item()
            self.max_width = max(len(str(lo)), len(str(hi)))
            return
        vals = flat.astype(np.float64, copy=False)
        nz = vals[np.isfinite(vals) & (vals != 0)]
        if nz.size == 0:
            return
        mags = np.abs(nz)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool((nz == np.ceil(nz)).all())
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = bool(PRINT_OPTS.sci_mode)
        # printed length grows with magnitude (and the sign), so these values bound every width
        cands = {nz.min().item(), nz.max().item(), nz[mags.argmin()].item(), nz[mags.argmax()].item()}
        p = PRINT_OPTS.precision
        if self.sci_mode:
            w = max(len(f"{v:.{p}e}") for v in cands)
        elif self.int_mode:
            w = max(len(f"{v:.0f}") + 1 for v in cands)
        else:
            w = max(len(f"{v:.{p}f}") for v in cands)
        self.max_width = max(self.max_width, w)

    def format(self, value):
        if self.floating:
            if self.sci_mode:
                s = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                s = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    s += "."
            else:
                s = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            s = str(value)
        return " " * (self.max_width - len(s)) + s


# ---------------------------------------------------------------------- layout

def _vector_str(vals, cut, summarize, indent, fmt):
    edge = PRINT_OPTS.edgeitems
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / (fmt.max_width + 2)))
    if summarize and not edge:
        data = ["..."]
    elif cut:
        data = [fmt.format(v) for v in vals[:edge]] + [" ..."] + [fmt.format(v) for v in vals[edge:]]
    else:
        data = [fmt.format(v) for v in vals]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(x, cuts, summarize, indent, fmt):
    """``x`` is a nested list of the printed elements; ``cuts[d]`` tells that dim d was summarized (its
    first half are the leading elements, its second half the trailing ones)."""
    ndim = len(cuts)
    if ndim == 0:
        return fmt.format(x)
    if ndim == 1:
        return _vector_str(x, cuts[0], summarize, indent, fmt)
    rest = cuts[1:]
    if cuts[0]:
        edge = PRINT_OPTS.edgeitems
        slices = ([_nested_str(r, rest, summarize, indent + 1, fmt) for r in x[:edge]] + ["..."]
                  + [_nested_str(r, rest, summarize, indent + 1, fmt) for r in x[edge:]])
    else:
        slices = [_nested_str(r, rest, summarize, indent + 1, fmt) for r in x]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _corner_blocks(be, arr, cuts, edge):
    """The leading and trailing ``edge`` entries of every summarized dim, as one host array."""
    def fetch(a, d):
        if d == a.ndim:
            return be.to_numpy(a)
        if not cuts[d]:
            return fetch(a, d + 1)
        n = a.shape[d]
        lead = (slice(None),) * d
        head = fetch(be.getitem(a, lead + (slice(0, edge),)), d + 1)
        tail = fetch(be.getitem(a, lead + (slice(n - edge, n),)), d + 1)
        return np.concatenate([head, tail], axis=d)
    return fetch(arr, 0)


def _host_float(arr):
    # float16 / bfloat16 print through float32, as in PyTorch
    if arr.dtype.kind in "fV" and arr.dtype.itemsize == 2:
        return arr.astype(np.float32)
    return arr


def _tensor_str(t, indent):
    arr = t._data
    be = t._be
    summarize = arr.size > PRINT_OPTS.threshold
    edge = PRINT_OPTS.edgeitems
    if summarize and not edge and arr.ndim:
        return "[...]"
    cuts = tuple(summarize and n > 2 * edge for n in arr.shape)
    host = _host_float(_corner_blocks(be, arr, cuts, edge) if any(cuts) else be.to_numpy(arr))
    floating = t.dtype.is_floating_point
    fmt = _Formatter(host, floating)
    return _nested_str(host.tolist(), cuts, summarize, indent, fmt)


def _add_suffixes(body, suffixes, indent, force_newline=False):
    """``body`` closed with its suffixes, wrapped at the line width (``force_newline``: the first one on a line of
    its own, as sparse reprs have it)."""
    parts = [body]
    last_line_len = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if force_newline or last_line_len + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
            force_newline = False
        else:
            parts.append(", " + s)
            last_line_len += len(s) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t, tensor_contents=None):
    """``repr(t)``: ``tensor([...], <suffixes>)``; ``tensor_contents`` replaces the element listing."""
    prefix = "tensor(" if type(t) is Tensor or t._is_param else f"{type(t).__name__}("
    indent = len(prefix)
    suffixes = device_suffixes(t)
    dt = t.dtype
    default = _dtype.get_default_dtype()
    if t._data.size == 0:
        if t._data.ndim != 1:
            suffixes.append(f"size={tuple(t._data.shape)}")
        if dt is not default:
            suffixes.append(f"dtype={dt!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t._data.shape)}")
        if dt is not default and dt is not _dtype.int64 and dt is not _dtype.bool:
            suffixes.append(f"dtype={dt!r}")
        body = None if tensor_contents is not None else _tensor_str(t, indent)
    if tensor_contents is not None:
        body = tensor_contents
    return _add_suffixes(prefix + body, suffixes + autograd_suffixes(t), indent)


def device_suffixes(t):
    """``["device='cuda:1'"]`` when the device is not the default one, else ``[]``."""
    dev = t.device
    if dev.type != get_default_device().type:
        return [f"device='{dev}'"]
    if dev.type == "cuda" and _current_cuda_device() != dev.index:
        return [f"device='{dev}'"]
    return []


def autograd_suffixes(t):
    """``["grad_fn=<...>"]``, ``["requires_grad=True"]`` or ``[]``."""
    try:
        fn = t.grad_fn
        name = fn.name() if fn is not None else None
    except RuntimeError:
        # rebuilding a view's history can fail (a no-grad view modified in place); still print it
        name = "Invalid"
    if name is not None:
        return [f"grad_fn=<{name}>"]
    return ["requires_grad=True"] if t.requires_grad else []


def _tensor_repr_method(self, *, tensor_contents=None):
    return tensor_repr(self, tensor_contents=tensor_contents)


register_methods({"__repr__": _tensor_repr_method})
