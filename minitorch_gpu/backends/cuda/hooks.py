"""Observers of one backend's primitives, installed on the backend instance and removed again.

The counting mode (``counting.py``) and CUDA graph capture (``graphs.py``) both see every primitive call of a
backend for a while without a check on the hot path: each public method is shadowed by an instance attribute
(``Hooked``) that calls the observer, and removing those attributes gives the class's methods back.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Hooked", "hook_methods", "unhook_methods"]


class Hooked:
    """A backend method seen by an observer (a class, so that ``unhook_methods`` finds exactly what
    ``hook_methods`` installed). ``__wrapped__`` is the method, so ``inspect.signature`` gives its parameters."""
    __slots__ = ("_call", "__name__", "__wrapped__")

    def __init__(self, call: Callable[..., Any], name: str, wrapped: Callable[..., Any]) -> None:
        self._call = call
        self.__name__ = name
        self.__wrapped__ = wrapped

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)


def hook_methods(backend: Any, skip: frozenset[str],
                 observe: Callable[[str, Callable[..., Any]], Callable[..., Any]]) -> None:
    """Shadow every public method of ``backend`` not in ``skip`` with ``observe(name, method)``."""
    for name in dir(type(backend)):
        if name.startswith("_") or name in skip:
            continue
        attr = getattr(backend, name)
        if callable(attr) and not isinstance(attr, type):
            setattr(backend, name, Hooked(observe(name, attr), name, attr))


def unhook_methods(backend: Any) -> None:
    """Remove what ``hook_methods`` installed: the backend's methods are the class's again."""
    for name in [n for n, v in vars(backend).items() if isinstance(v, Hooked)]:
        delattr(backend, name)
