"""``embedding`` / ``Embedding`` / ``one_hot``: lookups and weight gradients against PyTorch (repeated
indices, padding_idx, scale_grad_by_freq, max_norm, both accumulation paths), gradcheck / gradgradcheck,
initialisation, ``from_pretrained``, reprs and errors."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F
from minitorch_gpu.nn.functional import sparse as S

RNG = np.random.default_rng(9)


def _check(device, torch, idx, num, dim, dtype="float64", **kw):
    wa = RNG.standard_normal((num, dim)).astype(dtype)
    w = mt.tensor(wa, device=device, requires_grad=True)
    wt = torch.tensor(wa, requires_grad=True)
    i = mt.tensor(idx, device=device)
    it = torch.tensor(idx)
    y, yt = F.embedding(i, w, **kw), torch.nn.functional.embedding(it, wt, **kw)
    assert tuple(y.shape) == tuple(yt.shape)
    assert_close(y, yt.detach().numpy(), rtol=0, atol=0)
    g = RNG.standard_normal(tuple(yt.shape)).astype(dtype)
    y.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    tol = 1e-12 if dtype == "float64" else 1e-5
    assert_close(w.grad, wt.grad.numpy(), rtol=tol, atol=tol)
    return w, wt


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                {"padding_idx": 0, "scale_grad_by_freq": True}],
                         ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "plain")
def test_embedding_matches_torch(device, torch, kw, dtype):
    idx = np.array([[0, 2, 2, 4], [1, 4, 0, 2]])
    _check(device, torch, idx, 5, 3, dtype, **kw)
    _check(device, torch, np.array(3), 5, 3, dtype, **kw)  # a 0-d index gives one row
    _check(device, torch, np.zeros((0, 2), dtype=np.int64), 5, 3, dtype, **kw)


def test_both_accumulation_paths(device, torch):
    # few rows and many indices (one-hot product) and many rows (scatter-add) give the same gradients
    _check(device, torch, RNG.integers(0, 7, (40, 30)), 7, 4)
    _check(device, torch, RNG.integers(0, 3000, (2, 50)), 3000, 4)
    be = mt.ones(1)._be
    flat = RNG.integers(0, 5, 200)
    g2 = RNG.standard_normal((200, 3))
    onehot = S._accumulate_rows(be, flat, g2, 5)
    scatter = np.zeros((5, 3))
    np.add.at(scatter, flat, g2)
    np.testing.assert_allclose(be.to_numpy(onehot), scatter, rtol=1e-12)


def test_int32_indices(device, torch):
    _check(device, torch, np.array([[1, 0], [3, 3]], dtype=np.int32), 4, 2)


def test_embedding_gradcheck(device):
    w = mt.tensor(RNG.standard_normal((5, 3)), device=device, requires_grad=True)
    idx = mt.tensor([[0, 2, 2], [4, 1, 2]], device=device)
    assert mt.autograd.gradcheck(lambda w: F.embedding(idx, w), (w,))
    assert mt.autograd.gradgradcheck(lambda w: F.embedding(idx, w) ** 2, (w,))
    # padding_idx and scale_grad_by_freq change the gradient on purpose (it is no longer the Jacobian of the
    # lookup), so only the derivative of that gradient is checked
    assert mt.autograd.gradgradcheck(lambda w: F.embedding(idx, w, padding_idx=2, scale_grad_by_freq=True) ** 2,
                                     (w,))


def test_padding_row_gets_no_gradient(device):
    w = mt.randn(4, 3, device=device, requires_grad=True)
    F.embedding(mt.tensor([1, 1, 3], device=device), w, padding_idx=1).sum().backward()
    np.testing.assert_array_equal(to_np(w.grad), [[0, 0, 0], [0, 0, 0], [0, 0, 0], [1, 1, 1]])


def test_max_norm_renormalises_rows_in_place(device, torch):
    wa = RNG.standard_normal((5, 4)) * 3
    idx = np.array([[0, 2], [2, 4]])
    w = mt.tensor(wa, device=device)
    wt = torch.tensor(wa)
    y = F.embedding(mt.tensor(idx, device=device), w, max_norm=1.5)
    yt = torch.nn.functional.embedding(torch.tensor(idx), wt, max_norm=1.5)
    assert_close(y, yt.numpy(), rtol=1e-6)
    assert_close(w, wt.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(to_np(w)[[1, 3]], wa[[1, 3]])  # rows not referenced are untouched
    norms = np.linalg.norm(to_np(w)[[0, 2, 4]], axis=1)
    assert np.all(norms <= 1.5 + 1e-6)
    m = mt.nn.Embedding(5, 4, max_norm=1.0, norm_type=1.0).to(device)
    m(mt.tensor([0, 1], device=device))
    assert np.all(np.abs(to_np(m.weight)[:2]).sum(1) <= 1.0 + 1e-5)


def test_errors(device):
    w = mt.randn(5, 3, device=device)
    # on a GPU the range check is read at the next synchronisation (item() here), not at the op
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(mt.tensor([5], device=device), w).sum().item()
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(mt.tensor([[0, -1]], device=device), w).sum().item()
    assert F.embedding(mt.tensor([4], device=device), w).sum().item() == pytest.approx(w[4].sum().item())
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int; but got minitorch_gpu.FloatTensor instead"):
        F.embedding(mt.tensor([1.0], device=device), w)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(mt.tensor([1], device=device), mt.randn(5, device=device))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(mt.tensor([1], device=device), w, padding_idx=5)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(mt.tensor([1], device=device), w, padding_idx=-6)


def test_module_init_and_structure(device, torch):
    mt.manual_seed(0)
    m = mt.nn.Embedding(1000, 64, device=device)
    assert tuple(m.weight.shape) == (1000, 64) and m.weight.requires_grad
    w = to_np(m.weight)
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1) < 0.01  # N(0, 1)
    p = mt.nn.Embedding(10, 3, padding_idx=3)
    np.testing.assert_array_equal(to_np(p.weight)[3], np.zeros(3))
    assert mt.nn.Embedding(10, 3, padding_idx=-2).padding_idx == 8
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        mt.nn.Embedding(10, 3, padding_idx=10)
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        mt.nn.Embedding(10, 3, _weight=mt.randn(4, 3))
    for spec in ("Embedding(10, 3)", "Embedding(10, 3, padding_idx=0, max_norm=1.0, scale_grad_by_freq=True, "
                 "sparse=True)", "Embedding(10, 3, norm_type=1.0)"):
        assert repr(eval("mt.nn." + spec)) == repr(eval("torch.nn." + spec))
    assert mt.nn.Embedding(4, 2, dtype=mt.float64).weight.dtype == mt.float64
    assert list(m.state_dict()) == ["weight"]


def test_module_matches_torch(device, torch):
    m = mt.nn.Embedding(6, 3, padding_idx=1).to(device)
    mt_ = torch.nn.Embedding(6, 3, padding_idx=1)
    with mt.no_grad():
        m.weight.copy_(mt.tensor(mt_.weight.detach().numpy()))
    idx = np.array([[1, 2, 5], [5, 5, 0]])
    y, yt = m(mt.tensor(idx, device=device)), mt_(torch.tensor(idx))
    assert_close(y, yt.detach().numpy())
    y.pow(2).sum().backward()
    yt.pow(2).sum().backward()
    assert_close(m.weight.grad, mt_.weight.grad.numpy(), rtol=1e-6)


def test_from_pretrained(device):
    e = mt.randn(4, 3, device=device)
    m = mt.nn.Embedding.from_pretrained(e)
    assert not m.weight.requires_grad
    assert m.num_embeddings == 4 and m.embedding_dim == 3
    np.testing.assert_array_equal(to_np(m(mt.tensor([2], device=device)))[0], to_np(e)[2])
    # the weight shares the given tensor's memory
    with mt.no_grad():
        m.weight[0, 0] = 42.0
    assert to_np(e)[0, 0] == 42.0
    m2 = mt.nn.Embedding.from_pretrained(e, freeze=False, padding_idx=0)
    assert m2.weight.requires_grad and m2.padding_idx == 0
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        mt.nn.Embedding.from_pretrained(mt.randn(3))


def test_one_hot(device, torch):
    idx = np.array([[0, 3], [2, 1]])
    y = F.one_hot(mt.tensor(idx, device=device))
    assert y.dtype == mt.int64
    np.testing.assert_array_equal(to_np(y), torch.nn.functional.one_hot(torch.tensor(idx)).numpy())
    assert tuple(F.one_hot(mt.tensor([1], device=device), num_classes=5).shape) == (1, 5)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(mt.tensor([4], device=device), 3)
