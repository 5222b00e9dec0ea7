"""Factory functions: tensor, as_tensor, asarray, from_numpy, zeros, ones, full, empty, arange, linspace,
logspace, eye, tril/triu_indices, scalar_tensor, the ``*_like`` forms, ``Tensor.new_*`` and the in-place
fills ``zero_`` / ``fill_``."""
import builtins
import math
import warnings
from collections.abc import Mapping

import numpy as np  # host-side only: parsing Python data into an array before it reaches a backend

from .. import _dtype
from .._device import _default_device
from ..autograd.node import Op, bump_version
from ..autograd.grad_mode import _state
from ..backends import get_backend
from ..backends.cuda import device as _cuda_probe
from ..tensor import Size, Tensor
from ..autograd._inplace import apply_inplace
from ._util import check_out, write_out

__all__ = ["tensor", "asarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
           "full_like", "arange", "linspace", "logspace", "eye", "tril_indices", "triu_indices", "scalar_tensor"]


_default_be = [None, None]  # (default device object, its backend): factories with no device hit this


def backend_for(device):
    """The backend of ``device`` (the default device when None)."""
    if device is None:
        d = _default_device[0]
        if d is _default_be[0]:
            return _default_be[1]
        be = get_backend(d)
        if d.type == "cpu":  # CUDA backends can be reset (and "cuda" follows the current GPU): not cached
            _default_be[0], _default_be[1] = d, be
        return be
    return get_backend(device)


def _resolve(dtype, device):
    be = backend_for(device)
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    return be, dt


def pinned_new(t):
    """A factory's ``pin_memory=True``: the new tensor ``t`` in page-locked host memory."""
    if not _cuda_probe.is_available():
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
                           "allocator is available on this system.")
    return t.pin_memory()


def _finish(t, requires_grad, pin_memory=False):
    if pin_memory:
        t = pinned_new(t)
    if requires_grad:
        if not t.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def check_dtype_arg(dtype, fn):
    """PyTorch's argument parser: a factory's ``dtype`` is a dtype object (or the Python type float, int or
    bool); a name or a NumPy dtype is a TypeError there, so a port that passes one fails here too."""
    if dtype is None or dtype.__class__ is _dtype.dtype or dtype in (builtins.float, builtins.int, builtins.bool):
        return
    t = type(dtype)
    name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not {name}")


def _out_defaults(out, dtype, device, fn):
    """dtype and device of a factory writing into ``out``: the out tensor's unless given."""
    check_dtype_arg(dtype, fn)
    if out is None:
        return dtype, device
    check_out(out, fn)
    return (out.dtype if dtype is None else dtype), (out.device if device is None else device)


# factories name a dtype that differs from out's in their own words, and resizing ``out`` is their contract
_FACTORY_DTYPE_ERROR = "dtype {result} does not match dtype of out parameter ({out})"


def write_factory_out(t, out, fn):
    """A factory's result stored in ``out=`` (ops/_util.write_out with the factories' rules)."""
    return write_out(t, out, fn, dtype_error=_FACTORY_DTYPE_ERROR, resize_warning=False)


# ---------------------------------------------------------------------- Python data -> array

_INT_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-(1 << 15), (1 << 15) - 1),
              "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
              "float64": math.inf}


