"""Building the CPU backend's compiled loops (kernels/*_cpu.cpp): the compiler flags, the cache key, and the order
in which builds are tried. Shared by the fused optimizer step (``_optim_native``) and the elementwise maps
(``_elementwise_native``); the cache and its checks are ``minitorch_gpu._native``'s.
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

from .. import _native

__all__ = ["cpu_signature", "flags", "build", "LazyLibrary"]

L = TypeVar("L")


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


def flags(native: bool) -> list[str]:
    # contraction off keeps every product and sum rounded on its own, as NumPy's ufuncs do (bit-identical
    # results); errno/trapping off lets sqrt and the selects vectorise
    out = ["-std=c++17", "-O3", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-fPIC", "-shared"]
    if not native:
        return out
    out.append("-march=native")
    if platform.machine() in ("x86_64", "AMD64"):
        # where AVX-512 exists, full-width vectors take about 3% off an optimizer step (measured on AMD EPYC); the
        # compiler's default tuning prefers 256 bits
        out.append("-mprefer-vector-width=512")
    return out


def build(stem: str, sources: Sequence[Path], abi: str, error: type[Exception], purpose: str,
          extras: Sequence[Sequence[str]] = ((),)) -> tuple[Path, ctypes.CDLL]:
    """Compile ``sources[0]`` (the others are headers it includes, part of the cache key) into
    ``lib<stem>-<key>.so`` and load it. Tries, in order, each of ``extras`` (extra flags and libraries) with
    ``-march=native`` and then without it (vector width is most of the speed, but not every compiler knows it);
    raises ``error`` with the last failure when none builds."""
    cxx = _native.compiler()
    cid = _native.compiler_id(cxx, error, purpose)
    texts = [p.read_bytes() for p in sources]
    d = _native.cache_dir("cpu", error, purpose)
    last: Exception | None = None
    for extra in extras:
        for native in (True, False):
            fl = flags(native)
            key = _native.sha(abi, cid, fl, list(extra), cpu_signature(), *texts)[:24]
            path = d / f"lib{stem}-{key}.so"
            # NOTE: libraries (-l...) must follow the source on the command line for the linker to use them
            cmd = [cxx, *fl, f"-I{sources[0].parent}", str(sources[0]), *extra]
            try:
                return path, _native.build_library(path, cmd, f"kernels/{sources[0].name}", error, purpose)
            except (error, OSError) as e:
                last = e
    assert last is not None
    raise last


class LazyLibrary(Generic[L]):
    """A compiled library built on first use, once per process: ``get()`` returns it, or None when the environment
    variable ``env`` is "0" or the build failed (reported once as a RuntimeWarning; ``reason`` says why). The
    state lives in the dict ``state`` ({"lib", "tried", "reason"}) so that tests can reset it."""

    def __init__(self, build: Callable[[], L], env: str, purpose: str, fallback: str) -> None:
        self.build = build
        self.env = env
        self.purpose = purpose
        self.fallback = fallback
        self.state: dict[str, Any] = {"lib": None, "tried": False, "reason": None}
        self._lock = threading.Lock()

    def get(self) -> L | None:
        st = self.state
        if st["tried"]:
            lib: L | None = st["lib"]
            return lib
        with self._lock:
            if not st["tried"]:
                if os.environ.get(self.env, "1") == "0":
                    st["reason"] = f"switched off by {self.env}=0"
                else:
                    try:
                        st["lib"] = self.build()
                    except (RuntimeError, OSError) as e:
                        st["reason"] = str(e)
                        warnings.warn(f"minitorch_gpu: {self.purpose} is unavailable, {self.fallback} ({e}). Set "
                                      f"{self.env}=0 to skip the build.", RuntimeWarning, stacklevel=3)
                st["tried"] = True
        lib = st["lib"]
        return lib

    @property
    def reason(self) -> str | None:
        """Why ``get()`` returns None (None when it does not)."""
        self.get()
        r: str | None = self.state["reason"]
        return r
