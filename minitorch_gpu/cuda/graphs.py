"""CUDA graphs, PyTorch's API: ``CUDAGraph``, the ``graph`` context manager, ``graph_pool_handle`` and
``make_graphed_callables``.

A graph captures a stretch of device work once and replays it on the same memory: one launch instead of one
host call per op. Whole-network capture, as PyTorch documents it::

    s = mt.cuda.Stream()
    s.wait_stream(mt.cuda.current_stream())
    with mt.cuda.stream(s):                       # warm up (optimizer state, kernel caches) on a side stream
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(static_x), static_t).backward()
            opt.step()
    mt.cuda.current_stream().wait_stream(s)
    g = mt.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with mt.cuda.graph(g):
        static_loss = loss_fn(model(static_x), static_t)
        static_loss.backward()
        opt.step()
    for x, t in batches:
        static_x.copy_(x); static_t.copy_(t)
        g.replay()                                # static_loss, the gradients and the weights are updated
        print(static_loss.item())

What runs during capture is not run (the weights above are unchanged until the first replay), Python code runs
only once (host values such as a learning rate are fixed at capture: use ``capturable=True`` optimizers and
tensor hyperparameters), and nothing inside may wait for the device (``item()``, printing, ``synchronize``, a
data-dependent shape): that raises RuntimeError and abandons the capture, as CUDA does. Random numbers are
captured as in PyTorch: the device's default generator (and any passed to ``register_generator_state``) hands the
captured kernels a device copy of its seed and offset, refreshed before every replay, and moves past the blocks
the graph draws, so each replay draws fresh numbers and N replays leave the generator where N eager steps would
(``rand``, ``randn``, ``randint``, dropout and attention dropout; other distributions raise inside a capture). On
the simulator the capture is emulated by recording every backend primitive and calling them again on replay.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import backends as _backends
from .. import _device
from ..autograd.function import Function, once_differentiable
from ..autograd import grad as _autograd_grad
from ..backends.cuda import device as _probe
from ..backends.cuda.graphs import (CAPTURE_ERROR, Capture, CapturedGraph, GraphPool, capturing, check_no_capture,
                                    new_pool)
from ..ops.creation import empty_like
from ..ops import random as _random
from ..tensor import Tensor
from .memory import empty_cache
from .streams import Stream, current_stream, stream as _stream_ctx

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing"]


def _backend() -> Any:
    idx = _probe.current_device()
    _probe.check_device(idx)
    return _backends.get_backend(_device.device("cuda", idx))


def graph_pool_handle() -> GraphPool:
    """A new memory pool that graphs can share (``capture_begin(pool=...)``, ``graph(g, pool=...)``): graphs
    that share one must be replayed in the order they were captured."""
    return new_pool(_backend())


def is_current_stream_capturing() -> bool:
    """Whether a CUDA graph capture is under way (one at a time per process, as in PyTorch)."""
    return capturing()


class CUDAGraph:
    """A CUDA graph: ``capture_begin()`` ... ``capture_end()`` records the device work in between (or use
    ``with mt.cuda.graph(g):``), ``replay()`` runs it again.

    >>> g = mt.cuda.CUDAGraph()                       # doctest: +SKIP
    >>> with mt.cuda.graph(g):                        # doctest: +SKIP
    ...     y = x * 2
    >>> x.fill_(3.0); g.replay(); y                   # doctest: +SKIP
    """

    def __init__(self, keep_graph: bool = False) -> None:
        self._backend = _backend()
        self.keep_graph = keep_graph
        self._capture: Capture | None = None
        self._graph: CapturedGraph | None = None
        self._pool: GraphPool | None = None
        # generators whose draws the graph captures: the ones registered, and the device's default at capture
        self._generators: list[Any] = []
        # per captured generator: (generator, its device state array, blocks one replay draws)
        self._rng: list[tuple[Any, Any, int]] = []

    def register_generator_state(self, generator: Any) -> None:
        """Let the graph capture draws from ``generator`` (a CUDA ``Generator``) as well as from the device's
        default one: each replay then draws fresh numbers from it and moves it on."""
        if not isinstance(generator, _random.Generator) or generator.device.type != "cuda":
            raise RuntimeError("register_generator_state(): expected a CUDA Generator, got "
                               f"{generator!r}")
        if generator in self._generators or generator in (g for g, _, _ in self._rng):
            return
        self._generators.append(generator)
        if self._capture is not None:
            self._rng.append((generator, self._begin_generator(generator), 0))

    def _begin_generator(self, generator: Any) -> Any:
        state = self._backend.graph_rng_state()
        generator._graph_begin(state)
        return state

    def _end_generators(self, keep: bool) -> None:
        """Take the generators out of capture mode, keeping (``keep``) the blocks each replay draws."""
        ended = [(g, state, g._graph_end()) for g, state, _ in self._rng]
        self._rng = ended if keep else []

    def capture_begin(self, pool: GraphPool | None = None, capture_error_mode: str = "global") -> None:
        """Begin capturing the current stream's work. ``pool``: share another graph's memory pool
        (``other.pool()`` or ``graph_pool_handle()``); ``capture_error_mode``: "global", "thread_local" or
        "relaxed" (CUDA's ``cudaStreamCaptureMode``)."""
        if self._graph is not None or self._capture is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To capture a new graph, "
                               "create a new instance.")
        if pool is not None and not isinstance(pool, GraphPool):
            raise TypeError(f"capture_begin(): pool must be a handle from graph_pool_handle() or CUDAGraph.pool(), "
                            f"not {type(pool).__name__}")
        if not isinstance(capture_error_mode, str):
            raise TypeError(f"capture_begin(): capture_error_mode must be str, not "
                            f"{type(capture_error_mode).__name__}")
        pool = pool if pool is not None else new_pool(self._backend)
        capture = Capture(self._backend, pool, capture_error_mode)
        check_no_capture()
        default = _random.cuda_default_generator(self._backend.index)
        gens = [default] + [g for g in self._generators if g is not default]
        # the state arrays exist before the capture: memory the graph reads, not memory it owns
        self._rng = []
        try:
            for g in gens:
                self._rng.append((g, self._begin_generator(g), 0))
            capture.begin()
        except BaseException:
            self._end_generators(keep=False)
            raise
        self._capture, self._pool = capture, pool

    def capture_end(self) -> None:
        """End the capture begun by ``capture_begin``; RuntimeError if it was abandoned (a synchronising call
        inside it), leaving this graph empty."""
        capture = self._capture
        if capture is None:
            raise RuntimeError("Called CUDAGraph::capture_end without a preceding capture_begin.")
        self._capture = None
        try:
            self._graph = capture.end()
        except BaseException:
            self._pool = None
            self._end_generators(keep=False)
            raise
        self._end_generators(keep=True)

    def _abandon(self, why: str) -> None:
        capture, self._capture, self._pool = self._capture, None, None
        if capture is not None:
            capture.abort(why)
            self._end_generators(keep=False)

    def replay(self) -> None:
        """Run the captured work again (on a GPU: enqueued on the current stream)."""
        if self._graph is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        if capturing():
            raise RuntimeError(CAPTURE_ERROR + ": a graph cannot be replayed while a capture is under way")
        for g, state, nblocks in self._rng:
            if nblocks:
                g._graph_replay(self._backend, state, nblocks)
        self._graph.replay()

    def reset(self) -> None:
        """Drop the captured graph and its hold on its memory pool."""
        self._abandon("reset() during capture")
        self._graph = None
        self._pool = None
        self._rng = []

    def pool(self) -> GraphPool:
        """The handle of this graph's memory pool, for another capture to share."""
        if self._pool is None:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
        return self._pool

    def instantiate(self) -> None:
        """Kept for PyTorch's API: the graph is ready to replay when the capture ends."""
        if self._graph is None:
            raise RuntimeError("Called CUDAGraph::instantiate without a preceding successful capture.")

    def __repr__(self) -> str:
        state = "capturing" if self._capture is not None else ("captured" if self._graph is not None else "empty")
        return f"<minitorch_gpu.cuda.CUDAGraph {state}>"


