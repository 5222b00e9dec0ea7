"""Custom autograd Functions: ops with a hand-written backward, as in PyTorch's ``torch.autograd.Function``.

- ``SiLUFunction``: ``x * sigmoid(x)`` as one graph node that keeps only ``x``, instead of the three nodes
  and their intermediates autograd would otherwise record. Its backward recomputes the sigmoid from ``x`` with
  differentiable tensor ops, so second derivatives are right too (a sigmoid saved from the forward pass would
  be a constant to the double backward, which would then miss its dependence on ``x``).
- ``StraightThroughRound``: rounds in the forward pass and lets the gradient through unchanged in the
  backward pass (the straight-through estimator used to train quantized weights); it takes a non-tensor
  argument, whose gradient is ``None``.

Both are checked with ``gradcheck`` / against autograd, then used to fit a tiny model. Runs in seconds:

    python examples/custom_function.py --steps 200
"""
import argparse

import minitorch_gpu as torch
from minitorch_gpu.autograd import Function, gradcheck, gradgradcheck


class SiLUFunction(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        s = torch.sigmoid(x)
        # d/dx [x * s(x)] = s + x * s * (1 - s)
        return grad_out * (s * (1 + x * (1 - s)))


class StraightThroughRound(Function):
    @staticmethod
    def forward(ctx, x, step):
        ctx.step = step  # non-tensor state rides on ctx
        return torch.round(x / step) * step

    @staticmethod
    def backward(ctx, grad_out):
        # one gradient per forward input: the tensor gets grad_out as is, the float step gets None
        return grad_out, None


def silu(x):
    return SiLUFunction.apply(x)


def quantize(x, step):
    return StraightThroughRound.apply(x, step)


def check():
    """Compare the custom backward passes with numerical and automatic differentiation."""
    x = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(silu, (x,)), "SiLU gradient"
    assert gradgradcheck(silu, (x,)), "SiLU second derivative"
    # the same values and gradients as the composite autograd version
    y_custom = silu(x)
    y_auto = x * torch.sigmoid(x)
    g_custom, = torch.autograd.grad(y_custom.sum(), x)
    g_auto, = torch.autograd.grad(y_auto.sum(), x)
    assert torch.allclose(y_custom, y_auto) and torch.allclose(g_custom, g_auto)
    assert type(y_custom.grad_fn).__name__ == "SiLUFunctionBackward"

    w = torch.tensor([0.26, -0.74, 1.01], requires_grad=True)
    q = quantize(w, 0.5)
    assert q.tolist() == [0.5, -0.5, 1.0]
    (q * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert w.grad.tolist() == [1.0, 2.0, 3.0]  # passed straight through the rounding
    print("gradcheck passed: SiLUFunction (first and second order), StraightThroughRound")


def fit(steps, lr, seed):
    """Fit y = silu(x @ w_true) with weights kept on a 0.25 grid through the straight-through estimator."""
    torch.manual_seed(seed)
    w_true = torch.tensor([[1.0], [-0.5], [0.25]])
    x = torch.randn(256, 3)
    y = silu(x @ w_true)
    w = torch.zeros(3, 1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=lr, momentum=0.9)
    for step in range(1, steps + 1):
        opt.zero_grad()
        pred = silu(x @ quantize(w, 0.25))
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        opt.step()
        if step == 1 or step % 50 == 0 or step == steps:
            print(f"step {step:4d}  loss {loss.item():.6f}")
    learned = quantize(w, 0.25).detach().flatten().tolist()
    print(f"quantized weights {learned} (true {w_true.flatten().tolist()})")
    return loss.item(), learned


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    check()
    return fit(args.steps, args.lr, args.seed)


if __name__ == "__main__":
    main()
