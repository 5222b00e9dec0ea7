"""The safetensors checkpoint format: ``save_safetensors(obj, f)`` writes it, and ``load`` reads it (forever:
it was the only format ``save`` wrote before the PyTorch zip format became the default).

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
:class:`CheckpointError` naming it.
"""
import collections
import json
import math
import sys

import numpy as np
import safetensors
from safetensors.numpy import save as _st_save

from .. import _dtype
from .._device import device as _device_cls
from ..nn.parameter import Parameter
from ..ops.creation import from_numpy
from ..tensor import Size, Tensor
from . import _checksum, _json_limits
from ._common import CheckpointError, check_target, typename, write_to

# the __metadata__ entry that holds our structure JSON
_STRUCTURE_KEY = "minitorch_gpu"
_FORMAT_VERSION = 1
_MAX_HEADER_BYTES = _json_limits.MAX_METADATA_BYTES

# safetensors dtype codes of the dtypes minitorch_gpu has, and their element sizes
_CODE_OF = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
            "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64"}
_DTYPE_OF_CODE = {code: name for name, code in _CODE_OF.items()}
_ITEMSIZE = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "I32": 4, "I64": 8, "F16": 2, "BF16": 2, "F32": 4, "F64": 8,
             "U16": 2, "U32": 4, "U64": 8, "C64": 8, "F8_E4M3": 1, "F8_E5M2": 1}


# ---------------------------------------------------------------------------------------------- saving

