"""``mt.cuda``, the public ``torch.cuda`` API: is a GPU there, how many, which one is current, seeding, the
simulator switch, NVTX ranges (``mt.cuda.nvtx``).

This package sits above the dispatch layer: the answers come from the CUDA runtime's probe
(``minitorch_gpu.backends.cuda.device``), which the backends share, so ``mt.cuda`` and device "cuda" always
agree. CuPy is imported lazily there; without it (or without a driver) ``is_available()`` is False and every
CUDA request raises a RuntimeError that says why.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from .. import _device
from .. import backends as _backends
from ..backends.cuda.checks import get_sync_debug_mode as get_sync_debug_mode
from ..backends.cuda.checks import set_sync_debug_mode as set_sync_debug_mode
from ..backends.cuda import device as _probe
from ..backends.cuda.device import current_device as current_device
from ..backends.cuda.device import device_count as device_count
from ..backends.cuda.device import is_available as is_available
from ..backends.cuda.device import is_initialized as is_initialized
from ..backends.cuda.device import is_simulated as is_simulated
from ..backends.cuda.device import state as _state
from ..ops.legacy_types import CUDA_TYPES as _CUDA_TYPES

from . import graphs as graphs
from . import memory as memory
from . import streams as streams
from .graphs import *  # noqa: F403
from .graphs import __all__ as _graphs_all
from .memory import *  # noqa: F403
from .memory import __all__ as _memory_all
from .properties import *  # noqa: F403
from .properties import __all__ as _properties_all
from .streams import *  # noqa: F403
from .streams import __all__ as _streams_all

# NOTE: the module itself, not a copy of its names: ``enable`` rebinds the ``enabled`` flag its callers read
from ..backends.cuda import nvtx as nvtx

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "device",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "set_rng_state", "get_rng_state_all", "set_rng_state_all", "is_initialized", "set_sync_debug_mode",
           "get_sync_debug_mode", *_graphs_all, *_memory_all, *_properties_all, *_streams_all]

_DeviceLike = Any  # an int ordinal, a device, or a string such as "cuda:1"
_dev: Callable[..., Any] = _device.device


# FloatTensor, LongTensor, ...: PyTorch's legacy tensor types for CUDA tensors
globals().update(_CUDA_TYPES)


def _random() -> Any:
    """ops/random.py, where the default generators live.

    NOTE: imported on use: autograd imports this package (for nvtx) while ops imports autograd, so a
    module-level import of ops here would run while ops is half initialised."""
    from ..ops import random
    return random


def set_device(dev: _DeviceLike) -> None:
    """Make ``dev`` the current CUDA device (a negative index is a no-op, as in PyTorch)."""
    if isinstance(dev, int):
        idx = dev
    else:
        d = _dev(dev)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        idx = 0 if d.index is None else d.index
    if idx < 0:
        return
    _probe.check_device(idx)
    _state.index = idx
    _probe.runtime().cuda.Device(idx).use()


def synchronize(dev: _DeviceLike | None = None) -> None:
    """Wait for all work queued on a GPU to finish."""
    idx = current_device() if dev is None else (dev if isinstance(dev, int) else (_dev(dev).index or 0))
    _probe.check_device(idx)
    # the backend waits for the device and then reads the checks its ops left on it (bad indices, ...)
    _backends.get_backend(_dev("cuda", idx)).synchronize()


class device:
    """Context manager that makes a GPU current, restoring the previous one on exit."""

    def __init__(self, dev: _DeviceLike | None) -> None:
        self.idx: int = dev if isinstance(dev, int) else (-1 if dev is None else (_dev(dev).index or 0))
        self.prev = -1

    def __enter__(self) -> device:
        if self.idx >= 0:
            self.prev = current_device()
            set_device(self.idx)
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        if self.prev >= 0:
            set_device(self.prev)
        return False


# ---------------------------------------------------------------------- random number generators
# Each GPU has a default Generator (ops/random.py). Seeding without a GPU is a silent no-op, as in PyTorch,
# so scripts that always call ``cuda.manual_seed`` run on CPU-only machines; reading a state needs a GPU.

def _gen(dev: _DeviceLike | None = None) -> Any:
    if dev is None or dev == "cuda":
        idx = current_device()
    elif isinstance(dev, int):
        idx = dev
    else:
        d = _dev(dev)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        idx = current_device() if d.index is None else d.index
    _probe.check_device(idx)
    return _random().cuda_default_generator(idx)


def manual_seed(seed: int) -> None:
    """Seed the current GPU's default generator (a no-op without CUDA)."""
    seed = int(seed)
    if not is_available():
        _random()._check_seed(seed)
        return
    _gen().manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every GPU's default generator, including ones first used later (a no-op without CUDA)."""
    _random().seed_cuda_all(int(seed))


def seed() -> None:
    """Seed the current GPU's default generator non-deterministically (a no-op without CUDA)."""
    if is_available():
        _gen().seed()


def seed_all() -> None:
    """Seed every GPU's default generator with one non-deterministic seed (a no-op without CUDA)."""
    rng = _random()
    rng.seed_cuda_all(rng._fresh_seed())


def initial_seed() -> int:
    """The initial seed of the current GPU's default generator."""
    return int(_gen().initial_seed())


def get_rng_state(device: _DeviceLike = "cuda") -> Any:
    """The state of a GPU's default generator (a CPU uint8 tensor)."""
    return _gen(device).get_state()


def set_rng_state(new_state: Any, device: _DeviceLike = "cuda") -> None:
    """Restore the state of a GPU's default generator."""
    _gen(device).set_state(new_state)


def get_rng_state_all() -> list[Any]:
    """The states of every GPU's default generator, in device order."""
    return [_gen(i).get_state() for i in range(device_count())]


def set_rng_state_all(new_states: list[Any]) -> None:
    """Restore the states of every GPU's default generator (one state per device, in order)."""
    for i, st in enumerate(new_states):
        _gen(i).set_state(st)


def __getattr__(name: str) -> Any:
    # ``cuda.default_generators``: one Generator per GPU, created on first access like PyTorch's
    if name == "default_generators":
        return tuple(_gen(i) for i in range(device_count()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------- the CPU simulator as device "cuda"
def use_simulator(enabled: bool = True) -> bool:
    """Back device "cuda" with the CPU simulator (``enabled=True``) or with the real GPU again; returns the
    previous setting. CUDA tensors made under one setting must not be mixed with the other's.

    With the simulator on, device "cuda" (one device, cuda:0) holds NumPy arrays and runs the kernels of
    kernels/*.cu on the CPU simulator through the same launch code as a GPU.

        >>> import minitorch_gpu as mt
        >>> prev = mt.cuda.use_simulator(True)
        >>> mt.cuda.is_available(), mt.cuda.device_count()
        (True, 1)
        >>> _ = mt.cuda.use_simulator(prev)
    """
    prev = _probe.set_simulated(bool(enabled))
    if prev != bool(enabled):
        _backends._reset_cuda_backends()
    return prev
