"""Hostile PyTorch-format checkpoints: every file here is crafted to run code, read outside the archive, lie
about sizes, exhaust memory or the C stack, or is simply corrupt. Under weights_only=True (the default) each
must raise pickle.UnpicklingError or CheckpointError (a RuntimeError) and must never execute anything."""
import collections
import io
import os
import pickle
import struct
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import minitorch_gpu as mt
from minitorch_gpu.serialization import CheckpointError

REFUSED = (pickle.UnpicklingError, CheckpointError)


# ------------------------------------------------------------------------------- crafting pickles and zips

def _s(text):
    b = text.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _i(n):
    enc = pickle.encode_long(n)
    return b"\x8a" + bytes([len(enc)]) + enc


def _g(module, name):
    return b"c" + f"{module}\n{name}\n".encode()


def _tup(*items):
    return b"(" + b"".join(items) + b"t"


def _tensor(key="0", numel=6, size=(2, 3), stride=(3, 1), offset=0, storage="FloatStorage", location="cpu"):
    pid = _tup(_s("storage"), _g("torch", storage), _s(key), _s(location), _i(numel)) + b"Q"
    args = _tup(pid, _i(offset), _tup(*map(_i, size)), _tup(*map(_i, stride)), b"\x89",
                _g("collections", "OrderedDict") + b")R")
    return _g("torch._utils", "_rebuild_tensor_v2") + args + b"R"


def _pkl(body):
    return b"\x80\x02" + body + b"."


