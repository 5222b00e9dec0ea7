"""User-defined differentiable functions: ``autograd.Function`` with ``forward(ctx, ...)`` and
``backward(ctx, ...)`` side by side, as in PyTorch, and the node that runs a Function's backward.

The graph machinery they build on (Node, edges, version counters, the built-in ``Op`` base) is in
``node.py``; in-place writes through views in ``_inplace.py``.
"""
import functools
from typing import Any

from .. import _op_range
from .._dtype import from_numpy_dtype
from .._mode import _state
from .._shapes import is_expandable_to
from ..tensor import Tensor, VersionCounter
from . import anomaly
from ._inplace import _check_view_meta, rebase_view
from .node import (ACCUMULATE_SEQ, ACCUMULATE_SEQ_REPORTED, NO_EDGE, Node, Op, _accumulate_lock, _anomaly_mode,
                   _is_tensor, _make, _new, _next_seq, _OutputRef, _saved_versions, bump_version, collect_edges,
                   edge_of, sum_to)

__all__ = ["Function", "FunctionCtx", "once_differentiable", "InplaceFunction",
           # the graph machinery, importable from here as before
           "Node", "Op", "bump_version", "edge_of", "collect_edges", "VersionCounter", "ACCUMULATE_SEQ",
           "ACCUMULATE_SEQ_REPORTED", "NO_EDGE", "_accumulate_lock", "_next_seq", "_make"]

# ---------------------------------------------------------------------- user-defined Function

