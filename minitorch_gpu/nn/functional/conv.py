"""Convolutions (1-3 spatial dims), transposed convolutions, and ``unfold`` / ``fold`` (im2col / col2im).

One node, ``ConvolutionBackward0``, runs both directions: a convolution, and a transposed convolution (the
adjoint of a convolution, which is also the convolution's input gradient). Its arrays come from the backend's
convolution primitives where the backend has them (the CPU: cache-blocked im2col and BLAS products, compiled
copies; ``backends/_cnn_cpu.py``), else from the general primitives: im2col + one batched GEMM, the padded
input viewed as its sliding windows (``as_strided``, no copy), materialised in ``unfold``'s layout,
``(N, C*prod(K), L)``, and the weight ``(O, C*prod(K))`` multiplying each sample's columns, which gives the output
``(N, O, L)`` directly (one product per group for grouped convolutions). The backward is the other direction
plus the weight gradient; when a graph of the gradients is recorded it is written with Tensor ops around two
ops that are each other's adjoint — ``Im2ColBackward0`` (windows -> columns) and ``Col2ImBackward0`` (columns
summed back into place) — so gradients of gradients exist for input, weight and bias.
"""
import itertools
import math

from ...autograd.grad_mode import _state
from ...autograd.node import Op
from ...ops._util import check_same_device, check_tensor
from ...tensor import Tensor
from ...ops._autocast import autocast_op

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "unfold", "fold"]


# ---------------------------------------------------------------------- argument handling

def _ntuple(value, n, fn, name):
    """An int (or tensor-free sequence of ints) as a tuple of ``n`` ints; tuples of another length pass
    through so that the caller reports the mismatch the way PyTorch does."""
    if isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not bool")
    if isinstance(value, int):
        return (value,) * n
    if hasattr(value, "__index__") and not isinstance(value, Tensor):
        return (value.__index__(),) * n
    if isinstance(value, (tuple, list)):
        out = []
        for i, v in enumerate(value):
            if isinstance(v, bool) or not (isinstance(v, int) or hasattr(v, "__index__")):
                raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but found element of type "
                                f"{type(v).__name__} at pos {i}")
            out.append(v.__index__())
        return tuple(out)
    raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not {type(value).__name__}")



def _type_name(t):
    prefix = "minitorch_gpu.cuda." if t.is_cuda else "minitorch_gpu."
    return prefix + t.dtype._tensor_name


# ---------------------------------------------------------------------- array-level im2col / col2im
# ``pads`` is a tuple of (low, high) per spatial dim: 'same' padding can be asymmetric. Columns come in two
# layouts: ``rows`` (N, L, C*prod(K)) — one row per output position, so a whole convolution is a single
# 2-D GEMM against the weight — and PyTorch's ``unfold`` layout (N, C*prod(K), L).

def _pad_zeros(be, d, pads):
    if not any(lo or hi for lo, hi in pads):
        return d
    shape = d.shape[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(d.shape[2:], pads))
    out = be.zeros(shape, d.dtype)
    inner = (slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(d.shape[2:], pads))
    be.copy_into(out[inner], d)
    return out


def _windows(be, d, kernel, dilation, stride, blocks, rows):
    """The view of every window of the (already padded) ``d``: ``(N, *blocks, C, *kernel)`` for the row
    layout, else ``(N, C, *kernel, *blocks)``."""
    st = be.strides(d)
    nd = len(kernel)
    k_strides = tuple(st[2 + i] * dilation[i] for i in range(nd))
    b_strides = tuple(st[2 + i] * stride[i] for i in range(nd))
    n, c = d.shape[:2]
    if rows:
        shape = (n,) + tuple(blocks) + (c,) + tuple(kernel)
        strides = (st[0],) + b_strides + (st[1],) + k_strides
    else:
        shape = (n, c) + tuple(kernel) + tuple(blocks)
        strides = st[:2] + k_strides + b_strides
    return be.as_strided_view(d, shape, strides)


