"""The compiled loops of kernels/cnn_cpu.cpp (im2col, col2im, max pooling, training batch norm), called through
ctypes on NumPy arrays: each call is one ctypes call of an entry's parallel twin, which runs it on several threads
of the native worker pool (``_cpu_library``) sharing its pieces through a counter.

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

from ._cpu_library import CpuLibrary, address_or_none, build, parallel_entry, run_counted
from .cuda.loader import kernel_dir

__all__ = ["library", "Cnn", "LIB"]

_PURPOSE = "the native CPU convolution loops"


def _build() -> ctypes.CDLL:
    # contraction on: the direct convolution's multiply-adds fuse (nothing here must match NumPy bit for bit but
    # im2col / col2im, which only copy and add)
    d = Path(kernel_dir())
    return build("cnn_cpu", [d / "cnn_cpu.cpp", d / "vec64_cpu.h", d / "pool_cpu.h"], "1", _PURPOSE,
                 extras=(("-ffp-contract=fast",),))[1]


LIB: CpuLibrary[ctypes.CDLL] = CpuLibrary(_build, "MINITORCH_GPU_NATIVE_NN", _PURPOSE,
                                          "the CPU uses the slower NumPy path")
# output channels per block of the direct convolution's packed weights (cnn_cpu.cpp's kOutCh), and the bytes of
# its vectors (Vec64): rows of its padded input are read in whole vectors
DIRECT_BLOCK = 8
DIRECT_VECTOR_BYTES = 64
# the weight gradient's pieces: blocks of output channels, and of taps (kGradOut, kGradTaps)
_GRAD_OUT, _GRAD_TAPS = 3, 9
# the Winograd loops' pieces: tiles of the phased transforms (kWinoPiece), rows of the weight gradient's
# products (4 kWinoRows)
_WINO_PIECE, _WINO_GRAD_ROWS = 32, 48

# elements a thread should have before a call is split. The hand-off to the native pool costs about a
# microsecond, but the data a call reads was mostly written by this thread, and the helper's core fetches its
# share from this one's cache: measured on 2 CPUs (2 threads' time over 1's, in rounds where the second CPU was
# free), batch norm over 32K-64K elements 0.92-1.15, 128K 0.70-0.78
_PARALLEL_MIN_ELEMENTS = 1 << 16
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}
_GEO = 21  # cnn_cpu.cpp's kGeo

_i64, _ptr, _int = ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int


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


# the library's entry points: name, symbol, argument types (after the dtype code) and result type; the
# work-sharing counters (one, or two with a slot counter) are the last pointers. Those but the scratch sizers
# (_SIZERS) are called through their parallel twins
_ENTRIES: list[tuple[str, str, list[Any], Any]] = [
    ("im2col", "mt_cnn_im2col", [_ptr, _ptr, _i64, _ptr, _ptr], _int),
    ("col2im", "mt_cnn_col2im", [_ptr, _ptr, _i64, _ptr, _ptr], _int),
    ("direct", "mt_cnn_direct_conv", [_ptr, _ptr, _ptr, _ptr, _ptr, _ptr], _int),
    ("direct_wg", "mt_cnn_direct_conv_weight_grad", [_ptr, _ptr, _ptr, _ptr, _ptr], _int),
    ("pool_fwd", "mt_cnn_max_pool_forward", [_ptr, _ptr, _i64, _ptr, _ptr, _ptr], _int),
    ("pool_bwd", "mt_cnn_max_pool_backward", [_ptr, _ptr, _ptr, _i64, _ptr, _ptr], _int),
    ("bn_fwd", "mt_cnn_batch_norm_forward",
     [_i64, _i64, _i64, _ptr, _ptr, _ptr, ctypes.c_double, _ptr, _ptr, _ptr, _ptr, _ptr], _int),
    ("bn_bwd", "mt_cnn_batch_norm_backward", [_i64, _i64, _i64, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr],
     _int),
    ("wino_scratch", "mt_cnn_wino_scratch", [_ptr, _int], _i64),
    ("wino_weight", "mt_cnn_wino_weight", [_ptr, _ptr, _ptr, _ptr], _int),
    ("wino_conv", "mt_cnn_wino_conv", [_ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _i64, _ptr, _ptr], _int),
    ("wino_tiles", "mt_cnn_wino_tiles", [_ptr, _int, _ptr, _ptr, _i64, _i64, _ptr, _i64, _ptr, _ptr], _int),
    ("wino_untile", "mt_cnn_wino_untile", [_ptr, _ptr, _ptr, _ptr, _i64, _i64, _ptr, _i64, _ptr, _ptr], _int),
    ("wino_products", "mt_cnn_wino_products", [_ptr, _int, _ptr, _ptr, _ptr, _i64, _int, _ptr], _int),
    ("wino_parts", "mt_cnn_wino_wgrad_parts", [_ptr, _i64, _ptr, _ptr, _ptr, _ptr, _i64, _ptr, _ptr], _int),
    ("wino_finish", "mt_cnn_wino_wgrad_finish", [_ptr, _ptr, _i64, _ptr, _ptr], _int),
    ("gemm_scratch", "mt_cnn_gemm_scratch", [_ptr, _int], _i64),
    ("gemm_weight", "mt_cnn_gemm_weight", [_ptr, _ptr, _ptr, _ptr], _int),
    ("gemm_conv", "mt_cnn_gemm_conv", [_ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _i64, _ptr, _ptr], _int),
    ("gemm_parts", "mt_cnn_gemm_wgrad_parts", [_ptr, _i64, _ptr, _ptr, _ptr, _ptr, _i64, _ptr, _ptr], _int),
    ("gemm_finish", "mt_cnn_gemm_wgrad_finish", [_ptr, _ptr, _i64, _ptr, _ptr], _int),
]


_SIZERS = frozenset({"wino_scratch", "gemm_scratch"})


class Cnn:
    """The library's entry points, typed (the parallel twins but for the sizers)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._fn: dict[str, Any] = {}
        for name, symbol, argtypes, restype in _ENTRIES:
            if name in _SIZERS:
                fn = getattr(lib, symbol)
                fn.argtypes = [_int, *argtypes]
                fn.restype = restype
            else:
                fn = parallel_entry(lib, symbol, [_int, *argtypes], restype)
            self._fn[name] = fn

    @staticmethod
    def workers(pieces: int, elements: int, threads: int) -> int:
        """How many threads a call of ``pieces`` pieces over ``elements`` elements runs on."""
        return max(1, min(threads, pieces, elements // _PARALLEL_MIN_ELEMENTS))

    @classmethod
    def _run(cls, name: str, fn: Any, args: tuple[Any, ...], pieces: int, elements: int, threads: int,
             slots: bool = False) -> None:
        """``fn(*args, next)`` on the workers; with ``slots`` also a second counter from which each worker takes
        its slot of the scratch the caller sized for :meth:`workers` of them."""
        workers = cls.workers(pieces, elements, threads)
        after = (ctypes.byref(ctypes.c_longlong(0)),) if slots else ()
        run_counted(fn, args, workers, f"the native CPU {name}", after)

    def im2col(self, geo: Any, x: Any, batch: int, cols: Any, threads: int) -> None:
        """Columns (geo's C * K, batch * L) of ``batch`` samples of the image ``x`` points into (its first sample's
        first channel; the sample and channel strides are geo's), into the contiguous ``cols``."""
        self._run("im2col", self._fn["im2col"], (_DTYPES[cols.dtype], geo, address_or_none(x), batch, address_or_none(cols)), geo[0],
                  cols.size, threads)

    def col2im(self, geo: Any, cols: Any, batch: int, dx: Any, threads: int) -> None:
        """The adjoint of :meth:`im2col`: ``batch`` samples of geo's C channels of ``dx`` overwritten."""
        self._run("col2im", self._fn["col2im"], (_DTYPES[cols.dtype], geo, address_or_none(cols), batch, address_or_none(dx)),
                  batch * geo[0], cols.size, threads)

    def direct_conv(self, args: Sequence[int], xp: Any, w_packed: Any, bias: Any, y: Any, threads: int) -> None:
        """The stride-1 2-d convolution of one group (cnn_cpu.cpp's mt_cnn_direct_conv: ``args`` as it lists them,
        ``xp`` / ``y`` views at the group's first channel)."""
        batch, o = args[0], args[4]
        blocks = -(-o // DIRECT_BLOCK)
        self._run("direct convolution", self._fn["direct"],
                  (_DTYPES[y.dtype], (_i64 * 13)(*args), address_or_none(xp), address_or_none(w_packed), address_or_none(bias), address_or_none(y)),
                  batch * blocks, batch * o * args[9] * args[10] * 8, threads)

    def direct_conv_weight_grad(self, args: Sequence[int], xp: Any, g: Any, dw: Any, threads: int) -> None:
        """The weight gradient of one group of that convolution (mt_cnn_direct_conv_weight_grad: ``g`` the output
        gradient, ``dw`` the group's rows)."""
        c, o, k = args[1], args[4], args[5] * args[6]
        pieces = -(-o // _GRAD_OUT) * c * -(-k // _GRAD_TAPS)
        self._run("direct convolution weight gradient", self._fn["direct_wg"],
                  (_DTYPES[dw.dtype], (_i64 * 13)(*args), address_or_none(xp), address_or_none(g), address_or_none(dw)), pieces,
                  args[0] * o * c * k * args[9] * args[10], threads)

    # Winograd F(2x2, 3x3): cnn_cpu.cpp's mt_cnn_wino_*; ``args`` its WinoGeo (14 values: input and output
    # shapes, low padding, padded channel counts Cp and Op, tiles per chunk tc, sample strides), arrays contiguous
    def _slots(self, args: Any, kind: int, dtype: Any, workers: int, sizer: Any = None) -> tuple[Any, int]:
        """Scratch for ``workers`` threads of an entry (``kind`` as mt_cnn_wino_scratch, or ``sizer``, numbers
        them) and the elements of one's slot."""
        elems = (sizer or self._fn["wino_scratch"])(_DTYPES[np.dtype(dtype)], args, kind)
        if elems < 0:
            raise RuntimeError(f"the native CPU convolution rejected its geometry {list(args)}")
        return np.empty(workers * elems, dtype), elems

    def wino_weight(self, args: Sequence[int], w: Any, u: Any, threads: int) -> None:
        """The transformed filters ``u`` (16, rows, ldu) of ``w``, in panels: args (rows, cols, row stride,
        column stride, flip, ldu)."""
        lanes = 64 // u.itemsize
        self._run("Winograd weight transform", self._fn["wino_weight"],
                  (_DTYPES[u.dtype], (_i64 * 6)(*args), address_or_none(w), address_or_none(u)), -(-args[5] // (2 * lanes)), u.size,
                  threads)

    def wino_conv(self, args: Sequence[int], x: Any, u: Any, bias: Any, y: Any, tiles: int, threads: int) -> None:
        """The fused convolution ``y`` of ``x`` with the transformed filters ``u`` (plus ``bias``), in chunks of
        args' tc tiles, each worker in its own slot of scratch."""
        geo = (_i64 * 14)(*args)
        chunks, work = -(-tiles // args[11]), tiles * args[1] * args[4]
        scratch, elems = self._slots(geo, 0, y.dtype, self.workers(chunks, work, threads))
        self._run("Winograd convolution", self._fn["wino_conv"],
                  (_DTYPES[y.dtype], geo, address_or_none(x), address_or_none(u), address_or_none(bias), address_or_none(y), address_or_none(scratch), elems),
                  chunks, work, threads, slots=True)

    def wino_tiles(self, args: Sequence[int], which: int, src: Any, dst: Any, t0: int, cnt: int,
                   threads: int) -> None:
        """Tiles t0 .. t0 + cnt - 1 of the input (``which`` 0) or the output gradient (1) transformed into the
        shared ``dst`` (16, tc, Cp or Op)."""
        geo = (_i64 * 14)(*args)
        pieces, work = -(-cnt // _WINO_PIECE), cnt * 16 * args[9 + which]
        scratch, elems = self._slots(geo, 1, dst.dtype, self.workers(pieces, work, threads))
        self._run("Winograd tiles", self._fn["wino_tiles"],
                  (_DTYPES[dst.dtype], geo, which, address_or_none(src), address_or_none(dst), t0, cnt, address_or_none(scratch), elems), pieces,
                  work, threads, slots=True)

    def wino_untile(self, args: Sequence[int], m: Any, bias: Any, y: Any, t0: int, cnt: int, threads: int) -> None:
        """Output tiles t0 .. t0 + cnt - 1 from the shared products ``m`` (16, tc, Op), plus ``bias``, into y."""
        geo = (_i64 * 14)(*args)
        pieces, work = -(-cnt // _WINO_PIECE), cnt * 16 * args[10]
        scratch, elems = self._slots(geo, 1, y.dtype, self.workers(pieces, work, threads))
        self._run("Winograd output tiles", self._fn["wino_untile"],
                  (_DTYPES[y.dtype], geo, address_or_none(m), address_or_none(bias), address_or_none(y), t0, cnt, address_or_none(scratch), elems), pieces,
                  work, threads, slots=True)

    def wino_products(self, args: Sequence[int], which: int, a: Any, b: Any, out: Any, cnt: int, accumulate: bool,
                      threads: int) -> None:
        """The 16 products of ``cnt`` shared tiles: ``which`` 0 the forward's (a: tiles, b: filters), 1 the
        weight gradient's (a: input tiles, b: gradient tiles; ``accumulate`` adds to ``out``)."""
        c, o, lanes = args[1], args[4], 64 // out.itemsize
        blocks = -(-args[10] // (2 * lanes)) if which == 0 else -(-o // _WINO_GRAD_ROWS)
        self._run("Winograd products", self._fn["wino_products"],
                  (_DTYPES[out.dtype], (_i64 * 14)(*args), which, address_or_none(a), address_or_none(b), address_or_none(out), cnt,
                   int(accumulate)), 16 * blocks, cnt * c * o * 16, threads)

    def wino_wgrad_parts(self, args: Sequence[int], per_part: int, x: Any, g: Any, z: Any, tiles: int,
                         threads: int) -> None:
        """The weight gradient's products summed into ``z`` (parts, 16, O, Cp), part p over tiles p * per_part
        onwards, each part by one worker in its slot of scratch."""
        geo = (_i64 * 14)(*args)
        parts, work = z.shape[0], tiles * args[1] * args[4]
        scratch, elems = self._slots(geo, 2, z.dtype, self.workers(parts, work, threads))
        self._run("Winograd weight gradient", self._fn["wino_parts"],
                  (_DTYPES[z.dtype], geo, per_part, address_or_none(x), address_or_none(g), address_or_none(z), address_or_none(scratch), elems), parts,
                  work, threads, slots=True)

    def wino_wgrad_finish(self, args: Sequence[int], z: Any, dw: Any, threads: int) -> None:
        """``dw`` from the parts of ``z`` summed in order."""
        self._run("Winograd weight-gradient transform", self._fn["wino_finish"],
                  (_DTYPES[dw.dtype], (_i64 * 14)(*args), address_or_none(z), z.shape[0], address_or_none(dw)), args[4], z.size,
                  threads)

    # implicit GEMM on channels-last rows: mt_cnn_gemm_*; ``args`` its GemmGeo (20 values: shapes, kernel, stride,
    # dilation, low padding, Cp, Op, positions per chunk tc, sample strides)
    def gemm_weight(self, args: Sequence[int], w: Any, b: Any, threads: int) -> None:
        """The filters ``w`` packed into the zeroed ``b``: args (O, C, taps, Cp, Op)."""
        self._run("filter packing", self._fn["gemm_weight"], (_DTYPES[b.dtype], (_i64 * 5)(*args), address_or_none(w), address_or_none(b)),
                  -(-args[0] // (128 // b.itemsize)), b.size, threads)

    def gemm_conv(self, args: Sequence[int], x: Any, b: Any, bias: Any, y: Any, threads: int) -> None:
        """The convolution ``y`` of ``x`` with the packed filters ``b`` (plus ``bias``)."""
        geo = (_i64 * 20)(*args)
        positions = args[0] * args[5] * args[6]
        chunks, work = -(-positions // args[17]), positions * args[1] * args[4]
        scratch, elems = self._slots(geo, 0, y.dtype, self.workers(chunks, work, threads), self._fn["gemm_scratch"])
        self._run("convolution", self._fn["gemm_conv"],
                  (_DTYPES[y.dtype], geo, address_or_none(x), address_or_none(b), address_or_none(bias), address_or_none(y), address_or_none(scratch), elems), chunks,
                  work, threads, slots=True)

    def gemm_wgrad_parts(self, args: Sequence[int], per_part: int, x: Any, g: Any, z: Any, threads: int) -> None:
        """The weight gradient's products summed into ``z`` (parts, O, taps Cp), part p over positions p *
        per_part onwards."""
        geo = (_i64 * 20)(*args)
        parts, work = z.shape[0], args[0] * args[5] * args[6] * args[1] * args[4]
        scratch, elems = self._slots(geo, 1, z.dtype, self.workers(parts, work, threads), self._fn["gemm_scratch"])
        self._run("convolution weight gradient", self._fn["gemm_parts"],
                  (_DTYPES[z.dtype], geo, per_part, address_or_none(x), address_or_none(g), address_or_none(z), address_or_none(scratch), elems), parts,
                  work, threads, slots=True)

    def gemm_wgrad_finish(self, args: Sequence[int], z: Any, dw: Any, threads: int) -> None:
        """``dw`` from the parts of ``z`` summed in order."""
        self._run("convolution weight-gradient sum", self._fn["gemm_finish"],
                  (_DTYPES[dw.dtype], (_i64 * 20)(*args), address_or_none(z), z.shape[0], address_or_none(dw)), args[4], z.size, threads)

    def max_pool_forward(self, geo: Any, x: Any, planes: int, y: Any, indices: Any, threads: int) -> None:
        self._run("max pooling", self._fn["pool_fwd"],
                  (_DTYPES[x.dtype], geo, address_or_none(x), planes, address_or_none(y), address_or_none(indices)), -(-planes // 64), x.size,
                  threads)

    def max_pool_backward(self, geo: Any, g: Any, indices: Any, planes: int, dx: Any, threads: int) -> None:
        self._run("max pooling backward", self._fn["pool_bwd"],
                  (_DTYPES[g.dtype], geo, address_or_none(g), address_or_none(indices), planes, address_or_none(dx)), -(-planes // 64), dx.size,
                  threads)

    def batch_norm_forward(self, x: Any, w: Any, b: Any, eps: float, y: Any, mean: Any, var: Any, rstd: Any,
                           threads: int) -> None:
        n, c, s = x.shape
        self._run("batch norm", self._fn["bn_fwd"],
                  (_DTYPES[x.dtype], n, c, s, address_or_none(x), address_or_none(w), address_or_none(b), eps, address_or_none(y), address_or_none(mean), address_or_none(var),
                   address_or_none(rstd)), c, x.size, threads)

    def batch_norm_backward(self, g: Any, x: Any, w: Any, mean: Any, rstd: Any, dx: Any, dw: Any, db: Any,
                            threads: int) -> None:
        n, c, s = x.shape
        self._run("batch norm backward", self._fn["bn_bwd"],
                  (_DTYPES[x.dtype], n, c, s, address_or_none(g), address_or_none(x), address_or_none(w), address_or_none(mean), address_or_none(rstd), address_or_none(dx),
                   address_or_none(dw), address_or_none(db)), c, x.size, threads)


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
