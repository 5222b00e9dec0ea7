"""Adam (and, with ``decoupled_weight_decay=True``, AdamW)."""
from collections.abc import Callable
from typing import Any

from ..autograd.function import bump_version
from ..ops.creation import zeros_like
from ..ops.elementwise import maximum
from ..tensor import Tensor
from . import _foreach as F
from .optimizer import (Optimizer, ParamsT, _amp_unscale_or_skip, _check_betas, _check_fused_foreach, _check_lr,
                        _check_nonnegative, _check_singleton_tensors, _device_dtype_check_for_fused, _get_value,
                        _new_step, _resolve_impl, _to_scalar, _use_grad_for_differentiable)

__all__ = ["Adam", "adam"]

# PyTorch's capturable devices that exist here
_CAPTURABLE_DEVICES = ("cuda",)


def _check_adam_args(lr, betas, eps, weight_decay, foreach, capturable):
    if isinstance(lr, Tensor) and foreach and not capturable:
        raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
    _check_lr(lr)
    _check_nonnegative(eps=eps)
    _check_betas(betas)
    _check_nonnegative(weight_decay=weight_decay)
    if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
        raise ValueError("betas must be either both floats or both Tensors")
    for k in (0, 1):
        if isinstance(betas[k], Tensor):
            if not capturable and foreach:
                raise ValueError(f"betas[{k}] as a Tensor is not supported for capturable=False and foreach=True")
            if betas[k].numel() != 1:
                raise ValueError(f"Tensor betas[{k}] must be 1-element")


