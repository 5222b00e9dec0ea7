"""One test body, every backend: the ``device`` fixture runs a test on ``cpu``, on ``cuda-sim`` (device
"cuda" backed by the CPU simulator: NumPy arrays and the kernels of kernels/*.cu run by backends/cuda/sim) and on
``cuda`` (a real GPU; skipped without one). A ``cuda-sim`` test sees the device string "cuda", so the
same body runs unchanged; the simulator is switched on for that test only and the CUDA backends are reset
around it, so the real GPU and the simulator never share a backend."""
import os

import pytest

import minitorch_gpu as mt

DEVICES = ["cpu", "cuda-sim", "cuda"]

# device-parametrised tests that cannot hold on the simulated device, with the reason
_SIM_EXCLUDED = {
    # the simulated device's memory is host memory: DLPack exports it as kDLCPU, not kDLCUDA, which these
    # GPU-interop tests assume; tests/kernels/test_sim_backend.py checks the simulated device's DLPack
    "tests/ops/test_dlpack.py": "DLPack on the simulated device is host memory (see tests/kernels/test_sim_backend.py)",
}


def _real_gpu():
    if mt.cuda.is_simulated():
        prev = mt.cuda.use_simulator(False)
        try:
            return mt.cuda.is_available()
        finally:
            mt.cuda.use_simulator(prev)
    return mt.cuda.is_available()


def _sim_enabled():
    """The cuda-sim param runs unless ``MINITORCH_GPU_TEST_SIM=0`` (for a quick CPU-only pass)."""
    return os.environ.get("MINITORCH_GPU_TEST_SIM", "1") != "0"


@pytest.fixture(params=DEVICES)
def device(request):
    name = request.param
    if name == "cpu":
        return "cpu"
    if name == "cuda-sim":
        if not _sim_enabled():
            pytest.skip("cuda-sim disabled by MINITORCH_GPU_TEST_SIM=0")
        path = os.path.relpath(str(request.node.path), os.path.dirname(os.path.dirname(__file__)))
        reason = _SIM_EXCLUDED.get(path.replace(os.sep, "/"))
        if reason:
            pytest.skip(reason)
        prev = mt.cuda.use_simulator(True)
        request.addfinalizer(lambda: mt.cuda.use_simulator(prev))
        return "cuda"
    if not _real_gpu():
        pytest.skip("cuda is not available")
    prev = mt.cuda.use_simulator(False)
    request.addfinalizer(lambda: mt.cuda.use_simulator(prev))
    return "cuda"


@pytest.fixture
def torch():
    """PyTorch as a test oracle; tests that ask for it are skipped where it is not installed."""
    torch = pytest.importorskip("torch")
    # the oracle's thread pool only slows tiny ops on a 2-core CI machine
    torch.set_num_threads(1)
    return torch
