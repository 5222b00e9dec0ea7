"""``mt.cuda``: is a GPU there, how many, which one is current.

CuPy is imported lazily and only here and in the CUDA backend; without it (or without a driver)
``is_available()`` is False and every CUDA request raises a RuntimeError that says why.
"""
import threading

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "device",
           "manual_seed", "manual_seed_all"]

_state = threading.local()
_probe = []


def _cupy():
    """The cupy module if a usable GPU is present, else None (probed once)."""
    if not _probe:
        try:
            import cupy
            n = cupy.cuda.runtime.getDeviceCount()
            _probe.append((cupy, n) if n > 0 else (None, 0))
        except Exception:  # no cupy, no driver, or no device: all mean "no CUDA"
            _probe.append((None, 0))
    return _probe[0][0]


def is_available():
    """True when CuPy is installed and sees at least one GPU."""
    return _cupy() is not None


def device_count():
    _cupy()
    return _probe[0][1]


def _check_device(index):
    n = device_count()
    if n == 0:
        raise RuntimeError(
            "CUDA is not available: no GPU was found or CuPy is not installed "
            "(install with `pip install minitorch_gpu[cuda12]` or `[cuda13]`).")
    if not 0 <= index < n:
        raise RuntimeError(f"CUDA error: invalid device ordinal: cuda:{index} requested but only {n} device(s) exist")


def current_device():
    idx = getattr(_state, "index", None)
    if idx is None:
        _check_device(0)
        return 0
    return idx


def set_device(dev):
    from .._device import device as _dev
    if isinstance(dev, int):
        idx = dev
    else:
        d = _dev(dev)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        idx = 0 if d.index is None else d.index
    if idx < 0:
        return  # PyTorch treats a negative index as a no-op
    _check_device(idx)
    _state.index = idx
    _cupy().cuda.Device(idx).use()


def synchronize(dev=None):
    """Wait for all work queued on a GPU to finish."""
    from .._device import device as _dev
    idx = current_device() if dev is None else (dev if isinstance(dev, int) else (_dev(dev).index or 0))
    _check_device(idx)
    _cupy().cuda.Device(idx).synchronize()


class device:
    """Context manager that makes a GPU current, restoring the previous one on exit."""

    def __init__(self, dev):
        from .._device import device as _dev
        self.idx = dev if isinstance(dev, int) else (-1 if dev is None else (_dev(dev).index or 0))
        self.prev = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev = current_device()
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev >= 0:
            set_device(self.prev)
        return False


def manual_seed(seed):
    from ..ops import random as _random
    _random.manual_seed(seed)


manual_seed_all = manual_seed
