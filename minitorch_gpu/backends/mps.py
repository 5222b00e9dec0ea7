"""``mt.backends.mps``: Apple's Metal backend, which this package does not have (scripts probing for it run)."""
from __future__ import annotations

__all__ = ["is_available", "is_built", "is_macos_or_newer", "is_macos13_or_newer"]


def is_available() -> bool:
    """False: there is no MPS device here."""
    return False


def is_built() -> bool:
    """False: this package has no MPS backend."""
    return False


def is_macos_or_newer(major: int, minor: int) -> bool:
    """PyTorch asks the MPS backend, which does not exist here: RuntimeError, as in a PyTorch build without it."""
    raise RuntimeError("Cannot execute isOnMacOSorNewer() without MPS backend.")


def is_macos13_or_newer(minor: int = 0) -> bool:
    """See :func:`is_macos_or_newer`."""
    return is_macos_or_newer(13, minor)
