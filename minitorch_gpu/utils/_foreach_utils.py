"""PyTorch's ``torch.utils._foreach_utils``: which devices run the foreach and fused optimizer paths, and the
grouping of parallel tensor lists by device and dtype that those paths work on (one backend call per group)."""
from typing import Any, TypeAlias

from ..tensor import Tensor

__all__ = ["Indices", "TensorListList", "_device_has_foreach_support", "_get_foreach_kernels_supported_devices",
           "_get_fused_kernels_supported_devices", "_group_tensors_by_device_and_dtype", "_has_foreach_support"]

TensorListList: TypeAlias = list[list[Any]]
"""Parallel lists: one list per role (parameters, gradients, a state), entries aligned by index."""
Indices: TypeAlias = list[int]


def _get_foreach_kernels_supported_devices() -> list[str]:
    """Every device type: a list operation is one backend call on the CPU as well as on a GPU."""
    return ["cpu", "cuda"]


def _get_fused_kernels_supported_devices() -> list[str]:
    """The devices with fused optimizer steps: one kernel launch per group on a GPU, one compiled pass on the CPU."""
    return ["cpu", "cuda"]


def _device_has_foreach_support(device: Any) -> bool:
    return device.type in _get_foreach_kernels_supported_devices()


def _has_foreach_support(tensors: list[Any], device: Any) -> bool:
    return _device_has_foreach_support(device) and all(t is None or isinstance(t, Tensor) for t in tensors)


def _group_tensors_by_device_and_dtype(tensorlistlist: TensorListList, with_indices: bool = False) -> dict[
        tuple[Any, Any], tuple[TensorListList, Indices]]:
    """Split parallel lists by the (device, dtype) of the first list's tensors.

    Returns ``{(device, dtype): (lists, indices)}``; entries of the other lists may be None (a state that does not
    exist yet) and stay aligned with their tensor. The indices always come back (``with_indices`` is accepted for
    PyTorch's signature).
    """
    groups: dict[tuple[Any, Any], tuple[TensorListList, Indices]] = {}
    first = tensorlistlist[0]
    if first:
        # the usual case, every tensor on one device in one dtype (an optimizer step on each call): one group,
        # the lists copied whole instead of entry by entry
        be, dt = first[0]._be, first[0]._data.dtype
        if all(t._be is be and t._data.dtype == dt for t in first):
            n = len(first)
            lists = [list(src[:n]) + [None] * (n - len(src)) for src in tensorlistlist]
            return {(first[0].device, first[0].dtype): (lists, list(range(n)))}
    for i, t in enumerate(first):
        key = (t.device, t.dtype)
        entry = groups.get(key)
        if entry is None:
            entry = groups[key] = ([[] for _ in tensorlistlist], [])
        lists, idx = entry
        for lst, src in zip(lists, tensorlistlist):
            lst.append(src[i] if len(src) > i else None)
        idx.append(i)
    return groups
