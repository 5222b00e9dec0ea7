"""dtype objects and PyTorch's type-promotion rules.

A dtype is a small immutable object compared by identity (``x.dtype is mt.float32``), as in PyTorch.
Each maps to a NumPy dtype; CuPy uses the same NumPy dtypes, so the mapping serves both backends.
"""
import builtins

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
    "int32", "int", "int16", "short", "int8", "uint8", "bool", "get_default_dtype", "set_default_dtype",
    "promote_types", "result_type", "can_cast", "is_floating_point",
]

# categories order the "kinds" of PyTorch's promotion: a higher category always wins over a lower one
_BOOL, _INT, _FLOAT = 0, 1, 2


class dtype:
    """A tensor element type (``mt.float32``, ``mt.int64``, ...); compare with ``is``."""

    __slots__ = ("name", "np_dtype", "itemsize", "is_floating_point", "is_signed", "_category", "_tensor_name",
                 "_scalar_name", "_cpp_name", "_cpp_typeid_name")

    is_complex = False

    def __init__(self, name, np_dtype, category, tensor_name, cpp_name, cpp_typeid_name):
        self.name = name
        self.np_dtype = np_dtype
        self.itemsize = np_dtype.itemsize
        self.is_floating_point = category == _FLOAT
        self.is_signed = name not in ("uint8", "bool")
        self._category = category
        self._tensor_name = tensor_name
        # PyTorch's ScalarType name, used in its error messages ("not implemented for 'Long'")
        self._scalar_name = tensor_name[:-len("Tensor")]
        # the C++ type PyTorch's kernels name in their messages ("expected scalar type c10::Half"), and the
        # same type as GCC's typeid spells it, which other messages print ("but got long int instead")
        self._cpp_name = cpp_name
        self._cpp_typeid_name = cpp_typeid_name

    def __repr__(self):
        return f"minitorch_gpu.{self.name}"

    def __reduce__(self):
        # dtypes are singletons: unpickling and deepcopy must give back the same object
        return (_lookup, (self.name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def to_real(self):
        return self

    def to_complex(self):
        raise TypeError(f"complex dtypes are not supported (from {self})")


float32 = dtype("float32", np.dtype(np.float32), _FLOAT, "FloatTensor", "float", "float")
float64 = dtype("float64", np.dtype(np.float64), _FLOAT, "DoubleTensor", "double", "double")
float16 = dtype("float16", np.dtype(np.float16), _FLOAT, "HalfTensor", "c10::Half", "c10::Half")
# NumPy's bfloat16 is ml_dtypes' (a core dependency; CuPy 14 uses the same type)
bfloat16 = dtype("bfloat16", np.dtype(ml_dtypes.bfloat16), _FLOAT, "BFloat16Tensor", "c10::BFloat16", "c10::BFloat16")
int64 = dtype("int64", np.dtype(np.int64), _INT, "LongTensor", "int64_t", "long int")
int32 = dtype("int32", np.dtype(np.int32), _INT, "IntTensor", "int", "int")
int16 = dtype("int16", np.dtype(np.int16), _INT, "ShortTensor", "int16_t", "short int")
int8 = dtype("int8", np.dtype(np.int8), _INT, "CharTensor", "int8_t", "signed char")
uint8 = dtype("uint8", np.dtype(np.uint8), _INT, "ByteTensor", "uint8_t", "unsigned char")
bool = dtype("bool", np.dtype(np.bool_), _BOOL, "BoolTensor", "bool", "bool")  # noqa: A001 - PyTorch's name

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16

_ALL = (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool)
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
                 "short": int16})
_BY_NP = {d.np_dtype: d for d in _ALL}
# legacy tensor-type names, as accepted by ``Tensor.type('torch.DoubleTensor')``
_BY_TENSOR_NAME = {d._tensor_name: d for d in _ALL}


def _lookup(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype):
    """The dtype for a NumPy dtype; TypeError for kinds PyTorch has no tensor type for."""
    d = _BY_NP.get(np_dtype)
    if d is not None:
        return d
    try:
        d = _BY_NP.get(np.dtype(np_dtype))
    except TypeError:
        d = None
    if d is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).name}. The only supported types are: "
            "float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8, and bool.")
    return d


