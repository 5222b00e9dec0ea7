"""Losses: every functional form and module against PyTorch (forward values and the gradients of every
differentiable input, for each reduction and option), gradcheck / gradgradcheck in float64, the error and
warning cases PyTorch raises, and module reprs."""
import re
import warnings

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F
from minitorch_gpu import nn
from minitorch_gpu.autograd import gradcheck, gradgradcheck

REDUCTIONS = ["mean", "sum", "none"]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _both(torch, arr, device, requires_grad=False):
    """The same data as a minitorch tensor on ``device`` and a torch CPU tensor."""
    a = np.asarray(arr)
    m = mt.tensor(a, device=device)
    t = torch.tensor(a)
    if requires_grad:
        m.requires_grad_()
        t.requires_grad_()
    return m, t


def _compare(torch, ours, theirs, ours_in, theirs_in, rtol=1e-6, atol=1e-9, seed=1):
    """Forward values, dtype and shape, then the gradients of every input that requires grad, for a random
    output gradient."""
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert_close(ours, theirs.detach().numpy(), rtol=rtol, atol=atol)
    if not any(t.requires_grad for t in theirs_in):
        return
    g = _rng(seed).standard_normal(tuple(theirs.shape))
    gm = mt.tensor(g, dtype=ours.dtype, device=ours.device)
    gt = torch.tensor(g, dtype=theirs.dtype)
    ours.backward(gm)
    theirs.backward(gt)
    for m, t in zip(ours_in, theirs_in):
        if t.requires_grad:
            assert m.grad is not None
            assert m.grad.dtype == m.dtype
            assert_close(m.grad, t.grad.numpy(), rtol=rtol, atol=atol)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# ====================================================================== regression losses

_REGRESSION = {
    "mse": ("mse_loss", {}),
    "l1": ("l1_loss", {}),
    "smooth_l1": ("smooth_l1_loss", {"beta": 0.5}),
    "smooth_l1_beta0": ("smooth_l1_loss", {"beta": 0.0}),
    "huber": ("huber_loss", {"delta": 0.7}),
}


@pytest.mark.parametrize("name", list(_REGRESSION))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_match_torch(device, torch, name, reduction):
    fname, kw = _REGRESSION[name]
    rng = _rng()
    x = rng.standard_normal((4, 5))
    for target in (rng.standard_normal((4, 5)), rng.standard_normal(5)):
        xm, xt = _both(torch, x, device, True)
        ym, yt = _both(torch, target, device, True)
        ours = _quiet(getattr(F, fname), xm, ym, reduction=reduction, **kw)
        theirs = _quiet(getattr(torch.nn.functional, fname), xt, yt, reduction=reduction, **kw)
        _compare(torch, ours, theirs, (xm, ym), (xt, yt))


