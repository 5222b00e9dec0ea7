"""Fixtures of the CPU backend's compiled convolution loops (kernels/cnn_cpu.cpp)."""
import pytest

from minitorch_gpu.backends import _cnn_native
from minitorch_gpu.backends.numpy_backend import NumpyBackend


@pytest.fixture(scope="module")
def lib():
    """The typed library of the compiled loops; the test skips where it does not build."""
    if _cnn_native.library() is None:
        pytest.skip(f"no native CNN library here: {_cnn_native.LIB.reason}")
    return _cnn_native.library()


@pytest.fixture
def cpu_backend():
    """``cpu_backend(native=True, threads=1)``: a fresh CPU backend with or without the compiled loops."""
    def make(native=True, threads=1):
        be = NumpyBackend()
        be.native_nn = native
        be.optim_threads = threads
        return be
    return make
