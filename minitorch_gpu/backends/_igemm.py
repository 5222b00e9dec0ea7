"""Implicit GEMM on channels-last rows: the CPU's strided 2-d convolutions (forward and weight gradient) through
the compiled loops of kernels/cnn_cpu.cpp, which build each chunk of output positions' rows of taps in cache and
multiply them with the register kernel Winograd uses. The same products as im2col + BLAS, which remains the
path without the library (and the reference the tests compare with); :func:`applies` says which convolutions
take it.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._types import Array, Shape

__all__ = ["applies", "native_forward", "native_weight_grad"]

# Measured with benchmarks/conv_cpu.py against im2col + OpenBLAS (ResNet18's strided layers, batch 32): it wins
# from this many input and output channels (below, padding channels to whole vectors costs more than the faster
# kernel gains), for kernels of more than one tap (a 1x1 kernel's rows are a plain strided copy that im2col
# makes as fast), and while the packed filters stay in cache (they are read once per chunk of positions, and
# the weight gradient's sums are as large): 3x3 64->128 and 128->256 take 0.7-0.8 of im2col's time, 256->512
# (4.5 MiB of filters) ties forward and loses on the weight gradient.
_MIN_CHANNELS = 16
_MAX_FILTER_BYTES = 2 << 20
# a chunk's rows of taps (and a block of products) per thread, sized to one core's L2
_CHUNK_BYTES = 1 << 19
# the weight gradient in parts of at least this many positions, at most _MAX_PARTS of them (fixed by the shape)
_PART_MIN_POSITIONS = 1024
_MAX_PARTS = 8
_VECTOR_BYTES = 64
_KERNEL_ROWS = 12


def applies(kernel: Shape, stride: Shape, groups: int, channels: int, out_channels: int, itemsize: int) -> bool:
    """Whether a convolution takes the implicit GEMM: 2-d, no groups, strided, more than one tap, enough channels
    both sides, filters that fit the cache."""
    return (len(kernel) == 2 and groups == 1 and any(s > 1 for s in stride) and kernel[0] * kernel[1] > 1
            and min(channels, out_channels) >= _MIN_CHANNELS
            and kernel[0] * kernel[1] * channels * out_channels * itemsize <= _MAX_FILTER_BYTES)


def _up(a: int, m: int) -> int:
    return -(-a // m) * m


def _geometry(x_shape: Shape, o: int, blocks: Shape, kernel: Shape, stride: Shape, dilation: Shape,
              low: Shape, itemsize: int) -> tuple[int, ...]:
    """cnn_cpu.cpp's GemmGeo, with positions per chunk sized to _CHUNK_BYTES of rows of taps."""
    n, c, h, w = x_shape
    lanes = _VECTOR_BYTES // itemsize
    cp, op = _up(c, lanes), _up(o, lanes)
    row = kernel[0] * kernel[1] * cp * itemsize
    tc = max(_KERNEL_ROWS, _CHUNK_BYTES // row // _KERNEL_ROWS * _KERNEL_ROWS)
    tc = min(tc, _up(n * blocks[0] * blocks[1], _KERNEL_ROWS))
    return (n, c, h, w, o, blocks[0], blocks[1], kernel[0], kernel[1], stride[0], stride[1], dilation[0],
            dilation[1], low[0], low[1], cp, op, tc, c * h * w, o * blocks[0] * blocks[1])


def native_forward(lib: Any, x: Array, w: Array, bias: Array | None, stride: Shape, low: Shape, dilation: Shape,
                   blocks: Shape, threads: int) -> Array:
    """The convolution (N, O, *blocks) of the contiguous ``x`` with ``w`` (O, C, kH, kW), plus ``bias``."""
    o, c = w.shape[:2]
    args = _geometry(x.shape, o, blocks, w.shape[2:], stride, dilation, low, x.itemsize)
    cp, op = args[15], args[16]
    b = np.zeros(w.shape[2] * w.shape[3] * cp * op, x.dtype)
    lib.gemm_weight((o, c, w.shape[2] * w.shape[3], cp, op), np.ascontiguousarray(w), b, threads)
    y = np.empty((x.shape[0], o) + tuple(blocks), x.dtype)
    lib.gemm_conv(args, x, b, bias, y, threads)
    return y


def native_weight_grad(lib: Any, g: Array, x: Array, stride: Shape, low: Shape, dilation: Shape, w_shape: Shape,
                       threads: int) -> Array:
    """The weight gradient (``w_shape``) from the contiguous input ``x`` and output gradient ``g``, summed in
    parts fixed by the shape."""
    o = w_shape[0]
    args = _geometry(x.shape, o, g.shape[2:], w_shape[2:], stride, dilation, low, x.itemsize)
    positions = args[0] * args[5] * args[6]
    per_part = -(-positions // max(1, min(_MAX_PARTS, positions // _PART_MIN_POSITIONS)))
    z = np.empty((-(-positions // per_part), o, w_shape[2] * w_shape[3] * args[15]), x.dtype)
    lib.gemm_wgrad_parts(args, per_part, x, g, z, threads)
    dw = np.empty(w_shape, x.dtype)
    lib.gemm_wgrad_finish(args, z, dw, threads)
    return dw