def checked_scalar(value, dt):
    """A Python scalar converted for ``dt`` with PyTorch's overflow check (RuntimeError "value cannot be
    converted to type ... without overflow"); negative ints wrap into uint8 like two's complement."""
    tv = type(value)
    if tv is builtins.float and dt.is_floating_point:
        # the common case first: a Python float into a float tensor
        if abs(value) > _FLOAT_MAX[dt.name] and math.isfinite(value):
            raise RuntimeError(f"value cannot be converted to type {dt._cpp_name} without overflow")
        return value
    if isinstance(value, Tensor):
        value = value.item()
    elif isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (builtins.bool, builtins.int, builtins.float)):
        raise TypeError(f"expected a number as fill value, got {type(value).__name__}")
    if dt is _dtype.bool:
        return builtins.bool(value)
    name = dt.name
    if dt.is_floating_point:
        v = builtins.float(value)
        if math.isfinite(v) and abs(v) > _FLOAT_MAX[name]:
            raise RuntimeError(f"value cannot be converted to type {dt._cpp_name} without overflow")
        return v
    lo, hi = _INT_RANGE[name]
    if isinstance(value, builtins.float):
        if math.isnan(value) or value < lo or value > hi:
            raise RuntimeError(f"value cannot be converted to type {dt._cpp_name} without overflow")
        return builtins.int(value)
    v = builtins.int(value)
    if name == "uint8":
        if v > hi or v < -hi:
            raise RuntimeError(f"value cannot be converted to type {dt._cpp_name} without overflow")
        return v % 256
    if v < lo or v > hi:
        raise RuntimeError(f"value cannot be converted to type {dt._cpp_name} without overflow")
    return v


def is_sequence(x):
    """CPython's ``PySequence_Check``, which PyTorch's constructors use: any object whose type has
    ``__getitem__`` (range, bytearray, array.array, a user class) except mappings; not sets or generators."""
    # NumPy scalars can be subscripted (``x[()]``) but are not sequences
    return hasattr(type(x), "__getitem__") and not isinstance(x, (dict, Mapping, np.generic))


def _type_name(t):
    """``tp_name`` as CPython prints it: qualified with the module for C types (``numpy.float32``), bare for
    classes written in Python and builtins."""
    if t.__module__ == "builtins" or t.__flags__ & _HEAPTYPE:
        return t.__name__
    return f"{t.__module__}.{t.__qualname__}"


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: the type was created by a class statement
_LEAVES = (list, tuple, builtins.bool, builtins.int, builtins.float, str, bytes)


def _leaf_types(data, types, tensors):
    """Collect the types of the leaves of nested lists/tuples (and the tensor leaves themselves; a NumPy array
    counts by its element type). True when some level holds another kind of sequence (a range, a bytearray,
    a user class), which ``_as_lists`` must turn into lists first."""
    ts = set(map(type, data))
    other = False
    for t in ts:
        if t is list or t is tuple:
            for x in data:
                if type(x) is list or type(x) is tuple:
                    other = _leaf_types(x, types, tensors) or other
        elif issubclass(t, Tensor):
            tensors.extend(x for x in data if isinstance(x, Tensor))
            types.add(Tensor)
        elif issubclass(t, np.ndarray):
            types.update(x.dtype.type for x in data if isinstance(x, np.ndarray))
        elif not issubclass(t, _LEAVES) and not issubclass(t, np.generic) and hasattr(t, "__getitem__") \
                and not issubclass(t, (dict, Mapping)):
            other = True
        else:
            types.add(t)
    return other


def _as_lists(data):
    """Nested data with every sequence that is not a list, tuple, string, tensor or NumPy array (a range, a
    bytearray, an array.array, a user class with ``__getitem__``) read into a list, as PyTorch reads any
    sequence element by element."""
    if isinstance(data, (str, bytes, Tensor, np.ndarray, np.generic)) or not is_sequence(data):
        return data
    return [_as_lists(x) for x in data]


def _first_elements_are_not_strings(data):
    """PyTorch infers the shape from the first element of each level, taking a string there for one more level
    of sequence: a ValueError before any element's type is checked."""
    x = data
    while isinstance(x, (list, tuple)) and x:
        x = x[0]
        if isinstance(x, str):
            raise ValueError("too many dimensions 'str'")