class graph:
    """``with mt.cuda.graph(g):`` captures the block's device work into ``g`` (a :class:`CUDAGraph`), on
    ``stream`` or an internal side stream; ``pool`` shares another graph's memory. An exception inside the block
    abandons the capture (``g`` stays empty) and propagates."""

    default_capture_stream: Stream | None = None

    def __init__(self, cuda_graph: CUDAGraph, pool: GraphPool | None = None, stream: Stream | None = None,
                 capture_error_mode: str = "global") -> None:
        if stream is None and graph.default_capture_stream is None:
            graph.default_capture_stream = Stream()
        self.pool = pool
        self.capture_stream = stream if stream is not None else graph.default_capture_stream
        self.stream_ctx = _stream_ctx(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self) -> None:
        # finish earlier work (and read its deferred checks) and free cached memory for the graph, as PyTorch does
        _backend().synchronize()
        empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is not None:
                self.cuda_graph._abandon(f"{exc_type.__name__} inside the capture")
            else:
                self.cuda_graph.capture_end()
        finally:
            self.stream_ctx.__exit__(exc_type, exc, tb)


# ---------------------------------------------------------------------- make_graphed_callables
def _flatten(obj: Any) -> tuple[list[Tensor], Any]:
    """The tensors of a nest of tuples, lists and dicts, and the nest's shape (for ``_unflatten``)."""
    if isinstance(obj, Tensor):
        return [obj], None
    if isinstance(obj, (tuple, list, dict)):
        items = list(obj.items()) if isinstance(obj, dict) else list(enumerate(obj))
        leaves: list[Tensor] = []
        specs: list[tuple[Any, int, Any]] = []
        for key, item in items:
            sub, spec = _flatten(item)
            leaves.extend(sub)
            specs.append((key, len(sub), spec))
        return leaves, (type(obj), specs)
    raise TypeError(f"make_graphed_callables: outputs must be Tensors or tuples, lists and dicts of them, "
                    f"not {type(obj).__name__}")


