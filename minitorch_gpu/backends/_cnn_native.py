"""The compiled loops of kernels/cnn_cpu.cpp (im2col, col2im, max pooling, training batch norm), called through
ctypes on NumPy arrays: ctypes releases the GIL for the call, and the backend's thread pool runs a call on
several threads that share its pieces through a counter.

Every function takes arrays the caller has checked (contiguous where it says so, float32 or float64, of the
sizes the geometry implies) and returns nothing; a rejection by the library (which checks what it can) raises.
``MINITORCH_GPU_NATIVE_NN=0`` switches the library off: :func:`library` is then None and the callers run their
NumPy bodies.
"""
from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._cpu_library import CpuLibrary, build, run_parallel
from .cuda.loader import kernel_dir

__all__ = ["library", "Cnn", "LIB"]

_PURPOSE = "the native CPU convolution loops"


def _build() -> ctypes.CDLL:
    # contraction on: the direct convolution's multiply-adds fuse (nothing here must match NumPy bit for bit but
    # im2col / col2im, which only copy and add)
    return build("cnn_cpu", [Path(kernel_dir()) / "cnn_cpu.cpp"], "1", _PURPOSE, extras=(("-ffp-contract=fast",),))[1]


LIB: CpuLibrary[ctypes.CDLL] = CpuLibrary(_build, "MINITORCH_GPU_NATIVE_NN", _PURPOSE,
                                          "the CPU uses the slower NumPy path")
# output channels per block of the direct convolution's packed weights (cnn_cpu.cpp's kOutCh), and the bytes of
# its vectors (Vec64): rows of its padded input are read in whole vectors
DIRECT_BLOCK = 8
DIRECT_VECTOR_BYTES = 64
# the weight gradient's pieces: blocks of output channels, and of taps (kGradOut, kGradTaps)
_GRAD_OUT, _GRAD_TAPS = 3, 9

# elements a thread should have before a call is split: a hand-off through the pool costs tens of microseconds
_PARALLEL_MIN_ELEMENTS = 1 << 16
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}
_GEO = 21  # cnn_cpu.cpp's kGeo

_i64, _ptr, _int = ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int


def _addr(a: Any) -> int | None:
    return None if a is None else int(a.__array_interface__["data"][0])


def geometry(channels: int, spatial: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
             pad_low: Sequence[int], dilation: Sequence[int], blocks: Sequence[int], sample_stride: int,
             channel_stride: int) -> Any:
    """cnn_cpu.cpp's ``geo`` for a 1-3-d problem (missing leading dims are 1)."""
    lead = 3 - len(spatial)
    vals = [channels]
    for seq, fill in ((spatial, 1), (kernel, 1), (stride, 1), (pad_low, 0), (dilation, 1), (blocks, 1)):
        vals += [fill] * lead + [int(v) for v in seq]
    vals += [sample_stride, channel_stride]
    return (_i64 * _GEO)(*vals)


def dtype_code(dt: Any) -> int | None:
    """The library's code of a NumPy dtype, None for one it does not take."""
    return _DTYPES.get(dt)


