"""Winograd F(2x2, 3x3): the CPU's 3x3 convolutions at stride 1 with 16 products per 2x2 block of outputs and
channel pair instead of 36 (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks").

Each 4x4 input patch d under a 2x2 output tile becomes ``B^T d B``, each filter ``G w G^T``; summed over input
channels their elementwise products are 16 matrix products (one per position of the 4x4), and ``A^T m A`` of a
tile's 4x4 result is its 2x2 outputs. The input gradient is the same convolution of the output gradient with the
flipped, transposed filters (padding 2 - p); the weight gradient is the adjoint, ``G^T (sum over tiles of (A g
A^T) * (B^T d B)) G``. F(2x2, 3x3) keeps float32 within about twice the error of a direct sum; F(4x4, 3x3)
would save more products but loses about a digit and a half, more than the tests allow against PyTorch.

The compiled loops (kernels/cnn_cpu.cpp) transform a chunk of tiles, multiply and transform back while the
chunk is in cache, one call per pass; without the library the NumPy bodies here do the same arithmetic on whole
arrays (equal to rounding). :func:`applies` is the one place that decides which convolutions take this path.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._types import Array, Shape

__all__ = ["applies", "numpy_forward", "numpy_weight_grad", "native_forward", "native_input_grad",
           "native_weight_grad", "tile_counts"]

# the transforms: B^T (input patch), G (filter), A^T (output tile)
_BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float64)
_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float64)
_AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float64)

# Winograd wins over the direct loop and im2col + product from this many input and output channels, at every
# image size (measured, batch 32, forward + both gradients: 16->16 at 32x32 0.77 of their time, 32->32 0.56,
# 128->128 at 2x2 0.50; 8->16 1.24 and 3->16 1.9, where the transforms cost more than the products they save)
_MIN_CHANNELS = 16
# the compiled loops' working sets: a chunk of transformed tiles per thread (with the products of one block of
# output channels), and the weight gradient's partial sums, sized to one core's L2
_CHUNK_BYTES = 1 << 20
_PARTS_MAX_BYTES = 1 << 20
# the transformed filters up to which the forward runs fused (above, phased)
_FUSED_MAX_WEIGHT_BYTES = 1 << 20
# the weight gradient in parts of at least this many tiles, at most this many parts (fixed by the shape, so the
# order of the sums does not depend on the threads); or, where its sums do not fit, in shared chunks of at least
# _SHARED_MIN_TILES tiles and about _SHARED_BYTES
_PART_MIN_TILES = 512
_MAX_PARTS = 8
_SHARED_MIN_TILES = 128
_SHARED_BYTES = 8 << 20
# the rows of the compiled kernel: chunks of tiles are multiples of it (cnn_cpu.cpp's kWinoRows)
_KERNEL_ROWS = 12
_VECTOR_BYTES = 64


def applies(kernel: Shape, stride: Shape, dilation: Shape, groups: int, channels: int, out_channels: int) -> bool:
    """Whether a convolution takes Winograd F(2x2, 3x3): 2-d 3x3 at stride 1, no dilation or groups, and enough
    channels on both sides."""
    return (tuple(kernel) == (3, 3) and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1) and groups == 1
            and min(channels, out_channels) >= _MIN_CHANNELS)


def tile_counts(blocks: Shape) -> tuple[int, int]:
    """2x2 output tiles down and across an output of ``blocks`` (the last row / column may be half outside)."""
    return -(-blocks[0] // 2), -(-blocks[1] // 2)


# ------------------------------------------------------------------------------------------- NumPy
def _along(mat: Array, a: Array, axis: int) -> Array:
    """``mat`` applied along ``axis`` of ``a``: out[i] = sum over k of mat[i, k] * a[k], zero entries skipped."""
    a = np.moveaxis(a, axis, 0)
    out: list[Array] = []
    for row in mat:
        terms = [a[k] if coef == 1 else (-a[k] if coef == -1 else a[k] * a.dtype.type(coef))
                 for k, coef in enumerate(row) if coef != 0]
        acc = terms[0]
        for term in terms[1:]:
            acc = acc + term
        out.append(acc)
    return np.moveaxis(np.stack(out), 0, axis)


def _sandwich(mat: Array, a: Array) -> Array:
    """``mat @ a @ mat.T`` over the last two axes of ``a``."""
    return _along(mat, _along(mat, a, -2), -1)


def _patches(xp: Array, th: int, tw: int) -> Array:
    """The 4x4 patches (N, C, th, tw, 4, 4) of the padded planes ``xp`` (N, C, >= 2 th + 2, >= 2 tw + 2), 2
    apart."""
    s = xp.strides
    return np.lib.stride_tricks.as_strided(xp, xp.shape[:2] + (th, tw, 4, 4), s[:2] + (2 * s[2], 2 * s[3]) + s[2:],
                                           writeable=False)


def _positions(a: Array, tiles_last: bool) -> Array:
    """(n, c, th, tw, 4, 4) as the 16 matrices of one position each: (16, c, n * th * tw), or (16, n * th * tw,
    c)."""
    c = a.shape[1]
    if tiles_last:
        return a.transpose(4, 5, 1, 0, 2, 3).reshape(16, c, -1)
    return a.transpose(4, 5, 0, 2, 3, 1).reshape(16, -1, c)


def numpy_forward(xp: Array, w: Array, bias: Array | None, blocks: Shape) -> Array:
    """The convolution (N, O, *blocks) of the padded planes ``xp`` (the input with its low padding in front and
    zeros to at least 2 tiles + 2 each way) with the 3x3 filters ``w`` (O, C, 3, 3), plus ``bias``."""
    th, tw = tile_counts(blocks)
    n, o = xp.shape[0], w.shape[0]
    dt = xp.dtype
    v = _positions(_sandwich(_BT.astype(dt), _patches(xp, th, tw)), True)
    u = _sandwich(_G.astype(dt), w).transpose(2, 3, 0, 1).reshape(16, o, -1)
    m = np.matmul(u, v).reshape(4, 4, o, n, th, tw).transpose(3, 2, 4, 5, 0, 1)
    y = _sandwich(_AT.astype(dt), m).transpose(0, 1, 2, 4, 3, 5).reshape(n, o, 2 * th, 2 * tw)
    y = np.ascontiguousarray(y[:, :, :blocks[0], :blocks[1]])
    if bias is not None:
        y += bias.reshape(1, o, 1, 1)
    return y


def numpy_weight_grad(xp: Array, gp: Array) -> Array:
    """The weight gradient (O, C, 3, 3) from the padded input planes ``xp`` (as :func:`numpy_forward` takes them)
    and the output gradient ``gp`` (N, O, 2 th, 2 tw), zeros past the output."""
    n, o, h2, w2 = gp.shape
    th, tw = h2 // 2, w2 // 2
    dt = xp.dtype
    v = _positions(_sandwich(_BT.astype(dt), _patches(xp, th, tw)), False)
    tiles = gp.reshape(n, o, th, 2, tw, 2).transpose(0, 1, 2, 4, 3, 5)
    gt = _positions(_sandwich(_AT.T.astype(dt), tiles), True)
    z = np.matmul(gt, v).reshape(4, 4, o, -1).transpose(2, 3, 0, 1)
    return np.ascontiguousarray(_sandwich(_G.T.astype(dt), z))


# ------------------------------------------------------------------------------------------- compiled
def _up(a: int, m: int) -> int:
    return -(-a // m) * m


def _chunk(per_tile: int, itemsize: int, budget: int, tiles: int) -> int:
    """Tiles per chunk: what fits ``budget`` bytes at ``per_tile`` elements a tile, in whole kernel rows."""
    tc = budget // (per_tile * itemsize) // _KERNEL_ROWS * _KERNEL_ROWS
    return max(_KERNEL_ROWS, min(tc, _up(tiles, _KERNEL_ROWS)))


def _geometry(src: Shape, dst: Shape, low: tuple[int, int], lanes: int, tc: int) -> tuple[int, ...]:
    """cnn_cpu.cpp's WinoGeo: a convolution reading ``src`` (N, C, H, W) into ``dst`` (N, O, oH, oW)."""
    n, c, h, w = src
    o, oh, ow = dst[1:]
    return (n, c, h, w, o, oh, ow, low[0], low[1], _up(c, lanes), _up(o, lanes), tc, c * h * w, o * oh * ow)


