"""``mt.nn.init``: PyTorch's parameter initialisers.

Every initialiser fills its tensor in place under ``no_grad`` (so it may be applied to a leaf that requires
grad, and records nothing) and returns the same tensor. Samplers take ``generator=`` like PyTorch and draw
from that Generator's stream instead of the device's default one.
"""
import math
import warnings

from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (its ``nn.functional`` name): 1 for linear/conv/sigmoid, 5/3
    for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for leaky_relu (slope ``param``, default 0.01) and
    3/4 for selu."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif isinstance(param, float) or (isinstance(param, int) and not isinstance(param, bool)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        # PyTorch's empirically chosen value (pytorch/pytorch#50664), kept so inits agree
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill ``tensor`` with samples from U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill ``tensor`` with samples from N(mean, std**2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _norm_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill ``tensor`` with samples from N(mean, std**2) truncated to [a, b].

    Uses the inverse CDF: a uniform draw on [cdf(a), cdf(b)] mapped back through the normal quantile
    (``erfinv``). The mapping runs in float64 whatever the tensor's dtype, so a float16/float32 tensor does
    not lose the tails to rounding, and every element costs exactly one draw (reproducible stream use).
    Accurate while [a, b] lies within ~8 std of the mean; like PyTorch it warns when the mean is more than
    2 std outside [a, b]."""
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        if tensor.numel() == 0:
            return tensor
        lo = 2.0 * _norm_cdf((a - mean) / std) - 1.0
        hi = 2.0 * _norm_cdf((b - mean) / std) - 1.0
        from .. import _dtype
        from ..ops.creation import empty
        tmp = empty(tuple(tensor.shape), dtype=_dtype.float64, device=tensor.device)
        tmp.uniform_(lo, hi, generator=generator)
        tmp.erfinv_()
        tmp.mul_(std * math.sqrt(2.0)).add_(mean)
        # erfinv of values rounded to the ends of [lo, hi] can step a hair past the bounds
        tmp.clamp_(min=a, max=b)
        tensor.copy_(tmp)
    return tensor


def constant_(tensor, val):
    """Fill ``tensor`` with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill ``tensor`` with ones."""
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor):
    """Fill ``tensor`` with zeros."""
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fill a 2-d ``tensor`` with the identity matrix (ones on the main diagonal of a possibly non-square
    matrix)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..ops.creation import eye as _eye
    with no_grad():
        tensor.copy_(_eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-d convolution weight with the Dirac delta, so the convolution passes through as
    many input channels as possible (per group when ``groups > 1``)."""
    dims = tensor.ndimension()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    with no_grad():
        tensor.zero_()
        if min_dim == 0:
            return tensor
        from ..ops.creation import tensor as _tensor
        outs = [g * out_per_group + d for g in range(groups) for d in range(min_dim)]
        ins = [d for _ in range(groups) for d in range(min_dim)]
        # one scatter for all the ones instead of a Python-level write per channel
        index = [_tensor(outs, device=tensor.device), _tensor(ins, device=tensor.device)]
        index += [s // 2 for s in sizes[2:]]
        tensor[tuple(index)] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor):
    dims = tensor.dim()
    if dims < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    with no_grad():
        return tensor.uniform_(-bound, bound, generator=generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    with no_grad():
        return tensor.normal_(0.0, std, generator=generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan), gain from ``calculate_gain(nonlinearity,
    a)`` and fan the tensor's fan_in or fan_out (``mode``)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * (gain / math.sqrt(fan))
    with no_grad():
        return tensor.uniform_(-bound, bound, generator=generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std**2) with std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    with no_grad():
        return tensor.normal_(0, std, generator=generator)


def orthogonal_(tensor, gain=1.0, generator=None):
    """Fill ``tensor`` (at least 2-d; trailing dims are flattened) with a (semi-)orthogonal matrix times
    ``gain``: the Q factor of a Gaussian matrix, signs fixed by R's diagonal so Q is Haar-distributed.

    The QR factorisation runs in NumPy on the host, in float64: this is a one-off initialisation, not
    training compute, and no backend provides QR. The Gaussian draw itself comes from ``generator`` on
    the tensor's device, as in PyTorch."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    import numpy as np

    from ..ops.creation import tensor as _tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    with no_grad():
        flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        host = np.asarray(flat._be.to_numpy(flat._data), dtype=np.float64)
        if rows < cols:
            host = host.T
        q, r = np.linalg.qr(host)
        q *= np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        tensor.copy_(_tensor(np.ascontiguousarray(q), dtype=tensor.dtype, device=tensor.device).reshape(
            tuple(tensor.shape)))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-d ``tensor`` with N(0, std**2) samples, then zero ``ceil(sparsity * rows)`` randomly chosen
    entries of every column."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..ops.random import randperm
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        if num_zeros > 0:
            for col in range(cols):
                zero_rows = randperm(rows, generator=generator, device=tensor.device)[:num_zeros]
                tensor[zero_rows, col] = 0
    return tensor


def _deprecated(fn):
    new_name = fn.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    deprecated_init.__name__ = old_name
    deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated alias of :func:`{new_name}`."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
