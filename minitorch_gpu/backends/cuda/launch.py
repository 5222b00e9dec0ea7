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

import collections
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple, cast

import ml_dtypes
import numpy as np

from .checks import DeferredChecks
from .._elementwise_table import KERNEL_FILE, kernel_members
from .._types import Array, NpDtype, Shape, writable

from . import loader as _loader
from .fused_step import FusedStep, fused_group_sizes, group_scalar_count
from .loader import enum_codes as codes

__all__ = ["Launcher", "THREADS", "TNAME", "gemm_plan", "gemm_class", "GemmKernel", "GemmPlan", "SGEMM_KERNELS",
           "SGEMM_CHOICE", "TcKernel", "TC_KERNELS", "TC_BK", "tc_type", "tc_plan", "tc_smem"]

THREADS = 256
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
F16 = np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
_FLOATS = (F32, F64)  # what every float kernel takes
_HALVES = (F16, BF16)  # stored in 2 bytes, computed in float32 (the kernels' acc_t)
_ALL_FLOATS = _FLOATS + _HALVES  # the kernels instantiated for the 16-bit types too (see kernels/README.md)
TNAME = {F32: "float", F64: "double", F16: "__half", BF16: "__nv_bfloat16"}
"""The template type of the kernels' instantiation for each float dtype (``kernel<float>``, ...)."""
_TNAME = TNAME
_PY_SCALARS = (int, float, bool)
_META_CACHE_MAX = 512
_PLAN_CACHE_MAX = 4096
_BLOCK = (256,)
_F32_MAX = float(np.finfo(np.float32).max)
_TABLE_CACHE_MAX = 64
_BOOL = np.dtype(np.bool_)
CE_LONG_THREADS = 512  # cross_entropy_forward_v2's block (its __launch_bounds__)
MODE_VEC = 1 << 4  # elementwise.cu's MODE_VEC: operands are contiguous and 16-byte aligned
FASTDIV_MAX = (1 << 31) - 1  # common.cuh's MT_FASTDIV_MAX: the largest index its 32-bit division takes
DROP_ADD, DROP_VEC = 1, 2  # random.cu's dropout_forward mode bits

Strides = tuple[int, ...]
Operand = Any
"""An array of the launcher's array module, or a Python scalar."""
TailArgs = Callable[[list[Any], int], tuple[Any, ...]]
"""(typed scalars, mode bits) -> the trailing kernel arguments of a map kernel."""
Collapsed = tuple[Shape, list[Strides]]
"""A walk of the output with as few dims as possible: (shape, element strides per operand, the output first)."""
Layout = tuple[Shape, Any, bool, int, Any, Collapsed | None]
"""(shape, array whose layout a new output copies or None, contiguous, dims walked, device meta or None, the
collapsed walk when it is by rows: at least 2 dims, the last of stride 1 in the output and 0 or 1 in each
operand)."""

@functools.cache
def _kernel_ops() -> dict[str, tuple[str, int]]:
    return {prim: (enum, codes(KERNEL_FILE, enum)[member.split("_", 1)[1]])
            for prim, (enum, member) in kernel_members().items()}


@functools.cache
def _row_cache_groups() -> int:
    return _loader.define_int("rows.cuh", "MT_ROW_CACHE_GROUPS")


def acc_dtype(dt: NpDtype) -> NpDtype:
    """The dtype a kernel computes a ``dt`` array in, and takes its scalar arguments in: float32 for the
    16-bit types (common.cuh's acc_t), else ``dt`` itself."""
    return F32 if dt in _HALVES else dt


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


_PLAN_EMPTY, _PLAN_CONTIG, _PLAN_ROWS, _PLAN_STRIDED = range(4)


class _MapPlan:
    """How the map kernels walk one operand signature (kernel names, shapes, strides, which items are scalars):
    ``kind`` says which kernel runs, the rest are its launch arguments, typed once. Filled by
    ``_MapKernels._map_plan``."""

    __slots__ = ("kind", "shape", "like", "fill", "n", "grid", "grid_vec", "vec", "nd", "meta", "vec_strides",
                 "align", "rows_vec", "rows_scalar")

    kind: int
    shape: Shape
    like: bool  # a new output copies the layout of operand ``fill`` (a dense permuted input) instead of C order
    fill: int  # the first array operand: it also fills the pointer slots of scalar operands (never read)
    n: np.int64
    grid: tuple[int]
    grid_vec: tuple[int]
    vec: bool
    nd: np.int32
    meta: Array
    vec_strides: bool
    align: tuple[int, ...]
    rows_vec: tuple[Any, ...] | None
    rows_scalar: tuple[Any, ...] | None


_DECLINED = _MapPlan()
"""The plan of a signature the map kernels do not take."""


def _embedding_range_error(flag: np.ndarray[Any, Any]) -> IndexError | None:
    """embedding_backward's flag: set when an index lay outside the table (the CPU's message)."""
    return IndexError("index out of range in self") if flag[0] else None


