"""Bounded JSON parsing for checkpoint metadata: explicit limits on size, entry count and nesting depth, checked
by a scan of the raw bytes before ``json`` builds a single object.

Under safetensors' 100 MB header cap, 95 MB of ``[],`` is 31 million lists: ``json.loads`` took 24 s and 4.6 GB
to build them. The scan counts the values (commas and openings outside strings) and the depth in 1 MiB NumPy
chunks, stops at the first limit crossed, and costs about a second per 100 MB at worst; what passes is parsed
with the garbage collector paused (JSON has no cycles to collect, and its passes over millions of new lists
made parsing ten times slower).
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

import numpy as np

# safetensors' own cap on the header: a larger length field is corruption, not a big model
MAX_METADATA_BYTES = 100_000_000
# values plus containers: a model's state dict and its AdamW state take about 25 per parameter tensor
MAX_ENTRIES = 4_000_000
# JSON levels; a nested dict of the structure metadata takes three, and decoding recurses once per level
MAX_DEPTH = 256
# tensors in one safetensors file: each costs far more to check and build than a JSON entry
MAX_TENSORS = 200_000

_SCAN_CHUNK = 1 << 20
_QUOTE, _COMMA = ord('"'), ord(",")
_OPENS, _CLOSES = (ord("["), ord("{")), (ord("]"), ord("}"))


class LimitError(ValueError):
    """Metadata over a parsing limit; the message says which."""


def check(raw: bytes) -> None:
    """Raise :class:`LimitError` when the JSON text ``raw`` is larger, has more entries or nests deeper than the
    limits. Malformed JSON passes (the parser reports it); only the cost of parsing is judged here."""
    if len(raw) > MAX_METADATA_BYTES:
        raise LimitError(f"it is {len(raw)} bytes, above the {MAX_METADATA_BYTES}-byte limit")
    entries, depth, inside, start = 0, 0, 0, 0
    while start < len(raw):
        end = start + _SCAN_CHUNK
        seg = raw[start:end]
        if b"\\" in seg:
            tail = len(seg) - len(seg.rstrip(b"\\"))
            if tail % 2 and end < len(raw):
                end += 1  # keep an escape sequence whole within one chunk
                seg = raw[start:end]
            # after these, every remaining quote opens or closes a string
            seg = seg.replace(b"\\\\", b"__").replace(b'\\"', b"__")
        start = end
        c = np.frombuffer(seg, dtype=np.uint8)
        outside: np.ndarray | bool = True
        if b'"' in seg:
            # a uint8 running count wraps but keeps its parity, and is several times faster than a wider one
            quotes = np.cumsum((c == _QUOTE).view(np.uint8), dtype=np.uint8)
            outside = ((quotes + inside) & 1) == 0
            inside = (int(quotes[-1]) + inside) & 1
        elif inside:
            continue  # all of it inside one long string
        opens = ((c == _OPENS[0]) | (c == _OPENS[1])) & outside
        closes = ((c == _CLOSES[0]) | (c == _CLOSES[1])) & outside
        n_opens = int(np.count_nonzero(opens))
        if n_opens:
            level = np.cumsum(opens.view(np.int8) - closes.view(np.int8), dtype=np.int32) + depth
            if int(level.max()) > MAX_DEPTH:
                raise LimitError(f"it nests too deeply (more than {MAX_DEPTH} levels)")
            depth = int(level[-1])
        else:
            depth -= int(np.count_nonzero(closes))
        entries += n_opens + int(np.count_nonzero((c == _COMMA) & outside))
        if entries > MAX_ENTRIES:
            raise LimitError(f"it has more than {MAX_ENTRIES} entries")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large acyclic data (parsed JSON)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
