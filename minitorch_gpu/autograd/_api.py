"""The public backward pass: ``autograd.backward``, ``autograd.grad`` and ``Tensor.backward``, which check
their arguments and hand the graph to the engine."""
import warnings
import weakref

from ..tensor import Tensor, register_methods
from . import engine
from .node import edge_of

__all__ = ["backward", "grad"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grad_outputs, is_grads_batched=False):
    """The gradient of each output: ones for an implicit scalar output, else the given one, checked."""
    res = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise TypeError(f"backward expects Tensors as outputs, got {type(out).__name__} at index {i}")
        if g is None:
            if out.requires_grad and out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            g = Tensor._make(out._be.ones(out._data.shape, out._data.dtype), out._be)
        else:
            if not isinstance(g, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
            if g._data.shape != out._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                                   f"has a shape of {out.shape}.")
            if g._be is not out._be:
                raise RuntimeError(f"Mismatch in device: grad_output[{i}] is on {g.device} and output[{i}] is on "
                                   f"{out.device}.")
            if g._data.dtype != out._data.dtype:
                # as PyTorch: the gradient is cast to the output's dtype
                g = g.to(out.dtype)
        res.append(g)
    return res


def _check_grads_len(outputs, grads):
    for g in grads:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate into leaves' ``.grad`` the gradients of ``tensors`` (weighted by ``grad_tensors``)."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("'grad_tensors' and 'grad_variables' (deprecated) arguments both passed to "
                               "backward(). Please only use 'grad_tensors'.")
        warnings.warn("'grad_variables' is deprecated. Use 'grad_tensors' instead.", FutureWarning, stacklevel=2)
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    else:
        grad_tensors = _check_grads_len(tensors, _as_tuple(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _make_grads(tensors, grad_tensors)
    engine.run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, allow_unused=True,
                        accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned as a tuple; ``.grad`` is not touched."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) needs vmap, which minitorch_gpu does not "
                                  "provide; loop over the batch of grad_outputs instead")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _check_grads_len(outputs, _as_tuple(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs)
    res = engine.run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs,
                              allow_unused=allow_unused, accumulate=False)
    if materialize_grads:
        res = [g if g is not None else Tensor._make(t._be.zeros(t._data.shape, t._data.dtype), t._be)
               for g, t in zip(res, inputs)]
    return tuple(res)


def _accumulate_node(t):
    """The AccumulateGrad node of leaf ``t``, made once and kept alive only by the graphs that use it."""
    ref = t._acc_ref
    acc = ref() if ref is not None else None
    if acc is None:
        acc = engine.AccumulateGrad(t)
        t._acc_ref = weakref.ref(acc)
    return acc


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the ``.grad`` of the leaves it depends on."""
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


register_methods({"backward": _tensor_backward, "_edge": edge_of, "_accumulate_node": _accumulate_node})
