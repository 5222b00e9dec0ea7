"""AdamW: Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam update)."""
from ..tensor import Tensor
from .adam import Adam, adam
from .optimizer import ParamsT

__all__ = ["AdamW", "adamw"]


class AdamW(Adam):
    """AdamW, PyTorch's ``torch.optim.AdamW``: Adam whose weight decay shrinks the parameters directly instead of
    entering the moment estimates (Loshchilov & Hutter, "Decoupled Weight Decay Regularization")::

        opt = mt.optim.AdamW(model_params, lr=1e-3, weight_decay=1e-2)
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3,
                 betas: tuple[float | Tensor, float | Tensor] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def adamw(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor], exp_avg_sqs: list[Tensor],
          max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
          capturable: bool = False, differentiable: bool = False, fused: bool | None = None, has_complex: bool = False,
          grad_scale: Tensor | None = None, found_inf: Tensor | None = None, *, amsgrad: bool,
          beta1: float | Tensor, beta2: float | Tensor, lr: float | Tensor, weight_decay: float, eps: float,
          maximize: bool) -> None:
    """Functional AdamW (Adam with ``decoupled_weight_decay=True``). See :class:`AdamW`."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=foreach, capturable=capturable,
         differentiable=differentiable, fused=fused, has_complex=has_complex, decoupled_weight_decay=True,
         grad_scale=grad_scale, found_inf=found_inf,
         amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize)
