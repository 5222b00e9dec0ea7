"""AdamW: Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam update)."""
from .adam import Adam, adam

__all__ = ["AdamW", "adamw"]


class AdamW(Adam):
    """AdamW, PyTorch's ``torch.optim.AdamW``: Adam whose weight decay shrinks the parameters directly instead of
    entering the moment estimates (Loshchilov & Hutter, "Decoupled Weight Decay Regularization")::

        opt = mt.optim.AdamW(model_params, lr=1e-3, weight_decay=1e-2)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
          differentiable=False, fused=None, has_complex=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps,
          maximize):
    """Functional AdamW (Adam with ``decoupled_weight_decay=True``). See :class:`AdamW`."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=foreach, capturable=capturable,
         differentiable=differentiable, fused=fused, has_complex=has_complex, decoupled_weight_decay=True,
         amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=maximize)
