"""The CPU backend's own matrix product: kernels/gemm_cpu.cpp (packed panels, a register-blocked micro-kernel),
built with the host C++ compiler on first use, cached on disk, and called through ctypes.

NumPy's BLAS (OpenBLAS) is the CPU backend's GEMM, and it stays so for most products: it is at least as fast as
this kernel on large ones. It loses where its fixed costs and its blocking do not fit the shape: products with a
few rows (an LSTM's per-step ``h @ W``, 16 x 1024 @ 1024 x 256: about 1.8x PyTorch's time), batches of small
``a @ b^T``, which NumPy runs as one BLAS call per matrix in OpenBLAS's slow layout (attention's ``q @ k^T``),
and, by less, single ``x @ W^T`` of a few hundred rows and columns. :func:`native_wins` is the one
decision rule (shape class -> this kernel or BLAS), chosen from ``benchmarks/gemm_cpu.py``'s measurements;
:func:`matmul` declines (returns None, nothing computed) for every other product, and for layouts the kernel does
not take (strides that are not whole elements, more than four batch dims after merging), so the caller's NumPy
body stays the reference and the fallback. Tests compare the two on awkward shapes.

All of this holds where BLAS's kernels are as wide as this one's. NumPy's OpenBLAS picks its kernels by the CPU
it recognises, and on a CPU newer than its tables it runs an older family's: AVX2 on an AVX-512 machine (AMD Zen
5). There this kernel is the faster one on nearly every product, and the rule says so (:func:`wider_than_blas`).

``MINITORCH_GPU_NATIVE_GEMM=0`` switches it off. A build failure is reported once as a warning and every product
goes to NumPy from then on.
"""
from __future__ import annotations

import ctypes
import functools
import math
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import _blas
from ._cpu_library import CpuLibrary, build, parallel_entry
from ._elementwise_native import _ptr
from .cuda.loader import kernel_dir

__all__ = ["available", "unavailable_reason", "matmul", "native_wins", "plan", "LIB"]

_ABI = "1"
_PURPOSE = "the native CPU matrix product"
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}
_LANES = {0: 16, 1: 8}  # elements of a 64-byte vector
_GEO = 32  # gemm_cpu.cpp's kGeo
_MAX_BATCH_DIMS = 4  # kMaxBatchDims
_ROWS = {1: 16, 2: 12, 3: 8, 4: 6}  # kRows: the most rows of a tile for NV vectors of columns
_MAX_BLOCKS = 64  # kMaxBlocks: tiles of rows per piece
# the K block: a panel of B (KC x 32 floats, 32 KiB) stays in L1 while the tiles of rows pass over it
_KC = 256
# rows of A per piece at most, in tiles (the packed block, up to 32 x 12 rows x KC floats = 384 KiB, stays in L2)
_PIECE_TILES = 32
# multiply-adds a thread should have before a product is split (a core does about 80 multiply-adds a nanosecond,
# the native pool's hand-off costs one or two microseconds): an LSTM step's (16, 256) @ (256, 1024), 4M, ran on
# 2 threads at 1.0x its 1-thread time with 1 << 22 here (not split) and at 0.55x with 1 << 20 (212 GFLOP/s,
# PyTorch's 218)
_PARALLEL_MIN_MACS = 1 << 20

# below this many multiply-adds (all the products of a call together) NumPy's fixed cost beats this kernel's
# (about 1 against 4.5 microseconds: the plan, the output, the ctypes call); measured side by side, 16 x 16 x 64
# takes 3.4x NumPy's time, 16 x 128 x 128 (2^18) ties and 8 x 128 x 256 takes 0.76x; batches need twice as many
# (2 x 64 x 32 x 64: 1.13x, 4 x 64 x 32 x 64: 0.91x)
_MIN_MACS = 1 << 18
# OpenBLAS runs a product on one thread up to this many multiply-adds (its SMP_THRESHOLD_MIN x
# GEMM_MULTITHREAD_THRESHOLD)
_BLAS_SMP_MACS = 1 << 18

_i64, _vp, _int = ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int


