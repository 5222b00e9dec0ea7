"""The CUDA runtime, private to the dispatch layer, and ``mt.backends.cuda``'s public switches.

Layers, lowest first (each module imports only those above it in this list):

* ``loader``     kernel sources (``kernels/*.cu`` with ``common.cuh`` pasted in), their exports, the one cached
                 reader of enums and ``#define`` values, and the per-runtime module cache;
* ``fused_step`` ``FusedStep``: one fused optimizer step in the terms of ``kernels/optim_math.cuh``;
* ``device``     the GPU probe: CuPy or the simulator as device "cuda", device count, the current device;
* ``sim/``       the CPU simulator that runs the same kernels (g++, fibers);
* ``nvrtc``      NVRTC through ctypes, for compiling without a driver (CI's compile gate);
* ``nvtx``       NVTX ranges around ops and module calls (public as ``mt.cuda.nvtx``; a subscriber of ``_op_range``);
* ``checks``     device-side checks read at the next synchronisation, and the sync debug mode;
* ``launch``     ``Launcher``: grid sizes, argument packing and pointer tables, shared by GPU and simulator;
* ``hooks``      observers installed on a backend's primitives for a while (``counting`` and ``graphs`` use them);
* ``counting``   the counting mode: launches, built-in calls and syncs of a piece of work;
* ``graphs``     CUDA graph capture and replay (CUDA stream capture on a GPU, recorded primitives on the
                 simulator), behind the public ``mt.cuda.CUDAGraph``.

``backends/cuda_backend.py`` routes primitives to a ``Launcher``; the public ``mt.cuda`` package sits above
and imports from here, never the other way round.

The public part is PyTorch's switches for CUDA math:

    >>> import minitorch_gpu as mt
    >>> mt.backends.cuda.matmul.allow_tf32
    False
    >>> mt.backends.cuda.matmul.allow_tf32 = True   # float32 matmul on CUDA may use TF32 tensor cores
    >>> mt.backends.cuda.matmul.allow_tf32 = False

``matmul.allow_tf32`` (default False, as in PyTorch) routes float32 matrix products on CUDA to cuBLAS with
TF32 tensor-core math (10-bit mantissa inputs, float32 accumulation) instead of our full-precision SGEMM
kernel. The simulated device has no tensor cores and ignores it.
"""
from __future__ import annotations

from .._flags import BoolFlag

__all__ = ["matmul", "is_built"]


class _MatmulFlags:
    """``mt.backends.cuda.matmul``: flags read by the CUDA backend's matmul on every call."""

    __slots__ = ("_allow_tf32",)

    allow_tf32 = BoolFlag(False, "set_allow_tf32_cublas")

    def __repr__(self) -> str:
        return f"<minitorch_gpu.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether this build can use CUDA: true when CuPy is importable (the GPU itself is checked by
    ``mt.cuda.is_available()``)."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True