@pytest.mark.parametrize("fname", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_regression_losses_match_torch(device, torch, fname, reduction):
    rng = _rng(2)
    xm, xt = _both(torch, rng.standard_normal((3, 4)), device, True)
    ym, yt = _both(torch, rng.standard_normal((3, 4)), device, True)
    wm, wt = _both(torch, rng.random((3, 4)), device)
    ours = getattr(F, fname)(xm, ym, reduction=reduction, weight=wm)
    theirs = getattr(torch.nn.functional, fname)(xt, yt, reduction=reduction, weight=wt)
    _compare(torch, ours, theirs, (xm, ym), (xt, yt))


def test_regression_float32_and_promotion(device, torch):
    rng = _rng(3)
    x = rng.standard_normal((6, 7)).astype(np.float32)
    y = rng.standard_normal((6, 7)).astype(np.float32)
    for fname in ("mse_loss", "smooth_l1_loss", "huber_loss", "l1_loss"):
        xm, xt = _both(torch, x, device, True)
        ym, yt = _both(torch, y, device)
        _compare(torch, getattr(F, fname)(xm, ym), getattr(torch.nn.functional, fname)(xt, yt), (xm,), (xt,),
                 rtol=1e-5, atol=1e-6)
    # float32 input, float64 target: computed and returned in float64, the input's gradient stays float32
    xm, xt = _both(torch, x, device, True)
    ym, yt = _both(torch, y.astype(np.float64), device, True)
    _compare(torch, F.mse_loss(xm, ym), torch.nn.functional.mse_loss(xt, yt), (xm, ym), (xt, yt),
             rtol=1e-5, atol=1e-6)
    # an integer target joins the input's dtype
    out = F.mse_loss(mt.ones(3, device=device), mt.tensor([1, 2, 3], device=device))
    assert out.dtype == mt.float32 and abs(out.item() - 5 / 3) < 1e-6


def test_regression_half_precision(device):
    x = mt.tensor([0.5, -1.5, 2.0, 3.0], dtype=mt.float16, device=device, requires_grad=True)
    y = mt.tensor([0.0, 0.0, 1.0, -1.0], dtype=mt.float16, device=device)
    loss = F.mse_loss(x, y)
    assert loss.dtype == mt.float16
    assert abs(loss.item() - (0.25 + 2.25 + 1 + 16) / 4) < 1e-2
    loss.backward()
    assert x.grad.dtype == mt.float16
    assert_close(x.grad, np.array([0.25, -0.75, 0.5, 2.0]), rtol=1e-3, atol=1e-3)


def test_empty_inputs_give_nan_mean(device):
    e = mt.zeros(0, device=device)
    assert np.isnan(F.mse_loss(e, e).item())
    assert F.mse_loss(e, e, reduction="sum").item() == 0
    assert np.isnan(F.binary_cross_entropy(e, e).item())
    assert np.isnan(F.cross_entropy(mt.zeros(0, 4, device=device), mt.zeros(0, dtype=mt.int64, device=device)).item())


# ====================================================================== binary cross-entropy

@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight", [None, "full", "broadcast"])
def test_bce_matches_torch(device, torch, reduction, weight):
    rng = _rng(4)
    p = 1 / (1 + np.exp(-3 * rng.standard_normal((4, 5))))
    p[0, :4] = [0.0, 1.0, 1e-12, 1 - 1e-12]  # the clamped logs: finite loss and gradient at 0 and 1
    y = rng.random((4, 5))
    y[0, :2] = [1.0, 0.0]
    xm, xt = _both(torch, p, device, True)
    ym, yt = _both(torch, y, device, True)
    kw_m, kw_t = {}, {}
    if weight is not None:
        w = rng.random((4, 5) if weight == "full" else (5,))
        kw_m["weight"], kw_t["weight"] = _both(torch, w, device)
    ours = F.binary_cross_entropy(xm, ym, reduction=reduction, **kw_m)
    theirs = torch.nn.functional.binary_cross_entropy(xt, yt, reduction=reduction, **kw_t)
    assert_close(ours, theirs.detach().numpy(), rtol=1e-6, atol=1e-9)
    g = _rng(9).standard_normal(tuple(theirs.shape))
    # the target's gradient is infinite where the input is exactly 0 or 1 (in PyTorch too)
    with np.errstate(divide="ignore"):
        ours.backward(mt.tensor(g, device=device))
    theirs.backward(torch.tensor(g))
    assert_close(xm.grad, xt.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert_close(ym.grad.detach()[1:], yt.grad[1:].numpy(), rtol=1e-6, atol=1e-9)
    assert np.array_equal(np.isinf(to_np(ym.grad)), np.isinf(yt.grad.numpy()))


def test_bce_float32(device, torch):
    rng = _rng(5)
    p = (1 / (1 + np.exp(-rng.standard_normal((8, 3))))).astype(np.float32)
    p[0] = [0.0, 1.0, 1e-10]
    y = rng.random((8, 3)).astype(np.float32)
    xm, xt = _both(torch, p, device, True)
    ym, yt = _both(torch, y, device)
    ours = F.binary_cross_entropy(xm, ym, reduction="none")
    theirs = torch.nn.functional.binary_cross_entropy(xt, yt, reduction="none")
    _compare(torch, ours, theirs, (xm,), (xt,), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
def test_bce_with_logits_matches_torch(device, torch, reduction, weights):
    rng = _rng(6)
    x = 4 * rng.standard_normal((5, 3))
    x[0] = [60.0, -60.0, 0.0]  # saturated logits stay finite and exact
    xm, xt = _both(torch, x, device, True)
    ym, yt = _both(torch, rng.random((5, 3)), device, True)
    kw_m, kw_t = {}, {}
    if weights in ("weight", "both"):
        kw_m["weight"], kw_t["weight"] = _both(torch, rng.random((5, 1)), device)
    if weights in ("pos_weight", "both"):
        kw_m["pos_weight"], kw_t["pos_weight"] = _both(torch, 3 * rng.random(3), device)
    ours = F.binary_cross_entropy_with_logits(xm, ym, reduction=reduction, **kw_m)
    theirs = torch.nn.functional.binary_cross_entropy_with_logits(xt, yt, reduction=reduction, **kw_t)
    _compare(torch, ours, theirs, (xm, ym), (xt, yt))


def test_bce_with_logits_float32_promotion(device, torch):
    rng = _rng(7)
    xm, xt = _both(torch, rng.standard_normal((4, 2)).astype(np.float32), device, True)
    ym, yt = _both(torch, rng.random((4, 2)), device)
    _compare(torch, F.binary_cross_entropy_with_logits(xm, ym),
             torch.nn.functional.binary_cross_entropy_with_logits(xt, yt), (xm,), (xt,), rtol=1e-5, atol=1e-6)


# ====================================================================== KL divergence

@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(device, torch, reduction, log_target):
    rng = _rng(8)
    q = rng.random((3, 4))
    q[0, 0] = 0.0  # a zero probability contributes nothing
    logp = np.log(rng.dirichlet(np.ones(4), size=3))
    target = np.log(q + 0.1) if log_target else q
    xm, xt = _both(torch, logp, device, True)
    ym, yt = _both(torch, target, device, log_target)
    ours = _quiet(F.kl_div, xm, ym, reduction=reduction, log_target=log_target)
    theirs = _quiet(torch.nn.functional.kl_div, xt, yt, reduction=reduction, log_target=log_target)
    _compare(torch, ours, theirs, (xm, ym), (xt, yt))


def test_kl_div_target_gradient(device, torch):
    rng = _rng(10)
    xm, xt = _both(torch, np.log(rng.dirichlet(np.ones(4), size=2)), device, True)
    ym, yt = _both(torch, rng.random((2, 4)) + 0.05, device, True)
    _compare(torch, F.kl_div(xm, ym, reduction="batchmean"),
             torch.nn.functional.kl_div(xt, yt, reduction="batchmean"), (xm, ym), (xt, yt))


def test_kl_div_mean_warns_like_torch(device):
    x = mt.zeros(2, 3, device=device)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(x, x.exp())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.kl_div(x, x.exp(), reduction="batchmean")
        F.kl_div(x, x.exp(), reduction="sum")


# ====================================================================== NLL and cross-entropy (class indices)

_CLASS_SHAPES = {
    "2d": ((6, 5), (6,)),
    "3d": ((3, 4, 5), (3, 5)),
    "4d": ((2, 3, 3, 2), (2, 3, 2)),
    "unbatched": ((5,), ()),
}


def _class_case(shape_name, ignore_index, seed=11):
    rng = _rng(seed)
    xshape, tshape = _CLASS_SHAPES[shape_name]
    c = xshape[0] if len(xshape) == 1 else xshape[1]
    x = 2 * rng.standard_normal(xshape)
    t = rng.integers(0, c, tshape)
    if ignore_index is not None and t.size > 1:
        t.reshape(-1)[[0, t.size // 2]] = ignore_index
    return x, t, rng.random(c) + 0.1


@pytest.mark.parametrize("shape", list(_CLASS_SHAPES))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_nll_loss_matches_torch(device, torch, shape, weighted, ignore_index):
    x, t, w = _class_case(shape, ignore_index)
    for reduction in REDUCTIONS:
        xm, xt = _both(torch, x, device, True)
        tm, tt = _both(torch, t, device)
        kw_m, kw_t = {}, {}
        if weighted:
            kw_m["weight"], kw_t["weight"] = _both(torch, w, device)
        ours = F.nll_loss(xm, tm, ignore_index=ignore_index, reduction=reduction, **kw_m)
        theirs = torch.nn.functional.nll_loss(xt, tt, ignore_index=ignore_index, reduction=reduction, **kw_t)
        _compare(torch, ours, theirs, (xm,), (xt,))


@pytest.mark.parametrize("shape", list(_CLASS_SHAPES))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
def test_cross_entropy_class_indices_match_torch(device, torch, shape, weighted, ignore_index, label_smoothing):
    x, t, w = _class_case(shape, ignore_index, seed=12)
    for reduction in REDUCTIONS:
        xm, xt = _both(torch, x, device, True)
        tm, tt = _both(torch, t, device)
        kw_m, kw_t = {}, {}
        if weighted:
            kw_m["weight"], kw_t["weight"] = _both(torch, w, device)
        ours = F.cross_entropy(xm, tm, ignore_index=ignore_index, reduction=reduction,
                               label_smoothing=label_smoothing, **kw_m)
        theirs = torch.nn.functional.cross_entropy(xt, tt, ignore_index=ignore_index, reduction=reduction,
                                                   label_smoothing=label_smoothing, **kw_t)
        _compare(torch, ours, theirs, (xm,), (xt,))


@pytest.mark.parametrize("shape", ["2d", "3d", "unbatched"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities_match_torch(device, torch, shape, weighted, label_smoothing):
    rng = _rng(13)
    xshape = _CLASS_SHAPES[shape][0]
    c = xshape[0] if len(xshape) == 1 else xshape[1]
    probs = rng.random(xshape)
    probs /= probs.sum(axis=0 if len(xshape) == 1 else 1, keepdims=True)
    for reduction in REDUCTIONS:
        xm, xt = _both(torch, 2 * rng.standard_normal(xshape), device, True)
        ym, yt = _both(torch, probs, device, True)
        ins_m, ins_t = [xm, ym], [xt, yt]
        kw_m, kw_t = {}, {}
        if weighted:
            # class weights of a probability target are differentiable (PyTorch composes this loss)
            kw_m["weight"], kw_t["weight"] = _both(torch, rng.random(c) + 0.1, device, True)
            ins_m.append(kw_m["weight"])
            ins_t.append(kw_t["weight"])
        ours = F.cross_entropy(xm, ym, reduction=reduction, label_smoothing=label_smoothing, **kw_m)
        theirs = torch.nn.functional.cross_entropy(xt, yt, reduction=reduction, label_smoothing=label_smoothing,
                                                   **kw_t)
        _compare(torch, ours, theirs, ins_m, ins_t)


def test_cross_entropy_float32_large_batch(device, torch):
    # the shapes of the training benchmarks, in float32: values and gradients at float32 accuracy
    rng = _rng(14)
    for n, c in ((256, 10), (512, 256)):
        x = (3 * rng.standard_normal((n, c))).astype(np.float32)
        t = rng.integers(0, c, n)
        xm, xt = _both(torch, x, device, True)
        tm, tt = _both(torch, t, device)
        ours = F.cross_entropy(xm, tm)
        theirs = torch.nn.functional.cross_entropy(xt, tt)
        assert ours.dtype == mt.float32
        _compare(torch, ours, theirs, (xm,), (xt,), rtol=1e-5, atol=1e-7)


def test_cross_entropy_extreme_logits_are_stable(device, torch):
    x = np.array([[1000.0, -1000.0, 0.0], [-1e4, -1e4 + 1, -1e4 + 2], [50.0, 50.0, 50.0]], dtype=np.float32)
    t = np.array([1, 0, 2])
    xm, xt = _both(torch, x, device, True)
    tm, tt = _both(torch, t, device)
    _compare(torch, F.cross_entropy(xm, tm, reduction="none"),
             torch.nn.functional.cross_entropy(xt, tt, reduction="none"), (xm,), (xt,), rtol=1e-5, atol=1e-6)
    # non-finite logits give PyTorch's NaN / inf
    x = [[float("nan"), 0.0, 1.0], [0.0, 1.0, 2.0], [float("inf"), 0.0, 1.0], [0.0, float("-inf"), 1.0]]
    t = [0, 1, 2, 1]
    with np.errstate(invalid="ignore"):
        ours = F.cross_entropy(mt.tensor(x, device=device), mt.tensor(t, device=device), reduction="none")
    theirs = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t), reduction="none")
    np.testing.assert_allclose(to_np(ours), theirs.numpy(), rtol=1e-6)


def test_cross_entropy_half_precision(device, torch):
    rng = _rng(15)
    x = rng.standard_normal((8, 4)).astype(np.float16)
    t = rng.integers(0, 4, 8)
    xm = mt.tensor(x, device=device, requires_grad=True)
    loss = F.cross_entropy(xm, mt.tensor(t, device=device))
    assert loss.dtype == mt.float16
    loss.backward()
    assert xm.grad.dtype == mt.float16
    xt = torch.tensor(x.astype(np.float32), requires_grad=True)
    ref = torch.nn.functional.cross_entropy(xt, torch.tensor(t))
    ref.backward()
    assert abs(loss.item() - ref.item()) < 2e-3
    assert_close(xm.grad, xt.grad.numpy(), rtol=1e-2, atol=1e-3)


def test_cross_entropy_uint8_targets(device, torch):
    x, t, _ = _class_case("2d", None)
    ours = F.cross_entropy(mt.tensor(x, device=device), mt.tensor(t.astype(np.uint8), device=device))
    theirs = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t.astype(np.uint8)))
    assert_close(ours, theirs.numpy())


def test_all_targets_ignored(device, torch):
    x = mt.randn(3, 4, device=device, requires_grad=True)
    t = mt.full((3,), -100, dtype=mt.int64, device=device)
    for ls in (0.0, 0.1):
        assert np.isnan(F.cross_entropy(x, t, label_smoothing=ls).item())
        s = F.cross_entropy(x, t, reduction="sum", label_smoothing=ls)
        assert s.item() == 0
        s.backward()
        assert not x.grad.abs().sum().item()
    assert np.isnan(F.nll_loss(x, t).item())


def test_unbatched_target_of_size_one(device, torch):
    x = _rng(16).standard_normal(5)
    for reduction in REDUCTIONS:
        ours = F.cross_entropy(mt.tensor(x, device=device), mt.tensor([3], device=device), reduction=reduction)
        theirs = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor([3]), reduction=reduction)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert_close(ours, theirs.numpy())


def test_cross_entropy_backward_frees_saved_tensors(device):
    x = mt.randn(4, 3, device=device, requires_grad=True)
    loss = F.cross_entropy(x, mt.tensor([0, 1, 2, 1], device=device))
    loss.backward(retain_graph=True)
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_retained_graph_gives_the_same_gradient_twice(device, torch, reduction):
    # on CUDA the forward computes the gradient and the first backward scales it in place: the second backward
    # must recompute it rather than scale the handed-out buffer again
    rng = _rng(19)
    x = rng.standard_normal((6, 97)).astype(np.float32)
    t = np.array([1, 0, -100, 96, 5, 50])
    w = (rng.random(97) + 0.5).astype(np.float32)
    g = rng.standard_normal(6).astype(np.float32) if reduction == "none" else np.float32(1.7)
    ours, theirs = _both(torch, x, device, requires_grad=True)
    kw = dict(weight=mt.tensor(w, device=device), label_smoothing=0.1, reduction=reduction)
    loss = F.cross_entropy(ours, mt.tensor(t, device=device), **kw)
    ref = torch.nn.functional.cross_entropy(theirs, torch.tensor(t), weight=torch.tensor(w), label_smoothing=0.1,
                                            reduction=reduction)
    (want,) = torch.autograd.grad(ref, theirs, torch.tensor(g))
    (first,) = mt.autograd.grad(loss, ours, mt.tensor(g, device=device), retain_graph=True)
    (second,) = mt.autograd.grad(loss, ours, mt.tensor(g, device=device))
    assert_close(first, want.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(second, want.numpy(), rtol=1e-5, atol=1e-6)


# ====================================================================== gradients of gradients

def _class_inputs(device):
    rng = _rng(17)
    x = mt.tensor(rng.standard_normal((4, 5)), device=device, requires_grad=True)
    t = mt.tensor([1, 0, -100, 4], device=device)
    w = mt.tensor(rng.random(5) + 0.1, device=device)
    return x, t, w


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_create_graph_matches_plain_backward(device, reduction):
    x, t, w = _class_inputs(device)
    for kw in ({}, {"weight": w, "label_smoothing": 0.2}):
        (plain,) = mt.autograd.grad(F.cross_entropy(x, t, reduction=reduction, **kw).sum(), x)
        (graph,) = mt.autograd.grad(F.cross_entropy(x, t, reduction=reduction, **kw).sum(), x, create_graph=True)
        assert graph.requires_grad
        assert_close(graph, to_np(plain), rtol=1e-12, atol=1e-14)


def test_cross_entropy_double_backward_matches_torch(device, torch):
    rng = _rng(18)
    x = rng.standard_normal((4, 5))
    v = rng.standard_normal((4, 5))
    t = np.array([1, 0, 2, 4])
    w = rng.random(5) + 0.1
    for kw in ({}, {"label_smoothing": 0.2, "ignore_index": 0}):
        xm, xt = _both(torch, x, device, True)
        (gm,) = mt.autograd.grad(F.cross_entropy(xm, mt.tensor(t, device=device), weight=mt.tensor(w, device=device),
                                                 **kw), xm, create_graph=True)
        (gt,) = torch.autograd.grad(torch.nn.functional.cross_entropy(xt, torch.tensor(t), weight=torch.tensor(w),
                                                                       **kw), xt, create_graph=True)
        (hm,) = mt.autograd.grad((gm * mt.tensor(v, device=device)).sum(), xm)
        (ht,) = torch.autograd.grad((gt * torch.tensor(v)).sum(), xt)
        assert_close(hm, ht.numpy(), rtol=1e-9, atol=1e-12)


def _gradcheck_cases(device):
    rng = _rng(19)

    def leaf(shape, lo=None):
        a = rng.standard_normal(shape) if lo is None else lo + (1 - 2 * lo) * rng.random(shape)
        return mt.tensor(a, device=device, requires_grad=True)

    x, t, w = _class_inputs(device)
    probs = leaf((4, 5), 0.05)
    pw = mt.tensor(rng.random(3) * 2, device=device)
    wt = mt.tensor(rng.random((2, 3)), device=device)
    return {
        "mse": (lambda a, b: F.mse_loss(a, b), (leaf((2, 3)), leaf((2, 3)))),
        "mse_none_bcast": (lambda a, b: _quiet(F.mse_loss, a, b, reduction="none"), (leaf((2, 3)), leaf(3))),
        "l1": (lambda a, b: F.l1_loss(a, b, reduction="sum"), (leaf((2, 3)), leaf((2, 3)))),
        "smooth_l1": (lambda a, b: F.smooth_l1_loss(a, b, beta=2.0), (leaf((2, 3)), leaf((2, 3)))),
        "huber": (lambda a, b: F.huber_loss(a, b, delta=0.5, reduction="none"), (leaf((2, 3)), leaf((2, 3)))),
        "bce": (lambda a, b: F.binary_cross_entropy(a, b, weight=wt), (leaf((2, 3), 0.1), leaf((2, 3), 0.1))),
        "bce_logits": (lambda a, b: F.binary_cross_entropy_with_logits(a, b, weight=wt, pos_weight=pw),
                       (leaf((2, 3)), leaf((2, 3), 0.1))),
        "kl_div": (lambda a, b: F.kl_div(a, b, reduction="batchmean"), (leaf((2, 3)), leaf((2, 3), 0.1))),
        "kl_div_log_target": (lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True),
                              (leaf((2, 3)), leaf((2, 3)))),
        "nll": (lambda a: F.nll_loss(a, t, weight=w, reduction="none"), (x,)),
        "cross_entropy": (lambda a: F.cross_entropy(a, t, weight=w, label_smoothing=0.1), (x,)),
        "cross_entropy_none": (lambda a: F.cross_entropy(a, t, reduction="none"), (x,)),
        "cross_entropy_probs": (lambda a, b: F.cross_entropy(a, b, weight=w, label_smoothing=0.1), (x, probs)),
        "soft_margin": (lambda a: F.soft_margin_loss(a, mt.tensor([[1.0, -1, 1], [-1, 1, 1]], device=device)),
                        (leaf((2, 3)),)),
        "margin_ranking": (lambda a, b: F.margin_ranking_loss(a, b, mt.tensor([1.0, -1, 1], device=device),
                                                              margin=0.1), (leaf(3), leaf(3))),
        "cosine_embedding": (lambda a, b: F.cosine_embedding_loss(a, b, mt.tensor([1.0, -1], device=device),
                                                                  margin=-0.5), (leaf((2, 3)), leaf((2, 3)))),
    }


_GRADCHECK = ["mse", "mse_none_bcast", "l1", "smooth_l1", "huber", "bce", "bce_logits", "kl_div",
              "kl_div_log_target", "nll", "cross_entropy", "cross_entropy_none", "cross_entropy_probs",
              "soft_margin", "margin_ranking", "cosine_embedding"]


@pytest.mark.parametrize("name", _GRADCHECK)
def test_gradcheck(device, name):
    fn, inputs = _gradcheck_cases(device)[name]
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("name", ["mse", "mse_none_bcast", "smooth_l1", "huber", "bce", "bce_logits", "kl_div",
                                  "nll", "cross_entropy", "cross_entropy_none", "cross_entropy_probs"])
def test_gradgradcheck(device, name):
    fn, inputs = _gradcheck_cases(device)[name]
    assert gradgradcheck(fn, inputs)


# ====================================================================== margin losses

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_losses_match_torch(device, torch, reduction):
    rng = _rng(20)
    sign = np.where(rng.random(4) > 0.5, 1.0, -1.0)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    xm, xt = _both(torch, a, device, True)
    ym, yt = _both(torch, np.where(rng.random((4, 3)) > 0.5, 1.0, -1.0), device)
    _compare(torch, F.soft_margin_loss(xm, ym, reduction=reduction),
             torch.nn.functional.soft_margin_loss(xt, yt, reduction=reduction), (xm,), (xt,))
    xm, xt = _both(torch, a[:, 0], device, True)
    ym, yt = _both(torch, b[:, 0], device, True)
    sm, st = _both(torch, sign, device)
    _compare(torch, F.margin_ranking_loss(xm, ym, sm, margin=0.2, reduction=reduction),
             torch.nn.functional.margin_ranking_loss(xt, yt, st, margin=0.2, reduction=reduction), (xm, ym), (xt, yt))
    xm, xt = _both(torch, a, device, True)
    ym, yt = _both(torch, b, device, True)
    _compare(torch, F.cosine_embedding_loss(xm, ym, sm, margin=0.1, reduction=reduction),
             torch.nn.functional.cosine_embedding_loss(xt, yt, st, margin=0.1, reduction=reduction), (xm, ym), (xt, yt))


# ====================================================================== errors and warnings

def _errors():
    """(name, call(lib, F, device)) pairs that PyTorch rejects; ours must raise the same exception type."""
    def ce(shape, target, **kw):
        return lambda lib, f, d: f.cross_entropy(lib.zeros(shape, device=d), target(lib, d), **kw)

    def longs(v):
        return lambda lib, d: lib.tensor(v, device=d)

    return [
        ("target out of range", ce((3, 5), longs([0, 5, 1])), r"Target 5 is out of bounds\."),
        ("negative target", ce((3, 5), longs([0, -1, 1])), r"Target -1 is out of bounds\."),
        ("out of range next to ignored", ce((3, 5), longs([-100, 7, 1])), r"Target 7 is out of bounds\."),
        ("nll target out of range",
         lambda lib, f, d: f.nll_loss(lib.zeros(2, 3, device=d), lib.tensor([3, 0], device=d)),
         r"Target 3 is out of bounds\."),
        ("batch size", ce((3, 5), longs([0, 1, 1, 2])),
         r"Expected input batch_size \(3\) to match target batch_size \(4\)\."),
        ("float class target", ce((3, 5), lambda lib, d: lib.tensor([0.0, 1.0, 1.0], device=d)),
         "expected target dtype to be Long or Byte, but got Float"),
        ("int32 class target", ce((3, 5), lambda lib, d: lib.tensor([0, 1, 1], dtype=lib.int32, device=d)),
         "expected target dtype to be Long or Byte, but got Int"),
        ("integer probabilities", ce((3, 5), lambda lib, d: lib.zeros(3, 5, dtype=lib.int64, device=d)),
         "Expected floating point type for target with class probabilities, got Long"),
        ("ignore_index with probabilities", ce((3, 5), lambda lib, d: lib.zeros(3, 5, device=d), ignore_index=1),
         "ignore_index is not supported for floating point target"),
        ("multi-target", ce((3, 5), lambda lib, d: lib.zeros(3, 2, dtype=lib.int64, device=d)),
         "0D or 1D target tensor expected, multi-target not supported"),
        ("spatial target size", ce((2, 3, 4), lambda lib, d: lib.zeros(2, 5, dtype=lib.int64, device=d)),
         re.escape("Expected target size [2, 4], got [2, 5]")),
        ("4d target dims", ce((2, 3, 4, 5), lambda lib, d: lib.zeros(2, 4, dtype=lib.int64, device=d)),
         "only batches of spatial targets supported"),
        ("unbatched target size", ce((5,), longs([1, 2, 3])),
         "For 1D input, 1D target must have size 1, but got target size: 3"),
        ("label smoothing", ce((3, 5), longs([0, 1, 1]), label_smoothing=1.5),
         r"label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
        ("bad reduction", ce((3, 5), longs([0, 1, 1]), reduction="avg"), "avg is not a valid value for reduction"),
        ("integer logits", lambda lib, f, d: f.cross_entropy(lib.zeros(3, 5, dtype=lib.int64, device=d),
                                                               lib.tensor([0, 1, 1], device=d)),
         "not implemented for 'Long'"),
        ("nll 0-d input", lambda lib, f, d: f.nll_loss(lib.tensor(1.0, device=d), lib.tensor(0, device=d)),
         r"Expected 1 or more dimensions \(got 0\)"),
        ("bce input range", lambda lib, f, d: f.binary_cross_entropy(lib.tensor([1.5], device=d),
                                                                      lib.tensor([1.0], device=d)),
         "all elements of input should be between 0 and 1"),
        ("bce nan input", lambda lib, f, d: f.binary_cross_entropy(lib.tensor([float("nan")], device=d),
                                                                    lib.tensor([1.0], device=d)),
         "all elements of input should be between 0 and 1"),
        ("bce target range", lambda lib, f, d: f.binary_cross_entropy(lib.tensor([0.5], device=d),
                                                                        lib.tensor([-0.5], device=d)),
         "all elements of target should be between 0 and 1"),
        ("bce size", lambda lib, f, d: f.binary_cross_entropy(lib.full((2,), 0.5, device=d), lib.ones(1, device=d)),
         "that is different to the input size"),
        ("bce dtype", lambda lib, f, d: f.binary_cross_entropy(lib.full((2,), 0.5, device=d),
                                                                lib.ones(2, dtype=lib.float64, device=d)),
         "Found dtype Double but expected Float"),
        ("bce weight shape", lambda lib, f, d: f.binary_cross_entropy(lib.full((3, 5), 0.5, device=d),
                                                                       lib.ones(3, 5, device=d),
                                                                       weight=lib.ones(4, device=d)),
         "Attempting to broadcast a dimension of length 4"),
        ("bce logits size", lambda lib, f, d: f.binary_cross_entropy_with_logits(lib.zeros(2, device=d),
                                                                                  lib.ones(1, device=d)),
         r"Target size \(.*\) must be the same as input size"),
        ("mse broadcast", lambda lib, f, d: _quiet(f.mse_loss, lib.zeros(3, 5, device=d), lib.zeros(4, device=d)),
         "must match the size of tensor b"),
        ("mse integer", lambda lib, f, d: f.mse_loss(lib.ones(3, dtype=lib.int64, device=d),
                                                      lib.ones(3, dtype=lib.int64, device=d)),
         "not implemented for 'Long'"),
        ("mse weight size", lambda lib, f, d: f.mse_loss(lib.zeros(3, device=d), lib.zeros(3, device=d),
                                                          weight=lib.ones(2, device=d)),
         "Weights and input must have the same size."),
        ("smooth_l1 negative beta", lambda lib, f, d: f.smooth_l1_loss(lib.zeros(3, device=d), lib.zeros(3, device=d),
                                                                         beta=-1.0),
         "smooth_l1_loss does not support negative values for beta."),
        ("huber zero delta", lambda lib, f, d: f.huber_loss(lib.zeros(3, device=d), lib.zeros(3, device=d), delta=0.0),
         "huber_loss does not support non-positive values for delta."),
        ("kl integral", lambda lib, f, d: f.kl_div(lib.zeros(3, device=d), lib.ones(3, dtype=lib.int64, device=d),
                                                    reduction="sum"), "kl_div: Integral inputs not supported."),
        ("kl bad reduction", lambda lib, f, d: f.kl_div(lib.zeros(3, device=d), lib.ones(3, device=d),
                                                         reduction="avg"), "avg is not a valid value for reduction"),
        ("margin ranking dims",
         lambda lib, f, d: f.margin_ranking_loss(lib.zeros(3, device=d), lib.zeros(3, 1, device=d),
                                                 lib.ones(3, device=d)),
         "All input tensors should have same dimension"),
        ("cosine target dims", lambda lib, f, d: f.cosine_embedding_loss(lib.zeros(4, device=d), lib.zeros(4, device=d),
                                                                          lib.ones(1, device=d)),
         re.escape("1D target tensor expects 2D input tensors, but found inputs with sizes [4] and [4].")),
    ]


_ERRORS = {name: (call, msg) for name, call, msg in _errors()}


@pytest.mark.parametrize("name", list(_ERRORS))
def test_errors_match_torch(device, torch, name):
    call, msg = _ERRORS[name]
    with pytest.raises(Exception) as theirs:
        call(torch, torch.nn.functional, "cpu")
    with pytest.raises(type(theirs.value), match=msg):
        out = call(mt, F, device)
        # on a GPU a check of the values (a target's range) is read at the next synchronisation
        out.sum().item()


def test_weight_size_and_dtype_errors(device, torch):
    x = mt.zeros(3, 5, device=device)
    t = mt.tensor([0, 1, 1], device=device)
    with pytest.raises(RuntimeError, match=re.escape("weight tensor should be defined either for all 5 classes or no "
                                                     "classes but got weight tensor of shape: [2]")):
        F.cross_entropy(x, t, weight=mt.ones(2, device=device))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        F.nll_loss(x, t, weight=mt.ones(1, 5, device=device))
    with pytest.raises(RuntimeError, match="cross_entropy: weight tensor should be defined"):
        F.cross_entropy(x, mt.zeros(3, 5, device=device), weight=mt.ones(2, device=device))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.cross_entropy(x, t, weight=mt.ones(5, dtype=mt.float64, device=device))


def test_non_differentiable_weights_raise_like_torch(device, torch):
    x = mt.zeros(3, 5, device=device, requires_grad=True)
    w = mt.ones(5, device=device, requires_grad=True)
    t = mt.tensor([0, 1, 1], device=device)
    msg = "is not differentiable with respect to argument 'weight'"
    for call in (lambda: F.cross_entropy(x, t, weight=w), lambda: F.nll_loss(x, t, weight=w),
                 lambda: F.binary_cross_entropy(x.sigmoid(), x.detach(), weight=w),
                 lambda: F.binary_cross_entropy_with_logits(x, x.detach(), weight=w)):
        with pytest.raises(RuntimeError, match=msg):
            call()
    with pytest.raises(RuntimeError, match="argument 'pos_weight'"):
        F.binary_cross_entropy_with_logits(x, x.detach(), pos_weight=w)
    with pytest.raises(RuntimeError, match="argument 'target'"):
        F.soft_margin_loss(x, w)
    with mt.no_grad():
        F.cross_entropy(x, t, weight=w)


def test_raising_leaves_inputs_unchanged(device):
    x = mt.randn(3, 5, device=device, requires_grad=True)
    t = mt.tensor([0, 9, 1], device=device)
    before = to_np(x).copy(), to_np(t).copy()
    with pytest.raises(IndexError):
        F.cross_entropy(x, t).item()   # on a GPU the range check is read at this synchronisation
    assert np.array_equal(to_np(x), before[0]) and np.array_equal(to_np(t), before[1])
    assert x.grad is None and x.grad_fn is None


def test_size_mismatch_warns_then_broadcasts(device, torch):
    x = mt.zeros(3, 5, device=device)
    y = mt.ones(5, device=device)
    for fname in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        with pytest.warns(UserWarning, match=r"Using a target size \(minitorch_gpu.Size\(\[5\]\)\) that is different "
                                             r"to the input size \(minitorch_gpu.Size\(\[3, 5\]\)\)"):
            out = getattr(F, fname)(x, y, reduction="none")
        assert tuple(out.shape) == (3, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(x, x)


def test_legacy_reduction_arguments(device, torch):
    x = mt.tensor([[1.0, 2.0], [3.0, 5.0]], device=device)
    y = mt.zeros(2, 2, device=device)
    for kw, expected in (({"size_average": False}, "sum"), ({"reduce": False}, "none"),
                         ({"size_average": True, "reduce": True}, "mean")):
        with pytest.warns(UserWarning, match=f"please use reduction='{expected}' instead"):
            ours = F.mse_loss(x, y, **kw)
        assert_close(ours, to_np(F.mse_loss(x, y, reduction=expected)))
        with pytest.warns(UserWarning):
            module = nn.CrossEntropyLoss(**kw)
        assert module.reduction == expected
    with pytest.warns(UserWarning, match="elementwise_mean"):
        assert F.mse_loss(x, y, reduction="elementwise_mean").item() == F.mse_loss(x, y).item()


# ====================================================================== modules

def _modules(lib, device):
    w = lib.tensor([1.0, 2.0, 0.5], device=device)
    return [
        lib.nn.L1Loss(), lib.nn.MSELoss(reduction="sum"), lib.nn.SmoothL1Loss(beta=0.5), lib.nn.HuberLoss(delta=2.0),
        lib.nn.NLLLoss(weight=w, ignore_index=1), lib.nn.CrossEntropyLoss(weight=w, label_smoothing=0.1),
        lib.nn.BCELoss(), lib.nn.BCEWithLogitsLoss(pos_weight=w), lib.nn.KLDivLoss(reduction="batchmean",
                                                                                  log_target=True),
        lib.nn.SoftMarginLoss(), lib.nn.MarginRankingLoss(margin=0.5), lib.nn.CosineEmbeddingLoss(margin=0.2),
    ]


def test_module_reprs_and_attributes_match_torch(device, torch):
    for ours, theirs in zip(_modules(mt, device), _modules(torch, "cpu")):
        assert repr(ours) == repr(theirs).replace("torch.", "minitorch_gpu.")
        assert ours.reduction == theirs.reduction
        assert list(ours.state_dict()) == list(theirs.state_dict())
        assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
        for attr in ("ignore_index", "label_smoothing", "beta", "delta", "margin", "log_target"):
            assert getattr(ours, attr, None) == getattr(theirs, attr, None)
        assert isinstance(ours, nn.Module)
    with pytest.raises(TypeError, match="delta must be a float or int"):
        nn.HuberLoss(delta="1")


def test_modules_compute_the_functional_forms(device, torch):
    rng = _rng(21)
    x = rng.standard_normal((4, 3))
    t = np.array([0, 2, 1, 1])
    w = np.array([1.0, 2.0, 0.5])
    p = rng.random((4, 3))
    pairs = [
        (nn.CrossEntropyLoss(weight=mt.tensor(w, device=device), ignore_index=1, label_smoothing=0.1),
         torch.nn.CrossEntropyLoss(weight=torch.tensor(w), ignore_index=1, label_smoothing=0.1), t),
        (nn.NLLLoss(weight=mt.tensor(w, device=device), reduction="sum"),
         torch.nn.NLLLoss(weight=torch.tensor(w), reduction="sum"), t),
        (nn.BCEWithLogitsLoss(pos_weight=mt.tensor(w, device=device), reduction="none"),
         torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(w), reduction="none"), p),
        (nn.MSELoss(), torch.nn.MSELoss(), p),
        (nn.HuberLoss(delta=0.3), torch.nn.HuberLoss(delta=0.3), p),
        (nn.SmoothL1Loss(beta=0.3), torch.nn.SmoothL1Loss(beta=0.3), p),
        (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"), p),
    ]
    for ours, theirs, target in pairs:
        xm, xt = _both(torch, x, device, True)
        tm, tt = _both(torch, target, device)
        _compare(torch, ours(xm, tm), theirs(xt, tt), (xm,), (xt,))
    xm, xt = _both(torch, 1 / (1 + np.exp(-x)), device, True)
    pm, pt = _both(torch, p, device)
    _compare(torch, nn.BCELoss(weight=mt.tensor(w, device=device))(xm, pm),
             torch.nn.BCELoss(weight=torch.tensor(w))(xt, pt), (xm,), (xt,))


def test_module_weight_buffer_follows_the_module(device):
    loss = nn.CrossEntropyLoss(weight=mt.tensor([1.0, 2.0, 3.0]))
    loss.to(device).double()
    assert loss.weight.dtype == mt.float64 and loss.weight.device.type == mt.device(device).type
    out = loss(mt.zeros(2, 3, dtype=mt.float64, device=device), mt.tensor([0, 2], device=device))
    assert abs(out.item() - np.log(3)) < 1e-12
    state = loss.state_dict()
    other = nn.CrossEntropyLoss(weight=mt.zeros(3, dtype=mt.float64, device=device))
    other.load_state_dict(state)
    assert_close(other.weight, np.array([1.0, 2.0, 3.0]))


def test_grad_fn_names_match_torch(device, torch):
    x = mt.rand(3, 4, device=device, requires_grad=True)
    xt = torch.rand(3, 4, requires_grad=True)
    y = mt.rand(3, 4, device=device)
    yt = torch.rand(3, 4)
    t, tt = mt.tensor([0, 1, 2], device=device), torch.tensor([0, 1, 2])
    for name, ours, theirs in [
        ("mse_loss", F.mse_loss(x, y), torch.nn.functional.mse_loss(xt, yt)),
        ("smooth_l1_loss", F.smooth_l1_loss(x, y), torch.nn.functional.smooth_l1_loss(xt, yt)),
        ("huber_loss", F.huber_loss(x, y), torch.nn.functional.huber_loss(xt, yt)),
        ("binary_cross_entropy", F.binary_cross_entropy(x, y), torch.nn.functional.binary_cross_entropy(xt, yt)),
        ("bce_with_logits", F.binary_cross_entropy_with_logits(x, y),
         torch.nn.functional.binary_cross_entropy_with_logits(xt, yt)),
        ("nll_loss", F.nll_loss(x, t), torch.nn.functional.nll_loss(xt, tt)),
        ("l1_loss", F.l1_loss(x, y), torch.nn.functional.l1_loss(xt, yt)),
    ]:
        assert ours.grad_fn.name() == theirs.grad_fn.name(), name
    assert F.cross_entropy(x, t).grad_fn.name() == "CrossEntropyLossBackward0"
