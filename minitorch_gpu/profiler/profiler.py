"""``torch.profiler``'s API: ``profile`` (a context manager with ``start``/``stop``/``step`` and a ``schedule``),
``ProfilerActivity``, ``ProfilerAction``, ``schedule``, ``record_function``, ``tensorboard_trace_handler``."""
from __future__ import annotations

import contextlib
import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from .. import _op_range
from ..backends.cuda import device as _probe
from ._events import EventList
from ._recorder import Recorder

__all__ = ["ProfilerActivity", "ProfilerAction", "schedule", "profile", "record_function",
           "tensorboard_trace_handler", "supported_activities"]


class ProfilerActivity(enum.Enum):
    """What to record: CPU ops (``CPU``) and the work they run on a GPU (``CUDA``)."""
    CPU = 0
    CUDA = 2

    def __repr__(self) -> str:
        return f"<ProfilerActivity.{self.name}: {self.value}>"


class ProfilerAction(enum.Enum):
    """What the profiler does during a step, as a ``schedule`` says."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """CPU, and CUDA when a GPU (or the simulator) is there."""
    out = {ProfilerActivity.CPU}
    if _probe.is_available():
        out.add(ProfilerActivity.CUDA)
    return out


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """A step -> action function: skip ``skip_first`` steps, then cycle through ``wait`` idle steps, ``warmup``
    steps and ``active`` recorded steps (the last one saves the trace), ``repeat`` times (0: until the end).

    >>> s = schedule(wait=1, warmup=1, active=2)
    >>> [s(i).name for i in range(5)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


class record_function(contextlib.ContextDecorator):
    """Mark a block (or every call of a decorated function) as a named range: a ``user_annotation`` event
    while a profiler records, an NVTX range while NVTX is on, nothing otherwise.

    >>> with record_function("data loading"):
    ...     pass
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._pushed: list[bool] = []  # one entry per open use (a decorated function may recurse)

    def __enter__(self) -> record_function:
        on = _op_range.enabled
        if on:
            _op_range.push(_op_range.USER, self.name)
        self._pushed.append(on)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pushed and self._pushed.pop():
            _op_range.pop()


_NOT_FINISHED = ("Profiler didn't finish running: read its events after the `with` block, after stop(), or in "
                 "on_trace_ready")


class profile:
    """Record CPU ops and GPU kernels between ``start()`` and ``stop()`` (or in a ``with`` block).

    >>> from minitorch_gpu.profiler import profile, ProfilerActivity
    >>> import minitorch_gpu as torch
    >>> with profile(activities=[ProfilerActivity.CPU]) as prof:
    ...     y = torch.ones(2, 2) @ torch.ones(2, 2)
    >>> prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)  # doctest: +SKIP
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, use_cuda: bool | None = None) -> None:
        acts = set(activities) if activities is not None else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning,
                          stacklevel=2)
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
            else:
                acts.discard(ProfilerActivity.CUDA)
        if not acts:
            raise AssertionError("No valid profiler activities found")
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"activities must be ProfilerActivity values, got {a!r}")
        self.activities = acts
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn: record_function | None = None
        self._recorder: Recorder | None = None
        self._events: EventList | None = None
        A = ProfilerAction
        self._action_map: dict[tuple[ProfilerAction, ProfilerAction | None], list[Callable[[], Any]]] = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self._prepare_trace],
            (A.NONE, A.RECORD): [self._prepare_trace, self._start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self._prepare_trace, self._start_trace],
            (A.WARMUP, A.NONE): [partial(warnings.warn, "Incorrect schedule: WARMUP followed by NONE"),
                                 self._start_trace, self._stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self._start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self._start_trace],
            (A.RECORD, A.NONE): [partial(warnings.warn, "Incorrect schedule: RECORD followed by NONE"),
                                 self._stop_trace],
            (A.RECORD, A.WARMUP): [partial(warnings.warn, "Incorrect schedule: RECORD followed by WARMUP"),
                                   self._stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self._stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self._stop_trace, self._trace_ready, self._prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self._stop_trace, self._trace_ready, self._prepare_trace,
                                            self._start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self._stop_trace, self._trace_ready, self._prepare_trace,
                                                     self._start_trace],
            (A.WARMUP, None): [self._start_trace, self._stop_trace],
            (A.RECORD, None): [self._stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self._stop_trace, self._trace_ready],
        }

    # ------------------------------------------------------------------ the state machine
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Signal that the next step starts: the schedule decides what it records."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def _transit_action(self, prev: ProfilerAction, current: ProfilerAction | None) -> None:
        for action in self._action_map.get((prev, current), []):
            action()

    def _prepare_trace(self) -> None:
        cuda = ProfilerActivity.CUDA in self.activities
        self._recorder = Recorder(cpu=ProfilerActivity.CPU in self.activities, cuda=cuda,
                                  record_shapes=self.record_shapes, profile_memory=self.profile_memory,
                                  with_stack=self.with_stack, with_flops=self.with_flops,
                                  with_modules=self.with_modules)

    def _start_trace(self) -> None:
        if self._recorder is None:
            self._prepare_trace()
        assert self._recorder is not None
        self._recorder.start()

    def _stop_trace(self) -> None:
        if self._recorder is not None and self._recorder.running:
            self._events = self._recorder.stop()
        self._recorder = None

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ------------------------------------------------------------------ results
    def events(self) -> EventList:
        """Every event of the last finished trace, in start order."""
        if self._events is None:
            raise RuntimeError(_NOT_FINISHED)
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events averaged by name (and input shapes, or the top ``group_by_stack_n`` stack frames)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last trace as Chrome trace JSON (Perfetto, chrome://tracing); gzipped for ``.gz``."""
        self.events().export_chrome_trace(path)


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` that writes each trace to ``dir_name/<worker>.<time_ns>.pt.trace.json``."""
    def handler_fn(prof: profile) -> None:
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise RuntimeError("Can't create directory: " + dir_name) from e
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn
