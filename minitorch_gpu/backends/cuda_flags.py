"""``mt.backends.cuda``: PyTorch's switches for CUDA math, reachable as ``minitorch_gpu.backends.cuda``.

    >>> import minitorch_gpu as mt
    >>> mt.backends.cuda.matmul.allow_tf32
    False
    >>> mt.backends.cuda.matmul.allow_tf32 = True   # float32 matmul on CUDA may use TF32 tensor cores
    >>> mt.backends.cuda.matmul.allow_tf32 = False

``matmul.allow_tf32`` (default False, as in PyTorch) routes float32 matrix products on CUDA to cuBLAS with
TF32 tensor-core math (10-bit mantissa inputs, float32 accumulation) instead of our full-precision SGEMM
kernel. The simulated device has no tensor cores and ignores it.
"""
__all__ = ["matmul", "is_built"]


class _MatmulFlags:
    """``mt.backends.cuda.matmul``: flags read by the CUDA backend's matmul on every call."""

    __slots__ = ("_allow_tf32",)

    def __init__(self):
        object.__setattr__(self, "_allow_tf32", False)

    @property
    def allow_tf32(self):
        return self._allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        if not isinstance(value, bool):
            raise TypeError(f"allow_tf32 must be bool, not {type(value).__name__}")
        object.__setattr__(self, "_allow_tf32", value)

    def __repr__(self):
        return f"<minitorch_gpu.backends.cuda.matmul allow_tf32={self._allow_tf32}>"


matmul = _MatmulFlags()


def is_built():
    """Whether this build can use CUDA: true when CuPy is importable (the GPU itself is checked by
    ``mt.cuda.is_available()``)."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True
