"""The CPU backend: the primitive table of ``base.Backend`` on NumPy arrays, with glibc told to keep freed memory,
the fused optimizer steps run by the compiled loop of ``_optim_native``, the elementwise maps that NumPy computes
in many passes (or in slow scalar loops) by the compiled loops of ``_elementwise_native``, the matrix products
where BLAS is slow by the compiled GEMM of ``_gemm_native``, layer norm, softmax and cross-entropy by the
compiled row loops of ``_rows_native``, and convolution, max pooling and batch norm by
``_cnn_cpu``."""
from __future__ import annotations

import ctypes
import os
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .._device import device
from . import _elementwise_native, _gemm_native, _optim_native, _rows_native
from ._cnn_cpu import CpuCnnMixin
from ._scalar_pow import scalar_pow
from ._types import Array, Operand, Saved
from .base import Backend

if TYPE_CHECKING:
    from .cuda.fused_step import FusedStep


# float exponents whose ``x ** e`` the compiled elementwise library computes in one pass, as PyTorch does
_ONE_PASS_POW = {-0.5: "rsqrt", 3.0: "cube"}

# PyTorch computes log(0), 1/0, inf*0 silently (IEEE results); NumPy warns. Entering np.errstate around
# every primitive would cost more than the primitive on small tensors, so the warnings NumPy attributes
# to our own backend modules are filtered once instead; the user's NumPy error state is left alone.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"minitorch_gpu\.backends\.")


# glibc's malloc tunables (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 << 20  # the largest value glibc accepts (HEAP_MAX_SIZE / 2 on 64-bit)
_TRIM_THRESHOLD = 1 << 30


