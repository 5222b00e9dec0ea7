"""The neural-network primitives of backends/_nn.py: cross-entropy and layer-norm forward/backward, the grouped
normalisation bodies, bincount and the pooling index arithmetic.

Each primitive runs on the NumPy backend against a float64 reference written out here, and the kernel-backed
ones (cross-entropy, layer norm) on the simulated CUDA backend against the NumPy backend, with the launcher
spied on to prove the kernel ran (or, where the kernel does not cover a case, that it did not). Sizes are
the awkward ones: no rows, one row, prime row counts, one class / feature, prime widths, rows longer than
1024, ignore_index hits (out of range and inside it), label smoothing, class weights."""
import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import get_backend
from minitorch_gpu.backends.numpy_backend import NumpyBackend

DTYPES = [np.float32, np.float64]
F = mt.nn.functional


def _tol(dt):
    return {"rtol": 2e-5, "atol": 2e-6} if dt == np.float32 else {"rtol": 1e-10, "atol": 1e-12}


@pytest.fixture(scope="module")
def np_be():
    """The NumPy bodies, the reference of the kernels here and of the CPU's compiled row loops
    (tests/backends/test_rows_native.py)."""
    be = NumpyBackend()
    be.native_rows = False
    return be


@pytest.fixture
def sim_be():
    """A simulated CUDA backend whose launcher covers at most 2 blocks, so every row count above 2 runs the
    kernels' grid-stride loops."""
    try:
        from minitorch_gpu.backends.cuda import sim  # noqa: F401
    except ImportError:
        pytest.skip("the CUDA simulator is not part of this build")
    from minitorch_gpu.backends.cuda_backend import SimBackend
    be = SimBackend(0)
    if be.kernels is None:
        pytest.skip("kernels are switched off (MINITORCH_GPU_KERNELS=0)")
    saved = be.kernels.max_blocks
    be.kernels.max_blocks = 2
    yield be
    be.kernels.max_blocks = saved


def _spy(monkeypatch, launcher, *names):
    """Count the calls of the launcher methods ``names`` (and whether each produced a result)."""
    calls = {n: [] for n in names}
    for n in names:
        orig = getattr(launcher, n)

        def wrapper(*args, _orig=orig, _n=n, **kwargs):
            r = _orig(*args, **kwargs)
            calls[_n].append(r is not None)
            return r

        monkeypatch.setattr(launcher, n, wrapper)
    return calls


# ====================================================================== cross-entropy

def _ce_ref(x, t, w, ignore, ls):
    """float64 per-sample losses (target's shape) and the gradient of their sum, for (N, C, *spatial) logits
    and (N, 1, *spatial) targets."""
    x64 = x.astype(np.float64)
    C = x.shape[1]
    m = x64.max(axis=1, keepdims=True) if x.size else np.zeros(t.shape)
    d = x64 - m
    logp = d - np.log(np.exp(d).sum(axis=1, keepdims=True))
    wv = np.ones(C) if w is None else w.astype(np.float64)
    wb = wv.reshape((1, C) + (1,) * (x.ndim - 2))
    keep = t != ignore
    tt = np.where(keep, t, 0)
    wt = wv[tt]
    nll = -wt * np.take_along_axis(logp, tt, 1)
    smooth = -(logp * wb).sum(axis=1, keepdims=True) / C
    loss = np.where(keep, (1 - ls) * nll + ls * smooth, 0.0)
    p = np.exp(logp)
    onehot = np.zeros_like(p)
    np.put_along_axis(onehot, tt, 1.0, axis=1)
    grad = (1 - ls) * wt * (p - onehot) + ls / C * (p * wv.sum() - wb)
    return loss, np.where(keep, grad, 0.0)


def _ce_case(shape, dt, weighted, ignore, seed):
    rng = np.random.default_rng(seed)
    C = shape[1]
    x = (rng.standard_normal(shape) * 3).astype(dt)
    tshape = (shape[0], 1) + shape[2:]
    t = rng.integers(0, C, tshape).astype(np.int64)
    if ignore is not None and t.size > 2:
        # some hits: every third sample
        t.reshape(-1)[::3] = ignore
    w = rng.uniform(0.5, 2.0, C).astype(dt) if weighted else None
    return x, t, w


