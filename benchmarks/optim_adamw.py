"""One AdamW step over ~10M parameters in 20 tensors: our three implementations against PyTorch's.

Run ``python -m benchmarks.optim_adamw``. On the CPU, every variant runs interleaved in one process
(A B C D E A B C D E ...) and the medians are compared, since these machines are noisy; PyTorch gets as many
threads as our fused path uses (printed), so the comparison is like for like. Ratios are ours / PyTorch's best
CPU path (lower is better), as the median over rounds of the ratio within each round. "ours fused numpy" is
the NumPy body that the fused step falls back to where no C++ compiler is available.

With a GPU (``mt.cuda.is_available()``), the fused step on ``cuda`` is timed too and reported as effective
bandwidth at 28 bytes per parameter (read p, g, m, v; write p, m, v: seven float32 values) next to the
device-to-device copy bandwidth measured on the same GPU, the roofline for a memory-bound update.
"""
import argparse
import json
import statistics
import time

import numpy as np

# 18 x 1024x512 + 2 x 1024x272: 9.99M parameters in 20 tensors, like a small transformer's weight matrices
SHAPES = [(1024, 512)] * 18 + [(1024, 272)] * 2
BYTES_PER_PARAM = 28
_SETTLE_S = 0.02


def _arrays(seed=0, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return ([rng.standard_normal(s, dtype=np.float32) * 0.02 for s in shapes],
            [rng.standard_normal(s, dtype=np.float32) * 1e-3 for s in shapes])


def _ours(weights, grads, device, native=True, **flags):
    import minitorch_gpu as mt
    ps = [mt.tensor(w, device=device, requires_grad=True) for w in weights]
    for p, g in zip(ps, grads):
        p.grad = mt.tensor(g, device=device)
    opt = mt.optim.AdamW(ps, lr=1e-3, weight_decay=1e-2, **flags)
    be = ps[0]._be

    def step():
        # native=False times the NumPy body the CPU falls back to without a C++ compiler
        saved = getattr(be, "native_optim", None)
        if saved is not None:
            be.native_optim = native
        try:
            opt.step()
        finally:
            if saved is not None:
                be.native_optim = saved

    step()  # state allocation, first touch and the native library's build happen outside the timing
    return step


def _torch(torch, weights, grads, device="cpu", **flags):
    ps = [torch.tensor(w, device=device, requires_grad=True) for w in weights]
    for p, g in zip(ps, grads):
        p.grad = torch.tensor(g, device=device)
    opt = torch.optim.AdamW(ps, lr=1e-3, weight_decay=1e-2, **flags)
    opt.step()
    return opt.step


def _time(fn, sync=None):
    t0 = time.perf_counter()
    fn()
    if sync is not None:
        sync()
    return time.perf_counter() - t0


def run_cpu(rounds=15, threads=None, slow=True):
    import minitorch_gpu as mt
    be = mt.zeros(1)._be
    if threads is not None:
        be.optim_threads = threads
    n_threads = be._optim_threads()
    weights, grads = _arrays()
    from minitorch_gpu.backends import _optim_native
    native = _optim_native.available()
    variants = {"ours fused": _ours(weights, grads, "cpu", fused=True)}
    if native:
        variants["ours fused numpy"] = _ours(weights, grads, "cpu", native=False, fused=True)
    variants["ours foreach"] = _ours(weights, grads, "cpu", foreach=True)
    if slow:
        variants["ours single"] = _ours(weights, grads, "cpu", foreach=False)
    torch_names = []
    try:
        import torch
        torch.set_num_threads(n_threads)
        variants["torch fused"] = _torch(torch, weights, grads, fused=True)
        variants["torch foreach"] = _torch(torch, weights, grads, foreach=True)
        torch_names = ["torch fused", "torch foreach"]
    except ImportError:
        torch = None
    samples = {k: [] for k in variants}
    for _ in range(rounds):
        for name, step in variants.items():
            # every variant starts on idle cores: PyTorch's OpenMP workers spin for milliseconds after a parallel
            # region and would hold a core the next variant's threads need
            time.sleep(_SETTLE_S)
            samples[name].append(_time(step))
    med = {k: statistics.median(v) for k, v in samples.items()}
    res = {"device": "cpu", "threads": n_threads, "native": native, "params": sum(int(np.prod(s)) for s in SHAPES),
           "tensors": len(SHAPES), "median_ms": {k: v * 1e3 for k, v in med.items()}}
    if torch_names:
        best = min(torch_names, key=lambda k: med[k])
        res["torch_best"] = best
        # the median of per-round ratios: the two steps of a round ran moments apart, so a slow spell of this
        # shared machine cancels out instead of landing on one side
        res["ratio_over_torch_best"] = {
            k: statistics.median(a / b for a, b in zip(samples[k], samples[best])) for k in med if k.startswith("ours")}
    return res


def run_gpu(rounds=20):
    import minitorch_gpu as mt
    if not mt.cuda.is_available():
        return None
    weights, grads = _arrays()
    n = sum(int(np.prod(s)) for s in SHAPES)
    sync = mt.cuda.synchronize
    variants = {"ours fused": _ours(weights, grads, "cuda", fused=True),
                "ours foreach": _ours(weights, grads, "cuda", foreach=True)}
    src = mt.zeros(n, device="cuda")
    dst = mt.empty(n, device="cuda")
    variants["d2d copy"] = lambda: dst.copy_(src)
    try:
        import torch
        if torch.cuda.is_available():
            tps = [torch.tensor(w, device="cuda", requires_grad=True) for w in weights]
            for p, g in zip(tps, grads):
                p.grad = torch.tensor(g, device="cuda")
            topt = torch.optim.AdamW(tps, lr=1e-3, weight_decay=1e-2, fused=True)
            topt.step()
            variants["torch fused"] = topt.step
    except ImportError:
        pass
    for step in variants.values():
        step()
    sync()
    samples = {k: [] for k in variants}
    for _ in range(rounds):
        for name, step in variants.items():
            samples[name].append(_time(step, sync))
    med = {k: statistics.median(v) for k, v in samples.items()}
    copy_gbs = 2 * 4 * n / med["d2d copy"] / 1e9
    res = {"device": "cuda", "params": n, "median_ms": {k: v * 1e3 for k, v in med.items()},
           "copy_GBps": copy_gbs, "GBps": {}, "fraction_of_copy": {}}
    for k in variants:
        if k != "d2d copy":
            res["GBps"][k] = BYTES_PER_PARAM * n / med[k] / 1e9
            res["fraction_of_copy"][k] = res["GBps"][k] / copy_gbs
    return res


def _print_cpu(cpu):
    fused = "compiled loop (kernels/optim_cpu.cpp)" if cpu["native"] else "NumPy body (no native library)"
    print(f"AdamW step, {cpu['params'] / 1e6:.2f}M parameters in {cpu['tensors']} tensors, CPU, "
          f"threads: {cpu['threads']} each (ours: our thread pool; torch: torch.set_num_threads); ours fused: {fused}")
    for k, v in cpu["median_ms"].items():
        ratio = cpu.get("ratio_over_torch_best", {}).get(k)
        print(f"  {k:17s} {v:8.2f} ms" + (f"   {ratio:.2f}x {cpu['torch_best']}" if ratio else ""))


def main(argv=None):
    p = argparse.ArgumentParser(description="AdamW step on ~10M parameters, ours vs torch")
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--threads", type=int, nargs="*",
                   help="thread counts to compare at (ours and torch alike); default: 1 and our fused path's default")
    p.add_argument("--no-single", action="store_true", help="skip the slow reference loop")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    import minitorch_gpu as mt
    default_threads = mt.zeros(1)._be._optim_threads()
    counts = args.threads or sorted({1, default_threads})
    results = {"cpu": []}
    for n in counts:
        cpu = run_cpu(args.rounds, n, slow=not args.no_single)
        results["cpu"].append(cpu)
        _print_cpu(cpu)
    mt.zeros(1)._be.optim_threads = None
    gpu = run_gpu()
    if gpu is not None:
        results["cuda"] = gpu
        print(f"CUDA: device-to-device copy {gpu['copy_GBps']:.0f} GB/s")
        for k, v in gpu["GBps"].items():
            print(f"  {k:14s} {gpu['median_ms'][k]:8.3f} ms  {v:7.0f} GB/s at {BYTES_PER_PARAM} B/param "
                  f"({gpu['fraction_of_copy'][k]:.0%} of copy)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
