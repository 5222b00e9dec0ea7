"""One test body, every backend: the ``device`` fixture runs a test on ``cpu`` and on ``cuda`` (skipped
without a GPU). The CPU simulator of the CUDA kernels joins as ``cuda-sim`` with the kernel work."""
import pytest

import minitorch_gpu as mt

DEVICES = ["cpu", "cuda"]


def _available(name):
    if name == "cpu":
        return True
    return mt.cuda.is_available()


@pytest.fixture(params=DEVICES)
def device(request):
    if not _available(request.param):
        pytest.skip(f"{request.param} is not available")
    return request.param


@pytest.fixture
def torch():
    """PyTorch as a test oracle; tests that ask for it are skipped where it is not installed."""
    return pytest.importorskip("torch")