def _hints(t, w, ignore, cdt):
    """tidx / mask / coef as nn's _class_targets computes them."""
    keep = t != ignore
    mask = keep.astype(cdt) if not keep.all() else None
    tidx = np.where(keep, t, 0)
    if w is None:
        coef = mask
    else:
        coef = w.astype(cdt)[tidx]
        if mask is not None:
            coef = coef * mask
    return tidx, mask, coef


CE_SHAPES = [(0, 5), (1, 1), (1, 7), (7, 1), (7, 31), (13, 1031)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", CE_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.1])
@pytest.mark.parametrize("ignore", [None, -100, 0])
def test_cross_entropy_numpy_matches_reference(np_be, shape, dt, weighted, ls, ignore):
    ii = -100 if ignore is None else ignore
    x, t, w = _ce_case(shape, dt, weighted, ignore, sum(shape) + weighted)
    ref_loss, ref_grad = _ce_ref(x, t, w, ii, ls)
    tol = _tol(dt)
    for hints in (False, True):
        kw = dict(zip(("tidx", "mask", "coef"), _hints(t, w, ii, x.dtype))) if hints else {}
        loss, saved = np_be.cross_entropy_forward(x, t, w, ii, ls, **kw)
        assert loss.shape == t.shape and loss.dtype == dt
        np.testing.assert_allclose(loss, ref_loss, **tol)
        bkw = {k: kw[k] for k in ("tidx", "mask") if k in kw}
        # one gradient for all samples, divided by the 'mean' denominator
        d = np_be.cross_entropy_backward(np.asarray(1.5, dt), x, t, w, ii, ls, saved, 3.0, **bkw)
        assert d.shape == x.shape and d.dtype == dt
        np.testing.assert_allclose(d, ref_grad * 0.5, **tol)
        # one gradient per sample ('none')
        g = np.random.default_rng(1).standard_normal(t.shape).astype(dt)
        d = np_be.cross_entropy_backward(g, x, t, w, ii, ls, saved, None, **bkw)
        np.testing.assert_allclose(d, ref_grad * g, **tol)


@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy_numpy_spatial_and_half(np_be, ls):
    x, t, w = _ce_case((3, 5, 4, 2), np.float64, True, -100, 4)
    loss, saved = np_be.cross_entropy_forward(x, t, w, -100, ls)
    ref_loss, ref_grad = _ce_ref(x, t, w, -100, ls)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-12)
    d = np_be.cross_entropy_backward(np.asarray(1.0), x, t, w, -100, ls, saved)
    np.testing.assert_allclose(d, ref_grad, rtol=1e-10, atol=1e-12)
    # 2-byte floats compute in float32
    xh = x.astype(np.float16)
    loss, saved = np_be.cross_entropy_forward(xh, t, w.astype(np.float16), -100, ls)
    assert loss.dtype == np.float32
    ref_loss, _ = _ce_ref(xh, t, w.astype(np.float16), -100, ls)
    np.testing.assert_allclose(loss, ref_loss, rtol=1e-5, atol=1e-6)
    d = np_be.cross_entropy_backward(np.asarray(1.0, np.float16), xh, t, w.astype(np.float16), -100, ls, saved)
    assert d.dtype == np.float32


