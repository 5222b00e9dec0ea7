"""``torch.distributed.optim``: :class:`ZeroRedundancyOptimizer` (ZeRO stage 1: optimizer state sharded across
the ranks of a process group)."""
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
