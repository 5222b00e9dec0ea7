"""``Distribution``: the base of every distribution, with PyTorch's shapes, argument validation and
sampling API."""
from __future__ import annotations

import warnings
from typing import Any

from ..autograd.grad_mode import no_grad
from ..tensor import Size, Tensor
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


class Distribution:
    """A probability distribution over events of ``event_shape``, batched over ``batch_shape``.

    Subclasses set ``arg_constraints``, ``support`` and implement ``rsample`` (reparameterised, where gradients
    flow through samples) or ``sample``, ``log_prob``, ``entropy``, ``mean`` and ``variance``.
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions check their arguments and the values given to ``log_prob`` by default."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = Size(), event_shape: Any = Size(),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # a parameter derived from the one given: checking the given one is enough
                value = getattr(self, param)
                if not bool(constraint.check(value).all().item()):
                    raise ValueError(f"Expected parameter {param} ({type(value).__name__} of shape "
                                     f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                     f"{constraint!r}, but found invalid values:\n{_short(value, True)}")

    # ------------------------------------------------------------------ shapes
    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = Size()) -> Size:
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """The same distribution with its parameters broadcast to ``batch_shape`` (no copies)."""
        raise NotImplementedError

    def _expand_params(self, cls: type, batch_shape: Any, _instance: Any, names: tuple[str, ...],
                       keep: tuple[str, ...] = ()) -> Any:
        """``expand`` for ``cls``: the parameters ``names`` that this instance holds broadcast to ``batch_shape``
        (their event dims after it), the attributes ``keep`` shared as they are."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        n = len(self._batch_shape)
        for name in names:
            if name in self.__dict__:
                param = self.__dict__[name]
                setattr(new, name, param.expand(tuple(batch_shape) + tuple(param.shape[n:])))
        for name in keep:
            setattr(new, name, getattr(self, name))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and getattr(type(self), "__init__") is not getattr(cls, "__init__"):
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    # ------------------------------------------------------------------ what subclasses define
    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        raise NotImplementedError

    @property
    def support(self) -> Any:
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = Size()) -> Tensor:
        """A sample (no gradient) of shape ``sample_shape + batch_shape + event_shape``."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = Size()) -> Tensor:
        """A reparameterised sample: gradients flow through it to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    # ------------------------------------------------------------------ validation
    def _validate_sample(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        start = value.dim() - len(self._event_shape)
        if value.shape[start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {value.size()} vs "
                             f"{self._event_shape}.")
        expected = Size(tuple(self._batch_shape) + tuple(self._event_shape))
        for i, j in zip(reversed(value.shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {value.size()} vs "
                                 f"{expected}.")
        support = self.support
        if not bool(support.check(value).all().item()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{_short(value, True)}")

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(f"{p}: {_short(self.__dict__[p])}" for p in names)
        return f"{self.__class__.__name__}({args})"


def _short(t: Tensor, whole: bool = False) -> Any:
    """A tensor as PyTorch's messages format it: a 0-d one as its number, another one-element one as itself, a
    larger one as its shape (or itself, ``whole``)."""
    if t.dim() == 0:
        return t.item()
    return t if whole or t.numel() == 1 else t.size()
