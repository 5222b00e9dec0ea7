"""NVTX ranges for Nsight Systems: every op and every module forward as a named range when
``MINITORCH_GPU_NVTX=1``.

The hook points are two calls, ``range_push(name)`` / ``range_pop()`` or the ``range(name)`` context manager,
placed in ``Op.apply`` (the op's node name, e.g. ``AddBackward0``) and ``Module.__call__`` (the module's class
name). With the switch off (the default) or without the ``nvtx`` package (the ``nvtx`` extra) ``enabled`` is
False and the callers skip the calls entirely, so the cost is one module-global read per op.

It lives with the CUDA runtime, below autograd and nn which call it; ``mt.cuda.nvtx`` is this module.

    >>> from minitorch_gpu.cuda import nvtx
    >>> with nvtx.range("data loading"):
    ...     pass
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

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
    return enabled


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
