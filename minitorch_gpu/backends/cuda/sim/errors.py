"""Exceptions raised by the CUDA simulator."""
from __future__ import annotations

__all__ = ["SimError", "SimCompileError", "SimArgumentError"]


class SimError(RuntimeError):
    """A simulated kernel failed: a fault found while it ran, or a launch the GPU would reject.

    ``kernel`` is the kernel's name and ``line`` the source line the fault points at (0 when there is none).
    """

    def __init__(self, message: str, kernel: str | None = None, line: int = 0) -> None:
        super().__init__(message)
        self.kernel = kernel
        self.line = line


class SimCompileError(SimError):
    """g++ could not compile a kernel source for the simulator; the message carries the compiler's output."""


class SimArgumentError(SimError, TypeError):
    """A launch argument does not match the kernel's parameter (checked before the launch, like a typed
    cuLaunchKernel); also a TypeError, since it is the caller's argument that is wrong."""
