"""Adamax: Adam with the infinity norm in place of the second moment (Kingma & Ba 2014, section 7.1)."""
from collections.abc import Callable
from typing import Any

from ..ops.creation import zeros_like
from ..ops.elementwise import maximum
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _check_betas, _check_lr, _check_nonnegative, _check_singleton_tensors,
                        _foreach_grads, _get_value, _new_step, _to_scalar, _use_foreach, _use_grad_for_differentiable)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """Adamax, PyTorch's ``torch.optim.Adamax``: ``m = b1 m + (1 - b1) g``, ``u = max(b2 u, |g| + eps)``,
    ``p -= lr / (1 - b1^t) * m / u``; ``weight_decay`` adds ``weight_decay * p`` to the gradient first. State:
    ``exp_avg`` (m), ``exp_inf`` (u) and ``step``::

        opt = mt.optim.Adamax(model_params, lr=2e-3)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(foreach=None, maximize=False, differentiable=False, capturable=False)
        self._steps_as_tensors()

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_infs, state_steps):
        return self._collect_group(
            group, params_with_grad, grads, {"exp_avg": exp_avgs, "exp_inf": exp_infs, "step": state_steps},
            lambda p: {"step": _new_step(), "exp_avg": zeros_like(p), "exp_inf": zeros_like(p)})

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_groups(closure, 3, lambda group, params, grads, exp_avgs, exp_infs, steps: adamax(
            params, grads, exp_avgs, exp_infs, steps, eps=group["eps"], beta1=group["betas"][0], beta2=group["betas"][1], lr=group["lr"],
            weight_decay=group["weight_decay"], foreach=group["foreach"], maximize=group["maximize"],
            differentiable=group["differentiable"], capturable=group["capturable"]))


def adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_infs: list[Tensor],
           state_steps: list[Tensor], foreach: bool | None = None, maximize: bool = False,
           differentiable: bool = False, capturable: bool = False, has_complex: bool = False, *, eps: float,
           beta1: float, beta2: float, lr: float | Tensor, weight_decay: float) -> None:
    """Functional Adamax: updates ``params`` and the state lists in place. See :class:`Adamax`."""
    _check_singleton_tensors(state_steps)
    func = _multi_tensor_adamax if _use_foreach(params, foreach, differentiable) else _single_tensor_adamax
    func(params, grads, exp_avgs, exp_infs, state_steps, eps=eps, beta1=beta1, beta2=beta2, lr=lr,
         weight_decay=weight_decay, maximize=maximize, differentiable=differentiable)


def _single_tensor_adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_infs: list[Tensor],
                          state_steps: list[Tensor], *, eps: float, beta1: float, beta2: float, lr: float | Tensor,
                          weight_decay: float, maximize: bool, differentiable: bool) -> None:
    lr = float(_to_scalar(lr))
    for param, grad, exp_avg, exp_inf, step_t in zip(params, grads, exp_avgs, exp_infs, state_steps):
        grad = grad if not maximize else -grad
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        bound = grad.abs().add_(eps)
        if differentiable:
            # an out= write is not recorded by autograd; a copy of the new tensor is
            exp_inf.copy_(maximum(exp_inf.mul(beta2), bound))
        else:
            maximum(exp_inf.mul_(beta2), bound, out=exp_inf)
        clr = lr / (1 - beta1 ** _get_value(step_t))
        param.addcdiv_(exp_avg, exp_inf, value=-clr)


def _multi_tensor_adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_infs: list[Tensor],
                         state_steps: list[Tensor], *, eps: float, beta1: float, beta2: float, lr: float | Tensor,
                         weight_decay: float, maximize: bool, differentiable: bool) -> None:
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if not params:
        return
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, exp_avgs, exp_infs, state_steps])
    for (d_params, d_grads, d_exp_avgs, d_exp_infs, d_steps), _ in grouped.values():
        F._foreach_add_(d_steps, 1)
        d_grads = _foreach_grads(d_params, d_grads, maximize, weight_decay)
        F._foreach_lerp_(d_exp_avgs, d_grads, 1 - beta1)
        F._foreach_mul_(d_exp_infs, beta2)
        if maximize or weight_decay != 0:
            # d_grads are temporaries made above, free to overwrite
            F._foreach_abs_(d_grads)
        else:
            d_grads = F._foreach_abs(d_grads)
        F._foreach_add_(d_grads, eps)
        F._foreach_maximum_(d_exp_infs, d_grads)
        step_size = [-lr / (1 - beta1 ** _get_value(s)) for s in d_steps]
        F._foreach_addcdiv_(d_params, d_exp_avgs, d_exp_infs, step_size)
