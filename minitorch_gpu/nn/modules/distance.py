"""``PairwiseDistance``: the p-norm distance between matching rows (see ``F.pairwise_distance``)."""
from .. import functional as F
from ..module import Module

__all__ = ["PairwiseDistance"]


class PairwiseDistance(Module):
    """||x1 - x2 + eps||_p over the last dim."""

    __constants__ = ["norm", "eps", "keepdim"]

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
