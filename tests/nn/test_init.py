"""nn.init: gains and fans against PyTorch's, the distributions each initialiser draws from (bounds and
moments on large tensors, the truncated normal's CDF), deterministic fills against PyTorch, generators,
autograd neutrality and the error types and messages."""
import math
import warnings

import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import assert_close, to_np
from minitorch_gpu.nn import init

NONLINEARITIES = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]


def _gen(device, seed=0):
    return mt.Generator(device).manual_seed(seed)


def _phi(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def _pdf(x):
    return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


# ---------------------------------------------------------------------------------------------- gains

@pytest.mark.parametrize("nl", NONLINEARITIES)
def test_calculate_gain_matches_torch(nl, torch):
    ours, theirs = init.calculate_gain(nl), torch.nn.init.calculate_gain(nl)
    assert ours == theirs and type(ours) is type(theirs)


@pytest.mark.parametrize("param", [0.2, 0, 3, 1.5, -0.1])
def test_calculate_gain_leaky_relu_param(param, torch):
    assert init.calculate_gain("leaky_relu", param) == torch.nn.init.calculate_gain("leaky_relu", param)
    assert init.calculate_gain("leaky_relu", param) == pytest.approx(math.sqrt(2 / (1 + param ** 2)))


@pytest.mark.parametrize("nl,param", [("softmax", None), ("ReLU", None), ("leaky_relu", True),
                                      ("leaky_relu", "0.1"), ("leaky_relu", [0.1])])
def test_calculate_gain_errors(nl, param, torch):
    with pytest.raises(ValueError) as ours:
        init.calculate_gain(nl, param)
    with pytest.raises(ValueError) as theirs:
        torch.nn.init.calculate_gain(nl, param)
    assert str(ours.value) == str(theirs.value)


# ----------------------------------------------------------------------------------------------- fans

@pytest.mark.parametrize("shape", [(3, 5), (4, 2, 3), (8, 4, 3, 3), (2, 6, 1, 2, 5), (5, 0), (0, 3, 2)])
def test_fans_match_torch(shape, torch):
    t = mt.empty(*shape)
    assert init._calculate_fan_in_and_fan_out(t) == torch.nn.init._calculate_fan_in_and_fan_out(
        torch.empty(*shape))
    for mode in ("fan_in", "fan_out", "FAN_IN"):
        assert init._calculate_correct_fan(t, mode) == torch.nn.init._calculate_correct_fan(torch.empty(*shape),
                                                                                              mode)


@pytest.mark.parametrize("shape", [(), (7,)])
def test_fans_need_two_dims(shape, torch):
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "
                                         "dimensions"):
        init._calculate_fan_in_and_fan_out(mt.empty(*shape))
    for fn in (init.xavier_uniform_, init.xavier_normal_, init.kaiming_uniform_, init.kaiming_normal_):
        with pytest.raises(ValueError, match="fewer than 2 dimensions"):
            fn(mt.empty(*shape))


def test_bad_mode(torch):
    with pytest.raises(ValueError) as ours:
        init.kaiming_uniform_(mt.empty(3, 4), mode="fan_avg")
    with pytest.raises(ValueError) as theirs:
        torch.nn.init.kaiming_uniform_(torch.empty(3, 4), mode="fan_avg")
    assert str(ours.value) == str(theirs.value)


# ------------------------------------------------------------------------------------- distributions

def _check_uniform(t, lo, hi):
    a = to_np(t).astype(np.float64).ravel()
    assert a.min() >= lo and a.max() <= hi
    width = hi - lo
    # the extremes of 100k+ samples come within 1% of the ends, and the moments match U(lo, hi)
    assert a.min() < lo + 0.01 * width and a.max() > hi - 0.01 * width
    assert abs(a.mean() - (lo + hi) / 2) < 0.01 * width
    assert a.std() == pytest.approx(width / math.sqrt(12), rel=0.01)


def _check_normal(t, mean, std):
    a = to_np(t).astype(np.float64).ravel()
    assert abs(a.mean() - mean) < 0.02 * std
    assert a.std() == pytest.approx(std, rel=0.015)


