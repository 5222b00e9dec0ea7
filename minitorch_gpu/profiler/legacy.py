"""``torch.autograd.profiler``'s spelling of the profiler: ``profile(enabled=True, *, use_cuda=False, ...)``,
whose results are read off the profiler object itself, ``record_function``, and ``emit_nvtx``.

It lives here, above the ops it records, and the package namespace makes it
``minitorch_gpu.autograd.profiler`` (autograd sits below the profiler and cannot import it).
"""
from __future__ import annotations

from typing import Any

from ..backends.cuda import nvtx as _nvtx
from ._events import EventList, FunctionEventAvg
from ._recorder import Recorder
from .profiler import _NOT_FINISHED, record_function

__all__ = ["profile", "record_function", "emit_nvtx"]


class profile:
    """Record every op (and, with ``use_cuda=True`` or ``use_device="cuda"``, its GPU work) in a ``with`` block.

    >>> import minitorch_gpu as torch
    >>> with torch.autograd.profiler.profile() as prof:
    ...     y = torch.ones(3) * 2
    >>> [e.name for e in prof.function_events]
    ['aten::mul']
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True) -> None:
        if use_device is not None and use_device != "cuda":
            raise ValueError(f"use_device must be 'cuda' or None, got {use_device!r}")
        self.enabled = enabled
        self.use_device = "cuda" if use_cuda or use_device == "cuda" else None
        self._recorder = Recorder(cpu=use_cpu, cuda=self.use_device is not None, record_shapes=record_shapes,
                                  profile_memory=profile_memory, with_stack=with_stack, with_flops=with_flops,
                                  with_modules=with_modules)
        self.entered = False
        self.function_events: EventList | None = None

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._recorder.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        self.function_events = self._recorder.stop()

    def _events(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError(_NOT_FINISHED)
        return self.function_events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: Any) -> str:
        return self._events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def export_chrome_trace(self, path: str) -> None:
        self._events().export_chrome_trace(path)

    def total_average(self) -> FunctionEventAvg:
        return self._events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._events().self_cpu_time_total

    def __str__(self) -> str:
        return self.table()


class emit_nvtx:
    """Put every op in an NVTX range for Nsight Systems while the block runs (needs the ``nvtx`` package:
    without it this does nothing, as ``mt.cuda.nvtx.enable`` says)."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self._was = False

    def __enter__(self) -> emit_nvtx:
        if self.enabled:
            self._was = _nvtx.enabled
            _nvtx.enable(True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            _nvtx.enable(self._was)
