"""``F.pairwise_distance``: the distance ops of ``ops/distance.py``, bound under ``nn.functional`` as PyTorch
binds them."""
from ...ops.distance import pairwise_distance

__all__ = ["pairwise_distance"]
