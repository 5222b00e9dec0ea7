"""The CPU matrix products of the benchmark models side by side: NumPy's BLAS (OpenBLAS), PyTorch's ``matmul``,
our compiled kernel (``backends/_gemm_native.py``, forced on every shape) and the CPU backend's ``matmul`` (which
picks one of the first and third by its decision rule), in GFLOP/s.

Run ``python -m benchmarks.gemm_cpu [--threads N] [--rounds R] [--shapes SUBSTRING ...] [--dtype float64]``.
Shapes: the GPT's of ``benchmarks.compare`` (8 x 64 tokens, width 128, 4 heads; linear layers forward ``x @ W^T``,
backward ``g @ W`` and ``g^T @ x``; attention on the views a fused q/k/v projection gives), the LSTM language
model's (16 x 32 tokens, 2 layers of 256: the per-step ``h @ W_hh^T`` and its backward, the input projections,
the head), the MLP's (784-512-512-10 at batch 256) and the character transformer's attention (16 x 4 heads of
64 x 32). Every side gets the same arrays (the same views, transposes included); the sides run interleaved,
each sample the best of a few calls, and the table shows the median of ``--rounds`` samples; ``ours / blas`` is
the compiled kernel's time over BLAS's (below 1 is where it wins), ``routed / torch`` the backend's over
PyTorch's. The load average is printed with the table: on a shared machine, compare ratios from one run.
"""
import argparse
import os
import statistics
import time


def _parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--shapes", nargs="*", help="only the shapes whose name contains one of these")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--target-ms", type=float, default=2.0, help="time per sample")
    return p


if __name__ == "__main__":
    # NOTE: before NumPy or PyTorch load (OpenBLAS and OpenMP size their pools once; see benchmarks.compare)
    _threads = str(_parser().parse_args().threads)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        os.environ[_var] = _threads

import numpy as np  # noqa: E402

# (name, batch dims, M, K, N, layout of A, layout of B): "n" the operand as stored, "t" a transposed view of a
# stored (K, M) / (N, K) array, "qkv" a head view of a fused projection (B, T, 3 * C) -> (B, H, T, C / H),
# "qkvT" that view transposed
SHAPES = [
    # GPT (benchmarks.compare's default: 8 x 64 = 512 tokens of width 128, vocabulary 256, 4 heads of 32)
    ("gpt qkv x@W^T", (), 512, 128, 384, "n", "t"),
    ("gpt proj x@W^T", (), 512, 128, 128, "n", "t"),
    ("gpt fc x@W^T", (), 512, 128, 512, "n", "t"),
    ("gpt fc2 x@W^T", (), 512, 512, 128, "n", "t"),
    ("gpt head x@E^T", (), 512, 128, 256, "n", "t"),
    ("gpt qkv g@W", (), 512, 384, 128, "n", "n"),
    ("gpt fc2 g@W", (), 512, 128, 512, "n", "n"),
    ("gpt fc g^T@x", (), 512, 512, 128, "t", "n"),
    ("gpt fc2 g^T@x", (), 128, 512, 512, "t", "n"),
    ("gpt proj g^T@x", (), 128, 512, 128, "t", "n"),
    ("gpt attn q@k^T", (8, 4), 64, 32, 64, "qkv", "qkvT"),
    ("gpt attn p@v", (8, 4), 64, 64, 32, "n", "qkv"),
    ("gpt attn g@v^T", (8, 4), 64, 32, 64, "n", "qkvT"),
    ("gpt attn p^T@g", (8, 4), 64, 64, 32, "t", "n"),
    ("gpt attn ds@k", (8, 4), 64, 64, 32, "n", "qkv"),
    ("gpt attn ds^T@q", (8, 4), 64, 64, 32, "t", "qkv"),
    ("attn (32,64,32)@(32,32,64)^T", (32,), 64, 32, 64, "n", "t"),
    ("attn (32,64,64)@(32,64,32)", (32,), 64, 64, 32, "n", "n"),
    # LSTM language model (16 sequences x 32 steps, embedding 128, hidden 256, vocabulary 1000)
    ("lstm step h@W_hh^T", (), 16, 256, 1024, "n", "n"),
    ("lstm step dg@W_hh", (), 16, 1024, 256, "n", "n"),
    ("lstm in x@W_ih^T", (), 512, 128, 1024, "n", "t"),
    ("lstm in2 x@W_ih^T", (), 512, 256, 1024, "n", "t"),
    ("lstm dW dg^T@h", (), 1024, 512, 256, "t", "n"),
    ("lstm dx dg@W_ih", (), 512, 1024, 128, "n", "n"),
    ("lstm head x@W^T", (), 512, 256, 1000, "n", "t"),
    ("lstm head g@W", (), 512, 1000, 256, "n", "n"),
    ("lstm head g^T@x", (), 1000, 512, 256, "t", "n"),
    # MLP 784-512-512-10, batch 256
    ("mlp fc1 x@W^T", (), 256, 784, 512, "n", "t"),
    ("mlp fc2 x@W^T", (), 256, 512, 512, "n", "t"),
    ("mlp fc3 x@W^T", (), 256, 512, 10, "n", "t"),
    ("mlp fc3 g@W", (), 256, 10, 512, "n", "n"),
    ("mlp fc2 g@W", (), 256, 512, 512, "n", "n"),
    ("mlp fc1 g^T@x", (), 512, 256, 784, "t", "n"),
    ("mlp fc3 g^T@x", (), 10, 256, 512, "t", "n"),
    # character transformer (16 x 64 tokens, width 128, 4 heads of 32)
    ("chartf attn q@k^T", (16, 4), 64, 32, 64, "qkv", "qkvT"),
    ("chartf attn p@v", (16, 4), 64, 64, 32, "n", "qkv"),
    # the edges of the decision rule's classes: one row, 32 rows of a large product, batches of other sizes
    ("edge row x@W^T", (), 1, 1024, 1024, "n", "t"),
    ("edge row x@W", (), 1, 1024, 1024, "n", "n"),
    ("edge 4 rows x@W", (), 4, 1024, 1024, "n", "n"),
    ("edge 32 rows x@W^T", (), 32, 2048, 2048, "n", "t"),
    ("edge 48 rows x@W", (), 48, 1024, 1024, "n", "n"),
    ("edge batch K16", (64,), 128, 16, 128, "n", "t"),
    ("edge batch K32 big", (16,), 256, 32, 256, "n", "t"),
    ("edge batch K48", (32,), 64, 48, 64, "n", "t"),
    ("edge batch K32 nn", (32,), 64, 32, 64, "n", "n"),
    ("edge batch K64 t", (32,), 64, 64, 64, "n", "t"),
    ("edge batch K128 t", (16,), 128, 128, 128, "n", "t"),
    ("edge batch K32 tt", (32,), 64, 32, 64, "t", "t"),
    ("edge batch 8 rows", (64,), 8, 64, 64, "n", "n"),
    # around the least size (2^18 multiply-adds, 2^19 for batches): the kernel's fixed cost against NumPy's
    ("edge small 16x16x64", (), 16, 16, 64, "n", "t"),
    ("edge small 16x128x128", (), 16, 128, 128, "n", "t"),
    ("edge small 8x128x256", (), 8, 128, 256, "n", "t"),
    ("edge small batch 2", (2,), 64, 32, 64, "n", "t"),
    ("edge small batch 4", (4,), 64, 32, 64, "n", "t"),
]


