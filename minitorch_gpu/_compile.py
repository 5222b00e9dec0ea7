"""``mt.compile``: PyTorch's ``torch.compile`` entry point, with CUDA graphs for ``mode="reduce-overhead"``.

There is no tracing compiler here. What ``compile`` does, per device:

* CUDA (a GPU or the simulator), ``mode="reduce-overhead"`` (or ``backend="cudagraphs"``): calls are grouped
  by signature (each tensor argument's shape, dtype, device and ``requires_grad``; the other arguments' values;
  grad mode; a module's training mode). The first call of a signature runs eagerly (warm-up); the second
  captures the call in CUDA graphs and every later call replays them: the tensor arguments are copied into the
  graph's static inputs, the forward graph is replayed, and when gradients are needed the backward replays a
  backward graph (``make_graphed_callables``), which accumulates the module parameters' gradients as eager
  autograd does. Outputs are the graph's own buffers, overwritten by the next call of that signature (as with
  PyTorch's CUDA graphs): ``clone()`` what you keep. Dropout and ``rand``/``randn``/``randint`` are captured:
  each replay draws fresh numbers from the generator. A signature whose capture fails (the call reads a device
  value, draws from a distribution our kernels do not compute, or returns something other than tensors) runs
  eagerly from then on, with one warning; so do calls with a CPU tensor, a non-tensor argument that is not hashable, or a
  backward through the output with ``create_graph=True`` (not supported: it raises).
* Everything else (the CPU, the other modes): the callable runs eagerly, unchanged.

A module comes back as an ``OptimizedModule`` wrapping it (``_orig_mod``), which is a module itself: its
parameters, ``train()``/``eval()`` and attributes are the wrapped module's, and its ``state_dict`` keys carry
PyTorch's ``_orig_mod.`` prefix.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from .autograd import is_grad_enabled
from .cuda.graphs import graphed_functions
from .nn import Module
from .tensor import Tensor

__all__ = ["compile", "OptimizedModule"]

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_WARMUP_CALLS = 1
_EAGER = object()  # a signature that runs eagerly for good


class _CudaGraphed:
    """The per-signature graphs of one callable (``params``: the tensors its backward differentiates besides
    the arguments)."""

    def __init__(self, fn: Callable[..., Any], params: Callable[[], tuple[Tensor, ...]],
                 training: Callable[[], bool]) -> None:
        self.fn = fn
        self.params = params
        self.training = training
        self.seen: dict[Any, Any] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = self._signature(args, kwargs)
        if key is None:
            return self.fn(*args, **kwargs)
        entry = self.seen.get(key, 0)
        if entry is _EAGER:
            return self.fn(*args, **kwargs)
        if isinstance(entry, int):
            if entry < _WARMUP_CALLS:
                self.seen[key] = entry + 1
                return self.fn(*args, **kwargs)
            entry = self.seen[key] = self._capture(args, kwargs, key)
            if entry is _EAGER:
                return self.fn(*args, **kwargs)
        return entry(*[a for a in _leaves(args, kwargs) if isinstance(a, Tensor)])

    def _signature(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        parts: list[Any] = [is_grad_enabled(), self.training(), tuple(kwargs)]
        cuda_seen = False
        for a in _leaves(args, kwargs):
            if isinstance(a, Tensor):
                if a.device.type != "cuda":
                    return None
                cuda_seen = True
                parts.append((tuple(a.shape), a.dtype, a.device, a.requires_grad))
            else:
                try:
                    hash(a)
                except TypeError:
                    return None
                parts.append(("const", type(a), a))
        if not cuda_seen and not any(p.device.type == "cuda" for p in self.params()):
            return None
        return tuple(parts)

    def _capture(self, args: tuple[Any, ...], kwargs: dict[str, Any], key: Any) -> Any:
        leaves = _leaves(args, kwargs)
        tensors = tuple(a for a in leaves if isinstance(a, Tensor))
        fn = self.fn

        def call(*ts: Tensor) -> Any:
            it = iter(ts)
            filled = [next(it) if isinstance(a, Tensor) else a for a in leaves]
            n = len(args)
            return fn(*filled[:n], **dict(zip(kwargs, filled[n:])))
        params = tuple(p for p in self.params() if p.requires_grad) if is_grad_enabled() else ()
        try:
            return graphed_functions((call,), [tensors], [params], num_warmup_iters=1)[0]
        except (RuntimeError, TypeError, AssertionError) as e:
            warnings.warn(f"mt.compile(mode='reduce-overhead'): this call cannot be captured in a CUDA graph "
                          f"({e}); it runs eagerly", UserWarning, stacklevel=4)
            return _EAGER


def _leaves(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    return list(args) + list(kwargs.values())


class OptimizedModule(Module):
    """A compiled module: calls go through the compiled forward; everything else is the wrapped module's."""

    def __init__(self, mod: Module, compiled_call: Callable[..., Any]) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call", compiled_call)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def compile(model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable[..., Any] = "inductor", mode: str | None = None,
            options: dict[str, Any] | None = None, disable: bool = False) -> Any:
    """PyTorch's ``torch.compile``: ``model`` (a function or module) with the same semantics; without ``model``,
    a decorator. On CUDA, ``mode="reduce-overhead"`` replays each call signature as CUDA graphs after one
    eager warm-up call; otherwise (the CPU, other modes) the callable runs eagerly. See the module docstring.

    >>> fast = mt.compile(model, mode="reduce-overhead")     # doctest: +SKIP
    >>> loss = loss_fn(fast(x), y); loss.backward()          # doctest: +SKIP
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(str(m) for m in _MODES[1:])}")
    if not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"compile(): backend must be a string or a callable, not {type(backend).__name__}")

    def wrap(m: Any) -> Any:
        if disable:
            return m
        if not callable(m):
            raise RuntimeError("torch.compile() expected a callable (a function or an nn.Module), "
                               f"got {type(m).__name__}")
        graphs = mode == "reduce-overhead" or backend == "cudagraphs"
        if isinstance(m, Module):
            call: Callable[..., Any] = m.__call__
            if graphs:
                call = _CudaGraphed(m.__call__, lambda: tuple(m.parameters()), lambda: m.training)
            return OptimizedModule(m, call)
        if not graphs:
            return m
        compiled = _CudaGraphed(m, tuple, lambda: False)
        return functools.wraps(m)(lambda *args, **kwargs: compiled(*args, **kwargs))

    return wrap if model is None else wrap(model)
