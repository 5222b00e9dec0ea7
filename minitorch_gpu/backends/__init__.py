"""The dispatch layer: one Backend per device, each a table of array primitives.

``get_backend(device)`` is the only way code above this package reaches an array library.
"""
from .._device import device as _device_cls
from . import cuda_flags as cuda  # ``mt.backends.cuda.matmul.allow_tf32``
from .base import Backend

__all__ = ["Backend", "get_backend", "cpu_backend"]

_cache = {}


def get_backend(dev):
    """The Backend for a device (a ``device``, string, or int); RuntimeError if it does not exist."""
    try:
        be = _cache.get(dev)
    except TypeError:  # an unhashable argument: let device() say what is wrong with it
        be = None
    if be is not None:
        return be
    d = _device_cls(dev)
    if d.type == "cuda":
        from .. import cuda
        idx = cuda.current_device() if d.index is None else d.index
        key = _device_cls("cuda", idx)
        be = _cache.get(key)
        if be is None:
            cuda._check_device(idx)
            from .cuda_backend import make_cuda_backend
            be = make_cuda_backend(idx)
            _cache[key] = be
        if d.index is None:
            # "cuda" follows the current device, so this spelling must not be pinned to today's answer
            return be
    else:
        key = _device_cls("cpu")
        be = _cache.get(key)
        if be is None:
            from .numpy_backend import NumpyBackend
            be = NumpyBackend()
            _cache[key] = be
    # remember the spelling used so the next lookup is a single dict hit
    try:
        _cache[dev] = be
    except TypeError:
        pass
    return be


def cpu_backend():
    return get_backend("cpu")


def _reset_cuda_backends():
    """Forget CUDA backends (tests that toggle the simulator use it)."""
    for k in [k for k, v in _cache.items() if v.device.type == "cuda"]:
        del _cache[k]