def _im2col(be, d, kernel, dilation, pads, stride, blocks, rows, copy=True):
    """Columns of ``d`` (N, C, *spatial) in the row or unfold layout. ``copy=False`` allows a view of ``d``
    when the windows tile it exactly."""
    n, c = d.shape[:2]
    ck, L = c * math.prod(kernel), math.prod(blocks)
    shape = (n, L, ck) if rows else (n, ck, L)
    win = _windows(be, _pad_zeros(be, d, pads), kernel, dilation, stride, blocks, rows)
    cols = be.reshape_view(win, shape)
    if cols is None:
        return be.reshape(win, shape)  # overlapping or strided windows: this is the copy
    return be.copy(cols) if copy else cols


def _col2im(be, cols, channels, spatial, kernel, dilation, pads, stride, blocks, rows):
    """The adjoint of ``_im2col``: every column entry added to the input position it was read from."""
    n = cols.shape[0]
    nd = len(kernel)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, pads))
    out = be.zeros((n, channels) + padded, cols.dtype)
    if rows:
        cv = be.reshape(cols, (n,) + tuple(blocks) + (channels,) + tuple(kernel))
        # (N, *blocks, C) per kernel offset, seen as (N, C, *blocks)
        to_image = (0, nd + 1) + tuple(range(1, nd + 1))
    else:
        cv = be.reshape(cols, (n, channels) + tuple(kernel) + tuple(blocks))
    lead = (slice(None), slice(None))
    for k in itertools.product(*[range(x) for x in kernel]):
        region = out[lead + tuple(slice(k[i] * dilation[i], k[i] * dilation[i] + stride[i] * (blocks[i] - 1) + 1,
                                        stride[i]) for i in range(nd))]
        src = cv[(slice(None),) * (nd + 2) + k].transpose(to_image) if rows else cv[lead + k]
        be.binary("add", region, src, out=region)
    if any(lo or hi for lo, hi in pads):
        inner = lead + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, pads))
        out = be.copy(out[inner])
    return out


def _geometry(kernel, dilation, pads, stride, spatial, blocks, rows=False):
    """The description of one im2col shared by its ops: ``spatial`` is the unpadded image size,
    ``blocks`` the number of window positions per dim, ``pads`` (low, high) per dim, ``rows`` the layout."""
    return (tuple(kernel), tuple(dilation), tuple(pads), tuple(stride), tuple(spatial), tuple(blocks), rows)


class Im2ColBackward0(Op):
    """Windows of ``x`` (N, C, *spatial) as columns."""

    def forward(self, x, geom):
        self.geom = geom
        self.channels = x._data.shape[1]
        kernel, dilation, pads, stride, _, blocks, rows = geom
        return _im2col(x._be, x._data, kernel, dilation, pads, stride, blocks, rows)

    def backward(self, g):
        return (Col2ImBackward0.apply(g, geom=self.geom, channels=self.channels),)


class Col2ImBackward0(Op):
    """Columns summed back into an image (N, C, *spatial)."""

    def forward(self, cols, geom, channels):
        self.geom = geom
        kernel, dilation, pads, stride, spatial, blocks, rows = geom
        return _col2im(cols._be, cols._data, channels, spatial, kernel, dilation, pads, stride, blocks, rows)

    def backward(self, g):
        return (Im2ColBackward0.apply(g, geom=self.geom),)


# ---------------------------------------------------------------------- convolution

