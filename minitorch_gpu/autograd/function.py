"""Nodes of the backward graph, the built-in op base class, and user-defined ``Function``.

A Node is PyTorch's ``grad_fn``: it knows the edges to the nodes that produced its inputs
(``next_functions``), the tensors it saved, and how to turn output gradients into input gradients.
Built-in ops subclass :class:`Op`: ``forward`` computes arrays through the backend and ``backward`` is
written with Tensor ops, so running it with grad mode on (``create_graph=True``) records a graph of
its own and higher-order gradients come for free.
"""
import itertools
import threading

from . import anomaly
from .grad_mode import _state

__all__ = ["Node", "Op", "Function", "FunctionCtx", "once_differentiable", "InplaceFunction"]

_seq = itertools.count()
# AccumulateGrad nodes run as soon as they are ready, before any other node (DDP relies on this)
ACCUMULATE_SEQ = 1 << 62

_accumulate_lock = threading.Lock()


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
    if anomaly._mode["enabled"]:
        vc.write_trace = anomaly._stack()


class _OutputRef:
    """A saved output of the node itself, held without the Tensor object to avoid a reference cycle."""
    __slots__ = ("output_nr", "data", "be", "vc")

    def __init__(self, t, output_nr):
        self.output_nr = output_nr
        self.data = t._data
        self.be = t._be
        if t._vc is None:
            t._vc = VersionCounter()
        self.vc = t._vc


def _tensor_desc(t):
    shape = list(t.shape) if not isinstance(t, _OutputRef) else list(t.data.shape)
    name = t.dtype._tensor_name if not isinstance(t, _OutputRef) else "Tensor"
    return f"[minitorch_gpu.{name} [{', '.join(map(str, shape))}]]"


class Node:
    """A backward function. ``next_functions`` holds ``(node, output_nr)`` per input, ``(None, 0)`` for
    inputs that need no gradient."""

    next_functions = ()
    _seq_nr = 0
    _saved = None
    _saved_versions = None
    _released = False
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

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def _sequence_nr(self):
        return self._seq_nr

    # ------------------------------------------------------------------ saved tensors
    def save_for_backward(self, *tensors):
        """Keep tensors for backward; their versions are checked when they are read back."""
        self._saved = tensors
        self._saved_versions = tuple(
            None if t is None else (0 if t._vc is None else t._vc.value) for t in tensors)

    def _check_saved_inference(self):
        for t in self._saved or ():
            if t is not None and not isinstance(t, _OutputRef) and t._inference:
                raise RuntimeError(
                    "Inference tensors cannot be saved for backward. To work around you can make a clone "
                    "to get a normal tensor and use it in autograd.")

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward.")
        saved = self._saved
        if saved is None:
            return ()
        out = []
        for t, v in zip(saved, self._saved_versions):
            if t is None:
                out.append(None)
                continue
            if isinstance(t, _OutputRef):
                cur = t.vc.value
                if cur != v:
                    self._raise_version_error(t, cur, v)
                out.append(self._unpack_output(t))
                continue
            cur = 0 if t._vc is None else t._vc.value
            if cur != v:
                self._raise_version_error(t, cur, v)
            out.append(t)
        return tuple(out)

    def _unpack_output(self, ref):
        from ..tensor import Tensor
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
            fn = t._grad_fn
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
        if self._saved is not None:
            self._saved = None
            self._released = True
        self._free_buffers()

    def _free_buffers(self):
        """Subclasses drop any other forward state that only backward needed."""

    # ------------------------------------------------------------------ hooks
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        from ..utils.hooks import RemovableHandle
        if self._post_hooks is None:
            self._post_hooks = {}
        h = RemovableHandle(self._post_hooks)
        self._post_hooks[h.id] = fn
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        from ..utils.hooks import RemovableHandle
        if self._pre_hooks is None:
            self._pre_hooks = {}
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks[h.id] = fn
        return h

    # ------------------------------------------------------------------ graph building
    def _connect(self, inputs):
        edges = []
        for t in inputs:
            if t is None or not t._requires_grad:
                edges.append((None, 0))
            else:
                edges.append(t._edge())
        self.next_functions = tuple(edges)
        self._seq_nr = next(_seq)
        if anomaly._mode["enabled"]:
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
    is needed; ``self.needs_input_grad`` says which). ``forward`` may call ``save_for_backward`` with
    input tensors and set ``self.save_output = True`` to keep its own result.
    """

    save_output = False

    @property
    def needs_input_grad(self):
        return tuple(n is not None for n, _ in self.next_functions)

    @classmethod
    def apply(cls, *inputs, **params):
        from ..tensor import Tensor
        node = cls.__new__(cls)
        out = node.forward(*inputs, **params)
        be = inputs[0]._be
        result = Tensor._make(out, be)
        if _state.grad and out.dtype.kind in "fV":
            for t in inputs:
                if t is not None and t._requires_grad:
                    node._connect(inputs)
                    if node._saved is not None:
                        node._check_saved_inference()
                    if node.save_output:
                        node._saved = (node._saved or ()) + (_OutputRef(result, 0),)
                        node._saved_versions = (node._saved_versions or ()) + (0,)
                    result._grad_fn = node
                    result._requires_grad = True
                    break
        return result

    @property
    def saved_output(self):
        """The op's own result, rebuilt from the saved array (as the last saved tensor)."""
        return self.saved_tensors[-1]


