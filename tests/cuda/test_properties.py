"""mt.cuda device properties."""
import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import get_backend


def test_properties(device):
    if device == "cpu":
        pytest.skip("CUDA devices")
    p = mt.cuda.get_device_properties(0)
    assert p.name == mt.cuda.get_device_name() == mt.cuda.get_device_name("cuda:0")
    assert p.total_memory > 0 and p.multi_processor_count > 0
    assert mt.cuda.get_device_capability() == (p.major, p.minor) and p.major >= 7
    assert "_CudaDeviceProperties(name=" in repr(p)
    # bfloat16 tensors work on the device: the simulator and sm_80+ GPUs say so with or without emulation
    assert mt.cuda.is_bf16_supported() is (p.major >= 8 or get_backend(device).supports(mt.bfloat16))
    assert mt.cuda.is_bf16_supported(including_emulation=False) is (p.major >= 8)
    assert mt.ones(2, dtype=mt.bfloat16, device=device).float().tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="Expected a cuda device"):
        mt.cuda.get_device_properties("cpu")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mt.cuda.get_device_name(5)
