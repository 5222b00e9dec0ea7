"""cummax, cummin, logcumsumexp, aminmax, nanmedian, quantile / nanquantile and mode: values, indices and
gradients against PyTorch (float32 and float64, on every device), NaN and tie handling, and PyTorch's errors."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

RNG = np.random.default_rng(5)
DTYPES = ["float32", "float64"]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)


def _pair(torch, device, a, dtype, grad=True):
    return (mt.tensor(a, device=device, dtype=getattr(mt, dtype), requires_grad=grad),
            torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad))


def _check(torch, o_in, t_in, o_out, t_out, tol, indices=True, grad=True):
    """Values (and indices) of a result or a (values, indices) pair, then the gradient of a random weighting."""
    o_val, t_val = (o_out[0], t_out[0]) if isinstance(t_out, tuple) else (o_out, t_out)
    assert tuple(o_val.shape) == tuple(t_val.shape)
    assert_close(o_val, t_val.detach().numpy(), **tol)
    if isinstance(t_out, tuple) and indices:
        np.testing.assert_array_equal(to_np(o_out[1]), t_out[1].numpy())
    if not grad:
        return
    g = RNG.standard_normal(tuple(t_val.shape))
    (o_val * mt.tensor(g, device=o_in.device, dtype=o_val.dtype)).sum().backward()
    (t_val * torch.tensor(g, dtype=t_val.dtype)).sum().backward()
    assert_close(o_in.grad, t_in.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 6), 1), ((5, 2, 3), 0), ((), 0)])
def test_cummax_cummin(device, torch, dtype, name, shape, dim):
    a = RNG.integers(-3, 4, shape).astype(np.float64)  # small integers: many ties (the last index wins)
    o, t = _pair(torch, device, a, dtype)
    _check(torch, o, t, getattr(o, name)(dim), getattr(torch, name)(t, dim), _tol(dtype))


def test_cummax_nan_ints_and_errors(device, torch):
    a = [1.0, 3.0, 3.0, math.nan, 2.0, math.nan, 1.0]
    for name in ("cummax", "cummin"):
        r, e = getattr(mt, name)(mt.tensor(a, device=device), 0), getattr(torch, name)(torch.tensor(a), 0)
        np.testing.assert_array_equal(to_np(r.values), e.values.numpy())
        np.testing.assert_array_equal(to_np(r.indices), e.indices.numpy())
        ints = [3, 1, 1, 2, 0, 5]
        ri, ei = getattr(mt, name)(mt.tensor(ints, device=device), 0), getattr(torch, name)(torch.tensor(ints), 0)
        assert ri.values.dtype is mt.int64 and ri.indices.dtype is mt.int64
        np.testing.assert_array_equal(to_np(ri.values), ei.values.numpy())
        np.testing.assert_array_equal(to_np(ri.indices), ei.indices.numpy())
    with pytest.raises(IndexError):
        mt.cummax(mt.ones(2, 3, device=device), 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((9,), 0), ((3, 5), 1), ((4, 2, 3), -3)])
def test_logcumsumexp(device, torch, dtype, shape, dim):
    a = RNG.standard_normal(shape) * 3
    a.flat[0] = -200.0  # far below the rest: a global shift would underflow it to -inf
    o, t = _pair(torch, device, a, dtype)
    _check(torch, o, t, o.logcumsumexp(dim), torch.logcumsumexp(t, dim), _tol(dtype))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        mt.logcumsumexp(mt.tensor([1, 2], device=device), 0)


def test_logcumsumexp_infinities_and_second_order(device, torch):
    inf = math.inf
    for v in ([-inf, 0.0, 1.0], [0.0, inf, 1.0], [-inf, -inf, -inf], [2.0, -inf, 1.0]):
        o, t = _pair(torch, device, v, "float64")
        r, e = o.logcumsumexp(0), t.logcumsumexp(0)
        np.testing.assert_array_equal(to_np(r), e.detach().numpy())
        r.sum().backward()
        e.sum().backward()
        np.testing.assert_allclose(to_np(o.grad), t.grad.numpy(), rtol=1e-12)  # PyTorch's NaNs, no others
    x = mt.tensor(RNG.standard_normal((3, 4)), device=device, requires_grad=True)
    assert mt.autograd.gradgradcheck(lambda a: mt.logcumsumexp(a, 1), (x,))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", [{}, dict(keepdim=True), dict(dim=1), dict(dim=-1, keepdim=True)])
def test_aminmax(device, torch, dtype, kw):
    a = RNG.integers(-2, 3, (3, 4)).astype(np.float64)  # ties: the gradient is shared evenly, as in PyTorch
    for which in (0, 1):
        o, t = _pair(torch, device, a, dtype)
        ro, rt = mt.aminmax(o, **kw), torch.aminmax(t, **kw)
        assert tuple(ro._fields) == ("min", "max")
        _check(torch, o, t, ro[which], rt[which], _tol(dtype))
    with pytest.raises(IndexError, match="non-zero size"):
        mt.aminmax(mt.ones(0, 3, device=device), dim=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True)])
def test_nanmedian(device, torch, dtype, dim, keepdim):
    a = RNG.permutation(20).astype(np.float64).reshape(4, 5)  # no ties: the indices are defined
    a[0, 1] = a[2, 3] = a[3, 0] = math.nan
    o, t = _pair(torch, device, a, dtype)
    if dim is None:
        _check(torch, o, t, mt.nanmedian(o), torch.nanmedian(t), _tol(dtype))
    else:
        _check(torch, o, t, tuple(o.nanmedian(dim, keepdim)), tuple(torch.nanmedian(t, dim, keepdim)), _tol(dtype))


def test_nanmedian_ties_and_all_nan(device, torch):
    a = [[2.0, 1.0, 2.0, math.nan], [math.nan] * 4]
    o, t = _pair(torch, device, a, "float64")
    _check(torch, o, t, mt.nanmedian(o), torch.nanmedian(t), _tol("float64"))  # tied median: shared gradient
    np.testing.assert_array_equal(to_np(mt.nanmedian(o, 1).values), torch.nanmedian(t, 1).values.detach().numpy())
    assert mt.nanmedian(mt.tensor([3, 1, 2], device=device)).item() == 2
    with pytest.raises(IndexError, match="non-zero size"):
        mt.nanmedian(mt.ones(2, 0, device=device), 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("fn", ["quantile", "nanquantile"])
def test_quantile(device, torch, dtype, interpolation, fn):
    a = RNG.standard_normal((4, 6))
    a[1, 2] = math.nan
    a[3, :] = math.nan
    if fn == "quantile":
        a[3, :2] = 0.5  # a slice with some NaN: quantile is NaN there
    for q, dim, keepdim in [(0.3, 1, False), ([0.0, 0.25, 0.5, 1.0], 1, True), (0.7, None, False),
                            ([0.1, 0.9], 0, False), (0.5, None, True)]:
        o, t = _pair(torch, device, a, dtype)
        qo = mt.tensor(q, dtype=getattr(mt, dtype), device=device) if isinstance(q, list) else q
        qt = torch.tensor(q, dtype=getattr(torch, dtype)) if isinstance(q, list) else q
        ro = getattr(mt, fn)(o, qo, dim, keepdim, interpolation=interpolation)
        rt = getattr(torch, fn)(t, qt, dim, keepdim, interpolation=interpolation)
        # over everything, quantile reads the last of several NaNs: which one that is, is the sort's choice
        _check(torch, o, t, ro, rt, _tol(dtype), grad=not (fn == "quantile" and dim is None))


def test_quantile_errors(device):
    x = mt.ones(3, 4, device=device)
    with pytest.raises(RuntimeError, match="q values must be in the range \\[0, 1\\]"):
        mt.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match="interpolation must be one of"):
        mt.quantile(x, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="must be either float or double"):
        mt.quantile(mt.ones(3, dtype=mt.int64, device=device), 0.5)
    with pytest.raises(RuntimeError, match="same dtype as the input"):
        mt.quantile(x, mt.tensor([0.5], dtype=mt.float64, device=device))
    with pytest.raises(RuntimeError, match="non-empty"):
        mt.nanquantile(mt.ones(0, device=device), 0.5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim,keepdim", [(-1, False), (0, True)])
def test_mode(device, torch, dtype, dim, keepdim):
    a = RNG.integers(0, 3, (5, 6)).astype(np.float64)  # ties between counts: the smallest value, its last index
    o, t = _pair(torch, device, a, dtype)
    _check(torch, o, t, tuple(o.mode(dim, keepdim)), tuple(torch.mode(t, dim, keepdim)), _tol(dtype))
    ints = mt.mode(mt.tensor([3, 1, 3, 1, 2], device=device))
    assert ints.values.item() == 1 and ints.indices.item() == 3
    with pytest.raises(IndexError):
        mt.mode(mt.ones(2, 3, device=device), 2)