def test_cross_entropy_numpy_extreme_logits(np_be):
    # a logit far above the target's (the row-maximum shift) and large magnitudes
    x = np.array([[1000.0, -1000.0, 0.0], [-1e4, -1e4 + 1, -1e4 + 2], [50.0, 50.0, 50.0], [30.0, 0.0, 0.0]])
    t = np.array([[1], [0], [2], [0]])
    for dt in DTYPES:
        xd = x.astype(dt)
        loss, saved = np_be.cross_entropy_forward(xd, t, None, -100, 0.0)
        ref_loss, ref_grad = _ce_ref(x, t, None, -100, 0.0)
        # the last loss, log(1 + 2 e^-30), is below float32's resolution of 1 + eps
        np.testing.assert_allclose(loss, ref_loss, rtol=1e-6, atol=1e-7 if dt == np.float32 else 1e-15)
        d = np_be.cross_entropy_backward(np.asarray(1.0, dt), xd, t, None, -100, 0.0, saved)
        np.testing.assert_allclose(d, ref_grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", CE_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.1])
@pytest.mark.parametrize("ignore", [None, -100, 0])
def test_cross_entropy_kernel_matches_numpy(np_be, sim_be, monkeypatch, shape, dt, weighted, ls, ignore):
    calls = _spy(monkeypatch, sim_be.kernels, "cross_entropy", "cross_entropy_backward")
    ii = -100 if ignore is None else ignore
    x, t, w = _ce_case(shape, dt, weighted, ignore, sum(shape) + 7 * weighted)
    tol = _tol(dt)
    want, saved_np = np_be.cross_entropy_forward(x, t, w, ii, ls)
    kw = dict(zip(("tidx", "mask", "coef"), _hints(t, w, ii, x.dtype)))
    loss, saved = sim_be.cross_entropy_forward(x, t, w, ii, ls, **kw)
    assert calls["cross_entropy"] == [True] and set(saved) == {"lse"}
    assert loss.shape == t.shape and loss.dtype == dt
    np.testing.assert_allclose(loss, want, **tol)
    g = np.random.default_rng(2).standard_normal(t.shape).astype(dt)
    for gout, denom in ((np.asarray(2.0, dt), 4.0), (np.asarray(1.0, dt), 0.0), (g, None)):
        d = sim_be.cross_entropy_backward(gout, x, t, w, ii, ls, saved, denom, tidx=kw["tidx"], mask=kw["mask"])
        ref = np_be.cross_entropy_backward(gout, x, t, w, ii, ls, saved_np, denom)
        assert d.shape == x.shape and d.dtype == dt
        np.testing.assert_allclose(d, ref, **tol)
    assert calls["cross_entropy_backward"] == [True] * 3


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("offset", [1e4, -1e4])
def test_cross_entropy_kernel_keeps_the_digits_of_large_logits(sim_be, dt, offset):
    # log-probabilities must be formed as (x - max) - log(sum exp(x - max)): through logsumexp itself
    # (about 1e4, where float32's spacing is 1e-3) every digit of a loss of order 1 would be rounded away
    rng = np.random.default_rng(11)
    x = (offset + rng.standard_normal((5, 37)) * 3).astype(dt)
    t = rng.integers(0, 37, (5, 1))
    w = rng.uniform(0.5, 2, 37).astype(dt)
    for ls in (0.0, 0.3):
        ref_loss, ref_grad = _ce_ref(x, t, w, -100, ls)
        loss, saved = sim_be.cross_entropy_forward(x, t, w, -100, ls)
        assert set(saved) == {"lse"}
        np.testing.assert_allclose(loss, ref_loss, **_tol(dt))
        d = sim_be.cross_entropy_backward(np.asarray(1.0, dt), x, t, w, -100, ls, saved)
        np.testing.assert_allclose(d, ref_grad, **_tol(dt))


def test_cross_entropy_kernel_falls_back(np_be, sim_be, monkeypatch):
    calls = _spy(monkeypatch, sim_be.kernels, "cross_entropy", "cross_entropy_backward")
    # spatial logits, weights of another dtype: the base body, on the same arrays (2-byte floats take the kernels)
    x, t, w = _ce_case((5, 6), np.float32, True, -100, 2)
    cases = [_ce_case((3, 4, 5), np.float32, True, -100, 1), (x, t, w.astype(np.float64))]
    for x, t, w in cases:
        loss, saved = sim_be.cross_entropy_forward(x, t, w, -100, 0.1)
        want, saved_np = np_be.cross_entropy_forward(x, t, w, -100, 0.1)
        assert {"e", "se"} <= set(saved) and "lse" not in saved
        np.testing.assert_allclose(loss, want, rtol=1e-5, atol=1e-6)
        d = sim_be.cross_entropy_backward(np.asarray(1.0, x.dtype), x, t, w, -100, 0.1, saved)
        np.testing.assert_allclose(d, np_be.cross_entropy_backward(np.asarray(1.0, x.dtype), x, t, w, -100, 0.1,
                                                                     saved_np), rtol=1e-5, atol=1e-6)
    assert calls["cross_entropy"] == [] and calls["cross_entropy_backward"] == []


def test_cross_entropy_backward_declined_by_kernel(np_be, sim_be, monkeypatch):
    # the forward ran the kernel (state: log-sum-exp per row) but the backward kernel declines: the base body
    # must read the kernel's state
    x, t, w = _ce_case((7, 31), np.float64, True, -100, 5)
    _, saved = sim_be.cross_entropy_forward(x, t, w, -100, 0.1)
    assert set(saved) == {"lse"}
    monkeypatch.setattr(sim_be.kernels, "cross_entropy_backward", lambda *a, **k: None)
    g = np.random.default_rng(3).standard_normal(t.shape)
    d = sim_be.cross_entropy_backward(g, x, t, w, -100, 0.1, saved)
    _, ref_grad = _ce_ref(x, t, w, -100, 0.1)
    np.testing.assert_allclose(d, ref_grad * g, rtol=1e-10, atol=1e-12)


def test_kernels_switched_off_use_the_base_bodies(np_be, monkeypatch):
    try:
        from minitorch_gpu.backends.cuda import sim  # noqa: F401
    except ImportError:
        pytest.skip("the CUDA simulator is not part of this build")
    from minitorch_gpu.backends.cuda_backend import SimBackend
    monkeypatch.setenv("MINITORCH_GPU_KERNELS", "0")
    be = SimBackend(0)
    assert be.kernels is None
    x, t, w = _ce_case((7, 31), np.float32, True, -100, 6)
    loss, saved = be.cross_entropy_forward(x, t, w, -100, 0.0)
    assert {"e", "se"} <= set(saved) and "lse" not in saved
    np.testing.assert_allclose(loss, np_be.cross_entropy_forward(x, t, w, -100, 0.0)[0], rtol=1e-6)
    y, saved = be.layer_norm_forward(x, w, None, 1e-5)
    assert set(saved) == {"xhat", "rstd"}
    np.testing.assert_allclose(y, np_be.layer_norm_forward(x, w, None, 1e-5)[0], rtol=1e-5, atol=1e-6)


# ====================================================================== layer norm

def _ln_ref(x, w, b, eps, center, dy):
    x64 = x.astype(np.float64)
    N = x.shape[1]
    mu = x64.mean(axis=1, keepdims=True) if center else 0.0
    xc = x64 - mu
    rstd = 1 / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + eps)
    xhat = xc * rstd
    wv = np.ones(N) if w is None else w.astype(np.float64)
    y = xhat * wv + (0.0 if b is None else b.astype(np.float64))
    dy = dy.astype(np.float64)
    dxhat = dy * wv
    dx = dxhat - xhat * (dxhat * xhat).mean(axis=1, keepdims=True)
    if center:
        dx = dx - dxhat.mean(axis=1, keepdims=True)
    return y, dx * rstd, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def _ln_case(shape, dt, affine, seed):
    rng = np.random.default_rng(seed)
    N = shape[1]
    x = (rng.standard_normal(shape) * 2 + 1).astype(dt)
    w = rng.standard_normal(N).astype(dt) if affine in ("weight", "both") else None
    b = rng.standard_normal(N).astype(dt) if affine in ("bias", "both") else None
    dy = rng.standard_normal(shape).astype(dt)
    return x, w, b, dy


