"""Gradient clipping: by total norm (``clip_grad_norm_``, or its two halves ``get_total_norm`` and
``clip_grads_with_norm_``) and by value (``clip_grad_value_``).

The total norm stays a device tensor and the scaling reads it there, so clipping on a GPU never waits for
the device (only ``error_if_nonfinite=True`` has to read the norm back). The tensors of each (device, dtype)
group go to the backend as one list: on CUDA the norm is two multi-tensor launches and the scaling one, whatever
the number of parameters. ``foreach`` is accepted for PyTorch compatibility and both settings give the same
numbers, because every device here supports the list path.
"""
import functools
import math
import types
import warnings

from ...autograd.grad_mode import no_grad
from ...optim._foreach import _foreach_clamp_, _foreach_clip_, _foreach_norm, _total_norm
from ...tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _no_grad(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with no_grad():
            return fn(*args, **kwargs)
    return wrapper


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _group_by_device_and_dtype(tensors):
    """Tensors grouped by (device, dtype), groups in order of first appearance."""
    groups = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    return groups


@_no_grad
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of all ``tensors`` together, as if they were concatenated into one vector
    (a 0-d tensor on the first tensor's device; ``tensor(0.)`` for no tensors). ``norm_type`` may be inf.
    With ``error_if_nonfinite`` a nan or inf total raises RuntimeError."""
    from ...ops.creation import tensor as _tensor
    from ...ops.reduction import vector_norm
    from ...ops.shape import stack
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _tensor(0.0)
    first_device = tensors[0].device
    groups = _group_by_device_and_dtype(tensors)
    if (norm_type < 0 or norm_type == math.inf) and any(t.numel() == 0 for t in tensors):
        # a max or min over no elements: vector_norm raises PyTorch's error
        norms = [vector_norm(t, norm_type) for t in tensors]
        total_norm = vector_norm(stack(norms), norm_type)
    elif len(groups) == 1:
        total_norm = _total_norm(tensors, norm_type)
    else:
        # the norm of the per-tensor norms, as PyTorch computes it across devices and dtypes
        norms = [n for group in groups.values() for n in _foreach_norm(group, norm_type)]
        total_norm = vector_norm(stack([n.to(first_device) for n in norms]), norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


@_no_grad
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the ``.grad`` of every parameter in place by ``min(max_norm / (total_norm + 1e-6), 1)``, given a
    precomputed ``total_norm`` (from ``get_total_norm``)."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    for (device, _), group in _group_by_device_and_dtype(grads).items():
        _foreach_clip_(group, total_norm.to(device), max_norm)


@_no_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradients of ``parameters`` (a tensor or an iterable of them) in place so that their total
    ``norm_type``-norm is at most ``max_norm``; returns the total norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`minitorch_gpu.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`minitorch_gpu.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the ``.grad`` of every parameter in place to [-clip_value, clip_value]."""
    parameters = _as_list(parameters)
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    for group in _group_by_device_and_dtype(grads).values():
        _foreach_clamp_(group, clip_value)
