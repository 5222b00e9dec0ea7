"""attention.cu on the simulator against a NumPy reference: forward (output and log-sum-exp) and backward (dq, dk,
dv) over awkward sizes (1, primes, tile boundaries +- 1, L != S), head dims from 1 to 128 (every kernel width),
causal / bool / float masks with broadcast dims and fully masked rows, dropout (the mask is rand_bernoulli's from
the same generator state), strided and misaligned views read in place, float32, float64, float16 and bfloat16,
and a grid smaller than the work (the grid-stride loop over tiles)."""
import math

import ml_dtypes
import numpy as np
import pytest

RNG = np.random.default_rng(7)
LOG2E = 1.4426950408889634
BF16 = np.dtype(ml_dtypes.bfloat16)
HALVES = [np.float16, BF16]
ALL = [np.float32, np.float64] + HALVES


def _ref(q, k, v, mask=None, causal=False, scale=None, keep=None, g=None):
    """(out, lse in log2 units, dq, dk, dv) in float64, the composite formulas step by step."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(-1, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(s - m)
    tot = e.sum(-1, keepdims=True)
    p = e / np.where(tot == 0, 1.0, tot)
    with np.errstate(divide="ignore"):
        lse = np.where(tot[..., 0] == 0, -np.inf, (m[..., 0] + np.log(tot[..., 0])) * LOG2E)
    pd = p if keep is None else p * keep
    out = pd @ v
    if g is None:
        return out, lse
    dpd = g @ np.swapaxes(v, -1, -2)
    dp = dpd if keep is None else dpd * keep
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    return out, lse, ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, np.swapaxes(pd, -1, -2) @ g


def _close(got, want, dt):
    """float32 / float64 against the float64 reference; the 16-bit types compute in float32 from their rounded
    inputs and round each result once: two units of the type's last place, relative to the result's scale."""
    dt = np.dtype(dt)
    got = got.astype(np.float64)
    if dt.itemsize == 2:
        eps = 2.0 ** -10 if dt == np.float16 else 2.0 ** -7
        scale = float(np.abs(want[np.isfinite(want)]).max(initial=1.0))
        np.testing.assert_allclose(got, want, rtol=2 * eps, atol=2 * eps * scale)
        return
    np.testing.assert_allclose(got, want, **(dict(rtol=2e-4, atol=2e-5) if dt == np.float32
                                             else dict(rtol=1e-10, atol=1e-12)))


def _check(k, q, kk, v, mask=None, causal=False, scale=None, dropout_p=0.0, seed=0, offset=0, be=None):
    dt = q.dtype
    D = q.shape[-1]
    sc = 1 / math.sqrt(D) if scale is None else scale
    r = k.attention_forward(q, kk, v, mask, causal, sc, dropout_p, seed, offset)
    assert r is not None
    out, lse = r
    keep = None
    if dropout_p > 0:
        drawn, _ = be.rand_bernoulli(seed, offset, q.shape[:-1] + kk.shape[-2:-1], 1 - dropout_p, np.dtype(np.float64))
        keep = drawn / (1 - dropout_p)
    g = RNG.standard_normal(out.shape).astype(dt)
    ro, rl, rdq, rdk, rdv = _ref(q, kk, v, mask, causal, sc, keep, g)
    assert out.dtype == dt and out.shape == ro.shape
    _close(out, ro, dt)
    # the log-sum-exp stays in the arithmetic type: float32 for the 16-bit types
    assert lse.dtype == (np.float32 if dt.itemsize == 2 else dt)
    np.testing.assert_allclose(lse.reshape(rl.shape), rl, **(dict(rtol=2e-4, atol=2e-5) if dt != np.float64
                                                            else dict(rtol=1e-10, atol=1e-12)))
    dq, dk, dv = k.attention_backward(g, q, kk, v, out, lse, mask, causal, sc, dropout_p, seed, offset)
    assert dq.shape == q.shape and dk.shape == kk.shape and dv.shape == v.shape
    for got, want in ((dq, rdq), (dk, rdk), (dv, rdv)):
        assert got.dtype == dt
        _close(got, want, dt)
    return out


def _qkv(shape_q, S, dt, dv=None):
    *batch, L, D = shape_q
    q = RNG.standard_normal(shape_q).astype(dt)
    kk = RNG.standard_normal((*batch, S, D)).astype(dt)
    v = RNG.standard_normal((*batch, S, D if dv is None else dv)).astype(dt)
    return q, kk, v


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("L,S,D,causal", [
    (1, 1, 8, False), (1, 1, 1, True), (5, 5, 16, True), (17, 33, 8, False), (33, 17, 64, True),
    (64, 64, 64, True), (65, 63, 33, False), (31, 95, 100, True), (70, 129, 128, False)])
def test_forward_and_backward_match_reference(k, dt, L, S, D, causal):
    _check(k, *_qkv((2, 3, L, D), S, dt), causal=causal)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_value_head_dim_differs(k, dt):
    _check(k, *_qkv((1, 2, 19, 24), 23, dt, dv=40))
    _check(k, *_qkv((1, 2, 19, 72), 23, dt, dv=5), causal=True)


def test_batch_dims_of_any_rank(k):
    _check(k, *_qkv((7, 16), 9, np.float32))
    _check(k, *_qkv((2, 2, 3, 5, 8), 9, np.float64), causal=True)


@pytest.mark.parametrize("dt", ALL)
def test_masks(k, dt):
    q, kk, v = _qkv((2, 3, 21, 16), 37, dt)
    bmask = RNG.random((21, 37)) > 0.4
    bmask[4] = False  # a row with no key: zeros out, zero gradient
    out = _check(k, q, kk, v, bmask)
    assert (out[:, :, 4] == 0).all()
    _check(k, q, kk, v, RNG.random((2, 1, 21, 37)) > 0.3)  # broadcast over heads
    fmask = RNG.standard_normal((3, 21, 37)).astype(dt)
    fmask[1, 2] = -np.inf
    fmask[0, 5, :7] = -np.inf
    _check(k, q, kk, v, fmask, scale=0.37)
    _check(k, q, kk, v, fmask.astype(np.float32 if dt == np.float64 else np.float64))  # converted to q's dtype


@pytest.mark.parametrize("dt", ALL)
def test_dropout_matches_rand_bernoulli_mask(k, sim_backend, dt):
    q, kk, v = _qkv((2, 2, 33, 16), 41, dt)
    _check(k, q, kk, v, causal=True, dropout_p=0.3, seed=1234, offset=5, be=sim_backend)
    # a counter near 2^64 carries into the high word, as the stream does
    _check(k, q, kk, v, dropout_p=0.5, seed=99, offset=(1 << 64) - 3, be=sim_backend)
    a = k.attention_forward(q, kk, v, None, False, 0.25, 0.3, 1, 0)[0]
    b = k.attention_forward(q, kk, v, None, False, 0.25, 0.3, 1, 0)[0]
    c = k.attention_forward(q, kk, v, None, False, 0.25, 0.3, 2, 0)[0]
    assert np.array_equal(a, b) and not np.allclose(a, c)


def test_strided_views_are_read_in_place(k):
    # (B, T, H, D) projections viewed as (B, H, T, D), and views whose rows start off 16-byte alignment
    base = RNG.standard_normal((2, 19, 3, 3, 33)).astype(np.float32)
    q = base[:, :, 0, :, 1:].transpose(0, 2, 1, 3)
    kk = base[:, :, 1, :, :32].transpose(0, 2, 1, 3)
    v = base[:, :, 2, :, 1:].transpose(0, 2, 1, 3)
    assert not q.flags.c_contiguous and q.__array_interface__["data"][0] % 16 != 0
    _check(k, q, kk, v, causal=True)
    _check(k, q[:, :, ::2], kk[:, :, 1:], v[:, :, 1:])


def test_declines_what_it_does_not_cover(k):
    q, kk, v = _qkv((1, 2, 5, 8), 6, np.float32)
    assert k.attention_forward(q.astype(np.float16), kk.astype(BF16), v.astype(np.float16), None, False, 1.0,
                               0.0, 0, 0) is None
    big = np.zeros((1, 1, 5, 129), np.float32)
    assert k.attention_forward(big, big, big, None, False, 1.0, 0.0, 0, 0) is None
    assert k.attention_forward(q, kk[:, :1], v[:, :1], None, False, 1.0, 0.0, 0, 0) is None  # broadcast batch
    assert k.attention_forward(q[:, :, :0], kk, v, None, False, 1.0, 0.0, 0, 0) is None


def test_declines_tiles_over_the_shared_memory_limit(k, monkeypatch):
    # head dim 128 needs 162.5 KiB (float32) and 145.5 KiB (float64) in the dK/dV pass: an A100 (163 KiB a block)
    # and an H100 (227 KiB) fit them; a device with 100 KiB must decline in the forward already (a backward that
    # could not run would strand the graph), while head dim 64 in float32 (98.5 KiB) still runs
    q, kk, v = _qkv((1, 1, 9, 128), 9, np.float32)
    monkeypatch.setitem(k.__dict__, "_smem_optin", 100 * 1024)
    assert k.attention_forward(q, kk, v, None, True, 0.1, 0.0, 0, 0) is None
    assert k.attention_forward(q.astype(np.float64), kk.astype(np.float64), v.astype(np.float64), None, True, 0.1,
                               0.0, 0, 0) is None
    _check(k, q[..., :64], kk[..., :64], v[..., :64], causal=True)
