"""SimModule / SimFunction: the cupy.RawModule / RawKernel look-alikes that launch kernels on the simulator."""
from __future__ import annotations

import ctypes
import re
import struct
import threading
from pathlib import Path
from typing import Any, NoReturn

import ml_dtypes
import numpy as np

from . import builder
from .errors import SimArgumentError, SimError

__all__ = ["SimModule", "SimFunction"]

_BF16 = np.dtype(ml_dtypes.bfloat16)
_DEFAULT_SHARED = 48 * 1024      # dynamic shared memory a launch may use without opting in (as on a GPU)
_MAX_SHARED_OPT_IN = 227 * 1024  # the most a kernel can opt in to (sm_90)

# a bfloat16 scalar travels as its 16 bits ("bf2" packs as "H" after a view as uint16)
_PACK = {"b1": "?", "i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I", "i8": "q", "u8": "Q",
         "f2": "e", "bf2": "H", "f4": "f", "f8": "d"}
_NP_NAME = {"b1": "bool", "f2": "float16", "bf2": "bfloat16 (ml_dtypes)", "f4": "float32", "f8": "float64"}
for _k in ("i", "u"):
    for _n in (1, 2, 4, 8):
        _NP_NAME[f"{_k}{_n}"] = f"{'u' if _k == 'u' else ''}int{8 * _n}"


def _code(dtype: np.dtype[Any]) -> str | None:
    """'f4', 'i8', 'b1', 'bf2' ... for a NumPy dtype (kind and size), None for other kinds."""
    if dtype == _BF16:
        return "bf2"
    if dtype.kind == "b":
        return "b1"
    if dtype.kind in "iuf":
        return f"{dtype.kind}{dtype.itemsize}"
    return None


_SCALAR_CODES: dict[type, str | None] = {ml_dtypes.bfloat16: "bf2"}
for _t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
           np.longlong, np.ulonglong, np.intc, np.uintc, np.float16, np.float32, np.float64, np.longdouble):
    _SCALAR_CODES[_t] = _code(np.dtype(_t))


class _Param:
    __slots__ = ("index", "kind", "pointee", "size", "offset", "ctype")

    def __init__(self, index: int, desc: str) -> None:
        kind, size, _align, offset, ctype = desc.split("|", 4)
        self.index, self.size, self.offset, self.ctype = index, int(size), int(offset), ctype
        # a pointer's pointee code ("f4", "v", "p>..." for a pointer table); the empty string for a non-pointer
        self.pointee = ""
        if kind.startswith("p>"):
            self.kind, self.pointee = "p", kind[2:]
        else:
            self.kind = kind

    def expected(self) -> str:
        if self.kind == "p":
            return f"{self.ctype} (a NumPy array, or np.uint64 holding an address)"
        if self.kind == "s":
            return f"{self.ctype} (a NumPy structured scalar of {self.size} bytes)"
        return f"{self.ctype} (np.{_NP_NAME.get(self.kind, self.kind)})"


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype}"
    if isinstance(value, np.generic):
        return f"np.{value.dtype} scalar"
    if isinstance(value, (bool, int, float)):
        return f"a plain Python {type(value).__name__} ({value!r})"
    return f"{type(value).__module__}.{type(value).__qualname__}"


def _dims(value: Any, what: str, kernel: str) -> tuple[int, int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        dims: tuple[int, ...] = (int(value), 1, 1)
    elif isinstance(value, (tuple, list)) and 1 <= len(value) <= 3 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in value):
        dims = tuple(int(v) for v in value) + (1,) * (3 - len(value))
    else:
        raise SimArgumentError(f"{kernel}: {what} must be an int or a tuple of 1 to 3 ints, got {value!r}",
                               kernel=kernel)
    if any(not 0 < v < 2 ** 32 for v in dims):
        raise SimError(f"{kernel}: invalid configuration argument: {what} {dims}; every dimension must be at "
                       f"least 1", kernel=kernel)
    return dims[0], dims[1], dims[2]


_tls = threading.local()


def _error_buffer() -> tuple[ctypes.Array[ctypes.c_char], ctypes.c_int]:
    buf = getattr(_tls, "err", None)
    if buf is None:
        buf = _tls.err = (ctypes.create_string_buffer(2048), ctypes.c_int())
    err: tuple[ctypes.Array[ctypes.c_char], ctypes.c_int] = buf
    return err


