"""Elementwise primitives: unary, binary and ternary maps, by name.

``unary(name, x, out=None)`` and ``binary(name, a, b, out=None)`` look the name up in a table of array
functions, so a backend with its own kernels overrides one method and keeps the rest.
"""


class ElementwiseMixin:
    # name -> attribute of xp; special cases are methods named _u_<name> / _b_<name>
    _UNARY = {
        "neg": "negative", "abs": "abs", "sign": "sign", "exp": "exp", "exp2": "exp2", "log": "log",
        "log2": "log2", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt", "sin": "sin", "cos": "cos",
        "tan": "tan", "tanh": "tanh", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
        "reciprocal": "reciprocal", "square": "square", "logical_not": "logical_not",
        "bitwise_not": "invert", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
    }
    _BINARY = {
        "add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "floor_divide": "floor_divide",
        "remainder": "remainder", "fmod": "fmod", "pow": "power", "maximum": "maximum", "minimum": "minimum",
        "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
        "ge": "greater_equal", "logical_and": "logical_and", "logical_or": "logical_or",
        "logical_xor": "logical_xor", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
        "bitwise_xor": "bitwise_xor", "atan2": "arctan2",
    }

    def unary(self, name, x, out=None):
        special = getattr(self, "_u_" + name, None)
        if special is not None:
            return special(x, out) if out is not None else special(x)
        fn = getattr(self.xp, self._UNARY[name])
        return fn(x) if out is None else fn(x, out=out)

    def binary(self, name, a, b, out=None):
        special = getattr(self, "_b_" + name, None)
        if special is not None:
            return special(a, b, out) if out is not None else special(a, b)
        fn = getattr(self.xp, self._BINARY[name])
        return fn(a, b) if out is None else fn(a, b, out=out)

    def where(self, cond, a, b):
        return self.xp.where(cond, a, b)

    def isnan_any(self, x):
        return bool(self.xp.isnan(x).any())
