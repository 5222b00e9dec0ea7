"""``torch.sparse``: sparse COO tensors (``mt.sparse_coo_tensor``, ``dense.to_sparse()``) and their ops.

``SparseTensor`` (``coo.py``) subclasses Tensor and holds an indices and a values tensor; ``ops.py`` holds what it
computes. This module binds those ops as its methods and makes every other Tensor method refuse a sparse tensor
with PyTorch's error, so the dense classes and their hot path carry no sparse checks. A dense op given a sparse
argument refuses it where it touches the array (``_storage.py``).
"""
from typing import Any

from .._layout import layout, sparse_coo, strided
from ..tensor import Tensor
from . import ops as _ops
from ._storage import unsupported
from .coo import SparseTensor, sparse_coo_tensor
from .ops import log_softmax, mm, softmax, sum

__all__ = ["SparseTensor", "sparse_coo_tensor", "mm", "sum", "softmax", "log_softmax", "layout", "strided",
           "sparse_coo"]


def _transpose(self: SparseTensor, dim0: int, dim1: int) -> SparseTensor:
    return _ops.transpose(self, dim0, dim1)


def _mul(self: SparseTensor, other: Any) -> SparseTensor:
    return _ops.mul(self, other)


def _add(self: SparseTensor, other: Any, *, alpha: Any = 1) -> SparseTensor:
    return _ops.add(self, other, alpha=alpha)


def _radd(self: SparseTensor, other: Any) -> Tensor:
    # dense + sparse is dense, as in PyTorch (a number + sparse is refused by add)
    if isinstance(other, Tensor) and not other.is_sparse:
        return other + self.to_dense()
    return _ops.add(self, other)


def _rsub(self: SparseTensor, other: Any) -> Tensor:
    if isinstance(other, Tensor) and not other.is_sparse:
        return other - self.to_dense()
    raise unsupported("sub", self.device.type)


def _mm(self: SparseTensor, mat2: Tensor) -> Tensor:
    return _ops._spmm(self, mat2, _ops.MmBackward0)


_METHODS: dict[str, Any] = {
    "t": _ops.t, "T": property(_ops.t), "mT": property(lambda self: _ops.transpose(self, -2, -1)),
    "transpose": _transpose, "swapaxes": _transpose, "swapdims": _transpose,
    "mul": _mul, "multiply": _mul, "__mul__": _mul, "__rmul__": _mul,
    "div": _ops.div, "divide": _ops.div, "true_divide": _ops.div, "__truediv__": _ops.div,
    "neg": _ops.neg, "negative": _ops.neg, "__neg__": _ops.neg,
    "add": _add, "__add__": _add, "__radd__": _radd, "__rsub__": _rsub,
    "sub": _ops.sub, "subtract": _ops.sub, "__sub__": _ops.sub,
    "sum": _ops.sum_method, "mm": _mm, "matmul": _ops.matmul, "__matmul__": _ops.matmul,
    "__rmatmul__": _ops.rmatmul,
}
for _name, _fn in _METHODS.items():
    setattr(SparseTensor, _name, _fn)


# ---------------------------------------------------------------------- everything else refuses

# inherited methods that hold for a sparse tensor as they are (they read only metadata or call the overrides)
_INHERITED = {"dim", "size", "numel", "nelement", "ndimension", "is_floating_point", "is_complex", "get_device",
              "element_size", "requires_grad_", "retain_grad", "register_hook", "register_post_accumulate_grad_hook",
              "backward", "detach_", "is_inference", "storage_offset", "__init__", "__new__", "__len__", "__hash__",
              "__bool__", "__float__", "__int__", "__complex__", "__index__", "__format__"}

# PyTorch's own words for a few
_MESSAGES = {
    "reshape": "reshape is not implemented for sparse tensors",
    "expand": "expand is unsupported for Sparse tensors",
    "expand_as": "expand is unsupported for Sparse tensors",
}

_DUNDER_OPS = {"getitem": "index", "setitem": "index_put_", "iter": "unbind", "invert": "bitwise_not",
               "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "__lshift__",
               "rshift": "__rshift__", "floordiv": "floor_divide", "mod": "remainder", "pos": "positive",
               "truediv": "div", "dlpack": "_to_dlpack", "dlpack_device": "_to_dlpack"}


def _aten_name(name: str) -> str:
    """The aten op behind a Tensor method (``__iadd__`` -> ``add_``, ``__rpow__`` -> ``pow``)."""
    if not name.startswith("__"):
        return name
    core = name.strip("_")
    suffix = ""
    if core.startswith("i") and core[1:] in _DUNDER_OPS.keys() | {"add", "sub", "mul", "pow", "matmul"}:
        core, suffix = core[1:], "_"
    elif core.startswith("r") and core[1:] in _DUNDER_OPS.keys() | {"add", "sub", "mul", "pow", "matmul"}:
        core = core[1:]
    return _DUNDER_OPS.get(core, core) + suffix


def _refusal(name: str) -> Any:
    message = _MESSAGES.get(name)

    def refuse(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        if message is not None:
            raise RuntimeError(message)
        raise unsupported(_aten_name(name), self.device.type)
    refuse.__name__ = name
    refuse.__doc__ = "Not supported for sparse COO tensors (raises PyTorch's error)."
    return refuse


def _refuse_the_rest() -> None:
    own = vars(SparseTensor)
    for name, attr in list(vars(Tensor).items()):
        if name in own or name in _INHERITED:
            continue
        if isinstance(attr, property):
            if name in ("H", "mH"):
                setattr(SparseTensor, name, property(_refusal(name)))
            continue
        if callable(attr) and (not name.startswith("_") or (name.startswith("__") and name.endswith("__"))):
            setattr(SparseTensor, name, _refusal(name))


_refuse_the_rest()
