"""The Bernoulli distribution over {0, 1}, by ``probs`` or ``logits``."""
from __future__ import annotations

import math
from typing import Any

from ..autograd.grad_mode import no_grad
from ..ops.elementwise import softplus
from ..ops.random import bernoulli as _bernoulli
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


def _softplus(x: Tensor) -> Tensor:
    """log(1 + e^x) without overflow, smooth at 0 (its gradient there is 1/2)."""
    return softplus(x, 1.0, math.inf)


class Bernoulli(Distribution):
    """1 with probability ``probs`` (or sigmoid(``logits``)), else 0; exactly one of the two is given.

    >>> Bernoulli(probs=mt.tensor(0.25)).log_prob(mt.tensor(1.0))
    tensor(-1.3863)
    """
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Bernoulli:
        new = self._expand_params(Bernoulli, batch_shape, _instance, ("probs", "logits"))
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new


    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return _bernoulli(self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # log sigmoid(l) for 1, log sigmoid(-l) for 0: the binary cross-entropy with logits, negated
        return value * logits - _softplus(logits)

    def entropy(self) -> Tensor:
        return _softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = self._param.new_tensor([0.0, 1.0]).reshape((2,) + (1,) * len(self.batch_shape))
        return values.expand((2,) + tuple(self.batch_shape)) if expand else values
