"""dtype objects and PyTorch's type-promotion rules.

A dtype is a small immutable object compared by identity (``x.dtype is mt.float32``), as in PyTorch.
Each maps to a NumPy dtype; CuPy uses the same NumPy dtypes, so the mapping serves both backends.
"""
import numpy as np

__all__ = [
    "dtype", "float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long",
    "int32", "int", "int16", "short", "int8", "uint8", "bool", "get_default_dtype", "set_default_dtype",
    "promote_types", "result_type", "can_cast", "is_floating_point",
]

# categories order the "kinds" of PyTorch's promotion: a higher category always wins over a lower one
_BOOL, _INT, _FLOAT = 0, 1, 2


class dtype:
    __slots__ = ("name", "np_dtype", "itemsize", "is_floating_point", "is_signed", "_category", "_tensor_name")

    is_complex = False

    def __init__(self, name, np_dtype, category, tensor_name):
        self.name = name
        self.np_dtype = np_dtype
        self.itemsize = np_dtype.itemsize if np_dtype is not None else 2
        self.is_floating_point = category == _FLOAT
        self.is_signed = name not in ("uint8", "bool")
        self._category = category
        self._tensor_name = tensor_name

    def __repr__(self):
        return f"minitorch_gpu.{self.name}"

    def __reduce__(self):
        # dtypes are singletons: unpickling and deepcopy must give back the same object
        return (_lookup, (self.name,))

    def to_real(self):
        return self

    def to_complex(self):
        raise TypeError(f"complex dtypes are not supported (from {self})")


def _bfloat16_np():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


float32 = dtype("float32", np.dtype(np.float32), _FLOAT, "FloatTensor")
float64 = dtype("float64", np.dtype(np.float64), _FLOAT, "DoubleTensor")
float16 = dtype("float16", np.dtype(np.float16), _FLOAT, "HalfTensor")
# bfloat16 exists on every install; arrays of it need ml_dtypes (checked where an array is made)
bfloat16 = dtype("bfloat16", _bfloat16_np(), _FLOAT, "BFloat16Tensor")
int64 = dtype("int64", np.dtype(np.int64), _INT, "LongTensor")
int32 = dtype("int32", np.dtype(np.int32), _INT, "IntTensor")
int16 = dtype("int16", np.dtype(np.int16), _INT, "ShortTensor")
int8 = dtype("int8", np.dtype(np.int8), _INT, "CharTensor")
uint8 = dtype("uint8", np.dtype(np.uint8), _INT, "ByteTensor")
bool = dtype("bool", np.dtype(np.bool_), _BOOL, "BoolTensor")  # noqa: A001 - PyTorch's name

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16

_ALL = (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool)
_BY_NAME = {d.name: d for d in _ALL}
_BY_NP = {d.np_dtype: d for d in _ALL if d.np_dtype is not None}


def _lookup(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype):
    """The dtype for a NumPy dtype; TypeError for kinds PyTorch has no tensor type for."""
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).name}. The only supported types are: "
            "float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8, and bool.")
    return d


def to_dtype(d):
    """Accept a dtype, a NumPy dtype, a Python type or a dtype name, as PyTorch's factories do."""
    if d.__class__ is dtype:
        return d
    import builtins
    if d is builtins.float:
        return _default[0]
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
    return _default[0]


def set_default_dtype(d):
    d = to_dtype(d)
    if d not in (float32, float64, float16, bfloat16):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def is_floating_point(t):
    return t.dtype.is_floating_point


def _promote_same_category(a, b):
    if a is b:
        return a
    if {a, b} == {float16, bfloat16}:
        return float32
    if a is bfloat16 or b is bfloat16:
        other = b if a is bfloat16 else a
        return other if other.itemsize > 2 else bfloat16
    return _BY_NP[np.promote_types(a.np_dtype, b.np_dtype)]


def promote_types(a, b):
    """Promotion of two dtypes as ``torch.promote_types``: the higher category wins outright."""
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    return _promote_same_category(a, b)


def _scalar_dtype(x):
    import builtins
    if isinstance(x, builtins.bool):
        return bool
    if isinstance(x, builtins.int):
        return int64
    if isinstance(x, builtins.float):
        return _default[0]
    if isinstance(x, (np.bool_, np.integer, np.floating)):
        return from_numpy_dtype(np.asarray(x).dtype)
    raise TypeError(f"unsupported operand type: {type(x).__name__}")


def result_type(*operands):
    """PyTorch's result type: dim>0 tensors outrank 0-dim tensors, which outrank Python scalars,
    but only within the highest category present (so ``int_tensor + 1.5`` is the default float)."""
    best_cat = -1
    best_prio = -1
    out = None
    for x in operands:
        if hasattr(x, "_data") and hasattr(x, "dtype"):
            d = x.dtype
            prio = 2 if x._data.ndim else 1
        else:
            d = _scalar_dtype(x)
            prio = 0
        cat = d._category
        if cat > best_cat or (cat == best_cat and prio > best_prio):
            best_cat, best_prio, out = cat, prio, d
        elif cat == best_cat and prio == best_prio:
            out = _promote_same_category(out, d)
    if best_prio == 0 and best_cat == _INT:
        return int64
    return out


def can_cast(from_, to):
    """Whether an in-place op may write ``from_`` results into a ``to`` tensor (no category demotion)."""
    return from_._category <= to._category
