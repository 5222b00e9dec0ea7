"""Device "cuda" on the CPU simulator: switching it on and off, host/device copies, DLPack, the kernel switch
(MINITORCH_GPU_KERNELS), that tensor ops really reach the kernels, and mt.backends.cuda.matmul.allow_tf32 (float32
products on the emulated tensor cores)."""
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_close, kernel_launches, to_np

import minitorch_gpu as mt
from minitorch_gpu.backends.cuda_backend import SimBackend
from minitorch_gpu.backends.cuda.launch import SGEMM_KERNELS


@pytest.fixture
def sim():
    prev = mt.cuda.use_simulator(True)
    yield
    mt.cuda.use_simulator(prev)


def test_use_simulator_switches_cuda_on_and_off():
    before = (mt.cuda.is_available(), mt.cuda.device_count())
    prev = mt.cuda.use_simulator(True)
    try:
        assert mt.cuda.is_simulated() and mt.cuda.is_available() and mt.cuda.device_count() == 1
        assert mt.cuda.current_device() == 0
        mt.cuda.synchronize()
        x = mt.ones(2, device="cuda")
        assert x.is_cuda and x.device == mt.device("cuda", 0) and isinstance(x._be, SimBackend)
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            mt.zeros(1, device="cuda:1")
    finally:
        assert mt.cuda.use_simulator(prev) is True
    assert (mt.cuda.is_available(), mt.cuda.device_count()) == before


def test_environment_variable_turns_the_simulator_on():
    code = "import minitorch_gpu as mt; print(mt.cuda.is_available(), mt.cuda.is_simulated(), mt.cuda.device_count())"
    env = dict(os.environ, MINITORCH_GPU_SIM="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "1"]


def test_host_and_device_copies_do_not_share_memory(sim):
    c = mt.tensor([1.0, 2.0])
    g = c.cuda()
    g += 1
    assert c.tolist() == [1.0, 2.0] and g.tolist() == [2.0, 3.0]
    back = g.cpu()
    back += 1
    assert g.tolist() == [2.0, 3.0] and not back.is_cuda
    a = np.arange(3.0)
    t = mt.as_tensor(a, device="cuda")
    a[0] = 9
    assert t[0].item() == 0.0


def test_bfloat16_works_and_is_refused_only_without_arrays(sim, monkeypatch):
    from minitorch_gpu.backends import get_backend
    x = mt.tensor([1.5, -2.0], dtype=mt.bfloat16, device="cuda")
    assert (x * 2).tolist() == [3.0, -4.0] and x.dtype is mt.bfloat16
    # a GPU whose CuPy has no bfloat16 arrays (before CuPy 14) refuses with a TypeError saying why
    monkeypatch.setattr(type(get_backend("cuda")), "_bfloat16_arrays", lambda self: False)
    with pytest.raises(TypeError, match="need CuPy 14"):
        mt.zeros(2, dtype=mt.bfloat16, device="cuda")
    assert mt.cuda.is_bf16_supported() is False


def test_dlpack_exports_host_memory(sim):
    t = mt.arange(4.0, device="cuda")
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    a[0] = 7
    assert t[0].item() == 7.0
    u = mt.from_dlpack(t)
    assert u.device == mt.device("cpu") and u.data_ptr() == t.data_ptr()


def test_kernel_switch(monkeypatch):
    monkeypatch.setenv("MINITORCH_GPU_KERNELS", "0")
    assert SimBackend(0).kernels is None
    monkeypatch.setenv("MINITORCH_GPU_KERNELS", "1")
    assert SimBackend(0).kernels is not None


def test_ops_reach_the_kernels(sim, monkeypatch):
    x = mt.randn(5, 7, device="cuda")
    calls = kernel_launches(monkeypatch, x._be)
    w = mt.randn(7, 3, device="cuda", requires_grad=True)
    y = (x @ w).relu() * 2 + 1
    loss = mt.softmax(y, dim=-1).sum() + mt.log_softmax(y, dim=1).mean()
    loss.backward()
    mt.optim.Adam([w], lr=0.1, fused=True).step()
    mt.optim.SGD([w], lr=0.1, momentum=0.9, fused=True).step()
    mt.optim.RMSprop([w], lr=0.1, fused=True).step()
    mt.optim.Adagrad([w], lr=0.1, fused=True).step()
    mt.optim.Lion([w], lr=0.1, fused=True).step()
    used = {c[1].split("<")[0] for c in calls}
    # the float32 GEMM is one of the SGEMM variants, whichever launch.SGEMM_CHOICE gives this product's class
    assert used & {k.entry.split("<")[0] for k in SGEMM_KERNELS.values()}, used
    assert {"binary_forward", "unary_forward", "softmax_forward_v1", "softmax_backward_v1",
            "adam_step", "sgd_step", "rmsprop_step", "adagrad_step", "lion_step", "normal_forward"} <= used, used


def test_linear_and_addmm_add_the_bias_in_the_gemm(sim, monkeypatch):
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 5, 7), (3, 7), (3,)))
    xt, wt, bt = (mt.tensor(v, device="cuda") for v in (x, w, b))
    calls = kernel_launches(monkeypatch, xt._be)
    y = mt.nn.functional.linear(xt, wt, bt)
    z = mt.addmm(bt, xt[0], wt.t())
    # one launch each: the GEMM, with no elementwise add after it
    sgemm = {k.entry for k in SGEMM_KERNELS.values()}
    assert len(calls) == 2 and all(c[0] == "matmul.cu" and c[1] in sgemm for c in calls), calls
    assert_close(to_np(y), x @ w.T + b, rtol=1e-5, atol=1e-5)
    assert_close(to_np(z), x[0] @ w.T + b, rtol=1e-5, atol=1e-5)


