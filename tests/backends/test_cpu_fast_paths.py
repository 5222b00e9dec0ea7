"""The NumPy backend's fast paths, each against the plain NumPy expression it replaces (the reference), on the
awkward cases: ties between -0.0 and +0.0, NaN and inf, negative axes, repeated indices, out-of-range and
negative indices (which must take the reference path and fail or wrap the same way), 0-d and empty arrays,
float16 / float64 / integer dtypes. Plus the allocator setting and its opt-outs."""
import os
import subprocess
import sys

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import numpy_backend

F = mt.nn.functional


@pytest.fixture(scope="module")
def be():
    """The NumPy bodies: the compiled row loops (tests/backends/test_rows_native.py holds them to these) off."""
    b = numpy_backend.NumpyBackend()
    b.native_rows = False
    return b


def _same(a, b):
    """Equal values, dtypes, shapes and signs of zero (NaN equal to NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


# ---------------------------------------------------------------------- relu and its gradient

@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16])
def test_threshold_backward_is_an_exact_select(be, dt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(dt)
    x[:6] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0]
    g = rng.standard_normal(1000).astype(dt)
    g[6:12] = [np.inf, -np.inf, np.nan, -0.0, np.inf, np.nan]  # masked-out inf/NaN gradients must give 0
    y = np.maximum(x, 0)
    # PyTorch zeroes where y <= 0: a NaN y passes its gradient
    _same(be.threshold_backward(g, y, 0), np.where(y <= 0, dt(0), g))
    _same(be.threshold_backward(g[:1].reshape(()), y[7:8].reshape(()), 0), np.where(y[7] <= 0, dt(0), g[0]))
    # integer gradients and broadcast shapes take the reference path
    gi = rng.integers(-5, 5, 1000)
    _same(be.threshold_backward(gi, y, 0), np.where(y <= 0, 0, gi))


def test_relu_keeps_negative_zero_and_nan_like_torch(torch):
    x = np.array([-0.0, 0.0, np.nan, -1.5, 2.0, np.inf, -np.inf], np.float32)
    ours = mt.tensor(x).relu().numpy()
    theirs = torch.relu(torch.tensor(x)).numpy()
    _same(ours, theirs)
    _same(mt.tensor([-3, 4]).relu().numpy(), np.array([0, 4]))


def test_relu_double_backward():
    x = mt.tensor([-1.0, 0.5, 2.0, -0.25], dtype=mt.float64, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: t.relu() * t, (x,))
    assert mt.autograd.gradgradcheck(lambda t: t.relu() * t, (x,))
    y = x.relu()
    (gx,) = mt.autograd.grad(y.sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "ThresholdBackwardBackward0"


# ---------------------------------------------------------------------- max / min over a short axis

def _extreme_ref(x, axis, keepdims, argfn):
    idx = np.asarray(argfn(x, axis=axis, keepdims=True), dtype=np.int64)
    vals = np.take_along_axis(x, idx, axis=axis)
    if not keepdims:
        idx, vals = np.squeeze(idx, axis), np.squeeze(vals, axis)
    return vals, idx


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("shape,axis", [((64, 33, 4), 2), ((64, 33, 4), -1), ((5, 300, 3), -2), ((7, 40, 9), 0),
                                        ((2000, 16), 1), ((100, 2), 1)])
def test_max_min_dim_on_short_axes_match_argmax(be, dt, shape, axis):
    rng = np.random.default_rng(1)
    if np.dtype(dt).kind == "f":
        # many ties, among them -0.0 against +0.0: the first one must win, sign included
        x = np.round(rng.standard_normal(shape), 1).astype(dt)
        x[x > 1.0] = 0.0
        x[x < -1.5] = -0.0
    else:
        x = rng.integers(0, 4, shape).astype(dt)
    for keepdims in (False, True):
        for name, argfn in (("max_dim", np.argmax), ("min_dim", np.argmin)):
            vals, idx = getattr(be, name)(x, axis, keepdims)
            rv, ri = _extreme_ref(x, axis, keepdims, argfn)
            _same(idx, ri)
            _same(vals, rv)


def test_max_dim_with_nan_takes_the_reference_path(be):
    x = np.random.default_rng(2).standard_normal((300, 4)).astype(np.float32)
    x[3, 2] = x[5, 0] = x[5, 3] = np.nan
    vals, idx = be.max_dim(x, 1)
    rv, ri = _extreme_ref(x, 1, False, np.argmax)
    _same(idx, ri)
    _same(vals, rv)


def test_max_pool_matches_torch_with_ties(torch):
    x = np.zeros((4, 3, 8, 8), np.float32)
    x[:, :, ::3, ::2] = 1.0
    x[0, 0, 0, 1] = -0.0
    xt = torch.tensor(x, requires_grad=True)
    out_t, idx_t = torch.nn.functional.max_pool2d(xt, 2, return_indices=True)
    xm = mt.tensor(x, requires_grad=True)
    out_m, idx_m = F.max_pool2d(xm, 2, return_indices=True)
    np.testing.assert_array_equal(idx_m.numpy(), idx_t.numpy())
    np.testing.assert_array_equal(out_m.detach().numpy(), out_t.detach().numpy())
    out_m.sum().backward()
    out_t.sum().backward()
    np.testing.assert_array_equal(xm.grad.numpy(), xt.grad.numpy())


# ---------------------------------------------------------------------- accumulation with repeated indices

def _add_at_both(be, shape, index, values, dt=np.float32):
    a = np.random.default_rng(3).standard_normal(shape).astype(dt)
    ref = a.copy()
    np.add.at(ref, index, values)
    be.add_at(a, index, values)
    _same(a, ref)


def test_add_at_flat_path_matches_ufunc_at(be):
    rng = np.random.default_rng(4)
    # repeated positions: the sums must round in the same order
    _add_at_both(be, (5,), (rng.integers(0, 5, 400),), rng.standard_normal(400).astype(np.float32))
    rows = np.arange(6)[:, None]
    _add_at_both(be, (6, 4), (rows, rng.integers(0, 4, (6, 9))), rng.standard_normal((6, 9)).astype(np.float32))
    # a row index into a table (the trailing dims taken whole), values broadcast, a scalar
    idx = rng.integers(0, 7, (3, 11))
    _add_at_both(be, (7, 5, 2), (idx,), rng.standard_normal((3, 11, 5, 2)).astype(np.float32))
    _add_at_both(be, (7, 5), (idx,), rng.standard_normal(5).astype(np.float32))
    _add_at_both(be, (7, 5), (idx,), 2.5)
    _add_at_both(be, (7, 5), (idx.astype(np.int32),), 1.0, dt=np.float64)
    # the reference path: negative indices (which wrap), a leading slice, integer arrays
    _add_at_both(be, (7, 5), (np.array([-1, 2, -1]),), rng.standard_normal((3, 5)).astype(np.float32))
    _add_at_both(be, (3, 7), (slice(None), np.array([1, 1, 2])), rng.standard_normal((3, 3)).astype(np.float32))
    a = np.zeros(5, np.int64)
    be.add_at(a, (np.array([1, 1, 4]),), np.array([2, 3, 4]))
    np.testing.assert_array_equal(a, [0, 5, 0, 0, 4])


def test_add_at_rows_path_matches_ufunc_at(be):
    # an embedding's weight gradient: one row index, long rows; repeats up to the round limit and past it (the
    # reference path), rows of 3-d tables, float64, a vocabulary with every index repeated
    rng = np.random.default_rng(12)
    for table, n, repeat in (((1000, 128), 512, None), ((40, 64), 600, None), ((300, 4, 8), 200, None),
                             ((50, 32), 64, 9), ((50, 32), 64, 8)):
        idx = rng.integers(0, table[0], n)
        if repeat is not None:
            idx[:repeat] = 7  # row 7 exactly `repeat` times or more
        for dt in (np.float32, np.float64):
            _add_at_both(be, table, (idx,), rng.standard_normal((n,) + table[1:]).astype(dt), dt=dt)


def test_add_at_errors_are_numpys(be):
    with pytest.raises(IndexError, match="out of bounds"):
        be.add_at(np.zeros(3, np.float32), (np.array([5]),), np.ones(1, np.float32))
    with pytest.raises(ValueError):
        be.add_at(np.zeros((3, 2), np.float32), (np.array([1, 2]),), np.ones((3, 2), np.float32))


def test_add_at_into_a_non_contiguous_array_writes_through(be):
    base = np.zeros((4, 6), np.float32)
    view = base[:, ::2]
    be.add_at(view, (np.array([0, 0, 3]), np.array([1, 1, 2])), np.float32(1.5))
    assert base[0, 2] == 3.0 and base[3, 4] == 1.5 and base.sum() == 4.5


# ---------------------------------------------------------------------- reshape copies and row sums

def test_reshape_of_windows_with_a_short_tail(be):
    x = np.random.default_rng(5).standard_normal((32, 16, 32, 32)).astype(np.float32)
    s = x.strides
    win = np.lib.stride_tricks.as_strided(x, (32, 16, 16, 16, 2, 2), (s[0], s[1], 2 * s[2], 2 * s[3], s[2], s[3]))
    r = be.reshape(win, (32, 16, 16, 16, 4))
    _same(r, win.reshape(32, 16, 16, 16, 4))
    assert r.flags.c_contiguous and not np.shares_memory(r, x)
    _same(be.reshape(win, (-1, 4)), win.reshape(-1, 4))
    # a reshape that has a view still returns one
    t = x.transpose(1, 0, 2, 3)
    v = be.reshape(t, (16, 32, 1024))
    assert np.shares_memory(v, x)
    _same(v, t.reshape(16, 32, 1024))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_row_sums_match_numpy(be, dt):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((40, 3, 64)).astype(dt)
    tol = {"rtol": 2e-6, "atol": 1e-6} if dt == np.float32 else {"rtol": 1e-13, "atol": 1e-13}
    for axis, keepdims in ((-1, False), (2, True), ((2,), False)):
        r = be.sum(x, axis, keepdims)
        want = x.sum(axis=axis, keepdims=keepdims)
        assert r.shape == want.shape and r.dtype == want.dtype
        np.testing.assert_allclose(r, want, **tol)
        ax = (axis % 3,) if isinstance(axis, int) else axis  # mean takes a tuple of axes
        np.testing.assert_allclose(be.mean(x, ax, keepdims), x.mean(axis=ax, keepdims=keepdims), **tol)
    y = x.copy()
    y[0, 0, 3] = np.inf
    y[1, 2, 0] = np.nan
    y[2, 1, :2] = [np.inf, -np.inf]
    r = be.sum(y, -1)
    assert r[0, 0] == np.inf and np.isnan(r[1, 2]) and np.isnan(r[2, 1])
    # other axes, dtypes and layouts keep NumPy's own sum
    _same(be.sum(x, (0,)), x.sum(axis=0))
    _same(be.sum(x.transpose(0, 2, 1), -1), x.transpose(0, 2, 1).sum(axis=-1))
    xi = rng.integers(0, 9, (40, 64))
    _same(be.sum(xi, -1), xi.sum(axis=-1))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_column_sums_match_numpy(be, dt):
    """Sums over the first axis of 2-d arrays go through BLAS (ones @ x) up to 1024 rows: NumPy's values to the
    accuracy of its pairwise sum, inf and NaN as NumPy gives them; other shapes keep NumPy's own sum."""
    rng = np.random.default_rng(8)
    tol = {"rtol": 2e-6, "atol": 2e-5} if dt == np.float32 else {"rtol": 1e-13, "atol": 1e-12}
    for rows in (2, 512, 1024):
        x = rng.standard_normal((rows, 48)).astype(dt)
        for axis, keepdims in ((0, False), ((0,), True), (-2, False)):
            r = be.sum(x, axis, keepdims)
            want = x.sum(axis=axis, keepdims=keepdims)
            assert r.shape == want.shape and r.dtype == want.dtype
            np.testing.assert_allclose(r, want, **tol)
    y = rng.standard_normal((64, 5)).astype(dt)
    y[3, 0], y[4, 1], y[5, 2], y[6, 2] = np.inf, np.nan, np.inf, -np.inf
    r = be.sum(y, (0,))
    assert r[0] == np.inf and np.isnan(r[1]) and np.isnan(r[2]) and np.isfinite(r[3:]).all()
    big = rng.standard_normal((1025, 8)).astype(dt)
    _same(be.sum(big, (0,)), big.sum(axis=0))
    _same(be.sum(x.T, (0,)), x.T.sum(axis=0))