def operand(rng, layout, batch, rows, cols, dtype):
    """A (batch..., rows, cols) operand in ``layout``."""
    if layout == "n":
        return rng.standard_normal(batch + (rows, cols)).astype(dtype)
    if layout == "t":
        return rng.standard_normal(batch + (cols, rows)).astype(dtype).swapaxes(-1, -2)
    # a head view of a fused (B, T, 3 * C) projection: batch (B, H), rows T, columns C / H (or the transpose)
    B, H = batch
    t, d = (rows, cols) if layout == "qkv" else (cols, rows)
    fused = rng.standard_normal((B, t, 3 * H * d)).astype(dtype)
    view = fused[:, :, H * d:2 * H * d].reshape(B, t, H, d).transpose(0, 2, 1, 3)
    return view if layout == "qkv" else view.swapaxes(-1, -2)


def _best(f, calls):
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def main(argv=None):
    args = _parser().parse_args(argv)
    import torch

    import minitorch_gpu as mt
    from minitorch_gpu.backends import _gemm_native
    torch.set_num_threads(args.threads)
    be = mt.zeros(1)._be
    be.optim_threads = args.threads
    dtype = np.dtype(args.dtype)
    rng = np.random.default_rng(0)
    shapes = [s for s in SHAPES if not args.shapes or any(x in s[0] for x in args.shapes)]
    print(f"threads {args.threads}, {args.dtype}, load average {os.getloadavg()[0]:.2f}, "
          f"native GEMM {'available' if _gemm_native.available() else 'unavailable: ' + str(_gemm_native.unavailable_reason())}")
    head = f"{'shape':32} {'M':>5} {'K':>5} {'N':>5} {'batch':>6} | {'blas':>6} {'torch':>6} {'ours':>6} {'routed':>6} " \
           f"| ours/blas routed/torch  (GFLOP/s)"
    print(head)
    print("-" * len(head))
    rows = []
    for name, batch, m, k, n, la, lb in shapes:
        a = operand(rng, la, batch, m, k, dtype)
        b = operand(rng, lb, batch, k, n, dtype)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)  # the same views: torch shares the arrays' strides
        ref = np.matmul(a, b)
        forced = _gemm_native.matmul(a, b, None, args.threads, force=True)
        tol = 1e-4 if dtype == np.float32 else 1e-10
        err = float(np.abs(forced - ref).max() / max(np.abs(ref).max(), 1e-30)) if forced is not None else None
        sides = {"blas": lambda: np.matmul(a, b), "torch": lambda: torch.matmul(ta, tb),
                 "ours": lambda: _gemm_native.matmul(a, b, None, args.threads, force=True),
                 "routed": lambda: be.matmul(a, b)}
        calls = {}
        for key, f in sides.items():
            f()
            t0 = time.perf_counter()
            f()
            calls[key] = max(1, int(args.target_ms / 1e3 / 3 / max(time.perf_counter() - t0, 1e-7)))
        samples = {key: [] for key in sides}
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for key in order:
                samples[key].append(_best(sides[key], calls[key]))
        flops = 2.0 * m * n * k * (int(np.prod(batch)) if batch else 1)
        t = {key: statistics.median(v) for key, v in samples.items()}
        gf = {key: flops / v / 1e9 for key, v in t.items()}
        bad = "" if err is not None and err < tol else f"  ERROR {err}"
        print(f"{name:32} {m:5} {k:5} {n:5} {str(batch or ''):>6} | {gf['blas']:6.1f} {gf['torch']:6.1f} "
              f"{gf['ours']:6.1f} {gf['routed']:6.1f} | {t['ours'] / t['blas']:9.2f} {t['routed'] / t['torch']:12.2f}"
              f"{bad}", flush=True)
        rows.append((name, t))
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return rows


if __name__ == "__main__":
    main()
