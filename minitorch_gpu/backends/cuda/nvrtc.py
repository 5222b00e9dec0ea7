"""NVRTC through ctypes: compile CUDA C++ to a cubin for a chosen architecture without a GPU.

The runtime path compiles through ``cupy.RawModule``; this module exists for what CuPy cannot do on a
machine without a driver: CI's compile gate (every ``kernels/*.cu`` for sm_80 and sm_90, with ptxas's
register and spill report) and ahead-of-time checks. The library comes from the ``nvidia-cuda-nvrtc-cu12``
wheel (a ``test`` extra), from ``$MINITORCH_GPU_NVRTC`` (a path to ``libnvrtc.so``), or from the system.

    >>> from minitorch_gpu.backends.cuda import nvrtc
    >>> r = nvrtc.compile('extern "C" __global__ void k(float* x) { x[0] = 1; }', arch="sm_80")
    >>> r.cubin[:4] == b"\\x7fELF"
    True
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import re
import threading
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["NVRTCError", "CompileResult", "available", "version", "compile", "resource_usage", "header_dir"]

_lock = threading.Lock()
# [(the loaded library or None, why each candidate failed)] once probed
_lib: list[tuple[Any, list[str]]] = []


class NVRTCError(RuntimeError):
    """A compilation that failed; the message carries NVRTC's log."""


def _candidates() -> Iterator[str]:
    env = os.environ.get("MINITORCH_GPU_NVRTC")
    if env:
        yield env
    try:
        # a namespace package: its __path__ lists every site-packages holding it
        import nvidia.cuda_nvrtc as pkg
        for base in pkg.__path__:
            for path in sorted(glob.glob(os.path.join(base, "lib", "libnvrtc.so*"))):
                if "builtins" not in path and ".alt." not in path:
                    yield path
    except ImportError:
        pass
    found = ctypes.util.find_library("nvrtc")
    if found:
        yield found
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root:
            yield from sorted(glob.glob(os.path.join(root, "lib64", "libnvrtc.so*")))


_HALF_HEADERS = ("cuda_fp16.h", "cuda_bf16.h")


def _header_candidates() -> Iterator[str]:
    env = os.environ.get("MINITORCH_GPU_CUDA_INCLUDE")
    if env:
        yield env
    try:
        # the CUDA runtime wheel (nvidia-cuda-runtime-cu12) ships the toolkit's headers; CuPy reads them there too
        import nvidia.cuda_runtime as pkg
        for base in pkg.__path__:
            yield os.path.join(base, "include")
    except ImportError:
        pass
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root:
            yield os.path.join(root, "include")


def header_dir() -> str | None:
    """The folder with the CUDA toolkit's ``cuda_fp16.h`` and ``cuda_bf16.h`` (NVRTC ships neither, and the
    kernels include both): ``$MINITORCH_GPU_CUDA_INCLUDE``, the ``nvidia-cuda-runtime-cu12`` wheel's include
    folder, or ``$CUDA_PATH`` / ``$CUDA_HOME`` / ``/usr/local/cuda``'s; None when none has them."""
    for d in _header_candidates():
        if all(os.path.isfile(os.path.join(d, h)) for h in _HALF_HEADERS):
            return d
    return None