class SimFunction:
    """One kernel of a SimModule, called like ``cupy.RawKernel``: ``fn(grid, block, args, shared_mem=0)``.

    >>> fn = SimModule(code=src).get_function("vec_add")                   # doctest: +SKIP
    >>> fn((4,), (256,), (x, y, out, np.int64(x.size)))                     # doctest: +SKIP
    """

    def __init__(self, library: builder.Library, name: str, index: int, signature: str, location: str) -> None:
        self.name = name
        self._lib = library
        self._index = index
        self._location = location
        self.params = [_Param(i, d) for i, d in enumerate(signature.split("\n"))] if signature else []
        fmt, end = ["="], 0
        for p in self.params:
            if p.offset > end:
                fmt.append(f"{p.offset - end}x")
            if p.kind == "p":
                fmt.append("Q")
            elif p.kind == "s":
                fmt.append(f"{p.size}s")
            elif p.kind in _PACK:
                fmt.append(_PACK[p.kind])
            else:
                raise SimError(f"{self._where()}: parameter {p.index} has type {p.ctype}, which the simulator "
                               f"cannot pass from Python", kernel=name)
            end = p.offset + p.size
        self._struct = struct.Struct("".join(fmt))
        self._shared_limit = _DEFAULT_SHARED

    @property
    def param_types(self) -> list[str]:
        """The C types of the kernel's parameters, as the compiler sees them."""
        return [p.ctype for p in self.params]

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """Dynamic shared memory a launch may request; raise it (up to 227 KiB) to opt in, as with CuPy."""
        return self._shared_limit

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        value = int(value)
        if not 0 <= value <= _MAX_SHARED_OPT_IN:
            raise SimError(f"{self.name}: max_dynamic_shared_size_bytes must be between 0 and "
                           f"{_MAX_SHARED_OPT_IN}, got {value}", kernel=self.name)
        self._shared_limit = value

    def _where(self) -> str:
        return f"{self.name} ({self._location})" if self._location else self.name

    def _arg_error(self, p: _Param, value: Any, detail: str = "") -> NoReturn:
        raise SimArgumentError(f"{self._where()}: argument {p.index} expects {p.expected()}, got "
                               f"{_describe(value)}{detail}", kernel=self.name, line=self._line())

    def _line(self) -> int:
        m = re.search(r":(\d+)$", self._location or "")
        return int(m.group(1)) if m else 0

    def _pack(self, args: Any) -> bytes:
        if not isinstance(args, (tuple, list)):
            raise SimArgumentError(f"{self._where()}: args must be a tuple of kernel arguments, got "
                                   f"{_describe(args)}", kernel=self.name, line=self._line())
        if len(args) != len(self.params):
            raise SimArgumentError(f"{self._where()}: the kernel takes {len(self.params)} arguments "
                                   f"({', '.join(self.param_types)}), got {len(args)}", kernel=self.name,
                                   line=self._line())
        values: list[Any] = []
        for p, a in zip(self.params, args):
            if p.kind == "p":
                if isinstance(a, np.ndarray):
                    self._check_pointee(p, a)
                    values.append(a.__array_interface__["data"][0])
                elif type(a) in (np.uint64, np.uintp, np.int64) or _SCALAR_CODES.get(type(a)) in ("u8", "i8"):
                    values.append(int(a) & 0xFFFFFFFFFFFFFFFF)
                elif a is None:
                    self._arg_error(p, a, "; pass np.uint64(0) for a null pointer (CuPy turns None into a "
                                          "garbage address)")
                else:
                    self._arg_error(p, a)
            elif p.kind == "s":
                if isinstance(a, np.void) and a.dtype.itemsize == p.size:
                    values.append(a.tobytes())
                else:
                    self._arg_error(p, a)
            else:
                code = _SCALAR_CODES.get(type(a))
                if code is None and isinstance(a, np.generic):
                    code = _code(a.dtype)
                if code != p.kind:
                    hint = ""
                    if isinstance(a, (bool, int, float)):
                        hint = (f"; launches are typed, so wrap it: np.{_NP_NAME.get(p.kind, p.kind)}({a!r})")
                    self._arg_error(p, a, hint)
                values.append(int(np.asarray(a).view(np.uint16)) if code == "bf2" else a)
        return self._struct.pack(*values)

    def _check_pointee(self, p: _Param, a: np.ndarray[Any, Any]) -> None:
        want = p.pointee
        if want in ("v", "s"):
            return
        have = _code(a.dtype)
        if want.startswith("p>"):
            ok = have in ("u8", "i8")  # a table of device addresses
        elif want.startswith("f") or want == "bf2":
            ok = have == want
        else:
            ok = have is not None and have[0] in "iub" and have[1:] == want[1:]
        if not ok:
            need = "uint64 addresses" if want.startswith("p>") else _NP_NAME.get(want, want)
            self._arg_error(p, a, f" (the kernel reads it as {need})")

    def __call__(self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0) -> None:
        """Launch on the simulator and wait for it; faults raise SimError naming the kernel and source line."""
        g = _dims(grid, "grid", self.name)
        b = _dims(block, "block", self.name)
        if not isinstance(shared_mem, (int, np.integer)) or isinstance(shared_mem, bool) or shared_mem < 0:
            raise SimArgumentError(f"{self.name}: shared_mem must be a non-negative int, got {shared_mem!r}",
                                   kernel=self.name)
        if shared_mem > self._shared_limit:
            raise SimError(f"{self.name}: the launch asks for {shared_mem} bytes of dynamic shared memory but the "
                           f"limit is {self._shared_limit}; set max_dynamic_shared_size_bytes (up to "
                           f"{_MAX_SHARED_OPT_IN}) to opt in, as on a GPU", kernel=self.name)
        packed = self._pack(args)
        err, line = _error_buffer()
        rc = self._lib.launch(self._index, g[0], g[1], g[2], b[0], b[1], b[2], int(shared_mem), packed, err,
                              len(err), ctypes.byref(line))
        if rc != 0:
            raise SimError(f"{self.name}: {err.value.decode(errors='replace')}", kernel=self.name, line=line.value)

    def __repr__(self) -> str:
        return f"<SimFunction {self.name}({', '.join(self.param_types)})>"


