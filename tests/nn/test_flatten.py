"""Flatten, Unflatten, Identity: values and gradients against PyTorch, views, reprs, errors."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu import nn

X = np.random.default_rng(0).standard_normal((2, 3, 4, 5))


@pytest.mark.parametrize("start,end", [(1, -1), (0, -1), (1, 2), (-3, -2), (2, 2), (0, 0), (3, -1)])
def test_flatten_matches_torch(device, torch, start, end):
    x = mt.tensor(X, device=device, requires_grad=True)
    tx = torch.tensor(X, requires_grad=True)
    out = nn.Flatten(start, end)(x)
    tout = torch.nn.Flatten(start, end)(tx)
    assert out.shape == tuple(tout.shape)
    assert_close(out, tout.detach().numpy())
    g = np.random.default_rng(1).standard_normal(tuple(tout.shape))
    out.backward(mt.tensor(g, device=device))
    tout.backward(torch.tensor(g))
    assert_close(x.grad, tx.grad.numpy())


def test_flatten_default_is_a_view(device):
    x = mt.zeros(2, 3, 4, device=device)
    y = nn.Flatten()(x)
    assert y.shape == (2, 12) and y._base is x
    y[0, 0] = 5.0
    assert float(x[0, 0, 0]) == 5.0


def test_flatten_float64_gradcheck(device):
    x = mt.randn(2, 3, 2, dtype=mt.float64, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: nn.Flatten(0, 1)(t) * 2, (x,))


def test_flatten_bad_dims(torch):
    for start, end in [(4, -1), (2, 1)]:
        with pytest.raises(Exception) as te:
            torch.nn.Flatten(start, end)(torch.zeros(2, 3, 4))
        with pytest.raises(type(te.value)):
            nn.Flatten(start, end)(mt.zeros(2, 3, 4))


@pytest.mark.parametrize("dim,sizes", [(1, (3, 1)), (-1, (5, 1)), (0, [1, 2]), (2, (2, -1)), (3, (5,))])
def test_unflatten_matches_torch(device, torch, dim, sizes):
    leaf = mt.tensor(X, device=device, requires_grad=True)
    tleaf = torch.tensor(X, requires_grad=True)
    x, tx = (leaf.reshape(2, 3, 20), tleaf.reshape(2, 3, 20)) if dim == 2 else (leaf, tleaf)
    out = nn.Unflatten(dim, sizes)(x)
    tout = torch.nn.Unflatten(dim, sizes)(tx)
    assert out.shape == tuple(tout.shape)
    assert_close(out, tout.detach().numpy())
    g = np.random.default_rng(2).standard_normal(tuple(tout.shape))
    out.backward(mt.tensor(g, device=device))
    tout.backward(torch.tensor(g))
    assert_close(leaf.grad, tleaf.grad.numpy())


def test_unflatten_errors(torch):
    for args in [(1, 3), (1, (2, 1.5)), (0, ((1, 2),))]:
        with pytest.raises(TypeError) as te:
            torch.nn.Unflatten(*args)
        with pytest.raises(TypeError) as me:
            nn.Unflatten(*args)
        assert str(me.value) == str(te.value)
    with pytest.raises(RuntimeError):
        nn.Unflatten(1, (2, 2))(mt.zeros(2, 3))


def test_identity(device):
    x = mt.randn(3, device=device, requires_grad=True)
    ident = nn.Identity(54, unused="argument")
    assert ident(x) is x
    assert list(ident.parameters()) == []


def test_reprs_match_torch(torch):
    pairs = [(nn.Flatten(), torch.nn.Flatten()), (nn.Flatten(0, 2), torch.nn.Flatten(0, 2)),
             (nn.Unflatten(1, (2, 3)), torch.nn.Unflatten(1, (2, 3))),
             (nn.Unflatten(-1, [4, -1]), torch.nn.Unflatten(-1, [4, -1])),
             (nn.Identity(), torch.nn.Identity()),
             (nn.Sequential(nn.Flatten(), nn.Unflatten(1, (2, 6)), nn.Identity()),
              torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Unflatten(1, (2, 6)), torch.nn.Identity()))]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)


def test_round_trip_in_sequential(device):
    seq = nn.Sequential(nn.Flatten(1), nn.Unflatten(1, (3, 4, 5)))
    x = mt.tensor(X, device=device)
    np.testing.assert_array_equal(to_np(seq(x)), X)