class _Gemm:
    """The library's entry points, typed: ``mt_gemm`` itself, its twin on the worker pool (``parallel``: a
    thread count, then mt_gemm's arguments) and the scratch sizer."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        args: list[Any] = [_int, _vp, _vp, _vp, _vp, _vp, _vp, _i64, _vp, _vp]
        self.mt_gemm = lib.mt_gemm
        self.mt_gemm.argtypes = args
        self.mt_gemm.restype = _int
        self.parallel = parallel_entry(lib, "mt_gemm", args)
        self.mt_gemm_scratch = lib.mt_gemm_scratch
        self.mt_gemm_scratch.argtypes = [_int, _vp]
        self.mt_gemm_scratch.restype = _i64
        lib.mt_gemm_vector_bits.restype = _int
        lib.mt_gemm_vector_bits.argtypes = []
        self.vector_bits = int(lib.mt_gemm_vector_bits())


def _build() -> _Gemm:
    d = Path(kernel_dir())
    # contraction on: the products are fused multiply-adds (BLAS's are too); GCC turns the panel copies into
    # memmove calls of a few lines each unless told not to (Clang does not know the flag: the second try)
    _, lib = build("gemm_cpu", [d / "gemm_cpu.cpp", d / "vec64_cpu.h", d / "pool_cpu.h"], _ABI, _PURPOSE,
                   extras=(("-ffp-contract=fast", "-fno-tree-loop-distribute-patterns"), ("-ffp-contract=fast",)))
    return _Gemm(lib)


LIB: CpuLibrary[_Gemm] = CpuLibrary(_build, "MINITORCH_GPU_NATIVE_GEMM", _PURPOSE,
                                  "every CPU matrix product goes to NumPy's BLAS")


def wider_than_blas() -> bool:
    """Whether this kernel's vectors are wider than those of the kernels NumPy's BLAS runs here (AVX-512 against
    OpenBLAS's 256-bit families, see ``_blas``): then it is the faster one on nearly every shape, and
    :func:`native_wins` takes its wide rule. Read once; tests set ``_WIDE["value"]``."""
    w = _WIDE["value"]
    if w is None:
        lib = LIB.get()
        blas = _blas.vector_bits()
        w = _WIDE["value"] = lib is not None and blas is not None and lib.vector_bits > blas
    return w


_WIDE: dict[str, bool | None] = {"value": None}


def available() -> bool:
    """Whether the compiled product can run here (builds it on the first call)."""
    return LIB.get() is not None


def unavailable_reason() -> str | None:
    """Why :func:`available` is False (None when it is True)."""
    return LIB.reason


def native_wins(m: int, n: int, k: int, batch: int, nt: bool, double: bool = False, nn: bool = False,
                threads: int = 1, wide: bool = False) -> bool:
    """The decision rule: whether this kernel computes ``batch`` products of (m, k) @ (k, n) faster than BLAS,
    in float32 (or float64 with ``double``); ``nt``: A's rows and B's columns are runs of memory (``x @ W.T``,
    ``q @ k.T``).

    From the measurements of ``benchmarks/gemm_cpu.py`` on one core (AVX-512), as this kernel's time over
    OpenBLAS's: products of 2 to 32 rows, 0.4-0.9 (OpenBLAS runs 20-90 GFLOP/s there; one row is its matrix-vector
    product, which this kernel does not beat); batches of ``a @ b.T`` of up to 256 x 128 x 256, 0.64-0.81 (one
    BLAS call per matrix, and its NT layout is its slow one; the other layouts of batches tie or lose, up to
    2.2x); single ``x @ W.T`` of up to 512 rows and columns and 1024 deep, 0.86-0.97 (0.97-1.05 at 1000
    columns, left to BLAS). Float64 the same but for the rows: 4 to 16 rows 0.59-0.88, 32 rows of a 2048 x 2048
    product 1.23, so up to 16.

    With ``threads`` > 1 the native pool's split scales better than OpenBLAS's, so single products of up to 1024
    in each dim also win in the ``nt`` layout and in ``nn`` (A's rows and B's rows are runs of memory: ``g @ W``),
    measured at 2 threads as GFLOP/s, ours against OpenBLAS: 512 x 384 x 128 x W^T 261 / 231, 512 x 128 x 384
    g @ W 307 / 250, 512 x 1024 x 256 x W^T 284 / 262, 512 x 1000 x 256 267 / 265; ``a.T @ b`` (a weight's
    gradient) ties (248 / 255) and stays with BLAS. Batches win in every layout: NumPy calls BLAS once per matrix,
    on one thread (attention's (16, 4) x 64 x 32 x 64 at 2 threads: 204 against 107 GFLOP/s as ``p @ v``, 193 / 110
    as ``p.T @ g``, 166 / 60 as ``g @ v.T``). :func:`plan` leaves to BLAS the products it would split between fewer
    threads than BLAS does.

    ``wide`` (:func:`wider_than_blas`): this kernel's vectors are wider than BLAS's. Measured on AMD Zen 5
    (AVX-512; OpenBLAS 0.3.31 runs its 256-bit Haswell kernels there), float32 and float64 alike, it then takes
    0.5-0.75x BLAS's time on every product of 2 rows or more and 16 columns or more, batches in every layout
    included, on 1 and 2 threads: GPT, LSTM and MLP shapes 170-215 GFLOP/s against 80-110 on one thread. BLAS
    keeps one row (its matrix-vector product: 5x faster), fewer than 16 columns (a fraction of one vector: 1.5x
    BLAS's time at 2 threads) and a few rows against a B larger than L2 on several threads (32 x 2048 x 2048 at
    2 threads: 1.27x)."""
    macs = m * n * k
    if macs * batch < (_MIN_MACS if batch == 1 else 2 * _MIN_MACS):
        return False
    if wide:
        return m >= 2 and n >= 16 and not (threads > 1 and m <= 32 and n * k >= 1 << 22)
    if batch == 1:
        if threads > 1 and (nt or nn) and 2 <= m <= 1024 and n <= 1024 and k <= 1024:
            return True
        return 2 <= m <= (16 if double else 32) or (nt and m <= 512 and n <= 512 and k <= 1024)
    return (nt or threads > 1) and m <= 256 and n <= 256 and k <= 128


def _tile(m: int, n: int, lanes: int) -> int:
    """Vectors of columns per tile: as many accumulators as the rows allow (16 rows take one vector, 12 two, 8
    three, 6 four), never more vectors than the columns fill."""
    widest = max(1, min(4, -(-n // lanes)))
    if m <= _ROWS[1]:
        for nv in range(widest, 0, -1):
            if m <= _ROWS[nv]:
                return nv
    return min(2, widest)


def _merge_batch(shape: tuple[int, ...], *strides: tuple[int, ...]) -> tuple[list[int], list[list[int]]] | None:
    """Batch dims without those of size 1, adjacent ones merged where every operand's strides allow; None when
    more than the kernel's four remain."""
    dims: list[int] = []
    out: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if dims and all(st[d] * size == o[-1] for st, o in zip(strides, out)):
            dims[-1] *= size
            for st, o in zip(strides, out):
                o[-1] = st[d]
            continue
        dims.append(size)
        for st, o in zip(strides, out):
            o.append(st[d])
    if len(dims) > _MAX_BATCH_DIMS:
        return None
    return dims, out


