"""Elementwise ops: values against NumPy and PyTorch (and result dtypes for PyTorch's type promotion),
gradients by finite differences (gradcheck / gradgradcheck on float64) and against PyTorch, in-place forms,
``out=``, and the error cases, on 0-d, empty and non-contiguous inputs as well as ordinary ones."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu.ops import elementwise as E

RNG = np.random.default_rng(1234)


def _arr(*shape, dtype=np.float64, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def _t(a, device, requires_grad=False, dtype=None):
    return mt.tensor(a, device=device, requires_grad=requires_grad, dtype=dtype)


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


def _same(ours, theirs, rtol=1e-5, atol=1e-6):
    """Same dtype, shape and values as a PyTorch tensor."""
    assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype), (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert_close(ours, theirs.detach().float().numpy() if _dtype_name(theirs.dtype) == "bfloat16"
                 else theirs.detach().numpy(), rtol=rtol, atol=atol)


def _need_dtype(device, dtype):
    """Skip where the device's backend has no arrays of ``dtype`` (bfloat16 on CuPy)."""
    from minitorch_gpu.backends import get_backend
    if not get_backend(device).supports(dtype):
        pytest.skip(f"{dtype} is not supported on {device}")


def _np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# ====================================================================== unary ops

# name -> (NumPy reference, input domain (lo, hi))
UNARY = {
    "neg": (np.negative, (-2, 2)),
    "abs": (np.abs, (-2, 2)),
    "sign": (np.sign, (-2, 2)),
    "exp": (np.exp, (-2, 2)),
    "exp2": (np.exp2, (-2, 2)),
    "log": (np.log, (0.2, 3)),
    "log2": (np.log2, (0.2, 3)),
    "log10": (np.log10, (0.2, 3)),
    "log1p": (np.log1p, (-0.5, 2)),
    "expm1": (np.expm1, (-2, 2)),
    "sqrt": (np.sqrt, (0.2, 3)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.2, 3)),
    "sin": (np.sin, (-3, 3)),
    "cos": (np.cos, (-3, 3)),
    "tan": (np.tan, (-1.2, 1.2)),
    "asin": (np.arcsin, (-0.9, 0.9)),
    "acos": (np.arccos, (-0.9, 0.9)),
    "atan": (np.arctan, (-3, 3)),
    "sinh": (np.sinh, (-2, 2)),
    "cosh": (np.cosh, (-2, 2)),
    "asinh": (np.arcsinh, (-2, 2)),
    "acosh": (np.arccosh, (1.2, 3)),
    "atanh": (np.arctanh, (-0.9, 0.9)),
    "tanh": (np.tanh, (-3, 3)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-5, 5)),
    "relu": (lambda x: np.maximum(x, 0), (-2, 2)),
    "erf": (_np_erf, (-3, 3)),
    "erfinv": (None, (-0.95, 0.95)),
    "floor": (np.floor, (-3, 3)),
    "ceil": (np.ceil, (-3, 3)),
    "round": (np.rint, (-3, 3)),
    "trunc": (np.trunc, (-3, 3)),
    "frac": (lambda x: x - np.trunc(x), (-3, 3)),
    "reciprocal": (np.reciprocal, (0.3, 3)),
    "deg2rad": (np.deg2rad, (-3, 3)),
    "rad2deg": (np.rad2deg, (-3, 3)),
    "square": (np.square, (-2, 2)),
    "lgamma": (np.vectorize(math.lgamma, otypes=[np.float64]), (0.3, 6)),
    "digamma": (None, (0.3, 6)),
}
# piecewise-constant ops: zero gradient (finite differences are only meaningful away from the jumps)
STEP_OPS = {"sign", "floor", "ceil", "round", "trunc"}
FLOAT_ONLY = {"exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
              "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "tanh", "sigmoid", "erf",
              "erfinv", "reciprocal", "lgamma", "digamma", "deg2rad", "rad2deg"}


def test_every_unary_row_has_a_test_row():
    """A row of the op layer's unary table must come with a row above (its NumPy reference and domain)."""
    assert set(E.UNARY_OPS) - set(UNARY) == set()
    for name, fn in E.UNARY_OPS.items():
        assert getattr(mt, name) is fn and getattr(mt.Tensor, name + "_") is not None


def _unary_input(name, *shape, dtype=np.float64):
    lo, hi = UNARY[name][1]
    a = _arr(*shape, dtype=np.float64, lo=lo, hi=hi)
    if name in STEP_OPS or name in ("abs", "relu", "frac"):
        # keep finite differences away from the kinks and jumps
        a = np.where(np.abs(a - np.round(a)) < 0.05, a + 0.1, a)
        a = np.where(np.abs(a) < 0.05, 0.3, a)
    return a.astype(dtype)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_values_match_numpy(device, name, dtype):
    ref = UNARY[name][0]
    a = _unary_input(name, 3, 4, dtype=dtype)
    x = _t(a, device)
    for r, expected_in in ((getattr(mt, name)(x), a), (getattr(x, name)(), a)):
        assert r.dtype is x.dtype
        if ref is not None:
            tol = 1e-5 if dtype == np.float32 else 1e-12
            assert_close(r, ref(expected_in.astype(np.float64)), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_torch_including_special_shapes(device, torch, name):
    """0-d, empty, non-contiguous (transposed) and ordinary inputs against PyTorch."""
    a = _unary_input(name, 4, 3, dtype=np.float32)
    cases = [a, a[0, 0].copy(), np.zeros((0, 3), np.float32)]
    for arr in cases:
        _same(getattr(mt, name)(_t(arr, device)), getattr(torch, name)(torch.tensor(arr)), rtol=2e-6, atol=1e-6)
    # a transposed (non-contiguous) input
    x = _t(a, device).t()
    assert not x.is_contiguous()
    _same(getattr(mt, name)(x), getattr(torch, name)(torch.tensor(a).t()), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_integer_inputs_follow_torch(device, torch, name):
    """Float-only ops compute integer inputs in the default float dtype; the others keep the integer dtype
    (or refuse, as PyTorch does)."""
    a = np.array([[1, 2, 3], [4, 1, 2]], dtype=np.int64)
    if name in ("asin", "acos", "atanh", "erfinv"):
        a = np.zeros((2, 3), np.int64)
    try:
        expected = getattr(torch, name)(torch.tensor(a))
    except (RuntimeError, NotImplementedError):
        with pytest.raises(RuntimeError):
            getattr(mt, name)(_t(a, device))
        return
    got = getattr(mt, name)(_t(a, device))
    _same(got, expected, rtol=1e-5, atol=1e-6)
    if name in FLOAT_ONLY:
        assert got.dtype is mt.get_default_dtype()


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradcheck(device, name):
    a = _unary_input(name, 2, 3)
    x = _t(a, device, requires_grad=True)
    fn = getattr(mt, name)
    assert mt.autograd.gradcheck(fn, (x,))
    if name in STEP_OPS:
        fn(x).sum().backward()
        assert_close(x.grad, np.zeros_like(a))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_grad_matches_torch(device, torch, name):
    a = _unary_input(name, 3, 2)
    g = _arr(3, 2)
    x = _t(a, device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    y = getattr(mt, name)(x)
    yt = getattr(torch, name)(xt)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
    y.backward(_t(g, device))
    yt.backward(torch.tensor(g))
    _same(x.grad, xt.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "sin", "tanh", "sigmoid", "erf", "reciprocal",
                                  "atan", "asinh", "erfinv", "square"])
def test_unary_gradgradcheck(device, name):
    x = _t(_unary_input(name, 2, 2), device, requires_grad=True)
    assert mt.autograd.gradgradcheck(getattr(mt, name), (x,))


def test_sign_and_relu_special_values(device, torch):
    a = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, -3.0, 2.0])
    _same(mt.sign(_t(a, device)), torch.sign(torch.tensor(a)))
    _same(mt.relu(_t(a, device)), torch.relu(torch.tensor(a)))
    _same(mt.sign(_t([True, False], device)), torch.sign(torch.tensor([True, False])))


def test_round_decimals(device, torch):
    a = np.array([2.5, 3.5, -2.5, 0.125, 1234.5678, -0.5, 0.0049], np.float64)
    for d in (0, 1, 2, 3, -1, -2):
        _same(mt.round(_t(a, device), decimals=d), torch.round(torch.tensor(a), decimals=d), rtol=1e-12)
        _same(_t(a, device).round(decimals=d), torch.tensor(a).round(decimals=d), rtol=1e-12)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        mt.round(_t([1, 2], device), decimals=1)
    # rounding integers is the identity and keeps the dtype
    assert mt.round(_t([1, 2], device)).dtype is mt.int64


def test_abs_neg_refuse_bool(device):
    b = _t([True, False], device)
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor is not supported"):
        -b
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        mt.abs(b)
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is not supported"):
        +b
    x = _t([1.0, -2.0], device)
    assert +x is x
    assert_close(abs(x), [1.0, 2.0])


# ---------------------------------------------------------------------- special functions

