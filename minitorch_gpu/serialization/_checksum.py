"""CRC32 checksums that our safetensors checkpoints carry in their structure metadata, verified on load.

A zip checkpoint needs none of its own: every record has the zip's CRC32, which the reader checks on each read.
A safetensors file has no checksum, so a flipped bit in a tensor's bytes or in the structure JSON (``3`` read as
``2``) would load as a different value. We record one CRC32 per tensor (over its dtype, shape and bytes, so the
error names the tensor) and one over the structure, re-serialised canonically from what was parsed. CRC32
catches every single-bit and every burst error up to 32 bits and comes with zlib; computed over 16 MiB pieces
in parallel threads it costs a small part of a save or load (``python -m benchmarks.checkpoint_integrity``).
"""
from __future__ import annotations

import json
import os
import sys
import zlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ._common import CheckpointError

# a tensor's bytes are checksummed in pieces of this size (part of the format: changing it changes every CRC)
_CHUNK = 1 << 24
_PARALLEL_BYTES = 1 << 25


def dumps(obj: Any) -> str:
    """The one JSON form of the structure metadata: what the structure checksum is computed over."""
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


def structure_crc(version: Any, root: Any) -> int:
    return zlib.crc32(dumps({"version": version, "root": root}).encode("utf-8"))


def _pieces(data: Any) -> list[memoryview]:
    mv = memoryview(data).cast("B")
    return [mv[i:i + _CHUNK] for i in range(0, len(mv), _CHUNK)]


def _crcs(pieces: list[memoryview]) -> list[int]:
    # zlib.crc32 releases the GIL on large buffers, so threads make it as fast as reading the file
    if sum(len(p) for p in pieces) < _PARALLEL_BYTES:
        return [zlib.crc32(p) for p in pieces]
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        return list(pool.map(zlib.crc32, pieces))


def tensor_crcs(tensors: Mapping[str, tuple[str, Sequence[int], Any]]) -> dict[str, int]:
    """The CRC32 of each tensor as stored (``name -> (dtype code, shape, little-endian bytes)``): the CRC32 of its
    dtype code, shape and the CRC32s of its 16 MiB chunks. The chunks' CRCs are computed in parallel; a flipped
    bit changes its chunk's CRC, a change of at most 32 bits that the outer CRC32 always catches."""
    pieces = {name: _pieces(data) for name, (_, _, data) in tensors.items()}
    flat = _crcs([p for ps in pieces.values() for p in ps])
    out, i = {}, 0
    for name, (code, shape, _) in tensors.items():
        n = len(pieces[name])
        head = f"{code}[{','.join(str(int(s)) for s in shape)}]".encode("ascii")
        out[name] = zlib.crc32(b"".join(c.to_bytes(4, "little") for c in flat[i:i + n]), zlib.crc32(head))
        i += n
    return out


def stored_bytes(arr: np.ndarray) -> memoryview:
    """The bytes safetensors writes for ``arr`` (little-endian, C order), without a copy where possible."""
    if sys.byteorder != "little" and arr.dtype.itemsize > 1:
        arr = arr.byteswap()
    return memoryview(np.ascontiguousarray(arr).reshape(-1).view(np.uint8))  # type: ignore[arg-type]


def record(version: int, root: Any, tensors: Mapping[str, tuple[str, Sequence[int], Any]]) -> dict[str, Any]:
    """The ``crc32`` entry of the structure metadata: ``tensors`` maps each name to (dtype code, shape, bytes)."""
    return {"structure": structure_crc(version, root), "tensors": tensor_crcs(tensors)}


def _is_crc(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2 ** 32


def verify(crcs: Any, version: Any, root: Any, tensors: Mapping[str, tuple[str, Sequence[int], Any]]) -> None:
    """Check a checkpoint against its ``crc32`` entry; a mismatch raises :class:`CheckpointError` naming the
    tensor or the structure that differs."""
    if not isinstance(crcs, dict) or set(crcs) != {"structure", "tensors"} or not _is_crc(crcs["structure"]) \
            or not isinstance(crcs["tensors"], dict) or not all(_is_crc(v) for v in crcs["tensors"].values()):
        raise CheckpointError("not a valid minitorch_gpu checkpoint: its crc32 metadata is malformed (corrupt file?)")
    if structure_crc(version, root) != crcs["structure"]:
        raise CheckpointError("checksum mismatch in the structure metadata: it does not match the CRC32 recorded "
                              "when the checkpoint was saved (the file is corrupt)")
    recorded = crcs["tensors"]
    for name in sorted(set(recorded) ^ set(tensors)):
        where = "is missing from the file" if name in recorded else "has no recorded checksum"
        raise CheckpointError(f"checksum mismatch: tensor {name!r} {where} (the file is corrupt)")
    for name, crc in tensor_crcs(tensors).items():
        if crc != recorded[name]:
            raise CheckpointError(f"checksum mismatch in tensor {name!r}: its dtype, shape or bytes do not match the "
                                  "CRC32 recorded when the checkpoint was saved (the file is corrupt)")
