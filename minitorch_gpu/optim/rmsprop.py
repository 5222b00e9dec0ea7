"""RMSprop (Hinton's lecture notes; the centered variant of Graves 2013)."""
from collections.abc import Callable
from typing import Any

from ..autograd.function import bump_version
from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _check_fused_foreach, _check_lr, _check_nonnegative,
                        _check_singleton_tensors, _device_dtype_check_for_fused, _new_step, _resolve_impl, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    """RMSprop, PyTorch's ``torch.optim.RMSprop``: ``v = alpha v + (1 - alpha) g^2``,
    ``p -= lr * g / (sqrt(v) + eps)``; ``centered`` subtracts the square of the running mean gradient from
    ``v`` first; ``momentum`` accumulates ``g / (sqrt(v) + eps)`` into a buffer that is applied instead.

    ``fused`` (an addition to PyTorch's arguments) selects the fused primitive; left as None with ``foreach``,
    the fused one runs::

        opt = mt.optim.RMSprop(model_params, lr=1e-2, alpha=0.99)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False, *,
                 fused: bool | None = None) -> None:
        _check_lr(lr)
        _check_nonnegative(eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                               capturable=False, fused=None)
        self._steps_as_tensors()

    def _init_group(self, group, params_with_grad, grads, square_avgs, momentum_buffer_list, grad_avgs, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                if group["fused"]:
                    _device_dtype_check_for_fused(p)
                state["step"] = _new_step()
                state["square_avg"] = zeros_like(p)
                if group["momentum"] > 0:
                    state["momentum_buffer"] = zeros_like(p)
                if group["centered"]:
                    state["grad_avg"] = zeros_like(p)
            square_avgs.append(state["square_avg"])
            state_steps.append(state["step"])
            if group["momentum"] > 0:
                momentum_buffer_list.append(state["momentum_buffer"])
            if group["centered"]:
                grad_avgs.append(state["grad_avg"])
        return False

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        # (_init_group's list order; rmsprop takes grad_avgs before the momentum buffers)
        return self._step_groups(closure, 4, lambda group, params, grads, square_avgs, bufs, grad_avgs, steps: rmsprop(
            params, grads, square_avgs, grad_avgs, bufs, steps, lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
            weight_decay=group["weight_decay"], momentum=group["momentum"], centered=group["centered"],
            foreach=group["foreach"], maximize=group["maximize"], differentiable=group["differentiable"],
            capturable=group["capturable"], fused=group["fused"]))


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor], grad_avgs: list[Tensor],
            momentum_buffer_list: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
            maximize: bool = False, differentiable: bool = False, capturable: bool = False, has_complex: bool = False,
            fused: bool | None = None, *, lr: float | Tensor, alpha: float, eps: float, weight_decay: float,
            momentum: float, centered: bool) -> None:
    """Functional RMSprop: updates ``params`` and the state lists in place. See :class:`RMSprop`."""
    _check_singleton_tensors(state_steps)
    impl = _resolve_impl(params, foreach, fused, differentiable)
    func = {"fused": _fused_rmsprop, "foreach": _multi_tensor_rmsprop, "single": _single_tensor_rmsprop}[impl]
    func(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, lr=lr, alpha=alpha, eps=eps,
         weight_decay=weight_decay, momentum=momentum, centered=centered, maximize=maximize,
         differentiable=differentiable)


def _single_tensor_rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
                           grad_avgs: list[Tensor], momentum_buffer_list: list[Tensor],
                           state_steps: list[Tensor], *, lr: float | Tensor, alpha: float, eps: float,
                           weight_decay: float, momentum: float, centered: bool, maximize: bool,
                           differentiable: bool) -> None:
    lr = float(_to_scalar(lr))
    for i, param in enumerate(params):
        step = state_steps[i]
        grad = grads[i]
        grad = grad if not maximize else -grad
        square_avg = square_avgs[i]
        step += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add(eps) if differentiable else avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffer_list[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)


def _multi_tensor_rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor], grad_avgs: list[Tensor],
                          momentum_buffer_list: list[Tensor], state_steps: list[Tensor], *, lr: float | Tensor,
                          alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool,
                          maximize: bool, differentiable: bool) -> None:
    if not params:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype(
        [params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps])
    for (g_params, g_grads, g_square_avgs, g_grad_avgs, g_bufs, g_steps), _ in grouped.values():
        if maximize:
            g_grads = F._foreach_neg(g_grads)
        F._foreach_add_(g_steps, 1)
        if weight_decay != 0:
            if maximize:
                F._foreach_add_(g_grads, g_params, alpha=weight_decay)
            else:
                g_grads = F._foreach_add(g_grads, g_params, alpha=weight_decay)
        F._foreach_mul_(g_square_avgs, alpha)
        F._foreach_addcmul_(g_square_avgs, g_grads, g_grads, 1 - alpha)
        if centered:
            F._foreach_lerp_(g_grad_avgs, g_grads, 1 - alpha)
            avg = F._foreach_addcmul(g_square_avgs, g_grad_avgs, g_grad_avgs, -1)
            F._foreach_sqrt_(avg)
            F._foreach_add_(avg, eps)
        else:
            avg = F._foreach_sqrt(g_square_avgs)
            F._foreach_add_(avg, eps)
        if momentum > 0:
            F._foreach_mul_(g_bufs, momentum)
            F._foreach_addcdiv_(g_bufs, g_grads, avg)
            F._foreach_add_(g_params, g_bufs, alpha=-lr)
        else:
            F._foreach_addcdiv_(g_params, g_grads, avg, -lr)


def _fused_rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor], grad_avgs: list[Tensor],
                   momentum_buffer_list: list[Tensor], state_steps: list[Tensor], *, lr: float | Tensor,
                   alpha: float, eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool,
                   differentiable: bool) -> None:
    if not params:
        return
    if differentiable:
        raise RuntimeError("RMSprop with fused=True does not support differentiable=True")
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype(
        [params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps])
    for (g_params, g_grads, g_square_avgs, g_grad_avgs, g_bufs, g_steps), _ in grouped.values():
        F._foreach_add_(g_steps, 1)
        be = g_params[0]._be
        be.fused_rmsprop([p._data for p in g_params], [g._data for g in g_grads], [s._data for s in g_square_avgs],
                         [a._data for a in g_grad_avgs] if centered else [],
                         [b._data for b in g_bufs] if momentum > 0 else [], lr, alpha, eps, weight_decay, momentum,
                         centered, maximize)
        written = [g_params, g_square_avgs] + ([g_grad_avgs] if centered else []) + ([g_bufs] if momentum > 0 else [])
        for lst in written:
            for t in lst:
                bump_version(t)
