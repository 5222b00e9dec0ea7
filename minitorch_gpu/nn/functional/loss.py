"""Loss functions: the functional forms behind ``nn.MSELoss``, ``nn.CrossEntropyLoss``, ...

Losses that PyTorch computes with a kernel of its own are ``Op`` subclasses named after PyTorch's nodes
(``MseLossBackward0``, ``NllLossBackward0``, ...): the forward computes the elementwise loss and its
reduction on arrays in a few passes, the backward is written with Tensor ops so that gradients of
gradients work. Cross-entropy is one fused op (log-softmax and NLL together): its forward never
materialises the log-probabilities, and its backward writes the gradient of the logits, softmax minus
the (smoothed, weighted) one-hot target, directly (the backend's ``cross_entropy_forward`` /
``cross_entropy_backward`` primitives, fused kernels on CUDA). Losses that PyTorch composes from other ops
(``l1_loss``, ``margin_ranking_loss``, ``cosine_embedding_loss``, ...) are composed here as well.

2-byte floats are computed in float32 and rounded once at the end, as PyTorch's CPU kernels do.
"""
import builtins
import math
import operator
import warnings

import numpy as _np

from ... import _dtype
from ...autograd.node import Op
from ...autograd.grad_mode import _state
from ...ops._util import broadcast_shapes, sum_to
from ...ops.creation import arange
from ...ops.distance import pairwise_distance
from ...ops.elementwise import where
from ...tensor import Tensor
from .activation import logsigmoid
from ...ops._autocast import autocast_op

__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss",
    "margin_ranking_loss", "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
    "poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss",
    "multi_margin_loss",
]

_F32 = _dtype.float32.np_dtype
_data_of = operator.attrgetter("_data")
_I64 = _dtype.int64.np_dtype


# ====================================================================== reductions and shared helpers

def _legacy_get_string(size_average, reduce):
    """The reduction named by the deprecated ``size_average`` / ``reduce`` flags (None means True)."""
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=4)
    return ret


def _get_reduction(reduction, size_average=None, reduce=None, extra=()):
    """The validated reduction string; the legacy flags win when given (with PyTorch's warning)."""
    if size_average is not None or reduce is not None:
        return _legacy_get_string(size_average, reduce)
    if reduction == "mean" or reduction == "sum" or reduction == "none" or reduction in extra:
        return reduction
    if reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
                      stacklevel=3)
        return "mean"
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _apply_reduction(loss, reduction):
    """Reduce an elementwise loss Tensor (for the losses composed from Tensor ops)."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _reduce_array(be, loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return be.sum(loss)
    return be.mean(loss)  # NaN for an empty loss, as PyTorch gives


def _scaled(g, reduction, n):
    """The gradient of the reduced loss as the weight of each element: g / n for a mean over n."""
    if reduction == "mean" and n:
        return g / n
    return g


def _grad_for(gr, t):
    """A gradient summed back to ``t``'s shape (the backward of broadcasting) and cast to ``t``'s dtype."""
    if gr._data.shape != t._data.shape:
        gr = sum_to(gr, t._data.shape)
    if gr._data.dtype != t._data.dtype:
        gr = gr.to(t.dtype)
    return gr


def _compute_dtype(npd):
    """float32 for the 2-byte floats (PyTorch's "opmath"), else the dtype itself."""
    return _F32 if npd.itemsize == 2 else npd


def _finish(be, r, npd):
    """Round a result computed in float32 back to a 2-byte float dtype."""
    return r if r.dtype == npd else be.narrow(r, npd)


def _type_name(t):
    return t.dtype._scalar_name


def _float_result(name, input, target):
    """The dtype two operands are computed in (PyTorch's promotion); integer results are refused."""
    dt = input.dtype if input.dtype is target.dtype else _dtype.result_type(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{name}_{input.device.type}\" not implemented for '{dt._scalar_name}'")
    return dt


def _warn_size(input, target):
    if input._data.shape != target._data.shape:
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _check_broadcast(*tensors):
    broadcast_shapes(*[t._data.shape for t in tensors])


def _check_weight_size(weight, input):
    if weight._data.shape != input._data.shape:
        raise ValueError("Weights and input must have the same size.")


def _not_differentiable(fn, arg, t):
    if t is not None and _state.grad and t.requires_grad:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument '{arg}'. This input "
                           "cannot have requires_grad True.")


def _prep_pair(a, b, npd):
    """The arrays of two operands in the compute dtype for result dtype ``npd``."""
    cdt = _compute_dtype(npd)
    be = a._be
    return be.astype(a._data, cdt), be.astype(b._data, cdt)


# ====================================================================== regression losses

class _PointwiseLoss(Op):
    """A loss of ``d = input - target`` (broadcast together), reduced. Subclasses give the elementwise loss of
    d on arrays (``_loss``) and its derivative as Tensor ops (``_deriv``); the target's gradient is the
    negated input gradient."""

    def forward(self, a, b, reduction="mean", npd=None, param=None):
        if self.needs_input_grad[0] or self.needs_input_grad[1]:
            self.save_for_backward(a, b)
        self.reduction = reduction
        self.param = param
        be = a._be
        ad, bd = _prep_pair(a, b, npd)
        loss = self._loss(be, be.binary("sub", ad, bd), param)
        self.n = loss.size
        return _finish(be, _reduce_array(be, loss, reduction), npd)

    def backward(self, g):
        a, b = self.saved_tensors
        na, nb = self.needs_input_grad
        gi = self._deriv(a - b, self.param) * _scaled(g, self.reduction, self.n)
        return (_grad_for(gi, a) if na else None, _grad_for(-gi, b) if nb else None)


