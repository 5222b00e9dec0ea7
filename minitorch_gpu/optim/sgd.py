"""Stochastic gradient descent, optionally with momentum, dampening, Nesterov momentum and weight decay."""
from collections.abc import Callable
from typing import Any

from ..autograd.function import bump_version
from ..ops.creation import empty_like
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _amp_unscale_or_skip, _check_fused_foreach, _device_dtype_check_for_fused, _resolve_impl,
                        _to_scalar, _use_grad_for_differentiable)

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), PyTorch's ``torch.optim.SGD``.

    With momentum ``mu`` the update is ``b = mu * b + (1 - dampening) * g`` (``b = g`` on the first step),
    ``g = g + mu * b`` if ``nesterov`` else ``g = b``, then ``p -= lr * g``; ``weight_decay`` adds
    ``weight_decay * p`` to the gradient first::

        opt = mt.optim.SGD(params, lr=0.1, momentum=0.9)
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        # `lr < 0.0` here rather than _check_lr and _check_nonnegative: PyTorch's SGD lets a NaN through
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)
        if fused:
            # GradScaler hands a fused step its scale and overflow flag instead of unscaling first
            self._step_supports_amp_scaling = True

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(nesterov=False, maximize=False, foreach=None, differentiable=False, fused=False)

    def _init_group(self, group, params, grads, momentum_buffer_list):
        for p in group["params"]:
            if p.grad is None:
                continue
            if group["fused"]:
                _device_dtype_check_for_fused(p)
            params.append(p)
            grads.append(p.grad)
            if group["momentum"] != 0:
                momentum_buffer_list.append(self.state[p].get("momentum_buffer"))
        return False

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            params: list[Tensor] = []
            grads: list[Tensor] = []
            momentum_buffer_list: list[Tensor | None] = []
            self._init_group(group, params, grads, momentum_buffer_list)
            sgd(params, grads, momentum_buffer_list, weight_decay=group["weight_decay"], momentum=group["momentum"],
                lr=group["lr"], dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"],
                foreach=group["foreach"], fused=group["fused"], differentiable=group["differentiable"],
                grad_scale=getattr(self, "grad_scale", None), found_inf=getattr(self, "found_inf", None))
            if group["momentum"] != 0:
                for p, buf in zip(params, momentum_buffer_list):
                    self.state[p]["momentum_buffer"] = buf
        return loss


def sgd(params: list[Tensor], d_p_list: list[Tensor], momentum_buffer_list: list[Tensor | None],
        has_sparse_grad: bool = False, foreach: bool | None = None, fused: bool | None = None,
        differentiable: bool = False, grad_scale: Tensor | None = None, found_inf: Tensor | None = None, *,
        weight_decay: float, momentum: float, lr: float | Tensor, dampening: float, nesterov: bool,
        maximize: bool) -> None:
    """Functional SGD: updates ``params`` in place and fills new momentum buffers into ``momentum_buffer_list``.
    See :class:`SGD`."""
    impl = _resolve_impl(params, foreach, fused, differentiable)
    if grad_scale is not None or found_inf is not None:
        if impl != "fused":
            raise RuntimeError("grad_scale and found_inf are only supported by the fused implementation")
        if _amp_unscale_or_skip(d_p_list, grad_scale, found_inf):
            return
    func = {"fused": _fused_sgd, "foreach": _multi_tensor_sgd, "single": _single_tensor_sgd}[impl]
    func(params, d_p_list, momentum_buffer_list, weight_decay=weight_decay, momentum=momentum, lr=lr,
         dampening=dampening, nesterov=nesterov, maximize=maximize)


def _single_tensor_sgd(params: list[Tensor], grads: list[Tensor], momentum_buffer_list: list[Tensor | None], *,
                       weight_decay: float, momentum: float, lr: float | Tensor, dampening: float, nesterov: bool,
                       maximize: bool) -> None:
    lr = float(_to_scalar(lr))
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = grad.detach().clone()
                momentum_buffer_list[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            if nesterov:
                grad = grad.add(buf, alpha=momentum)
            else:
                grad = buf
        param.add_(grad, alpha=-lr)


def _multi_tensor_sgd(params: list[Tensor], grads: list[Tensor], momentum_buffer_list: list[Tensor | None], *,
                      weight_decay: float, momentum: float, lr: float | Tensor, dampening: float, nesterov: bool,
                      maximize: bool) -> None:
    if not params:
        return
    lr = float(_to_scalar(lr))
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, momentum_buffer_list], with_indices=True)
    for (device_params, device_grads, device_bufs), indices in grouped.values():
        if maximize:
            device_grads = F._foreach_neg(device_grads)
        if weight_decay != 0:
            if maximize:
                F._foreach_add_(device_grads, device_params, alpha=weight_decay)
            else:
                device_grads = F._foreach_add(device_grads, device_params, alpha=weight_decay)
        if momentum != 0:
            if all(b is not None for b in device_bufs):
                bufs = list(device_bufs)
                F._foreach_mul_(bufs, momentum)
                F._foreach_add_(bufs, device_grads, alpha=1 - dampening)
            else:
                bufs = []
                for j, b in enumerate(device_bufs):
                    if b is None:
                        b = device_grads[j].detach().clone()
                        momentum_buffer_list[indices[j]] = b
                    else:
                        b.mul_(momentum).add_(device_grads[j], alpha=1 - dampening)
                    bufs.append(b)
            if nesterov:
                if not maximize and weight_decay == 0:
                    # these are the parameters' own .grad tensors: leave them as backward made them
                    device_grads = F._foreach_clone(device_grads)
                F._foreach_add_(device_grads, bufs, alpha=momentum)
            else:
                device_grads = bufs
        F._foreach_add_(device_params, device_grads, alpha=-lr)


def _fused_sgd(params: list[Tensor], grads: list[Tensor], momentum_buffer_list: list[Tensor | None], *,
               weight_decay: float, momentum: float, lr: float | Tensor, dampening: float, nesterov: bool,
               maximize: bool) -> None:
    if not params:
        return
    lr = float(_to_scalar(lr))
    use_mom = momentum != 0
    first = [False] * len(params)
    if use_mom:
        for i, b in enumerate(momentum_buffer_list):
            if b is None:
                momentum_buffer_list[i] = empty_like(grads[i])
                first[i] = True
    grouped = Optimizer._group_tensors_by_device_and_dtype([params, grads, momentum_buffer_list], with_indices=True)
    for (device_params, device_grads, device_bufs), indices in grouped.values():
        be = device_params[0]._be
        be.fused_sgd([p._data for p in device_params], [g._data for g in device_grads],
                     [b._data for b in device_bufs] if use_mom else [], [first[i] for i in indices], lr, weight_decay,
                     momentum, dampening, nesterov, maximize)
        for p in device_params:
            bump_version(p)
        if use_mom:
            for b in device_bufs:
                bump_version(b)
