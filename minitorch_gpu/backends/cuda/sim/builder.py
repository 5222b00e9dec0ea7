"""Compile CUDA sources for the simulator: rewrite, find kernels, generate launch glue, build with g++, cache.

Pipeline for one source (one ``SimModule``):
  1. rewrite  ``extern __shared__ T name[];`` becomes a pointer into the block's dynamic shared buffer (the only
              source change; line numbers are preserved).
  2. find     kernels are found in the *preprocessed* source (so macro-generated kernels count), with their
              linkage, template-ness, namespace and source line.
  3. glue     one launch entry per exported kernel (extern "C" kernels and the name expressions), built by
              cuda_sim.h's templates from the kernel's own signature.
  4. build    ``g++ -std=c++20 -O2 -fPIC -shared``, linked against the runtime library (runtime.cpp, built once).
  5. cache    on disk by content hash (source, header, runtime, options, name expressions, compiler), verified
              against the hashes of every header the source included; and in memory per process.
"""
from __future__ import annotations

import bisect
import ctypes
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from .... import _native
from .errors import SimCompileError

__all__ = ["cache_dir", "build_module", "runtime_library", "Library", "KernelInfo"]

_HERE = Path(__file__).resolve().parent
_HEADER = _HERE / "cuda_sim.h"
_RUNTIME_SRC = _HERE / "runtime.cpp"
_ABI = "1"
_lock = threading.RLock()
_loaded: dict[str, Library] = {}  # content key -> Library
_runtime: list[tuple[Path, ctypes.CDLL]] = []  # [(path, CDLL)] once built
Scope = tuple[str, str | None]
"""An enclosing scope: ("ns", name), ("C", None) for extern "C", or ("other", None)."""


_PURPOSE = "the CUDA simulator"


def cache_dir() -> Path:
    """Where compiled simulator libraries live: ``<cache>/sim`` (see ``minitorch_gpu._native.cache_dir``)."""
    return _native.cache_dir("sim", SimCompileError, _PURPOSE)


_compiler = _native.compiler
_sha = _native.sha


def _compiler_id(cxx: str) -> str:
    return _native.compiler_id(cxx, SimCompileError, _PURPOSE)


def _flags() -> list[str]:
    flags = ["-std=c++20", "-O2", "-fPIC", "-fno-strict-aliasing", "-fno-math-errno", "-pthread"]
    # NOTE: CUDA code type-puns freely (float4 loads of float arrays): strict aliasing would miscompile it.
    if platform.machine() in ("x86_64", "AMD64"):
        flags.append("-fcf-protection=none")  # the fiber switch is hand-written assembly without CET markers
    return flags


def _includes() -> list[str]:
    # include/ holds <assert.h> and <cassert> replacements, so a kernel's own #include of them cannot bring back
    # the abort()ing assert
    return [f"-I{_HERE / 'include'}", f"-I{_HERE}"]


def _run_compiler(cmd: list[str], what: str) -> subprocess.CompletedProcess[str]:
    return _native.run_compiler(cmd, what, SimCompileError, _PURPOSE)


# ------------------------------------------------------------------------------------------ runtime library
def runtime_library() -> tuple[Path, ctypes.CDLL]:
    """(path, ctypes.CDLL) of the simulator runtime, built on first use."""
    with _lock:
        if _runtime:
            return _runtime[0]
        cxx = _compiler()
        # MINITORCH_GPU_SIM_UCONTEXT=1 selects the portable ucontext fiber switch (the default off x86-64)
        extra = ["-DCUDA_SIM_USE_UCONTEXT"] if os.environ.get("MINITORCH_GPU_SIM_UCONTEXT") == "1" else []
        key = _sha(_ABI, _compiler_id(cxx), _flags(), extra, _HEADER.read_bytes(), _RUNTIME_SRC.read_bytes())[:24]
        d = cache_dir()
        name = f"libcuda_sim_rt-{key}.so"
        path = d / name
        lib = _native.build_library(path, [cxx, *_flags(), *extra, "-shared", f"-I{_HERE}", str(_RUNTIME_SRC),
                                           f"-Wl,-soname,{name}"], "the simulator runtime (runtime.cpp)",
                                    SimCompileError, _PURPOSE)
        _runtime.append((path, lib))
        return _runtime[0]


# ------------------------------------------------------------------------------------------ source analysis
_BLANK_RE = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|(?<![\w.])\'(?:\\.|[^\'\\\n])+\'|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*',
    re.S | re.M)


def _blank(src: str) -> str:
    """Comments, string/char literals and preprocessor lines replaced by spaces (newlines and the "C" of
    extern "C" kept), so braces and keywords can be found by position."""
    def repl(m: re.Match[str]) -> str:
        s = m.group(0)
        if s == '"C"':
            return s
        return re.sub(r"[^\n]", " ", s)
    return _BLANK_RE.sub(repl, src)


