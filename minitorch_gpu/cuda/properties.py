"""``torch.cuda.get_device_properties`` and the calls built on it."""
from __future__ import annotations

import os
from typing import Any

from .. import _device, _dtype
from ..backends import get_backend
from ..backends.cuda import device as _probe

__all__ = ["get_device_properties", "get_device_name", "get_device_capability", "is_bf16_supported"]

# what the simulated device reports: the architecture our kernels are compiled for in CI (sm_80), and the host's
# cores and memory
_SIM_NAME = "minitorch_gpu CUDA simulator"


class _CudaDeviceProperties:
    """A GPU's name, memory, SM count and compute capability (PyTorch's field names)."""

    def __init__(self, name: str, total_memory: int, multi_processor_count: int, major: int, minor: int,
                 L2_cache_size: int, warp_size: int = 32) -> None:
        self.name = name
        self.total_memory = total_memory
        self.multi_processor_count = multi_processor_count
        self.major = major
        self.minor = minor
        self.L2_cache_size = L2_cache_size
        self.warp_size = warp_size
        self.is_integrated = False
        self.is_multi_gpu_board = False

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count}, L2_cache_size={self.L2_cache_size >> 20}MB)")


_cache: dict[tuple[bool, int], _CudaDeviceProperties] = {}


def device_index(device: Any) -> int:
    """The index of an existing CUDA device given as None (the current one), an int, a string or a device;
    ValueError for a device of another type, RuntimeError for one that does not exist."""
    if device is None:
        idx = _probe.current_device()
    elif isinstance(device, int):
        idx = device
    else:
        d = _device.device(device)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        idx = _probe.current_device() if d.index is None else d.index
    _probe.check_device(idx)
    return idx


def get_device_properties(device: Any = None) -> _CudaDeviceProperties:
    """The properties of a GPU (the current one if None)."""
    idx = device_index(device)
    key = (_probe.is_simulated(), idx)
    props = _cache.get(key)
    if props is None:
        if _probe.is_simulated():
            mem = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            props = _CudaDeviceProperties(_SIM_NAME, mem, os.cpu_count() or 1, 8, 0, 0)
        else:
            p = _probe.runtime().cuda.runtime.getDeviceProperties(idx)
            name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
            props = _CudaDeviceProperties(name, int(p["totalGlobalMem"]), int(p["multiProcessorCount"]),
                                          int(p["major"]), int(p["minor"]), int(p.get("l2CacheSize", 0)),
                                          int(p.get("warpSize", 32)))
        _cache[key] = props
    return props


def get_device_name(device: Any = None) -> str:
    """The name of a GPU."""
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """(major, minor) compute capability of a GPU."""
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 works on the current GPU, as PyTorch answers it: True on compute capability 8.0 and
    newer (bfloat16 in hardware), on older GPUs only ``including_emulation`` (the kernels convert to float in
    software); False without a GPU, or where the installed CuPy has no bfloat16 arrays (before CuPy 14). The
    simulator reports 8.0 and runs the bfloat16 kernels, so it says True.

        >>> dtype = mt.bfloat16 if mt.cuda.is_bf16_supported() else mt.float16   # doctest: +SKIP
    """
    if not _probe.is_available():
        return False
    idx = _probe.current_device()
    if not get_backend(_device.device("cuda", idx)).supports(_dtype.bfloat16):
        return False
    return get_device_properties(idx).major >= 8 or including_emulation
