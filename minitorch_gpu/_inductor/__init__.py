"""``mt._inductor``: only ``config``, so that scripts tuning PyTorch's compiler (``import torch._inductor.config``)
run; ``mt.compile`` compiles nothing, so nothing reads it."""
from . import config

__all__ = ["config"]
