"""``torch.amp.GradScaler``: dynamic loss scaling for float16 training.

The scale and the growth tracker are 1-element tensors on the gradients' device, and so is each optimizer's
found-inf flag: ``scale``, ``unscale_`` and ``update`` never wait for the device; only ``step`` reads the flag,
to decide whether to step (optimizers that take ``grad_scale``/``found_inf`` themselves skip even that read).
"""
from __future__ import annotations

import enum
import warnings
from collections import abc, defaultdict
from typing import Any

from .. import _dtype
from .. import cuda as _cuda
from ..autograd import no_grad
from ..ops.creation import full
from ..tensor import Tensor
from ._amp_foreach import _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _MultiDeviceReplicator:
    """One tensor, copied lazily to each device that asks for it."""

    def __init__(self, master: Tensor) -> None:
        self.master = master
        self._per_device_tensors: dict[Any, Tensor] = {}

    def get(self, device: Any) -> Tensor:
        t = self._per_device_tensors.get(device)
        if t is None:
            t = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = t
        return t


_FIX = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."


class GradScaler:
    """Scale the loss so that float16 gradients do not underflow, unscale them before the optimizer steps, skip
    steps whose gradients overflowed, and adapt the scale.

    >>> scaler = mt.amp.GradScaler("cpu")
    >>> scaler.get_scale()
    65536.0
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not _cuda.is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: defaultdict[int, dict[str, Any]] = defaultdict(
                _refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + _FIX)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + _FIX)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev: Any) -> None:
        self._scale = full((), self._init_scale, dtype=_dtype.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dtype.int32, device=dev)

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or lists and tuples of them, nested) times the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            assert self._scale is not None
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)
        stash: list[_MultiDeviceReplicator] = []

        def apply_scale(val: Any) -> Any:
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    assert self._scale is not None
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                scaled = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(scaled)
                return scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer: Any, inv_scale: Tensor, found_inf: Tensor,
                        allow_fp16: bool) -> dict[Any, Tensor]:
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grads: defaultdict[Any, defaultdict[Any, list[Tensor]]] = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is _dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grads[param.grad.device][param.grad.dtype].append(param.grad)
            for device, per_dtype in grads.items():
                for gs in per_dtype.values():
                    _amp_foreach_non_finite_check_and_unscale_(gs, per_device_found_inf.get(device),
                                                                per_device_inv_scale.get(device))
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale in place (once per step; before clipping them, say), and
        record whether any was inf or NaN, on the device."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        assert self._scale is not None
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=_dtype.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer: Any, state: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        # the one read of the device flag per step
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless ``unscale_`` already did) and run ``optimizer.step(*args, **kwargs)``, unless a gradient
        is inf or NaN: then skip it and return None."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            # the optimizer unscales and skips on the device itself: hand it the scale and the flag
            if state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            scaler = self._scale
            assert scaler is not None
            found = [t.to(scaler.device, non_blocking=True) for t in state["found_inf_per_device"].values()]
            found_inf = found[0]
            for t in found[1:]:
                found_inf = found_inf + t
            optimizer.grad_scale = (getattr(optimizer, "grad_scale", None) if state["stage"] is OptState.UNSCALED
                                    else scaler * getattr(optimizer, "grad_scale", 1))
            optimizer.found_inf = found_inf
            try:
                retval = optimizer.step(*args, **kwargs)
            finally:
                del optimizer.grad_scale
                del optimizer.found_inf
            state["stage"] = OptState.STEPPED
            return retval
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Back the scale off after a skipped step, grow it after ``growth_interval`` clean ones, or set it to
        ``new_scale``; call once per iteration, after every ``step``."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not isinstance(new_scale, Tensor) or new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                with no_grad():
                    scale.copy_(new_scale)
        else:
            found_infs = [f.to(device=scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined = combined + f
            _amp_update_scale_(scale, growth_tracker, combined, self._growth_factor, self._backoff_factor,
                               self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self) -> Tensor | None:
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (reads the device)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's five entries (``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval``,
        ``_growth_tracker``); empty when disabled."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_inf_per_device(self, optimizer: Any) -> dict[Any, Tensor]:
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = full((), 1.0, dtype=_dtype.float32, device=scale.device)
        found_inf = full((), 0.0, dtype=_dtype.float32, device=scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = self._unscale_grads_(
            optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer: Any) -> dict[Any, Tensor]:
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]
