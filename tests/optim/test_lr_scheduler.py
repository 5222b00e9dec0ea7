"""Every scheduler produces PyTorch's sequence of learning rates (and momenta), float for float, and resumes
from its state_dict onto the same sequence."""
import copy
import math
import warnings

import pytest

import minitorch_gpu as mt

N = 60


def _optimizer(lib, kind):
    ps = [lib.zeros(2, requires_grad=True) for _ in range(2)]
    groups = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}]
    if kind == "adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def _run(opt, sched, steps, metrics=None):
    seq = []
    for k in steps:
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[k])
        seq.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], _momenta(opt)))
    return seq


PLATEAU_METRICS = [1.0 / (1 + k) if k < 10 else 0.1 + 0.001 * (k % 3) for k in range(N)]

SCHEDULERS = {
    "LambdaLR": ("sgd", lambda ls, o: ls.LambdaLR(o, lr_lambda=lambda e: 0.97 ** e)),
    "LambdaLR-per-group": ("sgd", lambda ls, o: ls.LambdaLR(o, [lambda e: 1.0 / (1 + e), lambda e: 0.9 ** e])),
    "MultiplicativeLR": ("sgd", lambda ls, o: ls.MultiplicativeLR(o, lr_lambda=lambda e: 0.95)),
    "StepLR": ("sgd", lambda ls, o: ls.StepLR(o, step_size=7, gamma=0.5)),
    "MultiStepLR": ("sgd", lambda ls, o: ls.MultiStepLR(o, milestones=[5, 12, 12, 30], gamma=0.3)),
    "ExponentialLR": ("sgd", lambda ls, o: ls.ExponentialLR(o, gamma=0.93)),
    "CosineAnnealingLR": ("sgd", lambda ls, o: ls.CosineAnnealingLR(o, T_max=17, eta_min=1e-3)),
    "CosineAnnealingLR-restart": ("sgd", lambda ls, o: ls.CosineAnnealingLR(o, T_max=10)),
    "LinearLR": ("sgd", lambda ls, o: ls.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=13)),
    "ConstantLR": ("sgd", lambda ls, o: ls.ConstantLR(o, factor=0.25, total_iters=9)),
    "PolynomialLR": ("sgd", lambda ls, o: ls.PolynomialLR(o, total_iters=40, power=2.0)),
    "OneCycleLR": ("sgd", lambda ls, o: ls.OneCycleLR(o, max_lr=1.0, total_steps=N)),
    "OneCycleLR-three-phase-linear": ("sgd", lambda ls, o: ls.OneCycleLR(
        o, max_lr=[0.5, 2.0], epochs=6, steps_per_epoch=10, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, div_factor=10.0, final_div_factor=100.0)),
    "OneCycleLR-adam": ("adam", lambda ls, o: ls.OneCycleLR(o, max_lr=0.3, total_steps=N, base_momentum=0.8,
                                                            max_momentum=0.9)),
    "OneCycleLR-no-momentum": ("sgd", lambda ls, o: ls.OneCycleLR(o, max_lr=0.3, total_steps=N,
                                                                  cycle_momentum=False)),
    "CyclicLR": ("sgd", lambda ls, o: ls.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, step_size_down=8,
                                                  mode="triangular2")),
    "CyclicLR-exp-range": ("adam", lambda ls, o: ls.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=4,
                                                             mode="exp_range", gamma=0.98)),
    "CosineAnnealingWarmRestarts": ("sgd", lambda ls, o: ls.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2,
                                                                                        eta_min=0.001)),
    "SequentialLR": ("sgd", lambda ls, o: ls.SequentialLR(
        o, [ls.LinearLR(o, start_factor=0.1, total_iters=8), ls.CosineAnnealingLR(o, T_max=20),
            ls.ExponentialLR(o, gamma=0.9)], milestones=[8, 30])),
    "ChainedScheduler": ("sgd", lambda ls, o: ls.ChainedScheduler(
        [ls.ConstantLR(o, factor=0.5, total_iters=4), ls.ExponentialLR(o, gamma=0.95)])),
    "ReduceLROnPlateau": ("sgd", lambda ls, o: ls.ReduceLROnPlateau(o, patience=2, factor=0.5, cooldown=1,
                                                                    min_lr=[0.0, 0.01])),
    "ReduceLROnPlateau-max-abs": ("sgd", lambda ls, o: ls.ReduceLROnPlateau(o, mode="max", patience=1,
                                                                            threshold=0.01, threshold_mode="abs")),
}


