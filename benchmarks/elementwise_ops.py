"""Every unary and binary elementwise op against PyTorch on 1M float32 elements, one thread, one process.

Run ``python -m benchmarks.elementwise_ops [--size N] [--rounds R] [--out DIR]``. The rows are the primitives of
``backends/_elementwise_table.py`` that a user reaches through a Tensor function (each row says which), plus the
composites that are hot in models (gelu, silu, softplus, pow with a float exponent that is an integer or a
half-integer, round, clamp, ``x * scalar``). Every op runs on the same data on both sides, ours and torch
interleaved (A B A B ...), and the report gives the medians and ours ÷ torch as the median of the per-round ratios
(lower is better). Goal (issue "CPU speed"): no op over 2x.

Inputs are drawn inside each op's domain (log of positives, acosh of values >= 1, ...), so no side pays for
NaN handling the other does not. Integer ops (bitwise, shifts) run on int32; predicates on float32.
"""
from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    # NOTE: before NumPy loads: OpenBLAS and OpenMP size their pools from these once (as benchmarks.compare)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from minitorch_gpu.backends._elementwise_table import by_arity  # noqa: E402

from ._report import machine_description, write_results  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "cpu")
GOAL = 2.0

# input domains: (low, high) of a uniform draw
_WIDE = (-4.0, 4.0)
_POS = (0.1, 4.0)
_UNIT = (-0.99, 0.99)
_GE1 = (1.01, 4.0)
_INT = "int32"

