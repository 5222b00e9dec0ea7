"""The foreach and fused implementations against the reference loop, on every backend: same parameters and
state after several steps, on awkward inputs (tensors longer than a fused piece, strided parameters,
float64, half precision, mixed dtypes in one group, parameters without gradients)."""
import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import _optim as optim_backend
from helpers import assert_close, to_np

OPTIMIZERS = [
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("SGD", dict(lr=0.05)),
    ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=1e-2, maximize=True)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.2)),
    ("AdamW", dict(lr=1e-2, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=1e-2, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=1e-2, maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.1)),
    ("Adagrad", dict(lr=0.1, maximize=True)),
    ("Lion", dict(lr=1e-2, weight_decay=0.1)),
    ("Lion", dict(lr=1e-2, betas=(0.5, 0.9), maximize=True)),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)]
STEPS = 4


def _make(shapes, device, dtype, seed, strided=()):
    rng = np.random.default_rng(seed)
    params, grads = [], []
    for k, shape in enumerate(shapes):
        # values representable in float16, so that every dtype starts from the same numbers
        a = rng.standard_normal(shape).astype(np.float16).astype(np.float32)
        if k in strided:
            # a leaf whose memory is a transposed view
            p = mt.tensor(a.T.copy(), dtype=dtype, device=device).t().detach().requires_grad_()
        else:
            p = mt.tensor(a, dtype=dtype, device=device, requires_grad=True)
        params.append(p)
        grads.append([mt.tensor(rng.standard_normal(shape).astype(np.float16).astype(np.float32), dtype=dtype,
                                device=device)
                      for _ in range(STEPS)])
    return params, grads


def _run(name, kwargs, flags, shapes, device, dtype, strided=(), skip_grad=()):
    params, grads = _make(shapes, device, dtype, 0, strided)
    opt = getattr(mt.optim, name)(params, **kwargs, **flags)
    versions = [p._version for p in params]
    for s in range(STEPS):
        for k, p in enumerate(params):
            p.grad = None if k in skip_grad else grads[k][s].clone()
        opt.step()
    for k, p in enumerate(params):
        if k not in skip_grad:
            assert p._version > versions[k], "an optimizer step must bump the parameter's version"
    return params, opt


def _close(a, b, rtol, atol):
    """assert_close with ``atol`` taken relative to the tensor's scale: rounding differences of the order of
    one ulp of the largest intermediate show up where values cancel."""
    e = to_np(b).astype(np.float64)
    scale = max(1.0, float(np.abs(e).max())) if e.size else 1.0
    assert_close(a, e, rtol=rtol, atol=atol * scale)


def _compare(ref, other, rtol, atol):
    (rp, ropt), (op, oopt) = ref, other
    for a, b in zip(op, rp):
        _close(a, b, rtol, atol)
    for a, b in zip(op, rp):
        sa, sb = oopt.state[a], ropt.state[b]
        assert sorted(sa) == sorted(sb)
        for key in sb:
            if isinstance(sb[key], mt.Tensor):
                assert sa[key].dtype == sb[key].dtype and sa[key].device == sb[key].device, key
                _close(sa[key], sb[key], rtol, atol)


# 70001 elements spans several fused pieces and ends in a short one
SHAPES = [(70001,), (33, 17), (5,), (1,), ()]


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS, ids=IDS)
@pytest.mark.parametrize("path", ["foreach", "fused", "default"])
def test_fast_path_matches_reference(device, name, kwargs, path):
    flags = {"foreach": dict(foreach=True), "fused": dict(fused=True), "default": {}}[path]
    ref = _run(name, kwargs, dict(foreach=False), SHAPES, device, mt.float32, skip_grad=(3,))
    got = _run(name, kwargs, flags, SHAPES, device, mt.float32, skip_grad=(3,))
    _compare(ref, got, rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS[::2], ids=IDS[::2])
def test_fused_strided_and_float64(device, name, kwargs):
    ref = _run(name, kwargs, dict(foreach=False), [(6, 9), (40, 3)], device, mt.float64, strided=(0,))
    got = _run(name, kwargs, dict(fused=True), [(6, 9), (40, 3)], device, mt.float64, strided=(0,))
    assert not got[0][0].is_contiguous()
    _compare(ref, got, rtol=1e-12, atol=1e-14)
    ref = _run(name, kwargs, dict(foreach=False), [(6, 9), (40, 3)], device, mt.float32, strided=(0, 1))
    got = _run(name, kwargs, dict(foreach=True), [(6, 9), (40, 3)], device, mt.float32, strided=(0, 1))
    _compare(ref, got, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS[::3], ids=IDS[::3])
def test_fused_half_precision_computes_in_float32(device, name, kwargs):
    # the fused step computes in float32 and rounds to float16 once per step (as PyTorch's fused kernels do),
    # so it follows the float32 reference to a few float16 ulps
    ref_params, ref_opt = _run(name, kwargs, dict(foreach=False), [(300,), (7, 5)], device, mt.float32)
    got_params, got_opt = _run(name, kwargs, dict(fused=True), [(300,), (7, 5)], device, mt.float16)
    for a, b in zip(got_params, ref_params):
        assert a.dtype is mt.float16
        _close(a, b, rtol=1e-2, atol=2e-3)
        for key, value in ref_opt.state[b].items():
            if key != "step":
                assert got_opt.state[a][key].dtype is mt.float16
                _close(got_opt.state[a][key], value, rtol=1e-2, atol=2e-3)


