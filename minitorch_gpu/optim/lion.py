"""Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"): the sign of an interpolated
momentum, with decoupled weight decay. Not part of torch.optim; the arguments follow its conventions."""
from collections.abc import Callable
from typing import Any

from ..autograd.function import bump_version
from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _check_betas, _check_fused_foreach, _check_lr, _check_nonnegative,
                        _device_dtype_check_for_fused, _resolve_impl, _to_scalar, _use_grad_for_differentiable)

__all__ = ["Lion", "lion"]


class Lion(Optimizer):
    """Lion: ``c = b1 m + (1 - b1) g``; ``p *= 1 - lr * weight_decay``; ``p -= lr * sign(c)``;
    ``m = b2 m + (1 - b2) g``. Its updates have unit size per element, so it wants a learning rate 3-10x
    smaller than AdamW's and a weight decay 3-10x larger::

        opt = mt.optim.Lion(model_params, lr=1e-4, betas=(0.9, 0.99), weight_decay=1e-1)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-4,
                 betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.99), weight_decay: float = 0, *,
                 maximize: bool = False, foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        _check_lr(lr)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)

    def _init_group(self, group, params_with_grad, grads, exp_avgs):
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                if group["fused"]:
                    _device_dtype_check_for_fused(p)
                state["exp_avg"] = zeros_like(p)
            exp_avgs.append(state["exp_avg"])

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        def update(group, params_with_grad, grads, exp_avgs):
            beta1, beta2 = group["betas"]
            lion(params_with_grad, grads, exp_avgs, lr=group["lr"], beta1=beta1, beta2=beta2,
                 weight_decay=group["weight_decay"], maximize=group["maximize"], foreach=group["foreach"],
                 differentiable=group["differentiable"], fused=group["fused"])

        return self._step_groups(closure, 1, update)


def lion(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], foreach: bool | None = None,
         differentiable: bool = False, fused: bool | None = None, *, lr: float | Tensor, beta1: float | Tensor,
         beta2: float | Tensor, weight_decay: float, maximize: bool) -> None:
    """Functional Lion: updates ``params`` and ``exp_avgs`` in place. See :class:`Lion`."""
    impl = _resolve_impl(params, foreach, fused, differentiable)
    func = {"fused": _fused_lion, "foreach": _multi_tensor_lion, "single": _single_tensor_lion}[impl]
    func(params, grads, exp_avgs, lr=float(_to_scalar(lr)), beta1=float(beta1), beta2=float(beta2),
         weight_decay=weight_decay, maximize=maximize)


def _single_tensor_lion(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], *, lr: float | Tensor,
                        beta1: float | Tensor, beta2: float | Tensor, weight_decay: float, maximize: bool) -> None:
    for param, grad, exp_avg in zip(params, grads, exp_avgs):
        grad = grad if not maximize else -grad
        update = exp_avg.mul(beta1).add_(grad, alpha=1 - beta1).sign_()
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        param.add_(update, alpha=-lr)
        exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)


def _multi_tensor_lion(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], *, lr: float | Tensor,
                       beta1: float | Tensor, beta2: float | Tensor, weight_decay: float, maximize: bool) -> None:
    if not params:
        return
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, exp_avgs])
    for (d_params, d_grads, d_exp_avgs), _ in grouped.values():
        if maximize:
            d_grads = F._foreach_neg(d_grads)
        updates = F._foreach_mul(d_exp_avgs, beta1)
        F._foreach_add_(updates, d_grads, alpha=1 - beta1)
        updates = F._foreach_sign(updates)
        if weight_decay != 0:
            F._foreach_mul_(d_params, 1 - lr * weight_decay)
        F._foreach_add_(d_params, updates, alpha=-lr)
        F._foreach_mul_(d_exp_avgs, beta2)
        F._foreach_add_(d_exp_avgs, d_grads, alpha=1 - beta2)


def _fused_lion(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], *, lr: float | Tensor,
                beta1: float | Tensor, beta2: float | Tensor, weight_decay: float, maximize: bool) -> None:
    if not params:
        return
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, exp_avgs])
    for (d_params, d_grads, d_exp_avgs), _ in grouped.values():
        be = d_params[0]._be
        be.fused_lion([p._data for p in d_params], [g._data for g in d_grads], [m._data for m in d_exp_avgs], lr,
                      beta1, beta2, weight_decay, maximize)
        for lst in (d_params, d_exp_avgs):
            for t in lst:
                bump_version(t)
