"""Kernel microbenchmarks: every kernel family of kernels/*.cu on a real GPU, against the roofline and the
alternatives, in one process.

Run ``python -m benchmarks.kernels`` (``--quick`` for smaller sizes, ``--out DIR`` for another results folder).
Without a GPU it says so and exits 0.

Method: each case runs through the CUDA backend's primitive (the code path training uses, Python launch cost
included, which the sizes make negligible), is warmed up (compilation, caches), then timed with CUDA events
over ``--reps`` repetitions, each preceded by a write of a buffer twice the L2 size so that no input is
served from L2. The median is reported as GB/s (memory-bound kernels: bytes that must cross DRAM at least
once) or TFLOP/s (matmul), with ratios to

* the device-to-device copy bandwidth measured the same way (the practical roofline: 1.0 is perfect),
* CuPy's built-in for the same operation (``MINITORCH_GPU_KERNELS=0`` behaviour; > 1 means we are faster),
* cuBLAS for matmul (through CuPy), and PyTorch's CUDA op when PyTorch with CUDA is installed.

Results go to ``benchmarks/results/<device name>/kernels.{json,md}`` and ``roofline.png`` (needs matplotlib;
an SVG is written without it).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _gpu():
    import minitorch_gpu as mt
    if mt.cuda.is_simulated() or not mt.cuda.is_available():
        return None
    import cupy
    return cupy


class Timer:
    """CUDA-event timing with an L2 flush before every repetition."""

    def __init__(self, cp, reps, warmup):
        self.cp = cp
        self.reps = reps
        self.warmup = warmup
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        l2 = int(props.get("l2CacheSize", 50 << 20))
        self.flush_buf = cp.empty(max(2 * l2, 64 << 20) // 4, dtype=cp.float32)

    def __call__(self, fn):
        cp = self.cp
        for _ in range(self.warmup):
            fn()
        cp.cuda.Device().synchronize()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        times = []
        for _ in range(self.reps):
            self.flush_buf.fill(1.0)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        return statistics.median(times)


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


# ---------------------------------------------------------------------- the case registry
@dataclass
class Case:
    """One timed kernel: ``ours`` (through the CUDA backend), and the alternatives it is compared with.

    ``work`` is what the rate counts: bytes for ``unit="B"`` (memory-bound: the bytes that must cross DRAM at
    least once; compared with the copy bandwidth) or flops for ``unit="FLOP"`` (compared with ``builtin``,
    cuBLAS through CuPy). ``bytes``/``flops``, when known, place the case on the roofline plot."""
    name: str
    work: float
    unit: str
    ours: Callable[[], Any]
    builtin: Callable[[], Any] | None = None
    torch: Callable[[], Any] | None = None
    bytes: float | None = None
    flops: float | None = None


@dataclass
class Ctx:
    """What every case function gets: CuPy, the CUDA backend and its launcher, PyTorch with CUDA or None, the
    size switch, and two shared random float32 vectors of ``n`` elements (and their torch views)."""
    cp: Any
    be: Any
    k: Any
    torch: Any
    quick: bool
    n: int
    a: Any
    b: Any
    ta: Any = None
    tb: Any = None


CASES: list[Callable[[Ctx], list[Case]]] = []
"""The case functions, in report order: each returns the cases of one kernel family (add one with ``@case``)."""


def case(fn: Callable[[Ctx], list[Case]]) -> Callable[[Ctx], list[Case]]:
    """Register a case function: ``fn(ctx) -> [Case, ...]``. An exception in it or in a case's callable is
    reported in the results as that case's error; the other cases still run."""
    CASES.append(fn)
    return fn


