"""``linear`` and ``bilinear``.

``linear(x, W, b)`` is ``x @ W.T + b`` over the last dim of ``x``. The common case (a floating input of at
least one dim, a 2-D weight, a bias of one value per output feature, all of one dtype on one device) is one
node: the leading dims are folded into one GEMM that reads ``W`` transposed in place (BLAS takes the
transpose as a flag, so nothing is copied), and the bias is added by the GEMM itself (its epilogue on CUDA). Its
backward is two more GEMMs and a column sum, written with the matmul ops so that it can be differentiated
again. Everything else (a 1-D weight, a bias that merely broadcasts) goes through ``matmul`` and ``+``.
Shape and dtype errors carry PyTorch's messages.
"""
import math

from ... import _op_range
from ...autograd.grad_mode import _state
from ...autograd.node import Op, skips_node
from ...ops._util import check_tensor
from ...ops import linalg as _L
from ...ops._autocast import autocast_op
from ...tensor import _new_tensor

__all__ = ["linear", "bilinear"]



def _linear_array(x, w, b):
    """x @ w.T (+ b) on the arrays: the leading dims of x folded into one GEMM whose epilogue adds the bias (one
    launch on CUDA)."""
    be = x._be
    xd = x._data
    shape = xd.shape
    if xd.ndim != 2:
        xd = xd.reshape(-1, shape[-1])
    r = be.matmul(xd, w._data, transpose_b=True, bias=None if b is None else b._data)
    if len(shape) != 2:
        r = r.reshape(shape[:-1] + (r.shape[-1],))
    return r


class _LinearNode(Op):
    """x @ w.T (+ b) with x of any number (>= 1) of dims; w is (out, in), b is (out,) or None."""

    def forward(self, x, w, b=None):
        nx, nw = self.next_functions[0][0] is not None, self.next_functions[1][0] is not None
        # each gradient reads only the other operand: save just what the needed ones use
        self.save_for_backward(x if nw else None, w if nx else None)
        self.x_shape = x._data.shape
        return _linear_array(x, w, b)

    def backward(self, g):
        x, w = self.saved_tensors
        nx, nw, nb = self.needs_input_grad
        shape = self.x_shape
        if not _state.grad and not _op_range.enabled:
            # nothing to record: the same products on the arrays, without a node and a view per product
            be = g._be
            gd = g._data
            if gd.ndim != 2:
                gd = be.reshape(gd, (-1, gd.shape[-1]))
            gx = gw = gb = None
            if nx:
                r = be.matmul(gd, w._data)
                gx = _new_tensor(r if len(shape) == 2 else be.reshape(r, shape), be)
            if nw:
                xd = x._data
                gw = _new_tensor(be.matmul(gd, xd if xd.ndim == 2 else be.reshape(xd, (-1, shape[-1])), True), be)
            if nb:
                gb = _new_tensor(be.sum(gd, (0,), False), be)
            return gx, gw, gb
        if g._data.ndim != 2:
            g = g.reshape(-1, g._data.shape[-1])
        gx = gw = gb = None
        if nx:
            gx = _L._mm_node(g, w)
            if len(shape) != 2:
                gx = gx.reshape(shape)
        if nw:
            x2 = x if len(shape) == 2 else x.reshape(-1, shape[-1])
            gw = _L._mm_node(g, x2, True, False)
        if nb:
            gb = g.sum(0)
        return gx, gw, gb


class AddmmBackward0(_LinearNode):
    """linear with a bias (PyTorch's node for a 2-D input is the addmm it calls)."""


class MmBackward0(_LinearNode):
    """linear without a bias."""



@autocast_op("linear")
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: ``weight`` is (out_features, in_features), ``bias`` (out_features,).

    >>> linear(mt.ones(2, 3), mt.ones(4, 3)).shape
    minitorch_gpu.Size([2, 4])
    """
    check_tensor(input, "linear", "input", 1)
    check_tensor(weight, "linear", "weight", 2)
    if bias is not None:
        check_tensor(bias, "linear", "bias", 3)
    xd, wd = input._data, weight._data
    if xd.ndim == 0 or wd.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {xd.ndim}D and "
                           f"{wd.ndim}D")
    if wd.ndim == 2:
        k = xd.shape[-1]
        n_out, n_in = wd.shape
        if k != n_in:
            raise _L._mm_shape_error(math.prod(xd.shape[:-1]), k, n_in, n_out)
        if xd.dtype != wd.dtype:
            _L._mm_dtype_check(input, weight)
        if bias is not None and bias._data.dtype != xd.dtype:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got {bias.dtype._scalar_name} and "
                               f"{input.dtype._scalar_name}")
        fast = (xd.dtype.kind in "fV" and input._be is weight._be
                and (bias is None or (bias._data.shape == (n_out,) and bias._be is input._be)))
        if fast:
            if skips_node(input, weight, bias):
                # outside autograd the node would only run its forward
                be = input._be
                return _new_tensor(_linear_array(input, weight, bias), be)
            if bias is None:
                return MmBackward0.apply(input, weight, None)
            return AddmmBackward0.apply(input, weight, bias)
        if bias is not None:
            _L._check_expand(bias._data.shape, (math.prod(xd.shape[:-1]), n_out), bias.dtype)
    r = _L.matmul(input, weight.t())
    return r if bias is None else r + bias


@autocast_op("bilinear")
def bilinear(input1, input2, weight, bias=None):
    """``y[..., k] = input1[..., i] * weight[k, i, j] * input2[..., j] + bias[k]``; the two inputs share
    their leading (batch) dims."""
    check_tensor(input1, "bilinear", "input1", 1)
    check_tensor(input2, "bilinear", "input2", 2)
    check_tensor(weight, "bilinear", "weight", 3)
    s1, s2, sw = input1._data.shape, input2._data.shape, weight._data.shape
    if len(s1) != len(s2):
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {len(s1)} and {len(s2)}")
    for d in range(len(s1) - 1):
        if s1[d] != s2[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got {s1[d]} and "
                               f"{s2[d]}")
    if len(sw) != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional, got {len(sw)}")
    if s1[-1] != sw[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {s1[-1]} but expected "
                           f"{sw[1]}")
    if s2[-1] != sw[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {s2[-1]} but expected "
                           f"{sw[2]}")
    if bias is not None:
        check_tensor(bias, "bilinear", "bias", 4)
        if bias.dim() != 1 or bias._data.shape[0] != sw[0]:
            got = bias._data.shape[-1] if bias.dim() else 0
            raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but expected "
                               f"{sw[0]}")
    lead = s1[:-1]
    x1 = input1.reshape(-1, s1[-1])
    x2 = input2.reshape(-1, s2[-1])
    r = _L.einsum("bi,kij,bj->bk", x1, weight, x2)
    if bias is not None:
        r = r + bias
    return r.reshape(lead + (sw[0],))
