"""NAdam: Adam with Nesterov momentum (Dozat 2016, "Incorporating Nesterov Momentum into Adam"), with the
momentum-decay schedule of that paper and optional decoupled weight decay (NAdamW)."""
from collections.abc import Callable
from typing import Any

from ..ops.creation import ones, zeros_like
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _check_betas, _check_lr, _check_nonnegative, _check_singleton_tensors,
                        _foreach_grads, _get_scalar_dtype, _get_value, _new_step, _to_scalar, _use_foreach,
                        _use_grad_for_differentiable)

__all__ = ["NAdam", "nadam"]


def _momentum(beta1, step, momentum_decay):
    """The momentum coefficient of step ``step``: ``b1 (1 - 0.5 * 0.96^(step * momentum_decay))``."""
    return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))


class NAdam(Optimizer):
    """NAdam, PyTorch's ``torch.optim.NAdam``. With ``mu_t = b1 (1 - 0.5 * 0.96^(t * momentum_decay))`` and
    ``P_t = mu_1 ... mu_t``: ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``, ``d = sqrt(v / (1 - b2^t)) + eps``,
    ``p -= lr (1 - mu_t) / (1 - P_t) * g / d + lr mu_{t+1} / (1 - P_t mu_{t+1}) * m / d``. ``weight_decay`` is an
    L2 penalty added to the gradient, or with ``decoupled_weight_decay`` a shrink ``p *= 1 - lr * weight_decay``.
    State: ``exp_avg``, ``exp_avg_sq``, ``mu_product`` (P_t, a 0-d tensor on the host) and ``step``::

        opt = mt.optim.NAdam(model_params, lr=2e-3, momentum_decay=4e-3)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(maximize=False, foreach=None, capturable=False, differentiable=False,
                               decoupled_weight_decay=False)
        self._steps_as_tensors(("step", "mu_product"))

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps):
        # mu_product is a host scalar like the step, so that reading it for the step sizes never waits for a GPU
        return self._collect_group(
            group, params_with_grad, grads,
            {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs, "mu_product": mu_products, "step": state_steps},
            lambda p: {"step": _new_step(), "mu_product": ones((), dtype=_get_scalar_dtype()),
                       "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)})

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_groups(closure, 4, lambda group, params, grads, exp_avgs, exp_avg_sqs, mu_products, steps: nadam(
            params, grads, exp_avgs, exp_avg_sqs, mu_products, steps, beta1=group["betas"][0], beta2=group["betas"][1], lr=group["lr"],
            weight_decay=group["weight_decay"], momentum_decay=group["momentum_decay"], eps=group["eps"],
            maximize=group["maximize"], decoupled_weight_decay=group["decoupled_weight_decay"],
            foreach=group["foreach"], capturable=group["capturable"], differentiable=group["differentiable"]))


def nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
          mu_products: list[Tensor], state_steps: list[Tensor], decoupled_weight_decay: bool = False,
          foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
          has_complex: bool = False, maximize: bool = False, *, beta1: float, beta2: float, lr: float | Tensor,
          weight_decay: float, momentum_decay: float, eps: float) -> None:
    """Functional NAdam: updates ``params`` and the state lists (``mu_products`` included) in place. See
    :class:`NAdam`."""
    _check_singleton_tensors(state_steps)
    _check_singleton_tensors(mu_products, "mu_products")
    func = _multi_tensor_nadam if _use_foreach(params, foreach, differentiable) else _single_tensor_nadam
    func(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, beta1=beta1, beta2=beta2, lr=lr,
         weight_decay=weight_decay, momentum_decay=momentum_decay, eps=eps, maximize=maximize,
         decoupled_weight_decay=decoupled_weight_decay, differentiable=differentiable)


def _single_tensor_nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
                         mu_products: list[Tensor], state_steps: list[Tensor], *, beta1: float, beta2: float,
                         lr: float | Tensor, weight_decay: float, momentum_decay: float, eps: float,
                         maximize: bool, decoupled_weight_decay: bool, differentiable: bool) -> None:
    lr = float(_to_scalar(lr))
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, mu_product, step_t = exp_avgs[i], exp_avg_sqs[i], mu_products[i], state_steps[i]
        step_t += 1
        step = _get_value(step_t)
        bias_correction2 = 1 - beta2 ** step
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        mu = _momentum(beta1, step, momentum_decay)
        mu_next = _momentum(beta1, step + 1, momentum_decay)
        # P_t is kept in the scalar dtype of the state (float32 by default), as PyTorch keeps it
        mu_product *= mu
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt()
        mu_prod = _get_value(mu_product)
        grad_coef = -lr * (1.0 - mu) / (1.0 - mu_prod)
        avg_coef = -lr * mu_next / (1.0 - mu_prod * mu_next)
        if differentiable:
            # scale out of place, so that autograd sees every factor (addcdiv's value is a plain number)
            denom = denom.add(eps)
            param.addcdiv_(grad * grad_coef, denom)
            param.addcdiv_(exp_avg * avg_coef, denom)
        else:
            denom.add_(eps)
            param.addcdiv_(grad, denom, value=grad_coef)
            param.addcdiv_(exp_avg, denom, value=avg_coef)


def _multi_tensor_nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
                        mu_products: list[Tensor], state_steps: list[Tensor], *, beta1: float, beta2: float,
                        lr: float | Tensor, weight_decay: float, momentum_decay: float, eps: float,
                        maximize: bool, decoupled_weight_decay: bool, differentiable: bool) -> None:
    if not params:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype(
        [params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps])
    for (d_params, d_grads, d_exp_avgs, d_exp_avg_sqs, d_mu_products, d_steps), _ in grouped.values():
        F._foreach_add_(d_steps, 1)
        if weight_decay != 0 and decoupled_weight_decay:
            F._foreach_mul_(d_params, 1 - lr * weight_decay)
        d_grads = _foreach_grads(d_params, d_grads, maximize, 0 if decoupled_weight_decay else weight_decay)
        F._foreach_lerp_(d_exp_avgs, d_grads, 1 - beta1)
        F._foreach_mul_(d_exp_avg_sqs, beta2)
        F._foreach_addcmul_(d_exp_avg_sqs, d_grads, d_grads, 1 - beta2)
        denom = F._foreach_sqrt(d_exp_avg_sqs)

        steps = [_get_value(s) for s in d_steps]
        mus = [_momentum(beta1, s, momentum_decay) for s in steps]
        mu_nexts = [_momentum(beta1, s + 1, momentum_decay) for s in steps]
        F._foreach_mul_(d_mu_products, mus)
        F._foreach_div_(denom, [(1 - beta2 ** s) ** 0.5 for s in steps])
        F._foreach_add_(denom, eps)

        mu_prods = [_get_value(m) for m in d_mu_products]
        grad_coefs = [-lr * (1.0 - mu) / (1.0 - mp) for mu, mp in zip(mus, mu_prods)]
        avg_coefs = [-lr * mn / (1.0 - mp * mn) for mn, mp in zip(mu_nexts, mu_prods)]
        F._foreach_addcdiv_(d_params, d_grads, denom, grad_coefs)
        F._foreach_addcdiv_(d_params, d_exp_avgs, denom, avg_coefs)
