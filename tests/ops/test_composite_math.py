"""trace, nansum/nanmean, xlogy, logit, erfc, sinc, heaviside, ldexp, dist: values and gradients against PyTorch
(float32 and float64, on every device), PyTorch's values at the awkward points (0, NaN, outside the domain) and
its errors."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

RNG = np.random.default_rng(7)
DTYPES = ["float32", "float64"]


def _pair(torch, device, a, dtype, grad=True):
    ours = mt.tensor(a, device=device, dtype=getattr(mt, dtype), requires_grad=grad)
    theirs = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)
    return ours, theirs


def _check(fn_ours, fn_theirs, ours_in, theirs_in, tol):
    """Same value and dtype, then the same gradient for every input that requires one."""
    o = fn_ours(*ours_in)
    t = fn_theirs(*theirs_in)
    assert str(o.dtype).rsplit(".", 1)[-1] == str(t.dtype).rsplit(".", 1)[-1]
    assert_close(o, t.detach().numpy(), **tol)
    if t.requires_grad:
        g = RNG.standard_normal(tuple(t.shape))
        (o * mt.tensor(g, device=o.device, dtype=o.dtype)).sum().backward()
        (t * torch_tensor_like(t, g)).sum().backward()
        for a, b in zip(ours_in, theirs_in):
            if isinstance(b, type(t)) and b.requires_grad:
                assert_close(a.grad, b.grad.numpy(), **tol)


def _check_sum_gradient(fn_ours, fn_theirs, o, t, tol, grad_tol):
    """Same values, then the same gradient of their sum for the leaves ``o`` / ``t``."""
    r, e = fn_ours(o), fn_theirs(t)
    assert_close(r, e.detach().numpy(), **tol)
    r.sum().backward()
    e.sum().backward()
    assert_close(o.grad, t.grad.numpy(), **grad_tol)


def torch_tensor_like(t, values):
    import torch
    return torch.tensor(values, dtype=t.dtype)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------- reductions


@pytest.mark.parametrize("dtype", DTYPES)
def test_trace(device, torch, dtype):
    for shape in [(3, 3), (2, 4)]:
        o, t = _pair(torch, device, RNG.standard_normal(shape), dtype)
        _check(lambda x: x.trace(), torch.trace, [o], [t], _tol(dtype))
    assert mt.trace(mt.ones(2, 3, dtype=mt.int32, device=device)).dtype is mt.int64
    with pytest.raises(RuntimeError, match="expected a matrix"):
        mt.trace(mt.ones(3, device=device))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_nansum_nanmean(device, torch, dtype, dim, keepdim):
    a = RNG.standard_normal((3, 4, 2))
    a[0, 1, 0] = a[2, 3, 1] = math.nan
    a[1, :, 1] = math.nan  # a whole row: nanmean is NaN there, as in PyTorch
    kw = {} if dim is None else dict(dim=dim, keepdim=keepdim)
    for name in ("nansum", "nanmean"):
        o, t = _pair(torch, device, a, dtype)
        _check(lambda x: getattr(mt, name)(x, **kw), lambda x: getattr(torch, name)(x, **kw), [o], [t],
               _tol(dtype))


def test_nan_reduction_dtypes_and_errors(device):
    ints = mt.tensor([1, 2, 3], dtype=mt.int32, device=device)
    assert mt.nansum(ints).dtype is mt.int64 and mt.nansum(ints).item() == 6
    assert mt.nansum(mt.tensor([1.0, math.nan], device=device), dtype=mt.float64).dtype is mt.float64
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point"):
        mt.nanmean(ints)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [2, 1, 3.5, math.inf, 0])
def test_dist(device, torch, dtype, p):
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3,))
    grad = p != 0  # PyTorch's backward of the 0-"norm" (a count) fails
    (oa, ta), (ob, tb) = _pair(torch, device, a, dtype, grad), _pair(torch, device, b, dtype, grad)
    _check(lambda x, y: x.dist(y, p), lambda x, y: torch.dist(x, y, p), [oa, ob], [ta, tb], _tol(dtype))


def test_dist_gradient_at_zero(device):
    x = mt.zeros(3, device=device, requires_grad=True)
    mt.dist(x, mt.zeros(3, device=device)).backward()
    assert to_np(x.grad).tolist() == [0.0, 0.0, 0.0]  # PyTorch's subgradient at 0, not NaN


# ---------------------------------------------------------------------- elementwise


@pytest.mark.parametrize("dtype", DTYPES)
def test_xlogy(device, torch, dtype):
    x = np.array([[0.0, 0.0, 1.5, -2.0], [0.0, 3.0, 0.7, 2.0]])
    y = np.array([2.0, 0.5, 1.0, 3.0])
    (ox, tx), (oy, ty) = _pair(torch, device, x, dtype), _pair(torch, device, y, dtype)
    _check(mt.xlogy, torch.xlogy, [ox, oy], [tx, ty], _tol(dtype))
    (ox, tx), (oy, ty) = _pair(torch, device, x, dtype), _pair(torch, device, y, dtype)
    _check(lambda a, b: a.xlogy(b), lambda a, b: a.xlogy(b), [ox, oy], [tx, ty], _tol(dtype))
    assert mt.special.xlogy is mt.xlogy


def test_xlogy_special_points(device, torch):
    x = mt.tensor([0.0, 0.0, 0.0, 1.0], device=device, requires_grad=True)
    y = mt.tensor([math.nan, 0.0, 2.0, 0.0], device=device, requires_grad=True)
    tx = torch.tensor([0.0, 0.0, 0.0, 1.0], requires_grad=True)
    ty = torch.tensor([math.nan, 0.0, 2.0, 0.0], requires_grad=True)
    r, tr = mt.xlogy(x, y), torch.xlogy(tx, ty)
    np.testing.assert_array_equal(to_np(r), tr.detach().numpy())
    r.sum().backward()
    tr.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy())  # log(y) at x == 0, y > 0; 0 where y <= 0
    np.testing.assert_allclose(to_np(y.grad), ty.grad.numpy())
    assert_close(mt.xlogy(2, mt.tensor([1.0, 2.0], device=device)), torch.xlogy(2, torch.tensor([1.0, 2.0])))
    assert mt.xlogy(mt.tensor([1, 2], device=device), 3).dtype is mt.float32
    with pytest.raises(TypeError):
        mt.xlogy(1.0, 2.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("eps", [None, 0.1])
def test_logit(device, torch, dtype, eps):
    a = np.array([[-0.5, 0.0, 0.05, 0.3], [0.5, 0.97, 1.0, 1.5]])
    o, t = _pair(torch, device, a, dtype)
    o.logit(eps).sum().backward()
    t.logit(eps).sum().backward()
    np.testing.assert_allclose(to_np(mt.logit(o, eps)), torch.logit(t, eps).detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(to_np(o.grad), t.grad.numpy(), rtol=1e-5)  # NaN/inf/0 outside the domain too
    x, tx = _pair(torch, device, RNG.uniform(0.1, 0.9, (3, 2)), dtype)
    _check(lambda v: mt.special.logit(v, eps), lambda v: torch.special.logit(v, eps), [x], [tx], _tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_erfc(device, torch, dtype):
    a = np.array([-3.0, -1.0, 0.0, 0.4, 1.0, 1.9, 2.0, 2.5, 4.0, 6.0, 9.0])
    o, t = _pair(torch, device, a, dtype)
    tol = dict(rtol=2e-6, atol=0) if dtype == "float32" else dict(rtol=1e-12, atol=0)  # relative, even when tiny
    _check(mt.erfc, torch.erfc, [o], [t], tol)
    assert mt.erfc(mt.tensor([1, 2], device=device)).dtype is mt.float32


@pytest.mark.parametrize("dtype", DTYPES)
def test_sinc(device, torch, dtype):
    a = np.array([[0.0, 0.5, -1.0], [1.25, -0.3, 3.0]])
    o, t = _pair(torch, device, a, dtype)
    _check(mt.sinc, torch.sinc, [o], [t], _tol(dtype))  # 1 at 0, gradient 0 there
    assert_close(mt.sinc(mt.tensor([0, 1], device=device)), np.array([1.0, 0.0]), atol=1e-7)


def test_heaviside(device, torch):
    a = np.array([-1.5, 0.0, 2.0, 0.0])
    for v in (np.array([0.25]), np.array([0.5, 0.75, 1.0, -2.0])):
        r = mt.heaviside(mt.tensor(a, device=device), mt.tensor(v, device=device))
        assert_close(r, torch.heaviside(torch.tensor(a), torch.tensor(v)))
    ri = mt.tensor([-1, 0, 3], device=device).heaviside(mt.tensor([7], device=device))
    assert ri.dtype is mt.int64 and to_np(ri).tolist() == [0, 7, 1]
    with pytest.raises(RuntimeError, match="different dtypes"):
        mt.heaviside(mt.tensor([1.0], device=device), mt.tensor([1.0], dtype=mt.float64, device=device))


@pytest.mark.parametrize("dtype", DTYPES)
def test_ldexp(device, torch, dtype):
    a, e = RNG.standard_normal((2, 3)), np.array([-2.0, 0.0, 3.0])
    (oa, ta), (oe, te) = _pair(torch, device, a, dtype), _pair(torch, device, e, dtype)
    _check(mt.ldexp, torch.ldexp, [oa, oe], [ta, te], _tol(dtype))
    ints = mt.ldexp(mt.tensor([1, 2], device=device), mt.tensor([3, 4], device=device))
    assert ints.dtype is mt.float32 and to_np(ints).tolist() == [8.0, 32.0]
    with pytest.raises(TypeError):
        mt.ldexp(mt.tensor([1.0], device=device), [3])


# ---------------------------------------------------------------------- torch.special


def test_special_aliases_are_the_ops():
    assert mt.special.expit is mt.sigmoid and mt.special.gammaln is mt.lgamma and mt.special.psi is mt.digamma
    assert mt.special.erfc is mt.erfc and mt.special.sinc is mt.sinc and mt.special.logsumexp is mt.logsumexp
    assert mt.special.softmax is mt.softmax and mt.special.log_softmax is mt.log_softmax


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_compositions(device, torch, dtype):
    a = np.array([-9.0, -2.0, -0.5, 0.0, 1.0, 3.0])
    o = mt.tensor(a, device=device, dtype=getattr(mt, dtype), requires_grad=True)
    t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    r = mt.special.ndtr(o)
    # the far left tail keeps its relative accuracy (PyTorch's float32 ndtr(-9) underflows to 0)
    expected = [0.5 * math.erfc(-v / math.sqrt(2)) for v in a]
    # (float32: rounding x / sqrt(2) costs ~x^2 ulp in the tail)
    assert_close(r, np.array(expected), **(dict(rtol=1e-5, atol=0) if dtype == "float32" else dict(rtol=1e-12, atol=0)))
    r.sum().backward()
    torch.special.ndtr(t).sum().backward()
    assert_close(o.grad, t.grad.numpy(), **_tol(dtype))
    x, y = np.array([[0.0, 0.0, 1.5], [0.0, 2.0, -0.5]]), np.array([-1.0, 0.5, 2.0])
    (ox, tx), (oy, ty) = _pair(torch, device, x, dtype), _pair(torch, device, y, dtype)
    _check(mt.special.xlog1py, torch.special.xlog1py, [ox, oy], [tx, ty], _tol(dtype))
    for p in (1, 3):
        o, t = _pair(torch, device, RNG.uniform(1.5, 4.0, (2, 3)), dtype)
        _check(lambda v: mt.special.multigammaln(v, p), lambda v: torch.special.multigammaln(v, p), [o], [t],
               _tol(dtype))
    with pytest.raises(RuntimeError, match="greater than \\(p-1\\)/2"):
        mt.special.multigammaln(mt.tensor([0.5], device=device), 3)


def test_inplace_forms(device, torch):
    a, b = np.array([0.2, 0.5, 0.9]), np.array([2.0, 0.5, 3.0])
    for name, args in [("erfc_", ()), ("sinc_", ()), ("logit_", (0.25,)), ("xlogy_", (b,)), ("ldexp_", (b,)),
                       ("heaviside_", (b,))]:
        leaf = mt.tensor(a, device=device, requires_grad=name != "heaviside_")
        tleaf = torch.tensor(a, requires_grad=name != "heaviside_")
        o, t = leaf * 1, tleaf * 1
        targs = [torch.tensor(x) if isinstance(x, np.ndarray) else x for x in args]
        margs = [mt.tensor(x, device=device) if isinstance(x, np.ndarray) else x for x in args]
        assert getattr(o, name)(*margs) is o
        getattr(t, name)(*targs)
        assert_close(o, t.detach().numpy())
        if leaf.requires_grad:
            o.sum().backward()
            t.sum().backward()
            assert_close(leaf.grad, tleaf.grad.numpy())
    with pytest.raises(RuntimeError, match="can't be cast"):
        mt.tensor([1, 2], device=device).erfc_()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["erfcx", "log_ndtr", "entr"])
def test_special_tails(device, torch, dtype, name):
    """Relative accuracy far into the tails (erfcx and log_ndtr are where their plain forms overflow or
    underflow), and PyTorch's gradients, infinities and NaNs included."""
    if name == "entr":
        a = np.array([-1.0, 0.0, 0.5, 1.0, 3.0, math.nan])
    else:
        a = np.array([-30.0, -10.0, -3.0, -1.5, -1.0, -0.5, 0.0, 0.3, 1.0, 1.9, 2.0, 5.0, 30.0])
    tol = dict(rtol=3e-6, atol=0) if dtype == "float32" else dict(rtol=1e-12, atol=0)
    _check_sum_gradient(getattr(mt.special, name), getattr(torch.special, name), *_pair(torch, device, a, dtype), tol,
                        tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_bessel_i(device, torch, dtype, name):
    """Both sides of the switch from the power series to the asymptotic expansion (|x| = 30), 0, and overflow."""
    a = np.array([-60.0, -30.5, -30.0, -29.5, -10.0, -1.0, -1e-3, 0.0, 1e-3, 0.5, 1.0, 5.0, 15.0, 29.9, 30.0,
                  30.1, 45.0, 80.0, 700.0])
    # the scaled forms' gradients are differences of close values: their rounding sets the tolerance
    _check_sum_gradient(getattr(mt.special, name), getattr(torch.special, name), *_pair(torch, device, a, dtype),
                        dict(rtol=1e-6, atol=0) if dtype == "float32" else dict(rtol=1e-13, atol=0),
                        dict(rtol=1e-3, atol=1e-7) if dtype == "float32" else dict(rtol=1e-12, atol=1e-15))
    assert mt.i0 is mt.special.i0 and mt.i0(mt.tensor([1, 2], device=device)).dtype is mt.float32


@pytest.mark.parametrize("dtype", DTYPES)
def test_ndtri(device, torch, dtype):
    """From the far tail (the Newton start switches at 1e-10) through 1/2 to the upper half, the ends (+-inf) and
    outside [0, 1] (NaN); the gradient is PyTorch's closed form."""
    a = np.array([0.0, 1e-300, 1e-50, 1e-11, 1e-9, 1e-5, 0.01, 0.2, 0.5, 0.6, 0.975, 0.999999, 1.0, -0.1, 1.5,
                  math.nan])
    _check_sum_gradient(mt.special.ndtri, torch.special.ndtri, *_pair(torch, device, a, dtype),
                        dict(rtol=1e-6, atol=0) if dtype == "float32" else dict(rtol=1e-14, atol=0),
                        dict(rtol=1e-6, atol=0) if dtype == "float32" else dict(rtol=1e-12, atol=0))
    back = mt.special.ndtr(mt.special.ndtri(mt.tensor([1e-200, 0.3, 0.9], dtype=mt.float64, device=device)))
    # ndtr's condition number at x ~ -30 is x^2 ~ 900: one ulp of x costs ~1e-13 of p
    assert_close(back, np.array([1e-200, 0.3, 0.9]), rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma(device, torch, dtype, name):
    """Both branches (series below x = a, continued fraction above), large shapes, the edges (x = 0, a = 0, x = inf,
    negative and NaN arguments) and broadcasting; the gradient for x. PyTorch's float64 values differ from the exact
    ones by up to ~2e-9 where its asymptotic expansion takes over (a > 20), ours by ~1e-14, so the tolerance is
    PyTorch's error."""
    rng = np.random.default_rng(3)
    a = np.concatenate([[0.5, 1.0, 0.0, -1.0, 2.0, 1.0, 2.0, 0.0, 1e-3, 3.0], rng.uniform(0.01, 30.0, 40)])
    x = np.concatenate([[0.2, 2.0, 1.0, 1.0, 0.0, math.inf, -1.0, 0.0, 1e-4, math.nan], rng.uniform(0.0, 60.0, 40)])
    a, x = np.concatenate([a, [1000.0, 1000.0]]), np.concatenate([x, [990.0, 1100.0]])  # hundreds of iterations
    ao, at = _pair(torch, device, a, dtype, grad=False)
    tol = dict(rtol=2e-5, atol=1e-30) if dtype == "float32" else dict(rtol=5e-9, atol=1e-300)
    _check_sum_gradient(lambda xo: getattr(mt.special, name)(ao, xo), lambda xt: getattr(torch.special, name)(at, xt),
                        *_pair(torch, device, x, dtype), tol, tol)
    col = mt.tensor([[1.0], [4.0]], device=device, dtype=getattr(mt, dtype))
    row = mt.tensor([0.5, 3.0, 9.0], device=device, dtype=getattr(mt, dtype))
    assert_close(getattr(mt.special, name)(col, row),
                 getattr(torch.special, name)(torch.tensor([[1.0], [4.0]]), torch.tensor([0.5, 3.0, 9.0])).numpy(),
                 rtol=1e-5)


def test_incomplete_gamma_errors(device):
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        mt.special.gammainc(mt.tensor([1, 2], device=device), mt.tensor([1, 2], device=device))
    a = mt.tensor([2.0], device=device, requires_grad=True)
    r = mt.special.gammaincc(a, mt.tensor([1.0], device=device))
    with pytest.raises(NotImplementedError, match="shape parameter"):
        r.backward()


# the ops whose backward is written by hand: their backward must itself be differentiable
_SECOND_ORDER = {
    "xlogy": (lambda a, b: mt.xlogy(a, b), ([0.5, 1.3, 2.0], [0.7, 1.5, 3.0])),
    "xlog1py": (lambda a, b: mt.special.xlog1py(a, b), ([0.5, 1.3, 2.0], [0.7, 1.5, 3.0])),
    "logit": (mt.logit, ([0.2, 0.5, 0.7],)),
    "logit_eps": (lambda a: mt.logit(a, 0.1), ([0.2, 0.5, 0.7],)),
    "erfc": (mt.erfc, ([-1.0, 0.5, 2.5],)),
    "erfcx": (mt.special.erfcx, ([-1.0, 0.5, 3.0],)),
    "log_ndtr": (mt.special.log_ndtr, ([-5.0, 0.5, 2.0],)),
    "ndtri": (mt.special.ndtri, ([0.1, 0.5, 0.9],)),
    "entr": (mt.special.entr, ([0.2, 1.5],)),
    "sinc": (mt.sinc, ([0.3, -1.2, 2.5],)),
    "nansum": (lambda a: mt.nansum(a), ([0.3, -1.2, 2.5],)),
    "i0": (mt.i0, ([0.3, -1.2, 35.0],)),
    "i0e": (mt.special.i0e, ([0.3, -1.2, 35.0],)),
    "i1": (mt.special.i1, ([0.3, -1.2, 35.0],)),
    "i1e": (mt.special.i1e, ([0.3, -1.2, 35.0],)),
    "gammainc": (lambda x: mt.special.gammainc(mt.tensor([1.5, 2.0], dtype=mt.float64), x), ([0.7, 3.0],)),
}


@pytest.mark.parametrize("name", list(_SECOND_ORDER))
def test_hand_written_backwards_are_differentiable(name):
    """On the CPU only: the first-order gradients are compared with PyTorch's on every device above, and the
    backward formulas are Tensor ops, the same on each; the simulated GPU would spend seconds on the iterations."""
    fn, values = _SECOND_ORDER[name]
    args = tuple(mt.tensor(v, dtype=mt.float64, requires_grad=True) for v in values)
    assert mt.autograd.gradcheck(fn, args)
    assert mt.autograd.gradgradcheck(fn, args)
