"""``Parameter``: the Tensor subclass that a Module registers as learnable state, and ``Buffer``, a tensor
marked to be registered as (non-learnable) module state."""
from ..autograd.function import VersionCounter
from ..tensor import Tensor

__all__ = ["Parameter", "Buffer"]


def _empty():
    from ..ops.creation import empty
    return empty(0)


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it as a Module attribute registers it, so it shows up in
    ``parameters()`` and ``state_dict()``. Shares memory (and version counter) with ``data``; requires grad
    by default, even under ``no_grad``. Results of ops on a Parameter are plain Tensors."""

    _is_param = True

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _empty()
        elif not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' (position 1) must be Tensor, not {type(data).__name__}")
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t = Tensor._make.__func__(cls, data._data, data._be, bool(requires_grad))
        # the parameter aliases data's memory, so in-place writes through either are one history
        if data._vc is None:
            data._vc = VersionCounter()
        t._vc = data._vc
        t._inference = data._inference
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        # like PyTorch: a fresh Parameter holding a copy of the values; .grad is not carried over
        found = memo.get(id(self))
        if found is not None:
            return found
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result


class _BufferMeta(type):
    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False) is True


class Buffer(metaclass=_BufferMeta):
    """``Buffer(data, persistent=True)``: ``data`` detached, flagged so that assigning it as a Module
    attribute registers it as a buffer (persistent ones go into ``state_dict``). The result is a plain Tensor;
    ``isinstance(t, Buffer)`` recognises the flag."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _empty()
        t = data.detach()
        if data.requires_grad:
            t.requires_grad_(True)
        t.persistent = persistent
        t._is_buffer = True
        return t
