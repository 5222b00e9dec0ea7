"""``batch_norm`` and ``BatchNorm1d/2d/3d`` (and ``InstanceNorm1d/2d/3d``): training steps against PyTorch
with copied weights (outputs, every gradient, running statistics, ``num_batches_tracked``), evaluation with
the running estimates, ``momentum=None`` (cumulative average), ``track_running_stats=False``,
``affine=False``, gradcheck / gradgradcheck of the functional form, state dicts, reprs and errors."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F

RNG = np.random.default_rng(3)


def _copy_params(ours, theirs, torch):
    """Give both modules the same random affine parameters."""
    if ours.weight is None:
        return
    wa = RNG.uniform(0.5, 1.5, ours.num_features)
    ba = RNG.standard_normal(ours.num_features)
    with mt.no_grad():
        ours.weight.copy_(mt.tensor(wa))
        if ours.bias is not None:
            ours.bias.copy_(mt.tensor(ba))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(wa))
        if theirs.bias is not None:
            theirs.bias.copy_(torch.tensor(ba))


def _step(ours, theirs, torch, a, device, tol):
    """One forward/backward on both modules; checks output, input gradient and parameter gradients."""
    x = mt.tensor(a, device=device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    y, yt = ours(x), theirs(xt)
    assert_close(y, yt.detach().numpy(), **tol)
    g = RNG.standard_normal(a.shape).astype(a.dtype)
    y.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    assert_close(x.grad, xt.grad.numpy(), **tol)
    for name, p in ours.named_parameters():
        assert_close(p.grad, getattr(theirs, name).grad.numpy(), **tol)
        p.grad = None
        getattr(theirs, name).grad = None


CASES = [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (4, 3, 2, 5)),
         ("BatchNorm3d", (2, 3, 2, 2, 3))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cls,shape", CASES)
@pytest.mark.parametrize("kwargs", [{}, {"momentum": 0.3}, {"momentum": None}, {"affine": False},
                                    {"bias": False}, {"track_running_stats": False}, {"eps": 1e-3}],
                         ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_batchnorm_trains_like_torch(device, torch, cls, shape, kwargs, dtype):
    ours = getattr(mt.nn, cls)(3, device=device, dtype=getattr(mt, dtype), **kwargs)
    theirs = getattr(torch.nn, cls)(3, dtype=getattr(torch, dtype), **kwargs)
    assert repr(ours) == repr(theirs)
    _copy_params(ours, theirs, torch)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == "float64" else dict(rtol=1e-4, atol=2e-5)
    for step in range(4):
        a = (RNG.standard_normal(shape) * (1 + step) + step).astype(dtype)
        _step(ours, theirs, torch, a, device, tol)
    if theirs.track_running_stats:
        assert_close(ours.running_mean, theirs.running_mean.numpy(), **tol)
        assert_close(ours.running_var, theirs.running_var.numpy(), **tol)
        assert int(ours.num_batches_tracked) == int(theirs.num_batches_tracked) == 4
        assert ours.num_batches_tracked.dtype == mt.int64
    else:
        assert ours.running_mean is None and ours.running_var is None and ours.num_batches_tracked is None
    ours.eval()
    theirs.eval()
    a = (RNG.standard_normal(shape) + 0.5).astype(dtype)
    _step(ours, theirs, torch, a, device, tol)
    if theirs.track_running_stats:
        # evaluation leaves the estimates alone
        assert int(ours.num_batches_tracked) == 4
        assert_close(ours.running_mean, theirs.running_mean.numpy(), **tol)


def test_running_stats_formula(device):
    # unbiased batch variance, exponential average with momentum 0.1 from (0, 1)
    a = RNG.standard_normal((6, 2)) * 3 + 1
    m = mt.nn.BatchNorm1d(2, dtype=mt.float64).to(device)
    m(mt.tensor(a, device=device))
    np.testing.assert_allclose(to_np(m.running_mean), 0.1 * a.mean(0), rtol=1e-12)
    np.testing.assert_allclose(to_np(m.running_var), 0.9 + 0.1 * a.var(0, ddof=1), rtol=1e-12)
    # momentum=None: the plain average of the batch statistics seen so far
    c = mt.nn.BatchNorm1d(2, momentum=None, dtype=mt.float64).to(device)
    batches = [RNG.standard_normal((5, 2)) + k for k in range(3)]
    for b in batches:
        c(mt.tensor(b, device=device))
    np.testing.assert_allclose(to_np(c.running_mean), np.mean([b.mean(0) for b in batches], 0), rtol=1e-12)
    np.testing.assert_allclose(to_np(c.running_var), np.mean([b.var(0, ddof=1) for b in batches], 0), rtol=1e-12)


def test_eval_uses_running_estimates(device):
    m = mt.nn.BatchNorm2d(2, dtype=mt.float64).to(device)
    with mt.no_grad():
        m.running_mean.copy_(mt.tensor([1.0, -2.0]))
        m.running_var.copy_(mt.tensor([4.0, 0.25]))
        m.weight.copy_(mt.tensor([2.0, 3.0]))
        m.bias.copy_(mt.tensor([0.5, -0.5]))
    m.eval()
    a = RNG.standard_normal((3, 2, 2, 2))
    y = m(mt.tensor(a, device=device))
    rm = np.array([1.0, -2.0])[:, None, None]
    rv = np.array([4.0, 0.25])[:, None, None]
    w, b = np.array([2.0, 3.0])[:, None, None], np.array([0.5, -0.5])[:, None, None]
    np.testing.assert_allclose(to_np(y), (a - rm) / np.sqrt(rv + 1e-5) * w + b, rtol=1e-12)


def test_track_running_stats_false_uses_batch_stats_in_eval(device, torch):
    m = mt.nn.BatchNorm1d(3, track_running_stats=False, dtype=mt.float64).to(device).eval()
    a = RNG.standard_normal((5, 3)) * 2 + 3
    y = m(mt.tensor(a, device=device))
    np.testing.assert_allclose(to_np(y), (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5), rtol=1e-10)
    assert list(m.state_dict()) == ["weight", "bias"]


def test_functional_batch_norm_gradcheck(device):
    x = mt.tensor(RNG.standard_normal((4, 3, 2)), device=device, requires_grad=True)
    w = mt.tensor(RNG.uniform(0.5, 1.5, 3), device=device, requires_grad=True)
    b = mt.tensor(RNG.standard_normal(3), device=device, requires_grad=True)
    train = lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True)  # noqa: E731
    assert mt.autograd.gradcheck(train, (x, w, b))
    assert mt.autograd.gradgradcheck(train, (x, w, b))
    rm = mt.tensor(RNG.standard_normal(3), device=device)
    rv = mt.tensor(RNG.uniform(0.5, 2, 3), device=device)
    ev = lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False)  # noqa: E731
    assert mt.autograd.gradcheck(ev, (x, w, b))
    assert mt.autograd.gradgradcheck(ev, (x, w, b))
    # with running estimates given, training still differentiates through the batch statistics
    rm2, rv2 = mt.zeros(3, device=device, dtype=mt.float64), mt.ones(3, device=device, dtype=mt.float64)
    assert mt.autograd.gradcheck(lambda x: F.batch_norm(x, rm2, rv2, training=True), (x,))


def test_functional_batch_norm_matches_torch(device, torch):
    a, wa, ba = RNG.standard_normal((5, 3, 4)), RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = mt.zeros(3, device=device, dtype=mt.float64), mt.ones(3, device=device, dtype=mt.float64)
    rmt, rvt = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    x = mt.tensor(a, device=device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    y = F.batch_norm(x, rm, rv, mt.tensor(wa, device=device), mt.tensor(ba, device=device), True, 0.25, 1e-4)
    yt = torch.nn.functional.batch_norm(xt, rmt, rvt, torch.tensor(wa), torch.tensor(ba), True, 0.25, 1e-4)
    assert_close(y, yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    assert_close(rm, rmt.numpy(), rtol=1e-12, atol=1e-14)
    assert_close(rv, rvt.numpy(), rtol=1e-12)
    y.sum().backward()
    yt.sum().backward()
    assert_close(x.grad, xt.grad.numpy(), atol=1e-10)


def test_running_stats_updated_without_history(device):
    rm, rv = mt.zeros(2, device=device), mt.ones(2, device=device)
    x = mt.randn(4, 2, device=device, requires_grad=True)
    v0 = rm._version
    F.batch_norm(x, rm, rv, training=True)
    assert not rm.requires_grad and rm.grad_fn is None
    assert rm._version > v0


def test_half_precision_input(device, torch):
    a = RNG.standard_normal((6, 3)).astype(np.float16)
    m = mt.nn.BatchNorm1d(3).to(device)
    mt_ = torch.nn.BatchNorm1d(3)
    y = m.half()(mt.tensor(a, device=device))
    yt = mt_.half()(torch.tensor(a))
    assert y.dtype == mt.float16
    assert_close(y, yt.float().detach().numpy(), rtol=3e-3, atol=3e-3)
    assert_close(m.running_mean, mt_.running_mean.float().numpy(), rtol=3e-3, atol=3e-3)


def test_input_dim_checks(device):
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        mt.nn.BatchNorm1d(3)(mt.ones(2, 3, 4, 5, device=device))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        mt.nn.BatchNorm2d(3)(mt.ones(2, 3, 4, device=device))
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        mt.nn.BatchNorm3d(3)(mt.ones(2, 3, 4, 4, device=device))
    m = mt.nn.BatchNorm1d(3).to(device)
    with pytest.raises(RuntimeError, match="running_mean should contain 4 elements not 3"):
        m(mt.ones(2, 4, device=device))
    # the refused batch is not counted
    assert int(m.num_batches_tracked) == 0


def test_functional_errors(device):
    x = mt.ones(4, 3, device=device)
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"minitorch_gpu.Size\(\[1, 3\]\)"):
        F.batch_norm(mt.ones(1, 3, device=device), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(x, None, None, training=False)
    with pytest.raises(ValueError, match="running_mean and running_var must either both be None or neither"):
        F.batch_norm(x, mt.zeros(3, device=device), None, training=True)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        F.batch_norm(x, mt.zeros(3, device=device), mt.ones(3, device=device), mt.ones(4, device=device))
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.batch_norm(x.double(), mt.zeros(3, device=device), mt.ones(3, device=device), training=True)
    with pytest.raises(TypeError, match="momentum"):
        F.batch_norm(x, None, None, training=True, momentum=None)
    # a refused call leaves the running estimates alone
    rm, rv = mt.zeros(3, device=device), mt.ones(3, device=device)
    with pytest.raises(RuntimeError):
        F.batch_norm(x, rm, rv, mt.ones(4, device=device), training=True)
    np.testing.assert_array_equal(to_np(rm), np.zeros(3))


def test_module_structure(device, torch):
    m = mt.nn.BatchNorm1d(3)
    assert list(m.state_dict()) == list(torch.nn.BatchNorm1d(3).state_dict())
    assert [n for n, _ in m.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    np.testing.assert_array_equal(to_np(m.running_var), np.ones(3))
    assert mt.nn.BatchNorm1d(3, affine=False).weight is None
    assert mt.nn.BatchNorm1d(3, bias=False).bias is None
    m2 = mt.nn.BatchNorm2d(4, momentum=None, affine=False, track_running_stats=False)
    assert repr(m2) == repr(torch.nn.BatchNorm2d(4, momentum=None, affine=False, track_running_stats=False))
    # to(device) moves the buffers; the counter stays int64
    m3 = mt.nn.BatchNorm1d(3).double().to(device)
    assert m3.running_mean.dtype == mt.float64 and m3.running_mean.device.type == mt.device(device).type
    assert m3.num_batches_tracked.dtype == mt.int64
    m3.train()
    m3(mt.randn(4, 3, device=device, dtype=mt.float64))
    m3.reset_running_stats()
    assert int(m3.num_batches_tracked) == 0
    np.testing.assert_array_equal(to_np(m3.running_mean), np.zeros(3))


def test_state_dict_round_trip_and_old_checkpoints(device):
    m = mt.nn.BatchNorm1d(2).to(device)
    for _ in range(3):
        m(mt.randn(5, 2, device=device))
    sd = m.state_dict()
    fresh = mt.nn.BatchNorm1d(2).to(device)
    fresh.load_state_dict(sd)
    np.testing.assert_array_equal(to_np(fresh.running_mean), to_np(m.running_mean))
    assert int(fresh.num_batches_tracked) == 3
    # a version-1 checkpoint has no num_batches_tracked: it loads, keeping the module's own count
    old = {k: v for k, v in sd.items() if k != "num_batches_tracked"}
    old_meta = type(sd._metadata)() if hasattr(sd, "_metadata") else None
    old = type(sd)(old)
    if old_meta is not None:
        old_meta[""] = {"version": 1}
        old._metadata = old_meta
    fresh2 = mt.nn.BatchNorm1d(2).to(device)
    fresh2.load_state_dict(old)
    np.testing.assert_array_equal(to_np(fresh2.running_var), to_np(m.running_var))
    assert int(fresh2.num_batches_tracked) == 0


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm1d", (3, 5)),
                                       ("InstanceNorm2d", (2, 3, 4, 4)), ("InstanceNorm3d", (2, 3, 2, 2, 2))])
@pytest.mark.parametrize("kwargs", [{}, {"affine": True}, {"track_running_stats": True}])
def test_instance_norm_modules(device, torch, cls, shape, kwargs):
    ours = getattr(mt.nn, cls)(3, dtype=mt.float64, **kwargs).to(device)
    theirs = getattr(torch.nn, cls)(3, dtype=torch.float64, **kwargs)
    assert repr(ours) == repr(theirs)
    _copy_params(ours, theirs, torch)
    tol = dict(rtol=1e-10, atol=1e-10)
    for _ in range(2):
        _step(ours, theirs, torch, RNG.standard_normal(shape) * 2 + 1, device, tol)
    if kwargs.get("track_running_stats"):
        assert_close(ours.running_mean, theirs.running_mean.numpy(), **tol)
        assert_close(ours.running_var, theirs.running_var.numpy(), **tol)
        ours.eval()
        theirs.eval()
        _step(ours, theirs, torch, RNG.standard_normal(shape), device, tol)


def test_instance_norm_checks(device):
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        mt.nn.InstanceNorm1d(3)(mt.ones(2, 3, 4, 5, device=device))
    with pytest.raises(ValueError, match="to match num_features"):
        mt.nn.InstanceNorm1d(4, affine=True)(mt.ones(2, 3, 5, device=device))
    with pytest.warns(UserWarning, match="does not match num_features"):
        mt.nn.InstanceNorm1d(4)(mt.randn(2, 3, 5, device=device))


# ---------------------------------------------------------------------- SyncBatchNorm in one process
# (synchronised across ranks: tests/distributed/test_mpi_sync_batchnorm.py)

@pytest.fixture
def no_process_group():
    if mt.distributed.is_initialized():
        pytest.skip("a process group is initialized in this process")


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (4, 3, 2, 5), (2, 3, 2, 2, 3)])
@pytest.mark.parametrize("kwargs", [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}],
                         ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_sync_batchnorm_outside_a_process_group_is_batchnorm(device, torch, no_process_group, shape, kwargs):
    # PyTorch's SyncBatchNorm falls back to batch norm without a process group too: it is the oracle
    ours = mt.nn.SyncBatchNorm(3, device=device, dtype=mt.float64, **kwargs)
    theirs = torch.nn.SyncBatchNorm(3, dtype=torch.float64, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_params(ours, theirs, torch)
    tol = dict(rtol=1e-10, atol=1e-10)
    for step in range(3):
        _step(ours, theirs, torch, RNG.standard_normal(shape) * (1 + step) + step, device, tol)
    for name, buf in theirs.named_buffers():
        assert_close(getattr(ours, name), buf.numpy(), **tol)
    ours.eval()
    theirs.eval()
    _step(ours, theirs, torch, RNG.standard_normal(shape), device, tol)


def test_sync_batchnorm_checks(device, torch, no_process_group):
    for bad, message in (((4,), r"expected at least 2D input \(got 1D input\)"),
                         ((4, 0, 2), "SyncBatchNorm number of input channels should be non-zero")):
        for m, x in ((mt.nn.SyncBatchNorm(3).to(device), mt.ones(*bad, device=device)),
                     (torch.nn.SyncBatchNorm(3), torch.ones(*bad))):
            with pytest.raises(ValueError, match=message):
                m(x)


def test_convert_sync_batchnorm_like_torch(device, torch, no_process_group):
    def model(nn):
        return nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2, momentum=None),
                             nn.Sequential(nn.BatchNorm1d(3, affine=False), nn.Linear(3, 3)),
                             nn.BatchNorm3d(5, track_running_stats=False, bias=False))

    ours = model(mt.nn).to(device)
    weight = ours[1].weight
    ours = mt.nn.SyncBatchNorm.convert_sync_batchnorm(ours)
    theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model(torch.nn))
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours[1].weight is weight and ours[1].weight.device.type == mt.device(device).type
