"""Typed kernel launchers, shared by the real GPU and the CPU simulator.

A ``Launcher`` is built from a runtime description: the array module (CuPy or NumPy), a kernel loader
(``cupy.RawModule`` or ``sim.SimModule`` underneath), a function giving an array's device address, and the
grid cap. Everything else — which kernel, grid and block sizes, how shapes and strides are packed, every
scalar typed explicitly (CuPy does no argument checking: a Python float passed for a ``float`` parameter
would be packed as a double) — is this module's, so CI exercises on the simulator the launch code the GPU
runs.

Each method returns the result array, or ``None`` when the inputs fall outside what the kernels handle
(another dtype, overlapping output, more than 8 non-collapsible dims...); the backend then uses the array
library's built-in for that call.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np

from .checks import DeferredChecks
from .._elementwise_table import KERNEL_FILE, kernel_members
from .._types import Array, NpDtype, Shape

from . import loader as _loader
from .fused_step import FusedStep, fused_group_sizes
from .loader import enum_codes as codes

__all__ = ["Launcher", "THREADS", "gemm_plan", "gemm_class", "GemmKernel", "GemmPlan", "SGEMM_KERNELS", "SGEMM_CHOICE"]

THREADS = 256
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
_FLOATS = (F32, F64)
_TNAME = {F32: "float", F64: "double"}
_PY_SCALARS = (int, float, bool)
_META_CACHE_MAX = 512
_BOOL = np.dtype(np.bool_)
MODE_VEC = 1 << 4  # elementwise.cu's MODE_VEC: operands are contiguous and 16-byte aligned

Strides = tuple[int, ...]
Operand = Any
"""An array of the launcher's array module, or a Python scalar."""
TailArgs = Callable[[list[Any], int], tuple[Any, ...]]
"""(typed scalars, mode bits) -> the trailing kernel arguments of a map kernel."""
Layout = tuple[Shape, Any, bool, int, Any]
"""(shape, array whose layout a new output copies or None, contiguous, dims walked, device meta or None)."""

@functools.cache
def _kernel_ops() -> dict[str, tuple[str, int]]:
    return {prim: (enum, codes(KERNEL_FILE, enum)[member.split("_", 1)[1]])
            for prim, (enum, member) in kernel_members().items()}


def kernel_op(name: str) -> tuple[str, int] | None:
    """(enum, op code) of elementwise.cu for primitive ``name``, or None when the kernels lack it: the primitive
    table names the enum member, the kernel source numbers it (read once per process)."""
    return _kernel_ops().get(name)


def _i64(v: int) -> np.int64:
    return np.int64(v)


def _i32(v: int) -> np.int32:
    return np.int32(v)


def _broadcast_shape(shapes: Sequence[Shape]) -> Shape | None:
    nd = max(len(s) for s in shapes)
    out = [1] * nd
    for s in shapes:
        off = nd - len(s)
        for i, n in enumerate(s):
            j = off + i
            if n != 1:
                if out[j] != 1 and out[j] != n:
                    return None
                out[j] = n
    return tuple(out)


def collapse(shape: Shape, strides_list: Sequence[Strides]) -> tuple[Shape, list[Strides]]:
    """Merge dims that every operand walks contiguously and drop size-1 dims: (shape, [strides per operand]).

    ``strides_list`` holds element strides aligned with ``shape``. The result describes the same elements
    in the same row-major order with as few dims as possible (a contiguous walk becomes one dim)."""
    dims = [d for d, n in enumerate(shape) if n != 1]
    if not dims:
        return (), [() for _ in strides_list]
    out_shape = [shape[dims[-1]]]
    out_strides = [[st[dims[-1]]] for st in strides_list]
    for d in reversed(dims[:-1]):
        n = shape[d]
        inner = out_shape[0]
        if all(st[d] == ost[0] * inner for st, ost in zip(strides_list, out_strides)):
            out_shape[0] = inner * n
        else:
            out_shape.insert(0, n)
            for st, ost in zip(strides_list, out_strides):
                ost.insert(0, st[d])
    return tuple(out_shape), [tuple(s) for s in out_strides]


def _embedding_range_error(flag: np.ndarray[Any, Any]) -> IndexError | None:
    """embedding_backward's flag: set when an index lay outside the table (the CPU's message)."""
    return IndexError("index out of range in self") if flag[0] else None