def test_uniform_and_normal(device):
    t = mt.empty(400, 300, device=device)
    assert init.uniform_(t, -2.0, 3.0) is t
    _check_uniform(t, -2.0, 3.0)
    assert init.normal_(t, 1.5, 0.25) is t
    _check_normal(t, 1.5, 0.25)
    init.uniform_(t)
    _check_uniform(t, 0.0, 1.0)


@pytest.mark.parametrize("shape", [(512, 256), (64, 32, 3, 3), (256, 128, 5)])
@pytest.mark.parametrize("gain", [1.0, 0.5, 5.0 / 3])
def test_xavier(shape, gain, device, torch):
    t = mt.empty(*shape, device=device)
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    assert init.xavier_uniform_(t, gain=gain) is t
    _check_uniform(t, -math.sqrt(3) * std, math.sqrt(3) * std)
    assert init.xavier_normal_(t, gain) is t
    _check_normal(t, 0.0, std)


@pytest.mark.parametrize("shape", [(512, 256), (64, 32, 3, 3)])
@pytest.mark.parametrize("a,mode,nl", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                                       (0, "fan_out", "relu"), (0.2, "fan_out", "leaky_relu"),
                                       (0, "fan_in", "tanh")])
def test_kaiming(shape, a, mode, nl, device, torch):
    t = mt.empty(*shape, device=device)
    fan = torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode)
    std = torch.nn.init.calculate_gain(nl, a) / math.sqrt(fan)
    assert init.kaiming_uniform_(t, a=a, mode=mode, nonlinearity=nl) is t
    _check_uniform(t, -math.sqrt(3) * std, math.sqrt(3) * std)
    assert init.kaiming_normal_(t, a, mode, nl) is t
    _check_normal(t, 0.0, std)


def test_linear_default_init_bounds(device):
    # Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w = mt.empty(300, 400, device=device)
    init.kaiming_uniform_(w, a=math.sqrt(5))
    _check_uniform(w, -1 / math.sqrt(400), 1 / math.sqrt(400))


@pytest.mark.parametrize("fn", [init.kaiming_uniform_, init.kaiming_normal_])
def test_kaiming_zero_element_warns(fn, device):
    t = mt.empty(0, 3, device=device)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert fn(t) is t


def _trunc_moments(mean, std, a, b):
    al, be = (a - mean) / std, (b - mean) / std
    z = _phi(be) - _phi(al)
    d = (_pdf(al) - _pdf(be)) / z
    var = 1 + (al * _pdf(al) - be * _pdf(be)) / z - d * d
    return mean + std * d, std * math.sqrt(var)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 3.0), (0.0, 1.0, 1.0, 4.0),
                                          (0.0, 0.02, -2.0, 2.0), (-1.0, 0.5, -1.2, -0.1),
                                          (0.0, 1.0, -6.0, -3.0)])
@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
def test_trunc_normal_distribution(mean, std, a, b, device):
    t = mt.empty(200_000, device=device)
    assert init.trunc_normal_(t, mean, std, a, b, generator=_gen(device)) is t
    x = np.sort(to_np(t).astype(np.float64))
    assert x[0] >= a and x[-1] <= b
    m, s = _trunc_moments(mean, std, a, b)
    assert abs(x.mean() - m) < 0.01 * s
    assert x.std() == pytest.approx(s, rel=0.01)
    # the empirical CDF against the truncated normal's (a Kolmogorov-Smirnov distance on a grid)
    lo, hi = max(a, mean - 5 * std), min(b, mean + 5 * std)
    z = _phi((b - mean) / std) - _phi((a - mean) / std)
    grid = np.linspace(lo, hi, 41)
    emp = np.searchsorted(x, grid, side="right") / x.size
    theo = np.array([(_phi((g - mean) / std) - _phi((a - mean) / std)) / z for g in grid])
    assert np.abs(emp - theo).max() < 0.006


