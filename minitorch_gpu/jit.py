"""``mt.jit``: the parts of ``torch.jit`` that eager code asks about.

There is no TorchScript here: code always runs eagerly, so ``is_scripting()`` and ``is_tracing()`` are False and
the decorators that only matter to the script compiler (``ignore``, ``unused``, ``export``) return their function
as it is. Library code that branches on ``torch.jit.is_scripting()`` (PyTorch's optimizers do) takes its eager
branch, as it does under PyTorch outside ``torch.jit.script``.
"""
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["annotate", "export", "ignore", "is_scripting", "is_tracing", "unused"]

_F = TypeVar("_F", bound=Callable[..., Any])


def is_scripting() -> bool:
    """False: nothing is ever compiled by TorchScript here."""
    return False


def is_tracing() -> bool:
    """False: there is no ``torch.jit.trace`` here."""
    return False


def annotate(the_type: Any, the_value: Any) -> Any:
    """A type hint for the script compiler; eagerly, the value itself."""
    return the_value


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """Marks a function for the script compiler to leave in Python; usable bare (``@ignore``) or called
    (``@ignore(drop=True)``). Eagerly, the function is unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: _F) -> _F:
    """Marks a function the script compiler may skip; eagerly, unchanged."""
    return fn


def export(fn: _F) -> _F:
    """Marks a method for the script compiler to compile; eagerly, unchanged."""
    return fn
