"""The backward engine: iterative, priority-ordered, thread-safe.

One call of :func:`run_backward` is a graph task with its own dependency counts, gradient buffers and
ready queue, so several threads can run backward at once; the only shared state they touch is a leaf's
``.grad``, which is updated under a lock. Ready nodes run by descending sequence number (reverse
creation order); AccumulateGrad nodes have the highest priority and run as soon as their gradient is
complete, which is what lets DDP start all-reduces during backward. There is no recursion: a chain of
any length backpropagates.
"""
from __future__ import annotations

import heapq
import threading
import warnings
from collections.abc import Callable, Container, Sequence
from typing import Any

from .. import _op_range
from ..tensor import Tensor
from . import anomaly
from . import function as _function
from .function import (ACCUMULATE_SEQ, ACCUMULATE_SEQ_REPORTED, Node, _accumulate_lock, _next_seq, bump_version,
                       edge_of)
from .grad_mode import _state

__all__ = ["run_backward", "queue_callback", "AccumulateGrad"]

_local = threading.local()
_heappush = heapq.heappush
_heappop = heapq.heappop

_Root = tuple[Node, int, Tensor]
"""A starting point of backward: (node, output_nr, the gradient flowing in)."""


class AccumulateGrad(Node):
    """Sink node of a leaf tensor: adds the incoming gradient into ``variable.grad``."""

    def __init__(self, variable):
        self.variable = variable
        # unique, and above every other node: the heap never has to compare two nodes
        self._seq_nr = ACCUMULATE_SEQ + _next_seq()

    def name(self):
        return "AccumulateGrad"

    def _sequence_nr(self):
        return ACCUMULATE_SEQ_REPORTED

    @property
    def _hooked(self):
        var = self.variable
        return bool(var._hooks) or self._pre_hooks is not None or self._post_hooks is not None

    @_hooked.setter
    def _hooked(self, value):
        # hooks registered on the node itself are found through _pre_hooks / _post_hooks
        pass

    def _tensor_pre_hooks(self):
        hooks = self.variable._hooks
        return {0: hooks} if hooks else None

    def _run(self, grads):
        g = grads[0]
        var = self.variable
        if g is not None and var._requires_grad:
            accumulate_grad(var, g)
            hooks = var._post_acc_hooks
            if hooks:
                for h in list(hooks.values()):
                    h(var)
        return ()


def accumulate_grad(var, g):
    """var.grad += g, under a lock since several backward passes may share a leaf. Outside create_graph
    the sum is done in place and the first gradient is copied (it may be shared: AddBackward hands the
    same tensor to both of its inputs); with create_graph the sum is recorded."""
    if g._data.shape != var._data.shape:
        raise RuntimeError(f"AccumulateGrad: gradient of shape {list(g._data.shape)} does not match the shape "
                           f"{list(var._data.shape)} of the tensor it is accumulated into")
    with _accumulate_lock:
        cur = var._grad
        # a sparse gradient has no array to add into: it is summed as a tensor, like a recorded one (only a
        # Tensor subclass can be sparse, so plain gradients pass on two identity tests)
        generic = _state.grad or g.__class__ is not Tensor or (cur is not None and cur.__class__ is not Tensor)
        if cur is None:
            if generic:
                var._grad = g.clone()
            else:
                be = g._be
                data = g._data
                if data.dtype != var._data.dtype:
                    data = be.astype(data, var._data.dtype)
                # a plain Tensor even when the leaf is a subclass (a Parameter's grad is not a Parameter)
                var._grad = _function._make(be.copy(data), be)
        elif generic:
            var._grad = _layout_sum(cur, g)
        else:
            be = cur._be
            be.copy_into(cur._data, be.binary("add", cur._data, g._data))
            bump_version(cur)


class _GraphTask:
    __slots__ = ("callbacks",)

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], Any]] = []


def queue_callback(callback: Callable[[], Any]) -> None:
    """Run ``callback()`` when the backward pass currently executing in this thread finishes."""
    tasks = getattr(_local, "tasks", None)
    if not tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    tasks[-1].callbacks.append(callback)


def _check_nan(node, outs):
    for i, g in enumerate(outs):
        if g is not None and g._data.dtype.kind in "fV" and g._be.isnan_any((g._values() if g.is_sparse else g)._data):
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node._trace:
                msg += ("\nTraceback of the forward call that created it (most recent call last):\n"
                        + node._trace)
            raise RuntimeError(msg)


def _sum(cur, g):
    """cur + g for gradient buffers: straight through the backend when nothing is being recorded."""
    if _state.grad:
        return _layout_sum(cur, g)
    a, b = cur._data, g._data
    if a.shape == b.shape and a.dtype == b.dtype and cur.__class__ is Tensor and g.__class__ is Tensor:
        be = cur._be
        return _function._make(be.binary("add", a, b), be)
    return _layout_sum(cur, g)


def _layout_sum(a, b):
    """a + b for gradients of any layout: a dense one plus a sparse one is dense, in either order (as in PyTorch's
    engine; ``sparse + dense`` itself is refused)."""
    if a.is_sparse and not b.is_sparse:
        return b + a
    return a + b


