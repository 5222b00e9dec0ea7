"""The CPU's convolution, max pooling and batch norm (the primitives of ``_cnn.py``) for float32 and float64.

Convolution: im2col and one matrix product per chunk of samples and group, the chunk sized so that its columns
stay in the core's cache between being written and being multiplied (the whole batch's columns, 9x the input
for a 3x3 kernel, do not: writing them out and reading them back cost as much as the product). The columns of a
chunk are laid out (C/groups * K, samples * positions), so that the product with the weight (O/groups,
C/groups * K) is one GEMM through NumPy's BLAS whose result is the output chunk: with one sample per chunk it is
written in place, with several it is copied to (samples, O, positions). The input gradient is the product with
the transposed weight followed by col2im, the weight gradient the product of the output gradient with the
columns, accumulated over the chunks. A chunk holds one sample when its columns fill the cache budget and the
product is wide enough, else as many as the budget (or a minimum width) asks.

The copies around the products (im2col, col2im) run in kernels/cnn_cpu.cpp when it builds here
(``_cnn_native``), else in NumPy (a strided-window copy, a padded scatter per kernel tap): the same products in
the same order, so both give identical results. Max pooling and batch norm are one compiled pass each (two per
channel where a statistic must be known first, from cache); without the library they decline and the nn layer's
NumPy composition runs.
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _cnn_native, _igemm, _winograd
from ._cnn import CnnMixin, Pads
from ._types import Array, Shape

__all__ = ["CpuCnnMixin"]

# the columns of a chunk: about what one core's L2 holds next to the operands of the product
_COLS_BYTES = 1 << 21
# the product's width (samples * positions) below which a chunk takes more samples: BLAS is slow on thin products
_MIN_WIDTH = 256
# the direct convolution beats im2col + product below this many columns per output (C/groups * K), or on output
# rows of at least this many bytes (two vectors)
_DIRECT_MAX_COLUMNS = 256
_DIRECT_MIN_ROW_BYTES = 96


class _Plan:
    """One convolution seen from its input image ``x_shape`` (N, C, *spatial) and output ``blocks``."""

    def __init__(self, x_shape: Shape, w_shape: Shape, stride: Shape, pads: Pads, dilation: Shape, groups: int,
                 blocks: Shape, itemsize: int) -> None:
        self.n, c = x_shape[0], x_shape[1]
        self.spatial = tuple(x_shape[2:])
        self.kernel = tuple(w_shape[2:])
        self.stride, self.dilation, self.blocks = tuple(stride), tuple(dilation), tuple(blocks)
        self.low = tuple(lo for lo, _ in pads)
        self.groups = groups
        self.cg = c // groups
        self.og = w_shape[0] // groups
        self.ck = self.cg * math.prod(self.kernel)
        self.S = math.prod(self.spatial)
        self.L = math.prod(self.blocks)
        per_sample = self.ck * self.L * itemsize
        nb = max(1, _COLS_BYTES // max(per_sample, 1))
        if self.L < _MIN_WIDTH:
            nb = max(nb, -(-_MIN_WIDTH // max(self.L, 1)))
        self.nb = min(self.n, nb)
        # a 1x1 kernel at stride 1 without padding: one sample's columns are its image
        self.identity = (all(k == 1 for k in self.kernel) and all(s == 1 for s in self.stride)
                         and not any(self.low) and self.blocks == self.spatial)
        self.geo = _cnn_native.geometry(self.cg, self.spatial, self.kernel, self.stride, self.low, self.dilation,
                                        self.blocks, c * self.S, self.S)
        # the direct loop: 1-d and 2-d at stride 1, where it beats the product (measured: few input channels per
        # output, or rows wide enough to fill two vectors)
        self.winograd = len(self.kernel) == 2 and _winograd.applies(self.kernel, self.stride, self.dilation, groups,
                                                                    c, self.og * groups)
        self.igemm = _igemm.applies(self.kernel, self.stride, groups, c, self.og * groups, itemsize)
        self.direct = (len(self.kernel) <= 2 and all(s == 1 for s in self.stride)
                       and (self.ck <= _DIRECT_MAX_COLUMNS or self.blocks[-1] * itemsize >= _DIRECT_MIN_ROW_BYTES))

    def chunks(self) -> list[tuple[int, int]]:
        return [(n0, min(self.nb, self.n - n0)) for n0 in range(0, self.n, self.nb)]

    def extents(self) -> tuple[int, ...]:
        """The padded image the windows read: the low padding, the image, and zeros up to the last window."""
        return tuple(max(lo + n, (b - 1) * s + d * (k - 1) + 1)
                     for lo, n, b, s, d, k in zip(self.low, self.spatial, self.blocks, self.stride, self.dilation,
                                                  self.kernel))

    def window_shape(self, batch: int) -> tuple[int, ...]:
        return (self.cg,) + self.kernel + (batch,) + self.blocks


@functools.lru_cache(maxsize=512)
def _cached_plan(x_shape: Shape, w_shape: Shape, stride: Shape, pads: Pads, dilation: Shape, groups: int,
                 blocks: Shape, itemsize: int, rules: tuple[Any, ...]) -> _Plan:
    return _Plan(x_shape, w_shape, stride, pads, dilation, groups, blocks, itemsize)


def _plan(x_shape: Shape, w_shape: Shape, stride: Shape, pads: Pads, dilation: Shape, groups: int, blocks: Shape,
          itemsize: int) -> _Plan:
    """The (read-only) plan of a convolution, shared by every call of the same geometry: a training step makes
    the same few convolutions each time, and a plan costs about 9 us to work out (0.5 us from the cache). The
    key holds the module settings a plan reads, so that changing one (tests do) makes new plans."""
    rules = (_COLS_BYTES, _MIN_WIDTH, _DIRECT_MAX_COLUMNS, _DIRECT_MIN_ROW_BYTES, _winograd._MIN_CHANNELS,
             _igemm._MIN_CHANNELS, _igemm._MAX_FILTER_BYTES)
    try:
        return _cached_plan(tuple(x_shape), tuple(w_shape), tuple(stride), tuple(map(tuple, pads)),
                            tuple(dilation), groups, tuple(blocks), itemsize, rules)
    except TypeError:  # an unhashable part: work it out afresh
        return _Plan(x_shape, w_shape, stride, pads, dilation, groups, blocks, itemsize)


def _plane_view(shape: Shape) -> tuple[int, int]:
    """A 1-d or 2-d spatial shape as (rows, columns)."""
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])


def _pad_planes(a: Array, low: tuple[int, int], rows: int, cols: int) -> Array:
    """``a`` (N, C, *spatial of 1 or 2 dims) in zeros (N, C, rows, cols) with its first element at ``low`` (either
    offset may be negative: what falls outside is left out)."""
    n, c = a.shape[:2]
    h, w = _plane_view(a.shape[2:])
    a4 = a.reshape(n, c, h, w)
    out = np.zeros((n, c, rows, cols), a.dtype)
    r0, c0 = max(low[0], 0), max(low[1], 0)
    s0, s1 = r0 - low[0], c0 - low[1]
    nr, nc = min(h - s0, rows - r0), min(w - s1, cols - c0)
    if nr > 0 and nc > 0:
        out[:, :, r0:r0 + nr, c0:c0 + nc] = a4[:, :, s0:s0 + nr, s1:s1 + nc]
    return out


def _pack_weight(w: Array) -> Array:
    """One group's weight (O, C, *kernel) as the direct convolution reads it: (ceil(O / B), C, K, B), zeros past
    O, B the block of output channels."""
    o, c = w.shape[:2]
    blk = _cnn_native.DIRECT_BLOCK
    nb = -(-o // blk)
    k = math.prod(w.shape[2:])
    padded = np.zeros((nb * blk, c, k), w.dtype)
    padded[:o] = w.reshape(o, c, k)
    return np.ascontiguousarray(padded.reshape(nb, blk, c, k).transpose(0, 2, 3, 1))


def _floats(*arrays: Array | None) -> bool:
    """All given arrays are NumPy float32 or all float64 (None skipped)."""
    dt = None
    for a in arrays:
        if a is None:
            continue
        if not isinstance(a, np.ndarray) or _cnn_native.dtype_code(a.dtype) is None:
            return False
        if dt is None:
            dt = a.dtype
        elif a.dtype != dt:
            return False
    return True


class CpuCnnMixin(CnnMixin):
    """``_cnn.py``'s primitives on NumPy arrays, with kernels/cnn_cpu.cpp where it builds."""

    # the compiled loops of kernels/cnn_cpu.cpp; False runs the NumPy bodies (tests compare the two)
    native_nn = True

    if TYPE_CHECKING:
        def _optim_threads(self) -> int: ...  # OptimMixin's: the thread count of the backend's pool

    def _cnn_lib(self) -> _cnn_native.Cnn | None:
        return _cnn_native.library() if self.native_nn else None

    # ------------------------------------------------------------------------------------- im2col / col2im
    def _columns(self, p: _Plan, lib: Any, x: Array, n0: int, batch: int, c0: int, buf: Array) -> Array:
        """The columns (cg * K, batch * L) of samples n0.. and channels c0.. of the contiguous ``x``."""
        if p.identity and batch == 1:
            return x.reshape(p.n, -1, p.S)[n0, c0:c0 + p.cg]
        cols = buf[:p.ck * batch * p.L].reshape(p.ck, batch * p.L)
        if lib is not None:
            lib.im2col(p.geo, x[n0, c0], batch, cols, self._optim_threads())
            return cols
        part = x[n0:n0 + batch, c0:c0 + p.cg]
        ext = p.extents()
        padded = part
        if ext != p.spatial or any(p.low):
            padded = np.zeros(part.shape[:2] + ext, part.dtype)
            padded[(slice(None), slice(None)) + tuple(slice(lo, lo + n) for lo, n in zip(p.low, p.spatial))] = part
        st = padded.strides
        k = len(p.kernel)
        strides = (st[1],) + tuple(st[2 + i] * p.dilation[i] for i in range(k)) + (st[0],) + \
            tuple(st[2 + i] * p.stride[i] for i in range(k))
        win = np.lib.stride_tricks.as_strided(padded, p.window_shape(batch), strides, writeable=False)
        np.copyto(cols.reshape(p.window_shape(batch)), win)
        return cols

    def _scatter_columns(self, p: _Plan, lib: Any, cols: Array, dx: Array, n0: int, batch: int, c0: int) -> None:
        """col2im: samples n0.. and channels c0.. of the contiguous ``dx`` overwritten with the sum of the columns
        at the positions they were read from, kernel taps in ascending order."""
        if lib is not None:
            lib.col2im(p.geo, cols, batch, dx[n0, c0], self._optim_threads())
            return
        k = len(p.kernel)
        out = np.zeros((batch, p.cg) + p.extents(), cols.dtype)
        cv = cols.reshape(p.window_shape(batch))
        lead = (slice(None), slice(None))
        for tap in itertools.product(*[range(kk) for kk in p.kernel]):
            region = out[lead + tuple(slice(tap[i] * p.dilation[i],
                                            tap[i] * p.dilation[i] + p.stride[i] * (p.blocks[i] - 1) + 1, p.stride[i])
                                      for i in range(k))]
            np.add(region, cv[(slice(None),) + tap].swapaxes(0, 1), out=region)
        dx[n0:n0 + batch, c0:c0 + p.cg] = out[lead + tuple(slice(lo, lo + n) for lo, n in zip(p.low, p.spatial))]

    @staticmethod
    def _output_chunk(p: _Plan, g3: Array, n0: int, batch: int, o0: int, buf: Array | None) -> Array:
        """Output-shaped rows (og, batch * L) of samples n0.. and channels o0.. of ``g3`` (N, O, L)."""
        if batch == 1:
            return g3[n0, o0:o0 + p.og]
        assert buf is not None
        t = buf[:p.og * batch * p.L].reshape(p.og, batch, p.L)
        np.copyto(t, g3[n0:n0 + batch, o0:o0 + p.og].transpose(1, 0, 2))
        return t.reshape(p.og, batch * p.L)

    def _buffers(self, p: _Plan, dt: Any, cols: bool) -> tuple[Array, Array | None]:
        col_buf = np.empty(p.ck * p.nb * p.L if cols else 0, dt)
        out_buf = np.empty(p.og * p.nb * p.L, dt) if p.nb > 1 else None
        return col_buf, out_buf

    def _direct(self, lib: Any, x: Array, w: Array, bias: Array | None, low: tuple[int, int],
                dilation: tuple[int, int], groups: int, out_spatial: Shape) -> Array:
        """The stride-1 convolution of ``x`` (N, C, *spatial) with ``w`` (O, C/groups, *kernel), 1-d or 2-d, by the
        compiled direct loop: ``x`` placed in zeros with its first element at ``low`` (negative: cropped), each
        output row reading its taps from there."""
        n, c = x.shape[:2]
        o = w.shape[0]
        kh, kw = _plane_view(w.shape[2:])
        oh, ow = _plane_view(out_spatial)
        vec = _cnn_native.DIRECT_VECTOR_BYTES // x.itemsize
        rows = oh + (kh - 1) * dilation[0]
        cols = -(-ow // vec) * vec + (kw - 1) * dilation[1]
        xp = _pad_planes(x, low, rows, cols)
        y = np.empty((n, o) + tuple(out_spatial), x.dtype)
        cg, og = c // groups, o // groups
        for gi in range(groups):
            wp = _pack_weight(np.ascontiguousarray(w[gi * og:(gi + 1) * og]))
            args = (n, cg, rows, cols, og, kh, kw, dilation[0], dilation[1], oh, ow, c * rows * cols, o * oh * ow)
            lib.direct_conv(args, xp[:, gi * cg], wp, None if bias is None else bias[gi * og:(gi + 1) * og],
                            y[:, gi * og], self._optim_threads())
        return y

    def _direct_weight_grad(self, lib: Any, g: Array, x: Array, p: _Plan, w_shape: Shape) -> Array:
        """The weight gradient of a convolution that :meth:`_direct` serves, by the compiled direct loop."""
        low, dil = self._plane_geometry(p)
        kh, kw = _plane_view(p.kernel)
        oh, ow = _plane_view(p.blocks)
        rows = oh + (kh - 1) * dil[0]
        cols = ow + (kw - 1) * dil[1]
        xp = _pad_planes(x, low, rows, cols)
        g = np.ascontiguousarray(g)
        o, c = w_shape[0], x.shape[1]
        dw = np.empty(w_shape, x.dtype)
        for gi in range(p.groups):
            args = (p.n, p.cg, rows, cols, p.og, kh, kw, dil[0], dil[1], oh, ow, c * rows * cols, o * oh * ow)
            lib.direct_conv_weight_grad(args, xp[:, gi * p.cg], g[:, gi * p.og], dw[gi * p.og:(gi + 1) * p.og],
                                        self._optim_threads())
        return dw

    @staticmethod
    def _plane_geometry(p: _Plan) -> tuple[tuple[int, int], tuple[int, int]]:
        """(low padding, dilation) of a 1-d or 2-d plan as (rows, columns) pairs."""
        if len(p.kernel) == 1:
            return (0, p.low[0]), (1, p.dilation[0])
        return (p.low[0], p.low[1]), (p.dilation[0], p.dilation[1])

    # ------------------------------------------------------------------------------------- Winograd
    # 3x3 at stride 1 (_winograd.applies): the compiled loops, else the same arithmetic in NumPy on padded planes
    def _winograd_forward(self, p: _Plan, lib: Any, x: Array, w: Array, bias: Array | None) -> Array:
        low = (p.low[0], p.low[1])
        if lib is not None:
            b = None if bias is None else np.ascontiguousarray(bias)
            return _winograd.native_forward(lib, np.ascontiguousarray(x), w, b, low, p.blocks, self._optim_threads())
        th, tw = _winograd.tile_counts(p.blocks)
        return _winograd.numpy_forward(_pad_planes(x, low, 2 * th + 2, 2 * tw + 2), w, bias, p.blocks)

    def _winograd_input_grad(self, p: _Plan, lib: Any, g: Array, w: Array, x_shape: Shape) -> Array:
        low = (p.low[0], p.low[1])
        if lib is not None:
            return _winograd.native_input_grad(lib, np.ascontiguousarray(g), w, low, x_shape, self._optim_threads())
        th, tw = _winograd.tile_counts(p.spatial)
        gp = _pad_planes(g, (2 - low[0], 2 - low[1]), 2 * th + 2, 2 * tw + 2)
        return _winograd.numpy_forward(gp, np.flip(w, (2, 3)).swapaxes(0, 1), None, p.spatial)

    def _winograd_weight_grad(self, p: _Plan, lib: Any, g: Array, x: Array, w_shape: Shape) -> Array:
        low = (p.low[0], p.low[1])
        if lib is not None:
            return _winograd.native_weight_grad(lib, np.ascontiguousarray(g), np.ascontiguousarray(x), low, w_shape,
                                                self._optim_threads())
        th, tw = _winograd.tile_counts(p.blocks)
        return _winograd.numpy_weight_grad(_pad_planes(x, low, 2 * th + 2, 2 * tw + 2),
                                           _pad_planes(g, (0, 0), 2 * th, 2 * tw))

    # ------------------------------------------------------------------------------------- convolution
    def conv_forward(self, x: Array, w: Array, bias: Array | None, stride: Shape, pads: Pads, dilation: Shape,
                     groups: int, blocks: Shape) -> Array | None:
        if not _floats(x, w, bias) or 0 in x.shape or 0 in w.shape:
            return None
        p = _plan(x.shape, w.shape, stride, pads, dilation, groups, blocks, x.itemsize)
        lib = self._cnn_lib()
        if p.winograd:
            return self._winograd_forward(p, lib, x, w, bias)
        if lib is not None and p.igemm:
            return _igemm.native_forward(lib, np.ascontiguousarray(x), w, None if bias is None else
                                         np.ascontiguousarray(bias), p.stride, p.low, p.dilation, p.blocks,
                                         self._optim_threads())
        if lib is not None and p.direct:
            low, dil = self._plane_geometry(p)
            bias_c = None if bias is None else np.ascontiguousarray(bias)
            return self._direct(lib, x, w, bias_c, low, dil, groups, p.blocks)
        x = np.ascontiguousarray(x)
        w2 = np.ascontiguousarray(w).reshape(w.shape[0], p.ck)
        y = np.empty((p.n, w.shape[0], p.L), x.dtype)
        col_buf, out_buf = self._buffers(p, x.dtype, not (p.identity and p.nb == 1))
        for gi in range(groups):
            o0 = gi * p.og
            wg = w2[o0:o0 + p.og]
            bg = None if bias is None else bias[o0:o0 + p.og].reshape(p.og, 1)
            for n0, batch in p.chunks():
                cols = self._columns(p, lib, x, n0, batch, gi * p.cg, col_buf)
                if batch == 1:
                    dst = y[n0, o0:o0 + p.og]
                    np.matmul(wg, cols, out=dst)
                    if bg is not None:
                        np.add(dst, bg, out=dst)
                    continue
                assert out_buf is not None
                t = out_buf[:p.og * batch * p.L].reshape(p.og, batch * p.L)
                np.matmul(wg, cols, out=t)
                t3 = t.reshape(p.og, batch, p.L).transpose(1, 0, 2)
                dst = y[n0:n0 + batch, o0:o0 + p.og]
                if bg is None:
                    np.copyto(dst, t3)
                else:
                    np.add(t3, bg, out=dst)
        return y.reshape((p.n, w.shape[0]) + p.blocks)

    def conv_input_grad(self, g: Array, w: Array, stride: Shape, pads: Pads, dilation: Shape, groups: int,
                        x_shape: Shape) -> Array | None:
        if not _floats(g, w) or 0 in g.shape or 0 in w.shape or 0 in x_shape:
            return None
        p = _plan(x_shape, w.shape, stride, pads, dilation, groups, g.shape[2:], g.itemsize)
        lib = self._cnn_lib()
        if p.winograd:
            return self._winograd_input_grad(p, lib, g, w, x_shape)
        if lib is not None and p.direct and _plan(g.shape, (x_shape[1], w.shape[0] // groups) + p.kernel, stride,
                                                  pads, dilation, groups, p.spatial, g.itemsize).direct:
            # at stride 1 the input gradient is the convolution of g with the flipped, transposed weight, g
            # placed so that each input position's taps are the outputs that read it
            low, dil = self._plane_geometry(p)
            kh, kw = _plane_view(p.kernel)
            og = w.shape[0] // groups
            flipped = np.flip(w, tuple(range(2, w.ndim)))
            wt = flipped.reshape((groups, og, p.cg) + p.kernel).swapaxes(1, 2).reshape((p.cg * groups, og) + p.kernel)
            return self._direct(lib, g, wt, None, ((kh - 1) * dil[0] - low[0], (kw - 1) * dil[1] - low[1]), dil,
                                groups, p.spatial)
        g3 = np.ascontiguousarray(g).reshape(p.n, w.shape[0], p.L)
        w2 = np.ascontiguousarray(w).reshape(w.shape[0], p.ck)
        dx = np.empty(x_shape, g.dtype)
        col_buf, out_buf = self._buffers(p, g.dtype, True)
        for gi in range(groups):
            o0, c0 = gi * p.og, gi * p.cg
            wt = w2[o0:o0 + p.og].T
            for n0, batch in p.chunks():
                gch = self._output_chunk(p, g3, n0, batch, o0, out_buf)
                if p.identity and batch == 1:
                    np.matmul(wt, gch, out=dx.reshape(p.n, -1, p.S)[n0, c0:c0 + p.cg])
                    continue
                cols = col_buf[:p.ck * batch * p.L].reshape(p.ck, batch * p.L)
                np.matmul(wt, gch, out=cols)
                self._scatter_columns(p, lib, cols, dx, n0, batch, c0)
        return dx

    def conv_weight_grad(self, g: Array, x: Array, stride: Shape, pads: Pads, dilation: Shape, groups: int,
                         w_shape: Shape) -> Array | None:
        if not _floats(g, x) or 0 in g.shape or 0 in x.shape or 0 in w_shape:
            return None
        p = _plan(x.shape, w_shape, stride, pads, dilation, groups, g.shape[2:], x.itemsize)
        lib = self._cnn_lib()
        if p.winograd:
            return self._winograd_weight_grad(p, lib, g, x, w_shape)
        if lib is not None and p.igemm:
            return _igemm.native_weight_grad(lib, np.ascontiguousarray(g), np.ascontiguousarray(x), p.stride, p.low,
                                             p.dilation, w_shape, self._optim_threads())
        if lib is not None and p.direct:
            return self._direct_weight_grad(lib, g, x, p, w_shape)
        x = np.ascontiguousarray(x)
        g3 = np.ascontiguousarray(g).reshape(p.n, w_shape[0], p.L)
        gw = np.empty((w_shape[0], p.ck), x.dtype)
        col_buf, out_buf = self._buffers(p, x.dtype, not (p.identity and p.nb == 1))
        part = np.empty((p.og, p.ck), x.dtype)
        for gi in range(groups):
            o0 = gi * p.og
            acc = gw[o0:o0 + p.og]
            for k, (n0, batch) in enumerate(p.chunks()):
                cols = self._columns(p, lib, x, n0, batch, gi * p.cg, col_buf)
                gch = self._output_chunk(p, g3, n0, batch, o0, out_buf)
                if k == 0:
                    np.matmul(gch, cols.T, out=acc)
                else:
                    np.matmul(gch, cols.T, out=part)
                    np.add(acc, part, out=acc)
        return gw.reshape(w_shape)

    # ------------------------------------------------------------------------------------- max pooling
    def max_pool_forward(self, x: Array, kernel: Shape, stride: Shape, pads: Pads, dilation: Shape,
                         blocks: Shape) -> tuple[Array, Array] | None:
        lib = self._cnn_lib()
        if lib is None or not _floats(x) or x.size == 0:
            return None
        k = len(kernel)
        lead = x.shape[:-k]
        x = np.ascontiguousarray(x)
        y = np.empty(lead + tuple(blocks), x.dtype)
        indices = np.empty(y.shape, np.int64)
        geo = _cnn_native.geometry(1, x.shape[-k:], kernel, stride, [lo for lo, _ in pads], dilation, blocks, 0, 0)
        lib.max_pool_forward(geo, x, math.prod(lead), y, indices, self._optim_threads())
        return y, indices

    def max_pool_backward(self, g: Array, indices: Array, x_shape: Shape, nspatial: int) -> Array | None:
        lib = self._cnn_lib()
        if lib is None or not _floats(g) or g.size == 0 or indices.dtype != np.int64:
            return None
        spatial, blocks = x_shape[-nspatial:], g.shape[-nspatial:]
        geo = _cnn_native.geometry(1, spatial, (1,) * nspatial, (1,) * nspatial, (0,) * nspatial, (1,) * nspatial,
                                   blocks, 0, 0)
        dx = np.empty(x_shape, g.dtype)
        lib.max_pool_backward(geo, np.ascontiguousarray(g), np.ascontiguousarray(indices),
                              math.prod(x_shape[:-nspatial]), dx, self._optim_threads())
        return dx

    # ------------------------------------------------------------------------------------- batch norm
    def batch_norm_forward(self, x: Array, weight: Array | None, bias: Array | None,
                           eps: float) -> tuple[Array, Array, Array, Array] | None:
        lib = self._cnn_lib()
        if lib is None or not _floats(x, weight, bias) or x.ndim != 3 or x.size == 0:
            return None
        x = np.ascontiguousarray(x)
        c = x.shape[1]
        y = np.empty_like(x)
        mean, var, rstd = (np.empty(c, x.dtype) for _ in range(3))
        lib.batch_norm_forward(x, _vector(weight), _vector(bias), float(eps), y, mean, var, rstd,
                               self._optim_threads())
        return y, mean, var, rstd

    def batch_norm_backward(self, g: Array, x: Array, weight: Array | None, mean: Array, rstd: Array,
                            needs: tuple[bool, bool, bool]) -> tuple[Array | None, Array | None,
                                                                      Array | None] | None:
        lib = self._cnn_lib()
        if lib is None or not _floats(g, x, weight, mean, rstd) or x.ndim != 3 or x.size == 0:
            return None
        c = x.shape[1]
        nx, nw, nb = needs
        dx = np.empty(x.shape, x.dtype) if nx else None
        dw = np.empty(c, x.dtype) if nw else None
        db = np.empty(c, x.dtype) if nb else None
        lib.batch_norm_backward(np.ascontiguousarray(g), np.ascontiguousarray(x), _vector(weight),
                                _vector(mean), _vector(rstd), dx, dw, db, self._optim_threads())
        return dx, dw, db


def _vector(a: Array | None) -> Array | None:
    return None if a is None else np.ascontiguousarray(a).reshape(-1)

