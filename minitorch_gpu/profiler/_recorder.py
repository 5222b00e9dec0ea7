"""The recorder behind ``profile``: a subscriber of the op-range switch (CPU events) and a listener of each
CUDA backend's device work (kernel events), from ``start()`` to ``stop()``.

CPU events are timed with ``time.perf_counter_ns``; device work with CUDA events on a GPU and the host clock on
the simulator (``_clock``). Each piece of device work belongs to the innermost CPU event open on its thread
when it was launched (its ``correlation_id`` names the CPU event that launched it: the ``cudaLaunchKernel`` /
``cudaMemcpyAsync`` runtime event this recorder adds, else the op).
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from .. import _op_range
from ..backends import cpu_backend, get_backend
from ..backends.cuda import counting
from ..backends.cuda import device as _probe
from ..backends.cuda.memory import MemoryStats, Owner, stats_for, track_owner
from ..cuda import get_device_properties
from . import _rules
from ._clock import CudaEventClock, HostClock
from ._events import DeviceType, EventList, FunctionEvent

__all__ = ["Recorder"]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_EVALUATE = "autograd::engine::evaluate_function: "
_NODE_NAMES = {"AccumulateGrad": "torch::autograd::AccumulateGrad"}
_DEVICE_NAMES = {counting.TO_HOST: ("Memcpy DtoH (Device -> Pageable)", "cudaMemcpyAsync", "gpu_memcpy"),
                 counting.FROM_HOST: ("Memcpy HtoD (Pageable -> Device)", "cudaMemcpyAsync", "gpu_memcpy"),
                 counting.KERNEL: ("", "cudaLaunchKernel", "kernel"),
                 counting.BUILTIN: ("", "", "kernel")}


class _Pending:
    """Device work recorded during the trace, timed once it stops."""
    __slots__ = ("event", "clock", "marks")

    def __init__(self, event: FunctionEvent, clock: Any, marks: tuple[Any, Any]) -> None:
        self.event = event
        self.clock = clock
        self.marks = marks


class _DeviceListener:
    """The recorder's ``counting.Listener`` on one CUDA backend."""

    def __init__(self, recorder: Recorder, index: int, clock: Any) -> None:
        self.recorder = recorder
        self.index = index
        self.clock = clock

    def begin(self) -> tuple[int, Any]:
        return time.perf_counter_ns(), self.clock.mark()

    def end(self, token: tuple[int, Any], work: counting.Work | None) -> None:
        if work is None or work.kind == counting.VIEW:
            return
        self.recorder._device_work(self, token, self.clock.mark(), work)

    def sync(self, what: str, nbytes: int) -> None:
        pass


