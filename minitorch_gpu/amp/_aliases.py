"""The deprecated device-specific spellings: ``torch.cuda.amp.autocast``, ``torch.cuda.amp.GradScaler`` and
``torch.cpu.amp.autocast``, each with PyTorch's FutureWarning. They live here (not in ``cuda/``) because amp sits
above the CUDA API it asks about; the package namespace attaches the two modules ``cuda_amp`` and ``cpu_amp``."""
from __future__ import annotations

import sys
import types
import warnings
from typing import Any

from .. import _dtype
from .autocast_mode import autocast as _autocast
from .autocast_mode import custom_bwd as _custom_bwd
from .autocast_mode import custom_fwd as _custom_fwd
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["cuda_amp", "cpu_amp", "cpu"]


class _CudaAutocast(_autocast):
    """``torch.cuda.amp.autocast(...)``: ``torch.amp.autocast("cuda", ...)``, deprecated."""

    def __init__(self, enabled: bool = True, dtype: _dtype.dtype = _dtype.float16, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class _CpuAutocast(_autocast):
    """``torch.cpu.amp.autocast(...)``: ``torch.amp.autocast("cpu", ...)``, deprecated."""

    def __init__(self, enabled: bool = True, dtype: _dtype.dtype = _dtype.bfloat16, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def _device_scaler(device_type: str) -> type[_GradScaler]:
    """``torch.<device_type>.amp.GradScaler(...)``: ``torch.amp.GradScaler(device_type, ...)``, deprecated."""
    class GradScaler(_GradScaler):
        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            warnings.warn(f"`torch.{device_type}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device_type}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
    return GradScaler


def _device_fwd(device_type: str) -> Any:
    def custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
        warnings.warn(f"`torch.{device_type}.amp.custom_fwd(args...)` is deprecated. Please use "
                      f"`torch.amp.custom_fwd(args..., device_type='{device_type}')` instead.", FutureWarning,
                      stacklevel=2)
        return _custom_fwd(fwd, device_type=device_type, cast_inputs=cast_inputs)
    return custom_fwd


def _device_bwd(device_type: str) -> Any:
    def custom_bwd(bwd: Any = None) -> Any:
        warnings.warn(f"`torch.{device_type}.amp.custom_bwd(args...)` is deprecated. Please use "
                      f"`torch.amp.custom_bwd(args..., device_type='{device_type}')` instead.", FutureWarning,
                      stacklevel=2)
        return _custom_bwd(bwd, device_type=device_type)
    return custom_bwd


def _module(name: str, **attrs: Any) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


_pkg = __name__.rsplit(".", 2)[0]
cuda_amp = _module(_pkg + ".cuda.amp", autocast=_CudaAutocast, GradScaler=_device_scaler("cuda"),
                   custom_fwd=_device_fwd("cuda"), custom_bwd=_device_bwd("cuda"))
cpu_amp = _module(_pkg + ".cpu.amp", autocast=_CpuAutocast, GradScaler=_device_scaler("cpu"))
# ``torch.cpu``: the host as a device, for the scripts that ask it what ``torch.cuda`` answers
cpu = _module(_pkg + ".cpu", amp=cpu_amp, is_available=lambda: True, device_count=lambda: 1,
              current_device=lambda: "cpu", synchronize=lambda device=None: None)
