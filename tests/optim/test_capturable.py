"""Adam and AdamW with ``capturable=True``: step counters on the parameters' device, PyTorch's trajectory, and a
step captured in a CUDA graph that counts on at every replay."""
import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import assert_close

STEPS = 8


@pytest.fixture
def float64_steps():
    """Step counters in float64 (the default dtype's, as in PyTorch): a float32 counter rounds the bias
    corrections computed from it on the device to float32, 1e-5 away from PyTorch's host-side float64 ones."""
    prev = mt.get_default_dtype()
    mt.set_default_dtype(mt.float64)
    yield
    mt.set_default_dtype(prev)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal((5, 3)) * 0.5, rng.standard_normal(5) * 0.1]
    batches = [(rng.standard_normal((4, 3)), rng.standard_normal((4, 5))) for _ in range(STEPS)]
    return weights, batches


def _run(lib, opt_cls, kwargs, device=None, lr_tensor=False, schedule=False):
    weights, batches = _data()
    ps = [lib.tensor(w.copy(), requires_grad=True) if device is None else
          lib.tensor(w.copy(), device=device, requires_grad=True) for w in weights]
    if lr_tensor:
        kwargs = dict(kwargs, lr=lib.tensor(kwargs["lr"], dtype=lib.float64, device=device))
    opt = opt_cls(ps, **kwargs)
    sched = lib.optim.lr_scheduler.LambdaLR(opt, lambda i: 1.0 / (1 + i)) if schedule else None
    for x, t in batches:
        opt.zero_grad()
        w, b = ps
        kw = {} if device is None else dict(device=device)
        d = (lib.tensor(x, **kw) @ w.t() + b).tanh() - lib.tensor(t, **kw)
        (d * d).mean().backward()
        opt.step()
        if sched is not None:
            sched.step()
    return ps, opt


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("impl", [dict(foreach=True), dict(foreach=False), dict(), dict(fused=True)])
@pytest.mark.parametrize("extra", [dict(), dict(amsgrad=True, weight_decay=0.1), dict(maximize=True)])
def test_capturable_follows_pytorch(device, torch, name, impl, extra, float64_steps):
    if device == "cpu":
        pytest.skip("capturable=True needs CUDA parameters (the CPU case is test_capturable_needs_cuda)")
    kwargs = dict(lr=0.05, **extra)
    ours, opt = _run(mt, getattr(mt.optim, name), dict(kwargs, capturable=True, **impl), device)
    ref, _ = _run(torch, getattr(torch.optim, name), kwargs)
    for p, q in zip(ours, ref):
        assert_close(p, q.detach().numpy(), rtol=1e-9, atol=1e-11)
    for p in ours:
        step = opt.state[p]["step"]
        assert step.device == p.device
        assert step.item() == STEPS


def test_capturable_with_a_device_lr_and_a_scheduler(device, torch, float64_steps):
    if device == "cpu":
        pytest.skip("capturable=True needs CUDA parameters")
    ours, opt = _run(mt, mt.optim.AdamW, dict(lr=0.05, capturable=True), device, lr_tensor=True, schedule=True)
    ref, _ = _run(torch, torch.optim.AdamW, dict(lr=0.05), schedule=True)
    for p, q in zip(ours, ref):
        assert_close(p, q.detach().numpy(), rtol=1e-9, atol=1e-11)
    assert opt.param_groups[0]["lr"].device == ours[0].device


def test_capturable_needs_cuda(device):
    if device != "cpu":
        pytest.skip("the CPU case")
    p = mt.ones(3, requires_grad=True)
    opt = mt.optim.AdamW([p], capturable=True)
    p.sum().backward()
    with pytest.raises(AssertionError, match=r"If capturable=True, params and state_steps must be on supported "
                                             r"devices: \['cuda'\]"):
        opt.step()


def test_a_captured_step_counts_on_at_every_replay(device):
    if device == "cpu":
        pytest.skip("CUDA graphs")
    mt.manual_seed(0)
    eager_p = mt.randn(4, 3, device=device, requires_grad=True)
    graph_p = eager_p.detach().clone().requires_grad_(True)
    eager = mt.optim.Adam([eager_p], lr=0.1, capturable=True)
    opt = mt.optim.Adam([graph_p], lr=0.1, capturable=True)
    for p, o in ((eager_p, eager), (graph_p, opt)):  # the state exists before capture (warm-up)
        p.square().sum().backward()
        o.step()
    g = mt.cuda.CUDAGraph()
    with mt.cuda.graph(g):
        opt.step()  # the gradient stays: each replay is one more step with it
    for _ in range(3):
        g.replay()
        eager.step()
    assert opt.state[graph_p]["step"].item() == 4
    assert_close(graph_p, eager_p, rtol=1e-6, atol=1e-7)
