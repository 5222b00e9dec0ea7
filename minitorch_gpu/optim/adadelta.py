"""Adadelta (Zeiler 2012, "ADADELTA: An Adaptive Learning Rate Method")."""
from collections.abc import Callable
from typing import Any

from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _check_lr, _check_nonnegative, _check_singleton_tensors, _foreach_grads,
                        _new_step, _to_scalar, _use_foreach, _use_grad_for_differentiable)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """Adadelta, PyTorch's ``torch.optim.Adadelta``: ``v = rho v + (1 - rho) g^2``,
    ``dx = sqrt(u + eps) / sqrt(v + eps) * g``, ``u = rho u + (1 - rho) dx^2``, ``p -= lr * dx``;
    ``weight_decay`` adds ``weight_decay * p`` to the gradient first. State: ``square_avg`` (v), ``acc_delta`` (u)
    and ``step``::

        opt = mt.optim.Adadelta(model_params, lr=1.0, rho=0.9)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(foreach=None, maximize=False, differentiable=False, capturable=False)
        self._steps_as_tensors()

    def _init_group(self, group, params_with_grad, grads, square_avgs, acc_deltas, state_steps):
        return self._collect_group(
            group, params_with_grad, grads, {"square_avg": square_avgs, "acc_delta": acc_deltas, "step": state_steps},
            lambda p: {"step": _new_step(), "square_avg": zeros_like(p), "acc_delta": zeros_like(p)})

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_groups(closure, 3, lambda group, params, grads, square_avgs, acc_deltas, steps: adadelta(
            params, grads, square_avgs, acc_deltas, steps, lr=group["lr"], rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
            foreach=group["foreach"], maximize=group["maximize"], differentiable=group["differentiable"],
            capturable=group["capturable"]))


def adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor], acc_deltas: list[Tensor],
             state_steps: list[Tensor], capturable: bool = False, foreach: bool | None = None,
             differentiable: bool = False, has_complex: bool = False, *, lr: float | Tensor, rho: float, eps: float,
             weight_decay: float, maximize: bool) -> None:
    """Functional Adadelta: updates ``params`` and the state lists in place. See :class:`Adadelta`."""
    _check_singleton_tensors(state_steps)
    func = _multi_tensor_adadelta if _use_foreach(params, foreach, differentiable) else _single_tensor_adadelta
    func(params, grads, square_avgs, acc_deltas, state_steps, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
         maximize=maximize, differentiable=differentiable)


def _single_tensor_adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
                            acc_deltas: list[Tensor], state_steps: list[Tensor], *, lr: float | Tensor, rho: float,
                            eps: float, weight_decay: float, maximize: bool, differentiable: bool) -> None:
    lr = float(_to_scalar(lr))
    for param, grad, square_avg, acc_delta, step in zip(params, grads, square_avgs, acc_deltas, state_steps):
        step += 1
        grad = grad if not maximize else -grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_()
        if differentiable:
            # delta is read by acc_delta's update below: keep the version autograd saved intact
            delta = delta.clone()
        delta.div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-lr)


def _multi_tensor_adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
                           acc_deltas: list[Tensor], state_steps: list[Tensor], *, lr: float | Tensor, rho: float,
                           eps: float, weight_decay: float, maximize: bool, differentiable: bool) -> None:
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    if not params:
        return
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, square_avgs, acc_deltas, state_steps])
    for (d_params, d_grads, d_square_avgs, d_acc_deltas, d_steps), _ in grouped.values():
        F._foreach_add_(d_steps, 1)
        d_grads = _foreach_grads(d_params, d_grads, maximize, weight_decay)
        F._foreach_mul_(d_square_avgs, rho)
        F._foreach_addcmul_(d_square_avgs, d_grads, d_grads, 1 - rho)
        std = F._foreach_add(d_square_avgs, eps)
        F._foreach_sqrt_(std)
        deltas = F._foreach_add(d_acc_deltas, eps)
        F._foreach_sqrt_(deltas)
        F._foreach_div_(deltas, std)
        F._foreach_mul_(deltas, d_grads)
        F._foreach_mul_(d_acc_deltas, rho)
        F._foreach_addcmul_(d_acc_deltas, deltas, deltas, 1 - rho)
        F._foreach_add_(d_params, deltas, alpha=-lr)
