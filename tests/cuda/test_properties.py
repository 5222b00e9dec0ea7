"""mt.cuda device properties."""
import pytest

import minitorch_gpu as mt


def test_properties(device):
    if device == "cpu":
        pytest.skip("CUDA devices")
    p = mt.cuda.get_device_properties(0)
    assert p.name == mt.cuda.get_device_name() == mt.cuda.get_device_name("cuda:0")
    assert p.total_memory > 0 and p.multi_processor_count > 0
    assert mt.cuda.get_device_capability() == (p.major, p.minor) and p.major >= 7
    assert "_CudaDeviceProperties(name=" in repr(p)
    assert mt.cuda.is_bf16_supported() is False   # until the CUDA backend takes bfloat16
    with pytest.raises(ValueError, match="Expected a cuda device"):
        mt.cuda.get_device_properties("cpu")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mt.cuda.get_device_name(5)