class MseLossBackward0(_PointwiseLoss):
    @staticmethod
    def _loss(be, d, param):
        return be.binary("mul", d, d, out=d)

    @staticmethod
    def _deriv(d, param):
        return d * 2.0


class SmoothL1LossBackward0(_PointwiseLoss):
    @staticmethod
    def _loss(be, d, beta):
        z = be.unary("abs", d, out=d)
        quad = be.binary("mul", z, z)
        quad = be.binary("mul", quad, 0.5 / beta, out=quad)
        return be.where(be.binary("lt", z, beta), quad, be.binary("sub", z, 0.5 * beta))

    @staticmethod
    def _deriv(d, beta):
        # d / beta inside the quadratic zone, sign(d) outside: one clamp, with the right second derivative
        return (d / beta).clamp(-1.0, 1.0)


class HuberLossBackward0(_PointwiseLoss):
    @staticmethod
    def _loss(be, d, delta):
        z = be.unary("abs", d, out=d)
        quad = be.binary("mul", z, z)
        quad = be.binary("mul", quad, 0.5, out=quad)
        lin = be.binary("mul", be.binary("sub", z, 0.5 * delta), delta)
        return be.where(be.binary("lt", z, delta), quad, lin)

    @staticmethod
    def _deriv(d, delta):
        return d.clamp(-delta, delta)


def _pointwise(cls, name, input, target, reduction, param=None):
    npd = _float_result(name, input, target).np_dtype
    _check_broadcast(input, target)
    return cls.apply(input, target, reduction=reduction, npd=npd, param=param)