LN_SHAPES = [(0, 5), (1, 1), (1, 7), (7, 1), (7, 31), (5, 1500), (11, 256)]
AFFINE = ["none", "weight", "bias", "both"]
NEEDS = [(True, True, True), (True, False, False), (False, True, True), (False, True, False)]


def _check_ln_grads(got, ref, needs, has_w, has_b, tol):
    gx, gw, gb = got
    nx, nw, nb = needs
    _, dx, dw, db = ref
    assert (gx is None) == (not nx)
    if nx:
        np.testing.assert_allclose(gx, dx, **tol)
    if nw and has_w:
        np.testing.assert_allclose(gw, dw, **tol)
    if nb and has_b:
        np.testing.assert_allclose(gb, db, **tol)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", LN_SHAPES)
@pytest.mark.parametrize("affine", AFFINE)
@pytest.mark.parametrize("center", [True, False])
def test_layer_norm_numpy_matches_reference(np_be, shape, dt, affine, center):
    x, w, b, dy = _ln_case(shape, dt, affine, sum(shape))
    ref = _ln_ref(x, w, b, 1e-5, center, dy)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dt == np.float32 else _tol(dt)
    y, saved = np_be.layer_norm_forward(x, w, b, 1e-5, center)
    assert y.shape == x.shape and y.dtype == dt
    np.testing.assert_allclose(y, ref[0], **tol)
    for needs in NEEDS:
        got = np_be.layer_norm_backward(dy, x, w, saved, center, (needs[0], needs[1] and w is not None,
                                                                  needs[2] and b is not None))
        if got[1] is not None:
            assert got[1].shape == (shape[1],)
        _check_ln_grads(got, ref, needs, w is not None, b is not None, tol)


