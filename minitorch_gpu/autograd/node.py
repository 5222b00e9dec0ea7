"""Nodes of the backward graph and the base class of every built-in op.

A Node is PyTorch's ``grad_fn``: it knows the edges to the nodes that produced its inputs
(``next_functions``), the tensors it saved, and how to turn output gradients into input gradients.
Built-in ops subclass :class:`Op`: ``forward`` computes arrays through the backend and ``backward`` is
written with Tensor ops, so running it with grad mode on (``create_graph=True``) records a graph of
its own and higher-order gradients come for free.

Recording is on the hot path of every op, so ``Op.apply`` does the least it can: nodes have no
``__init__`` (class attributes are the defaults), edges are plain tuples, and all hook bookkeeping hides
behind one ``_hooked`` flag that the engine tests once per node.
"""
from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, cast

from ..backends._types import Array

from .._dtype import _BY_NP
from .. import _op_range
from .._mode import _state
from ..tensor import Tensor, VersionCounter, _new_tensor
from ..utils.hooks import RemovableHandle, add_hook
from . import anomaly

__all__ = ["Node", "Op", "bump_version", "edge_of", "collect_edges", "skips_node", "sum_to"]

_seq = itertools.count()
_next_seq = _seq.__next__
# AccumulateGrad nodes run as soon as they are ready, before any other node (DDP relies on this)
ACCUMULATE_SEQ = 1 << 62
# what PyTorch reports as AccumulateGrad's sequence number (UINT64_MAX)
ACCUMULATE_SEQ_REPORTED = (1 << 64) - 1

_accumulate_lock = threading.Lock()
_anomaly_mode = anomaly._mode
_new = object.__new__
NO_EDGE = (None, 0)
_NO_EDGES = [(NO_EDGE,) * n for n in range(8)]

_INFERENCE_SAVE_MSG = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use "
    "it in autograd, or use `minitorch_gpu.no_grad()` instead of `minitorch_gpu.inference_mode()`.")

_FREED_MSG = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward.")


def bump_version(t: Tensor) -> None:
    vc = t._vc
    if vc is None:
        vc = t._vc = VersionCounter()
    vc.value += 1
    if _anomaly_mode["enabled"]:
        vc.write_trace = anomaly._stack()


class _OutputRef:
    """A saved output of the node itself, held without the Tensor object: the output refers to the node
    through ``grad_fn``, so keeping the Tensor would make a reference cycle."""
    __slots__ = ("output_nr", "data", "be", "vc")

    def __init__(self, t, output_nr):
        self.output_nr = output_nr
        self.data = t._data
        self.be = t._be
        if t._vc is None:
            t._vc = VersionCounter()
        self.vc = t._vc


def _tensor_desc(t):
    data = t.data if isinstance(t, _OutputRef) else t._data
    name = _BY_NP[data.dtype]._tensor_name
    return f"[minitorch_gpu.{name} [{', '.join(map(str, data.shape))}]]"


def _saved_versions(saved):
    """Versions of the tensors being saved (None for None); refuses inference tensors, as PyTorch does."""
    versions = []
    for t in saved:
        if t is None:
            versions.append(None)
        elif t.__class__ is _OutputRef:
            versions.append(t.vc.value)
        else:
            if t._inference:
                raise RuntimeError(_INFERENCE_SAVE_MSG)
            vc = t._vc
            versions.append(0 if vc is None else vc.value)
    return tuple(versions)


Edge = tuple["Node | None", int]
"""Where a gradient flows: (the node that consumes it, which of that node's outputs it is for)."""


def edge_of(t: Tensor) -> Edge:
    """The (node, output_nr) that gradients for tensor ``t`` flow into, or ``(None, 0)``."""
    if t._base is None:
        fn = t._grad_fn
        if fn is not None:
            return (fn, t._output_nr)
        if t._requires_grad:
            return (t._accumulate_node(), 0)
        return NO_EDGE
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (t._accumulate_node(), 0)
    # a view made in no_grad mode of a base that requires grad: it reports requires_grad (as in
    # PyTorch) but has no history, so its gradient goes nowhere
    return NO_EDGE


def skips_node(*tensors: Tensor | None) -> bool:
    """Whether an op on ``tensors`` (None entries allowed) may run its primitive without a node: nothing would be
    recorded (grad mode off, or no operand requires grad or is a view, which might) and no op range is open (the
    profiler and NVTX see ops through their nodes)."""
    if _op_range.enabled:
        return False
    if not _state.grad:
        return True
    for t in tensors:
        if t is not None and (t._requires_grad or t._base is not None):
            return False
    return True


