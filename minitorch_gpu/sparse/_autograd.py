"""How sparse ops join the autograd graph.

``Op.apply`` wraps a dense array as its result, so sparse ops record their node by hand: the forward runs
under no_grad on the detached indices and values, then :func:`record` gives the result the node as history.
Backward formulas are written with Tensor ops (sparse ones included), so ``create_graph=True`` records them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from .._mode import _state
from ..autograd.node import Node
from ..tensor import Tensor

__all__ = ["SparseNode", "record"]

T = TypeVar("T", bound=Tensor)


class SparseNode(Node):
    """A backward node recorded by a sparse op; subclasses define ``backward(grad)``."""

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        return tuple([e[0] is not None for e in self.next_functions])


def record(node: SparseNode, inputs: Sequence[Tensor | None], output: T, saved: Sequence[Tensor | None] = ()) -> T:
    """``output`` with ``node`` as its history when grad mode is on and an input requires grad; ``saved`` are
    the tensors the node's backward reads (version-checked as for every op)."""
    if not _state.grad or not any(t is not None and t.requires_grad for t in inputs):
        return output
    if saved:
        node.save_for_backward(*saved)
    node._connect(inputs)
    output._grad_fn = node
    output._requires_grad = True
    return output
