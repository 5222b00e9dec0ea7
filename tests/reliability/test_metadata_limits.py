"""Pathological safetensors metadata under the 100 MB header cap (millions of empty lists, deep nesting, millions
of tiny tensors) is refused or parsed in bounded time and memory. The cases here are the 95 MB ones scaled down
tenfold, with the limits scaled down alike, so they behave as the full-size ones do with the real limits."""
import io
import json
import time
import tracemalloc

import pytest

import minitorch_gpu as mt
from minitorch_gpu.serialization import CheckpointError, _json_limits, save_safetensors

SCALE = 10
SIZE = 95_000_000 // SCALE


@pytest.fixture
def scaled_limits(monkeypatch):
    for name in ("MAX_METADATA_BYTES", "MAX_ENTRIES", "MAX_TENSORS"):
        monkeypatch.setattr(_json_limits, name, getattr(_json_limits, name) // SCALE)


def _file(header):
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw


def _with_structure(root_text):
    return _file({"__metadata__": {"minitorch_gpu": '{"version":1,"root":' + root_text + "}"}})


def _measure(data):
    """(outcome, seconds, peak bytes allocated) of loading ``data``."""
    tracemalloc.start()
    t = time.perf_counter()
    try:
        out = mt.load(io.BytesIO(data))
        outcome = f"loaded {type(out).__name__}"
    except CheckpointError as e:
        outcome = str(e)
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return outcome, seconds, peak


@pytest.mark.parametrize("case,match", [
    ("empty lists", "more than 400000 entries"),
    ("deep nesting", "nests too deeply"),
    ("empty lists in the header", "more than 400000 entries"),
    ("tiny tensors", "tensors, above the limit|more than 400000 entries"),
    ("tiny strings", "more than 400000 entries"),
])
def test_pathological_metadata_is_refused_cheaply(scaled_limits, case, match):
    data = {
        "empty lists": lambda: _with_structure("[" + "[]," * (SIZE // 3) + "[]]"),
        "deep nesting": lambda: _with_structure("[" * (SIZE // 2) + "]" * (SIZE // 2)),
        "empty lists in the header": lambda: _file({"a": {"dtype": "F32", "shape": [[]] * (SIZE // 3),
                                                          "data_offsets": [0, 0]}}),
        "tiny tensors": lambda: _file({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
                                       for i in range(SIZE // 60)}),
        "tiny strings": lambda: _with_structure("[" + '"a",' * (SIZE // 7) + '"a"]'),
    }[case]()
    outcome, seconds, peak = _measure(data)
    assert any(m in outcome for m in match.split("|")), outcome
    # unbounded, the full-size cases took 24 s and 4.6 GB; refused, they cost a few passes over the bytes and
    # a few copies of them (the file, its header as bytes and text, the structure string as text and bytes)
    assert seconds < 5.0
    assert peak < 8 * len(data)


def test_metadata_just_under_the_limits_parses_in_bounded_time(scaled_limits):
    lists = _json_limits.MAX_ENTRIES // 2 - 10
    outcome, seconds, peak = _measure(_with_structure("[" + "[]," * lists + "[]]"))
    assert outcome == "loaded list"
    assert seconds < 10.0
    assert peak < 400 * lists  # two copies (parsed and decoded) of each list, about 60 bytes apiece


def test_depth_limit_holds_below_the_recursion_limit():
    deep = "[" * _json_limits.MAX_DEPTH + "]" * _json_limits.MAX_DEPTH
    _json_limits.check(deep.encode())
    with pytest.raises(_json_limits.LimitError, match="nests too deeply"):
        _json_limits.check(("[" + deep + "]").encode())
    # brackets inside strings, escaped quotes and escapes split across the scan's chunks do not count
    tricky = '["' + "\\\\" * (1 << 21) + '\\"[[[[", "{{{{", "\\\\"]'
    _json_limits.check(tricky.encode())


def test_save_refuses_what_load_would_refuse(tmp_path, scaled_limits):
    nested = []
    for _ in range(_json_limits.MAX_DEPTH):
        nested = [nested]
    with pytest.raises(ValueError, match="nests too deeply"):
        save_safetensors({"x": nested}, tmp_path / "deep.st")
    with pytest.raises(ValueError, match="store long lists of numbers as tensors"):
        save_safetensors({"x": list(range(_json_limits.MAX_ENTRIES + 1))}, tmp_path / "long.st")
    assert not (tmp_path / "deep.st").exists() and not (tmp_path / "long.st").exists()
