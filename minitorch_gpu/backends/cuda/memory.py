"""Device memory accounting behind ``mt.cuda.memory_allocated`` and friends.

PyTorch counts the bytes its caching allocator hands out (allocated) and holds from the driver (reserved),
with their peaks. On a GPU the same numbers come from CuPy's memory pool: a ``MemoryHook`` sees every block the
pool hands out and takes back (rounded to the pool's 512-byte unit, as PyTorch's are), and the pool's
``total_bytes`` is what it reserves. On the simulator every owner of "device" memory (a NumPy array with no
base) is counted once when a tensor first wraps it and released when it is collected: exact for tensors, which
is what a test of an op's memory needs, though a temporary inside one primitive is not seen.
"""
from __future__ import annotations

import weakref
from typing import Any

__all__ = ["MemoryStats", "Owner", "stats_for", "install_cupy_hook", "track_owner"]


class MemoryStats:
    """Counters of one device; ``peak_*`` move only up until ``reset_peak``."""

    def __init__(self) -> None:
        self.allocated = 0
        self.peak_allocated = 0
        self.reserved = 0
        self.peak_reserved = 0
        self.alloc_count = 0
        self.free_count = 0

    def alloc(self, nbytes: int) -> None:
        self.allocated += nbytes
        self.alloc_count += 1
        if self.allocated > self.peak_allocated:
            self.peak_allocated = self.allocated

    def free(self, nbytes: int) -> None:
        self.allocated -= nbytes
        self.free_count += 1

    def set_reserved(self, nbytes: int) -> None:
        self.reserved = nbytes
        if nbytes > self.peak_reserved:
            self.peak_reserved = nbytes

    def reset_peak(self) -> None:
        self.peak_allocated = self.allocated
        self.peak_reserved = self.reserved


_stats: dict[int, MemoryStats] = {}


def stats_for(index: int) -> MemoryStats:
    s = _stats.get(index)
    if s is None:
        s = _stats[index] = MemoryStats()
    return s


_hooks: list[Any] = []


def install_cupy_hook(cupy: Any) -> None:
    """Count CuPy's pool traffic from now on (once per process, on the calling thread: CuPy's hooks are
    per thread)."""
    if _hooks:
        return

    class _Hook(cupy.cuda.MemoryHook):
        name = "minitorch_gpu"

        def malloc_postprocess(self, device_id: int, size: int, mem_size: int, mem_ptr: int,
                               pmem_id: int) -> None:
            stats_for(device_id).alloc(mem_size)

        def free_postprocess(self, device_id: int, mem_size: int, mem_ptr: int, pmem_id: int) -> None:
            stats_for(device_id).free(mem_size)

        def alloc_postprocess(self, device_id: int, mem_size: int, mem_ptr: int) -> None:
            # the pool asked the driver for more: what it reserves grows
            s = stats_for(device_id)
            s.set_reserved(s.reserved + mem_size)

    hook = _Hook()
    hook.__enter__()  # active for the rest of the process
    _hooks.append(hook)


class Owner(weakref.ref):  # type: ignore[type-arg]
    """A weak reference to a counted owner of simulated device memory that remembers what to release.

    NOTE: a ``weakref.ref`` subclass with slots rather than ``weakref.finalize``: every simulated op result
    passes through ``track_owner``, and ``finalize`` costs several times more per call."""

    __slots__ = ("key", "nbytes", "stats", "live")
    key: int
    nbytes: int
    stats: MemoryStats
    live: dict[int, Owner]


_live: dict[int, Owner] = {}
"""The simulated device's counted owners by ``id``, until collected."""


def _collected(ref: Owner) -> None:
    live = ref.live
    if live.get(ref.key) is ref:
        del live[ref.key]
    ref.stats.free(ref.nbytes)


def track_owner(arr: Any, stats: MemoryStats, live: dict[int, Owner] = _live) -> None:
    """Count the memory under ``arr`` once in ``stats`` (its owner: the root of its ``base`` chain; ``live``
    holds the owners counted and not yet collected, by default the simulated device's), and release it when the
    owner is collected."""
    root = arr
    base = arr.base
    while base is not None:
        root = base
        base = getattr(root, "base", None)
    key = id(root)
    if key in live:
        return
    try:
        nbytes = int(root.nbytes)
        ref = Owner(root, _collected)
    except (TypeError, AttributeError):  # not weak-referenceable (a bytes buffer under a frombuffer array), or
        return                           # not an array: host-owned, not device memory
    ref.key = key
    ref.nbytes = nbytes
    ref.stats = stats
    ref.live = live
    live[key] = ref
    stats.alloc(nbytes)