def _conv_arrays(be, d, wd, b, geom, groups):
    """The convolution on arrays by the general primitives: unfold-layout columns (N, C*K, L) and one batched
    GEMM, w (G, O/G, C/G*K) @ cols (N, G, C/G*K, L), whose result is already the output's layout (N, O, L)."""
    # NOTE: the unfold layout, not one row per output position: materialising the windows then copies
    # runs of a whole output row (contiguous in the input) instead of runs of one kernel row (3 elements
    # for a 3x3 kernel), about 4x faster in NumPy, and the product needs no transpose afterwards.
    kernel, dilation, pads, stride, _, blocks, _ = geom
    n = d.shape[0]
    o = wd.shape[0]
    cols = _im2col(be, d, kernel, dilation, pads, stride, blocks, False, copy=False)
    ckg = cols.shape[1] // groups
    L = cols.shape[2]
    out = be.matmul(be.reshape(wd, (groups, o // groups, ckg)), be.reshape(cols, (n, groups, ckg, L)))
    if b is not None:
        be.binary("add", out, be.reshape(b, (groups, o // groups, 1)), out=out)
    return be.reshape(out, (n, o) + tuple(blocks))


def _conv_transpose_arrays(be, d, wd, geom, groups):
    """The transposed convolution on arrays by the general primitives: one row per input position times the
    weight gives the row-layout columns (N, L, C_out*K), which col2im scatters."""
    kernel, dilation, pads, stride, spatial, blocks, _ = geom
    n, cin = d.shape[:2]
    cin_g = cin // groups
    kprod = math.prod(kernel)
    out_c = wd.shape[1] * groups
    L = math.prod(blocks)
    x3 = be.reshape(be.reshape(d, (n, cin, L)).transpose(0, 2, 1), (n * L, groups, cin_g)).transpose(1, 0, 2)
    cols = be.matmul(x3, be.reshape(wd, (groups, cin_g, wd.shape[1] * kprod)))
    cols = be.reshape(cols.transpose(1, 0, 2), (n, L, out_c * kprod))
    return _col2im(be, cols, out_c, spatial, kernel, dilation, pads, stride, blocks, True)


class ConvolutionBackward0(Op):
    """``conv(x, w) + b`` for x (N, C, *spatial), w (O, C/groups, *kernel); with ``transposed``, the transposed
    convolution of x (N, C_in, *blocks) with w (C_in, C_out/groups, *kernel): the adjoint of a convolution
    from (N, C_out, *spatial), whose geometry ``geom`` describes.

    The backend's convolution primitives run it where they serve the arrays (the CPU's); elsewhere the
    general primitives do (``_conv_arrays``, ``_conv_transpose_arrays``). The backward of either direction is
    the other direction plus the weight gradient, as Tensor ops when a graph of the gradients is recorded
    (``create_graph``), so gradients of gradients exist for input, weight and bias.
    """

    def forward(self, x, w, b, geom, groups, transposed=False):
        be = x._be
        need_x, need_w = self.needs_input_grad[:2]
        self.save_for_backward(x if need_w else None, w if need_x else None)
        self.geom = geom
        self.groups = groups
        self.transposed = transposed
        d, wd = x._data, w._data
        self.shapes = (d.shape, wd.shape)
        kernel, dilation, pads, stride, spatial, blocks, _ = geom
        bd = None if b is None else b._data
        if not transposed:
            out = be.conv_forward(d, wd, bd, stride, pads, dilation, groups, blocks)
            return _conv_arrays(be, d, wd, bd, geom, groups) if out is None else out
        out_shape = (d.shape[0], wd.shape[1] * groups) + tuple(spatial)
        out = be.conv_input_grad(d, wd, stride, pads, dilation, groups, out_shape)
        if out is None:
            out = _conv_transpose_arrays(be, d, wd, geom, groups)
        if bd is not None:
            be.binary("add", out, be.reshape(bd, (out_shape[1],) + (1,) * len(kernel)), out=out)
        return out

    def backward(self, g):
        x, w = self.saved_tensors
        need_x, need_w, need_b = self.needs_input_grad
        geom = self.geom
        groups = self.groups
        xshape, wshape = self.shapes
        kernel, dilation, pads, stride, _, blocks, _ = geom
        gx = gw = gb = None
        if need_b:
            gb = g.sum((0,) + tuple(range(2, g.dim())))
        if not _state.grad:
            # plain arrays: the backend's primitives where they serve them
            be = g._be
            gd = g._data
            if need_x:
                r = (be.conv_forward(gd, w._data, None, stride, pads, dilation, groups, xshape[2:]) if self.transposed
                     else be.conv_input_grad(gd, w._data, stride, pads, dilation, groups, xshape))
                if r is not None:
                    gx, need_x = Tensor._make(r, be), False
            if need_w:
                r = (be.conv_weight_grad(x._data, gd, stride, pads, dilation, groups, wshape) if self.transposed
                     else be.conv_weight_grad(gd, x._data, stride, pads, dilation, groups, wshape))
                if r is not None:
                    gw, need_w = Tensor._make(r, be), False
        if self.transposed:
            if need_x:
                gx = ConvolutionBackward0.apply(g, w, None, geom=geom, groups=groups)
            if need_w:
                gw = _weight_grad(g, x, geom, groups, wshape)
            return gx, gw, gb
        if need_x:
            n, c = xshape[:2]
            og = wshape[0] // groups
            ckg = c // groups * math.prod(kernel)
            # (G, C/G*K, O/G) @ (N, G, O/G, L): the columns' gradient, summed back into the image
            gcols = w.reshape(groups, og, ckg).transpose(1, 2).matmul(g.reshape(n, groups, og, math.prod(blocks)))
            gx = Col2ImBackward0.apply(gcols.reshape(n, c * math.prod(kernel), math.prod(blocks)), geom=geom,
                                       channels=c)
        if need_w:
            gw = _weight_grad(x, g, geom, groups, wshape)
        return gx, gw, gb


def _weight_grad(x, g, geom, groups, wshape):
    """The weight gradient of a convolution of ``x`` (N, C, *spatial) whose output gradient is ``g``, as Tensor
    ops."""
    n, c = x.shape[:2]
    og = wshape[0] // groups
    ckg = c // groups * math.prod(geom[0])
    L = math.prod(geom[5])
    cols = Im2ColBackward0.apply(x, geom=geom).reshape(n, groups, ckg, L)
    # as cols @ g^T, transposed at the end (small): OpenBLAS runs this operand order ~1.4x faster
    return cols.matmul(g.reshape(n, groups, og, L).transpose(2, 3)).sum(0).transpose(1, 2).reshape(wshape)


def _check_dtypes(input, weight, bias):
    if bias is None:
        check_same_device(input, weight)
    else:
        check_same_device(input, weight, bias)
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({_type_name(input)}) and weight type ({_type_name(weight)}) should be the "
                           f"same")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype._scalar_name.lower()}) and bias type "
                           f"({bias.dtype._scalar_name.lower()}) should be the same")


def _check_params(k, stride, padding, dilation, groups, output_padding=None):
    for name, v in (("stride", stride), ("padding", padding), ("dilation", dilation)) + \
            ((("output_padding", output_padding),) if output_padding is not None else ()):
        if len(v) != k:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {k} values to match the "
                               f"convolution dimensions, but got {name}={list(v)}")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if output_padding is not None and any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _check_input_dim(input, k, name):
    nd = input._data.ndim
    if nd not in (k + 1, k + 2):
        raise RuntimeError(f"Expected {k + 1}D (unbatched) or {k + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")



def _same_pads(kernel, dilation):
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def _conv(input, weight, bias, stride, padding, dilation, groups, k, name):
    check_tensor(input, name, "input", 1)
    check_tensor(weight, name, "weight", 2)
    if bias is not None:
        check_tensor(bias, name, "bias", 3)
    _check_input_dim(input, k, name)
    stride = _ntuple(stride, k, name, "stride")
    dilation = _ntuple(dilation, k, name, "dilation")
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"{name}(): argument 'groups' must be int, not {type(groups).__name__}")
    kw = weight._data.ndim - 2
    if isinstance(padding, str):
        if padding == "valid":
            pad_arg = (0,) * k
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pad_arg = None
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pad_arg = _ntuple(padding, k, name, "padding")
    _check_params(kw, stride, pad_arg if pad_arg is not None else (0,) * kw, dilation, groups)
    _check_dtypes(input, weight, bias)
    unbatched = input._data.ndim == k + 1
    x = input.unsqueeze(0) if unbatched else input
    xs = x._data.shape
    ws = weight._data.shape
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(ws)} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(ws)}] instead")
    if xs[1] != ws[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(ws)}, expected input{list(xs)} to have "
                           f"{ws[1] * groups} channels, but got {xs[1]} channels instead")
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != ws[0]):
        raise RuntimeError(f"Given weight of size {list(ws)}, expected bias to be 1-dimensional with {ws[0]} "
                           f"elements, but got bias of size {list(bias.shape)} instead")
    kernel = ws[2:]
    pads = _same_pads(kernel, dilation) if pad_arg is None else tuple((p, p) for p in pad_arg)
    spatial = xs[2:]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, pads))
    reach = tuple(d * (kk - 1) + 1 for kk, d in zip(kernel, dilation))
    if any(p < r for p, r in zip(padded, reach)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, reach))}). Kernel size can't be greater than actual input "
                           f"size")
    blocks = tuple((p - r) // s + 1 for p, r, s in zip(padded, reach, stride))
    geom = _geometry(kernel, dilation, pads, stride, spatial, blocks)
    out = ConvolutionBackward0.apply(x, weight, bias, geom=geom, groups=groups)
    return out.squeeze(0) if unbatched else out


@autocast_op("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of ``input`` (N, C, L) or (C, L) with ``weight`` (O, C/groups, K). ``padding`` is an
    int, a tuple, 'valid' or 'same'."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@autocast_op("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of ``input`` (N, C, H, W) or (C, H, W) with ``weight`` (O, C/groups, kH, kW)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@autocast_op("conv3d")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of ``input`` (N, C, D, H, W) or (C, D, H, W) with ``weight`` (O, C/groups, kD, kH, kW)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


# ---------------------------------------------------------------------- transposed convolution

def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, k, name):
    check_tensor(input, name, "input", 1)
    check_tensor(weight, name, "weight", 2)
    if bias is not None:
        check_tensor(bias, name, "bias", 3)
    _check_input_dim(input, k, name)
    if isinstance(padding, str):
        raise TypeError(f"{name}(): argument 'padding' must be tuple of ints, not str")
    stride = _ntuple(stride, k, name, "stride")
    padding = _ntuple(padding, k, name, "padding")
    output_padding = _ntuple(output_padding, k, name, "output_padding")
    dilation = _ntuple(dilation, k, name, "dilation")
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"{name}(): argument 'groups' must be int, not {type(groups).__name__}")
    _check_params(weight._data.ndim - 2, stride, padding, dilation, groups, output_padding)
    _check_dtypes(input, weight, bias)
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        dims = ("height", "width") if k == 2 else ("depth", "height", "width")[3 - k:] if k != 1 else ("width",)
        parts = [f"output_padding_{n}: {v}" for n, v in zip(dims, output_padding)] + \
            [f"stride_{n}: {v}" for n, v in zip(dims, stride)] + [f"dilation_{n}: {v}" for n, v in zip(dims, dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(parts))
    unbatched = input._data.ndim == k + 1
    x = input.unsqueeze(0) if unbatched else input
    xs = x._data.shape
    ws = weight._data.shape
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(ws)}] instead")
    if xs[1] != ws[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(ws)}, expected input{list(xs)} to have "
                           f"{ws[0]} channels, but got {xs[1]} channels instead")
    out_c = ws[1] * groups
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != out_c):
        raise RuntimeError(f"Given transposed=1, weight of size {list(ws)}, expected bias to be 1-dimensional with "
                           f"{out_c} elements, but got bias of size {list(bias.shape)} instead")
    kernel = ws[2:]
    blocks = xs[2:]
    spatial = tuple((b - 1) * s - 2 * p + d * (kk - 1) + op + 1
                    for b, s, p, d, kk, op in zip(blocks, stride, padding, dilation, kernel, output_padding))
    if any(s <= 0 for s in spatial):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, blocks))}). Calculated output size "
                           f"per channel: ({' x '.join(map(str, spatial))}). Output size is too small")
    geom = _geometry(kernel, dilation, tuple((p, p) for p in padding), stride, spatial, blocks)
    out = ConvolutionBackward0.apply(x, weight, bias, geom=geom, groups=groups, transposed=True)
    return out.squeeze(0) if unbatched else out


