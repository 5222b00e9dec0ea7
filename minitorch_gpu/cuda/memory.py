"""``torch.cuda``'s memory statistics: allocated and reserved bytes with their peaks, ``memory_stats``,
``memory_summary``, ``mem_get_info``, ``empty_cache``.

"Allocated" is what live tensors hold (CuPy's memory pool blocks on a GPU, in the pool's 512-byte units as in
PyTorch's allocator); "reserved" is what the pool holds from the driver, freed blocks included. On the
simulated device they are counted exactly for tensors, nothing is cached (reserved = allocated), and
``mem_get_info`` reports the host's memory. See ``backends/cuda/memory.py``.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from ..backends.cuda import device as _probe
from ..backends.cuda import memory as _memory
from .properties import device_index as _index

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached", "empty_cache",
           "memory_stats", "memory_summary", "mem_get_info", "memory_cached", "max_memory_cached"]


def _pool() -> Any:
    rt = _probe.runtime()
    return None if _probe.is_simulated() else rt.get_default_memory_pool()


def _stats(device: Any) -> _memory.MemoryStats:
    idx = _index(device)
    s = _memory.stats_for(idx)
    pool = _pool()
    if pool is None:   # the simulator caches nothing
        s.reserved = s.allocated
        s.peak_reserved = max(s.peak_reserved, s.peak_allocated)
    else:
        with _probe.runtime().cuda.Device(idx):
            s.set_reserved(int(pool.total_bytes()))
    return s


def memory_allocated(device: Any = None) -> int:
    """Bytes held by tensors on the device now."""
    return _stats(device).allocated


def max_memory_allocated(device: Any = None) -> int:
    """The most bytes tensors held at once since the start or the last ``reset_peak_memory_stats``."""
    return _stats(device).peak_allocated


def memory_reserved(device: Any = None) -> int:
    """Bytes the allocator holds from the driver (allocated plus cached)."""
    return _stats(device).reserved


def max_memory_reserved(device: Any = None) -> int:
    """The peak of ``memory_reserved`` since the start or the last reset."""
    return _stats(device).peak_reserved


def memory_cached(device: Any = None) -> int:
    """Deprecated name of ``memory_reserved``."""
    return memory_reserved(device)


def max_memory_cached(device: Any = None) -> int:
    """Deprecated name of ``max_memory_reserved``."""
    return max_memory_reserved(device)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Start the peaks again from the current values."""
    _stats(device).reset_peak()


def reset_max_memory_allocated(device: Any = None) -> None:
    """Deprecated: resets every peak, as PyTorch's does."""
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device: Any = None) -> None:
    """Deprecated: resets every peak, as PyTorch's does."""
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Give the cached, unused blocks back to the driver."""
    pool = _pool()
    if pool is not None:
        pool.free_all_blocks()
        for idx, s in list(_memory._stats.items()):
            with _probe.runtime().cuda.Device(idx):
                s.reserved = int(pool.total_bytes())


def _empty_host_cache() -> None:
    """Give the cached, unused page-locked host blocks (``Tensor.pin_memory``) back to the system: CuPy keeps
    them in its pinned pool; the simulator's pinned memory is ordinary memory, freed when unused."""
    if not _probe.is_simulated():
        _probe.runtime().get_default_pinned_memory_pool().free_all_blocks()


def memory_stats(device: Any = None) -> dict[str, Any]:
    """PyTorch's flat statistics dict (the keys programs read; pools are not split into large/small)."""
    s = _stats(device)
    out: dict[str, Any] = OrderedDict()
    for pool in ("all", "large_pool", "small_pool"):
        full = pool == "all"
        out[f"allocated_bytes.{pool}.current"] = s.allocated if full else 0
        out[f"allocated_bytes.{pool}.peak"] = s.peak_allocated if full else 0
        out[f"allocated_bytes.{pool}.allocated"] = 0
        out[f"reserved_bytes.{pool}.current"] = s.reserved if full else 0
        out[f"reserved_bytes.{pool}.peak"] = s.peak_reserved if full else 0
        out[f"allocation.{pool}.allocated"] = s.alloc_count if full else 0
        out[f"allocation.{pool}.freed"] = s.free_count if full else 0
        out[f"allocation.{pool}.current"] = (s.alloc_count - s.free_count) if full else 0
    out["num_alloc_retries"] = 0
    out["num_ooms"] = 0
    return dict(sorted(out.items()))


def _fmt(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A readable table of ``memory_stats``."""
    s = _stats(device)
    idx = _index(device)
    rows = [("Allocated memory", s.allocated, s.peak_allocated), ("Reserved memory", s.reserved, s.peak_reserved)]
    lines = [f"|{'':=^75}|", f"| {'minitorch_gpu CUDA memory summary, device ID ' + str(idx):<74}|",
             f"|{'':-^75}|", f"| {'Metric':<33}| {'Cur Usage':>18} | {'Peak Usage':>18} |", f"|{'':-^75}|"]
    for name, cur, peak in rows:
        lines.append(f"| {name:<33}| {_fmt(cur):>18} | {_fmt(peak):>18} |")
    if not abbreviated:
        lines.append(f"| {'Allocations (made / freed)':<33}| {s.alloc_count:>18} | {s.free_count:>18} |")
    lines.append(f"|{'':=^75}|")
    return "\n".join(lines) + "\n"


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device (of the host's memory on the simulator)."""
    idx = _index(device)
    if _probe.is_simulated():
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
    rt = _probe.runtime()
    with rt.cuda.Device(idx):
        free, total = rt.cuda.runtime.memGetInfo()
    return int(free), int(total)