def test_softmax_primitives_match_the_formulas(be):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((50, 64)).astype(np.float64) * 4
    g = rng.standard_normal((50, 64))
    e = np.exp(x - x.max(-1, keepdims=True))
    y = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(be.softmax_forward(x, 1), y, rtol=1e-13)
    np.testing.assert_allclose(be.softmax_backward(y, g, 1), y * (g - (g * y).sum(-1, keepdims=True)), rtol=1e-12,
                               atol=1e-15)
    ly = np.log(y)
    np.testing.assert_allclose(be.log_softmax_forward(x, 1), ly, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(be.log_softmax_backward(ly, g, 1), g - y * g.sum(-1, keepdims=True), rtol=1e-12,
                               atol=1e-13)


def test_isfinite_all(be):
    assert be.isfinite_all(np.array([3e38, 3e38], np.float32))  # the sum overflows, the elements are finite
    assert not be.isfinite_all(np.array([1.0, np.inf], np.float32))
    assert not be.isfinite_all(np.array([np.inf, -np.inf]))
    assert not be.isfinite_all(np.array([np.nan]))
    assert be.isfinite_all(np.zeros(0, np.float32))


def test_tri_mask_is_cached_and_read_only(be):
    m = be.tri_mask(5, 7, 0)
    assert m is be.tri_mask(5, 7, 0)
    np.testing.assert_array_equal(m, np.tri(5, 7, 0, dtype=bool))
    b = be.tri_mask(5, 7, 0, float("-inf"), np.float32)
    assert b.dtype == np.float32 and b[0, 0] == 0 and b[0, 1] == -np.inf
    with pytest.raises(ValueError):
        m[0, 0] = False


# ---------------------------------------------------------------------- softmax rows shifted by the array maximum

@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_softmax_rows_far_below_the_maximum_match_a_per_row_shift(be, dt):
    """The softmax family shifts every row by the array's maximum and a row far below it by its own: both give
    the per-row reference's values, and the -inf / NaN cases keep theirs."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 50, 40)) * 5
    x[0, :10] -= 1000.0  # far below: shifted by their own maximum
    x[1, 3] += 30.0
    x[2, 7] = -np.inf  # a whole row of -inf: NaN, as softmax gives it
    x[2, 8, :5] = -np.inf
    x = x.astype(dt)

    def ref(a, log):
        # PyTorch's CPU formulas: x - (max + log(sum)) and exp(x - max) / sum
        m = a.max(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore"):
            e = np.exp(a - m)
        total = e.sum(axis=-1, keepdims=True)
        return a - (m + np.log(total)) if log else e / total

    eps = np.finfo(dt).eps
    for log in (False, True):
        got = (be.log_softmax_forward if log else be.softmax_forward)(x, 2)
        want = ref(x, log)
        assert got.dtype == dt and got.shape == x.shape
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        # log: within a few roundings of the inputs' magnitude; softmax: within the shared shift's slack (16
        # e-folds) in ulp of the values, bar the weights below exp(-(exponent range - 16)) of the row's largest,
        # which may underflow
        tiny = 1e-30 if dt == np.float32 else 1e-300
        bound = 8 * eps * (np.abs(x) + 1.0) if log else 24 * eps * np.abs(want) + tiny
        assert (np.abs(np.nan_to_num(got - want, nan=0.0, posinf=0.0, neginf=0.0)) <= np.nan_to_num(bound)).all()
        assert np.array_equal(np.isneginf(got), np.isneginf(want))
    safe = be.attention_softmax(x.copy(), mask=None, overwrite=True)
    np.testing.assert_array_equal(safe[2, 7], 0.0)
    np.testing.assert_allclose(safe[:2], ref(x[:2], False), rtol=24 * eps, atol=tiny)
    x[1, 4, 2] = np.nan  # the array's maximum is NaN: the per-row path, NaN in that row only
    got = be.softmax_forward(x, 2)
    assert np.isnan(got[1, 4]).all() and np.isfinite(got[1, 5]).all()


def test_attention_softmax_masks_without_touching_the_callers_scores(be):
    rng = np.random.default_rng(4)
    s = rng.standard_normal((2, 5, 7)).astype(np.float32)
    s[0, 1, 6] = np.inf  # under the causal mask: the exact path, which ignores it
    keep = np.tri(5, 7, 0, dtype=bool)
    before = s.copy()
    ref = np.where(keep, s, -np.inf)
    ref = np.exp(ref - ref.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    for mask, causal in ((None, True), (keep, False), (np.where(keep, 0.0, -np.inf).astype(np.float32), False)):
        got = be.attention_softmax(s, causal, mask)
        np.testing.assert_array_equal(s, before)
        if mask is not None and mask.dtype != bool:
            # an added mask is an addition: inf + -inf is NaN, which the softmax spreads over its row
            assert np.isnan(got[0, 1]).all()
            got[0, 1] = ref[0, 1]
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------- causal attention in one op

@pytest.mark.parametrize("special", [None, "inf", "nan"])
def test_causal_attention_matches_an_explicit_mask(special):
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((2, 3, 6, 4)) for _ in range(3))
    if special == "inf":
        q[0, 0, 1, 0] = np.inf  # -> inf scores, among them masked ones: the where path
    elif special == "nan":
        k[1, 2, 5, 1] = np.nan
    qt, kt, vt = (mt.tensor(a, requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
    keep = mt.tensor(np.tri(6, 6, 0, dtype=bool))
    q2, k2, v2 = (mt.tensor(a, requires_grad=True) for a in (q, k, v))
    ref = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=keep)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-14)
    if special is None:
        g = rng.standard_normal(out.shape)
        out.backward(mt.tensor(g))
        ref.backward(mt.tensor(g))
        for a, b in ((qt, q2), (kt, k2), (vt, v2)):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
        assert mt.autograd.gradgradcheck(
            lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
            tuple(mt.tensor(a[:1, :1, :4], requires_grad=True) for a in (q, k, v)))


# ---------------------------------------------------------------------- the allocator setting

def _keeps(env):
    code = ("from minitorch_gpu.backends import numpy_backend as nb; print(nb.KEEPS_FREED_MEMORY)")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "MINITORCH_GPU_KEEP"))}
    full.update(env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=60,
                       check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_and_its_opt_outs():
    glibc = numpy_backend.KEEPS_FREED_MEMORY or _keeps({}) == "True"
    if not glibc:
        pytest.skip("not glibc")
    assert _keeps({}) == "True"
    assert _keeps({"MINITORCH_GPU_KEEP_FREED_MEMORY": "0"}) == "False"
    assert _keeps({"MALLOC_TRIM_THRESHOLD_": "131072"}) == "False"


# ---------------------------------------------------------------------- tensor ** number

_POW_EDGES = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 2.5, -2.5, 1e-30, -1e30]
_TORCH_EXPONENTS = [2.0, 3.0, 0.5, -0.5, -1.0, -2.0]
_OTHER_EXPONENTS = [4.0, 5.0, -3.0, 1.5, -1.5, 2.5, 0.3, -0.7, 7.0, 0.0, 1.0]


def _pow_input(dt, n):
    x = np.random.default_rng(1).standard_normal(n).astype(dt) * 3
    x[:len(_POW_EDGES)] = _POW_EDGES
    return x


@pytest.mark.parametrize("n", [50, 3 * (1 << 16) + 7])  # one block, and several blocks with a ragged end
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("e", _TORCH_EXPONENTS)
def test_pow_of_torch_special_exponents_matches_torch(torch, dt, e, n):
    x = _pow_input(dt, n)
    ours, theirs = (mt.tensor(x) ** e).numpy(), (torch.tensor(x) ** e).numpy()
    number = ~np.isnan(theirs)  # a NaN's sign bit means nothing (x86 makes -NaN, PyTorch's kernel +NaN)
    assert np.array_equal(np.isnan(ours), ~number)
    # the same operations in the same order; PyTorch's vectorised float32 sqrt is off by one ulp at times
    np.testing.assert_array_max_ulp(ours[number], theirs[number], maxulp=1)
    np.testing.assert_array_equal(np.signbit(ours[number]), np.signbit(theirs[number]))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("e", _OTHER_EXPONENTS)
def test_pow_of_other_exponents_is_ieee_pow(be, dt, e):
    x = _pow_input(dt, 3000)
    with np.errstate(all="ignore"):
        ref = np.power(x, e)  # glibc's pow: the reference (slow on negative bases)
    ours = be.binary("pow", x, e)
    number = ~np.isnan(ref)
    assert np.array_equal(np.isnan(ours), ~number)
    # NumPy's vectorised power on |x| and glibc's scalar one on x may round differently by one ulp
    np.testing.assert_array_max_ulp(ours[number], ref[number], maxulp=1)
    np.testing.assert_array_equal(np.signbit(ours[number]), np.signbit(ref[number]))


def test_pow_fast_path_shapes_out_and_fallbacks(be):
    x = _pow_input(np.float32, 24).reshape(4, 6)
    with np.errstate(all="ignore"):
        for e in (3.0, 1.5, -2.0, 4.0):
            for arr in (x, x.T, x[::2], x[1, 2].reshape(())):  # strided views and a 0-d array
                r = be.binary("pow", arr, e)
                assert r.shape == arr.shape and r.dtype == arr.dtype and isinstance(r, np.ndarray)
                np.testing.assert_allclose(r, np.power(arr, e), rtol=1e-6, equal_nan=True)
            out = np.empty_like(x)
            assert be.binary("pow", x, e, out=out) is out
            np.testing.assert_allclose(out, np.power(x, e), rtol=1e-6, equal_nan=True)
    # integer arrays and array exponents keep NumPy's power
    _same(be.binary("pow", np.arange(-3, 4), 3), np.arange(-3, 4) ** 3)
    _same(be.binary("pow", x, np.full_like(x, 2.0)), np.power(x, np.full_like(x, 2.0)))


@pytest.mark.parametrize("e", [3.0, 1.5, 2, -0.5])
def test_pow_gradient_through_fast_path_matches_torch(torch, e):
    x = np.abs(_pow_input(np.float64, 40)[12:]) + 0.1
    a, b = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (a ** e).sum().backward()
    (b ** e).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


# ---------------------------------------------------------------------- layer norm's direct path

@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("params", ["both", "weight", "bias", "none"])
def test_layer_norm_direct_path_is_norm_forward_bit_for_bit(be, dt, params):
    rng = np.random.default_rng(5)
    for shape in [(1, 2), (16, 16), (300, 96)]:
        x = (rng.standard_normal(shape) * 3 + 1).astype(dt)
        w = rng.standard_normal(shape[1]).astype(dt) if params in ("both", "weight") else None
        b = rng.standard_normal(shape[1]).astype(dt) if params in ("both", "bias") else None
        for keep in (True, False):
            y, saved = be.layer_norm_forward(x, w, b, 1e-5, True, keep)
            y_ref, saved_ref = be.norm_forward(x, (1,), w, b, 1e-5, True, None, keep)
            _same(y, y_ref)
            for k in ("xhat", "rstd"):
                _same(saved[k], saved_ref[k])
            if keep:
                assert not np.shares_memory(y, saved["xhat"])


# ---------------------------------------------------------------------- integer remainder, logical ops of numbers

def test_integer_remainder_matches_numpy(be):
    # floor division then a multiply-subtract: every sign, the extremes of each type, numbers and arrays
    rng = np.random.default_rng(13)
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32):
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, 500, dtype=dt, endpoint=True)
        a[:2] = info.min, info.max
        b = rng.integers(1, 40, 500).astype(dt)
        if info.min < 0:
            b[::2] = -b[::2]
            b[1] = -1  # min % -1: the quotient wraps, the remainder is 0
        for divisor in (b, dt(8), dt(7), dt(info.max)):
            _same(be.binary("remainder", a, divisor), np.remainder(a, divisor))
        _same(be.binary("remainder", dt(5), b), np.remainder(dt(5), b))


def test_logical_ops_of_numbers_match_numpy(be):
    rng = np.random.default_rng(14)
    x = rng.standard_normal(5000).astype(np.float32)
    y = rng.standard_normal(5000).astype(np.float32)
    x[::7], y[::5], y[::11], x[::13] = np.nan, 0.0, -0.0, np.inf
    for name in ("logical_and", "logical_or", "logical_xor"):
        ref = getattr(np, name)
        _same(be.binary(name, x, y), ref(x, y))
        _same(be.binary(name, x.astype(np.int32), y), ref(x.astype(np.int32), y))
        _same(be.binary(name, x, 0.0), ref(x, 0.0))
        _same(be.binary(name, x > 0, y), ref(x > 0, y))