# primitive -> (how to call it on a library module ``m`` with inputs x[, y], domain of x, domain of y)
Call = Callable[..., Any]
UNARY: dict[str, tuple[Call, Any]] = {
    "neg": (lambda m, x: m.neg(x), _WIDE), "abs": (lambda m, x: m.abs(x), _WIDE),
    "exp": (lambda m, x: m.exp(x), _WIDE), "exp2": (lambda m, x: m.exp2(x), _WIDE),
    "log": (lambda m, x: m.log(x), _POS), "log2": (lambda m, x: m.log2(x), _POS),
    "log10": (lambda m, x: m.log10(x), _POS), "log1p": (lambda m, x: m.log1p(x), _POS),
    "expm1": (lambda m, x: m.expm1(x), _WIDE), "sqrt": (lambda m, x: m.sqrt(x), _POS),
    "rsqrt": (lambda m, x: m.rsqrt(x), _POS), "sin": (lambda m, x: m.sin(x), _WIDE),
    "cos": (lambda m, x: m.cos(x), _WIDE), "tan": (lambda m, x: m.tan(x), _UNIT),
    "tanh": (lambda m, x: m.tanh(x), _WIDE), "floor": (lambda m, x: m.floor(x), _WIDE),
    "ceil": (lambda m, x: m.ceil(x), _WIDE), "trunc": (lambda m, x: m.trunc(x), _WIDE),
    "rint": (lambda m, x: m.round(x), _WIDE), "frac": (lambda m, x: m.frac(x), _WIDE),
    "reciprocal": (lambda m, x: m.reciprocal(x), _POS), "square": (lambda m, x: m.square(x), _WIDE),
    "asin": (lambda m, x: m.asin(x), _UNIT), "acos": (lambda m, x: m.acos(x), _UNIT),
    "atan": (lambda m, x: m.atan(x), _WIDE), "sinh": (lambda m, x: m.sinh(x), _WIDE),
    "cosh": (lambda m, x: m.cosh(x), _WIDE), "asinh": (lambda m, x: m.asinh(x), _WIDE),
    "acosh": (lambda m, x: m.acosh(x), _GE1), "atanh": (lambda m, x: m.atanh(x), _UNIT),
    "deg2rad": (lambda m, x: m.deg2rad(x), _WIDE), "rad2deg": (lambda m, x: m.rad2deg(x), _WIDE),
    "sign": (lambda m, x: m.sign(x), _WIDE), "relu": (lambda m, x: m.relu(x), _WIDE),
    "sigmoid": (lambda m, x: m.sigmoid(x), _WIDE), "erf": (lambda m, x: m.erf(x), _WIDE),
    "erfinv": (lambda m, x: m.erfinv(x), _UNIT), "bitwise_not": (lambda m, x: m.bitwise_not(x), _INT),
    "lgamma": (lambda m, x: m.lgamma(x), _POS), "digamma": (lambda m, x: m.digamma(x), _POS),
    "isnan": (lambda m, x: m.isnan(x), _WIDE), "isinf": (lambda m, x: m.isinf(x), _WIDE),
    "isfinite": (lambda m, x: m.isfinite(x), _WIDE), "signbit": (lambda m, x: m.signbit(x), _WIDE),
    "logical_not": (lambda m, x: m.logical_not(x), _WIDE),
}
BINARY: dict[str, tuple[Call, Any, Any]] = {
    "add": (lambda m, x, y: m.add(x, y), _WIDE, _WIDE), "sub": (lambda m, x, y: m.sub(x, y), _WIDE, _WIDE),
    "mul": (lambda m, x, y: m.mul(x, y), _WIDE, _WIDE), "div": (lambda m, x, y: m.div(x, y), _WIDE, _POS),
    "maximum": (lambda m, x, y: m.maximum(x, y), _WIDE, _WIDE),
    "minimum": (lambda m, x, y: m.minimum(x, y), _WIDE, _WIDE),
    "fmax": (lambda m, x, y: m.fmax(x, y), _WIDE, _WIDE), "fmin": (lambda m, x, y: m.fmin(x, y), _WIDE, _WIDE),
    "pow": (lambda m, x, y: m.pow(x, y), _POS, _WIDE), "atan2": (lambda m, x, y: m.atan2(x, y), _WIDE, _WIDE),
    "copysign": (lambda m, x, y: m.copysign(x, y), _WIDE, _WIDE),
    "hypot": (lambda m, x, y: m.hypot(x, y), _WIDE, _WIDE),
    "logaddexp": (lambda m, x, y: m.logaddexp(x, y), _WIDE, _WIDE),
    "logaddexp2": (lambda m, x, y: m.logaddexp2(x, y), _WIDE, _WIDE),
    "fmod": (lambda m, x, y: m.fmod(x, y), _WIDE, _POS),
    "remainder": (lambda m, x, y: m.remainder(x, y), _WIDE, _POS),
    "floor_divide": (lambda m, x, y: m.floor_divide(x, y), _WIDE, _POS),
    "trunc_divide": (lambda m, x, y: m.div(x, y, rounding_mode="trunc"), _WIDE, _POS),
    "bitwise_and": (lambda m, x, y: m.bitwise_and(x, y), _INT, _INT),
    "bitwise_or": (lambda m, x, y: m.bitwise_or(x, y), _INT, _INT),
    "bitwise_xor": (lambda m, x, y: m.bitwise_xor(x, y), _INT, _INT),
    "left_shift": (lambda m, x, y: m.bitwise_left_shift(x, y % 8), _INT, _INT),
    "right_shift": (lambda m, x, y: m.bitwise_right_shift(x, y % 8), _INT, _INT),
    "eq": (lambda m, x, y: m.eq(x, y), _WIDE, _WIDE), "ne": (lambda m, x, y: m.ne(x, y), _WIDE, _WIDE),
    "lt": (lambda m, x, y: m.lt(x, y), _WIDE, _WIDE), "le": (lambda m, x, y: m.le(x, y), _WIDE, _WIDE),
    "gt": (lambda m, x, y: m.gt(x, y), _WIDE, _WIDE), "ge": (lambda m, x, y: m.ge(x, y), _WIDE, _WIDE),
    "logical_and": (lambda m, x, y: m.logical_and(x, y), _WIDE, _WIDE),
    "logical_or": (lambda m, x, y: m.logical_or(x, y), _WIDE, _WIDE),
    "logical_xor": (lambda m, x, y: m.logical_xor(x, y), _WIDE, _WIDE),
}
# composites a model reaches through nn.functional or a scalar operand
EXTRA: dict[str, tuple[Call, Any]] = {
    "gelu": (lambda m, x: m.nn.functional.gelu(x), _WIDE),
    "gelu tanh": (lambda m, x: m.nn.functional.gelu(x, approximate="tanh"), _WIDE),
    "silu": (lambda m, x: m.nn.functional.silu(x), _WIDE),
    "softplus": (lambda m, x: m.nn.functional.softplus(x), _WIDE),
    "mul scalar": (lambda m, x: x * 1.5, _WIDE),
    "add scalar": (lambda m, x: x + 1.5, _WIDE),
    "pow 2.0": (lambda m, x: m.pow(x, 2.0), _WIDE), "pow 3.0": (lambda m, x: m.pow(x, 3.0), _WIDE),
    "pow 0.5": (lambda m, x: m.pow(x, 0.5), _POS), "pow -1.0": (lambda m, x: m.pow(x, -1.0), _POS),
    "pow 1.5": (lambda m, x: m.pow(x, 1.5), _POS), "pow -0.5": (lambda m, x: m.pow(x, -0.5), _POS),
    "pow 2.5": (lambda m, x: m.pow(x, 2.5), _POS), "pow 1.7": (lambda m, x: m.pow(x, 1.7), _POS),
    "round decimals=2": (lambda m, x: m.round(x, decimals=2), _WIDE),
    "clamp": (lambda m, x: m.clamp(x, -1.0, 1.0), _WIDE),
    "remainder scalar": (lambda m, x: m.remainder(x, 1.5), _WIDE),
    "fmod scalar": (lambda m, x: m.fmod(x, 1.5), _WIDE),
    "floor_divide scalar": (lambda m, x: m.floor_divide(x, 1.5), _WIDE),
}