def _infer_dtype(types, tensors):
    """PyTorch's dtype inference for a sequence: every leaf's own type (Python float -> default dtype,
    int -> int64, bool -> bool, NumPy scalar -> its dtype, tensor -> its dtype), promoted together."""
    out = None
    for t in types:
        if t is Tensor:
            continue
        if t is builtins.float:
            d = _dtype.get_default_dtype()
        elif t is builtins.bool:
            d = _dtype.bool
        elif t is builtins.int:
            d = _dtype.int64
        elif issubclass(t, np.generic):
            d = _dtype.from_numpy_dtype(np.dtype(t))
        elif issubclass(t, builtins.float):
            d = _dtype.get_default_dtype()
        elif issubclass(t, builtins.int):
            d = _dtype.int64
        elif issubclass(t, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{t.__name__}'")
        else:  # None, a set, a generator, any other object
            raise RuntimeError(f"Could not infer dtype of {t.__name__}")
        out = d if out is None else _dtype.promote_types(out, d)
    for x in tensors:
        out = x.dtype if out is None else _dtype.promote_types(out, x.dtype)
    return _dtype.get_default_dtype() if out is None else out


def _check_integral_leaves(types, tensors):
    """PyTorch reads each element of integer (or bool) data as an index: a Python float is truncated (so is
    NumPy's float64, a float subclass), but another NumPy float or a floating tensor is a TypeError."""
    for t in types:
        if issubclass(t, np.floating) and not issubclass(t, builtins.float):
            raise TypeError(f"'{_type_name(t)}' object cannot be interpreted as an integer")
    if any(x.dtype.is_floating_point for x in tensors):
        raise TypeError("only integer tensors of a single element can be converted to an index")


def _ragged_error(data):
    """Raise PyTorch's error for a ragged nested sequence. The shape comes from the first elements; a
    wrong length is a ValueError naming the dim, a number where a sequence belongs (or the reverse) a
    TypeError."""
    shape = []
    x = data
    while isinstance(x, (list, tuple)):
        shape.append(len(x))
        if not x:
            break
        x = x[0]

    def check(x, dim):
        if dim == len(shape):
            if isinstance(x, (list, tuple)):
                raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as a number")
            return
        if not isinstance(x, (list, tuple)):
            raise TypeError("not a sequence")
        if len(x) != shape[dim]:
            raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(x)})")
        for y in x:
            check(y, dim + 1)
    check(data, 0)
    raise ValueError("could not convert a ragged nested sequence to a tensor")


def _unwrap(data):
    """Nested lists with 1-element tensors replaced by their Python values."""
    if isinstance(data, Tensor):
        if data.numel() != 1:
            raise TypeError("only one element tensors can be converted to Python scalars (a tensor with "
                            f"{data.numel()} elements found inside a sequence)")
        return data.item()
    if isinstance(data, (list, tuple)):
        return [_unwrap(x) for x in data]
    return data


def _sequence_array(data, dt, inferred):
    """A NumPy array of ``dt`` from nested Python data. Integers go through int64 (ValueError beyond it) and
    an explicit integer dtype gets PyTorch's per-element overflow check (negative ints wrap into uint8)."""
    try:
        if dt.is_floating_point or dt is _dtype.bool:
            with np.errstate(over="ignore"):  # out-of-range floats become inf, silently as in PyTorch
                return np.array(data, dtype=dt.np_dtype)
        wide = np.array(data, dtype=np.float64 if inferred.is_floating_point else np.int64)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    except ValueError as e:
        if "inhomogeneous" in str(e) or "sequence" in str(e):
            _ragged_error(data)
        raise
    if dt is not _dtype.int64 or wide.dtype.kind == "f":
        lo, hi = _INT_RANGE[dt.name]
        if dt is _dtype.uint8 and wide.dtype.kind != "f":
            lo = -hi
        bad = (wide < lo) | (wide > hi)
        if wide.dtype.kind == "f":
            bad |= np.isnan(wide)
        if bad.any():
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
    return wide.astype(dt.np_dtype)


