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

``matmul.allow_tf32`` (default False, as in PyTorch) lets float32 matrix products on CUDA use TF32 tensor-core
math (inputs rounded to 10 mantissa bits, float32 accumulation): our mma kernel (``kernels/matmul_tc.cu``) on
GPUs with tensor cores (sm_80+) and on the simulator, which emulates them; cuBLAS's TF32 math for the calls the
kernel declines and with ``MINITORCH_GPU_KERNELS=0``. ``set_float32_matmul_precision`` ("highest", "high",
"medium"; top level as ``mt.set_float32_matmul_precision``) is the other spelling of the same switch, kept in
step with it as PyTorch keeps them: "high" and "medium" allow TF32, "highest" does not. Products on the CPU stay
in full float32 whatever the setting (PyTorch's "medium" may use bfloat16 there; nothing here does).
"""
from __future__ import annotations

import warnings

from .._flags import BoolFlag

__all__ = ["matmul", "is_built", "set_float32_matmul_precision", "get_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")


def _tf32_changed(flags: _MatmulFlags, allowed: bool) -> None:
    object.__setattr__(flags, "_precision", "high" if allowed else "highest")


class _MatmulFlags:
    """``mt.backends.cuda.matmul``: flags read by the CUDA backend's matmul on every call."""

    __slots__ = ("_allow_tf32", "_precision")

    allow_tf32 = BoolFlag(False, "set_allow_tf32_cublas", _tf32_changed)

    def __repr__(self) -> str:
        return f"<minitorch_gpu.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


matmul = _MatmulFlags()


def set_float32_matmul_precision(precision: str) -> None:
    """Set the internal precision of float32 matrix products: "highest" (full float32, the default), "high" or
    "medium" (TF32 tensor-core math on CUDA, as ``mt.backends.cuda.matmul.allow_tf32 = True``).

        >>> import minitorch_gpu as mt
        >>> mt.set_float32_matmul_precision("high")
        >>> mt.backends.cuda.matmul.allow_tf32
        True
        >>> mt.set_float32_matmul_precision("highest")

    Another string changes nothing and warns, as PyTorch does."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    matmul.allow_tf32 = precision != "highest"
    object.__setattr__(matmul, "_precision", precision)


def get_float32_matmul_precision() -> str:
    """The current float32 matrix-product precision: "highest", "high" or "medium" (see
    ``set_float32_matmul_precision``); setting ``allow_tf32`` makes it "high" or "highest"."""
    return str(getattr(matmul, "_precision", "high" if matmul.allow_tf32 else "highest"))


def is_built() -> bool:
    """Whether this build can use CUDA: true when CuPy is importable (the GPU itself is checked by
    ``mt.cuda.is_available()``)."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True
