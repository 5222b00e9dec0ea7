"""Dropout: the fraction dropped and the scaling of what is kept, the gradient through the same mask,
train / eval behaviour, the p = 0 and p = 1 edges, in-place forms, seeding, channel-wise variants,
alpha dropout's moments, reprs and errors."""
import numpy as np
import pytest
from helpers import to_np

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics_and_scaling(device, p):
    mt.manual_seed(0)
    n = 200_000
    x = mt.full((n,), 2.0, device=device)
    y = to_np(F.dropout(x, p))
    dropped = y == 0
    # binomial: the dropped fraction is within 5 standard deviations of p
    assert abs(dropped.mean() - p) < 5 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(y[~dropped], 2.0 / (1 - p), rtol=1e-6)
    # the expectation is preserved
    assert abs(y.mean() - 2.0) < 5 * 2.0 * np.sqrt(p / (1 - p) / n)


def test_dropout_gradient_uses_the_same_mask(device):
    mt.manual_seed(1)
    x = mt.randn(50, 40, device=device, requires_grad=True)
    y = F.dropout(x, 0.3)
    g = mt.randn(50, 40, device=device)
    y.backward(g)
    keep = to_np(y) != 0
    np.testing.assert_allclose(to_np(x.grad), np.where(keep, to_np(g) / 0.7, 0.0), rtol=1e-6)
    # PyTorch's node names: the fused kernel on CUDA, the mask multiply elsewhere
    assert y.grad_fn.name() == ("NativeDropoutBackward0" if x.is_cuda else "MulBackward0")


def test_dropout_keeps_dtype(device):
    for dt in (mt.float32, mt.float64, mt.float16):
        assert F.dropout(mt.ones(10, device=device, dtype=dt), 0.5).dtype == dt


def test_eval_and_p0_return_the_input(device):
    x = mt.randn(5, device=device)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(mt.ones(0, device=device), 0.5).numel() == 0
    m = mt.nn.Dropout(0.5)
    m.eval()
    assert m(x) is x
    m.train()
    mt.manual_seed(2)
    assert (to_np(m(mt.ones(1000, device=device))) == 0).any()


def test_p1_drops_everything(device):
    x = mt.randn(4, 3, device=device, requires_grad=True)
    y = F.dropout(x, 1.0)
    np.testing.assert_array_equal(to_np(y), np.zeros((4, 3)))
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), np.zeros((4, 3)))
    z = mt.ones(3, device=device)
    assert F.dropout(z, 1.0, inplace=True) is z
    np.testing.assert_array_equal(to_np(z), np.zeros(3))


def test_inplace(device):
    mt.manual_seed(4)
    x = mt.ones(1000, device=device)
    v = x._version
    r = F.dropout(x, 0.5, inplace=True)
    assert r is x and x._version > v
    vals = np.unique(to_np(x))
    np.testing.assert_array_equal(vals, [0.0, 2.0])
    # on a non-leaf with history: the gradient flows through the in-place mask
    leaf = mt.ones(100, device=device, requires_grad=True)
    h = leaf * 3.0
    mt.nn.Dropout(0.25, inplace=True)(h).sum().backward()
    np.testing.assert_allclose(to_np(leaf.grad), np.where(to_np(h) == 0, 0.0, 3.0 / 0.75), rtol=1e-6)


def test_seeded_masks_repeat(device):
    mt.manual_seed(123)
    a = to_np(F.dropout(mt.ones(64, device=device), 0.5))
    mt.manual_seed(123)
    b = to_np(F.dropout(mt.ones(64, device=device), 0.5))
    np.testing.assert_array_equal(a, b)
    c = to_np(F.dropout(mt.ones(64, device=device), 0.5))
    assert not np.array_equal(a, c)


