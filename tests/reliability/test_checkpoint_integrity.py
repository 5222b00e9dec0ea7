"""A corrupted checkpoint never loads as different values: every single-bit flip of a small checkpoint (both
formats) raises a clear error or loads exactly what was saved. The zip format relies on the CRC32 of every
record, which the reader checks on each read; our safetensors files carry CRC32s in their metadata."""
import collections
import io
import json
import pickle

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.serialization import CheckpointError, save_safetensors

WRITERS = {"zip": mt.save, "safetensors": save_safetensors}


def _obj(device="cpu"):
    return {"w": mt.arange(6, dtype=mt.float32, device=device).reshape(2, 3), "b": mt.tensor([1, 2], device=device),
            "step": 3, "meta": {"lr": 0.5, "name": "run", "t": (1, None)}}


def _bytes(fmt, obj):
    buf = io.BytesIO()
    WRITERS[fmt](obj, buf)
    return buf.getvalue()


def _same(a, b):
    if isinstance(a, mt.Tensor):
        return (isinstance(b, mt.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and a.cpu().numpy().tobytes() == b.cpu().numpy().tobytes())
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _load(data, **kw):
    return mt.load(io.BytesIO(data), **kw)


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_single_bit_flips_raise_or_change_nothing(fmt):
    obj = _obj()
    data = _bytes(fmt, obj)
    step = -(-len(data) // 480)  # a few hundred flips spread over every part of the file
    outcomes = collections.Counter()
    silent = []
    for pos in range(0, len(data), step):
        flipped = bytearray(data)
        flipped[pos] ^= 1 << (pos * 5 % 8)
        try:
            out = _load(bytes(flipped))
        except (CheckpointError, pickle.UnpicklingError) as e:
            # (a flip of the first byte can make a file look like a legacy pickle, refused as such)
            assert str(e)
            outcomes["error"] += 1
            continue
        if _same(obj, out):
            outcomes["unchanged"] += 1
        else:
            silent.append(pos)
    assert silent == [], f"{fmt}: flips at bytes {silent} loaded silently different values"
    assert outcomes["error"] > len(range(0, len(data), step)) // 3


def test_checksum_errors_name_what_failed():
    data = _bytes("safetensors", _obj())
    values = np.arange(6, dtype=np.float32).tobytes()
    bad = bytearray(data)
    bad[data.index(values) + 5] ^= 0x10
    with pytest.raises(CheckpointError, match="checksum mismatch in tensor 'w'"):
        _load(bytes(bad))
    bad = bytearray(data)
    bad[data.index(b'[\\"step\\",3]') + 10] ^= 1  # 3 -> 2: still valid JSON
    with pytest.raises(CheckpointError, match="checksum mismatch in the structure metadata"):
        _load(bytes(bad))


def test_zip_records_are_crc_checked():
    data = _bytes("zip", _obj())
    values = np.arange(6, dtype=np.float32).tobytes()
    bad = bytearray(data)
    bad[data.index(values) + 5] ^= 0x10
    with pytest.raises(CheckpointError, match=r"record data/\d+: Bad CRC-32"):
        _load(bytes(bad))


def test_checksums_on_every_device(device):
    obj = _obj(device)
    for fmt in WRITERS:
        out = _load(_bytes(fmt, obj), map_location=device)
        assert _same(obj, out) and out["w"].device == obj["w"].device


def test_files_without_checksums_still_load(tmp_path):
    from safetensors.numpy import save, save_file
    plain = {"a": np.arange(4, dtype=np.float32), "b": np.ones((2, 2), dtype=np.int64)}
    save_file(plain, str(tmp_path / "plain.safetensors"), metadata={"format": "pt"})
    out = mt.load(tmp_path / "plain.safetensors")
    assert sorted(out) == ["a", "b"] and out["a"].numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    # ours as written before the checksums: the structure metadata without its crc32 entry
    structure = {"version": 1, "root": {"$dict": [["x", {"$tensor": "a", "device": "cpu"}], ["n", 7]]}}
    old = save({"a": plain["a"]}, metadata={"minitorch_gpu": json.dumps(structure)})
    assert _load(old)["n"] == 7 and _load(old)["x"].numpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_files_written_by_pytorch_still_load(tmp_path, torch):
    from safetensors.torch import save_file
    sd = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)}
    save_file(sd, str(tmp_path / "t.safetensors"))
    torch.save(sd, tmp_path / "t.pt")
    for name in ("t.safetensors", "t.pt"):
        assert mt.load(tmp_path / name)["w"].numpy().tolist() == sd["w"].tolist()


def test_our_metadata_under_a_corrupted_key_is_refused():
    data = _bytes("safetensors", _obj())
    bad = bytearray(data)
    bad[data.index(b'"minitorch_gpu"') + 3] ^= 0x01  # a valid key, but not ours: would load as a flat dict
    with pytest.raises(CheckpointError, match="under a key other than"):
        _load(bytes(bad))
