"""The convolutions of a CIFAR ResNet18 side by side with PyTorch on the CPU: forward + backward of every distinct
layer (3x3 at stride 1 and 2, the 1x1 stride-2 downsamples), batch 32 of 32x32 images by default.

Run ``python -m benchmarks.conv_cpu [--threads N] [--batch B] [--rounds R]``. Both libraries get the same data
and the same thread count (set in the environment before NumPy loads, as ``benchmarks.compare`` does); the
sides run interleaved, alternating who goes first, and each layer's time is the median of its rounds. The
total weighs each layer by how often it occurs in the network (conv1 without an input gradient, as in
training). Prints one line per layer and the total, ours / torch (lower is better, 1.00 is parity).
"""
import argparse
import os
import statistics
import time


def _parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--reps", type=int, default=2, help="calls per sample")
    p.add_argument("--layers", nargs="*", type=int, help="indices into LAYERS (default: all)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="cpu: the process's CPU time, which a loaded machine disturbs less (one thread only)")
    return p


if __name__ == "__main__":
    # NOTE: before NumPy or PyTorch load: OpenBLAS and OpenMP size their
    # thread pools from these once, and a BLAS left at the core count spins against the other side's threads
    _threads = str(_parser().parse_args().threads)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        os.environ[_var] = _threads

import numpy as np  # noqa: E402

# (name, in channels, out channels, image size, stride, kernel, occurrences, input needs a gradient)
LAYERS = [
    ("conv1 3->64 3x3", 3, 64, 32, 1, 3, 1, False),
    ("layer1 64->64 3x3", 64, 64, 32, 1, 3, 4, True),
    ("layer2 64->128 3x3 s2", 64, 128, 32, 2, 3, 1, True),
    ("layer2 128->128 3x3", 128, 128, 16, 1, 3, 3, True),
    ("layer2 down 64->128 1x1 s2", 64, 128, 32, 2, 1, 1, True),
    ("layer3 128->256 3x3 s2", 128, 256, 16, 2, 3, 1, True),
    ("layer3 256->256 3x3", 256, 256, 8, 1, 3, 3, True),
    ("layer3 down 128->256 1x1 s2", 128, 256, 16, 2, 1, 1, True),
    ("layer4 256->512 3x3 s2", 256, 512, 8, 2, 3, 1, True),
    ("layer4 512->512 3x3", 512, 512, 4, 1, 3, 3, True),
    ("layer4 down 256->512 1x1 s2", 256, 512, 8, 2, 1, 1, True),
]


def build(mod, batch, cin, cout, hw, stride, k, need_x):
    """A forward + backward step of one convolution layer (weights and data from a fixed seed)."""
    rng = np.random.default_rng(0)
    x = mod.tensor(rng.standard_normal((batch, cin, hw, hw), dtype=np.float32), requires_grad=need_x)
    w = mod.tensor(rng.standard_normal((cout, cin, k, k), dtype=np.float32) * 0.05, requires_grad=True)
    out_hw = (hw + 2 * (k // 2) - k) // stride + 1
    g = mod.tensor(rng.standard_normal((batch, cout, out_hw, out_hw), dtype=np.float32))
    conv = mod.nn.functional.conv2d

    def step():
        w.grad = None
        x.grad = None
        conv(x, w, None, stride, k // 2).backward(g)
    return step


def _time(step, reps, clock=time.perf_counter):
    t0 = clock()
    for _ in range(reps):
        step()
    return (clock() - t0) / reps


def main(argv=None):
    args = _parser().parse_args(argv)
    import torch

    import minitorch_gpu as mt
    torch.set_num_threads(args.threads)
    mt.zeros(1)._be.optim_threads = args.threads
    libs = {"ours": mt, "torch": torch}
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"threads {args.threads} (torch {torch.get_num_threads()}), batch {args.batch}, medians of {args.rounds} "
          f"interleaved rounds of {args.reps} calls, {args.clock} clock")
    totals = {"ours": 0.0, "torch": 0.0}
    chosen = [LAYERS[i] for i in args.layers] if args.layers else LAYERS
    for name, cin, cout, hw, stride, k, count, need_x in chosen:
        steps = {lib: build(mod, args.batch, cin, cout, hw, stride, k, need_x) for lib, mod in libs.items()}
        for s in steps.values():
            s()
        samples = {lib: [] for lib in libs}
        for r in range(args.rounds):
            for lib in (list(libs) if r % 2 == 0 else list(libs)[::-1]):
                samples[lib].append(_time(steps[lib], args.reps, clock))
        med = {lib: statistics.median(v) for lib, v in samples.items()}
        for lib in libs:
            totals[lib] += count * med[lib]
        print(f"{name:30s} x{count}  ours {med['ours'] * 1e3:8.2f} ms  torch {med['torch'] * 1e3:8.2f} ms  "
              f"ratio {med['ours'] / med['torch']:.2f}", flush=True)
    print(f"{'total (weighted)':30s}     ours {totals['ours'] * 1e3:8.2f} ms  torch {totals['torch'] * 1e3:8.2f} ms  "
          f"ratio {totals['ours'] / totals['torch']:.2f}")


if __name__ == "__main__":
    main()