def _is_tensor(x):
    return isinstance(x, _TensorCls[0])


# ---------------------------------------------------------------------- user-defined Function

class FunctionCtx:
    """Methods available on ``ctx`` inside a Function's forward/backward."""

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of a user-defined Function."""

    _to_save = None
    _dirty = ()
    _non_differentiable = ()
    materialize_grads = True
    needs_input_grad = ()
    _fn_cls = None

    def name(self):
        return self._fn_cls.__name__ + "Backward"

    def _run(self, grads):
        from ..tensor import Tensor
        if self.materialize_grads:
            grads = [g if g is not None else _zeros_like_meta(meta) for g, meta in zip(grads, self._out_meta)]
        result = self._fn_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_args = len(self._arg_is_tensor)
        if len(result) < n_args:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n_args}, got {len(result)})")
        if len(result) > n_args and any(r is not None for r in result[n_args:]):
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
                shape = self._in_shapes[len(out)]
                if tuple(g.shape) != shape:
                    from ..ops._util import sum_to, is_expandable_to
                    if not is_expandable_to(shape, tuple(g.shape)):
                        raise RuntimeError(
                            f"Function {self.name()} returned an invalid gradient at index {i} - got "
                            f"{list(g.shape)} but expected shape compatible with {list(shape)}")
                    g = sum_to(g, shape)
            out.append(g)
        return tuple(out)

    def _free_buffers(self):
        self.saved_variables = None


def _zeros_like_meta(meta):
    from ..tensor import Tensor
    shape, np_dtype, be = meta
    return Tensor._make(be.zeros(shape, np_dtype), be)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        # PyTorch exposes the backward node class as Function._backward_cls
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_fn_cls": cls})


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
    """

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method.")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        from ..tensor import Tensor
        from .grad_mode import no_grad
        ctx = cls._backward_cls.__new__(cls._backward_cls)
        arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        recording = _state.grad and any(ctx.needs_input_grad)
        uses_setup = "setup_context" in cls.__dict__ or any(
            "setup_context" in b.__dict__ for b in cls.__mro__[1:-1] if b is not Function)
        with no_grad():
            if uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(outputs, tuple)
        outs = outputs if is_tuple else (outputs,)
        dirty = ctx._dirty
        non_diff = ctx._non_differentiable
        for t in dirty:
            if recording and t.is_leaf and t.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            bump_version(t)
        final = []
        for o in outs:
            if not isinstance(o, Tensor):
                final.append(o)
                continue
            if any(o is a for a in tensor_args) and not any(o is d for d in dirty):
                # an input returned as-is becomes a new tensor sharing its data, so that giving it this
                # node as grad_fn does not rewrite the input's history
                o = o.view_as(o) if recording else o
            final.append(o)
        if recording:
            ctx._arg_is_tensor = arg_is_tensor
            ctx._in_shapes = [tuple(a.shape) for a in tensor_args]
            ctx._connect(tensor_args)
            meta = []
            for i, o in enumerate(final):
                if not isinstance(o, Tensor):
                    meta.append(None)
                    continue
                meta.append((tuple(o.shape), o._data.dtype, o._be))
                if any(o is n for n in non_diff) or not o.dtype.is_floating_point:
                    o._requires_grad = False
                    continue
                o._grad_fn = ctx
                o._output_nr = i
                o._requires_grad = True
            ctx._out_meta = meta
            ctx._n_outputs = len(final)
        to_save = ctx._to_save
        if to_save is not None:
            saved = []
            for t in to_save:
                if t is not None and any(t is o for o in final):
                    saved.append(_OutputRef(t, next(i for i, o in enumerate(final) if o is t)) if recording else t)
                else:
                    saved.append(t)
            ctx._saved = tuple(saved)
            ctx._saved_versions = tuple(
                None if t is None else (t.vc.value if isinstance(t, _OutputRef) else
                                        (0 if t._vc is None else t._vc.value)) for t in saved)
            if recording:
                ctx._check_saved_inference()
        return tuple(final) if is_tuple else final[0]


class InplaceFunction(Function):
    pass


def once_differentiable(fn):
    """Decorate a backward that cannot itself be differentiated: it runs under no_grad, and a
    create_graph backward through it raises when its result is differentiated again."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from .grad_mode import no_grad
        with no_grad():
            outputs = fn(ctx, *args)
        if not _state.grad:
            return outputs
        requires = any(isinstance(a, _TensorCls[0]) and a.requires_grad for a in args)
        if not requires:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        res = []
        for o in outs:
            if isinstance(o, _TensorCls[0]) and o.dtype.is_floating_point:
                o = _DelayedError.apply(o, ctx.name())
            res.append(o)
        return res[0] if single else tuple(res)
    return wrapper


class _DelayedError(Function):
    @staticmethod
    def forward(ctx, x, name):
        ctx.node_name = name
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(f"trying to differentiate twice a function that was marked with "
                           f"@once_differentiable ({ctx.node_name})")