@autocast_op("mse_loss")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target)^2``, reduced; ``weight`` (input's shape) gives a weighted mean."""
    _warn_size(input, target)
    reduction = _get_reduction(reduction, size_average, reduce)
    if weight is not None:
        _check_broadcast(input, target)
        _check_weight_size(weight, input)
        return _weighted((input - target).pow(2) * weight, weight, reduction)
    return _pointwise(MseLossBackward0, "mse", input, target, reduction)


def _weighted(loss, weight, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / weight.sum()


@autocast_op("l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|``, reduced; ``weight`` (input's shape) gives a weighted mean."""
    _warn_size(input, target)
    reduction = _get_reduction(reduction, size_average, reduce)
    _check_broadcast(input, target)
    if weight is not None:
        _check_weight_size(weight, input)
        return _weighted((input - target).abs() * weight, weight, reduction)
    return _apply_reduction((input - target).abs(), reduction)


@autocast_op("smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``); beta=0 is L1."""
    _warn_size(input, target)
    reduction = _get_reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        _check_broadcast(input, target)
        return _apply_reduction((input - target).abs(), reduction)
    return _pointwise(SmoothL1LossBackward0, "smooth_l1", input, target, reduction, float(beta))


@autocast_op("huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)`` (``d = input - target``), reduced."""
    _warn_size(input, target)
    reduction = _get_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None:
        _check_broadcast(input, target)
        _check_weight_size(weight, input)
        loss = _pointwise(HuberLossBackward0, "huber", input, target, "none", float(delta)) * weight
        return _apply_reduction(loss, reduction)
    return _pointwise(HuberLossBackward0, "huber", input, target, reduction, float(delta))


# ====================================================================== binary cross-entropy

# the floor of the gradient's denominator x (1 - x) at x = 0 and 1: PyTorch's constant 1e-12 is a C float, so the
# gradient there is g * (x - y) / float32(1e-12) in every dtype
_BCE_GRAD_EPS = 9.999999960041972e-13


class BinaryCrossEntropyBackward0(Op):
    """-w (y log x + (1 - y) log(1 - x)) with both logs clamped to >= -100, so that x = 0 or 1 gives a
    finite loss, as PyTorch defines it."""

    def forward(self, x, y, w=None, reduction="mean", bounds=(0.0, 1.0)):
        na, nb = self.needs_input_grad[:2]
        if na or nb:
            self.save_for_backward(x, y, w)
        self.reduction = reduction
        be = x._be
        npd = x._data.dtype
        xd, yd = _prep_pair(x, y, npd)
        lo, hi = bounds
        if lo > 0:
            lx = be.unary("log", xd)
        else:
            # log(0) = -inf clamps to -100 below; keep the array library from warning about it
            lx = be.unary("log", be.where(be.binary("eq", xd, 0), 1.0, xd))
            lx = be.where(be.binary("eq", xd, 0), -100.0, lx)
        if hi < 1:
            l1x = be.unary("log1p", be.unary("neg", xd))
        else:
            l1x = be.unary("log1p", be.unary("neg", be.where(be.binary("eq", xd, 1), 0.0, xd)))
            l1x = be.where(be.binary("eq", xd, 1), -100.0, l1x)
        be.binary("maximum", lx, -100.0, out=lx)
        be.binary("maximum", l1x, -100.0, out=l1x)
        # (y - 1) log(1 - x) - y log(x)
        loss = be.binary("mul", be.binary("sub", yd, 1.0), l1x)
        loss = be.binary("sub", loss, be.binary("mul", yd, lx, out=lx), out=loss)
        if w is not None:
            wd = be.astype(w._data, loss.dtype)
            loss = be.binary("mul", loss, wd)
        self.n = loss.size
        return _finish(be, _reduce_array(be, loss, reduction), npd)

    def backward(self, g):
        x, y, w = self.saved_tensors
        na, nb = self.needs_input_grad[:2]
        gs = _scaled(g, self.reduction, self.n)
        if w is not None:
            gs = gs * w
        gx = gy = None
        if na:
            gx = _grad_for(gs * (x - y) / ((1 - x) * x).clamp_min(_BCE_GRAD_EPS), x)
        if nb:
            gy = _grad_for(gs * ((-x).log1p() - x.log()), y)
        return gx, gy, None


@autocast_op("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross-entropy between probabilities ``input`` and ``target`` (both in [0, 1]), optionally
    weighted elementwise by ``weight`` (broadcast to the target's shape)."""
    reduction = _get_reduction(reduction, size_average, reduce)
    if target._data.shape != input._data.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}) "
                         "is deprecated. Please ensure they have the same size.")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{_type_name(input)}'")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {_type_name(target)} but expected {_type_name(input)}")
    if weight is not None:
        shape = input._data.shape
        ws = weight._data.shape
        if len(ws) > len(shape) or any(a != b and a != 1 for a, b in zip(reversed(ws), reversed(shape))):
            bad = next(i for i, (a, b) in enumerate(zip(reversed(ws), reversed(shape)), 1) if a != b and a != 1) \
                if len(ws) <= len(shape) else len(ws)
            raise RuntimeError(f"Attempting to broadcast a dimension of length {ws[-bad]} at {-bad}! Mismatching "
                               f"argument at index 1 had {weight.size()}; but expected shape should be broadcastable "
                               f"to {list(shape)}")
    _not_differentiable("binary_cross_entropy", "weight", weight)
    bounds = (0.5, 0.5)
    if input._data.size:
        bounds = _bounds(input, "input")
        _bounds(target, "target")
    return BinaryCrossEntropyBackward0.apply(input, target, weight, reduction=reduction, bounds=bounds)


def _bounds(t, what):
    """(min, max) of ``t`` as floats; RuntimeError unless every element lies in [0, 1] (NaN does not)."""
    be = t._be
    d = t._data
    lo = float(be.to_numpy(be.amin(d)))
    hi = float(be.to_numpy(be.amax(d)))
    if not (lo >= 0 and hi <= 1):
        raise RuntimeError(f"all elements of {what} should be between 0 and 1")
    return lo, hi


class BinaryCrossEntropyWithLogitsBackward0(Op):
    """(1 - y) x - l log(sigmoid(x)), l = 1 + (pos_weight - 1) y, times ``weight``; log(sigmoid(x)) is
    computed as min(x, 0) - log1p(exp(-|x|)), which neither overflows nor loses small values."""

    def forward(self, x, y, w=None, pw=None, reduction="mean", npd=None):
        na, nb = self.needs_input_grad[:2]
        if na or nb:
            self.save_for_backward(x, y, w, pw)
        self.reduction = reduction
        be = x._be
        xd, yd = _prep_pair(x, y, npd)
        cdt = xd.dtype
        ls = be.unary("exp", be.unary("neg", be.unary("abs", xd)))
        ls = be.unary("log1p", ls, out=ls)
        ls = be.binary("sub", be.binary("minimum", xd, 0.0), ls, out=ls)
        loss = be.binary("mul", be.binary("sub", 1.0, yd), xd)
        if pw is not None:
            pwd = be.astype(pw._data, cdt)
            lw = be.binary("add", be.binary("mul", be.binary("sub", pwd, 1.0), yd), 1.0)
            ls = be.binary("mul", lw, ls)
        loss = be.binary("sub", loss, ls)
        if w is not None:
            loss = be.binary("mul", loss, be.astype(w._data, cdt))
        self.n = loss.size
        return _finish(be, _reduce_array(be, loss, reduction), npd)

    def backward(self, g):
        x, y, w, pw = self.saved_tensors
        na, nb = self.needs_input_grad[:2]
        gs = _scaled(g, self.reduction, self.n)
        if w is not None:
            gs = gs * w
        gx = gy = None
        if na:
            s = x.sigmoid()
            d = s - y if pw is None else ((pw - 1) * y + 1) * s - pw * y
            gx = _grad_for(d * gs, x)
        if nb:
            d = -x if pw is None else -x - (pw - 1) * _logsigmoid(x)
            gy = _grad_for(d * gs, y)
        return gx, gy, None, None


def _logsigmoid(x):
    return x.clamp_max(0) - (-x.abs()).exp().log1p()


@autocast_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross-entropy of ``sigmoid(input)`` against ``target``, computed stably from the logits;
    ``pos_weight`` weighs the positive term (broadcast over the last dims, e.g. one per class)."""
    reduction = _get_reduction(reduction, size_average, reduce)
    if target._data.shape != input._data.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    dt = _dtype.result_type(input, target)
    if not dt.is_floating_point:
        dt = _dtype.get_default_dtype()
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"result type {dt._scalar_name} can't be cast to the desired output type "
                           f"{_type_name(target)}")
    extra = [t for t in (weight, pos_weight) if t is not None]
    if extra:
        shape = broadcast_shapes(input._data.shape, *[t._data.shape for t in extra])
        if shape != input._data.shape:
            raise RuntimeError(f"output with shape {list(input._data.shape)} doesn't match the broadcast shape "
                               f"{list(shape)}")
    return BinaryCrossEntropyWithLogitsBackward0.apply(input, target, weight, pos_weight, reduction=reduction,
                                                       npd=dt.np_dtype)


# ====================================================================== KL divergence

class KlDivBackward0(Op):
    """target (log target - input) pointwise (0 where target is 0), or exp(t) (t - input) for log targets."""

    def forward(self, x, t, reduction="mean", log_target=False, npd=None):
        if self.needs_input_grad[0] or self.needs_input_grad[1]:
            self.save_for_backward(x, t)
        self.reduction = reduction
        self.log_target = log_target
        be = x._be
        xd, td = _prep_pair(x, t, npd)
        if log_target:
            loss = be.binary("mul", be.unary("exp", td), be.binary("sub", td, xd))
        else:
            # PyTorch's xlogy(t, t) - t x: 0 * log 0 is 0, but 0 * x is NaN for a NaN or infinite x (a zero target
            # against a log-probability of -inf gives NaN there too)
            zero = be.binary("eq", td, 0)
            tlogt = be.binary("mul", td, be.unary("log", be.where(zero, 1.0, td)))
            loss = be.binary("sub", tlogt, be.binary("mul", td, xd), out=tlogt)
        self.n = loss.size
        if reduction == "batchmean":
            self.n = x._data.shape[0] if x._data.ndim else 1
            s = be.sum(loss)
            r = be.binary("div", s, self.n) if self.n else be.full((), float("nan"), s.dtype)
            return _finish(be, r, npd)
        return _finish(be, _reduce_array(be, loss, reduction), npd)

    def backward(self, g):
        x, t = self.saved_tensors
        nx, nt = self.needs_input_grad
        gs = g if self.reduction in ("none", "sum") or not self.n else g / self.n
        gx = gt = None
        if self.log_target:
            e = t.exp()
            if nx:
                gx = _grad_for(-e * gs, x)
            if nt:
                gt = _grad_for(e * (t - x + 1) * gs, t)
        else:
            if nx:
                gx = _grad_for(-t * gs, x)
            if nt:
                # d/dt [xlogy(t, t)] = log t + 1; PyTorch's xlogy gradient makes it NaN at t = 0
                safe = where(t == 0, 1.0, t)
                gt = _grad_for(where(t == 0, float("nan"), safe.log() + 1 - x) * gs, t)
        return gx, gt


@autocast_op("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence ``target * (log target - input)`` with ``input`` given as log-probabilities
    (and ``target`` too when ``log_target``). ``reduction='batchmean'`` divides the sum by the batch size,
    which is the divergence's definition; 'mean' (the default, with PyTorch's warning) divides by every
    element."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_get_string(size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        reduction = _get_reduction(reduction, extra=("batchmean",))
    if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    npd = _dtype.result_type(input, target).np_dtype
    _check_broadcast(input, target)
    return KlDivBackward0.apply(input, target, reduction=reduction, log_target=bool(log_target), npd=npd)


# ====================================================================== class-index targets (NLL, cross-entropy)

class _ClassTargets:
    """A class-index target checked against its input, in the layout both NLL and cross-entropy use: the
    input viewed as (N, C, *spatial) with classes on axis 1, the target as (N, 1, *spatial) int64 indices
    (``target``, and ``tidx`` with ignored entries pointed at class 0), and per-sample coefficients
    ``weight[target] * not_ignored``."""
    __slots__ = ("nshape", "row_shape", "out_shape", "target", "ignore_index", "tidx", "mask", "coef", "wd", "denom",
                 "cdt", "npd", "n_classes")


def _class_targets(input, target, weight, ignore_index, kernel):
    nd = input._data.ndim
    if nd == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    ishape = input._data.shape
    tshape = target._data.shape
    td = len(tshape)
    if nd != 1:
        if td == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if ishape[0] != tshape[0]:
            raise ValueError(f"Expected input batch_size ({ishape[0]}) to match target batch_size ({tshape[0]}).")
    tdt = target.dtype
    if tdt is not _dtype.int64 and tdt is not _dtype.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {tdt._scalar_name}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(input)}'")
    if nd == 1:
        if td == 1 and tshape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {tshape[0]}")
        if td > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        c = ishape[0]
        nshape, row_shape, out_shape = (1, c), (1, 1), ()
    else:
        c = ishape[1]
        if nd == 2:
            if td != 1:
                raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        elif nd == 4 and td != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                               f"{td}")
        elif tshape[1:] != ishape[2:]:
            if nd == 4:
                raise RuntimeError(f"size mismatch (got input: {list(ishape)} , target: {list(tshape)}")
            raise RuntimeError(f"Expected target size {[ishape[0]] + list(ishape[2:])}, got {list(tshape)}")
        nshape = ishape
        row_shape = (ishape[0], 1) + ishape[2:]
        out_shape = (ishape[0],) + ishape[2:]
    if weight is not None:
        if weight._data.ndim != 1 or weight._data.shape[0] != c:
            raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                               f"weight tensor of shape: {list(weight._data.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected scalar type {_type_name(input)} but found {_type_name(weight)}")
        _not_differentiable("nll_loss_forward", "weight", weight)

    be = input._be
    ct = _ClassTargets()
    ct.nshape, ct.row_shape, ct.out_shape, ct.n_classes = nshape, row_shape, out_shape, c
    ct.npd = input._data.dtype
    cdt = ct.cdt = _compute_dtype(ct.npd)
    t = be.astype(target._data, _I64).reshape(row_shape)
    ct.target = t
    ct.ignore_index = ignore_index
    if be.reads_wait:
        return _device_class_targets(be, ct, t, weight, ignore_index, c)
    mask = None
    n = t.size
    n_valid = n
    if n:
        lo, hi = be.index_range(t)
        if lo <= ignore_index <= hi:
            keep = be.binary("ne", t, ignore_index)
            t = be.where(keep, t, 0)
            n_valid = be.count_nonzero(keep)
            if n_valid < n:
                mask = be.astype(keep, cdt)
            lo, hi = be.index_range(t)
        if lo < 0 or hi >= c:
            raise IndexError(f"Target {be.first_outside(t, 0, c)} is out of bounds.")
    ct.tidx = t
    ct.mask = mask
    if weight is None:
        ct.wd = None
        ct.coef = mask
        ct.denom = float(n_valid)
    else:
        wd = be.astype(weight._data, cdt)
        ct.wd = wd
        coef = be.take(wd, t)
        if mask is not None:
            coef = be.binary("mul", coef, mask, out=coef)
        ct.coef = coef
        ct.denom = None  # the sum of coef, on first use (on the CPU read back as a float)
    return ct


def _device_class_targets(be, ct, t, weight, ignore_index, c):
    """``_class_targets``' tail on a GPU, without waiting for it: the ignored samples are masked whether there
    are any or not, the range check is read at the next synchronisation, and the 'mean' denominator (summed by
    ``_denominator`` when a mean needs it) stays a 0-d device array."""
    keep = be.binary("ne", t, ignore_index)
    t = be.where(keep, t, 0)
    be.check_index_range(t, c, _target_error)
    # until the check is read, a bad target must not send a gather outside the row
    t = be.clamp(t, 0, c - 1)
    mask = be.astype(keep, ct.cdt)
    ct.tidx = t
    ct.mask = mask
    if weight is None:
        ct.wd = None
        ct.coef = mask
    else:
        wd = weight._data
        ct.wd = be.astype(wd, ct.cdt)
        ct.coef = be.binary("mul", be.take(ct.wd, t), mask)
    ct.denom = None  # 'mean' only: summed on first use, and left on the device
    return ct


def _target_error(bad):
    return IndexError(f"Target {bad} is out of bounds.")


def _denominator(be, ct):
    """The 'mean' denominator: a float on the CPU, a 0-d array on a GPU (never read back there)."""
    if ct.denom is None:
        d = be.sum(ct.coef)
        ct.denom = d if be.reads_wait else float(be.to_numpy(d))
    return ct.denom


def _grad_denominator(be, ct):
    """What the gradient of a 'mean' divides by: None when nothing is counted (the gradient is zero there)."""
    denom = ct.denom
    if isinstance(denom, float):
        return denom or None
    # on the device: a zero count divides by 1 instead (every sample is masked, so the gradient is 0 anyway)
    return be.where(be.binary("eq", denom, 0), 1.0, denom)


def _reduce_rows(be, loss, ct, reduction):
    """Reduce per-sample losses (N, 1, *spatial); 'mean' divides by the summed weights of counted samples."""
    if reduction == "none":
        return loss.reshape(ct.out_shape)
    s = be.sum(loss)
    if reduction == "sum":
        return s
    denom = _denominator(be, ct)
    if isinstance(denom, float):
        if denom == 0:
            return be.full((), float("nan"), s.dtype)
        return be.binary("div", s, denom)
    # nothing counted: the masked sum is 0 and 0 / 0 is the NaN PyTorch gives
    with _np.errstate(invalid="ignore", divide="ignore"):
        return be.binary("div", s, be.astype(denom, s.dtype))


def _row_grad(g, ct, reduction):
    """The incoming gradient per sample as a Tensor broadcastable against (N, C, *spatial)."""
    if reduction == "none":
        return g.reshape(ct.row_shape)
    if reduction == "mean":
        denom = _grad_denominator(g._be, ct)
        if denom is None:
            return g
        return g / (denom if isinstance(denom, float) else Tensor._make(g._be.astype(denom, g._data.dtype), g._be))
    return g


def _target_matrix(be, ct, at_target, smooth):
    """An (N, C, *spatial) array: ``at_target`` at each sample's target class (per-sample array or scalar)
    plus ``smooth`` (a class vector or scalar, or None) on every class of counted samples."""
    m = be.zeros(ct.nshape, ct.cdt)
    if smooth is not None:
        m = be.binary("add", m, smooth, out=m)
        if ct.mask is not None:
            m = be.binary("mul", m, ct.mask, out=m)
    cur = be.gather(m, 1, ct.tidx)
    be.scatter_into(m, 1, ct.tidx, be.binary("add", cur, at_target))
    return m


class NllLossBackward0(Op):
    """-weight[target] * input[target] per sample (0 for ignored samples), reduced."""

    def forward(self, x, ct=None, reduction="mean"):
        self.ct = ct
        self.reduction = reduction
        self.in_shape = x._data.shape
        be = x._be
        xd = be.astype(x._data, ct.cdt)
        picked = be.gather(xd.reshape(ct.nshape), 1, ct.tidx)
        loss = be.unary("neg", picked, out=picked)
        if ct.coef is not None:
            loss = be.binary("mul", loss, ct.coef, out=loss)
        if ct.mask is not None:
            # an ignored sample contributes exactly 0, as PyTorch skips it: not 0 * x, NaN for an infinite x
            loss = be.where(be.binary("ne", ct.mask, 0), loss, loss.dtype.type(0))
        if reduction == "mean":
            _denominator(be, ct)
        return _finish(be, _reduce_rows(be, loss, ct, reduction), ct.npd)

    def backward(self, g):
        ct = self.ct
        be = g._be
        coef = -1.0 if ct.coef is None else be.unary("neg", ct.coef)
        d = Tensor._make(_target_matrix(be, ct, coef, None), be)
        # PyTorch scatters the gradient into zeros: the other classes and the ignored samples get exactly 0, not
        # 0 * g (NaN for a NaN gradient, -0.0 for a negative one)
        picked = _target_matrix(be, ct, 1.0 if ct.mask is None else ct.mask, None)
        gx = (d * _row_grad(g, ct, self.reduction)).where(Tensor._make(be.asarray(be.binary("ne", picked, 0)), be), 0.0)
        if gx._data.shape != self.in_shape:
            gx = gx.reshape(self.in_shape)
        if gx._data.dtype != ct.npd:
            gx = gx.to(_dtype.from_numpy_dtype(ct.npd))
        return (gx,)


@autocast_op("nll_loss")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input`` ((N, C),
    (N, C, d1, ...) or unbatched (C,)); ``weight`` per class, samples whose target is ``ignore_index``
    count for nothing, and 'mean' divides by the summed weights of the counted samples."""
    reduction = _get_reduction(reduction, size_average, reduce)
    ct = _class_targets(input, target, weight, ignore_index, "nll_loss_out_frame")
    return NllLossBackward0.apply(input, ct=ct, reduction=reduction)


def _classes_view(x, ct):
    """The array of ``x`` viewed as (N, C, *spatial)."""
    d = x._data
    return d if d.shape == ct.nshape else d.reshape(ct.nshape)


class CrossEntropyLossBackward0(Op):
    """Fused log_softmax + nll_loss over class indices, with label smoothing.

    Per counted sample i with target y (p = softmax(x_i), W = sum of the class weights w, s = label_smoothing):
    loss_i = (1 - s) w_y (-log p_y) + (s / C) sum_c w_c (-log p_c), and its gradient is
    A_i p - B_i with A_i = (1 - s) w_y + (s / C) W and B_i = (1 - s) w_y onehot(y) + (s / C) w.
    Forward and plain backward are the backend's ``cross_entropy_forward`` / ``cross_entropy_backward`` (fused
    kernels on CUDA); what the forward keeps for the backward is held as saved tensors, so that the engine
    frees it after backward.
    """

    def forward(self, x, ct=None, ls=0.0, reduction="mean"):
        self.ct = ct
        self.ls = ls
        self.reduction = reduction
        be = x._be
        loss, saved = be.cross_entropy_forward(_classes_view(x, ct), ct.target, ct.wd, ct.ignore_index, ls,
                                               tidx=ct.tidx, mask=ct.mask, coef=ct.coef,
                                               want_grad=bool(self.needs_input_grad[0]))
        if reduction == "mean":
            _denominator(be, ct)
        if self.needs_input_grad[0]:
            self.in_shape = x._data.shape
            self.saved_names = tuple(saved)
            self.save_for_backward(x, *map(Tensor._make, saved.values(), (be,) * len(saved)))
        return _finish(be, _reduce_rows(be, loss, ct, reduction), ct.npd)

    def _coefficients(self, be):
        """(A, B at the target, smoothing per class or None), with ignored samples' A and B zeroed."""
        ct = self.ct
        return be.cross_entropy_coefficients(ct.wd, ct.tidx, ct.mask, self.ls, ct.nshape)

    def backward(self, g):
        ct = self.ct
        x, *arrays = self.saved_tensors
        be = g._be
        if not _state.grad:
            gd = g._data
            if self.reduction == "none":
                gd = gd.reshape(ct.row_shape)
            saved = dict(zip(self.saved_names, map(_data_of, arrays)))
            if getattr(self, "_dlogits_used", False):
                saved.pop("dlogits", None)
            elif "dlogits" in saved:
                # the backend scales a gradient the forward computed in place and hands it out: a second
                # backward through a retained graph must not use it again
                self._dlogits_used = True
            dl = be.cross_entropy_backward(gd, _classes_view(x, ct), ct.target, ct.wd, ct.ignore_index, self.ls,
                                           saved, _grad_denominator(be, ct) if self.reduction == "mean" else None,
                                           tidx=ct.tidx,
                                           mask=ct.mask)
            if ct.mask is not None:
                # the ignored samples' rows are exactly 0 (PyTorch skips them), not 0 * g: NaN for a NaN g
                dl = be.where(be.binary("ne", ct.mask, 0), dl, dl.dtype.type(0))
            return (Tensor._make(_finish(be, dl.reshape(self.in_shape), ct.npd), be),)
        # create_graph: the same formula in Tensor ops, differentiable again through softmax
        a, at_target, smooth = self._coefficients(be)
        pt = x.reshape(ct.nshape)
        if pt._data.dtype != ct.cdt:
            pt = pt.to(_dtype.from_numpy_dtype(ct.cdt))
        pt = pt.softmax(1)
        b = Tensor._make(_target_matrix(be, ct, at_target, smooth), be)
        if not isinstance(a, float):
            pt = pt * Tensor._make(a, be)
        gx = (pt - b) * _row_grad(g, ct, self.reduction)
        if ct.mask is not None:
            gx = gx.where(Tensor._make(be.asarray(be.binary("ne", ct.mask, 0)), be), 0.0)
        gx = gx.reshape(self.in_shape)
        if gx._data.dtype != ct.npd:
            gx = gx.to(_dtype.from_numpy_dtype(ct.npd))
        return (gx,)


class CrossEntropyLossBackward1(Op):
    """Cross-entropy against class probabilities: -sum_c w_c t'_c log softmax(x)_c per sample, with t' the
    target smoothed toward uniform (t (1 - s) + s / C). Its gradient in the logits is
    p sum_c(w_c t'_c) - w t', again without forming log p."""

    def forward(self, x, t, w=None, ls=0.0, reduction="mean", nshape=None, npd=None):
        nx, nt, nw = self.needs_input_grad
        self.ls = ls
        self.reduction = reduction
        self.nshape = nshape
        self.npd = npd
        be = x._be
        c = nshape[1]
        xd, td = _prep_pair(x, t, npd)
        cdt = xd.dtype
        xd = xd.reshape(nshape)
        td = td.reshape(nshape)
        if ls > 0:
            td = be.binary("add", be.binary("mul", td, 1.0 - ls), ls / c)
        if w is not None:
            wd = be.astype(w._data, cdt)
            td = be.binary("mul", td, wd.reshape((1, c) + (1,) * (len(nshape) - 2)))
        tw = be.sum(td, (1,), True)
        s = be.binary("sub", xd, be.amax(xd, (1,), True))
        q = be.sum(be.binary("mul", td, s), (1,), True)
        be.unary("exp", s, out=s)
        se = be.sum(s, (1,), True)
        loss = be.binary("sub", be.binary("mul", be.unary("log", se), tw), q, out=q)
        self.n = loss.size
        self.row_shape = loss.shape
        if nx or nt or nw:
            saved = [x, t, w]
            if nx:
                saved += [Tensor._make(be.binary("div", s, se, out=s), be), Tensor._make(td, be),
                          Tensor._make(tw, be)]
            self.save_for_backward(*saved)
        if reduction == "none":
            r = loss.reshape(x._data.shape[:1] + x._data.shape[2:] if x._data.ndim > 1 else ())
        elif reduction == "sum":
            r = be.sum(loss)
        else:
            r = be.mean(loss)
        return _finish(be, r, npd)

    def backward(self, g):
        saved = self.saved_tensors
        x, t, w = saved[:3]
        nx, nt, nw = self.needs_input_grad
        nshape, ls = self.nshape, self.ls
        c = nshape[1]
        gr = g.reshape(self.row_shape) if self.reduction == "none" else _scaled(g, self.reduction, self.n)
        wshape = (1, c) + (1,) * (len(nshape) - 2)
        gx = gt = gw = None
        if nx:
            p, wt, tw = saved[3:]
            if not _state.grad:
                be = g._be
                gd = be.astype(gr._data, p._data.dtype)
                dl = be.binary("mul", p._data, tw._data)
                dl = be.binary("sub", dl, wt._data, out=dl)
                dl = be.binary("mul", dl, gd, out=dl)
                gx = _grad_for(Tensor._make(dl.reshape(x._data.shape), be), x)
            else:
                tq = self._smoothed(t.reshape(nshape))
                if w is not None:
                    tq = tq * w.reshape(wshape)
                gx = _grad_for(((x.reshape(nshape).softmax(1) * tq.sum(1, keepdim=True) - tq) * gr)
                               .reshape(x._data.shape), x)
        if nt or nw:
            logp = x.reshape(nshape).log_softmax(1)
            if nt:
                d = logp if w is None else logp * w.reshape(wshape)
                gt = _grad_for((d * (gr * -(1.0 - ls) if ls > 0 else -gr)).reshape(t._data.shape), t)
            if nw:
                dims = (0,) + tuple(range(2, len(nshape)))
                gw = _grad_for(-(self._smoothed(t.reshape(nshape)) * logp * gr).sum(dims), w)
        return gx, gt, gw

    def _smoothed(self, t):
        ls = self.ls
        return t * (1.0 - ls) + ls / self.nshape[1] if ls > 0 else t


@autocast_op("cross_entropy")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross-entropy between the logits ``input`` ((N, C), (N, C, d1, ...) or unbatched (C,)) and ``target``:
    class indices (one fewer dim, int64 or uint8) or class probabilities (input's shape, float).

    ``weight`` gives one weight per class; with class indices, 'mean' divides by the summed weights of the
    counted targets, and targets equal to ``ignore_index`` count for nothing. ``label_smoothing`` mixes the
    target with the uniform distribution. Computed as one fused op: log-softmax and NLL in a few passes.
    """
    reduction = _get_reduction(reduction, size_average, reduce)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_softmax_lastdim_kernel_impl\" not implemented for '{_type_name(input)}'")
    ishape = input._data.shape
    if ishape == target._data.shape:
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{_type_name(target)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    ct = _class_targets(input, target, weight, ignore_index, "log_softmax_lastdim_kernel_impl")
    ls = float(label_smoothing) if label_smoothing > 0 else 0.0
    return CrossEntropyLossBackward0.apply(input, ct=ct, ls=ls, reduction=reduction)


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing):
    ishape = input._data.shape
    if len(ishape) == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    c = ishape[0] if len(ishape) == 1 else ishape[1]
    nshape = (1, c) if len(ishape) == 1 else ishape
    if weight is not None:
        if weight._data.ndim != 1 or weight._data.shape[0] != c:
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {c} classes or no "
                               f"classes but got weight tensor of shape: {list(weight._data.shape)}")
        dt = _dtype.result_type(input, target, weight)
    else:
        dt = _dtype.result_type(input, target)
    return CrossEntropyLossBackward1.apply(input, target, weight, ls=float(label_smoothing),
                                           reduction=reduction, nshape=nshape, npd=dt.np_dtype)


# ====================================================================== margin losses (composed, as in PyTorch)

@autocast_op("soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Two-class logistic loss ``log(1 + exp(-target * input))`` for targets in {1, -1}, reduced."""
    reduction = _get_reduction(reduction, size_average, reduce)
    _not_differentiable("soft_margin_loss", "target", target)
    return _apply_reduction((-input * target).exp().log1p(), reduction)


@autocast_op("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``: target 1 asks for input1 ranked above input2."""
    reduction = _get_reduction(reduction, size_average, reduce)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    return _apply_reduction((-target * (input1 - input2) + margin).clamp_min(0), reduction)


_COSINE_EPS = 1e-12


@autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1 (rows of 2-d
    inputs with a 1-d target, or two vectors with a 0-d target)."""
    reduction = _get_reduction(reduction, size_average, reduce)
    td = target.dim()
    if td > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if td == 1 else 1
    if input1.dim() != want or input2.dim() != want:
        raise RuntimeError(f"{td}D target tensor expects {want}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    prod_sum = (input1 * input2).sum(td)
    mag1 = (input1 * input1).sum(td) + _COSINE_EPS
    mag2 = (input2 * input2).sum(td) + _COSINE_EPS
    cos = prod_sum / (mag1 * mag2).sqrt()
    zeros = cos.new_zeros(cos.shape)
    pos = where(target == 1, 1 - cos, zeros)
    neg = where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _apply_reduction(pos + neg, reduction)


def _triplet(anchor, positive, negative, distance, margin, swap, reduction):
    """``max(0, margin + d(a, p) - d(a, n))``, with ``d(a, n)`` replaced by ``d(p, n)`` where that is smaller
    when ``swap``."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           "inputs")
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance(positive, negative))
    return _apply_reduction((margin + d_pos - d_neg).clamp_min(0), reduction)


@autocast_op("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """The triplet loss ``max(0, margin + ||a - p||_p - ||a - n||_p)`` over rows of embeddings (``swap``: the
    distance swap of Balntas et al., the negative's distance to the positive where that is smaller)."""
    reduction = _get_reduction(reduction, size_average, reduce)
    return _triplet(anchor, positive, negative, lambda x, y: pairwise_distance(x, y, p, eps), margin, swap,
                    reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """The triplet loss with any ``distance_function(x, y)`` (default ``pairwise_distance``)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance, margin, swap, reduction)


# ====================================================================== likelihood and margin losses composed of Tensor ops


@autocast_op("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Negative log-likelihood of ``target`` under a Poisson distribution of rate ``exp(input)`` (``log_input``)
    or ``input``; ``full`` adds Stirling's approximation of ``log(target!)`` where ``target > 1``."""
    reduction = _get_reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        # the approximation is computed on a copy with the small targets replaced, so that log(0) never runs
        big = target > 1
        t = where(big, target, 2.0)
        stirling = t * t.log() - t + 0.5 * (2 * math.pi * t).log()
        loss = loss + where(big, stirling, 0.0)
    return _apply_reduction(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Negative log-likelihood of ``target`` under normal distributions of mean ``input`` and variance ``var``
    (full size, or one value per row for the homoscedastic case), ``var`` clamped below by ``eps``."""
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(input.shape, float(var))
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and builtins.sum(
                v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass  # broadcastable with one dim of size 1: homoscedastic along it
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # NOTE: PyTorch clamps a copy in place under no_grad, so the clamp is invisible to autograd: the gradient
    # reaches var unchanged even where var < eps. Adding the clamp's change as a constant does the same.
    lifted = var.detach()
    var = var + (lifted.clamp_min(eps) - lifted)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _apply_reduction(loss, reduction)


@autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1, reduced."""
    reduction = _get_reduction(reduction, size_average, reduce)
    _check_broadcast(input, target)
    zeros = input.new_zeros(())
    margin_part = where(target != 1, (margin - input).clamp_min(0), zeros)
    self_part = where(target != -1, input, zeros)
    return _apply_reduction(margin_part + self_part, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class logistic loss for multi-label targets in {0, 1}, averaged over the classes (the last dim)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_get_string(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


@autocast_op("multi_margin_loss")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss: ``sum_{j != y} max(0, margin - x[y] + x[j]) ** p / C`` per sample (times
    ``weight[y]``), for scores of shape (C) or (N, C) and class indices ``y``."""
    reduction = _get_reduction(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    nd = input.dim()
    if nd > 2 or input.numel() == 0 and nd != 2:
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    x = input.reshape(1, -1) if nd < 2 else input
    n, c = x.shape
    if target.dtype is not _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype._scalar_name}")
    if target.dim() > 1 or target.numel() != n:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    y = target.reshape(n, 1)
    if n and bool(((y < 0) | (y >= c)).any()):
        raise RuntimeError("target out of range")
    # NOTE: relu, not clamp: PyTorch's kernel gives a term its gradient only where it is strictly positive
    z = (margin - x.gather(1, y) + x).relu()
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[y]
    own = y == arange(c, device=target.device)
    loss = where(own, 0.0, z).sum(1) / c
    if nd < 2:
        loss = loss.reshape(())
    return _apply_reduction(loss, reduction)