def test_probability_checked(device):
    x = mt.ones(3, device=device)
    for fn in (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
            fn(x, 1.5)
        with pytest.raises(ValueError, match="but got -0.1"):
            fn(x, -0.1)
    for cls in (mt.nn.Dropout, mt.nn.Dropout1d, mt.nn.Dropout2d, mt.nn.Dropout3d, mt.nn.AlphaDropout):
        with pytest.raises(ValueError, match="but got 2"):
            cls(2)


def _channels_all_or_nothing(y, x_const, p, batched=True):
    """Every (sample, channel) slice is either all zero or all x / (1 - p)."""
    lead = 2 if batched else 1
    flat = y.reshape(int(np.prod(y.shape[:lead])), -1)
    for row in flat:
        assert np.all(row == 0) or np.allclose(row, x_const / (1 - p))
    return (flat == 0).all(1).mean()


def test_dropout1d_2d_3d_are_channel_wise(device):
    mt.manual_seed(5)
    y = to_np(F.dropout1d(mt.ones(40, 30, 7, device=device), 0.4))
    frac = _channels_all_or_nothing(y, 1.0, 0.4)
    assert 0.3 < frac < 0.5
    y = to_np(F.dropout1d(mt.ones(50, 7, device=device), 0.4))  # unbatched (C, L)
    _channels_all_or_nothing(y, 1.0, 0.4, batched=False)
    y = to_np(F.dropout2d(mt.ones(10, 20, 3, 3, device=device), 0.5))
    _channels_all_or_nothing(y, 1.0, 0.5)
    y = to_np(F.dropout3d(mt.ones(4, 10, 2, 2, 2, device=device), 0.5))
    _channels_all_or_nothing(y, 1.0, 0.5)
    y = to_np(F.dropout3d(mt.ones(30, 2, 2, 2, device=device), 0.5))  # unbatched (C, D, H, W)
    _channels_all_or_nothing(y, 1.0, 0.5, batched=False)


def test_channel_dropout_gradient(device):
    mt.manual_seed(6)
    x = mt.randn(6, 8, 5, device=device, requires_grad=True)
    y = F.dropout1d(x, 0.5)
    y.sum().backward()
    keep = to_np(y) != 0
    np.testing.assert_allclose(to_np(x.grad), np.where(keep, 2.0, 0.0))


def test_channel_dropout_dims_and_warnings(device):
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(mt.ones(2, 3, 4, 5, device=device))
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input to dropout2d and assuming that "
                                         "channel-wise 1D dropout behavior is desired"):
        F.dropout2d(mt.ones(2, 3, 4, device=device))
    with pytest.warns(UserWarning, match="dropout2d: Received a 2-D input to dropout2d, which is deprecated"):
        F.dropout2d(mt.ones(2, 3, device=device))
    with pytest.warns(UserWarning, match="dropout3d: Received a 3-D input to dropout3d, which is deprecated"):
        F.dropout3d(mt.ones(2, 3, 4, device=device))
    x = mt.ones(2, 3, 4, 4, device=device)
    assert F.dropout2d(x, training=False) is x
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="Feature dropout requires at least 2 "
                                                                      "dimensions in the input"):
        F.dropout2d(mt.ones(3, device=device))


def test_alpha_dropout_keeps_moments(device):
    mt.manual_seed(7)
    x = mt.randn(400_000, device=device, dtype=mt.float64)
    for p in (0.2, 0.5):
        y = to_np(F.alpha_dropout(x, p, training=True))
        assert abs(y.mean()) < 0.01
        assert abs(y.std() - 1.0) < 0.01
        # dropped units all take one value: a * alpha' shifted
        alpha = 1.7580993408473766
        a = 1.0 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
        dropped = -alpha * a + alpha * a * p
        assert abs(np.isclose(y, dropped).mean() - p) < 0.01
    assert F.alpha_dropout(x, 0.5) is x  # training defaults to False for the alpha variants
    y = to_np(F.feature_alpha_dropout(mt.randn(200, 50, 4, device=device), 0.5, training=True))
    for row in y.reshape(-1, 4):
        assert len(np.unique(row)) == 1 or len(np.unique(row)) == 4


def test_alpha_dropout_gradient(device):
    mt.manual_seed(8)
    x = mt.randn(1000, device=device, dtype=mt.float64, requires_grad=True)
    y = F.alpha_dropout(x, 0.3, training=True)
    y.sum().backward()
    alpha = 1.7580993408473766
    a = 1.0 / np.sqrt((alpha ** 2 * 0.3 + 1) * 0.7)
    g = to_np(x.grad)
    assert set(np.round(np.unique(g), 12)) <= {0.0, round(a, 12)}


def test_module_reprs_and_modes(torch, device):
    for spec in ("Dropout()", "Dropout(0.2, inplace=True)", "Dropout1d(0.3)", "Dropout2d()", "Dropout3d(0.1)",
                 "AlphaDropout(0.2)", "FeatureAlphaDropout()"):
        assert repr(eval("mt.nn." + spec)) == repr(eval("torch.nn." + spec))
    mt.manual_seed(9)
    for cls in (mt.nn.Dropout1d, mt.nn.Dropout2d, mt.nn.Dropout3d, mt.nn.AlphaDropout, mt.nn.FeatureAlphaDropout):
        m = cls(0.5)
        x = mt.randn(4, 6, 3, 3, 3, device=device) if cls is mt.nn.Dropout3d else mt.randn(4, 6, 3, 3,
                                                                                           device=device)
        if cls is mt.nn.Dropout1d:
            x = x[:, :, 0]
        assert not np.array_equal(to_np(m(x)), to_np(x))
        m.eval()
        assert m(x) is x
    assert list(mt.nn.Dropout().parameters()) == []
