"""Fixtures for the kernel tests: a Launcher on the CPU simulator (the same launch code a GPU runs)."""
import pytest


@pytest.fixture(scope="session")
def sim_backend():
    """A simulated CUDA backend (NumPy arrays + sim.SimModule), independent of the global device state."""
    try:
        from minitorch_gpu.backends.cuda import sim  # noqa: F401
    except ImportError:
        pytest.skip("the CUDA simulator is not part of this build")
    from minitorch_gpu.backends.cuda_backend import SimBackend
    be = SimBackend(0)
    if be.kernels is None:
        pytest.skip("kernels are switched off (MINITORCH_GPU_KERNELS=0)")
    return be


@pytest.fixture
def k(sim_backend):
    """The backend's Launcher with a tiny grid cap, so every size beyond 2 x 256 elements exercises the
    grid-stride loops (more elements than one grid covers)."""
    launcher = sim_backend.kernels
    saved = launcher.max_blocks
    launcher.max_blocks = 2
    yield launcher
    launcher.max_blocks = saved