def _draw(rng: np.random.Generator, domain: Any, n: int) -> np.ndarray[Any, Any]:
    if domain == _INT:
        return rng.integers(-1000, 1000, n, dtype=np.int32)
    lo, hi = domain
    return rng.uniform(lo, hi, n).astype(np.float32)


def cases(size: int) -> list[tuple[str, Call, list[np.ndarray[Any, Any]]]]:
    """(name, fn(module, *tensors), input arrays) for every row, table order then the composites."""
    rng = np.random.default_rng(0)
    out: list[tuple[str, Call, list[np.ndarray[Any, Any]]]] = []
    for name in by_arity("unary"):
        fn, dom = UNARY[name]
        out.append((name, fn, [_draw(rng, dom, size)]))
    for name in by_arity("binary"):
        fn, da, db = BINARY[name]
        out.append((name, fn, [_draw(rng, da, size), _draw(rng, db, size)]))
    for name, (fn, dom) in EXTRA.items():
        out.append((name, fn, [_draw(rng, dom, size)]))
    return out


def _sample(fn: Callable[[], Any], reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def run(size: int = 1 << 20, rounds: int = 11, reps: int = 5, only: list[str] | None = None) -> dict[str, Any]:
    import minitorch_gpu as mt
    import torch
    torch.set_num_threads(1)
    # our compiled loops' pool too (else they split 1M elements over every core: "1 thread" must hold both sides)
    be = mt.zeros(1)._be
    saved_threads, be.optim_threads = be.optim_threads, 1
    try:
        rows = _rows(mt, torch, size, rounds, reps, only)
    finally:
        be.optim_threads = saved_threads
    return {"size": size, "rounds": rounds, "reps": reps, "numpy": np.__version__, "torch": torch.__version__,
            "rows": rows}


def _rows(mt: Any, torch: Any, size: int, rounds: int, reps: int, only: list[str] | None) -> list[dict[str, Any]]:
    rows = []
    for name, fn, arrays in cases(size):
        if only and name not in only:
            continue
        ours_in = [mt.tensor(a) for a in arrays]
        theirs_in = [torch.from_numpy(a.copy()) for a in arrays]

        def ours(fn: Call = fn, xs: list[Any] = ours_in) -> Any:
            return fn(mt, *xs)

        def theirs(fn: Call = fn, xs: list[Any] = theirs_in) -> Any:
            return fn(torch, *xs)
        ours()
        theirs()
        t_o, t_t = [], []
        for r in range(rounds):
            for side, fns in ((0, ours), (1, theirs)) if r % 2 == 0 else ((1, theirs), (0, ours)):
                (t_o if side == 0 else t_t).append(_sample(fns, reps))
        o, t = statistics.median(t_o) * 1e3, statistics.median(t_t) * 1e3
        # the median of the ratios within each round: the two samples of a round are adjacent in time, so load
        # from other processes, which drifts over seconds, cancels out of it better than out of separate medians
        ratio = statistics.median(a / b for a, b in zip(t_o, t_t))
        rows.append({"op": name, "ours_ms": o, "torch_ms": t, "ratio": ratio})
        print(f"{name:22s} ours {o:8.3f} ms  torch {t:8.3f} ms  {ratio:6.2f}x", flush=True)
    return rows


def markdown(res: dict[str, Any], machine: str) -> str:
    over = [r for r in res["rows"] if r["ratio"] > GOAL]
    lines = ["# Elementwise ops vs PyTorch on the CPU", "",
             f"{res['size']:,} float32 elements (int32 for the bitwise ops), 1 thread, medians of {res['rounds']} "
             f"interleaved rounds of {res['reps']} calls (ratio: the median of the per-round ratios); NumPy {res['numpy']}, PyTorch {res['torch']}. "
             f"Machine: {machine}. Ratio = ours / torch (lower is better); goal: none over {GOAL:.0f}x "
             f"({len(over)} over).", "",
             "| op | ours (ms) | torch (ms) | ratio |", "|---|---:|---:|---:|"]
    for r in res["rows"]:
        flag = " **over**" if r["ratio"] > GOAL else ""
        lines.append(f"| {r['op']} | {r['ours_ms']:.3f} | {r['torch_ms']:.3f} | {r['ratio']:.2f}{flag} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=1 << 20)
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--ops", nargs="*", help="a subset of the rows")
    p.add_argument("--out", help=f"folder for elementwise_ops.md/json (the committed ones are in {RESULTS})")
    args = p.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("benchmarks.elementwise_ops compares against PyTorch, which is not installed: nothing to measure")
        return 0
    res = run(args.size, args.rounds, args.reps, args.ops)
    res["machine"] = machine_description()  # after the run: its load average covers the run
    text = markdown(res, res["machine"])
    print()
    print(text)
    if args.out:
        write_results(args.out, "elementwise_ops", res, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
