"""Reductions, scans and softmax: values against NumPy and PyTorch, gradients by finite differences
(gradcheck / gradgradcheck on float64) and against PyTorch, dtypes, shapes and error cases."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def _t(a, device, requires_grad=False, dtype=None):
    return mt.tensor(a, device=device, requires_grad=requires_grad, dtype=dtype)


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


def _both(torch, device, fn, *arrays, grad=False):
    """fn(lib, *tensors) on minitorch_gpu and on PyTorch with the same data."""
    ours = fn(mt, *[_t(a, device, requires_grad=grad) for a in arrays])
    theirs = fn(torch, *[torch.tensor(a, requires_grad=grad) for a in arrays])
    return ours, theirs


def _same(ours, theirs, rtol=1e-5, atol=1e-6):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _same(o, t, rtol, atol)
        return
    assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert_close(ours, theirs.detach().numpy(), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------- values vs NumPy

DIMS = [None, 0, 1, -1, (0, 2), (-1, 0), (0, 1, 2)]


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_mean_match_numpy(device, dim, keepdim):
    a = _arr(2, 3, 4, dtype=np.float32)
    x = _t(a, device)
    s = mt.sum(x, dim, keepdim)
    m = x.mean(dim, keepdim)
    assert_close(s, a.sum(axis=dim, keepdims=keepdim), rtol=1e-5)
    assert_close(m, a.mean(axis=dim, keepdims=keepdim), rtol=1e-5)
    assert s.dtype is mt.float32 and m.dtype is mt.float32
    assert_close(mt.sum(x), a.sum(), rtol=1e-5)


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_amin_var_std_logsumexp_norm_match_numpy(device, dim, keepdim):
    a = _arr(2, 3, 4)
    x = _t(a, device)
    axis = dim
    d = () if dim is None else dim  # amax and logsumexp spell "every dim" as ()
    assert_close(x.amax(d, keepdim), a.max(axis=axis, keepdims=keepdim))
    assert_close(mt.amin(x, d, keepdim), a.min(axis=axis, keepdims=keepdim))
    assert_close(x.var(dim, keepdim=keepdim), a.var(axis=axis, ddof=1, keepdims=keepdim))
    assert_close(x.std(dim, keepdim=keepdim, correction=0), a.std(axis=axis, keepdims=keepdim))
    m = a.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
    if not keepdim:
        lse = lse.reshape(a.sum(axis=axis).shape)
    assert_close(x.logsumexp(d, keepdim), lse)
    assert_close(x.norm(2, dim, keepdim), np.sqrt((a * a).sum(axis=axis, keepdims=keepdim)))
    assert_close(x.norm(3, dim, keepdim), (np.abs(a) ** 3).sum(axis=axis, keepdims=keepdim) ** (1 / 3))


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_any_all_count_nonzero_match_numpy(device, dim):
    a = np.array([[0, 1, 2], [0, 0, 3]], dtype=np.int32)
    x = _t(a, device)
    assert_close(x.any(dim), a.any(axis=dim))
    assert_close(mt.all(x, dim, keepdim=True), a.all(axis=dim, keepdims=True))
    c = mt.count_nonzero(x, dim)
    assert c.dtype is mt.int64
    assert_close(c, np.count_nonzero(a, axis=dim))
    assert x.any().dtype is mt.bool and x.all(0).dtype is mt.bool


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_prod_cumsum_cumprod_argmax_match_numpy(device, dim):
    a = _arr(3, 4)
    x = _t(a, device)
    assert_close(x.prod(dim), a.prod(axis=dim))
    assert_close(x.prod(dim, keepdim=True), a.prod(axis=dim, keepdims=True))
    assert_close(x.cumsum(dim), np.cumsum(a, axis=dim))
    assert_close(mt.cumprod(x, dim), np.cumprod(a, axis=dim))
    assert_close(x.argmax(dim), a.argmax(axis=dim))
    assert_close(mt.argmin(x, dim, keepdim=True), a.argmin(axis=dim, keepdims=True))
    assert_close(x.argmax(), a.argmax())
    assert_close(x.prod(), a.prod())


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax_match_numpy(device, dim):
    a = _arr(3, 5, dtype=np.float32, lo=-5, hi=5)
    x = _t(a, device)
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    ref = e / e.sum(axis=dim, keepdims=True)
    s = x.softmax(dim)
    assert s.dtype is mt.float32
    assert_close(s, ref, rtol=1e-5)
    assert_close(mt.log_softmax(x, dim), np.log(ref), rtol=1e-5, atol=1e-5)


def test_softmax_is_numerically_stable(device):
    x = _t([[1000.0, 1000.0, -1000.0], [-1e4, -1e4 + 1, -1e4]], device)
    s = mt.softmax(x, 1)
    ls = mt.log_softmax(x, 1)
    assert np.isfinite(to_np(s)).all() and np.isfinite(to_np(ls)).all()
    assert_close(s, [[0.5, 0.5, 0.0], [1 / (2 + math.e), math.e / (2 + math.e), 1 / (2 + math.e)]],
                 rtol=1e-5, atol=1e-7)
    assert_close(ls, [[-math.log(2.0), -math.log(2.0), -2000.0 - math.log(2.0)],
                      [-math.log(2 + math.e), 1 - math.log(2 + math.e), -math.log(2 + math.e)]], rtol=1e-6)
    big = _t([1e30, 1e30], device)
    # exp(1e30) overflows; the shifted form gives 1e30 + log 2, which is 1e30 in float32
    assert_close(mt.logsumexp(big, 0), np.float32(1e30), rtol=1e-6)
    neg = _t([-math.inf, -math.inf], device)
    assert to_np(mt.logsumexp(neg, 0)) == -math.inf


# ---------------------------------------------------------------------- values, dtypes and shapes vs PyTorch

CASES = [
    ("sum", lambda L, x: L.sum(x)),
    ("sum_dim", lambda L, x: L.sum(x, 1)),
    ("sum_tuple_keep", lambda L, x: L.sum(x, (0, -1), keepdim=True)),
    ("sum_empty_tuple", lambda L, x: L.sum(x, ())),
    ("sum_dtype", lambda L, x: L.sum(x, 0, dtype=L.float64)),
    ("sum_to_int", lambda L, x: L.sum(x * 3, (1, 2), dtype=L.int32)),
    ("prod_to_int", lambda L, x: L.prod(x * 3, 1, dtype=L.int32)),
    ("cumsum_to_int", lambda L, x: L.cumsum(x * 3, 1, dtype=L.int16)),
    ("mean", lambda L, x: x.mean((1, 2))),
    ("mean_keep", lambda L, x: x.mean(-2, True)),
    ("prod", lambda L, x: x.prod()),
    ("prod_dim", lambda L, x: L.prod(x, 2, keepdim=True)),
    ("max", lambda L, x: x.max()),
    ("max_dim", lambda L, x: tuple(L.max(x, 1))),
    ("min_dim_keep", lambda L, x: tuple(x.min(-1, keepdim=True))),
    ("amax", lambda L, x: L.amax(x, (0, 2))),
    ("amin", lambda L, x: x.amin()),
    ("argmax", lambda L, x: x.argmax()),
    ("argmax_keep", lambda L, x: L.argmax(x, keepdim=True)),
    ("argmin_dim", lambda L, x: x.argmin(-2)),
    ("var", lambda L, x: x.var()),
    ("var_tuple", lambda L, x: L.var(x, (0, 2), correction=0, keepdim=True)),
    ("var_unbiased", lambda L, x: x.var(1, False)),
    ("var_legacy_bool", lambda L, x: L.var(x, False)),
    ("std", lambda L, x: L.std(x, 2, unbiased=True)),
    ("std_corr2", lambda L, x: x.std(correction=2)),
    ("var_mean", lambda L, x: L.var_mean(x, 1)),
    ("std_mean", lambda L, x: L.std_mean(x, (0, 1), keepdim=True)),
    ("logsumexp", lambda L, x: L.logsumexp(x, (1, 2))),
    ("norm", lambda L, x: x.norm()),
    ("norm_fro_dim", lambda L, x: L.norm(x, "fro", (0, 1))),
    ("norm_inf", lambda L, x: x.norm(float("inf"), 1)),
    ("norm_ninf", lambda L, x: L.norm(x, -float("inf"), 2, keepdim=True)),
    ("norm_1", lambda L, x: x.norm(1, -1)),
    ("norm_0", lambda L, x: x.norm(0)),
    ("norm_p", lambda L, x: x.norm(2.5, (0, 2))),
    ("norm_neg_p", lambda L, x: x.norm(-1.5, 1)),
    ("norm_dtype", lambda L, x: L.norm(x, dim=1, dtype=L.float64)),
    ("any", lambda L, x: L.any(x, (0, 1))),
    ("all_keep", lambda L, x: x.all(1, keepdim=True)),
    ("cumsum", lambda L, x: x.cumsum(1)),
    ("cumsum_dtype", lambda L, x: L.cumsum(x, -1, dtype=L.float64)),
    ("cumprod", lambda L, x: L.cumprod(x, 0)),
    ("count_nonzero", lambda L, x: L.count_nonzero(x, (0, 1))),
    ("softmax", lambda L, x: L.softmax(x, 1)),
    ("log_softmax", lambda L, x: x.log_softmax(-1)),
    ("softmax_dtype", lambda L, x: L.softmax(x, 0, dtype=L.float64)),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_torch_float32(device, torch, name, fn):
    a = _arr(2, 3, 4, dtype=np.float32)
    ours, theirs = _both(torch, device, fn, a)
    _same(ours, theirs, rtol=2e-5, atol=1e-5)


INT_CASES = [
    ("sum", lambda L, x: L.sum(x)),
    ("sum_dim", lambda L, x: x.sum(0)),
    ("prod", lambda L, x: x.prod(1)),
    ("cumsum", lambda L, x: x.cumsum(0)),
    ("cumprod", lambda L, x: L.cumprod(x, 1)),
    ("max", lambda L, x: x.max()),
    ("max_dim", lambda L, x: tuple(x.max(0))),
    ("amin", lambda L, x: L.amin(x, 1)),
    ("argmax", lambda L, x: x.argmax(1)),
    ("any", lambda L, x: x.any(0)),
    ("all", lambda L, x: L.all(x)),
    ("count_nonzero", lambda L, x: L.count_nonzero(x)),
    ("logsumexp", lambda L, x: L.logsumexp(x, 1)),
    ("mean_dtype", lambda L, x: L.mean(x, 0, dtype=L.float32)),
    ("sum_keep_int32", lambda L, x: L.sum(x, 1, dtype=L.int32)),
    ("prod_keep_int32", lambda L, x: x.prod(dtype=L.int32)),
    ("cumprod_keep_int32", lambda L, x: x.cumprod(0, dtype=L.int32)),
    ("softmax_dtype", lambda L, x: L.softmax(x, 1, dtype=L.float64)),
]


@pytest.mark.parametrize("np_dtype", [np.int32, np.int64, np.uint8, np.bool_, np.int8])
@pytest.mark.parametrize("name,fn", INT_CASES, ids=[c[0] for c in INT_CASES])
def test_matches_torch_integer_and_bool(device, torch, name, fn, np_dtype):
    a = RNG.integers(0, 3, size=(3, 4)).astype(np_dtype)
    try:
        theirs = fn(torch, torch.from_numpy(a.copy()))
    except RuntimeError as e:
        with pytest.raises(type(e)):
            fn(mt, _t(a, device))
        return
    _same(fn(mt, _t(a, device)), theirs)


def test_sum_of_integers_is_int64_and_keeps_float32(device):
    assert mt.sum(_t([1, 2, 3], device, dtype=mt.int32)).dtype is mt.int64
    assert _t([True, True], device).sum().item() == 2
    assert _t([1.5], device, dtype=mt.float32).sum().dtype is mt.float32
    assert _t([1.5], device, dtype=mt.float16).sum(0).dtype is mt.float16
    assert _t([1, 2], device).sum(dtype=mt.float64).dtype is mt.float64


def test_half_precision_accumulates_in_float32(device):
    x = mt.ones(4096, dtype=mt.float16, device=device)
    # float16 cannot count past 2048 by ones; PyTorch accumulates in float32
    assert x.sum().item() == 4096.0
    assert x.mean().item() == 1.0
    assert_close(x.softmax(0).sum(), 1.0, rtol=1e-3)


# ---------------------------------------------------------------------- 0-d and empty tensors

def test_zero_dim_inputs(device, torch):
    a = np.array(2.5)
    for fn in [lambda L, x: x.sum(0), lambda L, x: x.sum(-1, keepdim=True), lambda L, x: x.mean(),
               lambda L, x: tuple(x.max(0)), lambda L, x: x.amax(0), lambda L, x: x.argmax(0),
               lambda L, x: x.cumsum(0), lambda L, x: x.cumprod(-1), lambda L, x: x.softmax(0),
               lambda L, x: x.log_softmax(0), lambda L, x: x.prod(0), lambda L, x: x.logsumexp(0),
               lambda L, x: x.norm(dim=0), lambda L, x: x.count_nonzero(0), lambda L, x: x.any(0)]:
        ours, theirs = _both(torch, device, fn, a)
        _same(ours, theirs)
    with pytest.raises(IndexError, match=r"\[-1, 0\], but got 1"):
        _t(a, device).sum(1)


def test_empty_reductions(device, torch):
    e = np.zeros((0, 3), dtype=np.float32)
    x = _t(e, device)
    assert x.sum().item() == 0.0
    assert x.prod().item() == 1.0
    assert math.isnan(x.mean().item())
    assert_close(x.sum(0), np.zeros(3))
    assert tuple(x.sum(1).shape) == (0,)
    assert mt.logsumexp(x, 0).tolist() == [-math.inf] * 3
    assert x.norm().item() == 0.0
    assert x.count_nonzero().item() == 0
    assert not x.any().item() and x.all().item()
    vals, idx = x.max(1)
    assert tuple(vals.shape) == (0,) and idx.dtype is mt.int64
    assert tuple(x.amax(1).shape) == (0,)
    assert tuple(x.softmax(1).shape) == (0, 3) and tuple(x.cumsum(0).shape) == (0, 3)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert math.isnan(x.var().item())
    for fn in [lambda L, t: L.max(t), lambda L, t: t.min(), lambda L, t: L.amax(t), lambda L, t: t.amin(())]:
        with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
            fn(mt, x)
    for fn in [lambda L, t: L.max(t, 0), lambda L, t: t.amax(0), lambda L, t: t.argmin(0),
               lambda L, t: t.argmax(), lambda L, t: t.amin((0, 1))]:
        with pytest.raises(IndexError):
            fn(mt, x)
        with pytest.raises(IndexError):
            fn(torch, torch.from_numpy(e))
    with pytest.raises(RuntimeError, match="inf norm on an empty tensor"):
        x.norm(float("inf"))
    with pytest.raises(RuntimeError, match="on the dimension 0"):
        x.norm(-1, 0)
    assert tuple(x.norm(float("inf"), 1).shape) == (0,)


# ---------------------------------------------------------------------- max/min results

def test_max_min_with_dim_return_named_values_and_indices(device):
    x = _t([[1.0, 5.0, 5.0], [4.0, 2.0, 4.0]], device)
    r = x.max(1)
    assert isinstance(r, tuple) and isinstance(r, mt.return_types.max)
    values, indices = r
    assert_close(r.values, [5.0, 4.0])
    assert r.indices.tolist() == [1, 0]  # first index among ties
    assert indices.dtype is mt.int64 and values is r.values
    m = mt.min(x, dim=0, keepdim=True)
    assert isinstance(m, mt.return_types.min)
    assert m.values.tolist() == [[1.0, 2.0, 4.0]] and m.indices.tolist() == [[0, 1, 1]]
    assert "values=" in repr(r) and "indices=" in repr(r)


def test_max_min_with_nan_propagate(device, torch):
    a = np.array([[1.0, np.nan, 3.0], [2.0, 0.0, -1.0]])
    for fn in [lambda L, x: x.max(), lambda L, x: tuple(x.max(1)), lambda L, x: x.amin(1),
               lambda L, x: x.argmax(1), lambda L, x: L.logsumexp(x, 1)]:
        ours, theirs = _both(torch, device, fn, a)
        if isinstance(theirs, tuple):
            for o, t in zip(ours, theirs):
                np.testing.assert_array_equal(to_np(o), t.numpy())
        else:
            np.testing.assert_array_equal(to_np(ours), theirs.numpy())


def test_max_of_two_tensors_is_elementwise(device):
    a = _t([1.0, 5.0], device)
    b = _t([3.0, 2.0], device)
    assert mt.max(a, b).tolist() == [3.0, 5.0]
    assert a.min(b).tolist() == [1.0, 2.0]


# ---------------------------------------------------------------------- gradients

def _gc(fn, *arrays, device, gradgrad=False):
    xs = [_t(a, device, requires_grad=True) for a in arrays]
    assert mt.autograd.gradcheck(fn, xs)
    if gradgrad:
        assert mt.autograd.gradgradcheck(fn, xs)


GRAD_CASES = [
    ("sum", lambda x: x.sum(), True),
    ("sum_dim", lambda x: x.sum(1), True),
    ("sum_tuple_keep", lambda x: mt.sum(x, (0, 2), keepdim=True), True),
    ("mean", lambda x: x.mean(), True),
    ("mean_tuple", lambda x: x.mean((-1, 0)), True),
    ("prod", lambda x: x.prod(), True),
    ("prod_dim", lambda x: x.prod(1, keepdim=True), True),
    ("amax", lambda x: x.amax((0, 1)), False),
    ("amin_dim", lambda x: mt.amin(x, 2), False),
    ("max", lambda x: x.max(), False),
    ("max_dim", lambda x: x.max(1).values, True),
    ("min_dim_keep", lambda x: x.min(-1, True)[0], False),
    ("var", lambda x: x.var(), True),
    ("var_tuple", lambda x: x.var((0, 2), correction=0, keepdim=True), True),
    ("std", lambda x: x.std(1), True),
    ("logsumexp", lambda x: x.logsumexp((1, 2)), True),
    ("logsumexp_keep", lambda x: mt.logsumexp(x, -1, True), False),
    ("norm", lambda x: x.norm(), True),
    ("norm_dim", lambda x: x.norm(dim=1), False),
    ("norm_1", lambda x: x.norm(1, 2), False),
    ("norm_inf", lambda x: x.norm(float("inf"), (0, 1)), False),
    ("norm_ninf", lambda x: x.norm(-float("inf"), 2), False),
    ("norm_p3", lambda x: x.norm(3, 0), True),
    ("norm_p1_5", lambda x: x.norm(1.5, 1), False),
    ("norm_p0_5", lambda x: x.norm(0.5, 1), False),
    ("cumsum", lambda x: x.cumsum(1), True),
    ("cumprod", lambda x: x.cumprod(-1), True),
    ("softmax", lambda x: x.softmax(1), True),
    ("softmax_last", lambda x: mt.softmax(x, -1), True),
    ("log_softmax", lambda x: x.log_softmax(0), True),
    ("log_softmax_last", lambda x: mt.log_softmax(x, -1), True),
]


@pytest.mark.parametrize("name,fn,gradgrad", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(device, name, fn, gradgrad):
    # values away from 0 and distinct, so every function is smooth at the point checked
    a = RNG.permutation(np.linspace(0.5, 1.5, 24)).reshape(2, 3, 4) * RNG.choice([-1, 1], size=(2, 3, 4))
    _gc(fn, a, device=device, gradgrad=gradgrad)


@pytest.mark.parametrize("name,fn,gradgrad", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(device, torch, name, fn, gradgrad):
    a = _arr(2, 3, 4)
    x = _t(a, device, requires_grad=True)
    y = fn(x)
    g = _arr(*y.shape)
    y.backward(_t(g, device))
    tfn = _TORCH_FNS[name]
    tx = torch.tensor(a, requires_grad=True)
    tfn(torch, tx).backward(torch.tensor(g))
    assert x.grad.dtype is mt.float64
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-6, atol=1e-8)


_TORCH_FNS = {
    "sum": lambda T, x: x.sum(), "sum_dim": lambda T, x: x.sum(1),
    "sum_tuple_keep": lambda T, x: T.sum(x, (0, 2), keepdim=True), "mean": lambda T, x: x.mean(),
    "mean_tuple": lambda T, x: x.mean((-1, 0)), "prod": lambda T, x: x.prod(),
    "prod_dim": lambda T, x: x.prod(1, keepdim=True), "amax": lambda T, x: x.amax((0, 1)),
    "amin_dim": lambda T, x: T.amin(x, 2), "max": lambda T, x: x.max(), "max_dim": lambda T, x: x.max(1).values,
    "min_dim_keep": lambda T, x: x.min(-1, True)[0], "var": lambda T, x: x.var(),
    "var_tuple": lambda T, x: x.var((0, 2), correction=0, keepdim=True), "std": lambda T, x: x.std(1),
    "logsumexp": lambda T, x: x.logsumexp((1, 2)), "logsumexp_keep": lambda T, x: T.logsumexp(x, -1, True),
    "norm": lambda T, x: x.norm(), "norm_dim": lambda T, x: x.norm(dim=1), "norm_1": lambda T, x: x.norm(1, 2),
    "norm_inf": lambda T, x: x.norm(float("inf"), (0, 1)), "norm_ninf": lambda T, x: x.norm(-float("inf"), 2),
    "norm_p3": lambda T, x: x.norm(3, 0), "norm_p1_5": lambda T, x: x.norm(1.5, 1),
    "norm_p0_5": lambda T, x: x.norm(0.5, 1), "cumsum": lambda T, x: x.cumsum(1),
    "cumprod": lambda T, x: x.cumprod(-1), "softmax": lambda T, x: x.softmax(1),
    "softmax_last": lambda T, x: T.softmax(x, -1), "log_softmax": lambda T, x: x.log_softmax(0),
    "log_softmax_last": lambda T, x: T.log_softmax(x, -1),
}


def test_gradient_of_float32_stays_float32(device):
    x = _t(_arr(3, 4, dtype=np.float32), device, requires_grad=True)
    (x.sum(0, dtype=mt.float64).sum() + x.mean() + x.softmax(1).amax() + x.var() + x.cumsum(1, dtype=mt.float64)
     .sum()).backward()
    assert x.grad.dtype is mt.float32


@pytest.mark.parametrize("zeros", [[5], [2, 5], [0, 0, 7]])
def test_prod_gradient_with_zeros(device, torch, zeros):
    a = _arr(8) + 3.0
    a[zeros] = 0.0
    for dim in [None, 0]:
        x = _t(a.reshape(2, 4) if dim == 0 else a, device, requires_grad=True)
        tx = torch.tensor(to_np(x), requires_grad=True)
        (x.prod() if dim is None else x.prod(dim)).sum().backward()
        (tx.prod() if dim is None else tx.prod(dim)).sum().backward()
        assert_close(x.grad, tx.grad.numpy(), rtol=1e-10)
        _gc(lambda t: t.prod() if dim is None else t.prod(dim), to_np(x), device=device, gradgrad=True)


@pytest.mark.parametrize("zeros", [[1], [0], [3], [1, 4], [4, 4]])
def test_cumprod_gradient_with_zeros(device, torch, zeros):
    a = _arr(2, 6) + 3.0
    for z in zeros:
        a[0, z] = 0.0
    a[1, zeros[0]] = 0.0
    x = _t(a, device, requires_grad=True)
    g = _arr(2, 6)
    x.cumprod(1).backward(_t(g, device))
    tx = torch.tensor(a, requires_grad=True)
    tx.cumprod(1).backward(torch.tensor(g))
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    _gc(lambda t: t.cumprod(1), a, device=device, gradgrad=True)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_internal_scan_variants_and_their_gradients(device, reverse, exclusive):
    # prod's backward uses exclusive and reversed scans; check them against explicit loops
    from minitorch_gpu.ops.reduction import _cumprod, _cumsum
    a = _arr(2, 5) + 3.0
    a[0, 1] = a[1, 3] = a[1, 0] = 0.0
    idx = range(4, -1, -1) if reverse else range(5)
    ref_s, ref_p = np.zeros_like(a), np.ones_like(a)
    acc_s, acc_p = np.zeros(2), np.ones(2)
    for k in idx:
        if exclusive:
            ref_s[:, k], ref_p[:, k] = acc_s, acc_p
        acc_s, acc_p = acc_s + a[:, k], acc_p * a[:, k]
        if not exclusive:
            ref_s[:, k], ref_p[:, k] = acc_s, acc_p
    x = _t(a, device)
    assert_close(_cumsum(x, 1, reverse, exclusive), ref_s)
    assert_close(_cumprod(x, 1, reverse, exclusive), ref_p)
    _gc(lambda t: _cumsum(t, 1, reverse, exclusive), a, device=device, gradgrad=True)
    _gc(lambda t: _cumprod(t, 1, reverse, exclusive), a, device=device, gradgrad=True)


def test_tie_gradients_match_torch(device, torch):
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    for fn in [lambda L, x: x.max(), lambda L, x: L.amax(x, 1), lambda L, x: x.amin(0), lambda L, x: x.min(),
               lambda L, x: x.max(1).values, lambda L, x: x.norm(float("inf"), 1)]:
        x = _t(a, device, requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        y, ty = fn(mt, x), fn(torch, tx)
        g = np.arange(1.0, 1.0 + ty.numel()).reshape(tuple(ty.shape))
        y.backward(_t(g, device))
        ty.backward(torch.tensor(g))
        assert_close(x.grad, tx.grad.numpy())


def test_gradients_through_nan_results_match_torch(device, torch):
    a = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, 0.0]])
    for fn in [lambda x: x.amax(1), lambda x: x.max(), lambda x: x.amin(), lambda x: x.min(),
               lambda x: x.max(1).values, lambda x: x.amin((0, 1), keepdim=True)]:
        x = _t(a, device, requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        fn(x).sum().backward()
        fn(tx).sum().backward()
        np.testing.assert_array_equal(to_np(x.grad), tx.grad.numpy())


def test_norm_gradient_at_zero_matches_torch(device, torch):
    a = np.array([0.0, 1.0, -2.0, 2.0])
    for p in [1, 2, 3, 0.5, 1.5, -1, float("inf"), -float("inf")]:
        for arr in (a, np.zeros(3)):
            x = _t(arr, device, requires_grad=True)
            tx = torch.tensor(arr, requires_grad=True)
            x.norm(p).backward()
            torch.linalg.vector_norm(tx, p).backward()
            assert_close(x.grad, tx.grad.numpy(), rtol=1e-6)
    x = _t(a, device, requires_grad=True)
    x.norm(0).backward()
    assert x.grad.tolist() == [0.0] * 4


def test_std_of_constant_has_zero_gradient(device):
    x = _t(np.full((2, 3), 4.0), device, requires_grad=True)
    x.std(1).sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2


def test_double_backward_through_softmax_matches_torch(device, torch):
    a = _arr(3, 4)
    x = _t(a, device, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    w = _arr(3, 4)
    for fn in ["softmax", "log_softmax"]:
        y = getattr(x, fn)(1)
        ty = getattr(tx, fn)(1)
        (gx,) = mt.autograd.grad((y * _t(w, device)).sum(), x, create_graph=True)
        (tgx,) = torch.autograd.grad((ty * torch.tensor(w)).sum(), tx, create_graph=True)
        (gx * gx).sum().backward()
        (tgx * tgx).sum().backward()
        assert_close(x.grad, tx.grad.numpy(), rtol=1e-6, atol=1e-9)
        x.grad = None
        tx.grad = None


def test_softmax_backward_primitives(device):
    be = _t([0.0], device)._be
    a = _arr(3, 5)
    g = _arr(3, 5)
    y = be.softmax_forward(be.asarray(a), 1)
    gi = be.softmax_backward(y, be.asarray(g), 1)
    yn = be.to_numpy(y)
    np.testing.assert_allclose(be.to_numpy(gi), yn * (g - (g * yn).sum(1, keepdims=True)), rtol=1e-12)
    ly = be.log_softmax_forward(be.asarray(a), 1)
    np.testing.assert_allclose(be.to_numpy(ly), np.log(yn), rtol=1e-12)
    lg = be.log_softmax_backward(ly, be.asarray(g), 1)
    np.testing.assert_allclose(be.to_numpy(lg), g - yn * g.sum(1, keepdims=True), rtol=1e-12)


def test_integer_results_do_not_record_history(device):
    x = _t(_arr(3, 4), device, requires_grad=True)
    assert not x.argmax().requires_grad and x.argmax().grad_fn is None
    assert x.max(1).indices.grad_fn is None
    assert not x.any().requires_grad and not x.count_nonzero().requires_grad
    assert x.sum().grad_fn.name() == "SumBackward0" and x.sum(0).grad_fn.name() == "SumBackward1"
    assert x.softmax(0).grad_fn.name() == "SoftmaxBackward0"


# ---------------------------------------------------------------------- in-place, out=, arguments and errors

def test_inplace_cumsum_cumprod(device, torch):
    a = _arr(2, 3)
    x = _t(a, device)
    assert x.cumsum_(1) is x
    assert_close(x, np.cumsum(a, 1))
    leaf = _t(a, device, requires_grad=True)
    y = leaf * 1.0
    y.cumprod_(0)
    y.sum().backward()
    tleaf = torch.tensor(a, requires_grad=True)
    ty = tleaf * 1.0
    ty.cumprod_(0)
    ty.sum().backward()
    assert_close(leaf.grad, tleaf.grad.numpy())


def test_out_argument(device):
    x = _t([[1.0, 2.0], [3.0, 4.0]], device)
    out = mt.empty(5, device=device)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        r = mt.sum(x, 1, out=out)
    assert r is out and out.tolist() == [3.0, 7.0]
    vals, idx = mt.empty(2, device=device), mt.zeros(2, dtype=mt.int64, device=device)
    r = mt.max(x, 0, out=(vals, idx))
    assert r.values is vals and idx.tolist() == [1, 1]
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        mt.sum(_t([1.0], device, requires_grad=True), out=mt.empty(1, device=device))


def test_bad_dims_raise_index_error_with_range(device):
    x = _t(_arr(2, 3), device)
    for fn in [lambda: x.sum(2), lambda: x.mean(-3), lambda: x.amax((0, 5)), lambda: x.max(2),
               lambda: x.argmax(3), lambda: x.softmax(2), lambda: x.log_softmax(-3), lambda: x.cumsum(2),
               lambda: x.var(4), lambda: x.logsumexp(2), lambda: x.norm(dim=2), lambda: x.any(2),
               lambda: x.count_nonzero(5), lambda: x.prod(2)]:
        with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\]"):
            fn()
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.sum((0, -2))
    with pytest.raises(TypeError):
        x.sum(1.5)
    with pytest.raises(TypeError):
        x.cumsum((0,))
    with pytest.raises(TypeError):
        x.prod((0, 1))


def test_dtype_errors_match_torch(device, torch):
    a = np.array([1, 2, 3])
    for fn, exc, msg in [
        (lambda L, x: x.mean(), RuntimeError, "mean\\(\\): could not infer output dtype. Input dtype must be"),
        (lambda L, x: x.var(), RuntimeError, "std and var only support floating point"),
        (lambda L, x: x.std(0), RuntimeError, "std and var only support floating point"),
        (lambda L, x: x.norm(), RuntimeError, "Expected a floating point or complex tensor as input. Got Long"),
        (lambda L, x: x.softmax(0), NotImplementedError, "not implemented for 'Long'"),
        (lambda L, x: L.log_softmax(x, 0), NotImplementedError, "not implemented for 'Long'"),
        (lambda L, x: x.mean(dtype=L.int32), RuntimeError, "Optional dtype must be either"),
    ]:
        with pytest.raises(exc, match=msg):
            fn(mt, _t(a, device))
        with pytest.raises(exc):
            fn(torch, torch.from_numpy(a))


def test_var_argument_spellings(device, torch):
    a = _arr(3, 4)
    for fn in [lambda L, x: x.var(0, True, True), lambda L, x: x.var(unbiased=False), lambda L, x: L.std(x, False),
               lambda L, x: x.var(1, correction=1.5), lambda L, x: x.std(dim=(0, 1), correction=0, keepdim=True)]:
        ours, theirs = _both(torch, device, fn, a)
        _same(ours, theirs)
    with pytest.raises(TypeError):
        _t(a, device).var(0, unbiased=True, correction=0)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        v = _t([1.0], device).var()
    assert math.isnan(v.item())


def test_norm_argument_errors(device):
    x = _t(_arr(2, 3), device)
    with pytest.raises(RuntimeError, match="Order abc not supported"):
        x.norm("abc")
    # the nuclear norm is the sum of the singular values (tests/ops/test_decomposition.py compares with PyTorch)
    assert_close(x.norm("nuc"), np.linalg.svd(x.cpu().numpy(), compute_uv=False).sum())
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple"):
        mt.norm(_t(_arr(2, 2, 2), device), "fro", (0, 1, 2))
    assert_close(x.norm(None), x.norm())


def test_raising_op_leaves_input_unchanged(device):
    a = _arr(2, 3)
    x = _t(a, device)
    with pytest.raises(IndexError):
        x.cumsum_(5)
    assert_close(x, a)
    assert x._version == 0


def test_full_reductions_hold_real_zero_dim_arrays(device):
    # NumPy returns scalars from full reductions; a tensor must hold a writable 0-d array instead
    x = _t(_arr(2, 3), device)
    results = [x.sum(), x.mean(), x.prod(), x.amax(), x.max(), x.var(), x.std(), x.norm(), x.logsumexp((0, 1)),
               x.norm(0.5), x.norm(float("inf")), _t(2.0, device).std(correction=0), _t(2.0, device).softmax(0),
               _t(2.0, device).cumsum(0), x.argmax(), x.count_nonzero()]
    for r in results:
        before = to_np(r).copy()
        r.mul_(2)
        assert_close(r, before * 2)


@pytest.mark.parametrize("call", [
    lambda lib, x, o: lib.mean(x, 0, out=o(lib.int64)),
    lambda lib, x, o: lib.amax(x, 0, out=o(lib.float64)),
    lambda lib, x, o: lib.any(x, 0, out=o(lib.float64)),
    lambda lib, x, o: lib.argmax(x, 0, out=o(lib.int32)),
    lambda lib, x, o: lib.logsumexp(x, 0, out=o(lib.int64)),
    lambda lib, x, o: lib.max(x, 0, out=(o(lib.float64), o(lib.int64))),
    lambda lib, x, o: lib.max(x, 0, out=(o(lib.float32), o(lib.int32))),
    lambda lib, x, o: lib.sum(x, 0, out=3),
], ids=["mean-cast", "amax", "any", "argmax", "logsumexp", "max-values", "max-indices", "not-tensor"])
def test_out_checks_like_torch(torch, device, call):
    a = [[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]
    x, tx = _t(a, device), torch.tensor(a)

    def m_out(dt):
        return mt.zeros(3, dtype=dt, device=device)

    def t_out(dt):
        return torch.zeros(3, dtype=dt)
    with pytest.raises(Exception) as t_err:
        call(torch, tx, t_out)
    with pytest.raises(Exception) as m_err:
        call(mt, x, m_out)
    assert type(m_err.value) is type(t_err.value)
    if "invalid combination" not in str(t_err.value):
        assert str(m_err.value) == str(t_err.value)
