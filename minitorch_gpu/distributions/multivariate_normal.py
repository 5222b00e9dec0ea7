"""The multivariate normal distribution N(loc, Sigma), parameterised by the covariance, the precision or a
lower Cholesky factor of the covariance."""
from __future__ import annotations

import math
from typing import Any

from .._shapes import broadcast_shapes
from ..ops.decomposition import cholesky, inv, solve
from ..ops.random import randn
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def solve_lower(L: Tensor, B: Tensor) -> Tensor:
    """L^-1 B for lower triangular L, read from its lower triangle only (as a triangular solve reads it), so no
    gradient reaches the entries above the diagonal."""
    return solve(L.tril(), B)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors of size k: exactly one of ``covariance_matrix`` (Sigma), ``precision_matrix``
    (Sigma^-1) and ``scale_tril`` (L, lower triangular, Sigma = L L^T) is given; batch dims broadcast.

    >>> MultivariateNormal(mt.zeros(2), scale_tril=mt.eye(2)).entropy()
    tensor(2.8379)
    """
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None, precision_matrix: Tensor | None = None,
                 scale_tril: Tensor | None = None, validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = scale_tril if scale_tril is not None else covariance_matrix if covariance_matrix is not None \
            else precision_matrix
        assert given is not None
        if given.dim() < 2:
            which = "scale_tril" if scale_tril is not None else "covariance_matrix" if covariance_matrix is not None \
                else "precision_matrix"
            raise ValueError(f"{which} matrix must be at least two-dimensional, with optional leading batch "
                             "dimensions")
        batch_shape = Size(broadcast_shapes(given.shape[:-2], loc.shape[:-1]))
        event_shape = Size(loc.shape[-1:])
        matrix_shape = tuple(batch_shape) + tuple(event_shape) * 2
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(matrix_shape)
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(matrix_shape)
        else:
            assert precision_matrix is not None
            self.precision_matrix = precision_matrix.expand(matrix_shape)
        self.loc = loc.expand(tuple(batch_shape) + tuple(event_shape))
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        # the factor itself, unbroadcast: its batch dims are those it was given
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = cholesky(inv(precision_matrix))

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        return self._expand_params(MultivariateNormal, batch_shape, _instance,
                                   ("loc", "covariance_matrix", "scale_tril", "precision_matrix"),
                                   keep=("_unbroadcasted_scale_tril",))


    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L_inv = inv(self._unbroadcasted_scale_tril)
        return (L_inv.mT @ L_inv).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape) +
                                                                    tuple(self._event_shape))

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        # eps L^T row by row: with an unbatched L one matrix product over every sample
        return self.loc + (eps.unsqueeze(-2) @ self._unbroadcasted_scale_tril.mT).squeeze(-2)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(0, -2, -1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        # the squared Mahalanobis distance |L^-1 (x - loc)|^2, with L broadcast over the value's batch dims
        shape = broadcast_shapes(L.shape[:-2], diff.shape[:-1])
        z = solve_lower(L.expand(tuple(shape) + tuple(L.shape[-2:])), diff.expand(tuple(shape) + tuple(diff.shape[-1:])))
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + z.pow(2).sum(-1)) - self._half_log_det()

    def entropy(self) -> Tensor:
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
