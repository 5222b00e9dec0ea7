"""RAdam: Adam with a rectified adaptive learning rate (Liu et al. 2019, "On the Variance of the Adaptive Learning
Rate and Beyond"), with optional decoupled weight decay."""
from collections.abc import Callable
from typing import Any

from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _check_betas, _check_lr, _check_nonnegative, _check_singleton_tensors,
                        _foreach_grads, _get_value, _new_step, _to_scalar, _use_foreach, _use_grad_for_differentiable)

__all__ = ["RAdam", "radam"]


def _rho(beta2, step):
    """``(rho_inf, rho_t)``: the maximum length of the approximated SMA and its value at step ``step``."""
    rho_inf = 2 / (1 - beta2) - 1
    return rho_inf, rho_inf - 2 * step * (beta2 ** step) / (1 - beta2 ** step)


def _rectification(rho_inf, rho_t):
    """The variance rectification term r_t; only defined (and used) while ``rho_t > 5``."""
    return ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5


class RAdam(Optimizer):
    """RAdam, PyTorch's ``torch.optim.RAdam``: Adam's moments, then while the variance of the adaptive rate is
    intractable (``rho_t <= 5``, the first few steps) an SGD-with-momentum step ``p -= lr * m / (1 - b1^t)``, and
    afterwards Adam's step scaled by the rectification ``r_t``. ``weight_decay`` is an L2 penalty added to the
    gradient, or with ``decoupled_weight_decay`` a shrink ``p *= 1 - lr * weight_decay``. State: ``exp_avg``,
    ``exp_avg_sq`` and ``step``::

        opt = mt.optim.RAdam(model_params, lr=1e-3)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                               capturable=False)
        self._steps_as_tensors()

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, state_steps):
        return self._collect_group(
            group, params_with_grad, grads, {"exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs, "step": state_steps},
            lambda p: {"step": _new_step(), "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)})

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_groups(closure, 3, lambda group, params, grads, exp_avgs, exp_avg_sqs, steps: radam(
            params, grads, exp_avgs, exp_avg_sqs, steps, beta1=group["betas"][0], beta2=group["betas"][1], lr=group["lr"],
            weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
            foreach=group["foreach"], capturable=group["capturable"], differentiable=group["differentiable"],
            decoupled_weight_decay=group["decoupled_weight_decay"]))


def radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
          state_steps: list[Tensor], decoupled_weight_decay: bool = False, foreach: bool | None = None,
          differentiable: bool = False, capturable: bool = False, has_complex: bool = False, maximize: bool = False, *,
          beta1: float, beta2: float, lr: float | Tensor, weight_decay: float, eps: float) -> None:
    """Functional RAdam: updates ``params`` and the state lists in place. See :class:`RAdam`."""
    _check_singleton_tensors(state_steps)
    func = _multi_tensor_radam if _use_foreach(params, foreach, differentiable) else _single_tensor_radam
    func(params, grads, exp_avgs, exp_avg_sqs, state_steps, beta1=beta1, beta2=beta2, lr=lr,
         weight_decay=weight_decay, eps=eps, maximize=maximize, decoupled_weight_decay=decoupled_weight_decay,
         differentiable=differentiable)


def _single_tensor_radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
                         state_steps: list[Tensor], *, beta1: float, beta2: float, lr: float | Tensor,
                         weight_decay: float, eps: float, maximize: bool, decoupled_weight_decay: bool,
                         differentiable: bool) -> None:
    lr = float(_to_scalar(lr))
    for param, grad, exp_avg, exp_avg_sq, step_t in zip(params, grads, exp_avgs, exp_avg_sqs, state_steps):
        grad = grad if not maximize else -grad
        step_t += 1
        step = _get_value(step_t)
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        update = (exp_avg / bias_correction1) * lr
        rho_inf, rho_t = _rho(beta2, step)
        if rho_t > 5.0:
            denom = exp_avg_sq.sqrt()
            denom = denom.add(eps) if differentiable else denom.add_(eps)
            adaptive_lr = (bias_correction2 ** 0.5) / denom
            update = update * adaptive_lr * _rectification(rho_inf, rho_t)
        param.add_(update, alpha=-1.0)


def _multi_tensor_radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
                        state_steps: list[Tensor], *, beta1: float, beta2: float, lr: float | Tensor,
                        weight_decay: float, eps: float, maximize: bool, decoupled_weight_decay: bool,
                        differentiable: bool) -> None:
    if not params:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, exp_avgs, exp_avg_sqs, state_steps])
    for (d_params, d_grads, d_exp_avgs, d_exp_avg_sqs, d_steps), _ in grouped.values():
        F._foreach_add_(d_steps, 1)
        if weight_decay != 0 and decoupled_weight_decay:
            F._foreach_mul_(d_params, 1 - lr * weight_decay)
        d_grads = _foreach_grads(d_params, d_grads, maximize, 0 if decoupled_weight_decay else weight_decay)
        F._foreach_lerp_(d_exp_avgs, d_grads, 1 - beta1)
        F._foreach_mul_(d_exp_avg_sqs, beta2)
        F._foreach_addcmul_(d_exp_avg_sqs, d_grads, d_grads, 1 - beta2)
        del d_grads

        # the tensors whose step is past the intractable phase take the rectified step, the others plain momentum;
        # splitting the list (rather than dividing by a zero coefficient, as one formula for both would) keeps
        # every intermediate finite
        rectified: list[tuple[int, float]] = []
        plain: list[tuple[int, float]] = []
        for k, s in enumerate(d_steps):
            step = _get_value(s)
            bias_correction1 = 1 - beta1 ** step
            rho_inf, rho_t = _rho(beta2, step)
            if rho_t > 5:
                coef = (1 - beta2 ** step) ** 0.5 * (lr * _rectification(rho_inf, rho_t) / bias_correction1) * -1
                rectified.append((k, coef))
            else:
                plain.append((k, lr / bias_correction1 * -1))
        if rectified:
            ks = [k for k, _ in rectified]
            # p += m * (1 / ((sqrt(v) + eps) / coef)), coef = -lr r_t sqrt(1 - b2^t) / (1 - b1^t)
            scale = F._foreach_sqrt([d_exp_avg_sqs[k] for k in ks])
            F._foreach_add_(scale, eps)
            F._foreach_div_(scale, [c for _, c in rectified])
            F._foreach_reciprocal_(scale)
            F._foreach_addcmul_([d_params[k] for k in ks], [d_exp_avgs[k] for k in ks], scale)
        if plain:
            ks = [k for k, _ in plain]
            F._foreach_add_([d_params[k] for k in ks], F._foreach_mul([d_exp_avgs[k] for k in ks], [c for _, c in plain]))
