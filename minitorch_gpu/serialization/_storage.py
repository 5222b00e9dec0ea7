"""Storages as PyTorch's checkpoints name them: the legacy typed storage classes (``torch.FloatStorage``...)
that persistent ids carry, the storage a ``map_location`` callable receives, and where a storage is restored.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from ..backends import get_backend
from ._common import check_map_location, check_target, typename

# PyTorch's legacy storage class of each dtype we have: a checkpoint names a storage's element type this way
STORAGE_NAME_OF = {
    _dtype.float32: "FloatStorage", _dtype.float64: "DoubleStorage", _dtype.float16: "HalfStorage",
    _dtype.bfloat16: "BFloat16Storage", _dtype.int64: "LongStorage", _dtype.int32: "IntStorage",
    _dtype.int16: "ShortStorage", _dtype.int8: "CharStorage", _dtype.uint8: "ByteStorage",
    _dtype.bool: "BoolStorage",
}

# storage classes PyTorch has and we cannot hold: loading one is a clear error, not an unknown global
UNSUPPORTED_STORAGES = ("ComplexFloatStorage", "ComplexDoubleStorage", "QInt8Storage", "QUInt8Storage",
                        "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage")

# PyTorch dtypes that minitorch_gpu lacks, so that a checkpoint naming one gets a clear error
UNSUPPORTED_DTYPES = ("complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf", "uint16", "uint32",
                      "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "qint8",
                      "quint8", "qint32", "quint4x2", "quint2x4", "bits8", "bits16", "int4", "uint4")


class StorageType:
    """What a checkpoint's ``torch.FloatStorage`` (and friends) loads as: a name and its element dtype."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: _dtype.dtype) -> None:
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"StorageType(dtype={self.dtype})"


STORAGE_TYPES = {name: StorageType(name, dt) for dt, name in STORAGE_NAME_OF.items()}
# an untyped storage counts bytes
UNTYPED = StorageType("UntypedStorage", _dtype.uint8)


class TypedStorage:
    """The flat, typed memory that tensors of a checkpoint view: what a ``map_location`` callable receives (on
    the CPU) and may return moved (``storage.cuda()``, ``storage.to(device)``)."""

    def __init__(self, array: Any, dtype: _dtype.dtype, device: _device_cls | str = "cpu") -> None:
        self._be = get_backend(device)
        self._array = array
        self.dtype = dtype

    @property
    def device(self) -> _device_cls:
        return self._be.device if self._be.device is not None else _device_cls("cpu")

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def size(self) -> int:
        return int(self._array.size)

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return int(self.dtype.itemsize)

    def nbytes(self) -> int:
        return self.size() * self.element_size()

    def to(self, device: Any = None, non_blocking: bool = False) -> TypedStorage:
        d = _device_cls(device)
        if d == self.device:
            return self
        host = self._be.to_numpy(self._array)
        be = get_backend(d)
        return TypedStorage(be.asarray(host), self.dtype, d)

    def cpu(self) -> TypedStorage:
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> TypedStorage:
        if device is None:
            return self.to("cuda")
        return self.to(device if isinstance(device, (str, _device_cls)) else _device_cls("cuda", device))

    def __repr__(self) -> str:
        return f"TypedStorage(size={self.size()}, dtype={self.dtype}, device={self.device})"


def host_storage(data: bytearray | memoryview | np.ndarray, dtype: _dtype.dtype) -> TypedStorage:
    """A CPU storage over ``data`` (raw bytes in native order, or an array such as a memmap)."""
    npd = dtype.np_dtype
    arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=npd)
    if dtype is _dtype.bool and arr.size and arr.view(np.uint8).max() > 1:
        arr = arr.view(np.uint8) != 0  # bytes other than 0/1 are not valid NumPy bools
    return TypedStorage(arr, dtype, "cpu")


# register_package: (priority, tagger, deserializer), consulted in priority order
_packages: list[tuple[int, Callable[[Any], str | None], Callable[[Any, str], Any]]] = []


def register_package(priority: int, tagger: Callable[[Any], str | None],
                     deserializer: Callable[[Any, str], Any]) -> None:
    """Register a location tagger (``tagger(storage) -> str | None``, asked when saving) and a deserializer
    (``deserializer(storage, location) -> storage | None``, asked when loading) ahead of the built-in ones;
    lower ``priority`` runs first, as in PyTorch."""
    if not callable(tagger):
        raise TypeError(f"tagger must be callable but got {type(tagger)}")
    if not callable(deserializer):
        raise TypeError(f"deserializer must be callable but got {type(deserializer)}")
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise TypeError(f"priority must be an int but got {type(priority)}")
    _packages.append((priority, tagger, deserializer))
    _packages.sort(key=lambda p: p[0])


def location_tag(storage: TypedStorage) -> str:
    """The location a checkpoint records for ``storage``: a registered tagger's answer, else ``cpu`` or
    ``cuda:N``."""
    for _, tagger, _ in _packages:
        tag = tagger(storage)
        if tag is not None:
            return tag
    d = storage.device
    if d.type == "cuda":
        return f"cuda:{d.index if d.index is not None else 0}"
    return "cpu"


def default_restore_location(storage: TypedStorage, location: str) -> TypedStorage:
    """``storage`` moved to the device a checkpoint recorded for it (``'cpu'``, ``'cuda:1'``...): a registered
    deserializer's answer, else the device itself, which must exist here."""
    if isinstance(location, bytes):
        location = location.decode("ascii")
    for _, _, deserializer in _packages:
        result = deserializer(storage, location)
        if result is not None:
            return result
    return storage.to(check_target(location))


def restorer(map_location: Any) -> Callable[[TypedStorage, str], TypedStorage]:
    """``map_location`` as ``fn(cpu_storage, location) -> storage``, with PyTorch's four forms."""
    check_map_location(map_location)
    if map_location is None:
        return default_restore_location
    if isinstance(map_location, (str, bytes, _device_cls)):
        target = map_location.decode("ascii") if isinstance(map_location, bytes) else str(map_location)
        check_target(target)
        return lambda storage, location: default_restore_location(storage, target)
    if isinstance(map_location, dict):
        table = map_location
        return lambda storage, location: default_restore_location(storage, table.get(location, location))
    fn = map_location

    def restore(storage: TypedStorage, location: str) -> TypedStorage:
        result = fn(storage, location)
        if result is None:
            return default_restore_location(storage, location)
        if not isinstance(result, TypedStorage):
            raise TypeError(f"map_location callable must return a storage or None, got {typename(result)}")
        return result

    return restore
