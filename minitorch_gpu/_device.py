"""device objects: ``mt.device("cuda:1")``, ``mt.device("cpu")``, ``mt.device("cuda", 0)``, and the
default device that factories use."""
from __future__ import annotations

import builtins
import threading
from typing import Any, SupportsIndex

_TYPES = ("cpu", "cuda")


def _parse_index(text: str, full: str) -> int:
    # PyTorch accepts only plain decimal digits without a leading zero ("cuda:01" is rejected)
    if not text or not text.isdigit() or not text.isascii() or (len(text) > 1 and text[0] == "0"):
        raise RuntimeError(f"Invalid device string: '{full}'")
    return builtins.int(text)


class device:
    """Where a tensor lives: a type (``'cpu'`` or ``'cuda'``) and an optional index.

    Built from a string (``'cuda:1'``), a type and an index, an int (a CUDA ordinal) or another device.
    Used as a context manager it is the default device for factories inside the block."""

    __slots__ = ("type", "index")
    type: str
    index: int | None

    def __new__(cls, type: str | int | device, index: SupportsIndex | None = None) -> device:  # noqa: A002 - PyTorch's parameter name
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): argument 'type' (position 1) must be str, not device")
            return type
        if isinstance(type, builtins.int) and not isinstance(type, builtins.bool):
            if index is not None:
                raise TypeError("device(): an ordinal as first argument takes no index")
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            return _make("cuda", type)
        if not isinstance(type, str):
            raise TypeError(f"device(): argument 'type' (position 1) must be str, not {type.__class__.__name__}")
        if index is not None and (not isinstance(index, builtins.int) or isinstance(index, builtins.bool)):
            if hasattr(index, "__index__") and not isinstance(index, builtins.bool):
                index = index.__index__()
            else:
                raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                                f"{index.__class__.__name__}")
        if not type:
            raise RuntimeError("Device string must not be empty")
        name = type
        if ":" in type:
            name, _, idx = type.partition(":")
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type}")
            index = _parse_index(idx, type)
        elif index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        if name not in _TYPES:
            if not name or not name.isalnum():
                raise RuntimeError(f"Invalid device string: '{type}'")
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        return _make(name, index)

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

    def __eq__(self, other):
        # like PyTorch, a device never equals a string (compare ``t.device.type == 'cuda'`` instead)
        if other.__class__ is not device:
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    # ``with mt.device('cuda'):`` makes it the default device for factories in the block
    def __enter__(self):
        stack = _ctx_stack()
        stack.append(_default_device[0])
        _default_device[0] = self
        return self

    def __exit__(self, *exc):
        _default_device[0] = _ctx_stack().pop()
        return False


def _make(type_: str, index: int | None) -> device:
    self = object.__new__(device)
    object.__setattr__(self, "type", type_)
    object.__setattr__(self, "index", index)
    return self


_CPU = _make("cpu", None)
_default_device = [_CPU]
_local = threading.local()


def _ctx_stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def set_default_device(d: Any) -> None:
    """Device that factory functions (``zeros``, ``tensor``, ...) use when none is given; None means cpu."""
    _default_device[0] = _CPU if d is None else device(d)


def get_default_device() -> device:
    """The device factories use when none is given."""
    return _default_device[0]
