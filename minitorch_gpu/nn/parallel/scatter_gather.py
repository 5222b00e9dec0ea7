"""Scatter a batch over devices and gather the outputs back: the data movement of ``DataParallel``.

Both directions are made of differentiable ops (``chunk``, ``to``, ``cat``), so gradients flow back through
the gather to each replica and through the scatter to the input.
"""
import warnings

from ..._device import device as _device
from ...tensor import Tensor

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _as_device(d):
    """A device from what ``DataParallel`` accepts: an int (a GPU index), a string, or a device; -1 is the CPU."""
    if isinstance(d, _device):
        return d
    if isinstance(d, int) and not isinstance(d, bool):
        return _device("cpu") if d == -1 else _device("cuda", d)
    return _device(d)


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _scatter_tensor(t, devices, dim):
    chunks = t.chunk(len(devices), dim)
    return tuple(c.to(d) for c, d in zip(chunks, devices))


def scatter(inputs, target_gpus, dim=0):
    """Split every tensor in ``inputs`` (nested in tuples, lists and dicts) into chunks along ``dim``, one per
    device, and move chunk i to device i. Non-tensors are repeated for every device. Returns one entry per
    device (fewer when a tensor has fewer than ``len(target_gpus)`` rows)."""
    devices = [_as_device(d) for d in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return _scatter_tensor(obj, devices, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # the closure refers to itself: break the cycle


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """:func:`scatter` for positional and keyword arguments together, padded to the same length."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def _gather_tensors(outputs, target, dim):
    from ...ops.shape import cat
    if all(t.dim() == 0 for t in outputs) and dim == 0:
        warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will instead "
                      "unsqueeze and return a vector.", stacklevel=4)
        outputs = [t.reshape(1) for t in outputs]
    return cat([t.to(target) for t in outputs], dim)


def gather(outputs, target_device, dim=0):
    """Concatenate the per-device ``outputs`` (tensors, or tuples/lists/dicts of them) along ``dim`` on
    ``target_device`` (-1 or "cpu" for the CPU)."""
    target = _as_device(target_device)

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, Tensor):
            return _gather_tensors(outs, target, dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outs)))
        return type(out)(map(gather_map, zip(*outs)))

    try:
        return gather_map(outputs)
    finally:
        gather_map = None