def test_layer_norm_numpy_keeps_saved_apart_and_half(np_be):
    x, _, _, dy = _ln_case((4, 6), np.float32, "none", 1)
    y, saved = np_be.layer_norm_forward(x, None, None, 1e-5, keep=True)
    assert not np.shares_memory(y, saved["xhat"])
    y[...] = 0  # the caller may write into its result
    gx, _, _ = np_be.layer_norm_backward(dy, x, None, saved, needs=(True, False, False))
    np.testing.assert_allclose(gx, _ln_ref(x, None, None, 1e-5, True, dy)[1], rtol=1e-4, atol=1e-5)
    # 2-byte floats: computed in float32, result in the input's dtype, parameter gradients in float32
    xh, w = x.astype(np.float16), np.linspace(0.5, 1.5, 6).astype(np.float32)
    y, saved = np_be.layer_norm_forward(xh, w, None, 1e-5)
    assert y.dtype == np.float16 and saved["rstd"].dtype == np.float32
    ref = _ln_ref(xh, w, None, 1e-5, True, dy.astype(np.float16))
    np.testing.assert_allclose(y, ref[0], rtol=2e-3, atol=2e-3)
    gx, gw, _ = np_be.layer_norm_backward(dy.astype(np.float16), xh, w, saved, needs=(True, True, False))
    assert gx.dtype == np.float16 and gw.dtype == np.float32
    np.testing.assert_allclose(gw, ref[2], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", LN_SHAPES)
@pytest.mark.parametrize("affine", AFFINE)
def test_layer_norm_kernel_matches_numpy(np_be, sim_be, monkeypatch, shape, dt, affine):
    calls = _spy(monkeypatch, sim_be.kernels, "layer_norm", "layer_norm_backward")
    x, w, b, dy = _ln_case(shape, dt, affine, 3 * sum(shape))
    tol = {"rtol": 1e-4, "atol": 1e-5} if dt == np.float32 else _tol(dt)
    want, saved_np = np_be.layer_norm_forward(x, w, b, 1e-5)
    y, saved = sim_be.layer_norm_forward(x, w, b, 1e-5)
    assert calls["layer_norm"] == [True] and set(saved) == {"mean", "rstd"}
    assert y.shape == x.shape and y.dtype == dt
    np.testing.assert_allclose(y, want, **tol)
    for needs in NEEDS:
        needs = (needs[0], needs[1] and w is not None, needs[2] and b is not None)
        got = sim_be.layer_norm_backward(dy, x, w, saved, True, needs)
        ref = np_be.layer_norm_backward(dy, x, w, saved_np, True, needs)
        for a, r in zip(got, ref):
            assert (a is None) == (r is None)
            if a is not None:
                assert a.shape == r.shape and a.dtype == r.dtype
                np.testing.assert_allclose(a, r, **tol)
    assert calls["layer_norm_backward"] == [True] * len(NEEDS)


def test_layer_norm_kernel_falls_back(np_be, sim_be, monkeypatch):
    calls = _spy(monkeypatch, sim_be.kernels, "layer_norm", "layer_norm_backward")
    x, w, b, dy = _ln_case((5, 9), np.float32, "both", 4)
    cases = [(x, w, b, dy, False),  # RMS normalisation
             (x.astype(np.float16), w, b, dy.astype(np.float16), True),  # 2-byte input, float32 parameters
             (x, w.astype(np.float64), b, dy, True)]  # parameters of another dtype
    for xc, wc, bc, dyc, center in cases:
        y, saved = sim_be.layer_norm_forward(xc, wc, bc, 1e-5, center)
        want, saved_np = np_be.layer_norm_forward(xc, wc, bc, 1e-5, center)
        assert set(saved) == {"xhat", "rstd"}
        np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
        got = sim_be.layer_norm_backward(dyc, xc, wc, saved, center)
        for a, r in zip(got, np_be.layer_norm_backward(dyc, xc, wc, saved_np, center)):
            np.testing.assert_allclose(a, r, rtol=1e-3, atol=1e-3)
    assert calls["layer_norm"] == [] and calls["layer_norm_backward"] == []


def test_layer_norm_backward_declined_by_kernel(sim_be, monkeypatch):
    x, w, b, dy = _ln_case((7, 33), np.float64, "both", 5)
    _, saved = sim_be.layer_norm_forward(x, w, b, 1e-5)
    assert set(saved) == {"mean", "rstd"}
    monkeypatch.setattr(sim_be.kernels, "layer_norm_backward", lambda *a, **k: None)
    got = sim_be.layer_norm_backward(dy, x, w, saved)
    _check_ln_grads(got, _ln_ref(x, w, b, 1e-5, True, dy), (True, True, True), True, True, _tol(np.float64))


# ====================================================================== grouped normalisation

def test_norm_forward_backward_group_layout(np_be):
    # group norm's view: (N, groups, channels per group, positions) over axes 2 and 3, per-channel parameters
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 2, 5, 7)) * 3 + 2
    w = rng.standard_normal((1, 2, 5, 1))
    b = rng.standard_normal((1, 2, 5, 1))
    dy = rng.standard_normal(x.shape)
    y, saved = np_be.norm_forward(x, (2, 3), w, b, 1e-5)
    mu = x.mean(axis=(2, 3), keepdims=True)
    rstd = 1 / np.sqrt(((x - mu) ** 2).mean(axis=(2, 3), keepdims=True) + 1e-5)
    xhat = (x - mu) * rstd
    np.testing.assert_allclose(y, xhat * w + b, rtol=1e-12)
    gx, gw, gb = np_be.norm_backward(dy, x, w, saved, (2, 3), (0, 3))
    dxhat = dy * w
    want = rstd * (dxhat - dxhat.mean(axis=(2, 3), keepdims=True)
                   - xhat * (dxhat * xhat).mean(axis=(2, 3), keepdims=True))
    np.testing.assert_allclose(gx, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw, (dy * xhat).sum(axis=(0, 3), keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(gb, dy.sum(axis=(0, 3), keepdims=True), rtol=1e-10)
    # batch norm's layout with precomputed statistics gives the same as computing them
    xb = x.reshape(3, 10, 7)
    mean, var, _ = np_be.norm_moments(xb, (0, 2))
    np.testing.assert_allclose(mean, xb.mean(axis=(0, 2), keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(var, xb.var(axis=(0, 2), keepdims=True), rtol=1e-12)
    y1, _ = np_be.norm_forward(xb, (0, 2), None, None, 1e-3, stats=(mean, var))
    y2, _ = np_be.norm_forward(xb, (0, 2), None, None, 1e-3)
    np.testing.assert_allclose(y1, y2, rtol=1e-12)


@pytest.mark.parametrize("layout", ["trailing", "strided", "middle"])
def test_norm_moments(np_be, layout):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 6, 5)).astype(np.float32) + 100  # an offset that E[x^2] - E[x]^2 would lose
    axes = (1, 2)
    if layout == "strided":
        x = x.transpose(0, 2, 1)
    elif layout == "middle":
        axes = (1,)
    mean, var, xc = np_be.norm_moments(x, axes)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mean, x64.mean(axis=axes, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(var, x64.var(axis=axes, keepdims=True), rtol=1e-4)
    np.testing.assert_allclose(xc, x64 - x64.mean(axis=axes, keepdims=True), atol=1e-4)
    none, ms, same = np_be.norm_moments(x, axes, center=False)
    assert none is None and same is x
    np.testing.assert_allclose(ms, (x64 * x64).mean(axis=axes, keepdims=True), rtol=1e-5)


# ====================================================================== bincount and pooling indices

def test_bincount(np_be):
    x = np.array([0, 3, 3, 1, 3], np.int64)
    r = np_be.bincount(x, minlength=6)
    assert r.dtype == np.int64
    np.testing.assert_array_equal(r, [1, 1, 0, 3, 0, 0])
    np.testing.assert_array_equal(np_be.bincount(x), [1, 1, 0, 3])
    np.testing.assert_array_equal(np_be.bincount(np.zeros(0, np.int64), minlength=3), [0, 0, 0])


def _positions_ref(choice, kernel, stride, pads, dilation, spatial):
    k = len(kernel)
    out = np.empty(choice.shape, np.int64)
    for idx in np.ndindex(*choice.shape):
        offs = np.unravel_index(int(choice[idx]), kernel)
        blocks = idx[choice.ndim - k:]
        pos = []
        for i in range(k):
            p = blocks[i] * stride[i] - pads[i][0] + offs[i] * dilation[i]
            pos.append(max(p, 0) if pads[i][0] else p)
        flat = 0
        for p, n in zip(pos, spatial):
            flat = flat * n + p  # a window reaching into the high padding goes past its row, as computed
        out[idx] = flat
    return out


@pytest.mark.parametrize("kernel,stride,pads,dilation,spatial,blocks", [
    ((3,), (2,), ((0, 0),), (1,), (9,), (4,)),
    ((2, 3), (1, 2), ((1, 1), (0, 1)), (2, 1), (5, 7), (4, 4)),
    ((2, 2, 2), (2, 1, 2), ((0, 0), (1, 0), (1, 1)), (1, 1, 2), (4, 3, 6), (2, 4, 3)),
])
def test_max_pool_positions(np_be, kernel, stride, pads, dilation, spatial, blocks):
    rng = np.random.default_rng(len(kernel))
    choice = rng.integers(0, int(np.prod(kernel)), (2, 3) + blocks)
    got = np_be.max_pool_positions(choice, kernel, stride, pads, dilation, spatial)
    np.testing.assert_array_equal(got, _positions_ref(choice, kernel, stride, pads, dilation, spatial))


def _bin_tables(spatial, sizes):
    tables = []
    for n, o in zip(spatial, sizes):
        start = (np.arange(o) * n) // o
        end = -((-(np.arange(o) + 1) * n) // o)
        w = int((end - start).max())
        tables.append(np.minimum(start[:, None] + np.arange(w)[None, :], (end - 1)[:, None]))
    return tables


@pytest.mark.parametrize("spatial,sizes", [((7,), (3,)), ((7, 5), (3, 4)), ((5, 4, 6), (2, 3, 4)), ((4,), (4,))])
def test_adaptive_max_pool(np_be, spatial, sizes):
    rng = np.random.default_rng(sum(spatial))
    x = rng.standard_normal((2, 3) + spatial)
    vals, flat = np_be.adaptive_max_pool(x, _bin_tables(spatial, sizes))
    assert vals.shape == flat.shape == (2, 3) + sizes and flat.dtype == np.int64
    for lead in np.ndindex(2, 3):
        plane = x[lead]
        for b in np.ndindex(*sizes):
            region = tuple(slice((i * n) // o, -((-(i + 1) * n) // o)) for i, n, o in zip(b, spatial, sizes))
            sub = plane[region]
            at = np.unravel_index(int(sub.argmax()), sub.shape)
            pos = tuple(r.start + a for r, a in zip(region, at))
            assert vals[lead + b] == sub.max()
            assert flat[lead + b] == np.ravel_multi_index(pos, spatial)


# ====================================================================== nn on the simulated device

@pytest.fixture
def sim_device():
    try:
        from minitorch_gpu.backends.cuda import sim  # noqa: F401
    except ImportError:
        pytest.skip("the CUDA simulator is not part of this build")
    prev = mt.cuda.use_simulator(True)
    if get_backend("cuda").kernels is None:
        mt.cuda.use_simulator(prev)
        pytest.skip("kernels are switched off (MINITORCH_GPU_KERNELS=0)")
    yield get_backend("cuda")
    mt.cuda.use_simulator(prev)


def test_nn_cross_entropy_runs_the_kernels(sim_device, monkeypatch):
    # with a gradient to come the forward is the fused pass and the backward scales its gradient
    calls = _spy(monkeypatch, sim_device.kernels, "cross_entropy", "cross_entropy_fused", "cross_entropy_scale")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((11, 13)).astype(np.float32)
    t = rng.integers(0, 13, 11)
    t[2] = 4
    w = rng.uniform(0.5, 2, 13).astype(np.float32)
    for kw in ({}, {"weight": w, "ignore_index": 4, "label_smoothing": 0.2}, {"reduction": "none"}):
        out = {}
        for dev in ("cpu", "cuda"):
            xm = mt.tensor(x, device=dev, requires_grad=True)
            args = {k: (mt.tensor(v, device=dev) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
            loss = F.cross_entropy(xm, mt.tensor(t, device=dev), **args)
            assert loss.grad_fn.name() == "CrossEntropyLossBackward0"
            loss.sum().backward()
            out[dev] = (loss.detach().cpu().numpy(), xm.grad.cpu().numpy())
        np.testing.assert_allclose(out["cuda"][0], out["cpu"][0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out["cuda"][1], out["cpu"][1], rtol=1e-5, atol=1e-6)
    assert calls["cross_entropy_fused"] == [True] * 3 and calls["cross_entropy_scale"] == [True] * 3
    assert calls["cross_entropy"] == []
    with mt.no_grad():
        loss = F.cross_entropy(mt.tensor(x, device="cuda"), mt.tensor(t, device="cuda"))
    np.testing.assert_allclose(loss.cpu().numpy(), F.cross_entropy(mt.tensor(x), mt.tensor(t)).numpy(), rtol=1e-5)
    assert calls["cross_entropy"] == [True] and calls["cross_entropy_fused"] == [True] * 3


def test_nn_layer_norm_runs_the_kernels(sim_device, monkeypatch):
    calls = _spy(monkeypatch, sim_device.kernels, "layer_norm", "layer_norm_backward")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 5, 4, 6)).astype(np.float32)
    w = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((4, 6)).astype(np.float32)
    out = {}
    for dev in ("cpu", "cuda"):
        xm = mt.tensor(x, device=dev, requires_grad=True)
        wm = mt.tensor(w, device=dev, requires_grad=True)
        bm = mt.tensor(b, device=dev, requires_grad=True)
        y = F.layer_norm(xm, (4, 6), wm, bm)
        assert y.grad_fn.name() == "NativeLayerNormBackward0"
        (y * y).sum().backward()
        out[dev] = [y.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in (xm, wm, bm)]
    for a, r in zip(out["cuda"], out["cpu"]):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5)
    assert calls["layer_norm"] == [True] and calls["layer_norm_backward"] == [True]
    # RMS norm has no kernel: the base body on the device's arrays
    y = F.rms_norm(mt.tensor(x, device="cuda"), (6,))
    np.testing.assert_allclose(y.cpu().numpy(), F.rms_norm(mt.tensor(x), (6,)).numpy(), rtol=1e-5, atol=1e-6)
    assert calls["layer_norm"] == [True]