class Recorder:
    """Records CPU events (ops, backward nodes, ``record_function`` ranges, module calls with ``with_modules``)
    and, with ``cuda``, the device work of every CUDA backend that exists when it starts."""

    def __init__(self, cpu: bool = True, cuda: bool = False, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False) -> None:
        self.cpu = cpu
        self.cuda = cuda
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self._events: list[FunctionEvent] = []
        self._pending: list[_Pending] = []
        self._listeners: list[tuple[Any, _DeviceListener]] = []
        self._observed: list[tuple[Any, _DeviceListener]] = []
        self._local = threading.local()
        self._ids = iter(range(1, 1 << 62))
        self._lock = threading.Lock()
        self._t0 = 0
        self._base_ns = 0
        self._host_stats = MemoryStats()
        self._host_live: dict[int, Owner] = {}
        self._saved_cpu_hooks: dict[str, Any] | None = None
        self._device_stats: list[Any] = []
        self.device_name = ""
        self.device_measured = False
        self.running = False

    # ------------------------------------------------------------------ start / stop
    def start(self) -> None:
        self._t0 = time.perf_counter_ns()
        self._base_ns = time.time_ns()
        if self.cuda:
            self._observe_cuda()
        if self.profile_memory:
            self._count_cpu_memory()
        self.running = True
        if self.cpu:
            _op_range.subscribe(self)

    def _count_cpu_memory(self) -> None:
        """Count CPU tensors' memory while recording, as the simulated device counts its own: every array a
        tensor wraps, once per owner, until it is collected (the CPU backend's memory hook, set on the instance
        and taken off at ``stop``)."""
        be = cpu_backend()
        own = vars(be)
        self._saved_cpu_hooks = {k: own.get(k) for k in ("counts_memory", "count_memory")}
        previous = be.count_memory if be.counts_memory else None
        stats, live = self._host_stats, self._host_live

        def count_memory(arr: Any) -> None:
            if previous is not None:
                previous(arr)
            track_owner(arr, stats, live)
        be.counts_memory = True  # type: ignore[misc]
        be.count_memory = count_memory  # type: ignore[method-assign]

    def _observe_cuda(self) -> None:
        if not _probe.is_available():
            return
        for index in range(_probe.device_count()):
            be = get_backend(f"cuda:{index}")
            xp = be.xp
            clock = CudaEventClock(xp) if hasattr(xp, "cuda") else HostClock()
            self.device_measured = clock.measures_device
            listener = _DeviceListener(self, index, clock)
            counting.observe(be, listener)
            self._listeners.append((be, listener))
            self._device_stats.append(stats_for(index))

    def stop(self) -> EventList:
        """Stop recording; the events so far, device work timed."""
        _op_range.unsubscribe(self)
        for be, listener in self._listeners:
            counting.unobserve(be, listener)
        self._observed, self._listeners = self._listeners, []
        if self._saved_cpu_hooks is not None:
            be = cpu_backend()
            for k, v in self._saved_cpu_hooks.items():
                if v is None:
                    delattr(be, k)
                else:
                    setattr(be, k, v)
            self._saved_cpu_hooks = None
        self.running = False
        end = self._now()
        for ev in self._events:  # ranges still open (a record_function across stop()) end here
            if ev.time_range.end < 0:
                ev.time_range.end = end
        for p in self._pending:
            start_ns, dur_ns = p.clock.span(*p.marks)
            ev = p.event
            ev.time_range.start = (start_ns - self._t0) / 1e3
            ev.time_range.end = ev.time_range.start + dur_ns / 1e3
        events = self._events + [p.event for p in self._pending]
        events.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
        if self.with_flops:
            for ev in self._events:
                shapes = getattr(ev, "_flop_shapes", None)
                if shapes is not None:
                    ev.flops = _rules.op_flops(ev.name, shapes)
        peaks, note = None, ""
        if self._pending:
            name = get_device_properties(self._pending[0].event.device_index).name
            if not self.device_measured:
                note = (f"{name}: CUDA times are the host's clock around each launch on the CPU simulator, not a "
                        f"GPU's; no roofline (n/a).")
            else:
                peaks = _rules.device_peaks(name)
                if peaks is None:
                    note = f"No peak bandwidth or FLOP/s known for {name}: no roofline (n/a)."
                else:
                    note = (f"Roofline: max(bytes / {peaks[0] / 1e12:.2f} TB/s, FLOPs / {peaks[1] / 1e12:.1f} "
                            f"TFLOP/s) / CUDA time, {name}'s datasheet peaks.")
        meta = {"deviceProperties": self._device_properties(), "record_shapes": int(self.record_shapes),
                "profile_memory": int(self.profile_memory)}
        return EventList(events, use_device="cuda" if self._pending else None,
                         profile_memory=self.profile_memory, with_flops=self.with_flops, peaks=peaks,
                         device_note=note, base_ns=self._base_ns, trace_meta=meta)

    def _device_properties(self) -> list[dict[str, Any]]:
        out = []
        for be, _ in self._observed:
            p = get_device_properties(be.index)
            out.append({"id": be.index, "name": p.name, "totalGlobalMem": p.total_memory,
                        "computeMajor": p.major, "computeMinor": p.minor, "numSms": p.multi_processor_count})
        return out

    # ------------------------------------------------------------------ CPU events (the op-range subscriber)
    def _now(self) -> float:
        return (time.perf_counter_ns() - self._t0) / 1e3

    def _stacks(self) -> tuple[list[int], list[FunctionEvent]]:
        loc = self._local
        counts = getattr(loc, "counts", None)
        if counts is None:
            counts = loc.counts = []
            loc.open = []
            loc.tid = threading.get_native_id()
        return counts, loc.open

    def _memory(self) -> tuple[int, int]:
        return self._host_stats.allocated, sum(s.allocated for s in self._device_stats)

    def _open(self, name: str, category: str, shapes: list[list[int]] | None, stack: list[str] | None,
              open_events: list[FunctionEvent]) -> FunctionEvent:
        ev = FunctionEvent(next(self._ids), name, self._local.tid, self._now(), -1.0,
                           input_shapes=shapes, stack=stack, category=category)
        if open_events:
            parent = open_events[-1]
            ev.cpu_parent = parent
            parent.cpu_children.append(ev)
        if self.profile_memory:
            ev._mem = self._memory()  # type: ignore[attr-defined]
        open_events.append(ev)
        self._events.append(ev)
        return ev

    def push(self, kind: int, name: str, inputs: Sequence[Any]) -> None:
        counts, open_events = self._stacks()
        names: tuple[str, ...]
        if kind == _op_range.OP:
            names, category = (_rules.op_name(name),), "cpu_op"
        elif kind == _op_range.FUNCTION:
            names, category = (name,), "cpu_op"
        elif kind == _op_range.BACKWARD:
            node = _NODE_NAMES.get(name, name)
            names, category = (_EVALUATE + node, node), "cpu_op"
        elif kind == _op_range.MODULE:
            if not self.with_modules:
                counts.append(0)
                return
            names, category = ("nn.Module: " + name,), "python_function"
        else:
            names, category = (name,), "user_annotation"
        shapes = None
        if (self.record_shapes or self.with_flops) and inputs:
            shapes = [list(t.shape) if hasattr(t, "shape") else [] for t in inputs]
        stack = _python_stack() if self.with_stack else None
        for n in names:
            ev = self._open(n, category, shapes if self.record_shapes else None, stack, open_events)
            if shapes is not None and self.with_flops:
                ev._flop_shapes = shapes  # type: ignore[attr-defined]
        counts.append(len(names))

    def pop(self) -> None:
        counts, open_events = self._stacks()
        if not counts:  # a range opened before recording started
            return
        end = self._now()
        for _ in range(counts.pop()):
            ev = open_events.pop()
            ev.time_range.end = end
            if self.profile_memory:
                cpu0, dev0 = ev._mem  # type: ignore[attr-defined]
                cpu1, dev1 = self._memory()
                ev.cpu_memory_usage = cpu1 - cpu0
                ev.device_memory_usage = dev1 - dev0

    # ------------------------------------------------------------------ device work (the backends' listener)
    def _device_work(self, listener: _DeviceListener, token: tuple[int, Any], mark: Any,
                     work: counting.Work) -> None:
        host_start, first = token
        _, open_events = self._stacks()
        owner = open_events[-1] if open_events else None
        name, runtime, category = _DEVICE_NAMES[work.kind]
        if work.kind == counting.KERNEL:
            name = work.name
            flops = _rules.kernel_flops(work.file, work.name, work.args)
        elif work.kind == counting.BUILTIN:
            name = "builtin: " + work.name
            flops = _rules.builtin_flops(work.name, work.arrays, work.outs)
        else:
            flops = 0
        launcher = owner
        if runtime and self.cpu:
            launcher = FunctionEvent(next(self._ids), runtime, self._local.tid, (host_start - self._t0) / 1e3,
                                     self._now(), category="cuda_runtime")
            if owner is not None:
                launcher.cpu_parent = owner
                owner.cpu_children.append(launcher)
            self._events.append(launcher)
        ev = FunctionEvent(next(self._ids), name, 0, 0.0, 0.0, device_type=DeviceType.CUDA,
                           device_index=listener.index, category=category, use_device="cuda")
        ev.grid, ev.block, ev.shared_memory = work.grid, work.block, work.shared_mem
        ev.bytes_read, ev.bytes_written, ev.device_flops = work.bytes_read, work.bytes_written, flops
        if launcher is not None:
            ev.correlation_id = launcher.id
        if owner is not None:
            owner.kernels.append(ev)
        with self._lock:
            self._pending.append(_Pending(ev, listener.clock, (first, mark)))


def _python_stack() -> list[str]:
    """The caller's Python frames outside this package, innermost first, as PyTorch's ``with_stack`` shows
    them: ``file(line): function``."""
    out = []
    f: Any = sys._getframe(2)
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(_PKG_DIR):
            out.append(f"{code.co_filename}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return out
