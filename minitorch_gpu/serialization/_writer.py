"""Writing PyTorch's checkpoint formats: the zip archive of ``torch.save`` (``<name>/data.pkl``, one raw record
per storage under ``<name>/data/<key>``, ``version``, ``byteorder``...) and the legacy single-stream format of
``_use_new_zipfile_serialization=False``.

Tensors pickle as PyTorch's do, so that PyTorch's ``torch.load`` (weights_only included) reads our files: a
call of ``torch._utils._rebuild_tensor_v2`` whose first argument is a persistent id
``('storage', torch.FloatStorage, key, location, numel)`` naming a storage written beside the pickle. Tensors
that view one memory block share one storage, as in PyTorch.
"""
from __future__ import annotations

import collections
import hashlib
import io
import os
import pickle
import struct
import sys
import zipfile
from collections.abc import Iterator
from functools import lru_cache
from typing import IO, Any

import numpy as np

from .. import _dtype
from .._device import device as _device_cls
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor, _user_dict
from ._storage import STORAGE_NAME_OF, TypedStorage, location_tag

# the legacy format's header, as PyTorch writes it
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL_VERSION = 1001
# PyTorch's zip records start on 64-byte boundaries, so that a loader can map storages straight from the file
_ALIGNMENT = 64
_ZIP_VERSION = b"3\n"
_EPOCH = (1980, 1, 1, 0, 0, 0)