@autocast_op("conv_transpose1d")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution ("deconvolution"): the gradient of conv1d with respect to its input.
    ``weight`` is (C_in, C_out/groups, K)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


@autocast_op("conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution; ``weight`` is (C_in, C_out/groups, kH, kW)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


@autocast_op("conv_transpose3d")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution; ``weight`` is (C_in, C_out/groups, kD, kH, kW)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                           "conv_transpose3d")


# ---------------------------------------------------------------------- unfold / fold

def _fold_args(kernel_size, dilation, padding, stride, fn):
    kernel = _ntuple(kernel_size, 2, fn, "kernel_size")
    dilation = _ntuple(dilation, 2, fn, "dilation")
    padding = _ntuple(padding, 2, fn, "padding")
    stride = _ntuple(stride, 2, fn, "stride")
    for name, v in (("kernel_size", kernel), ("dilation", dilation), ("padding", padding), ("stride", stride)):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    if any(v <= 0 for v in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} "
                           f"kernel_width: {kernel[1]}")
    if any(v <= 0 for v in stride):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {stride[0]} "
                           f"stride_width: {stride[1]}")
    if any(v <= 0 for v in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dilation[0]} "
                           f"dilation_width: {dilation[1]}")
    if any(v < 0 for v in padding):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} "
                           f"pad_width: {padding[1]}")
    return kernel, dilation, padding, stride


