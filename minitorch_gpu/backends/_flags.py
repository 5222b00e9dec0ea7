"""``BoolFlag``: a bool switch of ``mt.backends`` (``cuda.matmul.allow_tf32``, ``cudnn.benchmark``, ...)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

__all__ = ["BoolFlag"]


class BoolFlag:
    """A bool attribute with a default, stored on the object that owns it. Like PyTorch's switches, it refuses
    anything but a bool with a RuntimeError naming PyTorch's C++ setter (``set_benchmark_cudnn expects a
    bool, but got int``)."""

    def __init__(self, default: bool, setter: str, on_set: Callable[[Any, bool], None] | None = None) -> None:
        self.default = default
        self.setter = setter
        self.slot = ""
        self.on_set = on_set  # on_set(owner, value) after a valid assignment: for switches that others mirror

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> BoolFlag: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> bool: ...

    def __get__(self, obj: object, owner: type | None = None) -> BoolFlag | bool:
        if obj is None:
            return self
        value: bool = getattr(obj, self.slot, self.default)
        return value

    def __set__(self, obj: Any, value: bool) -> None:
        if not isinstance(value, bool):
            raise RuntimeError(f"{self.setter} expects a bool, but got {type(value).__name__}")
        object.__setattr__(obj, self.slot, value)
        if self.on_set is not None:
            self.on_set(obj, value)
