"""Turning a list of samples into a batch (``default_collate``) and single samples into tensors
(``default_convert``), with PyTorch's rules: tensors are stacked, NumPy arrays and scalars become tensors,
Python floats a float64 tensor and ints an int64 one, strings stay a list, and containers are collated field
by field (a list of ``(x, y)`` tuples becomes ``[batch_of_x, batch_of_y]``)."""
import collections.abc
import copy
import re

from ... import _dtype
from ...ops.creation import as_tensor, tensor
from ...ops.shape import stack
from ...tensor import Tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

# NumPy dtype codes that cannot become tensors: bytes, str, unicode, object
_np_str_obj_array_pattern = re.compile(r"[SaUO]")

_ERR_FORMAT = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_numpy(x):
    return type(x).__module__ == "numpy"


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data):
    """Convert one sample (no batch dimension added): NumPy arrays and scalars become tensors, inside
    mappings, named tuples and sequences too; everything else is returned unchanged."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy(data) and not isinstance(data, (str, bytes)):
        if hasattr(data, "dtype") and data.dtype.kind in "SaUO":
            return data
        if hasattr(data, "shape"):
            return as_tensor(data)
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(v) for k, v in data.items()})
                return clone
            return type(data)({k: default_convert(v) for k, v in data.items()})
        except TypeError:
            return {k: default_convert(v) for k, v in data.items()}
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _collate_tensor(batch, *, collate_fn_map=None):
    return stack(batch, 0)


def _collate_numpy_array(batch, *, collate_fn_map=None):
    if _np_str_obj_array_pattern.search(batch[0].dtype.str) is not None:
        raise TypeError(_ERR_FORMAT.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalar(batch, *, collate_fn_map=None):
    return as_tensor(batch)


def _collate_float(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=_dtype.float64)


def _collate_int(batch, *, collate_fn_map=None):
    # bool is an int subclass and lands here: tensor() of bools is a bool tensor, as in PyTorch
    return tensor(batch)


def _collate_str(batch, *, collate_fn_map=None):
    return batch


def _build_default_map():
    import numpy as np
    # insertion order is lookup order for subclasses: NumPy scalars (np.float64 is a float subclass) are
    # matched before the Python number types
    return {Tensor: _collate_tensor, np.ndarray: _collate_numpy_array,
            (np.bool_, np.number, np.object_): _collate_numpy_scalar,
            float: _collate_float, int: _collate_int, str: _collate_str, bytes: _collate_str}


default_collate_fn_map = _build_default_map()


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples) with ``collate_fn_map``: a dict from element type to a function
    ``fn(batch, *, collate_fn_map)``, looked up by exact type first and then by ``isinstance``; containers
    are walked recursively. ``default_collate`` is this with :data:`default_collate_fn_map`."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for ctype, fn in collate_fn_map.items():
            if isinstance(elem, ctype):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem})
                return clone
            return elem_type({k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem})
        except TypeError:
            return {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
    if _is_namedtuple(elem):
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, s in enumerate(transposed):
                    clone[i] = collate(s, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(s, collate_fn_map=collate_fn_map) for s in transposed])
        except TypeError:
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
    raise TypeError(_ERR_FORMAT.format(elem_type))


def default_collate(batch):
    """Stack a list of samples into a batch, PyTorch's ``default_collate``: tensors -> ``stack`` (a new first
    dimension), NumPy arrays -> tensors stacked, NumPy scalars -> a 1-D tensor, float -> float64 tensor,
    int -> int64 tensor, bool -> bool tensor, str/bytes -> the list itself; mappings, named tuples and
    sequences are collated per field (tuples come back as lists, as in PyTorch)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
