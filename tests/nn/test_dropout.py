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


# ---------------------------------------------------------------------- one stream on every device
@pytest.mark.parametrize("shape", [(1,), (5,), (37, 41), (3, 1, 7, 9)])
@pytest.mark.parametrize("p", [0.2, 0.75])
def test_dropout_same_values_on_every_device(device, shape, p):
    """One seed gives the same mask on the CPU (the mask multiply) and on CUDA (the fused kernel)."""
    x = mt.randn(*shape, dtype=mt.float64)
    mt.manual_seed(11)
    want = to_np(F.dropout(x, p))
    mt.manual_seed(11)
    got = to_np(F.dropout(x.to(device), p))
    np.testing.assert_array_equal(got, want)
    # a transposed input is masked by its logical index too
    if x.dim() == 2:
        mt.manual_seed(12)
        want = to_np(F.dropout(x.t(), p))
        mt.manual_seed(12)
        np.testing.assert_array_equal(to_np(F.dropout(x.to(device).t(), p)), want)


def test_dropout_reproducible_and_advancing(device):
    x = mt.randn(1001, device=device)
    mt.manual_seed(7)
    a, b = to_np(F.dropout(x, 0.5)), to_np(F.dropout(x, 0.5))
    mt.manual_seed(7)
    np.testing.assert_array_equal(to_np(F.dropout(x, 0.5)), a)
    np.testing.assert_array_equal(to_np(F.dropout(x, 0.5)), b)
    assert not np.array_equal(a, b)
    # one word per element, whole blocks per draw: the next draw starts where a bernoulli of the size would end
    mt.manual_seed(7)
    F.dropout(x, 0.5)
    after = to_np(mt.rand(3, device=device))
    mt.manual_seed(7)
    mt.bernoulli(mt.full((1001,), 0.5, device=device))
    np.testing.assert_array_equal(to_np(mt.rand(3, device=device)), after)


def test_dropout_double_backward(device):
    mt.manual_seed(3)
    x = mt.randn(9, 7, device=device, dtype=mt.float64, requires_grad=True)
    y = F.dropout(x, 0.4)
    keep = to_np(y) != 0
    g = mt.randn(9, 7, device=device, dtype=mt.float64, requires_grad=True)
    gx, = mt.autograd.grad(y, x, g, create_graph=True)
    np.testing.assert_allclose(to_np(gx), np.where(keep, to_np(g) / 0.6, 0.0), rtol=1e-12)
    # the gradient is linear in g through the same mask
    gg, = mt.autograd.grad(gx.sum(), g)
    np.testing.assert_allclose(to_np(gg), np.where(keep, 1 / 0.6, 0.0), rtol=1e-12)


# ---------------------------------------------------------------------- x + dropout(y)
@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
def test_dropout_add_is_the_sum_it_replaces(device, dtype):
    from minitorch_gpu.nn.functional.dropout import dropout_add
    x = mt.randn(13, 29, device=device, dtype=dtype, requires_grad=True)
    y = mt.randn(13, 29, device=device, dtype=dtype, requires_grad=True)
    g = mt.randn(13, 29, device=device, dtype=dtype)
    mt.manual_seed(21)
    ref = x + F.dropout(y, 0.3)
    ref.backward(g)
    gx, gy = to_np(x.grad), to_np(y.grad)
    x.grad = y.grad = None
    mt.manual_seed(21)
    out = dropout_add(x, y, 0.3)
    out.backward(g)
    np.testing.assert_array_equal(to_np(out), to_np(ref))
    np.testing.assert_array_equal(to_np(x.grad), gx)
    np.testing.assert_array_equal(to_np(y.grad), gy)
    np.testing.assert_array_equal(gx, to_np(g))
    if x.is_cuda:
        assert out.grad_fn.name() == "DropoutAddBackward0"
    # evaluation, p = 0, p = 1 and a broadcast residual are the plain sum
    np.testing.assert_array_equal(to_np(dropout_add(x, y, 0.3, training=False)), to_np(x + y))
    np.testing.assert_array_equal(to_np(dropout_add(x, y, 0.0)), to_np(x + y))
    np.testing.assert_array_equal(to_np(dropout_add(x, y, 1.0)), to_np(x))
    b = mt.randn(29, device=device, dtype=dtype)
    mt.manual_seed(4)
    want = to_np(b + F.dropout(y, 0.5))
    mt.manual_seed(4)
    np.testing.assert_array_equal(to_np(dropout_add(b, y, 0.5)), want)
    with pytest.raises(ValueError, match="between 0 and 1"):
        dropout_add(x, y, 1.5)


def test_dropout_module_add_respects_hooks(device):
    m = mt.nn.Dropout(0.5)
    x, y = mt.randn(64, device=device), mt.randn(64, device=device)
    mt.manual_seed(2)
    fused = to_np(m.dropout_add(x, y))
    seen = []
    m.register_forward_hook(lambda mod, inp, out: seen.append(out))
    mt.manual_seed(2)
    hooked = to_np(m.dropout_add(x, y))
    assert len(seen) == 1  # a hooked module is called, not bypassed
    np.testing.assert_array_equal(hooked, fused)


def test_gpt_block_fused_residuals_match_the_module_calls(device):
    from minitorch_gpu.models import GPT, GPTConfig
    cfg = GPTConfig(vocab_size=31, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.25)
    mt.manual_seed(0)
    model = GPT(cfg).to(device)
    idx = mt.randint(0, 31, (2, 8), device=device)
    mt.manual_seed(5)
    logits, loss = model(idx, idx)
    loss.backward()
    grads = {n: to_np(p.grad) for n, p in model.named_parameters()}
    model.zero_grad()
    # a global hook makes every Dropout module take its module call: the unfused graph
    handle = mt.nn.module.register_module_forward_hook(lambda mod, inp, out: None)
    try:
        mt.manual_seed(5)
        logits2, loss2 = model(idx, idx)
        loss2.backward()
    finally:
        handle.remove()
    np.testing.assert_allclose(to_np(logits2), to_np(logits), rtol=1e-5, atol=1e-6)
    for n, p in model.named_parameters():
        np.testing.assert_allclose(to_np(p.grad), grads[n], rtol=1e-4, atol=1e-6, err_msg=n)
