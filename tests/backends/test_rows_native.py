"""The CPU backend's compiled row loops (backends/_rows_native.py: layer norm, softmax, attention's masked softmax,
cross-entropy) against their NumPy reference bodies on awkward shapes and values, the same whatever the thread
split, declining what they cannot take; and through the public API against PyTorch on every device (the CUDA
simulator runs its own kernels, which these loops must leave alone)."""
import numpy as np
import pytest
import torch

import minitorch_gpu as mt
from minitorch_gpu.backends import _rows_native as native
from minitorch_gpu.backends.numpy_backend import NumpyBackend

F = mt.nn.functional
DTYPES = [np.float32, np.float64]
# rows x width: a single column, odd widths around a vector of 16, a row of 0, wider than the stack chunk (512)
SHAPES = [(1, 1), (7, 1), (5, 2), (3, 15), (9, 17), (33, 33), (4, 65), (0, 8), (130, 96), (3, 1100)]


@pytest.fixture(scope="module")
def lib():
    if not native.available():
        pytest.skip(f"no native row library here: {native.LIB.reason}")
    return native.LIB.get()


def _backend(on, threads=1):
    be = NumpyBackend()
    be.native_rows = on
    be.optim_threads = threads
    return be


REF = _backend(False)


def _tol(dt):
    return {"rtol": 2e-5, "atol": 2e-6} if dt == np.float32 else {"rtol": 1e-12, "atol": 1e-13}


def _close(got, want, dt, **kw):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, **{**_tol(dt), **kw})


# ---------------------------------------------------------------------- layer norm

@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_layer_norm_matches_the_numpy_body(lib, dt, shape, affine):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dt)
    n = shape[1]
    w = rng.standard_normal(n).astype(dt) if affine in ("both", "weight") else None
    b = rng.standard_normal(n).astype(dt) if affine in ("both", "bias") else None
    g = rng.standard_normal(shape).astype(dt)
    be = _backend(True)
    y, saved = be.layer_norm_forward(x, w, b, 1e-5)
    assert set(saved) == {"mean", "rstd"} and saved["rstd"].dtype == dt
    y_ref, saved_ref = REF.layer_norm_forward(x, w, b, 1e-5)
    _close(y, y_ref, dt)
    for needs in [(True, True, True), (True, False, False), (False, True, True), (False, False, True)]:
        needs = (needs[0], needs[1] and w is not None, needs[2] and b is not None)
        got = be.layer_norm_backward(g, x, w, saved, True, needs)
        want = REF.layer_norm_backward(g, x, w, saved_ref, True, needs)
        for a, r in zip(got, want):
            assert (a is None) == (r is None)
            if a is not None:
                # the parameter gradients are sums over the rows: their error grows with the row count
                _close(a, r, dt, atol=_tol(dt)["atol"] * max(1, shape[0]))


