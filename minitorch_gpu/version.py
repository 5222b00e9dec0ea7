"""``mt.version``: what this build is, in the names of PyTorch's ``torch.version``.

``__version__`` is the PyTorch release whose API this package follows and is tested against, with this
package's own version as the local label (``2.13.0+minitorch_gpu.0.1.0``), so that version gates in ported
scripts (``torch.__version__ >= "2.0"``) take the path written for that API. ``cuda`` is the CUDA version CuPy
was built for, or None without CuPy (the simulator does not count: it is not a CUDA build).
"""
from __future__ import annotations

from typing import Any

from .backends.cuda import device as _probe

__all__ = ["__version__", "cuda", "git_version", "hip", "debug"]  # noqa: F822 - cuda: module __getattr__

TORCH_API = "2.13.0"
"""The PyTorch release this package's API follows (and the one its tests compare with)."""
RELEASE = "0.1.0"
"""This package's own version (as in pyproject.toml)."""

__version__ = f"{TORCH_API}+minitorch_gpu.{RELEASE}"
git_version = "Unknown"  # what PyTorch reports for a build made outside a git checkout
hip: str | None = None
debug = False


def __getattr__(name: str) -> Any:
    # ``cuda`` asks CuPy, whose import takes a while: only when a script reads it
    if name == "cuda":
        return _probe.cuda_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
