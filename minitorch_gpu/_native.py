"""Host C++ builds, shared by the CUDA simulator and the native CPU kernels: which compiler runs, where the
libraries it makes are cached, and how a failure is reported.

Libraries are cached on disk under a content key (the caller hashes its sources, flags and ``compiler_id``),
written to a temporary name and renamed into place, so concurrent processes never load a half-written file.

Loading a library runs its code, so the cache is trusted only as far as it is checked: its directories are
created 0700 and must belong to the user and be writable by nobody else (a directory of ours that is too open
is closed again; one owned by someone else is not used); every library has a manifest written at build time
with its SHA-256, and before ``dlopen`` the library, its manifest and its directory pass the same owner and
mode checks and the library's hash must match. Anything that fails is rebuilt, never loaded. Without a usable
cache directory, a private one from ``tempfile.mkdtemp`` serves this process.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

ErrorType = type[Exception]
"""The exception class a caller wants its build failures raised as."""

__all__ = ["cache_dir", "compiler", "compiler_id", "sha", "run_compiler", "build_library", "atomic_write",
           "file_sha256", "read_manifest", "write_manifest", "library_ok", "open_library"]

_fallback_lock = threading.Lock()


_private_fallback: list[Path] = []  # this process's mkdtemp directory, made once


def _private_dir(d: Path) -> bool:
    """Make ``d`` (and missing parents) with mode 0700 and check it: a directory owned by the user that nobody
    else may write. One of ours that is too open is closed (chmod 0700); anything else is refused."""
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return False
        if st.st_mode & 0o022:
            os.chmod(d, 0o700)
        return _trusted(d, stat.S_ISDIR) and os.access(d, os.W_OK)
    except OSError:
        return False


def cache_dir(sub: str, error: ErrorType = RuntimeError, purpose: str = "minitorch_gpu") -> Path:
    """A private cache folder ``<root>/<sub>``: the root is ``$MINITORCH_GPU_CACHE``, else
    ``~/.cache/minitorch_gpu`` (``$XDG_CACHE_HOME`` respected); both folders are the user's own and writable by
    nobody else (see the module docstring), else this process uses a private temporary directory."""
    root = os.environ.get("MINITORCH_GPU_CACHE")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "minitorch_gpu"
    if _private_dir(base) and _private_dir(base / sub):
        return base / sub
    with _fallback_lock:
        if not _private_fallback:
            try:
                # NOTE: never a predictable shared path such as /tmp/minitorch_gpu-<uid>: another user could
                # create it first and plant libraries in it
                _private_fallback.append(Path(tempfile.mkdtemp(prefix="minitorch_gpu-")))
            except OSError as e:
                raise error(f"no private cache directory for {purpose} (tried {base / sub}: it must belong to you "
                            f"and be writable only by you); set MINITORCH_GPU_CACHE to such a directory "
                            f"({e})") from e
    d = _private_fallback[0] / sub
    if not _private_dir(d):
        raise error(f"no private cache directory for {purpose} (tried {base / sub} and {d}); set "
                    "MINITORCH_GPU_CACHE to a directory that belongs to you and that only you can write")
    return d


# ------------------------------------------------------------------------------------------ trusting the cache
def _trusted(path: Path, kind: Callable[[int], bool]) -> bool:
    """``path`` itself (not through a symlink) is of ``kind``, belongs to the user and is writable by nobody
    else; for a file, its directory passes the same test."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not kind(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return False
    return kind is stat.S_ISDIR or _trusted(path.parent, stat.S_ISDIR)


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's content."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A JSON manifest written by ``write_manifest``, or None when it is missing, unreadable or fails the owner
    and mode checks."""
    if not _trusted(path, stat.S_ISREG):
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_manifest(path: Path, data: dict[str, Any]) -> None:
    """Write a JSON manifest (mode 0600) through a temporary file and a rename."""
    atomic_write(path, json.dumps(data).encode())


def library_ok(lib: Path, sha256: Any) -> bool:
    """Whether ``lib`` may be loaded: it passes the owner and mode checks and its content has the hash its
    manifest recorded at build time."""
    return isinstance(sha256, str) and _trusted(lib, stat.S_ISREG) and file_sha256(lib) == sha256


def _manifest_of(lib: Path) -> Path:
    return lib.with_name(lib.name + ".json")


def open_library(lib: Path, sha256: Any, error: ErrorType = RuntimeError,
                 purpose: str = "minitorch_gpu") -> ctypes.CDLL:
    """``ctypes.CDLL(lib)`` after ``library_ok`` (checked again right before loading); ``error`` otherwise."""
    if not library_ok(lib, sha256):
        raise error(f"refusing to load {lib} for {purpose}: it is not the library built here (owner, mode or "
                    "content hash differ); delete it to rebuild")
    return ctypes.CDLL(str(lib))


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
                  purpose: str = "minitorch_gpu") -> ctypes.CDLL:
    """The library at ``path``, loaded: the cached one if it passes the checks of the module docstring, else
    compiled by ``cmd + ["-o", <temporary>]``, hashed into its manifest and renamed to ``path``."""
    manifest = read_manifest(_manifest_of(path))
    digest = manifest.get("sha256") if manifest else None
    if not library_ok(path, digest):
        tmp = Path(tempfile.mkdtemp(prefix="build-", dir=path.parent))
        try:
            out = tmp / path.name
            run_compiler([*cmd, "-o", str(out)], what, error, purpose)
            digest = file_sha256(out)
            # the manifest first: a library without a matching manifest is rebuilt, never loaded
            write_manifest(_manifest_of(path), {"sha256": digest})
            os.replace(out, path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return open_library(path, digest, error, purpose)


def atomic_write(path: Path, data: bytes) -> None:
    """Write bytes to ``path`` (mode 0600) through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
