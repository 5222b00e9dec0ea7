"""Per-op overhead of recording and backpropagating: 100 tiny ops forward + backward, ours vs PyTorch.

Run ``python -m benchmarks.autograd_overhead``. Both sides run interleaved in one process (A B A B ...) and
the medians are compared, since these machines are noisy. The ops are on 1-element tensors so the time is
all framework overhead (graph recording, dispatch, the backward engine), none of it arithmetic.
"""
import argparse
import json
import statistics
import time


def chain(lib, a, n_ops):  # noqa: ARG001 - same signature as no_grad_chain
    y = a
    for i in range(n_ops // 4):
        y = y * 1.0001
        y = y + a
        y = y.tanh()
        y = y - 0.5
    y.sum().backward()


def no_grad_chain(lib, a, n_ops):
    with lib.no_grad():
        y = a
        for i in range(n_ops // 4):
            y = y * 1.0001
            y = y + a
            y = y.tanh()
            y = y - 0.5


def _time(fn, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def run(n_ops=100, rounds=15, reps=20):
    import minitorch_gpu as mt
    libs = {"minitorch_gpu": mt}
    try:
        import torch
        torch.set_num_threads(1)
        libs["torch"] = torch
    except ImportError:
        pass
    results = {}
    for case, body in (("fwd+bwd", chain), ("no_grad fwd", no_grad_chain)):
        samples = {name: [] for name in libs}
        for _ in range(rounds):
            for name, lib in libs.items():
                a = lib.ones(1, requires_grad=True)
                samples[name].append(_time(lambda: body(lib, a, n_ops), reps))
        med = {name: statistics.median(s) for name, s in samples.items()}
        results[case] = {name: {"median_ms": m * 1e3} for name, m in med.items()}
        if "torch" in med:
            results[case]["ratio_ours_over_torch"] = med["minitorch_gpu"] / med["torch"]
    return results


def main(argv=None):
    p = argparse.ArgumentParser(description="100 tiny ops forward + backward, ours vs torch")
    p.add_argument("--ops", type=int, default=100)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    res = run(args.ops, args.rounds)
    for case, r in res.items():
        parts = [f"{k} {v['median_ms']:.3f} ms" for k, v in r.items() if isinstance(v, dict)]
        ratio = r.get("ratio_ours_over_torch")
        print(f"{case:12s} " + ", ".join(parts) + (f"  ratio {ratio:.2f}x" if ratio else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