class TorchGlobal:
    """A global as a PyTorch checkpoint names it (``torch._utils._rebuild_tensor_v2``), written as such without
    importing torch. Callable only so that pickle accepts it as the function of a reduce tuple."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args: Any) -> Any:
        raise TypeError(f"{self.module}.{self.name} is a name for pickling, not a function")


@lru_cache(maxsize=None)
def _g(module: str, name: str) -> TorchGlobal:
    # one object per name, so that the pickle memo writes each global once
    return TorchGlobal(module, name)


class _StorageRef:
    """A storage met while pickling: becomes a persistent id, its bytes a record of its own."""

    __slots__ = ("key", "array", "be", "dtype", "location")

    def __init__(self, key: str, array: Any, be: Any, dtype: _dtype.dtype, location: str) -> None:
        self.key = key
        self.array = array
        self.be = be
        self.dtype = dtype
        self.location = location

    @property
    def numel(self) -> int:
        return int(self.array.size)

    def host_bytes(self) -> memoryview:
        host = np.ascontiguousarray(self.be.to_numpy(self.array)).reshape(-1)
        return memoryview(host.view(np.uint8))  # type: ignore[arg-type]


def _pickler_base(pickle_module: Any) -> type:
    # NOTE: the C pickler resolves every global by importing it, so it cannot write ``torch...`` names without
    # torch; the Python pickler lets a subclass write them. Only the pickle holds structure (storages are raw
    # records), so its speed does not matter.
    if pickle_module is None or pickle_module is pickle:
        return pickle._Pickler  # type: ignore[attr-defined]
    base = getattr(pickle_module, "Pickler", None)
    if isinstance(base, type) and issubclass(base, pickle._Pickler):  # type: ignore[attr-defined]
        return base  # dill's Pickler, for one, derives from Python's
    raise TypeError(f"pickle_module {getattr(pickle_module, '__name__', pickle_module)!r} is not supported: its "
                    "Pickler must derive from Python's pickle._Pickler (the standard pickle module does)")


class _Collector:
    """The storages of one save: tensors viewing one block of memory get one key."""

    def __init__(self, legacy: bool) -> None:
        self.legacy = legacy
        self.by_root: dict[int, _StorageRef] = {}
        self.refs: list[_StorageRef] = []
        self.keep: list[Any] = []  # the roots, so that their ids stay unique during the save

    def _new(self, array: Any, be: Any, dtype: _dtype.dtype) -> _StorageRef:
        key = str(len(self.refs))
        location = location_tag(TypedStorage(array, dtype, be.device))
        ref = _StorageRef(key, array, be, dtype, location)
        self.refs.append(ref)
        return ref

    def storage_of(self, t: Tensor) -> tuple[_StorageRef, int, tuple[int, ...], tuple[int, ...]]:
        """(storage, offset, size, stride) of ``t`` in elements: a view shares its base's storage; memory that
        cannot be described that way (an unusual NumPy view) is copied into a storage of its own."""
        be, arr = t._be, t._data
        size = tuple(int(s) for s in arr.shape)
        root = arr
        while isinstance(root.base, type(arr)):
            root = root.base
        item = arr.itemsize
        if root is not arr and root.dtype == arr.dtype and be.is_contiguous(root) and root.size:
            delta = be.data_ptr(arr) - be.data_ptr(root)
            strides = tuple(int(s) for s in arr.strides)
            if delta >= 0 and delta % item == 0 and all(s >= 0 and s % item == 0 for s in strides):
                offset = delta // item
                stride = tuple(s // item for s in strides)
                extent = sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else -1
                if offset + extent < root.size:
                    return self._shared(root, be, t.dtype), offset, size, stride
        if be.is_contiguous(arr):
            return self._shared(arr, be, t.dtype), 0, size, _contig(size)
        own = be.ascontiguous(arr)
        return self._new(own.reshape(-1), be, t.dtype), 0, size, _contig(size)

    def _shared(self, root: Any, be: Any, dtype: _dtype.dtype) -> _StorageRef:
        ref = self.by_root.get(id(root))
        if ref is None or ref.dtype is not dtype:
            # (a second dtype over the same memory gets a copy: one storage has one element type here)
            ref = self._new(root.reshape(-1), be, dtype)
            self.by_root.setdefault(id(root), ref)
            self.keep.append(root)
        return ref


def _contig(size: tuple[int, ...]) -> tuple[int, ...]:
    stride, acc = [], 1
    for n in reversed(size):
        stride.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(stride))


def _make_pickler(base: type, file: IO[bytes], protocol: int, storages: _Collector) -> Any:
    class TorchPickler(base):  # type: ignore[misc, valid-type]
        def persistent_id(self, obj: Any) -> Any:
            if type(obj) is not _StorageRef:
                return None
            if self.proto < 1:
                # (protocol 0 writes a persistent id as text, which cannot hold the storage's tuple)
                raise pickle.PicklingError("pickle protocol 0 cannot store tensors: use protocol 1 or higher "
                                           "(the default is 2)")
            storage_type = _g("torch", STORAGE_NAME_OF[obj.dtype])
            if storages.legacy:
                return ("storage", storage_type, obj.key, obj.location, obj.numel, None)
            return ("storage", storage_type, obj.key, obj.location, obj.numel)

        def save(self, obj: Any, save_persistent_id: bool = True) -> None:
            if isinstance(obj, _dtype.dtype):
                self._save_torch_global(obj, _g("torch", obj.name))
                return
            if type(obj) is TorchGlobal:
                self._save_torch_global(obj, obj)
                return
            super().save(obj, save_persistent_id)

        def _save_torch_global(self, obj: Any, g: TorchGlobal) -> None:
            self.framer.commit_frame()
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            if self.proto >= 4:
                self.save(g.module)
                self.save(g.name)
                self.write(pickle.STACK_GLOBAL)
            else:
                self.write(pickle.GLOBAL + f"{g.module}\n{g.name}\n".encode("utf-8"))
            self.memoize(obj)

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, Tensor):
                return _reduce_tensor(obj, storages)
            if type(obj) is _device_cls:
                args = (obj.type,) if obj.index is None else (obj.type, obj.index)
                return (_g("torch", "device"), args)
            if type(obj) is Size:
                return (_g("torch", "Size"), (tuple(obj),))
            return NotImplemented

    return TorchPickler(file, protocol=protocol)


def _reduce_tensor(t: Tensor, storages: _Collector) -> tuple[Any, tuple[Any, ...]]:
    state = _user_dict(t)
    if isinstance(t, Parameter):
        data = Tensor._make(t._data, t._be)
        if state:
            return (_g("torch._utils", "_rebuild_parameter_with_state"),
                    (data, t.requires_grad, collections.OrderedDict(), state))
        return (_g("torch._utils", "_rebuild_parameter"), (data, t.requires_grad, collections.OrderedDict()))
    ref, offset, size, stride = storages.storage_of(t)
    args: tuple[Any, ...] = (ref, offset, size, stride, t.requires_grad, collections.OrderedDict())
    if state:
        # PyTorch's form for a tensor carrying Python attributes
        return (_g("torch._tensor", "_rebuild_from_type_v2"),
                (_g("torch._utils", "_rebuild_tensor_v2"), _g("torch", "Tensor"), args, state))
    return (_g("torch._utils", "_rebuild_tensor_v2"), args)


def _pickle(obj: Any, pickle_module: Any, protocol: int, storages: _Collector) -> bytes:
    buf = io.BytesIO()
    _make_pickler(_pickler_base(pickle_module), buf, protocol, storages).dump(obj)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------- zip format

def _write_record(zf: zipfile.ZipFile, name: str, data: bytes | memoryview) -> None:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    nbytes = len(data)
    zip64 = nbytes * 1.05 > zipfile.ZIP64_LIMIT
    start = zf.fp.tell() + 30 + len(name.encode("utf-8")) + (20 if zip64 else 0) + 4  # type: ignore[union-attr]
    pad = -start % _ALIGNMENT
    # the padding sits in an extra field of PyTorch's own id ("FB"), which every zip reader skips
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
    info.file_size = nbytes
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


def archive_name(f: Any) -> str:
    """The folder PyTorch puts the records in: the file's name without its extension, else ``archive``."""
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    return "archive"


