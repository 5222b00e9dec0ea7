"""The primitive table every backend provides.

A Backend owns an array module ``xp`` (NumPy or CuPy) and implements each primitive on it. The table is
split by family into mixins (``_elementwise.py``, ``_reduce.py``, ``_shape.py``, ``_index.py``,
``_linalg.py``, ``_random.py``) so that one file holds one family; the bodies are written once against
``xp`` and serve NumPy and CuPy alike. A backend that has a faster way (a CUDA RawKernel) overrides the
primitive; nothing above this layer changes.
"""
import numpy as np

from .._dtype import bfloat16
from ._elementwise import ElementwiseMixin
from ._index import IndexMixin
from ._linalg import LinalgMixin
from ._random import RandomMixin
from ._reduce import ReduceMixin
from ._shape import ShapeMixin


class Backend(ElementwiseMixin, ReduceMixin, ShapeMixin, IndexMixin, LinalgMixin, RandomMixin):
    """Array primitives for one device. Subclasses set ``xp`` and ``device``."""

    xp = np
    name = "base"
    device = None

    # ---------------------------------------------------------------- arrays in and out
    def np_dtype(self, dtype):
        if dtype.np_dtype is None:
            raise TypeError(f"{dtype} is not supported by the {self.name} backend (install ml_dtypes for bfloat16)")
        return dtype.np_dtype

    def asarray(self, obj, np_dtype=None, copy=False):
        """An array on this device from Python data, NumPy or another array of this backend."""
        if copy:
            return self.xp.array(obj, dtype=np_dtype, copy=True)
        return self.xp.asarray(obj, dtype=np_dtype)

    def to_numpy(self, arr):
        return np.asarray(arr)

    def empty(self, shape, np_dtype):
        return self.xp.empty(shape, dtype=np_dtype)

    def zeros(self, shape, np_dtype):
        return self.xp.zeros(shape, dtype=np_dtype)

    def ones(self, shape, np_dtype):
        return self.xp.ones(shape, dtype=np_dtype)

    def full(self, shape, value, np_dtype):
        return self.xp.full(shape, value, dtype=np_dtype)

    def arange(self, start, end, step, np_dtype):
        return self.xp.arange(start, end, step, dtype=np_dtype)

    def linspace(self, start, end, steps, np_dtype):
        return self.xp.linspace(start, end, steps, dtype=np_dtype)

    def eye(self, n, m, np_dtype):
        return self.xp.eye(n, m, dtype=np_dtype)

    def copy(self, arr):
        """A contiguous (C-order) copy."""
        return self.xp.array(arr, copy=True, order="C")

    def ascontiguous(self, arr):
        return self.xp.ascontiguousarray(arr)

    def astype(self, arr, np_dtype, copy=False):
        if not copy and arr.dtype == np_dtype:
            return arr
        return arr.astype(np_dtype)

    def copy_into(self, dst, src):
        """dst[...] = src with broadcasting and casting (the data write of every in-place op)."""
        if dst.flags.writeable is False:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single "
                "memory location. Please clone() the tensor before performing the operation.")
        self.xp.copyto(dst, src, casting="unsafe")

    def shares_memory(self, a, b):
        return self.xp.shares_memory(a, b)

    def is_contiguous(self, arr):
        return arr.flags.c_contiguous

    def strides(self, arr):
        item = arr.itemsize
        return tuple(s // item for s in arr.strides)

    def data_ptr(self, arr):
        return arr.__array_interface__["data"][0]

    def synchronize(self):
        pass

    def supports(self, dtype):
        return dtype.np_dtype is not None and (dtype is not bfloat16 or self.xp is np)
