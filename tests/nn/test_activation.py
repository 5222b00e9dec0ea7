"""Activations of ``nn.functional`` and their modules: values and gradients against PyTorch (float32 and
float64), finite-difference gradcheck / gradgradcheck in float64, in-place forms, dtype and argument
errors, and module reprs."""
import warnings

import numpy as np
import pytest
from helpers import assert_close, to_np, torch_elementwise_reference

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F

RNG = np.random.default_rng(7)


def _arr(*shape, lo=-3.0, hi=3.0):
    a = RNG.uniform(lo, hi, size=shape)
    # keep samples away from the kinks (0, +-1, +-3, +-0.5 thresholds) where finite differences straddle
    for k in (0.0, 1.0, -1.0, 3.0, -3.0, 0.5, -0.5, 6.0):
        a = np.where(np.abs(a - k) < 0.06, k + 0.25, a)
    return a


# name, kwargs (same for both libraries)
ACTS = [
    ("relu", {}), ("relu6", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
    ("sigmoid", {}), ("tanh", {}), ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}),
    ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}), ("elu", {"alpha": 0.5}),
    ("selu", {}), ("celu", {}), ("celu", {"alpha": 2.0}), ("hardtanh", {}), ("hardtanh", {"min_val": -2.0,
                                                                                        "max_val": 0.5}),
    ("hardswish", {}), ("hardsigmoid", {}), ("softsign", {}), ("tanhshrink", {}), ("softshrink", {}),
    ("softshrink", {"lambd": 1.0}), ("hardshrink", {}), ("hardshrink", {"lambd": 1.0}), ("logsigmoid", {}),
    ("threshold", {"threshold": 0.5, "value": -2.0}), ("glu", {}), ("glu", {"dim": 0}),
    ("softmax", {"dim": 1}), ("log_softmax", {"dim": 0}), ("softmin", {"dim": -1}),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" if kw else n for n, kw in ACTS]


def _torch_fn(torch, name):
    return getattr(torch.nn.functional, name)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", ACTS, ids=IDS)
def test_matches_torch(device, torch, name, kw, dtype):
    a = _arr(4, 6).astype(dtype)
    g = RNG.standard_normal((4, 6)).astype(dtype)
    x = mt.tensor(a, device=device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    y = getattr(F, name)(x, **kw)
    yt = _torch_fn(torch, name)(xt, **kw)
    tol = 1e-12 if dtype == "float64" else 2e-6
    assert y.dtype == getattr(mt, dtype)
    assert_close(y, yt.detach().numpy(), rtol=tol * 10, atol=tol)
    y.backward(mt.tensor(g[:, :y.shape[1]][:y.shape[0]], device=device))
    yt.backward(torch.tensor(g[:, :yt.shape[1]][:yt.shape[0]]))
    assert_close(x.grad, xt.grad.numpy(), rtol=1e-5 if dtype == "float32" else 1e-7,
                 atol=1e-6 if dtype == "float32" else 1e-8)


# the piecewise activations whose kink tests PyTorch writes as "zero (or the other branch) where x <= bound":
# a NaN input fails the comparison, so its gradient passes through (and its value stays NaN)
PIECEWISE = [(n, kw) for n, kw in ACTS if n in ("relu", "relu6", "elu", "selu", "celu", "hardtanh", "softshrink",
                                                 "hardshrink", "threshold", "leaky_relu", "hardswish")]


@pytest.mark.parametrize("name,kw", PIECEWISE, ids=[n for n, _ in PIECEWISE])
def test_nan_and_bound_inputs_match_torch(device, torch, name, kw):
    a = np.array([np.nan, -np.inf, np.inf, -6.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0], np.float32)
    x = mt.tensor(a, device=device, requires_grad=True)
    y = getattr(F, name)(x, **kw)
    # PyTorch element by element: its CPU vector loops zero the gradient at NaN in their lanes (a whole 12-element
    # tensor passes it on AVX-512, whose 16 lanes it does not fill, and drops it for the first 8 on AVX2)
    want, (want_grad,) = torch_elementwise_reference(torch, lambda t: _torch_fn(torch, name)(t, **kw),
                                                     (tuple(a.tolist()),), "float32", 1.0)
    # a ulp apart where exp is evaluated; NaN where NaN, the same infinities
    np.testing.assert_allclose(to_np(y), want, rtol=1e-6, atol=0)
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), want_grad, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name,kw", ACTS, ids=IDS)
def test_gradcheck(device, name, kw):
    x = mt.tensor(_arr(4, 4), device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: getattr(F, name)(t, **kw), (x,))