def _unflatten(leaves: Any, spec: Any) -> Any:
    if spec is None:
        return leaves[0]
    kind, specs = spec
    parts = []
    at = 0
    for key, n, sub in specs:
        parts.append((key, _unflatten(leaves[at:at + n], sub)))
        at += n
    return dict(parts) if kind is dict else kind(v for _, v in parts)


def _is_module(obj: Any) -> bool:
    # nn sits above this package: a module is recognised by what make_graphed_callables uses of it
    return all(hasattr(obj, a) for a in ("parameters", "buffers", "training", "_forward_hooks",
                                         "_forward_pre_hooks", "_backward_hooks"))


def _graphed_function(fwd: CUDAGraph, bwd: CUDAGraph, params: tuple[Tensor, ...], n_user: int, out_spec: Any,
                      surface: tuple[Tensor, ...], outputs: tuple[Tensor, ...],
                      grad_outputs: tuple[Tensor | None, ...],
                      grad_inputs: tuple[Tensor | None, ...]) -> Callable[..., Any]:
    class Graphed(Function):
        @staticmethod
        def forward(ctx: Any, *inputs: Tensor) -> tuple[Tensor, ...]:
            for i in range(n_user):
                if surface[i].data_ptr() != inputs[i].data_ptr():
                    surface[i].copy_(inputs[i])
            fwd.replay()
            return tuple(o.detach() for o in outputs)

        @staticmethod
        @once_differentiable
        def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor | None, ...]:
            for static, g in zip(grad_outputs, grads):
                if static is not None and g is not None and static.data_ptr() != g.data_ptr():
                    static.copy_(g)
            bwd.replay()
            return tuple(None if g is None else g.detach() for g in grad_inputs)

    def functionalized(*user_args: Any) -> Any:
        flat, _ = _flatten(user_args)
        out = Graphed.apply(*(tuple(flat) + params))
        return _unflatten(out if isinstance(out, tuple) else (out,), out_spec)
    return functionalized


