"""``mt.compiler``: the parts of ``torch.compiler`` that eager code asks about.

There is no graph compiler here: code always runs eagerly, so ``is_compiling()`` is False and ``disable``
returns its function as it is. Library code that branches on ``torch.compiler.is_compiling()`` (PyTorch's
optimizers do) takes the eager branch, as it does under PyTorch outside ``torch.compile``.
"""
from collections.abc import Callable
from typing import Any

__all__ = ["disable", "is_compiling", "is_dynamo_compiling"]


def is_compiling() -> bool:
    """False: nothing is ever traced by a compiler here."""
    return False


def is_dynamo_compiling() -> bool:
    """False, as :func:`is_compiling`."""
    return False


def disable(fn: Callable[..., Any] | None = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Keeps ``fn`` out of compilation; usable bare or called (``@disable(recursive=False)``). Eagerly, the
    function is unchanged."""
    if fn is None:
        return lambda f: f
    return fn
