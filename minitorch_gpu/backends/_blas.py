"""What NumPy's BLAS is, read from the loaded library: its thread count and the vector width of the kernels it
picked for this CPU. The CPU backend routes each matrix product to BLAS or to its own compiled kernel
(``_gemm_native``), and the better of the two depends on the machine: a BLAS built with ``DYNAMIC_ARCH`` (NumPy's
wheels) chooses its kernels by the CPU it recognises, and on a CPU newer than its tables it falls back to an
older family's (OpenBLAS 0.3.31 runs its 256-bit Haswell kernels on AMD Zen 5, which has AVX-512), while our
kernel is compiled for the CPU it runs on.

Only OpenBLAS (NumPy's own wheels, ``scipy_openblas``, or a system one) is read; any other BLAS is reported as
unknown, and callers then assume it is as wide as anything we compile.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os

import numpy as np

__all__ = ["core", "threads", "vector_bits"]

# OpenBLAS's x86 kernel families (the names its get_corename returns) whose widest vectors are 256 bits or less;
# SkylakeX, Cooperlake and SapphireRapids have AVX-512 kernels, and a name not listed is taken as wide
_NARROW_X86_CORES = frozenset({
    "haswell", "zen", "sandybridge", "nehalem", "core2", "penryn", "dunnington", "prescott", "atom", "bulldozer",
    "piledriver", "steamroller", "excavator", "barcelona", "opteron", "opteron_sse3", "katmai", "coppermine",
    "northwood", "banias", "athlon", "nano",
})


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL | None:
    """NumPy's OpenBLAS, loaded again by path (the same mapping: dlopen returns the loaded copy), or None."""
    libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    candidates = glob.glob(os.path.join(libdir, "libscipy_openblas*.so*")) + glob.glob(
        os.path.join(libdir, "libopenblas*.so*"))
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            # a NumPy linked against a system OpenBLAS: the library is mapped already, under its own path
            candidates += sorted({line.split()[-1] for line in f if "openblas" in line.rsplit("/", 1)[-1]})
    except OSError:
        pass
    for path in candidates:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _call(names: tuple[str, ...], restype: type) -> object | None:
    lib = _library()
    for name in names:
        fn = getattr(lib, name, None) if lib is not None else None
        if fn is not None:
            fn.restype = restype
            fn.argtypes = []
            value: object = fn()
            return value
    return None


def threads() -> int | None:
    """The number of threads NumPy's OpenBLAS uses, or None when it cannot be read."""
    n = _call(("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
               "openblas_get_num_threads"), ctypes.c_int)
    return n if isinstance(n, int) else None


@functools.lru_cache(maxsize=1)
def core() -> str | None:
    """The kernel family OpenBLAS chose for this CPU ("Haswell", "SkylakeX", ...), or None when unknown."""
    name = _call(("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
                  "openblas_get_corename"), ctypes.c_char_p)
    return name.decode("ascii", "replace").strip() if isinstance(name, bytes) and name else None


def vector_bits() -> int | None:
    """The widest vectors of BLAS's matrix-product kernels on this CPU: 256 for the x86 families listed as narrow,
    None when the family is not known to be narrow (another BLAS, AVX-512 kernels, another architecture)."""
    name = core()
    return 256 if name is not None and name.lower() in _NARROW_X86_CORES else None
