"""Factory functions: tensor, as_tensor, from_numpy, zeros, ones, full, empty, arange, linspace, eye,
and the ``*_like`` forms."""
import numpy as np

from .. import _dtype
from .._device import get_default_device
from ..backends import get_backend

__all__ = ["tensor", "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"]


def backend_for(device):
    """The backend of ``device`` (the default device when None)."""
    return get_backend(get_default_device() if device is None else device)


def _resolve(dtype, device):
    be = backend_for(device)
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    return be, dt


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _host_array(data):
    """NumPy array and inferred dtype from Python data (nested lists of numbers / tensors) or arrays."""
    from ..tensor import Tensor
    if isinstance(data, Tensor):
        return data._be.to_numpy(data._data), data.dtype
    if isinstance(data, np.ndarray):
        return data, _dtype.from_numpy_dtype(data.dtype)
    if hasattr(data, "__dlpack__") and not isinstance(data, (list, tuple)):
        arr = np.asarray(data) if not hasattr(data, "get") else data.get()
        return arr, _dtype.from_numpy_dtype(arr.dtype)
    if isinstance(data, (np.generic,)):
        arr = np.asarray(data)
        return arr, _dtype.from_numpy_dtype(arr.dtype)
    flat_kind = _scan_kind(data)
    if flat_kind == "float":
        dt = _dtype.get_default_dtype()
    elif flat_kind == "int":
        dt = _dtype.int64
    elif flat_kind == "bool":
        dt = _dtype.bool
    else:
        dt = _dtype.get_default_dtype()
    arr = np.array(_unwrap(data), dtype=dt.np_dtype if dt.np_dtype is not None else np.float32)
    return arr, dt


def _unwrap(data):
    from ..tensor import Tensor
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_unwrap(x) for x in data]
    return data


def _scan_kind(data):
    """'float' > 'int' > 'bool' over nested data, like PyTorch's inference of a tensor's dtype."""
    from ..tensor import Tensor
    kind = None
    rank = {"bool": 0, "int": 1, "float": 2}
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
            continue
        if isinstance(x, Tensor):
            k = "float" if x.dtype.is_floating_point else ("bool" if x.dtype is _dtype.bool else "int")
        elif isinstance(x, (bool, np.bool_)):
            k = "bool"
        elif isinstance(x, (int, np.integer)):
            k = "int"
        elif isinstance(x, (float, np.floating)):
            k = "float"
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
        if kind is None or rank[k] > rank[kind]:
            kind = k
    return kind


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested lists, scalars, NumPy arrays, tensors)."""
    from ..tensor import Tensor
    arr, inferred = _host_array(data)
    dt = inferred if dtype is None else _dtype.to_dtype(dtype)
    if device is None and isinstance(data, Tensor):
        be = data._be
    else:
        be = backend_for(device)
    t = Tensor._make(be.asarray(arr, be.np_dtype(dt), copy=True), be)
    return _finish(t, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with ``data`` when it already has the right dtype and device."""
    from ..tensor import Tensor
    if isinstance(data, Tensor):
        out = data
        if device is not None:
            out = out.to(device)
        if dtype is not None:
            out = out.to(_dtype.to_dtype(dtype))
        return out
    if isinstance(data, np.ndarray):
        be = backend_for(device)
        dt = _dtype.from_numpy_dtype(data.dtype) if dtype is None else _dtype.to_dtype(dtype)
        return Tensor._make(be.asarray(data, be.np_dtype(dt)), be)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray):
    """A CPU tensor sharing memory with a NumPy array."""
    from ..tensor import Tensor
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dtype.from_numpy_dtype(ndarray.dtype)
    return Tensor._make(ndarray, get_backend("cpu"))


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if not hasattr(s, "__index__") or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, but got {type(s).__name__}")
        s = s.__index__()
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(s)
    return tuple(out)


def _factory(kind, size, dtype, device, requires_grad, fill=None):
    from ..tensor import Tensor
    be, dt = _resolve(dtype, device)
    shape = _size(size)
    npd = be.np_dtype(dt)
    if kind == "full":
        arr = be.full(shape, fill, npd)
    else:
        arr = getattr(be, kind)(shape, npd)
    return _finish(Tensor._make(arr, be), requires_grad)


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return _factory("zeros", size, dtype, device, requires_grad)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    return _factory("ones", size, dtype, device, requires_grad)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    return _factory("empty", size, dtype, device, requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    if dtype is None:
        dtype = _dtype.result_type(fill_value)
    return _factory("full", (tuple(size),), dtype, device, requires_grad, fill=fill_value)


def _like(kind, input, dtype, device, requires_grad, fill=None):
    if dtype is None:
        dtype = input.dtype
    if device is None:
        device = input.device
    return _factory(kind, (tuple(input.shape),), dtype, device, requires_grad, fill)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return _like("zeros", input, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return _like("ones", input, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    return _like("empty", input, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None):
    return _like("full", input, dtype, device, requires_grad, fill_value)


def _legacy_tensor_new(cls, *args, **kwargs):
    """``mt.Tensor(2, 3)`` (uninitialised float tensor) and ``mt.Tensor([1, 2])`` (from data)."""
    from ..tensor import Tensor
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"Tensor() got unexpected keyword arguments {list(kwargs)}")
    if len(args) == 1 and not isinstance(args[0], int):
        t = tensor(args[0], dtype=_dtype.get_default_dtype(), device=device)
    else:
        t = empty(*args, device=device)
    if cls is Tensor:
        return t
    return cls._make(t._data, t._be)


METHODS = {}
