"""The CPU backend's compiled kernels (kernels/*_cpu.cpp): each one C++ file built with the host compiler for this
CPU on first use (``_native``'s verified cache), loaded once per process, and run over the backend's thread pool.
Shared by the fused optimizer step (``_optim_native``), the elementwise maps (``_elementwise_native``) and the
convolution, pooling and batch-norm loops (``_cnn_native``).

A library is switched off by its environment variable set to ``0`` (``MINITORCH_GPU_NATIVE_OPTIM``,
``MINITORCH_GPU_NATIVE_ELEMENTWISE``, ``MINITORCH_GPU_NATIVE_NN``); a build failure is reported once as a
warning, and the callers run their NumPy bodies from then on.
"""
from __future__ import annotations

import ctypes
import os
import platform
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from .. import _native
from ._optim import _pool

__all__ = ["NativeBuildError", "CpuLibrary", "address", "build", "compile_flags", "cpu_signature", "data_offset",
           "run_counted", "run_parallel"]

L = TypeVar("L")


class NativeBuildError(RuntimeError):
    """A native CPU library could not be built (or disagrees with the Python side)."""


def cpu_signature() -> str:
    """What ``-march=native`` depends on: the cache key must change when the same home directory is used from a
    different kind of CPU."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features", "model name", "CPU part")):
                    return line.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def compile_flags(native: bool) -> list[str]:
    """The compiler flags of every CPU library; ``native`` targets this CPU (``-march=native``)."""
    # contraction off keeps every product and sum rounded on its own, as NumPy's ufuncs do (bit-identical
    # results); errno/trapping off lets sqrt and the selects vectorise
    flags = ["-std=c++17", "-O3", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-fPIC", "-shared"]
    if not native:
        return flags
    flags.append("-march=native")
    if platform.machine() in ("x86_64", "AMD64"):
        # where AVX-512 exists, full-width vectors take about 3% off an optimizer step (measured on AMD EPYC);
        # the compiler's default tuning prefers 256 bits
        flags.append("-mprefer-vector-width=512")
    return flags


def build(stem: str, sources: Sequence[Path], abi: str, purpose: str,
          extras: Sequence[Sequence[str]] = ((),)) -> tuple[Path, ctypes.CDLL]:
    """Compile ``sources[0]`` (the others are headers it includes, part of the cache key) into
    ``lib<stem>-<key>.so`` and load it. Tries, in order, each of ``extras`` (extra flags and libraries, placed
    after the source; a later flag wins over :func:`compile_flags`) with ``-march=native`` and then without it
    (vector width is most of the speed, but not every compiler knows it); raises NativeBuildError with the last
    failure when none builds. ``abi`` is part of the cache key: bump it when the Python side's expectations
    change."""
    cxx = _native.compiler()
    cid = _native.compiler_id(cxx, NativeBuildError, purpose)
    texts = [p.read_bytes() for p in sources]
    d = _native.cache_dir("cpu", NativeBuildError, purpose)
    last: Exception | None = None
    for extra in extras:
        for native in (True, False):
            flags = compile_flags(native)
            key = _native.sha(abi, cid, flags, list(extra), cpu_signature(), *texts)[:24]
            path = d / f"lib{stem}-{key}.so"
            # NOTE: libraries (-l...) must follow the source on the command line for the linker to use them
            cmd = [cxx, *flags, f"-I{sources[0].parent}", str(sources[0]), *extra]
            try:
                return path, _native.build_library(path, cmd, f"kernels/{sources[0].name}", NativeBuildError,
                                                   purpose)
            except (NativeBuildError, OSError) as e:
                last = e
    assert last is not None
    raise last


class CpuLibrary(Generic[L]):
    """A compiled library built by ``build()`` on first use, once per process: :meth:`get` returns it, or None
    when the environment variable ``switch`` is "0" or the build failed (reported once as a RuntimeWarning that
    says what the callers do instead, ``fallback``; :attr:`reason` says why). The state lives in the dict
    ``state`` ({"lib", "tried", "reason"}) so that tests can set it."""

    def __init__(self, build: Callable[[], L], switch: str, purpose: str, fallback: str) -> None:
        self.build, self.switch, self.purpose, self.fallback = build, switch, purpose, fallback
        self.state: dict[str, Any] = {"lib": None, "tried": False, "reason": None}
        self._lock = threading.Lock()

    def get(self) -> L | None:
        st = self.state
        if not st["tried"]:
            with self._lock:
                if not st["tried"]:
                    if os.environ.get(self.switch, "1") == "0":
                        st["reason"] = f"switched off by {self.switch}=0"
                    else:
                        try:
                            st["lib"] = self.build()
                        except (RuntimeError, OSError) as e:
                            st["reason"] = str(e)
                            warnings.warn(f"minitorch_gpu: {self.purpose} is unavailable, {self.fallback} ({e}). "
                                          f"Set {self.switch}=0 to skip the build.", RuntimeWarning, stacklevel=3)
                    st["tried"] = True
        lib: L | None = st["lib"]
        return lib

    @property
    def reason(self) -> str | None:
        """Why :meth:`get` returns None (None when it does not)."""
        self.get()
        r: str | None = self.state["reason"]
        return r

    def forget(self) -> None:
        """Drop the loaded library, so that the next :meth:`get` decides again (tests)."""
        with self._lock:
            self.state.update(lib=None, tried=False, reason=None)


def run_parallel(call: Callable[[], None], workers: int, threads: int) -> None:
    """``call()`` on ``workers`` threads at once (this one included) from the backend's pool of ``threads``.

    The calls share their work through a counter of the native entry point, so the split cannot change results.
    """
    if workers <= 1:
        call()
        return
    futures = [_pool(threads).submit(call) for _ in range(1, workers)]
    try:
        call()
    finally:
        for f in futures:
            f.result()


def run_counted(fn: Callable[..., int], args: Sequence[Any], workers: int, threads: int, what: str,
                after: Sequence[Any] = ()) -> None:
    """``fn(*args, next, *after)`` on ``workers`` threads (this one included) sharing one work counter ``next`` (a
    ``long long`` starting at 0) from which the native entry takes its pieces; raises RuntimeError naming ``what``
    when the entry returns non-zero."""
    counter = ctypes.c_longlong(0)
    ref = ctypes.byref(counter)
    if workers <= 1:
        rc = fn(*args, ref, *after)
        if rc:
            raise RuntimeError(f"{what} rejected its arguments (code {rc})")
        return
    failed: list[int] = []

    def call() -> None:
        r = fn(*args, ref, *after)
        if r:
            failed.append(r)

    run_parallel(call, workers, threads)
    if failed:
        raise RuntimeError(f"{what} rejected its arguments (code {failed[0]})")


def data_offset() -> int:
    """Where a NumPy array object keeps its data pointer (right after the object header in every NumPy), found
    and checked on arrays of several kinds, or -1 (then Python passes data addresses itself)."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return -1
    probes: list[Any] = [np.empty(3, np.float32), np.zeros((4, 5))[1:], np.arange(9.0)[::2],
                         np.ones((2, 3), np.float32).T]
    want = [a.__array_interface__["data"][0] for a in probes]
    for off in range(8, 72, 8):
        if all(ctypes.c_uint64.from_address(id(a) + off).value == w for a, w in zip(probes, want)):
            return off
    return -1


def _addresses() -> Callable[[Any], int]:
    """The data address of a NumPy array: read straight from the array object where its layout was checked
    (:func:`data_offset`; a fifth of ``arr.ctypes.data``'s cost, which matters on small arrays)."""
    off = data_offset()
    if off < 0:
        return lambda a: int(a.ctypes.data)
    read = ctypes.c_uint64.from_address
    return lambda a: int(read(id(a) + off).value)


address = _addresses()
"""The data address of a NumPy array (see ``_addresses``)."""
