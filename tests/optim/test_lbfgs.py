"""L-BFGS follows PyTorch's iterates, with and without the strong-Wolfe line search, on Rosenbrock's function, a
least-squares problem and a small MLP (float64; our side on every device), counts evaluations and iterations as
PyTorch does, keeps the same state, and refuses what PyTorch refuses with the same errors."""
import copy

import numpy as np
import pytest

import minitorch_gpu as mt

LINE_SEARCHES = [None, "strong_wolfe"]
RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((30, 8)), RNG.standard_normal(30)
X, Y = RNG.standard_normal((16, 3)), RNG.standard_normal((16, 2))
MLP_INIT = [RNG.standard_normal((5, 3)) * 0.5, RNG.standard_normal(5) * 0.1, RNG.standard_normal((2, 5)) * 0.5]


def _rosenbrock(lib, device):
    x = lib.tensor([-1.5, 2.0], dtype=lib.float64, device=device, requires_grad=True)
    return [x], lambda: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _least_squares(lib, device):
    x = lib.zeros(8, dtype=lib.float64, device=device, requires_grad=True)
    a, b = lib.tensor(A, device=device), lib.tensor(B, device=device)

    def loss():
        r = a @ x - b
        return (r * r).sum()
    return [x], loss


def _mlp(lib, device):
    w1, b1, w2 = (lib.tensor(v, device=device, requires_grad=True) for v in MLP_INIT)
    x, y = lib.tensor(X, device=device), lib.tensor(Y, device=device)

    def loss():
        d = (x @ w1.t() + b1).tanh() @ w2.t() - y
        return (d * d).mean()
    return [w1, b1, w2], loss


# Rosenbrock with fixed steps of length 1 is chaotic: rounding differences of one ulp (the two libraries' pow
# gradients) grow without bound after a few dozen iterations, so it runs a short budget there
PROBLEMS = {
    "rosenbrock": (_rosenbrock, dict(max_iter=6), dict(max_iter=25)),
    "least_squares": (_least_squares, dict(max_iter=20, history_size=4), dict(max_iter=20, history_size=4)),
    "mlp": (_mlp, dict(max_iter=10, lr=0.5), dict(max_iter=10, lr=0.5)),
}


def _run(lib, problem, line_search_fn, device="cpu", steps=4, **extra):
    make, plain_kw, wolfe_kw = PROBLEMS[problem]
    params, loss_fn = make(lib, device)
    kw = {**(plain_kw if line_search_fn is None else wolfe_kw), **extra}
    opt = lib.optim.LBFGS(params, line_search_fn=line_search_fn, **kw)

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    trace = []
    for _ in range(steps):
        loss = opt.step(closure)
        state = opt.state[params[0]]
        trace.append((loss.item(), [p.detach().cpu().numpy().copy() for p in params], state["func_evals"],
                      state["n_iter"]))
    return trace, opt, params


@pytest.mark.parametrize("line_search_fn", LINE_SEARCHES)
@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_iterates_match_torch(device, torch, problem, line_search_fn):
    expected, _, _ = _run(torch, problem, line_search_fn)
    got, _, _ = _run(mt, problem, line_search_fn, device)
    for (loss, ps, evals, iters), (tloss, tps, tevals, titers) in zip(got, expected):
        assert (evals, iters) == (tevals, titers)
        np.testing.assert_allclose(loss, tloss, rtol=1e-9, atol=1e-12)
        for p, tp in zip(ps, tps):
            np.testing.assert_allclose(p, tp, rtol=1e-8, atol=1e-10)


def test_solves_least_squares():
    trace, _, _ = _run(mt, "least_squares", "strong_wolfe", steps=2, max_iter=100, history_size=10,
                      tolerance_change=1e-15, tolerance_grad=1e-12)
    np.testing.assert_allclose(trace[-1][1][0], np.linalg.lstsq(A, B, rcond=None)[0], rtol=1e-6, atol=1e-8)