def test_erf_float64_accuracy(device):
    xs = np.concatenate([np.linspace(-7, 7, 20001), np.geomspace(1e-300, 7, 2000), -np.geomspace(1e-12, 7, 500)])
    got = to_np(mt.erf(_t(xs, device)))
    ref = _np_erf(xs)
    rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)
    assert rel.max() < 2e-15
    special = to_np(mt.erf(_t([0.0, -0.0, np.inf, -np.inf, np.nan, 50.0], device)))
    assert special[0] == 0 and np.signbit(special[1]) and special[2] == 1 and special[3] == -1
    assert np.isnan(special[4]) and special[5] == 1


@pytest.mark.parametrize("dtype", [mt.float32, mt.float16, mt.bfloat16])
def test_erf_low_precision_accuracy(device, dtype):
    _need_dtype(device, dtype)
    xs = np.linspace(-5, 5, 4001)
    x = _t(xs, device, dtype=dtype)
    got = to_np(mt.erf(x).float())
    ref = _np_erf(to_np(x.double()))
    eps = {mt.float32: 2.0 ** -23, mt.float16: 2.0 ** -10, mt.bfloat16: 2.0 ** -7}[dtype]
    assert mt.erf(x).dtype is dtype
    assert np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)) < 8 * eps


def test_erfinv_inverts_erf_and_edges(device, torch):
    y = np.linspace(-0.999999, 0.999999, 2001)
    x = to_np(mt.erfinv(_t(y, device)))
    assert np.max(np.abs(_np_erf(x) - y)) < 4e-16
    edges = np.array([1.0, -1.0, 1.5, -2.0, 0.0, np.nan])
    _same(mt.erfinv(_t(edges, device)), torch.erfinv(torch.tensor(edges)))
    a = np.linspace(-0.99, 0.99, 50).astype(np.float32)
    _same(mt.erfinv(_t(a, device)), torch.erfinv(torch.tensor(a)), rtol=1e-5)


def test_sigmoid_is_stable_for_large_inputs(device, torch):
    for dt in (np.float32, np.float64, np.float16):
        a = np.array([-1e4, -800, -100, -30, -5, 0, 5, 30, 100, 800, 1e4], dt)
        with np.errstate(over="raise", invalid="raise", divide="raise"):   # no warnings on the way
            got = mt.sigmoid(_t(a, device))
        assert np.all(np.isfinite(to_np(got)))
        _same(got, torch.sigmoid(torch.tensor(a)), rtol=1e-3 if dt == np.float16 else 1e-6, atol=1e-30)
    # tiny outputs keep their relative accuracy
    got = to_np(mt.sigmoid(_t(np.array([-30.0, -50.0]), device)))
    np.testing.assert_allclose(got, 1 / (1 + np.exp([30.0, 50.0])), rtol=1e-14)


# ---------------------------------------------------------------------- activations

ACTIVATIONS = [
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("softplus", {}),
    ("softplus", {"beta": 2.0, "threshold": 3.0}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}),
    ("elu", {}), ("elu", {"alpha": 0.5}), ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}),
]


