"""GradScaler against PyTorch's, step for step: the scale trajectory, skipped steps and parameter values with
overflows injected on chosen steps, with and without unscale-then-clip, for SGD, Adam and AdamW on their foreach
and fused paths; the two primitives; the stage errors; state_dict."""
import math
import pickle

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

INJECT = {2, 5, 6, 11}  # steps whose gradient gets an inf (11: a NaN)
STEPS = 14

OPTIMS = {
    "sgd": ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=1e-3)),
    "adam": ("Adam", dict(lr=1e-2, weight_decay=1e-3)),
    "adamw": ("AdamW", dict(lr=1e-2, weight_decay=1e-2)),
}


def _run(lib, device, scaler_device, opt_name, path, clip):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((3, 5)).astype(np.float32)
    b0 = rng.standard_normal(3).astype(np.float32)
    x = lib.tensor(rng.standard_normal((8, 5)).astype(np.float32), device=device)
    y = lib.tensor(rng.standard_normal((8, 3)).astype(np.float32), device=device)
    lin = lib.nn.Linear(5, 3).to(device)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(w0, device=device))
        lin.bias.copy_(lib.tensor(b0, device=device))
    cls, kw = OPTIMS[opt_name]
    opt = getattr(lib.optim, cls)(lin.parameters(), **kw, **{path: True})
    scaler = lib.amp.GradScaler(scaler_device, init_scale=2.0 ** 10, growth_interval=3)
    trace = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(lin(x), y)
        scaler.scale(loss).backward()
        if step in INJECT:
            with lib.no_grad():
                lin.weight.grad[1, 2] = math.nan if step == 11 else math.inf
        if clip:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(lin.parameters(), 0.5)
        ret = scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), ret, lin.weight.detach().cpu().numpy().copy(),
                      lin.bias.detach().cpu().numpy().copy(), scaler._get_growth_tracker()))
    return trace


@pytest.mark.parametrize("clip", [False, True], ids=["plain", "unscale-clip"])
@pytest.mark.parametrize("path", ["foreach", "fused"])
@pytest.mark.parametrize("opt_name", list(OPTIMS))
def test_trajectory_matches_torch(device, torch, opt_name, path, clip):
    ours = _run(mt, device, "cuda" if device == "cuda" else "cpu", opt_name, path, clip)
    theirs = _run(torch, "cpu", "cpu", opt_name, path, clip)
    for step, (o, t) in enumerate(zip(ours, theirs)):
        assert o[0] == t[0], f"step {step}: scale {o[0]} != {t[0]}"
        assert o[4] == t[4], f"step {step}: growth tracker {o[4]} != {t[4]}"
        assert (o[1] is None) == (t[1] is None)
        np.testing.assert_allclose(o[2], t[2], rtol=2e-6, atol=2e-7, err_msg=f"weight at step {step}")
        np.testing.assert_allclose(o[3], t[3], rtol=2e-6, atol=2e-7, err_msg=f"bias at step {step}")
    # the injected steps were skipped: the scale backed off after each
    scales = [o[0] for o in ours]
    assert scales[2] == scales[1] / 2


def test_foreach_unscale_primitive(device, torch):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(n).astype(np.float32) * 8 for n in (0, 1, 7, 300, 5000)]
    for bad in (None, math.inf, -math.inf, math.nan):
        a = [x.copy() for x in arrays]
        if bad is not None:
            a[3][17] = bad
        ours = [mt.tensor(x, device=device) for x in a]
        theirs = [torch.tensor(x) for x in a]
        fo, ft = mt.zeros((), device=device), torch.zeros(())
        io, it = mt.full((), 0.125, device=device), torch.full((), 0.125)
        mt._amp_foreach_non_finite_check_and_unscale_(ours, fo, io)
        torch._amp_foreach_non_finite_check_and_unscale_(theirs, ft, it)
        assert float(fo.item()) == float(ft.item())
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(to_np(o), t.numpy())
    with pytest.raises(RuntimeError, match="found_inf must be a 1-element tensor"):
        mt._amp_foreach_non_finite_check_and_unscale_([mt.ones(2, device=device)], mt.zeros(2, device=device),
                                                      mt.ones((), device=device))


