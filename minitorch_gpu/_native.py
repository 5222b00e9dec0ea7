"""Host C++ builds, shared by the CUDA simulator and the native CPU kernels: which compiler runs, where the
libraries it makes are cached, and how a failure is reported.

Libraries are cached on disk under a content key (the caller hashes its sources, flags and ``compiler_id``),
written to a temporary name and renamed into place, so concurrent processes never load a half-written file.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

ErrorType = type[Exception]
"""The exception class a caller wants its build failures raised as."""

__all__ = ["cache_dir", "compiler", "compiler_id", "sha", "run_compiler", "build_library", "atomic_write"]


def cache_dir(sub: str, error: ErrorType = RuntimeError, purpose: str = "minitorch_gpu") -> Path:
    """A writable cache folder ``<root>/<sub>``: the root is ``$MINITORCH_GPU_CACHE``, else
    ``~/.cache/minitorch_gpu`` (``$XDG_CACHE_HOME`` respected), else a per-user temporary directory."""
    root = os.environ.get("MINITORCH_GPU_CACHE")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "minitorch_gpu"
    for d in (base / sub, Path(tempfile.gettempdir()) / f"minitorch_gpu-{os.getuid()}" / sub):
        try:
            d.mkdir(parents=True, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise error(f"no writable cache directory for {purpose} (tried {base / sub}); set MINITORCH_GPU_CACHE to a "
                "writable directory")


def compiler() -> str:
    """The C++ compiler: ``$CXX``, else ``g++``."""
    return os.environ.get("CXX", "g++")


@functools.lru_cache(maxsize=None)
def _version_line(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()[0] if out else cxx


def compiler_id(cxx: str, error: ErrorType = RuntimeError, purpose: str = "minitorch_gpu") -> str:
    """The first line of ``cxx --version`` (part of every cache key, so a new compiler rebuilds)."""
    try:
        return _version_line(cxx)
    except (OSError, subprocess.CalledProcessError) as e:
        raise error(f"{purpose} needs a C++ compiler, but `{cxx} --version` failed ({e}); install g++ (>= 11) or "
                    "point $CXX at one") from e


def sha(*parts: Any) -> str:
    """Hex SHA-256 of the parts (bytes, or anything with a str), each followed by a separator."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()


def run_compiler(cmd: list[str], what: str, error: ErrorType = RuntimeError,
                 purpose: str = "minitorch_gpu") -> subprocess.CompletedProcess[str]:
    """Run a compiler command; ``error`` with the compiler's output (truncated) when it fails."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise error(f"could not run the C++ compiler `{cmd[0]}` for {purpose}: {e}; install g++ (>= 11) or point "
                    "$CXX at one") from e
    if r.returncode != 0:
        log = r.stderr.strip()
        if len(log) > 20000:
            log = log[:20000] + "\n... (truncated)"
        raise error(f"{Path(cmd[0]).name} failed to compile {what} for {purpose}:\n{log}")
    return r


def build_library(path: Path, cmd: list[str], what: str, error: ErrorType = RuntimeError,
                  purpose: str = "minitorch_gpu") -> Path:
    """Compile ``cmd + ["-o", <temporary>]`` and rename the result to ``path``, unless ``path`` exists already
    (a library cached under its content key)."""
    if path.exists():
        return path
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=path.parent))
    try:
        out = tmp / path.name
        run_compiler([*cmd, "-o", str(out)], what, error, purpose)
        os.replace(out, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def atomic_write(path: Path, data: bytes) -> None:
    """Write bytes to ``path`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