def test_mixed_dtypes_in_one_group(device):
    p32 = mt.randn(50, device=device, requires_grad=True)
    p64 = mt.randn(50, dtype=mt.float64, device=device, requires_grad=True)
    results = {}
    for flags in (dict(foreach=False), dict(foreach=True), dict(fused=True)):
        a = p32.detach().clone().requires_grad_()
        b = p64.detach().clone().requires_grad_()
        opt = mt.optim.AdamW([a, b], lr=0.1)
        for _ in range(3):
            a.grad = mt.ones_like(a)
            b.grad = mt.ones_like(b)
            opt.step()
        assert a.dtype is mt.float32 and b.dtype is mt.float64
        results[str(flags)] = (to_np(a), to_np(b))
    ref = results[str(dict(foreach=False))]
    for a, b in results.values():
        np.testing.assert_allclose(a, ref[0], rtol=1e-6)
        np.testing.assert_allclose(b, ref[1], rtol=1e-12)


def test_fused_pieces_split_across_threads(monkeypatch):
    """The NumPy fused driver hands pieces to a thread pool for long groups; the result must not depend on it.
    (The native loop's split is tested in tests/backends/test_optim_native.py.)"""
    be = mt.zeros(1)._be
    monkeypatch.setattr(be, "native_optim", False)
    name, kwargs = "AdamW", dict(lr=1e-2, amsgrad=True)
    serial = _run(name, kwargs, dict(fused=True), [(5000,), (3001,), (17,)], "cpu", mt.float32)
    monkeypatch.setattr(optim_backend, "_PARALLEL_MIN_ELEMENTS", 0)
    monkeypatch.setattr(be, "optim_chunk", 257, raising=False)
    monkeypatch.setattr(be, "optim_threads", 3, raising=False)
    threaded = _run(name, kwargs, dict(fused=True), [(5000,), (3001,), (17,)], "cpu", mt.float32)
    _compare(serial, threaded, rtol=0, atol=0)


@pytest.mark.parametrize("native", [True, False], ids=["native", "numpy"])
def test_fused_step_makes_no_temporaries_on_cpu(monkeypatch, native):
    """The fused CPU paths allocate nothing large on a second step: the native loop works in place, the NumPy
    body through preallocated scratch."""
    import tracemalloc
    monkeypatch.setattr(mt.zeros(1)._be, "native_optim", native)
    p = mt.randn(200_000, requires_grad=True)
    opt = mt.optim.AdamW([p], lr=1e-3, fused=True)
    p.grad = mt.randn(200_000)
    opt.step()
    tracemalloc.start()
    try:
        opt.step()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000, f"fused step allocated {peak} bytes"


# ---------------------------------------------------------------------------------------------- without a fused path
UNFUSED = [
    ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
    ("Adadelta", dict(maximize=True)),
    ("Adamax", dict(lr=1e-2)),
    ("Adamax", dict(lr=1e-2, weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.05, t0=3, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, lambd=1e-2, maximize=True)),
]
UNFUSED_IDS = [f"{n}-{i}" for i, (n, _) in enumerate(UNFUSED)]


def _run_unfused(name, kwargs, flags, shapes, device, dtype, steps, strided=(), skip_grad=()):
    """``steps`` steps (RAdam rectifies from its sixth), cycling through the gradients ``_make`` draws."""
    params, grads = _make(shapes, device, dtype, 0, strided)
    opt = getattr(mt.optim, name)(params, **kwargs, **flags)
    for s in range(steps):
        for k, p in enumerate(params):
            p.grad = None if k in skip_grad else grads[k][s % STEPS].clone()
        opt.step()
    return params, opt


@pytest.mark.parametrize("name,kwargs", UNFUSED, ids=UNFUSED_IDS)
@pytest.mark.parametrize("path", ["foreach", "default"])
def test_unfused_foreach_matches_reference(device, name, kwargs, path):
    flags = dict(foreach=True) if path == "foreach" else {}
    ref = _run_unfused(name, kwargs, dict(foreach=False), SHAPES, device, mt.float32, 8, skip_grad=(3,))
    got = _run_unfused(name, kwargs, flags, SHAPES, device, mt.float32, 8, skip_grad=(3,))
    _compare(ref, got, rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("name,kwargs", UNFUSED[::2], ids=UNFUSED_IDS[::2])
def test_unfused_strided_float64_and_mixed_dtypes(device, name, kwargs):
    ref = _run_unfused(name, kwargs, dict(foreach=False), [(6, 9), (40, 3)], device, mt.float64, 7, strided=(0,))
    got = _run_unfused(name, kwargs, dict(foreach=True), [(6, 9), (40, 3)], device, mt.float64, 7, strided=(0,))
    assert not got[0][0].is_contiguous()
    _compare(ref, got, rtol=1e-12, atol=1e-14)
    # a float32 and a float64 tensor in one group: the foreach path splits the list by dtype
    a = mt.randn(20, device=device, requires_grad=True)
    b = mt.randn(20, dtype=mt.float64, device=device, requires_grad=True)
    results = []
    for flags in (dict(foreach=False), dict(foreach=True)):
        pa, pb = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        opt = getattr(mt.optim, name)([pa, pb], **kwargs, **flags)
        for _ in range(3):
            pa.grad, pb.grad = mt.ones_like(pa), mt.ones_like(pb)
            opt.step()
        assert pa.dtype is mt.float32 and pb.dtype is mt.float64
        results.append((to_np(pa), to_np(pb)))
    # absolute tolerances too: ASGD's foreach path folds the decay into the step (one rounding less), which
    # shows as a relative difference wherever a value passes near zero
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12, atol=1e-15)
