"""The GPU probe: which array runtime backs device "cuda", how many devices it has, which one is current.

The runtime is CuPy when it imports and sees a GPU, the CPU simulator when it is switched on
(``MINITORCH_GPU_SIM=1`` or ``mt.cuda.use_simulator``), else nothing. The dispatch layer asks here, and the public
``mt.cuda`` re-exports these answers, so both always agree.
"""
from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["state", "runtime", "is_available", "device_count", "check_device", "current_device", "is_simulated",
           "is_initialized", "set_simulated", "SimRuntime", "cuda_version"]

state = threading.local()
"""Per thread: ``index``, the current device set by ``mt.cuda.set_device`` (absent or None: not set)."""

# [(runtime module or None, device count)], filled by the first probe and swapped by ``set_simulated``
_probe: list[tuple[Any, int]] = []
_saved: list[tuple[Any, int]] = []


class _SimDevice:
    """What callers use of ``cupy.cuda.Device``, for the simulated GPU (work is synchronous there)."""

    def __init__(self, index: int = 0) -> None:
        self.id = index

    def use(self) -> None:
        pass

    def synchronize(self) -> None:
        pass


class SimRuntime:
    """The slice of CuPy's namespace reached through :func:`runtime`, for the simulated GPU."""

    class cuda:
        Device = _SimDevice


def runtime() -> Any:
    """The cupy module (or :class:`SimRuntime`) if device "cuda" is usable, else None; probed once."""
    if not _probe:
        try:
            import cupy
            n = cupy.cuda.runtime.getDeviceCount()
            _probe.append((cupy, n) if n > 0 else (None, 0))
        except Exception:  # no cupy, no driver, or no device: all mean "no CUDA"
            _probe.append((None, 0))
    return _probe[0][0]


def is_available() -> bool:
    """True when CuPy is installed and sees at least one GPU (or the simulator is on)."""
    return runtime() is not None


def device_count() -> int:
    """The number of CUDA devices (1 for the simulator, 0 without CUDA)."""
    runtime()
    return _probe[0][1]


def check_device(index: int) -> None:
    """RuntimeError, saying how to fix it, unless ``cuda:<index>`` exists."""
    n = device_count()
    if n == 0:
        raise RuntimeError(
            "CUDA is not available: no GPU was found or CuPy is not installed "
            "(install with `pip install minitorch_gpu[cuda12]` or `[cuda13]`).")
    if not 0 <= index < n:
        raise RuntimeError(f"CUDA error: invalid device ordinal: cuda:{index} requested but only {n} device(s) exist")


def current_device() -> int:
    """The index of the current CUDA device (0 until one is set)."""
    idx: int | None = getattr(state, "index", None)
    if idx is None:
        check_device(0)
        return 0
    return idx


def cuda_version() -> str | None:
    """The CUDA runtime version CuPy was built against (``"12.4"``), None without CuPy. Like PyTorch's
    ``torch.version.cuda``, it describes the build: it needs no GPU, and the simulator does not change it."""
    try:
        import cupy
        v = int(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:  # no CuPy, or no CUDA runtime library for it to load
        return None
    return f"{v // 1000}.{v % 1000 // 10}"


def is_simulated() -> bool:
    """Whether device "cuda" is the CPU simulator."""
    return bool(_probe) and _probe[0][0] is SimRuntime


def is_initialized() -> bool:
    """Whether CUDA has been probed and found usable."""
    return bool(_probe) and _probe[0][0] is not None


def set_simulated(enabled: bool) -> bool:
    """Back device "cuda" with the simulator or with what the probe found; returns the previous setting.
    Backends built for the other setting are stale afterwards: the caller drops them."""
    prev = is_simulated()
    if enabled == prev:
        return prev
    if enabled:
        _saved[:] = list(_probe)
        _probe[:] = [(SimRuntime, 1)]
    else:
        _probe[:] = _saved
        _saved.clear()
    state.index = None
    return prev


if os.environ.get("MINITORCH_GPU_SIM", "0") not in ("", "0"):
    _probe[:] = [(SimRuntime, 1)]
