"""cosine_similarity, poisson_nll_loss, gaussian_nll_loss, hinge_embedding_loss, multilabel_soft_margin_loss and
multi_margin_loss (functional and module forms): values and gradients against PyTorch in float32 and float64 on
every device, each reduction, and PyTorch's argument errors."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F

RNG = np.random.default_rng(11)
DTYPES = ["float32", "float64"]
REDUCTIONS = ["mean", "sum", "none"]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)


def _compare(torch, device, dtype, ours_fn, theirs_fn, arrays, grad_mask, consts=()):
    """Run both functions on the same float arrays (and the same extra constant tensors, given as (numpy,
    torch dtype name) pairs), compare values and the gradients of the inputs ``grad_mask`` marks."""
    ours = [mt.tensor(a, device=device, dtype=getattr(mt, dtype), requires_grad=g) for a, g in zip(arrays, grad_mask)]
    theirs = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=g) for a, g in zip(arrays, grad_mask)]
    ours += [mt.tensor(c, device=device, dtype=getattr(mt, d)) for c, d in consts]
    theirs += [torch.tensor(c, dtype=getattr(torch, d)) for c, d in consts]
    o, t = ours_fn(*ours), theirs_fn(*theirs)
    assert tuple(o.shape) == tuple(t.shape)
    assert_close(o, t.detach().numpy(), **_tol(dtype))
    g = RNG.standard_normal(tuple(t.shape))
    (o * mt.tensor(g, device=device, dtype=o.dtype)).sum().backward()
    (t * torch.tensor(g, dtype=t.dtype)).sum().backward()
    for a, b, m in zip(ours, theirs, grad_mask):
        if m:
            assert_close(a.grad, b.grad.numpy(), **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes,dim", [(((4, 3), (4, 3)), 1), (((2, 3, 4), (3, 1)), -1), (((5,), (5,)), 0)])
def test_cosine_similarity(device, torch, dtype, shapes, dim):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    if a.ndim == 2:
        a[1] = 0.0  # a zero row: the eps clamp keeps it finite, with PyTorch's gradient
    _compare(torch, device, dtype, lambda x, y: F.cosine_similarity(x, y, dim),
             lambda x, y: torch.nn.functional.cosine_similarity(x, y, dim), [a, b], [True, True])
    m = mt.nn.CosineSimilarity(dim=dim, eps=1e-6)
    assert_close(m(mt.tensor(a, device=device), mt.tensor(b, device=device)),
                 torch.nn.CosineSimilarity(dim, 1e-6)(torch.tensor(a), torch.tensor(b)))
    assert mt.cosine_similarity is F.cosine_similarity


def test_cosine_similarity_errors(device):
    with pytest.raises(RuntimeError, match="must match"):
        F.cosine_similarity(mt.ones(2, 3, device=device), mt.ones(4, 3, device=device))
    with pytest.raises(IndexError):
        F.cosine_similarity(mt.ones(2, 3, device=device), mt.ones(2, 3, device=device), dim=2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (False, True), (True, True)])
def test_poisson_nll_loss(device, torch, dtype, reduction, log_input, full):
    x = RNG.uniform(0.1, 2.0, (3, 4))
    target = RNG.integers(0, 5, (3, 4)).astype(np.float64)
    kw = dict(log_input=log_input, full=full, reduction=reduction)
    _compare(torch, device, dtype, lambda a, t: F.poisson_nll_loss(a, t, **kw),
             lambda a, t: torch.nn.functional.poisson_nll_loss(a, t, **kw), [x, target], [True, False])
    m, tm = mt.nn.PoissonNLLLoss(**kw), torch.nn.PoissonNLLLoss(**kw)
    assert_close(m(mt.tensor(x, device=device), mt.tensor(target, device=device)),
                 tm(torch.tensor(x), torch.tensor(target)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1)])
def test_gaussian_nll_loss(device, torch, dtype, reduction, var_shape):
    x, target = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    var = RNG.uniform(0.1, 2.0, var_shape)
    var.flat[0] = 1e-9  # below eps: clamped in value, the gradient still reaches it (as in PyTorch)
    for full in (False, True):
        _compare(torch, device, dtype, lambda a, t, v: F.gaussian_nll_loss(a, t, v, full=full, reduction=reduction),
                 lambda a, t, v: torch.nn.functional.gaussian_nll_loss(a, t, v, full=full, reduction=reduction),
                 [x, target, var], [True, True, True])
    r = mt.nn.GaussianNLLLoss(reduction=reduction)(mt.tensor(x, device=device), mt.tensor(target, device=device), 0.5)
    assert_close(r, torch.nn.GaussianNLLLoss(reduction=reduction)(torch.tensor(x), torch.tensor(target), 0.5))


def test_gaussian_nll_loss_errors(device):
    x = mt.ones(4, 3, device=device)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, mt.ones(3, 4, device=device))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, x, -mt.ones(4, 3, device=device))
    with pytest.raises(ValueError, match="is not valid"):
        F.gaussian_nll_loss(x, x, x, reduction="avg")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_hinge_embedding_loss(device, torch, dtype, reduction):
    x = RNG.standard_normal((3, 5))
    target = np.where(RNG.random((3, 5)) < 0.5, 1.0, -1.0)
    kw = dict(margin=0.7, reduction=reduction)
    _compare(torch, device, dtype, lambda a, t: F.hinge_embedding_loss(a, t, **kw),
             lambda a, t: torch.nn.functional.hinge_embedding_loss(a, t, **kw), [x, target], [True, False])
    assert_close(mt.nn.HingeEmbeddingLoss(**kw)(mt.tensor(x, device=device), mt.tensor(target, device=device)),
                 torch.nn.HingeEmbeddingLoss(**kw)(torch.tensor(x), torch.tensor(target)))
    with pytest.raises(RuntimeError, match="must match"):
        F.hinge_embedding_loss(mt.ones(2, 3, device=device), mt.ones(4, 3, device=device))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_soft_margin_loss(device, torch, dtype, reduction):
    x = RNG.standard_normal((3, 4))
    target = (RNG.random((3, 4)) < 0.5).astype(np.float64)
    w = RNG.uniform(0.5, 2.0, (4,))
    for weighted in (False, True):
        def ours(a, t, wt, weighted=weighted):
            return F.multilabel_soft_margin_loss(a, t, weight=wt if weighted else None, reduction=reduction)

        def theirs(a, t, wt, weighted=weighted):
            return torch.nn.functional.multilabel_soft_margin_loss(a, t, weight=wt if weighted else None,
                                                                   reduction=reduction)
        _compare(torch, device, dtype, ours, theirs, [x, target, w], [True, False, False])
    m = mt.nn.MultiLabelSoftMarginLoss(weight=mt.tensor(w, device=device), reduction=reduction)
    assert_close(m(mt.tensor(x, device=device), mt.tensor(target, device=device)),
                 torch.nn.MultiLabelSoftMarginLoss(torch.tensor(w), reduction=reduction)(torch.tensor(x),
                                                                                       torch.tensor(target)))
    with pytest.raises(ValueError, match="x is not valid"):
        F.multilabel_soft_margin_loss(mt.ones(2, 3, device=device), mt.ones(2, 3, device=device), reduction="x")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,margin", [(1, 1.0), (2, 0.5)])
def test_multi_margin_loss(device, torch, dtype, reduction, p, margin):
    x, w = RNG.standard_normal((4, 5)), RNG.uniform(0.5, 2.0, (5,))
    y = RNG.integers(0, 5, (4,))
    for weighted in (False, True):
        def ours(a, wt, t, weighted=weighted):
            return F.multi_margin_loss(a, t, p, margin, wt if weighted else None, reduction=reduction)

        def theirs(a, wt, t, weighted=weighted):
            return torch.nn.functional.multi_margin_loss(a, t, p, margin, wt if weighted else None,
                                                         reduction=reduction)
        _compare(torch, device, dtype, ours, theirs, [x, w], [True, False], consts=[(y, "int64")])
    # one sample as a vector with a 0-d target
    _compare(torch, device, dtype, lambda a, t: F.multi_margin_loss(a, t, p, margin, reduction=reduction),
             lambda a, t: torch.nn.functional.multi_margin_loss(a, t, p, margin, reduction=reduction),
             [x[0]], [True], consts=[(np.int64(2), "int64")])
    m = mt.nn.MultiMarginLoss(p, margin, weight=mt.tensor(w, device=device), reduction=reduction)
    assert_close(m(mt.tensor(x, device=device), mt.tensor(y, device=device)),
                 torch.nn.MultiMarginLoss(p, margin, torch.tensor(w), reduction=reduction)(torch.tensor(x),
                                                                                        torch.tensor(y)))


def test_multi_margin_loss_errors(device):
    x = mt.ones(3, 4, device=device)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, mt.tensor([0, 5, 1], device=device))
    with pytest.raises(RuntimeError, match="Expected target size \\[3\\], but got \\[2\\]"):
        F.multi_margin_loss(x, mt.tensor([0, 1], device=device))
    with pytest.raises(RuntimeError, match="inconsistent weight size, expected 4"):
        F.multi_margin_loss(x, mt.tensor([0, 1, 2], device=device), weight=mt.ones(3, device=device))
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, mt.tensor([0, 1, 2], device=device), p=3)
    with pytest.raises(RuntimeError, match="Expected non-empty vector or matrix"):
        F.multi_margin_loss(mt.ones(2, 3, 4, device=device), mt.tensor([0, 1], device=device))
