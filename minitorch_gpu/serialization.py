"""Checkpoints: ``mt.save(obj, f)`` and ``mt.load(f, map_location=None)``, in the safetensors format.

A checkpoint is one safetensors file. Its tensors are the tensors of ``obj`` (each distinct tensor object
once, under a readable key: for a state dict the parameter names themselves, so PyTorch's
``safetensors.torch.load_file`` reads our files as ordinary state dicts). The structure around them (nested
dicts, lists, tuples and plain values) is JSON in the header's ``__metadata__``, with tensors replaced by
references to their keys. A safetensors file without our metadata (e.g. written by
``safetensors.torch.save_file``) loads as a flat ``{name: tensor}`` dict.

Nothing is ever unpickled, so loading a file can never run code: the only things a checkpoint can
produce are tensors, numbers, strings, bools, None, dtypes, devices, sizes, and dicts, lists, tuples and
sets of those. The header is checked here before safetensors sees the bytes (every offset inside the
data, no overlaps or gaps, sizes matching shapes and dtypes), and every problem raises
:class:`CheckpointError` naming it. Saving to a path is atomic: the new file is written and fsynced next
to the old one and then renamed over it, so a crash mid-save leaves the previous checkpoint intact.
"""
import collections
import io
import json
import math
import os
import sys
import uuid

import numpy as np

from . import _dtype
from ._device import device as _device_cls
from .tensor import Size, Tensor

__all__ = ["save", "load"]

# the __metadata__ entry that holds our structure JSON
_STRUCTURE_KEY = "minitorch_gpu"
_FORMAT_VERSION = 1
# safetensors' own cap on the header size: a larger length field is corruption, not a big model
_MAX_HEADER_BYTES = 100_000_000

# safetensors dtype codes of the dtypes minitorch_gpu has, and their element sizes
_CODE_OF = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
            "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64"}
_DTYPE_OF_CODE = {code: name for name, code in _CODE_OF.items()}
_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "F16": 2, "BF16": 2, "F32": 4, "F64": 8,
             "U16": 2, "U32": 4, "U64": 8, "C64": 8, "F8_E4M3": 1, "F8_E5M2": 1}


class CheckpointError(RuntimeError):
    """A file that is not a loadable minitorch_gpu checkpoint: corrupt, truncated, inconsistent, or in a
    format that would need unpickling."""


# ---------------------------------------------------------------------------------------------- saving

def _typename(obj):
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _parameter_cls():
    from .nn.parameter import Parameter
    return Parameter


class _Encoder:
    """Turns an object tree into JSON-able data plus a dict of host arrays (one per distinct tensor)."""

    def __init__(self):
        self.arrays = {}
        self.refs = {}      # id(tensor) -> its reference node, so a tensor seen twice is stored once
        self.keep = []      # the tensors themselves, so their ids stay unique while encoding
        self.active = set()  # ids of containers on the current path, to refuse cycles
        self.param_cls = _parameter_cls()

    def _key(self, path):
        base = ".".join(path) if path else "tensor"
        key, n = base, 0
        while key in self.arrays or key == "__metadata__":
            n += 1
            key = f"{base}#{n}"
        return key

    def tensor(self, t, path):
        ref = self.refs.get(id(t))
        if ref is not None:
            return ref
        arr = t._be.to_numpy(t._data)
        if not arr.flags.c_contiguous:
            arr = arr.copy(order="C")  # (np.ascontiguousarray would turn a 0-d array into 1-d)
        key = self._key(path)
        self.arrays[key] = arr
        ref = {"$tensor": key, "device": str(t.device)}
        if t.requires_grad:
            ref["requires_grad"] = True
        if isinstance(t, self.param_cls):
            ref["parameter"] = True
        self.refs[id(t)] = ref
        self.keep.append(t)
        return ref

    def encode(self, obj, path):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj) if math.isfinite(obj) else {"$float": repr(float(obj))}
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, (np.integer, np.bool_)):
            return self.encode(obj.item(), path)
        if isinstance(obj, _dtype.dtype):
            return {"$dtype": obj.name}
        if isinstance(obj, _device_cls):
            return {"$device": str(obj)}
        if isinstance(obj, Size):
            return {"$size": [int(s) for s in obj]}
        if isinstance(obj, (dict, list, tuple, set, frozenset)):
            if id(obj) in self.active:
                raise ValueError("minitorch_gpu.save: the object contains a reference cycle, which a checkpoint "
                                 "cannot represent")
            self.active.add(id(obj))
            try:
                return self._container(obj, path)
            finally:
                self.active.discard(id(obj))
        raise TypeError(f"minitorch_gpu.save cannot store an object of type {_typename(obj)}: checkpoints hold "
                        "tensors, numbers, strings, bools, None, dtypes, devices and dicts/lists/tuples/sets of "
                        "them (nothing is pickled)")

    def _container(self, obj, path):
        if isinstance(obj, list):
            return [self.encode(v, path + [str(i)]) for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"$tuple": [self.encode(v, path + [str(i)]) for i, v in enumerate(obj)]}
        if isinstance(obj, (set, frozenset)):
            tag = "$set" if isinstance(obj, set) else "$frozenset"
            return {tag: [self._dict_key(v) for v in obj]}
        items = [[self._dict_key(k), self.encode(v, path + [str(k)])] for k, v in obj.items()]
        node = {"$odict" if isinstance(obj, collections.OrderedDict) else "$dict": items}
        # Module.state_dict() (an OrderedDict) keeps per-module versions in ``_metadata``, which
        # load_state_dict reads
        meta = getattr(obj, "_metadata", None) if isinstance(obj, collections.OrderedDict) else None
        if meta is not None:
            node["_metadata"] = self.encode(meta, path + ["_metadata"])
        return node

    def _dict_key(self, k):
        if isinstance(k, Tensor):
            raise TypeError("minitorch_gpu.save: tensors cannot be dict keys or set members in a checkpoint")
        return self.encode(k, [])


