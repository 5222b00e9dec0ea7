"""The part of PyTorch's ``torch._utils`` that library code asks about: PyTorch 2.x optimizer files before
``torch.compiler.is_compiling`` called ``torch._utils.is_compiling()``."""

__all__ = ["is_compiling"]


def is_compiling() -> bool:
    """False: nothing is ever compiled here (``mt.compiler.is_compiling``)."""
    return False