def make_graphed_callables(callables: Any, sample_args: tuple[Any, ...], num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool: GraphPool | None = None) -> Any:
    """Graphed versions of ``callables`` (a function or module, or a tuple of them with a tuple of sample
    argument tuples): each call copies its arguments into static inputs and replays a forward graph; its
    backward replays a backward graph. Modules come back with their ``forward`` replaced (the graphs are used in
    the training mode they were captured in; the other mode runs the module eagerly).

    Arguments must be Tensors, passed in the order and with the shapes of ``sample_args``; the callables run
    ``num_warmup_iters`` times eagerly on a side stream first, then are captured (forward graphs in order,
    backward graphs in reverse order, all in one memory pool)."""
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError(f"make_graphed_callables: {len(callables)} callables but {len(sample_args)} sample_args")
    flat_args = []
    for c, args in zip(callables, sample_args):
        if _is_module(c):
            if c._backward_hooks or c._forward_hooks or c._forward_pre_hooks:
                raise AssertionError("Modules must not have hooks registered at the time they are passed. However, "
                                     "registering hooks on modules after passing them through "
                                     "make_graphed_callables is allowed.")
            if any(b.requires_grad for b in c.buffers()):
                raise AssertionError("In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`, "
                                     "only parameters may be trainable. All buffers must have "
                                     "``requires_grad=False``.")
        flat = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        if not all(isinstance(a, Tensor) for a in flat):
            raise AssertionError("In the beta API, sample_args for each callable must contain only Tensors. Other "
                                 "types are not allowed.")
        flat_args.append(flat)

    module_params = [tuple(c.parameters()) if _is_module(c) else () for c in callables]
    graphed = graphed_functions(callables, flat_args, module_params, num_warmup_iters, allow_unused_input, pool)
    result = []
    for func, fn in zip(callables, graphed):
        if _is_module(func):
            func.forward = _graphed_forward(func, func.training, fn, func.forward)
            result.append(func)
        else:
            result.append(fn)
    return result[0] if just_one else tuple(result)


def graphed_functions(callables: Any, flat_args: list[tuple[Tensor, ...]], module_params: list[tuple[Tensor, ...]],
                      num_warmup_iters: int = 3, allow_unused_input: bool = False,
                      pool: GraphPool | None = None) -> list[Callable[..., Any]]:
    """The work of ``make_graphed_callables``: per callable a function of its tensor arguments that replays its
    forward graph and whose backward replays its backward graph; ``module_params[i]`` are the tensors besides
    the arguments whose gradients callable ``i``'s backward computes (a module's parameters)."""
    n_user = [len(a) for a in flat_args]
    surfaces = [flat_args[i] + module_params[i] for i in range(len(callables))]
    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    mempool = graph_pool_handle() if pool is None else pool

    be = _backend()
    be.synchronize()
    side = Stream()
    side.wait_stream(current_stream())
    with _stream_ctx(side):
        for func, args, surface in zip(callables, flat_args, surfaces):
            for _ in range(num_warmup_iters):
                outs, _ = _flatten(func(*args))
                needing = tuple(o for o in outs if o.requires_grad)
                if needing:
                    _autograd_grad(needing, tuple(i for i in surface if i.requires_grad),
                                   grad_outputs=tuple(empty_like(o) for o in needing), only_inputs=True,
                                   allow_unused=allow_unused_input)
    current_stream().wait_stream(side)
    be.synchronize()

    static_outputs, out_specs = [], []
    for func, args, fwd in zip(callables, flat_args, fwd_graphs):
        with graph(fwd, pool=mempool):
            outs = func(*args)
        flat_out, spec = _flatten(outs)
        static_outputs.append(tuple(flat_out))
        out_specs.append(spec)

    static_grad_outputs: list[tuple[Tensor | None, ...]] = []
    static_grad_inputs: list[tuple[Tensor | None, ...]] = []
    for surface, static_outs, bwd in zip(reversed(surfaces), reversed(static_outputs), reversed(bwd_graphs)):
        grad_outs = tuple(empty_like(o) if o.requires_grad else None for o in static_outs)
        needing = tuple(o for o in static_outs if o.requires_grad)
        grads: tuple[Any, ...] | None = None
        if needing:
            with graph(bwd, pool=mempool):
                grads = _autograd_grad(needing, tuple(i for i in surface if i.requires_grad),
                                       grad_outputs=tuple(g for g in grad_outs if g is not None), only_inputs=True,
                                       allow_unused=allow_unused_input)
        per_input: list[Tensor | None] = []
        at = 0
        for arg in surface:
            if arg.requires_grad and grads is not None:
                per_input.append(grads[at])
                at += 1
            else:
                per_input.append(None)
        static_grad_outputs.append(grad_outs)
        static_grad_inputs.append(tuple(per_input))
    static_grad_outputs.reverse()
    static_grad_inputs.reverse()

    return [_graphed_function(fwd_graphs[i], bwd_graphs[i], module_params[i], n_user[i], out_specs[i], surfaces[i],
                              static_outputs[i], static_grad_outputs[i], static_grad_inputs[i])
            for i in range(len(callables))]


def _graphed_forward(module: Any, training: bool, graphed: Callable[..., Any],
                     eager: Callable[..., Any]) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        return graphed(*args, **kwargs) if module.training == training else eager(*args, **kwargs)
    return forward
