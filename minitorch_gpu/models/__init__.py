"""Ready-made models written with ``minitorch_gpu.nn``."""
from .gpt import GPT, GPTConfig

__all__ = ["GPT", "GPTConfig"]
