"""Adagrad (Duchi, Hazan & Singer 2011)."""
from collections.abc import Callable
from typing import Any

from ..autograd.function import bump_version
from ..ops.creation import full_like
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _check_fused_foreach, _check_lr, _check_nonnegative,
                        _check_singleton_tensors, _device_dtype_check_for_fused, _get_value, _new_step, _resolve_impl,
                        _to_scalar, _use_grad_for_differentiable)

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    """Adagrad, PyTorch's ``torch.optim.Adagrad``: ``s += g^2``, ``p -= clr * g / (sqrt(s) + eps)`` with
    ``clr = lr / (1 + (t - 1) * lr_decay)``. The state (``sum``, starting at ``initial_accumulator_value``, and
    ``step``) exists from construction on, as in PyTorch::

        opt = mt.optim.Adagrad(model_params, lr=1e-2)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr)
        _check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _new_step()
                state["sum"] = full_like(p, initial_accumulator_value)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(foreach=None, maximize=False, differentiable=False, fused=None)
        self._steps_as_tensors()

    def _init_group(self, group, params_with_grad, grads, state_sums, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            if group["fused"]:
                _device_dtype_check_for_fused(p)
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                # a parameter added with add_param_group after construction (the default value is read from
                # the optimizer's defaults, as PyTorch does)
                state["step"] = _new_step()
                state["sum"] = full_like(p, self.defaults["initial_accumulator_value"])
            state_sums.append(state["sum"])
            state_steps.append(state["step"])
        return False, False

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_groups(closure, 2, lambda group, params, grads, state_sums, state_steps: adagrad(
            params, grads, state_sums, state_steps, lr=group["lr"], weight_decay=group["weight_decay"],
            lr_decay=group["lr_decay"], eps=group["eps"], foreach=group["foreach"], maximize=group["maximize"],
            differentiable=group["differentiable"], fused=group["fused"]))


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor], state_steps: list[Tensor],
            fused: bool | None = None, has_sparse_grad: bool = False, foreach: bool | None = None,
            differentiable: bool = False, has_complex: bool = False, *, lr: float | Tensor, weight_decay: float,
            lr_decay: float, eps: float, maximize: bool) -> None:
    """Functional Adagrad: updates ``params`` and the state lists in place. See :class:`Adagrad`."""
    _check_singleton_tensors(state_steps)
    impl = _resolve_impl(params, foreach, fused, differentiable)
    func = {"fused": _fused_adagrad, "foreach": _multi_tensor_adagrad, "single": _single_tensor_adagrad}[impl]
    func(params, grads, state_sums, state_steps, lr=lr, weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
         maximize=maximize, differentiable=differentiable)


def _single_tensor_adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
                           state_steps: list[Tensor], *, lr: float | Tensor, weight_decay: float, lr_decay: float,
                           eps: float, maximize: bool, differentiable: bool) -> None:
    lr = float(_to_scalar(lr))
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t += 1
        step = _get_value(step_t)
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt() + eps if differentiable else state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)


def _multi_tensor_adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
                          state_steps: list[Tensor], *, lr: float | Tensor, weight_decay: float, lr_decay: float,
                          eps: float, maximize: bool, differentiable: bool) -> None:
    if not params:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, state_sums, state_steps])
    for (d_params, d_grads, d_sums, d_steps), _ in grouped.values():
        if maximize:
            d_grads = F._foreach_neg(d_grads)
        F._foreach_add_(d_steps, 1)
        if weight_decay != 0:
            if maximize:
                F._foreach_add_(d_grads, d_params, alpha=weight_decay)
            else:
                d_grads = F._foreach_add(d_grads, d_params, alpha=weight_decay)
        minus_clr = [-lr / (1 + (_get_value(s) - 1) * lr_decay) for s in d_steps]
        F._foreach_addcmul_(d_sums, d_grads, d_grads, 1)
        std = F._foreach_sqrt(d_sums)
        F._foreach_add_(std, eps)
        if weight_decay != 0 or maximize:
            # d_grads are temporaries here, free to scale in place
            F._foreach_mul_(d_grads, minus_clr)
            numerator = d_grads
        else:
            numerator = F._foreach_mul(d_grads, minus_clr)
        F._foreach_addcdiv_(d_params, numerator, std)


def _fused_adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor], state_steps: list[Tensor], *,
                   lr: float | Tensor, weight_decay: float, lr_decay: float, eps: float, maximize: bool,
                   differentiable: bool) -> None:
    if not params:
        return
    if differentiable:
        raise RuntimeError("adagrad with fused=True does not support differentiable=True")
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, state_sums, state_steps])
    for (d_params, d_grads, d_sums, d_steps), _ in grouped.values():
        F._foreach_add_(d_steps, 1)
        be = d_params[0]._be
        be.fused_adagrad([p._data for p in d_params], [g._data for g in d_grads], [s._data for s in d_sums],
                         [_get_value(s) for s in d_steps], lr, lr_decay, weight_decay, eps, maximize)
        for lst in (d_params, d_sums):
            for t in lst:
                bump_version(t)