class FunctionCtx:
    """Methods available on ``ctx`` inside a Function's forward/backward."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not _is_tensor(t):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self._to_save_forward = tensors

    def mark_dirty(self, *args):
        self._dirty = args

    def mark_non_differentiable(self, *args):
        self._non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(FunctionCtx, Node):
    """The node (and ctx) of a user-defined Function."""

    _to_save = None
    _dirty = ()
    _non_differentiable = ()
    materialize_grads = True
    needs_input_grad = ()
    _fn_cls = None
    _out_meta = ()
    _arg_is_tensor = ()
    _in_meta = ()

    def name(self):
        return self._fn_cls.__name__ + "Backward"

    def _run(self, grads):
        if self.materialize_grads:
            grads = [_zeros_like_meta(meta) if g is None and meta is not None else g
                     for g, meta in zip(grads, self._out_meta)]
        result = self._fn_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_args = len(self._arg_is_tensor)
        if len(result) < n_args or (len(result) > n_args and any(r is not None for r in result[n_args:])):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n_args}, got {len(result)})")
        out = []
        for i, (is_t, g) in enumerate(zip(self._arg_is_tensor, result)):
            if not is_t:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None at "
                                       f"position {i + 1}, but the corresponding forward input was not a "
                                       "Variable")
                continue
            if g is not None:
                if not isinstance(g, Tensor):
                    raise TypeError(f"function {self.name()} returned a {type(g).__name__} as gradient "
                                    f"{i}; expected a Tensor or None")
                shape, np_dtype = self._in_meta[len(out)]
                if g._data.shape != shape:
                    if not is_expandable_to(shape, g._data.shape):
                        raise RuntimeError(
                            f"Function {self.name()} returned an invalid gradient at index {i} - got "
                            f"{list(g.shape)} but expected shape compatible with {list(shape)}")
                    g = sum_to(g, shape)
                if g._data.dtype != np_dtype:
                    g = g.to(from_numpy_dtype(np_dtype))
            out.append(g)
        return tuple(out)


def _zeros_like_meta(meta):
    shape, np_dtype, be = meta
    return _make(be.zeros(shape, np_dtype), be)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        # PyTorch exposes the backward node class as Function._backward_cls
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_fn_cls": cls})
        base_setup = globals().get("Function")
        cls._uses_setup = base_setup is not None and cls.setup_context is not base_setup.setup_context


_CUSTOM_VIEW = "custom_function"


class Function(metaclass=_FunctionMeta):
    """Define a differentiable op with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``.

    Example::

        class Exp(mt.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                y, = ctx.saved_tensors
                return g * y

        Exp.apply(mt.randn(3, requires_grad=True))

    ``forward`` may instead take only the inputs when the class defines
    ``setup_context(ctx, inputs, output)``, which then fills ``ctx``.
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method.")

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = _new(cls._backward_cls)
        grad_on = _state.grad
        arg_is_tensor = tuple([isinstance(a, Tensor) for a in args])
        tensor_args = tuple([a for a, is_t in zip(args, arg_is_tensor) if is_t])
        needs = tuple([grad_on and is_t and a.requires_grad for a, is_t in zip(args, arg_is_tensor)])
        ctx.needs_input_grad = needs
        recording = any(needs)
        _state.grad = False
        ranged = _op_range.enabled
        if ranged:
            _op_range.push(_op_range.FUNCTION, cls.__name__, tensor_args)
        try:
            if cls._uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.grad = grad_on
            if ranged:
                _op_range.pop()
        is_tuple = isinstance(outputs, tuple)
        outs = outputs if is_tuple else (outputs,)
        dirty = ctx._dirty
        for t in dirty:
            if not any(t is o for o in outs):
                raise RuntimeError("Some elements marked as dirty during the forward method were not returned as "
                                   "output. The inputs that are modified inplace must all be outputs of the "
                                   "Function.")
        if recording:
            for t in dirty:
                if t._base is not None:
                    _check_view_meta(t)
                if t.requires_grad and t.grad_fn is None:
                    if t._base is not None:
                        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation.")
                    raise RuntimeError("a leaf Variable that requires grad has been used in an in-place "
                                       "operation.")
            # edges are taken before any output rewrites the history of a modified input
            ctx.next_functions = tuple([edge_of(t) for t in tensor_args])
            ctx._seq_nr = _next_seq()
            if _anomaly_mode["enabled"]:
                ctx._trace = anomaly._stack()
        for t in dirty:
            bump_version(t)
        non_diff = ctx._non_differentiable
        final = []
        meta = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                final.append(o)
                meta.append(None)
                continue
            meta.append((o._data.shape, o._data.dtype, o._be))
            if not recording:
                final.append(o)
                continue
            is_dirty = any(o is d for d in dirty)
            is_input = any(o is a for a in tensor_args)
            differentiable = o._data.dtype.kind in "fV" and not any(o is n for n in non_diff)
            if is_input and not is_dirty:
                # an input returned as-is becomes a new tensor sharing its data (and version counter), so
                # that giving it this node as history leaves the input's own history alone
                o = _alias(o)
            if not differentiable:
                if not is_input:
                    o._requires_grad = False
                final.append(o)
                continue
            if is_dirty and o._base is not None:
                src = _make(o._data, o._be)
                src._grad_fn = ctx
                src._output_nr = i
                src._requires_grad = True
                rebase_view(o, src)
            else:
                o._grad_fn = ctx
                o._output_nr = i
                o._requires_grad = True
                if o._base is not None and not is_dirty:
                    # a view made inside forward: its history is this node, not a replay of the view
                    o.__dict__["_view_meta"] = _CUSTOM_VIEW
            final.append(o)
        if recording:
            ctx._arg_is_tensor = arg_is_tensor
            ctx._in_meta = tuple([(a._data.shape, a._data.dtype) for a in tensor_args])
            ctx._out_meta = tuple(meta)
            ctx._n_outputs = len(final)
        to_save = ctx._to_save
        if to_save is not None:
            saved = []
            for t in to_save:
                idx = None
                if recording and t is not None:
                    for j, o in enumerate(outs):
                        if o is t and isinstance(final[j], Tensor) and final[j]._grad_fn is ctx:
                            idx = j
                            break
                saved.append(_OutputRef(t, idx) if idx is not None else t)
            ctx._saved = tuple(saved)
            if recording:
                ctx._saved_versions = _saved_versions(saved)
            else:
                ctx._saved_versions = tuple([None if t is None else t._version for t in saved])
        # these may hold the outputs, whose grad_fn is ctx: dropping them keeps the graph free of
        # reference cycles, so it is freed as soon as the last output goes
        ctx._to_save = None
        ctx._dirty = ()
        ctx._non_differentiable = ()
        return tuple(final) if is_tuple else final[0]


def _alias(t):
    """A tensor sharing ``t``'s data and version counter, with no history."""
    a = _make(t._data, t._be)
    if t._vc is None:
        t._vc = VersionCounter()
    a._vc = t._vc
    a._inference = t._inference
    return a


class InplaceFunction(Function):
    """Kept for code written against old PyTorch; behaves as Function."""


class DelayedError(Node):
    """History given to the results of a ``once_differentiable`` backward run under create_graph: they
    may take part in a graph, but differentiating through them raises."""

    def __init__(self, msg, n_outputs, edges):
        self.msg = msg
        self._n_outputs = n_outputs
        self.next_functions = edges
        self._seq_nr = _next_seq()

    def _run(self, grads):
        raise RuntimeError(self.msg)


def once_differentiable(fn):
    """Decorate a backward that cannot itself be differentiated: it runs under no_grad, and a
    create_graph backward through it raises when its result is differentiated again."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        prev = _state.grad
        _state.grad = False
        try:
            outputs = fn(ctx, *args)
        finally:
            _state.grad = prev
        if not prev:
            return outputs
        edges = collect_edges([a for a in args if _is_tensor(a)])
        if edges is None:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        err = DelayedError("trying to differentiate twice a function that was marked with @once_differentiable",
                           len(outs), tuple([e for e in edges if e[0] is not None]))
        res = []
        for i, o in enumerate(outs):
            if _is_tensor(o) and o._data.dtype.kind in "fV":
                o = _alias(o)
                o._grad_fn = err
                o._output_nr = i
                o._requires_grad = True
            res.append(o)
        return res[0] if single else tuple(res)
    return wrapper