def make_ctx(cp, quick):
    from minitorch_gpu.backends import get_backend
    be = get_backend("cuda")
    torch = _torch_cuda()
    n = (1 << 22) if quick else (1 << 26)
    rng = cp.random.default_rng(0)
    a = rng.standard_normal(n, dtype=cp.float32)
    b = rng.standard_normal(n, dtype=cp.float32)
    ta, tb = (torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")) if torch else (None, None)
    return Ctx(cp, be, be.kernels, torch, quick, n, a, b, ta, tb)


# ---------------------------------------------------------------------- cases, one function per kernel family
@case
def elementwise(c: Ctx) -> list[Case]:
    from minitorch_gpu.backends.base import Backend
    cp, k, torch, a, b, ta, tb, n = c.cp, c.k, c.torch, c.a, c.b, c.ta, c.tb, c.n
    return [
        Case("add f32", 12 * n, "B", lambda: k.binary("add", a, b), lambda: cp.add(a, b),
             (lambda: ta + tb) if torch else None, flops=n),
        Case("exp f32", 8 * n, "B", lambda: k.unary("exp", a), lambda: cp.exp(a),
             (lambda: torch.exp(ta)) if torch else None, flops=n),
        Case("gelu f32", 8 * n, "B", lambda: k.unary("gelu", a), lambda: Backend.gelu(c.be, a),
             (lambda: torch.nn.functional.gelu(ta)) if torch else None, flops=20 * n),
    ]


@case
def broadcast(c: Ctx) -> list[Case]:
    cp, k, torch, a, b, ta, tb, n = c.cp, c.k, c.torch, c.a, c.b, c.ta, c.tb, c.n
    bias = b[:1024]
    a2 = a.reshape(-1, 1024)
    return [Case("add f32 broadcast row", 8 * n, "B", lambda: k.binary("add", a2, bias), lambda: cp.add(a2, bias),
                 (lambda: ta.view(-1, 1024) + tb[:1024]) if torch else None, flops=n)]


@case
def softmax(c: Ctx) -> list[Case]:
    cp, k, torch, a, ta, n = c.cp, c.k, c.torch, c.a, c.ta, c.n
    x = a.reshape(n // 4096, 4096)
    xs = a.reshape(-1, 256)

    def cupy_softmax():
        e = cp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return [
        Case("softmax f32 4096 cols", 8 * n, "B", lambda: k.softmax(x, 0, 1), cupy_softmax,
             (lambda: torch.softmax(ta.view(-1, 4096), 1)) if torch else None, flops=5 * n),
        Case("softmax f32 256 cols", 8 * n, "B", lambda: k.softmax(xs, 0, 1), None,
             (lambda: torch.softmax(ta.view(-1, 256), 1)) if torch else None, flops=5 * n),
    ]


@case
def cross_entropy(c: Ctx) -> list[Case]:
    import numpy as np
    cp, k, torch, a, ta, n = c.cp, c.k, c.torch, c.a, c.ta, c.n
    C = 8192
    logits = a.reshape(-1, C)
    target = cp.asarray(np.random.default_rng(0).integers(0, C, logits.shape[0]))
    tt = torch.as_tensor(target, device="cuda") if torch else None
    return [Case("cross_entropy fwd f32", 4 * n, "B", lambda: k.cross_entropy(logits, target, None, -100, 0.0), None,
                 (lambda: torch.nn.functional.cross_entropy(ta.view(-1, C), tt)) if torch else None, flops=4 * n)]


@case
def layer_norm(c: Ctx) -> list[Case]:
    k, torch, a, b, ta, tb, n = c.k, c.torch, c.a, c.b, c.ta, c.tb, c.n
    N = 4096
    xl = a.reshape(-1, N)
    w, bb = b[:N], b[N:2 * N]
    return [Case("layer_norm fwd f32", 8 * n, "B", lambda: k.layer_norm(xl, w, bb, 1e-5), None,
                 (lambda: torch.nn.functional.layer_norm(ta.view(-1, N), (N,), tb[:N], tb[N:2 * N]))
                 if torch else None, flops=8 * n)]


@case
def matmul(c: Ctx) -> list[Case]:
    cp, k, torch = c.cp, c.k, c.torch
    m = 2048 if c.quick else 4096
    rng = cp.random.default_rng(1)
    A = rng.standard_normal((m, m), dtype=cp.float32)
    B = rng.standard_normal((m, m), dtype=cp.float32)
    tA, tB = (torch.as_tensor(A, device="cuda"), torch.as_tensor(B, device="cuda")) if torch else (None, None)
    Ad, Bd = A.astype(cp.float64), B.astype(cp.float64)
    return [
        Case(f"matmul f32 {m}^3", 2 * m ** 3, "FLOP", lambda: k.matmul(A, B), lambda: cp.matmul(A, B),
             (lambda: tA @ tB) if torch else None, bytes=12 * m * m),
        Case(f"matmul f64 {m}^3", 2 * m ** 3, "FLOP", lambda: k.matmul(Ad, Bd), lambda: cp.matmul(Ad, Bd), None,
             bytes=24 * m * m),
    ]


@case
def rows(c: Ctx) -> list[Case]:
    """Layer norm, softmax and cross-entropy at the shapes of a GPT step (see ``_row_cases``)."""
    return [Case(*row) for row in _row_cases(c.cp, c.k, c.torch)]


def _row_cases(cp, k, torch):
    """The row kernels at the shapes of a GPT step: layer norm forward and backward (dx, dw, db), softmax,
    cross-entropy. Bytes are each kernel's compulsory DRAM traffic (every input read once, every output
    written once), so ``vs_copy`` compares with a copy of as many bytes."""
    import numpy as np
    rng = cp.random.default_rng(1)
    out = []
    for rows, N in ((16384, 384), (8192, 1024)):
        x = rng.standard_normal((rows, N), dtype=cp.float32)
        w = rng.standard_normal(N, dtype=cp.float32)
        b = rng.standard_normal(N, dtype=cp.float32)
        dy = rng.standard_normal((rows, N), dtype=cp.float32)
        _, mean, rstd = k.layer_norm(x, w, b, 1e-5)
        tx, tw, tb, tdy = (torch.as_tensor(a, device="cuda") for a in (x, w, b, dy)) if torch else (None,) * 4
        # x read, y written, mean and rstd written
        out.append((f"layer_norm fwd f32 {rows}x{N}", 4 * (2 * rows * N + 2 * rows), "B",
                    lambda x=x, w=w, b=b: k.layer_norm(x, w, b, 1e-5), None,
                    (lambda tx=tx, tw=tw, tb=tb: torch.nn.functional.layer_norm(tx, (tx.shape[1],), tw, tb))
                    if torch else None))

        torch_ln_bwd = None
        if torch:
            xs, ws, bs = (t.detach().requires_grad_() for t in (tx, tw, tb))
            ty = torch.nn.functional.layer_norm(xs, (N,), ws, bs)

            def torch_ln_bwd(ty=ty, xs=xs, ws=ws, bs=bs, tdy=tdy):
                # the backward alone, as ours: the graph is kept for the next repetition
                return torch.autograd.grad(ty, (xs, ws, bs), tdy, retain_graph=True)
        # dy and x read, dx written (mean, rstd, dw, db are rows + N elements)
        out.append((f"layer_norm bwd f32 {rows}x{N}", 4 * (3 * rows * N + 2 * rows + 3 * N), "B",
                    lambda x=x, w=w, dy=dy, mean=mean, rstd=rstd: k.layer_norm_backward(dy, x, w, mean, rstd,
                                                                                       True, True),
                    None, torch_ln_bwd))
    for cols in (256, 4096):
        xs = rng.standard_normal(((1 << 26) // cols, cols), dtype=cp.float32)
        txs = torch.as_tensor(xs, device="cuda") if torch else None
        out.append((f"softmax fwd f32 {cols} cols", 8 * xs.size, "B", lambda xs=xs: k.softmax(xs, 0, 1), None,
                    (lambda txs=txs: torch.softmax(txs, 1)) if torch else None))
    for rows, C in ((16384, 96), (8192, 50257)):
        logits = rng.standard_normal((rows, C), dtype=cp.float32)
        target = cp.asarray(np.random.default_rng(0).integers(0, C, rows))
        tl = torch.as_tensor(logits, device="cuda") if torch else None
        tt = torch.as_tensor(target, device="cuda") if torch else None
        one = cp.ones((), cp.float32)

        def ours_fwd_bwd(logits=logits, target=target, one=one):
            # what a training step runs: the fused pass, then the backward's scale by the loss gradient
            d = k.cross_entropy_fused(logits, target, None, -100, 0.0)[3]
            return k.cross_entropy_scale(d, one, 1.0 / logits.shape[0])
        # compulsory traffic of forward + backward: the logits read once, dlogits written once
        out.append((f"cross_entropy fwd+bwd f32 {rows}x{C}", 8 * logits.size, "B", ours_fwd_bwd, None,
                    (lambda tl=tl, tt=tt: _torch_ce_fwd_bwd(torch, tl, tt)) if torch else None))
        out.append((f"cross_entropy fused pass f32 {rows}x{C}", 8 * logits.size, "B",
                    lambda logits=logits, target=target: k.cross_entropy_fused(logits, target, None, -100, 0.0),
                    None, None))
        out.append((f"cross_entropy fwd f32 {rows}x{C}", 4 * logits.size, "B",
                    lambda logits=logits, target=target: k.cross_entropy(logits, target, None, -100, 0.0), None,
                    (lambda tl=tl, tt=tt: torch.nn.functional.cross_entropy(tl, tt)) if torch else None))
    return out


def _torch_ce_fwd_bwd(torch, logits, target):
    x = logits.detach().requires_grad_()
    return torch.autograd.grad(torch.nn.functional.cross_entropy(x, target), (x,))


@case
def gpt_gemm(c: Ctx) -> list[Case]:
    """The three GEMMs of a GPT linear layer at B*T tokens, C = 384, hidden 4C (vs cuBLAS through CuPy and torch):
    forward x @ W.T (+ bias, as nn.Linear launches it), input gradient g @ W, weight gradient g.T @ x (K = B*T
    over a 1536 x 384 output: the split-K case)."""
    cp, k, torch = c.cp, c.k, c.torch
    bt, ch, h = (4096 if c.quick else 16384), 384, 1536
    rng = cp.random.default_rng(1)
    x = rng.standard_normal((bt, ch), dtype=cp.float32)
    w = rng.standard_normal((h, ch), dtype=cp.float32)
    bias = rng.standard_normal(h, dtype=cp.float32)
    g = rng.standard_normal((bt, h), dtype=cp.float32)
    t = {n: torch.as_tensor(v, device="cuda") for n, v in (("x", x), ("w", w), ("b", bias), ("g", g))} if torch else {}
    flops = 2 * bt * ch * h
    return [
        Case(f"matmul f32 x@W.T {bt}x{ch}->{h}", flops, "FLOP", lambda: k.matmul(x, w.T), lambda: cp.matmul(x, w.T),
             (lambda: t["x"] @ t["w"].T) if torch else None),
        Case(f"linear f32 x@W.T+b {bt}x{ch}->{h}", flops, "FLOP", lambda: k.matmul(x, w.T, bias),
             lambda: cp.matmul(x, w.T) + bias,
             (lambda: torch.nn.functional.linear(t["x"], t["w"], t["b"])) if torch else None),
        Case(f"matmul f32 g@W {bt}x{h}->{ch}", flops, "FLOP", lambda: k.matmul(g, w), lambda: cp.matmul(g, w),
             (lambda: t["g"] @ t["w"]) if torch else None),
        Case(f"matmul f32 g.T@x K={bt} {h}x{ch}", flops, "FLOP", lambda: k.matmul(g.T, x), lambda: cp.matmul(g.T, x),
             (lambda: t["g"].T @ t["x"]) if torch else None),
    ]


def _checked(cp, ours, ref, tol, what):
    """``ours``, comparing its first result with ``ref()``'s (cuBLAS): past a relative error (Frobenius) of
    ``tol`` it raises, so the case is reported as failed instead of timed."""
    state = {"checked": False}

    def call():
        r = ours()
        if r is not None and not state["checked"]:
            got, want = r.astype(cp.float32), ref().astype(cp.float32)
            err = float(cp.linalg.norm((got - want).ravel()) / max(float(cp.linalg.norm(want.ravel())), 1e-30))
            if not err < tol:
                raise AssertionError(f"{what}: relative error {err:.2e} against cuBLAS (at most {tol:g} expected)")
            state["checked"] = True
        return r
    return call


# relative error against cuBLAS that a tensor-core product may show: tf32 inputs (cuBLAS may round them otherwise),
# float16 and bfloat16 outputs rounded once
GEMM_TOL = {"tf32": 2e-3, "float16": 2e-3, "bfloat16": 1e-2}


def _gemm_shapes(quick):
    """(m of the m^3 product, tokens B*T, channels C, hidden 4C) of ``gemm_dtypes``."""
    return (2048 if quick else 4096), (4096 if quick else 16384), 384, 1536


@case
def gemm_dtypes(c: Ctx) -> list[Case]:
    """The tensor-core GEMMs (matmul_tc.cu) per type against cuBLAS (through CuPy: TF32 math for tf32, float16
    and bfloat16 with float32 accumulation) and torch, on 4096^3 and the GPT linear layer's three products at
    B*T tokens, C = 384 (x @ W.T + b, g @ W, g.T @ x with K = B*T): the issue's goal is bf16 >= 0.7x cuBLAS.
    float32 without TF32 is the ``matmul`` and ``gpt_gemm`` families. Each product is checked against cuBLAS
    before it is timed."""
    import ml_dtypes
    cp, be, k, torch = c.cp, c.be, c.k, c.torch
    if not k.tensor_cores:
        raise RuntimeError("this GPU has no mma.sync tensor cores (sm_80+): matmul_tc.cu does not run here")
    m, bt, ch, h = _gemm_shapes(c.quick)
    rng = cp.random.default_rng(2)
    f32 = {"A": rng.standard_normal((m, m), dtype=cp.float32), "B": rng.standard_normal((m, m), dtype=cp.float32),
           "x": rng.standard_normal((bt, ch), dtype=cp.float32), "w": rng.standard_normal((h, ch), dtype=cp.float32),
           "b": rng.standard_normal(h, dtype=cp.float32), "g": rng.standard_normal((bt, h), dtype=cp.float32)}
    out = []
    for name, dt in (("tf32", cp.float32), ("float16", cp.float16), ("bfloat16", ml_dtypes.bfloat16)):
        tf32 = name == "tf32"
        try:
            v = {key: a.astype(dt) for key, a in f32.items()}
        except (TypeError, ValueError) as e:
            def unsupported(e=e):
                raise RuntimeError(f"the array library has no {name} arrays: {e}")
            out.append(Case(f"gemm {name}", 1.0, "FLOP", unsupported))
            continue
        tdt = {"tf32": "float32"}.get(name, name)
        t = {key: torch.as_tensor(a, device="cuda").to(getattr(torch, tdt)) for key, a in f32.items()} if torch else {}

        def blas(fn, bias, tf32=tf32):
            # cuBLAS through CuPy (for tf32 with TF32 tensor-op math, as allow_tf32 gives it), then the bias
            def run():
                r = be._matmul_tf32(*fn()) if tf32 else cp.matmul(*fn())
                return r if bias is None else r + bias
            return run

        def torch_fn(fn, tf32=tf32):
            if not torch:
                return None

            def run():
                prev = torch.backends.cuda.matmul.allow_tf32
                torch.backends.cuda.matmul.allow_tf32 = tf32
                try:
                    return fn()
                finally:
                    torch.backends.cuda.matmul.allow_tf32 = prev
            return run

        products = [
            (f"gemm {name} {m}^3", 2 * m ** 3, lambda v=v: (v["A"], v["B"]), None,
             lambda t=t: t["A"] @ t["B"]),
            (f"gemm {name} x@W.T+b {bt}x{ch}->{h}", 2 * bt * ch * h, lambda v=v: (v["x"], v["w"].T), "b",
             lambda t=t: torch.nn.functional.linear(t["x"], t["w"], t["b"])),
            (f"gemm {name} g@W {bt}x{h}->{ch}", 2 * bt * ch * h, lambda v=v: (v["g"], v["w"]), None,
             lambda t=t: t["g"] @ t["w"]),
            (f"gemm {name} g.T@x K={bt} {h}x{ch}", 2 * bt * ch * h, lambda v=v: (v["g"].T, v["x"]), None,
             lambda t=t: t["g"].T @ t["x"]),
        ]
        for label, flops, operands, bias_key, torch_op in products:
            bias = v[bias_key] if bias_key else None

            def ours(operands=operands, bias=bias):
                return k.matmul(*operands(), bias, tf32=True)

            ref = blas(operands, bias)
            out.append(Case(label, flops, "FLOP", _checked(cp, ours, ref, GEMM_TOL[name], label), ref,
                            torch_fn(torch_op), bytes=None))
    return out


@case
def optim(c: Ctx) -> list[Case]:
    """Fused AdamW over ~10M parameters in 20 tensors (28 bytes per parameter: p, g, m, v read, p, m, v written)
    against the CuPy per-tensor body and torch's ``AdamW(fused=True)``; clip_grad_norm_ over a GPT-2-small
    parameter list (148 tensors; 12 bytes per parameter: the norm reads each gradient, the scaling reads and
    writes it) against torch's foreach clipping."""
    import minitorch_gpu as mt
    from minitorch_gpu.backends.base import Backend
    cp, be, torch, quick = c.cp, c.be, c.torch, c.quick
    rng = cp.random.default_rng(1)
    shapes = [(768, 640 if quick else 683)] * 20  # 20 x 0.52M = 10.5M parameters (9.8M with --quick)
    ps = [rng.standard_normal(s, dtype=cp.float32) for s in shapes]
    gs = [rng.standard_normal(s, dtype=cp.float32) for s in shapes]
    ms = [cp.zeros(s, cp.float32) for s in shapes]
    vs = [cp.zeros(s, cp.float32) for s in shapes]
    nparam = sum(p.size for p in ps)
    steps = [1.0] * len(ps)
    args = (steps, 1e-3, 0.9, 0.999, 1e-8, 0.01, False, False, True)
    torch_adamw = None
    if torch:
        tps = [torch.nn.Parameter(torch.as_tensor(p, device="cuda").clone()) for p in ps]
        for tp, g in zip(tps, gs):
            tp.grad = torch.as_tensor(g, device="cuda").clone()
        topt = torch.optim.AdamW(tps, lr=1e-3, weight_decay=0.01, fused=True)
        torch_adamw = topt.step
    # fused_adam works in place and returns None: check once that our kernel, not the CuPy body, took the step
    ran = []
    kernel_first = be._fused_step
    be._fused_step = lambda step: ran.append(kernel_first(step)) or ran[-1]
    try:
        be.fused_adam(ps, gs, ms, vs, None, *args)
    finally:
        del be._fused_step
    ours = (lambda: be.fused_adam(ps, gs, ms, vs, None, *args) or True) if ran == [True] else (lambda: None)
    out = [Case(f"adamw step f32 20 tensors {nparam / 1e6:.1f}M", 28 * nparam, "B", ours,
                lambda: Backend.fused_adam(be, ps, gs, ms, vs, None, *args), torch_adamw, flops=15 * nparam)]
    d, layers = (768, 2 if quick else 12)
    gpt = [(50257, d), (1024, d)]
    for _ in range(layers):
        gpt += [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    gpt += [(d,), (d,)]
    params = []
    for s in gpt:
        p = mt.nn.Parameter(mt.zeros(s, device="cuda"))
        p.grad = mt.randn(s, device="cuda")
        params.append(p)
    n_gpt = sum(p.numel() for p in params)
    torch_clip = None
    if torch:
        tparams = [torch.nn.Parameter(torch.zeros(s, device="cuda")) for s in gpt]
        for tp in tparams:
            tp.grad = torch.randn(tp.shape, device="cuda")
        torch_clip = lambda: torch.nn.utils.clip_grad_norm_(tparams, 1.0, foreach=True)  # noqa: E731
    out.append(Case(f"clip_grad_norm_ f32 {len(gpt)} tensors {n_gpt / 1e6:.0f}M", 12 * n_gpt, "B",
                    lambda: mt.nn.utils.clip_grad_norm_(params, 1.0), None, torch_clip))
    return out


ATTENTION_SHAPES = [(8, 12, 1024, 64), (64, 6, 256, 64)]  # (B, H, T, D): the target shape, the main job's GPT


def _attention_inputs(cp, B, H, T, D):
    rng = cp.random.default_rng(1)
    return [rng.standard_normal((B, H, T, D), dtype=cp.float32) for _ in range(4)]  # q, k, v, dout


def _attention_fns(cp, B, H, T, D):
    """(ours fwd+bwd, the composite on cuBLAS fwd+bwd, torch's SDPA fwd+bwd or None, ours fwd, torch fwd or None),
    all causal float32."""
    k = __import__("minitorch_gpu").ones(1, device="cuda")._be.kernels
    q, kk, v, g = _attention_inputs(cp, B, H, T, D)
    scale = D ** -0.5

    def ours():
        out, lse = k.attention_forward(q, kk, v, None, True, scale, 0.0, 0, 0)
        return k.attention_backward(g, q, kk, v, out, lse, None, True, scale, 0.0, 0, 0)

    tri = cp.triu(cp.full((T, T), -cp.inf, dtype=cp.float32), 1)

    def composite():
        # what attention costs without fusion: the (B, H, T, T) scores through cuBLAS and elementwise passes
        s = cp.matmul(q * scale, kk.swapaxes(-1, -2)) + tri
        p = cp.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        dv = cp.matmul(p.swapaxes(-1, -2), g)
        dp = cp.matmul(g, v.swapaxes(-1, -2))
        ds = p * (dp - (p * dp).sum(-1, keepdims=True))
        return cp.matmul(ds, kk) * scale, cp.matmul(ds.swapaxes(-1, -2), q) * scale, dv

    def ours_fwd():
        return k.attention_forward(q, kk, v, None, True, scale, 0.0, 0, 0)

    torch = _torch_cuda()
    if torch is None:
        return ours, composite, None, ours_fwd, None
    tq, tk, tv = (torch.as_tensor(a, device="cuda").requires_grad_() for a in (q, kk, v))
    tg = torch.as_tensor(g, device="cuda")
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def theirs():
        return torch.autograd.grad(sdpa(tq, tk, tv, is_causal=True), (tq, tk, tv), tg)

    def theirs_fwd():
        with torch.no_grad():
            return sdpa(tq, tk, tv, is_causal=True)
    return ours, composite, theirs, ours_fwd, theirs_fwd


@case
def attention(c: Ctx) -> list[Case]:
    """Causal float32 attention, forward + backward and forward alone (the builtin is the composite on cuBLAS).
    Work is FlashAttention's FLOP count: 4 B H T^2 D for the forward, halved by the causal mask, and 2.5 times
    that for the backward."""
    rows = []
    for B, H, T, D in ATTENTION_SHAPES[1:] if c.quick else ATTENTION_SHAPES:
        ours, composite, theirs, ours_fwd, theirs_fwd = _attention_fns(c.cp, B, H, T, D)
        fwd = 2 * B * H * T * T * D
        rows.append(Case(f"attention fwd+bwd f32 causal B{B} H{H} T{T} D{D}", 3.5 * fwd, "FLOP", ours, composite,
                         theirs))
        rows.append(Case(f"attention fwd f32 causal B{B} H{H} T{T} D{D}", fwd, "FLOP", ours_fwd, None, theirs_fwd))
    return rows


def attention_memory(cp, quick):
    """Peak device memory of one causal fwd+bwd (inputs excluded): ours (CuPy pool) and torch SDPA's."""
    result = []
    pool = cp.get_default_memory_pool()
    for B, H, T, D in ATTENTION_SHAPES[1:] if quick else ATTENTION_SHAPES:
        ours, composite, theirs, _, _ = _attention_fns(cp, B, H, T, D)
        row = {"shape": f"B{B} H{H} T{T} D{D}"}
        for label, fn in (("ours", ours), ("composite", composite)):
            cp.cuda.Device().synchronize()
            pool.free_all_blocks()
            held = pool.total_bytes()  # the live arrays only (the inputs)
            fn()
            cp.cuda.Device().synchronize()
            # freed blocks stay in the pool, so it has grown by the call's largest live set (gradients included)
            row[f"{label}_peak_MiB"] = (pool.total_bytes() - held) / 2 ** 20
        torch = _torch_cuda()
        if torch is not None and theirs is not None:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            theirs()
            torch.cuda.synchronize()
            row["torch_peak_MiB"] = (torch.cuda.max_memory_allocated() - before) / 2 ** 20
        print("attention peak memory:", row)
        result.append(row)
    return result


@case
def dropout_and_broadcast(c: Ctx) -> list[Case]:
    """Dropout (random.cu's one-pass kernel) and the strided / broadcast binary paths at a GPT-sized activation,
    (16384, 1536) float32. Bytes are what must cross DRAM: dropout reads x and writes y (its mask is
    regenerated, never stored; PyTorch also writes a 1-byte mask, which it is not credited for here), the
    fused residual reads two arrays, a bias add reads one array (the bias stays in cache)."""
    from minitorch_gpu.backends._random import dropout_threshold
    from minitorch_gpu.backends.base import Backend
    cp, be, torch, k = c.cp, c.be, c.torch, c.k
    rows, cols = (4096, 1536) if c.quick else (16384, 1536)
    n = rows * cols
    rng = cp.random.default_rng(1)
    x = rng.standard_normal((rows, cols), dtype=cp.float32)
    y = rng.standard_normal((rows, cols), dtype=cp.float32)
    bias = rng.standard_normal(cols, dtype=cp.float32)
    col = rng.standard_normal((rows, 1), dtype=cp.float32)
    xt = rng.standard_normal((cols, rows), dtype=cp.float32).T  # a transposed view of (rows, cols)
    p = 0.1
    thr = dropout_threshold(p)
    t = {}
    tmask = None
    if torch:
        t = {name: torch.as_tensor(v, device="cuda") for name, v in
             (("x", x), ("y", y), ("bias", bias), ("col", col), ("xt", xt))}
        tmask = torch.rand(rows, cols, device="cuda") > p
    F = torch.nn.functional if torch else None
    return [
        Case(f"dropout fwd f32 {rows}x{cols}", 8 * n, "B", lambda: k.dropout(7, 0, x, p, thr),
             lambda: Backend.rand_dropout(be, 7, 0, x, p), (lambda: F.dropout(t["x"], p)) if torch else None),
        # the backward is the same kernel on the gradient, with the forward's seed and offset
        Case(f"dropout bwd f32 {rows}x{cols}", 8 * n, "B", lambda: k.dropout(7, 0, y, p, thr),
             lambda: Backend.rand_dropout(be, 7, 0, y, p),
             (lambda: torch.ops.aten.native_dropout_backward(t["y"], tmask, 1.0 / (1.0 - p))) if torch else None),
        Case(f"dropout_add f32 {rows}x{cols}", 12 * n, "B", lambda: k.dropout(7, 0, y, p, thr, x),
             lambda: Backend.rand_dropout(be, 7, 0, y, p, x),
             (lambda: t["x"] + F.dropout(t["y"], p)) if torch else None),
        Case(f"add f32 bias ({rows},{cols})+({cols},)", 8 * n, "B", lambda: k.binary("add", x, bias),
             lambda: cp.add(x, bias), (lambda: t["x"] + t["bias"]) if torch else None),
        Case(f"mul f32 ({rows},{cols})*({rows},1)", 8 * n, "B", lambda: k.binary("mul", x, col),
             lambda: cp.multiply(x, col), (lambda: t["x"] * t["col"]) if torch else None),
        Case(f"add f32 transposed ({rows},{cols})", 12 * n, "B", lambda: k.binary("add", xt, y),
             lambda: cp.add(xt, y), (lambda: t["xt"] + t["y"]) if torch else None),
    ]


@case
def philox(c: Ctx) -> list[Case]:
    import numpy as np
    cp, k, torch, n = c.cp, c.k, c.torch, c.n
    rng = cp.random.default_rng(3)
    return [Case("philox uniform f32", 4 * n, "B", lambda: k.uniform(1, 0, n, np.dtype(np.float32), 0.0, 1.0),
                 lambda: rng.random(n, dtype=cp.float32), (lambda: torch.rand(n, device="cuda")) if torch else None)]


@case
def embedding(c: Ctx) -> list[Case]:
    import numpy as np
    cp, k = c.cp, c.k
    # CuPy 14's scatter-add (cupyx.scatter_add before it, which now warns on every call)
    add_at = getattr(cp.add, "at", None) or __import__("cupyx").scatter_add
    idx = cp.asarray(np.random.default_rng(1).integers(0, 50000, 65536))
    table = cp.zeros((50000, 512), cp.float32)
    grad = cp.random.default_rng(4).standard_normal((65536, 512), dtype=cp.float32)
    return [Case("embedding backward f32", 8 * grad.size, "B", lambda: k.embedding_backward(table, idx, grad),
                 lambda: add_at(table, idx, grad), None, flops=grad.size)]


# ---------------------------------------------------------------------- the harness
def measure(case_fns, ctx, timer, copy_bw, only=None, log=print):
    """Time every case of ``case_fns``; a case (or a case function) that raises becomes a row with its error,
    and the run goes on. ``only``: substrings, a case runs when its name or its function's name holds one."""
    rows = []
    for fn in case_fns:
        try:
            built = fn(ctx)
        except Exception as e:  # noqa: BLE001 - a broken case is reported, not fatal
            rows.append({"kernel": fn.__name__, "group": fn.__name__, "error": _err(e)})
            log(_fmt_row(rows[-1]))
            continue
        for cs in built:
            if only and not any(s in cs.name or s in fn.__name__ for s in only):
                continue
            row = {"kernel": cs.name, "group": fn.__name__, "unit": cs.unit}
            try:
                _time_case(cs, timer, copy_bw, row)
            except Exception as e:  # noqa: BLE001
                row["error"] = _err(e)
            rows.append(row)
            log(_fmt_row(row))
    return rows


def _time_case(cs, timer, copy_bw, row):
    # a launcher that declines returns None and the backend would take the built-in: timing that call would
    # credit the kernel with the built-in's speed, or with nothing at all
    if cs.ours() is None:
        raise RuntimeError("our kernel declined the call (the launcher returned None): nothing of ours to time")
    t = timer(cs.ours)
    row["seconds"] = t
    row["rate"] = cs.work / t
    if cs.unit == "B":
        row["GB/s"] = cs.work / t / 1e9
        row["vs_copy"] = cs.work / t / copy_bw
    else:
        row["TFLOP/s"] = cs.work / t / 1e12
    row["bytes"] = cs.work if cs.unit == "B" else cs.bytes
    row["flops"] = cs.work if cs.unit == "FLOP" else cs.flops
    # the alternatives are timed on their own: one that fails leaves its ratio out, not the case
    for key, fn in (("vs_cublas" if cs.unit == "FLOP" else "vs_cupy", cs.builtin), ("vs_torch", cs.torch)):
        if fn is None:
            continue
        try:
            row[key] = timer(fn) / t
        except Exception as e:  # noqa: BLE001
            row[key + "_error"] = _err(e)


def _err(e):
    return f"{type(e).__name__}: {e}"[:300]


def run(args):
    if args.list:
        print("\n".join(fn.__name__ for fn in CASES))
        return 0
    cp = _gpu()
    if cp is None:
        print("benchmarks.kernels: no GPU (CuPy with a CUDA device is required; the simulator does not time "
              "anything). Nothing to measure.")
        return 0
    import minitorch_gpu as mt
    timer = Timer(cp, args.reps, args.warmup)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    copy_bw = _copy_bandwidth(cp, timer)
    print(f"device-to-device copy: {copy_bw / 1e9:.0f} GB/s")
    ctx = make_ctx(cp, args.quick)
    rows = measure(CASES, ctx, timer, copy_bw, args.only)
    torch = ctx.torch
    result = {"device": name, "copy_GB/s": copy_bw / 1e9, "minitorch_gpu": getattr(mt, "__version__", "dev"),
              "torch": torch.__version__ if torch else None, "reps": args.reps, "warmup": args.warmup,
              "quick": args.quick, "cases": rows, "failed": [r["kernel"] for r in rows if "error" in r]}
    if args.only is None or "attention" in args.only:
        try:
            result["attention_memory"] = attention_memory(cp, args.quick)
        except Exception as e:  # noqa: BLE001 - a report, not a crash
            result["attention_memory_error"] = _err(e)
    folder = os.path.join(args.out, re.sub(r"[^A-Za-z0-9_.-]+", "_", name))
    write_results(result, folder)
    if result["failed"]:
        print(f"{len(result['failed'])} case(s) failed: {', '.join(result['failed'])} (errors in kernels.md)")
    print(f"results in {folder}")
    return 0


def write_results(result, folder):
    """kernels.json, kernels.md and the roofline plot of ``result`` into ``folder``."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "kernels.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(folder, "kernels.md"), "w") as f:
        f.write(markdown(result))
    _roofline(result, folder)


def _copy_bandwidth(cp, timer):
    """Bytes per second of a 256 MiB device-to-device copy (read + write), timed like the kernels."""
    src = cp.empty(1 << 28, dtype=cp.uint8)
    dst = cp.empty_like(src)
    return 2 * src.nbytes / timer(lambda: cp.copyto(dst, src))


def _fmt_row(r):
    if "seconds" not in r:
        return f"{r['kernel']:28s} FAILED  {r['error']}"
    perf = f"{r['GB/s']:8.1f} GB/s ({r['vs_copy']:.2f} of copy)" if r["unit"] == "B" else f"{r['TFLOP/s']:8.2f} TFLOP/s"
    extra = "".join(f"  {k} {r[k]:.2f}x" for k in ("vs_cupy", "vs_cublas", "vs_torch") if k in r)
    err = f"  FAILED: {r['error']}" if "error" in r else ""
    return f"{r['kernel']:28s} {r['seconds'] * 1e3:9.3f} ms  {perf}{extra}{err}"


def _ratio(r, key):
    if key in r:
        return f"{r[key]:.2f}x"
    return "failed" if key + "_error" in r else ""


def markdown(result):
    """The results as a markdown table (speed-ups: their time / ours, > 1 means ours is faster), then the
    errors of the cases that failed."""
    lines = [f"# Kernel benchmarks on {result['device']}", "",
             f"Device-to-device copy: {result['copy_GB/s']:.0f} GB/s (the roofline for memory-bound kernels). "
             f"CUDA-event timing, median of {result.get('reps', '?')} repetitions after "
             f"{result.get('warmup', '?')} warm-up runs, L2 flushed before each; PyTorch "
             f"{result.get('torch') or 'not installed'}.", "",
             "| kernel | time (ms) | throughput | fraction of copy BW | vs CuPy / cuBLAS | vs PyTorch |",
             "|---|---:|---:|---:|---:|---:|"]
    errors = []
    for r in result["cases"]:
        if "seconds" not in r:
            lines.append(f"| {r['kernel']} | failed | | | | |")
        else:
            thr = f"{r['GB/s']:.1f} GB/s" if r["unit"] == "B" else f"{r['TFLOP/s']:.2f} TFLOP/s"
            frac = f"{r['vs_copy']:.2f}" if "vs_copy" in r else ""
            builtin = _ratio(r, "vs_cublas") or _ratio(r, "vs_cupy")
            lines.append(f"| {r['kernel']} | {r['seconds'] * 1e3:.3f} | {thr} | {frac} | {builtin} | "
                         f"{_ratio(r, 'vs_torch')} |")
        for key in ("error", "vs_cupy_error", "vs_cublas_error", "vs_torch_error"):
            if key in r:
                errors.append(f"- {r['kernel']} ({key.replace('_error', '') if key != 'error' else 'ours'}): "
                              f"`{r[key]}`")
    if errors:
        lines += ["", "## Failures", ""] + errors
    return "\n".join(lines) + "\n"


def _roofline(result, folder):
    """Left: achieved bandwidth of each memory-bound kernel against the copy roofline. Right: the roofline
    (FLOP/s against arithmetic intensity) with the measured copy bandwidth and the best measured matmul rate
    (ours or cuBLAS) as its roofs, and every case that knows both its bytes and its flops."""
    ok = [r for r in result["cases"] if "seconds" in r]
    mem = [r for r in ok if r["unit"] == "B"]
    names = [r["kernel"] for r in mem]
    vals = [r["GB/s"] for r in mem]
    roof = result["copy_GB/s"]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _roofline_svg(names, vals, roof, os.path.join(folder, "roofline.svg"))
        print("matplotlib is not installed: wrote roofline.svg instead of roofline.png")
        return
    pts = [(r["kernel"], r["flops"] / r["bytes"], r["flops"] / r["seconds"]) for r in ok
           if r.get("flops") and r.get("bytes")]
    peak = max([r["TFLOP/s"] * 1e12 * max(1.0, r.get("vs_cublas", 1.0)) for r in ok if r["unit"] == "FLOP"],
               default=0.0)
    fig, (ax, rx) = plt.subplots(1, 2, figsize=(15, 0.45 * max(len(names), 8) + 1.5))
    ax.barh(names, vals, color="#4878a8")
    ax.axvline(roof, color="#c03030", linestyle="--", label=f"D2D copy {roof:.0f} GB/s")
    ax.set_xlabel("GB/s")
    ax.set_title(f"minitorch_gpu kernels on {result['device']}")
    ax.legend(loc="lower right")
    if pts:
        import numpy as np
        ai = np.logspace(-2, 3, 200)
        bw = roof * 1e9
        top = peak if peak > 0 else max(p[2] for p in pts) * 2
        rx.plot(ai, np.minimum(ai * bw, top), color="#c03030", linestyle="--", label="roofline (measured)")
        for label, x, y in pts:
            rx.scatter([x], [y], s=18)
            rx.annotate(label, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        rx.set_xscale("log")
        rx.set_yscale("log")
        rx.set_xlabel("arithmetic intensity (FLOP/byte)")
        rx.set_ylabel("FLOP/s")
        rx.set_title("roofline")
        rx.legend(loc="lower right")
    else:
        rx.axis("off")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "roofline.png"), dpi=120)
    plt.close(fig)


def _roofline_svg(names, vals, roof, path):
    width, bar, left = 720, 22, 220
    top = max(vals + [roof]) * 1.1 or 1.0
    h = bar * len(names) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" font-size="12">']
    for i, (nm, v) in enumerate(zip(names, vals)):
        y = 10 + i * bar
        parts.append(f'<text x="4" y="{y + 15}">{nm}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{(width - left - 20) * v / top:.1f}" height="{bar - 4}" '
                     'fill="#4878a8"/>')
        parts.append(f'<text x="{left + 4}" y="{y + 15}" fill="white">{v:.0f} GB/s</text>')
    x = left + (width - left - 20) * roof / top
    parts.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{h}" stroke="#c03030" stroke-dasharray="4"/>')
    parts.append(f'<text x="{x - 120:.1f}" y="{h - 4}" fill="#c03030">copy {roof:.0f} GB/s</text></svg>')
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    p.add_argument("--only", nargs="+", default=None, metavar="TEXT",
                   help="run only the cases whose name or case function contains one of these")
    p.add_argument("--list", action="store_true", help="list the case functions and exit")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