def to_dtype(d):
    """Accept a dtype, a NumPy dtype, a Python type or a dtype name, as factories do."""
    if d.__class__ is dtype:
        return d
    if d is builtins.float:
        return float64  # PyTorch maps the Python type float to double, whatever the default dtype
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    try:
        return from_numpy_dtype(d)
    except (TypeError, ValueError):
        raise TypeError(f"dtype must be a minitorch_gpu.dtype, not {d!r}") from None


_default = [float32]


def get_default_dtype():
    """The dtype Python floats and float factories use (float32 unless changed)."""
    return _default[0]


def set_default_dtype(d):
    """Set the default floating dtype (float32, float64, float16 or bfloat16), as ``torch.set_default_dtype``."""
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


def is_floating_point(t):
    """Whether a tensor's dtype is a floating type."""
    return t.dtype.is_floating_point


# ---------------------------------------------------------------------- promotion

def _promote_rule(a, b):
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    if {a, b} == {float16, bfloat16}:
        return float32
    if a is bfloat16 or b is bfloat16:
        other = b if a is bfloat16 else a
        return other if other.itemsize > 2 else bfloat16
    return _BY_NP[np.promote_types(a.np_dtype, b.np_dtype)]


# every pair precomputed: promotion sits on the path of every mixed-dtype op
_PROMOTE = {(a, b): _promote_rule(a, b) for a in _ALL for b in _ALL}


def promote_types(type1, type2):
    """The smallest dtype both promote to, as ``torch.promote_types``: the higher category wins outright,
    within a category the wider type (uint8 with int8 gives int16, float16 with bfloat16 gives float32)."""
    try:
        return _PROMOTE[(type1, type2)]
    except KeyError:
        raise TypeError(f"promote_types(): expected two dtypes, got {type1!r} and {type2!r}") from None


def _combine(higher, lower):
    """PyTorch's rule for joining the result of a higher-priority operand class with a lower one: the
    lower class only matters when it is of a higher category (or the higher result is bool)."""
    if higher is None:
        return lower
    if lower is None or higher._category == _FLOAT:
        return higher
    if higher is bool or lower._category == _FLOAT:
        return _PROMOTE[(higher, lower)]
    return higher


_PY_SCALARS = (builtins.bool, builtins.int, builtins.float)


def _wrapped_dtype(x):
    """The dtype a Python (or NumPy) scalar takes part in promotion with: bool, int64 or the default float."""
    t = type(x)
    if t is builtins.float:
        return _default[0]
    if t is builtins.int:
        return int64
    if t is builtins.bool:
        return bool
    if isinstance(x, (builtins.bool, np.bool_)):
        return bool
    if isinstance(x, (builtins.int, np.integer)):
        return int64
    if isinstance(x, (builtins.float, np.floating)):
        return _default[0]
    raise TypeError(f"unsupported operand type: {t.__name__}")


def result_type(*operands):
    """PyTorch's result type of tensors and Python scalars.

    Operands fall in three priority classes: tensors with dims, 0-dim tensors, and Python scalars
    (whose float type is the default dtype). Each class is promoted on its own; a lower class changes
    the result only when it is of a higher category (``int32_tensor + 2.5`` is float32,
    ``int32_tensor + int64_0dim`` stays int32)."""
    dim_r = zero_r = wrap_r = None
    for x in operands:
        if type(x) in _PY_SCALARS or isinstance(x, (np.generic, builtins.int, builtins.float)):
            d = _wrapped_dtype(x)
            wrap_r = d if wrap_r is None else _PROMOTE[(wrap_r, d)]
            continue
        data = getattr(x, "_data", None)
        if data is None:
            if isinstance(x, dtype):
                # a bare dtype takes part like a dimensioned tensor of that type
                dim_r = x if dim_r is None else _PROMOTE[(dim_r, x)]
                continue
            raise TypeError(f"result_type(): unsupported operand type {type(x).__name__}")
        d = x.dtype
        if data.ndim:
            dim_r = d if dim_r is None else _PROMOTE[(dim_r, d)]
        else:
            zero_r = d if zero_r is None else _PROMOTE[(zero_r, d)]
    return _combine(dim_r, _combine(zero_r, wrap_r))


def can_cast(from_, to):
    """Whether an in-place op may write ``from_`` results into a ``to`` tensor (no category demotion)."""
    return from_._category <= to._category