_SCOPE_RE = re.compile(r'\bnamespace\b\s*(?:([\w:]+)\s*)?\{|\bextern\s*"C"\s*\{|\{|\}')


def _scopes_at(blanked: str, positions: list[int]) -> dict[int, tuple[Scope, ...]]:
    """For each position (sorted), the stack of enclosing scopes: ("ns", name), ("C", None) or ("other", None)."""
    stack: list[Scope] = []
    out: dict[int, tuple[Scope, ...]] = {}
    events = list(_SCOPE_RE.finditer(blanked))
    ei = 0
    for pos in sorted(positions):
        while ei < len(events) and events[ei].start() < pos:
            m = events[ei]
            tok = m.group(0)
            if tok == "}":
                if stack:
                    stack.pop()
            elif tok.startswith("namespace"):
                stack.append(("ns", m.group(1) or ""))
            elif tok.startswith("extern"):
                stack.append(("C", None))
            else:
                stack.append(("other", None))
            ei += 1
        out[pos] = tuple(stack)
    return out


_EXTERN_SHARED_RE = re.compile(
    r'\bextern\s+__shared__\s+((?:[^;\[\]{}()]|__align__\s*\([^()]*\))*?)\s*\b([A-Za-z_]\w*)\s*\[\s*\]\s*;')


_NOINLINE_RE = re.compile(r"\b__noinline__\b")


def rewrite_source(src: str) -> str:
    """Turn every ``extern __shared__ T name[];`` into a pointer to the block's dynamic shared buffer, and
    ``__noinline__`` into its GCC attribute (as a macro it would break libstdc++'s own use of the name).

    Inside a function it becomes ``T* const name = ...``; at namespace scope (where an initializer would run at
    load time, outside any block) an object that converts to ``T*`` and indexes like the array.
    """
    blanked = _blank(src)
    matches = list(_EXTERN_SHARED_RE.finditer(blanked)) + list(_NOINLINE_RE.finditer(blanked))
    if not matches:
        return src
    matches.sort(key=lambda m: m.start())
    scopes = _scopes_at(blanked, [m.start() for m in matches])
    out: list[str] = []
    last = 0
    for m in matches:
        out.append(src[last:m.start()])
        last = m.end()
        if m.re is _NOINLINE_RE:
            out.append("__attribute__((noinline))")
            continue
        ctype = re.sub(r"__align__\s*\([^()]*\)", " ", m.group(1))
        ctype = " ".join(ctype.split())
        name = m.group(2)
        newlines = "\n" * m.group(0).count("\n")
        if all(kind != "other" for kind, _ in scopes[m.start()]):
            decl = f"static constexpr ::cuda_sim::DynamicShared<{ctype}> {name}{{}};"
        else:
            decl = f"{ctype}* const {name} = reinterpret_cast<{ctype}*>(::cuda_sim::dynamic_smem());"
        out.append(decl + newlines)
    out.append(src[last:])
    return "".join(out)


class KernelInfo:
    """A __global__ function found in the preprocessed source."""
    __slots__ = ("name", "qualified", "extern_c", "template", "file", "line")

    def __init__(self, name: str, qualified: str, extern_c: bool, template: bool, file: str, line: int) -> None:
        self.name, self.qualified, self.extern_c = name, qualified, extern_c
        self.template, self.file, self.line = template, file, line

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KernelInfo:
        return cls(**d)


_MARKER_RE = re.compile(r'^#\s*(\d+)\s+"((?:\\.|[^"\\])*)"', re.M)
_GLOBAL_RE = re.compile(r"\b__cs_global__\b")
_NAME_RE = re.compile(r"__cs_global__\b(?:[^;{}()]|__attribute__\s*\(\([^()]*\)\))*?\b(?!__attribute__\b)"
                      r"([A-Za-z_]\w*)\s*\(")


def find_kernels(preprocessed: str) -> list[KernelInfo]:
    """Kernels in `g++ -E` output of the source compiled with -DCUDA_SIM_DISCOVER."""
    markers = [(m.start(), int(m.group(1)), m.group(2)) for m in _MARKER_RE.finditer(preprocessed)]
    marker_pos = [m[0] for m in markers]
    blanked = _blank(preprocessed)
    hits = [m.start() for m in _GLOBAL_RE.finditer(blanked)]
    scopes = _scopes_at(blanked, hits)
    found: list[KernelInfo] = []
    seen: set[str] = set()
    for pos in hits:
        stack = scopes[pos]
        if any(kind == "other" for kind, _ in stack):
            continue  # inside a class or function body: not a kernel definition CUDA accepts
        m = _NAME_RE.match(blanked, pos)
        if not m:
            continue
        start = max(blanked.rfind(";", 0, pos), blanked.rfind("{", 0, pos), blanked.rfind("}", 0, pos)) + 1
        prefix = blanked[start:pos]
        name = m.group(1)
        namespaces = [n for kind, n in stack if kind == "ns" and n]
        qualified = "::".join(namespaces + [name])
        if qualified in seen:
            continue  # a declaration followed by the definition
        seen.add(qualified)
        i = bisect.bisect_right(marker_pos, pos) - 1
        if i >= 0:
            mpos, mline, mfile = markers[i]
            line = mline + preprocessed.count("\n", mpos, pos) - 1
        else:
            mfile, line = "", preprocessed.count("\n", 0, pos) + 1
        found.append(KernelInfo(name, qualified, bool(re.search(r'\bextern\s*"C"', prefix)) or
                                any(kind == "C" for kind, _ in stack), bool(re.search(r"\btemplate\b", prefix)),
                                mfile, line))
    return found


