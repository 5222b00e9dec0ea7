"""Helpers shared by the op modules: dim wrapping, broadcasting, scalars, gradient reduction, and the op
plumbing every module needs the same way: argument type checks, device agreement and ``out=``.

Dim wrapping and broadcasting are defined once in ``_shapes`` (below Tensor) and ``sum_to`` in autograd;
they are re-exported here because every op module needs them.
"""
import builtins
import warnings

from .. import _dtype
from .._mode import _state
from .._shapes import broadcast_shapes, is_expandable_to, wrap_dim, wrap_dims
from ..autograd._inplace import write_result
from ..autograd.node import Node, _OutputRef, collect_edges, sum_to
from ..tensor import Tensor

__all__ = ["wrap_dim", "wrap_dims", "sum_to", "is_expandable_to", "broadcast_shapes", "to_tensor_like",
           "scalar_for", "is_tensor", "METHODS_ATTR", "check_tensor", "check_same_device", "check_out",
           "write_out", "write_outs", "apply_outputs"]

METHODS_ATTR = "METHODS"


def is_tensor(x):
    return isinstance(x, Tensor)


def scalar_for(value, dtype):
    """A Python scalar converted so that the backend computes in ``dtype`` (ints wrap like PyTorch's)."""
    if dtype.is_floating_point:
        return builtins.float(value)
    if dtype is _dtype.bool:
        return builtins.bool(value)
    v = builtins.int(value)
    info_bits = dtype.itemsize * 8
    if dtype is _dtype.uint8:
        return v % 256
    lo, hi = -(1 << (info_bits - 1)), (1 << (info_bits - 1)) - 1
    if v < lo or v > hi:
        v = (v - lo) % (1 << info_bits) + lo
    return v


def to_tensor_like(value, ref, dtype=None):
    """A Python scalar (or array-like) as a tensor on ``ref``'s device, in ``dtype`` (default: its own)."""
    if isinstance(value, Tensor):
        return value
    be = ref._be
    if dtype is None:
        dtype = _dtype.result_type(value)
    return Tensor._make(be.asarray(value, be.np_dtype(dtype)), be)


def grad_enabled():
    return _state.grad


# ---------------------------------------------------------------------- argument plumbing

def check_tensor(x, fn, arg, pos=None):
    """``x``, or PyTorch's TypeError naming the function, the argument and (when given) its position."""
    if not isinstance(x, Tensor):
        where = f" (position {pos})" if pos is not None else ""
        raise TypeError(f"{fn}(): argument '{arg}'{where} must be Tensor, not {type(x).__name__}")
    return x


def check_same_device(*tensors):
    """RuntimeError, in PyTorch's words, when the tensors do not all live on one device."""
    be = tensors[0]._be
    for t in tensors[1:]:
        if t._be is not be:
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               f"{tensors[0].device} and {t.device}!")


def check_out(out, fn, *inputs):
    """The checks PyTorch makes on ``out=`` before it computes anything: the type, and no autograd through it
    (an op's inputs that require grad, or an ``out`` that does, while grad mode is on)."""
    if out is None:
        return
    check_tensor(out, fn, "out")
    if _state.grad and (out._requires_grad or any(isinstance(t, Tensor) and t._requires_grad for t in inputs)):
        raise RuntimeError(f"{fn}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")


def write_out(result, out, fn, *, exact_dtype=False, dtype_error=None, resize_warning=True):
    """``result`` stored in the user's ``out=`` tensor under PyTorch's contract, returning ``out`` (or
    ``result`` when there is none).

    In order: ``out`` must be a Tensor; no autograd through it; same device as the result; the result's dtype
    must cast to ``out``'s under PyTorch's rules (``exact_dtype``: must equal it, as structured kernels such
    as linear algebra, gather and scatter require; ``dtype_error``: must equal it, refused with that op's own
    message, where ``{result}`` and ``{out}`` stand for the two dtypes' names); a shape mismatch resizes
    ``out``, with PyTorch's deprecation warning when it held elements (``resize_warning=False`` for factories,
    whose contract is to resize ``out``). Every check runs before
    ``out`` changes, so a refused call leaves it as it was; a successful one bumps its version."""
    if out is None:
        return result
    _check_write(result, out, fn, exact_dtype, dtype_error)
    _store(result, out, resize_warning)
    return out


def write_outs(results, out, fn, *, exact_dtype=False):
    """``out=`` of an op returning several tensors (``values, indices``): ``out`` is a tuple of as many
    tensors, each written under ``write_out``'s contract, all checked before any is written."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"{fn}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    for r, o in zip(results, out):
        _check_write(r, o, fn, exact_dtype, None)
    for r, o in zip(results, out):
        _store(r, o, True)
    return out


def _check_write(result, out, fn, exact_dtype, dtype_error):
    check_tensor(out, fn, "out")
    if _state.grad and (result._requires_grad or out._requires_grad):
        raise RuntimeError(f"{fn}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    out._check_inplace()
    if out._be is not result._be:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got {out.device} instead")
    rd, od = result.dtype, out.dtype
    if rd is not od:
        if dtype_error is not None:
            raise RuntimeError(dtype_error.format(result=rd._scalar_name, out=od._scalar_name))
        if exact_dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {rd._cpp_typeid_name}, but got "
                               f"{od._cpp_typeid_name} instead")
        if not _dtype.can_cast(rd, od):
            raise RuntimeError(f"result type {rd._scalar_name} can't be cast to the desired output type "
                               f"{od._scalar_name}")


def _store(result, out, resize_warning):
    shape = result._data.shape
    if out._data.shape != shape:
        if resize_warning and out._data.size:
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._data.shape)}, which does not match the required output shape {list(shape)}. "
                          "This behavior is deprecated, and in a future release outputs will not be resized unless "
                          "they have zero elements. You can explicitly reuse an out tensor t by resizing it, "
                          "inplace, to zero elements with t.resize_(0).", UserWarning, stacklevel=4)
        out._data = out._be.empty(shape, out._data.dtype)
    write_result(out, result)


# ---------------------------------------------------------------------- ops with several outputs

def apply_outputs(cls, *inputs, **params):
    """Run op ``cls`` whose ``forward`` returns several arrays, all outputs of one node (``Op.apply`` records
    one). A node with ``save_output`` keeps every output for its backward, after what it saved itself."""
    node = cls.__new__(cls)
    edges = collect_edges(inputs) if _state.grad else None
    node.next_functions = edges if edges is not None else tuple((None, 0) for _ in inputs)
    arrays = node.forward(*inputs, **params)
    be = inputs[0]._be
    outs = tuple(Tensor._make(a, be) for a in arrays)
    if edges is not None:
        Node._connect(node, inputs)
        node._n_outputs = len(outs)
        for nr, o in enumerate(outs):
            o._grad_fn = node
            o._output_nr = nr
            o._requires_grad = True
        if cls.save_output:
            node._saved = (node._saved or ()) + tuple(_OutputRef(o, nr) for nr, o in enumerate(outs))
            node._saved_versions = (node._saved_versions or ()) + (0,) * len(outs)
    return outs
