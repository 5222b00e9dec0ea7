"""A custom optimizer: AdamW written the way PyTorch's own optimizers are structured.

``step()`` walks the parameter groups; for each it collects parameters, gradients and per-parameter state
into lists (``_init_group``, which also creates the state on the first step), then applies the update to
those lists (``_single_tensor_adamw``) with in-place tensor ops:

    m  <- beta1 * m + (1 - beta1) * g               exp_avg.lerp_(grad, 1 - beta1)
    v  <- beta2 * v + (1 - beta2) * g^2             exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
    p  <- p * (1 - lr * weight_decay)               decoupled weight decay
    p  <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

The script trains the same model twice, with this optimizer and with ``minitorch_gpu.optim.AdamW``, and
checks that the weights agree. Runs in seconds:

    python examples/custom_optimizer.py --steps 100
"""
import argparse
from typing import Any, Dict, Iterable, List, Tuple, Union

import minitorch_gpu as torch
from minitorch_gpu import Tensor
from minitorch_gpu.optim import Optimizer

ParamsT = Union[Iterable[Tensor], Iterable[Dict[str, Any]]]


class AdamW(Optimizer):
    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            # one list per quantity; entry i of every list belongs to params_with_grad[i]
            params_with_grad: List[Tensor] = []
            grads: List[Tensor] = []
            exp_avgs: List[Tensor] = []
            exp_avg_sqs: List[Tensor] = []
            state_steps: List[Tensor] = []
            self._init_group(group, params_with_grad, grads, exp_avgs, exp_avg_sqs, state_steps)
            self._single_tensor_adamw(params=params_with_grad, grads=grads, exp_avgs=exp_avgs,
                                      exp_avg_sqs=exp_avg_sqs, state_steps=state_steps,
                                      beta1=group["betas"][0], beta2=group["betas"][1], lr=group["lr"],
                                      weight_decay=group["weight_decay"], eps=group["eps"])
        return loss

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue  # a parameter that took no part in this loss is left alone
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                # the step count is a tensor, like PyTorch's, so it saves and loads with the rest of the state
                state["step"] = torch.tensor(0.0, dtype=torch.float32)
                state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state_steps.append(state["step"])
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])

    @staticmethod
    def _single_tensor_adamw(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor],
                             exp_avg_sqs: List[Tensor], state_steps: List[Tensor], beta1: float, beta2: float,
                             lr: float, weight_decay: float, eps: float):
        for i, param in enumerate(params):
            grad = grads[i]
            exp_avg = exp_avgs[i]
            exp_avg_sq = exp_avg_sqs[i]
            step_t = state_steps[i]

            step_t += 1
            param.mul_(1 - lr * weight_decay)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)

            step = step_t.item()
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5

            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))


def train(model, optimizer, x, y, steps):
    losses = []
    for _ in range(steps):
        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss
        losses.append(optimizer.step(closure).item())
    return losses


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    g = torch.Generator().manual_seed(args.seed)
    x = torch.randn(128, 8, generator=g)
    y = (x[:, :1] * x[:, 1:2]).sin() + 0.1 * torch.randn(128, 1, generator=g)

    ours = make_model(args.seed)
    reference = make_model(args.seed)
    # two parameter groups, the second without weight decay, as one would set up biases
    def groups(model):
        return [{"params": [q for q in model.parameters() if q.dim() > 1]},
                {"params": [q for q in model.parameters() if q.dim() == 1], "weight_decay": 0.0}]
    opt = AdamW(groups(ours), lr=args.lr, weight_decay=args.weight_decay)
    ref_opt = torch.optim.AdamW(groups(reference), lr=args.lr, weight_decay=args.weight_decay)

    losses = train(ours, opt, x, y, args.steps)
    ref_losses = train(reference, ref_opt, x, y, args.steps)
    diff = max((a - b).abs().max().item() for a, b in zip(ours.parameters(), reference.parameters()))
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} (minitorch_gpu.optim.AdamW: {ref_losses[0]:.4f} -> "
          f"{ref_losses[-1]:.4f})")
    print(f"max |weight difference| after {args.steps} steps: {diff:.2e}")
    if diff > 1e-5:
        raise SystemExit("the custom AdamW disagrees with minitorch_gpu.optim.AdamW")

    # the state lives in the base class's format: it saves and loads like any optimizer's
    restored = AdamW(groups(make_model(args.seed)), lr=args.lr)
    restored.load_state_dict(opt.state_dict())
    assert restored.state_dict()["state"][0]["step"].item() == args.steps
    print("custom AdamW matches minitorch_gpu.optim.AdamW")
    return diff


if __name__ == "__main__":
    main()
