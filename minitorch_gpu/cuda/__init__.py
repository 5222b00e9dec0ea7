"""``mt.cuda``: is a GPU there, how many, which one is current.

CuPy is imported lazily and only here and in the CUDA backend; without it (or without a driver)
``is_available()`` is False and every CUDA request raises a RuntimeError that says why.
"""
import threading

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "device",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "set_rng_state", "get_rng_state_all", "set_rng_state_all", "is_initialized"]

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


# ---------------------------------------------------------------------- random number generators
# Each GPU has a default Generator (ops/random.py). Seeding without a GPU is a silent no-op, as in PyTorch,
# so scripts that always call ``cuda.manual_seed`` run on CPU-only machines; reading a state needs a GPU.

def _gen(dev=None):
    from ..ops import random as _random
    if dev is None or dev == "cuda":
        idx = current_device()
    elif isinstance(dev, int):
        idx = dev
    else:
        from .._device import device as _dev
        d = _dev(dev)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        idx = current_device() if d.index is None else d.index
    _check_device(idx)
    return _random.cuda_default_generator(idx)


def manual_seed(seed):
    """Seed the current GPU's default generator (a no-op without CUDA)."""
    seed = int(seed)
    if not is_available():
        from ..ops import random as _random
        _random._check_seed(seed)
        return
    _gen().manual_seed(seed)


def manual_seed_all(seed):
    """Seed every GPU's default generator, including ones first used later (a no-op without CUDA)."""
    from ..ops import random as _random
    _random.seed_cuda_all(int(seed))


def seed():
    """Seed the current GPU's default generator non-deterministically (a no-op without CUDA)."""
    if is_available():
        _gen().seed()


def seed_all():
    """Seed every GPU's default generator with one non-deterministic seed (a no-op without CUDA)."""
    from ..ops import random as _random
    _random.seed_cuda_all(_random._fresh_seed())


def initial_seed():
    """The initial seed of the current GPU's default generator."""
    return _gen().initial_seed()


def get_rng_state(device="cuda"):
    """The state of a GPU's default generator (a CPU uint8 tensor)."""
    return _gen(device).get_state()


def set_rng_state(new_state, device="cuda"):
    """Restore the state of a GPU's default generator."""
    _gen(device).set_state(new_state)


def get_rng_state_all():
    """The states of every GPU's default generator, in device order."""
    return [_gen(i).get_state() for i in range(device_count())]


def set_rng_state_all(new_states):
    """Restore the states of every GPU's default generator (one state per device, in order)."""
    for i, st in enumerate(new_states):
        _gen(i).set_state(st)


def is_initialized():
    """Whether CUDA has been probed and found usable."""
    return bool(_probe) and _probe[0][0] is not None


def __getattr__(name):
    # ``cuda.default_generators``: one Generator per GPU, created on first access like PyTorch's
    if name == "default_generators":
        return tuple(_gen(i) for i in range(device_count()))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------------- the CPU simulator as device "cuda"
# With the simulator on, device "cuda" (one device, cuda:0) holds NumPy arrays and runs the kernels of
# kernels/*.cu on the CPU simulator (cuda/sim) through the same launch code as a GPU. It stands in for CuPy
# in the probe above, so every function of this module behaves as with one GPU.

class _SimDevice:
    """What this module calls on ``cupy.cuda.Device``, for the simulated GPU (work is synchronous there)."""

    def __init__(self, index=0):
        self.id = index

    def use(self):
        pass

    def synchronize(self):
        pass


class _SimRuntime:
    """The slice of CuPy's namespace this module reaches through ``_cupy()``."""

    class cuda:
        Device = _SimDevice


_sim_saved = []


def is_simulated():
    """Whether device "cuda" is the CPU simulator (``MINITORCH_GPU_SIM=1`` or :func:`use_simulator`)."""
    return bool(_probe) and _probe[0][0] is _SimRuntime


def use_simulator(enabled=True):
    """Back device "cuda" with the CPU simulator (``enabled=True``) or with the real GPU again; returns the
    previous setting. CUDA tensors made under one setting must not be mixed with the other's.

        >>> import minitorch_gpu as mt
        >>> prev = mt.cuda.use_simulator(True)
        >>> mt.cuda.is_available(), mt.cuda.device_count()
        (True, 1)
        >>> _ = mt.cuda.use_simulator(prev)
    """
    prev = is_simulated()
    if bool(enabled) == prev:
        return prev
    from .. import backends
    if enabled:
        _sim_saved[:] = list(_probe)
        _probe[:] = [(_SimRuntime, 1)]
    else:
        _probe[:] = _sim_saved
        _sim_saved.clear()
    _state.index = None
    backends._reset_cuda_backends()
    return prev


def _sim_from_env():
    import os
    if os.environ.get("MINITORCH_GPU_SIM", "0") not in ("", "0"):
        _probe[:] = [(_SimRuntime, 1)]


_sim_from_env()
