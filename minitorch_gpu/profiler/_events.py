"""Profiled events, their averages, the summary table and the Chrome trace: PyTorch's ``FunctionEvent``,
``FunctionEventAvg`` and ``EventList`` with the same attribute names, so code that reads them ports unchanged.

Beyond PyTorch, device events carry the launch's grid, block, dynamic shared memory, bytes read and written and
FLOPs (``_rules``), and the table adds three columns when there is device time: the bytes and FLOPs of each
row's device work and the fraction of the GPU's roofline it reached (``n/a`` on the simulator, whose times are
host times).
"""
from __future__ import annotations

import enum
import gzip
import json
import os
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["DeviceType", "Interval", "FunctionEvent", "FunctionEventAvg", "EventList"]


class DeviceType(enum.Enum):
    CPU = 0
    CUDA = 1


class Interval:
    """A span in microseconds on the profiler's timeline."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        return self.end - self.start


class _Totals:
    """Averages and PyTorch's older names, over the time totals both events and averages have."""

    count: int

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count  # type: ignore[attr-defined,no-any-return]

    @property
    def device_time(self) -> float:
        return 0.0 if self.count == 0 else self.device_time_total / self.count  # type: ignore[attr-defined,no-any-return]

    # PyTorch's older spellings, still accepted by its ``sort_by``
    @property
    def cuda_time(self) -> float:
        return self.device_time

    @property
    def cuda_time_total(self) -> float:
        return self.device_time_total  # type: ignore[attr-defined,no-any-return]

    @property
    def self_cuda_time_total(self) -> float:
        return self.self_device_time_total  # type: ignore[attr-defined,no-any-return]

    @property
    def cuda_memory_usage(self) -> int:
        return self.device_memory_usage  # type: ignore[attr-defined,no-any-return]

    @property
    def self_cuda_memory_usage(self) -> int:
        return self.self_device_memory_usage  # type: ignore[attr-defined,no-any-return]


