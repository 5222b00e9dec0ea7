"""Every optimizer, over a grid of hyperparameters and on each of its three implementations, follows PyTorch's
trajectory: 50 steps of a small two-layer model from the same weights on the same batches end at the same
parameters. The comparison with PyTorch runs in float64, to 1e-9 relative: in float32 the two libraries' BLAS
round the gradients differently on different CPUs, and over 50 steps that rounding alone reaches 1e-5 (RMSprop
with momentum 0.9 on some CPUs), while a real difference in an update rule shows at far more than 1e-9.
Saving the state mid-run and loading it into a fresh optimizer continues the same trajectory."""
import copy

import numpy as np
import pytest

import minitorch_gpu as mt

PATHS = {"single": dict(foreach=False), "foreach": dict(foreach=True), "fused": dict(fused=True)}
N_STEPS = 50


def _data(dtype, seed=0):
    rng = np.random.default_rng(seed)
    weights = [(rng.standard_normal((6, 4)) * 0.5).astype(dtype),
               (rng.standard_normal((3, 6)) * 0.5).astype(dtype),
               (rng.standard_normal(6) * 0.1).astype(dtype)]
    batches = [(rng.standard_normal((8, 4)).astype(dtype), rng.standard_normal((8, 3)).astype(dtype))
               for _ in range(N_STEPS)]
    return weights, batches


WEIGHTS, BATCHES = _data(np.float64)
WEIGHTS32, BATCHES32 = _data(np.float32)
TOL = dict(rtol=1e-9, atol=1e-11)


def _loss(lib, ps, x, t, sign):
    """The same expression in both libraries: mse of a tanh layer followed by a linear one."""
    w1, w2, b = ps
    h = (lib.tensor(x) @ w1.t() + b).tanh()
    d = h @ w2.t() - lib.tensor(t)
    return (d * d).mean() * sign


def _train(lib, opt_cls, kwargs, steps=range(N_STEPS), params=None, opt=None, groups=False,
           data=(WEIGHTS, BATCHES)):
    weights, batches = data
    ps = params or [lib.tensor(w.copy(), requires_grad=True) for w in weights]
    if opt is None:
        spec = [{"params": ps[:2]}, {"params": ps[2:], "lr": kwargs.get("lr", 1e-3) * 0.5}] if groups else ps
        opt = opt_cls(spec, **kwargs)
    # maximizing the negated loss is the same descent as minimizing the loss, so it stays well conditioned
    sign = -1.0 if kwargs.get("maximize") else 1.0
    for k in steps:
        x, t = batches[k]
        opt.zero_grad()
        _loss(lib, ps, x, t, sign).backward()
        opt.step()
    return ps, opt


def _np(ps):
    return [p.detach().numpy().copy() for p in ps]


CONFIGS = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.5, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.05, maximize=True)),
    ("SGD", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=1e-2, eps=1e-3, maximize=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=1e-2, betas=(0.5, 0.9), weight_decay=0.1, maximize=True)),
    ("RMSprop", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, momentum=0.9)),
    ("RMSprop", dict(lr=1e-2, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=5e-3, alpha=0.9, momentum=0.5, centered=True, maximize=True)),
    ("RMSprop", dict(lr=1e-2, weight_decay=0.05, maximize=True, eps=1e-4)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
]


def _ids(c):
    return c[0] + "-" + ",".join(f"{k}={v}" for k, v in c[1].items())


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=[_ids(c) for c in CONFIGS])
def test_trajectory_matches_torch(torch, name, kwargs):
    torch.set_num_threads(1)
    expected = _np(_train(torch, getattr(torch.optim, name), kwargs)[0])
    for path, flags in list(PATHS.items()) + [("default", {})]:
        got = _np(_train(mt, getattr(mt.optim, name), {**kwargs, **flags})[0])
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, **TOL, err_msg=f"{name} {kwargs} path={path}")


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.05, momentum=0.9)), ("Adam", dict(lr=1e-2)),
                                         ("AdamW", dict(lr=1e-2, amsgrad=True)),
                                         ("RMSprop", dict(lr=1e-2, centered=True, momentum=0.5)),
                                         ("Adagrad", dict(lr=0.1, lr_decay=0.01))])
def test_two_param_groups_match_torch(torch, name, kwargs):
    torch.set_num_threads(1)
    expected = _np(_train(torch, getattr(torch.optim, name), kwargs, groups=True)[0])
    for path, flags in PATHS.items():
        got = _np(_train(mt, getattr(mt.optim, name), {**kwargs, **flags}, groups=True)[0])
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, **TOL, err_msg=f"{name} path={path}")