@pytest.mark.parametrize("name,kw", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation_values_and_grads_match_torch(device, torch, name, kw, dtype):
    F = torch.nn.functional
    a = _arr(4, 5, dtype=dtype, lo=-6, hi=6)
    a[0, :3] = [-30.0, 30.0, 0.37]
    g = _arr(4, 5, dtype=dtype)
    x = _t(a, device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    y = getattr(E, name)(x, **kw)
    yt = getattr(F, name)(xt, **kw)
    tol = 2e-6 if dtype == np.float32 else 1e-12
    _same(y, yt, rtol=tol, atol=tol)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
    y.backward(_t(g, device))
    yt.backward(torch.tensor(g))
    _same(x.grad, xt.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("name,kw", ACTIVATIONS)
def test_activation_gradcheck(device, name, kw):
    a = _arr(2, 3, lo=-3, hi=3)
    a = np.where(np.abs(a) < 0.05, 0.4, a)  # away from kinks at 0
    a = np.where(np.abs(np.abs(a) - 1) < 0.05, 1.3, a)
    if name == "hardtanh":
        a = np.where(np.abs(a - kw.get("max_val", 1.0)) < 0.05, 0.3, a)
        a = np.where(np.abs(a - kw.get("min_val", -1.0)) < 0.05, 0.3, a)
    x = _t(a, device, requires_grad=True)
    fn = lambda t: getattr(E, name)(t, **kw)  # noqa: E731
    assert mt.autograd.gradcheck(fn, (x,))
    if name in ("gelu", "silu", "softplus", "elu"):
        assert mt.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("name,kw", [a for a in ACTIVATIONS if a[0] not in ("gelu", "softplus")])
def test_activation_inplace_flag(device, torch, name, kw):
    F = torch.nn.functional
    a = _arr(3, 4, lo=-3, hi=3)
    x, xt = _t(a, device), torch.tensor(a)
    r = getattr(E, name)(x, **kw, inplace=True)
    getattr(F, name)(xt, **kw, inplace=True)
    assert r is x and x._version == 1
    _same(x, xt, rtol=1e-12)
    leaf = _t(a, device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(E, name)(leaf, **kw, inplace=True)


def test_gelu_double_backward_matches_torch(device, torch):
    F = torch.nn.functional
    a = _arr(6, lo=-4, hi=4)
    for approx in ("none", "tanh"):
        x = _t(a, device, requires_grad=True)
        xt = torch.tensor(a, requires_grad=True)
        (g,) = mt.autograd.grad(E.gelu(x, approximate=approx).sum(), x, create_graph=True)
        (gt,) = torch.autograd.grad(F.gelu(xt, approximate=approx).sum(), xt, create_graph=True)
        _same(g, gt, rtol=1e-12)
        (gg,) = mt.autograd.grad(g.sum(), x)
        (ggt,) = torch.autograd.grad(gt.sum(), xt)
        _same(gg, ggt, rtol=1e-10, atol=1e-12)


def test_softplus_threshold_and_extremes(device, torch):
    F = torch.nn.functional
    a = np.array([-1000.0, -50.0, -1.0, 0.0, 1.0, 19.9, 20.1, 1000.0], np.float32)
    with np.errstate(over="raise"):
        y = E.softplus(_t(a, device))
    _same(y, F.softplus(torch.tensor(a)))
    assert to_np(y)[-1] == 1000.0


def test_gelu_refuses_integers_and_bad_approximate(device):
    with pytest.raises(RuntimeError):
        E.gelu(_t([1, 2], device))
    with pytest.raises(RuntimeError, match="approximate"):
        E.gelu(_t([1.0], device), approximate="fast")


# ====================================================================== binary arithmetic

def _positive_base(a):
    return np.abs(a) + 0.5


def _nonzero(b):
    return np.where(np.abs(b) < 0.3, 0.7, b)


# name -> (NumPy reference, prepare a, prepare b)
BINARY = {
    "add": (np.add, None, None),
    "sub": (np.subtract, None, None),
    "mul": (np.multiply, None, None),
    "div": (np.divide, None, _nonzero),
    "remainder": (np.remainder, None, _nonzero),
    "fmod": (np.fmod, None, _nonzero),
    "pow": (np.power, _positive_base, None),
    "maximum": (np.maximum, None, None),
    "minimum": (np.minimum, None, None),
    "fmax": (np.fmax, None, None),
    "fmin": (np.fmin, None, None),
    "atan2": (np.arctan2, None, None),
    "floor_divide": (np.floor_divide, None, _nonzero),
    "hypot": (np.hypot, None, _nonzero),
    "logaddexp": (np.logaddexp, None, None),
    "logaddexp2": (np.logaddexp2, None, None),
    "copysign": (np.copysign, None, None),
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (3,)), ((3,), ()), ((), ()),
          ((0, 3), (3,)), ((2, 0), (1, 1))]


def _binary_inputs(name, sa, sb, dtype=np.float64):
    _, pa, pb = BINARY[name]
    a = _arr(*sa)
    b = _arr(*sb)
    if pa is not None:
        a = pa(a)
    if pb is not None:
        b = pb(b)
    if name in ("remainder", "fmod", "floor_divide"):
        # keep finite differences away from the jumps of the quotient
        q = a / b
        a = np.where(np.abs(q - np.round(q)) < 0.1, a + 0.3 * b, a)
    if name in ("maximum", "minimum", "fmax", "fmin"):
        bb = np.broadcast_to(b, np.broadcast_shapes(a.shape, b.shape))
        a = np.where(np.abs(np.broadcast_to(a, bb.shape) - bb) < 0.1, bb + 0.5, a) if a.size and bb.size else a
        a = np.ascontiguousarray(a)
        if a.shape != sa:
            a = _arr(*sa) + 10.0  # broadcasting made `a` bigger: separate the operands instead
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPES)
def test_binary_values_match_numpy(device, name, shapes):
    ref = BINARY[name][0]
    a, b = _binary_inputs(name, *shapes)
    r = getattr(mt, name)(_t(a, device), _t(b, device))
    assert r.dtype is mt.float64
    assert_close(r, ref(a, b), rtol=1e-12, atol=1e-12)
    # the Tensor method form
    assert_close(getattr(_t(a, device), name)(_t(b, device)), ref(a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_non_contiguous_operands(device, torch, name):
    a, b = _binary_inputs(name, (4, 3), (4, 3), dtype=np.float32)
    x = _t(a.T.copy(), device).t()   # non-contiguous view with a's values
    y = _t(b, device)
    assert not x.is_contiguous()
    expected = getattr(torch, name)(torch.tensor(a.T.copy()).t(), torch.tensor(b))
    _same(getattr(mt, name)(x, y), expected, rtol=1e-6, atol=1e-6)
    _same(getattr(mt, name)(y.t().contiguous().t(), x), getattr(torch, name)(torch.tensor(b), torch.tensor(a)),
          rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(set(BINARY) - {"floor_divide"}))
@pytest.mark.parametrize("shapes", [((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (2, 3)), ((2, 3), ())])
def test_binary_gradcheck_with_broadcasting(device, name, shapes):
    a, b = _binary_inputs(name, *shapes)
    x = _t(a, device, requires_grad=True)
    y = _t(b, device, requires_grad=True)
    assert mt.autograd.gradcheck(getattr(mt, name), (x, y))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_grads_match_torch(device, torch, name):
    a, b = _binary_inputs(name, (2, 1, 3), (4, 1))
    g = _arr(2, 4, 3)
    x, y = _t(a, device, requires_grad=True), _t(b, device, requires_grad=True)
    xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    r = getattr(mt, name)(x, y)
    rt = getattr(torch, name)(xt, yt)
    if rt.grad_fn is not None and name != "floor_divide":
        assert type(r.grad_fn).__name__ == type(rt.grad_fn).__name__
    if name == "floor_divide":
        # PyTorch has no derivative for floor_divide; ours is the zero gradient of the step function
        r.backward(_t(g, device))
        assert_close(x.grad, np.zeros_like(a))
        assert_close(y.grad, np.zeros_like(b))
        return
    r.backward(_t(g, device))
    rt.backward(torch.tensor(g))
    assert x.grad.shape == x.shape and y.grad.shape == y.shape
    _same(x.grad, xt.grad, rtol=1e-10, atol=1e-12)
    _same(y.grad, yt.grad, rtol=1e-10, atol=1e-12)


def test_maximum_minimum_ties_share_gradient(device, torch):
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([1.0, 5.0, 0.0])
    for name in ("maximum", "minimum", "fmax", "fmin"):
        x, y = _t(a, device, requires_grad=True), _t(b, device, requires_grad=True)
        xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        getattr(mt, name)(x, y).sum().backward()
        getattr(torch, name)(xt, yt).sum().backward()
        _same(x.grad, xt.grad)
        _same(y.grad, yt.grad)


def test_nan_handling_of_max_min_and_clamp(device, torch):
    a = np.array([np.nan, 1.0, np.nan, 2.0])
    b = np.array([0.5, np.nan, np.nan, 3.0])
    for name in ("maximum", "minimum", "fmax", "fmin"):
        _same(getattr(mt, name)(_t(a, device), _t(b, device)), getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
    _same(mt.clamp(_t(a, device), 0, 1.5), torch.clamp(torch.tensor(a), 0, 1.5))
    _same(mt.clamp(_t([0.5], device), float("nan"), 1.0), torch.clamp(torch.tensor([0.5]), float("nan"), 1.0))


@pytest.mark.parametrize("name", ["mul", "div", "pow", "atan2", "maximum", "sub", "remainder", "hypot", "logaddexp",
                                  "logaddexp2"])
def test_binary_gradgradcheck(device, name):
    a, b = _binary_inputs(name, (2, 3), (3,))
    x, y = _t(a, device, requires_grad=True), _t(b, device, requires_grad=True)
    assert mt.autograd.gradgradcheck(getattr(mt, name), (x, y))


# ---------------------------------------------------------------------- scalars and reflected operators

SCALAR_EXPRS = [
    "x + 2", "2 + x", "x + 2.5", "x - 2", "2 - x", "x - 0.5", "x * 3", "3 * x", "x * 1.5", "x / 4", "4 / x",
    "x / 2.5", "x // 3", "7 // x", "x // 2.5", "x % 3", "7 % x", "x % -2.5", "x ** 2", "x ** 0.5", "2 ** x",
    "1.5 ** x", "-x", "abs(x)", "x == 2", "x < 2.5", "2 < x", "x >= 1", "x != 3", "x + True", "x * False",
]


@pytest.mark.parametrize("expr", SCALAR_EXPRS)
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "int64", "int32", "uint8", "int8"])
def test_scalar_operands_match_torch(device, torch, expr, dt):
    vals = np.array([[1, 2, 3], [4, 5, 7]])
    xt = torch.tensor(vals, dtype=getattr(torch, dt))
    x = _t(vals, device, dtype=getattr(mt, dt))
    try:
        expected = eval(expr, {"x": xt})
    except RuntimeError:
        with pytest.raises(RuntimeError):
            eval(expr, {"x": x})
        return
    got = eval(expr, {"x": x})
    tol = 1e-3 if dt == "float16" else 1e-6
    _same(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("expr", ["x + 2.5", "x * 3", "2 - x", "4 / x", "x ** 2", "2 ** x", "x - 0.5",
                                  "x / 2.5", "7 % x", "x % 2.5"])
def test_scalar_operand_grads_match_torch(device, torch, expr):
    a = _arr(2, 3, lo=0.5, hi=3)
    a = np.where(np.abs(7 / a - np.round(7 / a)) < 0.1, a + 0.2, a)
    x = _t(a, device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    y = eval(expr, {"x": x})
    yt = eval(expr, {"x": xt})
    if expr == "7 % x":
        # PyTorch has no derivative for a scalar dividend; ours is -g * floor(7 / x)
        y.sum().backward()
        assert_close(x.grad, -np.floor(7 / a))
        return
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
    y.sum().backward()
    yt.sum().backward()
    _same(x.grad, xt.grad, rtol=1e-12)
    assert mt.autograd.gradcheck(lambda t: eval(expr, {"x": t}), (_t(a, device, requires_grad=True),))


def test_numpy_scalars_act_like_python_scalars(device, torch):
    x = _t([1.0, 2.0], device)
    xi = _t([1, 2], device)
    for s in (np.float64(2.5), np.float32(2.5), np.int64(3), np.int8(3)):
        for left in (True, False):
            got = s * x if left else x * s
            assert isinstance(got, mt.Tensor)
            assert got.dtype is mt.float32
        _same(xi + s, torch.tensor([1, 2]) + s)
        _same(s - xi, s - torch.tensor([1, 2]))


def test_rsub_function(device, torch):
    a = _arr(2, 3)
    b = _arr(3)
    _same(mt.rsub(_t(a, device), _t(b, device)), torch.rsub(torch.tensor(a), torch.tensor(b)))
    _same(mt.rsub(_t(a, device), 2.5, alpha=2), torch.rsub(torch.tensor(a), 2.5, alpha=2))
    x = _t(a, device, requires_grad=True)
    y = mt.rsub(x, 2.0, alpha=3)
    assert y.grad_fn.name() == "RsubBackward1"
    y.sum().backward()
    assert_close(x.grad, np.full_like(a, -3.0))


def test_add_sub_alpha(device, torch):
    a, b = _arr(2, 3), _arr(3)
    for fn in ("add", "sub"):
        _same(getattr(mt, fn)(_t(a, device), _t(b, device), alpha=2.5),
              getattr(torch, fn)(torch.tensor(a), torch.tensor(b), alpha=2.5))
        _same(getattr(mt, fn)(_t(a, device), 3, alpha=-2), getattr(torch, fn)(torch.tensor(a), 3, alpha=-2))
        x, y = _t(a, device, requires_grad=True), _t(b, device, requires_grad=True)
        assert mt.autograd.gradcheck(lambda p, q: getattr(mt, fn)(p, q, alpha=0.7), (x, y))
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        mt.add(_t([1, 2], device), 1, alpha=1.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
        mt.add(_t([True], device), _t([True], device), alpha=2)
    ai = np.array([1, 2, 3])
    _same(mt.add(_t(ai, device), _t(ai, device), alpha=3), torch.add(torch.tensor(ai), torch.tensor(ai), alpha=3))


# ---------------------------------------------------------------------- type promotion

def _operand(spec, lib, device=None):
    """('t', dtype, shape) -> a tensor of small positive values; anything else is a Python scalar."""
    if isinstance(spec, tuple):
        _, dt, shape = spec
        n = int(np.prod(shape)) if shape else 1
        vals = (np.arange(n) % 5 + 1).reshape(shape)
        if dt == "bool":
            vals = vals % 2 == 0
        if lib is mt:
            return mt.tensor(vals, dtype=getattr(mt, dt), device=device)
        return lib.tensor(vals, dtype=getattr(lib, dt))
    return spec


PROMOTION_CASES = [
    (("t", "int64", (3,)), 2.5), (("t", "int32", (3,)), 2.5), (("t", "uint8", (3,)), 1000),
    (("t", "int8", (3,)), 200), (("t", "float16", (3,)), 2.5), (("t", "float16", (3,)), 3),
    (("t", "bfloat16", (3,)), 2.5), (("t", "bool", (3,)), 1), (("t", "bool", (3,)), 2.5), (("t", "bool", (3,)), True),
    (("t", "float64", ()), ("t", "float32", (3,))), (("t", "int64", ()), ("t", "int8", (3,))),
    (("t", "float64", ()), ("t", "int32", (3,))), (("t", "float32", (3,)), ("t", "float64", (3,))),
    (("t", "int8", (3,)), ("t", "uint8", (3,))), (("t", "float16", (3,)), ("t", "bfloat16", (3,))),
    (("t", "bool", (3,)), ("t", "int16", ())), (("t", "int32", (3,)), ("t", "float16", ())),
    (("t", "float64", ()), ("t", "float16", ())), (("t", "int64", (3,)), ("t", "int64", (3,))),
    (("t", "uint8", (2, 3)), ("t", "int64", (3,))), (("t", "bool", (3,)), ("t", "bool", (3,))),
    (("t", "float32", ()), 2), (("t", "int64", ()), 2.5),
]
PROMOTION_OPS = ["add", "sub", "mul", "div", "floor_divide", "remainder", "eq", "lt", "pow", "maximum",
                 "bitwise_and"]


@pytest.mark.parametrize("lhs,rhs", PROMOTION_CASES)
@pytest.mark.parametrize("op", PROMOTION_OPS)
def test_type_promotion_matches_torch(device, torch, lhs, rhs, op):
    """Values and result dtypes of mixed-dtype ops, as PyTorch computes them (scalars are 'weak')."""
    for spec in (lhs, rhs):
        if isinstance(spec, tuple):
            _need_dtype(device, getattr(mt, spec[1]))
    xt, yt = _operand(lhs, torch), _operand(rhs, torch)
    x, y = _operand(lhs, mt, device), _operand(rhs, mt, device)
    try:
        expected = getattr(torch, op)(xt, yt)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        err = RuntimeError if isinstance(e, NotImplementedError) else type(e)
        with pytest.raises(err):
            getattr(mt, op)(x, y)
        return
    got = getattr(mt, op)(x, y)
    tol = 1e-2 if "16" in _dtype_name(expected.dtype) else 1e-6
    _same(got, expected, rtol=tol, atol=tol)


def test_promotion_reflected_and_dunders(device, torch):
    for lhs, rhs in PROMOTION_CASES:
        if isinstance(rhs, tuple) or (lhs[1] == "bfloat16" and device != "cpu"):
            continue
        for expr in ("y + x", "y * x", "y - x" if not isinstance(rhs, bool) else "x", "x / y"):
            env_t = {"x": _operand(lhs, torch), "y": rhs}
            env = {"x": _operand(lhs, mt, device), "y": rhs}
            try:
                expected = eval(expr, env_t)
            except (RuntimeError, ZeroDivisionError):
                continue
            _same(eval(expr, env), expected, rtol=1e-2, atol=1e-2)


def test_integer_division_rules(device, torch):
    a = np.array([-7, 7, -6, 5])
    b = np.array([2, -2, 4, 3])
    xt, yt = torch.tensor(a), torch.tensor(b)
    x, y = _t(a, device), _t(b, device)
    _same(x / y, xt / yt)                       # true division gives the default float
    _same(x // y, xt // yt)                     # floor division stays integral
    _same(mt.div(x, y, rounding_mode="trunc"), torch.div(xt, yt, rounding_mode="trunc"))
    _same(mt.div(x, 2, rounding_mode="floor"), torch.div(xt, 2, rounding_mode="floor"))
    _same(mt.div(x.double(), y, rounding_mode="trunc"), torch.div(xt.double(), yt, rounding_mode="trunc"))
    _same(x % y, xt % yt)
    _same(mt.fmod(x, y), torch.fmod(xt, yt))
    _same(mt.true_divide(x, 2), torch.true_divide(xt, 2))
    with pytest.raises(ValueError, match="rounding_mode"):
        mt.div(x, y, rounding_mode="round")
    for expr in ("x // 0", "x % 0", "mt.fmod(x, 0)", "x // (y * 0)", "mt.div(x, 0, rounding_mode='trunc')"):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            eval(expr, {"x": x, "y": y, "mt": mt})
    # float division by zero is IEEE
    assert_close(_t([1.0, -1.0, 0.0], device) / 0, np.array([np.inf, -np.inf, np.nan]))


def test_integer_pow(device, torch):
    a = np.array([2, -1, 1, 3, 0, -2])
    e = np.array([3, -3, -2, -1, 2, -2])
    _same(mt.pow(_t(a, device), _t(e, device)), torch.pow(torch.tensor(a), torch.tensor(e)))
    _same(2 ** _t(e, device), 2 ** torch.tensor(e))
    _same(_t(a, device) ** 2, torch.tensor(a) ** 2)
    _same(_t(a, device) ** 0.5, torch.tensor(a) ** 0.5)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        _t(a, device) ** -1
    _same(mt.float_power(_t(a, device), 2), torch.float_power(torch.tensor(a), 2))
    _same(mt.square(_t([True, False], device)), torch.square(torch.tensor([True, False])))


def test_pow_zero_base_and_exponent_gradients(device, torch):
    a = np.array([0.0, 0.0, 2.0, 1.5])
    e = np.array([0.0, 2.0, 0.0, -1.0])
    x, y = _t(a, device, requires_grad=True), _t(e, device, requires_grad=True)
    xt, yt = torch.tensor(a, requires_grad=True), torch.tensor(e, requires_grad=True)
    (x ** y).sum().backward()
    (xt ** yt).sum().backward()
    _same(x.grad, xt.grad)
    _same(y.grad, yt.grad)
    x = _t(a, device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    (x ** 0).sum().backward()
    (xt ** 0).sum().backward()
    _same(x.grad, xt.grad)
    z = _t(e, device, requires_grad=True)
    zt = torch.tensor(e, requires_grad=True)
    (0.0 ** z).sum().backward()
    (0.0 ** zt).sum().backward()
    _same(z.grad, zt.grad)


def test_mixed_dtype_gradients_keep_input_dtypes(device, torch):
    a = _arr(3)
    x32 = _t(a, device, dtype=mt.float32, requires_grad=True)
    x64 = _t(np.array(1.5), device, dtype=mt.float64, requires_grad=True)
    y = x32 * x64 + x64 / x32
    assert y.dtype is mt.float32
    y.sum().backward()
    assert x32.grad.dtype is mt.float32 and x64.grad.dtype is mt.float64
    t32 = torch.tensor(a, dtype=torch.float32, requires_grad=True)
    t64 = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    (t32 * t64 + t64 / t32).sum().backward()
    _same(x32.grad, t32.grad, rtol=1e-5)
    _same(x64.grad, t64.grad, rtol=1e-5)


# ====================================================================== comparisons, logical, bitwise

@pytest.mark.parametrize("name,ref", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                      ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal),
                                      ("greater", np.greater), ("less_equal", np.less_equal),
                                      ("not_equal", np.not_equal), ("greater_equal", np.greater_equal),
                                      ("less", np.less)])
def test_comparisons(device, name, ref):
    a = np.round(_arr(3, 4), 0)
    b = np.round(_arr(4), 0)
    r = getattr(mt, name)(_t(a, device), _t(b, device))
    assert r.dtype is mt.bool
    assert_close(r, ref(a, b))
    assert_close(getattr(mt, name)(_t(a, device), 1.0), ref(a, 1.0))
    assert_close(getattr(_t(a, device), name)(_t(b, device)), ref(a, b))
    assert not getattr(mt, name)(_t(a, device, requires_grad=True), 0.0).requires_grad
    # empty and 0-d
    assert getattr(mt, name)(_t(np.zeros((0, 2)), device), 1).shape == (0, 2)
    assert_close(getattr(mt, name)(_t(np.array(1.0), device), _t(b, device)), ref(1.0, b))


def test_comparison_dunders_and_scalar_wrapping(device, torch):
    x = _t([1.0, 2.0, 3.0], device)
    assert_close(x == 2, [False, True, False])
    assert_close(2 < x, [False, False, True])
    assert_close(x >= 2, [False, True, True])
    assert (x == None) is False  # noqa: E711 - Python's fallback for a foreign operand
    assert (x != "a") is True
    # scalars wrap to the tensor's integer type before comparing, as in PyTorch
    u = np.array([232, 5], np.uint8)
    _same(_t(u, device) == 1000, torch.tensor(u) == 1000)
    i8 = np.array([5, -3], np.int8)
    _same(_t(i8, device) < 200, torch.tensor(i8) < 200)
    _same(_t(i8, device) < 200.5, torch.tensor(i8) < 200.5)


def test_eq_ne_inplace(device, torch):
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 3.0])
    for name in ("eq_", "ne_", "lt_", "ge_"):
        x = _t(a, device)
        xt = torch.tensor(a)
        getattr(x, name)(_t(b, device))
        getattr(xt, name)(torch.tensor(b))
        _same(x, xt)


def test_equal_allclose_isclose(device, torch):
    a = _arr(3, 2)
    assert mt.equal(_t(a, device), _t(a, device)) is True
    assert mt.equal(_t(a, device), _t(a + 1, device)) is False
    assert mt.equal(_t(a, device), _t(a[:1], device)) is False
    assert mt.equal(_t(a, device, dtype=mt.float32), _t(a, device, dtype=mt.float32).double()) is True
    assert mt.allclose(_t(a, device), _t(a + 1e-9, device)) is True
    assert mt.allclose(_t(a, device), _t(a + 1e-3, device)) is False
    c = np.array([1.0, np.nan, np.inf, -np.inf, 1.0, 0.0])
    d = np.array([1.0 + 1e-6, np.nan, np.inf, np.inf, np.inf, 1e-9])
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 0.0}, {"atol": 1e-10}):
        _same(mt.isclose(_t(c, device), _t(d, device), **kw), torch.isclose(torch.tensor(c), torch.tensor(d), **kw))
        assert mt.allclose(_t(c, device), _t(d, device), **kw) == torch.allclose(torch.tensor(c), torch.tensor(d), **kw)
    ints = np.array([1, 2, 1000])
    _same(mt.isclose(_t(ints, device), _t(ints + 1, device), rtol=1e-3),
          torch.isclose(torch.tensor(ints), torch.tensor(ints + 1), rtol=1e-3))
    with pytest.raises(RuntimeError, match="did not match"):
        mt.isclose(_t([1], device), _t([1.0], device))


def test_predicates(device, torch):
    a = np.array([1.0, np.nan, np.inf, -np.inf, -0.0, 0.0])
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"):
        _same(getattr(mt, name)(_t(a, device)), getattr(torch, name)(torch.tensor(a)))
        _same(getattr(_t(a, device), name)(), getattr(torch.tensor(a), name)())
    ints = np.array([1, -2])
    for name in ("isnan", "isinf", "isfinite"):
        _same(getattr(mt, name)(_t(ints, device)), getattr(torch, name)(torch.tensor(ints)))


def test_logical_ops(device, torch):
    a = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]])
    b = np.array([1, 0, 5])
    for name in ("logical_and", "logical_or", "logical_xor"):
        _same(getattr(mt, name)(_t(a, device), _t(b, device)), getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
        x = _t(a, device)
        getattr(x, name + "_")(_t(b, device))
        xt = torch.tensor(a)
        getattr(xt, name + "_")(torch.tensor(b))
        _same(x, xt)
        with pytest.raises(TypeError):
            getattr(mt, name)(_t(a, device), 1)
    _same(mt.logical_not(_t(a, device)), torch.logical_not(torch.tensor(a)))


def test_bitwise_ops(device, torch):
    a = np.array([[5, -3, 12], [0, 7, 255]])
    b = np.array([3, 6, -1])
    for name, sym in (("bitwise_and", "&"), ("bitwise_or", "|"), ("bitwise_xor", "^"),
                      ("bitwise_left_shift", "<<"), ("bitwise_right_shift", ">>")):
        bb = np.abs(b) if "shift" in name else b
        xt, yt = torch.tensor(a), torch.tensor(bb)
        x, y = _t(a, device), _t(bb, device)
        _same(getattr(mt, name)(x, y), getattr(torch, name)(xt, yt))
        _same(eval(f"x {sym} y"), eval(f"xt {sym} yt"))
        _same(eval(f"x {sym} 3"), eval(f"xt {sym} 3"))
        _same(eval(f"3 {sym} y"), eval(f"3 {sym} yt"))
    bo = np.array([True, False, True])
    for sym in ("&", "|", "^"):
        _same(eval(f"x {sym} y", {"x": _t(bo, device), "y": _t(bo[::-1].copy(), device)}),
              eval(f"x {sym} y", {"x": torch.tensor(bo), "y": torch.tensor(bo[::-1].copy())}))
        _same(eval(f"x {sym} True", {"x": _t(bo, device)}), eval(f"x {sym} True", {"x": torch.tensor(bo)}))
    _same(~_t(a, device), ~torch.tensor(a))
    _same(~_t(bo, device), ~torch.tensor(bo))
    x = _t(a, device)
    x &= 6
    xt = torch.tensor(a)
    xt &= 6
    _same(x, xt)
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        _t([1.0], device) & _t([1.0], device)
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        ~_t([1.0], device)


# ====================================================================== clamp, where, lerp, addcmul, addcdiv

@pytest.mark.parametrize("lo,hi", [(-0.5, 0.5), (None, 0.3), (-0.2, None), (1, 2), (0.5, -0.5)])
def test_clamp_scalar_bounds(device, torch, lo, hi):
    a = _arr(3, 4)
    a = np.where(np.isin(np.round(a, 1), [-0.5, 0.5, 0.3, -0.2]), a + 0.03, a)
    x, xt = _t(a, device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yt = mt.clamp(x, lo, hi), torch.clamp(xt, lo, hi)
    _same(y, yt)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
    y.sum().backward()
    yt.sum().backward()
    _same(x.grad, xt.grad)
    _same(mt.clip(_t(a, device), lo, hi), torch.clip(torch.tensor(a), lo, hi))
    if lo is not None:
        _same(mt.clamp_min(_t(a, device), lo), torch.clamp_min(torch.tensor(a), lo))
    if hi is not None:
        _same(_t(a, device).clamp_max(hi), torch.tensor(a).clamp_max(hi))


def test_clamp_integer_and_promotion(device, torch):
    i = np.array([1, 5, -3])
    _same(mt.clamp(_t(i, device), 0, 2), torch.clamp(torch.tensor(i), 0, 2))
    _same(mt.clamp(_t(i, device), 0.5, 2.5), torch.clamp(torch.tensor(i), 0.5, 2.5))
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        mt.clamp(_t(i, device))


def test_clamp_tensor_bounds(device, torch):
    a = _arr(3, 4)
    lo = _arr(4, lo=-1, hi=0)
    hi = _arr(3, 1, lo=0, hi=1)
    hi[0, 0] = -0.8   # a row with max < min: the result is max there
    args = [a, lo, hi]
    ts = [_t(v, device, requires_grad=True) for v in args]
    tt = [torch.tensor(v, requires_grad=True) for v in args]
    y, yt = mt.clamp(*ts), torch.clamp(*tt)
    _same(y, yt)
    g = _arr(3, 4)
    y.backward(_t(g, device))
    yt.backward(torch.tensor(g))
    for t, tr in zip(ts, tt):
        _same(t.grad, tr.grad)
    assert mt.autograd.gradcheck(lambda p, q, r: mt.clamp(p, q, r),
                                 [_t(v, device, requires_grad=True) for v in args])
    x, m = _t(a, device, requires_grad=True), _t(lo, device, requires_grad=True)
    xt, mt_ = torch.tensor(a, requires_grad=True), torch.tensor(lo, requires_grad=True)
    mt.clamp(x, min=m).sum().backward()
    torch.clamp(xt, min=mt_).sum().backward()
    _same(x.grad, xt.grad)
    _same(m.grad, mt_.grad)


def test_where(device, torch):
    c = _arr(3, 4) > 0
    a, b = _arr(3, 4), _arr(4)
    ct, at, bt = torch.tensor(c), torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    x, y = _t(a, device, requires_grad=True), _t(b, device, requires_grad=True)
    r, rt = mt.where(_t(c, device), x, y), torch.where(ct, at, bt)
    _same(r, rt)
    assert r.grad_fn.name() == "WhereBackward0"
    r.sum().backward()
    rt.sum().backward()
    _same(x.grad, at.grad)
    _same(y.grad, bt.grad)
    # scalars, promotion, the method form
    _same(mt.where(_t(c, device), _t(a, device), 2.5), torch.where(ct, torch.tensor(a), 2.5))
    _same(mt.where(_t(c, device), 1, 0), torch.where(ct, 1, 0))
    _same(mt.where(_t(c, device), 1.0, 0), torch.where(ct, 1.0, 0))
    ai = np.array([1, 2, 3, 4], np.int8)
    _same(mt.where(_t(c, device), _t(ai, device), 2), torch.where(ct, torch.tensor(ai), 2))
    _same(mt.where(_t(c, device), _t(ai, device), 2.5), torch.where(ct, torch.tensor(ai), 2.5))
    _same(_t(a, device).where(_t(c, device), _t(b, device)), torch.tensor(a).where(ct, torch.tensor(b)))
    assert mt.autograd.gradcheck(lambda p, q: mt.where(_t(c, device), p, q),
                                 (_t(a, device, requires_grad=True), _t(b, device, requires_grad=True)))
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        mt.where(_t(a, device), _t(a, device), 0.0)
    with pytest.raises(RuntimeError, match=r"\[3, 4\]"):
        mt.where(_t(c, device), _t(a, device), _t(_arr(5), device))


@pytest.mark.parametrize("weight", [0.3, 0.75, -0.6, 1.5, "tensor"])
def test_lerp(device, torch, weight):
    a, b = _arr(3, 4), _arr(4)
    w = _arr(3, 1, lo=-0.5, hi=1.5) if weight == "tensor" else weight
    ins = [a, b] + ([w] if weight == "tensor" else [])
    ts = [_t(v, device, requires_grad=True) for v in ins]
    tt = [torch.tensor(v, requires_grad=True) for v in ins]
    y = mt.lerp(ts[0], ts[1], ts[2] if weight == "tensor" else w)
    yt = torch.lerp(tt[0], tt[1], tt[2] if weight == "tensor" else w)
    _same(y, yt, rtol=1e-14, atol=1e-15)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
    y.sum().backward()
    yt.sum().backward()
    for t, tr in zip(ts, tt):
        _same(t.grad, tr.grad, rtol=1e-12)
    fresh = [_t(v, device, requires_grad=True) for v in ins]
    assert mt.autograd.gradcheck(lambda *p: mt.lerp(p[0], p[1], p[2] if weight == "tensor" else w), fresh)
    x = _t(a, device)
    x.lerp_(_t(np.broadcast_to(b, a.shape).copy(), device), _t(w, device) if weight == "tensor" else w)
    assert_close(x, to_np(y))


def test_lerp_errors(device):
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        mt.lerp(_t([1.0], device, dtype=mt.float32), _t([1.0], device, dtype=mt.float64), 0.5)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        mt.lerp(_t([1], device), _t([2], device), 0.5)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", [1, 0.5, -2])
def test_addcmul_addcdiv(device, torch, name, value):
    x, t1, t2 = _arr(3, 1), _arr(4), _nonzero(_arr(3, 4))
    ts = [_t(v, device, requires_grad=True) for v in (x, t1, t2)]
    tt = [torch.tensor(v, requires_grad=True) for v in (x, t1, t2)]
    y = getattr(mt, name)(*ts, value=value)
    yt = getattr(torch, name)(*tt, value=value)
    _same(y, yt, rtol=1e-12)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
    y.sum().backward()
    yt.sum().backward()
    for t, tr in zip(ts, tt):
        _same(t.grad, tr.grad, rtol=1e-12)
    assert mt.autograd.gradcheck(lambda *p: getattr(mt, name)(*p, value=value),
                                 [_t(v, device, requires_grad=True) for v in (x, t1, t2)])
    assert mt.autograd.gradgradcheck(lambda *p: getattr(mt, name)(*p, value=value),
                                     [_t(v, device, requires_grad=True) for v in (x, t1, t2)])
    # in place, with and without autograd
    full = np.broadcast_to(x, (3, 4)).copy()
    z, zt = _t(full, device), torch.tensor(full)
    getattr(z, name + "_")(_t(t1, device), _t(t2, device), value=value)
    getattr(zt, name + "_")(torch.tensor(t1), torch.tensor(t2), value=value)
    _same(z, zt, rtol=1e-12)


def test_addcmul_addcdiv_dtypes(device, torch):
    i = np.array([1, 5])
    _same(mt.addcmul(_t(i, device), _t(i, device), _t(i, device), value=2),
          torch.addcmul(torch.tensor(i), torch.tensor(i), torch.tensor(i), value=2))
    _same(mt.addcmul(_t([1.0, 2.0], device), _t(i, device), _t(i, device), value=2),
          torch.addcmul(torch.tensor([1.0, 2.0]), torch.tensor(i), torch.tensor(i), value=2))
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        mt.addcdiv(_t([1.0, 2.0], device), _t(i, device), _t(i, device))


# ====================================================================== in-place forms

INPLACE = [
    ("add_", (lambda: _arr(3),), {}), ("add_", (2.5,), {}), ("add_", (lambda: _arr(3),), {"alpha": 2}),
    ("sub_", (lambda: _arr(3),), {}), ("sub_", (1,), {"alpha": 0.5}), ("mul_", (lambda: _arr(3),), {}),
    ("mul_", (3,), {}), ("div_", (lambda: _nonzero(_arr(3)),), {}), ("div_", (4.0,), {}),
    ("div_", (2.0,), {"rounding_mode": "floor"}), ("pow_", (2,), {}), ("pow_", (lambda: _arr(3),), {}),
    ("remainder_", (1.5,), {}), ("fmod_", (lambda: _nonzero(_arr(3)),), {}), ("floor_divide_", (0.7,), {}),
    ("clamp_", (-0.5, 0.5), {}), ("clamp_min_", (0.1,), {}), ("clamp_max_", (0.1,), {}),
    ("exp_", (), {}), ("tanh_", (), {}), ("sigmoid_", (), {}), ("neg_", (), {}), ("abs_", (), {}),
    ("sqrt_", (), {}), ("reciprocal_", (), {}), ("sin_", (), {}), ("floor_", (), {}), ("relu_", (), {}),
    ("square_", (), {}), ("round_", (), {"decimals": 1}), ("erf_", (), {}), ("log_", (), {}),
    ("atan2_", (lambda: _arr(3),), {}), ("lerp_", (lambda: _arr(4, 3), 0.25), {}),
]


def _materialise(args):
    return [a() if callable(a) else a for a in args]


@pytest.mark.parametrize("name,args,kw", INPLACE, ids=[f"{n}{i}" for i, (n, _, _) in enumerate(INPLACE)])
def test_inplace_value_version_and_identity(device, torch, name, args, kw):
    base = _arr(4, 3, lo=0.5, hi=2)
    args = _materialise(args)
    x = _t(base, device)
    xt = torch.tensor(base)
    v0 = x._version
    margs = [_t(a, device) if isinstance(a, np.ndarray) else a for a in args]
    targs = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    r = getattr(x, name)(*margs, **kw)
    getattr(xt, name)(*targs, **kw)
    assert r is x
    assert x._version == v0 + 1
    _same(x, xt, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,args,kw", INPLACE, ids=[f"{n}{i}" for i, (n, _, _) in enumerate(INPLACE)])
def test_inplace_refuses_leaf_requiring_grad(device, name, args, kw):
    x = _t(_arr(4, 3, lo=0.5, hi=2), device, requires_grad=True)
    before = to_np(x).copy()
    margs = [_t(a, device) if isinstance(a, np.ndarray) else a for a in _materialise(args)]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        getattr(x, name)(*margs, **kw)
    assert_close(x, before)
    assert x._version == 0
    with mt.no_grad():   # allowed outside autograd
        getattr(x, name)(*margs, **kw)
    assert x._version == 1


_NO_TORCH_GRAD = ("floor_", "round_", "floor_divide_")  # zero gradients, or none at all in PyTorch


@pytest.mark.parametrize("name,args,kw", [c for c in INPLACE if c[0] not in _NO_TORCH_GRAD],
                         ids=[f"{n}{i}" for i, (n, _, _) in enumerate(INPLACE) if n not in _NO_TORCH_GRAD])
def test_inplace_on_non_leaf_gradient_matches_torch(device, torch, name, args, kw):
    base = _arr(4, 3, lo=0.5, hi=2)
    args = _materialise(args)
    tensor_args = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    x = _t(base, device, requires_grad=True)
    xt = torch.tensor(base, requires_grad=True)
    margs = [_t(a, device, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args]
    targs = [torch.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args]
    y = x * 1.5
    yt = xt * 1.5
    getattr(y, name)(*margs, **kw)
    getattr(yt, name)(*targs, **kw)
    assert type(y.grad_fn).__name__ == type(yt.grad_fn).__name__
    g = _arr(4, 3)
    y.backward(_t(g, device))
    yt.backward(torch.tensor(g))
    _same(x.grad, xt.grad, rtol=1e-10, atol=1e-12)
    for i in tensor_args:
        _same(margs[i].grad, targs[i].grad, rtol=1e-10, atol=1e-12)


def test_inplace_result_type_and_shape_errors(device):
    xi = _t([1, 2, 3], device)
    for fn in (lambda: xi.add_(1.5), lambda: xi.div_(2), lambda: xi.mul_(_t([1.0, 2.0, 3.0], device)),
               lambda: xi.sqrt_(), lambda: xi.clamp_(0.5, 1.5)):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            fn()
        assert_close(xi, [1, 2, 3])
        assert xi._version == 0
    x = _t(np.ones(3), device)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        x.add_(_t(np.ones((2, 3)), device))
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast shape \[1, 3\]"):
        with mt.no_grad():
            x.mul_(_t(np.ones((1, 3)), device))
    assert_close(x, np.ones(3))
    b = _t([True, False], device)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        b.sub_(True)


def test_inplace_dunders(device, torch):
    a, b = _arr(2, 3), _arr(3)
    for op in ("+=", "-=", "*=", "/=", "**=", "//=", "%="):
        x, xt = _t(np.abs(a) + 0.5, device), torch.tensor(np.abs(a) + 0.5)
        y, yt = _t(np.abs(b) + 0.5, device), torch.tensor(np.abs(b) + 0.5)
        ident = id(x)
        exec(f"x {op} y", {}, env := {"x": x, "y": y})
        exec(f"xt {op} yt", {}, envt := {"xt": xt, "yt": yt})
        assert id(env["x"]) == ident
        _same(env["x"], envt["xt"], rtol=1e-12)
        exec(f"x {op} 2", {}, env)
        exec(f"xt {op} 2", {}, envt)
        _same(env["x"], envt["xt"], rtol=1e-12)


def test_inplace_on_view_writes_through_and_tracks_grad(device, torch):
    a = _arr(3, 4)
    x = _t(a, device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    y, yt = x * 1.0, xt * 1.0
    v, vt = y.t(), yt.t()
    v.mul_(2).add_(1.0)
    vt.mul_(2).add_(1.0)
    _same(y, yt)
    g = _arr(3, 4)
    y.backward(_t(g, device))
    yt.backward(torch.tensor(g))
    _same(x.grad, xt.grad)
    # without autograd, the direct path writes into the base's memory and bumps the shared version
    base = _t(np.zeros((2, 3)), device)
    view = base.t()
    view.add_(_t(np.ones((3, 2)), device))
    assert base._version == 1
    assert_close(base, np.ones((2, 3)))


def test_inplace_modification_of_saved_tensor_is_detected(device):
    x = _t(_arr(3), device, requires_grad=True)
    y = x.exp()
    z = y * 2.0
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()   # exp's backward needs its original output
    # ops save only what their needed gradients read: a * 2.0 keeps nothing, so this backward is fine
    a = _t(_arr(3), device, requires_grad=True)
    b = a * 1.0
    c = b * 2.0
    b.add_(1)
    c.sum().backward()
    assert_close(a.grad, np.full(3, 2.0))
    # w * u with only w requiring grad saves u (not w): modifying w afterwards is fine, modifying u is not
    w = _t(_arr(3), device, requires_grad=True)
    u = _t(_arr(3), device)
    wu = w * 1.0
    p = wu * u
    wu.add_(1)
    p.sum().backward()
    assert_close(w.grad, to_np(u))
    w2 = _t(_arr(3), device, requires_grad=True)
    p2 = w2 * u
    u.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        p2.sum().backward()


def test_optimizer_style_updates_without_grad(device, torch):
    p = _arr(5)
    g = _arr(5)
    m = _arr(5)
    x = _t(p, device, requires_grad=True)
    buf = _t(m, device)
    gt = _t(g, device)
    with mt.no_grad():
        x.add_(gt, alpha=-0.1)
        buf.mul_(0.9).add_(gt, alpha=0.1)
        buf.addcmul_(gt, gt, value=0.01)
        x.addcdiv_(buf, buf.abs() + 1.0, value=-0.5)
    pt, bt, gtt = torch.tensor(p), torch.tensor(m), torch.tensor(g)
    pt.add_(gtt, alpha=-0.1)
    bt.mul_(0.9).add_(gtt, alpha=0.1)
    bt.addcmul_(gtt, gtt, value=0.01)
    pt.addcdiv_(bt, bt.abs() + 1.0, value=-0.5)
    _same(x.detach(), pt, rtol=1e-12)
    _same(buf, bt, rtol=1e-12)
    assert x.grad_fn is None and x.requires_grad


# ====================================================================== out=, errors, misc

def test_out_argument(device, torch):
    a, b = _arr(2, 3), _arr(3)
    out = _t(np.empty((2, 3)), device)
    r = mt.add(_t(a, device), _t(b, device), out=out)
    assert r is out
    assert_close(out, a + b)
    # resized when the shape differs; results cast into a wider out dtype
    out2 = _t(np.empty(1), device)
    mt.mul(_t(a, device), 2, out=out2)
    assert out2.shape == (2, 3)
    assert_close(out2, a * 2)
    out3 = _t(np.empty((2, 3)), device, dtype=mt.float64)
    mt.sub(_t(a, device, dtype=mt.float32), 1, out=out3)
    assert out3.dtype is mt.float64
    for fn in (mt.div, mt.pow, mt.maximum, mt.atan2, mt.remainder, mt.fmod):
        o = _t(np.empty((2, 3)), device)
        fn(_t(np.abs(a) + 0.5, device), _t(np.abs(b) + 0.5, device), out=o)
        assert_close(o, to_np(fn(_t(np.abs(a) + 0.5, device), _t(np.abs(b) + 0.5, device))))
    o = _t(np.empty(3), device)
    mt.exp(_t(b, device), out=o)
    assert_close(o, np.exp(b))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        mt.div(_t([1, 2], device), 2, out=_t([0, 0], device))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        mt.mul(_t(a, device, requires_grad=True), 2.0, out=_t(np.empty((2, 3)), device))
    with mt.no_grad():
        mt.mul(_t(a, device, requires_grad=True), 2.0, out=out)


def test_shape_mismatch_names_both_shapes(device):
    x, y = _t(np.ones((3, 4)), device), _t(np.ones(5), device)
    for fn in (mt.add, mt.sub, mt.mul, mt.div, mt.pow, mt.maximum, mt.fmod, mt.remainder, mt.atan2, mt.eq,
               mt.lt, mt.logical_and, mt.floor_divide):
        with pytest.raises(RuntimeError, match=r"\[3, 4\].*\[5\]"):
            fn(x, y)
    with pytest.raises(RuntimeError, match=r"\[3, 4\].*\[5\]"):
        x + y
    with pytest.raises(RuntimeError, match=r"size of tensor a \(4\) must match the size of tensor b \(5\)"):
        x * y
    with pytest.raises(RuntimeError, match=r"\[3, 4\]"):
        mt.addcmul(x, x, _t(np.ones((2, 4)), device))
    with pytest.raises(RuntimeError, match=r"\[3, 4\]"):
        mt.lerp(x, _t(np.ones((2, 4)), device), 0.5)
    with pytest.raises(RuntimeError, match=r"\[3, 4\]"):
        mt.clamp(x, min=_t(np.ones(5), device))


def test_unsupported_operands(device):
    x = _t([1.0, 2.0], device)
    for expr in ("x + 'a'", "'a' * x", "x - [1]", "x / object()", "x ** 'b'", "x < 'a'", "x & 'a'"):
        with pytest.raises(TypeError):
            eval(expr, {"x": x})
    with pytest.raises(TypeError):
        mt.add(1, 2)
    with pytest.raises(TypeError, match="must be Tensor"):
        mt.maximum(x, 1.0)
    # the tensor-tensor rows name the argument and its position, as PyTorch does
    with pytest.raises(TypeError, match=r"atan2\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        mt.atan2(x, 2.0)
    with pytest.raises(TypeError, match=r"fmax\(\): argument 'input' \(position 1\) must be Tensor, not float"):
        mt.fmax(1.0, x)
    with pytest.raises(TypeError):
        mt.add(x, "a")
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors"):
        _t([True], device) - _t([False], device)


def test_grad_fn_names_match_torch(device, torch):
    a = _arr(3, lo=0.5, hi=2)
    exprs = ["x + y", "x + 2", "x - y", "x - 2", "2 - x", "x * y", "x * 2", "x / y", "x / 2", "2 / x", "x ** 2",
             "x ** y", "2 ** x", "-x", "x % y", "x % 2", "lib.fmod(x, y)", "lib.fmod(x, 2)", "x.square()",
             "lib.div(x, y, rounding_mode='floor')", "lib.div(x, 2, rounding_mode='trunc')", "x.clamp(0, 1)",
             "x.clamp(min=y)", "x.clamp_min(1)", "x.clamp_max(1)", "lib.maximum(x, y)", "lib.fmin(x, y)",
             "x.abs()", "x.exp()", "x.log1p()", "x.round()", "x.round(decimals=2)", "x.sigmoid()", "x.relu()",
             "lib.where(x > 1, x, y)", "lib.lerp(x, y, 0.5)", "lib.lerp(x, y, y)", "lib.addcmul(x, x, y)",
             "lib.atan2(x, y)", "x.rsqrt()", "x.erfinv()"]
    for expr in exprs:
        env = {"x": _t(a, device, requires_grad=True), "y": _t(a[::-1].copy(), device, requires_grad=True),
               "lib": mt}
        envt = {"x": torch.tensor(a, requires_grad=True), "y": torch.tensor(a[::-1].copy(), requires_grad=True),
                "lib": torch}
        assert eval(expr, env).grad_fn.name() == eval(expr, envt).grad_fn.name(), expr


def test_cpu_zero_dim_tensor_joins_other_device(device):
    x = _t([1.0, 2.0], device)
    s = mt.tensor(3.0)   # CPU 0-d
    y = x * s
    assert y.device == x.device
    assert_close(y, [3.0, 6.0])
    if device != "cpu":
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            x + mt.tensor([1.0, 2.0])


def test_float16_scalar_ops_compute_in_float32_like_torch(device, torch):
    a = np.array([1.0, 2049.0, 0.1, 65000.0, 3.3], np.float16)
    for expr in ("x * 1.0001", "x + 0.6", "x - 0.3", "x / 3.0", "x * 70000.0", "2 - x", "x ** 1.5"):
        _same(eval(expr, {"x": _t(a, device)}), eval(expr, {"x": torch.tensor(a)}), rtol=0, atol=0)


def test_bfloat16_ops(device, torch):
    _need_dtype(device, mt.bfloat16)
    a = np.array([1.5, -2.25, 3.0], np.float32)
    x = _t(a, device, dtype=mt.bfloat16)
    xt = torch.tensor(a, dtype=torch.bfloat16)
    for expr in ("x + 1.5", "x * x", "x.exp()", "x.sigmoid()", "x.tanh()", "x / 3", "x.relu()"):
        _same(eval(expr, {"x": x}), eval(expr, {"x": xt}), rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------------- special functions, nan_to_num

_GAMMA_SPECIALS = [0.0, -0.0, -1.0, -2.0, -2.5, -0.5, 1e-300, 1e-8, 1.0, 2.0, 0.5, 171.5, 1e17, np.inf, -np.inf,
                   np.nan]


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gamma_functions_over_the_real_line_match_torch(device, torch, name, dtype):
    """Poles, signed zeros, infinities, the reflection region and the asymptotic region."""
    a = np.concatenate([RNG.uniform(-12, 40, 300), _GAMMA_SPECIALS]).astype(dtype)
    with np.errstate(all="ignore"):
        # float32 near a pole of the negative axis is ill-conditioned: float and double evaluations part there
        tol = dict(rtol=1e-4, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
        expected = getattr(torch, name)(torch.tensor(a)).numpy()
        got = to_np(getattr(mt, name)(_t(a, device)))
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, equal_nan=True, **tol)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma_matches_torch(device, torch, n):
    a = np.concatenate([RNG.uniform(-6.5, 30, 200), [0.25, 1.0, 2.0, 0.0, 1e3, np.inf, np.nan]])
    a = np.where(np.abs(a - np.round(a)) < 1e-3, a + 0.1, a)  # keep away from the poles of the negative axis
    a[-5] = 0.0
    with np.errstate(all="ignore"):
        expected = torch.polygamma(n, torch.tensor(a)).numpy()
    got = mt.polygamma(n, _t(a, device))
    np.testing.assert_allclose(to_np(got), expected, rtol=1e-10, atol=1e-12, equal_nan=True)
    x = _t(a.astype(np.float32), device)
    assert x.polygamma(n).dtype is mt.float32
    y = x.clone()
    assert y.polygamma_(n) is y
    np.testing.assert_allclose(to_np(y), to_np(x.polygamma(n)))
    assert mt.polygamma(n, _t([1, 2], device)).dtype is mt.float32


def test_polygamma_errors(device):
    x = _t([1.0], device)
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n."):
        mt.polygamma(-1, x)
    with pytest.raises(TypeError, match="must be int"):
        mt.polygamma(1.5, x)


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_gamma_function_grads_match_torch(device, torch, name):
    a = np.array([-2.5, -0.3, 0.2, 1.0, 3.7, 25.0])
    x, xt = _t(a, device, requires_grad=True), torch.tensor(a, requires_grad=True)
    (gx,) = mt.autograd.grad(getattr(mt, name)(x).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad(getattr(torch, name)(xt).sum(), xt, create_graph=True)
    _same(gx, gt, rtol=1e-10, atol=1e-12)
    gx.sum().backward()
    gt.sum().backward()
    _same(x.grad, xt.grad, rtol=1e-9, atol=1e-10)


def test_polygamma_gradcheck(device):
    x = _t(np.array([0.3, 1.7, 4.0]), device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: mt.polygamma(2, t), (x,))
    assert mt.autograd.gradgradcheck(lambda t: mt.polygamma(1, t), (x,))
    assert mt.polygamma(2, x).grad_fn.name() == "PolygammaBackward0"


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2"])
def test_float_only_binary_ops_refuse_integers(device, torch, name):
    a = np.array([1, 2, 3])
    with pytest.raises(NotImplementedError) as theirs:
        getattr(torch, name)(torch.tensor(a), torch.tensor(a))
    with pytest.raises(NotImplementedError) as ours:
        getattr(mt, name)(_t(a, device), _t(a, device))
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        getattr(mt, name)(_t([1.0], device), 2.0)
    # one float operand makes the promoted dtype floating
    _same(getattr(mt, name)(_t([3.0], device), _t([4], device)),
          getattr(torch, name)(torch.tensor([3.0]), torch.tensor([4])))


def test_logaddexp_extremes(device, torch):
    a = np.array([np.inf, -np.inf, np.inf, 1e308, -1e308, 800.0, np.nan, 0.0])
    b = np.array([np.inf, -np.inf, -np.inf, 1e308, -1e308, 800.0, 1.0, -800.0])
    for name in ("logaddexp", "logaddexp2", "hypot"):
        _same(getattr(mt, name)(_t(a, device), _t(b, device)),
              getattr(torch, name)(torch.tensor(a), torch.tensor(b)), rtol=1e-14, atol=0)


def test_copysign_scalars_integers_and_inplace_follow_torch(device, torch):
    a = np.array([[1.5, -2.0, 0.0], [-0.0, 3.0, -4.5]], np.float32)
    for other in (-2, 2.5, -0.0, 0, True):
        x, xt = _t(a, device, requires_grad=True), torch.tensor(a, requires_grad=True)
        r, rt = mt.copysign(x, other), torch.copysign(xt, other)
        _same(r, rt)
        assert type(r.grad_fn).__name__ == type(rt.grad_fn).__name__
        r.sum().backward()
        rt.sum().backward()
        _same(x.grad, xt.grad)
    ints = np.array([1, -2, 3])
    _same(mt.copysign(_t(ints, device), _t(-ints, device)), torch.copysign(torch.tensor(ints), torch.tensor(-ints)))
    x, xt = _t(a, device), torch.tensor(a)
    assert x.copysign_(-1.0) is x
    _same(x, xt.copysign_(-1.0))
    with pytest.raises(TypeError, match="copysign"):
        mt.copysign(_t(a, device), "1")


def test_hypot_inplace(device, torch):
    a, b = _arr(3, 4), _arr(4)
    x = _t(a, device)
    assert x.hypot_(_t(b, device)) is x
    _same(x, torch.tensor(a).hypot_(torch.tensor(b)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_nan_to_num_matches_torch(device, torch, dtype):
    a = np.array([[np.nan, np.inf, -np.inf], [1.5, -0.0, 3.0]], dtype=dtype)
    for kw in ({}, {"nan": 1.0}, {"nan": 2.0, "posinf": 7, "neginf": -7.5}, {"posinf": 1e300}):
        with np.errstate(over="ignore"):
            _same(mt.nan_to_num(_t(a, device), **kw), torch.nan_to_num(torch.tensor(a), **kw))
        x = _t(a, device)
        assert x.nan_to_num_(**kw) is x
        _same(x, torch.tensor(a).nan_to_num_(**kw))
    ints = np.array([1, 2, 3])
    r = mt.nan_to_num(_t(ints, device))
    _same(r, torch.nan_to_num(torch.tensor(ints)))


def test_nan_to_num_gradient_flows_only_through_finite_values(device, torch):
    a = np.array([0.0, 1.0, np.inf, np.nan, -np.inf, -2.0])
    x, xt = _t(a, device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yt = mt.nan_to_num(x, nan=3.0), torch.nan_to_num(xt, nan=3.0)
    assert y.grad_fn.name() == yt.grad_fn.name()
    g = np.arange(6.0)
    y.backward(_t(g, device))
    yt.backward(torch.tensor(g))
    _same(x.grad, xt.grad)
    assert mt.autograd.gradcheck(mt.nan_to_num, (_t(_arr(5), device, requires_grad=True),))


# ---------------------------------------------------------------------- the tiny-op path without a node

@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv"])
def test_arithmetic_outside_autograd_matches_the_node_path(device, torch, op):
    """Outside autograd, + - * / skip the node (``_plain``): the same values, dtypes and errors as the node gives
    (as PyTorch's), history as soon as an operand requires grad, and every op still seen by the profiler."""
    fn = getattr(__import__("operator"), op)
    cases = [(_arr(3, 4), _arr(3, 4)), (_arr(4, 1, dtype=np.float32), _arr(1, 3, dtype=np.float32)),
             (_arr(2, 3), 2.5), (_arr(2, 3, dtype=np.float32), 3), (np.arange(6).reshape(2, 3), 4),
             (np.arange(6).reshape(2, 3), np.arange(6).reshape(2, 3) + 1), (_arr(2, 3, dtype=np.float32), -1e39)]
    for a, b in cases:
        tb = torch.tensor(b) if isinstance(b, np.ndarray) else b
        ours = fn(_t(a, device), _t(b, device) if isinstance(b, np.ndarray) else b)
        _same(ours, fn(torch.tensor(a), tb))
        assert ours.grad_fn is None and not ours.requires_grad
    with pytest.raises(RuntimeError, match="must match the size"):
        fn(_t(_arr(3), device), _t(_arr(4), device))
    x = _t(_arr(2, 3), device, requires_grad=True)
    y = fn(x, _t(_arr(2, 3), device))
    assert y.grad_fn is not None and fn(x[0], 2.0).grad_fn is not None
    with mt.no_grad():
        assert fn(x, 2.0).grad_fn is None
    with mt.profiler.profile() as prof:
        fn(_t(_arr(2), device), _t(_arr(2), device))
    assert any(e.key.startswith("aten::") for e in prof.key_averages())


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_outside_autograd_matches_the_node(device, torch, approximate):
    a = _arr(3, 5, dtype=np.float32)
    x = _t(a, device, requires_grad=True)
    with_node = E.gelu(x, approximate)
    with mt.no_grad():
        plain = E.gelu(x, approximate)
    assert with_node.grad_fn is not None and plain.grad_fn is None and not plain.requires_grad
    assert np.array_equal(to_np(plain), to_np(with_node))
    _same(plain, torch.nn.functional.gelu(torch.tensor(a), approximate=approximate))
    with mt.profiler.profile() as prof, mt.no_grad():
        E.gelu(x, approximate)
    assert any("gelu" in e.key for e in prof.key_averages())