# ------------------------------------------------------------------------------------------ options
def parse_options(options: Any) -> list[str]:
    """NVRTC-style options -> g++ arguments. Macros and include paths carry over; code-generation options
    (-arch, --use_fast_math, -std, -lineinfo ...) mean nothing to the simulator and are dropped."""
    out: list[str] = []
    for opt in options:
        if not isinstance(opt, str):
            raise TypeError(f"compile options must be strings, got {opt!r}")
        for prefix, flag in (("--define-macro=", "-D"), ("--undefine-macro=", "-U"), ("--include-path=", "-I")):
            if opt.startswith(prefix):
                opt = flag + opt[len(prefix):]
        if opt.startswith(("-D", "-U")) and len(opt) > 2:
            out.append(opt)
        elif opt.startswith("-I") and len(opt) > 2:
            out.append("-I" + str(Path(opt[2:]).resolve()))
    return out


# ------------------------------------------------------------------------------------------ building
def _glue(exports: list[tuple[str, str]]) -> str:
    """C++ appended to the source: the launch table of the exported kernels."""
    lines = ['#line 1 "<cuda_sim glue>"']
    for i, (_, expr) in enumerate(exports):
        lines.append(f"static constexpr auto cs_fn_{i} = &{expr};")
        lines.append(f"using cs_k_{i} = decltype(::cuda_sim::kernel_of(cs_fn_{i}));")
        lines.append(f"static int cs_launch_{i}(const ::cuda_sim::LaunchCfg* c, const char* a, char* e, int n, "
                     f"int* l) {{ return cs_k_{i}::launch(cs_fn_{i}, c, a, e, n, l); }}")
    lines.append("static const ::cuda_sim::Entry cs_entries[] = {")
    for i, (name, _) in enumerate(exports):
        lines.append(f"    {{{json.dumps(name)}, &cs_launch_{i}, &cs_k_{i}::signature}},")
    if not exports:
        lines.append("    {nullptr, nullptr, nullptr},")
    lines.append("};")
    lines.append(f"""extern "C" {{
int cs_module_abi(void) {{ return {_ABI}; }}
int cs_kernel_count(void) {{ return {len(exports)}; }}
const char* cs_kernel_name(int i) {{ return cs_entries[i].name; }}
const char* cs_kernel_signature(int i) {{
    static thread_local ::cuda_sim::SigBuf b;
    b.n = 0;
    b.data[0] = 0;
    cs_entries[i].signature(b);
    return b.data;
}}
int cs_kernel_launch(int i, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                     unsigned long long shmem, const char* args, char* err, int errlen, int* errline) {{
    ::cuda_sim::LaunchCfg c{{{{gx, gy, gz}}, {{bx, by, bz}}, shmem, cs_entries[i].name}};
    return cs_entries[i].launch(&c, args, err, errlen, errline);
}}
}}""")
    return "\n".join(lines) + "\n"


def _parse_deps(text: str) -> list[str]:
    """File names from a make-style dependency file (escaped spaces kept)."""
    body = text.split(":", 1)[1] if ":" in text else ""
    body = body.replace("\\\n", " ")
    return [t.replace("\\ ", " ") for t in re.findall(r"(?:\\ |[^\s])+", body)]


def _deps_ok(deps: dict[str, str]) -> bool:
    for path, digest in deps.items():
        try:
            if _sha(Path(path).read_bytes()) != digest:
                return False
        except OSError:
            return False
    return True


def _cached_library(d: Path, key: str, info: dict[str, Any]) -> Path | None:
    """The library a module's manifest names, if it may be loaded: a file of this module's name pattern
    directly in the cache folder (never a path elsewhere) that passes ``_native.library_ok``."""
    name = info["so"]
    if not (isinstance(name, str) and re.fullmatch(rf"mod-{key}-[0-9a-f]{{12}}\.so", name)):
        return None
    so = d / name
    return so if _native.library_ok(so, info["sha256"]) else None


