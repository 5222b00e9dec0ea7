import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import get_backend


@pytest.fixture
def sim():
    """The simulated CUDA backend, switched on for one test."""
    prev = mt.cuda.use_simulator(True)
    yield get_backend("cuda")
    mt.cuda.use_simulator(prev)