@pytest.mark.parametrize("dt", DTYPES)
def test_layer_norm_extreme_rows(lib, dt):
    """Large offsets (the two-pass statistics keep the variance), constant rows (variance 0: rstd from eps
    alone), tiny values."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 40))
    x[0] = x[0] * 1e-3 + 1e4
    x[1] = 5.0
    x[2] *= 1e-20
    x[3] *= 1e20
    x = x.astype(dt)
    w = np.linspace(-2, 2, 40).astype(dt)
    y, saved = _backend(True).layer_norm_forward(x, w, None, 1e-5)
    y_ref, _ = REF.layer_norm_forward(x, w, None, 1e-5)
    # float32's own statistics round the offset row's mean: compare at its precision. The NumPy body squares
    # float32 values (1e20 overflows, 1e-20 underflows); the statistics here are summed in double, so those two
    # rows are held to float64's answer only
    rows = [0, 1, 4, 5] if dt == np.float32 else slice(None)
    # (the offset row's centred values carry the rounding of its mean: 1e-12 of 1e-3 in float64)
    _close(y[rows], y_ref[rows], dt, rtol=2e-3 if dt == np.float32 else 1e-7, atol=2e-3 if dt == np.float32 else 1e-7)
    np.testing.assert_array_equal(y[1], 0.0)
    t = torch.nn.functional.layer_norm(torch.from_numpy(x.astype(np.float64)), (40,), torch.from_numpy(
        w.astype(np.float64)), None, 1e-5).numpy()
    np.testing.assert_allclose(y, t.astype(dt), rtol=1e-3 if dt == np.float32 else 1e-7,
                               atol=1e-3 if dt == np.float32 else 1e-7)


def test_layer_norm_parameter_gradients_ignore_the_thread_count(lib):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1500, 130)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    w = rng.standard_normal(130).astype(np.float32)
    b = rng.standard_normal(130).astype(np.float32)
    outs = []
    for threads in (1, 2, 3):
        be = _backend(True, threads)
        y, saved = be.layer_norm_forward(x, w, b, 1e-5)
        outs.append((y, *be.layer_norm_backward(g, x, w, saved)))
    for other in outs[1:]:
        for a, r in zip(other, outs[0]):
            np.testing.assert_array_equal(a, r)


# ---------------------------------------------------------------------- softmax and log_softmax

def _rows_case(shape, dt, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 4
    if x.size:
        flat = x.reshape(-1, shape[-1])
        flat[0, 0] = -np.inf
        if flat.shape[0] > 2:
            flat[1] += 80.0  # a row far above the rest
            flat[2] = -np.inf  # a row of -inf: NaN, as PyTorch's softmax gives it
    return x.astype(dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES + [(2, 3, 5, 31)])
def test_softmax_family_matches_the_numpy_body(lib, dt, shape):
    x = _rows_case(shape, dt, len(shape) + shape[-1])
    g = np.random.default_rng(7).standard_normal(shape).astype(dt)
    be = _backend(True)
    axis = len(shape) - 1
    for fwd, bwd in (("softmax_forward", "softmax_backward"), ("log_softmax_forward", "log_softmax_backward")):
        y = getattr(be, fwd)(x, axis)
        y_ref = getattr(REF, fwd)(x, axis)
        np.testing.assert_array_equal(np.isnan(y), np.isnan(y_ref))
        np.testing.assert_array_equal(np.isneginf(y), np.isneginf(y_ref))
        _close(np.nan_to_num(y, neginf=0.0), np.nan_to_num(y_ref, neginf=0.0), dt)
        ok = np.isfinite(y).all(axis=-1, keepdims=True) & np.ones_like(y, bool)
        yc = np.where(ok, y, 0.0).astype(dt)
        d = getattr(be, bwd)(yc, g, axis)
        d_ref = getattr(REF, bwd)(yc, g, axis)
        _close(d, d_ref, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_softmax_against_torch_on_special_rows(lib, dt):
    x = _rows_case((6, 37), dt, 3)
    x[3, 5] = np.nan  # a NaN spreads over its row
    x[4, :] = np.inf * np.sign(np.arange(37) - 3)  # +inf in the row: NaN, as in PyTorch
    for log in (False, True):
        got = native.softmax_forward(x, log=log)
        want = (torch.log_softmax if log else torch.softmax)(torch.from_numpy(x), -1).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-5 if dt == np.float32 else 1e-12, atol=1e-7)


def test_softmax_declines_what_it_does_not_take(lib):
    x = np.ones((4, 6), np.float16)
    assert native.softmax_forward(x) is None
    assert native.softmax_forward(np.ones((6, 4), np.float32).T) is None
    assert native.softmax_forward(np.ones((0, 4), np.float32)) is None
    assert native.softmax_backward(np.ones((2, 3), np.float32), np.ones((2, 3), np.float64)) is None
    assert native.layer_norm_forward(np.ones((4, 6), np.float16), None, None, 1e-5) is None
    assert native.layer_norm_forward(np.ones((4, 6), np.float32), np.ones(6), None, 1e-5) is None  # weight f64
    assert native.cross_entropy(np.ones((4, 6), np.float32), np.zeros(4, np.int32), None, -100, 0.0, True) is None
    # the backend then runs its NumPy body
    be = _backend(True)
    xh = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float16)
    np.testing.assert_array_equal(be.softmax_forward(xh, 1), REF.softmax_forward(xh, 1))


def test_softmax_ignores_the_thread_count(lib):
    x = np.random.default_rng(4).standard_normal((700, 300)).astype(np.float32)
    ys = [_backend(True, t).log_softmax_forward(x, 1) for t in (1, 2, 3)]
    for y in ys[1:]:
        np.testing.assert_array_equal(y, ys[0])


# ---------------------------------------------------------------------- attention's masked softmax

def _masks(B, H, L, S, dt, rng):
    keep = rng.random((B, 1, L, S)) > 0.3
    keep[0, 0, L // 2] = False  # a query that sees no key: zeros
    add = np.where(rng.random((L, S)) > 0.2, rng.standard_normal((L, S)), -np.inf).astype(dt)
    pad = np.zeros((B, 1, 1, S), dt)
    pad[..., -3:] = -np.inf  # key padding broadcast over heads and queries
    return {"none": None, "causal": "causal", "bool": keep, "additive": add, "padding": pad,
            "full bool": np.broadcast_to(keep, (B, H, L, S)).copy()}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("L,S", [(1, 1), (5, 5), (17, 33), (64, 64), (8, 3)])
@pytest.mark.parametrize("kind", ["none", "causal", "bool", "additive", "padding", "full bool"])
def test_attention_softmax_matches_the_numpy_body(lib, dt, L, S, kind):
    rng = np.random.default_rng(L * 100 + S)
    B, H = 2, 3
    scores = rng.standard_normal((B, H, L, S)).astype(dt) * 3
    m = _masks(B, H, L, S, dt, rng)[kind]
    causal = isinstance(m, str)
    mask = None if causal else m
    scale = 0.37
    be = _backend(True)
    p = be.attention_softmax(scores.copy(), causal, mask, overwrite=True, scale=scale)
    p_ref = REF.attention_softmax(scores.copy(), causal, mask, overwrite=True, scale=scale)
    assert not np.isnan(p).any()
    _close(p, p_ref, dt)
    if mask is not None and mask.dtype == np.bool_:
        np.testing.assert_array_equal(p[~np.broadcast_to(mask, p.shape)], 0.0)
    g = rng.standard_normal(p.shape).astype(dt)
    _close(be.attention_softmax_backward(p, g.copy(), scale, True), REF.attention_softmax_backward(p, g, scale),
           dt)


def test_attention_softmax_declines_odd_masks(lib):
    scores = np.zeros((2, 3, 4, 5), np.float32)
    # a mask of another float dtype, or whose rows are not contiguous, takes the NumPy body
    assert native.softmax_forward(scores, mask=np.zeros((4, 5)), safe=True) is None
    assert native.softmax_forward(scores, mask=np.zeros((5, 4), np.float32).T, safe=True) is None
    assert native.softmax_forward(scores, mask=np.zeros((4, 1), np.float32), safe=True) is None


# ---------------------------------------------------------------------- cross-entropy

CE_CASES = [(1, 1), (6, 2), (9, 17), (33, 65), (0, 5), (257, 100), (4, 1100)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", CE_CASES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.15])
@pytest.mark.parametrize("ignore", [False, True])
def test_cross_entropy_matches_the_numpy_body(lib, dt, shape, weighted, ls, ignore):
    N, C = shape
    rng = np.random.default_rng(N * 7 + C)
    x = (rng.standard_normal(shape) * 3).astype(dt)
    t = rng.integers(0, C, (N, 1))
    ii = -100
    if ignore and N:
        ii = int(t[0, 0])  # every sample of that class is ignored
    w = rng.uniform(0.2, 2.0, C).astype(dt) if weighted else None
    be = _backend(True)
    for want_grad in (True, False):
        loss, saved = be.cross_entropy_forward(x, t, w, ii, ls, want_grad=want_grad)
        loss_ref, saved_ref = REF.cross_entropy_forward(x, t, w, ii, ls)
        _close(loss, loss_ref, dt)
        assert ("dlogits" in saved) == want_grad
        for gout, denom in ((np.asarray(1.5, dt), 3.0), (rng.standard_normal((N, 1)).astype(dt), None),
                            (np.asarray(1.0, dt), 0.0)):
            d = be.cross_entropy_backward(gout, x, t, w, ii, ls, dict(saved), denom)
            d_ref = REF.cross_entropy_backward(gout, x, t, w, ii, ls, saved_ref, denom)
            _close(d, d_ref, dt)
            if want_grad:
                # the fused gradient is scaled in place and handed out once: the next one is recomputed
                saved.pop("dlogits", None)


def test_cross_entropy_extreme_logits(lib):
    for dt in DTYPES:
        x = np.array([[1e4, 0.0, -1e4], [-np.inf, 5.0, 5.0], [30.0, 30.0, -np.inf]], dt)
        t = np.array([[0], [1], [2]])
        loss, saved = _backend(True).cross_entropy_forward(x, t, None, -100, 0.0, want_grad=True)
        tx = torch.from_numpy(x).requires_grad_()
        tl = torch.nn.functional.cross_entropy(tx, torch.from_numpy(t[:, 0]), reduction="none")
        tl.sum().backward()
        np.testing.assert_allclose(loss[:, 0], tl.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(saved["dlogits"], tx.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_cross_entropy_ignores_the_thread_count(lib):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3000, 77)).astype(np.float32)
    t = rng.integers(0, 77, (3000, 1))
    w = rng.uniform(0.5, 1.5, 77).astype(np.float32)
    outs = [_backend(True, th).cross_entropy_forward(x, t, w, 3, 0.1, want_grad=True) for th in (1, 2, 3)]
    for loss, saved in outs[1:]:
        np.testing.assert_array_equal(loss, outs[0][0])
        np.testing.assert_array_equal(saved["dlogits"], outs[0][1]["dlogits"])


# ---------------------------------------------------------------------- the switch

def test_switched_off_the_backend_runs_the_numpy_bodies(monkeypatch):
    monkeypatch.setenv("MINITORCH_GPU_NATIVE_ROWS", "0")
    for k, v in (("lib", None), ("tried", False), ("reason", None)):
        monkeypatch.setitem(native.LIB.state, k, v)
    assert not native.available() and "MINITORCH_GPU_NATIVE_ROWS" in native.LIB.reason
    x = np.random.default_rng(0).standard_normal((5, 9)).astype(np.float32)
    y, saved = _backend(True).layer_norm_forward(x, None, None, 1e-5)
    assert "xhat" in saved
    np.testing.assert_array_equal(y, REF.layer_norm_forward(x, None, None, 1e-5)[0])


# ---------------------------------------------------------------------- through the API, against PyTorch

@pytest.mark.parametrize("width", [1, 33, 128])
def test_layer_norm_softmax_cross_entropy_match_torch(device, width):
    rng = np.random.default_rng(width)
    xn = rng.standard_normal((10, width)).astype(np.float32)
    wn = rng.standard_normal(width).astype(np.float32)
    tn = rng.integers(0, width, 10)
    tn[2] = -100
    x = mt.tensor(xn, device=device, requires_grad=True)
    w = mt.tensor(wn, device=device, requires_grad=True)
    tx = torch.tensor(xn, requires_grad=True)
    tw = torch.tensor(wn, requires_grad=True)
    h = F.layer_norm(x, (width,), w, None)
    th = torch.nn.functional.layer_norm(tx, (width,), tw, None)
    out = F.cross_entropy(h.log_softmax(-1) * 2.0 + h.softmax(-1), mt.tensor(tn, device=device), label_smoothing=0.1)
    tout = torch.nn.functional.cross_entropy(th.log_softmax(-1) * 2.0 + th.softmax(-1), torch.tensor(tn),
                                             label_smoothing=0.1)
    out.backward()
    tout.backward()
    np.testing.assert_allclose(out.item(), tout.item(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mask", ["causal", "bool", "float"])
def test_sdpa_fully_masked_rows_and_gradients_match_torch(device, mask):
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 3, 7, 16)).astype(np.float32) for _ in range(3))
    mt_args, t_args = {}, {}
    if mask == "causal":
        mt_args = t_args = {"is_causal": True}
    else:
        keep = rng.random((2, 1, 7, 7)) > 0.4
        keep[:, :, 2] = False  # no key for this query
        m = keep if mask == "bool" else np.where(keep, 0.0, -np.inf).astype(np.float32)
        mt_args = {"attn_mask": mt.tensor(m, device=device)}
        t_args = {"attn_mask": torch.tensor(m)}
    mq, mk, mv = (mt.tensor(a, device=device, requires_grad=True) for a in (q, k, v))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(mq, mk, mv, **mt_args)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **t_args)
    g = rng.standard_normal(out.shape).astype(np.float32)
    out.backward(mt.tensor(g, device=device))
    tout.backward(torch.tensor(g))
    np.testing.assert_allclose(out.detach().cpu().numpy(), np.nan_to_num(tout.detach().numpy()), rtol=1e-5,
                               atol=1e-5)
    for a, b in ((mq, tq), (mk, tk), (mv, tv)):
        np.testing.assert_allclose(a.grad.cpu().numpy(), np.nan_to_num(b.grad.numpy()), rtol=1e-4, atol=1e-5)


def test_softmax_of_a_fully_masked_row_is_nan_like_torch(device):
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, -np.inf]], np.float32)
    got = mt.tensor(x, device=device).softmax(-1).cpu().numpy()
    want = torch.tensor(x).softmax(-1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