def test_history_size_and_evaluation_budget_match_torch(torch):
    kw = dict(history_size=2, max_iter=7, max_eval=5)
    for ls in LINE_SEARCHES:
        expected, topt, tps = _run(torch, "mlp", ls, steps=3, **kw)
        got, opt, ps = _run(mt, "mlp", ls, steps=3, **kw)
        assert [t[2:] for t in got] == [t[2:] for t in expected]
        assert len(opt.state[ps[0]]["old_dirs"]) == len(topt.state[tps[0]]["old_dirs"]) <= 2


def test_state_dict_matches_torch_and_resumes(torch):
    # four iterations, well before convergence (where the last step length is barely determined)
    _, topt, tps = _run(torch, "least_squares", "strong_wolfe", steps=1, max_iter=4)
    _, opt, ps = _run(mt, "least_squares", "strong_wolfe", steps=1, max_iter=4)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert sorted(sd["state"][0]) == sorted(tsd["state"][0])
    for key, value in tsd["state"][0].items():
        ours = sd["state"][0][key]
        if isinstance(value, list):
            assert len(ours) == len(value), key
        elif hasattr(value, "numpy"):
            np.testing.assert_allclose(ours.numpy(), value.numpy(), rtol=1e-8, atol=1e-10, err_msg=key)
        else:
            assert ours == pytest.approx(value), key

    # a fresh optimizer continues from the saved state as the original does
    full, _, _ = _run(mt, "least_squares", None, steps=3)
    first, opt1, ps1 = _run(mt, "least_squares", None, steps=1)
    make, kw, _ = PROBLEMS["least_squares"]
    ps2, loss_fn = make(mt, "cpu")
    ps2[0].data.copy_(ps1[0].detach())
    opt2 = mt.optim.LBFGS(ps2, **kw)
    opt2.load_state_dict(copy.deepcopy(opt1.state_dict()))

    def closure():
        opt2.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    for k in (1, 2):
        opt2.step(closure)
        np.testing.assert_array_equal(ps2[0].detach().numpy(), full[k][1][0])


def test_closure_runs_with_grad_enabled_and_step_returns_first_loss():
    x = mt.tensor([1.0, -2.0], requires_grad=True)
    seen, losses = [], []
    opt = mt.optim.LBFGS([x], max_iter=3)

    def closure():
        seen.append(mt.is_grad_enabled())
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        losses.append(loss)
        return loss

    with mt.no_grad():
        out = opt.step(closure)
    assert all(seen) and out is losses[0]


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def test_errors_match_torch(torch):
    def cases(lib):
        p = lib.zeros(2, requires_grad=True)
        q = lib.zeros(1, requires_grad=True)
        opt = lib.optim.LBFGS([p])
        bad_ls = lib.optim.LBFGS([p], line_search_fn="backtracking")

        def closure():
            bad_ls.zero_grad()
            loss = ((p - 1) ** 2).sum()
            loss.backward()
            return loss

        grown = lib.optim.LBFGS([p])
        grown.add_param_group({"params": [q]})
        return [lambda: opt.step(), lambda: opt.step(None),
                lambda: lib.optim.LBFGS([{"params": [p]}, {"params": [q]}]),
                lambda: lib.optim.LBFGS([p], lr=-1), lambda: lib.optim.LBFGS([p], lr=lib.ones(2)),
                lambda: bad_ls.step(closure), lambda: grown.step(closure)]

    for ours, theirs in zip(cases(mt), cases(torch)):
        assert _message(ours) == _message(theirs)


def test_defaults_match_torch(torch):
    assert mt.optim.LBFGS([mt.zeros(1, requires_grad=True)]).defaults == \
        torch.optim.LBFGS([torch.zeros(1, requires_grad=True)]).defaults
    assert mt.optim.LBFGS([mt.zeros(1, requires_grad=True)], max_iter=7).defaults["max_eval"] == 8
