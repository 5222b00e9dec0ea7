"""``F.pairwise_distance`` and ``F.cosine_similarity``: the distance ops of ``ops/distance.py``, bound under ``nn.functional`` as PyTorch
binds them."""
from ...ops.distance import cosine_similarity, pairwise_distance

__all__ = ["pairwise_distance", "cosine_similarity"]