@pytest.mark.parametrize("name,kw", [a for a in ACTS if a[0] in (
    "gelu", "silu", "mish", "softplus", "elu", "selu", "celu", "logsigmoid", "hardswish", "softsign", "tanhshrink",
    "glu", "softmax", "log_softmax")], ids=lambda v: str(v))
def test_gradgradcheck(device, name, kw):
    x = mt.tensor(_arr(2, 4), device=device, requires_grad=True)
    assert mt.autograd.gradgradcheck(lambda t: getattr(F, name)(t, **kw), (x,))


def test_gelu_second_derivative_matches_torch(device, torch):
    a = _arr(5)
    for approximate in ("none", "tanh"):
        x = mt.tensor(a, device=device, requires_grad=True)
        xt = torch.tensor(a, requires_grad=True)
        g, = mt.autograd.grad(F.gelu(x, approximate=approximate).sum(), x, create_graph=True)
        gt, = torch.autograd.grad(torch.nn.functional.gelu(xt, approximate=approximate).sum(), xt, create_graph=True)
        g.sum().backward()
        gt.sum().backward()
        assert_close(x.grad, xt.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_prelu_matches_torch(device, torch):
    a = _arr(3, 4, 5)
    for wa in (np.array([0.3]), RNG.uniform(0, 1, 4)):
        x = mt.tensor(a, device=device, requires_grad=True)
        w = mt.tensor(wa, device=device, requires_grad=True)
        xt, wt = torch.tensor(a, requires_grad=True), torch.tensor(wa, requires_grad=True)
        y, yt = F.prelu(x, w), torch.nn.functional.prelu(xt, wt)
        assert_close(y, yt.detach().numpy())
        y.sum().backward()
        yt.sum().backward()
        assert_close(x.grad, xt.grad.numpy())
        assert_close(w.grad, wt.grad.numpy())
        assert mt.autograd.gradcheck(F.prelu, (x.detach().requires_grad_(), w.detach().requires_grad_()))


def test_prelu_parameter_count_checked(device):
    with pytest.raises(RuntimeError, match="Found parameter numbers = 2 and channel size = 4"):
        F.prelu(mt.ones(3, 4, device=device), mt.ones(2, device=device))
    with pytest.raises(RuntimeError, match="channel size = 1"):
        F.prelu(mt.ones(3, device=device), mt.ones(3, device=device))


# ---------------------------------------------------------------------- in-place forms

INPLACE = [("relu", {}), ("relu6", {}), ("silu", {}), ("mish", {}), ("leaky_relu", {"negative_slope": 0.1}),
           ("elu", {}), ("selu", {}), ("celu", {"alpha": 1.5}), ("hardtanh", {}), ("hardswish", {}),
           ("hardsigmoid", {}), ("threshold", {"threshold": 0.2, "value": 5.0})]


@pytest.mark.parametrize("name,kw", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_forms(device, torch, name, kw):
    a = _arr(3, 5)
    x = mt.tensor(a, device=device)
    out = getattr(F, name)(x, inplace=True, **kw)
    assert out is x
    expected = _torch_fn(torch, name)(torch.tensor(a), **kw).numpy()
    assert_close(x, expected, rtol=1e-12, atol=1e-12)
    # through autograd: the in-place result on a non-leaf has the out-of-place gradient
    leaf = mt.tensor(a, device=device, requires_grad=True)
    leaf_t = torch.tensor(a, requires_grad=True)
    h = leaf * 1.0
    getattr(F, name)(h, inplace=True, **kw).sum().backward()
    _torch_fn(torch, name)(leaf_t * 1.0, inplace=True, **kw).sum().backward()
    assert_close(leaf.grad, leaf_t.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_underscore_aliases(device, torch):
    a = _arr(2, 3)
    for name in ("relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_"):
        x = mt.tensor(a, device=device)
        assert getattr(F, name)(x) is x
        assert_close(x, getattr(torch.nn.functional, name)(torch.tensor(a)).numpy(), rtol=1e-12, atol=1e-12)
    x = mt.tensor(a, device=device)
    assert F.threshold_(x, 0.1, 9.0) is x
    assert_close(x, torch.nn.functional.threshold_(torch.tensor(a), 0.1, 9.0).numpy())


def test_inplace_on_leaf_requiring_grad_refused(device):
    x = mt.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.relu(x, inplace=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.selu(x, inplace=True)


# ---------------------------------------------------------------------- dtypes and errors

@pytest.mark.parametrize("name,kernel", [("silu", "silu"), ("mish", "mish"), ("elu", "elu"),
                                         ("softplus", "softplus"), ("leaky_relu", "leaky_relu"),
                                         ("logsigmoid", "log_sigmoid"), ("selu", "elu"), ("hardswish", "hardswish")])
def test_integer_input_refused(device, name, kernel):
    x = mt.tensor([1, 2], device=device)
    with pytest.raises(NotImplementedError, match=f'"{kernel}_.*" not implemented for \'Long\''):
        getattr(F, name)(x)


def test_integer_inputs_that_work(device):
    x = mt.tensor([-2, 1, 9], device=device)
    assert F.relu(x).tolist() == [0, 1, 9] and F.relu(x).dtype == mt.int64
    assert F.relu6(x).tolist() == [0, 1, 6]
    assert F.sigmoid(x).dtype == mt.float32
    assert F.tanh(x).dtype == mt.float32


def test_gelu_approximate_checked(device):
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(mt.ones(2, device=device), approximate="foo")


def test_argument_errors(device):
    x = mt.ones(3, 3, device=device)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, alpha=0.0)
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 3.40282e\+38\] for input dtype Float, "
                                           r"but found -1"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(mt.tensor(1.0, device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.glu(mt.ones(2, 2, device=device), dim=2)


def test_errors_leave_input_unchanged(device):
    x = mt.tensor([[1.0, -2.0, 3.0]], device=device)
    before = to_np(x).copy()
    for call in (lambda: F.hardtanh(x, 2.0, 1.0, inplace=True), lambda: F.celu(x, 0.0, inplace=True)):
        with pytest.raises((ValueError, RuntimeError)):
            call()
        np.testing.assert_array_equal(to_np(x), before)


def test_softmax_implicit_dim_warns(device, torch):
    a = _arr(2, 3)
    x = mt.tensor(a, device=device)
    for name in ("softmax", "log_softmax", "softmin"):
        with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name} has been deprecated"):
            y = getattr(F, name)(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yt = getattr(torch.nn.functional, name)(torch.tensor(a))
        assert_close(y, yt.numpy(), rtol=1e-12, atol=1e-12)
    # the legacy choice: dim 0 for 0-, 1- and 3-dim inputs, else 1
    with pytest.warns(UserWarning):
        y3 = F.softmax(mt.ones(2, 3, 4, device=device))
    assert_close(y3.sum(0), np.ones((3, 4)))


def test_softmax_dtype_argument(device, torch):
    a = _arr(2, 3).astype(np.float32)
    y = F.softmax(mt.tensor(a, device=device), dim=1, dtype=mt.float64)
    assert y.dtype == mt.float64
    assert_close(y, torch.nn.functional.softmax(torch.tensor(a), 1, dtype=torch.float64).numpy(), rtol=1e-12)
    assert F.log_softmax(mt.tensor(a, device=device), 0, dtype=mt.float64).dtype == mt.float64


def test_logsigmoid_is_stable_for_large_inputs(device):
    x = mt.tensor([-800.0, -40.0, 0.0, 40.0, 800.0], device=device, dtype=mt.float64)
    y = F.logsigmoid(x)
    np.testing.assert_allclose(to_np(y), [-800.0, -40.0, -np.log(2.0), -np.exp(-40.0), 0.0], rtol=1e-12)


def test_half_precision(device, torch):
    a = _arr(3, 4).astype(np.float16)
    for name in ("gelu", "silu", "relu", "mish", "logsigmoid", "hardswish"):
        y = getattr(F, name)(mt.tensor(a, device=device))
        assert y.dtype == mt.float16
        expected = getattr(torch.nn.functional, name)(torch.tensor(a.astype(np.float32))).numpy()
        assert_close(y, expected, rtol=3e-3, atol=3e-3)


# ---------------------------------------------------------------------- modules

MODULES = [
    ("ReLU()", None), ("ReLU(inplace=True)", None), ("ReLU6()", None), ("GELU()", None), ("GELU('tanh')", None),
    ("SiLU()", None), ("Mish()", None), ("Sigmoid()", None), ("Tanh()", None), ("Softplus(2, 10)", None),
    ("LeakyReLU(0.2)", None), ("ELU(0.5)", None), ("CELU(1.5)", None), ("SELU()", None),
    ("Hardtanh(-2, 2)", None), ("Hardswish()", None), ("Hardsigmoid()", None), ("Softsign()", None),
    ("Tanhshrink()", None), ("Softshrink(0.3)", None), ("Hardshrink(0.3)", None), ("LogSigmoid()", None),
    ("Threshold(0.1, 20.0)", None), ("GLU()", None), ("GLU(0)", None), ("Softmax(1)", None),
    ("LogSoftmax(dim=-1)", None), ("Softmin(0)", None), ("Softmax2d()", None),
]


@pytest.mark.parametrize("spec", [m for m, _ in MODULES])
def test_module_matches_torch(device, torch, spec):
    m = eval("mt.nn." + spec)
    mt_ = eval("torch.nn." + spec)
    assert repr(m) == repr(mt_)
    a = _arr(2, 4, 3, 2)
    x = mt.tensor(a, device=device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    inplace = getattr(m, "inplace", False)
    y = m(x * 1.0 if inplace else x)
    yt = mt_(xt * 1.0 if inplace else xt)
    assert_close(y, yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    y.sum().backward()
    yt.sum().backward()
    assert_close(x.grad, xt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_prelu_module(device, torch):
    m = mt.nn.PReLU(3, 0.1).to(device)
    mt_ = torch.nn.PReLU(3, 0.1)
    assert repr(m) == repr(mt_) == "PReLU(num_parameters=3)"
    assert [n for n, _ in m.named_parameters()] == ["weight"]
    np.testing.assert_allclose(to_np(m.weight), [0.1, 0.1, 0.1], rtol=1e-6)
    with mt.no_grad():
        m.weight.copy_(mt.tensor([0.1, 0.2, 0.3]))
    with torch.no_grad():
        mt_.weight.copy_(torch.tensor([0.1, 0.2, 0.3]))
    a = _arr(2, 3, 4).astype(np.float32)
    x = mt.tensor(a, device=device)
    m(x).sum().backward()
    mt_(torch.tensor(a)).sum().backward()
    assert_close(m.weight.grad, mt_.weight.grad.numpy(), rtol=1e-5)
    assert mt.nn.PReLU(dtype=mt.float64).weight.dtype == mt.float64


def test_module_reprs_with_options(torch):
    for spec in ("Hardtanh()", "Hardtanh(-2.0, 2.0, True)", "ReLU6(True)", "SiLU(inplace=True)", "Mish(True)",
                 "ELU(alpha=0.5, inplace=True)", "LeakyReLU(0.2, True)", "SELU(True)", "Hardswish(True)",
                 "Hardsigmoid(True)", "CELU(2.0, True)",
                 "Threshold(0.1, 20, True)", "Softmax()", "Softplus()", "GELU(approximate='none')", "PReLU()",
                 "CELU()", "Softshrink()", "Hardshrink()", "Softmax2d()"):
        assert repr(eval("mt.nn." + spec)) == repr(eval("torch.nn." + spec)), spec


def test_softmax2d_checks_dims(device):
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        mt.nn.Softmax2d()(mt.ones(2, 3, device=device))


def test_hardtanh_module_requires_max_above_min():
    with pytest.raises(AssertionError):
        mt.nn.Hardtanh(1.0, 1.0)


def test_module_softmax_without_dim_warns(device):
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = mt.nn.Softmax()(mt.ones(2, 3, device=device))
    assert_close(y.sum(1), np.ones(2))


# ---------------------------------------------------------------------- RReLU and the module path

def test_rrelu_eval_is_leaky_relu_with_the_mean_slope(device, torch):
    a = _arr(5, 4)
    for kw in ({}, {"lower": 0.1, "upper": 0.5}):
        x, xt = mt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
        y, yt = F.rrelu(x, **kw), torch.nn.functional.rrelu(xt, **kw)
        assert_close(y, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
        y.sum().backward()
        yt.sum().backward()
        assert_close(x.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)
        m, mt_ = mt.nn.RReLU(**kw).eval(), torch.nn.RReLU(**kw).eval()
        assert_close(m(mt.tensor(a, device=device)), mt_(torch.tensor(a)).numpy(), rtol=1e-12, atol=1e-12)


def test_rrelu_training_draws_one_slope_per_element(device):
    a = _arr(200, 50)
    x = mt.tensor(a, device=device, requires_grad=True)
    mt.manual_seed(0)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.backward(mt.ones_like(y))
    yv, gv = y.detach().cpu().numpy(), x.grad.cpu().numpy()
    pos = a > 0
    np.testing.assert_array_equal(yv[pos], a[pos])
    np.testing.assert_array_equal(gv[pos], 1.0)
    slopes = yv[~pos] / a[~pos]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.04  # spread over the interval
    np.testing.assert_allclose(gv[~pos], slopes, rtol=1e-12)  # the gradient sees the same slope
    mt.manual_seed(0)
    np.testing.assert_array_equal(F.rrelu(x, 0.1, 0.3, training=True).detach().cpu().numpy(), yv)  # seeded
    m = mt.nn.RReLU(0.1, 0.3)
    assert m.training and (m(x).detach().cpu().numpy() != a * 0.2)[~pos].any()


def test_rrelu_inplace_and_errors(device, torch):
    a = _arr(3, 4)
    x = mt.tensor(a, device=device)
    assert F.rrelu_(x, training=True) is x and (x.cpu().numpy()[a > 0] == a[a > 0]).all()
    m = mt.nn.RReLU(inplace=True)
    assert repr(m) == repr(torch.nn.RReLU(inplace=True)) and repr(mt.nn.RReLU()) == repr(torch.nn.RReLU())
    for training in (True, False):
        with pytest.raises(RuntimeError) as theirs:
            torch.nn.functional.rrelu(torch.zeros(2), 0.5, 0.1, training=training)
        with pytest.raises(RuntimeError, match=f"^{theirs.value}$"):
            F.rrelu(mt.zeros(2, device=device), 0.5, 0.1, training=training)
    with pytest.raises(NotImplementedError):
        F.rrelu(mt.zeros(2, dtype=mt.int64, device=device))


def test_every_activation_module_of_torch_is_importable_from_its_path(torch):
    import minitorch_gpu.nn.modules.activation as ours
    for name in torch.nn.modules.activation.__all__:
        assert getattr(ours, name) is getattr(mt.nn, name), name
    assert set(torch.nn.modules.activation.__all__) <= set(ours.__all__)
    from minitorch_gpu.nn.modules.linear import NonDynamicallyQuantizableLinear
    from torch.nn.modules.linear import NonDynamicallyQuantizableLinear as Theirs
    assert issubclass(NonDynamicallyQuantizableLinear, mt.nn.Linear) and issubclass(Theirs, torch.nn.Linear)
    assert type(mt.nn.MultiheadAttention(4, 2).out_proj) is NonDynamicallyQuantizableLinear