class Adam(Optimizer):
    """Adam, PyTorch's ``torch.optim.Adam``: ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``; ``weight_decay`` is an L2 penalty added to
    the gradient unless ``decoupled_weight_decay`` (then ``p *= 1 - lr * weight_decay``, i.e. AdamW).
    ``amsgrad`` uses the running maximum of ``v``.

    ``foreach``/``fused`` pick the implementation (at most one may be True); left as None, the fused one runs.
    ``capturable=True`` (CUDA parameters only, as in PyTorch) keeps each step counter on the parameter's device
    and computes the bias corrections there, so that a step captured in a CUDA graph counts on at every replay;
    ``lr`` may then be a device Tensor that a scheduler updates in place. It runs the foreach (or, with
    ``foreach=False``, the single-tensor) implementation: the fused kernel takes its step counts from the host.
    Without it, step counters live on the host, so reading them never synchronises a GPU::

        opt = mt.optim.Adam(model_params, lr=1e-3, betas=(0.9, 0.999))
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3,
                 betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay, foreach, capturable)
        betas = tuple(map(_to_scalar, betas))
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)
        if fused:
            # GradScaler hands a fused step its scale and overflow flag instead of unscaling first
            self._step_supports_amp_scaling = True

    def __setstate__(self, state):
        super().__setstate__(state)
        self._group_setdefault(amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                               decoupled_weight_decay=False, fused=None)
        self._steps_as_tensors()

    def _init_group(self, group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps):
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                if group["fused"]:
                    _device_dtype_check_for_fused(p)
                state["step"] = _new_step(p.device if group["capturable"] else None)
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = zeros_like(p)
            elif group["capturable"] and state["step"].device != p.device:
                # a loaded checkpoint keeps its counters on the host
                state["step"] = state["step"].to(p.device)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if group["amsgrad"]:
                max_exp_avg_sqs.append(state["max_exp_avg_sq"])
            if group["foreach"] and isinstance(group["lr"], Tensor) and not group["capturable"]:
                raise RuntimeError("lr as a Tensor is not supported for capturable=False and foreach=True")
            state_steps.append(state["step"])
        return False

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        def update(group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps):
            beta1, beta2 = group["betas"]
            adam(params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
                 amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                 weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                 foreach=group["foreach"], capturable=group["capturable"], differentiable=group["differentiable"],
                 fused=group["fused"], decoupled_weight_decay=group["decoupled_weight_decay"],
                 grad_scale=getattr(self, "grad_scale", None), found_inf=getattr(self, "found_inf", None))

        return self._step_groups(closure, 4, update)


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
         max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
         capturable: bool = False, differentiable: bool = False, fused: bool | None = None, has_complex: bool = False,
         decoupled_weight_decay: bool = False, grad_scale: Tensor | None = None, found_inf: Tensor | None = None, *,
         amsgrad: bool, beta1: float | Tensor, beta2: float | Tensor, lr: float | Tensor, weight_decay: float,
         eps: float, maximize: bool) -> None:
    """Functional Adam/AdamW: updates ``params`` and the state lists in place. See :class:`Adam`."""
    _check_singleton_tensors(state_steps)
    if fused is None and foreach is None and isinstance(lr, Tensor) and not capturable:
        foreach = False
    impl = _resolve_impl(params, foreach, fused, differentiable)
    if capturable and impl == "fused":
        impl = "foreach"  # the fused kernel reads its step counts on the host
    if grad_scale is not None or found_inf is not None:
        if impl != "fused":
            raise RuntimeError("grad_scale and found_inf are only supported by the fused implementation")
        if _amp_unscale_or_skip(grads, grad_scale, found_inf):
            return
    func = {"fused": _fused_adam, "foreach": _multi_tensor_adam, "single": _single_tensor_adam}[impl]
    func(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, amsgrad=amsgrad, beta1=beta1,
         beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize, differentiable=differentiable,
         decoupled_weight_decay=decoupled_weight_decay, capturable=capturable)


def _scalars(lr, beta1, beta2, capturable=False):
    if capturable and isinstance(lr, Tensor):
        # a device learning rate stays on the device: reading it would synchronise
        return _to_scalar(lr), float(_to_scalar(beta1)), float(_to_scalar(beta2))
    return float(_to_scalar(lr)), float(_to_scalar(beta1)), float(_to_scalar(beta2))


def _check_capturable(params, state_steps):
    for p, s in zip(params, state_steps):
        if not (p.device.type == s.device.type and p.device.type in _CAPTURABLE_DEVICES):
            raise AssertionError(f"If capturable=True, params and state_steps must be on supported devices: "
                                 f"{list(_CAPTURABLE_DEVICES)}.")


def _device_step_size(step, lr, beta1, beta2, eps):
    """For ``capturable``: (divisor, eps term) as device tensors such that ``p += m / (sqrt(v) / divisor +
    eps term)`` is Adam's ``p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)`` (the step size is folded into the
    denominator because addcdiv takes a number, not a tensor, as its value)."""
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size_neg = (lr / bias_correction1).neg()
    return bias_correction2.sqrt() * step_size_neg, eps / step_size_neg


def _single_tensor_adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
                        max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], *, amsgrad: bool,
                        beta1: float | Tensor, beta2: float | Tensor, lr: float | Tensor, weight_decay: float,
                        eps: float, maximize: bool, differentiable: bool, decoupled_weight_decay: bool,
                        capturable: bool = False) -> None:
    lr, beta1, beta2 = _scalars(lr, beta1, beta2, capturable)
    if capturable:
        _check_capturable(params, state_steps)
    for i, param in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg = exp_avgs[i]
        exp_avg_sq = exp_avg_sqs[i]
        step_t = state_steps[i]
        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)

        if capturable:
            if amsgrad:
                maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
            divisor, eps_term = _device_step_size(step_t, lr, beta1, beta2, eps)
            denom = ((max_exp_avg_sqs[i] if amsgrad else exp_avg_sq).sqrt() / divisor).add_(eps_term)
            param.addcdiv_(exp_avg.clone() if differentiable else exp_avg, denom)
            continue
        step = _get_value(step_t)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if amsgrad:
            if differentiable:
                max_exp_avg_sqs[i].copy_(maximum(max_exp_avg_sqs[i].clone(), exp_avg_sq))
            else:
                maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg.clone() if differentiable else exp_avg, denom, value=-step_size)


def _multi_tensor_adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
                       max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], *, amsgrad: bool,
                       beta1: float | Tensor, beta2: float | Tensor, lr: float | Tensor, weight_decay: float,
                       eps: float, maximize: bool, differentiable: bool, decoupled_weight_decay: bool,
                       capturable: bool = False) -> None:
    if not params:
        return
    if differentiable:
        raise AssertionError("_foreach ops don't support autograd")
    lr, beta1, beta2 = _scalars(lr, beta1, beta2, capturable)
    if capturable:
        _check_capturable(params, state_steps)
    grouped = Optimizer._group_tensors_by_device_and_dtype(
        [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps])
    for (d_params, d_grads, d_exp_avgs, d_exp_avg_sqs, d_max_sqs, d_steps), _ in grouped.values():
        if maximize:
            d_grads = F._foreach_neg(d_grads)
        F._foreach_add_(d_steps, 1)
        if weight_decay != 0:
            if decoupled_weight_decay and isinstance(lr, Tensor):
                F._foreach_mul_(d_params, [1 - lr * weight_decay] * len(d_params))
            elif decoupled_weight_decay:
                F._foreach_mul_(d_params, 1 - lr * weight_decay)
            elif maximize:
                F._foreach_add_(d_grads, d_params, alpha=weight_decay)
            else:
                d_grads = F._foreach_add(d_grads, d_params, alpha=weight_decay)
        F._foreach_lerp_(d_exp_avgs, d_grads, 1 - beta1)
        F._foreach_mul_(d_exp_avg_sqs, beta2)
        F._foreach_addcmul_(d_exp_avg_sqs, d_grads, d_grads, 1 - beta2)
        del d_grads

        if capturable:
            if amsgrad:
                F._foreach_maximum_(d_max_sqs, d_exp_avg_sqs)
            denoms = F._foreach_sqrt(d_max_sqs if amsgrad else d_exp_avg_sqs)
            for denom, s in zip(denoms, d_steps):
                divisor, eps_term = _device_step_size(s, lr, beta1, beta2, eps)
                denom.div_(divisor).add_(eps_term)
            F._foreach_addcdiv_(d_params, d_exp_avgs, denoms)
            continue
        steps = [_get_value(s) for s in d_steps]
        bias_correction1 = [1 - beta1 ** s for s in steps]
        bias_correction2 = [1 - beta2 ** s for s in steps]
        step_size = [(lr / bc) * -1 for bc in bias_correction1]
        bias_correction2_sqrt = [bc ** 0.5 for bc in bias_correction2]
        if amsgrad:
            F._foreach_maximum_(d_max_sqs, d_exp_avg_sqs)
            exp_avg_sq_sqrt = F._foreach_sqrt(d_max_sqs)
        else:
            exp_avg_sq_sqrt = F._foreach_sqrt(d_exp_avg_sqs)
        F._foreach_div_(exp_avg_sq_sqrt, bias_correction2_sqrt)
        F._foreach_add_(exp_avg_sq_sqrt, eps)
        F._foreach_addcdiv_(d_params, d_exp_avgs, exp_avg_sq_sqrt, step_size)


def _fused_adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
                max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], *, amsgrad: bool, beta1: float | Tensor,
                beta2: float | Tensor, lr: float | Tensor, weight_decay: float, eps: float, maximize: bool,
                differentiable: bool, decoupled_weight_decay: bool, capturable: bool = False) -> None:
    if not params:
        return
    if differentiable:
        raise RuntimeError("Adam with fused=True does not support differentiable=True")
    lr, beta1, beta2 = _scalars(lr, beta1, beta2)
    grouped = Optimizer._group_tensors_by_device_and_dtype(
        [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps])
    for (d_params, d_grads, d_exp_avgs, d_exp_avg_sqs, d_max_sqs, d_steps), _ in grouped.values():
        F._foreach_add_(d_steps, 1)
        be = d_params[0]._be
        written = [d_params, d_exp_avgs, d_exp_avg_sqs] + ([d_max_sqs] if amsgrad else [])
        be.fused_adam([p._data for p in d_params], [g._data for g in d_grads], [m._data for m in d_exp_avgs],
                      [v._data for v in d_exp_avg_sqs], [v._data for v in d_max_sqs] if amsgrad else [],
                      [_get_value(s) for s in d_steps], lr, beta1, beta2, eps, weight_decay, amsgrad, maximize,
                      decoupled_weight_decay)
        for lst in written:
            for t in lst:
                bump_version(t)
