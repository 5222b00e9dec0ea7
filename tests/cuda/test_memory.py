"""mt.cuda memory statistics, counted on the simulated device as on a GPU."""
import pytest

import minitorch_gpu as mt


def _cuda_only(device):
    if device == "cpu":
        pytest.skip("CUDA memory statistics")


def test_allocated_and_peak_follow_tensors(device):
    _cuda_only(device)
    mt.cuda.synchronize()
    base = mt.cuda.memory_allocated()
    mt.cuda.reset_peak_memory_stats()
    x = mt.empty(256, 1024, device=device)            # 1 MiB
    assert mt.cuda.memory_allocated() - base >= 1 << 20
    y = x[:10]                                          # a view holds no new memory
    assert mt.cuda.memory_allocated() - base < (1 << 20) + 4096
    z = x + 1
    peak = mt.cuda.max_memory_allocated()
    assert peak - base >= 2 << 20
    del x, y, z
    assert mt.cuda.memory_allocated() - base < 4096
    assert mt.cuda.max_memory_allocated() == peak
    mt.cuda.reset_peak_memory_stats()
    assert mt.cuda.max_memory_allocated() - base < 4096
    assert mt.cuda.memory_reserved() >= mt.cuda.memory_allocated()
    assert mt.cuda.max_memory_reserved() >= mt.cuda.memory_reserved()


def test_stats_summary_and_info(device):
    _cuda_only(device)
    x = mt.ones(1000, device=device)
    st = mt.cuda.memory_stats()
    assert st["allocated_bytes.all.current"] == mt.cuda.memory_allocated() >= 4000
    assert st["allocated_bytes.all.peak"] == mt.cuda.max_memory_allocated()
    assert st["reserved_bytes.all.current"] == mt.cuda.memory_reserved()
    assert "Allocated memory" in mt.cuda.memory_summary()
    free, total = mt.cuda.mem_get_info()
    assert 0 < free <= total
    mt.cuda.empty_cache()
    assert mt.cuda.memory_allocated(device) == mt.cuda.memory_allocated(0)
    del x


def test_bad_device_arguments(device):
    _cuda_only(device)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        mt.cuda.memory_allocated("cpu")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mt.cuda.max_memory_allocated(7)
