"""Dropout layers: active in training mode (``module.train()``), the identity in evaluation mode."""
from .. import functional as F
from ..functional.dropout import dropout_add
from ..module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` and scale the others by ``1 / (1 - p)`` while training."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def dropout_add(self, x, y):
        """``x + self(y)``: the residual connection around a sublayer this module drops out, in one pass on CUDA
        (``functional.dropout.dropout_add``) when calling the module would do nothing else (no hooks, no
        overridden forward, not in place). A minitorch_gpu extension, used by the transformer layers and the GPT
        block."""
        if self.inplace or type(self).forward is not Dropout.forward or self._has_call_hooks():
            return x + self(y)
        return dropout_add(x, y, self.p, self.training)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) / (C, L) inputs with probability ``p`` while training."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs with probability ``p`` while training."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) / (C, D, H, W) inputs with probability ``p`` while training."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the mean and variance of SELU activations."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """``AlphaDropout`` of whole channels."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
