"""What checkpoint integrity costs: the CRC32s of a safetensors checkpoint against the whole save and load.

Run ``python -m benchmarks.checkpoint_integrity [--mb 200]``. A state dict of float32 matrices (``--mb`` in all)
is saved with ``save_safetensors`` and loaded back; in the same process, interleaved, the checksum work alone
(the per-tensor CRC32s, which a save computes and a load verifies) is timed on the same bytes. The report gives
medians and the checksum's share of a save and of a load. The zip format's save and load are timed beside them:
there the zip's own CRC32 of every record is computed by ``zipfile`` on write and checked on read.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable


import minitorch_gpu as mt
from minitorch_gpu.serialization import _checksum, save_safetensors


def _time(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="checkpoint size in MiB (default 200)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    n = max(1, args.mb // 4)  # 4 MiB per 1024 x 1024 float32 matrix
    sd = {f"layer{i}.weight": mt.randn(1024, 1024) for i in range(n)}
    stored = {k: ("F32", tuple(v.shape), _checksum.stored_bytes(v.numpy())) for k, v in sd.items()}
    times: dict[str, list[float]] = {k: [] for k in ("crc", "st_save", "st_load", "zip_save", "zip_load")}
    with tempfile.TemporaryDirectory() as d:
        st, pt = os.path.join(d, "ck.safetensors"), os.path.join(d, "ck.pt")
        for _ in range(args.repeat):
            times["crc"].append(_time(lambda: _checksum.tensor_crcs(stored)))
            times["st_save"].append(_time(lambda: save_safetensors(sd, st)))
            times["st_load"].append(_time(lambda: mt.load(st)))
            times["zip_save"].append(_time(lambda: mt.save(sd, pt)))
            times["zip_load"].append(_time(lambda: mt.load(pt)))
    med = {k: statistics.median(v) for k, v in times.items()}
    size = sum(v.numel() * 4 for v in sd.values()) / 2 ** 20
    print(f"checkpoint: {size:.0f} MiB in {n} tensors; medians of {args.repeat} (cpu count {os.cpu_count()})")
    print(f"  per-tensor CRC32s (ours)    {med['crc']:.3f} s  ({size / med['crc'] / 1024:.1f} GiB/s)")
    for fmt in ("st", "zip"):
        print(f"  {fmt:3s} save {med[fmt + '_save']:.3f} s   load {med[fmt + '_load']:.3f} s")
    print(f"  CRC32 share: {med['crc'] / med['st_save']:.1%} of a safetensors save, "
          f"{med['crc'] / med['st_load']:.1%} of a load")
    return med


if __name__ == "__main__":
    main()