def _host_array(data, dtype=None):
    """(array, dtype, fresh) from Python data, a NumPy array, a CuPy-like array or a tensor. The array is a
    NumPy array or, for a tensor argument, a backend array; ``fresh`` says it was built here (no need to
    copy it again); ``dtype`` forces the result type."""
    if isinstance(data, Tensor):
        return data._data, data.dtype, False
    if isinstance(data, np.ndarray):
        return data, _dtype.from_numpy_dtype(data.dtype), False
    if isinstance(data, np.generic):
        arr = np.asarray(data)
        return arr, _dtype.from_numpy_dtype(arr.dtype), True
    if not isinstance(data, (list, tuple, builtins.bool, builtins.int, builtins.float)):
        if hasattr(data, "__cuda_array_interface__") and hasattr(data, "get"):
            arr = data.get()
            return arr, _dtype.from_numpy_dtype(arr.dtype), True
        if hasattr(data, "__array__") or hasattr(data, "__array_interface__"):
            arr = np.asarray(data)
            return arr, _dtype.from_numpy_dtype(arr.dtype), False
    types, tensors = set(), []
    if not isinstance(data, (list, tuple, str, bytes)) and is_sequence(data):
        data = _as_lists(data)
    if isinstance(data, (list, tuple)):
        _first_elements_are_not_strings(data)
        if _leaf_types(data, types, tensors):
            data = _as_lists(data)
            types, tensors = set(), []
            _leaf_types(data, types, tensors)
    else:
        types.add(type(data))
    inferred = _infer_dtype(types, tensors)  # also rejects strings, None, ...
    dt = inferred if dtype is None else dtype
    if not dt.is_floating_point:
        _check_integral_leaves(types, tensors)
    src = _unwrap(data) if tensors else data
    return _sequence_array(src, dt, inferred), dt, True


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested lists, scalars, NumPy arrays, tensors)."""
    check_dtype_arg(dtype, "tensor")
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                      "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "minitorch_gpu.tensor(sourceTensor).", UserWarning, stacklevel=2)
        dt = data.dtype if dtype is None else _dtype.to_dtype(dtype)
        be = data._be if device is None else backend_for(device)
        src = data._data
        if be is not data._be:
            src = be.asarray(data._be.to_numpy(src))
        t = Tensor._make(be.astype(src, be.np_dtype(dt), copy=True), be)
        return _finish(t, requires_grad, pin_memory)
    dt = None if dtype is None else _dtype.to_dtype(dtype)
    arr, inferred, fresh = _host_array(data, dt)
    dt = inferred if dt is None else dt
    be = backend_for(device)
    npd = be.np_dtype(dt)
    if fresh and be.device.type == "cpu":
        arr = be.astype(arr, npd)
    else:
        arr = be.asarray(arr)
        arr = be.astype(arr, npd, copy=True) if not fresh or arr.dtype != npd else arr
    return _finish(Tensor._make(arr, be), requires_grad, pin_memory)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A 0-dim tensor holding ``s`` (of the default float dtype unless ``dtype`` is given)."""
    be, dt = _resolve(dtype, device)
    arr = be.full((), checked_scalar(s, dt), be.np_dtype(dt))
    return _finish(Tensor._make(arr, be), requires_grad, pin_memory)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with ``data`` when it already has the right dtype and device (and
    keeps a tensor's autograd history)."""
    if isinstance(data, Tensor):
        if device is None and dtype is None:
            return data
        return data.to(device=device, dtype=None if dtype is None else _dtype.to_dtype(dtype))
    if isinstance(data, np.ndarray) or (hasattr(data, "__cuda_array_interface__") and hasattr(data, "dtype")):
        be = backend_for(device)
        dt = _dtype.from_numpy_dtype(data.dtype) if dtype is None else _dtype.to_dtype(dtype)
        npd = be.np_dtype(dt)
        if isinstance(data, np.ndarray) or be.device.type == "cuda":
            arr = be.asarray(data)
        else:
            arr = data.get()
        return Tensor._make(be.astype(arr, npd), be)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """``torch.asarray``: share memory with ``obj`` when possible (``copy=None``), always copy
    (``copy=True``), or refuse to copy (``copy=False``: ValueError when a copy would be needed)."""
    if copy:
        if isinstance(obj, Tensor):
            t = obj.detach().to(device=device, dtype=dtype, copy=True)
        else:
            t = tensor(obj, dtype=dtype, device=device)
        return _finish(t, requires_grad)
    t = as_tensor(obj, dtype=dtype, device=device)
    if isinstance(obj, Tensor):
        shared = t._data is obj._data
        t = t.detach()
    elif isinstance(obj, np.ndarray):
        shared = t._be.device.type == "cpu" and np.shares_memory(t._data, obj)
    else:
        shared = False
    if copy is False and not shared:
        raise ValueError("asarray(): copy=False was requested, but the data cannot be shared without a copy")
    return _finish(t, requires_grad)


def from_numpy(ndarray):
    """A CPU tensor sharing memory with a NumPy array."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dtype.from_numpy_dtype(ndarray.dtype)
    return Tensor._make(ndarray, get_backend("cpu"))


# ---------------------------------------------------------------------- sized factories

_INT64_MAX = (1 << 63) - 1


def size_arg(size, kwargs=None, name="factory"):
    """A shape tuple from ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(size=(2, 3))``."""
    if not kwargs:
        for s in size:
            if type(s) is not builtins.int or s < 0 or s > _INT64_MAX:
                break
        else:
            return size  # the common case: plain non-negative ints
    if kwargs:
        if "size" in kwargs and not size:
            size = (kwargs.pop("size"),)
        if kwargs:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, builtins.bool) or not hasattr(s, "__index__"):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {len(out)}")
        s = s.__index__()
        if s > _INT64_MAX:
            # the first line of PyTorch's message (the rest is a C++ backtrace)
            raise TypeError(f"{name}(): argument 'size' failed to unpack the object at pos {len(out) + 1} with "
                            "error \"Overflow when unpacking long long\"")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {[int(x) for x in size]}")
        out.append(s)
    return tuple(out)


def _factory(kind, shape, dtype, device, requires_grad, out=None, fill=None, pin_memory=False):
    dtype, device = _out_defaults(out, dtype, device, kind)
    be, dt = _resolve(dtype, device)
    npd = be.np_dtype(dt)
    if kind == "full":
        arr = be.full(shape, fill, npd)
    elif kind == "zeros":
        arr = be.zeros(shape, npd)
    elif kind == "ones":
        arr = be.ones(shape, npd)
    else:
        arr = be.empty(shape, npd)
    t = Tensor._make(arr, be)
    if out is not None:
        return write_factory_out(t, out, kind)
    return _finish(t, requires_grad, pin_memory)


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, **kwargs):
    """A tensor of zeros of the given shape."""
    return _factory("zeros", size_arg(size, kwargs, "zeros"), dtype, device, requires_grad, out,
                    pin_memory=pin_memory)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, **kwargs):
    """A tensor of ones of the given shape."""
    return _factory("ones", size_arg(size, kwargs, "ones"), dtype, device, requires_grad, out,
                    pin_memory=pin_memory)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None, **kwargs):
    """An uninitialised tensor of the given shape."""
    return _factory("empty", size_arg(size, kwargs, "empty"), dtype, device, requires_grad, out,
                    pin_memory=pin_memory)


def _fill_dtype(fill_value):
    if isinstance(fill_value, Tensor):
        return fill_value.dtype
    return _dtype.result_type(fill_value)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """A tensor of ``size`` filled with ``fill_value``; the dtype is inferred from the value (bool, int64 or
    the default float) unless given."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    shape = size_arg((size,), None, "full")
    if dtype is None and out is None:
        dtype = _fill_dtype(fill_value)
    dtype, device = _out_defaults(out, dtype, device, "full")
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    return _factory("full", shape, dt, device, requires_grad, out, fill=checked_scalar(fill_value, dt),
                    pin_memory=pin_memory)


def _like(kind, input, dtype, device, requires_grad, fill=None):
    dt = input.dtype if dtype is None else _dtype.to_dtype(dtype)
    if device is None:
        device = input._be.device
    if kind == "full":
        fill = checked_scalar(fill, dt)
    return _factory(kind, input._data.shape, dt, device, requires_grad, fill=fill)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """Zeros with the shape (and, unless given, dtype and device) of ``input``."""
    return _like("zeros", input, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """Ones with the shape (and, unless given, dtype and device) of ``input``."""
    return _like("ones", input, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """Uninitialised, with the shape (and, unless given, dtype and device) of ``input``."""
    return _like("empty", input, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    """``fill_value`` everywhere, with the shape (and, unless given, dtype and device) of ``input``."""
    return _like("full", input, dtype, device, requires_grad, fill_value)


# ---------------------------------------------------------------------- ranges

def _number(x, what):
    """A Python number from a number or a one-element tensor."""
    if isinstance(x, Tensor):
        return x.item()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (builtins.int, builtins.float)):
        return x
    raise TypeError(f"{what} must be a number, not {type(x).__name__}")


def _is_float_arg(x):
    if isinstance(x, Tensor):
        return x.dtype.is_floating_point
    return isinstance(x, (builtins.float, np.floating))


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Values from ``start`` (inclusive) to ``end`` (exclusive) by ``step``. int64 when every argument is an
    integer, else the default float dtype; ``ceil((end - start) / step)`` values."""
    args = (start, end, step) if end is not None else (0, start, step)
    all_ints = type(args[0]) is builtins.int and type(args[1]) is builtins.int and type(args[2]) is builtins.int
    if dtype is None and out is None:
        if all_ints:
            dtype = _dtype.int64
        else:
            dtype = _dtype.get_default_dtype() if any(_is_float_arg(a) for a in args) else _dtype.int64
    dtype, device = _out_defaults(out, dtype, device, "arange")
    be, dt = _resolve(dtype, device)
    if dt is _dtype.bool:
        raise NotImplementedError("\"arange\" not implemented for 'Bool'")
    s, e, st = args if all_ints else (_number(a, n) for a, n in zip(args, ("start", "end", "step")))
    if not (math.isfinite(s) and math.isfinite(e)):
        raise RuntimeError(f"unsupported range: {s} -> {e}")
    if st == 0:
        raise RuntimeError("step must be nonzero")
    if not ((st > 0 and e >= s) or (st < 0 and e <= s)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    integral = not dt.is_floating_point
    if dt is _dtype.int64:
        # PyTorch sizes int64 ranges from the arguments truncated to integers, exactly
        s, e, st = builtins.int(s), builtins.int(e), builtins.int(st)
        if st == 0:
            raise ValueError("step must be nonzero")
        n = -((s - e) // st) if st > 0 else -((e - s) // -st)
    else:
        n = math.ceil((builtins.float(e) - builtins.float(s)) / builtins.float(st))
        if integral:
            # other integer types size the range in double but step in integers, as PyTorch does
            s, st = builtins.int(s), builtins.int(st)
    n = max(n, 0)
    t = Tensor._make(be.arange(s, st, n, be.np_dtype(dt), integral), be)
    if out is not None:
        return write_factory_out(t, out, "arange")
    return _finish(t, requires_grad)


def _steps_arg(steps, name):
    if isinstance(steps, builtins.bool) or not hasattr(steps, "__index__"):
        raise TypeError(f"{name}(): argument 'steps' must be int, not {type(steps).__name__}")
    steps = steps.__index__()
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return steps


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (default float dtype)."""
    steps = _steps_arg(steps, "linspace")
    dtype, device = _out_defaults(out, dtype, device, "linspace")
    be, dt = _resolve(dtype, device)
    s, e = _number(start, "start"), _number(end, "end")
    integral = not dt.is_floating_point
    if integral:
        s, e = builtins.int(s), builtins.int(e)
    npd = be.np_dtype(dt)
    if steps == 0:
        arr = be.empty((0,), npd)
    elif dt is _dtype.bfloat16 or dt is _dtype.float16:
        # NumPy's half types round every intermediate; PyTorch computes them in float32
        arr = be.astype(be.linspace(s, e, steps, be.np_dtype(_dtype.float32), False), npd)
    else:
        arr = be.linspace(s, e, steps, npd, integral)
    t = Tensor._make(arr, be)
    if out is not None:
        return write_factory_out(t, out, "linspace")
    return _finish(t, requires_grad)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``base ** linspace(start, end, steps)``."""
    steps = _steps_arg(steps, "logspace")
    dtype, device = _out_defaults(out, dtype, device, "logspace")
    be, dt = _resolve(dtype, device)
    s, e = _number(start, "start"), _number(end, "end")
    npd = be.np_dtype(dt)
    arr = be.empty((0,), npd) if steps == 0 else be.logspace(s, e, steps, builtins.float(base), npd)
    t = Tensor._make(arr, be)
    if out is not None:
        return write_factory_out(t, out, "logspace")
    return _finish(t, requires_grad)


def _int_arg(x, fn, name):
    if isinstance(x, builtins.bool) or not hasattr(x, "__index__"):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(x).__name__}")
    return x.__index__()


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An n x m (default n x n) matrix with ones on the diagonal."""
    n = _int_arg(n, "eye", "n")
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    m = n if m is None else _int_arg(m, "eye", "m")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dtype, device = _out_defaults(out, dtype, device, "eye")
    be, dt = _resolve(dtype, device)
    t = Tensor._make(be.eye(n, m, be.np_dtype(dt)), be)
    if out is not None:
        return write_factory_out(t, out, "eye")
    return _finish(t, requires_grad, pin_memory)


def _tri_indices(row, col, offset, upper, dtype, device, fn):
    row, col, offset = _int_arg(row, fn, "row"), _int_arg(col, fn, "col"), _int_arg(offset, fn, "offset")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    be, dt = _resolve(_dtype.int64 if dtype is None else dtype, device)
    return Tensor._make(be.tri_indices(row, col, offset, upper, be.np_dtype(dt)), be)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """A (2, N) tensor of the row and column coordinates of the lower triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, False, dtype, device, "tril_indices")


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """A (2, N) tensor of the row and column coordinates of the upper triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, True, dtype, device, "triu_indices")


# ---------------------------------------------------------------------- legacy constructor and new_*

def _legacy_tensor_new(cls, *args, **kwargs):
    """``mt.Tensor(2, 3)`` (uninitialised, default dtype), ``mt.Tensor(Size)``, ``mt.Tensor([1, 2])`` (from
    data) and ``mt.Tensor()`` (empty)."""
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"Tensor() got unexpected keyword arguments {list(kwargs)}")
    t = legacy_new(_dtype.get_default_dtype(), device, args)
    if cls is Tensor:
        return t
    return cls._make(t._data, t._be)


def legacy_new(dtype, device, args):
    """PyTorch's legacy constructors (``Tensor(...)``, ``FloatTensor(...)``): sizes give an uninitialised
    tensor, a sequence its values, a tensor of ``dtype`` an alias of it, nothing an empty tensor."""
    if not args:
        return empty(0, dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if src.dtype is not dtype:
            raise TypeError(f"expected {dtype._scalar_name} (got {src.dtype._scalar_name})")
        return src.detach() if device is None or src._be is backend_for(device) else src.detach().to(device)
    if len(args) == 1 and isinstance(args[0], Size):
        return empty(*args[0], dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
        return tensor(args[0], dtype=dtype, device=device)
    if len(args) == 1 and (isinstance(args[0], builtins.bool) or not hasattr(args[0], "__index__")):
        if not is_sequence(args[0]):
            raise TypeError(f"new(): data must be a sequence (got {_type_name(type(args[0]))})")
        return tensor(args[0], dtype=dtype, device=device)
    return empty(*args, dtype=dtype, device=device)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A new tensor from ``data`` with this tensor's dtype and device unless given."""
    dt = self.dtype if dtype is None else dtype
    dev = self._be.device if device is None else device
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
                      "or sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tensor(data, dtype=dt, device=dev, requires_grad=requires_grad)
    return tensor(data, dtype=dt, device=dev, requires_grad=requires_grad)


def _new_factory(kind):
    def new(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False, **kwargs):
        shape = size_arg(size, kwargs, "new_" + kind)
        return _factory(kind, shape, self.dtype if dtype is None else dtype,
                        self._be.device if device is None else device, requires_grad, pin_memory=pin_memory)
    new.__name__ = "new_" + kind
    new.__doc__ = f"A tensor of {kind} of the given shape with this tensor's dtype and device unless given."
    return new


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device unless given."""
    dt = self.dtype if dtype is None else _dtype.to_dtype(dtype)
    shape = size_arg((size,), None, "new_full")
    return _factory("full", shape, dt, self._be.device if device is None else device, requires_grad,
                    fill=checked_scalar(fill_value, dt), pin_memory=pin_memory)


# ---------------------------------------------------------------------- in-place fills

class FillBackward2(Op):
    """fill_ with a Python number: the old values are gone, so their gradient is zero."""

    def forward(self, x, value):
        return x._be.full(x._data.shape, value, x._data.dtype)

    def backward(self, g):
        return (zeros_like(g),)


class FillBackward3(Op):
    """fill_ with a 0-dim tensor: every element is that value, so its gradient is the sum."""

    def forward(self, x, value):
        self.value_dtype = value.dtype
        self.value_device = value._be.device
        src = value._data
        if value._be is not x._be:
            src = x._be.asarray(value._be.to_numpy(src))
        return x._be.astype(x._be.broadcast_to(src, x._data.shape), x._data.dtype, copy=True)

    def backward(self, g):
        nx, nv = self.needs_input_grad
        gv = None
        if nv:
            gv = g.sum().to(device=self.value_device, dtype=self.value_dtype)
        return (zeros_like(g) if nx else None), gv


class ZeroBackward0(Op):
    def forward(self, x):
        return x._be.zeros(x._data.shape, x._data.dtype)

    def backward(self, g):
        return (zeros_like(g),)


def _fill_value_tensor(value):
    if value._data.ndim != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value._data.ndim} dimensions.")


def fill_(self, value):
    """Set every element to ``value`` (a number or a 0-dim tensor), in place; returns self."""
    if isinstance(value, Tensor):
        _fill_value_tensor(value)
        recording = _state.grad and (self.requires_grad or value.requires_grad)
        if not recording:
            self._check_inplace()
            src = value._data
            if value._be is not self._be:
                src = self._be.asarray(value._be.to_numpy(src))
            self._be.copy_into(self._data, src)
            bump_version(self)
            return self
        return apply_inplace(self, lambda x, v: FillBackward3.apply(x, v), value, keeps_self=False)
    v = checked_scalar(value, self.dtype)
    if not (_state.grad and self.requires_grad):
        self._check_inplace()
        self._be.fill(self._data, v)
        bump_version(self)
        return self
    return apply_inplace(self, lambda x: FillBackward2.apply(x, value=v), keeps_self=False)


def zero_(self):
    """Set every element to zero, in place; returns self."""
    if not (_state.grad and self.requires_grad):
        self._check_inplace()
        self._be.fill(self._data, 0)
        bump_version(self)
        return self
    return apply_inplace(self, lambda x: ZeroBackward0.apply(x), keeps_self=False)


METHODS = {
    "__new__": staticmethod(_legacy_tensor_new),
    "new_tensor": new_tensor, "new_zeros": _new_factory("zeros"), "new_ones": _new_factory("ones"),
    "new_empty": _new_factory("empty"), "new_full": new_full, "fill_": fill_, "zero_": zero_,
}
