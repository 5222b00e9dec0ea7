"""``kl_divergence(p, q)``: KL(p || q) in closed form, dispatched on the two distributions' classes, and
``register_kl`` to add a pair. The pairs are those PyTorch registers among the distributions here."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from .bernoulli import Bernoulli, _softplus
from .beta import Beta, _log_beta
from .categorical import Categorical
from .distribution import Distribution
from .gamma import Gamma, _xlogy
from .multivariate_normal import MultivariateNormal, solve_lower
from .normal import Normal
from .uniform import Uniform
from .utils import digamma, lgamma

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable[[Any, Any], Tensor]] = {}
_KL_MEMOIZE: dict[tuple[type, type], Callable[[Any, Any], Tensor] | None] = {}
_INF = math.inf


def register_kl(type_p: type, type_q: type) -> Callable[[Callable[[Any, Any], Tensor]], Callable[[Any, Any], Tensor]]:
    """Decorator registering ``fn(p, q)`` as KL(p || q) for instances of ``type_p`` and ``type_q`` (and their
    subclasses, where no more specific pair is registered)."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn: Callable[[Any, Any], Tensor]) -> Callable[[Any, Any], Tensor]:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn

    return decorator


def _dispatch(type_p: type, type_q: type) -> Callable[[Any, Any], Tensor] | None:
    """The registered pair closest to (type_p, type_q) in their method resolution orders."""
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return None
    best = min(matches, key=lambda pq: (type_p.__mro__.index(pq[0]), type_q.__mro__.index(pq[1])))
    return _KL_REGISTRY[best]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the distributions' batch shapes.

    >>> kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0))
    tensor(0.5000)
    """
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch(*key)
    fn = _KL_MEMOIZE[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fn(p, q)


def _infinite_like(t: Tensor) -> Tensor:
    return t.new_full(t.shape, _INF)


def _x_log_x(x: Tensor) -> Tensor:
    """x log x, 0 at x = 0."""
    return _xlogy(x, x)


def _expected_square_error(mean: Tensor, variance: Tensor, loc: Tensor) -> Tensor:
    """E[(X - loc)^2] for X of the given mean and variance."""
    return variance + (mean - loc).pow(2)


def _cross_entropy_normal(mean: Tensor, variance: Tensor, q: Normal) -> Tensor:
    """E_p[-log q(X)] for a normal q and any p of the given mean and variance."""
    var_q = q.scale.pow(2)
    return 0.5 * (2 * math.pi * var_q).log() + _expected_square_error(mean, variance, q.loc) / (2 * var_q)


# ---------------------------------------------------------------------- same family

@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (ratio + ((p.loc - q.loc) / q.scale).pow(2) - 1 - ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    kl = ((q.high - q.low) / (p.high - p.low)).log()
    return kl.masked_fill(q.low.gt(p.low).logical_or(q.high.lt(p.high)), _INF)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    # log sigmoid(l) = -softplus(-l) and log(1 - sigmoid(l)) = -softplus(l); 0 log 0 counts as 0
    ones = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    zeros = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    return ones.masked_fill(p.probs == 0, 0) + zeros.masked_fill(p.probs == 1, 0)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = t.masked_fill((q.probs == 0).expand_as(t), _INF)
    t = t.masked_fill((p.probs == 0).expand_as(t), 0)
    return t.sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    a, b, c, d = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    return (_log_beta(c, d) - _log_beta(a, b) + (a - c) * digamma(a) + (b - d) * digamma(b)
            + (c - a + d - b) * digamma(a + b))


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    a, b, c, d = p.concentration, p.rate, q.concentration, q.rate
    return (a - c) * digamma(a) - lgamma(a) + lgamma(c) + c * (b.log() - d.log()) + a * (d - b) / b


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    k = p.event_shape[0]
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    batch = tuple(p.batch_shape) if len(p.batch_shape) >= len(q.batch_shape) else tuple(q.batch_shape)
    Lq_b = Lq.expand(batch + (k, k))
    # tr(Sq^-1 Sp) = |Lq^-1 Lp|_F^2 and the Mahalanobis term |Lq^-1 (loc_q - loc_p)|^2
    trace = solve_lower(Lq_b, Lp.expand(batch + (k, k))).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(batch + (k,))
    maha = solve_lower(Lq_b, diff).pow(2).sum(-1)
    return 0.5 * (trace + maha - k) + q._half_log_det() - p._half_log_det()


# ---------------------------------------------------------------------- across families

@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    return -p.entropy() + _cross_entropy_normal(p.mean, p.variance, q)


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    return -p.entropy() + _cross_entropy_normal(p.mean, p.variance, q)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    return -p.entropy() + _cross_entropy_normal(p.mean, p.variance, q)


def _gamma_cross_entropy(mean: Tensor, mean_log: Tensor, q: Gamma) -> Tensor:
    """E_p[-log q(X)] for a gamma q and any p with E[X] = mean and E[log X] = mean_log."""
    a, b = q.concentration, q.rate
    return lgamma(a) - a * b.log() - (a - 1) * mean_log + b * mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    mean_log = digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)
    return -p.entropy() + _gamma_cross_entropy(p.mean, mean_log, q)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    width = p.high - p.low
    # bounds outside the gamma's support give inf below: clamped, they only keep log's argument valid
    low, high = p.low.clamp(min=0), p.high.clamp(min=0)
    mean_log = (_x_log_x(high) - _x_log_x(low) - width) / width
    kl = -p.entropy() + _gamma_cross_entropy(p.mean, mean_log, q)
    return kl.masked_fill(p.low < 0, _INF)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    width = p.high - p.low
    low, high = p.low.clamp(min=0, max=1), p.high.clamp(min=0, max=1)
    mean_log = (_x_log_x(high) - _x_log_x(low) - width) / width
    mean_log1m = (_x_log_x(1 - low) - _x_log_x(1 - high) - width) / width
    cross = _log_beta(q.concentration1, q.concentration0) - (q.concentration1 - 1) * mean_log \
        - (q.concentration0 - 1) * mean_log1m
    kl = -p.entropy() + cross
    return kl.masked_fill(p.high.gt(1).logical_or(p.low.lt(0)), _INF)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    kl = -p.entropy() + (q.high - q.low).log()
    return kl.masked_fill(q.low.gt(0).logical_or(q.high.lt(1)), _INF)


@register_kl(Gamma, Beta)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p: Gamma, q: Distribution) -> Tensor:
    return _infinite_like(p.concentration)


@register_kl(Normal, Beta)
@register_kl(Normal, Gamma)
@register_kl(Normal, Uniform)
def _kl_normal_infinity(p: Normal, q: Distribution) -> Tensor:
    return _infinite_like(p.loc)
