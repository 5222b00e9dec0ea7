"""The CPU backend's compiled row loops: kernels/rows_cpu.cpp (layer norm and its backward, softmax and log_softmax
with attention's scale and mask and their backward, cross-entropy with its gradient in the same pass), built with
the host C++ compiler on first use, cached on disk, and called through ctypes.

NumPy computes a layer norm in five passes over memory and its backward in about eight, a masked softmax in four
or five, cross-entropy in a dozen (one per ufunc, each with a fresh temporary); these loops read each row once.
The NumPy bodies of ``_nn.py`` and ``_reduce.py`` stay the reference: they run whenever this path declines (no
compiler, a 16-bit dtype, a layout other than C-contiguous rows), and tests compare the two.

Each function takes NumPy arrays and returns its results, or None (nothing computed) when it declines.
``MINITORCH_GPU_NATIVE_ROWS=0`` switches the library off; a build failure is reported once as a warning and the
NumPy bodies are used from then on.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

from ._cpu_library import CpuLibrary, address, address_or_none, build, parallel_entry, run_counted
from .cuda.loader import kernel_dir

__all__ = ["LIB", "available", "piece_rows", "layer_norm_forward", "layer_norm_backward", "softmax_forward",
           "softmax_backward", "cross_entropy", "cross_entropy_backward"]

_ABI = "1"
_PURPOSE = "the native CPU row loops (layer norm, softmax, cross-entropy)"
_SOURCE = "rows_cpu.cpp"
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}
_I64 = np.dtype(np.int64)
# elements per piece of work: small enough for several pieces on a transformer's activations, large enough that
# taking a piece costs nothing. NOTE: layer norm's weight and bias gradients are summed per piece, then the pieces
# in order, so this number (never the thread count) fixes their rounding
_PIECE_ELEMENTS = 1 << 14
# elements a thread should have before a call is split: a hand-off to the native pool's spinning helpers costs
# about a microsecond. Measured on 2 CPUs (2 threads' time over 1's, in rounds where the second CPU was free):
# 16K elements 0.98-1.09, 32K 0.67-0.86, 64K 0.64-0.77, 128K 0.58-0.61 (layer norm and softmax, rows of 128 and
# 1024)
_PARALLEL_MIN_ELEMENTS = 1 << 14
_MAX_MASK_DIMS = 8  # rows_cpu.cpp's kMaxDims

_i64, _ptr, _int, _dbl = ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int, ctypes.c_double


class _Rows:
    """The library's entry points, typed."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        def entry(symbol: str, *argtypes: Any) -> Any:
            return parallel_entry(lib, symbol, [_int, *argtypes, _i64, _ptr])  # dtype, ..., piece_rows, next
        self.ln_fwd = entry("mt_rows_layer_norm_forward", _i64, _i64, _ptr, _ptr, _ptr, _dbl, _ptr, _ptr, _ptr)
        self.ln_bwd = entry("mt_rows_layer_norm_backward", _i64, _i64, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr, _ptr)
        self.sm_fwd = entry("mt_rows_softmax_forward", _int, _int, _i64, _i64, _ptr, _dbl, _i64, _int, _ptr, _ptr,
                            _ptr)
        self.sm_bwd = entry("mt_rows_softmax_backward", _int, _i64, _i64, _ptr, _ptr, _dbl, _ptr)
        self.ce = entry("mt_rows_cross_entropy", _i64, _i64, _ptr, _ptr, _ptr, _i64, _dbl, _ptr, _ptr, _ptr, _ptr)
        self.ce_bwd = entry("mt_rows_cross_entropy_backward", _i64, _i64, _ptr, _ptr, _ptr, _i64, _dbl, _ptr, _ptr,
                            _ptr, _i64, _dbl, _ptr)


def _build() -> _Rows:
    src = Path(kernel_dir()) / _SOURCE
    # glibc's vector exp first, without it the same loops call scalar libm; -fopenmp-simd lets the vectoriser keep
    # a partial sum per lane in the loops marked `omp simd` (a compiler without it builds them as plain loops)
    simd = "-fopenmp-simd"
    _, lib = build("rows_cpu", [src, src.parent / "cpu_vecmath.h", src.parent / "pool_cpu.h"], _ABI, _PURPOSE,
                   extras=(("-DMT_LIBMVEC", simd, "-lmvec"), (simd,), ()))
    return _Rows(lib)


LIB: CpuLibrary[_Rows] = CpuLibrary(_build, "MINITORCH_GPU_NATIVE_ROWS", _PURPOSE,
                                    "the CPU computes layer norm, softmax and cross-entropy with the NumPy bodies")


def available() -> bool:
    """Whether the compiled row loops can run here (builds them on the first call)."""
    return LIB.get() is not None


