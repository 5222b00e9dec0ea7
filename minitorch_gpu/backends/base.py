"""The primitive table every backend provides.

A Backend owns an array module ``xp`` (NumPy or CuPy) and implements each primitive on it. The table is
split by family into mixins (``_elementwise.py``, ``_reduce.py``, ``_shape.py``, ``_index.py``,
``_linalg.py``, ``_random.py``, ``_nn.py``, ``_cnn.py``, ``_rnn.py``, ``_special.py``...) so that one file holds one family; the bodies are written once against
``xp`` and serve NumPy and CuPy alike. A backend that has a faster way (a CUDA RawKernel) overrides the
primitive; nothing above this layer changes.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from .._device import device as Device
from .._dtype import bfloat16
from .._dtype import dtype as DType
from ._cnn import CnnMixin
from ._ctc import CTCMixin
from ._elementwise import ElementwiseMixin
from ._index import IndexMixin
from ._linalg import LinalgMixin
from ._nn import NNMixin
from ._optim import OptimMixin
from ._random import RandomMixin
from ._reduce import ReduceMixin
from ._rnn import RNNMixin
from ._shape import ShapeMixin
from ._special import SpecialMixin
from ._types import Array, NpDtype, Scalar, Shape


# a storage's byte size is a signed 64-bit number in PyTorch; a larger one is refused before allocating
_MAX_STORAGE_BYTES = (1 << 63) - 1


class Backend(ElementwiseMixin, SpecialMixin, ReduceMixin, ShapeMixin, IndexMixin, LinalgMixin, RandomMixin,
              OptimMixin, NNMixin, CnnMixin, RNNMixin, CTCMixin):
    """Array primitives for one device. Subclasses set ``xp`` and ``device``."""

    xp: Any = np
    name = "base"
    device: Device | None = None

    # ---------------------------------------------------------------- arrays in and out
    def np_dtype(self, dtype: DType) -> NpDtype:
        npd: NpDtype = dtype.np_dtype
        return npd

    def asarray(self, obj: Any, np_dtype: NpDtype | None = None, copy: bool = False) -> Array:
        """An array on this device from Python data, NumPy or another array of this backend."""
        if copy:
            return self.xp.array(obj, dtype=np_dtype, copy=True)
        return self.xp.asarray(obj, dtype=np_dtype)

    # whether reading an array on the host waits for a device (a GPU, or the simulator standing for one): such
    # reads go through ``to_numpy``, where the sync debug mode and the counting mode see them
    reads_wait = False

    # the simulated GPU counts the memory its tensors hold (``mt.cuda.memory_allocated``); see
    # ``backends/cuda/memory.py``
    counts_memory = False

    def count_memory(self, arr: Array) -> None:
        pass

    def to_numpy(self, arr: Array) -> npt.NDArray[Any]:
        return np.asarray(arr)

    def empty(self, shape: Shape, np_dtype: NpDtype) -> Array:
        return self._allocate(self.xp.empty, shape, np_dtype)

    def zeros(self, shape: Shape, np_dtype: NpDtype) -> Array:
        return self._allocate(self.xp.zeros, shape, np_dtype)

    def ones(self, shape: Shape, np_dtype: NpDtype) -> Array:
        return self._allocate(self.xp.ones, shape, np_dtype)

    def full(self, shape: Shape, value: Scalar, np_dtype: NpDtype) -> Array:
        return self._allocate(lambda shape, dtype: self.xp.full(shape, value, dtype=dtype), shape, np_dtype)

    def _allocate(self, make: Callable[..., Array], shape: Shape, np_dtype: NpDtype) -> Array:
        """``make(shape, dtype=np_dtype)``, with PyTorch's errors (RuntimeError) where the array library raises
        its own (MemoryError, or a ValueError for a size past the address space)."""
        try:
            return make(shape, dtype=np_dtype)
        except (MemoryError, ValueError) as e:
            nbytes = math.prod(shape) * np.dtype(np_dtype).itemsize
            if nbytes > _MAX_STORAGE_BYTES:
                raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}") from None
            if not isinstance(e, MemoryError):
                raise
            raise RuntimeError(self._out_of_memory(nbytes)) from None

    def _out_of_memory(self, nbytes: int) -> str:
        """The message of an allocation the device could not serve (PyTorch's words for it)."""
        if self.device is not None and self.device.type == "cuda":
            return f"CUDA out of memory. Tried to allocate {nbytes} bytes."
        return (f"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you "
                f"tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)")

    def arange(self, start: Scalar, step: Scalar, n: int, np_dtype: NpDtype, integral: bool) -> Array:
        """``n`` values ``start + i * step``: in int64 for integral results (exact for large values), else in
        float64 and rounded once (PyTorch's CPU arange accumulates in double too)."""
        xp = self.xp
        r = xp.arange(n, dtype=xp.int64 if integral else xp.float64)
        if step != 1:
            r *= step
        if start:
            r += start
        return r.astype(np_dtype, copy=False)

    def linspace(self, start: Scalar, end: Scalar, steps: int, np_dtype: NpDtype, integral: bool) -> Array:
        """PyTorch's symmetric linspace: the first half counts up from ``start``, the second half down from
        ``end``, so both ends are exact. Float results are computed in their own precision, integral ones
        in float64 and truncated, as PyTorch does."""
        xp = self.xp
        cdt = xp.float64 if integral else np_dtype
        if steps == 1:
            return xp.full((1,), start, dtype=cdt).astype(np_dtype, copy=False)
        s = xp.asarray(start, dtype=cdt)
        e = xp.asarray(end, dtype=cdt)
        step = ((e - s) / xp.asarray(steps - 1, dtype=cdt)).astype(cdt)
        idx = xp.arange(steps, dtype=cdt)
        half = steps // 2
        out = xp.empty(steps, dtype=cdt)
        out[:half] = s + step * idx[:half]
        out[half:] = e - step * (xp.asarray(steps - 1, dtype=cdt) - idx[half:])
        return out.astype(np_dtype, copy=False)

    def logspace(self, start: Scalar, end: Scalar, steps: int, base: Scalar, np_dtype: NpDtype) -> Array:
        xp = self.xp
        exps = self.linspace(start, end, steps, xp.float64, False)
        return xp.power(base, exps).astype(np_dtype, copy=False)

    def eye(self, n: int, m: int, np_dtype: NpDtype) -> Array:
        return self.xp.eye(n, m, dtype=np_dtype)

    def tri_indices(self, row: int, col: int, offset: int, upper: bool, np_dtype: NpDtype) -> Array:
        """(2, k) coordinates of the lower (or upper) triangle of a row x col matrix, row-major."""
        xp = self.xp
        r = xp.arange(row, dtype=xp.int64)[:, None]
        c = xp.arange(col, dtype=xp.int64)[None, :]
        mask = (c - r >= offset) if upper else (c - r <= offset)
        rows, cols = xp.nonzero(mask)
        return xp.stack([rows, cols]).astype(np_dtype, copy=False)

    def fill(self, arr: Array, value: Scalar) -> None:
        """Write one value into every element of ``arr`` (in place)."""
        if not self.writable(arr):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single "
                "memory location. Please clone() the tensor before performing the operation.")
        arr.fill(value)

    def copy_preserve(self, arr: Array) -> Array:
        """A copy keeping the layout (strides order) of a dense array, else a C-contiguous copy: PyTorch's
        ``preserve_format``."""
        if arr.flags.c_contiguous:
            return arr.copy(order="C")
        if self._dense(arr):
            return self.xp.array(arr, copy=True, order="K")
        return arr.copy(order="C")

    def copy_channels_last(self, arr: Array) -> Array:
        """A copy of a 4-d NCHW array laid out as NHWC in memory (same logical shape)."""
        t = self.xp.ascontiguousarray(arr.transpose(0, 2, 3, 1))
        return t.transpose(0, 3, 1, 2)

    @staticmethod
    def _dense(arr: Array) -> bool:
        """Whether the elements tile one block of memory with no gaps or overlaps, in some dim order."""
        item = arr.itemsize
        dims = sorted((abs(st), n) for st, n in zip(arr.strides, arr.shape) if n != 1)
        expected = item
        for st, n in dims:
            if st != expected:
                return False
            expected *= n
        return all(st >= 0 for st in arr.strides)

    def copy(self, arr: Array) -> Array:
        """A contiguous (C-order) copy."""
        return arr.copy(order="C")

    def ascontiguous(self, arr: Array) -> Array:
        return self.xp.ascontiguousarray(arr)

    def compiled_erfc(self, x: Array) -> Array | None:
        """erfc of a float array by a compiled loop, or None where the backend has none (the op then composes it
        from erf and a continued fraction)."""
        return None

    def matmul_operand(self, arr: Array) -> Array:
        """A copy of the 2-D ``arr`` laid out for use as the right operand of many products (an RNN's hidden
        weights over the steps of a sequence): row-major here; a backend may pad its rows."""
        return self.ascontiguous(arr)

    def astype(self, arr: Array, np_dtype: NpDtype, copy: bool = False) -> Array:
        if not copy and arr.dtype == np_dtype:
            return arr
        floating = arr.dtype.kind == "f" or arr.dtype == bfloat16.np_dtype  # ml_dtypes' bfloat16 is kind "V"
        if floating and np_dtype.kind in "iu" and np_dtype.itemsize < 8:
            # PyTorch converts floats to narrow integers through int64 (so -1.5 -> uint8 gives 255);
            # casting directly is undefined in C and platform-dependent in NumPy
            with self._quiet():
                return arr.astype(self.xp.int64).astype(np_dtype)
        if floating and np_dtype.kind in "iuf":
            # float->float downcasts overflow to inf silently in PyTorch; NumPy would warn
            with self._quiet():
                return arr.astype(np_dtype)
        return arr.astype(np_dtype)

    def _quiet(self) -> contextlib.AbstractContextManager[Any]:
        """Silence NumPy's 'invalid value in cast' warning: PyTorch casts NaN/inf to integers silently."""
        # CuPy never warns about casts, so NumPy's switch is the only one needed
        return np.errstate(invalid="ignore", over="ignore")

    def copy_into(self, dst: Array, src: Array | Scalar) -> None:
        """dst[...] = src with broadcasting and casting (the data write of every in-place op)."""
        if not self.writable(dst):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single "
                "memory location. Please clone() the tensor before performing the operation.")
        sdt = getattr(src, "dtype", None)
        if sdt is not None and sdt.kind == "f" and dst.dtype.kind in "iu":
            src = self.astype(src, dst.dtype)  # the same float->int conversion as ``to()``
        self.xp.copyto(dst, src, casting="unsafe")

    def shares_memory(self, a: Array, b: Array) -> bool:
        # CuPy answers False for any 0-d operand; a one-element view of the same memory is equivalent
        return bool(self.xp.shares_memory(a.reshape(1) if a.ndim == 0 else a, b.reshape(1) if b.ndim == 0 else b))

    def is_contiguous(self, arr: Array) -> bool:
        return bool(arr.flags.c_contiguous)

    def strides(self, arr: Array) -> Shape:
        item = arr.itemsize
        return tuple(s // item for s in arr.strides)

    def data_ptr(self, arr: Array) -> int:
        return int(arr.__array_interface__["data"][0])

    def synchronize(self) -> None:
        pass

    def supports(self, dtype: DType) -> bool:
        return dtype is not bfloat16 or self.xp is np
