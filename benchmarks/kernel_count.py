"""Counting mode: per kernel, the launches and bytes of ONE training step of the main job's GPU model, on the
CPU simulator (no GPU needed, nothing timed).

Run ``python -m benchmarks.kernel_count`` (the full GPU config: 6 layers, 6 heads, width 384, context 256, batch
64, vocab 96; slow on the simulator) or ``--quick``: the same model at five small (batch, context) points,
(2, T0), (4, T0), (2, 2·T0), (4, 2·T0), (2, 4·T0), each per-kernel count fitted exactly to ``a + e·T + b·B·T + d·T² + c·B·T²`` and evaluated
at the full batch and context, then checked at (4, 4·T0), a point the fit did not see. Most of a step scales
with the tokens B·T (elementwise maps, layer norms, matmul activations, embeddings); the attention scores with
B·T² (B·H·T·T); the causal mask with T²; the position-embedding rows read with T; the parameter-sized work
(weight reads, weight gradients, the optimizer) is constant: the five terms. Launch counts do not depend on B
and T (grid-stride loops); when the points disagree the report says so.

What is counted, and how (``minitorch_gpu/backends/cuda/counting.py``): our kernel launches with the bytes of
their array arguments; the calls of array-library built-ins (primitives our kernels did not serve, launcher
copies and memsets); views; device-to-host syncs; host-to-device copies. The step is the main job's
(``minitorch_gpu/train.py``): batch to the device, forward, zero_grad, backward, clip_grad_norm_(1.0), AdamW
step, LR scheduler step, ``loss.item()``. One step runs uncounted first (compilation, optimizer state creation).

The minimum the model needs per step (float32, 4 bytes; P parameters, A float activations saved for
backward, M dropout-mask bytes, N = B·T tokens)::

    min bytes = 4P (read) + 4P (write)        parameters: read by the forward, written by the update
              + 4P (write) + 4P (read)        gradients: written by the backward, read by the update
              + 2 · (4P + 4P)                 AdamW's exp_avg and exp_avg_sq: each read and written once
              + 2 · (4A + M)                  saved activations and masks: written once, read once
              + 2 · 8N                        int64 inputs and targets: read once
            = 32P + 8A + 2M + 16N

with, per layer (C width, H heads, T context), the activations a backward without recomputation needs:
LN1 input and output, q/k/v, the attention probabilities (H·T per token), the attention output, LN2 input and
output, the MLP's pre-GELU and post-GELU (4C each), and each LayerNorm's mean and rstd:
``A = L·(16·N·C + 4·N + B·H·T²) + 2·N·C + 3·N + N·V`` (final LN input/output, its mean/rstd, the logits and
their log-sum-exp), and with dropout p > 0 one byte per element of each dropout mask:
``M = L·(B·H·T² + 2·N·C) + N·C``.

Results: ``benchmarks/results/sim/kernels_count.{json,md}``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

from ._report import write_results

# the main job's GPU config (minitorch_gpu/train.py DEFAULTS["cuda"]), vocabulary of its default corpus
GPU_CONFIG = dict(batch_size=64, block_size=256, n_layer=6, n_head=6, n_embd=384, vocab_size=96, dropout=0.2,
                  weight_decay=0.1, grad_clip=1.0, lr=1e-3)
TINY_CONFIG = dict(GPU_CONFIG, batch_size=2, block_size=8, n_layer=1, n_head=2, n_embd=32, vocab_size=16)
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def count_step(cfg: dict[str, Any], batch: int, block: int, seed: int = 0) -> dict[str, Any]:
    """The counts of one training step (the second: the first runs uncounted) at ``batch`` x ``block``."""
    import minitorch_gpu as mt
    from minitorch_gpu.backends import get_backend
    from minitorch_gpu.backends.cuda.counting import LaunchCounter
    from minitorch_gpu.models import GPT, GPTConfig
    from minitorch_gpu.train import Batches, lr_schedule, param_groups

    prev = mt.cuda.use_simulator(True)
    try:
        device = mt.device("cuda")
        mt.manual_seed(seed)
        # the model's context is the config's whatever ``block`` is measured, so that the parameters (the
        # position table among them) and everything sized by them stay the same at every measured point
        config = GPTConfig(vocab_size=cfg["vocab_size"], block_size=max(block, cfg["block_size"]),
                           n_layer=cfg["n_layer"],
                           n_head=cfg["n_head"], n_embd=cfg["n_embd"], dropout=cfg["dropout"], bias=True)
        model = GPT(config).to(device)
        opt = mt.optim.AdamW(param_groups(model, cfg["weight_decay"]), lr=cfg["lr"], betas=(0.9, 0.99))
        sched = mt.optim.lr_scheduler.LambdaLR(opt, lr_schedule(10, 100))
        ids = np.random.default_rng(seed).integers(0, cfg["vocab_size"], 20 * (block + 1) * batch + 64)
        batches = Batches(ids.astype(np.int64), block, batch, device)
        gen = mt.Generator().manual_seed(seed)
        params = sum(p.numel() for p in model.parameters())

        def step() -> float:
            x, y = batches.get("train", gen)
            _, loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            mt.nn.utils.clip_grad_norm_(model.parameters(), cfg["grad_clip"])
            opt.step()
            sched.step()
            value: float = loss.item()
            return value

        step()
        counter = LaunchCounter().attach(get_backend(device))
        t0 = time.perf_counter()
        try:
            loss = step()
        finally:
            counter.detach()
        return {"batch": batch, "block": block, "params": params, "loss": loss,
                "sim_seconds": time.perf_counter() - t0, **_flatten(counter)}
    finally:
        mt.cuda.use_simulator(prev)


def _flatten(c: Any) -> dict[str, Any]:
    return {
        "kernels": {k: {"file": s.file, "launches": s.launches, "bytes_read": s.bytes_read,
                        "bytes_written": s.bytes_written} for k, s in sorted(c.kernels.items())},
        "builtins": {k: {"calls": s.calls, "bytes_read": s.bytes_read, "bytes_written": s.bytes_written}
                     for k, s in sorted(c.builtins.items())},
        "syncs": {k: {"calls": s.calls, "bytes": s.bytes_read} for k, s in sorted(c.syncs.items())},
        "views": dict(sorted(c.views.items())),
        "host_to_device": {"calls": c.host_to_device.calls, "bytes": c.host_to_device.bytes_written},
    }


def minimum_bytes(cfg: dict[str, Any], params: int, batch: int, block: int) -> dict[str, int]:
    """The module docstring's minimum, term by term."""
    L, H, C, V = cfg["n_layer"], cfg["n_head"], cfg["n_embd"], cfg["vocab_size"]
    N = batch * block
    A = L * (16 * N * C + 4 * N + batch * H * block * block) + 2 * N * C + 3 * N + N * V
    M = (L * (batch * H * block * block + 2 * N * C) + N * C) if cfg["dropout"] > 0 else 0
    terms = {"parameters": 8 * params, "gradients": 8 * params, "optimizer_state": 16 * params,
             "activations": 8 * A + 2 * M, "inputs": 16 * N}
    terms["total"] = sum(terms.values())
    return terms