def _pre_hooks(node, grads):
    """Tensor hooks (which may replace a gradient), then retain_grad, then the node's pre-hooks."""
    th = node._tensor_pre_hooks()
    if th:
        for nr, hooks in th.items():
            if grads[nr] is not None:
                for h in list(hooks.values()):
                    r = h(grads[nr])
                    if r is not None:
                        grads[nr] = r
    rh = node._retain_hooks
    if rh:
        for nr, ref in rh.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                _retain(t, grads[nr])
    return grads


def _node_pre_hooks(node, grads):
    ph = node._pre_hooks
    if ph:
        for h in list(ph.values()):
            r = h(tuple(grads))
            if r is not None:
                grads = list(r)
    return grads


def _post_hooks(node, outs, grads):
    hooks = node._post_hooks
    if hooks:
        for h in list(hooks.values()):
            r = h(tuple(outs), tuple(grads))
            if r is not None:
                outs = tuple(r)
    return outs


def run_backward(outputs: Sequence[Tensor], grad_outputs: Sequence[Tensor], retain_graph: bool,
                 create_graph: bool, inputs: Sequence[Tensor] | None = None, allow_unused: bool = False,
                 accumulate: bool = True) -> list[Tensor | None] | None:
    """Backpropagate from ``outputs``. With ``accumulate`` (``backward``), gradients go into leaves'
    ``.grad`` (only those in ``inputs`` when given); without it (``autograd.grad``) the gradients of
    ``inputs`` are returned and no ``.grad`` is touched."""
    roots = _root_edges(outputs, grad_outputs)
    captures = None if inputs is None else _input_edges(inputs)
    root_nodes, deps = _count_dependencies(roots)
    needed = None if captures is None else _nodes_reaching(root_nodes, deps, captures)
    buffers = _seed_buffers(roots)
    captured: list[Tensor | None] = [] if inputs is None else [None] * len(inputs)

    task = _GraphTask()
    tasks = getattr(_local, "tasks", None)
    if tasks is None:
        tasks = _local.tasks = []
    tasks.append(task)
    prev_grad = _state.grad
    _state.grad = create_graph
    try:
        _execute(root_nodes, deps, buffers, captures, captured, needed, retain_graph, accumulate)
        _run_callbacks(task)
    finally:
        _state.grad = prev_grad
        tasks.pop()

    if inputs is None:
        return None
    return _finish_inputs(inputs, captured, allow_unused, accumulate)


# ---------------------------------------------------------------------- phases of one backward pass
# The phases before and after the execution loop run once per backward; only _execute runs per node,
# so it alone is written for speed (locals, no helper calls on the common path).

def _root_edges(outputs: Sequence[Tensor], grad_outputs: Sequence[Tensor]) -> list[_Root]:
    """(node, output_nr, gradient) for every output that has a graph behind it."""
    roots = []
    for i, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        node, nr = edge_of(t)
        if node is not None:
            roots.append((node, nr, g))
    return roots


def _input_edges(inputs: Sequence[Tensor]) -> dict[Node, list[tuple[int, int]]]:
    """{node: [(output_nr, index in inputs)]}: where each input's gradient is read off the graph."""
    captures: dict[Node, list[tuple[int, int]]] = {}
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        node, nr = edge_of(t)
        if node is not None:
            captures.setdefault(node, []).append((nr, i))
    return captures


def _count_dependencies(roots: list[_Root]) -> tuple[list[Node], dict[Node, int]]:
    """The distinct root nodes, and for every node below them how many edges point at it (an iterative
    walk: graphs of any depth)."""
    deps: dict[Node, int] = {}
    root_nodes = []
    seen = set()
    for node, _, _ in roots:
        if node not in seen:
            seen.add(node)
            root_nodes.append(node)
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None:
                if nxt in deps:
                    deps[nxt] += 1
                else:
                    deps[nxt] = 1
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
    return root_nodes, deps


def _seed_buffers(roots: list[_Root]) -> dict[Node, list[Tensor | None]]:
    """The gradient buffers of the root nodes, summing the gradients of outputs that share a node."""
    buffers: dict[Node, list[Tensor | None]] = {}
    for node, nr, g in roots:
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._n_outputs
        cur = buf[nr]
        buf[nr] = g if cur is None else _sum(cur, g)
    return buffers


