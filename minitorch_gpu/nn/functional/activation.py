"""Activation functions of ``nn.functional``: relu and its relatives, gelu, silu, mish, the elu family, the
hard and shrink functions, softplus / logsigmoid, glu, prelu, and the softmax family.

Activations that ``ops/elementwise.py`` and ``ops/reduction.py`` already provide (relu, gelu, silu, softplus,
leaky_relu, elu, hardtanh, softmax, log_softmax) are used from there, with ``nn.functional``'s argument
handling (``inplace``, the implicit softmax dim) added. The others are ``Op`` nodes named like PyTorch's:
one backend pass forward, a backward written in Tensor ops so that it can be differentiated again. The
few that PyTorch itself composes from other ops (softsign, tanhshrink, glu, prelu) are compositions here too.
"""
import warnings

from ...autograd.node import Op
from ...ops import elementwise as _E
from ...ops import random as _random
from ...ops.creation import empty_like
from ...ops import reduction as _R
from ...autograd._inplace import apply_inplace
from ...ops._util import check_tensor, wrap_dim
from ...ops._autocast import autocast_op

__all__ = ["relu", "relu_", "relu6", "gelu", "silu", "mish", "sigmoid", "tanh", "softplus", "leaky_relu",
           "leaky_relu_", "rrelu", "rrelu_", "elu", "elu_", "selu", "selu_", "celu", "celu_", "hardtanh", "hardtanh_", "hardswish",
           "hardsigmoid", "softsign", "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_",
           "logsigmoid", "glu", "prelu", "softmax", "log_softmax", "softmin"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
# the largest finite value per float dtype, which PyTorch's shrink functions print in their bound check
_FLOAT_MAX = {"float16": "65504", "bfloat16": "3.38953e+38", "float32": "3.40282e+38",
              "float64": "1.79769e+308"}


def _need_float(input, kernel):
    """PyTorch's kernels for these activations exist for floating dtypes only."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}_{input.device.type}\" not implemented for "
                                  f"'{input.dtype._scalar_name}'")


def _scalar(v, arr):
    """A Python number as the backend should see it next to ``arr`` (NEP 50 keeps arr's dtype)."""
    return float(v) if arr.dtype.kind in "fV" else v


# ====================================================================== relu family

def relu(input, inplace=False):
    """max(input, 0), elementwise."""
    if inplace:
        return input.relu_()
    return _E.relu(input)


def relu_(input):
    """In-place ``relu``."""
    return input.relu_()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``input`` clamped to [min_val, max_val]; the gradient is zero at and beyond the bounds."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _E.hardtanh(input, min_val, max_val, inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place ``hardtanh``."""
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    """min(max(input, 0), 6), elementwise (PyTorch's node is HardtanhBackward0 as well)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """input where input > 0, else ``negative_slope * input``."""
    _need_float(input, "leaky_relu")
    return _E.leaky_relu(input, negative_slope, inplace)


def leaky_relu_(input, negative_slope=0.01):
    """In-place ``leaky_relu``."""
    return leaky_relu(input, negative_slope, True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training each element at or below 0 is scaled by its own slope drawn uniformly
    from [lower, upper] (the gradient sees the same slope); in evaluation by the mean slope (lower + upper) / 2."""
    _need_float(input, "rrelu_with_noise")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = _random.uniform_(empty_like(input), lower, upper)
    if inplace:
        return apply_inplace(input, _rrelu_train, slope)
    return _rrelu_train(input, slope)


def _rrelu_train(input, slope):
    return _E.where(input > 0, input, input * slope)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, True)


class ThresholdBackward0(Op):
    def forward(self, x, threshold, value):
        self.save_for_backward(x)
        self.threshold = threshold
        be = x._be
        d = x._data
        # PyTorch replaces x <= threshold: a NaN input stays NaN, and passes its gradient
        return be.where(be.binary("le", d, _scalar(threshold, d)), _E._scalar_for(value, d.dtype), d)

    def backward(self, g):
        x, = self.saved_tensors
        return (_E.where(x <= self.threshold, 0.0, g),)


def threshold(input, threshold, value, inplace=False):
    """input where input > threshold, else ``value``."""
    if inplace:
        return apply_inplace(input, _threshold, threshold, value)
    return _threshold(input, threshold, value)


def _threshold(input, threshold, value):
    return ThresholdBackward0.apply(input, threshold=threshold, value=value)


def threshold_(input, threshold, value):
    """In-place ``threshold``."""
    return apply_inplace(input, _threshold, threshold, value)


# ====================================================================== smooth activations

def gelu(input, approximate="none"):
    """x * Phi(x) (Phi the standard normal CDF); ``approximate='tanh'`` uses the tanh approximation."""
    return _E.gelu(input, approximate)


def silu(input, inplace=False):
    """x * sigmoid(x) (also called swish)."""
    _need_float(input, "silu")
    return _E.silu(input, inplace)


def sigmoid(input):
    """1 / (1 + exp(-input)); integer inputs give the default float dtype."""
    return _E.sigmoid(input)


def tanh(input):
    """Hyperbolic tangent; integer inputs give the default float dtype."""
    return _E.tanh(input)


@autocast_op("softplus")
def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold."""
    _need_float(input, "softplus")
    return _E.softplus(input, beta, threshold)


class MishBackward0(Op):
    def forward(self, x):
        self.save_for_backward(x)
        be = x._be
        d = x._data
        return be.binary("mul", d, be.unary("tanh", be.softplus(d, 1.0, 20.0)))

    def backward(self, g):
        x, = self.saved_tensors
        t = _E.softplus(x).tanh()
        return (g * (t + x * (1 - t * t) * x.sigmoid()),)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    _need_float(input, "mish")
    if inplace:
        return apply_inplace(input, MishBackward0.apply)
    return MishBackward0.apply(input)


class LogSigmoidBackward0(Op):
    def forward(self, x):
        self.save_for_backward(x)
        be = x._be
        d = x._data
        # min(x, 0) - log1p(exp(-|x|)): exp never overflows, and large |x| loses nothing
        tail = be.unary("log1p", be.unary("exp", be.unary("neg", be.unary("abs", d))))
        return be.binary("sub", be.binary("minimum", d, _scalar(0, d)), tail)

    def backward(self, g):
        x, = self.saved_tensors
        return (g * (-x).sigmoid(),)


def logsigmoid(input):
    """log(sigmoid(input)), computed without overflow."""
    _need_float(input, "log_sigmoid")
    return LogSigmoidBackward0.apply(input)


# ====================================================================== the elu family

# selu's node is elu's (PyTorch computes selu with its elu kernel and names the node after it)
EluBackward0 = _E.EluBackward0


class CeluBackward0(_E.EluBackward0):
    pass


def elu(input, alpha=1.0, inplace=False):
    """input where input > 0, else alpha * (exp(input) - 1)."""
    _need_float(input, "elu")
    return _E.elu(input, alpha, inplace)


def elu_(input, alpha=1.0):
    """In-place ``elu``."""
    return elu(input, alpha, True)


def _selu(input):
    return EluBackward0.apply(input, alpha=_SELU_ALPHA, scale=_SELU_SCALE, input_scale=1.0)


def selu(input, inplace=False):
    """scale * elu(input, alpha) with the self-normalising constants alpha ~ 1.6733, scale ~ 1.0507."""
    _need_float(input, "elu")
    if inplace:
        return apply_inplace(input, _selu)
    return _selu(input)


def selu_(input):
    """In-place ``selu``."""
    return selu(input, True)


def _celu(input, alpha):
    return CeluBackward0.apply(input, alpha=alpha, scale=1.0, input_scale=1.0 / alpha)


def celu(input, alpha=1.0, inplace=False):
    """input where input > 0, else alpha * (exp(input / alpha) - 1)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    _need_float(input, "elu")
    if inplace:
        return apply_inplace(input, _celu, alpha)
    return _celu(input, alpha)


def celu_(input, alpha=1.0):
    """In-place ``celu``."""
    return celu(input, alpha, True)


# ====================================================================== hard and shrink functions

class HardswishBackward0(Op):
    def forward(self, x):
        self.save_for_backward(x)
        be = x._be
        d = x._data
        r = be.clamp(be.binary("add", d, _scalar(3, d)), _scalar(0, d), _scalar(6, d))
        return be.binary("div", be.binary("mul", d, r), _scalar(6, d))

    def backward(self, g):
        x, = self.saved_tensors
        # PyTorch's branches: zero at and below -3, the slope below 3, the gradient itself from 3 on (and for NaN)
        return (_E.where(x <= -3, 0.0, _E.where(x < 3, g * (x / 3 + 0.5), g)),)


# PyTorch's hardsigmoid gradient multiplies by the C float 1.0f / 6.0f in every dtype (float64 included)
_ONE_SIXTH_F32 = 0.1666666716337204


class HardsigmoidBackward0(Op):
    def forward(self, x):
        self.save_for_backward(x)
        be = x._be
        d = x._data
        r = be.clamp(be.binary("add", d, _scalar(3, d)), _scalar(0, d), _scalar(6, d))
        return be.binary("div", r, _scalar(6, d))

    def backward(self, g):
        x, = self.saved_tensors
        return (_E.where((x > -3) & (x < 3), g * _ONE_SIXTH_F32, 0.0),)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    _need_float(input, "hardswish")
    if inplace:
        return apply_inplace(input, HardswishBackward0.apply)
    return HardswishBackward0.apply(input)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    _need_float(input, "hardsigmoid")
    if inplace:
        return apply_inplace(input, HardsigmoidBackward0.apply)
    return HardsigmoidBackward0.apply(input)


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def _check_lambd(input, lambd):
    if not lambd >= 0:
        name = input.dtype.name
        raise RuntimeError(f"lambda must be in range [0, {_FLOAT_MAX.get(name, '3.40282e+38')}] for input dtype "
                           f"{input.dtype._scalar_name}, but found {lambd:g}")


class SoftshrinkBackward0(Op):
    def forward(self, x, lambd):
        self.save_for_backward(x)
        self.lambd = lambd
        be = x._be
        d = x._data
        lo = _scalar(lambd, d)
        # x - clamp(x, -lambd, lambd): x - lambd above, x + lambd below, 0 in between, with x's sign there (PyTorch
        # writes it x * 0: softshrink(-0.5) is -0.0); elsewhere the result has x's sign already
        return be.binary("copysign", be.binary("sub", d, be.clamp(d, -lo, lo)), d)

    def backward(self, g):
        x, = self.saved_tensors
        return (_E.where(x.abs() <= self.lambd, 0.0, g),)  # a NaN input passes the gradient


class HardshrinkBackward0(Op):
    def forward(self, x, lambd):
        self.save_for_backward(x)
        self.lambd = lambd
        be = x._be
        d = x._data
        # PyTorch zeroes |x| <= lambd: a NaN input stays NaN
        return be.where(be.binary("le", be.unary("abs", d), _scalar(lambd, d)), _scalar(0, d), d)

    def backward(self, g):
        x, = self.saved_tensors
        return (_E.where(x.abs() <= self.lambd, 0.0, g),)  # a NaN input passes the gradient


def softshrink(input, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""
    _need_float(input, "softshrink")
    _check_lambd(input, lambd)
    return SoftshrinkBackward0.apply(input, lambd=lambd)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    _need_float(input, "hardshrink")
    return HardshrinkBackward0.apply(input, lambd=lambd)


# ====================================================================== gated and parametric

def glu(input, dim=-1):
    """a * sigmoid(b), where a and b are the two halves of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.dim())
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


@autocast_op("prelu")
def prelu(input, weight):
    """input where input > 0, else ``weight * input``; ``weight`` has one element or one per channel
    (dim 1 of the input)."""
    check_tensor(weight, "prelu", "weight", 2)
    n = weight.numel()
    if n == 1:
        w = weight.reshape(())
    else:
        nd = input.dim()
        channels = input.shape[1] if nd >= 2 else 1
        if n != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
        w = weight.reshape((n,) + (1,) * (nd - 2))
    return _E.where(input > 0, input, input * w)


# ====================================================================== softmax family

def _get_softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


@autocast_op("softmax")
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``; ``dtype`` casts the input first (useful against overflow in
    half precision). Without ``dim`` the legacy implicit choice applies, with a warning."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return _R.softmax(input, dim, dtype=dtype)


@autocast_op("log_softmax")
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along ``dim``, computed directly (stable for very negative logits)."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _R.log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return _R.softmax(-input, dim, dtype=dtype)

