"""Nodes of the backward graph, the built-in op base class, and user-defined ``Function``.

A Node is PyTorch's ``grad_fn``: it knows the edges to the nodes that produced its inputs
(``next_functions``), the tensors it saved, and how to turn output gradients into input gradients.
Built-in ops subclass :class:`Op`: ``forward`` computes arrays through the backend and ``backward`` is
written with Tensor ops, so running it with grad mode on (``create_graph=True``) records a graph of
its own and higher-order gradients come for free.

Recording is on the hot path of every op, so ``Op.apply`` does the least it can: nodes have no
``__init__`` (class attributes are the defaults), edges are plain tuples, and all hook bookkeeping hides
behind one ``_hooked`` flag that the engine tests once per node.
"""
import functools
import itertools
import threading

from ..cuda import nvtx as _nvtx
from . import anomaly
from .grad_mode import _state

__all__ = ["Node", "Op", "Function", "FunctionCtx", "once_differentiable", "InplaceFunction"]

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


class VersionCounter:
    """Shared by a tensor and all its views; every in-place write bumps it."""
    __slots__ = ("value", "write_trace")

    def __init__(self):
        self.value = 0
        self.write_trace = None


def bump_version(t):
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
    from .._dtype import _BY_NP
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


def edge_of(t):
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


def collect_edges(tensors):
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

    next_functions = ()
    _seq_nr = 0
    _saved = None
    _saved_versions = None
    _released = False
    _hooked = False
    _pre_hooks = None
    _post_hooks = None
    _tensor_hooks = None
    _retain_hooks = None
    _trace = None
    _n_outputs = 1
    _metadata = None

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    def __lt__(self, other):
        # only reached by the engine's heap when two nodes share a sequence number
        return id(self) < id(other)

    def __call__(self, *grads):
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
    def save_for_backward(self, *tensors):
        """Keep tensors for backward; their versions are taken when the node is recorded and checked
        when they are read back."""
        self._saved = tensors

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is None:
            if self._released:
                raise RuntimeError(_FREED_MSG)
            return ()
        out = []
        for t, v in zip(saved, self._saved_versions):
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
        t = _TensorCls[0]._make(ref.data, ref.be)
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
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        from ..utils.hooks import RemovableHandle
        if self._post_hooks is None:
            self._post_hooks = {}
        h = RemovableHandle(self._post_hooks)
        self._post_hooks[h.id] = fn
        self._hooked = True
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        from ..utils.hooks import RemovableHandle
        if self._pre_hooks is None:
            self._pre_hooks = {}
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        self._hooked = True
        return h

    def _add_tensor_hook(self, output_nr, hook):
        from ..utils.hooks import RemovableHandle
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        d = self._tensor_hooks.setdefault(output_nr, {})
        h = RemovableHandle(d)
        d[h.id] = hook
        self._hooked = True
        return h

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

    def _run(self, grads):
        """Input gradients from output gradients (a list with one entry per output)."""
        return self.backward(*grads)

    def backward(self, *grads):
        raise RuntimeError(f"{self.name()} has no backward")


# set by tensor.py once Tensor exists (function.py is imported before it)
_TensorCls = [None]


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

    save_output = False

    @property
    def needs_input_grad(self):
        return tuple([e[0] is not None for e in self.next_functions])

    @classmethod
    def apply(cls, *inputs, **params):
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
        if _nvtx.enabled:
            with _nvtx.range(cls.__name__):
                out = node.forward(*inputs, **params)
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


def _make(data, be):
    # replaced by tensor.py's fast constructor once Tensor exists
    return _TensorCls[0]._make(data, be)


def _is_tensor(x):
    return isinstance(x, _TensorCls[0])


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
        Tensor = _TensorCls[0]
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
                    from ..ops._util import is_expandable_to, sum_to
                    if not is_expandable_to(shape, g._data.shape):
                        raise RuntimeError(
                            f"Function {self.name()} returned an invalid gradient at index {i} - got "
                            f"{list(g.shape)} but expected shape compatible with {list(shape)}")
                    g = sum_to(g, shape)
                if g._data.dtype != np_dtype:
                    from .._dtype import from_numpy_dtype
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
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        Tensor = _TensorCls[0]
        ctx = _new(cls._backward_cls)
        grad_on = _state.grad
        arg_is_tensor = tuple([isinstance(a, Tensor) for a in args])
        tensor_args = tuple([a for a, is_t in zip(args, arg_is_tensor) if is_t])
        needs = tuple([grad_on and is_t and a.requires_grad for a, is_t in zip(args, arg_is_tensor)])
        ctx.needs_input_grad = needs
        recording = any(needs)
        _state.grad = False
        try:
            if cls._uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.grad = grad_on
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
                    from ..ops._inplace import _check_view_meta
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
                from ..ops._inplace import rebase_view
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
