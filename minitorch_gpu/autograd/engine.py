"""The backward engine: iterative, priority-ordered, thread-safe.

One call of :func:`run_backward` is a graph task with its own dependency counts, gradient buffers and
ready queue, so several threads can run backward at once. Ready nodes run by descending sequence number
(reverse creation order); AccumulateGrad nodes have the highest priority and run as soon as their
gradient is complete, which is what lets DDP start all-reduces during backward. There is no recursion:
a chain of any length backpropagates.
"""
import heapq
import itertools
import threading
import warnings
import weakref

from . import anomaly
from .function import ACCUMULATE_SEQ, Node, _accumulate_lock, bump_version
from .grad_mode import _state

__all__ = ["run_backward", "queue_callback", "AccumulateGrad"]

_local = threading.local()


class AccumulateGrad(Node):
    """Sink node of a leaf tensor: adds the incoming gradient into ``variable.grad``."""

    def __init__(self, variable):
        self.variable = variable
        self._seq_nr = ACCUMULATE_SEQ
        self.next_functions = ()

    def name(self):
        return "AccumulateGrad"

    @property
    def _tensor_hooks(self):
        hooks = self.variable._hooks
        return {0: hooks} if hooks else None

    def _run(self, grads):
        g = grads[0]
        var = self.variable
        if g is not None:
            accumulate_grad(var, g)
            hooks = var._post_acc_hooks
            if hooks:
                for h in list(hooks.values()):
                    h(var)
        return ()


def accumulate_grad(var, g):
    """var.grad += g: in place when no graph is being built, else out of place so the sum is recorded."""
    from ..tensor import Tensor
    with _accumulate_lock:
        cur = var._grad
        if cur is None:
            if _state.grad:
                var._grad = g
            else:
                # the incoming gradient may be shared with another leaf (AddBackward hands the same tensor
                # to both inputs), so the leaf gets its own writable copy
                var._grad = Tensor._make(g._be.copy(g._data), g._be)
        elif _state.grad or cur._requires_grad:
            var._grad = cur + g
        else:
            cur._be.copy_into(cur._data, cur._be.binary("add", cur._data, g._data))
            bump_version(cur)


class _GraphTask:
    __slots__ = ("callbacks",)

    def __init__(self):
        self.callbacks = []


def queue_callback(callback):
    """Run ``callback()`` when the backward pass currently executing in this thread finishes."""
    tasks = getattr(_local, "tasks", None)
    if not tasks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    tasks[-1].callbacks.append(callback)


def _check_nan(node, outs):
    for i, g in enumerate(outs):
        if g is not None and g.dtype.is_floating_point and g._be.isnan_any(g._data):
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node._trace:
                msg += ("\nTraceback of the forward call that created it (most recent call last):\n"
                        + node._trace)
            raise RuntimeError(msg)


def _add_grad(buf, nr, g):
    cur = buf[nr]
    buf[nr] = g if cur is None else cur + g


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None, allow_unused=False,
                 accumulate=True):
    """Backpropagate from ``outputs``. With ``accumulate`` (``backward``), gradients go into leaves'
    ``.grad`` (only those in ``inputs`` when given); without it (``autograd.grad``) the gradients of
    ``inputs`` are returned and no ``.grad`` is touched."""
    roots = []
    for i, (t, g) in enumerate(zip(outputs, grad_outputs)):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append((t._edge(), g))

    targets = None
    target_nodes = None
    if inputs is not None:
        targets = {}
        for i, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            targets.setdefault(t._edge(), []).append(i)
        target_nodes = {n for n, _ in targets}

    # discover the graph and count, for every node, how many edges point at it
    deps = {}
    root_nodes = []
    seen = set()
    for (node, _), _g in roots:
        if node not in seen:
            seen.add(node)
            root_nodes.append(node)
    stack = list(root_nodes)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)

    needed = None
    if target_nodes is not None:
        needed = _nodes_reaching(root_nodes, deps, target_nodes)

    buffers = {}
    for (node, nr), g in roots:
        buf = buffers.get(node)
        if buf is None:
            buf = buffers[node] = [None] * node._n_outputs
        _add_grad(buf, nr, g)

    tie = itertools.count()
    heap = [(-n._seq_nr, next(tie), n) for n in root_nodes if deps.get(n, 0) == 0]
    heapq.heapify(heap)

    captured = [None] * len(inputs) if inputs is not None else None
    check_nan = anomaly._mode["enabled"] and anomaly._mode["check_nan"]

    task = _GraphTask()
    tasks = getattr(_local, "tasks", None)
    if tasks is None:
        tasks = _local.tasks = []
    tasks.append(task)
    prev_grad = _state.grad
    _state.grad = create_graph
    try:
        while heap:
            node = heapq.heappop(heap)[2]
            grads = buffers.pop(node, None)
            if grads is None:
                grads = [None] * node._n_outputs

            th = node._tensor_hooks
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
            if targets is not None:
                for nr in range(len(grads)):
                    idx = targets.get((node, nr))
                    if idx:
                        for i in idx:
                            captured[i] = grads[nr]

            if node.__class__ is AccumulateGrad:
                if accumulate and (target_nodes is None or node in target_nodes):
                    node._run(grads)
                continue
            if needed is not None and node not in needed:
                continue

            ph = node._pre_hooks
            if ph:
                for h in list(ph.values()):
                    r = h(tuple(grads))
                    if r is not None:
                        grads = list(r)

            if all(g is None for g in grads):
                outs = (None,) * len(node.next_functions)
            else:
                try:
                    outs = node._run(grads)
                except Exception:
                    if node._trace:
                        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                                      f"the error:\n{node._trace}", stacklevel=2)
                    raise
                if check_nan:
                    _check_nan(node, outs)

            hooks = node._post_hooks
            if hooks:
                for h in list(hooks.values()):
                    r = h(tuple(outs), tuple(grads))
                    if r is not None:
                        outs = tuple(r)

            if not retain_graph:
                node._release()

            for (nxt, nr), g in zip(node.next_functions, outs):
                if nxt is None or (needed is not None and nxt not in needed):
                    continue
                if g is not None:
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * nxt._n_outputs
                    _add_grad(buf, nr, g)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    heapq.heappush(heap, (-nxt._seq_nr, next(tie), nxt))

        # callbacks may queue further callbacks
        while task.callbacks:
            task.callbacks.pop(0)()
    finally:
        _state.grad = prev_grad
        tasks.pop()

    if inputs is None:
        return None
    if not allow_unused:
        for i, g in enumerate(captured):
            if g is None:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
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


def _nodes_reaching(root_nodes, deps, target_nodes):
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


def make_retain_ref(t):
    return weakref.ref(t)
