"""benchmarks/host_path.py: the CUDA path's host time with a null launcher, next to torch CPU eager."""
import pytest

import minitorch_gpu as mt
from benchmarks import host_path


def test_null_launches_run_the_launcher_but_no_kernel_and_restore_it(sim):
    real = sim.kernels
    if real is None:
        pytest.skip("kernels are switched off (MINITORCH_GPU_KERNELS=0)")
    a = mt.ones(64, device="cuda")
    launched = []
    with host_path.null_launches(sim) as null:
        assert sim.kernels is null and null is not real
        null.loader.module_cls = type("Spy", (host_path.NullModule,), {
            "get_function": lambda self, name: (launched.append(name), host_path.NullKernel(name))[1]})
        b = a + a
        assert b.shape == (64,) and launched == ["binary_forward<float>"]
    assert sim.kernels is real
    assert mt.equal(a + a, mt.full((64,), 2.0, device="cuda"))


def test_report_has_every_case_side_by_side(sim, tmp_path):
    pytest.importorskip("torch")
    res = host_path.run(rounds=1, scale=0.001)
    assert set(res["cases"]) == set(host_path.CASES)
    for c in res["cases"].values():
        assert c["ours_us"] > 0 and c["torch_us"] > 0 and c["ratio"] == c["ours_us"] / c["torch_us"]
    text = host_path.markdown(res)
    assert text.count("\n| ") == len(host_path.CASES) + 1
