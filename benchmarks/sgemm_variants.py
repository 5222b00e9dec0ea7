"""Every SGEMM variant of matmul.cu (launch.SGEMM_KERNELS x L2 swizzle) against cuBLAS, to fill in the launcher's
SGEMM_CHOICE table.

Run ``python -m benchmarks.sgemm_variants --out sgemm.json`` on a GPU (without one it says so and exits 0). Cases:
4096^3, 2048^3, 8192 x 8192 x 1024 and the GEMMs of a GPT linear layer at 16384 tokens, C = 384 (x @ W.T, with and
without bias, g @ W, g.T @ x). Each variant runs through ``Launcher.matmul(..., variant=...)`` (the training
path, with the plan's split-K), warmed up, then timed with CUDA events over ``--reps`` repetitions, each after a
write of twice the L2 size; the median is reported as TFLOP/s and as a ratio to cuBLAS (CuPy's matmul, FP32
compute; for the bias case cuBLAS plus a separate add, which is what the fused epilogue replaces). Every result is
checked against cuBLAS: a relative error ``||ours - cuBLAS|| / ||cuBLAS||`` of 1e-4 or more prints FAIL.

The table is printed (one row per variant, one column per case), written as JSON to ``--out``, and ended by the
SGEMM_CHOICE rows that win each class of product (the geometric mean of the ratios over the class's cases).
"""
import argparse
import json
import math
import sys
import time

import numpy as np

# the same CUDA-event timing (L2 flushed before each repetition) as the kernel benchmarks
from benchmarks.kernels import Timer, _gpu

SWIZZLES = (0, 8)
TOL = 1e-4


def cases(cp):
    """(name, flops, M, N, K, ours(variant), cuBLAS) per case; ``ours`` takes a variant or None (the plan)."""
    rng = cp.random.default_rng(0)

    def randn(*shape):
        return rng.standard_normal(shape, dtype=cp.float32)

    out = []
    for m, n, kk in ((4096, 4096, 4096), (2048, 2048, 2048), (8192, 8192, 1024)):
        a, b = randn(m, kk), randn(kk, n)
        out.append((f"{m}x{n}x{kk}", 2 * m * n * kk, m, n, kk, (a, b, None), lambda a=a, b=b: cp.matmul(a, b)))
    bt, c, h = 16384, 384, 1536
    x, w, bias, g = randn(bt, c), randn(h, c), randn(h), randn(bt, h)
    fl = 2 * bt * c * h
    out += [
        (f"x@W.T {bt}x{c}->{h}", fl, bt, h, c, (x, w.T, None), lambda: cp.matmul(x, w.T)),
        (f"x@W.T+b {bt}x{c}->{h}", fl, bt, h, c, (x, w.T, bias), lambda: cp.matmul(x, w.T) + bias),
        (f"g@W {bt}x{h}->{c}", fl, bt, c, h, (g, w, None), lambda: cp.matmul(g, w)),
        (f"g.T@x K={bt} {h}x{c}", fl, h, c, bt, (g.T, x, None), lambda: cp.matmul(g.T, x)),
    ]
    return out


def _rel_err(cp, got, want):
    return float(cp.linalg.norm((got - want).ravel()) / max(float(cp.linalg.norm(want.ravel())), 1e-30))


def winners(results, case_classes):
    """{class: (variant name, swizzle)}: per class of product, the variant with the best geometric mean of its
    ratios to cuBLAS over the class's cases (a variant that failed any of them is out)."""
    best = {}
    for cls in sorted(set(case_classes.values())):
        names = [c for c, k in case_classes.items() if k == cls]
        scored = []
        for var, row in results.items():
            if var == "default" or any(not row[c]["ok"] for c in names):
                continue
            gm = math.exp(sum(math.log(row[c]["vs_cublas"]) for c in names) / len(names))
            scored.append((gm, var))
        if scored:
            gm, var = max(scored)
            kern, swz = var.rsplit("/swz", 1)
            best[cls] = {"variant": [kern, int(swz)], "geomean_vs_cublas": gm, "cases": names}
    return best


def run(args):
    cp = _gpu()
    if cp is None:
        print("benchmarks.sgemm_variants: no GPU (CuPy with a CUDA device is required; the simulator does not time "
              "anything). Nothing to measure.")
        return 0
    import minitorch_gpu as mt
    from minitorch_gpu.backends.cuda.launch import SGEMM_CHOICE, SGEMM_KERNELS, gemm_class
    t0 = time.perf_counter()
    k = mt.ones(1, device="cuda")._be.kernels
    timed = Timer(cp, args.reps, args.warmup)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    cs = cases(cp)
    case_classes = {name: gemm_class(np.dtype(np.float32), 1, M, N, K, k.sms) for name, _, M, N, K, _, _ in cs}
    cublas, refs = {}, {}
    for name, flops, _, _, _, _, blas in cs:
        refs[name] = blas()
        cublas[name] = flops / timed(blas) / 1e12
    variants = {"default": None}
    variants.update({f"{kn}/swz{s}": (kn, s) for kn in SGEMM_KERNELS for s in SWIZZLES})
    results = {}
    head = f"{'variant':24s}" + "".join(f" | {n[:22]:>22s}" for n, *_ in cs)
    print(f"{device}: TFLOP/s (ratio to cuBLAS), median of {args.reps}, L2 flushed")
    print(head)
    print(f"{'cuBLAS':24s}" + "".join(f" | {cublas[n]:8.1f}{'':14s}" for n, *_ in cs))
    for var, choice in variants.items():
        if time.perf_counter() - t0 > args.budget:
            print(f"stopping: {args.budget:.0f} s budget spent; variants from {var} on were not timed")
            break
        row = {}
        cells = []
        for name, flops, _, _, _, (a, b, bias), _ in cs:
            got = k.matmul(a, b, bias, variant=choice)
            err = _rel_err(cp, got, refs[name])
            del got
            t = timed(lambda: k.matmul(a, b, bias, variant=choice))
            tf = flops / t / 1e12
            ok = err < TOL
            row[name] = {"TFLOP/s": tf, "vs_cublas": tf / cublas[name], "rel_err": err, "ok": ok}
            cells.append(f" | {tf:8.1f} ({tf / cublas[name]:4.2f}){'' if ok else ' FAIL':7s}")
        results[var] = row
        print(f"{var:24s}" + "".join(cells), flush=True)
        if not all(c["ok"] for c in row.values()):
            bad = {n: f"{c['rel_err']:.2e}" for n, c in row.items() if not c["ok"]}
            print(f"  FAIL {var}: relative error >= {TOL:g}: {bad}")
    best = winners(results, case_classes)
    print("\nwinners, as launch.SGEMM_CHOICE rows (geometric mean of the ratios over the class's cases):")
    for cls, w in best.items():
        now = SGEMM_CHOICE.get(cls)
        print(f"    {cls!r}: ({w['variant'][0]!r}, {w['variant'][1]}),  # {w['geomean_vs_cublas']:.2f}x cuBLAS "
              f"on {', '.join(w['cases'])}; now {now}")
    doc = {"device": device, "reps": args.reps, "tolerance": TOL, "cublas_TFLOP/s": cublas,
           "case_class": case_classes, "results": results, "winners": best,
           "seconds": time.perf_counter() - t0}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"results in {args.out}")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=None, help="write the table as JSON to this path")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--budget", type=float, default=105.0, help="seconds after which no further variant starts")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
