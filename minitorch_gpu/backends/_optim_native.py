"""The CPU backend's compiled fused optimizer step: kernels/optim_cpu.cpp, built with the host C++ compiler on
first use, cached on disk, and called through ctypes.

NumPy needs about a dozen passes over memory for one Adam step (one per ufunc), where a compiled loop needs one,
so this is what brings the fused CPU step to the speed of PyTorch's. The per-element math is
kernels/optim_math.cuh's, shared with the GPU kernels, compiled with floating-point contraction off, so the
results are bit-identical to the NumPy bodies in ``_optim.py`` (which run whenever this path declines a group:
no compiler, half precision, strided or overlapping arrays).

``MINITORCH_GPU_NATIVE_OPTIM=0`` switches it off. A build failure is reported once as a warning and the NumPy
path is used from then on.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Literal

import numpy as np

from ._cpu_library import CpuLibrary, NativeBuildError, build, parallel_entry
from ._cpu_library import data_offset as _data_offset
from .cuda.fused_step import FusedStep, fused_group_sizes, group_scalar_count
from .cuda.loader import enum_codes, kernel_dir

__all__ = ["available", "unavailable_reason", "run"]

_ABI = "1"
_PURPOSE = "the native CPU optimizer step"
# elements a thread should have before a step is split. Measured on 2 CPUs (2 threads' time over 1's for a whole
# fused AdamW step, in rounds where the second CPU was free): 64K elements 0.89, 128K 0.82-0.95, 256K 0.93-0.98,
# 1M 0.70-0.76 (the step's fixed Python cost is tens of microseconds, and the helper's core fetches its share of
# the gradients from this one's cache)
_PARALLEL_MIN_ELEMENTS = 1 << 16
# elements per piece of work handed out to the threads (256 KiB of each float32 array)
_CHUNK = 1 << 16
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}
_ROLES = 5  # param, grad and up to three states: optim_cpu.cpp's kRoles

def _sources() -> tuple[Path, list[Path]]:
    d = Path(kernel_dir())
    return d, [d / "optim_cpu.cpp", d / "optim_math.cuh", d / "pool_cpu.h"]


class _Library:
    """The loaded library's two entry points, typed (the step through its parallel twin)."""

    def __init__(self, path: Path, lib: ctypes.CDLL) -> None:
        i64, ptr = ctypes.c_longlong, ctypes.c_void_p
        self.step = parallel_entry(lib, "mt_optim_cpu_step",
                                   [ctypes.c_int, ctypes.c_int, i64, ptr, i64, ptr, i64, ptr, ptr, ctypes.c_int])
        self.disjoint = lib.mt_optim_cpu_disjoint
        self.disjoint.restype = ctypes.c_int
        self.disjoint.argtypes = [i64, ptr, i64, ptr, ctypes.c_int]
        if lib.mt_optim_cpu_group_scalars() != group_scalar_count():
            raise NativeBuildError(f"{path} disagrees with optim_math.cuh on the number of group scalars")
        self.data_offset = _data_offset()


def _build() -> _Library:
    _, srcs = _sources()
    path, lib = build("optim_cpu", srcs, _ABI, _PURPOSE)
    return _Library(path, lib)


_loader = CpuLibrary(_build, "MINITORCH_GPU_NATIVE_OPTIM", _PURPOSE,
                     "fused CPU optimizers use the slower NumPy path")
_state = _loader.state


def _library() -> _Library | None:
    """The loaded library, built on first use; None when switched off or unbuildable."""
    return _loader.get()


def available() -> bool:
    """Whether the compiled CPU step can run here (builds it on the first call)."""
    return _library() is not None


def unavailable_reason() -> str | None:
    """Why :func:`available` is False (None when it is True)."""
    return _loader.reason


def run(step: FusedStep, threads: int) -> Literal[True] | None:
    """Run a FusedStep on NumPy arrays with the compiled loop, over up to ``threads`` threads for long groups;
    None (nothing touched) when the library is unavailable or the group does not fit it: a dtype other than
    float32/float64, a strided or read-only array, or two roles of a tensor sharing memory."""
    roles = step.roles
    params = step.params
    if not params:
        return True
    lib = _library()
    if lib is None:
        return None
    dt = params[0].dtype
    code = _DTYPES.get(dt)
    if code is None:
        return None
    group_sizes = fused_group_sizes(step, np.ndarray, dt, writeable=True)
    if group_sizes is None:
        return None
    n = len(group_sizes)
    off = lib.data_offset
    addrs: list[int] = []
    for role in roles:
        if role is None:
            addrs += [0] * n
        else:
            addrs += [id(a) for a in role] if off >= 0 else [a.__array_interface__["data"][0] for a in role]
    addrs += [0] * (n * (_ROLES - len(roles)))  # the library reads five roles
    table = (ctypes.c_uint64 * len(addrs))(*addrs)
    total = sum(group_sizes)
    sizes = (ctypes.c_longlong * n)(*group_sizes)
    if not lib.disjoint(n, table, off, sizes, dt.itemsize):
        return None
    consts = step.consts()
    args = (enum_codes("optim_cpu.cpp", "OptimKind")[step.kind], code, n, table, off, sizes)
    tail = ((ctypes.c_double * len(consts))(*consts), step.flag_bits())
    workers = max(1, min(int(threads), total // _PARALLEL_MIN_ELEMENTS))
    # the threads share the pieces through the counter (elementwise work: results cannot depend on who did
    # which), and this thread works too rather than waiting
    rc = lib.step(workers, *args, _CHUNK, ctypes.byref(ctypes.c_longlong(0)), *tail)
    if rc != 0:
        raise RuntimeError(f"{_PURPOSE} rejected its arguments (code {rc})")
    return True