class _Encoder:
    """Turns an object tree into JSON-able data plus a dict of host arrays (one per distinct tensor)."""

    def __init__(self):
        self.arrays = {}
        self.refs = {}      # id(tensor) -> its reference node, so a tensor seen twice is stored once
        self.keep = []      # the tensors themselves, so their ids stay unique while encoding
        self.active = set()  # ids of containers on the current path, to refuse cycles
        self.param_cls = Parameter

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
        raise TypeError(f"minitorch_gpu.save cannot store an object of type {typename(obj)}: checkpoints hold "
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
    stored = {k: (_CODE_OF[a.dtype.name], a.shape, _checksum.stored_bytes(a)) for k, a in enc.arrays.items()}
    crcs = _checksum.record(_FORMAT_VERSION, root, stored)
    text = _checksum.dumps({"version": _FORMAT_VERSION, "root": root, "crc32": crcs})
    _within_limits(text.encode("utf-8"), "structure")
    return text, enc.arrays


def _within_limits(raw, what):
    # a file that load would refuse is never written
    try:
        _json_limits.check(raw)
    except _json_limits.LimitError as e:
        raise ValueError(f"minitorch_gpu.save_safetensors: the checkpoint's {what} metadata is too large to load "
                         f"back: {e} (store long lists of numbers as tensors)") from None


def _serialize(obj):
    text, arrays = _structure_json(obj)
    if len(arrays) > _json_limits.MAX_TENSORS:
        raise ValueError(f"minitorch_gpu.save_safetensors: the object holds {len(arrays)} tensors, more than a "
                         f"checkpoint file may ({_json_limits.MAX_TENSORS}); save it in several files")
    # one metadata entry only: safetensors writes metadata in hash-map order, and a single key keeps the
    # bytes of a checkpoint a pure function of its contents
    data = _st_save(arrays, metadata={_STRUCTURE_KEY: text})
    _within_limits(data[8:8 + int.from_bytes(data[:8], "little")], "header")
    return data


def save_safetensors(obj, f):
    """Save ``obj`` (tensors, state dicts, optimizer state dicts, nested dicts/lists/tuples/sets of tensors and
    plain values) as a safetensors file: a format no loader can run code from, which
    ``safetensors.torch.load_file`` reads as a flat ``{name: tensor}`` dict. ``f`` is a path (written
    atomically) or a binary file object; :func:`minitorch_gpu.load` reads it back with its structure.

    >>> save_safetensors(model.state_dict(), "model.safetensors")  # doctest: +SKIP
    """
    data = _serialize(obj)
    write_to(f, lambda fh: fh.write(data))


# --------------------------------------------------------------------------------------------- loading

def _bad(msg):
    return CheckpointError(f"not a valid minitorch_gpu checkpoint: {msg}")


def _sniff_foreign(buf):
    """A CheckpointError when the bytes are recognisably some other format, else None."""
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


def _parse_json(text, what, raw=None):
    try:
        _json_limits.check(text.encode("utf-8") if raw is None else raw)
    except _json_limits.LimitError as e:
        raise _bad(f"the {what} is too costly to parse: {e} (corrupt or hostile file)") from None
    try:
        with _json_limits.gc_paused():
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
    header = _parse_json(text, "header", raw)
    if not isinstance(header, dict):
        raise _bad("the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if len(header) > _json_limits.MAX_TENSORS:
        raise _bad(f"the header lists {len(header)} tensors, above the limit of {_json_limits.MAX_TENSORS} (corrupt "
                   "or hostile file)")
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


class _Materializer:
    """Builds tensors from host arrays on the device that ``map_location`` chooses, once per key."""

    def __init__(self, arrays, map_location):
        self.arrays = arrays
        self.map_location = map_location
        self.done = {}
        if map_location is None or isinstance(map_location, (str, _device_cls)):
            self.fixed = None if map_location is None else check_target(map_location)
        elif isinstance(map_location, dict) or callable(map_location):
            self.fixed = None
        else:
            raise TypeError(f"map_location must be None, a string, a device, a dict or a callable, got "
                            f"{typename(map_location)}")

    def _cpu(self, key):
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
            target = check_target(location)
        elif isinstance(ml, dict):
            target = check_target(ml.get(location, location))
        else:
            res = ml(self._cpu(key), location)
            if res is None:
                target = check_target(location)
            elif isinstance(res, Tensor):
                self.done[key] = res
                return res
            else:
                raise TypeError(f"map_location callable must return a Tensor or None, got {typename(res)}")
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
            t = Parameter(t, requires_grad=rg)
        elif rg:
            t = t.detach().requires_grad_(True)
        self.shared[key] = t
        return t


def load_safetensors(buf, map_location=None):
    """The object a safetensors checkpoint (``buf``: its bytes) holds; a plain safetensors file without our
    structure metadata loads as a flat ``{name: tensor}`` dict."""
    entries, metadata = _check_header(buf)
    structure = None
    if metadata is not None and _STRUCTURE_KEY in metadata:
        structure = _parse_json(metadata[_STRUCTURE_KEY], "structure metadata")
        if not isinstance(structure, dict) or set(structure) - {"crc32"} != {"version", "root"}:
            raise _bad("the structure metadata must be an object with 'version' and 'root' (and 'crc32')")
        if structure["version"] != _FORMAT_VERSION:
            raise CheckpointError(f"checkpoint format version {structure['version']!r} is not supported by this "
                                  f"minitorch_gpu (it reads version {_FORMAT_VERSION})")
        # files saved before checksums were recorded have none, and still load
        if "crc32" in structure:
            view, start = memoryview(buf), 8 + int.from_bytes(buf[:8], "little")
            _checksum.verify(structure["crc32"], structure["version"], structure["root"],
                             {name: (code, shape, view[start + b:start + e])
                              for name, (code, shape, b, e) in entries.items()})
    elif metadata is not None and any(v.startswith('{"version":') for v in metadata.values()):
        # our structure under another key: a corrupted key would otherwise load as a flat dict of tensors
        raise _bad(f"the metadata holds minitorch_gpu structure under a key other than {_STRUCTURE_KEY!r}")
    mat = _Materializer(_host_arrays(buf, entries), map_location)
    if structure is None:
        return {name: mat.tensor(name, "cpu") for name in entries}
    try:
        with _json_limits.gc_paused():
            return _Decoder(mat).decode(structure["root"])
    except RecursionError:
        raise _bad("the structure metadata is nested too deeply") from None
