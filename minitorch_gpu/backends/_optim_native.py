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
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Literal, TypedDict

import numpy as np

from .. import _native
from ._cpu_library import NativeBuildError
from ._cpu_library import compile_flags as _flags
from ._cpu_library import cpu_signature as _cpu_signature
from ._optim import _pool
from .cuda.fused_step import FusedStep, fused_group_sizes, group_scalar_count
from .cuda.loader import enum_codes, kernel_dir

__all__ = ["available", "unavailable_reason", "run"]

_ABI = "1"
_PURPOSE = "the native CPU optimizer step"
# below this many elements, handing pieces to threads costs more than it saves (a compiled step moves about
# 1 element per ns per thread, a hand-off costs tens of microseconds)
_PARALLEL_MIN_ELEMENTS = 1 << 18
# elements per piece of work handed out to the threads (1 MiB of each float32 array)
_CHUNK = 1 << 18
_DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}
_ROLES = 5  # param, grad and up to three states: optim_cpu.cpp's kRoles

_lock = threading.Lock()


class _LibraryState(TypedDict):
    lib: _Library | None
    tried: bool
    reason: str | None


_state: _LibraryState = {"lib": None, "tried": False, "reason": None}


def _sources() -> tuple[Path, list[Path]]:
    d = Path(kernel_dir())
    return d, [d / "optim_cpu.cpp", d / "optim_math.cuh"]


def _data_offset() -> int:
    """Where a NumPy array object keeps its data pointer (right after the object header in every NumPy), found
    and checked on arrays of several kinds, or -1 (then Python passes data addresses itself)."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return -1
    probes: list[Any] = [np.empty(3, np.float32), np.zeros((4, 5))[1:], np.arange(9.0)[::2], np.ones((2, 3), np.float32).T]
    want = [a.__array_interface__["data"][0] for a in probes]
    for off in range(8, 72, 8):
        if all(ctypes.c_uint64.from_address(id(a) + off).value == w for a, w in zip(probes, want)):
            return off
    return -1


class _Library:
    """The loaded library's two entry points, typed."""

    def __init__(self, path: Path, lib: ctypes.CDLL) -> None:
        i64, ptr = ctypes.c_longlong, ctypes.c_void_p
        self.step = lib.mt_optim_cpu_step
        self.step.restype = ctypes.c_int
        self.step.argtypes = [ctypes.c_int, ctypes.c_int, i64, ptr, i64, ptr, i64, ptr, ptr, ctypes.c_int]
        self.disjoint = lib.mt_optim_cpu_disjoint
        self.disjoint.restype = ctypes.c_int
        self.disjoint.argtypes = [i64, ptr, i64, ptr, ctypes.c_int]
        if lib.mt_optim_cpu_group_scalars() != group_scalar_count():
            raise NativeBuildError(f"{path} disagrees with optim_math.cuh on the number of group scalars")
        self.data_offset = _data_offset()


def _build() -> _Library:
    kdir, srcs = _sources()
    cxx = _native.compiler()
    cid = _native.compiler_id(cxx, NativeBuildError, _PURPOSE)
    texts = [p.read_bytes() for p in srcs]
    d = _native.cache_dir("cpu", NativeBuildError, _PURPOSE)
    last: NativeBuildError | None = None
    # -march=native where the compiler knows it (vector width is most of the speed), else the baseline target
    for native in (True, False):
        key = _native.sha(_ABI, cid, _flags(native), _cpu_signature(), *texts)[:24]
        try:
            path = d / f"liboptim_cpu-{key}.so"
            lib = _native.build_library(path, [cxx, *_flags(native), f"-I{kdir}", str(srcs[0])],
                                        "kernels/optim_cpu.cpp", NativeBuildError, _PURPOSE)
        except NativeBuildError as e:
            last = e
            continue
        return _Library(path, lib)
    assert last is not None
    raise last


def _library() -> _Library | None:
    """The loaded library, built on first use; None when switched off or unbuildable."""
    if _state["tried"]:
        return _state["lib"]
    with _lock:
        if not _state["tried"]:
            if os.environ.get("MINITORCH_GPU_NATIVE_OPTIM", "1") == "0":
                _state["reason"] = "switched off by MINITORCH_GPU_NATIVE_OPTIM=0"
            else:
                try:
                    _state["lib"] = _build()
                except (NativeBuildError, OSError, FileNotFoundError) as e:
                    _state["reason"] = str(e)
                    warnings.warn(f"minitorch_gpu: {_PURPOSE} is unavailable, fused CPU optimizers use the slower "
                                  f"NumPy path ({e}). Set MINITORCH_GPU_NATIVE_OPTIM=0 to skip the build.",
                                  RuntimeWarning, stacklevel=2)
            _state["tried"] = True
    return _state["lib"]


def available() -> bool:
    """Whether the compiled CPU step can run here (builds it on the first call)."""
    return _library() is not None


def unavailable_reason() -> str | None:
    """Why :func:`available` is False (None when it is True)."""
    _library()
    return _state["reason"]


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
    next_chunk = ctypes.c_longlong(0)
    counter = ctypes.addressof(next_chunk)

    def call() -> None:
        rc = lib.step(*args, _CHUNK, counter, *tail)
        if rc != 0:
            raise RuntimeError(f"{_PURPOSE} rejected its arguments (code {rc})")

    # the threads share the pieces through the counter (elementwise work: results cannot depend on who did
    # which), and this thread works too rather than waiting
    futures = [_pool(int(threads)).submit(call) for _ in range(1, workers)]
    try:
        call()
    finally:
        for f in futures:
            f.result()
    return True