class FunctionEvent(_Totals):
    """One event: a CPU op or range (``device_type`` CPU) or a piece of device work (CUDA)."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float,
                 device_type: DeviceType = DeviceType.CPU, device_index: int = 0,
                 input_shapes: list[list[int]] | None = None, stack: list[str] | None = None,
                 category: str = "cpu_op", use_device: str | None = None) -> None:
        self.id = id
        # the table sums every step's range under one name; the trace keeps each step's own (PyTorch's rule)
        self.trace_name = name
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.device_type = device_type
        self.device_index = device_index
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.category = category
        self.is_user_annotation = category == "user_annotation"
        self.use_device = use_device
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.kernels: list[FunctionEvent] = []
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.flops = 0
        self.count = 1
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.overload_name = ""
        self.sequence_nr = -1
        # device work only
        self.grid: tuple[int, ...] = ()
        self.block: tuple[int, ...] = ()
        self.shared_memory = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.device_flops = 0
        self.correlation_id = -1  # the id of the CPU event that launched it

    @property
    def key(self) -> str:
        return self.name

    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us() if self.device_type is DeviceType.CPU else 0.0

    @property
    def self_cpu_time_total(self) -> float:
        if self.device_type is not DeviceType.CPU:
            return 0.0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        if self.device_type is not DeviceType.CPU:
            return self.time_range.elapsed_us()
        return sum(k.time_range.elapsed_us() for k in self.kernels) + sum(c.device_time_total
                                                                          for c in self.cpu_children)

    @property
    def self_device_time_total(self) -> float:
        if self.device_type is not DeviceType.CPU:
            return self.device_time_total
        return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self) -> int:
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    @property
    def device_bytes(self) -> int:
        """Bytes read and written by this device work, or by all the work this CPU event launched (children's
        included)."""
        if self.device_type is not DeviceType.CPU:
            return self.bytes_read + self.bytes_written
        return sum(k.device_bytes for k in self.kernels) + sum(c.device_bytes for c in self.cpu_children)

    @property
    def device_flops_total(self) -> int:
        """FLOPs of this device work, or of all the work this CPU event launched (children's included)."""
        if self.device_type is not DeviceType.CPU:
            return self.device_flops
        return sum(k.device_flops for k in self.kernels) + sum(c.device_flops_total for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"cpu_time={_format_time(self.cpu_time_total)} device_time={_format_time(self.device_time_total)} "
                f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"device_memory_usage={self.device_memory_usage}>")


class FunctionEventAvg(_Totals):
    """The sum of the events that share a key (and input shapes, or stack, when grouped by them)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.node_id = -1
        self.is_async = False
        self.is_remote = False
        self.is_legacy = False
        self.use_device: str | None = None
        self.cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes: list[list[int]] | None = None
        self.stack: list[str] | None = None
        self.overload_name = ""
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children: list[FunctionEvent] | None = None
        self.cpu_parent: FunctionEvent | None = None
        self.device_type = DeviceType.CPU
        self.is_user_annotation = False
        self.flops = 0
        self.device_bytes = 0
        self.device_flops_total = 0

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children  # type: ignore[assignment]
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        elif other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {self.key} vs {other.key}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        self.flops += other.flops
        self.device_bytes += other.device_bytes
        self.device_flops_total += other.device_flops_total
        return self

    def __iadd__(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} self_device_time={_format_time(self.self_device_time_total)}"
                f" device_time={_format_time(self.device_time)} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} device_memory_usage={self.device_memory_usage}>")


class EventList(list):  # type: ignore[type-arg]
    """A list of events with PyTorch's summaries: ``key_averages``, ``table``, ``export_chrome_trace``.

    ``peaks`` (bytes/s, FLOP/s) of the GPU give the roofline column; ``device_note`` is printed under the table
    (how device times were taken when they are not a GPU's)."""

    def __init__(self, events: Iterable[Any] = (), use_device: str | None = None, profile_memory: bool = False,
                 with_flops: bool = False, peaks: tuple[float, float] | None = None, device_note: str = "",
                 base_ns: int = 0, trace_meta: dict[str, Any] | None = None) -> None:
        super().__init__(events)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._peaks = peaks
        self._device_note = device_note
        self._base_ns = base_ns
        self._trace_meta = trace_meta or {}

    def _like(self, events: Iterable[Any]) -> EventList:
        return EventList(events, self._use_device, self._profile_memory, self._with_flops, self._peaks,
                         self._device_note, self._base_ns, self._trace_meta)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0) -> EventList:
        """One ``FunctionEventAvg`` per name (and input shapes / top ``group_by_stack_n`` frames, when asked)."""
        groups: dict[tuple[Any, ...], FunctionEventAvg] = {}
        for e in self:
            key: tuple[Any, ...] = (e.key, e.node_id)
            if group_by_input_shapes:
                key += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(e.stack[:group_by_stack_n])
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg()
            avg.add(e)
        for avg in groups.values():
            # shapes and stacks name a row only when it is grouped by them (PyTorch's rule)
            avg.stack = (avg.stack or [])[:group_by_stack_n]
            if not group_by_input_shapes:
                avg.input_shapes = []
        return self._like(groups.values())

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
            total.key = None
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """PyTorch's summary table (same columns, widths and footer), plus the device work's bytes, FLOPs
        and roofline fraction when there is device time."""
        return _build_table(self, sort_by, header, row_limit, max_src_column_width, max_name_column_width,
                            max_shapes_column_width, top_level_events_only, time_unit)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Chrome trace JSON (gzipped when ``path`` ends in ``.gz``): opens in Perfetto and
        chrome://tracing."""
        doc = chrome_trace(self, self._base_ns, self._trace_meta)
        data = json.dumps(doc)
        if path.endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.write(data)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(data)


# ---------------------------------------------------------------------- formatting
def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


def _format_count(n: float, unit: str) -> str:
    """1234567 -> '1.235 M<unit>'."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= scale:
            return f"{n / scale:.3f} {prefix}{unit}"
    return f"{int(n)} {unit}"


def _in_unit(time_us: float, unit: str | None) -> str:
    if unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if unit == "us":
        return f"{time_us:.3f}us"
    return _format_time(time_us)


def _roofline(e: Any, peaks: tuple[float, float] | None) -> str:
    t = e.device_time_total
    if peaks is None or t <= 0 or (e.device_bytes == 0 and e.device_flops_total == 0):
        return "n/a" if peaks is None else "--"
    bw, flops = peaks
    ideal_us = max(e.device_bytes / bw, e.device_flops_total / flops) * 1e6
    return f"{ideal_us / t:.2f}"


def _build_table(events: EventList, sort_by: str | None, header: str | None, row_limit: int,
                 max_src_column_width: int | None, max_name_column_width: int | None,
                 max_shapes_column_width: int | None, top_level_events_only: bool, time_unit: str | None) -> str:
    if len(events) == 0:
        return ""
    use_device = events._use_device
    profile_memory = events._profile_memory
    with_flops = events._with_flops
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    has_input_shapes = any(e.input_shapes for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device")
        events = events._like(sorted(events, key=lambda e: getattr(e, attr), reverse=True))
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    has_stack = bool(stacks)
    src_width = 0
    if has_stack:
        src_width = max(max(len(s) for s in st) for st in stacks) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)
    dev = (use_device or "cuda").upper()

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device and has_device_mem:
            headers += [f"{dev} Mem", f"Self {dev} Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_input_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if has_stack:
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    flops_scale, flops_header = 1.0, ""
    if with_flops:
        raw = [e.flops for e in events if e.flops > 0]
        if raw:
            flops_scale, flops_header = _flops_unit(min(raw))
            headers.append(f"Total {flops_header}")
            widths.append(12)
            aligns.append(">")
        else:
            with_flops = False
    if has_device_time:
        headers += [f"{dev} bytes", f"{dev} FLOPs", "Roofline"]
        widths += [12, 12, 9]
        aligns += [">", ">", ">"]
    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    sum_self_cpu = sum(e.self_cpu_time_total for e in events)
    sum_self_device = sum(e.self_device_time_total for e in events
                          if e.device_type is not DeviceType.CPU and not e.is_user_annotation)
    out: list[str] = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row: list[Any] = [name, _format_time_share(e.self_cpu_time_total, sum_self_cpu),
                          _in_unit(e.self_cpu_time_total, time_unit),
                          _format_time_share(e.cpu_time_total, sum_self_cpu),
                          _in_unit(e.cpu_time_total, time_unit), _in_unit(e.cpu_time, time_unit)]
        if has_device_time:
            row += [_in_unit(e.self_device_time_total, time_unit),
                    _format_time_share(e.self_device_time_total, sum_self_device),
                    _in_unit(e.device_time_total, time_unit), _in_unit(e.device_time, time_unit)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                row += [_format_memory(e.device_memory_usage), _format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if has_input_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if has_stack:
            row.append(_trim_path(e.stack[0], src_width) if e.stack else "")
        if with_flops:
            row.append("--" if e.flops <= 0 else f"{e.flops * flops_scale:8.3f}")
        if has_device_time:
            row += [_format_count(e.device_bytes, "B") if e.device_bytes else "--",
                    _format_count(e.device_flops_total, "") if e.device_flops_total else "--",
                    _roofline(e, events._peaks)]
        out.append(row_format.format(*row))
        if has_stack:
            blank = [""] * (len(headers) - 1)
            for entry in e.stack[1:]:
                out.append(row_format.format(*(blank[:headers.index("Source Location")]
                                               + [_trim_path(entry, src_width)]
                                               + blank[headers.index("Source Location"):])))
    out.append(sep)
    out.append(f"Self CPU time total: {_in_unit(sum_self_cpu, time_unit)}")
    if has_device_time:
        out.append(f"Self {dev} time total: {_in_unit(sum_self_device, time_unit)}")
        if events._device_note:
            out.append(events._device_note)
    return "".join(line + "\n" for line in out)


def _flops_unit(smallest: int) -> tuple[float, str]:
    names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
    k = 0
    while k + 1 < len(names) and smallest >= 1000 ** (k + 1):
        k += 1
    return 1000.0 ** -k, names[k]


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


# ---------------------------------------------------------------------- chrome trace
_GPU_STREAM = 7  # the track id PyTorch's traces give the default stream


def chrome_trace(events: Iterable[FunctionEvent], base_ns: int, meta: dict[str, Any]) -> dict[str, Any]:
    """The Chrome trace document: complete ("X") events with ``ts``/``dur`` in microseconds, CPU events on
    their thread's track in this process, device work on a track per device (``pid`` = device index); a flow
    ("ac2g") from each launching CPU event to its kernel, whose ``correlation`` names it too."""
    pid = os.getpid()
    trace: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
    ]
    threads: set[int] = set()
    devices: set[int] = set()
    by_id = {}
    for e in events:
        by_id[e.id] = e
    for e in events:
        ev: dict[str, Any] = {"ph": "X", "cat": e.category, "name": e.trace_name, "ts": e.time_range.start,
                              "dur": e.time_range.elapsed_us()}
        if e.device_type is DeviceType.CPU:
            threads.add(e.thread)
            ev.update(pid=pid, tid=e.thread, args={"External id": e.id})
            if e.input_shapes:
                ev["args"]["Input Dims"] = e.input_shapes
            if e.cpu_memory_usage or e.device_memory_usage:
                ev["args"].update({"CPU Mem": e.cpu_memory_usage, "Device Mem": e.device_memory_usage})
        else:
            devices.add(e.device_index)
            ev.update(pid=e.device_index, tid=_GPU_STREAM,
                      args={"device": e.device_index, "stream": _GPU_STREAM, "correlation": e.correlation_id,
                            "grid": list(e.grid), "block": list(e.block), "shared memory": e.shared_memory,
                            "bytes read": e.bytes_read, "bytes written": e.bytes_written, "FLOPs": e.device_flops})
            launcher = by_id.get(e.correlation_id)
            if launcher is not None:
                ev["args"]["External id"] = launcher.id
                flow = {"id": e.id, "cat": "ac2g", "name": "ac2g"}
                trace.append({"ph": "s", "pid": pid, "tid": launcher.thread, "ts": launcher.time_range.start,
                              **flow})
                trace.append({"ph": "f", "bp": "e", "pid": e.device_index, "tid": _GPU_STREAM,
                              "ts": e.time_range.start, **flow})
        trace.append(ev)
    for tid in sorted(threads):
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}})
    for d in sorted(devices):
        trace.append({"ph": "M", "name": "process_name", "pid": d, "tid": 0, "args": {"name": f"GPU {d}"}})
        trace.append({"ph": "M", "name": "process_labels", "pid": d, "tid": 0, "args": {"labels": f"GPU {d}"}})
        trace.append({"ph": "M", "name": "thread_name", "pid": d, "tid": _GPU_STREAM,
                      "args": {"name": f"stream {_GPU_STREAM}"}})
    return {"schemaVersion": 1, **meta, "displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns,
            "traceEvents": trace, "traceName": f"minitorch_gpu profile {time.strftime('%Y-%m-%d %H:%M:%S')}"}
