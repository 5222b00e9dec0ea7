"""NVTX ranges for Nsight Systems: every op and every module forward as a named range when
``MINITORCH_GPU_NVTX=1``.

Ops, backward nodes and module calls reach it through the op-range switch (``minitorch_gpu/_op_range.py``),
which the profiler shares: ``enable`` subscribes this module there, and each op's range is named by its node
class (``AddBackward0``), each backward node by ``node.name()``, each module call by the module's class. With
the switch off (the default) or without the ``nvtx`` package (the ``nvtx`` extra) ``enabled`` is False and
nothing is subscribed, so the cost is the switch's one module-global read per op. ``range_push`` /
``range_pop`` and the ``range(name)`` context manager mark ranges of one's own.

It lives with the CUDA runtime, below autograd and nn which call it; ``mt.cuda.nvtx`` is this module.

    >>> from minitorch_gpu.cuda import nvtx
    >>> with nvtx.range("data loading"):
    ...     pass
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any

from ... import _op_range

__all__ = ["enabled", "enable", "range_push", "range_pop", "range"]

_DOMAIN = "minitorch_gpu"
_lib: Any = None  # the nvtx module once loaded (it ships no types)
enabled = False


def _load() -> Any:
    try:
        import nvtx as lib
    except ImportError:
        return None
    return lib


def enable(on: bool = True) -> bool:
    """Turn the ranges on (needs the ``nvtx`` package; returns whether they are on) or off."""
    global _lib, enabled
    if on:
        _lib = _lib or _load()
        enabled = _lib is not None
    else:
        enabled = False
    if enabled:
        _op_range.subscribe(_OP_RANGES)
    else:
        _op_range.unsubscribe(_OP_RANGES)
    return enabled


class _OpRanges:
    """The op-range switch's NVTX subscriber: every op, backward node and module call as a range."""

    def push(self, kind: int, name: str, inputs: Sequence[Any]) -> None:
        _lib.push_range(message=name, domain=_DOMAIN)

    def pop(self) -> None:
        _lib.pop_range(domain=_DOMAIN)


_OP_RANGES = _OpRanges()


def range_push(name: str) -> None:
    """Open a range named ``name`` on this thread (a no-op while disabled)."""
    if enabled:
        _lib.push_range(message=name, domain=_DOMAIN)


def range_pop() -> None:
    """Close the innermost open range of this thread (a no-op while disabled)."""
    if enabled:
        _lib.pop_range(domain=_DOMAIN)


@contextlib.contextmanager
def range(name: str) -> Iterator[None]:  # nvtx's own name, shadowing the builtin on purpose
    """A range around a ``with`` block."""
    if not enabled:
        yield
        return
    _lib.push_range(message=name, domain=_DOMAIN)
    try:
        yield
    finally:
        _lib.pop_range(domain=_DOMAIN)


if os.environ.get("MINITORCH_GPU_NVTX", "0") not in ("", "0"):
    enable(True)
