"""What the globals of a PyTorch checkpoint load as: ``torch._utils._rebuild_tensor_v2`` and its siblings
rebuild our tensors over loaded storages, ``torch.float32`` is our dtype, and so on. Both unpicklers (the
restricted one and the full one) resolve ``torch...`` names through :data:`TORCH_GLOBALS` first.

Every rebuild function checks its arguments, since under ``weights_only`` they come from an untrusted file:
a tensor never reads outside its storage.
"""
from __future__ import annotations

import collections
from typing import Any

from .. import _dtype
from .._device import device as _device_cls
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor
from ._common import CheckpointError
from ._storage import STORAGE_TYPES, UNSUPPORTED_DTYPES, UNSUPPORTED_STORAGES, UNTYPED, TypedStorage


class RebuildError(CheckpointError):
    """A tensor record that cannot describe a tensor (bad sizes, strides outside the storage...)."""


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise RebuildError(f"invalid tensor record: {what} must be an integer, got {type(v).__name__}")
    return int(v)


def _shape(v: Any, what: str) -> tuple[int, ...]:
    if not isinstance(v, (tuple, list)):
        raise RebuildError(f"invalid tensor record: {what} must be a tuple of integers, got {type(v).__name__}")
    out = tuple(_int(x, what) for x in v)
    if any(x < 0 for x in out):
        raise RebuildError(f"invalid tensor record: negative entry in {what} {list(out)}")
    return out


def _tensor_over(storage: Any, offset: Any, size: Any, stride: Any) -> Tensor:
    if not isinstance(storage, TypedStorage):
        raise RebuildError(f"invalid tensor record: expected a storage, got {type(storage).__name__}")
    offset = _int(offset, "storage_offset")
    size = _shape(size, "size")
    stride = _shape(stride, "stride")
    if len(size) != len(stride):
        raise RebuildError(f"invalid tensor record: size {list(size)} and stride {list(stride)} differ in length")
    if offset < 0:
        raise RebuildError(f"invalid tensor record: negative storage_offset {offset}")
    n = storage.size()
    if all(size):
        last = offset + sum((s - 1) * st for s, st in zip(size, stride))
        if last >= n:
            raise RebuildError(f"invalid tensor record: size {list(size)}, stride {list(stride)} and offset "
                               f"{offset} reach element {last} of a storage of {n} elements")
    be = storage._be
    arr = storage._array
    if offset > n:
        offset = n  # an empty tensor past the end reads nothing
    return Tensor._make(be.as_strided_view(arr, size, stride, start=(offset,)), be)


