"""Shape ops: views (view, reshape, flatten, permute, transpose, squeeze, unsqueeze, expand, narrow,
select, unfold, diagonal, movedim, unbind, split, chunk, ...) and copying shape ops (cat, stack,
flip, roll, tril, triu, repeat, tile, repeat_interleave).

A view op's forward returns a view of the input array and goes through ``make_view`` so that a write
through the view is seen by the base and tracked by autograd. Every backward is written with Tensor
ops, and the backward of each view op (scattering a gradient into zeros) is itself an op whose
backward takes the view again, so gradients of gradients work.
"""
import builtins
import math
import warnings

from .. import _dtype
from ..autograd._inplace import apply_inplace, make_view
from ..autograd.grad_mode import _state
from ..autograd.node import Op, VersionCounter, bump_version, collect_edges
from ..tensor import Size, Tensor
from .._shapes import broadcast_shapes as _broadcast_shapes
from ._util import check_out, check_same_device, sum_to, wrap_dim, wrap_dims, write_out
from ._autocast import autocast_op

__all__ = [
    "reshape", "expand", "flatten", "unflatten", "ravel", "permute", "transpose", "swapaxes", "swapdims", "t",
    "adjoint", "squeeze", "unsqueeze", "narrow", "select", "movedim", "moveaxis", "diagonal", "unbind", "split",
    "chunk", "tensor_split", "hsplit", "vsplit", "dsplit", "broadcast_to", "broadcast_tensors", "broadcast_shapes",
    "diag", "diag_embed", "diagflat", "atleast_1d",
    "atleast_2d", "atleast_3d", "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
    "column_stack", "tril", "triu", "flip", "fliplr", "flipud", "roll", "rot90", "tile", "repeat_interleave",
    "as_strided", "diff", "kron", "cartesian_prod", "pixel_shuffle", "pixel_unshuffle",
    "meshgrid",
]


# ---------------------------------------------------------------------- argument helpers

def _int(v, what="size"):
    if isinstance(v, builtins.bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{what} must be an int, but got {type(v).__name__}")
    return v.__index__()


def _int_seq(args, name):
    """A tuple of ints from varargs ``(a, b, ...)`` or a single sequence ``((a, b, ...),)``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    return tuple(_int(a, name) for a in args)


def _infer_shape(shape, numel):
    """``shape`` with its -1 (if any) resolved for ``numel`` elements; RuntimeError when it does not fit."""
    known = 1
    neg = -1
    for i, s in enumerate(shape):
        if s.__class__ is not int and (not isinstance(s, int) or isinstance(s, builtins.bool)):
            raise TypeError(f"shape must be a sequence of ints, got {list(shape)}")
        if s >= 0:
            known *= s
        elif s == -1:
            if neg >= 0:
                raise RuntimeError("only one dimension can be inferred")
            neg = i
        else:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if neg >= 0:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = list(shape)
        shape[neg] = numel // known
        return tuple(shape)
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    for s in shape:
        if s.__class__ is not int:
            return tuple(s.__index__() if hasattr(s, "__index__") and not isinstance(s, builtins.bool) else s
                         for s in shape)
    return tuple(shape)


def _zeros(shape, like):
    """A constant zero tensor of ``shape`` with ``like``'s dtype and device (no history)."""
    return Tensor._make(like._be.zeros(tuple(shape), like._data.dtype), like._be)


def _cast_grad(g, np_dtype):
    """A gradient in its input's dtype (inputs of a promoting op get gradients of their own type)."""
    if g._data.dtype == np_dtype:
        return g
    return g.to(_dtype.from_numpy_dtype(np_dtype))


class _Given:
    """Stands in for a view op in ``make_view`` when the view tensor already exists (ops with several
    outputs build them together), so the view metadata is recorded the one usual way."""

    @staticmethod
    def apply(x, tensor):
        return tensor


def _multi_view(op_cls, x, replays, name, **params):
    """Apply an op whose outputs are several views of ``x`` with one backward node (unbind, split):
    the node's ``forward`` returns a list of arrays, its ``backward`` gets one gradient per output
    (None for outputs that received none)."""
    node = op_cls.__new__(op_cls)
    arrays = node.forward(x, **params)
    be = x._be
    outs = [Tensor._make(a, be) for a in arrays]
    if _state.grad and x._data.dtype.kind in "fV" and collect_edges((x,)) is not None:
        node._connect((x,))
        node._n_outputs = len(outs)
        for i, o in enumerate(outs):
            o._grad_fn = node
            o._output_nr = i
            o._requires_grad = True
            # PyTorch forbids in-place writes through these views while recording (its error names
            # the op, e.g. "Output 0 of Split is a view ..."); kept for the in-place machinery to check
            o.__dict__["_multi_output_op"] = name
    return tuple(make_view(_Given, x, replay, tensor=o) for o, replay in zip(outs, replays))


# ---------------------------------------------------------------------- view / reshape

class ViewBackward0(Op):
    def forward(self, x, shape, array=None):
        self.in_shape = x._data.shape
        # reshape passes the view it already made while finding out whether one exists
        v = x._be.reshape_view(x._data, shape) if array is None else array
        if v is None:
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                               "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
        return v

    def backward(self, g):
        return (g.reshape(self.in_shape),)


class UnsafeViewBackward0(Op):
    """The reshape of a fresh contiguous copy (what reshape does when the strides allow no view); the
    result is not a view of anything the user holds."""

    def forward(self, x, shape):
        self.in_shape = x._data.shape
        return x._be.reshape(x._data, shape)

    def backward(self, g):
        return (g.reshape(self.in_shape),)


def view(input, *shape, size=None):
    """A view with a new shape (one dim may be -1); RuntimeError when the strides allow no view."""
    if size is not None:
        shape = (size,)
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        return _view_dtype(input, shape[0])
    shape = _infer_shape(_shape_arg(shape), input._data.size)
    return make_view(ViewBackward0, input, lambda t: t.view(shape), shape=shape)


def _view_dtype(input, dtype):
    """``input``'s memory read as ``dtype``, sharing its data and version counter, outside autograd (as in
    PyTorch, the result never requires grad). A different element size scales the last dim, which must then be
    contiguous; PyTorch's checks and messages, in its order."""
    src, new = input.itemsize, dtype.itemsize
    if src != new:
        what = f"to view {input.dtype._scalar_name} as {dtype._scalar_name} (different element sizes)"
        if input.dim() == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        strides = input.stride()
        # reading wider elements needs whole groups of narrow ones; reading narrower ones only a contiguous last dim
        ratio = max(new // src, 1)
        if input.size(-1) % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {input.size(-1)}")
        if input.storage_offset() % ratio:
            raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got "
                               f"{input.storage_offset()}")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
        for i, st in enumerate(strides[:-1]):
            if st % ratio:
                raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, but got {st}")
    out = Tensor._make(input._be.dtype_view(input._data, dtype.np_dtype), input._be)
    out._vc = input._vc = input._vc or VersionCounter()
    out._inference = input._inference
    return out


def _reshape(input, shape):
    v = input._be.reshape_view(input._data, shape)
    if v is not None:
        return make_view(ViewBackward0, input, lambda t: t.view(shape), shape=shape, array=v)
    return UnsafeViewBackward0.apply(input.contiguous(), shape=shape)


def reshape(input, *shape, **kwargs):
    """Like ``view`` when the strides allow it, else a copy."""
    if kwargs:
        if set(kwargs) != {"shape"} or shape:
            raise TypeError(f"reshape() got unexpected keyword arguments {list(kwargs)}")
        shape = (kwargs["shape"],)
    return _reshape(input, _infer_shape(_shape_arg(shape), input._data.size))


def view_as(input, other):
    """``input.view(other.size())``."""
    return view(input, tuple(other._data.shape))


def reshape_as(input, other):
    """``input.reshape(other.size())``."""
    return _reshape(input, _infer_shape(tuple(other._data.shape), input._data.size))


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one (a view when the strides allow it)."""
    shape = input._data.shape
    nd = len(shape)
    if nd == 0:
        wrap_dim(start_dim, 0)
        wrap_dim(end_dim, 0)
        return _reshape(input, (1,))
    s = wrap_dim(start_dim, nd)
    e = wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    return _reshape(input, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


def unflatten(input, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one entry may be -1)."""
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    sizes = tuple(_int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = shape[d] if shape else 1
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten: only one dimension can be inferred")
    if -1 in sizes:
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        if known == 0 or n % known:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                               f"({n}) in the input tensor")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    prod = 1
    for s in sizes:
        prod *= s
    if prod != n:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                           f"({n}) in the input tensor")
    return view(input, shape[:d] + sizes + shape[d + 1:])


