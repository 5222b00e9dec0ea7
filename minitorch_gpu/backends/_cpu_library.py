"""The CPU backend's compiled kernels: one C++ file of kernels/ built with the host compiler for this CPU on first
use (``_native``'s verified cache), loaded once per process, and run over the backend's thread pool.

A library is switched off by its environment variable set to ``0`` (``MINITORCH_GPU_NATIVE_OPTIM`` for the
optimizer step, ``MINITORCH_GPU_NATIVE_NN`` for the convolution, pooling and batch-norm loops); a build failure is
reported once as a warning, and the callers run their NumPy bodies from then on.
"""
from __future__ import annotations

import ctypes
import os
import platform
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import _native
from ._optim import _pool
from .cuda.loader import kernel_dir

__all__ = ["NativeBuildError", "CpuLibrary", "compile_flags", "cpu_signature", "run_parallel"]


class NativeBuildError(RuntimeError):
    """A native CPU library could not be built."""


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
        # where AVX-512 exists, full-width vectors take about 3% off a step (measured on AMD EPYC); the
        # compiler's default tuning prefers 256 bits
        flags.append("-mprefer-vector-width=512")
    return flags


class CpuLibrary:
    """``kernels/<source>`` (including ``headers``, which join the cache key) as a loaded library, or None.

    ``abi`` is part of the cache key (bump it when the Python side's expectations change); ``switch`` names the
    environment variable that turns the library off; ``purpose`` names it in messages; ``extra_flags`` follow
    :func:`compile_flags` (a later flag wins).
    """

    def __init__(self, source: str, headers: Sequence[str], abi: str, switch: str, purpose: str,
                 extra_flags: Sequence[str] = ()) -> None:
        self.source, self.headers, self.abi, self.extra_flags = source, tuple(headers), abi, list(extra_flags)
        self.switch, self.purpose = switch, purpose
        self._lock = threading.Lock()
        self._tried = False
        self._lib: ctypes.CDLL | None = None
        self.path: Path | None = None
        self.reason: str | None = None

    def _build(self) -> ctypes.CDLL:
        kdir = Path(kernel_dir())
        srcs = [kdir / self.source] + [kdir / h for h in self.headers]
        cxx = _native.compiler()
        cid = _native.compiler_id(cxx, NativeBuildError, self.purpose)
        texts = [p.read_bytes() for p in srcs]
        d = _native.cache_dir("cpu", NativeBuildError, self.purpose)
        stem = Path(self.source).stem
        last: NativeBuildError | None = None
        # -march=native where the compiler knows it (vector width is most of the speed), else the baseline target
        for native in (True, False):
            flags = compile_flags(native) + self.extra_flags
            key = _native.sha(self.abi, cid, flags, cpu_signature(), *texts)[:24]
            path = d / f"lib{stem}-{key}.so"
            try:
                lib = _native.build_library(path, [cxx, *flags, f"-I{kdir}", str(srcs[0])],
                                            f"kernels/{self.source}", NativeBuildError, self.purpose)
            except NativeBuildError as e:
                last = e
                continue
            self.path = path
            return lib
        assert last is not None
        raise last

    def get(self) -> ctypes.CDLL | None:
        """The loaded library, built on the first call; None when switched off or unbuildable."""
        if self._tried:
            return self._lib
        with self._lock:
            if not self._tried:
                if os.environ.get(self.switch, "1") == "0":
                    self.reason = f"switched off by {self.switch}=0"
                else:
                    try:
                        self._lib = self._build()
                    except (NativeBuildError, OSError) as e:
                        self.reason = str(e)
                        warnings.warn(f"minitorch_gpu: {self.purpose} is unavailable, the CPU uses the slower NumPy "
                                      f"path ({e}). Set {self.switch}=0 to skip the build.", RuntimeWarning,
                                      stacklevel=3)
                self._tried = True
        return self._lib

    def forget(self) -> None:
        """Drop the loaded library, so that the next :meth:`get` decides again (tests)."""
        with self._lock:
            self._tried, self._lib, self.reason = False, None, None


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
