"""Averaged stochastic gradient descent (Polyak & Juditsky 1992, "Acceleration of Stochastic Approximation by
Averaging"), with the step-size schedule of Bottou's sgd code."""
from collections.abc import Callable
from typing import Any

from ..ops.creation import ones, tensor, zeros_like
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _check_lr, _check_nonnegative, _foreach_grads, _get_scalar_dtype,
                        _get_value, _new_step, _to_scalar, _use_foreach, _use_grad_for_differentiable)

__all__ = ["ASGD", "asgd"]


def _schedule(lr, lambd, alpha, t0, step):
    """``(eta, mu)`` for the step after ``step``: the decaying step size and the averaging weight."""
    return lr / ((1 + lambd * lr * step) ** alpha), 1 / max(1, step - t0)


def _update_schedule(eta, mu, lr, lambd, alpha, t0, step_t):
    new_eta, new_mu = _schedule(lr, lambd, alpha, t0, _get_value(step_t))
    # NOTE: through a tensor of the default dtype, as PyTorch does: after load_state_dict has cast eta and mu to
    # float64 parameters' dtype they still receive float32-rounded values, and the trajectories stay equal
    eta.copy_(tensor(new_eta))
    mu.copy_(tensor(new_mu))


class ASGD(Optimizer):
    """ASGD, PyTorch's ``torch.optim.ASGD``: ``p *= 1 - lambd * eta``, ``p -= eta * g``, then the running average
    ``ax += mu * (p - ax)``; afterwards ``eta = lr / (1 + lambd * lr * t)^alpha`` and
    ``mu = 1 / max(1, t - t0)``, so averaging starts after ``t0`` steps. ``weight_decay`` adds
    ``weight_decay * p`` to the gradient first. State: ``ax`` (the averaged parameters), ``eta``, ``mu`` (0-d
    tensors on the host) and ``step``::

        opt = mt.optim.ASGD(model_params, lr=1e-2, t0=100)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(foreach=None, maximize=False, differentiable=False, capturable=False)
        self._steps_as_tensors(("step", "eta", "mu"))

    def _init_group(self, group, params_with_grad, grads, mus, axs, etas, state_steps):
        # eta and mu are read as numbers every step: host scalars, like the step, never wait for a GPU
        return self._collect_group(
            group, params_with_grad, grads, {"mu": mus, "ax": axs, "eta": etas, "step": state_steps},
            lambda p: {"step": _new_step(), "eta": tensor(float(_to_scalar(group["lr"])), dtype=_get_scalar_dtype()),
                       "mu": ones((), dtype=_get_scalar_dtype()), "ax": zeros_like(p)})

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        # _init_group gathers (mus, axs, etas, steps), PyTorch's order; the functional form takes axs first
        return self._step_groups(closure, 4, lambda group, params, grads, mus, axs, etas, steps: asgd(
            params, grads, axs, mus, etas, steps, lambd=group["lambd"], lr=group["lr"], t0=group["t0"],
            alpha=group["alpha"], weight_decay=group["weight_decay"], foreach=group["foreach"],
            maximize=group["maximize"], differentiable=group["differentiable"], capturable=group["capturable"]))


def asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor], etas: list[Tensor],
         state_steps: list[Tensor], foreach: bool | None = None, maximize: bool = False, differentiable: bool = False,
         capturable: bool = False, has_complex: bool = False, *, lambd: float, lr: float | Tensor, t0: float,
         alpha: float, weight_decay: float) -> None:
    """Functional ASGD: updates ``params`` and the state lists (``etas`` and ``mus`` included) in place. See
    :class:`ASGD`."""
    func = _multi_tensor_asgd if _use_foreach(params, foreach, differentiable) else _single_tensor_asgd
    func(params, grads, axs, mus, etas, state_steps, lambd=lambd, lr=lr, t0=t0, alpha=alpha,
         weight_decay=weight_decay, maximize=maximize, differentiable=differentiable)


def _single_tensor_asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor],
                        etas: list[Tensor], state_steps: list[Tensor], *, lambd: float, lr: float | Tensor, t0: float,
                        alpha: float, weight_decay: float, maximize: bool, differentiable: bool) -> None:
    lr = float(_to_scalar(lr))
    for param, grad, ax, mu, eta, step_t in zip(params, grads, axs, mus, etas, state_steps):
        grad = grad if not maximize else -grad
        step_t += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        eta_value = _get_value(eta)
        param.mul_(1 - lambd * eta_value)
        param.add_(grad, alpha=-eta_value)
        mu_value = _get_value(mu)
        if mu_value != 1:
            ax.add_(param.sub(ax).mul_(mu_value))
        else:
            ax.copy_(param)
        _update_schedule(eta, mu, lr, lambd, alpha, t0, step_t)


def _multi_tensor_asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor],
                       etas: list[Tensor], state_steps: list[Tensor], *, lambd: float, lr: float | Tensor, t0: float,
                       alpha: float, weight_decay: float, maximize: bool, differentiable: bool) -> None:
    if not params:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, axs, mus, etas, state_steps])
    for (d_params, d_grads, d_axs, d_mus, d_etas, d_steps), _ in grouped.values():
        F._foreach_add_(d_steps, 1)
        d_grads = _foreach_grads(d_params, d_grads, maximize, weight_decay)
        # p - eta * (g + lambd * p): the decay and the gradient step as one update
        if maximize or weight_decay != 0:
            F._foreach_add_(d_grads, d_params, alpha=lambd)
            update = d_grads
        else:
            update = F._foreach_add(d_grads, d_params, alpha=lambd)
        F._foreach_mul_(update, [-_get_value(e) for e in d_etas])
        F._foreach_add_(d_params, update)
        del update
        diff = F._foreach_sub(d_params, d_axs)
        F._foreach_mul_(diff, [_get_value(m) for m in d_mus])
        F._foreach_add_(d_axs, diff)
        for eta, mu, step_t in zip(d_etas, d_mus, d_steps):
            _update_schedule(eta, mu, lr, lambd, alpha, t0, step_t)