def write_zip(obj: Any, fh: IO[bytes], name: str, pickle_module: Any, protocol: int) -> None:
    storages = _Collector(legacy=False)
    data_pkl = _pickle(obj, pickle_module, protocol, storages)
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, f"{name}/data.pkl", data_pkl)
        _write_record(zf, f"{name}/.format_version", b"1")
        _write_record(zf, f"{name}/.storage_alignment", str(_ALIGNMENT).encode())
        _write_record(zf, f"{name}/byteorder", sys.byteorder.encode())
        for ref in storages.refs:
            _write_record(zf, f"{name}/data/{ref.key}", ref.host_bytes())
        _write_record(zf, f"{name}/version", _ZIP_VERSION)
        # an id made from the contents (the records' CRCs, which the zip computed anyway) rather than at random
        # as PyTorch does, so that saving the same object twice gives the same bytes
        digest = hashlib.sha256(b"".join(struct.pack("<I", i.CRC) for i in zf.infolist()))
        serial_id = str(int.from_bytes(digest.digest()[:16], "little")).rjust(40, "0")
        _write_record(zf, f"{name}/.data/serialization_id", serial_id.encode())


# -------------------------------------------------------------------------------------------- legacy format

def _legacy_storages(storages: _Collector) -> Iterator[tuple[str, _StorageRef]]:
    # PyTorch writes them in the order of their keys sorted as strings
    for key in sorted(r.key for r in storages.refs):
        yield key, storages.refs[int(key)]


def write_legacy(obj: Any, fh: IO[bytes], pickle_module: Any, protocol: int) -> None:
    storages = _Collector(legacy=True)
    sys_info = {"protocol_version": LEGACY_PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    head = b"".join(pickle.dumps(v, protocol=protocol) for v in (LEGACY_MAGIC, LEGACY_PROTOCOL_VERSION, sys_info))
    body = _pickle(obj, pickle_module, protocol, storages)
    fh.write(head)
    fh.write(body)
    fh.write(pickle.dumps([k for k, _ in _legacy_storages(storages)], protocol=protocol))
    for _, ref in _legacy_storages(storages):
        fh.write(struct.pack("<q" if sys.byteorder == "little" else ">q", ref.numel))
        fh.write(ref.host_bytes())