def _conv(lib: Any, x: Array, u: Array, bias: Array | None, low: tuple[int, int], out: Array, threads: int) -> None:
    """``out`` = the convolution of ``x`` with the transformed filters ``u``: fused where ``u`` stays in cache
    next to a chunk of tiles, else phased over shared chunks so that each panel of ``u`` is read once a chunk."""
    lanes = _VECTOR_BYTES // x.itemsize
    c, o = x.shape[1], out.shape[1]
    cp, op = _up(c, lanes), _up(o, lanes)
    tiles = out.shape[0] * int(np.prod(tile_counts(out.shape[2:])))
    if u.nbytes <= _FUSED_MAX_WEIGHT_BYTES:
        tc = _chunk(16 * (cp + 2 * lanes), x.itemsize, _CHUNK_BYTES, tiles)
        lib.wino_conv(_geometry(x.shape, out.shape, low, lanes, tc), x, u, bias, out, tiles, threads)
        return
    tc = min(_up(tiles, _KERNEL_ROWS), max(_SHARED_MIN_TILES, _SHARED_BYTES // (16 * (cp + op) * x.itemsize)))
    args = _geometry(x.shape, out.shape, low, lanes, tc)
    v, m = np.empty(16 * (tc + 1) * cp, x.dtype), np.empty(16 * (tc + 1) * op, x.dtype)
    for t0 in range(0, tiles, tc):
        cnt = min(tc, tiles - t0)
        lib.wino_tiles(args, 0, x, v, t0, cnt, threads)
        lib.wino_products(args, 0, v, u, m, cnt, False, threads)
        lib.wino_untile(args, m, bias, out, t0, cnt, threads)


def native_forward(lib: Any, x: Array, w: Array, bias: Array | None, low: tuple[int, int], blocks: Shape,
                   threads: int) -> Array:
    """:func:`numpy_forward` in the compiled loops, on the unpadded contiguous ``x`` (low padding ``low``)."""
    o, c = w.shape[:2]
    lanes = _VECTOR_BYTES // x.itemsize
    u = np.empty((16, c, _up(o, lanes)), x.dtype)
    lib.wino_weight((c, o, 9, c * 9, 0, u.shape[2]), np.ascontiguousarray(w), u, threads)
    y = np.empty((x.shape[0], o) + tuple(blocks), x.dtype)
    _conv(lib, x, u, bias, low, y, threads)
    return y


def native_input_grad(lib: Any, g: Array, w: Array, low: tuple[int, int], x_shape: Shape, threads: int) -> Array:
    """The input gradient: the convolution of the contiguous ``g`` with the flipped, transposed filters, its
    windows 2 - ``low`` before each input position."""
    o, c = w.shape[:2]
    lanes = _VECTOR_BYTES // g.itemsize
    u = np.empty((16, o, _up(c, lanes)), g.dtype)
    lib.wino_weight((o, c, c * 9, 9, 1, u.shape[2]), np.ascontiguousarray(w), u, threads)
    dx = np.empty(x_shape, g.dtype)
    _conv(lib, g, u, None, (2 - low[0], 2 - low[1]), dx, threads)
    return dx


def native_weight_grad(lib: Any, g: Array, x: Array, low: tuple[int, int], w_shape: Shape, threads: int) -> Array:
    """The weight gradient from the contiguous input ``x`` and output gradient ``g``: its 16 products summed in
    parts (each in one thread's cache) where they are small, else over chunks of tiles shared by the threads."""
    n, c = x.shape[:2]
    o = w_shape[0]
    dt, size = x.dtype, x.itemsize
    lanes = _VECTOR_BYTES // size
    cp, op = _up(c, lanes), _up(o, lanes)
    tiles = n * int(np.prod(tile_counts(g.shape[2:])))
    per_tile = 16 * (cp + op)
    if 16 * o * cp * size <= _PARTS_MAX_BYTES:
        per_part = -(-tiles // max(1, min(_MAX_PARTS, tiles // _PART_MIN_TILES)))
        tc = _chunk(per_tile, size, _CHUNK_BYTES, per_part)
        args = _geometry(x.shape, g.shape, low, lanes, tc)
        z = np.empty((-(-tiles // per_part), 16, o, cp), dt)
        lib.wino_wgrad_parts(args, per_part, x, g, z, tiles, threads)
    else:
        tc = min(_up(tiles, _KERNEL_ROWS), max(_SHARED_MIN_TILES, _SHARED_BYTES // (per_tile * size)))
        args = _geometry(x.shape, g.shape, low, lanes, tc)
        v, gt = np.empty(16 * (tc + 1) * cp, dt), np.empty(16 * (tc + 1) * op, dt)
        z = np.empty((1, 16, o, cp), dt)
        for t0 in range(0, tiles, tc):
            cnt = min(tc, tiles - t0)
            lib.wino_tiles(args, 0, x, v, t0, cnt, threads)
            lib.wino_tiles(args, 1, g, gt, t0, cnt, threads)
            lib.wino_products(args, 1, v, gt, z, cnt, t0 > 0, threads)
    dw = np.empty(w_shape, dt)
    lib.wino_wgrad_finish(args, z, dw, threads)
    return dw
