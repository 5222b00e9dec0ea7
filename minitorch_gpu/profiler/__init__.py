"""``torch.profiler``: CPU events for every op, backward node and ``record_function`` range, and (with
``ProfilerActivity.CUDA``) a device event for every kernel launch and array-library call on a GPU or the
simulator, with its grid, block, bytes, FLOPs and roofline fraction.

    >>> import minitorch_gpu as torch
    >>> from minitorch_gpu.profiler import profile, record_function, ProfilerActivity
    >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    ...     with record_function("step"):
    ...         y = (torch.ones(4, 4) @ torch.ones(4, 4)).sum()
    >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))  # doctest: +SKIP
    >>> prof.export_chrome_trace("trace.json")  # doctest: +SKIP

Layout: ``profiler.py`` (the public API and the schedule's state machine), ``_recorder.py`` (what is recorded,
as a subscriber of the op-range switch and a listener of each CUDA backend's device work), ``_clock.py`` (CUDA
events or the host clock), ``_events.py`` (events, averages, the table, the Chrome trace), ``_rules.py`` (aten
names, FLOPs rules, each GPU's peaks), ``legacy.py`` (``torch.autograd.profiler``).
"""
from __future__ import annotations

from ._events import DeviceType, EventList, FunctionEvent, FunctionEventAvg
from .profiler import (ProfilerAction, ProfilerActivity, profile, record_function, schedule, supported_activities,
                       tensorboard_trace_handler)

__all__ = ["profile", "ProfilerActivity", "ProfilerAction", "schedule", "record_function",
           "tensorboard_trace_handler", "supported_activities", "DeviceType", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