# ---------------------------------------------------------------------- extrapolation
def _terms(b: int, t: int) -> list[float]:
    return [1.0, t, b * t, t * t, b * t * t]


def _fit(points: list[tuple[int, int]], values: list[float], batch: int, block: int) -> float:
    """The count model through five (B, T) points, evaluated at (batch, block)."""
    m = np.array([_terms(b, t) for b, t in points], dtype=np.float64)
    coef = np.linalg.solve(m, np.asarray(values, dtype=np.float64))
    return float(coef @ np.array(_terms(batch, block), dtype=np.float64))


def _merge(runs: list[dict[str, Any]], section: str, fields: tuple[str, ...], batch: int,
           block: int) -> tuple[dict[str, dict[str, Any]], list[str]]:
    points = [(r["batch"], r["block"]) for r in runs]
    names = sorted(set().union(*(r[section].keys() for r in runs)))
    out: dict[str, dict[str, Any]] = {}
    notes = []
    for name in names:
        rows = [r[section].get(name) for r in runs]
        row: dict[str, Any] = {}
        for f in fields:
            vals = [float(x[f]) if x else 0.0 for x in rows]
            if f in ("launches", "calls") and len(set(vals)) == 1:
                row[f] = int(vals[0])
                continue
            if f in ("launches", "calls"):
                notes.append(f"{section} {name}: {f} differ between the measured points {vals}; extrapolated "
                             f"like the bytes")
            row[f] = max(0, round(_fit(points, vals, batch, block)))
        if rows[-1] and "file" in rows[-1]:
            row["file"] = rows[-1]["file"]
        out[name] = row
    return out, notes


