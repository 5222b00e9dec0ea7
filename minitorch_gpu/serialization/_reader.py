"""Reading PyTorch's checkpoint formats (the zip archive and the legacy single stream), from PyTorch or from us.

The archive is checked before anything is unpickled: every record sits in one folder (no absolute names, no
``..``), records are stored or deflated with sizes that fit the file (no zip bomb), and a storage record holds
exactly the bytes its persistent id declares. Storage keys must be plain names. Every problem raises
:class:`CheckpointError` (a RuntimeError) naming it.
"""
from __future__ import annotations

import io
import pickletools
import re
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from ._common import CheckpointError
from ._rebuild import TORCH_GLOBALS
from ._storage import StorageType, TypedStorage, host_storage
from ._unpickler import UnpicklingError, full_unpickler, restricted_load
from ._writer import LEGACY_MAGIC, LEGACY_PROTOCOL_VERSION

_KEY = re.compile(r"[A-Za-z0-9_]{1,128}")
# a deflate stream expands at most about 1032 times; a record claiming more is lying
_MAX_DEFLATE_RATIO = 1100

Restore = Callable[[TypedStorage, str], TypedStorage]


def _text(v: Any) -> Any:
    # Python 2 checkpoints, read with encoding='bytes', hold their internal strings as bytes
    return v.decode("ascii") if isinstance(v, bytes) else v


class _Storages:
    """The storages of one load, each read and restored (moved by ``map_location``) once."""

    def __init__(self, read: Callable[[str, StorageType, int], TypedStorage], restore: Restore) -> None:
        self.read = read
        self.restore = restore
        self.loaded: dict[str, tuple[TypedStorage, StorageType, int]] = {}

    def get(self, storage_type: Any, key: Any, location: Any, numel: Any) -> TypedStorage:
        key, location = _text(key), _text(location)
        if not isinstance(storage_type, StorageType):
            raise UnpicklingError(f"invalid storage record: {storage_type!r} is not a storage type")
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise CheckpointError(f"invalid storage key {key!r}: a key names a record inside the archive and "
                                  "must be a plain name")
        if not isinstance(location, str):
            raise UnpicklingError(f"invalid storage record: location {location!r} is not a string")
        if isinstance(numel, bool) or not isinstance(numel, int) or numel < 0:
            raise CheckpointError(f"invalid storage record: storage {key} declares {numel!r} elements")
        seen = self.loaded.get(key)
        if seen is not None:
            storage, st, n = seen
            if st.dtype is not storage_type.dtype or n != numel:
                raise CheckpointError(f"storage {key} is declared twice, as {n} x {st.dtype} and as {numel} x "
                                      f"{storage_type.dtype}")
            return storage
        storage = self.restore(self.read(key, storage_type, numel), location)
        self.loaded[key] = (storage, storage_type, numel)
        return storage


def _unpickle(data: IO[bytes], persistent_load: Callable[[Any], Any], weights_only: bool, pickle_module: Any,
              pickle_load_args: dict[str, Any]) -> Any:
    if weights_only:
        return restricted_load(data, persistent_load, encoding=pickle_load_args.get("encoding", "utf-8"))
    return full_unpickler(pickle_module, data, persistent_load, **pickle_load_args).load()


def _check_pid_head(pid: Any, weights_only: bool) -> str:
    if type(pid) is not tuple or not pid:
        raise UnpicklingError(f"persistent_load id must be a tuple, but got {type(pid).__name__}")
    typename = _text(pid[0])
    if typename != "storage" and (weights_only or typename != "module"):
        raise UnpicklingError(f"Only persistent_load of storage is allowed, but got {typename!r}")
    return typename


# ---------------------------------------------------------------------------------------------- zip format

def _check_sizes(info: zipfile.ZipInfo, total: int) -> None:
    if info.compress_type == zipfile.ZIP_STORED:
        if info.compress_size != info.file_size or info.header_offset + info.file_size > total:
            raise CheckpointError(f"record {info.filename} claims {info.file_size} bytes, more than the "
                                  f"{total}-byte file holds (truncated or corrupt)")
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        if info.file_size > info.compress_size * _MAX_DEFLATE_RATIO + 1024:
            raise CheckpointError(f"record {info.filename} claims to inflate {info.compress_size} bytes to "
                                  f"{info.file_size}: not a checkpoint (a zip bomb?)")
    else:
        raise CheckpointError(f"record {info.filename} uses zip compression method {info.compress_type}; "
                              "checkpoints are stored or deflated")


