"""The native CPU worker pool (kernels/pool_cpu.cpp): what a split costs, and what it gains, 1 thread against N.

Run ``python -m benchmarks.pool_cpu [--threads N] [--rounds R] [--spin-us S] [--cases SUBSTRING ...]``. Rows: the
empty hand-off (the pool's probe entry with one piece a thread and no work), the probe with 64 pieces of 1 µs
(the control: the best a split can do), and compiled calls of each library at sizes around the split thresholds,
each forced to split (the thresholds set to 1) so that both sides run the same loop. The sides run interleaved,
and a round counts only when the control scaled in it (N threads under 0.75 of 1 thread's time before and after
it): on a shared machine the other cores come and go, and a round without them says nothing about the split.
The table shows, per row, the medians of the rounds kept and their ratio (below 1: the split pays).
"""
import argparse
import ctypes
import statistics
import time
from collections.abc import Callable

import numpy as np

from minitorch_gpu.backends import _cnn_native, _cpu_library, _elementwise_native, _rows_native

_i64 = ctypes.c_longlong
Call = Callable[[int], object]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=9, help="rounds kept per row")
    p.add_argument("--max-rounds", type=int, default=60, help="rounds tried per row at most")
    p.add_argument("--spin-us", type=float, default=None, help="the helpers' spin time (default: the pool's)")
    p.add_argument("--target-ms", type=float, default=1.5, help="time per sample")
    p.add_argument("--cases", nargs="*", help="only the rows whose name contains one of these")
    return p


def _probe(pool: _cpu_library.Pool, pieces: int, work_ns: int) -> Call:
    owner = (_i64 * max(pieces, 1))()
    return lambda t: pool.probe(t, pieces, work_ns, -1, 0, owner, ctypes.byref(_i64(0)))


def _cases(pool: _cpu_library.Pool, threads: int) -> list[tuple[str, int, Call]]:
    rng = np.random.default_rng(0)
    out: list[tuple[str, int, Call]] = [("hand-off (empty probe)", 0, _probe(pool, threads, 0)),
                                        ("probe 64 x 1 us", 0, _probe(pool, 64, 1000))]

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    if _elementwise_native.available():
        for n in (1 << 15, 3 << 14, 1 << 16, 1 << 17):
            x, y = f32(n), np.empty(n, np.float32)
            out.append((f"gelu {n}", n, lambda t, x=x, y=y: _elementwise_native.unary("gelu", x, y, t)))
    if _rows_native.available():
        for rows, n in ((128, 128), (256, 128), (512, 128), (64, 1024)):
            x, w, b = f32(rows, n), f32(n), f32(n)
            out.append((f"layer norm {rows}x{n}", rows * n,
                        lambda t, x=x, w=w, b=b: _rows_native.layer_norm_forward(x, w, b, 1e-5, t)))
            o = np.empty_like(x)
            out.append((f"softmax {rows}x{n}", rows * n,
                        lambda t, x=x, o=o: _rows_native.softmax_forward(x, out=o, threads=t)))
    lib = _cnn_native.library()
    if lib is not None:
        for n, c, s in ((32, 16, 64), (32, 32, 64), (32, 64, 64), (32, 16, 256)):
            x, w, b, g = f32(n, c, s), f32(c), f32(c), f32(n, c, s)
            y, dx = np.empty_like(x), np.empty_like(x)
            mean, var, rstd, dw, db = (np.empty(c, np.float32) for _ in range(5))
            lib.batch_norm_forward(x, w, b, 1e-5, y, mean, var, rstd, 1)
            out.append((f"batch norm {n}x{c}x{s}", x.size,
                        lambda t, a=(x, w, b, 1e-5, y, mean, var, rstd): lib.batch_norm_forward(*a, t)))
            out.append((f"batch norm backward {n}x{c}x{s}", x.size,
                        lambda t, a=(g, x, w, mean, rstd, dx, dw, db): lib.batch_norm_backward(*a, t)))
    return out


def _time(f: Call, t: int, reps: int) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        f(t)
    return (time.perf_counter() - start) / reps * 1e6


def _row(f: Call, control: Call, threads: int, args: argparse.Namespace) -> tuple[float, float, int, int] | None:
    """(1-thread µs, N-thread µs, rounds kept, rounds tried), None when no round kept."""
    f(1), f(threads)
    reps = max(2, int(args.target_ms * 1000 / max(_time(f, 1, 3), 0.1)))
    ones, many, tried = [], [], 0

    def scaled() -> bool:
        return _time(control, threads, 8) < 0.75 * _time(control, 1, 8)

    while len(ones) < args.rounds and tried < args.max_rounds:
        tried += 1
        before = scaled()
        a, b = _time(f, 1, reps), _time(f, threads, reps)
        if before and scaled():
            ones.append(a)
            many.append(b)
    if not ones:
        return None
    return statistics.median(ones), statistics.median(many), len(ones), tried


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    pool = _cpu_library.POOL.get()
    if pool is None:
        print(f"no native worker pool here: {_cpu_library.POOL.reason}")
        return 0
    if args.spin_us is not None:
        pool.configure(args.spin_us)
    threads = max(2, args.threads)
    # every call splits: both sides run the same loop, only the thread count differs
    for mod in (_cnn_native, _elementwise_native, _rows_native):
        setattr(mod, "_PARALLEL_MIN_ELEMENTS", 1)
    print(f"threads 1 vs {threads}, helper spin {pool.spin_us():g} us; rounds kept only where the control scaled")
    print(f"{'case':34s} {'elements':>9s} {'1 thread us':>12s} {f'{threads} threads us':>13s} {'ratio':>6s}  rounds")
    control = _probe(pool, 64, 1000)
    for name, elements, f in _cases(pool, threads):
        if args.cases and not any(c in name for c in args.cases):
            continue
        r = _row(f, control, threads, args)
        if r is None:
            print(f"{name:34s} {elements:>9d}  (the other cores were never free in {args.max_rounds} rounds)")
            continue
        one, many, kept, tried = r
        print(f"{name:34s} {elements:>9d} {one:12.1f} {many:13.1f} {many / one:6.2f}  {kept}/{tried}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