class Library:
    """A compiled module loaded into the process: its exported kernels and everything found in its source."""

    def __init__(self, path: Path, kernels: list[KernelInfo], filename: str, sha256: str) -> None:
        self.path = path
        self.filename = filename
        self.kernels = kernels  # every KernelInfo found, exported or not
        self.lib = _native.open_library(path, sha256, SimCompileError, _PURPOSE)
        self.lib.cs_kernel_name.restype = ctypes.c_char_p
        self.lib.cs_kernel_signature.restype = ctypes.c_char_p
        self.lib.cs_kernel_signature.argtypes = [ctypes.c_int]
        self.lib.cs_kernel_name.argtypes = [ctypes.c_int]
        launch = self.lib.cs_kernel_launch
        launch.restype = ctypes.c_int
        launch.argtypes = ([ctypes.c_int] + [ctypes.c_uint] * 6 +
                           [ctypes.c_ulonglong, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                            ctypes.POINTER(ctypes.c_int)])
        self.launch = launch
        self.exports: dict[str, tuple[int, str]] = {}
        for i in range(self.lib.cs_kernel_count()):
            name = self.lib.cs_kernel_name(i).decode()
            self.exports[name] = (i, self.lib.cs_kernel_signature(i).decode())


def build_module(code: str, options: Any = (), name_expressions: Any = (), include_dirs: Any = (),
                 filename: str = "kernel.cu") -> Library:
    """Compile (or fetch from the caches) the simulator library for one CUDA source; returns a Library."""
    rt_path, _ = runtime_library()
    cxx = _compiler()
    src = rewrite_source(code)
    gflags = parse_options(options) + [f"-I{Path(d).resolve()}" for d in include_dirs]
    name_expressions = tuple(name_expressions or ())
    key = _sha(_ABI, _compiler_id(cxx), _flags(), _HEADER.read_bytes(), (_HERE / "include" / "assert.h").read_bytes(),
               rt_path.name, src, gflags,
               name_expressions, filename)[:32]
    with _lock:
        lib: Library | None = _loaded.get(key)
        if lib is not None:
            return lib
        d = cache_dir()
        info = _native.read_manifest(d / f"mod-{key}.json")
        if info is not None:
            try:
                so = _cached_library(d, key, info)
                if so is not None and _deps_ok(info["deps"]):
                    lib = Library(so, [KernelInfo.from_json(k) for k in info["kernels"]], filename, info["sha256"])
            except (OSError, ValueError, KeyError, TypeError):
                lib = None
        if lib is None:
            lib = _compile(cxx, src, gflags, name_expressions, filename, rt_path, d, key)
        _loaded[key] = lib
        return lib


def _compile(cxx: str, src: str, gflags: list[str], name_expressions: tuple[str, ...], filename: str, rt_path: Path,
             d: Path, key: str) -> Library:
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=d))
    try:
        unit = tmp / "source.cu.cpp"
        main = f'#include "cuda_sim.h"\n#line 1 {json.dumps(filename)}\n{src}\n'
        unit.write_text(main)
        pre = _run_compiler([cxx, "-std=c++20", "-E", "-x", "c++", "-DCUDA_SIM_DISCOVER", *_includes(), *gflags,
                             str(unit)], filename)
        kernels = find_kernels(pre.stdout)
        exports: list[tuple[str, str]] = []
        names: set[str] = set()
        for k in kernels:
            if k.extern_c and not k.template and k.name not in names:
                exports.append((k.name, "::" + k.qualified))
                names.add(k.name)
        for expr in name_expressions:
            if expr not in names:
                exports.append((expr, expr))
                names.add(expr)
        unit.write_text(main + _glue(exports))
        out = tmp / "module.so"
        _run_compiler([cxx, *_flags(), "-shared", *_includes(), *gflags, "-MMD", "-MF", str(tmp / "deps.d"),
                       "-x", "c++", str(unit), "-x", "none", "-o", str(out), str(rt_path), "-Wl,-rpath,$ORIGIN"],
                      filename)
        deps: dict[str, str] = {}
        for p in _parse_deps((tmp / "deps.d").read_text()):
            path = Path(p)
            if path.resolve() == unit.resolve() or not path.exists():
                continue
            deps[str(path.resolve())] = _sha(path.read_bytes())
        # NOTE: the file name includes the headers' hash: dlopen of a path already loaded returns the old
        # library, so a rebuild after a header change must land under a new name.
        so = d / f"mod-{key}-{_sha(sorted(deps.items()))[:12]}.so"
        digest = _native.file_sha256(out)
        os.replace(out, so)
        _native.write_manifest(d / f"mod-{key}.json", {"so": so.name, "sha256": digest, "deps": deps,
                                                       "kernels": [k.to_json() for k in kernels]})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Library(so, kernels, filename, digest)
