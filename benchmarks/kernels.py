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
    out.extend(attention_cases(cp, quick))
    return out


# ---------------------------------------------------------------------- fused attention (attention.cu)
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


def attention_cases(cp, quick):
    """Causal float32 attention, forward + backward and forward alone, in the (name, work, unit, ours, builtin,
    torch) rows of ``cases``. Work is FlashAttention's FLOP count: 4 B H T^2 D for the forward, halved by the
    causal mask, and 2.5 times that for the backward."""
    rows = []
    for B, H, T, D in ATTENTION_SHAPES[1:] if quick else ATTENTION_SHAPES:
        ours, composite, theirs, ours_fwd, theirs_fwd = _attention_fns(cp, B, H, T, D)
        fwd = 2 * B * H * T * T * D
        rows.append((f"attention fwd+bwd f32 causal B{B} H{H} T{T} D{D}", 3.5 * fwd, "FLOP", ours, composite, theirs))
        rows.append((f"attention fwd f32 causal B{B} H{H} T{T} D{D}", fwd, "FLOP", ours_fwd, None, theirs_fwd))
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
              "reps": args.reps, "cases": rows, "attention_memory": attention_memory(cp, args.quick)}
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
