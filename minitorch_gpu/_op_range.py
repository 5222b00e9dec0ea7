"""The op-range switch: one flag that every op, backward node and module call tests, and the subscribers it
calls when the flag is up (NVTX ranges, the profiler).

The hot paths (``Op.apply``, custom ``Function.apply``, the autograd engine's node loop, ``Module.__call__``)
read ``enabled`` once; with nobody subscribed it is False and they make no call at all, so recording costs one
module-global read per op whether or not anyone ever subscribes. A subscriber sees ``push(kind, name, inputs)``
before the work and ``pop()`` after it (in a ``finally``, so the two always pair up on a thread).

It is a shared leaf because the callers span autograd and nn and the subscribers sit in the CUDA runtime
(NVTX) and above every op (the profiler): only a module below all of them can be imported by both.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["enabled", "OP", "FUNCTION", "BACKWARD", "MODULE", "USER", "Subscriber", "subscribe", "unsubscribe", "push",
           "pop"]

# what a range is around (subscribers name it from this and the name they get)
OP = 0          # a built-in op's forward: ``Op.apply``, named by the op's node class (``AddmmBackward0``)
FUNCTION = 1    # a custom ``autograd.Function``'s forward, named by the Function class
BACKWARD = 2    # the engine running one node's backward, named by ``node.name()``
MODULE = 3      # ``Module.__call__``, named by the module's class
USER = 4        # a range the user marks (``profiler.record_function``), named by the user

enabled = False
_subscribers: tuple[Subscriber, ...] = ()


class Subscriber(Protocol):
    def push(self, kind: int, name: str, inputs: Sequence[Any]) -> None: ...

    def pop(self) -> None: ...


def subscribe(sub: Subscriber) -> None:
    """Call ``sub`` around every op from now on (once, however often it subscribes)."""
    global _subscribers, enabled
    if sub not in _subscribers:
        _subscribers = _subscribers + (sub,)
    enabled = True


def unsubscribe(sub: Subscriber) -> None:
    """Stop calling ``sub``; the flag drops when nobody is left."""
    global _subscribers, enabled
    _subscribers = tuple(s for s in _subscribers if s is not sub)
    enabled = bool(_subscribers)


def push(kind: int, name: str, inputs: Sequence[Any] = ()) -> None:
    """Open a range on this thread (callers test ``enabled`` first)."""
    for s in _subscribers:
        s.push(kind, name, inputs)


def pop() -> None:
    """Close this thread's innermost range, innermost subscriber first."""
    for s in reversed(_subscribers):
        s.pop()
