"""What both checkpoint formats share: the error type, device checks for ``map_location``, opening the file and
writing to a path or a file object."""
from __future__ import annotations

import io
import os
from collections.abc import Callable
from typing import IO, Any

from .. import cuda
from .._device import device as _device_cls
from ._atomic import atomic_write


class CheckpointError(RuntimeError):
    """A file that is not a loadable checkpoint: corrupt, truncated, inconsistent, or lying about its contents."""


def typename(obj: object) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def check_target(dev: Any) -> _device_cls:
    """``dev`` as a device that exists here, or PyTorch's RuntimeError telling how to map the storages elsewhere."""
    if isinstance(dev, bytes):
        dev = dev.decode("ascii")
    d = _device_cls(dev)
    if d.type == "cuda":
        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but minitorch_gpu.cuda."
                               "is_available() is False. If you are running on a CPU-only machine, please use "
                               "minitorch_gpu.load with map_location=minitorch_gpu.device('cpu') to map your "
                               "storages to the CPU.")
        n = cuda.device_count()
        if d.index is not None and d.index >= n:
            raise RuntimeError(f"Attempting to deserialize object on CUDA device {d.index} but minitorch_gpu."
                               f"cuda.device_count() is {n}. Please use minitorch_gpu.load with map_location to "
                               "map your storages to an existing device.")
    return d


def check_map_location(map_location: Any) -> None:
    if map_location is None or isinstance(map_location, (str, bytes, _device_cls, dict)) or callable(map_location):
        return
    raise TypeError(f"map_location must be None, a string, a device, a dict or a callable, got "
                    f"{typename(map_location)}")


def open_for_read(f: Any) -> tuple[IO[bytes], bool]:
    """A seekable binary file for ``f`` (a path or a file object) and whether the caller must close it. A file
    object that cannot seek is read into memory."""
    if isinstance(f, (str, os.PathLike)):
        return open(f, "rb"), True
    if not hasattr(f, "read"):
        raise AttributeError(f"minitorch_gpu.load: f must be a path or a binary file object with read(), got "
                             f"{typename(f)}")
    if isinstance(f, io.TextIOBase):
        raise TypeError("minitorch_gpu.load: the file object must be opened in binary mode ('rb')")
    seekable = getattr(f, "seekable", None)
    if seekable is not None and seekable():
        return f, False
    data = f.read()
    if isinstance(data, str):
        raise TypeError("minitorch_gpu.load: the file object must be opened in binary mode ('rb')")
    return io.BytesIO(data), True


def write_to(f: Any, write: Callable[[IO[bytes]], None]) -> None:
    """Write a checkpoint to ``f``: a path (atomically) or a binary file object."""
    if isinstance(f, (str, os.PathLike)):
        atomic_write(os.fspath(f), write)
        return
    if not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
    if isinstance(f, io.TextIOBase):
        raise TypeError("minitorch_gpu.save: the file object must be opened in binary mode ('wb')")
    write(f)
    if hasattr(f, "flush"):
        f.flush()