def _keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory in the process for reuse instead of handing it back to the OS.

    Every NumPy result is a fresh malloc. By default glibc returns the top of the heap to the OS once a few
    MB there are free, and serves blocks above 128 KB..32 MB with mmap, so the next op's output lands on new
    pages that the kernel zero-fills on first touch: about 0.3-0.5 ms per MB, more than the arithmetic of a
    typical elementwise op (a 4x slower GELU, 2-5x slower im2col, measured). Like PyTorch's caching
    allocator on CUDA, memory freed by one step is reused by the next. Returns whether the setting was
    applied; ``MINITORCH_GPU_KEEP_FREED_MEMORY=0``, or glibc's own ``MALLOC_TRIM_THRESHOLD_`` /
    ``MALLOC_MMAP_THRESHOLD_`` in the environment, leave malloc alone.
    """
    if os.environ.get("MINITORCH_GPU_KEEP_FREED_MEMORY", "1").strip() in ("0", "false", "False", "off"):
        return False
    if "MALLOC_TRIM_THRESHOLD_" in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # NOTE: the trim threshold first: setting the mmap threshold also switches off glibc's dynamic
    # adjustment of both
    ok = mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) == 1 and ok)


KEEPS_FREED_MEMORY = _keep_freed_memory()


class NumpyBackend(CpuCnnMixin, Backend):
    xp = np
    name = "numpy"

    # the compiled fused optimizer step (_optim_native.py); False keeps every step on the NumPy bodies
    native_optim = True
    # the compiled elementwise maps (_elementwise_native.py); False keeps every map on the NumPy bodies
    native_elementwise = True
    # the compiled row loops (_rows_native.py: layer norm, softmax, cross-entropy); False keeps the NumPy bodies
    native_rows = True
    # the compiled matrix product (_gemm_native.py) for the shapes where it beats BLAS; False keeps every product
    # on NumPy
    native_gemm = True

    def __init__(self) -> None:
        self.device = device("cpu")

    # ------------------------------------------------------------------ compiled elementwise maps
    @property
    def optim_threads(self) -> int | None:
        """Threads of the compiled CPU loops (None: ``$MINITORCH_GPU_OPTIM_THREADS`` or the CPU count, at most 8)."""
        return self.__dict__.get("_threads")

    @optim_threads.setter
    def optim_threads(self, n: int | None) -> None:
        self.__dict__["_threads"] = n
        # the tables hold the parallel-only rows for the count they were built with: rebuilt on the next op
        self.__dict__.pop("_utab", None)
        self.__dict__.pop("_btab", None)

    def _build_tables(self) -> None:
        super()._build_tables()
        # the table rows the compiled loops serve: the NumPy body (or ufunc) stays the reference they fall back to.
        # The rows NumPy runs as fast on one thread (add, relu, ...) are wrapped only while there are more, so that
        # one thread's small ops pay no wrapper
        skip = _elementwise_native.PARALLEL_ONLY if self._optim_threads() <= 1 else frozenset()
        for tab, names, native in ((self._utab, _elementwise_native.UNARY, self._native_unary),
                                   (self._btab, _elementwise_native.BINARY, self._native_binary)):
            for name in names:
                if name in tab and name not in skip:
                    tab[name] = native(name, tab[name])

    def _native_unary(self, name: str, reference: Callable[..., Array]) -> Callable[..., Array]:
        least = _elementwise_native.MIN_SIZE[name]

        def run(x: Array, out: Array | None = None) -> Array:
            if self.native_elementwise and x.size >= least:
                r = _elementwise_native.unary(name, x, out, self._optim_threads)
                if r is not None:
                    return r
            return reference(x) if out is None else reference(x, out=out)
        return run

    def _native_binary(self, name: str, reference: Callable[..., Array]) -> Callable[..., Array]:
        least = _elementwise_native.MIN_SIZE[name]

        def run(a: Operand, b: Operand, out: Array | None = None) -> Array:
            if self.native_elementwise and getattr(a if hasattr(a, "size") else b, "size", 0) >= least:
                r = _elementwise_native.binary(name, a, b, out, self._optim_threads)
                if r is not None:
                    return r
            return reference(a, b) if out is None else reference(a, b, out=out)
        return run

    def _compiled(self, name: str, *arrays: Array) -> Array | None:
        """``name`` over one or two arrays by the compiled loops, or None when they decline (or are off)."""
        if not self.native_elementwise or arrays[0].size < _elementwise_native.MIN_SIZE[name]:
            return None  # (the size test first: the tiny-op path pays nothing for the compiled one)
        if len(arrays) == 1:
            return _elementwise_native.unary(name, arrays[0], threads=self._optim_threads)
        return _elementwise_native.binary(name, arrays[0], arrays[1], threads=self._optim_threads)

    def compiled_erfc(self, x: Array) -> Array | None:
        return self._compiled("erfc", x)

    def gelu(self, x: Array, approximate: str = "none") -> Array:
        r = self._compiled("gelu_tanh" if approximate == "tanh" else "gelu", x)
        return r if r is not None else super().gelu(x, approximate)

    def gelu_backward(self, g: Array, x: Array, approximate: str = "none") -> Array:
        r = self._compiled("gelu_tanh_backward" if approximate == "tanh" else "gelu_backward", g, x)
        return r if r is not None else super().gelu_backward(g, x, approximate)

    def silu(self, x: Array) -> Array:
        r = self._compiled("silu", x)
        return r if r is not None else super().silu(x)

    def sigmoid_backward(self, g: Array, y: Array) -> Array:
        r = self._compiled("sigmoid_backward", g, y)
        return r if r is not None else super().sigmoid_backward(g, y)

    def tanh_backward(self, g: Array, y: Array) -> Array:
        r = self._compiled("tanh_backward", g, y)
        return r if r is not None else super().tanh_backward(g, y)

    def threshold_backward(self, g: Array, x: Array, threshold: float) -> Array:
        # relu's (threshold 0): one compiled select instead of NumPy's compare, mask and AND passes
        r = self._compiled("relu_backward", g, x) if threshold == 0 else None
        return r if r is not None else super().threshold_backward(g, x, threshold)

    def lstm_cell_forward(self, gi: Array, gh: Array, c: Array) -> tuple[Array, Array]:
        r = _elementwise_native.lstm_cell_forward(gi, gh, c) if self.native_elementwise else None
        return r if r is not None else super().lstm_cell_forward(gi, gh, c)

    def lstm_cell_backward(self, dh: Array | None, dc: Array | None, gi: Array, gh: Array,
                           c: Array) -> tuple[Array, Array]:
        r = _elementwise_native.lstm_cell_backward(dh, dc, gi, gh, c) if self.native_elementwise else None
        return r if r is not None else super().lstm_cell_backward(dh, dc, gi, gh, c)

    # ------------------------------------------------------------------ compiled row loops
    # Each tries the compiled loop of _rows_native, which returns None where it declines (a 16-bit dtype, another
    # layout, no compiler): the NumPy body of the mixin then runs, and stays the reference tests compare against.
    def _rows_threads(self) -> int:
        return self._optim_threads()

    def layer_norm_forward(self, x: Array, weight: Array | None = None, bias: Array | None = None, eps: float = 1e-5,
                           center: bool = True, keep: bool = True) -> tuple[Array, Saved]:
        if self.native_rows and center:
            r = _rows_native.layer_norm_forward(x, weight, bias, eps, self._rows_threads())
            if r is not None:
                # the kernels' saved form (layernorm.cu's too): the backward normalises again from x
                return r[0], {"mean": r[1], "rstd": r[2]}
        return super().layer_norm_forward(x, weight, bias, eps, center, keep)

    def layer_norm_backward(self, g: Array, x: Array, weight: Array | None, saved: Saved, center: bool = True,
                            needs: tuple[bool, bool, bool] = (True, True, True)
                            ) -> tuple[Array | None, Array | None, Array | None]:
        mean = saved.get("mean")
        if self.native_rows and center and mean is not None:
            r = _rows_native.layer_norm_backward(g, x, weight, mean, saved["rstd"], needs, self._rows_threads())
            if r is not None:
                return r
        return super().layer_norm_backward(g, x, weight, saved, center, needs)

    def softmax_forward(self, x: Array, axis: int) -> Array:
        if self.native_rows and x.ndim and axis % x.ndim == x.ndim - 1:
            r = _rows_native.softmax_forward(x, threads=self._rows_threads())
            if r is not None:
                return r
        return super().softmax_forward(x, axis)

    def log_softmax_forward(self, x: Array, axis: int) -> Array:
        if self.native_rows and x.ndim and axis % x.ndim == x.ndim - 1:
            r = _rows_native.softmax_forward(x, log=True, threads=self._rows_threads())
            if r is not None:
                return r
        return super().log_softmax_forward(x, axis)

    def softmax_backward(self, y: Array, g: Array, axis: int) -> Array:
        if self.native_rows and y.ndim and axis % y.ndim == y.ndim - 1:
            r = _rows_native.softmax_backward(y, g, threads=self._rows_threads())
            if r is not None:
                return r
        return super().softmax_backward(y, g, axis)

    def log_softmax_backward(self, y: Array, g: Array, axis: int) -> Array:
        if self.native_rows and y.ndim and axis % y.ndim == y.ndim - 1:
            r = _rows_native.softmax_backward(y, g, log=True, threads=self._rows_threads())
            if r is not None:
                return r
        return super().log_softmax_backward(y, g, axis)

    def attention_softmax(self, scores: Array, causal: bool = False, mask: Array | None = None,
                          overwrite: bool = False, scale: float = 1.0) -> Array:
        if self.native_rows:
            r = _rows_native.softmax_forward(scores, scale=scale, causal=causal, mask=mask, safe=True,
                                             out=scores if overwrite else None, threads=self._rows_threads())
            if r is not None:
                return r
        return super().attention_softmax(scores, causal, mask, overwrite, scale)

    def attention_softmax_backward(self, p: Array, g: Array, scale: float = 1.0, overwrite: bool = False) -> Array:
        if self.native_rows:
            r = _rows_native.softmax_backward(p, g, scale=scale, out=g if overwrite else None,
                                              threads=self._rows_threads())
            if r is not None:
                return r
        return super().attention_softmax_backward(p, g, scale, overwrite)

    def cross_entropy_forward(self, x: Array, target: Array, weight: Array | None = None, ignore_index: int = -100,
                              label_smoothing: float = 0.0, *, tidx: Array | None = None, mask: Array | None = None,
                              coef: Array | None = None, want_grad: bool = False) -> tuple[Array, Saved]:
        if self.native_rows:
            r = _rows_native.cross_entropy(x, target, weight, ignore_index, label_smoothing, want_grad,
                                           self._rows_threads())
            if r is not None:
                loss, rowmax, lse, d = r
                saved = {"rowmax": rowmax, "lse": lse}
                if d is not None:
                    # the gradient of the summed losses: the backward scales it in place (the caller hands it out
                    # once, see CrossEntropyLossBackward0)
                    saved["dlogits"] = d
                return loss.reshape(target.shape), saved
        return super().cross_entropy_forward(x, target, weight, ignore_index, label_smoothing, tidx=tidx, mask=mask,
                                             coef=coef, want_grad=want_grad)

    def cross_entropy_backward(self, gout: Array, x: Array, target: Array, weight: Array | None, ignore_index: int,
                               label_smoothing: float, saved: Saved, denom: float | Array | None = None, *,
                               tidx: Array | None = None, mask: Array | None = None) -> Array:
        lse = saved.get("lse")
        if lse is None:
            return super().cross_entropy_backward(gout, x, target, weight, ignore_index, label_smoothing, saved,
                                                  denom, tidx=tidx, mask=mask)
        scale = 1.0
        if denom is not None:
            scale = 1.0 / float(denom) if float(denom) else 1.0
        d = saved.get("dlogits")
        if d is not None:
            if gout.size == 1:
                d *= d.dtype.type(float(gout.reshape(())) * scale)
            else:
                d *= gout.reshape(-1, 1).astype(d.dtype, copy=False) * d.dtype.type(scale)
            return d.reshape(x.shape)
        r = _rows_native.cross_entropy_backward(x, target, weight, ignore_index, label_smoothing, saved["rowmax"], lse,
                                                gout, scale, self._rows_threads())
        if r is not None:
            return r
        # the compiled loops' state is their own: the NumPy body needs its forward's, computed again
        _, ref = super().cross_entropy_forward(x, target, weight, ignore_index, label_smoothing, tidx=tidx, mask=mask)
        return super().cross_entropy_backward(gout, x, target, weight, ignore_index, label_smoothing, ref, denom,
                                              tidx=tidx, mask=mask)

    # ------------------------------------------------------------------ compiled matrix product
    def matmul_operand(self, arr: Array) -> Array:
        # rows a multiple of 4 KiB apart share L1's sets: a product walking down such a B (an LSTM's W_hh^T of
        # 1024 columns, 16 rows of h per step) runs at 0.75x of the same rows 64 bytes further apart
        rows, cols = arr.shape
        pad = rows >= 2 and (cols * arr.itemsize) % 4096 == 0
        if not pad and arr.flags.c_contiguous:
            return arr
        out = np.empty((rows, cols + (64 // arr.itemsize if pad else 0)), arr.dtype)[:, :cols]
        if arr.strides[0] < arr.strides[1]:
            # a transposed weight (W_hh^T): NumPy's copy walks the source down its columns, one cache line per
            # element; blocks of 32 columns read whole lines (1024 x 256 floats: 380 -> 150 us)
            for c0 in range(0, cols, 32):
                out[:, c0:c0 + 32] = arr[:, c0:c0 + 32]
        else:
            np.copyto(out, arr)
        return out

    def matmul(self, a: Array, b: Array, transpose_a: bool = False, transpose_b: bool = False,
               bias: Array | None = None) -> Array:
        if self.native_gemm and a.ndim >= 2 and b.ndim >= 2:
            r = _gemm_native.matmul(a, b, bias, self._optim_threads, transpose_a=transpose_a, transpose_b=transpose_b)
            if r is not None:
                return r
        return super().matmul(a, b, transpose_a, transpose_b, bias)

    def _pow(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        # glibc's pow is ~50x slower on negative bases: float ** number takes PyTorch's multiplications instead
        # (** -0.5 and ** 3, PyTorch's 1 / sqrt(x) and (x * x) * x, in one compiled pass where the array is large
        # enough)
        one_pass = _ONE_PASS_POW.get(b) if b.__class__ in (float, int) and a.__class__ is np.ndarray else None
        r = None if one_pass is None else self._compiled(one_pass, a)
        if r is None:
            r = scalar_pow(a, b)
        if r is None:
            return super()._pow(a, b, out)
        if out is None:
            return r
        np.copyto(out, r)
        return out

    def _fused_step(self, step: FusedStep) -> bool | None:
        if not self.native_optim:
            return None
        return _optim_native.run(step, self._optim_threads())