def _structure_json(obj):
    enc = _Encoder()
    root = enc.encode(obj, [])
    text = json.dumps({"version": _FORMAT_VERSION, "root": root}, allow_nan=False, separators=(",", ":"))
    return text, enc.arrays


def _serialize(obj):
    from safetensors.numpy import save as _st_save
    text, arrays = _structure_json(obj)
    # one metadata entry only: safetensors writes metadata in hash-map order, and a single key keeps the
    # bytes of a checkpoint a pure function of its contents
    return _st_save(arrays, metadata={_STRUCTURE_KEY: text})


def _fsync_dir(path):
    # the rename is durable only once the directory entry is on disk; not every platform can open a dir
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write(path, data):
    """Write ``data`` to ``path`` through a temporary file in the same folder, fsync it and rename it over
    ``path``; on any failure the temporary file is removed and ``path`` is untouched."""
    # through a symlink, replace the file it points to (as a plain write would), not the link itself
    path = os.path.realpath(path)
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        try:
            fh = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save ``obj`` (a tensor, a state dict, an optimizer state dict, or nested dicts/lists/tuples of tensors
    and plain values) to ``f``: a path (written atomically) or a binary file object.

    The file is a safetensors file (see the module docstring); ``pickle_module`` and ``pickle_protocol`` are
    accepted for signature compatibility with PyTorch but must be left unset, since nothing is pickled."""
    if pickle_module is not None or pickle_protocol is not None:
        raise TypeError("minitorch_gpu.save never pickles: pickle_module and pickle_protocol must not be given")
    data = _serialize(obj)
    if isinstance(f, (str, os.PathLike)):
        _atomic_write(os.fspath(f), data)
        return
    if not hasattr(f, "write"):
        raise AttributeError(f"minitorch_gpu.save: f must be a path or a binary file object with write(), got "
                             f"{_typename(f)}")
    if isinstance(f, io.TextIOBase):
        raise TypeError("minitorch_gpu.save: the file object must be opened in binary mode ('wb')")
    f.write(data)
    if hasattr(f, "flush"):
        f.flush()


# --------------------------------------------------------------------------------------------- loading

def _bad(msg):
    return CheckpointError(f"not a valid minitorch_gpu checkpoint: {msg}")


def _sniff_foreign(buf):
    """A CheckpointError when the bytes are recognisably some other format, else None."""
    if buf[:4] == b"PK\x03\x04":
        return CheckpointError(
            "not a safetensors checkpoint: looks like a zip archive holding a pickle file (PyTorch's "
            "torch.save format); minitorch_gpu never unpickles. Convert it with safetensors.torch.save_file")
    if len(buf) >= 2 and buf[0] == 0x80 and 2 <= buf[1] <= 5:
        return CheckpointError(
            "not a safetensors checkpoint: looks like a pickle file (PyTorch's legacy torch.save format or "
            "pickle.dump); minitorch_gpu never unpickles. Convert it with safetensors.torch.save_file")
    if buf[:6] == b"\x93NUMPY":
        return CheckpointError("not a safetensors checkpoint: looks like a NumPy .npy file; load it with "
                               "numpy.load and convert with minitorch_gpu.from_numpy")
    if buf[:2] == b"\x1f\x8b":
        return CheckpointError("not a safetensors checkpoint: looks like a gzip-compressed file; decompress "
                               "it first")
    return None


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise _bad(f"the header repeats the key {k!r}")
        d[k] = v
    return d


def _reject_constant(name):
    raise _bad(f"the header contains the non-JSON constant {name}")


def _parse_json(text, what):
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except CheckpointError:
        raise
    except RecursionError:
        raise _bad(f"the {what} is nested too deeply") from None
    except ValueError as e:
        raise _bad(f"the {what} is not valid JSON ({e})") from None


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _check_header(buf):
    """Validate the safetensors header of ``buf``: returns (entries, metadata) where entries maps each
    tensor name to (dtype code, shape, begin, end) in data order. Every inconsistency raises."""
    size = len(buf)
    if size < 8:
        foreign = _sniff_foreign(buf)
        if foreign is not None:
            raise foreign
        raise _bad(f"the file is {size} bytes long, too short for the 8-byte header length (truncated?)")
    n = int.from_bytes(buf[:8], "little")
    if n > _MAX_HEADER_BYTES or 8 + n > size:
        foreign = _sniff_foreign(buf)
        if foreign is not None:
            raise foreign
        if n > _MAX_HEADER_BYTES:
            raise _bad(f"the header length field says {n} bytes, above the {_MAX_HEADER_BYTES}-byte limit "
                       "(corrupt file, or not a safetensors file)")
        raise _bad(f"the header length field says {n} bytes but the file has only {size - 8} bytes after it "
                   "(truncated?)")
    raw = bytes(buf[8:8 + n])
    if not raw.startswith(b"{"):
        foreign = _sniff_foreign(buf)
        if foreign is not None:
            raise foreign
        raise _bad("the header is not a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad("the header is not valid UTF-8") from None
    header = _parse_json(text, "header")
    if not isinstance(header, dict):
        raise _bad("the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise _bad("the header's __metadata__ must map strings to strings")
    data_len = size - 8 - n
    entries = []
    for name, info in header.items():
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise _bad(f"tensor {name!r}: a header entry needs exactly 'dtype', 'shape' and 'data_offsets'")
        code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if not isinstance(code, str) or code not in _ITEMSIZE:
            raise _bad(f"tensor {name!r}: unknown dtype {code!r}")
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise _bad(f"tensor {name!r}: shape {shape!r} is not a list of non-negative integers")
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets) \
                or not 0 <= offsets[0] <= offsets[1]:
            raise _bad(f"tensor {name!r}: data_offsets {offsets!r} is not a pair 0 <= begin <= end")
        begin, end = offsets
        if end > data_len:
            raise _bad(f"tensor {name!r}: data_offsets [{begin}, {end}] point outside the {data_len}-byte data "
                       "section (truncated file or lying header)")
        nbytes = math.prod(shape) * _ITEMSIZE[code]
        if end - begin != nbytes:
            raise _bad(f"tensor {name!r}: shape {shape} of dtype {code} needs {nbytes} bytes but data_offsets "
                       f"[{begin}, {end}] span {end - begin}")
        entries.append((begin, end, name, code, tuple(shape)))
    entries.sort(key=lambda e: (e[0], e[1]))
    expected, prev = 0, None
    for begin, end, name, _, _ in entries:
        if begin < expected:
            raise _bad(f"tensor {name!r} overlaps tensor {prev!r} in the data section")
        if begin > expected:
            raise _bad(f"there are {begin - expected} unaccounted bytes before tensor {name!r} in the data "
                       "section")
        expected, prev = end, name
    if expected != data_len:
        raise _bad(f"{data_len - expected} bytes follow the last tensor's data (a corrupt header or extra data)")
    return {e[2]: (e[3], e[4], e[0], e[1]) for e in entries}, metadata


def _host_arrays(buf, entries):
    """name -> NumPy array of every tensor, read through safetensors once the header has been checked."""
    import safetensors
    try:
        flat = safetensors.deserialize(bytes(buf))
    except Exception as e:  # safetensors' own checks, should a case slip past ours
        raise _bad(f"safetensors could not read the file ({e})") from None
    out = {}
    for name, view in flat:
        if name not in entries:
            raise _bad(f"safetensors read a tensor {name!r} that the header check did not see")
        code, shape, _, _ = entries[name]
        dtname = _DTYPE_OF_CODE.get(code)
        if dtname is None:
            raise CheckpointError(f"tensor {name!r} has dtype {code}, which minitorch_gpu does not support")
        dt = getattr(_dtype, dtname)
        if dt.np_dtype is None:
            raise CheckpointError(f"tensor {name!r} is {dtname}, which needs the ml_dtypes package")
        data = view["data"]
        if not isinstance(data, bytearray):
            data = bytearray(data)  # a writable buffer, so the tensor can be modified in place
        npd = dt.np_dtype
        arr = np.frombuffer(data, dtype=npd).reshape(shape) if len(data) else np.zeros(shape, dtype=npd)
        if sys.byteorder != "little" and arr.dtype.itemsize > 1:
            arr = arr.byteswap()  # safetensors data is little-endian
        if code == "BOOL" and arr.size and arr.view(np.uint8).max() > 1:
            arr = arr.view(np.uint8) != 0  # bytes other than 0/1 are not valid NumPy bools
        out[name] = arr
    return out


def _read_all(f):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return fh.read()
    if not hasattr(f, "read"):
        raise AttributeError(f"minitorch_gpu.load: f must be a path or a binary file object with read(), got "
                             f"{_typename(f)}")
    data = f.read()
    if isinstance(data, str):
        raise TypeError("minitorch_gpu.load: the file object must be opened in binary mode ('rb')")
    return data


def _check_target(dev):
    d = _device_cls(dev)
    if d.type == "cuda":
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but minitorch_gpu.cuda."
                               "is_available() is False. If you are running on a CPU-only machine, please use "
                               "minitorch_gpu.load with map_location=minitorch_gpu.device('cpu') to map your "
                               "storages to the CPU.")
        n = cuda.device_count()
        if d.index is not None and d.index >= n:
            raise RuntimeError(f"Attempting to deserialize object on CUDA device {d.index} but minitorch_gpu."
                               f"cuda.device_count() is {n}. Please use minitorch_gpu.load with map_location to "
                               "map your storages to an existing device.")
    return d


class _Materializer:
    """Builds tensors from host arrays on the device that ``map_location`` chooses, once per key."""

    def __init__(self, arrays, map_location):
        self.arrays = arrays
        self.map_location = map_location
        self.done = {}
        if map_location is None or isinstance(map_location, (str, _device_cls)):
            self.fixed = None if map_location is None else _check_target(map_location)
        elif isinstance(map_location, dict) or callable(map_location):
            self.fixed = None
        else:
            raise TypeError(f"map_location must be None, a string, a device, a dict or a callable, got "
                            f"{_typename(map_location)}")

    def _cpu(self, key):
        from .ops.creation import from_numpy
        return from_numpy(self.arrays[key])

    def tensor(self, key, location):
        t = self.done.get(key)
        if t is not None:
            return t
        if key not in self.arrays:
            raise _bad(f"the metadata refers to a tensor {key!r} that the file does not contain")
        ml = self.map_location
        if self.fixed is not None:
            target = self.fixed
        elif ml is None:
            target = _check_target(location)
        elif isinstance(ml, dict):
            target = _check_target(ml.get(location, location))
        else:
            res = ml(self._cpu(key), location)
            if res is None:
                target = _check_target(location)
            elif isinstance(res, Tensor):
                self.done[key] = res
                return res
            else:
                raise TypeError(f"map_location callable must return a Tensor or None, got {_typename(res)}")
        t = self._cpu(key)
        if target.type != "cpu":
            t = t.to(target)
        self.done[key] = t
        return t


_TAGS = {"$tensor", "$float", "$tuple", "$dict", "$odict", "$set", "$frozenset", "$dtype", "$device", "$size"}


class _Decoder:
    def __init__(self, mat):
        self.mat = mat
        self.shared = {}  # key -> the restored leaf (Parameter or flagged tensor), so sharing survives

    def decode(self, node):
        if node is None or isinstance(node, (bool, str, int, float)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict):
            raise _bad(f"unexpected value {node!r} in the metadata")
        tags = [k for k in node if k in _TAGS]
        if len(tags) != 1:
            raise _bad(f"unrecognised entry with keys {sorted(node)} in the metadata")
        tag = tags[0]
        val = node[tag]
        extra = set(node) - {tag}
        if tag == "$tensor":
            if extra - {"device", "requires_grad", "parameter"}:
                raise _bad(f"unrecognised tensor reference keys {sorted(extra)} in the metadata")
            return self._tensor(node)
        if tag in ("$dict", "$odict"):
            if extra - {"_metadata"}:
                raise _bad(f"unrecognised dict keys {sorted(extra)} in the metadata")
            return self._dict(tag, val, node.get("_metadata"), "_metadata" in node)
        if extra:
            raise _bad(f"unrecognised keys {sorted(extra)} next to {tag} in the metadata")
        if tag == "$float":
            if val not in ("nan", "inf", "-inf"):
                raise _bad(f"bad special float {val!r} in the metadata")
            return float(val)
        if tag == "$tuple":
            return tuple(self.decode(v) for v in self._list(val, tag))
        if tag in ("$set", "$frozenset"):
            items = [self.decode(v) for v in self._list(val, tag)]
            try:
                return set(items) if tag == "$set" else frozenset(items)
            except TypeError:
                raise _bad("a set in the metadata holds unhashable items") from None
        if tag == "$dtype":
            d = getattr(_dtype, val, None) if isinstance(val, str) else None
            if not isinstance(d, _dtype.dtype):
                raise _bad(f"unknown dtype {val!r} in the metadata")
            return d
        if tag == "$device":
            if not isinstance(val, str):
                raise _bad(f"bad device {val!r} in the metadata")
            try:
                return _device_cls(val)
            except (RuntimeError, TypeError):
                raise _bad(f"bad device {val!r} in the metadata") from None
        # $size
        if not isinstance(val, list) or not all(_is_int(s) and s >= 0 for s in val):
            raise _bad(f"bad size {val!r} in the metadata")
        return Size(val)

    @staticmethod
    def _list(val, tag):
        if not isinstance(val, list):
            raise _bad(f"{tag} in the metadata must hold a list")
        return val

    def _dict(self, tag, items, meta, has_meta):
        out = collections.OrderedDict() if tag == "$odict" else {}
        for pair in self._list(items, tag):
            if not isinstance(pair, list) or len(pair) != 2:
                raise _bad("a dict entry in the metadata is not a [key, value] pair")
            k = self.decode(pair[0])
            try:
                hash(k)
            except TypeError:
                raise _bad("a dict key in the metadata is unhashable") from None
            out[k] = self.decode(pair[1])
        if has_meta:
            if tag != "$odict":
                raise _bad("only ordered dicts carry _metadata in a checkpoint")
            out._metadata = self.decode(meta)
        return out

    def _tensor(self, node):
        key = node["$tensor"]
        location = node.get("device", "cpu")
        rg = node.get("requires_grad", False)
        is_param = node.get("parameter", False)
        if not isinstance(key, str) or not isinstance(location, str) or not isinstance(rg, bool) \
                or not isinstance(is_param, bool):
            raise _bad("a tensor reference in the metadata has fields of the wrong type")
        if key in self.shared:
            return self.shared[key]
        try:
            _device_cls(location)
        except (RuntimeError, TypeError):
            raise _bad(f"bad device {location!r} in the metadata") from None
        t = self.mat.tensor(key, location)
        if rg and not t.dtype.is_floating_point:
            raise _bad(f"tensor {key!r} of dtype {t.dtype} is marked requires_grad")
        if is_param:
            t = _parameter_cls()(t, requires_grad=rg)
        elif rg:
            t = t.detach().requires_grad_(True)
        self.shared[key] = t
        return t


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Load a checkpoint written by :func:`save` (or any safetensors file) from a path or binary file object.

    ``map_location`` moves tensors like PyTorch's: None restores each tensor on the device it was saved from,
    a string or device puts all of them there, a dict maps saved locations (``'cuda:0'``) to new ones, and a
    callable ``fn(cpu_tensor, location)`` returns the tensor to use (or None for the default). A plain
    safetensors file (no minitorch_gpu metadata) loads as a flat ``{name: tensor}`` dict on the CPU (or
    ``map_location``). Nothing is ever unpickled, whatever ``weights_only`` says: a corrupt, truncated or
    pickle-based file raises :class:`CheckpointError`. The file is read into memory whole; ``mmap`` is
    accepted for signature compatibility and changes nothing."""
    if pickle_module is not None or pickle_load_args:
        raise TypeError("minitorch_gpu.load never unpickles: pickle_module and pickle load arguments are not "
                        "accepted")
    buf = _read_all(f)
    entries, metadata = _check_header(buf)
    structure = None
    if metadata is not None and _STRUCTURE_KEY in metadata:
        structure = _parse_json(metadata[_STRUCTURE_KEY], "structure metadata")
        if not isinstance(structure, dict) or set(structure) != {"version", "root"}:
            raise _bad("the structure metadata must be an object with 'version' and 'root'")
        if structure["version"] != _FORMAT_VERSION:
            raise CheckpointError(f"checkpoint format version {structure['version']!r} is not supported by this "
                                  f"minitorch_gpu (it reads version {_FORMAT_VERSION})")
    mat = _Materializer(_host_arrays(buf, entries), map_location)
    if structure is None:
        return {name: mat.tensor(name, "cpu") for name in entries}
    try:
        return _Decoder(mat).decode(structure["root"])
    except RecursionError:
        raise _bad("the structure metadata is nested too deeply") from None