class Plan:
    """How one product runs: the output's shape, the kernel's geometry (a ctypes array, read only), the scratch
    per thread and the thread count."""

    __slots__ = ("shape", "geo", "elems", "workers", "code", "empty")

    def __init__(self, shape: tuple[int, ...], geo: Any, elems: int, workers: int, code: int, empty: bool) -> None:
        self.shape, self.geo, self.elems, self.workers, self.code, self.empty = shape, geo, elems, workers, code, empty


@functools.lru_cache(maxsize=1024)
def plan(a_shape: tuple[int, ...], a_strides: tuple[int, ...], b_shape: tuple[int, ...],
         b_strides: tuple[int, ...], code: int, threads: int, force: bool = False, wide: bool = False) -> Plan | None:
    """The plan for ``a @ b`` (arrays of at least two dims, of the library's dtype ``code``, strides in bytes), or
    None where BLAS is faster (unless ``force``; ``wide`` as :func:`native_wins` takes it) or the kernel does not
    take the layout."""
    itemsize = 4 if code == 0 else 8
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2 or any(s % itemsize for s in a_strides + b_strides):
        return None
    try:
        batch_shape = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    except ValueError:
        return None
    shape = batch_shape + (m, n)
    batch = math.prod(batch_shape)
    sa, sb = [s // itemsize for s in a_strides], [s // itemsize for s in b_strides]
    if not force and not native_wins(m, n, k, batch, sa[-1] == 1 and sb[-2] == 1, code == 1,
                                     sa[-1] == 1 and sb[-1] == 1, threads, wide):
        return None
    if m == 0 or n == 0 or batch == 0:
        return Plan(shape, None, 0, 1, code, True)
    nb = len(batch_shape)

    def batch_strides(op_shape: tuple[int, ...], st: list[int]) -> tuple[int, ...]:
        lead = nb - (len(op_shape) - 2)  # broadcast dims the operand lacks, then those of size 1, stride 0
        return tuple(0 if d < lead or op_shape[d - lead] == 1 else st[d - lead] for d in range(nb))

    sc = [n * m * math.prod(batch_shape[d + 1:]) for d in range(nb)]
    merged = _merge_batch(batch_shape, batch_strides(a_shape, sa), batch_strides(b_shape, sb), tuple(sc))
    if merged is None:
        return None
    dims, (ba, bb, bc) = merged
    lanes = _LANES[code]
    nv = _tile(m, n, lanes)
    rows, w = _ROWS[nv], nv * lanes
    work = batch * m * n * k
    workers = max(1, min(threads, work // _PARALLEL_MIN_MACS))
    mc = min(m, _PIECE_TILES * rows)
    nc = n
    if workers > 1 and batch < workers:
        # split the rows, or for few rows the columns, so that every thread gets a piece
        share = -(-workers // batch)
        if m >= share * rows:
            mc = min(mc, -(-m // share))
        else:
            nc = -(-(-(-n // share)) // w) * w
    pieces = batch * -(-m // mc) * -(-n // nc)
    workers = min(workers, pieces)
    if not force and not wide and threads > 1 and m * n * k > _BLAS_SMP_MACS and workers < threads:
        # the rule is measured on one thread; with more, OpenBLAS splits each call above its threshold between
        # its own threads, so a product this kernel would run on fewer threads goes there. On every thread it
        # keeps the rule: the native pool's split scales better than OpenBLAS's (see native_wins). Wider vectors
        # than BLAS's make one thread of this kernel worth about two of BLAS's
        return None
    # A is read where it is when its rows or columns are runs of memory, except under the 16-row tile (16
    # streams of broadcasts: measured slower than packed), rows a multiple of 4 KiB apart (they share L1's
    # sets), and columns (a weight's gradient, g.T @ x) a multiple of 4 KiB apart or read by 8 panels or more,
    # where one packing serves every panel (1 thread, GFLOP/s in place / packed: 1024 x 256 x 512 107 / 133,
    # 512 x 784 x 256 117 / 131, 1000 x 256 x 512 111 / 126; with 4 panels, 512 x 128 x 512, 122 / 115)
    cols_apart = sa[-1] * itemsize % 4096 == 0 or -(-n // (nv * _LANES[code])) >= 8
    pack_a = nv == 1 or (sa[-1] != 1 and sa[-2] != 1) or (sa[-1] == 1 and sa[-2] * itemsize % 4096 == 0) or (
        sa[-2] == 1 and cols_apart)
    pad = [0] * (_MAX_BATCH_DIMS - len(dims))
    geo = (_i64 * _GEO)(m, n, k, sa[-2], sa[-1], sb[-2], sb[-1], n, len(dims), *dims, *[1] * len(pad), *ba, *pad,
                        *bb, *pad, *bc, *pad, mc, nc, _KC, nv, int(sb[-1] != 1), 1, int(pack_a))
    lib = LIB.get()
    if lib is None:
        return None
    elems = int(lib.mt_gemm_scratch(code, geo))
    if elems < 0:
        return None
    assert -(-mc // rows) <= _MAX_BLOCKS
    return Plan(shape, geo, elems, workers, code, False)


_scratch = threading.local()


def _scratch_for(elems: int, dtype: Any) -> Any:
    """This thread's scratch of at least ``elems`` elements of ``dtype``, kept between calls (a fresh buffer of a
    few hundred KiB is fresh pages, zero-filled by the kernel on first touch)."""
    key = "f8" if dtype == np.float64 else "f4"
    buf = getattr(_scratch, key, None)
    if buf is None or buf.size < elems:
        buf = np.empty(max(elems, 1 << 14), dtype)
        setattr(_scratch, key, buf)
    return buf


def matmul(a: Any, b: Any, bias: Any, threads: int | Callable[[], int], force: bool = False,
           transpose_a: bool = False, transpose_b: bool = False) -> Any:
    """``op(a) @ op(b)`` (+ ``bias``, one value per output column) for NumPy arrays of at least two dims (batch
    dims broadcast; ``op`` swaps the last two dims where its flag is set), or None where the decision rule leaves
    the product to BLAS (``force``: whatever the rule says, for tests and benchmarks) or the kernel does not take
    it. ``threads``: the thread count, or the backend's function that reads it (a microsecond of environment
    lookup, paid only by the products that are planned)."""
    if not force:
        # this runs in front of every CPU product, so most are declined here, on shapes alone: those below the
        # rule's least size (a.size * N bounds each product's multiply-adds from above), and single products by
        # the rule itself (before the plan, whose key holds the thread count, slower to read than the rule)
        n = b.shape[-2] if transpose_b else b.shape[-1]
        if a.size * n < _MIN_MACS:
            return None
        if a.ndim == 2 and b.ndim == 2:
            it = a.itemsize
            m, k = (a.shape[1], a.shape[0]) if transpose_a else a.shape
            rows_a = a.strides[0 if transpose_a else 1] == it  # A's rows (of op(a)) are runs of memory
            cols_b = b.strides[1 if transpose_b else 0] == it  # B's columns are
            wide = wider_than_blas()
            if not native_wins(m, n, k, 1, rows_a and cols_b, it == 8, wide=wide):
                # more threads widen the same-width rule (the count is read only for the layouts it widens)
                rows_b = b.strides[0 if transpose_b else 1] == it
                if wide or not (rows_a and (cols_b or rows_b)):
                    return None
                if callable(threads):
                    threads = threads()
                if threads <= 1 or not native_wins(m, n, k, 1, cols_b, it == 8, rows_b, threads):
                    return None
    if transpose_a:
        a = a.swapaxes(-1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2)
    dt = a.dtype
    code = _DTYPES.get(dt)
    if code is None or b.dtype != dt or a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return None
    if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
        # one product of all the rows instead of a batch of them
        r = matmul(a.reshape(-1, a.shape[-1]), b, bias, threads, force)
        return None if r is None else r.reshape(a.shape[:-1] + (b.shape[-1],))
    if callable(threads):
        threads = threads()
    p = plan(a.shape, a.strides, b.shape, b.strides, code, threads, force, wider_than_blas())
    if p is None:
        return None
    n = p.shape[-1]
    bias_ptr = None
    if bias is not None:
        if bias.__class__ is np.ndarray and bias.dtype == dt and bias.shape == (n,) and bias.strides[0] == dt.itemsize:
            bias_ptr = _ptr(bias)
        else:
            return None
    c = np.empty(p.shape, dt)
    if p.empty:
        if bias is not None and c.size:
            c[...] = bias
        return c
    lib = LIB.get()
    if lib is None:
        return None
    scratch = _scratch_for(p.elems * p.workers + 16, dt)
    counters = np.zeros(2, np.int64)
    cp = _ptr(counters)
    rc = lib.parallel(p.workers, p.code, p.geo, _ptr(a), _ptr(b), bias_ptr, _ptr(c), _ptr(scratch), p.elems, cp, cp + 8)
    if rc:
        raise RuntimeError(f"{_PURPOSE} rejected its arguments (code {rc})")
    return c