def test_results_match_the_cpu(sim):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((33, 65)).astype(np.float32)
    b = rng.standard_normal((65, 17)).astype(np.float32)
    xa, xb = mt.tensor(a, device="cuda"), mt.tensor(b, device="cuda")
    gelu = mt.nn.functional.gelu
    assert_close(gelu(xa @ xb), gelu(mt.tensor(a) @ mt.tensor(b)), rtol=1e-4, atol=1e-5)
    assert_close(mt.where(xa > 0, xa, 0.5).clamp(-1, 1), np.clip(np.where(a > 0, a, np.float32(0.5)), -1, 1))


def test_random_streams_match_the_cpu(sim):
    gc = mt.Generator("cpu").manual_seed(11)
    gg = mt.Generator("cuda").manual_seed(11)
    np.testing.assert_array_equal(to_np(mt.rand(1001, generator=gc)), to_np(mt.rand(1001, generator=gg, device="cuda")))
    np.testing.assert_array_equal(to_np(mt.randint(-7, 50, (300,), generator=gc)),
                                  to_np(mt.randint(-7, 50, (300,), generator=gg, device="cuda")))
    np.testing.assert_allclose(to_np(mt.randn(999, generator=gc)), to_np(mt.randn(999, generator=gg, device="cuda")),
                               rtol=1e-7)


def test_allow_tf32_flag():
    flags = mt.backends.cuda.matmul
    assert flags.allow_tf32 is False
    flags.allow_tf32 = True
    try:
        assert mt.backends.cuda.matmul.allow_tf32 is True
    finally:
        flags.allow_tf32 = False
    with pytest.raises(RuntimeError, match="^set_allow_tf32_cublas expects a bool, but got int$"):
        flags.allow_tf32 = 1
    assert flags.allow_tf32 is False


def _tf32(x):
    """float32 -> tf32 as cvt.rna.tf32.f32 rounds (finite values): 10 mantissa bits, ties away from zero."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


@pytest.mark.parametrize("switch", ["allow_tf32", "high", "medium"])
def test_tf32_routes_float32_matmul_to_the_tensor_cores(sim, monkeypatch, switch):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 300)).astype(np.float32)
    b = rng.standard_normal((300, 24)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    tf32 = _tf32(a).astype(np.float64) @ _tf32(b).astype(np.float64)
    bound = 300 * 2.0 ** -23 * (np.abs(a) @ np.abs(b))  # float32 accumulation over K = 300
    xa, xb = mt.tensor(a, device="cuda"), mt.tensor(b, device="cuda")
    calls = kernel_launches(monkeypatch, xa._be)

    def product():
        calls.clear()
        r = to_np(xa @ xb)
        return r, {f for f, _ in calls}

    r, files = product()
    assert files == {"matmul.cu"} and np.all(np.abs(r - exact) <= bound)
    if switch == "allow_tf32":
        mt.backends.cuda.matmul.allow_tf32 = True
    else:
        mt.set_float32_matmul_precision(switch)
    try:
        r, files = product()
    finally:
        mt.set_float32_matmul_precision("highest")
    assert files == {"matmul_tc.cu"}, calls
    # the inputs were rounded to tf32: within float32 accumulation of the tf32 product, and as far from the exact
    # product as 10-bit mantissas put it (full float32 is 1e-7 away)
    assert np.all(np.abs(r - tf32) <= bound)
    assert np.linalg.norm(r - tf32) / np.linalg.norm(tf32) < 1e-6
    assert 5e-5 < np.linalg.norm(r - exact) / np.linalg.norm(exact) < 1e-3
    assert mt.backends.cuda.matmul.allow_tf32 is False
    assert product()[1] == {"matmul.cu"}
