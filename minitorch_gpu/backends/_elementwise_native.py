"""The CPU backend's compiled elementwise maps: kernels/elementwise_cpu.cpp, built with the host C++ compiler on first
use, cached on disk, and called through ctypes.

NumPy computes gelu, its gradient, sigmoid or erf in 5 to 15 passes over memory (one per ufunc, each with a fresh
temporary), and fmod, remainder, floor division, logaddexp and hypot through scalar libm loops 5 to 20 times slower
than a vector loop; one compiled pass brings them to PyTorch's speed. The NumPy bodies in ``_elementwise.py`` stay
the reference: they run whenever this path declines (no compiler, a dtype other than float32/float64, a strided or
broadcast operand, a small array for the ops where NumPy's one ufunc is as fast), and tests compare the two.

``MINITORCH_GPU_NATIVE_ELEMENTWISE=0`` switches it off. A build failure is reported once as a warning and the NumPy
bodies are used from then on.
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._cpu_library import CpuLibrary, address, build, parallel_entry
from ._types import writable
from .cuda.loader import enum_codes, kernel_dir

__all__ = ["available", "unavailable_reason", "unary", "binary", "lstm_cell_forward", "lstm_cell_backward", "UNARY",
           "BINARY", "SMALL_OK", "SCALAR_LIBM", "PARALLEL_ONLY", "SMALL_MIN", "MEDIUM_MIN", "MIN_SIZE"]

_ABI = "1"
_PURPOSE = "the native CPU elementwise library"
_SOURCE = "elementwise_cpu.cpp"
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}
# elements a thread should have before a call is split: a hand-off to the native pool's spinning helpers costs
# about a microsecond, a one-pass map of 16K floats about 8. Measured on 2 CPUs (2 threads' time over 1's, in
# rounds where the second CPU was free): 32K elements 1.03-1.06 (one piece), 48K 0.74-0.81, 64K 0.63-0.78,
# 128K 0.58-0.64 (gelu, sigmoid, floor_divide)
_PARALLEL_MIN_ELEMENTS = 3 << 13
# elements per piece of shared work (a multiple of 16: pieces start on 64-byte boundaries of the arrays)
_PIECE = 1 << 14

UNARY: dict[str, int] = enum_codes(_SOURCE, "UnaryOp")
BINARY: dict[str, int] = enum_codes(_SOURCE, "BinaryOp")
SMALL_OK = frozenset({"erf", "gelu", "gelu_tanh", "silu", "gelu_backward", "gelu_tanh_backward", "erfinv", "lgamma",
                      "digamma", "erfc"})
"""Ops whose NumPy body takes ten passes or more: the compiled pass wins at every size."""
SCALAR_LIBM = frozenset({"fmod", "remainder", "floor_divide", "logaddexp", "logaddexp2", "hypot", "exp2"})
"""Ops NumPy computes in a scalar libm loop (5-20 ns an element): the compiled pass wins from ``SMALL_MIN``
elements on. The rest (sigmoid, sign, the activation gradients: a few fast ufunc passes) only from ``MEDIUM_MIN``,
where their passes over memory outweigh the fixed cost of a ctypes call (a few microseconds)."""
SMALL_MIN = 256
MEDIUM_MIN = 4096
PARALLEL_ONLY = frozenset({"relu", "add", "sub", "mul", "div"})
"""Ops NumPy runs in one fast pass on one thread: compiled only where the call is split between threads (the
backend installs them only while it has more than one)."""


def _min_size(name: str) -> int:
    if name in PARALLEL_ONLY:
        return 2 * _PARALLEL_MIN_ELEMENTS
    return 0 if name in SMALL_OK else SMALL_MIN if name in SCALAR_LIBM else MEDIUM_MIN

class _Library:
    def __init__(self, path: Path, lib: ctypes.CDLL) -> None:
        i64, ptr, c_int = ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int
        self.path = path
        self.unary = lib.mt_ew_unary
        self.unary.restype = c_int
        self.unary.argtypes = [c_int, c_int, i64, ptr, ptr]
        self.binary = lib.mt_ew_binary
        self.binary.restype = c_int
        self.binary.argtypes = [c_int, c_int, i64, ptr, i64, ptr, i64, ptr]
        # the same over pieces shared through a counter, on the worker pool: (workers, ..., piece, next)
        self.unary_pieces = parallel_entry(lib, "mt_ew_unary_pieces", [*self.unary.argtypes, i64, ptr])
        self.binary_pieces = parallel_entry(lib, "mt_ew_binary_pieces", [*self.binary.argtypes, i64, ptr])
        self.lstm_forward = lib.mt_lstm_cell_forward
        self.lstm_forward.restype = c_int
        self.lstm_forward.argtypes = [c_int, i64, i64, ptr, ptr, ptr, ptr, ptr]
        self.lstm_backward = lib.mt_lstm_cell_backward
        self.lstm_backward.restype = c_int
        self.lstm_backward.argtypes = [c_int, i64, i64, ptr, ptr, ptr, ptr, ptr, ptr, ptr]
        sup = lib.mt_ew_supports
        sup.restype = c_int
        # (name, dtype) pairs the library computes: checked before anything is allocated
        self.unary_ok = {(name, dt) for name, code in UNARY.items() for dt, c in _DTYPES.items() if sup(1, code, c)}
        self.binary_ok = {(name, dt) for name, code in BINARY.items() for dt, c in _DTYPES.items() if sup(2, code, c)}


def _build() -> _Library:
    src = Path(kernel_dir()) / _SOURCE
    # glibc's vector math library first (vector exp, exp2, erf, erfc, log1p); without it the same loops call scalar libm
    path, lib = build("elementwise_cpu", [src, src.parent / "cpu_vecmath.h", src.parent / "pool_cpu.h"], _ABI,
                      _PURPOSE,
                      extras=(("-DMT_LIBMVEC", "-lmvec"), ()))
    return _Library(path, lib)


MIN_SIZE = {name: _min_size(name) for name in (*UNARY, *BINARY)}
"""Elements from which each op runs compiled."""

_loader = CpuLibrary(_build, "MINITORCH_GPU_NATIVE_ELEMENTWISE", _PURPOSE,
                     "the CPU computes these maps with the slower NumPy bodies")
_state = _loader.state
_library = _loader.get


def available() -> bool:
    """Whether the compiled maps can run here (builds them on the first call)."""
    return _library() is not None


def unavailable_reason() -> str | None:
    """Why :func:`available` is False (None when it is True)."""
    return _loader.reason


_ptr = address


def _plain(x: Any, dt: np.dtype[Any]) -> bool:
    """A C-contiguous array of dtype ``dt`` (the only layout the loops take)."""
    return x.__class__ is np.ndarray and x.dtype == dt and x.flags.c_contiguous


def _target(out: Any, shape: tuple[int, ...], dt: np.dtype[Any], *inputs: Any) -> Any:
    """Where the result goes: ``out`` when the loops can write it directly, a new array when there is no ``out``,
    None when the caller must fall back (NumPy also handles an ``out`` that partly overlaps an input)."""
    if out is None:
        return np.empty(shape, dt)
    if out.__class__ is not np.ndarray or out.shape != shape or not _plain(out, dt) or not writable(out):
        return None
    for x in inputs:
        if x is not out and x.__class__ is np.ndarray and np.may_share_memory(x, out):
            return None
    return out


def _workers(n: int, threads: int | Callable[[], int]) -> int:
    """How many threads share a map of ``n`` elements (``threads`` asked only for long arrays)."""
    if n < 2 * _PARALLEL_MIN_ELEMENTS:
        return 1
    return max(1, min(threads() if callable(threads) else threads, n // _PARALLEL_MIN_ELEMENTS))


def _check(rc: int) -> None:
    if rc != 0:
        raise RuntimeError(f"{_PURPOSE} rejected its arguments (code {rc})")


Threads = int | Callable[[], int]
"""How many threads may share a long array: a count, or a function asked only when the array is long."""


def unary(name: str, x: Any, out: Any = None, threads: Threads = 1) -> Any:
    """``name`` over ``x`` in one compiled pass, or None (nothing computed) when this path declines."""
    lib = _library()
    if lib is None:
        return None
    dt = x.dtype if x.__class__ is np.ndarray else None
    if dt is None or (name, dt) not in lib.unary_ok or not x.flags.c_contiguous:
        return None
    n = x.size
    if n < MIN_SIZE[name]:
        return None
    workers = _workers(n, threads)
    if workers <= 1 and name in PARALLEL_ONLY:
        return None
    y = _target(out, x.shape, dt, x)
    if y is None:
        return None
    code, dcode = UNARY[name], _DTYPES[dt]
    if workers <= 1:
        _check(lib.unary(code, dcode, n, _ptr(x), _ptr(y)))
    else:
        # pieces shared through a counter by the pool's threads (elementwise results cannot depend on who
        # computed which, and a helper that starts late just takes fewer)
        _check(lib.unary_pieces(workers, code, dcode, n, _ptr(x), _ptr(y), _PIECE, ctypes.byref(ctypes.c_longlong(0))))
    return y


def binary(name: str, a: Any, b: Any, out: Any = None, threads: Threads = 1) -> Any:
    """``name`` over ``a`` and ``b`` (arrays of one shape and dtype, or one of them a Python number) in one
    compiled pass, or None (nothing computed) when this path declines."""
    lib = _library()
    if lib is None:
        return None
    a_arr, b_arr = a.__class__ is np.ndarray, b.__class__ is np.ndarray
    ref = a if a_arr else b
    if not (a_arr or b_arr):
        return None
    dt = ref.dtype
    if (name, dt) not in lib.binary_ok:
        return None
    shape = ref.shape
    for v, is_arr in ((a, a_arr), (b, b_arr)):
        if is_arr:
            if v.shape != shape or not _plain(v, dt):
                return None
        elif type(v) not in (float, int, bool):
            return None
    n = ref.size
    if n < MIN_SIZE[name]:
        return None
    workers = _workers(n, threads)
    if workers <= 1 and name in PARALLEL_ONLY:
        return None
    y = _target(out, shape, dt, a, b)
    if y is None:
        return None
    # a number operand travels as a one-element array of the dtype (step 0): NumPy's weak-scalar rule
    av = a if a_arr else np.array([a], dt)
    bv = b if b_arr else np.array([b], dt)
    args = (BINARY[name], _DTYPES[dt], n, _ptr(av), int(a_arr), _ptr(bv), int(b_arr), _ptr(y))
    if workers <= 1:
        _check(lib.binary(*args))
    else:
        _check(lib.binary_pieces(workers, *args, _PIECE, ctypes.byref(ctypes.c_longlong(0))))
    return y


def _lstm_operands(gi: Any, gh: Any, c: Any) -> tuple[_Library, int, int, int] | None:
    """(library, dtype code, B, H) when the LSTM cell loops take these operands (contiguous, one float dtype, the
    shapes of ``backends/_rnn.py``), else None."""
    lib = _library()
    if lib is None or c.__class__ is not np.ndarray or c.ndim != 2:
        return None
    dt = c.dtype
    code = _DTYPES.get(dt)
    B, H = c.shape
    if code is None or not (_plain(gi, dt) and _plain(gh, dt) and _plain(c, dt)):
        return None
    if gi.shape != (B, 4 * H) or gh.shape != (B, 4 * H):
        return None
    return lib, code, B, H


def lstm_cell_forward(gi: Any, gh: Any, c: Any) -> tuple[Any, Any] | None:
    """(h', c') of one LSTM step in one compiled pass (``_rnn.lstm_cell_forward``), or None when declined."""
    ops = _lstm_operands(gi, gh, c)
    if ops is None:
        return None
    lib, code, B, H = ops
    h, c_new = np.empty_like(c), np.empty_like(c)
    if lib.lstm_forward(code, B, H, _ptr(gi), _ptr(gh), _ptr(c), _ptr(h), _ptr(c_new)) != 0:
        raise RuntimeError(f"{_PURPOSE} rejected the LSTM cell's arguments")
    return h, c_new


def lstm_cell_backward(dh: Any, dc: Any, gi: Any, gh: Any, c: Any) -> tuple[Any, Any] | None:
    """(d gates, d c) of one LSTM step in one compiled pass (``_rnn.lstm_cell_backward``; ``dh``/``dc`` None for
    a zero gradient), or None when declined."""
    ops = _lstm_operands(gi, gh, c)
    if ops is None:
        return None
    lib, code, B, H = ops
    for g in (dh, dc):
        if g is not None and (not _plain(g, c.dtype) or g.shape != c.shape):
            return None
    d, dc_prev = np.empty_like(gi), np.empty_like(c)
    if lib.lstm_backward(code, B, H, None if dh is None else _ptr(dh), None if dc is None else _ptr(dc), _ptr(gi),
                         _ptr(gh), _ptr(c), _ptr(d), _ptr(dc_prev)) != 0:
        raise RuntimeError(f"{_PURPOSE} rejected the LSTM cell's arguments")
    return d, dc_prev
