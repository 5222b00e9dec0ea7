"""torch.distributions: log_prob, entropy, moments and kl_divergence (values and gradients) against PyTorch's, on
every device in float32 and float64; samples checked statistically (ours come from our generators); the
reparameterised Gamma gradient against PyTorch's; argument and sample validation with PyTorch's messages."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu import distributions as D
from minitorch_gpu.distributions.gamma import _standard_gamma_grad

RNG = np.random.default_rng(0)
TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-10)}


def _pos(*shape):
    return RNG.uniform(0.5, 3.0, size=shape)


def _probs(*shape):
    p = RNG.uniform(0.1, 1.0, size=shape)
    return p / p.sum(-1, keepdims=True)


def _spd(k):
    a = RNG.standard_normal((k, k))
    return a @ a.T + k * np.eye(k)


# name: (class name, parameter arrays (keyword -> array), a function of the library giving values in the support)
CASES = {
    "normal": ("Normal", dict(loc=RNG.standard_normal(3), scale=_pos(3)), lambda: RNG.standard_normal((4, 3))),
    "uniform": ("Uniform", dict(low=np.array([-1.0, 0.0, 2.0]), high=np.array([1.0, 0.5, 5.0])),
                lambda: np.array([[0.0, 0.25, 3.0], [0.5, 0.1, 4.9]])),
    "bernoulli_probs": ("Bernoulli", dict(probs=np.array([0.1, 0.5, 0.9])), lambda: RNG.integers(0, 2, (4, 3))),
    "bernoulli_logits": ("Bernoulli", dict(logits=RNG.standard_normal(3)), lambda: RNG.integers(0, 2, (4, 3))),
    "categorical_probs": ("Categorical", dict(probs=_probs(2, 4)), lambda: RNG.integers(0, 4, (3, 2))),
    "categorical_logits": ("Categorical", dict(logits=RNG.standard_normal((2, 4))), lambda: RNG.integers(0, 4, (3, 2))),
    "gamma": ("Gamma", dict(concentration=_pos(3), rate=_pos(3)), lambda: _pos(4, 3)),
    "beta": ("Beta", dict(concentration1=_pos(3), concentration0=_pos(3)), lambda: RNG.uniform(0.05, 0.95, (4, 3))),
    "mvn_cov": ("MultivariateNormal", dict(loc=RNG.standard_normal((2, 3)), covariance_matrix=_spd(3)),
                lambda: RNG.standard_normal((4, 2, 3))),
    "mvn_tril": ("MultivariateNormal", dict(loc=RNG.standard_normal(3), scale_tril=np.linalg.cholesky(_spd(3))),
                 lambda: RNG.standard_normal((4, 3))),
    "mvn_precision": ("MultivariateNormal", dict(loc=RNG.standard_normal(3), precision_matrix=_spd(3)),
                      lambda: RNG.standard_normal((4, 3))),
}


def _make(lib, name, dtype, device, grad=False):
    cls_name, params, _ = CASES[name]
    kw = {}
    for k, v in params.items():
        if lib is mt:
            kw[k] = mt.tensor(v, dtype=getattr(mt, dtype), device=device, requires_grad=grad)
        else:
            kw[k] = lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=grad)
    return getattr(lib.distributions, cls_name)(**kw), kw


def _value(lib, name, arr, dtype, device):
    is_int = CASES[name][0] == "Categorical"
    if lib is mt:
        return mt.tensor(arr, dtype=mt.int64 if is_int else getattr(mt, dtype), device=device)
    return lib.tensor(arr, dtype=lib.int64 if is_int else getattr(lib, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_like_torch(device, torch, name, dtype):
    ours, our_params = _make(mt, name, dtype, device, grad=True)
    theirs, their_params = _make(torch, name, dtype, device, grad=True)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample
    value = CASES[name][2]()
    lp_m = ours.log_prob(_value(mt, name, value, dtype, device))
    lp_t = theirs.log_prob(_value(torch, name, value, dtype, device))
    outs = [(lp_m, lp_t), (ours.entropy(), theirs.entropy())]
    if CASES[name][0] != "Categorical":
        outs += [(ours.mean, theirs.mean), (ours.variance, theirs.variance), (ours.stddev, theirs.stddev)]
    loss_m = loss_t = 0
    for m, t in outs:
        assert_close(m, t.detach().numpy(), **TOL[dtype])
        w = RNG.standard_normal(tuple(t.shape))
        loss_m = loss_m + (m * mt.tensor(w, dtype=m.dtype, device=device)).sum()
        loss_t = loss_t + (t * torch.tensor(w, dtype=t.dtype)).sum()
    loss_m.backward()
    loss_t.backward()
    for k in our_params:
        assert_close(our_params[k].grad, their_params[k].grad.numpy(), rtol=TOL[dtype]["rtol"] * 50,
                     atol=TOL[dtype]["atol"] * 50)
    # expand: the same values over a larger batch
    big = (5,) + tuple(ours.batch_shape)
    e_m, e_t = ours.expand(big), theirs.expand(big)
    assert tuple(e_m.batch_shape) == tuple(e_t.batch_shape)
    assert_close(e_m.entropy(), e_t.entropy().detach().numpy(), **TOL[dtype])


KL_PAIRS = [("normal", "normal"), ("uniform", "uniform"), ("bernoulli_probs", "bernoulli_logits"),
            ("categorical_probs", "categorical_logits"), ("gamma", "gamma"), ("beta", "beta"),
            ("mvn_cov", "mvn_tril"), ("mvn_precision", "mvn_cov"), ("uniform", "normal"), ("beta", "normal"),
            ("gamma", "normal"), ("beta", "gamma"), ("uniform", "gamma"), ("uniform", "beta"), ("beta", "uniform"),
            ("gamma", "beta"), ("gamma", "uniform"), ("normal", "beta"), ("normal", "gamma"), ("normal", "uniform")]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pair", KL_PAIRS, ids=lambda p: "-".join(p))
def test_kl_divergence_like_torch(device, torch, pair, dtype):
    (p_m, pm), (q_m, qm) = (_make(mt, n, dtype, device, grad=True) for n in pair)
    (p_t, pt), (q_t, qt) = (_make(torch, n, dtype, device, grad=True) for n in pair)
    if pair == ("uniform", "beta"):
        # a uniform inside [0, 1] has a finite KL to a beta
        p_m, p_t = D.Uniform(pm["low"] * 0 + 0.2, pm["high"] * 0 + 0.7), torch.distributions.Uniform(
            pt["low"] * 0 + 0.2, pt["high"] * 0 + 0.7)
    if pair == ("beta", "uniform"):
        q_m, q_t = D.Uniform(qm["low"].clamp(max=0), qm["high"].clamp(min=1)), torch.distributions.Uniform(
            qt["low"].clamp(max=0), qt["high"].clamp(min=1))
    kl_m, kl_t = D.kl_divergence(p_m, q_m), torch.distributions.kl_divergence(p_t, q_t)
    assert_close(kl_m, kl_t.detach().numpy(), **TOL[dtype])
    if bool(mt.isfinite(kl_m).all()):
        w = RNG.standard_normal(tuple(kl_t.shape))
        (kl_m * mt.tensor(w, dtype=kl_m.dtype, device=device)).sum().backward()
        (kl_t * torch.tensor(w, dtype=kl_t.dtype)).sum().backward()
        for ours, theirs in [(pm, pt), (qm, qt)]:
            for k in ours:
                if theirs[k].grad is not None:
                    assert_close(ours[k].grad, theirs[k].grad.numpy(), rtol=TOL[dtype]["rtol"] * 100,
                                 atol=TOL[dtype]["atol"] * 100)


# ---------------------------------------------------------------------- samples

SAMPLING = {  # a distribution and its mean and variance per batch entry
    "normal": lambda dev: (D.Normal(mt.tensor([0.0, 3.0], device=dev), mt.tensor([1.0, 0.5], device=dev)),
                           [0.0, 3.0], [1.0, 0.25]),
    "uniform": lambda dev: (D.Uniform(mt.tensor([0.0, -2.0], device=dev), mt.tensor([1.0, 4.0], device=dev)),
                            [0.5, 1.0], [1 / 12, 3.0]),
    "bernoulli": lambda dev: (D.Bernoulli(probs=mt.tensor([0.2, 0.7], device=dev)), [0.2, 0.7], [0.16, 0.21]),
    "categorical": lambda dev: (D.Categorical(probs=mt.tensor([0.2, 0.3, 0.5], device=dev)), [1.3], [0.61]),
    "gamma": lambda dev: (D.Gamma(mt.tensor([0.3, 2.0, 40.0], device=dev), mt.tensor([1.0, 2.0, 0.5], device=dev)),
                          [0.3, 1.0, 80.0], [0.3, 0.5, 160.0]),
    "beta": lambda dev: (D.Beta(mt.tensor([0.5, 2.0], device=dev), mt.tensor([0.5, 5.0], device=dev)),
                         [0.5, 2 / 7], [0.125, 10 / (49 * 8)]),
    "mvn": lambda dev: (D.MultivariateNormal(mt.tensor([1.0, -1.0], device=dev),
                                             mt.tensor([[2.0, 0.5], [0.5, 1.0]], device=dev)), [1.0, -1.0],
                        [2.0, 1.0]),
}


@pytest.mark.parametrize("name", sorted(SAMPLING))
def test_sample_moments(device, name):
    dist, mean, var = SAMPLING[name](device)
    n = 5000 if name == "mvn" else 20000  # the simulated GPU multiplies matrices slowly
    mt.manual_seed(0)
    x = dist.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    v = to_np(x).astype(np.float64)
    mean, var = np.array(mean), np.array(var)
    # five standard errors of the mean, and of the variance (its sampling sd is about var * sqrt(2 / n) for
    # light tails; the skewed gamma and beta get some more room)
    assert np.all(np.abs(v.mean(0) - mean) < 5 * np.sqrt(var / n)), (v.mean(0), mean)
    assert np.all(np.abs(v.var(0) - var) < 12 * var * np.sqrt(2 / n)), (v.var(0), var)
    mt.manual_seed(0)
    assert_close(dist.sample((n,)), to_np(x), rtol=0, atol=0)  # the seed fixes the draw
    if dist.has_rsample:
        mt.manual_seed(0)
        assert dist.rsample((3,)).shape == x[:3].shape


def test_mvn_sample_covariance(device):
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    for kw in [dict(covariance_matrix=cov), dict(scale_tril=np.linalg.cholesky(cov)),
               dict(precision_matrix=np.linalg.inv(cov))]:
        d = D.MultivariateNormal(mt.zeros(2, dtype=mt.float64, device=device),
                                 **{k: mt.tensor(v, device=device) for k, v in kw.items()})
        assert_close(d.covariance_matrix, cov, rtol=1e-10, atol=1e-12)
        x = to_np(d.sample((5000,)))
        assert np.abs(np.cov(x.T) - cov).max() < 0.15


def test_reparameterised_gradients(device, torch):
    # the implicit gradient of a standard gamma sample, against PyTorch's approximation of it
    a = np.array([0.1, 0.3, 0.3, 1.0, 1.0, 5.0, 5.0, 50.0, 50.0, 500.0])
    x = np.array([1e-3, 0.01, 2.0, 0.5, 3.0, 2.0, 9.0, 45.0, 60.0, 520.0])
    ours = _standard_gamma_grad(mt.tensor(a, device=device), mt.tensor(x, device=device))
    assert_close(ours, torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy(), rtol=5e-4, atol=1e-6)
    # Monte Carlo: d/da E[X] = 1 / rate for Gamma(a, rate); d/da E[X] = b / (a + b)^2 for Beta(a, b)
    mt.manual_seed(0)
    conc = mt.tensor([0.5, 3.0], dtype=mt.float64, device=device, requires_grad=True)
    D.Gamma(conc, mt.tensor(2.0, dtype=mt.float64, device=device)).rsample((20000,)).mean(0).sum().backward()
    assert_close(conc.grad, [0.5, 0.5], rtol=0.05, atol=0)
    a1 = mt.tensor(2.0, dtype=mt.float64, device=device, requires_grad=True)
    b1 = mt.tensor(3.0, dtype=mt.float64, device=device, requires_grad=True)
    D.Beta(a1, b1).rsample((20000,)).mean().backward()
    assert_close(a1.grad, 3 / 25, rtol=0.05, atol=0)
    assert_close(b1.grad, -2 / 25, rtol=0.05, atol=0)
    loc = mt.tensor([1.0], device=device, requires_grad=True)
    D.Normal(loc, 2.0).rsample((10,)).sum().backward()
    assert_close(loc.grad, [10.0])
    with pytest.raises(NotImplementedError):
        D.Bernoulli(probs=mt.tensor(0.5)).rsample()


# ---------------------------------------------------------------------- validation

def test_validation_like_torch(torch):
    def both(fn):
        with pytest.raises(Exception) as t_err:
            fn(torch)
        with pytest.raises(Exception) as m_err:
            fn(mt)
        assert type(m_err.value) is type(t_err.value)
        assert str(m_err.value) == str(t_err.value).replace("torch.", "minitorch_gpu.")

    both(lambda L: L.distributions.Normal(L.tensor([0.0, 1.0]), L.tensor([1.0, -1.0])))
    both(lambda L: L.distributions.Normal(L.tensor(0.0), L.tensor(1.0)).log_prob(L.tensor([1.0, float("nan")])))
    both(lambda L: L.distributions.Gamma(L.tensor([1.0]), L.tensor([1.0])).log_prob(L.tensor([-1.0])))
    both(lambda L: L.distributions.Bernoulli(probs=L.tensor([0.5, 1.5])))
    both(lambda L: L.distributions.Bernoulli(probs=L.tensor(0.5), logits=L.tensor(0.0)))
    both(lambda L: L.distributions.Bernoulli(probs=L.tensor(0.5)).log_prob(L.tensor(0.5)))
    both(lambda L: L.distributions.Categorical(probs=L.tensor([0.5, 0.5])).log_prob(L.tensor(2)))
    both(lambda L: L.distributions.Uniform(L.tensor(1.0), L.tensor(0.0)))
    both(lambda L: L.distributions.Beta(L.tensor(1.0), L.tensor(1.0)).log_prob(L.tensor(1.5)))
    both(lambda L: L.distributions.Normal(L.zeros(3), L.ones(3)).log_prob(L.zeros(2)))
    both(lambda L: L.distributions.MultivariateNormal(L.zeros(2)))
    both(lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.tensor([[1.0, 2.0], [2.0, 1.0]])))
    both(lambda L: L.distributions.MultivariateNormal(L.zeros(2), scale_tril=L.ones(2)))
    both(lambda L: L.distributions.kl_divergence(L.distributions.Categorical(logits=L.zeros(2)),
                                                 L.distributions.Normal(0.0, 1.0)))
    # validate_args=False skips the checks
    d = D.Normal(mt.tensor(0.0), mt.tensor(-1.0), validate_args=False)
    assert math.isnan(d.log_prob(mt.tensor(0.0)).item())
    assert repr(D.Normal(mt.tensor(0.0), mt.tensor(1.0))) == "Normal(loc: 0.0, scale: 1.0)"


def test_register_kl_dispatches_to_the_closest_pair():
    class MyNormal(D.Normal):
        pass

    assert_close(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)), 0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return p.loc * 0 + 42.0

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 42.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 0.5
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)
