"""Checks that stay on the device until the next synchronisation, and PyTorch's sync debug mode.

A range check on embedding indices or a kernel's error flag needs the device's answer; reading it at once
(``int(flag[0])``) waits for the GPU to drain, which on a GPU costs more than the op. A CUDA backend instead
keeps the flag (a small device array) with a function that turns its host value into the error, and reads all
pending flags in one transfer at the next point where the host waits anyway: ``to_numpy`` (``item()``,
``tolist()``, ``cpu()``, printing) and ``synchronize``. The error raised there is the one the CPU raises at the
op itself (same type and message); the device keeps working, unlike after a CUDA device-side assert.
``CUDA_LAUNCH_BLOCKING=1`` reads every check at its op.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Callable

import numpy as np

__all__ = ["set_sync_debug_mode", "get_sync_debug_mode", "note_sync", "launch_blocking", "DeferredChecks",
           "SYNC_MESSAGE"]

SYNC_MESSAGE = "called a synchronizing CUDA operation"
_MODES = {"default": 0, "warn": 1, "error": 2}
_mode = [0]

# a loop that never synchronises must not hold device flags forever: past this many, they are read early
_MAX_PENDING = 256


def set_sync_debug_mode(debug_mode: int | str) -> None:
    """PyTorch's ``torch.cuda.set_sync_debug_mode``: 0/"default" ignore synchronising operations, 1/"warn"
    warns at each, 2/"error" raises RuntimeError at each."""
    if isinstance(debug_mode, str):
        if debug_mode not in _MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = _MODES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"set_sync_debug_mode(): argument 'debug_mode' must be int or str, not "
                        f"{type(debug_mode).__name__}")
    _mode[0] = 0 if debug_mode <= 0 else (1 if debug_mode == 1 else 2)


def get_sync_debug_mode() -> int:
    """The sync debug mode as an int (0 default, 1 warn, 2 error)."""
    return _mode[0]


def note_sync() -> None:
    """Called where the host waits for the device: warns or raises as the sync debug mode says."""
    mode = _mode[0]
    if mode == 2:
        raise RuntimeError(SYNC_MESSAGE)
    if mode == 1:
        warnings.warn(SYNC_MESSAGE, UserWarning, stacklevel=3)


def launch_blocking() -> bool:
    """``CUDA_LAUNCH_BLOCKING=1``: every check is read at its op (read at each call, so tests can set it)."""
    return os.environ.get("CUDA_LAUNCH_BLOCKING", "0") not in ("", "0")


Check = Callable[[np.ndarray], "BaseException | None"]


class DeferredChecks:
    """The pending checks of one device: (device array, check) pairs, read together."""

    def __init__(self, to_host: Callable[[Any], np.ndarray], concat: Callable[[list[Any]], Any]) -> None:
        self._to_host = to_host
        self._concat = concat
        self._pending: list[tuple[Any, int, Check]] = []

    def add(self, values: Any, check: Check) -> None:
        """Queue ``check(host values)``, which returns the error to raise or None. Read at once under
        ``CUDA_LAUNCH_BLOCKING=1`` or when too many are queued."""
        self._pending.append((values, int(values.size), check))
        if launch_blocking() or len(self._pending) > _MAX_PENDING:
            self.flush()

    def flush(self) -> None:
        """Read every pending check in one transfer; raise the first error (all of them are dropped)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        flat = self._concat([v.reshape(-1).astype(np.float64) for v, _, _ in pending])
        host = self._to_host(flat)
        at = 0
        for _, n, check in pending:
            err = check(host[at:at + n])
            at += n
            if err is not None:
                raise err
