"""Property tests: reductions, scans and softmax agree with NumPy (computed in float64) on random shapes,
including 0-d and empty tensors and non-contiguous inputs (strided or transposed NumPy views shared
through ``mt.from_numpy``), over random dims and keepdim."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
given = hypothesis.given

SETTINGS = hypothesis.settings(max_examples=40, deadline=None,
                               suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])


@st.composite
def arrays(draw, max_ndim=4, max_side=4):
    """A random float array: contiguous, strided (every other element) or transposed."""
    ndim = draw(st.integers(0, max_ndim))
    shape = tuple(draw(st.lists(st.integers(0, max_side), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    layout = draw(st.sampled_from(["contiguous", "strided", "transposed"])) if ndim else "contiguous"
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if layout == "strided":
        base = rng.standard_normal([2 * s for s in shape]).astype(dtype)
        return base[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "transposed":
        return rng.standard_normal(shape[::-1]).astype(dtype).T
    return np.asarray(rng.standard_normal(shape).astype(dtype))


@st.composite
def arrays_and_dims(draw, max_ndim=4):
    """(array, dim, numpy axis): dim is None, an int or a tuple of distinct dims, some spelled negative."""
    a = draw(arrays(max_ndim=max_ndim))
    n = a.ndim
    if n == 0:
        dim = draw(st.sampled_from([None, 0, -1, (0,)]))
        return a, dim, None
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return a, None, None
    if kind == "int":
        d = draw(st.integers(-n, n - 1))
        return a, d, d % n
    axes = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    dim = tuple(ax - n if draw(st.booleans()) else ax for ax in axes)
    return a, dim, tuple(axes)


@st.composite
def arrays_and_axis(draw, max_ndim=4):
    """(array, dim, numpy axis) for ops along a single dim (scans, softmax, argmax)."""
    a = draw(arrays(max_ndim=max_ndim))
    if a.ndim == 0:
        return a, draw(st.sampled_from([0, -1])), None
    d = draw(st.integers(-a.ndim, a.ndim - 1))
    return a, d, d % a.ndim


def _tensor(a, device):
    a = np.asarray(a)  # NumPy arithmetic turns 0-d arrays into scalars
    t = mt.from_numpy(a)
    if not a.flags.c_contiguous:
        assert not t.is_contiguous()
    return t if device == "cpu" else t.to(device)


def _tol(a):
    return dict(rtol=1e-4, atol=1e-5) if a.dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)


def _count(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = (axis,) if isinstance(axis, int) else axis
    return int(np.prod([shape[i] for i in axes]))


def _ref(fn, a, axis, keepdim):
    """A NumPy reduction in float64 on the same data; 0-d arrays come back as 0-d arrays."""
    r = fn(a.astype(np.float64), axis=axis, keepdims=keepdim)
    return np.asarray(r)


# ---------------------------------------------------------------------- sums, means, products

@SETTINGS
@given(data=arrays_and_dims(), keepdim=st.booleans())
def test_sum_mean_match_numpy(device, data, keepdim):
    a, dim, axis = data
    x = _tensor(a, device)
    s = x.sum(dim, keepdim)
    assert s.dtype is x.dtype
    assert_close(s, _ref(np.sum, a, axis, keepdim), **_tol(a))
    m = x.mean(dim, keepdim)
    if _count(a.shape, axis) == 0:
        assert np.isnan(to_np(m)).all()
        assert m.shape == s.shape
    else:
        assert_close(m, _ref(np.mean, a, axis, keepdim), **_tol(a))


@SETTINGS
@given(data=arrays_and_axis(max_ndim=3), keepdim=st.booleans())
def test_prod_matches_numpy(device, data, keepdim):
    a, dim, axis = data
    x = _tensor(a, device)
    assert_close(x.prod(dim, keepdim), _ref(np.prod, a, axis, keepdim), **_tol(a))
    assert_close(x.prod(), np.prod(a.astype(np.float64)), **_tol(a))


@SETTINGS
@given(data=arrays_and_dims(), keepdim=st.booleans())
def test_sum_of_integers_and_bools(device, data, keepdim):
    a, dim, axis = data
    ints = np.round(a * 3).astype(np.int32)
    for arr in (ints, ints > 0):
        r = _tensor(arr, device).sum(dim, keepdim)
        assert r.dtype is mt.int64
        np.testing.assert_array_equal(to_np(r), np.sum(arr, axis=axis, keepdims=keepdim, dtype=np.int64))


# ---------------------------------------------------------------------- extrema

@SETTINGS
@given(data=arrays_and_dims(), keepdim=st.booleans())
def test_amax_amin_match_numpy_or_raise_when_empty(device, data, keepdim):
    a, dim, axis = data
    x = _tensor(a, device)
    d = () if dim is None else dim
    if _count(a.shape, axis) == 0:
        with pytest.raises((IndexError, RuntimeError), match="Expected reduction dim"):
            x.amax(d, keepdim)
        return
    np.testing.assert_array_equal(to_np(x.amax(d, keepdim)), np.max(a, axis=axis, keepdims=keepdim))
    np.testing.assert_array_equal(to_np(mt.amin(x, d, keepdim)), np.min(a, axis=axis, keepdims=keepdim))


@SETTINGS
@given(data=arrays_and_axis(), keepdim=st.booleans())
def test_max_min_argmax_along_dim_match_numpy(device, data, keepdim):
    a, dim, axis = data
    x = _tensor(a, device)
    if a.ndim and a.shape[axis] == 0:
        with pytest.raises(IndexError, match="to have non-zero size"):
            x.max(dim)
        return
    values, indices = x.max(dim, keepdim)
    ref_idx = np.asarray(np.argmax(a, axis=axis, keepdims=keepdim)) if a.ndim else np.asarray(0)
    np.testing.assert_array_equal(to_np(indices), ref_idx)
    np.testing.assert_array_equal(to_np(values), np.max(a, axis=axis, keepdims=keepdim))
    vmin, imin = mt.min(x, dim, keepdim)
    np.testing.assert_array_equal(to_np(vmin), np.min(a, axis=axis, keepdims=keepdim))
    np.testing.assert_array_equal(to_np(x.argmin(dim, keepdim)), to_np(imin))
    np.testing.assert_array_equal(to_np(x.argmax(dim, keepdim)), ref_idx)


@SETTINGS
@given(a=arrays(), keepdim=st.booleans())
def test_flat_argmax_matches_numpy(device, a, keepdim):
    x = _tensor(a, device)
    if a.size == 0:
        with pytest.raises(IndexError):
            x.argmax()
        return
    r = x.argmax(None, keepdim)
    assert r.dtype is mt.int64
    np.testing.assert_array_equal(to_np(r), np.argmax(a, axis=None, keepdims=keepdim))
    assert x.max().item() == a.max() and x.min().item() == a.min()


# ---------------------------------------------------------------------- moments, logsumexp, norms

@SETTINGS
@given(data=arrays_and_dims(), keepdim=st.booleans(), correction=st.sampled_from([0, 1, 2]))
def test_var_std_match_numpy(device, data, keepdim, correction):
    a, dim, axis = data
    hypothesis.assume(_count(a.shape, axis) - correction > 0)
    x = _tensor(a, device)
    ref = np.var(a.astype(np.float64), axis=axis, ddof=correction, keepdims=keepdim)
    assert_close(x.var(dim, keepdim=keepdim, correction=correction), ref, **_tol(a))
    assert_close(x.std(dim, keepdim=keepdim, correction=correction), np.sqrt(ref), **_tol(a))


@SETTINGS
@given(data=arrays_and_dims(), keepdim=st.booleans(), shift=st.sampled_from([0.0, 80.0, -500.0]))
def test_logsumexp_matches_numpy(device, data, keepdim, shift):
    a, dim, axis = data
    # shifted inputs would overflow or underflow a naive exp; the reference shifts back exactly
    x = _tensor((a + shift).astype(a.dtype), device)
    with np.errstate(divide="ignore"):
        ref = np.log(np.sum(np.exp(a.astype(np.float64)), axis=axis, keepdims=keepdim)) + shift
    assert_close(x.logsumexp(() if dim is None else dim, keepdim), ref, rtol=1e-5, atol=1e-4)


@SETTINGS
@given(data=arrays_and_dims(), keepdim=st.booleans(),
       p=st.sampled_from([2, 1, 3, 0.5, 0, math.inf, -math.inf, -2]))
def test_vector_norms_match_numpy(device, data, keepdim, p):
    a, dim, axis = data
    x = _tensor(a, device)
    if (p == math.inf or p < 0) and _count(a.shape, axis) == 0:
        with pytest.raises(RuntimeError, match="does not have an identity"):
            x.norm(p, dim, keepdim)
        return
    b = np.abs(a.astype(np.float64))
    if p == math.inf:
        ref = np.max(b, axis=axis, keepdims=keepdim)
    elif p == -math.inf:
        ref = np.min(b, axis=axis, keepdims=keepdim)
    elif p == 0:
        ref = np.sum(b != 0, axis=axis, keepdims=keepdim).astype(np.float64)
    else:
        with np.errstate(divide="ignore"):
            ref = np.sum(b ** p, axis=axis, keepdims=keepdim) ** (1.0 / p)
    r = x.norm(p, dim, keepdim)
    assert r.dtype is x.dtype
    assert_close(r, np.asarray(ref), **_tol(a))


# ---------------------------------------------------------------------- any, all, count_nonzero

@SETTINGS
@given(data=arrays_and_dims(), keepdim=st.booleans())
def test_any_all_count_nonzero_match_numpy(device, data, keepdim):
    a, dim, axis = data
    b = a > 0.5
    x = _tensor(b, device)
    np.testing.assert_array_equal(to_np(x.any(dim, keepdim)), np.any(b, axis=axis, keepdims=keepdim))
    np.testing.assert_array_equal(to_np(x.all(dim, keepdim)), np.all(b, axis=axis, keepdims=keepdim))
    f = _tensor(np.where(b, a, 0).astype(a.dtype), device)
    c = mt.count_nonzero(f, dim)
    assert c.dtype is mt.int64
    np.testing.assert_array_equal(to_np(c), np.count_nonzero(b, axis=axis))


# ---------------------------------------------------------------------- scans and softmax

@SETTINGS
@given(data=arrays_and_axis())
def test_cumsum_cumprod_match_numpy(device, data):
    a, dim, axis = data
    x = _tensor(a, device)
    ref_s = np.cumsum(a.astype(np.float64), axis=axis).reshape(a.shape)
    ref_p = np.cumprod(a.astype(np.float64), axis=axis).reshape(a.shape)
    s = x.cumsum(dim)
    assert s.dtype is x.dtype and s.is_contiguous()
    assert_close(s, ref_s, **_tol(a))
    assert_close(mt.cumprod(x, dim), ref_p, **_tol(a))


@SETTINGS
@given(data=arrays_and_axis(), scale=st.sampled_from([1.0, 50.0]))
def test_softmax_log_softmax_match_numpy(device, data, scale):
    a, dim, axis = data
    a = (a * scale).astype(a.dtype)
    x = _tensor(a, device)
    b = a.astype(np.float64)
    if a.ndim == 0:
        ref = np.asarray(1.0)
        log_ref = np.asarray(0.0)
    elif a.size == 0:
        ref = log_ref = b
    else:
        shifted = b - b.max(axis=axis, keepdims=True)
        log_ref = shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
        ref = np.exp(log_ref)
    s = x.softmax(dim)
    assert s.dtype is x.dtype and tuple(s.shape) == a.shape and s.is_contiguous()
    assert_close(s, ref, **_tol(a))
    assert_close(x.log_softmax(dim), log_ref, rtol=1e-5, atol=1e-4 if a.dtype == np.float32 else 1e-10)


# ---------------------------------------------------------------------- gradients on random shapes

@SETTINGS
@given(data=arrays_and_dims(max_ndim=3), keepdim=st.booleans())
def test_sum_and_mean_gradients_are_uniform(device, data, keepdim):
    a, dim, axis = data
    x = _tensor(a.copy(), device).requires_grad_()
    n = _count(a.shape, axis)
    (x.sum(dim, keepdim).sum() + x.mean(dim, keepdim).sum()).backward()
    expected = np.full(a.shape, 1.0 + (1.0 / n if n else 0.0))
    assert x.grad.dtype is x.dtype
    assert_close(x.grad, expected, **_tol(a))


@SETTINGS
@given(data=arrays_and_axis(max_ndim=3))
def test_softmax_gradient_of_the_sum_is_zero(device, data):
    a, dim, _ = data
    x = _tensor(a.copy(), device).requires_grad_()
    x.softmax(dim).sum().backward()
    assert_close(x.grad, np.zeros(a.shape), atol=1e-6)