def _zip(records, name="archive", compress=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as zf:
        for rec, data in records.items():
            zf.writestr(f"{name}/{rec}", data)
    return buf.getvalue()


def _load(data, **kw):
    return mt.load(io.BytesIO(data), **kw)


FLOATS6 = bytes(range(24))


def test_crafted_archive_is_valid():
    # guards the tests below: the crafting helpers make a loadable checkpoint
    out = _load(_zip({"data.pkl": _pkl(_tensor()), "data/0": FLOATS6, "byteorder": b"little"}))
    assert out.shape == (2, 3) and out.dtype is mt.float32


# --------------------------------------------------------------------------------------------- code gadgets

GADGETS = {
    "os.system": lambda m: _g("os", "system") + _tup(_s(f"touch {m}")) + b"R",
    "posix.system": lambda m: _g("posix", "system") + _tup(_s(f"touch {m}")) + b"R",
    "eval": lambda m: _g("builtins", "eval") + _tup(_s(f"__import__('os').mkdir({m!r})")) + b"R",
    "py2 exec": lambda m: _g("__builtin__", "exec") + _tup(_s(f"import os; os.mkdir({m!r})")) + b"R",
    "subprocess": lambda m: _g("subprocess", "call") + _tup(_s(f"touch {m}")) + b"R",
    "getattr": lambda m: _g("builtins", "getattr") + _tup(_g("pathlib", "Path"), _s("mkdir")) + b"R",
    # BUILD on an allowed class object would monkeypatch it
    "build a class": lambda m: _g("collections", "OrderedDict") + _tup(
        b"N", b"}" + _s("__len__") + _g("torch._utils", "_rebuild_tensor") + b"s") + b"b",
    # an allowed function smuggling the call of another: only rebuild functions are accepted there
    "smuggled call": lambda m: _g("torch._tensor", "_rebuild_from_type_v2") + _tup(
        _g("builtins", "print"), _g("torch", "Tensor"), _tup(_s(m)), b"N") + b"R",
    "newobj": lambda m: _g("pathlib", "Path") + _tup(_s(m)) + b"\x81",
    "inst": lambda m: b"(" + _s(m) + b"iposix\nmkdir\n",
    "obj": lambda m: b"(" + _g("posix", "mkdir") + _s(m) + b"o",
    "extension code": lambda m: b"\x82\x01",
    "reduce on a dtype": lambda m: _g("torch", "float32") + b")R",
    "setitem on a tensor": lambda m: _tensor() + _s("x") + _s(m) + b"s",
}


@pytest.mark.parametrize("name", GADGETS)
def test_gadgets_in_data_pkl_never_run(tmp_path, name):
    marker = str(tmp_path / "ran")
    data = _zip({"data.pkl": _pkl(GADGETS[name](marker)), "data/0": FLOATS6})
    for kw in ({}, {"weights_only": True, "map_location": "cpu"}):
        with pytest.raises(REFUSED):
            _load(data, **kw)
    assert not os.path.exists(marker)
    assert collections.OrderedDict.__len__ is dict.__len__


def test_a_real_torch_gadget_file(tmp_path, torch):
    class Payload:
        def __reduce__(self):
            return (os.mkdir, (str(tmp_path / "ran"),))

    for kw in ({}, {"_use_new_zipfile_serialization": False}):
        buf = io.BytesIO()
        torch.save({"w": torch.ones(2), "x": Payload()}, buf, **kw)
        with pytest.raises(pickle.UnpicklingError, match="(?s)Weights only load failed.*posix.mkdir"):
            _load(buf.getvalue())
        assert not os.path.exists(tmp_path / "ran")


# ------------------------------------------------------------------------------------------ lying storages

@pytest.mark.parametrize("key", ["../../etc/passwd", "..", "/abs", "0/../0", "a b", "", "x" * 200, "0\x00"])
def test_storage_key_pointing_outside_the_archive(key):
    data = _zip({"data.pkl": _pkl(_tensor(key=key)), "data/0": FLOATS6})
    with pytest.raises(CheckpointError, match="invalid storage key"):
        _load(data)


@pytest.mark.parametrize("numel,stored,match", [
    (6, FLOATS6[:20], "holds 20 bytes, but the checkpoint declares 6 elements"),
    (6, FLOATS6 + b"\0" * 4, "holds 28 bytes"),
    (-1, FLOATS6, "declares -1 elements"),
    (2 ** 62, FLOATS6, "holds 24 bytes"),
    (2 ** 80, FLOATS6, "holds 24 bytes"),
])
def test_storage_size_lies(numel, stored, match):
    data = _zip({"data.pkl": _pkl(_tensor(numel=numel, size=(1,), stride=(1,))), "data/0": stored})
    with pytest.raises(CheckpointError, match=match):
        _load(data)


def test_missing_storage_record():
    with pytest.raises(CheckpointError, match="no record data/1"):
        _load(_zip({"data.pkl": _pkl(_tensor(key="1")), "data/0": FLOATS6}))


@pytest.mark.parametrize("size,stride,offset", [
    ((2, 4), (3, 1), 0), ((7,), (1,), 0), ((2, 3), (3, 1), 1), ((3,), (4,), 0), ((2,), (-1,), 3),
    ((-2, 3), (3, 1), 0), ((2, 3), (3,), 0), ((1,), (1,), -1), ((1,), (1,), 2 ** 70),
])
def test_tensor_reaching_outside_its_storage(size, stride, offset):
    data = _zip({"data.pkl": _pkl(_tensor(size=size, stride=stride, offset=offset)), "data/0": FLOATS6})
    with pytest.raises(CheckpointError, match="invalid tensor record"):
        _load(data)


def test_storage_declared_twice_with_different_types():
    body = b"(" + _tensor() + _tensor(storage="LongStorage", numel=3, size=(3,), stride=(1,)) + b"l"
    with pytest.raises(CheckpointError, match="declared twice"):
        _load(_zip({"data.pkl": _pkl(body), "data/0": FLOATS6}))


def test_requires_grad_on_integer_storage_and_unknown_storage_types():
    body = _tensor(storage="LongStorage", numel=3, size=(3,), stride=(1,)).replace(b"\x89", b"\x88")
    with pytest.raises(RuntimeError, match="floating point"):
        _load(_zip({"data.pkl": _pkl(body), "data/0": FLOATS6}))
    for storage, match in (("ComplexFloatStorage", "cannot load tensors stored as"),
                           ("QInt8Storage", "cannot load tensors stored as"),
                           ("EvilStorage", "was not an allowed global")):
        with pytest.raises(REFUSED, match=match):
            _load(_zip({"data.pkl": _pkl(_tensor(storage=storage)), "data/0": FLOATS6}))


def test_persistent_ids_other_than_storages():
    for pid in (_s("storage") + b"Q", _tup(_s("module"), _g("os", "system")) + b"Q", _i(3) + b"Q",
                b"Pstorage\n"):
        with pytest.raises(REFUSED):
            _load(_zip({"data.pkl": _pkl(pid), "data/0": FLOATS6}))


# --------------------------------------------------------------------------------------------- structure

def test_cycles():
    # a list holding itself is ordinary pickle data, and loads as such
    out = _load(_zip({"data.pkl": _pkl(b"]q\x00h\x00a")}))
    assert out[0] is out
    # a dict whose value is itself, and a tensor whose size is a list that contains itself
    out = _load(_zip({"data.pkl": _pkl(b"}q\x00" + _s("me") + b"h\x00s")}))
    assert out["me"] is out
    cyclic_size = _tensor().replace(_tup(_i(2), _i(3)), b"]q\x05h\x05a", 1)
    with pytest.raises(CheckpointError, match="size must be a tuple of integers|must be an integer"):
        _load(_zip({"data.pkl": _pkl(cyclic_size), "data/0": FLOATS6}))


def test_deeply_nested_tuple_key_is_refused_not_a_crash():
    # hashing a tuple nested 10^6 deep (as a dict key) overflows the C stack: the loader refuses to build it
    body = b"}" + b")" + b"\x85" * 1_000_000 + b"K\x01s"
    with pytest.raises(pickle.UnpicklingError, match="nests tuples"):
        _load(_zip({"data.pkl": _pkl(body)}))
    # deep lists are harmless data
    out = _load(_zip({"data.pkl": _pkl(b"]" * 10_000 + b"a" * 9_999)}))
    assert isinstance(out, list)


@pytest.mark.parametrize("body", [
    b"", b"(", b"K\x01K\x02s", b"NK\x01a", b"]K\x01K\x02s", b"(K\x01K\x02K\x03d",
    b"h\x05", b"\xff", b"\x95\xff\xff\xff\xff\xff\xff\xff\x7f", b"B\xff\xff\xff\x7f",
    _g("torch", "Size") + _tup(_tup(_s("x"))) + b"R", _g("_codecs", "encode") + _tup(_s("x"), _s("zlib")) + b"R",
    _g("collections", "OrderedDict") + _tup(_i(1), _i(2), _i(3)) + b"R",
])
def test_malformed_pickles(body):
    data = _zip({"data.pkl": b"\x80\x02" + body + (b"." if body and body[-1:] != b"." else b"")})
    with pytest.raises(REFUSED):
        _load(data)


# ----------------------------------------------------------------------------------------- hostile zips

@pytest.mark.parametrize("names", [
    {"../data.pkl": b"N."}, {"/archive/data.pkl": b"N."}, {"archive/../../x/data.pkl": b"N."},
    {"archive\\data.pkl": b"N."}, {"archive/data.pkl": b"\x80\x02N.", "other/data/0": b""},
    {"a/data.pkl": b"\x80\x02N.", "b/data.pkl": b"\x80\x02N."}, {"archive/nothing": b""},
    {"C:/data.pkl": b"N."},
])
def test_member_names(names):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, d in names.items():
            zf.writestr(n, d)
    with pytest.raises(CheckpointError):
        _load(buf.getvalue())


def test_torchscript_archive():
    with pytest.raises(CheckpointError, match="TorchScript"):
        _load(_zip({"data.pkl": _pkl(b"N"), "constants.pkl": _pkl(b")")}))


def _lie_about_size(data, member, new_size):
    """``data`` with the central directory claiming ``new_size`` uncompressed bytes for ``member``."""
    raw = bytearray(data)
    i = raw.find(b"PK\x01\x02")
    while i >= 0:
        n = struct.unpack("<H", raw[i + 28:i + 30])[0]
        if raw[i + 46:i + 46 + n] == member.encode():
            raw[i + 24:i + 28] = struct.pack("<I", new_size)
            return bytes(raw)
        i = raw.find(b"PK\x01\x02", i + 4)
    raise AssertionError(f"no member {member}")


def test_zip_bomb_and_lying_sizes():
    wants_4gb = _pkl(_tensor(numel=10 ** 9, size=(1,), stride=(1,)))
    bomb = _zip({"data.pkl": wants_4gb, "data/0": bytes(10_000_000)}, compress=zipfile.ZIP_DEFLATED)
    assert len(bomb) < 100_000
    with pytest.raises(CheckpointError, match="zip bomb"):
        _load(_lie_about_size(bomb, "archive/data/0", 4 * 10 ** 9))
    stored = _zip({"data.pkl": wants_4gb, "data/0": FLOATS6})
    with pytest.raises(CheckpointError, match="more than the"):
        _load(_lie_about_size(stored, "archive/data/0", 4 * 10 ** 9))
    with pytest.raises(CheckpointError, match="more than the"):
        _load(_lie_about_size(stored, "archive/data.pkl", 2 ** 31))


def test_unsupported_compression():
    try:
        data = _zip({"data.pkl": _pkl(b"N")}, compress=zipfile.ZIP_LZMA)
    except RuntimeError:
        pytest.skip("lzma is not available")
    with pytest.raises(CheckpointError, match="compression method"):
        _load(data)


def test_crc_mismatch_and_corrupt_deflate():
    data = bytearray(_zip({"data.pkl": _pkl(_tensor()), "data/0": FLOATS6}))
    data[data.find(FLOATS6)] ^= 0xFF
    with pytest.raises(CheckpointError, match="CRC"):
        _load(bytes(data))
    deflated = bytearray(_zip({"data.pkl": _pkl(_s("x" * 1000))}, compress=zipfile.ZIP_DEFLATED))
    start = 30 + len("archive/data.pkl")  # the first record's compressed bytes
    deflated[start + 2:start + 10] = b"\xff" * 8
    with pytest.raises(CheckpointError, match="cannot read record data.pkl"):
        _load(bytes(deflated))


@pytest.mark.parametrize("fmt", [{}, {"_use_new_zipfile_serialization": False}], ids=["zip", "legacy"])
def test_truncated_files(fmt):
    buf = io.BytesIO()
    mt.save({"a": mt.arange(6, dtype=mt.float32), "b": [1, 2, {"c": mt.ones(3)}]}, buf, **fmt)
    data = buf.getvalue()
    for cut in sorted({1, 2, 4, 10, 30, 64, len(data) // 3, len(data) // 2, len(data) - 30, len(data) - 1}):
        with pytest.raises(REFUSED):
            _load(data[:cut])


def test_legacy_storage_list_and_data_lies():
    buf = io.BytesIO()
    mt.save({"a": mt.arange(6, dtype=mt.float32)}, buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue()
    # the storage list names a key no tensor uses
    i = data.rfind(_s("0")[:1] + struct.pack("<I", 1) + b"0")
    with pytest.raises(CheckpointError, match="listed but no tensor"):
        _load(data[:i] + b"X\x01\x00\x00\x009" + data[i + 6:])
    # the element count before the storage's bytes disagrees with the pickle
    j = len(data) - 24 - 8
    with pytest.raises(CheckpointError, match="holds 7 elements"):
        _load(data[:j] + struct.pack("<q", 7) + data[j + 8:])
    with pytest.raises(RuntimeError, match="Invalid magic number"):
        _load(pickle.dumps(12345, protocol=2) + data)


_VALID = {}


def _valid(fmt):
    if fmt not in _VALID:
        buf = io.BytesIO()
        mt.save({"a": mt.arange(6, dtype=mt.float32).reshape(2, 3), "b": mt.tensor([1, 2]),
                 "meta": {"step": 3, "t": (1.5, None)}}, buf,
                _use_new_zipfile_serialization=fmt == "zip")
        _VALID[fmt] = buf.getvalue()
    return _VALID[fmt]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_checkpoints_load_or_raise_cleanly(data):
    fmt = data.draw(st.sampled_from(["zip", "legacy"]))
    raw = bytearray(_valid(fmt))
    kind = data.draw(st.sampled_from(["flip", "truncate", "splice"]))
    if kind == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    elif kind == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        i = data.draw(st.integers(0, len(raw)))
        raw[i:i] = data.draw(st.binary(min_size=1, max_size=16))
    try:
        out = _load(bytes(raw))
    except (pickle.UnpicklingError, RuntimeError):
        return
    assert out is None or isinstance(out, (dict, list, tuple, int, float, str, bytes, mt.Tensor))
