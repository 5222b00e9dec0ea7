"""Types at the dispatch layer's boundary, shared by every backend file.

One primitive body serves NumPy and CuPy arrays alike (the backend's ``xp``), so an array is typed as
``Array`` (``Any``): naming ``numpy.ndarray`` would be wrong for CuPy, and CuPy ships no type stubs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

Array: TypeAlias = Any
"""A NumPy or CuPy array owned by one backend."""

NpDtype: TypeAlias = "np.dtype[Any]"
"""An array library dtype (NumPy's dtype objects serve CuPy too)."""

Shape: TypeAlias = tuple[int, ...]

Axes: TypeAlias = "tuple[int, ...] | None"
"""The axes a reduction runs over: None for every axis, else non-negative ints the caller has checked."""

AxisArg: TypeAlias = "int | tuple[int, ...] | None"
"""The array libraries' ``axis`` argument, which the simple reductions pass through: one, several or every axis."""

Scalar: TypeAlias = "bool | int | float"
"""A Python number."""

Operand: TypeAlias = Any
"""An array of this backend or a Python number standing in for one (NumPy's and CuPy's weak scalars)."""


Saved: TypeAlias = "dict[str, Array]"
"""The state a fused forward primitive hands to its backward primitive; callers keep it and never look inside."""


class PrimitiveHost:
    """The base of every primitive family (mixin): what one family may use of the others.

    The families are mixins that only the ``Backend`` class puts together, yet their bodies call each other
    (cross-entropy calls ``binary``, ``take`` and ``sum``). The declarations below tell the type checker which
    primitives a family may rely on and with which signature; the real definitions in the other families
    override them, so a checker also verifies that the two agree. At run time the class is empty.
    """

    xp: Any  # the array module, numpy or cupy (no stubs for the latter)
    name: str
    reads_wait: bool  # reading an array on the host waits for a device (see Backend)

    if TYPE_CHECKING:
        # arrays in and out (base.py)
        def to_numpy(self, arr: Array) -> np.ndarray[Any, Any]: ...
        def astype(self, arr: Array, np_dtype: NpDtype, copy: bool = False) -> Array: ...
        def copy(self, arr: Array) -> Array: ...
        def empty(self, shape: Shape, np_dtype: NpDtype) -> Array: ...
        def ones(self, shape: Shape, np_dtype: NpDtype) -> Array: ...
        def zeros(self, shape: Shape, np_dtype: NpDtype) -> Array: ...
        def strides(self, arr: Array) -> Shape: ...

        # elementwise (_elementwise.py)
        def unary(self, name: str, x: Array, out: Array | None = None) -> Array: ...
        def binary(self, name: str, a: Operand, b: Operand, out: Array | None = None) -> Array: ...
        def where(self, cond: Array, a: Operand, b: Operand) -> Array: ...

        # reductions (_reduce.py)
        def sum(self, x: Array, axis: AxisArg = None, keepdims: bool = False,
                dtype: NpDtype | None = None) -> Array: ...
        def mean(self, x: Array, axis: Axes = None, keepdims: bool = False) -> Array: ...
        def amax(self, x: Array, axis: AxisArg = None, keepdims: bool = False) -> Array: ...
        def max_dim(self, x: Array, axis: int, keepdims: bool = False) -> tuple[Array, Array]: ...
        def _exp_rows(self, x: Array, axis: int, safe: bool = False,
                      least_size: int = ...) -> tuple[Array, Array, Any] | None: ...
        def softmax_backward(self, y: Array, g: Array, axis: int) -> Array: ...

        # shapes (_shape.py), indexing (_index.py), products (_linalg.py)
        def reshape(self, x: Array, shape: int | Shape) -> Array: ...
        def tri_mask(self, rows: int, cols: int, k: int, fill: Scalar | None = None,
                     np_dtype: NpDtype | None = None) -> Array: ...
        def getitem(self, x: Array, index: Any) -> Array: ...
        def setitem(self, x: Array, index: Any, value: Operand) -> None: ...
        def take(self, x: Array, index: Array) -> Array: ...
        def gather(self, x: Array, dim: int, index: Array) -> Array: ...
        def scatter_into(self, out: Array, dim: int, index: Array, src: Operand,
                         reduce: ScatterMode | None = None) -> None: ...
        def index_range(self, idx: Array) -> tuple[int, int]: ...
        def arange_index(self, n: int) -> Array: ...
        def matmul(self, a: Array, b: Array, transpose_a: bool = False, transpose_b: bool = False,
                   bias: Array | None = None) -> Array: ...


if TYPE_CHECKING:
    from ._index import ScatterMode


def writable(arr: Array) -> bool:
    """False for an array whose elements overlap in memory (a broadcast view), which must not be written.
    NumPy marks such views read-only; CuPy has no ``writeable`` flag, so zero strides tell."""
    fl = arr.flags
    if getattr(fl, "writeable", True) is False:
        return False
    # a C-contiguous array has no zero stride over a dim longer than 1: the common case needs no stride walk
    return getattr(fl, "c_contiguous", False) or arr.size <= 1 or not any(
        st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape))
