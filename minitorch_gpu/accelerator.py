"""``mt.accelerator``: PyTorch's device-agnostic view of "the" accelerator, which here is device "cuda" (a GPU
through CuPy, or the CPU simulator) when it is available, and nothing otherwise.

Scripts pick their device with it:

    >>> import minitorch_gpu as mt
    >>> dev = mt.accelerator.current_accelerator() if mt.accelerator.is_available() else mt.device("cpu")

Without CUDA the answers are those of a PyTorch build with no accelerator: ``current_accelerator()`` is None,
``device_count()`` 0, and every call that needs a device raises "Cannot access accelerator device when none
is available.". Each call delegates to ``mt.cuda``, so the two always agree.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from . import _device
from . import cuda as _cuda

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream", "device_count",
           "device_index", "empty_cache", "empty_host_cache", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index",
           "set_stream", "synchronize"]

_DeviceLike = Any  # an int index, a device, or a string such as "cuda:0"
_dev: Callable[..., Any] = _device.device
_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    """Whether an accelerator (device "cuda") can be used now."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False) -> Any:
    """The accelerator's device type as a ``device`` without an index (``device(type='cuda')``), or None when
    there is none. ``check_available`` is accepted for PyTorch's signature; here the accelerator exists exactly
    when it is available."""
    return _dev("cuda") if _cuda.is_available() else None


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return _cuda.device_count() if _cuda.is_available() else 0


def _check_available() -> None:
    if not _cuda.is_available():
        raise RuntimeError(_NONE_AVAILABLE)


def _device_index(device: _DeviceLike, optional: bool) -> int:
    """PyTorch's reading of a device argument: an int as is, a device of the accelerator's type by its index,
    or (``optional``) the current index for None and index-less devices."""
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = _dev(device)
    index = None
    if isinstance(device, _device.device):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {acc}.")
        index = device.index
    if index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
        return current_device_index()
    return index


def current_device_index() -> int:
    """The index of the current accelerator device."""
    _check_available()
    return _cuda.current_device()


def set_device_index(device: _DeviceLike, /) -> None:
    """Make ``device`` (an index, or a device with one) the current accelerator device; negative: no-op."""
    idx = _device_index(device, optional=False)
    _check_available()
    _cuda.set_device(idx)


def current_device_idx() -> int:
    """Deprecated spelling of :func:`current_device_index`."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device: _DeviceLike, /) -> None:
    """Deprecated spelling of :func:`set_device_index`."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:
    """Make device ``device`` (an index; None: no change) current inside a ``with`` block, then restore the
    previous one."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info: object) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def synchronize(device: _DeviceLike = None, /) -> None:
    """Wait for the work queued on an accelerator device (the current one by default)."""
    idx = _device_index(device, optional=True)
    _check_available()
    _cuda.synchronize(idx)


def current_stream(device: _DeviceLike = None, /) -> Any:
    """The current stream of an accelerator device."""
    idx = _device_index(device, optional=True)
    _check_available()
    return _cuda.current_stream(idx)


def set_stream(stream: Any) -> None:
    """Make ``stream`` current (and its device the current device)."""
    _check_available()
    _cuda.set_device(stream.device_index)
    _cuda.set_stream(stream)


# ---------------------------------------------------------------------- memory, as ``mt.cuda`` counts it
def _memory_query(fn: Callable[[int], Any]) -> Callable[..., Any]:
    def query(device_index: _DeviceLike = None, /) -> Any:
        idx = _device_index(device_index, optional=True)
        _check_available()
        return fn(idx)
    query.__name__ = query.__qualname__ = fn.__name__
    query.__doc__ = fn.__doc__
    return query


memory_stats = _memory_query(_cuda.memory_stats)
memory_allocated = _memory_query(_cuda.memory_allocated)
max_memory_allocated = _memory_query(_cuda.max_memory_allocated)
memory_reserved = _memory_query(_cuda.memory_reserved)
max_memory_reserved = _memory_query(_cuda.max_memory_reserved)
reset_peak_memory_stats = _memory_query(_cuda.reset_peak_memory_stats)
get_memory_info = _memory_query(_cuda.mem_get_info)


def reset_accumulated_memory_stats(device_index: _DeviceLike = None, /) -> None:
    """Reset the counters that only grow; here the peaks, the only accumulated statistics kept."""
    reset_peak_memory_stats(device_index)


def empty_cache() -> None:
    """Hand the cached, unused device memory back to the driver."""
    _check_available()
    _cuda.empty_cache()


def empty_host_cache() -> None:
    """Release the cached, unused pinned host memory that ``Tensor.pin_memory`` drew from."""
    _check_available()
    _cuda.memory._empty_host_cache()