def ravel(input):
    """A 1-D tensor of the elements (a view of a contiguous input, else a copy)."""
    return view(input.contiguous(), input._data.size)


# ---------------------------------------------------------------------- expand / broadcast

class ExpandBackward0(Op):
    def forward(self, x, shape):
        d = x._data
        self.in_shape = d.shape
        be = x._be
        # PyTorch's strides: a broadcast dim gets 0, a new leading size-1 dim the stride a contiguous
        # tensor would have there, every other dim keeps its own
        in_strides = be.strides(d)
        lead = len(shape) - d.ndim
        strides = [0] * len(shape)
        for i in range(len(shape) - 1, -1, -1):
            if i >= lead:
                size, stride = d.shape[i - lead], in_strides[i - lead]
            else:
                size = 1
                stride = shape[i + 1] * strides[i + 1] if i + 1 < len(shape) else 0
            strides[i] = stride if size == shape[i] else 0
        return be.expand_view(d, shape, strides)

    def backward(self, g):
        return (sum_to(g, self.in_shape),)


def expand(input, *sizes, size=None):
    """A broadcast view (no copy); -1 keeps a dim's size. In-place writes through it are refused when
    it repeats elements."""
    if size is not None:
        sizes = (size,)
    elif not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = _shape_arg(sizes)
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand(minitorch_gpu.{input.dtype._tensor_name}{{{list(shape)}}}, size={list(sizes)}): "
                           f"the number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   "non-existing dimension")
            out.append(s)
        else:
            cur = shape[i - lead]
            if s == -1:
                out.append(cur)
            elif cur != 1 and s != cur:
                raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                                   f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                                   f"{list(shape)}")
            else:
                out.append(s)
    out = tuple(out)
    return make_view(ExpandBackward0, input, lambda t: t.expand(out), shape=out)


def expand_as(input, other):
    """``input.expand(other.size())``."""
    return expand(input, tuple(other._data.shape))


def broadcast_to(input, size):
    """``input.expand(size)``."""
    return expand(input, tuple(size))


