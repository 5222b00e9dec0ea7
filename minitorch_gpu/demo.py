"""A short demo: fit a two-layer MLP to a noisy 2-D spiral with plain tensors and autograd.

Run with ``python -m minitorch_gpu.demo``; it prints the loss falling. Everything here is the public,
PyTorch-style API (the full training job arrives as ``python -m minitorch_gpu.train``).
"""
import argparse
import math
import time

import minitorch_gpu as mt


def make_spiral(n_per_class, n_classes, generator):
    """Points on interleaved spiral arms; the class is the arm."""
    xs, ys = [], []
    for c in range(n_classes):
        r = mt.linspace(0.05, 1.0, n_per_class)
        theta = mt.linspace(c * 2 * math.pi / n_classes, c * 2 * math.pi / n_classes + 3.0, n_per_class)
        theta = theta + 0.15 * mt.randn(n_per_class, generator=generator)
        xs.append(mt.stack([r * theta.sin(), r * theta.cos()], dim=1))
        ys.append(mt.full((n_per_class,), c, dtype=mt.int64))
    return mt.cat(xs), mt.cat(ys)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--device", default="cuda" if mt.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    g = mt.manual_seed(args.seed)
    x, y = make_spiral(200, 3, g)
    x, y = x.to(args.device), y.to(args.device)

    def param(*shape, scale):
        return (mt.randn(*shape, generator=g) * scale).to(args.device).requires_grad_()

    w1 = param(2, args.hidden, scale=1.0)
    b1 = mt.zeros(args.hidden, device=args.device, requires_grad=True)
    w2 = param(args.hidden, 3, scale=1.0 / math.sqrt(args.hidden))
    b2 = mt.zeros(3, device=args.device, requires_grad=True)
    params = [w1, b1, w2, b2]

    t0 = time.perf_counter()
    for step in range(args.steps + 1):
        h = (x @ w1 + b1).tanh()
        logits = h @ w2 + b2
        loss = -logits.log_softmax(dim=1).gather(1, y.unsqueeze(1)).mean()
        for p_ in params:
            p_.grad = None
        loss.backward()
        with mt.no_grad():
            for p_ in params:
                p_.sub_(args.lr * p_.grad)
        if step % 50 == 0:
            acc = (logits.argmax(dim=1) == y).float().mean().item()
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {acc:.3f}")
    print(f"done in {time.perf_counter() - t0:.1f}s on {args.device}")
    return loss.item()


if __name__ == "__main__":
    main()
