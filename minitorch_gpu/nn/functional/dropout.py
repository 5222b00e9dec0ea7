"""Dropout: ``dropout``, the channel-wise ``dropout1d`` / ``dropout2d`` / ``dropout3d``, and
``alpha_dropout`` / ``feature_alpha_dropout`` (for SELU networks).

In training, each element (or each whole channel) is kept with probability ``1 - p`` and scaled by
``1 / (1 - p)`` so that the expected value is unchanged. The mask is drawn from the device's default
generator (``mt.manual_seed`` makes it reproducible). Outside training, with ``p == 0`` or an empty input,
the input itself is returned, as in PyTorch.

Two forms, chosen as PyTorch chooses between ``native_dropout`` and its composite (on CUDA, 0 < p < 1, a
non-empty floating input): on CUDA one ``rand_dropout`` pass draws the mask and applies it
(``NativeDropoutBackward0``), and the backward replays the same Philox blocks on the gradient, so no mask is
stored; elsewhere the mask is drawn, scaled and multiplied in (``MulBackward0``). Both read word ``i`` of the
stream for element ``i``, so one seed gives the same result on either device. ``dropout_add(x, y, p)`` is
``x + dropout(y, p)`` in one pass where the fused form applies (the residual connections of the transformer
layers and the GPT block).
"""
import math
import warnings

from ... import _dtype
from ...autograd._inplace import apply_inplace
from ...autograd.node import Op
from ...ops import random as _random
from ...tensor import Tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_SELU_ALPHA_PRIME = 1.7580993408473766  # -scale * alpha of SELU: the value a dropped unit takes


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, shape):
    """1 with probability ``1 - p`` else 0, of ``shape``, in the input's (floating) dtype."""
    be = input._be
    npd = input._data.dtype
    if npd.kind not in "fV":
        npd = be.np_dtype(_dtype.get_default_dtype())
    gen = _random._generator(None, be)
    return gen._draw(be.rand_bernoulli, shape, 1.0 - p, npd)


def _feature_shape(input, batched):
    """The mask shape of channel-wise dropout: one value per (sample, channel), or per channel for an
    unbatched input."""
    shape = input._data.shape
    lead = 2 if batched else 1
    if len(shape) < lead:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return shape[:lead] + (1,) * (len(shape) - lead)


class NativeDropoutBackward0(Op):
    """``x * mask / (1 - p)`` with the mask drawn from the blocks at (seed, offset) of the stream; the backward is
    the same op on the gradient with the same blocks (the gradient of a mask multiply is the same multiply).
    ``rng_state``: under CUDA-graph capture, the graph's device copy of the generator's state (``_claim``)."""

    def forward(self, x, p, seed, offset, rng_state=None):
        self.p, self.seed, self.offset, self.rng_state = p, seed, offset, rng_state
        return x._be.rand_dropout(seed, offset, x._data, p, rng_state=rng_state)[0]

    def backward(self, g):
        return (NativeDropoutBackward0.apply(g, p=self.p, seed=self.seed, offset=self.offset,
                                             rng_state=self.rng_state),)


class DropoutAddBackward0(Op):
    """``x + y * mask / (1 - p)`` in one pass; x's gradient is the incoming one, y's the dropout of it."""

    def forward(self, x, y, p, seed, offset, rng_state=None):
        self.p, self.seed, self.offset, self.rng_state = p, seed, offset, rng_state
        return x._be.rand_dropout(seed, offset, y._data, p, x._data, rng_state=rng_state)[0]

    def backward(self, g):
        needs_x, needs_y = self.needs_input_grad
        gy = NativeDropoutBackward0.apply(g, p=self.p, seed=self.seed, offset=self.offset,
                                          rng_state=self.rng_state) if needs_y else None
        return (g if needs_x else None), gy


def _fusable(input, p):
    """Whether dropout of ``input`` takes the one-pass form (PyTorch's rule for its fused kernel)."""
    return input.is_cuda and 0.0 < p < 1.0 and input.dtype.is_floating_point and input.numel() > 0


