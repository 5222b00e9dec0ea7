"""PyTorch's two GradScaler primitives, ``torch._amp_foreach_non_finite_check_and_unscale_`` and
``torch._amp_update_scale_``: both read and write 1-element device tensors and never wait for the device."""
from __future__ import annotations

from collections.abc import Sequence

from .. import _dtype
from ..autograd import no_grad
from ..autograd.node import bump_version
from ..ops.elementwise import where
from ..tensor import Tensor

__all__ = ["_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_"]


def _one_float(t: Tensor, name: str, what: str) -> None:
    if t.numel() != 1:
        raise RuntimeError(f"{what} must be a 1-element tensor.")
    if t.dtype is not _dtype.float32:
        raise RuntimeError(f"{what} must be a float tensor.")


def _amp_foreach_non_finite_check_and_unscale_(scaled_grads: Sequence[Tensor], found_inf: Tensor,
                                                inv_scale: Tensor) -> None:
    """Multiply every tensor of ``scaled_grads`` by ``inv_scale`` in place and set ``found_inf`` to 1.0 when any
    of their elements is inf or NaN; one multi-tensor kernel on CUDA."""
    _one_float(inv_scale, "inv_scale", "inv_scale")
    _one_float(found_inf, "found_inf", "found_inf")
    grads = list(scaled_grads)
    if not grads:
        return
    be = found_inf._be
    for g in grads:
        if g._be is not be or inv_scale._be is not be:
            raise RuntimeError("scaled_grads, found_inf and inv_scale must be on the same device.")
        if not g.dtype.is_floating_point:
            raise RuntimeError(f"\"_amp_foreach_non_finite_check_and_unscale\" not implemented for "
                               f"'{g.dtype._scalar_name}'")
    be.amp_unscale_([g._data for g in grads], found_inf._data, inv_scale._data)
    for g in grads:
        bump_version(g)


def _amp_update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor, scale_growth_factor: float,
                       scale_backoff_factor: float, growth_interval: int) -> Tensor:
    """GradScaler's update, on the device: after an overflow (``found_inf`` > 0) scale *= backoff and the tracker
    restarts; otherwise the tracker counts the step and, at ``growth_interval`` clean steps in a row, scale *=
    growth (kept only when finite) and the tracker restarts. Returns ``scale``."""
    _one_float(scale, "current_scale", "current_scale")
    _one_float(found_inf, "found_inf", "found_inf")
    if growth_tracker.numel() != 1 or growth_tracker.dtype is not _dtype.int32:
        raise RuntimeError("growth_tracker must be a 1-element int tensor.")
    with no_grad():
        found = found_inf.gt(0)
        counted = growth_tracker + 1
        at_interval = counted.eq(int(growth_interval))
        # float32 times a double factor, rounded once to float32, as PyTorch's kernels compute it
        wide = scale.double()
        grown = (wide * float(scale_growth_factor)).float()
        backed = (wide * float(scale_backoff_factor)).float()
        kept = where(at_interval.logical_and(grown.isfinite()), grown, scale)
        scale.copy_(where(found, backed, kept))
        growth_tracker.copy_(where(found.logical_or(at_interval), growth_tracker.new_zeros(()), counted))
    return scale