def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    shape = _broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` (ints or sequences) broadcast to, as a ``Size``."""
    norm = []
    for s in shapes:
        t = (s,) if not isinstance(s, (tuple, list)) else tuple(s)
        t = tuple(_int(n) for n in t)
        if any(n < 0 for n in t):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        norm.append(t)
    out = [1] * max((len(t) for t in norm), default=0)
    for k, t in enumerate(norm):
        for i, n in enumerate(t):
            j = len(out) - len(t) + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {n} at {i - len(t)}! Mismatching "
                                   f"argument at index {k} had {t}; but expected shape should be broadcastable to "
                                   f"{list(out)}")
    return Size(out)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-d (or 0-d) tensors: with ``indexing="ij"`` output ``i`` has shape
    ``(len(t0), len(t1), ...)`` and varies along dim ``i``; ``"xy"`` swaps the first two dims (NumPy's default).
    The outputs are expanded views. Without ``indexing`` it is "ij", with PyTorch's warning.

        >>> ys, xs = meshgrid(arange(3), arange(4), indexing="ij")   # both (3, 4)
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    tensors = _check_tensor_list(tensors, "meshgrid")
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    # the dim each input varies along
    dims = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        dims[0], dims[1] = 1, 0
    shape = [0] * len(tensors)
    for t, d in zip(tensors, dims):
        shape[d] = t.numel()
    grids = []
    for t, d in zip(tensors, dims):
        view_shape = [1] * len(tensors)
        view_shape[d] = -1
        grids.append(t.reshape(view_shape).expand(shape))
    return tuple(grids)


def atleast_1d(*tensors):
    """Each tensor viewed with at least one dim (0-d becomes shape (1,))."""
    return _atleast(tensors, lambda t: reshape(t, 1) if t.ndim == 0 else t)


def atleast_2d(*tensors):
    """Each tensor viewed with at least two dims (new dims in front)."""
    def f(t):
        if t.ndim == 0:
            return reshape(t, 1, 1)
        return unsqueeze(t, 0) if t.ndim == 1 else t
    return _atleast(tensors, f)


def atleast_3d(*tensors):
    """Each tensor viewed with at least three dims: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    def f(t):
        if t.ndim == 0:
            return reshape(t, 1, 1, 1)
        if t.ndim == 1:
            return unsqueeze(unsqueeze(t, 0), 2)
        return unsqueeze(t, 2) if t.ndim == 2 else t
    return _atleast(tensors, f)


def _atleast(tensors, fn):
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return fn(tensors[0])
    if len(tensors) == 1:
        tensors = tensors[0]
    return tuple(fn(t) for t in tensors)


# ---------------------------------------------------------------------- permute / transpose

class PermuteBackward0(Op):
    def forward(self, x, dims):
        self.dims = dims
        return x._be.transpose_view(x._data, dims)

    def backward(self, g):
        inv = [0] * len(self.dims)
        for i, d in enumerate(self.dims):
            inv[d] = i
        return (g.permute(inv),)


class TransposeBackward0(Op):
    def forward(self, x, dim0, dim1):
        self.d = (dim0, dim1)
        return x._be.swapaxes_view(x._data, dim0, dim1)

    def backward(self, g):
        return (g.transpose(*self.d),)


class TransposeBackward1(TransposeBackward0):
    """transpose_ (in place)."""


class TBackward0(Op):
    def forward(self, x):
        d = x._data
        return x._be.swapaxes_view(d, 0, 1) if d.ndim == 2 else d.view()

    def backward(self, g):
        return (g.t(),)


class TBackward1(TBackward0):
    """t_ (in place)."""


def permute(input, *dims, **kwargs):
    """A view with the dims reordered: ``result.shape[i] == input.shape[dims[i]]``."""
    if kwargs:
        if set(kwargs) != {"dims"} or dims:
            raise TypeError(f"permute() got unexpected keyword arguments {list(kwargs)}")
        dims = (kwargs["dims"],)
    dims = _int_seq(dims, "dims")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError("permute(): number of dimensions in the tensor input does not match the length of the "
                           f"desired ordering of dimensions i.e. input.dim() = {nd} is not equal to len(dims) = "
                           f"{len(dims)}")
    dims = tuple(wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return make_view(PermuteBackward0, input, lambda t: t.permute(dims), dims=dims)


def transpose(input, dim0, dim1):
    """A view with dims ``dim0`` and ``dim1`` swapped."""
    nd = input._data.ndim
    a = wrap_dim(dim0, nd)
    b = wrap_dim(dim1, nd)
    return make_view(TransposeBackward0, input, lambda t: t.transpose(a, b), dim0=a, dim1=b)


def swapaxes(input, axis0, axis1):
    """Alias of ``transpose``."""
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    """Alias of ``transpose``."""
    return transpose(input, dim0, dim1)


def t(input):
    """Transpose of a matrix; 0-d and 1-d tensors are returned as views of themselves."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return make_view(TBackward0, input, lambda v: v.t())


def _T(self):
    nd = self._data.ndim
    if nd == 0:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
                      UserWarning, stacklevel=2)
    elif nd != 2:
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
                      "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
                      "matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
                      "tensor.", UserWarning, stacklevel=2)
    return permute(self, tuple(range(nd - 1, -1, -1)))


def _matrix_transpose(self, what, batches=True):
    nd = self._data.ndim
    if nd == 0:
        warnings.warn(f"{what} is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=3)
        return make_view(ViewBackward0, self, lambda v: v.view(()), shape=())
    if nd < 2 or (not batches and nd != 2):
        kind = "matrices or batches of matrices" if batches else "matrices (2-D tensors)"
        raise RuntimeError(f"{what} is only supported on {kind}. Got {nd}-D tensor.")
    return transpose(self, -2, -1)


def _mT(self):
    nd = self._data.ndim
    if nd < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {nd}-D tensor.")
    return transpose(self, -2, -1)


def adjoint(input):
    """The conjugate transpose of the last two dims (the transpose, for real tensors)."""
    return _matrix_transpose(input, "adjoint()")


def movedim(input, source, destination):
    """A view with dims ``source`` moved to positions ``destination`` (ints or sequences)."""
    nd = input._data.ndim
    raw_src = (source,) if not isinstance(source, (tuple, list)) else tuple(source)
    raw_dst = (destination,) if not isinstance(destination, (tuple, list)) else tuple(destination)
    if len(raw_src) != len(raw_dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(raw_src)} dims) should "
                           f"contain the same number of dims as destination ({list(raw_dst)} dims)")
    src = tuple(wrap_dim(d, nd) for d in raw_src)
    dst = tuple(wrap_dim(d, nd) for d in raw_dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(raw_src)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(raw_dst)})")
    if nd == 0:
        return permute(input, ())
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = tuple(next(rest) if o is None else o for o in order)
    return permute(input, order)


def moveaxis(input, source, destination):
    """Alias of ``movedim``."""
    return movedim(input, source, destination)


# ---------------------------------------------------------------------- squeeze / unsqueeze

class SqueezeBackward0(Op):
    """squeeze() of every size-1 dim."""

    def forward(self, x, axes):
        self.axes = axes
        return x._be.squeeze_view(x._data, axes)

    def backward(self, g):
        for a in self.axes:
            g = g.unsqueeze(a)
        return (g,)


class SqueezeBackward1(SqueezeBackward0):
    """squeeze(dim)."""


class SqueezeBackward2(SqueezeBackward0):
    """squeeze(dims)."""


class SqueezeBackward3(SqueezeBackward0):
    """squeeze_()."""


class SqueezeBackward4(SqueezeBackward0):
    """squeeze_(dim)."""


class SqueezeBackward5(SqueezeBackward0):
    """squeeze_(dims)."""


class UnsqueezeBackward0(Op):
    def forward(self, x, dim):
        self.dim = dim
        return x._be.unsqueeze_view(x._data, dim)

    def backward(self, g):
        return (g.squeeze(self.dim),)


class UnsqueezeBackward1(UnsqueezeBackward0):
    """unsqueeze_ (in place)."""


def _squeeze_args(input, dim):
    shape = input._data.shape
    nd = len(shape)
    if dim is None:
        return tuple(i for i, s in enumerate(shape) if s == 1), 0
    if isinstance(dim, (tuple, list)):
        dims = wrap_dims(tuple(dim), nd)
        return tuple(sorted(d for d in dims if nd and shape[d] == 1)), 2
    d = wrap_dim(dim, nd)
    return ((d,) if nd and shape[d] == 1 else ()), 1


_SQUEEZE = (SqueezeBackward0, SqueezeBackward1, SqueezeBackward2)


def squeeze(input, dim=None):
    """A view without size-1 dims (all of them, or those among ``dim``: an int or a tuple)."""
    axes, kind = _squeeze_args(input, dim)
    return make_view(_SQUEEZE[kind], input, lambda v: v.squeeze(dim), axes=axes)


def unsqueeze(input, dim):
    """A view with a size-1 dim inserted at ``dim``."""
    d = wrap_dim(dim, input._data.ndim + 1)
    return make_view(UnsqueezeBackward0, input, lambda v: v.unsqueeze(d), dim=d)


# ---------------------------------------------------------------------- narrow / select / unfold / diagonal

class SliceBackward0(Op):
    def forward(self, x, dim, start, stop, step=1):
        self.in_shape = x._data.shape
        self.args = (dim, start, stop, step)
        return x._be.slice_view(x._data, dim, start, stop, step)

    def backward(self, g):
        return (SliceBackwardBackward0.apply(g, shape=self.in_shape, args=self.args),)


class SliceBackwardBackward0(Op):
    def forward(self, g, shape, args):
        self.args = args
        be = g._be
        return be.embed(lambda a: be.slice_view(a, *args), shape, g._data)

    def backward(self, gg):
        return (_slice(gg, *self.args),)


def _slice(x, dim, start, stop, step=1):
    """A view of ``x[start:stop:step]`` along ``dim`` (non-negative, in-range bounds)."""
    return make_view(SliceBackward0, x, lambda v: _slice(v, dim, start, stop, step), dim=dim, start=start,
                     stop=stop, step=step)


def narrow(input, dim, start, length):
    """A view of ``length`` elements of dim ``dim`` from ``start`` (which may be negative)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, nd)
    size = input._data.shape[d]
    start = _int(start, "start")
    length = _int(length, "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _slice(input, d, start, start + length)


class SelectBackward0(Op):
    def forward(self, x, dim, index):
        self.in_shape = x._data.shape
        self.args = (dim, index)
        return x._be.select_view(x._data, dim, index)

    def backward(self, g):
        return (SelectBackwardBackward0.apply(g, shape=self.in_shape, args=self.args),)


class SelectBackwardBackward0(Op):
    def forward(self, g, shape, args):
        self.args = args
        be = g._be
        return be.embed(lambda a: be.select_view(a, *args), shape, g._data)

    def backward(self, gg):
        return (select(gg, *self.args),)


def select(input, dim, index):
    """The view at ``index`` of dim ``dim`` (that dim removed)."""
    shape = input._data.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    index = _int(index, "index")
    size = shape[d]
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(shape)} at dimension {d}")
    if index < 0:
        index += size
    return make_view(SelectBackward0, input, lambda v: select(v, d, index), dim=d, index=index)


class UnfoldBackward0(Op):
    def forward(self, x, dimension, size, step):
        self.in_shape = x._data.shape
        self.args = (dimension, size, step)
        be = x._be
        d = x._data
        if d.ndim == 0:
            return be.as_strided_view(d, (size,), (1,))
        st = be.strides(d)
        n = (d.shape[dimension] - size) // step + 1
        shape = d.shape[:dimension] + (n,) + d.shape[dimension + 1:] + (size,)
        strides = st[:dimension] + (st[dimension] * step,) + st[dimension + 1:] + (st[dimension],)
        return be.as_strided_view(d, shape, strides)

    def backward(self, g):
        return (UnfoldBackwardBackward0.apply(g, shape=self.in_shape, args=self.args),)


class UnfoldBackwardBackward0(Op):
    def forward(self, g, shape, args):
        self.args = args
        return g._be.unfold_backward(g._data, shape, *args)

    def backward(self, gg):
        return (gg.unfold(*self.args),)


def unfold(input, dimension, size, step):
    """A view of all windows of ``size`` elements along ``dimension``, ``step`` apart (as a new last dim)."""
    shape = input._data.shape
    d = wrap_dim(dimension, len(shape))
    size = _int(size)
    step = _int(step, "step")
    cur = shape[d] if shape else 1
    if size > cur:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {cur} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return make_view(UnfoldBackward0, input, lambda v: v.unfold(d, size, step), dimension=d, size=size, step=step)


def _diag_geometry(be, data, offset, d1, d2):
    shape = data.shape
    if offset >= 0:
        n = max(0, min(shape[d1], shape[d2] - offset))
        start_at = (d2, offset)
    else:
        n = max(0, min(shape[d1] + offset, shape[d2]))
        start_at = (d1, -offset)
    st = be.strides(data)
    keep = [i for i in range(len(shape)) if i not in (d1, d2)]
    out_shape = tuple(shape[i] for i in keep) + (n,)
    out_strides = tuple(st[i] for i in keep) + (st[d1] + st[d2],)
    start = None
    if n:
        start = [0] * len(shape)
        start[start_at[0]] = start_at[1]
    return out_shape, out_strides, start


class DiagonalBackward0(Op):
    def forward(self, x, offset, dim1, dim2):
        self.in_shape = x._data.shape
        self.args = (offset, dim1, dim2)
        be = x._be
        return be.as_strided_view(x._data, *_diag_geometry(be, x._data, offset, dim1, dim2))

    def backward(self, g):
        return (DiagonalBackwardBackward0.apply(g, shape=self.in_shape, args=self.args),)


class DiagonalBackwardBackward0(Op):
    def forward(self, g, shape, args):
        self.args = args
        be = g._be

        def region(a):
            return be.as_strided_view(a, *_diag_geometry(be, a, *args))
        return be.embed(region, shape, g._data)

    def backward(self, gg):
        return (diagonal(gg, *self.args),)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal ``offset`` of the matrices in dims ``dim1``, ``dim2`` (as a new last dim)."""
    nd = input._data.ndim
    a = wrap_dim(dim1, nd)
    b = wrap_dim(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    offset = _int(offset, "offset")
    return make_view(DiagonalBackward0, input, lambda v: diagonal(v, offset, a, b), offset=offset, dim1=a, dim2=b)


class DiagonalBackward0_copy(DiagonalBackward0):  # noqa: N801 - PyTorch's node name
    """diag of a matrix: the diagonal as a new contiguous tensor."""

    def forward(self, x, offset, dim1, dim2):
        return x._be.copy(DiagonalBackward0.forward(self, x, offset, dim1, dim2))


class DiagEmbedBackward0(Op):
    def forward(self, x, offset, dim1, dim2):
        self.args = (offset, dim1, dim2)
        be = x._be
        d = x._data
        n = d.shape[-1] + builtins.abs(offset)
        rest = iter(d.shape[:-1])
        shape = tuple(n if i in (dim1, dim2) else next(rest) for i in range(d.ndim + 1))

        def region(a):
            return be.as_strided_view(a, *_diag_geometry(be, a, offset, dim1, dim2))
        return be.embed(region, shape, d)

    def backward(self, g):
        return (diagonal(g, *self.args),)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonals ``offset`` in dims ``dim1``, ``dim2`` hold the last dim of ``input``
    (zeros elsewhere); the result has one more dim."""
    nd = input._data.ndim + 1
    a = wrap_dim(dim1, nd)
    b = wrap_dim(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if input._data.ndim == 0:
        input = reshape(input, 1)
    return DiagEmbedBackward0.apply(input, offset=_int(offset, "offset"), dim1=a, dim2=b)


def diag(input, diagonal=0):
    """A square matrix with the 1-D ``input`` on diagonal ``diagonal``, or the diagonal of a matrix
    (a copy)."""
    nd = input._data.ndim
    k = _int(diagonal, "diagonal")
    if nd == 1:
        return diag_embed(input, k, 0, 1)
    if nd == 2:
        return DiagonalBackward0_copy.apply(input, offset=k, dim1=0, dim2=1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


def diagflat(input, offset=0):
    """A square matrix with the flattened ``input`` on diagonal ``offset``."""
    return diag_embed(flatten(input), offset, 0, 1)


# ---------------------------------------------------------------------- unbind / split / chunk

class UnbindBackward0(Op):
    def forward(self, x, dim):
        self.dim = dim
        self.in_shape = x._data.shape
        be = x._be
        return [be.select_view(x._data, dim, i) for i in range(x._data.shape[dim])]

    def backward(self, *grads):
        ref = next(g for g in grads if g is not None)
        piece = self.in_shape[:self.dim] + self.in_shape[self.dim + 1:]
        return (stack([g if g is not None else _zeros(piece, ref) for g in grads], self.dim),)


class SplitBackward0(Op):
    """split(int) and chunk: several narrow views along one dim with a single backward node."""

    def forward(self, x, dim, bounds):
        self.dim = dim
        self.in_shape = x._data.shape
        self.bounds = bounds
        be = x._be
        return [be.slice_view(x._data, dim, a, b) for a, b in bounds]

    def backward(self, *grads):
        ref = next(g for g in grads if g is not None)
        parts = []
        for g, (a, b) in zip(grads, self.bounds):
            if g is None:
                shape = list(self.in_shape)
                shape[self.dim] = b - a
                g = _zeros(shape, ref)
            parts.append(g)
        return (cat(parts, self.dim),)


class SplitWithSizesBackward0(SplitBackward0):
    """split(list of sizes)."""


def _split_views(input, dim, sizes, op_cls, name):
    bounds = []
    pos = 0
    for s in sizes:
        bounds.append((pos, pos + s))
        pos += s
    replays = [(lambda a, b: (lambda v: _slice(v, dim, a, b)))(a, b) for a, b in bounds]
    return _multi_view(op_cls, input, replays, name, dim=dim, bounds=tuple(bounds))


def unbind(input, dim=0):
    """A tuple of the views ``input.select(dim, i)`` for every ``i``."""
    shape = input._data.shape
    if not shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, len(shape))
    replays = [(lambda i: (lambda v: select(v, d, i)))(i) for i in range(shape[d])]
    return _multi_view(UnbindBackward0, input, replays, "Unbind", dim=d)


def _split_sizes_of(size, split_size):
    if split_size == 0:
        return [0]
    n = builtins.max((size + split_size - 1) // split_size, 1)
    return [split_size] * (n - 1) + [size - split_size * (n - 1)]


def split(tensor, split_size_or_sections=None, dim=0, *, split_size=None):
    """Views of consecutive pieces along ``dim``: of ``split_size`` elements each (the last may be
    smaller), or of the sizes in a list. (``split_size=`` is the method's spelling.)"""
    if split_size is not None:
        split_size_or_sections = split_size
    if split_size_or_sections is None:
        raise TypeError('split() missing 1 required positional argument: "split_size"')
    shape = tensor._data.shape
    if not shape:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, len(shape))
    size = shape[d]
    if isinstance(split_size_or_sections, (tuple, list)):
        sizes = [_int(s, "split_sizes") for s in split_size_or_sections]
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                               f"split_sizes={sizes}")
        if builtins.sum(sizes) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
        return _split_views(tensor, d, sizes, SplitWithSizesBackward0, "SplitWithSizes")
    split_size = _int(split_size_or_sections, "split_size")
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
    return _split_views(tensor, d, _split_sizes_of(size, split_size), SplitBackward0, "Split")


def chunk(input, chunks, dim=0):
    """At most ``chunks`` views of (nearly) equal size along ``dim``."""
    shape = input._data.shape
    if not shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    chunks = _int(chunks, "chunks")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, len(shape))
    size = shape[d]
    split_size = (size + chunks - 1) // chunks
    if split_size == 0 and size == 0:
        # split would forget how many empty chunks were asked for
        return _split_views(input, d, [0] * chunks, SplitWithSizesBackward0, "SplitWithSizes")
    return _split_views(input, d, _split_sizes_of(size, split_size), SplitBackward0, "Split")


def tensor_split(input, indices_or_sections, dim=0):
    """Views split along ``dim`` into ``sections`` nearly equal pieces (the first ones one larger), or
    at the given ``indices``."""
    shape = input._data.shape
    if not shape:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = wrap_dim(dim, len(shape))
    size = shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype is not _dtype.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{ios.dtype._scalar_name}")
        if ios.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios.ndim} dims")
        ios = ios.item() if ios.ndim == 0 else ios.tolist()
    if isinstance(ios, (tuple, list)):
        bounds, prev = [], 0
        for i in [_int(i, "indices") for i in ios] + [size]:
            a, b, _ = slice(prev, i).indices(size)
            bounds.append((a, builtins.max(a, b)))
            prev = i
    else:
        sections = _int(ios, "sections")
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        base, extra = divmod(size, sections)
        bounds, pos = [], 0
        for k in range(sections):
            n = base + (1 if k < extra else 0)
            bounds.append((pos, pos + n))
            pos += n
    return tuple(_slice(input, d, a, b) for a, b in bounds)


def _xsplit(name, input, ios, dim, min_dims):
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if not isinstance(ios, (tuple, list)) and not isinstance(ios, Tensor):
        n = _int(ios, "sections")
        size = input._data.shape[dim]
        if n == 0 or size % n:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {n}!")
    return tensor_split(input, ios, dim)


def hsplit(input, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 for 1-D tensors); an int must divide the size."""
    return _xsplit("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input, indices_or_sections):
    """``tensor_split`` along dim 0 of a tensor with at least 2 dims."""
    return _xsplit("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """``tensor_split`` along dim 2 of a tensor with at least 3 dims."""
    return _xsplit("dsplit", input, indices_or_sections, 2, 3)


# ---------------------------------------------------------------------- in-place view ops

def _inplace_view(self, fn, op_cls, *args):
    """squeeze_/unsqueeze_/t_/transpose_: ``self`` becomes the view ``fn(self)`` of its own memory."""
    self._check_inplace()
    if _state.grad and self._base is None and self._grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    new = fn(self, *args)
    self._data = new._data
    bump_version(self)
    node = new._grad_fn
    if node is not None:
        # the same computation under the in-place node's name; unrecorded (no_grad) calls keep the history
        node.__class__ = op_cls
        self._grad_fn = node
        self._output_nr = 0
        self._requires_grad = True
    if self._base is not None:
        self._view_fn = new._view_fn
        self._view_version = self._vc.value
    return self


def squeeze_(self, dim=None):
    axes, kind = _squeeze_args(self, dim)
    cls = (SqueezeBackward3, SqueezeBackward4, SqueezeBackward5)[kind]
    return _inplace_view(self, squeeze, cls, dim)


def unsqueeze_(self, dim):
    return _inplace_view(self, unsqueeze, UnsqueezeBackward1, dim)


def t_(self):
    return _inplace_view(self, t, TBackward1)


def transpose_(self, dim0, dim1):
    return _inplace_view(self, transpose, TransposeBackward1, dim0, dim1)


# ---------------------------------------------------------------------- cat / stack

def _check_tensor_list(tensors, fname):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(x).__name__}")
    if tensors:
        check_same_device(*tensors)
    return tensors


def _check_cat_out(out, tensors):
    """cat's own ``out=`` dtype rule, checked before joining: the promoted dtype must cast to ``out``'s
    (stack reports it as cat does)."""
    if out is None:
        return
    check_out(out, "cat", *tensors)
    dt = tensors[0].dtype
    for x in tensors[1:]:
        dt = _dtype.promote_types(dt, x.dtype)
    if not _dtype.can_cast(dt, out.dtype):
        raise TypeError(f"minitorch_gpu.cat(): input types can't be cast to the desired output type "
                        f"{out.dtype._scalar_name}")


def _promoted(tensors):
    """The tensors' arrays in their common (promoted) dtype."""
    first = tensors[0]._data.dtype
    if all(x._data.dtype == first for x in tensors):
        return [x._data for x in tensors]
    dt = tensors[0].dtype
    for x in tensors[1:]:
        dt = _dtype.promote_types(dt, x.dtype)
    npd = tensors[0]._be.np_dtype(dt)
    return [x._be.astype(x._data, npd) for x in tensors]


class CatBackward0(Op):
    def forward(self, *tensors, dim, skip):
        self.dim = dim
        self.skip = skip
        self.meta = [(x._data.shape, x._data.dtype) for x in tensors]
        arrays = _promoted(tensors)
        if skip is not None:
            arrays = [a for a, s in zip(arrays, skip) if not s]
        return tensors[0]._be.concatenate(arrays, dim)

    def backward(self, g):
        out, pos, d = [], 0, self.dim
        skip = self.skip
        for i, (need, (shape, npd)) in enumerate(zip(self.needs_input_grad, self.meta)):
            if skip is not None and skip[i]:
                out.append(_zeros(shape, g) if need else None)
                continue
            n = shape[d]
            out.append(_cast_grad(_slice(g, d, pos, pos + n), npd) if need else None)
            pos += n
        return tuple(out)


@autocast_op("cat")
def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dim (all other sizes must match; dtypes are promoted)."""
    tensors = _check_tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    # PyTorch still accepts (and skips) 1-D empty tensors next to tensors of any rank
    skip = None
    ref = None
    for i, x in enumerate(tensors):
        shape = x._data.shape
        if not shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if shape == (0,):
            if skip is None:
                skip = [False] * len(tensors)
            skip[i] = True
        elif ref is None:
            ref = shape
    if ref is None:
        skip = None
        ref = tensors[0]._data.shape
    d = wrap_dim(dim, len(ref))
    rest = ref[:d] + ref[d + 1:]
    for k, x in enumerate(tensors):
        shape = x._data.shape
        if shape[:d] + shape[d + 1:] == rest and len(shape) == len(ref) or (skip is not None and skip[k]):
            continue
        if len(shape) != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} and {len(shape)}")
        for i, (a, b) in enumerate(zip(ref, shape)):
            if i != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but got "
                                   f"size {b} for tensor number {k} in the list.")
    _check_cat_out(out, tensors)
    return write_out(CatBackward0.apply(*tensors, dim=d, skip=skip), out, "cat")


def concat(tensors, dim=0, *, out=None):
    """Alias of ``cat``."""
    return cat(tensors, dim, out=out)


def concatenate(tensors, axis=0, out=None):
    """Alias of ``cat`` (NumPy's spelling of the dim: ``axis``)."""
    return cat(tensors, axis, out=out)


class StackBackward0(Op):
    def forward(self, *tensors, dim):
        self.dim = dim
        self.dtypes = [x._data.dtype for x in tensors]
        be = tensors[0]._be
        return be.concatenate([be.unsqueeze_view(a, dim) for a in _promoted(tensors)], dim)

    def backward(self, g):
        return tuple(_cast_grad(select(g, self.dim, i), npd) if need else None
                     for i, (need, npd) in enumerate(zip(self.needs_input_grad, self.dtypes)))


@autocast_op("stack")
def stack(tensors, dim=0, *, out=None):
    """Join equally-shaped tensors along a new dim ``dim``."""
    tensors = _check_tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0]._data.shape
    for i, x in enumerate(tensors[1:], 1):
        if x._data.shape != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 and "
                               f"{list(x._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(ref) + 1)
    _check_cat_out(out, tensors)
    return write_out(StackBackward0.apply(*tensors, dim=d), out, "stack")


def hstack(tensors, *, out=None):
    """Concatenate along dim 1 (dim 0 for 1-D tensors) after ``atleast_1d``."""
    ts = [atleast_1d(x) for x in _check_tensor_list(tensors, "hstack")]
    if not ts:
        raise ValueError("hstack expects a non-empty TensorList")
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Concatenate along dim 0 after ``atleast_2d``."""
    ts = [atleast_2d(x) for x in _check_tensor_list(tensors, "vstack")]
    if not ts:
        raise ValueError("vstack expects a non-empty TensorList")
    return cat(ts, 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Concatenate along dim 2 after ``atleast_3d``."""
    ts = [atleast_3d(x) for x in _check_tensor_list(tensors, "dstack")]
    if not ts:
        raise ValueError("dstack expects a non-empty TensorList")
    return cat(ts, 2, out=out)


def column_stack(tensors, *, out=None):
    """Concatenate along dim 1, 0-d and 1-d tensors taken as columns."""
    ts = _check_tensor_list(tensors, "column_stack")
    if not ts:
        raise ValueError("column_stack expects a non-empty TensorList")
    ts = [reshape(x, x.numel(), 1) if x.ndim <= 1 else x for x in ts]
    return cat(ts, 1, out=out)


# ---------------------------------------------------------------------- copying shape ops

class FlipBackward0(Op):
    def forward(self, x, dims):
        self.dims = dims
        return x._be.flip(x._data, dims)

    def backward(self, g):
        return (flip(g, self.dims),)


def flip(input, *dims, **kwargs):
    """A copy with the order of elements reversed along ``dims``."""
    if kwargs:
        if set(kwargs) != {"dims"} or dims:
            raise TypeError(f"flip() got unexpected keyword arguments {list(kwargs)}")
        dims = (kwargs["dims"],)
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    dims = wrap_dims(_int_seq(dims, "dims"), input._data.ndim)
    return FlipBackward0.apply(input, dims=dims)


def fliplr(input):
    """Flip dim 1 (left/right)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    """Flip dim 0 (up/down)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class RollBackward0(Op):
    def forward(self, x, shifts, dims):
        self.shifts = shifts
        self.dims = dims
        return x._be.roll(x._data, shifts, dims)

    def backward(self, g):
        neg = tuple(-s for s in self.shifts)
        if self.dims is None:
            return (roll(g, neg[0]),)
        return (roll(g, neg, self.dims),)


def roll(input, shifts, dims=None):
    """Elements shifted cyclically by ``shifts`` along ``dims`` (the flattened tensor when dims is None)."""
    shifts = (shifts,) if not isinstance(shifts, (tuple, list)) else tuple(shifts)
    shifts = tuple(_int(s, "shifts") for s in shifts)
    if dims is None or (isinstance(dims, (tuple, list)) and not dims):
        if not shifts:
            raise RuntimeError("`shifts` required")
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return RollBackward0.apply(input, shifts=shifts, dims=None)
    dims = (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    dims = tuple(wrap_dim(d, input._data.ndim) for d in dims)
    if input._data.ndim == 0:
        return RollBackward0.apply(input, shifts=shifts, dims=None)
    return RollBackward0.apply(input, shifts=shifts, dims=dims)


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first towards the second."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    a, b = wrap_dim(dims[0], nd), wrap_dim(dims[1], nd)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}")
    return Rot90Backward0.apply(input, k=_int(k, "k") % 4, dims=(a, b))


class Rot90Backward0(Op):
    def forward(self, x, k, dims):
        self.k = k
        self.dims = dims
        be = x._be
        a, b = dims
        # PyTorch's layouts: a flipped copy, transposed in place for odd k
        if k == 1:
            return be.swapaxes_view(be.flip(x._data, (b,)), a, b)
        if k == 2:
            return be.flip(x._data, dims)
        if k == 3:
            return be.swapaxes_view(be.flip(x._data, (a,)), a, b)
        return be.copy(x._data)

    def backward(self, g):
        return (rot90(g, -self.k, self.dims),)


class TrilBackward0(Op):
    def forward(self, x, diagonal):
        self.k = diagonal
        return x._be.tril(x._data, diagonal)

    def backward(self, g):
        return (tril(g, self.k),)


class TriuBackward0(Op):
    def forward(self, x, diagonal):
        self.k = diagonal
        return x._be.triu(x._data, diagonal)

    def backward(self, g):
        return (triu(g, self.k),)


def tril(input, diagonal=0, *, out=None):
    """The lower triangle (on and below diagonal ``diagonal``) of the last two dims; the rest zeroed."""
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return write_out(TrilBackward0.apply(input, diagonal=_int(diagonal, "diagonal")), out, "tril", exact_dtype=True)


def triu(input, diagonal=0, *, out=None):
    """The upper triangle (on and above diagonal ``diagonal``) of the last two dims; the rest zeroed."""
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return write_out(TriuBackward0.apply(input, diagonal=_int(diagonal, "diagonal")), out, "triu", exact_dtype=True)


def tril_(self, diagonal=0):
    if self._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return apply_inplace(self, tril, diagonal, keeps_self=False)


def triu_(self, diagonal=0):
    if self._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return apply_inplace(self, triu, diagonal, keeps_self=False)


class RepeatBackward0(Op):
    def forward(self, x, repeats):
        self.in_shape = x._data.shape
        self.repeats = repeats
        return x._be.tile(x._data, repeats)

    def backward(self, g):
        reps = self.repeats
        padded = (1,) * (len(reps) - len(self.in_shape)) + tuple(self.in_shape)
        inter = []
        for r, s in zip(reps, padded):
            inter += [r, s]
        g = g.reshape(inter).sum(tuple(range(0, 2 * len(reps), 2)))
        return (g.reshape(self.in_shape),)


def repeat(input, *sizes, **kwargs):
    """The tensor tiled ``sizes[i]`` times along each dim (extra leading sizes add dims); a copy."""
    if kwargs:
        if set(kwargs) != {"repeats"} or sizes:
            raise TypeError(f"repeat() got unexpected keyword arguments {list(kwargs)}")
        sizes = (kwargs["repeats"],)
    reps = _int_seq(sizes, "repeats")
    shape = input._data.shape
    if len(reps) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
    if any(r < 0 for r in reps):
        target = [r * s for r, s in zip(reps, padded)]
        bad = next(n for n in target if n < 0) if any(n < 0 for n in target) else min(reps)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {target}")
    return RepeatBackward0.apply(input, repeats=reps)


def tile(input, dims):
    """Like ``repeat``, with missing leading ``dims`` taken as 1."""
    reps = _int_seq((dims,), "dims")
    nd = input._data.ndim
    if len(reps) < nd:
        reps = (1,) * (nd - len(reps)) + reps
    return repeat(input, reps)


class RepeatInterleaveBackward0(Op):
    """``counts``: one int for every element, or a tuple with a count per element."""

    def forward(self, x, counts, dim):
        self.counts = counts
        self.dim = dim
        self.in_shape = x._data.shape
        return x._be.repeat(x._data, counts, dim)

    def backward(self, g):
        c, d = self.counts, self.dim
        if isinstance(c, int):
            shape = self.in_shape
            return (g.reshape(shape[:d] + (shape[d], c) + shape[d + 1:]).sum(d + 1),)
        return (SegmentSumBackward0.apply(g, counts=c, dim=d),)


class SegmentSumBackward0(Op):
    """Sums of consecutive runs of ``counts`` along ``dim`` (the adjoint of repeat_interleave)."""

    def forward(self, g, counts, dim):
        self.counts = counts
        self.dim = dim
        return g._be.segment_sum(g._data, counts, dim)

    def backward(self, gg):
        return (RepeatInterleaveBackward0.apply(gg, counts=self.counts, dim=self.dim),)


def _check_counts(t):
    if t.dtype.is_floating_point or t.dtype is _dtype.bool:
        raise NotImplementedError(f'"repeat_interleave" not implemented for \'{t.dtype._scalar_name}\'')


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated ``repeats`` times along ``dim`` (the flattened tensor when dim is None);
    ``repeats`` is an int or a tensor with one count per element. ``repeat_interleave(counts)`` gives
    the indices ``0..n-1`` each repeated ``counts[i]`` times."""
    if repeats is None:
        counts = input
        if counts.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        _check_counts(counts)
        values = counts.tolist()
        if any(c < 0 for c in values):
            raise RuntimeError("repeats can not be negative")
        return Tensor._make(counts._be.repeat_index(tuple(values), counts._data.dtype), counts._be)
    if dim is None:
        x = reshape(input, -1)
        d = 0
    else:
        x = input
        d = wrap_dim(dim, input._data.ndim)
        if x._data.ndim == 0:
            x = reshape(x, 1)
    n = x._data.shape[d]
    if isinstance(repeats, Tensor):
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        _check_counts(repeats)
        counts = repeats.tolist()
        if repeats.ndim == 1 and len(counts) != 1 and len(counts) != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{len(counts)} and input.size(0) = {n}")
        if repeats.ndim == 0 or len(counts) == 1:
            counts = counts if repeats.ndim == 0 else counts[0]
            if counts < 0:
                raise RuntimeError("repeats can not be negative")
        elif any(c < 0 for c in counts):
            raise RuntimeError("repeats can not be negative")
        else:
            counts = tuple(counts)
    else:
        counts = _int(repeats, "repeats")
        if counts < 0:
            raise RuntimeError("Repeats must be non-negative")
    total = n * counts if isinstance(counts, int) else builtins.sum(counts)
    if output_size is not None and output_size != total:
        raise RuntimeError(f"allocated size does not match required size: {output_size} vs {total}")
    return RepeatInterleaveBackward0.apply(x, counts=counts, dim=d)



# ---------------------------------------------------------------------- as_strided: a view of the storage

def _storage_size(t):
    """The elements of memory a root tensor spans (its storage, in PyTorch's terms)."""
    shape, strides = t._data.shape, t._be.strides(t._data)
    if 0 in shape:
        return 0
    return 1 + builtins.sum((n - 1) * s for n, s in zip(shape, strides))


def _storage_view(be, storage, size, stride, offset):
    """The view (size, stride, offset) of the 1-D array ``storage``."""
    return be.as_strided_view(storage, size, stride, (offset,) if offset else None)


class AsStridedBackward0(Op):
    """A view of the input's storage (its root's memory) with any sizes, strides and offset. Its gradient adds
    the output's gradient into a gradient of the storage (overlapping elements accumulate), then reads the
    input's own elements out of it."""

    def forward(self, x, size, stride, storage_offset):
        root = x if x._base is None else x._base
        be = x._be
        n = _storage_size(root)
        storage = be.as_strided_view(root._data, (n,), (1,))
        where_in = (tuple(x._data.shape), be.strides(x._data), x.storage_offset())
        self.geometry = (n, where_in, (size, stride, storage_offset))
        return _storage_view(be, storage, size, stride, storage_offset)

    def backward(self, g):
        n, (in_size, in_stride, in_offset), (size, stride, offset) = self.geometry
        be = g._be
        cells = be.arange_index(n)
        to_out = Tensor._make(be.copy(_storage_view(be, cells, size, stride, offset)).reshape(-1), be)
        to_in = Tensor._make(be.copy(_storage_view(be, cells, in_size, in_stride, in_offset)), be)
        grad_storage = g.new_zeros((n,)).index_add(0, to_out, g.reshape(-1))
        return (grad_storage.take(to_in),)


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given sizes, strides and offset (default: ``input``'s own
    offset), sharing memory with it; elements may repeat. PyTorch's bounds checks apply."""
    size = tuple(_int(v) for v in size)
    stride = tuple(_int(v, "stride") for v in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    offset = input.storage_offset() if storage_offset is None else _int(storage_offset, "storage_offset")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    root = input if input._base is None else input._base
    item = input._data.itemsize
    need = 0 if 0 in size else offset + 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    have = _storage_size(root)
    if need > have:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {item} requiring a storage size of {need * item} are out of bounds for "
                           f"storage of size {have * item}")
    return make_view(AsStridedBackward0, input, lambda v: as_strided(v, size, stride, offset), size=size,
                     stride=stride, storage_offset=offset)


# ---------------------------------------------------------------------- composites of slicing and broadcasting

def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``out[i] = x[i + 1] - x[i]``, XOR for bool), after
    concatenating ``prepend`` and ``append`` to the input along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = _int(n, "n")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.dim())
    parts = []
    for name, extra in (("prepend", prepend), (None, input), ("append", append)):
        if extra is None:
            continue
        if not isinstance(extra, Tensor):
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(extra).__name__}")
        if extra.dim() != input.dim():
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        parts.append(extra)
    x = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        hi, lo = x.narrow(d, 1, length - 1), x.narrow(d, 0, length - 1)
        x = hi.logical_xor(lo) if x.dtype is _dtype.bool else hi - lo
    return x


def kron(input, other, *, out=None):
    """The Kronecker product: every element of ``input`` times a whole copy of ``other``, laid out in blocks
    (the operand with fewer dims gets leading ones)."""
    nd = builtins.max(input.dim(), other.dim())
    a_shape = (1,) * (nd - input.dim()) + tuple(input.shape)
    b_shape = (1,) * (nd - other.dim()) + tuple(other.shape)
    # a as (a0, 1, a1, 1, ...) times b as (1, b0, 1, b1, ...): blocks interleaved dim by dim
    a = input.reshape(tuple(v for n in a_shape for v in (n, 1)))
    b = other.reshape(tuple(v for n in b_shape for v in (1, n)))
    r = (a * b).reshape(tuple(p * q for p, q in zip(a_shape, b_shape)))
    return r if out is None else write_out(r, out, "kron")


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as the rows of a (N, len(tensors)) tensor
    (a single tensor is returned as it is)."""
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    if builtins.any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    k = len(tensors)
    full = tuple(t.shape[0] for t in tensors)
    grids = [t.reshape((1,) * i + (-1,) + (1,) * (k - i - 1)).expand(full) for i, t in enumerate(tensors)]
    return stack(grids, -1).reshape(-1, k)


def _check_pixel_factor(name, what, factor, input):
    if input.dim() < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with {input.dim()} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): each group of r^2 channels becomes an r x r block of pixels."""
    r = _int(upscale_factor, "upscale_factor")
    _check_pixel_factor("pixel_shuffle", "upscale_factor", r, input)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nl = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of ``pixel_shuffle``."""
    r = _int(downscale_factor, "downscale_factor")
    _check_pixel_factor("pixel_unshuffle", "downscale_factor", r, input)
    *lead, c, h, w = input.shape
    for what, size, at in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                               f"input.size({at})={size} is not divisible by {r}")
    nl = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


METHODS = {
    "as_strided": as_strided, "diff": diff, "kron": kron,
    "view": view, "view_as": view_as, "reshape": reshape, "reshape_as": reshape_as, "flatten": flatten,
    "unflatten": unflatten, "ravel": ravel, "expand": expand, "expand_as": expand_as, "broadcast_to": broadcast_to,
    "permute": permute, "transpose": transpose, "swapaxes": swapaxes, "swapdims": swapdims, "t": t,
    "adjoint": adjoint, "movedim": movedim, "moveaxis": moveaxis, "squeeze": squeeze, "unsqueeze": unsqueeze,
    "narrow": narrow, "select": select, "unfold": unfold, "diagonal": diagonal, "diag": diag, "diag_embed": diag_embed,
    "diagflat": diagflat, "unbind": unbind, "split": split,
    "chunk": chunk, "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
    "squeeze_": squeeze_, "unsqueeze_": unsqueeze_, "t_": t_, "transpose_": transpose_,
    "swapaxes_": transpose_, "swapdims_": transpose_,
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "rot90": rot90, "tril": tril, "triu": triu,
    "tril_": tril_, "triu_": triu_, "repeat": repeat, "tile": tile, "repeat_interleave": repeat_interleave,
    "T": property(_T, doc="The tensor with its dims reversed (the transpose of a matrix)."),
    "mT": property(_mT, doc="The transpose of the last two dims."),
    "H": property(lambda self: _matrix_transpose(self, "tensor.H", batches=False),
                  doc="The conjugate transpose of a matrix (its transpose, for real tensors)."),
    "mH": property(lambda self: _matrix_transpose(self, "tensor.mH"),
                   doc="The conjugate transpose of the last two dims (their transpose, for real tensors)."),
}