def _claim(input):
    """(seed, offset, rng_state) of the device's default generator for one word per element of ``input``."""
    return _random._generator(None, input._be)._claim((input.numel() + 3) // 4)


def _native_dropout(input, p):
    seed, offset, rng_state = _claim(input)
    return NativeDropoutBackward0.apply(input, p=p, seed=seed, offset=offset, rng_state=rng_state)


def _dropout_impl(input, p, training, inplace, batched=None, alpha=False):
    """Dropout of elements, or of channels when ``batched`` is given (True: dims 0 and 1 are sample and
    channel; False: dim 0 is the channel)."""
    if p == 0 or not training or input.numel() == 0:
        return input
    if batched is None and not alpha and _fusable(input, p):
        return apply_inplace(input, _native_dropout, p) if inplace else _native_dropout(input, p)
    be = input._be
    if p == 1:
        zero = Tensor._make(be.zeros((), input._data.dtype), be)
        return input.mul_(zero) if inplace else input * zero
    mask = _keep_mask(input, p, input._data.shape if batched is None else _feature_shape(input, batched))
    if not alpha:
        be.binary("mul", mask, 1.0 / (1.0 - p), out=mask)
        noise = Tensor._make(mask, be)
        return input.mul_(noise) if inplace else input * noise
    # kept units are scaled by a and dropped ones set to the SELU saturation value, then shifted, so
    # that zero-mean unit-variance inputs keep their mean and variance
    a = 1.0 / math.sqrt((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
    shift = be.binary("add", be.binary("mul", be.binary("sub", mask, 1.0), _SELU_ALPHA_PRIME * a),
                      _SELU_ALPHA_PRIME * a * p)
    be.binary("mul", mask, a, out=mask)
    noise, b = Tensor._make(mask, be), Tensor._make(shift, be)
    if inplace:
        return input.mul_(noise).add_(b)
    return input * noise + b


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` (in training only).

    >>> dropout(mt.ones(4), 0.5, training=False)
    tensor([1., 1., 1., 1.])
    """
    _check_p(p)
    return _dropout_impl(input, p, training, inplace)


def dropout_add(x, y, p=0.5, training=True):
    """``x + dropout(y, p, training)``, in one pass on CUDA when ``x`` and ``y`` have one shape and floating dtype:
    the residual connection around a dropped-out sublayer. The gradient reaches ``x`` unchanged and ``y``
    through the mask, which the backward regenerates. (A minitorch_gpu extension; PyTorch has no public form.)

    >>> dropout_add(mt.ones(3), mt.ones(3), 0.5, training=False)
    tensor([2., 2., 2.])
    """
    _check_p(p)
    if training and isinstance(x, Tensor) and isinstance(y, Tensor) and _fusable(y, p) and \
            x.dtype is y.dtype and x.shape == y.shape and x.device == y.device:
        seed, offset, rng_state = _claim(y)
        return DropoutAddBackward0.apply(x, y, p=p, seed=seed, offset=offset, rng_state=rng_state)
    return x + dropout(y, p, training)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, L) or (C, L) input with probability ``p``."""
    _check_p(p)
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that dropout1d "
                           "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _dropout_impl(input, p, training, inplace, nd == 3)


def _feature_warning(name, nd, dims):
    warnings.warn(f"{name}: Received a {nd}-D input to {name}, which is deprecated and will result in an error in "
                  "a future release. To retain the behavior and silence this warning, please use dropout instead. "
                  f"Note that {name} exists to provide channel-wise dropout on inputs with {dims[0] - 2} spatial "
                  f"dimensions, a channel dimension, and an optional batch dimension (i.e. {dims[0]}D or "
                  f"{dims[1]}D inputs).", stacklevel=3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, H, W) input with probability ``p`` (a 3-D input is taken as
    (N, C, L), as PyTorch still does)."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        _feature_warning("dropout2d", nd, (3, 4))
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    _check_p(p)
    nd = input.dim()
    if nd not in (4, 5):
        _feature_warning("dropout3d", nd, (4, 5))
    return _dropout_impl(input, p, training, inplace, nd == 5)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units take SELU's negative saturation value and the result is
    scaled and shifted to keep zero mean and unit variance."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, alpha=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` of whole channels."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, True, alpha=True)