def piece_rows(n: int) -> int:
    """Rows per piece of work for rows of ``n`` elements."""
    return max(1, _PIECE_ELEMENTS // max(n, 1))


def _run(fn: Any, args: tuple[Any, ...], rows: int, n: int, threads: int, what: str) -> None:
    piece = piece_rows(n)
    pieces = -(-rows // piece)
    workers = 1
    if threads > 1:
        workers = max(1, min(threads, pieces, rows * n // _PARALLEL_MIN_ELEMENTS))
    run_counted(fn, (*args, piece), workers, f"{_PURPOSE}: {what}")


def _rows_of(x: Any) -> Any:
    """(dtype code) when ``x`` is a C-contiguous float32/float64 NumPy array of at least one dim, else None."""
    if x.__class__ is not np.ndarray or not x.flags.c_contiguous or x.ndim == 0:
        return None
    return _DTYPES.get(x.dtype)


def _vector(p: Any, dt: Any, n: int) -> bool:
    """``p`` is None or a contiguous (n,) array of dtype ``dt``."""
    return p is None or (p.__class__ is np.ndarray and p.dtype == dt and p.shape == (n,) and p.flags.c_contiguous)


# ------------------------------------------------------------------------------------------ layer norm
def layer_norm_forward(x: Any, weight: Any, bias: Any, eps: float, threads: int = 1) -> tuple[Any, Any, Any] | None:
    """(y, mean, rstd) of the layer norm of the rows of a 2-d ``x`` ((rows, 1) statistics in x's dtype), or None."""
    lib = LIB.get()
    if lib is None:
        return None
    code = _rows_of(x)
    if code is None or x.ndim != 2 or x.shape[1] == 0:
        return None
    rows, n = x.shape
    if not (_vector(weight, x.dtype, n) and _vector(bias, x.dtype, n)):
        return None
    y = np.empty_like(x)
    mean = np.empty((rows, 1), x.dtype)
    rstd = np.empty((rows, 1), x.dtype)
    _run(lib.ln_fwd, (code, rows, n, address(x), address_or_none(weight), address_or_none(bias), float(eps), address(y), address(mean),
                      address(rstd)), rows, n, threads, "layer norm")
    return y, mean, rstd


def layer_norm_backward(g: Any, x: Any, weight: Any, mean: Any, rstd: Any, needs: tuple[bool, bool, bool],
                        threads: int = 1) -> tuple[Any, Any, Any] | None:
    """(dx, dweight, dbias) of :func:`layer_norm_forward` from its mean and rstd, each None unless in ``needs``
    (dweight and dbias (n,), summed over pieces in a fixed order), or None when this path declines."""
    lib = LIB.get()
    if lib is None:
        return None
    code = _rows_of(x)
    if code is None or x.ndim != 2 or x.shape[1] == 0 or _rows_of(g) != code or g.shape != x.shape:
        return None
    rows, n = x.shape
    dt = x.dtype
    if not _vector(weight, dt, n):
        return None
    for s in (mean, rstd):
        if _rows_of(s) != code or s.size != rows:
            return None
    nx, nw, nb = needs
    pieces = -(-rows // piece_rows(n))
    dx = np.empty_like(x) if nx else None
    pw = np.empty((pieces, n), dt) if nw and weight is not None else None
    pb = np.empty((pieces, n), dt) if nb else None
    _run(lib.ln_bwd, (code, rows, n, address(g), address(x), address_or_none(weight), address(mean), address(rstd), address_or_none(dx),
                      address_or_none(pw), address_or_none(pb)), rows, n, threads, "layer norm backward")
    dw = None if pw is None else (pw[0] if pieces == 1 else pw.sum(axis=0))
    db = None if pb is None else (pb[0] if pieces == 1 else pb.sum(axis=0))
    return dx, dw, db


# ------------------------------------------------------------------------------------------ softmax
def _mask_operand(mask: Any, shape: tuple[int, ...], dt: Any) -> tuple[int, Any, Any] | None:
    """(kind, array, descriptor) of an attention mask broadcasting to ``shape`` (rows..., n), or None when the
    loops cannot read it (a row not contiguous, too many dims, another dtype)."""
    if mask.__class__ is not np.ndarray:
        return None
    if mask.dtype == np.bool_:
        kind = 2
    elif mask.dtype == dt:
        kind = 1
    else:
        return None
    try:
        view = np.broadcast_to(mask, shape)
    except ValueError:
        return None
    isz = mask.itemsize
    if shape[-1] > 1 and view.strides[-1] != isz:
        return None
    lead = [(s, st // isz) for s, st in zip(shape[:-1], view.strides[:-1]) if s != 1]
    if len(lead) > _MAX_MASK_DIMS:
        return None
    if not lead:
        lead = [(1, 0)]
    desc = (_i64 * (1 + 2 * len(lead)))(len(lead), *[s for s, _ in lead], *[st for _, st in lead])
    # the broadcast view starts where the mask's data does: its element strides reach every row
    return kind, view, desc


def softmax_forward(x: Any, log: bool = False, scale: float = 1.0, causal: bool = False, mask: Any = None,
                    safe: bool = False, out: Any = None, threads: int = 1) -> Any:
    """softmax (or log_softmax) of ``x * scale`` over its last dim, masked as ``attention_softmax`` says (``causal``:
    keys after each query out; ``mask``: bool, True takes part, or added), rows with nothing left giving zeros when
    ``safe``; into ``out`` (which may be ``x``) or a new array. None when this path declines."""
    lib = LIB.get()
    if lib is None:
        return None
    code = _rows_of(x)
    if code is None or x.size == 0:
        return None
    n = x.shape[-1]
    rows = x.size // n
    mk, marr, desc = 0, None, None
    if mask is not None:
        m = _mask_operand(mask, x.shape, x.dtype)
        if m is None:
            return None
        mk, marr, desc = m
    L = 0
    if causal:
        if x.ndim < 2:
            return None
        L = x.shape[-2]
    if out is None:
        out = np.empty_like(x)
    elif out is not x and (_rows_of(out) != code or out.shape != x.shape or np.may_share_memory(out, x)):
        return None
    _run(lib.sm_fwd, (code, int(log), int(safe), rows, n, address(x), float(scale), L, mk, address_or_none(marr), desc,
                      address(out)), rows, n, threads, "softmax")
    return out


def softmax_backward(y: Any, g: Any, log: bool = False, scale: float = 1.0, out: Any = None,
                     threads: int = 1) -> Any:
    """The input gradient of softmax (log_softmax) over the last dim from its output ``y``, times ``scale``; into
    ``out`` (which may be ``g``) or a new array. None when this path declines."""
    lib = LIB.get()
    if lib is None:
        return None
    code = _rows_of(y)
    if code is None or y.size == 0 or _rows_of(g) != code or g.shape != y.shape:
        return None
    n = y.shape[-1]
    rows = y.size // n
    if out is None:
        out = np.empty_like(y)
    elif out is not g and (_rows_of(out) != code or out.shape != y.shape):
        return None
    _run(lib.sm_bwd, (code, int(log), rows, n, address(y), address(g), float(scale), address(out)), rows, n,
         threads, "softmax backward")
    return out


# ------------------------------------------------------------------------------------------ cross-entropy
def _ce_operands(x: Any, target: Any, weight: Any) -> tuple[Any, int, Any] | None:
    """(library, dtype code, flat target) when the loops take these operands: (N, C) contiguous float logits,
    int64 targets of N entries, class weights (C,) of the logits' dtype or None."""
    lib = LIB.get()
    if lib is None:
        return None
    code = _rows_of(x)
    if code is None or x.ndim != 2 or x.shape[1] == 0 or target.__class__ is not np.ndarray or \
            target.dtype != _I64 or target.size != x.shape[0] or not _vector(weight, x.dtype, x.shape[1]):
        return None
    t = target.reshape(-1)
    if not t.flags.c_contiguous:
        return None
    return lib, code, t


def cross_entropy(x: Any, target: Any, weight: Any, ignore_index: int, label_smoothing: float, want_grad: bool,
                  threads: int = 1) -> tuple[Any, Any, Any, Any] | None:
    """(loss (N,), row maxima (N,), log-sum-exp relative to them (N,), dlogits of the summed losses or None) of
    (N, C) logits ``x`` and class indices ``target``, or None when this path declines."""
    ops = _ce_operands(x, target, weight)
    if ops is None:
        return None
    lib, code, t = ops
    rows, C = x.shape
    loss = np.empty(rows, x.dtype)
    rowmax = np.empty(rows, x.dtype)
    lse = np.empty(rows, x.dtype)
    d = np.empty_like(x) if want_grad else None
    _run(lib.ce, (code, rows, C, address(x), address(t), address_or_none(weight), int(ignore_index), float(label_smoothing),
                  address(loss), address(rowmax), address(lse), address_or_none(d)), rows, C, threads, "cross-entropy")
    return loss, rowmax, lse, d


def cross_entropy_backward(x: Any, target: Any, weight: Any, ignore_index: int, label_smoothing: float, rowmax: Any,
                           lse: Any, gout: Any, scale: float, threads: int = 1) -> Any:
    """The logits' gradient from :func:`cross_entropy`'s row maxima and log-sum-exp, times the per-row (N,) or
    single (0-d) loss gradient ``gout`` and ``scale``; None when this path declines."""
    ops = _ce_operands(x, target, weight)
    if ops is None:
        return None
    lib, code, t = ops
    rows, C = x.shape
    go = np.ascontiguousarray(gout, dtype=x.dtype).reshape(-1)
    if go.size not in (1, rows):
        return None
    dx = np.empty_like(x)
    _run(lib.ce_bwd, (code, rows, C, address(x), address(t), address_or_none(weight), int(ignore_index),
                      float(label_smoothing), address(rowmax), address(lse), address(go), int(go.size == rows and
                                                                                             rows != 1),
                      float(scale), address(dx)), rows, C, threads, "cross-entropy backward")
    return dx
