"""What stands in for the array of a sparse tensor, and the error every unsupported op raises.

A sparse tensor is a Tensor subclass, so the dense ops accept it as an argument; they read ``t._data``. For a
sparse tensor that is a :class:`NoStorage`: it answers the metadata every layer reads (shape, ndim, size,
dtype, itemsize) and refuses everything else, so a dense op given a sparse operand raises PyTorch's
"Could not run 'aten::<op>' with arguments from the 'SparseCPU' backend" instead of computing with garbage.
Nothing is added to the dense path: the refusal happens where the dense op touches the array.
"""
from __future__ import annotations

import re
import sys
from types import FrameType
from typing import Any, NoReturn

from ..autograd.node import Op

__all__ = ["NoStorage", "unsupported", "aten_name"]

_PACKAGE = __name__.split(".")[0]
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def aten_name(node_cls_name: str) -> str:
    """The op's name from its backward node's (PyTorch names one after the other: ``MmBackward0`` -> ``mm``)."""
    return _CAMEL.sub("_", _BACKWARD_SUFFIX.sub("", node_cls_name)).lower()


def unsupported(op: str | None, device_type: str) -> NotImplementedError:
    """PyTorch's error for an op that has no sparse implementation (NotImplementedError is a RuntimeError)."""
    backend = "SparseCUDA" if device_type == "cuda" else "SparseCPU"
    what = f"'aten::{op}'" if op else "this operator"
    return NotImplementedError(
        f"Could not run {what} with arguments from the '{backend}' backend. This operator is not supported for "
        "sparse COO tensors; convert the operand with .to_dense() first.")


def _current_op() -> str | None:
    """The op a dense array access happened in: the innermost built-in op's ``forward`` on the stack, else
    the outermost public function of this package the user called. Only the error path walks the stack."""
    frame: FrameType | None = sys._getframe(2)
    outer = None
    while frame is not None:
        code = frame.f_code
        if code.co_name == "forward":
            node = frame.f_locals.get("self")
            if isinstance(node, Op):
                return aten_name(type(node).__name__)
        if frame.f_globals.get("__name__", "").split(".")[0] == _PACKAGE and not code.co_name.startswith("_"):
            outer = code.co_name
        frame = frame.f_back
    return outer


class NoStorage:
    """The ``_data`` of a tensor without strided storage: metadata only, every other use refused."""

    __slots__ = ("shape", "ndim", "size", "dtype", "itemsize", "device_type")

    def __init__(self, shape: tuple[int, ...], np_dtype: Any, device_type: str) -> None:
        self.shape = shape
        self.ndim = len(shape)
        n = 1
        for s in shape:
            n *= s
        self.size = n
        self.dtype = np_dtype
        self.itemsize = np_dtype.itemsize
        self.device_type = device_type

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise unsupported(_current_op(), self.device_type)

    def __getattr__(self, name: str) -> NoReturn:
        # reached only for attributes the slots do not hold: array methods, ``__array_interface__``, ...
        raise unsupported(_current_op(), self.device_type)

    # NumPy and CuPy find these on the type, never through __getattr__
    __array__ = __array_ufunc__ = __array_function__ = _refuse
    __len__ = __iter__ = __getitem__ = __setitem__ = __bool__ = __float__ = __int__ = __index__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __matmul__ = __rmatmul__ = __neg__ = __pow__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
