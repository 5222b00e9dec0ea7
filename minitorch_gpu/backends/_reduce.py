"""Reduction primitives: sum, mean, prod, max, min, ... over an axis tuple, plus softmax-style ops."""


class ReduceMixin:
    def reduce(self, name, x, axis=None, keepdims=False, dtype=None):
        """``name`` in sum, prod, mean, max, min, any, all, argmax, argmin."""
        fn = getattr(self.xp, name)
        if dtype is not None:
            return fn(x, axis=axis, keepdims=keepdims, dtype=dtype)
        return fn(x, axis=axis, keepdims=keepdims)
