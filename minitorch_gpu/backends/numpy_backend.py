"""The CPU backend: the primitive table of ``base.Backend`` on NumPy arrays, with glibc told to keep freed memory,
the fused optimizer steps run by the compiled loop of ``_optim_native``, and convolution, max pooling and batch
norm by ``_cnn_cpu``."""
from __future__ import annotations

import ctypes
import os
import sys
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .._device import device
from . import _optim_native
from ._cnn_cpu import CpuCnnMixin
from ._scalar_pow import scalar_pow
from ._types import Array, Operand
from .base import Backend

if TYPE_CHECKING:
    from .cuda.fused_step import FusedStep


# PyTorch computes log(0), 1/0, inf*0 silently (IEEE results); NumPy warns. Entering np.errstate around
# every primitive would cost more than the primitive on small tensors, so the warnings NumPy attributes
# to our own backend modules are filtered once instead; the user's NumPy error state is left alone.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"minitorch_gpu\.backends\.")


# glibc's malloc tunables (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 32 << 20  # the largest value glibc accepts (HEAP_MAX_SIZE / 2 on 64-bit)
_TRIM_THRESHOLD = 1 << 30


def _keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory in the process for reuse instead of handing it back to the OS.

    Every NumPy result is a fresh malloc. By default glibc returns the top of the heap to the OS once a few
    MB there are free, and serves blocks above 128 KB..32 MB with mmap, so the next op's output lands on new
    pages that the kernel zero-fills on first touch: about 0.3-0.5 ms per MB, more than the arithmetic of a
    typical elementwise op (a 4x slower GELU, 2-5x slower im2col, measured). Like PyTorch's caching
    allocator on CUDA, memory freed by one step is reused by the next. Returns whether the setting was
    applied; ``MINITORCH_GPU_KEEP_FREED_MEMORY=0``, or glibc's own ``MALLOC_TRIM_THRESHOLD_`` /
    ``MALLOC_MMAP_THRESHOLD_`` in the environment, leave malloc alone.
    """
    if os.environ.get("MINITORCH_GPU_KEEP_FREED_MEMORY", "1").strip() in ("0", "false", "False", "off"):
        return False
    if "MALLOC_TRIM_THRESHOLD_" in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # NOTE: the trim threshold first: setting the mmap threshold also switches off glibc's dynamic
    # adjustment of both
    ok = mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) == 1 and ok)


KEEPS_FREED_MEMORY = _keep_freed_memory()


class NumpyBackend(CpuCnnMixin, Backend):
    xp = np
    name = "numpy"

    # the compiled fused optimizer step (_optim_native.py); False keeps every step on the NumPy bodies
    native_optim = True

    def __init__(self) -> None:
        self.device = device("cpu")

    def _pow(self, a: Operand, b: Operand, out: Array | None = None) -> Array:
        # glibc's pow is ~50x slower on negative bases: float ** number takes PyTorch's multiplications instead
        r = scalar_pow(a, b)
        if r is None:
            return super()._pow(a, b, out)
        if out is None:
            return r
        np.copyto(out, r)
        return out

    def _fused_step(self, step: FusedStep) -> bool | None:
        if not self.native_optim:
            return None
        return _optim_native.run(step, self._optim_threads())
