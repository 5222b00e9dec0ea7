"""One loader for every kernel file: source text, export names, and compiled modules cached per runtime.

``source(name)`` is the text that gets compiled: ``kernels/<name>`` with ``common.cuh`` pasted in place of
its ``#include`` (so the compile cache key, a hash of the text, changes when the header does; ``#line``
directives keep compiler messages pointing at the original files). ``exports(name)`` lists the entry points:
``extern "C"`` kernels by name and every ``template <typename T> __global__`` kernel as its float and double
instantiations (NVRTC name expressions such as ``"unary_forward<float>"``).

``KernelLoader(module_cls, key)`` compiles a file lazily on first use with ``module_cls(code=..., options=...,
name_expressions=...)``: ``cupy.RawModule`` on a GPU (NVRTC; CuPy keeps the on-disk cache under
``~/.cupy/kernel_cache``) or ``sim.SimModule`` for the CPU simulator (g++; it keeps its own on-disk cache of
shared libraries). Modules and functions are cached in memory per loader, and the backend keeps one loader
per device.

``enum_codes(name, enum)`` and ``define_int(name, macro)`` read constants out of a kernel file once per process:
the one place Python learns the op codes and table sizes the kernels switch on.
"""
from __future__ import annotations

import functools
import os
import re
import threading
from typing import Any

from . import nvrtc

__all__ = ["kernel_dir", "kernel_files", "source", "exports", "enum_codes", "define_int", "KernelLoader", "OPTIONS",
           "nvrtc_options"]

# compiler options for every file. Empty on purpose: NVRTC 12 defaults to C++17, which the kernels are
# written in, and CuPy adds its own architecture flags (a second -std could clash with CuPy's own)
OPTIONS: tuple[str, ...] = ()
# template kernels are exported for these types unless their file says otherwise: a line
# `// @template-types: float double __half __nv_bfloat16` sets a file's list, and `// @types: ...` on the line
# above one kernel's `template <typename T>` sets that kernel's
TEMPLATE_TYPES = ("float", "double")
HALF_TYPES = ("__half", "__nv_bfloat16")

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"[ \t]*$', re.M)
_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
_TEMPLATE_KERNEL = re.compile(r"(?://[ \t]*@types:([^\n]*)\n[ \t]*)?template\s*<\s*typename\s+T\s*>\s*__global__\s+" +
                              _BOUNDS + r"void\s+" + _BOUNDS + r"(\w+)\s*\(")
_FILE_TYPES = re.compile(r"^//[ \t]*@template-types:([^\n]*)$", re.M)
_C_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+' + _BOUNDS + r"void\s+" + _BOUNDS + r"(\w+)\s*\(")
_text_cache: dict[tuple[str, int, int], str] = {}


def kernel_dir() -> str:
    """The folder holding ``*.cu`` and ``common.cuh``: ``$MINITORCH_GPU_KERNEL_DIR`` or the repository's
    ``kernels/`` (shipped next to the package)."""
    env = os.environ.get("MINITORCH_GPU_KERNEL_DIR")
    if env:
        return env
    # this file is minitorch_gpu/backends/cuda/loader.py: kernels/ sits next to the package in a checkout, and
    # inside it (minitorch_gpu/kernels) in an installed wheel
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "..", "kernels"), os.path.join(here, "..", "..", "kernels")):
        if os.path.isfile(os.path.join(cand, "common.cuh")):
            return os.path.normpath(cand)
    raise FileNotFoundError(f"kernels/ (with common.cuh) not found next to {here}; set $MINITORCH_GPU_KERNEL_DIR")


def kernel_files() -> list[str]:
    """Every ``*.cu`` file name in the kernel folder, sorted."""
    return sorted(f for f in os.listdir(kernel_dir()) if f.endswith(".cu"))


def _read(path: str) -> str:
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    text = _text_cache.get(key)
    if text is None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        _text_cache[key] = text
    return text