RESUME = [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)), ("Adam", dict(lr=1e-2, amsgrad=True)),
          ("AdamW", dict(lr=1e-2, weight_decay=0.1)), ("RMSprop", dict(lr=1e-2, momentum=0.5, centered=True)),
          ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Lion", dict(lr=1e-3, weight_decay=0.1))]


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("name,kwargs", RESUME, ids=[c[0] for c in RESUME])
def test_state_dict_resume_continues_trajectory(name, kwargs, path):
    cls = getattr(mt.optim, name)
    kw = {**kwargs, **PATHS[path]}
    full = _np(_train(mt, cls, kw)[0])

    ps, opt = _train(mt, cls, kw, steps=range(25))
    saved = copy.deepcopy(opt.state_dict())
    saved_params = _np(ps)
    fresh = [mt.tensor(w, requires_grad=True) for w in saved_params]
    opt2 = cls(fresh, **kw)
    opt2.load_state_dict(saved)
    resumed = _np(_train(mt, cls, kw, steps=range(25, N_STEPS), params=fresh, opt=opt2)[0])
    for r, f in zip(resumed, full):
        np.testing.assert_array_equal(r, f)


@pytest.mark.parametrize("name,kwargs", RESUME[:5], ids=[c[0] for c in RESUME[:5]])
def test_state_saved_by_one_path_resumes_on_another(torch, name, kwargs):
    torch.set_num_threads(1)
    expected = _np(_train(torch, getattr(torch.optim, name), kwargs)[0])
    cls = getattr(mt.optim, name)
    ps, opt = _train(mt, cls, {**kwargs, "fused": True}, steps=range(25))
    saved = copy.deepcopy(opt.state_dict())
    fresh = [mt.tensor(w, requires_grad=True) for w in _np(ps)]
    opt2 = cls(fresh, **{**kwargs, "foreach": False})
    opt2.load_state_dict(saved)
    # the loaded group keeps the saved flags; switch implementation the way a user would
    for g in opt2.param_groups:
        g["fused"], g["foreach"] = None, False
    got = _np(_train(mt, cls, kwargs, steps=range(25, N_STEPS), params=fresh, opt=opt2)[0])
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **TOL)


def _lion_numpy(weights, grads_fn, lr, b1, b2, wd, maximize):
    """The published Lion update, step by step in float32 NumPy."""
    ps = [w.copy() for w in weights]
    ms = [np.zeros_like(w) for w in weights]
    for k in range(N_STEPS):
        gs = grads_fn(ps, k)
        for p, m, g in zip(ps, ms, gs):
            g = -g if maximize else g
            c = m * np.float32(b1) + g * np.float32(1 - b1)
            p *= np.float32(1 - lr * wd)
            p += np.sign(c) * np.float32(-lr)
            m *= np.float32(b2)
            m += g * np.float32(1 - b2)
    return ps


@pytest.mark.parametrize("kwargs", [dict(lr=1e-3), dict(lr=3e-3, betas=(0.95, 0.98), weight_decay=0.5),
                                    dict(lr=1e-3, weight_decay=0.1, maximize=True)])
def test_lion_matches_published_update(kwargs):
    def grads_fn(ps_np, k):
        ps = [mt.tensor(p, requires_grad=True) for p in ps_np]
        x, t = BATCHES32[k]
        _loss(mt, ps, x, t, -1.0 if kwargs.get("maximize") else 1.0).backward()
        return [p.grad.numpy() for p in ps]

    b1, b2 = kwargs.get("betas", (0.9, 0.99))
    expected = _lion_numpy(WEIGHTS32, grads_fn, kwargs["lr"], b1, b2, kwargs.get("weight_decay", 0),
                           kwargs.get("maximize", False))
    for path, flags in PATHS.items():
        got = _np(_train(mt, mt.optim.Lion, {**kwargs, **flags}, data=(WEIGHTS32, BATCHES32))[0])
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6, err_msg=f"path={path}")


# ---------------------------------------------------------------------------------------------- without a fused path
# Adadelta, Adamax, NAdam, RAdam and ASGD have a reference loop and a foreach implementation (as in PyTorch); the
# default is foreach. Both follow PyTorch's reference loop (its default on the CPU).
UNFUSED_PATHS = {"single": dict(foreach=False), "foreach": dict(foreach=True), "default": {}}
UNFUSED_CONFIGS = [
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.05, maximize=True)),
    ("Adamax", dict(lr=1e-2)),
    ("Adamax", dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1)),
    ("Adamax", dict(lr=1e-2, eps=1e-3, weight_decay=0.05, maximize=True)),
    ("NAdam", dict(lr=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, momentum_decay=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=1e-2, betas=(0.8, 0.9), weight_decay=0.05, maximize=True)),
    ("RAdam", dict(lr=1e-2)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    # beta2 = 0.9 leaves the intractable phase after 5 steps: both kinds of step in one run
    ("RAdam", dict(lr=1e-2, betas=(0.9, 0.9), eps=1e-4)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, t0=10, lambd=1e-2, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=5, alpha=0.5, weight_decay=0.1, maximize=True)),
]


def _state_np(opt, params):
    """Every state entry of every parameter, as NumPy arrays, in parameter order."""
    return [{k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v) for k, v in opt.state[p].items()}
            for p in params]


