"""``BoolFlag``: a bool switch of ``mt.backends`` (``cuda.matmul.allow_tf32``, ``cudnn.benchmark``, ...)."""
from __future__ import annotations

from typing import Any

__all__ = ["BoolFlag"]


class BoolFlag:
    """A bool attribute with a default, stored on the object that owns it. Like PyTorch's switches, it refuses
    anything but a bool with a RuntimeError naming PyTorch's C++ setter (``set_benchmark_cudnn expects a
    bool, but got int``)."""

    def __init__(self, default: bool, setter: str) -> None:
        self.default = default
        self.setter = setter
        self.slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj, self.slot, self.default)

    def __set__(self, obj: Any, value: bool) -> None:
        if not isinstance(value, bool):
            raise RuntimeError(f"{self.setter} expects a bool, but got {type(value).__name__}")
        object.__setattr__(obj, self.slot, value)