def extrapolate(runs: list[dict[str, Any]], batch: int, block: int) -> dict[str, Any]:
    """The counts at (batch, block) from the five runs of ``quick_points``."""
    kernels, n1 = _merge(runs, "kernels", ("launches", "bytes_read", "bytes_written"), batch, block)
    builtins, n2 = _merge(runs, "builtins", ("calls", "bytes_read", "bytes_written"), batch, block)
    syncs, n3 = _merge(runs, "syncs", ("calls", "bytes"), batch, block)
    views = {k: int(v["calls"]) for k, v in _merge(
        [dict(r, views={k: {"calls": n} for k, n in r["views"].items()}) for r in runs], "views", ("calls",),
        batch, block)[0].items()}
    h2d = _merge([dict(r, h={"x": r["host_to_device"]}) for r in runs], "h", ("calls", "bytes"), batch, block)[0]
    return {"kernels": kernels, "builtins": builtins, "syncs": syncs, "views": views,
            "host_to_device": h2d.get("x", {"calls": 0, "bytes": 0}), "notes": n1 + n2 + n3}


def totals(res: dict[str, Any]) -> dict[str, int]:
    k, b = res["kernels"].values(), res["builtins"].values()
    return {"kernel_launches": sum(r["launches"] for r in k),
            "kernel_bytes": sum(r["bytes_read"] + r["bytes_written"] for r in k),
            "builtin_calls": sum(r["calls"] for r in b),
            "builtin_bytes": sum(r["bytes_read"] + r["bytes_written"] for r in b),
            "syncs": sum(r["calls"] for r in res["syncs"].values()),
            "views": sum(res["views"].values()),
            "host_to_device_copies": res["host_to_device"]["calls"]}


MODEL = "a + e*T + b*B*T + d*T^2 + c*B*T^2"


def quick_points(t0: int) -> list[tuple[int, int]]:
    """The five (B, T) points that determine the count model's five coefficients."""
    # batch 2, not 1: with one sequence some permuted views are contiguous and take another kernel variant
    return [(2, t0), (4, t0), (2, 2 * t0), (4, 2 * t0), (2, 4 * t0)]


def run_count(cfg: dict[str, Any], quick: bool, t0: int = 8, check: bool = True) -> dict[str, Any]:
    """The result document: measured point(s), the counts at the config's batch and context, the minimum."""
    B, T = cfg["batch_size"], cfg["block_size"]
    if quick:
        points = quick_points(t0)
        runs = [count_step(cfg, b, t) for b, t in points]
        res = extrapolate(runs, B, T)
        method = (f"measured at (B, T) = {points}; each count fitted exactly to {MODEL} and evaluated at (B, T) = "
                  f"({B}, {T})")
        if check:
            # a point the fit did not see: how far off the model is where it can be checked
            b4, t4 = 4, 4 * t0
            seen = count_step(cfg, b4, t4)
            want = totals({k: seen[k] for k in ("kernels", "builtins", "syncs", "views", "host_to_device")})
            got = totals(extrapolate(runs, b4, t4))
            err = {k: abs(got[k] - want[k]) / max(want[k], 1) for k in want}
            res["fit_check"] = {"point": [b4, t4], "measured": want, "fitted": got, "relative_error": err}
            method += (f"; checked at (B, T) = ({b4}, {t4}), not used in the fit: largest relative error of a "
                       f"total {max(err.values()):.1e}")
    else:
        runs = [count_step(cfg, B, T)]
        res = {k: runs[0][k] for k in ("kernels", "builtins", "syncs", "views", "host_to_device")}
        res["notes"] = []
        method = f"measured at (B, T) = ({B}, {T})"
    params = runs[0]["params"]
    res["totals"] = totals(res)
    minimum = minimum_bytes(cfg, params, B, T)
    moved = res["totals"]["kernel_bytes"] + res["totals"]["builtin_bytes"]
    return {"config": cfg, "quick": quick, "method": method, "params": params,
            "measured": [{k: r[k] for k in ("batch", "block", "loss", "sim_seconds")} for r in runs],
            **res, "minimum_bytes": minimum, "bytes_over_minimum": moved / minimum["total"]}


