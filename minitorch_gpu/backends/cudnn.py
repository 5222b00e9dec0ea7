"""``mt.backends.cudnn``: PyTorch's cuDNN switches, kept so that scripts setting them run unchanged.

No op here uses cuDNN (convolutions are im2col and our GEMMs, recurrent layers our fused cell kernels), so
``is_available()`` is False and ``version()`` None, as on a PyTorch build without cuDNN, and the switches are
stored and read back without changing any computation:

    >>> import minitorch_gpu.backends.cudnn as cudnn
    >>> cudnn.benchmark = True            # what training scripts set; nothing here autotunes
    >>> cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, cudnn.enabled
    (True, False, True, True)
    >>> cudnn.benchmark = False
"""
from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._flags import BoolFlag

__all__ = ["is_available", "version", "is_acceptable", "flags", "set_flags"]


def is_available() -> bool:
    """False: no op of this package calls cuDNN."""
    return False


def version() -> int | None:
    """cuDNN's version as an int, None where cuDNN is not used (always, here)."""
    return None


def is_acceptable(tensor: Any) -> bool:
    """Whether cuDNN would take ``tensor``: never, here."""
    return False


def set_flags(_enabled: bool | None = None, _benchmark: bool | None = None, _benchmark_limit: int | None = None,
              _deterministic: bool | None = None, _allow_tf32: bool | None = None) -> tuple[Any, ...]:
    """Set the switches given (None leaves one as it is); returns the previous values, in this order."""
    mod: Any = sys.modules[__name__]
    orig = (mod.enabled, mod.benchmark, mod.benchmark_limit, mod.deterministic, mod.allow_tf32)
    for name, value in (("enabled", _enabled), ("benchmark", _benchmark), ("deterministic", _deterministic),
                        ("allow_tf32", _allow_tf32)):
        if value is not None:
            setattr(mod, name, value)
    return orig


@contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10, deterministic: bool = False,
          allow_tf32: bool = True) -> Iterator[None]:
    """Set every switch for the duration of a block (PyTorch's defaults for the block turn cuDNN off)."""
    orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32)
    try:
        yield
    finally:
        set_flags(*orig)


class _CudnnModule(types.ModuleType):
    """This module's class: its switches are attributes that refuse non-bools, as PyTorch's ``CudnnModule``."""

    enabled = BoolFlag(True, "set_enabled_cudnn")
    benchmark = BoolFlag(False, "set_benchmark_cudnn")
    deterministic = BoolFlag(False, "set_deterministic_cudnn")
    # NOTE: PyTorch's setter for this switch names cuBLAS in its message
    allow_tf32 = BoolFlag(True, "set_allow_tf32_cublas")


# the number of algorithms benchmark mode tries: None where cuDNN is not available, as in PyTorch
benchmark_limit: int | None = None

sys.modules[__name__].__class__ = _CudnnModule
