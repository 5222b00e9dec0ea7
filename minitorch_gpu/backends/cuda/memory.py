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

__all__ = ["MemoryStats", "stats_for", "install_cupy_hook", "track_sim_array", "track_owner"]


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


_live: set[int] = set()


def _release(key: int, nbytes: int, stats: MemoryStats, live: set[int]) -> None:
    live.discard(key)
    stats.free(nbytes)


def track_owner(arr: Any, stats: MemoryStats, live: set[int]) -> None:
    """Count the memory under ``arr`` once in ``stats`` (its owner: the root of its ``base`` chain; ``live``
    holds the owners counted and not yet collected), and release it when the owner is collected."""
    root = arr
    while getattr(root, "base", None) is not None:
        root = root.base
    key = id(root)
    if key in live or not hasattr(root, "nbytes"):
        return
    try:
        weakref.finalize(root, _release, key, int(root.nbytes), stats, live)
    except TypeError:  # not weak-referenceable (a bytes buffer under a frombuffer array): host-owned
        return
    live.add(key)
    stats.alloc(int(root.nbytes))


def track_sim_array(arr: Any, index: int = 0) -> None:
    """Count the memory under a simulated-device array once (its owner: the root of its ``base`` chain)."""
    track_owner(arr, stats_for(index), _live)
