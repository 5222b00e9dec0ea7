"""The dispatch layer: one Backend per device, each a table of array primitives.

``get_backend(device)`` is the only way code above this package reaches an array library. Layout, top down:

* ``base.py`` (``Backend``: the primitive table, written once against ``self.xp``) and its per-family mixins
  (``_elementwise``, ``_reduce``, ``_nn``, ``_index``, ``_shape``, ``_random``, ``_linalg``, ``_optim``);
* ``numpy_backend.py`` (device "cpu") and ``cuda_backend.py`` (device "cuda": CuPy or the simulator, with a
  kernel-first router in front of the built-in bodies);
* ``cuda/``, private to this layer: the CUDA runtime (kernel loader, NVRTC, launchers, the CPU simulator, the
  GPU probe). Its ``matmul`` flags are public as ``mt.backends.cuda.matmul``.

The rest is PyTorch's ``torch.backends`` namespace, switches only: ``cudnn`` (stored, since no op uses cuDNN)
and ``mps`` (not available), so ``import torch.backends.cudnn as cudnn`` runs.

Nothing here imports the public ``mt.cuda`` package, which sits above this layer.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _device
from . import cuda  # ``mt.backends.cuda.matmul.allow_tf32``
from . import cudnn, mps  # PyTorch's switches: ``mt.backends.cudnn.benchmark``, ``mt.backends.mps.is_available()``
from .base import Backend
from .cuda import device as _cuda_device
from .cuda_backend import make_cuda_backend
from .numpy_backend import NumpyBackend

# typed handles on the untyped device class and CPU backend constructor
_device_cls: Callable[..., Any] = _device.device
_cpu_backend_cls: Callable[[], Backend] = NumpyBackend

__all__ = ["Backend", "get_backend", "cpu_backend", "cuda", "cudnn", "mps"]

_cache: dict[Any, Backend] = {}


def get_backend(dev: Any) -> Backend:
    """The Backend for a device (a ``device``, string, or int); RuntimeError if it does not exist."""
    try:
        be = _cache.get(dev)
    except TypeError:  # an unhashable argument: let device() say what is wrong with it
        be = None
    if be is not None:
        return be
    d = _device_cls(dev)
    if d.type == "cuda":
        idx = _cuda_device.current_device() if d.index is None else d.index
        key = _device_cls("cuda", idx)
        be = _cache.get(key)
        if be is None:
            _cuda_device.check_device(idx)
            be = make_cuda_backend(idx)
            _cache[key] = be
        if d.index is None:
            # "cuda" follows the current device, so this spelling must not be pinned to today's answer
            return be
    else:
        key = _device_cls("cpu")
        be = _cache.get(key)
        if be is None:
            be = _cpu_backend_cls()
            _cache[key] = be
    # remember the spelling used so the next lookup is a single dict hit
    try:
        _cache[dev] = be
    except TypeError:
        pass
    return be


def cpu_backend() -> Backend:
    """The Backend of device "cpu"."""
    return get_backend("cpu")


def _reset_cuda_backends() -> None:
    """Forget CUDA backends (``mt.cuda.use_simulator`` and tests that toggle the simulator use it)."""
    for k in [k for k, v in _cache.items() if getattr(v.device, "type", None) == "cuda"]:
        del _cache[k]
