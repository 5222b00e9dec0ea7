"""Vision functions: ``F.pixel_shuffle`` / ``F.pixel_unshuffle`` (views and a permute, in ``ops/shape.py``)."""
from ...ops.shape import pixel_shuffle, pixel_unshuffle

__all__ = ["pixel_shuffle", "pixel_unshuffle"]