def test_update_scale_primitive(device, torch):
    for found, tracker, interval in [(0.0, 0, 3), (0.0, 2, 3), (1.0, 2, 3), (2.0, 0, 1), (0.0, 0, 1)]:
        so, st = mt.full((), 1024.0, device=device), torch.full((), 1024.0)
        go, gt = mt.full((), tracker, dtype=mt.int32, device=device), torch.full((), tracker, dtype=torch.int32)
        mt._amp_update_scale_(so, go, mt.full((), found, device=device), 2.0, 0.5, interval)
        torch._amp_update_scale_(st, gt, torch.full((), found), 2.0, 0.5, interval)
        assert float(so.item()) == float(st.item()) and int(go.item()) == int(gt.item())
    # growth to inf keeps the old scale
    so = mt.full((), 3e38, device=device)
    go = mt.zeros((), dtype=mt.int32, device=device)
    mt._amp_update_scale_(so, go, mt.zeros((), device=device), 2.0, 0.5, 1)
    assert float(so.item()) == pytest.approx(3e38) and int(go.item()) == 0


def test_scale_nested_and_errors(device):
    scaler = mt.amp.GradScaler("cuda" if device == "cuda" else "cpu", init_scale=4.0)
    a, b = mt.ones(2, device=device), mt.full((3,), 2.0, device=device)
    out = scaler.scale([a, (b, [a])])
    assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
    assert_close(out[0], [4.0, 4.0])
    assert_close(out[1][0], [8.0, 8.0, 8.0])
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([a, 3])
    p = mt.nn.Parameter(mt.ones(2, device=device))
    opt = mt.optim.SGD([p], lr=0.1)
    scaler.scale((p * 2).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update\\(\\)"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    scaler.update(new_scale=8.0)
    assert scaler.get_scale() == 8.0


def test_unscaling_float16_gradients_is_refused(device):
    p = mt.nn.Parameter(mt.ones(2, device=device, dtype=mt.float16))
    opt = mt.optim.SGD([p], lr=0.1)
    scaler = mt.amp.GradScaler("cuda" if device == "cuda" else "cpu")
    scaler.scale(p.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.step(opt)


def test_state_dict_factors_and_pickle(torch):
    ours = mt.amp.GradScaler("cpu", init_scale=128.0, growth_interval=7)
    theirs = torch.amp.GradScaler("cpu", init_scale=128.0, growth_interval=7)
    assert ours.state_dict() == theirs.state_dict()
    ours.set_growth_factor(3.0)
    ours.set_backoff_factor(0.25)
    ours.set_growth_interval(5)
    assert (ours.get_growth_factor(), ours.get_backoff_factor(), ours.get_growth_interval()) == (3.0, 0.25, 5)
    fresh = mt.amp.GradScaler("cpu")
    fresh.load_state_dict(ours.state_dict())
    assert fresh.state_dict() == ours.state_dict()
    theirs.load_state_dict(ours.state_dict())  # PyTorch reads ours
    assert theirs.state_dict() == ours.state_dict()
    assert pickle.loads(pickle.dumps(ours)).state_dict() == ours.state_dict()
    off = mt.amp.GradScaler("cpu", enabled=False)
    assert not off.is_enabled() and off.state_dict() == {} and off.get_scale() == 1.0
    x = mt.ones(2)
    assert off.scale(x) is x
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        fresh.load_state_dict({})
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        mt.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        mt.amp.GradScaler("cpu", backoff_factor=1.0)


def test_cuda_scaler_without_cuda_disables(monkeypatch):
    monkeypatch.setattr(mt.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available"):
        s = mt.amp.GradScaler()
    assert not s.is_enabled()


def test_found_inf_stays_on_the_device(device):
    """unscale_ leaves its flag as a tensor on the gradients' device; nothing is read until step."""
    p = mt.nn.Parameter(mt.ones(3, device=device))
    opt = mt.optim.SGD([p], lr=0.1)
    scaler = mt.amp.GradScaler("cuda" if device == "cuda" else "cpu")
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    (flag,) = scaler._found_inf_per_device(opt).values()
    assert isinstance(flag, mt.Tensor) and flag.device.type == device