class Cnn:
    """The library's entry points, typed."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._im2col = lib.mt_cnn_im2col
        self._im2col.argtypes = [_int, _ptr, _ptr, _i64, _ptr, _ptr]
        self._col2im = lib.mt_cnn_col2im
        self._col2im.argtypes = [_int, _ptr, _ptr, _i64, _ptr, _ptr]
        self._direct = lib.mt_cnn_direct_conv
        self._direct.argtypes = [_int, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr]
        self._direct_wg = lib.mt_cnn_direct_conv_weight_grad
        self._direct_wg.argtypes = [_int, _ptr, _ptr, _ptr, _ptr, _ptr]
        self._pool_fwd = lib.mt_cnn_max_pool_forward
        self._pool_fwd.argtypes = [_int, _ptr, _ptr, _i64, _ptr, _ptr, _ptr]
        self._pool_bwd = lib.mt_cnn_max_pool_backward
        self._pool_bwd.argtypes = [_int, _ptr, _ptr, _ptr, _i64, _ptr, _ptr]
        self._bn_fwd = lib.mt_cnn_batch_norm_forward
        self._bn_fwd.argtypes = [_int, _i64, _i64, _i64, _ptr, _ptr, _ptr, ctypes.c_double, _ptr, _ptr, _ptr, _ptr,
                                 _ptr]
        self._bn_bwd = lib.mt_cnn_batch_norm_backward
        self._bn_bwd.argtypes = [_int, _i64, _i64, _i64, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr]
        for f in (self._im2col, self._col2im, self._direct, self._direct_wg, self._pool_fwd, self._pool_bwd, self._bn_fwd, self._bn_bwd):
            f.restype = _int

    @staticmethod
    def _run(name: str, fn: Any, args: tuple[Any, ...], pieces: int, elements: int, threads: int) -> None:
        workers = max(1, min(threads, pieces, elements // _PARALLEL_MIN_ELEMENTS))
        counter = ctypes.c_longlong(0)
        ref = ctypes.byref(counter)
        failed: list[int] = []

        def call() -> None:
            rc = fn(*args, ref)
            if rc:
                failed.append(rc)

        run_parallel(call, workers, threads)
        if failed:
            raise RuntimeError(f"the native CPU {name} rejected its arguments (code {failed[0]})")

    def im2col(self, geo: Any, x: Any, batch: int, cols: Any, threads: int) -> None:
        """Columns (geo's C * K, batch * L) of ``batch`` samples of the image ``x`` points into (its first sample's
        first channel; the sample and channel strides are geo's), into the contiguous ``cols``."""
        self._run("im2col", self._im2col, (_DTYPES[cols.dtype], geo, _addr(x), batch, _addr(cols)), geo[0],
                  cols.size, threads)

    def col2im(self, geo: Any, cols: Any, batch: int, dx: Any, threads: int) -> None:
        """The adjoint of :meth:`im2col`: ``batch`` samples of geo's C channels of ``dx`` overwritten."""
        self._run("col2im", self._col2im, (_DTYPES[cols.dtype], geo, _addr(cols), batch, _addr(dx)), batch * geo[0],
                  cols.size, threads)

    def direct_conv(self, args: Sequence[int], xp: Any, w_packed: Any, bias: Any, y: Any, threads: int) -> None:
        """The stride-1 2-d convolution of one group (cnn_cpu.cpp's mt_cnn_direct_conv: ``args`` as it lists them,
        ``xp`` / ``y`` views at the group's first channel)."""
        batch, o = args[0], args[4]
        blocks = -(-o // DIRECT_BLOCK)
        self._run("direct convolution", self._direct,
                  (_DTYPES[y.dtype], (_i64 * 13)(*args), _addr(xp), _addr(w_packed), _addr(bias), _addr(y)),
                  batch * blocks, batch * o * args[9] * args[10] * 8, threads)

    def direct_conv_weight_grad(self, args: Sequence[int], xp: Any, g: Any, dw: Any, threads: int) -> None:
        """The weight gradient of one group of that convolution (mt_cnn_direct_conv_weight_grad: ``g`` the output
        gradient, ``dw`` the group's rows)."""
        c, o, k = args[1], args[4], args[5] * args[6]
        pieces = -(-o // _GRAD_OUT) * c * -(-k // _GRAD_TAPS)
        self._run("direct convolution weight gradient", self._direct_wg,
                  (_DTYPES[dw.dtype], (_i64 * 13)(*args), _addr(xp), _addr(g), _addr(dw)), pieces,
                  args[0] * o * c * k * args[9] * args[10], threads)

    def max_pool_forward(self, geo: Any, x: Any, planes: int, y: Any, indices: Any, threads: int) -> None:
        self._run("max pooling", self._pool_fwd,
                  (_DTYPES[x.dtype], geo, _addr(x), planes, _addr(y), _addr(indices)), -(-planes // 64), x.size,
                  threads)

    def max_pool_backward(self, geo: Any, g: Any, indices: Any, planes: int, dx: Any, threads: int) -> None:
        self._run("max pooling backward", self._pool_bwd,
                  (_DTYPES[g.dtype], geo, _addr(g), _addr(indices), planes, _addr(dx)), -(-planes // 64), dx.size,
                  threads)

    def batch_norm_forward(self, x: Any, w: Any, b: Any, eps: float, y: Any, mean: Any, var: Any, rstd: Any,
                           threads: int) -> None:
        n, c, s = x.shape
        self._run("batch norm", self._bn_fwd,
                  (_DTYPES[x.dtype], n, c, s, _addr(x), _addr(w), _addr(b), eps, _addr(y), _addr(mean), _addr(var),
                   _addr(rstd)), c, x.size, threads)

    def batch_norm_backward(self, g: Any, x: Any, w: Any, mean: Any, rstd: Any, dx: Any, dw: Any, db: Any,
                            threads: int) -> None:
        n, c, s = x.shape
        self._run("batch norm backward", self._bn_bwd,
                  (_DTYPES[x.dtype], n, c, s, _addr(g), _addr(x), _addr(w), _addr(mean), _addr(rstd), _addr(dx),
                   _addr(dw), _addr(db)), c, x.size, threads)


_loaded: dict[int, Cnn] = {}


def library() -> Cnn | None:
    """The typed library, built on first use; None when switched off or unbuildable."""
    lib = LIB.get()
    if lib is None:
        return None
    typed = _loaded.get(id(lib))
    if typed is None:
        typed = _loaded.setdefault(id(lib), Cnn(lib))
    return typed