@pytest.mark.parametrize("dtype", [mt.float16, mt.float64])
def test_trunc_normal_dtypes(dtype, device):
    t = mt.empty(50_000, dtype=dtype, device=device)
    init.trunc_normal_(t, 0.0, 1.0, -1.5, 1.5)
    assert t.dtype is dtype
    x = to_np(t).astype(np.float64)
    assert x.min() >= -1.5 and x.max() <= 1.5
    m, s = _trunc_moments(0.0, 1.0, -1.5, 1.5)
    assert x.std() == pytest.approx(s, rel=0.02)


def test_trunc_normal_warns_when_mean_far_from_interval(device):
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(mt.empty(10, device=device), mean=5.0, std=1.0, a=-1.0, b=1.0)


def test_trunc_normal_empty(device):
    t = mt.empty(0, 4, device=device)
    assert init.trunc_normal_(t) is t


# ------------------------------------------------------------------------------------ deterministic fills

@pytest.mark.parametrize("dtype", [mt.float32, mt.float64, mt.int64])
def test_constant_zeros_ones(dtype, device):
    t = mt.empty(3, 4, dtype=dtype, device=device)
    assert init.constant_(t, 7) is t
    assert t.dtype is dtype
    assert (to_np(t) == 7).all()
    assert init.zeros_(t) is t and (to_np(t) == 0).all()
    assert init.ones_(t) is t and (to_np(t) == 1).all()


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2)])
def test_eye(shape, device, torch):
    t = mt.empty(*shape, device=device)
    assert init.eye_(t) is t
    assert_close(t, torch.nn.init.eye_(torch.empty(*shape)))


@pytest.mark.parametrize("shape", [(3,), (2, 2, 2)])
def test_eye_needs_2d(shape, device):
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(mt.empty(*shape, device=device))


@pytest.mark.parametrize("shape,groups", [((4, 3, 5), 1), ((6, 3, 3, 3), 2), ((4, 4, 3, 2, 5), 2),
                                          ((3, 5, 4, 4), 1), ((6, 2, 3), 3)])
def test_dirac(shape, groups, device, torch):
    t = mt.randn(*shape, device=device)
    assert init.dirac_(t, groups) is t
    assert_close(t, torch.nn.init.dirac_(torch.empty(*shape), groups))


def test_dirac_errors(device, torch):
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(mt.empty(3, 3, device=device))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(mt.empty(5, 3, 3, device=device), groups=2)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (4, 3, 2, 2), (3, 10, 3)])
@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
def test_orthogonal(shape, dtype, device):
    t = mt.empty(*shape, dtype=dtype, device=device)
    gain = 1.7
    assert init.orthogonal_(t, gain=gain, generator=_gen(device)) is t
    assert t.dtype is dtype
    q = to_np(t).astype(np.float64).reshape(shape[0], -1) / gain
    rows, cols = q.shape
    gram = q.T @ q if rows >= cols else q @ q.T
    tol = 1e-5 if dtype is mt.float32 else 1e-12
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=tol)


def test_orthogonal_is_random_and_reproducible(device):
    a, b, c = (mt.empty(8, 8, device=device) for _ in range(3))
    init.orthogonal_(a, generator=_gen(device, 3))
    init.orthogonal_(b, generator=_gen(device, 3))
    init.orthogonal_(c, generator=_gen(device, 4))
    assert (to_np(a) == to_np(b)).all()
    assert not np.allclose(to_np(a), to_np(c))
    # the sign fix makes Q Haar-distributed: the diagonal is not biased to one sign
    diag = np.concatenate([np.diag(to_np(init.orthogonal_(mt.empty(16, 16, device=device))))
                           for _ in range(20)])
    assert 0.3 < (diag > 0).mean() < 0.7


def test_orthogonal_errors_and_empty(device):
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(mt.empty(4, device=device))
    t = mt.empty(0, 3, device=device)
    assert init.orthogonal_(t) is t


