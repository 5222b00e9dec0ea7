"""``F.ctc_loss``: connectionist temporal classification. The per-sequence loss is one op whose forward and
backward are the backend's alpha and beta recursions (``backends/_ctc.py``); the reduction is Tensor ops.

Like PyTorch's, the gradient is not differentiable again (PyTorch has no derivative for ``_ctc_loss_backward``
either).
"""
from ... import _dtype
from ...autograd.node import Op
from ...ops._util import check_tensor
from ...tensor import Tensor
from .loss import _get_reduction
from ...ops._autocast import autocast_op

__all__ = ["ctc_loss"]

_I64 = _dtype.int64.np_dtype


class CtcLossBackward0(Op):
    """The negative log-likelihood of each target sequence under (T, B, C) log-probabilities."""

    def forward(self, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
        be = log_probs._be
        self.lengths = (input_lengths, target_lengths)
        self.zero_infinity = zero_infinity
        self.save_for_backward(log_probs)
        nll, self.state = be.ctc_loss_forward(log_probs._data, targets, input_lengths, target_lengths, blank)
        if zero_infinity:
            nll = be.where(be.unary("isinf", nll), 0.0, nll)
        return nll

    def backward(self, g):
        log_probs, = self.saved_tensors
        be = log_probs._be
        grad = be.ctc_loss_backward(g._data, log_probs._data, *self.lengths, self.zero_infinity, self.state)
        return (Tensor._make(grad, be),)


def _lengths(v, name, batch):
    """Per-sequence lengths (a tensor, or a sequence of ints, or one int when unbatched) as a list of ints."""
    if isinstance(v, Tensor):
        v = v.tolist()
    if isinstance(v, int):
        v = [v]
    v = [int(x) for x in v]
    if len(v) != batch:
        raise RuntimeError(f"{name} must be of size batch_size")
    return v


@autocast_op("ctc_loss")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The CTC loss of (T, N, C) log-probabilities (or (T, C) unbatched) against ``targets``: padded (N, S) or
    all sequences concatenated (1-D), with their lengths. ``reduction='mean'`` divides each loss by its target
    length before averaging; ``zero_infinity`` replaces impossible alignments' infinite losses (and their
    gradients) by 0."""
    check_tensor(log_probs, "ctc_loss", "log_probs", 1)
    check_tensor(targets, "ctc_loss", "targets", 2)
    reduction = _get_reduction(reduction)
    if not log_probs.dtype.is_floating_point:
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{log_probs.dtype._scalar_name}'")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0)
    t_max, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    il = _lengths(input_lengths, "input_lengths", batch)
    tl = _lengths(target_lengths, "target_lengths", batch)
    for v in il:
        if v > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {v} (while "
                               "checking arguments for ctc_loss_allocate_outputs)")
    longest = max(tl, default=0)
    if targets.dim() == 1:
        # concatenated targets: cut them into a padded (N, S) table
        starts = [sum(tl[:i]) for i in range(batch)]
        flat = targets.tolist()
        rows = [flat[s:s + n] + [0] * (longest - n) for s, n in zip(starts, tl)]
        targets = Tensor._make(log_probs._be.asarray(rows, _I64).reshape(batch, longest), log_probs._be)
    elif targets.shape[1] < longest:
        raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for "
                           "ctc_loss_allocate_outputs)")
    be = log_probs._be
    nll = CtcLossBackward0.apply(log_probs, targets=be.astype(targets._data, _I64), input_lengths=be.asarray(il, _I64),
                                 target_lengths=be.asarray(tl, _I64), blank=int(blank),
                                 zero_infinity=bool(zero_infinity))
    if unbatched:
        nll = nll.squeeze(0)
    if reduction == "none":
        return nll
    if reduction == "sum":
        return nll.sum()
    per_char = Tensor._make(be.asarray(tl, log_probs._data.dtype), be).clamp_min(1)
    return (nll / (per_char.squeeze(0) if unbatched else per_char)).mean()