class _MapKernels:
    """Launch plumbing (kernel lookup, grids, strided metadata) and the elementwise maps of elementwise.cu."""

    def __init__(self, xp: Any, module_cls: Any, ptr: Callable[[Array], int], max_blocks: int,
                 upload: Callable[[np.ndarray[Any, Any]], Array] | None = None, sms: int = 1) -> None:
        self.xp = xp
        self.sms = sms  # streaming multiprocessors: how many blocks fill the device once (GEMM tile choice)
        self.loader = _loader.KernelLoader(module_cls)
        self.ptr = ptr
        self.max_blocks = max_blocks
        # host int64 array -> device array (CuPy: an H2D copy; NumPy: the array itself)
        self.upload = upload or xp.asarray
        self._meta: dict[tuple[Any, ...], Array] = {}
        # the owning backend replaces this with its own queue, read at its synchronisations
        self.checks = DeferredChecks(getattr(xp, "asnumpy", np.asarray), xp.concatenate)

    # ------------------------------------------------------------------ plumbing
    def fn(self, fname: str, kernel: str) -> Any:
        """The callable kernel ``kernel`` of ``kernels/<fname>``."""
        return self.loader.function(fname, kernel)

    def grid(self, n: int, per_thread: int = 1, threads: int = THREADS) -> tuple[int]:
        """A 1-d grid for ``n`` work items, capped at ``max_blocks`` (the kernels loop over the rest)."""
        work = (n + per_thread - 1) // per_thread
        return (max(1, min((work + threads - 1) // threads, self.max_blocks)),)

    def meta(self, shape: Shape, strides_list: Sequence[Strides]) -> Array:
        """The device int64 array [shape | strides of each operand], cached by content: training repeats the
        same broadcast patterns every step, so steady state uploads nothing."""
        key = (shape, tuple(strides_list))
        m = self._meta.get(key)
        if m is None:
            flat = list(shape)
            for st in strides_list:
                flat.extend(st)
            m = self.upload(np.array(flat, dtype=np.int64))
            if len(self._meta) >= _META_CACHE_MAX:
                self._meta.clear()
            self._meta[key] = m
        return m

    def _aligned(self, *arrays: Array | None) -> bool:
        return all(a is None or self.ptr(a) % 16 == 0 for a in arrays)

    @staticmethod
    def _estrides(a: Array, shape: Shape) -> Strides:
        """Element strides of array ``a`` broadcast to ``shape`` (0 on broadcast dims)."""
        item = a.itemsize
        off = len(shape) - a.ndim
        st = [0] * off
        for n, s, target in zip(a.shape, a.strides, shape[off:]):
            st.append(0 if (n == 1 and target != 1) else s // item)
        return tuple(st)

    def _operands(self, items: Sequence[Operand], dt: NpDtype) -> tuple[list[Any], list[Any], int] | None:
        """Split ``items`` (arrays or Python scalars) into arrays and typed scalars for a kernel over ``dt``:
        (arrays with None for scalars, scalars with 0 for arrays, mode bits) or None when an item does not fit
        (an array of another dtype or library, a NumPy scalar, which NumPy would not treat as weak)."""
        xp = self.xp
        t = dt.type
        arrays, scalars, mode = [], [], 0
        for k, v in enumerate(items):
            if isinstance(v, xp.ndarray):
                if v.dtype != dt:
                    return None
                arrays.append(v)
                scalars.append(t(0))
            elif type(v) in _PY_SCALARS:
                with np.errstate(over="ignore"):
                    scalars.append(t(v))
                arrays.append(None)
                mode |= 1 << k
            else:
                return None
        return arrays, scalars, mode

    def _layout(self, arrays: Sequence[Array | None], out: Array | None) -> Layout | None:
        """How to walk array operands ``arrays`` (None entries are scalars) and the output:
        (shape, like, contiguous, nd, meta), or None when unsupported. ``like`` is the operand whose memory
        layout a new output should copy (a dense permuted input, as NumPy and PyTorch keep it), else None
        for a C-contiguous output. ``contiguous`` means every operand is walked as one flat run."""
        present = [a for a in arrays if a is not None]
        first = present[0]
        shape = first.shape
        if all(a.shape == shape and a.flags.c_contiguous for a in present) and (
                out is None or (out.shape == shape and out.flags.c_contiguous)):
            return shape, None, True, 0, None
        shape = _broadcast_shape([a.shape for a in present])
        if shape is None or (out is not None and out.shape != shape):
            return None
        ins = [self._estrides(a, shape) for a in present]
        like = None
        if out is not None:
            st_out = self._estrides(out, shape)
            if any(s == 0 and n > 1 for s, n in zip(st_out, shape)):
                return None
        elif first.shape == shape and _dense(first) and all(s == ins[0] for s in ins[1:]):
            like, st_out = first, ins[0]
        else:
            st_out = _c_strides(shape)
        # scalar operands keep their slot in the meta layout (the kernel indexes operands by position)
        zero = (0,) * len(shape)
        it = iter(ins)
        strides = [st_out] + [zero if a is None else next(it) for a in arrays]
        # walk in the output's memory order (any order is valid for a map), so permuted layouts collapse
        order = sorted(range(len(shape)), key=lambda d: -abs(st_out[d]))
        if order != list(range(len(shape))):
            shape_o = tuple(shape[d] for d in order)
            strides = [tuple(st[d] for d in order) for st in strides]
        else:
            shape_o = shape
        cshape, cstrides = collapse(shape_o, strides)
        walked = [cstrides[0]] + [st for a, st in zip(arrays, cstrides[1:]) if a is not None]
        if len(cshape) <= 1 and all(s == (1,) or s == () for s in walked):
            return shape, like, True, 0, None
        if len(cshape) > 8:
            return None
        return shape, like, False, len(cshape), self.meta(cshape, cstrides)

    def _out(self, out: Array | None, shape: Shape, dt: NpDtype, like: Array | None) -> Array:
        if out is not None:
            return out
        if like is not None:
            return self.xp.empty_like(like, dtype=dt)
        return self.xp.empty(shape, dtype=dt)

    def _overlaps(self, out: Array, arrays: Sequence[Array | None]) -> bool:
        """Whether ``out`` shares memory with an input other than by being that same element layout."""
        xp = self.xp
        for a in arrays:
            if a is None:
                continue
            if self.ptr(a) == self.ptr(out) and a.strides == out.strides and a.shape == out.shape:
                continue
            if xp.may_share_memory(a, out):
                return True
        return False

    def _strided_arrays(self, arrays: Sequence[Array | None], out: Array) -> list[Array]:
        """Arrays in kernel argument order for the strided path: the first array stands in for scalars (never
        read), because a kernel pointer argument must be a real allocation on both runtimes."""
        fill = next(a for a in arrays if a is not None)
        return [fill if a is None else a for a in arrays]

    # ------------------------------------------------------------------ elementwise
    def _map(self, kernel_contig: str | None, kernel_strided: str, items: Sequence[Operand], out: Array | None,
             out_dt: NpDtype, dt: NpDtype, tail_args: TailArgs, vec_ok: bool) -> Array | None:
        """The common driver of the map kernels: operands -> layout -> output -> launch. ``items`` are arrays or
        Python scalars; returns the output or None (unsupported case)."""
        got = self._operands(items, dt)
        if got is None:
            return None
        arrays, scalars, mode = got
        if out is not None and (out.dtype != out_dt or self._overlaps(out, arrays)):
            return None
        lay = self._layout(arrays, out)
        if lay is None:
            return None
        shape, like, contig, nd, meta = lay
        out = self._out(out, shape, out_dt, like)
        n = math.prod(shape)
        if n == 0:
            return out
        ptrs = self._strided_arrays(arrays, out)
        if contig and kernel_contig is not None:
            vec = vec_ok and self._aligned(*arrays, out)
            per = 16 // dt.itemsize if vec else 1
            if vec:
                mode |= MODE_VEC
            self.fn("elementwise.cu", kernel_contig)(
                self.grid(n, per), (THREADS,), (_i64(n), *ptrs, out, *tail_args(scalars, mode)))
            return out
        if contig:
            nd, meta = 0, self._empty_meta()
        self.fn("elementwise.cu", kernel_strided)(
            self.grid(n), (THREADS,), (_i64(n), _i32(nd), meta, *ptrs, out, *tail_args(scalars, mode)))
        return out

    def _empty_meta(self) -> Array:
        return self.meta((0,), ())

    def unary(self, name: str, x: Array, out: Array | None = None, p0: float = 0.0, p1: float = 0.0) -> Array | None:
        """``name`` (an UnaryOp or PredicateOp of elementwise.cu) of a float32/float64 array."""
        dt = x.dtype
        if dt not in _FLOATS:
            return None
        t = _TNAME[dt]
        kop = kernel_op(name)
        if kop is None:
            return None
        enum, op = kop
        if enum == "PredicateOp":
            return self._map(None, f"predicate_forward<{t}>", (x,), out, _BOOL, dt,
                             lambda s, m: (_i32(op),), False)
        if enum != "UnaryOp":
            return None
        s0, s1 = dt.type(p0), dt.type(p1)
        return self._map(f"unary_forward<{t}>", f"unary_strided_forward<{t}>", (x,), out, dt, dt,
                         lambda s, m: _unary_tail(op, s0, s1, m), True)

    def binary(self, name: str, a: Operand, b: Operand, out: Array | None = None) -> Array | None:
        """``a <name> b`` (a BinaryOp or CompareOp of elementwise.cu); either side may be a Python scalar."""
        xp = self.xp
        arr = a if isinstance(a, xp.ndarray) else b
        if not isinstance(arr, xp.ndarray):
            return None
        dt = arr.dtype
        if dt not in _FLOATS:
            return None
        t = _TNAME[dt]
        kop = kernel_op(name)
        if kop is None:
            return None
        enum, op = kop
        if enum == "CompareOp":
            return self._map(None, f"compare_forward<{t}>", (a, b), out, _BOOL, dt,
                             lambda s, m: (_i32(op), s[0], s[1], _i32(m)), False)
        if enum != "BinaryOp":
            return None
        return self._map(f"binary_forward<{t}>", f"binary_strided_forward<{t}>", (a, b), out, dt, dt,
                         lambda s, m: (_i32(op), s[0], s[1], _i32(m)), True)

    def ternary(self, name: str, a: Array, b: Operand, c: Operand, alpha: float = 1.0,
                out: Array | None = None) -> Array | None:
        """clamp(a, b, c), lerp(a, b, c), addcmul / addcdiv ``a + alpha * b (*|/) c``; b and c may be Python
        scalars (a missing clamp bound is passed as -inf / inf)."""
        xp = self.xp
        if not isinstance(a, xp.ndarray) or a.dtype not in _FLOATS:
            return None
        dt = a.dtype
        kop = kernel_op(name)
        if kop is None or kop[0] != "TernaryOp":
            return None
        op = kop[1]
        with np.errstate(over="ignore"):
            al = dt.type(alpha)
        return self._map(None, f"ternary_forward<{_TNAME[dt]}>", (a, b, c), out, dt, dt,
                         lambda s, m: (_i32(op), s[0], s[1], s[2], al, _i32(m)), False)

    def where(self, cond: Array, a: Operand, b: Operand) -> Array | None:
        """``cond ? a : b`` for a bool array ``cond`` and float32/float64 ``a``, ``b`` (arrays or scalars)."""
        xp = self.xp
        if not isinstance(cond, xp.ndarray) or cond.dtype != _BOOL:
            return None
        arr = a if isinstance(a, xp.ndarray) else b
        if not isinstance(arr, xp.ndarray) or arr.dtype not in _FLOATS:
            return None
        dt = arr.dtype
        got = self._operands((a, b), dt)
        if got is None:
            return None
        arrays, (sa, sb), mode = got
        lay = self._layout([cond] + arrays, None)
        if lay is None:
            return None
        shape, like, contig, nd, meta = lay
        out = self._out(None, shape, dt, like)
        n = math.prod(shape)
        if n == 0:
            return out
        if contig:
            nd, meta = 0, self._empty_meta()
        pa, pb = self._strided_arrays(arrays, out)
        self.fn("elementwise.cu", f"where_forward<{_TNAME[dt]}>")(
            self.grid(n), (THREADS,), (_i64(n), _i32(nd), meta, cond, pa, pb, out, sa, sb, _i32(mode << 1)))
        return out


def _unary_tail(op: int, s0: Any, s1: Any, mode: int) -> tuple[Any, ...]:
    return (_i32(op), s0, s1, _i32(1 if mode & MODE_VEC else 0))


def _c_strides(shape: Shape) -> Strides:
    out = []
    acc = 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def _dense(a: Array) -> bool:
    """Whether ``a``'s elements tile one block of memory with positive strides (any dim order)."""
    item = a.itemsize
    dims = sorted((s, n) for s, n in zip(a.strides, a.shape) if n != 1)
    expected = item
    for s, n in dims:
        if s != expected:
            return False
        expected *= n
    return True


# ---------------------------------------------------------------------- row-wise kernels and GEMM
# split-K: a split gets at least this many k; the 128 x 128 kernels are worth a split only from _BIG_SPLIT_K on
_SPLIT_MIN_K = 512
_BIG_SPLIT_K = 2048


class GemmKernel(NamedTuple):
    """A GEMM entry point of matmul.cu and the shape it was compiled for (the launcher sizes grids and split-K
    chunks from these, so they must match the kernel's template arguments)."""
    entry: str
    bm: int
    bn: int
    bk: int
    threads: int
    per_sm: int  # blocks of it that its launch bounds let one SM hold


SGEMM_KERNELS: dict[str, GemmKernel] = {
    "v2": GemmKernel("matmul_forward_v2", 128, 128, 8, 256, 2),
    "warp_k8": GemmKernel("sgemm_warp_128x128_k8", 128, 128, 8, 256, 2),
    "warp_k16": GemmKernel("sgemm_warp_128x128_k16", 128, 128, 16, 256, 2),
    "warp_k8_s3": GemmKernel("sgemm_warp_128x128_k8_s3", 128, 128, 8, 256, 2),
    "warp_128x64": GemmKernel("sgemm_warp_128x64_k16", 128, 64, 16, 128, 4),
    "warp_64x128": GemmKernel("sgemm_warp_64x128_k16", 64, 128, 16, 128, 4),
    "warp_128x64_s3": GemmKernel("sgemm_warp_128x64_k16_s3", 128, 64, 16, 128, 3),
    "warp_64x128_s3": GemmKernel("sgemm_warp_64x128_k16_s3", 64, 128, 16, 128, 3),
    "tile64": GemmKernel("matmul_forward<float>", 64, 64, 16, 256, 2),
}
_DGEMM = GemmKernel("matmul_forward<double>", 64, 64, 16, 256, 2)

# THE table to edit after `python -m benchmarks.sgemm_variants` on a GPU: per class of float32 product (see
# gemm_class), (an SGEMM_KERNELS name, L2 swizzle: bands of that many tile rows, 0 for none). The script prints
# its winners in this form. Set from its H100 run of 2026-11-26 (ratios to cuBLAS; v2, the previous choice, in
# brackets); the swizzle moved no case by more than 0.01, so it stays off.
SGEMM_CHOICE: dict[str, tuple[str, int]] = {
    "large": ("warp_64x128", 0),  # 0.73-0.75 [0.67-0.69]: 4096^3, 2048^3, 8192 x 8192 x 1024
    "short_k": ("warp_k16", 0),   # 0.66, 0.89 with bias vs cuBLAS + add [0.66, 0.85]: x @ W.T, K = C = 384
    "narrow": ("warp_k16", 0),    # 0.75 [0.70]: g @ W, N = C = 384
    "splitk": ("warp_k16", 0),    # 0.77 [0.72]: g.T @ x, 1536 x 384 over K = 16384, K split across blocks
    "small": ("tile64", 0),       # fewer 128 x 128 tiles than SMs, K short: 64 x 64 tiles, four times the blocks
}


class GemmPlan(NamedTuple):
    kernel: GemmKernel
    swizzle: int
    splits: int


def gemm_class(dt: NpDtype, nb: int, M: int, N: int, K: int, sms: int) -> str:
    """The SGEMM_CHOICE row of ``nb`` float32 products (M x K) @ (K x N) on ``sms`` SMs."""
    if nb * -(-M // 128) * -(-N // 128) < sms:
        return "splitk" if dt == F32 and K >= _BIG_SPLIT_K else "small"
    if min(M, N) <= 512:
        return "narrow"
    return "short_k" if K <= 512 else "large"


def gemm_plan(dt: NpDtype, nb: int, M: int, N: int, K: int, sms: int,
              variant: tuple[str, int] | None = None) -> GemmPlan:
    """(kernel, swizzle, split-K count) of matmul.cu for ``nb`` products (M x K) @ (K x N) on ``sms`` SMs.

    float32 takes its kernel from SGEMM_CHOICE by gemm_class, or ``variant`` ((SGEMM_KERNELS name, swizzle): the
    benchmark and the tests force each one); float64 always runs the 64 x 64 tiles. When the tiles leave SMs idle
    and K is long (a weight gradient g.T @ x with K = batch x tokens), K is split so that the blocks fill one
    wave at most, each on its own slice of a workspace that a second pass sums in order.
    """
    if dt == F32:
        name, swizzle = variant or SGEMM_CHOICE[gemm_class(dt, nb, M, N, K, sms)]
        kern = SGEMM_KERNELS[name]
    else:
        kern, swizzle = _DGEMM, 0
    tiles = nb * -(-M // kern.bm) * -(-N // kern.bn)
    splits = 1
    if tiles < sms and K >= 2 * _SPLIT_MIN_K:
        # one block more than the SMs hold at once starts a second, nearly empty wave
        splits = max(1, min(kern.per_sm * sms // tiles, K // _SPLIT_MIN_K, 64))
    return GemmPlan(kern, swizzle, splits)


class _RowKernels(_MapKernels):
    """softmax / log_softmax, cross-entropy, layer norm: kernels over rows of a contiguous last dim."""

    # rows up to this long get a warp each (v1); longer rows a block each (v2)
    WARP_ROW_MAX = 1024

    def softmax(self, x: Array, log: bool, axis: int) -> Array | None:
        """softmax (or log_softmax) of float32/float64 ``x`` along ``axis`` (the last dim only)."""
        if x.dtype not in _FLOATS or x.ndim == 0 or axis != x.ndim - 1:
            return None
        if not x.flags.c_contiguous:
            x = self.xp.ascontiguousarray(x)
        y = self.xp.empty(x.shape, dtype=x.dtype)
        cols = x.shape[-1]
        rows = x.size // cols if cols else 0
        if rows == 0 or cols == 0:
            return y
        self._softmax_rows("softmax_forward", x.dtype, rows, cols, (x, y, _i64(rows), _i64(cols), _i32(log)))
        return y

    def softmax_backward(self, y: Array, g: Array, log: bool, axis: int) -> Array | None:
        """The gradient of softmax (or log_softmax) from its output ``y`` and the output gradient ``g``."""
        if y.dtype not in _FLOATS or g.dtype != y.dtype or y.ndim == 0 or axis != y.ndim - 1 or g.shape != y.shape:
            return None
        xp = self.xp
        y = xp.ascontiguousarray(y)
        g = xp.ascontiguousarray(g)
        dx = xp.empty(y.shape, dtype=y.dtype)
        cols = y.shape[-1]
        rows = y.size // cols if cols else 0
        if rows == 0 or cols == 0:
            return dx
        self._softmax_rows("softmax_backward", y.dtype, rows, cols,
                           (y, g, dx, _i64(rows), _i64(cols), _i32(log)))
        return dx

    def _softmax_rows(self, kernel: str, dt: NpDtype, rows: int, cols: int, args: tuple[Any, ...]) -> None:
        """Launch ``kernel``'s v1 (a warp per row) for rows up to ``WARP_ROW_MAX`` long, else its v2 (a block
        per row)."""
        if cols <= self.WARP_ROW_MAX:
            per_block = THREADS // 32
            grid = (max(1, min((rows + per_block - 1) // per_block, self.max_blocks)),)
            version = "v1"
        else:
            grid = (max(1, min(rows, self.max_blocks)),)
            version = "v2"
        self.fn("softmax.cu", f"{kernel}_{version}<{_TNAME[dt]}>")(grid, (THREADS,), args)

    def _flag(self) -> Array:
        return self.xp.zeros(1, dtype=np.int32)

    def cross_entropy(self, logits: Array, target: Array, weight: Array | None, ignore_index: int,
                      label_smoothing: float) -> tuple[Array, Array, Array] | None:
        """Per-row (loss, weight, log-sum-exp relative to the row max) of 2-d float logits (rows, C) and int64
        targets (rows,); IndexError for a target outside [0, C) that is not ``ignore_index``."""
        xp = self.xp
        dt = logits.dtype
        if dt not in _FLOATS or logits.ndim != 2 or target.dtype != np.int64 or target.shape != logits.shape[:1]:
            return None
        if weight is not None and (weight.dtype != dt or weight.shape != logits.shape[1:]):
            return None
        logits = xp.ascontiguousarray(logits)
        target = xp.ascontiguousarray(target)
        rows, C = logits.shape
        loss = xp.empty(rows, dtype=dt)
        wsum = xp.empty(rows, dtype=dt)
        lse = xp.empty(rows, dtype=dt)
        if rows == 0:
            return loss, wsum, lse
        w = xp.ascontiguousarray(weight) if weight is not None else logits
        bad = self._flag()
        self.fn("cross_entropy.cu", f"cross_entropy_forward<{_TNAME[dt]}>")(
            (max(1, min(rows, self.max_blocks)),), (THREADS,),
            (logits, target, w, loss, wsum, lse, bad, _i64(rows), _i64(C), _i64(ignore_index), dt.type(label_smoothing),
             _i32(weight is not None)))
        if int(bad[0]):
            raise IndexError(f"Target out of bounds: every target must be in [0, {C}) or equal ignore_index "
                             f"({ignore_index})")
        return loss, wsum, lse

    def cross_entropy_backward(self, logits: Array, target: Array, weight: Array | None, lse: Array, gout: Array,
                               scale: float, ignore_index: int, label_smoothing: float) -> Array | None:
        """dlogits of the per-row losses; ``gout`` is a 0-d gradient (broadcast to every row) or one per row."""
        xp = self.xp
        dt = logits.dtype
        if dt not in _FLOATS or logits.ndim != 2:
            return None
        logits = xp.ascontiguousarray(logits)
        rows, C = logits.shape
        d = xp.empty(logits.shape, dtype=dt)
        if rows == 0:
            return d
        gout = xp.ascontiguousarray(gout.astype(dt, copy=False))
        gstride = 0 if gout.size == 1 else 1
        w = xp.ascontiguousarray(weight) if weight is not None else logits
        self.fn("cross_entropy.cu", f"cross_entropy_backward<{_TNAME[dt]}>")(
            (max(1, min(rows, self.max_blocks)),), (THREADS,),
            (logits, xp.ascontiguousarray(target), w, lse, gout.reshape(-1), _i64(gstride), dt.type(scale), d,
             _i64(rows), _i64(C), _i64(ignore_index), dt.type(label_smoothing), _i32(weight is not None)))
        return d

    def layer_norm(self, x: Array, weight: Array | None, bias: Array | None,
                   eps: float) -> tuple[Array, Array, Array] | None:
        """(y, mean, rstd) of layer norm over the last dim of float ``x`` (weight / bias of shape (N,) or None)."""
        xp = self.xp
        dt = x.dtype
        if dt not in _FLOATS or x.ndim == 0:
            return None
        N = x.shape[-1]
        for p in (weight, bias):
            if p is not None and (p.dtype != dt or p.shape != (N,)):
                return None
        x = xp.ascontiguousarray(x)
        rows = x.size // N if N else 0
        y = xp.empty(x.shape, dtype=dt)
        mean = xp.empty(x.shape[:-1], dtype=dt)
        rstd = xp.empty(x.shape[:-1], dtype=dt)
        if rows == 0 or N == 0:
            return y, mean, rstd
        w = xp.ascontiguousarray(weight) if weight is not None else x
        b = xp.ascontiguousarray(bias) if bias is not None else x
        self.fn("layernorm.cu", f"layernorm_forward<{_TNAME[dt]}>")(
            (max(1, min(rows, self.max_blocks)),), (THREADS,),
            (x, w, b, y, mean, rstd, _i64(rows), _i64(N), dt.type(eps), _i32(weight is not None),
             _i32(bias is not None)))
        return y, mean, rstd

    def layer_norm_backward(self, dy: Array, x: Array, weight: Array | None, mean: Array, rstd: Array,
                            want_weight: bool, want_bias: bool) -> tuple[Array, Array | None, Array | None] | None:
        """(dx, dweight or None, dbias or None) of layer norm."""
        xp = self.xp
        dt = x.dtype
        if dt not in _FLOATS or dy.dtype != dt or dy.shape != x.shape:
            return None
        x = xp.ascontiguousarray(x)
        dy = xp.ascontiguousarray(dy)
        N = x.shape[-1]
        rows = x.size // N if N else 0
        dx = xp.empty(x.shape, dtype=dt)
        dw = xp.zeros(N, dtype=dt) if want_weight else None
        db = xp.zeros(N, dtype=dt) if want_bias else None
        if rows == 0 or N == 0:
            return dx, dw, db
        t = _TNAME[dt]
        w = xp.ascontiguousarray(weight) if weight is not None else x
        self.fn("layernorm.cu", f"layernorm_backward<{t}>")(
            (max(1, min(rows, self.max_blocks)),), (THREADS,),
            (dy, x, w, mean, rstd, dx, _i64(rows), _i64(N), _i32(weight is not None)))
        if want_weight or want_bias:
            self.fn("layernorm.cu", f"layernorm_backward_params<{t}>")(
                self.grid(N), (THREADS,),
                (dy, x, mean, rstd, dw if dw is not None else dx, db if db is not None else dx, _i64(rows), _i64(N),
                 _i32(want_weight), _i32(want_bias)))
        return dx, dw, db

    def matmul(self, a: Array, b: Array, bias: Array | None = None,
               variant: tuple[str, int] | None = None) -> Array | None:
        """``a @ b`` (+ ``bias`` per output column) for float32/float64 operands with NumPy's matmul rules for
        1-d operands and broadcast batch dims; transposed (strided) operands are read in place. ``variant``
        forces a float32 kernel and swizzle (see gemm_plan) instead of the SGEMM_CHOICE table's."""
        xp = self.xp
        dt = a.dtype
        if dt not in _FLOATS or b.dtype != dt or a.ndim == 0 or b.ndim == 0:
            return None
        if bias is not None and (bias.dtype != dt or bias.ndim != 1):
            return None
        a_vec, b_vec = a.ndim == 1, b.ndim == 1
        a2 = a[None, :] if a_vec else a
        b2 = b[:, None] if b_vec else b
        M, K = a2.shape[-2:]
        K2, N = b2.shape[-2:]
        if K != K2:
            return None
        batch_shape = _broadcast_shape([a2.shape[:-2], b2.shape[:-2]])
        if batch_shape is None:
            return None
        if bias is not None and bias.shape[0] != N:
            return None
        out = xp.empty(batch_shape + (M, N), dtype=dt)
        if out.size:
            if K == 0:
                out[...] = 0 if bias is None else bias
            else:
                self._gemm(a2, b2, out, bias, batch_shape, M, N, K, variant)
        if a_vec:
            out = out[..., 0, :]
        if b_vec:
            out = out[..., 0]
        return out

    def _gemm(self, a: Array, b: Array, out: Array, bias: Array | None, batch_shape: Shape, M: int, N: int,
              K: int, variant: tuple[str, int] | None = None) -> None:
        item = a.itemsize
        sAm, sAk = (s // item for s in a.strides[-2:])
        sBk, sBn = (s // item for s in b.strides[-2:])
        nb = math.prod(batch_shape)
        sa = self._estrides(a[..., 0, 0], batch_shape) if a.ndim > 2 else (0,) * len(batch_shape)
        sb = self._estrides(b[..., 0, 0], batch_shape) if b.ndim > 2 else (0,) * len(batch_shape)
        sc = _c_strides(batch_shape)
        offs = self._batch_offsets(batch_shape, sa, sb, tuple(x * M * N for x in sc))
        S = 16 // item
        # 16-byte copies need every row of every batch entry aligned: the base pointer, the row stride, and
        # each batch stride (a view such as x[:, :32].view(3, 4, 8) of a (3, 33) array starts batch 1 at an
        # address that is 4 mod 16); the tiles are k-major, so only an operand whose m (A) or n (B) is the
        # contiguous dim copies whole packs
        a_batch_ok = all(s % S == 0 for s, n in zip(sa, batch_shape) if n > 1)
        b_batch_ok = all(s % S == 0 for s, n in zip(sb, batch_shape) if n > 1)
        vec = 0
        if sAm == 1 and M % S == 0 and sAk % S == 0 and a_batch_ok and self.ptr(a) % 16 == 0:
            vec |= 1
        if sBn == 1 and N % S == 0 and sBk % S == 0 and b_batch_ok and self.ptr(b) % 16 == 0:
            vec |= 2
        if N % S == 0:  # the output (and the split-K workspace) is fresh and dense: rows aligned when N is
            vec |= 4
        kern, swizzle, splits = gemm_plan(a.dtype, nb, M, N, K, self.sms, variant)
        bk = kern.bk
        kchunk = -(-(-(-K // splits)) // bk) * bk  # a whole number of k steps per split
        splits = -(-K // kchunk)
        target = out if splits == 1 else self.xp.empty((splits,) + out.shape, dtype=out.dtype)
        has_bias = bias is not None
        mt, ntiles = -(-M // kern.bm), -(-N // kern.bn)
        gx = min(ntiles, self.max_blocks)
        gy = min(mt, max(1, self.max_blocks // gx), 65535)
        gz = min(nb * splits, max(1, self.max_blocks // (gx * gy)), 65535)
        # the kernel swizzles only a grid of exactly one block per tile (else its grid-stride loops walk the rest)
        self.fn("matmul.cu", kern.entry)(
            (gx, gy, gz), (kern.threads,),
            (a, b, target, bias if has_bias else out, offs, _i64(nb), _i32(splits), _i64(kchunk), _i64(nb * M * N),
             _i64(M), _i64(N), _i64(K), _i64(sAm), _i64(sAk), _i64(sBk), _i64(sBn), _i32(has_bias and splits == 1),
             _i32(vec), _i32(swizzle)))
        if splits > 1:
            total = nb * M * N
            self.fn("matmul.cu", f"matmul_splitk_reduce<{_TNAME[a.dtype]}>")(
                self.grid(total), (THREADS,),
                (target, out, bias if has_bias else out, _i64(total), _i64(N), _i32(splits), _i32(has_bias)))

    def _batch_offsets(self, batch_shape: Shape, sa: Strides, sb: Strides, sc: Strides) -> Array:
        """Device int64 table [off_a, off_b, off_c] per batch entry (row-major over ``batch_shape``)."""
        key = ("gemm", batch_shape, sa, sb, sc)
        m = self._meta.get(key)
        if m is None:
            nb = math.prod(batch_shape)
            idx = np.indices(batch_shape).reshape(len(batch_shape), nb) if batch_shape else np.zeros((0, 1), np.int64)
            tab = np.empty((nb, 3), dtype=np.int64)
            for j, st in enumerate((sa, sb, sc)):
                tab[:, j] = (np.asarray(st, dtype=np.int64)[:, None] * idx).sum(axis=0) if batch_shape else 0
            m = self.upload(tab.reshape(-1))
            if len(self._meta) >= _META_CACHE_MAX:
                self._meta.clear()
            self._meta[key] = m
        return m


# ---------------------------------------------------------------------- optimizers, random, embedding
class _StepKernels(_MapKernels):
    """Fused multi-tensor optimizer steps (optim.cu), Philox streams (random.cu), embedding backward."""

    # elements per chunk of a tensor: one block's share of the fused optimizer work
    OPTIM_CHUNK = 65536

    def optim_step(self, step: FusedStep) -> Literal[True] | None:
        """One fused optimizer step in one launch; None when a tensor does not fit (not a contiguous
        float32/float64 array of the group's dtype)."""
        roles = step.roles
        params = step.params
        if not params:
            return True
        dt = params[0].dtype
        if dt not in _FLOATS:
            return None
        group = fused_group_sizes(step, self.xp.ndarray, dt)
        if group is None:
            return None
        sizes = np.asarray(group, dtype=np.int64)
        chunk = self.OPTIM_CHUNK
        counts = (sizes + chunk - 1) // chunk
        n_chunks = int(counts.sum())
        if n_chunks == 0:
            return True
        chunks = np.empty((n_chunks, 2), dtype=np.int64)
        chunks[:, 0] = np.repeat(np.arange(len(sizes), dtype=np.int64), counts)
        starts = np.arange(n_chunks, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        chunks[:, 1] = starts * chunk
        tabs = [None if role is None else self.upload(np.array([self.ptr(a) for a in role], dtype=np.uint64))
                for role in roles]
        # a role the options leave unused still needs a valid table argument; the kernel never reads through it
        tabs = [t if t is not None else tabs[0] for t in tabs] + [tabs[0]] * (5 - len(tabs))
        self.fn("optim.cu", f"{step.kind}_step<{_TNAME[dt]}>")(
            (min(n_chunks, self.max_blocks),), (THREADS,),
            (*tabs, self.upload(sizes), self.upload(chunks.reshape(-1)),
             self.upload(np.asarray(step.consts(), dtype=np.float64)), _i64(n_chunks), _i64(chunk),
             _i32(step.flag_bits())))
        return True

    @staticmethod
    def _counter(offset: int) -> tuple[np.uint64, np.uint64]:
        offset &= (1 << 128) - 1
        return np.uint64(offset & 0xFFFFFFFFFFFFFFFF), np.uint64(offset >> 64)

    def philox_words(self, seed: int, offset: int, nblocks: int) -> Array:
        """(nblocks, 4) uint32 words of the Philox stream of ``seed`` from block ``offset``."""
        out = self.xp.empty((nblocks, 4), dtype=np.uint32)
        if nblocks:
            lo, hi = self._counter(offset)
            self.fn("random.cu", "philox_words")(self.grid(nblocks), (THREADS,),
                                                  (np.uint64(seed & 0xFFFFFFFFFFFFFFFF), lo, hi, _i64(nblocks), out))
        return out

    def uniform(self, seed: int, offset: int, n: int, dt: NpDtype, low: float,
                high: float) -> tuple[Array, int] | None:
        """``n`` uniforms of float32/float64 ``dt`` in [low, high) and the blocks used, or None."""
        if dt not in _FLOATS:
            return None
        words = n * (2 if dt == F64 else 1)
        nb = (words + 3) // 4
        out = self.xp.empty(n, dtype=dt)
        if n:
            lo, hi = self._counter(offset)
            shift = low != 0.0 or high != 1.0
            with np.errstate(over="ignore"):
                scale, lo_v = dt.type(high - low), dt.type(low)
            self.fn("random.cu", f"uniform_forward<{_TNAME[dt]}>")(
                self.grid(n), (THREADS,),
                (np.uint64(seed & 0xFFFFFFFFFFFFFFFF), lo, hi, _i64(n), out, scale, lo_v, _i32(shift)))
        return out, nb

    def normal(self, seed: int, offset: int, n: int, dt: NpDtype, mean: float, std: float) -> tuple[Array, int] | None:
        """``n`` normals of float32/float64 ``dt`` (scalar mean and std) and the blocks used, or None."""
        if dt not in _FLOATS:
            return None
        pairs = (n + 1) // 2
        wide = dt.itemsize == 8
        words = 2 * pairs * (2 if wide else 1)
        nb = (words + 3) // 4
        out = self.xp.empty(n, dtype=dt)
        if n:
            lo, hi = self._counter(offset)
            self.fn("random.cu", f"normal_forward<{_TNAME[dt]}>")(
                self.grid(pairs), (THREADS,),
                (np.uint64(seed & 0xFFFFFFFFFFFFFFFF), lo, hi, _i64(n), out, np.float64(mean), np.float64(std),
                 _i32(wide)))
        return out, nb

    def randint(self, seed: int, offset: int, n: int, low: int, high: int) -> tuple[Array, int]:
        """``n`` int64 integers in [low, high) and the blocks used."""
        span = high - low
        wide = span > 1 << 32
        nb = (n * (2 if wide else 1) + 3) // 4
        out = self.xp.empty(n, dtype=np.int64)
        if n:
            lo, hi = self._counter(offset)
            self.fn("random.cu", "randint_forward")(
                self.grid(n), (THREADS,),
                (np.uint64(seed & 0xFFFFFFFFFFFFFFFF), lo, hi, _i64(n), out, _i64(low),
                 np.uint64(span & 0xFFFFFFFFFFFFFFFF), _i32(wide)))
        return out, nb

    def embedding_backward(self, out: Array, idx: Array, grad: Array) -> Literal[True] | None:
        """out[idx[i], :] += grad[i, :] (in place) for a contiguous 2-d float ``out``; None when unsupported."""
        xp = self.xp
        dt = out.dtype
        if dt not in _FLOATS or out.ndim != 2 or not out.flags.c_contiguous or idx.dtype != np.int64:
            return None
        n_idx = idx.size
        dim = out.shape[1]
        if grad.dtype != dt or grad.shape != idx.shape + (dim,):
            return None
        if n_idx == 0 or dim == 0:
            return True
        grad = xp.ascontiguousarray(grad)
        idx = xp.ascontiguousarray(idx).reshape(-1)
        bad = xp.zeros(1, dtype=np.int32)
        self.fn("embedding.cu", f"embedding_backward<{_TNAME[dt]}>")(
            self.grid(n_idx * dim), (THREADS,), (idx, grad, out, bad, _i64(n_idx), _i64(dim), _i64(out.shape[0])))
        self.checks.add(bad, _embedding_range_error)
        return True


class Launcher(_RowKernels, _StepKernels):
    """Kernel launches for one device: ``xp`` (NumPy or CuPy), ``module_cls`` (``sim.SimModule`` or
    ``cupy.RawModule``), ``ptr(array)`` (its device address), ``max_blocks`` (grid cap; grid-stride loops cover
    the rest), ``upload`` (host int64/uint64/float64 array -> device array) and ``sms`` (the device's SM count)."""
