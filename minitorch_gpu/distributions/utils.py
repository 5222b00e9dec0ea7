"""Helpers the distributions share: broadcasting parameters, probabilities <-> logits, and the log-gamma and
digamma functions (the elementwise ops, under the names the distributions use)."""
from __future__ import annotations

from typing import Any

from .. import _dtype
from ..ops.creation import tensor as _tensor
from ..ops.shape import broadcast_tensors
from ..tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "digamma", "lazy_property", "lgamma", "logits_to_probs",
           "probs_to_logits"]

# the smallest relative step of each float dtype
_EPS = {_dtype.float16: 2.0 ** -10, _dtype.bfloat16: 2.0 ** -7, _dtype.float32: 2.0 ** -23,
        _dtype.float64: 2.0 ** -52}


# the most negative and the smallest positive normal value of each float dtype
_LOWEST = {_dtype.float16: -65504.0, _dtype.bfloat16: -3.3895313892515355e38,
           _dtype.float32: -3.4028234663852886e38, _dtype.float64: -1.7976931348623157e308}
_TINY = {_dtype.float16: 2.0 ** -14, _dtype.bfloat16: 2.0 ** -126, _dtype.float32: 2.0 ** -126,
         _dtype.float64: 2.0 ** -1022}


def eps(dt: Any) -> float:
    return _EPS[dt]


def lowest(dt: Any) -> float:
    return _LOWEST[dt]


def tiny(dt: Any) -> float:
    return _TINY[dt]


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Every value as a tensor of one broadcast shape; numbers take the first tensor's dtype and device (the
    default dtype when there is none)."""
    ref = next((v for v in values if isinstance(v, Tensor)), None)
    if ref is None:
        values = tuple(_tensor(float(v), dtype=_dtype.get_default_dtype()) for v in values)
    else:
        dt = ref.dtype if ref.dtype.is_floating_point else _dtype.get_default_dtype()
        values = tuple(v if isinstance(v, Tensor) else _tensor(float(v), dtype=dt, device=ref.device) for v in values)
    return tuple(broadcast_tensors(*values))


def clamp_probs(probs: Tensor) -> Tensor:
    e = eps(probs.dtype)
    return probs.clamp(min=e, max=1 - e)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    p = clamp_probs(probs)
    return p.log() - (-p).log1p() if is_binary else p.log()


class lazy_property:
    """A property computed on first use and then stored on the instance."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def lgamma(x: Tensor) -> Tensor:
    """log Gamma(x), elementwise (the ``lgamma`` op, with gradients of every order)."""
    return x.lgamma()


def digamma(x: Tensor) -> Tensor:
    """d/dx log Gamma(x), elementwise (the ``digamma`` op)."""
    return x.digamma()