def _metrics(name):
    if not name.startswith("ReduceLROnPlateau"):
        return None
    if "max" in name:
        return [-m for m in PLATEAU_METRICS]
    return PLATEAU_METRICS


def _build(lib, name):
    kind, make = SCHEDULERS[name]
    opt = _optimizer(lib, kind)
    return opt, make(lib.optim.lr_scheduler, opt)


@pytest.fixture
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_sequence_matches_torch(torch, quiet, name):
    metrics = _metrics(name)
    topt, tsched = _build(torch, name)
    opt, sched = _build(mt, name)
    assert sched.get_last_lr() == tsched.get_last_lr()
    assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in topt.param_groups]
    assert _run(opt, sched, range(N), metrics) == _run(topt, tsched, range(N), metrics)


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_state_dict_round_trip(torch, quiet, name):
    metrics = _metrics(name)
    topt, tsched = _build(torch, name)
    expected = _run(topt, tsched, range(N), metrics)

    opt, sched = _build(mt, name)
    first = _run(opt, sched, range(N // 2), metrics)
    sched_sd = copy.deepcopy(sched.state_dict())
    opt_sd = copy.deepcopy(opt.state_dict())
    tkeys = set(_build(torch, name)[1].state_dict())
    assert set(sched.state_dict()) == tkeys

    opt2, sched2 = _build(mt, name)
    opt2.load_state_dict(opt_sd)
    sched2.load_state_dict(sched_sd)
    rest = _run(opt2, sched2, range(N // 2, N), metrics)
    assert first + rest == expected


def test_closed_form_with_explicit_epoch(torch):
    seqs = []
    for lib in (torch, mt):
        opt = _optimizer(lib, "sgd")
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        seq = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for e in (4, 9, 2):
                opt.step()
                sched.step(e)
                seq.append(sched.get_last_lr())
        assert any("The epoch parameter in `scheduler.step()` was not necessary" in str(x.message) for x in w)
        seqs.append(seq)
    assert seqs[0] == seqs[1]


def test_step_order_warning():
    opt = _optimizer(mt, "sgd")
    sched = mt.optim.lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = _optimizer(mt, "sgd")
    sched2 = mt.optim.lr_scheduler.StepLR(opt2, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt2.step()
        sched2.step()


def test_get_lr_outside_step_warns():
    opt = _optimizer(mt, "sgd")
    sched = mt.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_errors_match_torch(torch):
    cases = [
        lambda ls, o: ls.ConstantLR(o, factor=1.5),
        lambda ls, o: ls.LinearLR(o, start_factor=0.0),
        lambda ls, o: ls.LinearLR(o, end_factor=2.0),
        lambda ls, o: ls.LambdaLR(o, [lambda e: 1.0]),
        lambda ls, o: ls.MultiplicativeLR(o, 3),
        lambda ls, o: ls.OneCycleLR(o, max_lr=0.1),
        lambda ls, o: ls.OneCycleLR(o, max_lr=0.1, total_steps=0),
        lambda ls, o: ls.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1),
        lambda ls, o: ls.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"),
        lambda ls, o: ls.OneCycleLR(o, max_lr=[0.1], total_steps=10),
        lambda ls, o: ls.ReduceLROnPlateau(o, factor=1.0),
        lambda ls, o: ls.ReduceLROnPlateau(o, mode="mid"),
        lambda ls, o: ls.ReduceLROnPlateau(o, min_lr=[0.1]),
        lambda ls, o: ls.SequentialLR(o, [ls.StepLR(o, 2)], milestones=[3]),
        lambda ls, o: ls.SequentialLR(o, [], milestones=[]),
        lambda ls, o: ls.CosineAnnealingWarmRestarts(o, T_0=0),
        lambda ls, o: ls.StepLR(o, 2, last_epoch=3),
        lambda ls, o: ls.StepLR(object(), 2),
    ]
    for case in cases:
        results = []
        for lib in (torch, mt):
            with pytest.raises(Exception) as info:
                case(lib.optim.lr_scheduler, _optimizer(lib, "sgd"))
            results.append((type(info.value), str(info.value)))
        assert results[0] == results[1]


def test_onecycle_too_many_steps():
    opt = _optimizer(mt, "sgd")
    sched = mt.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        sched.step()


def test_cosine_follows_closed_form_when_alone():
    opt = _optimizer(mt, "sgd")
    sched = mt.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    for e in range(1, 11):
        opt.step()
        sched.step()
        assert math.isclose(sched.get_last_lr()[0], 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * e / 10)) / 2,
                            rel_tol=1e-12)


def test_scheduler_changes_the_step_size_of_the_optimizer():
    p = mt.tensor([1.0], requires_grad=True)
    opt = mt.optim.SGD([p], lr=1.0)
    sched = mt.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    values = []
    for _ in range(3):
        p.grad = mt.tensor([1.0])
        opt.step()
        sched.step()
        values.append(float(p.detach()))
    assert values == [0.0, -0.5, -0.75]


# the optimizers without a fused path drive (and are driven by) schedulers as PyTorch's do: a schedule that
# cycles momentum reaches their betas, and the rates it sets are the ones their steps use
UNFUSED = [("Adadelta", dict(), "CosineAnnealingLR"), ("Adamax", dict(lr=0.01), "OneCycleLR"),
           ("NAdam", dict(lr=0.01, decoupled_weight_decay=True, weight_decay=0.1), "OneCycleLR"),
           ("RAdam", dict(lr=0.01), "CyclicLR"), ("ASGD", dict(lr=0.05, t0=5), "StepLR"),
           ("LBFGS", dict(lr=0.5, max_iter=2), "ExponentialLR")]


def _unfused_schedule(lib, opt, kind):
    ls = lib.optim.lr_scheduler
    return {"CosineAnnealingLR": lambda: ls.CosineAnnealingLR(opt, T_max=12),
            "OneCycleLR": lambda: ls.OneCycleLR(opt, max_lr=0.05, total_steps=N),
            "CyclicLR": lambda: ls.CyclicLR(opt, base_lr=0.001, max_lr=0.02, step_size_up=5),
            "StepLR": lambda: ls.StepLR(opt, step_size=7, gamma=0.5),
            "ExponentialLR": lambda: ls.ExponentialLR(opt, gamma=0.9)}[kind]()


@pytest.mark.parametrize("name,kwargs,kind", UNFUSED, ids=[c[0] for c in UNFUSED])
def test_unfused_optimizers_follow_torch_under_a_schedule(torch, quiet, name, kwargs, kind):
    import numpy as np

    results = []
    for lib in (mt, torch):
        p = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
        opt = getattr(lib.optim, name)([p], **kwargs)
        sched = _unfused_schedule(lib, opt, kind)

        def closure():
            opt.zero_grad()
            loss = ((p - 0.3) ** 4).sum() + (p * p).sum()
            loss.backward()
            return loss

        lrs = []
        for _ in range(N // 2):
            if name == "LBFGS":
                opt.step(closure)
            else:
                closure()
                opt.step()
            sched.step()
            lrs.append((sched.get_last_lr(), _momenta(opt) if "betas" in opt.param_groups[0] else None))
        results.append((lrs, p.detach().numpy().copy()))
    (lrs, got), (tlrs, expected) = results
    assert lrs == tlrs
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