class SimModule:
    """A CUDA source compiled for the CPU simulator; mirrors ``cupy.RawModule``.

    ``code`` (or ``path`` to a .cu file), ``options`` (NVRTC-style: -D/-U/-I are honoured, code-generation
    flags ignored), ``name_expressions`` (template or C++-linkage kernels to export, spelled exactly as later
    passed to get_function), ``include_dirs`` (for #include "..."), ``filename`` (how error messages name the
    source). Compiles on first use; results are cached on disk and in memory.
    """

    def __init__(self, code: str | None = None, options: Any = (), name_expressions: Any = None,
                 include_dirs: Any = (), *, path: str | Path | None = None, filename: str | None = None,
                 backend: str = "nvrtc", jitify: bool = False) -> None:
        if (code is None) == (path is None):
            raise TypeError("SimModule needs exactly one of code= (CUDA source text) or path= (a .cu file)")
        if path is not None:
            path = Path(path)
            code = path.read_text()
            filename = filename or path.name
        if not isinstance(code, str):
            raise TypeError(f"code must be a str of CUDA source, got {type(code).__name__}")
        if isinstance(options, str):
            options = (options,)
        self.code = code
        self.options = tuple(options)
        self.name_expressions = tuple(name_expressions or ())
        self.include_dirs = tuple(str(d) for d in include_dirs)
        self.filename = filename or "kernel.cu"
        self._library: builder.Library | None = None
        self._functions: dict[str, SimFunction] = {}
        self._lock = threading.Lock()

    def compile(self) -> SimModule:
        """Compile now (otherwise the first get_function does); raises SimCompileError with g++'s output."""
        with self._lock:
            if self._library is None:
                self._library = builder.build_module(self.code, self.options, self.name_expressions,
                                                     self.include_dirs, self.filename)
        return self

    def get_function(self, name: str) -> SimFunction:
        """The kernel `name`: an extern "C" kernel, or one of the name_expressions."""
        fn = self._functions.get(name)
        if fn is not None:
            return fn
        lib = self._compiled()
        if name not in lib.exports:
            raise SimError(self._missing(name), kernel=name)
        index, signature = lib.exports[name]
        info = self._info(name)
        location = f"{info.file or self.filename}:{info.line}" if info else ""
        fn = self._functions[name] = SimFunction(lib, name, index, signature, location)
        return fn

    def _compiled(self) -> builder.Library:
        self.compile()
        assert self._library is not None
        return self._library

    def _info(self, expr: str) -> builder.KernelInfo | None:
        base = re.match(r"\s*(?:::)?([\w:]+)", expr)
        qualified = base.group(1) if base else expr
        for k in self._compiled().kernels:
            if k.qualified == qualified or k.name == qualified:
                return k
        return None

    def _missing(self, name: str) -> str:
        info = self._info(name)
        if info is not None and info.template:
            return (f"{name} is a template ({info.file}:{info.line}): list each instantiation to export in "
                    f"name_expressions, e.g. name_expressions=('{name}<float>',), and get it by that name")
        if info is not None and not info.extern_c:
            return (f"{name} has C++ linkage ({info.file}:{info.line}): declare it extern \"C\" or list it in "
                    f"name_expressions")
        known = sorted(self._compiled().exports)
        return f"no kernel named {name!r} in {self.filename}; exported kernels: {', '.join(known) or 'none'}"