class _MapKernels:
    """Launch plumbing (kernel lookup, grids, strided metadata) and the elementwise maps of elementwise.cu."""

    def __init__(self, xp: Any, module_cls: Any, ptr: Callable[[Array], int], max_blocks: int,
                 upload: Callable[[np.ndarray[Any, Any]], Array] | None = None, sms: int = 1,
                 aligned: Callable[[Array], bool] | None = None, options: tuple[str, ...] = _loader.OPTIONS,
                 tensor_cores: bool = False) -> None:
        self.xp = xp
        self._sms = sms
        # mma.sync and ldmatrix (sm_80+; the simulator emulates them): matmul_tc.cu serves float16, bfloat16 and
        # TF32 products
        self.tensor_cores = tensor_cores
        self.loader = _loader.KernelLoader(module_cls, options)
        self.ptr = ptr
        self._max_blocks = max_blocks
        # host int64 array -> device array (CuPy: an H2D copy; NumPy: the array itself)
        self.upload = upload or xp.asarray
        self._meta: dict[tuple[Any, ...], Array] = {}
        self._plans: dict[tuple[Any, ...], _MapPlan] = {}
        self._map_ops: dict[tuple[Any, ...], _MapOp | None] = {}
        self._gemm_plans: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self._fns: dict[tuple[str, str], Any] = {}
        # whether an array's address is a multiple of 16 (128-bit loads): the runtime may know cheaper than ptr
        self.aligned: Callable[[Array], bool] = aligned or (lambda a: ptr(a) % 16 == 0)
        # the owning backend replaces this with its own queue, read at its synchronisations
        self.checks = DeferredChecks(getattr(xp, "asnumpy", np.asarray), xp.concatenate)
        # counting mode (``counting.LaunchCounter``): sees every launch and every flag read; None otherwise
        self.observer: Any = None

    # ------------------------------------------------------------------ plumbing
    @property
    def sms(self) -> int:
        """Streaming multiprocessors: how many blocks fill the device once (the GEMM tile choice)."""
        return self._sms

    @sms.setter
    def sms(self, value: int) -> None:
        self._sms = value
        self.clear_plans()  # GEMM plans were chosen for the old count

    @property
    def max_blocks(self) -> int:
        """The grid cap: grid-stride loops cover what more blocks would."""
        return self._max_blocks

    @max_blocks.setter
    def max_blocks(self, value: int) -> None:
        self._max_blocks = value
        self.clear_plans()  # their grids were capped at the old value

    def clear_plans(self) -> None:
        """Forget every cached launch plan (they are rebuilt on the next call): for code that changes what a plan
        was derived from, such as a kernel-choice table or a size limit."""
        self._plans.clear()
        self._map_ops.clear()
        self._gemm_plans.clear()

    def fn(self, fname: str, kernel: str) -> Any:
        """The callable kernel ``kernel`` of ``kernels/<fname>``."""
        if self.observer is not None:
            return self.observer.kernel(fname, kernel, self.loader.function(fname, kernel))
        key = (fname, kernel)
        f = self._fns.get(key)
        if f is None:
            f = self._fns[key] = self.loader.function(fname, kernel)
        return f

    @functools.cached_property
    def _smem_optin(self) -> int:
        """The most dynamic shared memory one block may opt in to: 227 KiB on an H100 and on the simulator, 163 KiB
        on an A100."""
        cuda = getattr(self.xp, "cuda", None)   # NumPy (the simulator) has none, also behind a counting proxy
        if cuda is None:
            return 227 * 1024
        return int(cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"])

    def launch_dynamic(self, fname: str, kernel: str, grid: tuple[int, ...], block: tuple[int, ...],
                       args: tuple[Any, ...], smem: int) -> None:
        """Launch with ``smem`` bytes of dynamic shared memory, opting the kernel in beyond the default 48 KiB."""
        fn = self.fn(fname, kernel)
        if smem > fn.max_dynamic_shared_size_bytes:
            fn.max_dynamic_shared_size_bytes = smem
        fn(grid, block, args, shared_mem=smem)

    def read_flag(self, flag: Array) -> bool:
        """A kernel's int32 error flag, read back to the host (on a GPU: a device-to-host copy and a sync)."""
        if self.observer is not None:
            self.observer.sync("launcher error flag", flag.nbytes)
        return bool(int(flag[0]))

    def grid(self, n: int, per_thread: int = 1, threads: int = THREADS) -> tuple[int]:
        """A 1-d grid for ``n`` work items, capped at ``max_blocks`` (the kernels loop over the rest)."""
        work = (n + per_thread - 1) // per_thread
        return (max(1, min((work + threads - 1) // threads, self.max_blocks)),)

    def meta(self, shape: Shape, strides_list: Sequence[Strides]) -> Array:
        """The device int64 array [shape | strides of each operand | fast-division magic and shift per dim]
        (common.cuh's layout), cached by content: training repeats the same broadcast patterns every step, so
        steady state uploads nothing."""
        key = (shape, tuple(strides_list))
        m = self._meta.get(key)
        if m is None:
            flat = list(shape)
            for st in strides_list:
                flat.extend(st)
            consts = [fastdiv_constants(n) for n in shape]
            flat.extend(c[0] for c in consts)
            flat.extend(c[1] for c in consts)
            m = self.upload(np.array(flat, dtype=np.int64))
            if len(self._meta) >= _META_CACHE_MAX:
                self._meta.clear()
            self._meta[key] = m
        return m

    def _aligned(self, *arrays: Array | None) -> bool:
        aligned = self.aligned
        return all(a is None or aligned(a) for a in arrays)

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
        t = acc_dtype(dt).type
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
        (shape, like, contiguous, nd, meta, rows), or None when unsupported. ``like`` is the operand whose memory
        layout a new output should copy (a dense permuted input, as NumPy and PyTorch keep it), else None
        for a C-contiguous output. ``contiguous`` means every operand is walked as one flat run; ``rows`` is the
        collapsed walk when the row kernels can take it (see ``Layout``)."""
        present = [a for a in arrays if a is not None]
        first = present[0]
        shape = first.shape
        if all(a.shape == shape and a.flags.c_contiguous for a in present) and (
                out is None or (out.shape == shape and out.flags.c_contiguous)):
            return shape, None, True, 0, None, None
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
            return shape, like, True, 0, None, None
        if len(cshape) > 8:
            return None
        rows = len(cshape) >= 2 and walked[0][-1] == 1 and all(st[-1] in (0, 1) for st in walked[1:])
        return shape, like, False, len(cshape), self.meta(cshape, cstrides), (cshape, cstrides) if rows else None

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
    def _map(self, op: _MapOp, items: Sequence[Operand], out: Array | None) -> Array | None:
        """The common driver of the map kernels: operands -> plan -> output -> launch. ``items`` are arrays or
        Python scalars; returns the output or None (unsupported case).

        NOTE: this runs on every elementwise op, so everything that the operands' shapes and strides decide is
        worked out once per signature (``_map_plan``) and the per-call work is the key, the allocation, the
        alignment of the pointers (the one thing shapes and strides do not fix) and the launch."""
        nd_type = self.xp.ndarray
        dt = op.dt
        zero = op.zero
        arrays: list[Array | None]
        scalars: list[Any]
        tkey: tuple[Any, ...]
        mode = 0
        n_items = len(items)
        a = items[0]
        # the common signatures (one or two arrays of the op's dtype, no ``out``) build their key in one tuple; the
        # loop below builds the same key for every other one
        if out is None and a.__class__ is nd_type and a.dtype == dt and (
                n_items == 1 or (n_items == 2 and items[1].__class__ is nd_type and items[1].dtype == dt)):
            if n_items == 1:
                tkey = (op, a.shape, a.strides)
                arrays, scalars = [a], [zero]
            else:
                b = items[1]
                tkey = (op, a.shape, a.strides, b.shape, b.strides)
                arrays, scalars = [a, b], [zero, zero]
        else:
            arrays, scalars = [], []
            key: list[Any] = [op]
            for k, v in enumerate(items):
                if isinstance(v, nd_type):
                    if v.dtype != dt:
                        return None
                    arrays.append(v)
                    scalars.append(zero)
                    key.append(v.shape)
                    key.append(v.strides)
                elif type(v) in _PY_SCALARS:
                    if -_F32_MAX <= v <= _F32_MAX:
                        scalars.append(op.scalar(v))
                    else:  # out of float32's range: inf as the cast gives it, without NumPy's overflow warning
                        with np.errstate(over="ignore"):
                            scalars.append(op.scalar(v))
                    arrays.append(None)
                    mode |= 1 << k
                    key.append(None)
                else:
                    return None
            if out is not None:
                if out.dtype != op.out_dt or self._overlaps(out, arrays):
                    return None
                key.append(out.shape)
                key.append(out.strides)
            tkey = tuple(key)
        plan = self._plans.get(tkey)
        if plan is None:
            plan = self._map_plan(arrays, out, dt, op.vec_ok, op.contig is not None, op.rows is not None)
            if len(self._plans) >= _PLAN_CACHE_MAX:
                self._plans.clear()
            self._plans[tkey] = plan
        if plan is _DECLINED:
            return None
        if out is None:
            out = self.xp.empty_like(arrays[plan.fill], dtype=op.out_dt) if plan.like else \
                self.xp.empty(plan.shape, dtype=op.out_dt)
        kind = plan.kind
        if kind == _PLAN_EMPTY:
            return out
        if mode:  # a scalar's pointer slot holds an array (never read): a kernel pointer must be a real allocation
            fill = arrays[plan.fill]
            ptrs = [a if a is not None else fill for a in arrays]
        else:
            ptrs = arrays
        aligned = self.aligned
        if kind == _PLAN_ROWS:
            vec = plan.vec_strides and aligned(out)
            if vec:
                for i in plan.align:
                    if not aligned(ptrs[i]):
                        vec = False
                        break
            rv = plan.rows_vec if vec else plan.rows_scalar
            if rv is not None:
                n_rows, cols, nd, grid, magic, shift = rv
                if vec:
                    mode |= MODE_VEC
                # the row kernels take the whole mode as the map's last argument (a unary map's is a vector flag)
                tail = op.tail(scalars, mode)[:-1] + (_I32[mode],)
                self.fn("elementwise.cu", op.rows)(  # type: ignore[arg-type]
                    grid, _BLOCK, (n_rows, cols, nd, plan.meta, *ptrs, out, *tail, magic, shift))
                return out
        elif kind == _PLAN_CONTIG:
            grid = plan.grid
            if plan.vec and aligned(out):
                for a in arrays:
                    if a is not None and not aligned(a):
                        break
                else:
                    grid = plan.grid_vec
                    mode |= MODE_VEC
            self.fn("elementwise.cu", op.contig)(  # type: ignore[arg-type]
                grid, _BLOCK, (plan.n, *ptrs, out, *op.tail(scalars, mode)))
            return out
        self.fn("elementwise.cu", op.strided)(
            plan.grid, _BLOCK, (plan.n, plan.nd, plan.meta, *ptrs, out, *op.tail(scalars, mode)))
        return out

    def _map_plan(self, arrays: Sequence[Array | None], out: Array | None, dt: NpDtype, vec_ok: bool,
                  has_contig: bool, has_rows: bool) -> _MapPlan:
        """The plan of one operand signature (``_map``'s cache entry), or ``_DECLINED`` when the kernels do not
        take it (mismatched shapes, a zero-stride output, more than 8 dims after collapsing)."""
        lay = self._layout(arrays, out)
        if lay is None:
            return _DECLINED
        shape, like, contig, nd, meta, rows = lay
        plan = _MapPlan()
        plan.shape = shape
        plan.like = like is not None
        plan.fill = next(i for i, a in enumerate(arrays) if a is not None)
        n = math.prod(shape)
        plan.n = _i64(n)
        if n == 0:
            plan.kind = _PLAN_EMPTY
            return plan
        plan.grid = self.grid(n)
        if rows is not None and has_rows:
            plan.kind = _PLAN_ROWS
            plan.meta = meta
            self._rows_plan(plan, rows, arrays, dt)
            # rows that overflow the 31-bit index math take the strided walk
            plan.nd = _i32(nd)
        elif contig and has_contig:
            plan.kind = _PLAN_CONTIG
            plan.vec = vec_ok
            plan.grid_vec = self.grid(n, 16 // dt.itemsize)
        else:
            plan.kind = _PLAN_STRIDED
            plan.nd, plan.meta = (_i32(0), self._empty_meta()) if contig else (_i32(nd), meta)
        return plan

    def _rows_plan(self, plan: _MapPlan, rows: Collapsed, arrays: Sequence[Array | None], dt: NpDtype) -> None:
        """The row kernels' part of ``plan``: their arguments for 128-bit packs and for single elements (None
        when the work items do not fit the kernel's 31-bit index math), and which operands must be 16-byte
        aligned for the packs."""
        cshape, cstrides = rows
        n_rows, cols = math.prod(cshape[:-1]), cshape[-1]
        S = 16 // dt.itemsize
        # 128-bit packs need every packed row start 16-byte aligned: the base pointers and every outer stride of
        # the operands read along the row (a row-constant operand is read one element at a time)
        slots = [i for i, a in enumerate(arrays) if a is not None]
        strides = [cstrides[0]] + [cstrides[1 + i] for i in slots]
        plan.vec_strides = all(st[-1] == 0 or all(x % S == 0 for x in st[:-1]) for st in strides)
        plan.align = tuple(i for i, st in zip(slots, strides[1:]) if st[-1] != 0)

        def args(per: int) -> tuple[Any, ...] | None:
            cpr = (cols + per - 1) // per
            if n_rows * cpr > FASTDIV_MAX:
                return None
            magic, shift = fastdiv_constants(cpr)
            return (_i64(n_rows), _i64(cols), _i32(len(cshape)), self.grid(n_rows * cpr), np.uint32(magic),
                    np.uint32(shift))

        plan.rows_vec = args(S) if plan.vec_strides else None
        plan.rows_scalar = args(1)

    def _empty_meta(self) -> Array:
        return self.meta((0,), ())

    def _map_op(self, key: tuple[Any, ...], build: Callable[[], _MapOp | None]) -> _MapOp | None:
        """The map op cached under ``key`` (built on first use; None: the kernels lack it)."""
        try:
            return self._map_ops[key]
        except KeyError:
            op = self._map_ops[key] = build()
            return op

    def unary(self, name: str, x: Array, out: Array | None = None, p0: float = 0.0, p1: float = 0.0) -> Array | None:
        """``name`` (an UnaryOp or PredicateOp of elementwise.cu) of a float array (float32, float64, float16, bfloat16)."""
        dt = x.dtype
        key = ("unary", name, dt, p0, p1)
        op = self._map_ops.get(key)  # (no closure per call: this runs on every elementwise op)
        if op is None and key not in self._map_ops:
            op = self._map_op(key, lambda: _unary_op(name, dt, p0, p1))
        return None if op is None else self._map(op, (x,), out)

    def binary(self, name: str, a: Operand, b: Operand, out: Array | None = None) -> Array | None:
        """``a <name> b`` (a BinaryOp or CompareOp of elementwise.cu); either side may be a Python scalar."""
        nd_type = self.xp.ndarray
        arr = a if isinstance(a, nd_type) else b
        if not isinstance(arr, nd_type):
            return None
        dt = arr.dtype
        key = ("binary", name, dt)
        op = self._map_ops.get(key)
        if op is None and key not in self._map_ops:
            op = self._map_op(key, lambda: _binary_op(name, dt))
        return None if op is None else self._map(op, (a, b), out)

    def ternary(self, name: str, a: Array, b: Operand, c: Operand, alpha: float = 1.0,
                out: Array | None = None) -> Array | None:
        """clamp(a, b, c), lerp(a, b, c), addcmul / addcdiv ``a + alpha * b (*|/) c``; b and c may be Python
        scalars (a missing clamp bound is passed as -inf / inf)."""
        if not isinstance(a, self.xp.ndarray):
            return None
        dt = a.dtype
        op = self._map_op(("ternary", name, dt, alpha), lambda: _ternary_op(name, dt, alpha))
        return None if op is None else self._map(op, (a, b, c), out)

    def where(self, cond: Array, a: Operand, b: Operand) -> Array | None:
        """``cond ? a : b`` for a bool array ``cond`` and float32/float64 ``a``, ``b`` (arrays or scalars)."""
        xp = self.xp
        if not isinstance(cond, xp.ndarray) or cond.dtype != _BOOL:
            return None
        arr = a if isinstance(a, xp.ndarray) else b
        if not isinstance(arr, xp.ndarray) or arr.dtype not in _ALL_FLOATS:
            return None
        dt = arr.dtype
        got = self._operands((a, b), dt)
        if got is None:
            return None
        arrays, (sa, sb), mode = got
        lay = self._layout([cond] + arrays, None)
        if lay is None:
            return None
        shape, like, contig, nd, meta, _ = lay
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


def fastdiv_constants(d: int) -> tuple[int, int]:
    """(magic, shift) with ``n // d == (mulhi32(n, magic) + n) >> shift`` for every ``0 <= n < 2**31`` (common.cuh's
    ``mt_fastdiv``); (0, 0) for the sizes no index is ever divided by (0, or beyond 31 bits)."""
    if d <= 0 or d > FASTDIV_MAX + 1:
        return 0, 0
    shift = (d - 1).bit_length()  # the smallest s with 2**s >= d
    return ((1 << 32) * ((1 << shift) - d)) // d + 1, shift


class _MapOp:
    """One map of elementwise.cu for one dtype: its kernels (contiguous, strided, by rows; None where the file
    has none), result dtype, whether it has a 128-bit path, and ``tail(scalars, mode)``, its trailing
    arguments (op code and scalars, typed once here).

    NOTE: a plain class, hashed by identity: it leads every plan key, and a tuple would hash all its fields on
    every call."""

    __slots__ = ("contig", "strided", "rows", "dt", "out_dt", "vec_ok", "tail", "zero", "scalar")

    def __init__(self, contig: str | None, strided: str, rows: str | None, dt: NpDtype, out_dt: NpDtype,
                 vec_ok: bool, tail: TailArgs) -> None:
        self.contig, self.strided, self.rows = contig, strided, rows
        self.dt, self.out_dt, self.vec_ok, self.tail = dt, out_dt, vec_ok, tail
        # scalar arguments are typed as the kernel computes (float32 for the 16-bit types)
        self.scalar: Callable[[Any], Any] = acc_dtype(dt).type
        self.zero = self.scalar(0)  # the typed placeholder standing for an array operand among the scalars


# typed int32 for the small codes passed on every launch (op codes and mode bits): no NumPy scalar per call
_I32 = tuple(np.int32(i) for i in range(256))


def _elementwise_code(name: str, dt: NpDtype, enums: tuple[str, ...]) -> tuple[str, np.int32] | None:
    """(enum, typed op code) of ``name`` when elementwise.cu has it in one of ``enums`` for dtype ``dt``."""
    kop = kernel_op(name)
    if dt not in _ALL_FLOATS or kop is None or kop[0] not in enums:
        return None
    return kop[0], _I32[kop[1]]


def _unary_op(name: str, dt: NpDtype, p0: float, p1: float) -> _MapOp | None:
    got = _elementwise_code(name, dt, ("UnaryOp", "PredicateOp"))
    if got is None:
        return None
    enum, code = got
    t = _TNAME[dt]
    if enum == "PredicateOp":
        return _MapOp(None, f"predicate_forward<{t}>", None, dt, _BOOL, False, lambda s, m: (code,))
    s0, s1 = acc_dtype(dt).type(p0), acc_dtype(dt).type(p1)
    one, zero = _I32[1], _I32[0]
    return _MapOp(f"unary_forward<{t}>", f"unary_strided_forward<{t}>", f"unary_rows_forward<{t}>", dt, dt, True,
                  lambda s, m: (code, s0, s1, one if m & MODE_VEC else zero))


def _binary_op(name: str, dt: NpDtype) -> _MapOp | None:
    got = _elementwise_code(name, dt, ("BinaryOp", "CompareOp"))
    if got is None:
        return None
    enum, code = got
    t = _TNAME[dt]

    def tail(s: list[Any], m: int) -> tuple[Any, ...]:
        return (code, s[0], s[1], _I32[m])
    if enum == "CompareOp":
        return _MapOp(None, f"compare_forward<{t}>", None, dt, _BOOL, False, tail)
    return _MapOp(f"binary_forward<{t}>", f"binary_strided_forward<{t}>", f"binary_rows_forward<{t}>", dt, dt, True,
                  tail)


def _ternary_op(name: str, dt: NpDtype, alpha: float) -> _MapOp | None:
    got = _elementwise_code(name, dt, ("TernaryOp",))
    if got is None:
        return None
    code = got[1]
    with np.errstate(over="ignore"):
        al = acc_dtype(dt).type(alpha)
    return _MapOp(None, f"ternary_forward<{_TNAME[dt]}>", None, dt, dt, False,
                  lambda s, m: (code, s[0], s[1], s[2], al, _I32[m]))


def _bits(a: Array) -> Array:
    """A float16/bfloat16 array as its 16-bit words: matmul_tc.cu takes them as u16 (the simulator checks the
    element type of every pointer it is given)."""
    return a.view(np.uint16)


def _same(a: Array) -> Array:
    return a


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


class TcKernel(NamedTuple):
    """A tile of matmul_tc.cu's tensor-core GEMMs (``tcgemm_<type>_<name>_<a><b>``) and the shape it was compiled
    for: the launcher sizes grids, split-K chunks and the dynamic shared memory from these, so they must match the
    entry points' template arguments."""
    name: str
    bm: int
    bn: int
    threads: int
    stages: int
    per_sm: int  # blocks of it that its launch bounds let one SM hold


TC_KERNELS: dict[str, TcKernel] = {
    "128x128": TcKernel("128x128", 128, 128, 128, 4, 2),
    "64x64": TcKernel("64x64", 64, 64, 128, 3, 4),
}
# k of one pipeline step per type (TcT<...>::BK): 64 bytes of a row of a k-contiguous tile
TC_BK = {"f16": 32, "bf16": 32, "tf32": 16}


def tc_type(dt: NpDtype, tf32: bool) -> str | None:
    """matmul_tc.cu's name for products of ``dt`` operands ("f16", "bf16", "tf32" for float32 when TF32 is
    allowed), or None when it has no kernel for them."""
    if dt == F32:
        return "tf32" if tf32 else None
    return {F16: "f16", BF16: "bf16"}.get(dt)


def tc_smem(ty: str, kern: TcKernel, a_k: bool, b_k: bool) -> int:
    """Dynamic shared memory (bytes) of a tensor-core GEMM: ``kern.stages`` tiles of each operand, laid out
    k-contiguous (``a_k``/``b_k``: BX rows of BK + one 16-byte pack) or m/n-contiguous (BK rows of BX + 8)."""
    item = 4 if ty == "tf32" else 2
    bk = TC_BK[ty]

    def tile(bx: int, kmajor: bool) -> int:
        return bx * (bk + 16 // item) if kmajor else bk * (bx + 8)
    return kern.stages * (tile(kern.bm, a_k) + tile(kern.bn, b_k)) * item


def tc_plan(ty: str, nb: int, M: int, N: int, K: int, sms: int, tile: str | None = None) -> tuple[TcKernel, int]:
    """(tile, split-K count) of matmul_tc.cu for ``nb`` products (M x K) @ (K x N) on ``sms`` SMs: 128 x 128 tiles
    when they fill the SMs, else 64 x 64 ones; and when the tiles leave resident block slots empty (a block of
    four warps hides little latency alone) and K is long, K split so that the blocks fill one wave at most.
    ``tile`` forces a TC_KERNELS entry (the benchmark and the tests)."""
    big = TC_KERNELS["128x128"]
    kern = TC_KERNELS[tile] if tile else big if nb * -(-M // big.bm) * -(-N // big.bn) >= sms else TC_KERNELS["64x64"]
    tiles = nb * -(-M // kern.bm) * -(-N // kern.bn)
    splits = 1
    if tiles < kern.per_sm * sms and K >= 2 * _SPLIT_MIN_K:
        splits = max(1, min(kern.per_sm * sms // tiles, K // _SPLIT_MIN_K, 64))
    return kern, splits


class _RowKernels(_MapKernels):
    """softmax / log_softmax, cross-entropy, layer norm: kernels over rows of a contiguous last dim."""

    def softmax(self, x: Array, log: bool, axis: int) -> Array | None:
        """softmax (or log_softmax) of float ``x`` (float32, float64, float16, bfloat16) along ``axis`` (the last
        dim only)."""
        if x.dtype not in _ALL_FLOATS or x.ndim == 0 or axis != x.ndim - 1 or x.shape[-1] >= 1 << 31:
            return None
        if not x.flags.c_contiguous:
            x = self.xp.ascontiguousarray(x)
        y = self.xp.empty(x.shape, dtype=x.dtype)
        cols = x.shape[-1]
        rows = x.size // cols if cols else 0
        if rows == 0 or cols == 0:
            return y
        vec = self._rows_aligned(cols, x.dtype, x, y)
        self._softmax_rows("softmax_forward", x.dtype, rows, cols, vec, 1,
                           (x, y, _i64(rows), _i64(cols), _i32(log), _i32(vec)))
        return y

    def softmax_backward(self, y: Array, g: Array, log: bool, axis: int) -> Array | None:
        """The gradient of softmax (or log_softmax) from its output ``y`` and the output gradient ``g``."""
        if y.dtype not in _ALL_FLOATS or g.dtype != y.dtype or y.ndim == 0 or axis != y.ndim - 1 or g.shape != y.shape \
                or y.shape[-1] >= 1 << 31:
            return None
        xp = self.xp
        y = xp.ascontiguousarray(y)
        g = xp.ascontiguousarray(g)
        dx = xp.empty(y.shape, dtype=y.dtype)
        cols = y.shape[-1]
        rows = y.size // cols if cols else 0
        if rows == 0 or cols == 0:
            return dx
        vec = self._rows_aligned(cols, y.dtype, y, g, dx)
        # two arrays share the registers of one
        self._softmax_rows("softmax_backward", y.dtype, rows, cols, vec, 2,
                           (y, g, dx, _i64(rows), _i64(cols), _i32(log), _i32(vec)))
        return dx

    def _softmax_rows(self, kernel: str, dt: NpDtype, rows: int, cols: int, vec: bool, arrays: int,
                      args: tuple[Any, ...]) -> None:
        """Launch ``kernel``'s v1 (a warp per row) for rows a warp holds in registers, else its v2 (a block
        per row); ``arrays``: how many row arrays the kernel keeps in registers."""
        if self._row_fits(cols, dt, vec, 32, arrays):
            self.fn("softmax.cu", f"{kernel}_v1<{_TNAME[dt]}>")(self._row_grid(rows, True), (THREADS,), args)
        else:
            threads = self._block_threads(cols, dt, vec, 2 * arrays)
            self.fn("softmax.cu", f"{kernel}_v2<{_TNAME[dt]}>")(self._row_grid(rows, False), (threads,), args)

    def cross_entropy(self, logits: Array, target: Array, weight: Array | None, ignore_index: int,
                      label_smoothing: float) -> tuple[Array, Array, Array] | None:
        """Per-row (loss, weight, log-sum-exp relative to the row max) of 2-d float logits (rows, C) and int64
        targets (rows,). A target outside [0, C) that is not ``ignore_index`` gives a NaN loss: the caller checks
        the range (reading a device flag back here would synchronise every call)."""
        r = self._cross_entropy(logits, target, weight, ignore_index, label_smoothing, False)
        return None if r is None else r[:3]

    def cross_entropy_fused(self, logits: Array, target: Array, weight: Array | None, ignore_index: int,
                            label_smoothing: float) -> tuple[Array, Array, Array, Array] | None:
        """``cross_entropy`` plus the gradient of the summed per-row losses in the logits, from the same read of
        the logits; ``cross_entropy_scale`` turns it into the gradient of any reduction."""
        return self._cross_entropy(logits, target, weight, ignore_index, label_smoothing, True)

    def _cross_entropy(self, logits: Array, target: Array, weight: Array | None, ignore_index: int,
                       label_smoothing: float, grad: bool) -> tuple[Array, Array, Array, Array] | None:
        xp = self.xp
        dt = logits.dtype
        if dt not in _ALL_FLOATS or logits.ndim != 2 or target.dtype != np.int64 or target.shape != logits.shape[:1]:
            return None
        if weight is not None and (weight.dtype != dt or weight.shape != logits.shape[1:]):
            return None
        if logits.shape[1] >= 1 << 31:
            return None  # the kernels index within a row in 32 bits
        logits = xp.ascontiguousarray(logits)
        target = xp.ascontiguousarray(target)
        rows, C = logits.shape
        acc = acc_dtype(dt)
        loss = xp.empty(rows, dtype=dt)
        wsum = xp.empty(rows, dtype=acc)
        lse = xp.empty(rows, dtype=acc)
        d = xp.empty((rows, C), dtype=dt) if grad else loss
        if rows == 0:
            return loss, wsum, lse, d
        w = xp.ascontiguousarray(weight) if weight is not None else logits
        vec = self._rows_aligned(C, dt, logits, w, *((d,) if grad else ()))
        v1 = self._row_fits(C, dt, vec, 32, 1)
        self.fn("cross_entropy.cu", f"cross_entropy_forward_{'v1' if v1 else 'v2'}<{_TNAME[dt]}>")(
            self._row_grid(rows, v1), (THREADS if v1 else CE_LONG_THREADS,),
            (logits, target, w, loss, wsum, lse, d, _i64(rows), _i64(C), _i64(ignore_index),
             acc.type(label_smoothing), _i32(weight is not None), _i32(grad), _i32(vec)))
        return loss, wsum, lse, d

    def cross_entropy_scale(self, d: Array, gout: Array, scale: float) -> Array | None:
        """``d`` (the fused gradient of the summed losses, C-contiguous (rows, C)) times the loss gradient, in
        place: ``gout`` is 0-d (one gradient for every row) or one per row, times ``scale``."""
        xp = self.xp
        dt = d.dtype
        if dt not in _ALL_FLOATS or d.ndim != 2 or not d.flags.c_contiguous:
            return None
        rows, C = d.shape
        if rows == 0 or C == 0:
            return d
        gout = xp.ascontiguousarray(gout.astype(dt, copy=False)).reshape(-1)
        if gout.size not in (1, rows):
            return None
        vec = self._rows_aligned(C, dt, d)
        per = 16 // dt.itemsize if vec else 1
        self.fn("cross_entropy.cu", f"cross_entropy_scale<{_TNAME[dt]}>")(
            self.grid(rows * C, per), (THREADS,),
            (d, gout, _i64(0 if gout.size == 1 else 1), acc_dtype(dt).type(scale), _i64(rows), _i64(C), _i32(vec)))
        return d

    def cross_entropy_backward(self, logits: Array, target: Array, weight: Array | None, lse: Array, gout: Array,
                               scale: float, ignore_index: int, label_smoothing: float) -> Array | None:
        """dlogits of the per-row losses; ``gout`` is a 0-d gradient (broadcast to every row) or one per row."""
        xp = self.xp
        dt = logits.dtype
        acc = acc_dtype(dt)
        if dt not in _ALL_FLOATS or logits.ndim != 2 or lse.dtype != acc:
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
            (logits, xp.ascontiguousarray(target), w, lse, gout.reshape(-1), _i64(gstride), acc.type(scale), d,
             _i64(rows), _i64(C), _i64(ignore_index), acc.type(label_smoothing), _i32(weight is not None)))
        return d

    def layer_norm(self, x: Array, weight: Array | None, bias: Array | None,
                   eps: float) -> tuple[Array, Array, Array] | None:
        """(y, mean, rstd) of layer norm over the last dim of float ``x`` (weight / bias of shape (N,) or None);
        mean and rstd are float32 for the 16-bit types, as PyTorch keeps them."""
        xp = self.xp
        dt = x.dtype
        if dt not in _ALL_FLOATS or x.ndim == 0:
            return None
        N = x.shape[-1]
        for p in (weight, bias):
            if p is not None and (p.dtype != dt or p.shape != (N,)):
                return None
        if N >= 1 << 31:
            return None  # the kernels index within a row in 32 bits
        x = xp.ascontiguousarray(x)
        rows = x.size // N if N else 0
        y = xp.empty(x.shape, dtype=dt)
        acc = acc_dtype(dt)
        mean = xp.empty(x.shape[:-1], dtype=acc)
        rstd = xp.empty(x.shape[:-1], dtype=acc)
        if rows == 0 or N == 0:
            return y, mean, rstd
        w = xp.ascontiguousarray(weight) if weight is not None else x
        b = xp.ascontiguousarray(bias) if bias is not None else x
        vec = self._rows_aligned(N, dt, x, y, w, b)
        v1 = self._row_fits(N, dt, vec, 32, 1)
        threads = THREADS if v1 else self._block_threads(N, dt, vec, 2)
        self.fn("layernorm.cu", f"layernorm_forward_{'v1' if v1 else 'v2'}<{_TNAME[dt]}>")(
            self._row_grid(rows, v1), (threads,),
            (x, w, b, y, mean, rstd, _i64(rows), _i64(N), acc.type(eps), _i32(weight is not None),
             _i32(bias is not None), _i32(vec)))
        return y, mean, rstd

    def layer_norm_backward(self, dy: Array, x: Array, weight: Array | None, mean: Array, rstd: Array,
                            want_weight: bool, want_bias: bool) -> tuple[Array, Array | None, Array | None] | None:
        """(dx, dweight or None, dbias or None) of layer norm."""
        xp = self.xp
        dt = x.dtype
        acc = acc_dtype(dt)
        if dt not in _ALL_FLOATS or dy.dtype != dt or dy.shape != x.shape or x.shape[-1] >= 1 << 31 or \
                mean.dtype != acc or rstd.dtype != acc:
            return None
        x = xp.ascontiguousarray(x)
        dy = xp.ascontiguousarray(dy)
        mean = xp.ascontiguousarray(mean)
        rstd = xp.ascontiguousarray(rstd)
        N = x.shape[-1]
        rows = x.size // N if N else 0
        dx = xp.empty(x.shape, dtype=dt)
        want_params = want_weight or want_bias
        dw = xp.empty(N, dtype=dt) if want_weight else None
        db = xp.empty(N, dtype=dt) if want_bias else None
        if rows == 0 or N == 0:
            for p in (dw, db):
                if p is not None:
                    p.fill(0)
            return dx, dw, db
        t = _TNAME[dt]
        w = xp.ascontiguousarray(weight) if weight is not None else x
        vec = self._rows_aligned(N, dt, x, dy, dx, w)
        # the backward keeps four arrays in registers (xhat, dxhat and the two column sums)
        v1 = self._row_fits(N, dt, vec, 32, 2)
        threads = THREADS if v1 else self._block_threads(N, dt, vec, 4)
        # column sums in registers need every column of a row there; wider rows sum in a second kernel
        fused = want_params and (v1 or self._row_fits(N, dt, vec, threads, 4))
        if fused:
            # one partial row pair per block: few blocks, each looping over many rows; about 16 warps per SM
            # (max_blocks is 32 per SM on a GPU) keep loads in flight without many partial rows to add up
            rows_per_block = THREADS // 32 if v1 else 1
            grid = (max(1, min((rows + rows_per_block - 1) // rows_per_block, self.max_blocks * 16 // threads)),)
            partial = xp.empty((grid[0], 2, N), dtype=acc)
            nparts = grid[0]
        else:
            grid = self._row_grid(rows, v1)
            partial = mean  # never written without want_params (a pointer of the partials' type)
        self.fn("layernorm.cu", f"layernorm_backward_{'v1' if v1 else 'v2'}<{t}>")(
            grid, (threads,),
            (dy, x, w, mean, rstd, dx, partial, _i64(rows), _i64(N), _i32(weight is not None), _i32(fused),
             _i32(vec)))
        if want_params and not fused:
            tiles = (N + THREADS - 1) // THREADS
            nparts = max(1, min(rows, self.max_blocks // tiles if self.max_blocks >= tiles else 1, 1024))
            chunk = (rows + nparts - 1) // nparts
            nparts = (rows + chunk - 1) // chunk
            partial = xp.empty((nparts, 2, N), dtype=acc)
            self.fn("layernorm.cu", f"layernorm_backward_partial<{t}>")(
                (min(tiles, self.max_blocks), nparts), (THREADS,),
                (dy, x, mean, rstd, partial, _i64(rows), _i64(N), _i64(chunk)))
        if want_params:
            # a block per 32 columns (blockDim.x / 32 <= 32 warps share its shared memory)
            self.fn("layernorm.cu", f"layernorm_backward_params<{t}>")(
                (max(1, min((N + 31) // 32, self.max_blocks)),), (THREADS,),
                (partial, _i64(nparts), _i64(N), dw if dw is not None else dx, db if db is not None else dx,
                 _i32(want_weight), _i32(want_bias)))
        return dx, dw, db

    @staticmethod
    def _row_groups(dt: NpDtype, div: int) -> int:
        """Groups a thread of a row kernel keeps in registers: rows.cuh's RowCfg<T, W, div>::K (the 16-bit types
        hold float values, so half as many of their groups fit)."""
        return max(1, _row_cache_groups() * dt.itemsize // acc_dtype(dt).itemsize // div)

    @staticmethod
    def _row_fits(N: int, dt: NpDtype, vec: bool, threads: int, div: int) -> bool:
        """Whether a row of ``N`` elements fits the registers of a team of ``threads`` threads that each keep
        ``_row_groups(dt, div)`` groups (16 bytes each with ``vec``, else one element)."""
        groups = N // (16 // dt.itemsize) if vec else N
        return groups <= threads * _RowKernels._row_groups(dt, div)

    @staticmethod
    def _block_threads(N: int, dt: NpDtype, vec: bool, div: int) -> int:
        """Threads of a block-per-row team for rows of ``N``: enough for the row to fit the registers (each
        thread keeping ``_row_groups(dt, div)`` groups), at least 64 and at most ``THREADS`` (longer
        rows are partly read again). Fewer threads per row mean more rows, and more loads, in flight per SM."""
        groups = N // (16 // dt.itemsize) if vec else N
        per = _RowKernels._row_groups(dt, div)
        need = (groups + per - 1) // per
        return max(64, min(THREADS, (need + 31) // 32 * 32))

    def _rows_aligned(self, N: int, dt: NpDtype, *arrays: Array) -> bool:
        """Whether rows of ``N`` elements of every array start on 16 bytes (rows.cuh's 128-bit groups)."""
        return N % (16 // dt.itemsize) == 0 and self._aligned(*arrays)

    def _row_grid(self, rows: int, warp_per_row: bool) -> tuple[int]:
        per_block = THREADS // 32 if warp_per_row else 1
        return (max(1, min((rows + per_block - 1) // per_block, self.max_blocks)),)

    def matmul(self, a: Array, b: Array, bias: Array | None = None, variant: tuple[str, int] | None = None,
               tf32: bool = False, tc_tile: str | None = None) -> Array | None:
        """``a @ b`` (+ ``bias`` per output column) with NumPy's matmul rules for 1-d operands and broadcast batch
        dims; transposed (strided) operands are read in place. float32 and float64 run on matmul.cu's SGEMM/DGEMM
        (``variant`` forces a float32 kernel and swizzle, see gemm_plan); with tensor cores, float16 and bfloat16
        (and float32 when ``tf32`` allows TF32) run on matmul_tc.cu's mma kernels, accumulating in float32
        (``tc_tile`` forces a TC_KERNELS tile)."""
        xp = self.xp
        dt = a.dtype
        ty = tc_type(dt, tf32 and variant is None) if self.tensor_cores else None
        if (dt not in _FLOATS and ty is None) or b.dtype != dt or a.ndim == 0 or b.ndim == 0:
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
            elif ty is not None:
                self._tc_gemm(ty, a2, b2, out, bias, batch_shape, M, N, K, tc_tile)
            else:
                self._gemm(a2, b2, out, bias, batch_shape, M, N, K, variant)
        if a_vec:
            out = out[..., 0, :]
        if b_vec:
            out = out[..., 0]
        return out

    def _gemm(self, a: Array, b: Array, out: Array, bias: Array | None, batch_shape: Shape, M: int, N: int,
              K: int, variant: tuple[str, int] | None = None) -> None:
        has_bias = bias is not None
        key = (a.dtype, a.shape, a.strides, b.shape, b.strides, has_bias, variant)
        plan = self._gemm_plans.get(key)
        if plan is None:
            plan = self._gemm_plan(a, b, batch_shape, M, N, K, has_bias, variant)
            if len(self._gemm_plans) >= _PLAN_CACHE_MAX:
                self._gemm_plans.clear()
            self._gemm_plans[key] = plan
        entry, grid, block, offs, args, vec, a_pack, b_pack, swizzle, reduce = plan
        # the one thing a plan cannot fix: whether this call's operands start on 16 bytes
        if a_pack and self.aligned(a):
            vec |= 1
        if b_pack and self.aligned(b):
            vec |= 2
        target = out if reduce is None else self.xp.empty(reduce[0], dtype=out.dtype)
        fill = bias if has_bias else out
        self.fn("matmul.cu", entry)(grid, block, (a, b, target, fill, offs, *args, _I32[vec], swizzle))
        if reduce is not None:
            _, kernel, rgrid, rargs = reduce
            self.fn("matmul.cu", kernel)(rgrid, _BLOCK, (target, out, fill, *rargs))

    def _gemm_layout(self, a: Array, b: Array, batch_shape: Shape, M: int,
                     N: int) -> tuple[tuple[int, int, int, int], int, tuple[int, ...], tuple[int, ...], Any]:
        """What both GEMM families need of the operands' layout: the matrix strides (sAm, sAk, sBk, sBn) in
        elements, the batch count, each operand's batch strides, and the device table of batch offsets."""
        item = a.itemsize
        sAm, sAk = (s // item for s in a.strides[-2:])
        sBk, sBn = (s // item for s in b.strides[-2:])
        sa = self._estrides(a[..., 0, 0], batch_shape) if a.ndim > 2 else (0,) * len(batch_shape)
        sb = self._estrides(b[..., 0, 0], batch_shape) if b.ndim > 2 else (0,) * len(batch_shape)
        offs = self._batch_offsets(batch_shape, sa, sb, tuple(x * M * N for x in _c_strides(batch_shape)))
        return (sAm, sAk, sBk, sBn), math.prod(batch_shape), sa, sb, offs

    def _gemm_grid(self, bm: int, bn: int, bk: int, splits: int, nb: int, M: int, N: int, K: int,
                   strides: tuple[int, int, int, int], has_bias: bool) -> tuple[int, Shape, tuple[Any, ...]]:
        """A GEMM's split-K (rounded to whole k steps of ``bk``), its grid for ``bm`` x ``bn`` tiles, and the
        typed arguments both GEMM families take in the same order; the bias is applied in the kernel only
        without split-K (else by the reduction)."""
        kchunk = -(-(-(-K // splits)) // bk) * bk  # a whole number of k steps per split
        splits = -(-K // kchunk)
        mt, ntiles = -(-M // bm), -(-N // bn)
        gx = min(ntiles, self.max_blocks)
        gy = min(mt, max(1, self.max_blocks // gx), 65535)
        gz = min(nb * splits, max(1, self.max_blocks // (gx * gy)), 65535)
        args = (_i64(nb), _i32(splits), _i64(kchunk), _i64(nb * M * N), _i64(M), _i64(N), _i64(K),
                *(_i64(s) for s in strides), _i32(has_bias and splits == 1))
        return splits, (gx, gy, gz), args

    def _gemm_plan(self, a: Array, b: Array, batch_shape: Shape, M: int, N: int, K: int, has_bias: bool,
                   variant: tuple[str, int] | None) -> tuple[Any, ...]:
        """Everything about one GEMM signature (dtype, shapes and strides of both operands, bias or not) that its
        launches repeat: kernel, grid, batch offset table, typed sizes and strides, split-K's workspace and
        reduction, and the 16-byte copy bits that the layout alone decides. ``_gemm`` adds the pointer checks."""
        item = a.itemsize
        (sAm, sAk, sBk, sBn), nb, sa, sb, offs = self._gemm_layout(a, b, batch_shape, M, N)
        S = 16 // item
        # 16-byte copies need every row of every batch entry aligned: the base pointer, the row stride, and
        # each batch stride (a view such as x[:, :32].view(3, 4, 8) of a (3, 33) array starts batch 1 at an
        # address that is 4 mod 16); the tiles are k-major, so only an operand whose m (A) or n (B) is the
        # contiguous dim copies whole packs
        a_batch_ok = all(s % S == 0 for s, n in zip(sa, batch_shape) if n > 1)
        b_batch_ok = all(s % S == 0 for s, n in zip(sb, batch_shape) if n > 1)
        a_pack = sAm == 1 and M % S == 0 and sAk % S == 0 and a_batch_ok
        b_pack = sBn == 1 and N % S == 0 and sBk % S == 0 and b_batch_ok
        # the output (and the split-K workspace) is fresh and dense: rows aligned when N is
        vec = 4 if N % S == 0 else 0
        kern, swizzle, splits = gemm_plan(a.dtype, nb, M, N, K, self.sms, variant)
        # the kernel swizzles only a grid of exactly one block per tile (else its grid-stride loops walk the rest)
        splits, grid, args = self._gemm_grid(kern.bm, kern.bn, kern.bk, splits, nb, M, N, K, (sAm, sAk, sBk, sBn),
                                             has_bias)
        reduce = None
        if splits > 1:
            total = nb * M * N
            reduce = ((splits,) + batch_shape + (M, N), f"matmul_splitk_reduce<{_TNAME[a.dtype]}>", self.grid(total),
                      (_i64(total), _i64(N), _i32(splits), _i32(has_bias)))
        return (kern.entry, grid, (kern.threads,), offs, args, vec, a_pack, b_pack, _i32(swizzle), reduce)

    def _tc_gemm(self, ty: str, a: Array, b: Array, out: Array, bias: Array | None, batch_shape: Shape, M: int,
                 N: int, K: int, tile: str | None) -> None:
        has_bias = bias is not None
        key = ("tc", ty, a.shape, a.strides, b.shape, b.strides, has_bias, tile)
        plan = self._gemm_plans.get(key)
        if plan is None:
            plan = self._tc_gemm_plan(ty, a, b, batch_shape, M, N, K, has_bias, tile)
            if len(self._gemm_plans) >= _PLAN_CACHE_MAX:
                self._gemm_plans.clear()
            self._gemm_plans[key] = plan
        entry, grid, block, smem, offs, args, vec, a_pack, b_pack, reduce = plan
        # the one thing a plan cannot fix: whether this call's operands start on 16 bytes
        if a_pack and self.aligned(a):
            vec |= 1
        if b_pack and self.aligned(b):
            vec |= 2
        bits = _bits if ty != "tf32" else _same
        target = out if reduce is None else self.xp.empty(reduce[0], dtype=F32)
        fill = bias if has_bias else out
        self.launch_dynamic("matmul_tc.cu", entry, grid, block,
                            (bits(a), bits(b), target, bits(fill), offs, *args, _I32[vec]), smem)
        if reduce is not None:
            _, kernel, rgrid, rargs = reduce
            self.fn("matmul_tc.cu", kernel)(rgrid, _BLOCK, (target, out, bits(fill), *rargs))

    def _tc_gemm_plan(self, ty: str, a: Array, b: Array, batch_shape: Shape, M: int, N: int, K: int,
                      has_bias: bool, tile: str | None) -> tuple[Any, ...]:
        """The tensor-core counterpart of ``_gemm_plan``: the layout of each operand's shared tile (k-contiguous
        or m/n-contiguous: the operand's own smaller stride), whether its copies can move 16 bytes at a time,
        the tile, split-K and grid."""
        P = 16 // a.itemsize
        (sAm, sAk, sBk, sBn), nb, sa, sb, offs = self._gemm_layout(a, b, batch_shape, M, N)
        a_k = sAk == 1 or (sAm != 1 and abs(sAk) <= abs(sAm))
        b_k = sBk == 1 or (sBn != 1 and abs(sBk) <= abs(sBn))
        # 16-byte copies run along the tile's contiguous dim: it must be the operand's (stride 1) and a multiple of
        # the pack long, and every row of every batch entry must start on 16 bytes (a batch offset such as
        # x[:, :30].view(3, 4, 10)'s is not: those operands are copied element by element)
        a_batch_ok = all(st % P == 0 for st, n in zip(sa, batch_shape) if n > 1)
        b_batch_ok = all(st % P == 0 for st, n in zip(sb, batch_shape) if n > 1)
        a_pack = a_batch_ok and (sAk == 1 and K % P == 0 and (M == 1 or sAm % P == 0) if a_k else
                                 sAm == 1 and M % P == 0 and (K == 1 or sAk % P == 0))
        b_pack = b_batch_ok and (sBk == 1 and K % P == 0 and (N == 1 or sBn % P == 0) if b_k else
                                 sBn == 1 and N % P == 0 and (K == 1 or sBk % P == 0))
        vec = 4 if N % 2 == 0 else 0  # pairs of outputs per store: the output and workspace are fresh and dense
        kern, splits = tc_plan(ty, nb, M, N, K, self.sms, tile)
        splits, grid, args = self._gemm_grid(kern.bm, kern.bn, TC_BK[ty], splits, nb, M, N, K, (sAm, sAk, sBk, sBn),
                                             has_bias)
        reduce = None
        if splits > 1:
            total = nb * M * N
            reduce = ((splits,) + batch_shape + (M, N), f"tc_splitk_reduce_{ty}", self.grid(total),
                      (_i64(total), _i64(N), _i32(splits), _i32(has_bias)))
        entry = f"tcgemm_{ty}_{kern.name}_{'k' if a_k else 't'}{'k' if b_k else 't'}"
        return (entry, grid, (kern.threads,), tc_smem(ty, kern, a_k, b_k), offs, args, vec, a_pack, b_pack, reduce)

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
    """Multi-tensor kernels (optim.cu's fused optimizer steps, multi_tensor.cu's norms, clipping and foreach
    ops), Philox streams (random.cu), embedding backward."""

    # elements per chunk of a tensor, one block's share of a multi-tensor launch: small enough that a 10M-parameter
    # group makes thousands of chunks (every SM busy, a short tail). Measured on an H100 for AdamW over 10.5M
    # float32 parameters: 2048-4096 reach 0.93-0.95 of copy bandwidth, 16384 0.88-0.92, 65536 (version 1's)
    # 0.82-0.86. A multiple of MT_ILP, so a chunk of an aligned tensor starts aligned.
    OPTIM_CHUNK = 4096
    _ILP = 4  # multi_tensor.cuh's MT_ILP
    _TENSOR_FIELDS = 8  # multi_tensor.cuh's MT_TENSOR_FIELDS
    _ROLES = 5  # multi_tensor.cuh's MT_ROLES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # tensor tables by (chunk, sizes, addresses by role), least recently used first
        self._mt_tables: collections.OrderedDict[tuple[Any, ...], tuple[Array, int, int, int]] = \
            collections.OrderedDict()

    def tensor_table(self, roles: Sequence[Sequence[Array] | None],
                     sizes: Sequence[int]) -> tuple[Array, int, int, int]:
        """(device table, tensors, chunks, chunk) of multi_tensor.cuh for arrays by role (``roles[0]`` present,
        None for a role the kernel does not read), cached by the arrays' addresses and sizes: an optimizer
        passes the same parameters and states every step, so steady state uploads nothing, and a new address
        (a gradient reallocated, a parameter added) builds a new table."""
        # chunks are whole batches of a thread (multi_tensor.cuh's MtIlp: 4 elements, 8 for the 16-bit types), so
        # a chunk of an aligned tensor starts aligned
        first_role = roles[0]
        assert first_role is not None, "the first role of a tensor table is always present"
        ilp = max(self._ILP, 16 // first_role[0].dtype.itemsize) if first_role else self._ILP
        chunk = max(ilp, -(-int(self.OPTIM_CHUNK) // ilp) * ilp)
        ptr = self.ptr
        addrs = [None if r is None else tuple(ptr(a) for a in r) for r in roles]
        key = (chunk, tuple(sizes), *addrs)
        cache = self._mt_tables
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit
        n = len(sizes)
        size = np.asarray(sizes, dtype=np.int64).reshape(n)
        counts = (size + chunk - 1) // chunk
        n_chunks = int(counts.sum())
        tab = np.zeros(n * self._TENSOR_FIELDS + 2 * n_chunks, dtype=np.int64)
        per = tab[:n * self._TENSOR_FIELDS].reshape(n, self._TENSOR_FIELDS)
        used = [np.asarray(a, dtype=np.int64) for a in addrs if a is not None]
        first = used[0]
        for r in range(self._ROLES):
            a = addrs[r] if r < len(addrs) else None
            per[:, r] = first if a is None else np.asarray(a, dtype=np.int64)
        per[:, self._ROLES] = size
        # 128-bit loads only where every role the kernel touches is 16-byte aligned (a view may start anywhere)
        per[:, self._ROLES + 1] = np.logical_and.reduce([a % 16 == 0 for a in used])
        per[:, self._ROLES + 2] = np.cumsum(counts) - counts
        chunks = tab[n * self._TENSOR_FIELDS:].reshape(n_chunks, 2)
        chunks[:, 0] = np.repeat(np.arange(n, dtype=np.int64), counts)
        chunks[:, 1] = (np.arange(n_chunks, dtype=np.int64) - np.repeat(per[:, self._ROLES + 2], counts)) * chunk
        entry = (self.upload(tab), n, n_chunks, chunk)
        if len(cache) >= _TABLE_CACHE_MAX:
            cache.popitem(last=False)
        cache[key] = entry
        return entry

    def _per_tensor(self, rows: Sequence[Sequence[float]]) -> tuple[Any, tuple[float, ...]]:
        """Per-tensor scalars as a kernel takes them: (null pointer, the shared row) when every tensor has the
        same row (the common case: no upload), else (the uploaded rows, zeros)."""
        first = tuple(rows[0]) if rows else ()
        if all(tuple(r) == first for r in rows):
            return np.uint64(0), first
        return self.upload(np.asarray(rows, dtype=np.float64).reshape(-1)), (0.0,) * len(first)

    def _multi_grid(self, n_chunks: int) -> tuple[int]:
        return (max(1, min(n_chunks, self.max_blocks)),)

    @staticmethod
    def _multi_block(dt: NpDtype) -> tuple[int]:
        """Threads per block of a multi-tensor launch: 512 for float32 (a few per cent faster than 256 on an H100
        for AdamW: a chunk is two passes instead of four); 256 for float64, whose optimizer kernels use up to 128
        registers, so 512 threads would not fit one SM's register file with any margin."""
        return (512,) if dt == F32 else (THREADS,)

    def optim_step(self, step: FusedStep) -> Literal[True] | None:
        """One fused optimizer step in one launch; None when a tensor does not fit (not a contiguous float array
        of the group's dtype: float32, float64, float16 or bfloat16)."""
        params = step.params
        if not params:
            return True
        dt = params[0].dtype
        if dt not in _ALL_FLOATS:
            return None
        group = fused_group_sizes(step, self.xp.ndarray, dt)
        if group is None:
            return None
        table, n, n_chunks, chunk = self.tensor_table(step.roles, group)
        if n_chunks == 0:
            return True
        consts = step.consts()
        g = group_scalar_count()
        rows = [consts[g + 3 * i:g + 3 * i + 3] for i in range(n)]
        per_tensor, (tflags, t0, t1) = self._per_tensor(rows)
        states = sum(1 << j for j, r in enumerate(step.roles) if j >= 2 and r is not None)
        self.fn("optim.cu", f"{step.kind}_step<{_TNAME[dt]}>")(
            self._multi_grid(n_chunks), self._multi_block(dt),
            (table, _i64(n), _i64(n_chunks), _i64(chunk), _i32(states), _i32(step.flag_bits()), per_tensor,
             _i32(int(tflags)), np.float64(t0), np.float64(t1), *(np.float64(c) for c in consts[:g])))
        return True

    def _contiguous_list(self, xs: Sequence[Array], dt: NpDtype) -> list[int] | None:
        """Element counts of ``xs`` when every one is a C-contiguous array of this library and dtype ``dt``."""
        nd = self.xp.ndarray
        sizes = []
        for x in xs:
            if type(x) is not nd or x.dtype != dt or not x.flags.c_contiguous:
                return None
            sizes.append(x.size)
        return sizes

    def _float_list(self, xs: Sequence[Array]) -> tuple[NpDtype, list[int]] | None:
        """(dtype, element counts) of a non-empty list of C-contiguous float arrays of one dtype (float32, float64,
        float16 or bfloat16: what the multi-tensor kernels take), else None."""
        if not xs or xs[0].dtype not in _ALL_FLOATS:
            return None
        dt = xs[0].dtype
        sizes = self._contiguous_list(xs, dt)
        return None if sizes is None else (dt, sizes)

    def multi_norm(self, xs: Sequence[Array], ord: float, per_tensor: bool) -> Array | None:
        """The ``ord``-norm of all of ``xs`` together at [0] and, with ``per_tensor``, of each at [1 + i], as one
        device array, in two launches; None for what the kernels do not take (other dtypes, strided arrays,
        ord <= 0, a max over an empty tensor)."""
        fl = self._float_list(xs)
        if fl is None:
            return None
        dt, sizes = fl
        ord = float(ord)
        kinds = codes("multi_tensor.cu", "NormKind")
        if ord == 2.0:
            kind = kinds["two"]
        elif ord == 1.0:
            kind = kinds["one"]
        elif ord == math.inf:
            if 0 in sizes:
                return None  # no identity: the built-in raises PyTorch's error
            kind = kinds["inf"]
        elif 0.0 < ord < math.inf:
            kind = kinds["p"]
        else:
            return None
        xp = self.xp
        n_out = len(xs) + 1 if per_tensor else 1
        table, n, n_chunks, chunk = self.tensor_table([xs], sizes)
        if n_chunks == 0:
            return xp.zeros(n_out, dtype=dt)
        out = xp.empty(n_out, dtype=dt)  # the finish kernel writes every entry: no memset
        t = _TNAME[dt]
        acc = acc_dtype(dt)  # partials and p in the arithmetic type (float32 for the 16-bit types)
        partial = xp.empty(n_chunks, dtype=acc)
        p = acc.type(ord if kind == kinds["p"] else 2.0)
        self.fn("multi_tensor.cu", f"multi_norm_partial<{t}>")(
            self._multi_grid(n_chunks), self._multi_block(dt),
            (table, _i64(n), _i64(n_chunks), _i64(chunk), _i32(kind), p, partial))
        self.fn("multi_tensor.cu", f"multi_norm_finish<{t}>")(
            self._multi_grid(n + 1 if per_tensor else 1), (THREADS,),
            (table, _i64(n), _i64(n_chunks), _i32(kind), p, partial, out, _i32(per_tensor)))
        return out

    def clip_scale(self, xs: Sequence[Array], total: Array, max_norm: float) -> Literal[True] | None:
        """x *= min(max_norm / (total + 1e-6), 1) in place for every array, the coefficient computed on the
        device from the 1-element ``total`` of the arrays' dtype (no host sync); None when unsupported."""
        fl = self._float_list(xs)
        if fl is None:
            return None
        dt, sizes = fl
        if type(total) is not self.xp.ndarray or total.dtype != dt or total.size != 1:
            return None
        if not all(writable(x) for x in xs):
            return None
        table, n, n_chunks, chunk = self.tensor_table([xs], sizes)
        if n_chunks:
            self.fn("multi_tensor.cu", f"multi_clip_scale<{_TNAME[dt]}>")(
                self._multi_grid(n_chunks), self._multi_block(dt),
                (table, _i64(n), _i64(n_chunks), _i64(chunk), total.reshape(1), np.float64(max_norm)))
        return True

    def amp_unscale_(self, xs: Sequence[Array], found_inf: Array, inv_scale: Array) -> Literal[True] | None:
        """GradScaler's unscale in one launch: x *= inv_scale in place for every array, found_inf = 1 where any
        element is inf or NaN; both are 1-element float32 device arrays, read and written on the device (no
        sync). None when unsupported (other dtypes, strided arrays, read-only arrays)."""
        fl = self._float_list(xs)
        if fl is None:
            return None
        dt, sizes = fl
        nd, f32 = self.xp.ndarray, np.dtype(np.float32)
        for s in (found_inf, inv_scale):
            if type(s) is not nd or s.dtype != f32 or s.size != 1:
                return None
        if not all(writable(x) for x in xs):
            return None
        table, n, n_chunks, chunk = self.tensor_table([xs], sizes)
        if n_chunks:
            self.fn("multi_tensor.cu", f"multi_unscale<{_TNAME[dt]}>")(
                self._multi_grid(n_chunks), self._multi_block(dt),
                (table, _i64(n), _i64(n_chunks), _i64(chunk), found_inf.reshape(1), inv_scale.reshape(1)))
        return True

    def foreach_ternary(self, name: str, xs: Sequence[Array], ys: Sequence[Array] | None,
                        zs: Sequence[Array] | None, values: float | Sequence[float],
                        inplace: bool) -> list[Array] | None:
        """``name`` (lerp, addcmul, addcdiv, clamp) over lists in one launch: out = lerp(x, y, w),
        x + v * y (*|/) z, or clamp(x, -v, v), into x (``inplace``) or new arrays. ``values`` is one number or
        one per tensor. None when a list does not fit (mixed dtypes or shapes, strided arrays, overlaps)."""
        fl = self._float_list(xs)
        if fl is None:
            return None
        dt, sizes = fl
        xp = self.xp
        others = [r for r in (ys, zs) if r is not None]
        for r in others:
            if len(r) != len(xs) or self._contiguous_list(r, dt) is None:
                return None
            for x, y in zip(xs, r):
                if y.shape != x.shape:
                    return None
                # an operand overlapping the array written in place other than element for element would be
                # read after another block wrote it
                if inplace and self.ptr(y) != self.ptr(x) and xp.may_share_memory(x, y):
                    return None
        if inplace and not all(writable(x) for x in xs):
            return None
        if isinstance(values, (list, tuple)):
            vs = [float(v) for v in values]
        else:  # one number of any numeric type (a NumPy float32 is no float)
            vs = [float(cast(float, values))] * len(xs)
        if len(vs) != len(xs):
            return None
        outs = list(xs) if inplace else [xp.empty_like(x) for x in xs]
        roles: list[Sequence[Array] | None] = [xs, ys, zs, outs]
        table, n, n_chunks, chunk = self.tensor_table(roles, sizes)
        if n_chunks:
            per_tensor, row = self._per_tensor([(v,) for v in vs])
            w = row[0] if row else 0.0
            self.fn("multi_tensor.cu", f"foreach_ternary<{_TNAME[dt]}>")(
                self._multi_grid(n_chunks), self._multi_block(dt),
                (table, _i64(n), _i64(n_chunks), _i64(chunk), _i32(codes("multi_tensor.cu", "ForeachOp")[name]),
                 np.float64(w), per_tensor))
        return outs

    @staticmethod
    def _stream(seed: int, offset: int, rng_state: Array | None) -> tuple[Any, ...]:
        """The stream arguments of a Philox kernel: key, counter (low and high 64 bits) and the device state
        pointer. ``rng_state`` (a CUDA graph's copy of the generator's {seed, offset}, two uint64) makes the
        kernel read the key there and take ``offset`` relative to the stored offset; None passes a null pointer."""
        offset &= (1 << 128) - 1
        return (np.uint64(seed & 0xFFFFFFFFFFFFFFFF), np.uint64(offset & 0xFFFFFFFFFFFFFFFF), np.uint64(offset >> 64),
                np.uint64(0) if rng_state is None else rng_state)

    def philox_words(self, seed: int, offset: int, nblocks: int, rng_state: Array | None = None) -> Array:
        """(nblocks, 4) uint32 words of the Philox stream of ``seed`` from block ``offset``."""
        out = self.xp.empty((nblocks, 4), dtype=np.uint32)
        if nblocks:
            self.fn("random.cu", "philox_words")(self.grid(nblocks), (THREADS,),
                                                  (*self._stream(seed, offset, rng_state), _i64(nblocks), out))
        return out

    def uniform(self, seed: int, offset: int, n: int, dt: NpDtype, low: float,
                high: float, rng_state: Array | None = None) -> tuple[Array, int] | None:
        """``n`` uniforms of float ``dt`` (float32, float64, float16, bfloat16) in [low, high) and the blocks
        used, or None."""
        if dt not in _ALL_FLOATS:
            return None
        words = n * (2 if dt == F64 else 1)
        nb = (words + 3) // 4
        out = self.xp.empty(n, dtype=dt)
        if n:
            shift = low != 0.0 or high != 1.0
            # the scale and shift in the arithmetic type (float32 for the 16-bit types, as the NumPy body's)
            at = acc_dtype(dt).type
            with np.errstate(over="ignore"):
                scale, lo_v = at(high - low), at(low)
            self.fn("random.cu", f"uniform_forward<{_TNAME[dt]}>")(
                self.grid(n), (THREADS,),
                (*self._stream(seed, offset, rng_state), _i64(n), out, scale, lo_v, _i32(shift)))
        return out, nb

    def normal(self, seed: int, offset: int, n: int, dt: NpDtype, mean: float, std: float,
               rng_state: Array | None = None) -> tuple[Array, int] | None:
        """``n`` normals of float ``dt`` (scalar mean and std) and the blocks used, or None."""
        if dt not in _ALL_FLOATS:
            return None
        pairs = (n + 1) // 2
        wide = dt.itemsize == 8
        words = 2 * pairs * (2 if wide else 1)
        nb = (words + 3) // 4
        out = self.xp.empty(n, dtype=dt)
        if n:
            self.fn("random.cu", f"normal_forward<{_TNAME[dt]}>")(
                self.grid(pairs), (THREADS,),
                (*self._stream(seed, offset, rng_state), _i64(n), out, np.float64(mean), np.float64(std), _i32(wide)))
        return out, nb

    def dropout(self, seed: int, offset: int, x: Array, p: float, threshold: int,
                residual: Array | None = None, rng_state: Array | None = None) -> tuple[Array, int] | None:
        """``x`` with elements dropped by the stream of ``seed`` from block ``offset`` (element ``i`` kept when
        word ``i`` is below ``threshold``) and the rest scaled by ``1 / (1 - p)``, plus ``residual`` if given
        (same shape and dtype), in one pass; and the blocks used. None for another dtype or a residual that does
        not match."""
        xp = self.xp
        dt = x.dtype
        if dt not in _ALL_FLOATS or not 0.0 < p < 1.0:
            return None
        if residual is not None and (residual.dtype != dt or residual.shape != x.shape):
            return None
        n = x.size
        nb = (n + 3) // 4
        # the mask is a function of the logical (row-major) index, so a strided input is read as a C copy
        x = xp.ascontiguousarray(x)
        r = xp.ascontiguousarray(residual) if residual is not None else x
        y = xp.empty(x.shape, dtype=dt)
        if n == 0:
            return y, nb
        mode = (DROP_ADD if residual is not None else 0) | (DROP_VEC if self._aligned(x, r, y) else 0)
        # a thread owns one Philox block (4 elements), or two for a 128-bit pack of 8 halves; the scale is
        # rounded to the dtype, as the NumPy body's mask holds it, and passed in the arithmetic type
        per_thread = max(4, 16 // dt.itemsize)
        self.fn("random.cu", f"dropout_forward<{_TNAME[dt]}>")(
            self.grid((n + per_thread - 1) // per_thread), (THREADS,),
            (*self._stream(seed, offset, rng_state), _i64(n), x, r, y, np.uint64(threshold),
             acc_dtype(dt).type(dt.type(1.0 / (1.0 - p))), _i32(mode)))
        return y, nb

    def randint(self, seed: int, offset: int, n: int, low: int, high: int,
                rng_state: Array | None = None) -> tuple[Array, int]:
        """``n`` int64 integers in [low, high) and the blocks used."""
        span = high - low
        wide = span > 1 << 32
        nb = (n * (2 if wide else 1) + 3) // 4
        out = self.xp.empty(n, dtype=np.int64)
        if n:
            self.fn("random.cu", "randint_forward")(
                self.grid(n), (THREADS,),
                (*self._stream(seed, offset, rng_state), _i64(n), out, _i64(low), np.uint64(span & 0xFFFFFFFFFFFFFFFF),
                 _i32(wide)))
        return out, nb

    def embedding_backward(self, out: Array, idx: Array, grad: Array) -> Literal[True] | None:
        """out[idx[i], :] += grad[i, :] (in place) for a contiguous 2-d float ``out``; None when unsupported. The
        16-bit types sum each row's contributions in float32 and round once (see embedding.cu)."""
        xp = self.xp
        dt = out.dtype
        if dt not in _ALL_FLOATS or out.ndim != 2 or not out.flags.c_contiguous or idx.dtype != np.int64:
            return None
        n_idx = idx.size
        dim = out.shape[1]
        if grad.dtype != dt or grad.shape != idx.shape + (dim,):
            return None
        if n_idx == 0 or dim == 0:
            return True
        grad = xp.ascontiguousarray(grad)
        idx = xp.ascontiguousarray(idx).reshape(-1)
        rows = out.shape[0]
        bad = xp.zeros(1, dtype=np.int32)
        sizes = (_i64(n_idx), _i64(dim), _i64(rows))
        if dt in _HALVES:
            # segments of equal rows: -1 and rows - 1 name one row, so indices are wrapped before sorting; the
            # stable sort keeps each row's contributions in their order (the CPU's order of additions)
            key = xp.where(idx < 0, idx + rows, idx)
            order = xp.argsort(key, kind="stable") if xp is np else xp.argsort(key)
            self.fn("embedding.cu", f"embedding_backward_sorted<{_TNAME[dt]}>")(
                self.grid(n_idx * dim), (THREADS,), (key[order], order, grad, out, bad, *sizes))
        else:
            self.fn("embedding.cu", f"embedding_backward<{_TNAME[dt]}>")(
                self.grid(n_idx * dim), (THREADS,), (idx, grad, out, bad, *sizes))
        self.checks.add(bad, _embedding_range_error)
        return True


# ---------------------------------------------------------------------- attention
class _AttentionKernels(_StepKernels):
    """Fused scaled-dot-product attention (attention.cu): forward, and backward from the saved output and LSE."""

    ATTN_THREADS = 256
    ATTN_WIDTHS = (32, 64, 128)

    @functools.cached_property
    def _attn_flags(self) -> dict[str, int]:
        return {name: 1 << code for name, code in codes("attention.cu", "AttnFlag").items()}

    @functools.cached_property
    def _attn_no_mask(self) -> Array:
        """The uint8 mask argument of calls without a bool mask (never read; a pointer must be a real allocation)."""
        return self.xp.zeros(1, dtype=np.uint8)

    @staticmethod
    def _attn_tile(dt: NpDtype) -> int:
        return _loader.define_int("attention.cu", "ATTN_TILE_DOUBLE" if dt == F64 else "ATTN_TILE_FLOAT")

    def _attn_operand(self, a: Array, batch: Shape) -> tuple[Array, tuple[int, int, int]]:
        """``a`` as (B, H, rows, D) with element strides (b, h, row): a 4-d view whose last dim is contiguous is
        read in place (the heads of a (B, T, H, D) projection, transposed); anything else is copied."""
        item = a.itemsize
        if a.ndim == 4 and a.strides[-1] == item and all(st % item == 0 for st in a.strides):
            return a, (a.strides[0] // item, a.strides[1] // item, a.strides[2] // item)
        c = self.xp.ascontiguousarray(a).reshape((1, math.prod(batch)) + a.shape[-2:])
        return c, (c.strides[0] // item, c.strides[1] // item, c.strides[2] // item)

    def _attn_mask(self, mask: Array | None, batch: Shape, L: int, S: int, dt: NpDtype,
                   out: Array) -> tuple[Array, Array, tuple[int, ...], int] | None:
        """(float mask or a stand-in, uint8 mask or a stand-in, its element strides (b, h, q, k), flag bits)."""
        xp = self.xp
        dummy_u8 = self._attn_no_mask
        if mask is None:
            return out, dummy_u8, (0, 0, 0, 0), 0
        is_bool = mask.dtype == _BOOL
        if not is_bool and mask.dtype not in _ALL_FLOATS:
            return None
        if not is_bool and mask.dtype != dt:
            mask = mask.astype(dt)
        try:
            m = xp.broadcast_to(mask, batch + (L, S))
        except ValueError:
            return None
        if len(batch) != 2:
            m = m.reshape((1, math.prod(batch), L, S))
        if is_bool:
            m = m.view(np.uint8)
        item = m.itemsize
        st = tuple(x // item for x in m.strides)
        if is_bool:
            return out, m, st, self._attn_flags["bool_mask"]
        return m, dummy_u8, st, self._attn_flags["float_mask"]

    @staticmethod
    def _attn_smem(dt: NpDtype, tile: int, width: int) -> dict[str, int]:
        """Dynamic shared memory (bytes) of each attention kernel: Q/K/V/dO tiles (one operand per lane padded
        by 16 bytes a row), the P / dS tiles and the per-row LSE and delta, all in the arithmetic type (float32
        for the 16-bit types)."""
        dt = acc_dtype(dt)
        padded = width + 16 // dt.itemsize
        elems = {"forward": tile * width + 2 * tile * padded + tile * tile,
                 "dkv": 2 * tile * width + 2 * tile * padded + 2 * tile * tile + 2 * tile,
                 "dq": 2 * tile * width + 2 * tile * padded + tile * tile + 2 * tile}
        return {name: n * dt.itemsize for name, n in elems.items()}

    def _attn_launch(self, kernel: str, fn_args: tuple[Any, ...], work: int, smem: int) -> None:
        self.launch_dynamic("attention.cu", kernel, (max(1, min(work, self.max_blocks)),), (self.ATTN_THREADS,),
                            fn_args, smem)

    def _attn_setup(self, q: Array, k: Array, v: Array, mask: Array | None, causal: bool, scale: float,
                    dropout_p: float, seed: int, offset: int, out: Array,
                    rng_state: Array | None) -> dict[str, Any] | None:
        dt = q.dtype
        batch = q.shape[:-2]
        L, D = q.shape[-2:]
        S, DV = v.shape[-2:]
        qv, sq = self._attn_operand(q, batch)
        kv, sk = self._attn_operand(k, batch)
        vv, sv = self._attn_operand(v, batch)
        B, H = qv.shape[:2]
        got = self._attn_mask(mask, batch, L, S, dt, out)
        if got is None:
            return None
        fmask, bmask, sm, flags = got
        if causal:
            flags |= self._attn_flags["causal"]
        keep_below = 0
        if dropout_p > 0.0:
            flags |= self._attn_flags["dropout"]
            # element kept when its word w has w * 2^-32 < 1 - p (rand_bernoulli's rule), i.e. w < ceil((1 - p) 2^32)
            keep_below = math.ceil((1.0 - dropout_p) * 4294967296.0)
        width = next(w for w in self.ATTN_WIDTHS if max(D, DV) <= w)
        meta = self.meta(tuple(sq + sk + sv + sm), ())
        at = acc_dtype(dt).type
        shape_args = (_i64(B * H), _i32(H), _i32(L), _i32(S), _i32(D), _i32(DV), at(scale), _i32(flags),
                      *self._stream(seed, offset, rng_state), np.uint64(keep_below), at(1.0 / (1.0 - dropout_p)))
        tile = self._attn_tile(dt)
        smem = self._attn_smem(dt, tile, width)
        if max(smem.values()) > self._smem_optin:
            return None  # declined in the forward: its backward could not run (head dim 128 takes 162.5 KiB)
        return {"in": (qv, kv, vv, fmask, bmask, meta), "shape": shape_args, "BH": B * H, "L": L, "S": S, "DV": DV,
                "width": width, "tile": tile, "t": _TNAME[dt], "smem": smem}

    @staticmethod
    def _attn_supported(q: Array, k: Array, v: Array, xp: Any) -> bool:
        dt = q.dtype
        if dt not in _ALL_FLOATS or k.dtype != dt or v.dtype != dt:
            return False
        if not all(isinstance(a, xp.ndarray) for a in (q, k, v)) or q.ndim < 2 or k.ndim != q.ndim or v.ndim != q.ndim:
            return False
        batch = q.shape[:-2]
        L, D = q.shape[-2:]
        S, DV = v.shape[-2:]
        # L and S index the kernels' 32-bit row arithmetic
        return bool(k.shape == batch + (S, D) and v.shape[:-2] == batch and 0 < D <= 128 and 0 < DV <= 128
                    and 0 < L < 1 << 31 and 0 < S < 1 << 31 and math.prod(batch) > 0)

    def attention_forward(self, q: Array, k: Array, v: Array, mask: Array | None, causal: bool, scale: float,
                          dropout_p: float, seed: int, offset: int,
                          rng_state: Array | None = None) -> tuple[Array, Array] | None:
        """(output (*batch, L, DV), per-row log2-sum-exp2 (B·H, L), float32 for the 16-bit types) of
        softmax(q k^T scale + mask) v with dropout; None when the kernels do not cover the call (another dtype, a
        head dim over 128, batch dims that differ between q, k and v, an empty dim)."""
        if not self._attn_supported(q, k, v, self.xp):
            return None
        dt = q.dtype
        out = self.xp.empty(q.shape[:-1] + v.shape[-1:], dtype=dt)
        a = self._attn_setup(q, k, v, mask, causal, scale, dropout_p, seed, offset, out, rng_state)
        if a is None:
            return None
        BH, L, tile, width = a["BH"], a["L"], a["tile"], a["width"]
        lse = self.xp.empty((BH, L), dtype=acc_dtype(dt))
        self._attn_launch(f"attention_forward_d{width}<{a['t']}>", (*a["in"], out, lse, *a["shape"]),
                          BH * ((L + tile - 1) // tile), a["smem"]["forward"])
        return out, lse

    def attention_backward(self, g: Array, q: Array, k: Array, v: Array, out: Array, lse: Array,
                           mask: Array | None, causal: bool, scale: float, dropout_p: float, seed: int,
                           offset: int, rng_state: Array | None = None) -> tuple[Array, Array, Array] | None:
        """(dq, dk, dv) of ``attention_forward`` from the upstream gradient ``g`` and the forward's output and LSE;
        the dropout mask is regenerated from (seed, offset) (and the forward's ``rng_state``)."""
        if not self._attn_supported(q, k, v, self.xp) or g.dtype != q.dtype or g.shape != out.shape:
            return None
        xp = self.xp
        dt = q.dtype
        dq = xp.empty(q.shape, dtype=dt)
        a = self._attn_setup(q, k, v, mask, causal, scale, dropout_p, seed, offset, dq, rng_state)
        if a is None:
            return None
        BH, L, S, DV, tile, width, t = a["BH"], a["L"], a["S"], a["DV"], a["tile"], a["width"], a["t"]
        dout = xp.ascontiguousarray(g)
        delta = xp.empty((BH, L), dtype=acc_dtype(dt))
        warps = self.ATTN_THREADS // 32
        self.fn("attention.cu", f"attention_backward_prep<{t}>")(
            (max(1, min((BH * L + warps - 1) // warps, self.max_blocks)),), (self.ATTN_THREADS,),
            (dout, xp.ascontiguousarray(out), delta, _i64(BH * L), _i32(DV)))
        dk = xp.empty(k.shape, dtype=dt)
        dv = xp.empty(v.shape, dtype=dt)
        self._attn_launch(f"attention_backward_dkv_d{width}<{t}>", (*a["in"], dout, lse, delta, dk, dv, *a["shape"]),
                          BH * ((S + tile - 1) // tile), a["smem"]["dkv"])
        self._attn_launch(f"attention_backward_dq_d{width}<{t}>", (*a["in"], dout, lse, delta, dq, *a["shape"]),
                          BH * ((L + tile - 1) // tile), a["smem"]["dq"])
        return dq, dk, dv


class Launcher(_RowKernels, _AttentionKernels):
    """Kernel launches for one device: ``xp`` (NumPy or CuPy), ``module_cls`` (``sim.SimModule`` or
    ``cupy.RawModule``), ``ptr(array)`` (its device address), ``max_blocks`` (grid cap; grid-stride loops cover
    the rest), ``upload`` (host int64/uint64/float64 array -> device array) and ``sms`` (the device's SM count)."""
