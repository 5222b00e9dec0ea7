"""The gradient reset that ``Module.zero_grad`` and ``Optimizer.zero_grad`` share."""
from collections.abc import Iterable

from ..tensor import Tensor


def zero_grads(tensors: Iterable[Tensor], set_to_none: bool) -> None:
    """Each tensor's ``.grad`` set to None, or zeroed in place (cut from any graph it was computed in, as
    PyTorch does, so that the zeroing is not recorded)."""
    for t in tensors:
        g = t.grad
        if g is None:
            continue
        if set_to_none:
            t.grad = None
        else:
            if g.grad_fn is not None:
                g.detach_()
            else:
                g.requires_grad_(False)
            g.zero_()