def _blocks(spatial, kernel, dilation, padding, stride):
    return tuple((s + 2 * p - d * (k - 1) - 1) // st + 1
                 for s, k, d, p, st in zip(spatial, kernel, dilation, padding, stride))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks (im2col): (N, C, H, W) -> (N, C*kH*kW, L), or the same without N."""
    check_tensor(input, "unfold", "input", 1)
    kernel, dilation, padding, stride = _fold_args(kernel_size, dilation, padding, stride, "unfold")
    nd = input._data.ndim
    if nd not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {nd}D)")
    unbatched = nd == 3
    x = input.unsqueeze(0) if unbatched else input
    spatial = x._data.shape[2:]
    blocks = _blocks(spatial, kernel, dilation, padding, stride)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size {tuple(spatial)}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding blocks "
                           f"as {blocks}, but its components must be at least one.")
    geom = _geometry(kernel, dilation, tuple((p, p) for p in padding), stride, spatial, blocks)
    out = Im2ColBackward0.apply(x, geom=geom)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding local blocks into an image (col2im, overlaps summed): (N, C*kH*kW, L) ->
    (N, C, *output_size), or the same without N."""
    check_tensor(input, "fold", "input", 1)
    output_size = _ntuple(output_size, 2, "fold", "output_size")
    if len(output_size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(output_size)}")
    kernel, dilation, padding, stride = _fold_args(kernel_size, dilation, padding, stride, "fold")
    nd = input._data.ndim
    if nd not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got "
                           f"{nd}D)")
    unbatched = nd == 2
    x = input.unsqueeze(0) if unbatched else input
    ckk, L = x._data.shape[1:]
    kprod = kernel[0] * kernel[1]
    if ckk % kprod:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={ckk} and kernel_size={kernel}.")
    blocks = _blocks(output_size, kernel, dilation, padding, stride)
    if blocks[0] * blocks[1] != L or any(b < 1 for b in blocks):
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, "
                           f"but got input.size(2)={L}.")
    geom = _geometry(kernel, dilation, tuple((p, p) for p in padding), stride, output_size, blocks)
    out = Col2ImBackward0.apply(x, geom=geom, channels=ckk // kprod)
    return out.squeeze(0) if unbatched else out