def _load() -> tuple[Any, list[str]]:
    if _lib:
        return _lib[0]
    with _lock:
        if _lib:
            return _lib[0]
        lib: Any = None
        errors: list[str] = []
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError as e:
                errors.append(f"{path}: {e}")
        if lib is not None:
            c_p = ctypes.c_void_p
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
            lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(c_p), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                               ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p)]
            lib.nvrtcCompileProgram.argtypes = [c_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(c_p)]
            lib.nvrtcAddNameExpression.argtypes = [c_p, ctypes.c_char_p]
            lib.nvrtcGetLoweredName.argtypes = [c_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
            for fn in ("nvrtcGetProgramLogSize", "nvrtcGetCUBINSize", "nvrtcGetPTXSize"):
                getattr(lib, fn).argtypes = [c_p, ctypes.POINTER(ctypes.c_size_t)]
            for fn in ("nvrtcGetProgramLog", "nvrtcGetCUBIN", "nvrtcGetPTX"):
                getattr(lib, fn).argtypes = [c_p, ctypes.c_char_p]
            lib.nvrtcVersion.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
        _lib.append((lib, errors))
        return _lib[0]


def _library() -> Any:
    lib, errors = _load()
    if lib is None:
        detail = "; ".join(errors) if errors else "no libnvrtc.so found"
        raise NVRTCError(f"NVRTC is not available ({detail}). Install it with `pip install nvidia-cuda-nvrtc-cu12` "
                         "(part of the `test` extra) or point $MINITORCH_GPU_NVRTC at libnvrtc.so.")
    return lib


def available() -> bool:
    """Whether a libnvrtc could be loaded."""
    return _load()[0] is not None


def version() -> tuple[int, int]:
    """NVRTC's (major, minor) version."""
    lib = _library()
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(lib, lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def _check(lib: Any, status: int, what: str, log: str = "") -> None:
    if status != 0:
        msg = lib.nvrtcGetErrorString(status).decode()
        raise NVRTCError(f"{what} failed: {msg}" + (f"\n{log}" if log else ""))


class CompileResult:
    """A compiled program: ``cubin`` (bytes, None when ``ptx_only``), ``ptx`` (str or None), ``log`` (NVRTC and
    ptxas messages), ``lowered`` ({name expression: mangled symbol})."""

    def __init__(self, cubin: bytes | None, ptx: str | None, log: str, lowered: dict[str, str]) -> None:
        self.cubin = cubin
        self.ptx = ptx
        self.log = log
        self.lowered = lowered

    def resource_usage(self) -> dict[str, dict[str, int]]:
        """{kernel symbol: {"registers", "spill_stores", "spill_loads", "stack", "smem"}} parsed from the ptxas
        report (present when the program was compiled with ``verbose=True``)."""
        return resource_usage(self.log)


def compile(source: str, name: str = "kernel.cu", arch: str = "sm_80", options: Sequence[str] = (),
            name_expressions: Sequence[str] = (), verbose: bool = False, ptx: bool = False) -> CompileResult:
    """Compile ``source`` for ``arch`` (``sm_XY``: a cubin; ``compute_XY`` with ``ptx=True``: PTX only).

    ``verbose`` asks ptxas for its per-kernel register, stack and spill report (in ``log``). Raises
    NVRTCError with the compiler log when compilation fails.
    """
    lib = _library()
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
           "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            _check(lib, lib.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        opts = [f"--gpu-architecture={arch}", *options]
        if verbose:
            opts.append("--ptxas-options=-v")
        c_opts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        status = lib.nvrtcCompileProgram(prog, len(opts), c_opts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace")
        _check(lib, status, f"compiling {name} for {arch}", log)
        lowered: dict[str, str] = {}
        for expr in name_expressions:
            out = ctypes.c_char_p()
            _check(lib, lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(out)), "nvrtcGetLoweredName")
            lowered[expr] = (out.value or b"").decode()
        cubin: bytes | None = None
        ptx_text: str | None = None
        if arch.startswith("sm_") and not ptx:
            lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
            cbuf = ctypes.create_string_buffer(size.value)
            _check(lib, lib.nvrtcGetCUBIN(prog, cbuf), "nvrtcGetCUBIN")
            cubin = cbuf.raw
        else:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            pbuf = ctypes.create_string_buffer(size.value)
            _check(lib, lib.nvrtcGetPTX(prog, pbuf), "nvrtcGetPTX")
            ptx_text = pbuf.value.decode()
        return CompileResult(cubin, ptx_text, log, lowered)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


_FUNC_RE = re.compile(r"Compiling entry function '([^']+)'")
_SPILL_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REG_RE = re.compile(r"Used (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")


def resource_usage(log: str) -> dict[str, dict[str, int]]:
    """Per-kernel resources from a ptxas ``-v`` report: {symbol: {registers, stack, spill_stores, spill_loads,
    smem}}."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in log.splitlines():
        m = _FUNC_RE.search(line)
        if m:
            current = out.setdefault(m.group(1), {"registers": 0, "stack": 0, "spill_stores": 0,
                                                  "spill_loads": 0, "smem": 0})
            continue
        if current is None:
            continue
        m = _SPILL_RE.search(line)
        if m:
            current["stack"], current["spill_stores"], current["spill_loads"] = (int(g) for g in m.groups())
        m = _REG_RE.search(line)
        if m:
            current["registers"] = int(m.group(1))
            m = _SMEM_RE.search(line)
            if m:
                current["smem"] = int(m.group(1))
    return out