@pytest.mark.parametrize("name,kwargs", UNFUSED_CONFIGS, ids=[_ids(c) for c in UNFUSED_CONFIGS])
def test_unfused_trajectory_and_state_match_torch(torch, name, kwargs):
    torch.set_num_threads(1)
    tps, topt = _train(torch, getattr(torch.optim, name), kwargs)
    expected, expected_state = _np(tps), _state_np(topt, tps)
    for path, flags in UNFUSED_PATHS.items():
        ps, opt = _train(mt, getattr(mt.optim, name), {**kwargs, **flags})
        for g, e in zip(_np(ps), expected):
            np.testing.assert_allclose(g, e, **TOL, err_msg=f"{name} {kwargs} path={path}")
        for got, want in zip(_state_np(opt, ps), expected_state):
            assert sorted(got) == sorted(want)
            for key in want:
                assert got[key].dtype == want[key].dtype, key
                np.testing.assert_allclose(got[key], want[key], **TOL, err_msg=f"{name} state {key} path={path}")


@pytest.mark.parametrize("name,kwargs", UNFUSED_CONFIGS[::3], ids=[_ids(c) for c in UNFUSED_CONFIGS[::3]])
def test_unfused_two_param_groups_match_torch(torch, name, kwargs):
    torch.set_num_threads(1)
    expected = _np(_train(torch, getattr(torch.optim, name), kwargs, groups=True)[0])
    for path, flags in UNFUSED_PATHS.items():
        got = _np(_train(mt, getattr(mt.optim, name), {**kwargs, **flags}, groups=True)[0])
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, **TOL, err_msg=f"{name} path={path}")


UNFUSED_RESUME = [("Adadelta", dict(weight_decay=0.1)), ("Adamax", dict(lr=1e-2)),
                  ("NAdam", dict(lr=1e-2, decoupled_weight_decay=True, weight_decay=0.1)),
                  ("RAdam", dict(lr=1e-2, betas=(0.9, 0.9))), ("ASGD", dict(lr=0.05, t0=10))]


def _resumed(lib, name, kwargs):
    """Half a run, its state_dict (deep-copied) loaded into a fresh optimizer over fresh parameters, the other
    half. Loading casts floating state to the parameters' dtype in both libraries (ASGD's eta and mu, NAdam's
    mu_product become float64 here), so a resumed run is compared with a resumed run."""
    cls = getattr(lib.optim, name)
    ps, opt = _train(lib, cls, kwargs, steps=range(25))
    saved = copy.deepcopy(opt.state_dict())
    fresh = [lib.tensor(w, requires_grad=True) for w in _np(ps)]
    opt2 = cls(fresh, **kwargs)
    opt2.load_state_dict(saved)
    ps2, opt2 = _train(lib, cls, kwargs, steps=range(25, N_STEPS), params=fresh, opt=opt2)
    return _np(ps2), _state_np(opt2, ps2)


@pytest.mark.parametrize("path", ["single", "foreach"])
@pytest.mark.parametrize("name,kwargs", UNFUSED_RESUME, ids=[c[0] for c in UNFUSED_RESUME])
def test_unfused_state_dict_resumes_like_torch(torch, name, kwargs, path):
    torch.set_num_threads(1)
    expected, expected_state = _resumed(torch, name, kwargs)
    got, got_state = _resumed(mt, name, {**kwargs, **UNFUSED_PATHS[path]})
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **TOL)
    for g, e in zip(got_state, expected_state):
        assert sorted(g) == sorted(e)
        for key in e:
            assert g[key].dtype == e[key].dtype, key
            np.testing.assert_allclose(g[key], e[key], **TOL, err_msg=key)


@pytest.mark.parametrize("name,kwargs", UNFUSED_RESUME, ids=[c[0] for c in UNFUSED_RESUME])
def test_unfused_state_dict_loads_torchs(torch, name, kwargs):
    """A state_dict made by PyTorch's optimizer (its tensors converted) continues PyTorch's trajectory here."""
    torch.set_num_threads(1)
    expected = _np(_train(torch, getattr(torch.optim, name), kwargs)[0])
    tps, topt = _train(torch, getattr(torch.optim, name), kwargs, steps=range(25))
    tsd = topt.state_dict()
    sd = {"param_groups": copy.deepcopy(tsd["param_groups"]),
          "state": {k: {n: mt.tensor(v.numpy()) if hasattr(v, "numpy") else v for n, v in s.items()}
                    for k, s in tsd["state"].items()}}
    cls = getattr(mt.optim, name)
    fresh = [mt.tensor(p.detach().numpy(), requires_grad=True) for p in tps]
    opt = cls(fresh, **kwargs)
    opt.load_state_dict(sd)
    got = _np(_train(mt, cls, kwargs, steps=range(25, N_STEPS), params=fresh, opt=opt)[0])
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **TOL)