def collect_edges(tensors: Iterable[Tensor | None]) -> tuple[Edge, ...] | None:
    """Edges for ``tensors`` (None entries allowed), or None when none of them requires grad."""
    for t in tensors:
        if t is not None and (t._requires_grad or (t._base is not None and t.requires_grad)):
            break
    else:
        return None
    return tuple([NO_EDGE if t is None else edge_of(t) for t in tensors])


class Node:
    """A backward function. ``next_functions`` holds ``(node, output_nr)`` per input, ``(None, 0)`` for
    inputs that need no gradient."""

    next_functions: tuple[Edge, ...] = ()
    _seq_nr = 0
    _saved: tuple[Any, ...] | None = None
    _saved_versions: tuple[int | None, ...] | None = None
    _released = False
    _hooked = False
    _pre_hooks: dict[int, Callable[..., Any]] | None = None
    _post_hooks: dict[int, Callable[..., Any]] | None = None
    _tensor_hooks: dict[int, dict[int, Callable[..., Any]]] | None = None
    _retain_hooks: dict[int, Any] | None = None
    _trace = None
    _n_outputs = 1
    _metadata = None

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    def __lt__(self, other):
        # only reached by the engine's heap when two nodes share a sequence number
        return id(self) < id(other)

    def __call__(self, *grads: Tensor | None) -> Any:
        """Run this node's backward on output gradients, as ``grad_fn(grad)`` does in PyTorch."""
        return self._run(list(grads))

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def _sequence_nr(self):
        return self._seq_nr

    # ------------------------------------------------------------------ saved tensors
    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for backward; their versions are taken when the node is recorded and checked
        when they are read back."""
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        saved = self._saved
        if saved is None:
            if self._released:
                raise RuntimeError(_FREED_MSG)
            return ()
        out: list[Tensor | None] = []
        for t, v in zip(saved, cast(tuple[int, ...], self._saved_versions)):
            if t is None:
                out.append(None)
            elif t.__class__ is _OutputRef:
                cur = t.vc.value
                if cur != v:
                    self._raise_version_error(t, cur, v)
                out.append(self._unpack_output(t))
            else:
                vc = t._vc
                if vc is not None and vc.value != v:
                    self._raise_version_error(t, vc.value, v)
                out.append(t)
        return tuple(out)

    def _unpack_output(self, ref):
        t = Tensor._make(ref.data, ref.be)
        t._vc = ref.vc
        t._grad_fn = self
        t._output_nr = ref.output_nr
        t._requires_grad = True
        return t

    def _raise_version_error(self, t, cur, expected):
        if isinstance(t, _OutputRef):
            creator = f", which is output {t.output_nr} of {self.name()},"
            vc = t.vc
        else:
            fn = t.grad_fn
            creator = f", which is output {t._output_nr} of {fn.name()}," if fn is not None else ""
            vc = t._vc
        msg = (f"one of the variables needed for gradient computation has been modified by an inplace "
               f"operation: {_tensor_desc(t)}{creator} is at version {cur}; expected version {expected} "
               f"instead. It was saved by {self.name()}.")
        if vc is not None and vc.write_trace:
            msg += ("\nThe in-place operation that modified it was called here (most recent call last):\n"
                    + vc.write_trace)
        else:
            msg += (" Hint: enable anomaly detection to find the operation that failed to compute its "
                    "gradient, with minitorch_gpu.autograd.set_detect_anomaly(True).")
        raise RuntimeError(msg)

    def _release(self):
        """Free what only backward needed (after a backward without retain_graph)."""
        if self._saved is not None:
            self._saved = None
            self._released = True

    # ------------------------------------------------------------------ hooks
    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = {}
        self._hooked = True
        return add_hook(self._post_hooks, fn)

    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = {}
        self._hooked = True
        return add_hook(self._pre_hooks, fn)

    def _add_tensor_hook(self, output_nr, hook):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        d = self._tensor_hooks.setdefault(output_nr, {})
        self._hooked = True
        return add_hook(d, hook)

    def _add_retain_hook(self, output_nr, ref):
        if self._retain_hooks is None:
            self._retain_hooks = {}
        self._retain_hooks[output_nr] = ref
        self._hooked = True

    def _tensor_pre_hooks(self):
        """{output_nr: {id: hook}} of tensor hooks (AccumulateGrad reads them off its leaf)."""
        return self._tensor_hooks

    # ------------------------------------------------------------------ graph building
    def _connect(self, inputs):
        """Record this node in the graph (for nodes built by hand rather than by ``Op.apply``)."""
        edges = collect_edges(inputs)
        self.next_functions = edges if edges is not None else (NO_EDGE,) * len(inputs)
        saved = self._saved
        if saved is not None and self._saved_versions is None:
            self._saved_versions = _saved_versions(saved)
        self._seq_nr = _next_seq()
        if _anomaly_mode["enabled"]:
            self._trace = anomaly._stack()

    def _run(self, grads: list[Tensor | None]) -> Any:
        """Input gradients from output gradients (a list with one entry per output)."""
        return self.backward(*grads)

    def backward(self, *grads: Any) -> Any:
        raise RuntimeError(f"{self.name()} has no backward")


class Op(Node):
    """Base for built-in differentiable ops.

    Subclasses define ``forward(self, *tensors, **params) -> array`` (reading ``t._data`` and calling the
    backend) and ``backward(self, grad) -> tuple`` with one entry per tensor input (None where no gradient
    is needed; ``self.needs_input_grad`` says which, in forward already). ``forward`` may call
    ``save_for_backward`` with input tensors and set ``self.save_output = True`` to keep its own result.
    Save only what the needed gradients read (``None`` in the other slots): a saved tensor that is later
    modified in place makes backward raise, so saving ``a`` of ``a * c`` when only ``a``'s gradient is
    needed (it reads ``c``) would reject ``b = a * c; a.add_(1); b.backward()``, which PyTorch accepts.
    """

    save_output: ClassVar[bool] = False

    # the two halves every op defines; the signatures are open because each op names its own params
    def forward(self, *inputs: Any, **params: Any) -> Array:
        raise NotImplementedError(f"{type(self).__name__} must define forward")

    def backward(self, *grads: Any) -> Any:
        """One gradient (a Tensor or None) per tensor input: a tuple, or the gradient alone for one input."""
        raise NotImplementedError(f"{type(self).__name__} must define backward")

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        return tuple([e[0] is not None for e in self.next_functions])

    @classmethod
    def apply(cls, *inputs: Any, **params: Any) -> Tensor:
        node = _new(cls)
        recording = False
        if _state.grad:
            for t in inputs:
                if t is not None and (t._requires_grad or (t._base is not None and t.requires_grad)):
                    recording = True
                    break
        # edges come first so that forward can read needs_input_grad and save only what it needs
        n = len(inputs)
        if not recording:
            node.next_functions = _NO_EDGES[n] if n < 8 else (NO_EDGE,) * n
        elif n == 1:
            node.next_functions = (edge_of(inputs[0]),)
        elif n == 2:
            a, b = inputs
            node.next_functions = (NO_EDGE if a is None else edge_of(a), NO_EDGE if b is None else edge_of(b))
        else:
            node.next_functions = tuple([NO_EDGE if t is None else edge_of(t) for t in inputs])
        if _op_range.enabled:  # NVTX ranges, the profiler: the one hook check of the hot path
            # the result's Tensor is made inside the range: the simulated device counts its memory there
            _op_range.push(_op_range.OP, cls.__name__, inputs)
            try:
                out = node.forward(*inputs, **params)
                result = _make(out, inputs[0]._be)
            finally:
                _op_range.pop()
        else:
            out = node.forward(*inputs, **params)
            result = _make(out, inputs[0]._be)
        if not recording or out.dtype.kind not in "fV":
            return result
        saved = node._saved
        if saved is not None:
            node._saved_versions = _saved_versions(saved)
        node._seq_nr = _next_seq()
        if _anomaly_mode["enabled"]:
            node._trace = anomaly._stack()
        if node.save_output:
            node._saved = (saved or ()) + (_OutputRef(result, 0),)
            node._saved_versions = (node._saved_versions or ()) + (0,)
        result._grad_fn = node
        result._requires_grad = True
        return result

    @property
    def saved_output(self):
        """The op's own result, rebuilt from the saved array (as the last saved tensor)."""
        return self.saved_tensors[-1]


# every op result is built by Tensor's constructor without the classmethod binding (the hot path)
_make = _new_tensor


def _is_tensor(x):
    return isinstance(x, Tensor)


def sum_to(grad: Tensor, shape: Sequence[int]) -> Tensor:
    """Reduce a broadcast gradient back to ``shape`` (the backward of broadcasting)."""
    shape = tuple(shape)
    gshape = grad._data.shape
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    elif grad._data.shape != shape:
        grad = grad.reshape(shape)
    return grad
