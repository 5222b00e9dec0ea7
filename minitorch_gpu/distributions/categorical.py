"""The categorical distribution over {0, ..., K-1}, by ``probs`` or ``logits`` (the last dim)."""
from __future__ import annotations

from typing import Any

from .._shapes import broadcast_shapes
from ..autograd.grad_mode import no_grad
from ..ops.random import multinomial
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, lowest, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Category k with probability ``probs[..., k]`` (normalised), or softmax(``logits``)[..., k]; exactly one
    of the two is given, its last dim indexes the categories and the others are the batch.

    >>> Categorical(probs=mt.tensor([0.25, 0.75])).log_prob(mt.tensor(1))
    tensor(-0.2877)
    """
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self._param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            self._param = self.logits
        self._num_events = self._param.size()[-1]
        batch = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        new = self._expand_params(Categorical, batch_shape, _instance, ("probs", "logits"), keep=("_num_events",))
        new._param = new.probs if "probs" in self.__dict__ else new.logits
        return new


    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        return self.probs.new_full(self._extended_shape(), float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return self.probs.new_full(self._extended_shape(), float("nan"))

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        sample_shape = Size(sample_shape)
        n = sample_shape.numel()
        with no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            drawn = multinomial(probs_2d, n, True).T
        return drawn.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = broadcast_shapes(value.shape[:-1], self.logits.shape[:-1])
        value = value.expand(shape + (1,))
        logits = self.logits.expand(shape + (self._num_events,))
        return logits.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        # a category of probability 0 adds 0 (its logit is -inf): clamping the logit keeps 0 * -inf out
        logits = self.logits.clamp(min=lowest(self.logits.dtype))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = self._param.new_tensor(list(range(self._num_events))).long()
        values = values.reshape((-1,) + (1,) * len(self.batch_shape))
        return values.expand((-1,) + tuple(self.batch_shape)) if expand else values

