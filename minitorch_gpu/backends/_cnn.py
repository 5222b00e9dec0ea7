"""The layers of a convolutional network as backend primitives: convolution (forward and its two gradients),
max pooling (forward and backward) and training-mode batch norm (forward and backward).

A backend serves them where it has a faster way than the nn layer's composition of general primitives
(im2col views, batched products, scatters; ``nn/functional/conv.py``, ``pooling.py``, ``normalization.py``),
which remains the reference and what runs wherever a body here declines by returning None. These bodies
decline everything: the CPU backend serves the float32/float64 cases (``_cnn_cpu.py``), the CUDA backend
keeps the composition.

Geometry arguments: ``stride``, ``dilation`` per spatial dim, ``pads`` a (low, high) pair per spatial dim
(only the low side moves windows; a window may reach past the high side, which reads zeros), ``blocks`` the
output positions per spatial dim, weights laid out as PyTorch's ``(O, C / groups, *kernel)``.
"""
from __future__ import annotations

from collections.abc import Sequence

from ._types import Array, PrimitiveHost, Shape

Pads = Sequence[tuple[int, int]]


class CnnMixin(PrimitiveHost):
    def conv_forward(self, x: Array, w: Array, bias: Array | None, stride: Shape, pads: Pads, dilation: Shape,
                     groups: int, blocks: Shape) -> Array | None:
        """The convolution (N, O, *blocks) of ``x`` (N, C, *spatial) with ``w`` plus ``bias`` (O,) or None."""
        return None

    def conv_input_grad(self, g: Array, w: Array, stride: Shape, pads: Pads, dilation: Shape, groups: int,
                        x_shape: Shape) -> Array | None:
        """The gradient (``x_shape``) of the convolution's input from its output gradient ``g`` (N, O, *blocks):
        also the transposed convolution of ``g``."""
        return None

    def conv_weight_grad(self, g: Array, x: Array, stride: Shape, pads: Pads, dilation: Shape, groups: int,
                         w_shape: Shape) -> Array | None:
        """The gradient (``w_shape``) of the convolution's weight from its input ``x`` and output gradient
        ``g``."""
        return None

    def max_pool_forward(self, x: Array, kernel: Shape, stride: Shape, pads: Pads, dilation: Shape,
                         blocks: Shape) -> tuple[Array, Array] | None:
        """(max, flat int64 index within the input plane) of every window over the last ``len(kernel)`` dims of
        ``x``, as PyTorch picks them (NaN wins, ties go to the first element)."""
        return None

    def max_pool_backward(self, g: Array, indices: Array, x_shape: Shape, nspatial: int) -> Array | None:
        """The input gradient (``x_shape``) of a max pooling over the last ``nspatial`` dims, from the output
        gradient ``g`` and the forward's ``indices``: each output's gradient added at its flat in-plane index."""
        return None

    def batch_norm_forward(self, x: Array, weight: Array | None, bias: Array | None,
                           eps: float) -> tuple[Array, Array, Array, Array] | None:
        """Training batch norm of ``x`` (N, C, positions): (y, mean, biased variance, 1 / sqrt(var + eps)), the
        statistics as (C,) arrays in x's dtype."""
        return None

    def batch_norm_backward(self, g: Array, x: Array, weight: Array | None, mean: Array, rstd: Array,
                            needs: tuple[bool, bool, bool]) -> tuple[Array | None, Array | None,
                                                                      Array | None] | None:
        """(dx, dweight, dbias) of :meth:`batch_norm_forward` from its statistics, each None unless asked for in
        ``needs``."""
        return None
