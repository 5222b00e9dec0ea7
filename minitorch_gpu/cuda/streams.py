"""``torch.cuda.Stream``, ``Event`` and the ``stream`` context, over CuPy's streams and events on a GPU.

Our kernels and CuPy's built-ins launch on CuPy's current stream, so making a stream current (``with
mt.cuda.stream(s):``) sends every op there, as in PyTorch. On the simulated device all work is done when its
call returns: streams are always idle, and events are timed with the host clock.
"""
from __future__ import annotations

import time
from typing import Any

from .. import _device
from ..backends.cuda import device as _probe

__all__ = ["Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream", "set_stream"]


def _index(device: Any) -> int:
    if device is None:
        return _probe.current_device()
    if isinstance(device, int):
        return device
    d = _device.device(device)
    return _probe.current_device() if d.index is None else d.index


def _gpu() -> Any:
    """CuPy, or None on the simulator."""
    _probe.check_device(0)
    return None if _probe.is_simulated() else _probe.runtime()


class Stream:
    """A queue of device work. ``Stream(device=None, priority=0)`` makes a new one (non-blocking with
    respect to the default stream, as PyTorch's pool streams are)."""

    def __init__(self, device: Any = None, priority: int = 0, *, _wrap: Any = None) -> None:
        self.device_index = _index(device)
        self.priority = priority
        cp = _gpu()
        if _wrap is not None or cp is None:
            self._cp = _wrap
        else:
            with cp.cuda.Device(self.device_index):
                self._cp = cp.cuda.Stream(non_blocking=True, priority=priority)

    @property
    def device(self) -> Any:
        return _device.device("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` (0 is the default stream)."""
        return int(self._cp.ptr) if self._cp is not None else 0

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for ``event``."""
        if self._cp is not None and event._cp is not None:
            self._cp.wait_event(event._cp)

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on this stream wait for the work queued so far on ``stream``."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one if None) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        """Whether all work on this stream has finished."""
        return True if self._cp is None else bool(self._cp.done)

    def synchronize(self) -> None:
        """Wait for all work on this stream."""
        if self._cp is not None:
            self._cp.synchronize()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Stream) and self.cuda_stream == other.cuda_stream
                and self.device_index == other.device_index)

    def __hash__(self) -> int:
        return hash((self.cuda_stream, self.device_index))

    def __enter__(self) -> Stream:
        self._ctx = StreamContext(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)

    def __repr__(self) -> str:
        return f"<minitorch_gpu.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A marker in a stream: ``Event(enable_timing=False, blocking=False, interprocess=False)``."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        if interprocess:
            raise NotImplementedError("interprocess CUDA events are not supported")
        self.enable_timing = enable_timing
        self.blocking = blocking
        self._recorded = False
        self._host_time = 0.0
        cp = _gpu()
        self._cp = None if cp is None else cp.cuda.Event(block=blocking, disable_timing=not enable_timing)

    def record(self, stream: Stream | None = None) -> None:
        """Record on ``stream`` (the current stream if None)."""
        if stream is None:
            stream = current_stream()
        if self._cp is not None:
            self._cp.record(stream._cp)
        else:
            self._host_time = time.perf_counter()
        self._recorded = True

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on ``stream`` (the current one if None) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """Whether the work before the record has finished (True if never recorded)."""
        return True if self._cp is None else bool(self._cp.done)

    def synchronize(self) -> None:
        """Wait until the recorded work has finished."""
        if self._cp is not None:
            self._cp.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, both with timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if self._cp is None or end_event._cp is None:
            return (end_event._host_time - self._host_time) * 1e3
        cp = _probe.runtime()
        end_event._cp.synchronize()
        return float(cp.cuda.get_elapsed_time(self._cp, end_event._cp))

    def __repr__(self) -> str:
        return f"<minitorch_gpu.cuda.Event {'recorded' if self._recorded else 'uninitialized'}>"


def current_stream(device: Any = None) -> Stream:
    """The stream new work on ``device`` goes to."""
    cp = _gpu()
    idx = _index(device)
    if cp is None:
        return Stream(idx, _wrap=None)
    with cp.cuda.Device(idx):
        return Stream(idx, _wrap=cp.cuda.get_current_stream())


def default_stream(device: Any = None) -> Stream:
    """The device's default (legacy NULL) stream."""
    cp = _gpu()
    idx = _index(device)
    return Stream(idx, _wrap=None if cp is None else cp.cuda.Stream.null)


class StreamContext:
    """Makes a stream current inside a ``with`` block (None: no change)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._prev: Any = None

    def __enter__(self) -> Stream | None:
        s = self.stream
        if s is not None and s._cp is not None:
            self._prev = _probe.runtime().cuda.get_current_stream()
            s._cp.use()
        return s

    def __exit__(self, *exc: object) -> None:
        if self._prev is not None:
            self._prev.use()
            self._prev = None


def stream(stream: Stream | None) -> StreamContext:
    """``with mt.cuda.stream(s):`` queues the block's work on ``s``."""
    return StreamContext(stream)


def set_stream(stream: Stream) -> None:
    """Make ``stream`` current (prefer the ``stream`` context)."""
    if stream._cp is not None:
        stream._cp.use()