def source(name: str) -> str:
    """The compilable text of ``kernels/<name>``: local ``#include "..."`` lines replaced by the file they name
    (each pasted once), with ``#line`` markers."""
    base = kernel_dir()
    seen: set[str] = set()

    def expand(fname: str) -> str:
        text = _read(os.path.join(base, fname))
        out = []
        pos = 0
        for m in _INCLUDE.finditer(text):
            out.append(text[pos:m.start()])
            inc = m.group(1)
            line = text.count("\n", 0, m.end()) + 2
            if inc not in seen:
                seen.add(inc)
                out.append(f'#line 1 "{inc}"\n{expand(inc)}\n#line {line} "{fname}"')
            pos = m.end()
        out.append(text[pos:])
        return "".join(out)

    return f'#line 1 "{name}"\n' + expand(name)


def nvrtc_options() -> tuple[str, ...]:
    """OPTIONS plus the include folder of the toolkit's ``cuda_fp16.h`` / ``cuda_bf16.h`` (see
    ``nvrtc.header_dir``) for NVRTC; the simulator reads its own host versions of both instead."""
    d = nvrtc.header_dir()
    return OPTIONS + ((f"--include-path={d}",) if d else ())


def exports(name: str, text: str | None = None) -> list[str]:
    """The entry points of ``kernels/<name>``: C names and ``kernel<T>`` expressions for every TEMPLATE_TYPES."""
    text = source(name) if text is None else text
    names = list(dict.fromkeys(_C_KERNEL.findall(text)))
    m = _FILE_TYPES.search(text)
    default = tuple(m.group(1).split()) if m else TEMPLATE_TYPES
    seen: set[str] = set()
    for types, k in _TEMPLATE_KERNEL.findall(text):
        if k not in seen:
            seen.add(k)
            names.extend(f"{k}<{t}>" for t in (types.split() if types.strip() else default))
    return names


@functools.lru_cache(maxsize=None)
def enum_codes(name: str, enum: str) -> dict[str, int]:
    """{name: code} of ``enum <enum> { P_a, P_b, ... }`` in ``kernels/<name>``, prefix dropped: the op codes a
    kernel's switch uses, read from the source (once per process) so Python and CUDA cannot disagree. The dict
    is shared: do not modify it."""
    text = _read(os.path.join(kernel_dir(), name))
    m = re.search(r"enum\s+" + enum + r"\s*\{([^}]*)\}", text)
    if m is None:
        raise KeyError(f"enum {enum} not found in {name}")
    body = re.sub(r"//[^\n]*", "", m.group(1))
    codes: dict[str, int] = {}
    for i, item in enumerate(x.strip() for x in body.split(",") if x.strip()):
        if "=" in item:
            raise ValueError(f"enum {enum} in {name}: explicit values are not supported ({item})")
        codes[item.split("_", 1)[1]] = i
    return codes


@functools.lru_cache(maxsize=None)
def define_int(name: str, macro: str) -> int:
    """The integer of ``#define <macro> <n>`` in ``kernels/<name>`` (read once per process)."""
    m = re.search(r"#define\s+" + macro + r"\s+(\d+)", _read(os.path.join(kernel_dir(), name)))
    if m is None:
        raise KeyError(f"#define {macro} not found in {name}")
    return int(m.group(1))


class KernelLoader:
    """Compiles kernel files lazily with ``module_cls`` and hands out their functions (thread-safe)."""

    def __init__(self, module_cls: Any, options: tuple[str, ...] = OPTIONS) -> None:
        self.module_cls = module_cls
        self.options = tuple(options)
        self._modules: dict[str, Any] = {}
        self._functions: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def module(self, fname: str) -> Any:
        """The compiled module of ``kernels/<fname>`` (compiled on first use)."""
        mod = self._modules.get(fname)
        if mod is None:
            with self._lock:
                mod = self._modules.get(fname)
                if mod is None:
                    text = source(fname)
                    mod = self.module_cls(code=text, options=self.options, name_expressions=tuple(exports(fname, text)))
                    self._modules[fname] = mod
        return mod

    def function(self, fname: str, kernel: str) -> Any:
        """The callable kernel ``kernel`` (a C name or a name expression) of ``kernels/<fname>``."""
        key = (fname, kernel)
        fn = self._functions.get(key)
        if fn is None:
            fn = self.module(fname).get_function(kernel)
            self._functions[key] = fn
        return fn
