"""The beta distribution Beta(concentration1, concentration0) on [0, 1]."""
from __future__ import annotations

from typing import Any

from ..ops.shape import stack
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .gamma import _StandardGamma, _xlogy
from .utils import broadcast_all, digamma, lgamma

__all__ = ["Beta"]


def _log_beta(a: Tensor, b: Tensor) -> Tensor:
    return lgamma(a) + lgamma(b) - lgamma(a + b)


class Beta(Distribution):
    """Beta(a = concentration1, b = concentration0): density x^(a-1) (1-x)^(b-1) / B(a, b) on [0, 1].
    Samples are X / (X + Y) for X ~ Gamma(a), Y ~ Gamma(b), reparameterised through both.

    >>> Beta(mt.tensor(2.0), mt.tensor(2.0)).mean
    tensor(0.5000)
    """
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        # kept under private names, as PyTorch keeps them inside a Dirichlet: its repr shows no parameters
        self._concentration1, self._concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self._concentration1.shape, validate_args=validate_args)

    @property
    def concentration1(self) -> Tensor:
        return self._concentration1

    @property
    def concentration0(self) -> Tensor:
        return self._concentration0

    def expand(self, batch_shape: Any, _instance: Any = None) -> Beta:
        return self._expand_params(Beta, batch_shape, _instance, ("_concentration1", "_concentration0"))


    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return (self.concentration1 - 1) / (self.concentration1 + self.concentration0 - 2)

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        both = _StandardGamma.apply(stack([self.concentration1.expand(shape), self.concentration0.expand(shape)], -1))
        return both.select(-1, 0) / both.sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return _xlogy(a - 1, value) + _xlogy(b - 1, 1 - value) - _log_beta(a, b)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return _log_beta(a, b) - (a - 1) * digamma(a) - (b - 1) * digamma(b) + (a + b - 2) * digamma(a + b)