def markdown(doc: dict[str, Any]) -> str:
    """The counts as markdown tables."""
    cfg = doc["config"]
    t = doc["totals"]
    mb = 1e6
    lines = [
        "# Kernel counts of one GPT training step (CPU simulator)", "",
        f"Model: {cfg['n_layer']} layers, {cfg['n_head']} heads, width {cfg['n_embd']}, context {cfg['block_size']}, "
        f"batch {cfg['batch_size']}, vocab {cfg['vocab_size']}, dropout {cfg['dropout']}; {doc['params']:,} "
        "parameters; AdamW, clip_grad_norm_, loss.item().", "",
        f"Method: {doc['method']}.", "",
        f"**Per step:** {t['kernel_launches']} kernel launches moving {t['kernel_bytes'] / mb:,.1f} MB; "
        f"{t['builtin_calls']} array-library built-in calls moving {t['builtin_bytes'] / mb:,.1f} MB; "
        f"{t['syncs']} device-to-host syncs; {t['host_to_device_copies']} host-to-device copies; {t['views']} views. "
        f"Total {(t['kernel_bytes'] + t['builtin_bytes']) / mb:,.1f} MB = **{doc['bytes_over_minimum']:.2f}x** the "
        f"minimum of {doc['minimum_bytes']['total'] / mb:,.1f} MB.", "",
        "Minimum (formula in `benchmarks/kernel_count.py`): " + ", ".join(
            f"{k} {v / mb:,.1f} MB" for k, v in doc["minimum_bytes"].items() if k != "total") + ".", "",
        "## Our kernels", "", "| kernel | file | launches | MB read | MB written |", "|---|---|---:|---:|---:|"]
    for name, r in sorted(doc["kernels"].items(), key=lambda kv: -(kv[1]["bytes_read"] + kv[1]["bytes_written"])):
        lines.append(f"| `{name}` | {r.get('file', '')} | {r['launches']} | {r['bytes_read'] / mb:,.2f} | "
                     f"{r['bytes_written'] / mb:,.2f} |")
    lines += ["", "## Array-library built-ins (not our kernels)", "", "| call | calls | MB read | MB written |",
              "|---|---:|---:|---:|"]
    for name, r in sorted(doc["builtins"].items(), key=lambda kv: -(kv[1]["bytes_read"] + kv[1]["bytes_written"])):
        lines.append(f"| `{name}` | {r['calls']} | {r['bytes_read'] / mb:,.2f} | {r['bytes_written'] / mb:,.2f} |")
    lines += ["", "## Device-to-host syncs", "", "| source | calls | bytes |", "|---|---:|---:|"]
    for name, r in doc["syncs"].items():
        lines.append(f"| {name} | {r['calls']} | {r['bytes']} |")
    lines += ["", f"Host-to-device copies: {doc['host_to_device']['calls']} ({doc['host_to_device']['bytes']:,} "
              f"bytes). Views (no data moved): " + ", ".join(f"{k} {v}" for k, v in doc["views"].items()) + "."]
    if doc["notes"]:
        lines += ["", "Notes:"] + [f"- {n}" for n in doc["notes"]]
    return "\n".join(lines) + "\n"


def write(doc: dict[str, Any], folder: str) -> None:
    write_results(folder, "kernels_count", doc, markdown(doc))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="measure at five small (batch, context) points and extrapolate to the full config (about "
                        "two minutes; without it the full step runs on the simulator, which takes hours)")
    p.add_argument("--t0", type=int, default=8, help="--quick: the smallest context measured")
    p.add_argument("--no-check", action="store_true", help="--quick: skip the fourth point that checks the fit")
    p.add_argument("--tiny", action="store_true", help="a one-layer width-32 model (for tests)")
    p.add_argument("--out", default=os.path.join(RESULTS, "sim"))
    args = p.parse_args(argv)
    cfg = dict(TINY_CONFIG if args.tiny else GPU_CONFIG)
    doc = run_count(cfg, args.quick, args.t0, not args.no_check)
    write(doc, args.out)
    t = doc["totals"]
    print(f"{t['kernel_launches']} launches, {t['builtin_calls']} built-in calls, {t['syncs']} syncs per step; "
          f"{doc['bytes_over_minimum']:.2f}x the minimum bytes; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