@pytest.mark.parametrize("sparsity", [0.1, 0.5, 0.9, 0.0])
def test_sparse(sparsity, device):
    rows, cols = 20, 30
    t = mt.empty(rows, cols, device=device)
    assert init.sparse_(t, sparsity, std=0.5, generator=_gen(device)) is t
    a = to_np(t)
    zeros_per_col = (a == 0).sum(axis=0)
    assert (zeros_per_col == math.ceil(sparsity * rows)).all()
    nz = a[a != 0]
    assert nz.std() == pytest.approx(0.5, rel=0.2)


def test_sparse_needs_2d(device):
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(mt.empty(2, 3, 4, device=device), 0.5)


# ----------------------------------------------------------------------------------------- generators

SAMPLERS = [
    lambda t, g: init.uniform_(t, -1, 1, generator=g),
    lambda t, g: init.normal_(t, 0, 2, generator=g),
    lambda t, g: init.trunc_normal_(t, generator=g),
    lambda t, g: init.xavier_uniform_(t, generator=g),
    lambda t, g: init.xavier_normal_(t, generator=g),
    lambda t, g: init.kaiming_uniform_(t, generator=g),
    lambda t, g: init.kaiming_normal_(t, generator=g),
    lambda t, g: init.orthogonal_(t, generator=g),
    lambda t, g: init.sparse_(t, 0.3, generator=g),
]


@pytest.mark.parametrize("k", range(len(SAMPLERS)))
def test_generator_reproducible(k, device):
    fn = SAMPLERS[k]
    a, b, c = (mt.empty(16, 12, device=device) for _ in range(3))
    fn(a, _gen(device, 11))
    fn(b, _gen(device, 11))
    fn(c, _gen(device, 12))
    assert (to_np(a) == to_np(b)).all()
    assert not (to_np(a) == to_np(c)).all()


def test_generator_leaves_default_stream_alone(device):
    mt.manual_seed(5)
    expected = to_np(mt.rand(4, device=device))
    mt.manual_seed(5)
    init.kaiming_uniform_(mt.empty(8, 8, device=device), generator=_gen(device, 1))
    assert (to_np(mt.rand(4, device=device)) == expected).all()


# ------------------------------------------------------------------------------------------- autograd

ALL_INITS = SAMPLERS + [
    lambda t, g: init.constant_(t, 0.3),
    lambda t, g: init.zeros_(t),
    lambda t, g: init.ones_(t),
    lambda t, g: init.eye_(t),
]


@pytest.mark.parametrize("k", range(len(ALL_INITS)))
def test_init_on_leaf_that_requires_grad(k, device):
    p = mt.zeros(6, 5, device=device, requires_grad=True)
    before = p._version
    out = ALL_INITS[k](p, None)
    assert out is p
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p._version > before  # an in-place write, seen by autograd's saved-tensor checks
    (p * 2).sum().backward()
    assert_close(p.grad, np.full((6, 5), 2.0))


def test_init_on_parameter(device):
    w = mt.nn.Parameter(mt.empty(10, 20, device=device))
    init.kaiming_uniform_(w, a=math.sqrt(5))
    assert isinstance(w, mt.nn.Parameter) and w.requires_grad
    assert np.abs(to_np(w)).max() <= 1 / math.sqrt(20)


def test_dirac_on_leaf_that_requires_grad(device):
    p = mt.zeros(4, 4, 3, device=device, requires_grad=True)
    init.dirac_(p)
    assert p.is_leaf and p.requires_grad
    assert to_np(p).sum() == 4


# -------------------------------------------------------------------------------------- deprecated names

@pytest.mark.parametrize("old,new", [("uniform", "uniform_"), ("normal", "normal_"), ("constant", "constant_"),
                                     ("xavier_uniform", "xavier_uniform_"), ("kaiming_normal", "kaiming_normal_"),
                                     ("orthogonal", "orthogonal_"), ("eye", "eye_")])
def test_deprecated_aliases(old, new):
    t = mt.empty(4, 4)
    args = (0.5,) if old == "constant" else ()
    with pytest.warns(FutureWarning, match=f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new}`"):
        assert getattr(init, old)(t, *args) is t


def test_no_warning_for_ordinary_use():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.xavier_uniform_(mt.empty(3, 4))
        init.trunc_normal_(mt.empty(3, 4), std=0.02)