class _Archive:
    """A checked zip checkpoint: its folder, its records, and their bytes on request."""

    def __init__(self, fh: IO[bytes]) -> None:
        fh.seek(0, io.SEEK_END)
        self.total = fh.tell()
        fh.seek(0)
        self.fh = fh
        try:
            self.zf = zipfile.ZipFile(fh)
        # (zipfile raises NotImplementedError, a RuntimeError, for flags and versions that a flipped bit can make)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, struct.error, OSError,
                RuntimeError) as e:
            raise CheckpointError(f"PytorchStreamReader failed reading zip archive: {e} (truncated or corrupt "
                                  "file?)") from None
        names = [i.filename for i in self.zf.infolist()]
        if len(set(names)) != len(names):
            raise CheckpointError("the archive holds two records of the same name")
        for n in names:
            parts = n.split("/")
            if n.startswith("/") or "\\" in n or "\x00" in n or ".." in parts or ":" in parts[0]:
                raise CheckpointError(f"the archive holds a record named {n!r}, which points outside it")
        pkl = [n for n in names if n.count("/") == 1 and n.endswith("/data.pkl")]
        if len(pkl) != 1:
            if any(n.endswith("/constants.pkl") for n in names):
                raise CheckpointError("this is a TorchScript archive (torch.jit.save), which minitorch_gpu cannot "
                                      "load")
            raise CheckpointError("the archive has no single <name>/data.pkl record: not a torch.save checkpoint")
        self.prefix = pkl[0][:-len("data.pkl")]
        for n in names:
            if not n.startswith(self.prefix):
                raise CheckpointError(f"record {n!r} is outside the archive's folder {self.prefix!r}")
        if self.prefix + "constants.pkl" in names:
            raise CheckpointError("this is a TorchScript archive (torch.jit.save), which minitorch_gpu cannot load")
        self.names = set(names)

    def info(self, name: str) -> zipfile.ZipInfo:
        try:
            info = self.zf.getinfo(self.prefix + name)
        except KeyError:
            raise CheckpointError(f"the archive has no record {name}") from None
        _check_sizes(info, self.total)
        return info

    def read(self, name: str, limit: int | None = None) -> bytes:
        info = self.info(name)
        if limit is not None and info.file_size > limit:
            raise CheckpointError(f"record {name} holds {info.file_size} bytes, more than {limit}")
        try:
            with self.zf.open(info) as r:
                data = r.read()
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, struct.error, OSError, RuntimeError) as e:
            raise CheckpointError(f"cannot read record {name}: {e} (truncated or corrupt file?)") from None
        if len(data) != info.file_size:
            raise CheckpointError(f"record {name} holds {len(data)} bytes, not the {info.file_size} it declares")
        return data

    def data_offset(self, info: zipfile.ZipInfo) -> int:
        self.fh.seek(info.header_offset)
        head = self.fh.read(30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            raise CheckpointError(f"record {info.filename} has a corrupt local header")
        n, m = struct.unpack("<HH", head[26:30])
        return info.header_offset + 30 + n + m


def load_zip(fh: IO[bytes], restore: Restore, weights_only: bool, pickle_module: Any,
             pickle_load_args: dict[str, Any], mmap_path: str | None) -> Any:
    arch = _Archive(fh)
    swap = False
    if arch.prefix + "byteorder" in arch.names:
        order = arch.read("byteorder", limit=16)
        if order not in (b"little", b"big"):
            raise CheckpointError(f"Unknown endianness type: {order.decode('latin-1')!r}")
        swap = order.decode() != sys.byteorder
    data_pkl = arch.read("data.pkl")

    def read_storage(key: str, storage_type: StorageType, numel: int) -> TypedStorage:
        dtype = storage_type.dtype
        info = arch.info(f"data/{key}")
        nbytes = numel * dtype.itemsize
        if info.file_size != nbytes:
            raise CheckpointError(f"record data/{key} holds {info.file_size} bytes, but the checkpoint declares "
                                  f"{numel} elements of {dtype} ({nbytes} bytes)")
        if mmap_path is not None and numel and not swap and info.compress_type == zipfile.ZIP_STORED:
            arr = np.memmap(mmap_path, dtype=dtype.np_dtype, mode="c", offset=arch.data_offset(info), shape=(numel,))
            return host_storage(arr, dtype)
        raw = bytearray(arch.read(f"data/{key}"))
        storage = host_storage(raw, dtype)
        if swap and dtype.itemsize > 1:
            storage._array.byteswap(inplace=True)
        return storage

    storages = _Storages(read_storage, restore)

    def persistent_load(pid: Any) -> Any:
        if _check_pid_head(pid, weights_only) != "storage" or len(pid) != 5:
            raise UnpicklingError(f"invalid storage record {pid!r}: expected ('storage', type, key, location, numel)")
        return storages.get(*pid[1:])

    return _unpickle(io.BytesIO(data_pkl), persistent_load, weights_only, pickle_module, pickle_load_args)


# -------------------------------------------------------------------------------------------- legacy format

_MARK = object()
_UNKNOWN = object()


class _Name:
    __slots__ = ("full",)

    def __init__(self, module: str, name: str) -> None:
        self.full = f"{module}.{name}"


def _pop_to_mark(stack: list[Any]) -> list[Any]:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is _MARK:
            items = stack[i + 1:]
            del stack[i:]
            return items
    raise CheckpointError("the pickle is corrupt (no mark on the stack)")


def scan_storages(fh: IO[bytes]) -> dict[str, tuple[StorageType, int]]:
    """The storages (key -> type, numel) that the pickle at ``fh``'s position refers to, found without running
    it: an abstract pickle machine that keeps only constants, tuples and global names, and records every
    persistent id. Leaves ``fh`` just past the pickle's STOP."""
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    found: dict[str, tuple[StorageType, int]] = {}
    try:
        arg: Any
        for op, arg, _ in pickletools.genops(fh):
            name = op.name
            if name == "STOP":
                break
            if name == "MARK":
                stack.append(_MARK)
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                stack.append(memo.get(arg, _UNKNOWN))
            elif name == "GLOBAL":
                module, _, gname = arg.partition(" ")
                stack.append(_Name(module, gname))
            elif name == "STACK_GLOBAL":
                gname, module = stack.pop(), stack.pop()
                stack.append(_Name(module, gname) if isinstance(module, str) and isinstance(gname, str)
                             else _UNKNOWN)
            elif name == "TUPLE":
                stack.append(tuple(_pop_to_mark(stack)))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                if len(stack) < n:
                    raise IndexError("stack underflow")
                stack[-n:] = [tuple(stack[-n:])]
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name in ("NONE", "NEWTRUE", "NEWFALSE"):
                stack.append({"NONE": None, "NEWTRUE": True, "NEWFALSE": False}[name])
            elif name == "BINPERSID":
                _record(stack.pop(), found)
                stack.append(_UNKNOWN)
            elif op.arg is not None and not op.stack_before and len(op.stack_after) == 1:
                stack.append(arg)  # a constant: int, float, string, bytes
            else:
                before = op.stack_before
                if pickletools.markobject in before:
                    _pop_to_mark(stack)
                    n = before.index(pickletools.markobject)
                else:
                    n = len(before)
                if len(stack) < n:
                    raise IndexError("stack underflow")
                del stack[len(stack) - n:]
                stack.extend([_UNKNOWN] * len(op.stack_after))
        else:
            raise ValueError("the pickle has no STOP")
    except (ValueError, IndexError, EOFError, UnicodeError, struct.error) as e:
        raise CheckpointError(f"the checkpoint's pickle is corrupt or truncated ({e})") from None
    return found


def _record(pid: Any, found: dict[str, tuple[StorageType, int]]) -> None:
    if type(pid) is not tuple or len(pid) != 6 or _text(pid[0]) != "storage":
        return  # not a storage: the real unpickling judges it
    st, key, numel = pid[1], _text(pid[2]), pid[4]
    storage_type = TORCH_GLOBALS.get(st.full) if isinstance(st, _Name) else None
    if not isinstance(storage_type, StorageType):
        raise CheckpointError(f"the checkpoint stores a storage of unsupported type "
                              f"{st.full if isinstance(st, _Name) else st!r}")
    if not isinstance(key, str) or isinstance(numel, bool) or not isinstance(numel, int) or numel < 0:
        raise CheckpointError(f"invalid storage record {pid[2]!r} with {numel!r} elements")
    prev = found.get(key)
    if prev is not None and (prev[0].dtype is not storage_type.dtype or prev[1] != numel):
        raise CheckpointError(f"storage {key} is declared twice with different types or sizes")
    found[key] = (storage_type, numel)


def _no_pid(pid: Any) -> Any:
    raise UnpicklingError("unsupported persistent id encountered")


def _header(fh: IO[bytes], weights_only: bool, pickle_module: Any, pickle_load_args: dict[str, Any]) -> Any:
    return _unpickle(fh, _no_pid, weights_only, pickle_module, pickle_load_args)


def load_legacy(fh: IO[bytes], restore: Restore, weights_only: bool, pickle_module: Any,
                pickle_load_args: dict[str, Any]) -> Any:
    if _header(fh, weights_only, pickle_module, pickle_load_args) != LEGACY_MAGIC:
        raise RuntimeError("Invalid magic number; corrupt file?")
    version = _header(fh, weights_only, pickle_module, pickle_load_args)
    if version != LEGACY_PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    sys_info = _header(fh, weights_only, pickle_module, pickle_load_args)
    little = not isinstance(sys_info, dict) or sys_info.get("little_endian", True) is not False
    start = fh.tell()
    declared = scan_storages(fh)
    keys = restricted_load(fh, _no_pid)
    if not isinstance(keys, list) or not all(isinstance(_text(k), str) for k in keys):
        raise CheckpointError("the checkpoint's storage list is not a list of keys")
    raw_storages: dict[str, TypedStorage] = {}
    for key in map(_text, keys):
        if key not in declared:
            raise CheckpointError(f"storage {key!r} is listed but no tensor refers to it")
        storage_type, numel = declared[key]
        head = fh.read(8)
        if len(head) != 8:
            raise CheckpointError(f"the file ends before storage {key} (truncated?)")
        (n,) = struct.unpack("<q" if little else ">q", head)
        if n != numel:
            raise CheckpointError(f"storage {key} holds {n} elements, but the checkpoint declares {numel}")
        nbytes = numel * storage_type.dtype.itemsize
        data = bytearray(fh.read(nbytes))
        if len(data) != nbytes:
            raise CheckpointError(f"the file ends inside storage {key} (truncated?)")
        storage = host_storage(data, storage_type.dtype)
        if little != (sys.byteorder == "little") and storage.dtype.itemsize > 1:
            storage._array.byteswap(inplace=True)
        raw_storages[key] = storage

    def read_storage(key: str, storage_type: StorageType, numel: int) -> TypedStorage:
        if key not in raw_storages:
            raise CheckpointError(f"the checkpoint refers to storage {key!r}, which it does not contain")
        return raw_storages[key]

    storages = _Storages(read_storage, restore)
    views: dict[str, TypedStorage] = {}

    def persistent_load(pid: Any) -> Any:
        if _check_pid_head(pid, weights_only) == "module":
            return pid[1]  # a module class, saved with its source; only under weights_only=False
        if len(pid) != 6:
            raise UnpicklingError(f"invalid storage record {pid!r}")
        root = storages.get(*pid[1:5])
        view = pid[5]
        if view is None:
            return root
        if type(view) is not tuple or len(view) != 3:
            raise UnpicklingError(f"invalid storage view {view!r}")
        view_key, offset, size = _text(view[0]), view[1], view[2]
        if view_key in views:
            return views[view_key]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (offset, size)) \
                or offset + size > root.size():
            raise CheckpointError(f"storage view {view!r} reaches outside its storage of {root.size()} elements")
        views[view_key] = TypedStorage(root._array[offset:offset + size], root.dtype, root.device)
        return views[view_key]

    fh.seek(start)
    return _unpickle(fh, persistent_load, weights_only, pickle_module, pickle_load_args)
