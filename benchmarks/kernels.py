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
import argparse
import json
import os
import re
import statistics
import sys


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


def cases(cp, quick):
    """(name, work, unit, ours, cupy_builtin, torch_fn) for every kernel family; ``work`` is bytes or flops."""
    import numpy as np

    import minitorch_gpu as mt
    from minitorch_gpu.backends.base import Backend
    be = mt.ones(1, device="cuda")._be
    k = be.kernels
    torch = _torch_cuda()
    n = (1 << 22) if quick else (1 << 26)
    rng = cp.random.default_rng(0)
    a = rng.standard_normal(n, dtype=cp.float32)
    b = rng.standard_normal(n, dtype=cp.float32)
    out = []
    ta, tb = (torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")) if torch else (None, None)
    out.append(("add f32", 12 * n, "B", lambda: k.binary("add", a, b), lambda: cp.add(a, b),
                (lambda: ta + tb) if torch else None))
    out.append(("exp f32", 8 * n, "B", lambda: k.unary("exp", a), lambda: cp.exp(a),
                (lambda: torch.exp(ta)) if torch else None))
    out.append(("gelu f32", 8 * n, "B", lambda: k.unary("gelu", a), lambda: Backend.gelu(be, a),
                (lambda: torch.nn.functional.gelu(ta)) if torch else None))
    bias = b[:1024]
    a2 = a.reshape(-1, 1024)
    out.append(("add f32 broadcast row", 8 * n, "B", lambda: k.binary("add", a2, bias), lambda: cp.add(a2, bias),
                (lambda: ta.view(-1, 1024) + tb[:1024]) if torch else None))
    rows, cols = (n // 4096, 4096)
    x = a.reshape(rows, cols)
    tx = ta.view(rows, cols) if torch else None

    def cupy_softmax():
        e = cp.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    out.append(("softmax f32 4096 cols", 8 * n, "B", lambda: k.softmax(x, 0, 1), cupy_softmax,
                (lambda: torch.softmax(tx, 1)) if torch else None))
    xs = a.reshape(-1, 256)
    out.append(("softmax f32 256 cols", 8 * n, "B", lambda: k.softmax(xs, 0, 1), None,
                (lambda: torch.softmax(tx.view(-1, 256), 1)) if torch else None))
    C = 8192
    logits = a.reshape(-1, C)
    target = cp.asarray(np.random.default_rng(0).integers(0, C, logits.shape[0]))
    out.append(("cross_entropy fwd f32", 4 * n, "B", lambda: k.cross_entropy(logits, target, None, -100, 0.0), None,
                (lambda: torch.nn.functional.cross_entropy(ta.view(-1, C), torch.as_tensor(target, device="cuda")))
                if torch else None))
    N = 4096
    xl = a.reshape(-1, N)
    w, bb = b[:N], b[N:2 * N]
    out.append(("layer_norm fwd f32", 8 * n, "B", lambda: k.layer_norm(xl, w, bb, 1e-5), None,
                (lambda: torch.nn.functional.layer_norm(ta.view(-1, N), (N,), tb[:N], tb[N:2 * N])) if torch else None))
    m = 2048 if quick else 4096
    A = rng.standard_normal((m, m), dtype=cp.float32)
    B = rng.standard_normal((m, m), dtype=cp.float32)
    tA, tB = (torch.as_tensor(A, device="cuda"), torch.as_tensor(B, device="cuda")) if torch else (None, None)
    out.append((f"matmul f32 {m}^3", 2 * m ** 3, "FLOP", lambda: k.matmul(A, B), lambda: cp.matmul(A, B),
                (lambda: tA @ tB) if torch else None))
    Ad, Bd = A.astype(cp.float64), B.astype(cp.float64)
    out.append((f"matmul f64 {m}^3", 2 * m ** 3, "FLOP", lambda: k.matmul(Ad, Bd), lambda: cp.matmul(Ad, Bd), None))
    sizes = [(1024, 1024)] * 16
    ps = [rng.standard_normal(s, dtype=cp.float32) for s in sizes]
    gs = [rng.standard_normal(s, dtype=cp.float32) for s in sizes]
    ms = [cp.zeros(s, cp.float32) for s in sizes]
    vs = [cp.zeros(s, cp.float32) for s in sizes]
    nparam = sum(p.size for p in ps)
    step = [1.0] * len(ps)

    def ours_adam():
        k.adam(ps, gs, ms, vs, None, step, 1e-3, 0.9, 0.999, 1e-8, 0.01, False, False, True)

    def builtin_adam():
        Backend.fused_adam(be, ps, gs, ms, vs, None, step, 1e-3, 0.9, 0.999, 1e-8, 0.01, False, False, True)
    out.append(("adamw step f32 16x1M", 28 * nparam, "B", ours_adam, builtin_adam, None))
    out.append(("philox uniform f32", 4 * n, "B", lambda: k.uniform(1, 0, n, np.dtype(np.float32), 0.0, 1.0),
                lambda: rng.random(n, dtype=cp.float32), (lambda: torch.rand(n, device="cuda")) if torch else None))
    idx = cp.asarray(np.random.default_rng(1).integers(0, 50000, 65536))
    table = cp.zeros((50000, 512), cp.float32)
    grad = rng.standard_normal((65536, 512), dtype=cp.float32)
    out.append(("embedding backward f32", 8 * grad.size, "B", lambda: k.embedding_backward(table, idx, grad),
                lambda: __import__("cupyx").scatter_add(table, idx, grad), None))
    # the row cases first: a later case that fails (the AdamW one did) must not hide them
    return row_cases(cp, k, torch) + out


def row_cases(cp, k, torch):
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


def run(args):
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
    rows = []
    for label, work, unit, ours, builtin, torch_fn in cases(cp, args.quick):
        t = timer(ours)
        row = {"kernel": label, "seconds": t, "unit": unit}
        rate = work / t
        row["rate"] = rate
        if unit == "B":
            row["GB/s"] = rate / 1e9
            row["vs_copy"] = rate / copy_bw
        else:
            row["TFLOP/s"] = rate / 1e12
        if builtin is not None:
            row["vs_cupy"] = timer(builtin) / t
        if torch_fn is not None:
            row["vs_torch"] = timer(torch_fn) / t
        rows.append(row)
        print(_fmt_row(row))
    result = {"device": name, "copy_GB/s": copy_bw / 1e9, "minitorch_gpu": getattr(mt, "__version__", "dev"),
              "reps": args.reps, "cases": rows}
    folder = os.path.join(args.out, re.sub(r"[^A-Za-z0-9_.-]+", "_", name))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "kernels.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(folder, "kernels.md"), "w") as f:
        f.write(markdown(result))
    _roofline(result, props, folder)
    print(f"results in {folder}")
    return 0


def _copy_bandwidth(cp, timer):
    """Bytes per second of a 256 MiB device-to-device copy (read + write), timed like the kernels."""
    src = cp.empty(1 << 28, dtype=cp.uint8)
    dst = cp.empty_like(src)
    return 2 * src.nbytes / timer(lambda: cp.copyto(dst, src))


def _fmt_row(r):
    perf = f"{r['GB/s']:8.1f} GB/s ({r['vs_copy']:.2f} of copy)" if r["unit"] == "B" else f"{r['TFLOP/s']:8.2f} TFLOP/s"
    extra = "".join(f"  {k} {r[k]:.2f}x" for k in ("vs_cupy", "vs_torch") if k in r)
    return f"{r['kernel']:28s} {r['seconds'] * 1e3:9.3f} ms  {perf}{extra}"


def markdown(result):
    """The results as a markdown table (speed-ups: their time / ours, > 1 means ours is faster)."""
    lines = [f"# Kernel benchmarks on {result['device']}", "",
             f"Device-to-device copy: {result['copy_GB/s']:.0f} GB/s (the roofline for memory-bound kernels).", "",
             "| kernel | time (ms) | throughput | fraction of copy BW | vs CuPy built-in | vs PyTorch |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in result["cases"]:
        thr = f"{r['GB/s']:.1f} GB/s" if r["unit"] == "B" else f"{r['TFLOP/s']:.2f} TFLOP/s"
        frac = f"{r['vs_copy']:.2f}" if "vs_copy" in r else ""
        lines.append(f"| {r['kernel']} | {r['seconds'] * 1e3:.3f} | {thr} | {frac} | "
                     f"{r.get('vs_cupy', float('nan')):.2f}x | {r.get('vs_torch', float('nan')):.2f}x |")
    return "\n".join(lines) + "\n"


def _roofline(result, props, folder):
    """Achieved bandwidth of each memory-bound kernel against the copy roofline (bar chart)."""
    mem = [r for r in result["cases"] if r["unit"] == "B"]
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
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) + 1.5))
    ax.barh(names, vals, color="#4878a8")
    ax.axvline(roof, color="#c03030", linestyle="--", label=f"D2D copy {roof:.0f} GB/s")
    ax.set_xlabel("GB/s")
    ax.set_title(f"minitorch_gpu kernels on {result['device']}")
    ax.legend(loc="lower right")
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
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