def _execute(root_nodes: list[Node], deps: dict[Node, int], buffers: dict[Node, list[Tensor | None]],
             captures: dict[Node, list[tuple[int, int]]] | None, captured: list[Tensor | None],
             needed: set[Node] | None, retain_graph: bool, accumulate: bool) -> None:
    """Run nodes as they become ready, highest sequence number first. ``deps`` and ``buffers`` are
    consumed; with ``captures``, the gradients flowing into those edges are written into ``captured``
    and only the ``needed`` nodes run."""
    heap = [(-n._seq_nr, n) for n in root_nodes if n not in deps]
    heapq.heapify(heap)
    check_nan = anomaly._mode["enabled"] and anomaly._mode["check_nan"]
    pop_buffer = buffers.pop
    while heap:
        node = _heappop(heap)[1]
        grads = pop_buffer(node, None)
        if grads is None:
            grads = [None] * node._n_outputs
        hooked = node._hooked
        if hooked:
            grads = _pre_hooks(node, grads)
        if captures is not None:
            cap = captures.get(node)
            if cap:
                for nr, i in cap:
                    captured[i] = grads[nr]

        if node.__class__ is AccumulateGrad:
            if accumulate and (captures is None or node in captures):
                if hooked:
                    grads = _node_pre_hooks(node, grads)
                if _op_range.enabled:
                    _run_in_range(node, grads)
                else:
                    node._run(grads)
                if hooked:
                    _post_hooks(node, (), grads)
            continue
        if needed is not None and node not in needed:
            continue
        if hooked:
            grads = _node_pre_hooks(node, grads)

        nexts = node.next_functions
        if grads[0] is not None if len(grads) == 1 else any(g is not None for g in grads):
            try:
                outs = node._run(grads) if not _op_range.enabled else _run_in_range(node, grads)
                if outs.__class__ is not tuple:
                    outs = tuple(outs) if isinstance(outs, list) else (outs,)
                if check_nan:
                    _check_nan(node, outs)
            except Exception:
                _warn_forward_trace(node)
                raise
            if len(outs) != len(nexts):
                raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                                   f"(expected {len(nexts)}, got {len(outs)})")
        else:
            # no gradient reached this node: its inputs get none either, but still count as done
            outs = (None,) * len(nexts)
        if hooked:
            outs = _post_hooks(node, outs, grads)
        if not retain_graph and node._saved is not None:
            # Node._release, inlined: the engine's per-node cost is the framework's overhead
            node._saved = None
            node._released = True

        for (nxt, nr), g in zip(nexts, outs):
            if nxt is None or (needed is not None and nxt not in needed):
                continue
            if g is not None:
                buf = buffers.get(nxt)
                if buf is None:
                    if nxt._n_outputs == 1:
                        buffers[nxt] = [g]
                    else:
                        buf = buffers[nxt] = [None] * nxt._n_outputs
                        buf[nr] = g
                else:
                    cur = buf[nr]
                    buf[nr] = g if cur is None else _sum(cur, g)
            left = deps[nxt] - 1
            if left:
                deps[nxt] = left
            else:
                del deps[nxt]
                _heappush(heap, (-nxt._seq_nr, nxt))


def _run_in_range(node: Node, grads: list[Tensor | None]) -> Any:
    """``node._run`` inside an op range (NVTX, the profiler), as PyTorch's engine records each node it runs."""
    _op_range.push(_op_range.BACKWARD, node.name())
    try:
        return node._run(grads)
    finally:
        _op_range.pop()


def _warn_forward_trace(node: Node) -> None:
    # anomaly mode recorded where the failing node was created: the error alone would only name backward
    if node._trace:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                      f"{node._trace}", stacklevel=4)


def _run_callbacks(task: _GraphTask) -> None:
    # callbacks may queue further callbacks, so the list is drained rather than iterated
    callbacks = task.callbacks
    while callbacks:
        callbacks.pop(0)()


def _finish_inputs(inputs: Sequence[Tensor], captured: list[Tensor | None], allow_unused: bool,
                   accumulate: bool) -> list[Tensor | None] | None:
    """The gradients of ``inputs`` for ``autograd.grad``; for ``backward(inputs=...)``, the ``.grad`` of
    non-leaf inputs (leaves got theirs from their AccumulateGrad node)."""
    if not allow_unused:
        for i, g in enumerate(captured):
            if g is None:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
    if accumulate:
        # backward(inputs=...) on a non-leaf fills its .grad, like retain_grad would
        for t, g in zip(inputs, captured):
            if g is not None and t.grad_fn is not None:
                _retain(t, g)
        return None
    return captured


def _retain(t, g):
    with _accumulate_lock:
        if t._grad is None:
            t._grad = g if _state.grad else g.detach().clone()
        else:
            t._grad = t._grad + g


def _nodes_reaching(root_nodes: list[Node], deps: dict[Node, int], target_nodes: Container[Node]) -> set[Node]:
    """Nodes from which a target node can be reached (only those need to run for autograd.grad)."""
    # topological order by Kahn's algorithm on a private copy of the dependency counts
    remaining = dict(deps)
    order = []
    frontier = [n for n in root_nodes if remaining.get(n, 0) == 0]
    while frontier:
        n = frontier.pop()
        order.append(n)
        for nxt, _ in n.next_functions:
            if nxt is not None:
                remaining[nxt] -= 1
                if remaining[nxt] == 0:
                    frontier.append(nxt)
    needed = set()
    for n in reversed(order):
        if n in target_nodes or any(nxt in needed for nxt, _ in n.next_functions if nxt is not None):
            needed.add(n)
    return needed
