"""``torch.distributions``: Normal, Uniform, Bernoulli, Categorical, MultivariateNormal, Gamma and Beta, with
sampling from the default generators (``manual_seed``), log-densities, entropies, moments and
``kl_divergence``.

>>> import minitorch_gpu as torch
>>> from minitorch_gpu.distributions import Normal, kl_divergence
>>> kl_divergence(Normal(0.0, 1.0), Normal(0.0, 2.0))
tensor(0.3181)
"""
from . import constraints
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .distribution import Distribution
from .gamma import Gamma
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Distribution", "Gamma", "MultivariateNormal", "Normal", "Uniform",
           "constraints", "kl_divergence", "register_kl"]
