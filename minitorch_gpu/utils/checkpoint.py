"""``torch.utils.checkpoint``: activation checkpointing. A checkpointed segment keeps none of its activations for
backward; backward recomputes the segment's forward, with the random-number state it had, and uses those.

``use_reentrant=False`` (recommended, as in PyTorch): the forward runs with autograd recording as usual, so the
segment's graph exists and gradients flow through it to anything it used (inputs, parameters, captured tensors),
under ``backward`` and ``autograd.grad`` alike; when the forward returns, every node recorded inside the segment
lets go of what it saved for backward, and a pre-hook on those nodes recomputes the segment the first time
backward reaches one of them, handing each node the state its twin in the recomputed graph saved. While the
segment runs its activations are alive, as in PyTorch; once it has returned only its inputs and outputs are.

``use_reentrant=True``: PyTorch's older variant, an ``autograd.Function`` whose forward runs the segment without
recording and whose backward recomputes it with recording and runs a nested backward through it.
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .. import cuda
from ..autograd.engine import AccumulateGrad
from ..autograd.function import Function
from ..autograd.grad_mode import _state, enable_grad, no_grad
from ..autograd._api import backward as autograd_backward
from ..autograd.node import Node, _next_seq
from ..ops.random import fork_rng, get_rng_state, set_rng_state
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """The recomputed forward did not record what the original forward did (``torch.utils.checkpoint``'s)."""


def noop_context_fn() -> tuple[contextlib.AbstractContextManager[Any], contextlib.AbstractContextManager[Any]]:
    """The default ``context_fn``: no context around either forward."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_NOT_PASSED_MSG = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but if "
    "you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants.")

_SEQUENTIAL_NOT_PASSED_MSG = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. In "
    "version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, but "
    "if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants.")


# ---------------------------------------------------------------------- the random-number state of a segment

def _tensors(obj: Any) -> Iterator[Tensor]:
    """Every tensor in ``obj`` and in the tuples, lists and dict values inside it."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)


class _RngState:
    """The CPU generator's state and that of every CUDA device an argument lives on, as the forward found them."""

    def __init__(self, args: Iterable[Any]) -> None:
        self.cpu = get_rng_state()
        devices = sorted({t.device.index or 0 for t in _tensors(list(args)) if t.device.type == "cuda"})
        self.devices = devices
        self.cuda = [cuda.get_rng_state(d) for d in devices]

    @contextlib.contextmanager
    def restored(self) -> Iterator[None]:
        """Inside, the generators are where the forward had them; on exit, where they were before."""
        with fork_rng(devices=self.devices):
            set_rng_state(self.cpu)
            for d, state in zip(self.devices, self.cuda):
                cuda.set_rng_state(state, d)
            yield


# ---------------------------------------------------------------------- use_reentrant=False

# what a node keeps for the engine and the graph: everything else in its __dict__ is what its forward stored for
# backward, which the segment drops and the recomputation restores
_GRAPH_ATTRS = frozenset({"next_functions", "_seq_nr", "_n_outputs", "_hooked", "_pre_hooks", "_post_hooks",
                          "_tensor_hooks", "_retain_hooks", "_trace", "_metadata"})


def _segment_nodes(outputs: Any, first_seq: int) -> list[Node]:
    """The nodes recorded since sequence number ``first_seq`` that backward from ``outputs`` reaches, in
    recording order."""
    seen: set[int] = set()
    found: list[Node] = []
    stack = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or node.__class__ is AccumulateGrad or node._seq_nr < first_seq:
            continue
        seen.add(id(node))
        found.append(node)
        stack.extend(fn for fn, _ in node.next_functions)
    found.sort(key=lambda n: n._seq_nr)
    return found


def _saved_count(nodes: list[Node]) -> int:
    return sum(len(n.__dict__.get("_saved") or ()) for n in nodes)


class _Segment:
    """One checkpointed call: its nodes hold nothing for backward until ``recompute`` refills them."""

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 rng: _RngState | None, context_fn: Callable[..., Any]) -> None:
        self.function, self.args, self.kwargs, self.rng, self.context_fn = function, args, kwargs, rng, context_fn
        self.nodes: list[Node] = []
        self.saved_in_forward = 0
        self.handles: list[Any] = []

    def release(self, outputs: Any, first_seq: int) -> None:
        self.nodes = _segment_nodes(outputs, first_seq)
        self.saved_in_forward = _saved_count(self.nodes)
        for node in self.nodes:
            for key in [k for k in node.__dict__ if k not in _GRAPH_ATTRS]:
                del node.__dict__[key]
            self.handles.append(node.register_prehook(self._recompute_hook))

    def _recompute_hook(self, grads: tuple[Any, ...]) -> None:
        self.recompute()

    def recompute(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []
        first = _next_seq()
        rng = self.rng.restored() if self.rng is not None else contextlib.nullcontext()
        with rng, enable_grad(), self.context_fn()[1]:
            outputs = self.function(*self.args, **self.kwargs)
        twins = _segment_nodes(outputs, first)
        saved = _saved_count(twins)
        if saved != self.saved_in_forward or len(twins) != len(self.nodes):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {self.saved_in_forward}\nNumber of "
                f"tensors saved during recomputation: {saved}")
        for node, twin in zip(self.nodes, twins):
            if type(node) is not type(twin):
                raise CheckpointError(
                    "torch.utils.checkpoint: the recomputed forward recorded a different operation "
                    f"({twin.name()}) where the original forward recorded {node.name()}. The checkpointed function "
                    "must run the same operations each time it is called.")
            for key, value in twin.__dict__.items():
                if key not in _GRAPH_ATTRS:
                    node.__dict__[key] = value
        self.nodes = []


def _checkpoint_without_reentrant(function: Callable[..., Any], preserve_rng_state: bool,
                                  context_fn: Callable[..., Any], args: tuple[Any, ...],
                                  kwargs: dict[str, Any]) -> Any:
    if not _state.grad:
        return function(*args, **kwargs)
    rng = _RngState(list(args) + list(kwargs.values())) if preserve_rng_state else None
    segment = _Segment(function, args, kwargs, rng, context_fn)
    first = _next_seq()
    with context_fn()[0]:
        outputs = function(*args, **kwargs)
    segment.release(outputs, first)
    return outputs


# ---------------------------------------------------------------------- use_reentrant=True

class CheckpointFunction(Function):
    """The reentrant variant: forward without recording, backward recomputes and runs a nested backward."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool, *args: Any) -> Any:
        ctx.run_function = run_function
        ctx.rng = _RngState(args) if preserve_rng_state else None
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t.detach().requires_grad_(t.requires_grad)
        rng = ctx.rng.restored() if ctx.rng is not None else contextlib.nullcontext()
        with rng, enable_grad():
            outputs = ctx.run_function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in inputs)


# ---------------------------------------------------------------------- the API

def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[..., Any] = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, keeping none of its activations for backward: backward runs it again.

    ``preserve_rng_state=True`` (a keyword, the default) replays the forward's random numbers (dropout masks);
    ``use_reentrant`` should be passed, and False is recommended (see the module docstring).

    >>> y = checkpoint(block, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(_NOT_PASSED_MSG, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if _state.grad and not any(t.requires_grad for t in _tensors(list(args))):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,
                          **kwargs: Any) -> Any:
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules / functions) on ``input`` in ``segments``
    chunks, checkpointing every chunk but the last.

    >>> out = checkpoint_sequential(model, 2, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_NOT_PASSED_MSG, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if hasattr(functions, "children"):
        functions = list(functions.children())

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