def _requires_grad(t: Tensor, requires_grad: Any) -> Tensor:
    if not isinstance(requires_grad, bool):
        raise RebuildError(f"invalid tensor record: requires_grad must be a bool, got {type(requires_grad).__name__}")
    if requires_grad:
        t.requires_grad_(True)  # PyTorch's error for an integer dtype
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _tensor_over(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    # (backward hooks cannot cross a file; PyTorch writes an empty OrderedDict)
    return _requires_grad(_tensor_over(storage, storage_offset, size, stride), requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    if not isinstance(dtype, _dtype.dtype):
        raise RebuildError(f"invalid tensor record: dtype must be a dtype, got {type(dtype).__name__}")
    if isinstance(storage, TypedStorage) and storage.dtype is not dtype:
        arr = storage._array.view(storage._be.np_dtype(dtype))
        storage = TypedStorage(arr, dtype, storage.device)
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    if not isinstance(data, Tensor):
        raise RebuildError(f"invalid parameter record: data must be a tensor, got {type(data).__name__}")
    if not isinstance(requires_grad, bool):
        raise RebuildError("invalid parameter record: requires_grad must be a bool")
    return Parameter(data, requires_grad)


def set_tensor_state(t: Tensor, state: Any) -> Tensor:
    """Python attributes a checkpoint recorded on a tensor; never autograd's or the tensor's own."""
    if state is None:
        return t
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    for part in (state, slots):
        if not part:
            continue
        if not isinstance(part, dict):
            raise RebuildError(f"invalid tensor state of type {type(part).__name__}")
        for k, v in part.items():
            if not isinstance(k, str) or k in t.__dict__ or hasattr(type(t), k) or k.startswith("__"):
                raise RebuildError(f"invalid tensor state: attribute {k!r} cannot be set from a checkpoint")
            t.__dict__[k] = v
    return t


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return set_tensor_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


_TENSOR_REBUILDERS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
                      _rebuild_parameter_with_state)


def _rebuild_from_type_v2(func, new_type, args, state):
    if func not in _TENSOR_REBUILDERS or not isinstance(args, tuple):
        raise RebuildError("invalid tensor record: _rebuild_from_type_v2 needs a tensor rebuild function")
    t = func(*args)
    if new_type is not Tensor and new_type is not type(t):
        if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
            raise RebuildError(f"invalid tensor record: {new_type!r} is not a tensor type")
        t = Tensor._make.__func__(new_type, t._data, t._be, t.requires_grad)  # type: ignore[attr-defined]
    return set_tensor_state(t, state)


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    if not isinstance(data, Tensor):
        raise RebuildError("invalid tensor record: expected a CPU tensor")
    return _requires_grad(data.to(device=device, dtype=dtype), requires_grad)


def _unsupported(kind: str) -> Any:
    def rebuild(*args: Any) -> Any:
        raise RuntimeError(f"minitorch_gpu cannot load {kind} tensors from a checkpoint")
    rebuild.__name__ = f"_rebuild_{kind.replace(' ', '_')}"
    return rebuild


def _size(*args: Any) -> Size:
    if len(args) != 1:
        raise RebuildError("invalid record: torch.Size takes one tuple")
    return Size(_shape(args[0], "torch.Size"))


def _latin1_encode(obj: Any, encoding: Any = "utf-8") -> bytes:
    # how protocol 2 spells a bytes object: ``_codecs.encode(text, 'latin1')``; other codecs are not data
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise RebuildError("invalid record: _codecs.encode is only admitted for text encodings of bytes")
    return obj.encode(encoding)


def _global_table() -> dict[str, Any]:
    table: dict[str, Any] = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.Size": _size,
        "torch.Tensor": Tensor,
        "torch.device": _device_cls,
        "_codecs.encode": _latin1_encode,
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.frozenset": frozenset,
        "builtins.complex": complex,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch._utils._rebuild_device_tensor_from_cpu_tensor": _rebuild_device_tensor_from_cpu_tensor,
        "torch.storage.UntypedStorage": UNTYPED,
        "torch.UntypedStorage": UNTYPED,
    }
    for f in _TENSOR_REBUILDERS:
        table[f"torch._utils.{f.__name__}"] = f
    for kind in ("sparse", "qtensor", "nested", "meta_tensor_no_storage", "wrapper_subclass",
                 "device_tensor_from_numpy"):
        name = {"sparse": "_rebuild_sparse_tensor", "nested": "_rebuild_nested_tensor"}.get(kind, f"_rebuild_{kind}")
        table[f"torch._utils.{name}"] = _unsupported(kind.replace("_", " "))
    table["torch.serialization._get_layout"] = _unsupported("sparse layout")
    for name, st in STORAGE_TYPES.items():
        table[f"torch.{name}"] = st
    for dt in set(_dtype._BY_NAME.values()):  # type: ignore[attr-defined]
        table[f"torch.{dt.name}"] = dt
    return table


TORCH_GLOBALS = _global_table()
# the values a reduce may call: functions and classes, never data such as dtypes
CALLABLE_GLOBALS = frozenset(id(v) for v in TORCH_GLOBALS.values() if callable(v) and not isinstance(v, _dtype.dtype))


def unsupported_torch_global(module: str, name: str) -> str | None:
    """Why a ``torch`` name that PyTorch checkpoints may hold cannot load here, or None."""
    if module == "torch" and name in UNSUPPORTED_DTYPES:
        return f"minitorch_gpu has no dtype torch.{name}, which this checkpoint uses"
    if module == "torch" and name in UNSUPPORTED_STORAGES:
        return f"minitorch_gpu cannot load tensors stored as torch.{name}"
    return None
