"""The CPU backend's compiled kernels (kernels/*_cpu.cpp): each one C++ file built with the host compiler for this
CPU on first use (``_native``'s verified cache), loaded once per process, and split between threads by one native
worker pool (kernels/pool_cpu.cpp). Shared by the fused optimizer step (``_optim_native``), the elementwise maps
(``_elementwise_native``), the row loops (``_rows_native``), the matrix product (``_gemm_native``) and the
convolution, pooling and batch-norm loops (``_cnn_native``).

A library is switched off by its environment variable set to ``0`` (``MINITORCH_GPU_NATIVE_OPTIM``,
``MINITORCH_GPU_NATIVE_ELEMENTWISE``, ``MINITORCH_GPU_NATIVE_NN``...); a build failure is reported once as a
warning, and the callers run their NumPy bodies from then on.

The pool: every entry point shares its work between threads through a counter in its arguments, so a split is the
same call made on several threads at once. Each library exports, per entry, a parallel twin taking the number of
threads first (kernels/pool_cpu.h's ``MT_PARALLEL``; :func:`parallel_entry` types it), which fans the call out in
native code: one ctypes call and one GIL release whatever the thread count, where a Python pool paid about 75
microseconds per call to wake a helper and hand it the GIL. ``build`` hands every library it loads the pool's run
function, so there is one pool however many libraries use it. ``MINITORCH_GPU_NATIVE_POOL=0`` (or a pool that does
not build) runs every call on the calling thread; ``MINITORCH_GPU_POOL_SPIN_US`` sets how long an idle helper
spins before it sleeps (default 1000).
"""
from __future__ import annotations

import atexit
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
from .cuda.loader import kernel_dir

__all__ = ["NativeBuildError", "CpuLibrary", "POOL", "address", "address_or_none", "build", "compile_flags",
           "cpu_signature", "data_offset", "parallel_entry", "run_counted"]

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
                lib = _native.build_library(path, cmd, f"kernels/{sources[0].name}", NativeBuildError, purpose)
            except (NativeBuildError, OSError) as e:
                last = e
                continue
            if stem != _POOL_STEM:
                _attach(lib)
            return path, lib
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


def parallel_entry(lib: ctypes.CDLL, symbol: str, argtypes: Sequence[Any], restype: Any = ctypes.c_int) -> Any:
    """The parallel twin of the entry ``symbol`` of ``lib`` (exported by ``MT_PARALLEL(symbol)``): a function of
    ``(workers, *args)``, ``args`` typed as ``argtypes``, that runs ``symbol(*args)`` on up to ``workers`` threads
    through the pool and returns the first non-zero result of any of them."""
    address_ = ctypes.c_void_p.in_dll(lib, f"{symbol}_parallel").value
    if not address_:
        raise NativeBuildError(f"{symbol}_parallel is null in {lib._name}")
    return ctypes.CFUNCTYPE(restype, ctypes.c_int, *argtypes)(address_)


def run_counted(fn: Callable[..., int], args: Sequence[Any], workers: int, what: str,
                after: Sequence[Any] = ()) -> None:
    """``fn(workers, *args, next, *after)`` for a parallel twin ``fn`` (:func:`parallel_entry`) whose threads
    share one work counter ``next`` (a ``long long`` starting at 0) from which the native entry takes its
    pieces; raises RuntimeError naming ``what`` when the entry returns non-zero on any thread."""
    rc = fn(workers, *args, ctypes.byref(ctypes.c_longlong(0)), *after)
    if rc:
        raise RuntimeError(f"{what} rejected its arguments (code {rc})")


# ---------------------------------------------------------------------------------------------- the worker pool
_POOL_STEM = "pool_cpu"
_POOL_PURPOSE = "the native CPU worker pool"
_SPIN_ENV = "MINITORCH_GPU_POOL_SPIN_US"


class Pool:
    """The loaded pool library (kernels/pool_cpu.cpp), typed."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        i64, ptr, c_int = ctypes.c_longlong, ctypes.c_void_p, ctypes.c_int
        self.lib = lib
        lib.mt_pool_run.restype = c_int
        lib.mt_pool_run.argtypes = [ptr, ptr, c_int]
        self.run_address: int = ctypes.cast(lib.mt_pool_run, ctypes.c_void_p).value or 0
        lib.mt_pool_configure.restype = i64
        lib.mt_pool_configure.argtypes = [i64]
        lib.mt_pool_threads.restype = c_int
        lib.mt_pool_threads.argtypes = []
        lib.mt_pool_shutdown.restype = None
        lib.mt_pool_shutdown.argtypes = []
        lib.mt_pool_attach.restype = None
        lib.mt_pool_attach.argtypes = [ptr]
        lib.mt_pool_attach(self.run_address)
        self.probe = parallel_entry(lib, "mt_pool_probe", [i64, i64, i64, c_int, ptr, ptr])
        spin = os.environ.get(_SPIN_ENV)
        if spin:
            try:
                self.configure(float(spin))
            except ValueError as e:
                warnings.warn(f"minitorch_gpu: {_SPIN_ENV}={spin!r} is not a number of microseconds in [0, 1e6] ({e}); "
                              "keeping the default", RuntimeWarning, stacklevel=2)
        # no helper may be left spinning in a library the interpreter is tearing down around it
        atexit.register(lib.mt_pool_shutdown)

    def configure(self, spin_us: float) -> float:
        """Set how long (microseconds, up to a second) an idle helper spins before it sleeps; returns the previous
        value."""
        if not 0 <= spin_us <= 1e6:
            raise ValueError(f"the spin time must be a number of microseconds >= 0 and <= 1e6, got {spin_us}")
        return float(self.lib.mt_pool_configure(int(spin_us * 1000))) / 1000

    def spin_us(self) -> float:
        """How long (microseconds) an idle helper spins before it sleeps."""
        return float(self.lib.mt_pool_configure(-1)) / 1000

    def helpers(self) -> int:
        """Helper threads started in this process."""
        return int(self.lib.mt_pool_threads())


def _build_pool() -> Pool:
    d = Path(kernel_dir())
    _, lib = build(_POOL_STEM, [d / "pool_cpu.cpp", d / "pool_cpu.h"], "1", _POOL_PURPOSE,
                   extras=(("-pthread",), ()))
    return Pool(lib)


POOL: CpuLibrary[Pool] = CpuLibrary(_build_pool, "MINITORCH_GPU_NATIVE_POOL", _POOL_PURPOSE,
                                    "the compiled CPU loops run on one thread")


def _attach(lib: ctypes.CDLL) -> None:
    """Hand a freshly loaded kernel library the pool (or nothing: its twins then run on the calling thread)."""
    attach = getattr(lib, "mt_pool_attach", None)
    if attach is None:
        return
    pool = POOL.get()
    attach.restype = None
    attach.argtypes = [ctypes.c_void_p]
    attach(pool.run_address if pool is not None else None)


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


def address_or_none(a: Any) -> int | None:
    """:func:`address` of ``a``, or None (a null pointer for ctypes) for an optional array that is absent."""
    return None if a is None else address(a)
