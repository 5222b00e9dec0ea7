"""How device work is timed: CUDA events on a GPU, the host clock on the simulator.

A clock's ``mark()`` runs before a launch and again after it; ``span(first, second)`` turns the two marks into
(start, duration) in nanoseconds on the profiler's host timeline, and is only called once the trace stops, so
that reading a GPU's events never waits for the device while the work runs.
"""
from __future__ import annotations

import time
from typing import Any

__all__ = ["HostClock", "CudaEventClock"]


class HostClock:
    """The host's clock around each launch: what the simulator can offer (its kernels run on the CPU, so this
    is the simulated kernel's run time on the host, not a GPU's)."""

    measures_device = False

    def mark(self) -> int:
        return time.perf_counter_ns()

    def span(self, first: Any, second: Any) -> tuple[int, int]:
        return first, second - first


class CudaEventClock:
    """A CUDA event recorded on the current stream before and after each launch; the kernel's start on the host
    timeline is the host time of a reference event (recorded and waited for when profiling starts) plus the
    device time between the two events."""

    measures_device = True

    def __init__(self, cupy: Any) -> None:
        self._event = cupy.cuda.Event
        self._elapsed = cupy.cuda.get_elapsed_time
        self._ref = self._event()
        self._ref.record()
        self._ref.synchronize()
        self._ref_ns = time.perf_counter_ns()

    def mark(self) -> Any:
        e = self._event()
        e.record()
        return e

    def span(self, first: Any, second: Any) -> tuple[int, int]:
        second.synchronize()
        start = self._ref_ns + int(self._elapsed(self._ref, first) * 1e6)
        return start, int(self._elapsed(first, second) * 1e6)
