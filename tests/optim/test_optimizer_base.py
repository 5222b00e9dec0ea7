"""The Optimizer base class: parameter groups, errors, zero_grad, closures, hooks, state_dict, and the
constructors' signatures and argument checks against PyTorch's."""
import copy
import inspect
import warnings

import numpy as np
import pytest

import minitorch_gpu as mt

NAMES = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]


def _params(n=3, device="cpu"):
    return [mt.randn(4, 3, device=device, requires_grad=True) for _ in range(n)]


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


# ---------------------------------------------------------------------------------------------- construction
def test_lone_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of Tensors "
                                        "or dicts, but got minitorch_gpu.FloatTensor"):
        mt.optim.SGD(mt.zeros(3, requires_grad=True), lr=0.1)


def test_empty_parameter_list():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        mt.optim.Adam([])
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        mt.optim.Adam(iter([]))


def test_parameter_in_two_groups():
    a, b = _params(2)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        mt.optim.SGD([{"params": [a, b]}, {"params": [b]}], lr=0.1)
    opt = mt.optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": a})


def test_bad_params():
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is int"):
        mt.optim.SGD([mt.zeros(1, requires_grad=True), 3], lr=0.1)
    leaf = mt.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        mt.optim.SGD([leaf * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer parameters need to be organized in ordered collections"):
        mt.optim.SGD([{"params": {leaf}}], lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        mt.optim.SGD([leaf], lr=0.1).add_param_group([leaf])
    with pytest.warns(UserWarning, match="duplicate parameters"):
        mt.optim.SGD([leaf, leaf], lr=0.1)


def test_param_groups_get_defaults_filled_in(torch):
    a, b = _params(2)
    opt = mt.optim.Adam([{"params": [a]}, {"params": b, "lr": 0.5, "betas": (0.5, 0.6)}], weight_decay=0.1)
    ta, tb = torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    topt = torch.optim.Adam([{"params": [ta]}, {"params": tb, "lr": 0.5, "betas": (0.5, 0.6)}], weight_decay=0.1)
    for g, tg in zip(opt.param_groups, topt.param_groups):
        assert sorted(g) == sorted(tg)
        for k in tg:
            if k != "params":
                assert g[k] == tg[k], k
    assert opt.param_groups[1]["params"] == [b]
    assert opt.defaults["lr"] == 1e-3
    c = mt.zeros(2, requires_grad=True)
    opt.add_param_group({"params": [c], "eps": 1e-3})
    assert opt.param_groups[2]["eps"] == 1e-3 and opt.param_groups[2]["lr"] == 1e-3


def test_named_parameters():
    a, b = _params(2)
    opt = mt.optim.SGD([("w", a), ("b", b)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.param_groups[0]["params"] == [a, b]
    with pytest.raises(ValueError, match="all optimizer param groups should be with/without names"):
        opt.add_param_group({"params": [mt.zeros(1, requires_grad=True)]})


def test_required_parameter():
    from minitorch_gpu.optim.optimizer import required

    class Plain(mt.optim.Optimizer):
        def __init__(self, params, lr=required):
            super().__init__(params, dict(lr=lr))

    with pytest.raises(ValueError, match="parameter group didn't specify a value of required optimization "
                                         "parameter lr"):
        Plain(_params(1))
    assert Plain([{"params": _params(1), "lr": 0.1}]).param_groups[0]["lr"] == 0.1
    assert repr(required) == "<required parameter>"


@pytest.mark.parametrize("name", NAMES)
def test_constructor_signature_matches_torch(torch, name):
    ours = inspect.signature(getattr(mt.optim, name)).parameters
    theirs = inspect.signature(getattr(torch.optim, name)).parameters
    for pname, p in theirs.items():
        assert pname in ours, pname
        assert ours[pname].default == p.default, pname
        assert ours[pname].kind == p.kind, pname
    assert "fused" in ours


BAD_ARGS = [
    ("SGD", dict(lr=-1.0)), ("SGD", dict(momentum=-0.5)), ("SGD", dict(weight_decay=-1.0)),
    ("SGD", dict(nesterov=True)), ("SGD", dict(nesterov=True, momentum=0.9, dampening=0.1)),
    ("Adam", dict(lr=-1.0)), ("Adam", dict(eps=-1e-8)), ("Adam", dict(betas=(1.0, 0.999))),
    ("Adam", dict(betas=(0.9, -0.1))), ("Adam", dict(weight_decay=-0.1)), ("Adam", dict(betas=(0, 0.9))),
    ("AdamW", dict(lr=-0.5)), ("AdamW", dict(betas=(0.9, 1.5))),
    ("RMSprop", dict(lr=-1.0)), ("RMSprop", dict(eps=-1.0)), ("RMSprop", dict(momentum=-1.0)),
    ("RMSprop", dict(weight_decay=-1.0)), ("RMSprop", dict(alpha=-1.0)),
    ("Adagrad", dict(lr=-1.0)), ("Adagrad", dict(lr_decay=-1.0)), ("Adagrad", dict(weight_decay=-1.0)),
    ("Adagrad", dict(initial_accumulator_value=-1.0)), ("Adagrad", dict(eps=-1.0)),
    ("SGD", dict(foreach=True, fused=True)), ("Adam", dict(foreach=True, fused=True)),
    ("AdamW", dict(differentiable=True, fused=True)), ("Adagrad", dict(foreach=True, fused=True)),
]


@pytest.mark.parametrize("name,kwargs", BAD_ARGS)
def test_argument_errors_match_torch(torch, name, kwargs):
    expected = _message(lambda: getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs))
    got = _message(lambda: getattr(mt.optim, name)([mt.zeros(2, requires_grad=True)], **kwargs))
    assert got == expected


@pytest.mark.parametrize("name", NAMES + ["Lion"])
def test_fused_refuses_integer_params(name):
    p = mt.zeros(3, dtype=mt.int64)
    opt = getattr(mt.optim, name)([p], fused=True)
    p.grad = mt.zeros(3, dtype=mt.int64)
    with pytest.raises(RuntimeError, match="`fused=True` requires all the params to be floating point Tensors of "
                                           "supported devices: \\['cpu', 'cuda'\\] but minitorch_gpu.int64 and cpu"):
        opt.step()


def test_lion_argument_errors():
    p = [mt.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid learning rate: -1.0"):
        mt.optim.Lion(p, lr=-1.0)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        mt.optim.Lion(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid weight_decay value: -0.1"):
        mt.optim.Lion(p, weight_decay=-0.1)
    defaults = inspect.signature(mt.optim.Lion).parameters
    assert defaults["lr"].default == 1e-4 and defaults["betas"].default == (0.9, 0.99)
    assert defaults["weight_decay"].default == 0


# ---------------------------------------------------------------------------------------------- stepping
def test_zero_grad():
    a, b = _params(2)
    opt = mt.optim.SGD([a, b], lr=0.1)
    (a.sum() + b.sum()).backward()
    g = a.grad
    opt.zero_grad(set_to_none=False)
    assert a.grad is g and float(g.abs().sum()) == 0.0
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_step_with_closure_returns_loss_and_runs_with_grad():
    a = mt.tensor([1.0, 2.0], requires_grad=True)
    opt = mt.optim.SGD([a], lr=0.5)
    seen = []

    def closure():
        seen.append(mt.is_grad_enabled())
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    with mt.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert float(loss) == 5.0
    np.testing.assert_allclose(a.detach().numpy(), [0.0, 0.0])
    assert a.grad_fn is None and a.is_leaf
    assert opt.step() is None


def test_params_without_grad_are_skipped():
    a, b = _params(2)
    before = b.detach().clone()
    opt = mt.optim.Adam([a, b], lr=0.1)
    a.grad = mt.ones_like(a)
    opt.step()
    assert mt.equal(b, before)
    assert b not in opt.state and len(opt.state[a]) == 3


def test_differentiable_step_records_history():
    w = mt.tensor([1.0, -2.0], requires_grad=True)
    x = w * 1.0
    x.retain_grad()
    opt = mt.optim.SGD([x], lr=0.1, differentiable=True)
    x.grad = mt.tensor([1.0, 1.0])
    opt.step()
    assert x.grad_fn is not None
    x.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 1.0])


def test_step_hooks():
    a = _params(1)
    opt = mt.optim.SGD(a, lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append(("pre", o is opt, len(args), kwargs)))
    h2 = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", o is opt)))
    g1 = mt.optim.register_optimizer_step_pre_hook(lambda o, args, kwargs: calls.append(("gpre",)))
    g2 = mt.optim.register_optimizer_step_post_hook(lambda o, args, kwargs: calls.append(("gpost",)))
    try:
        opt.step()
    finally:
        g1.remove()
        g2.remove()
    assert calls == [("gpre",), ("pre", True, 1, {}), ("post", True), ("gpost",)]
    h1.remove()
    h2.remove()
    calls.clear()
    opt.step()
    assert calls == []


def test_pre_hook_can_replace_arguments():
    a = mt.tensor([3.0], requires_grad=True)
    opt = mt.optim.SGD([a], lr=1.0)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    opt.register_step_pre_hook(lambda o, args, kwargs: (args, {"closure": closure}))
    loss = opt.step()
    assert float(loss) == 9.0
    np.testing.assert_allclose(a.detach().numpy(), [-3.0])
    opt2 = mt.optim.SGD([a], lr=1.0)
    opt2.register_step_pre_hook(lambda o, args, kwargs: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple of \\(new_args, new_kwargs\\), but got 3"):
        opt2.step()


def test_hooks_run_once_when_a_subclass_step_calls_its_parent():
    class MySGD(mt.optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    opt = MySGD(_params(1), lr=0.1)
    calls = []
    opt.register_step_post_hook(lambda *a: calls.append(1))
    opt.step()
    assert calls == [1]


# ---------------------------------------------------------------------------------------------- state_dict
def _state_dicts_after_one_step(torch, name, ps):
    """The state_dicts of our optimizer over ``ps`` and PyTorch's over zeros, two groups, one step of unit
    gradients."""
    tps = [torch.zeros(4, 3, requires_grad=True) for _ in range(2)]
    opt = getattr(mt.optim, name)([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.5}])
    topt = getattr(torch.optim, name)([{"params": tps[:1]}, {"params": tps[1:], "lr": 0.5}])
    for p, tp in zip(ps, tps):
        p.grad = mt.ones_like(p)
        tp.grad = torch.ones_like(tp)
    opt.step()
    topt.step()
    return opt.state_dict(), topt.state_dict()


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_layout_matches_torch(torch, name):
    sd, tsd = _state_dicts_after_one_step(torch, name, _params(2))
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    for g, tg in zip(sd["param_groups"], tsd["param_groups"]):
        assert set(tg) <= set(g)
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for k in tsd["state"]:
        assert sorted(sd["state"][k]) == sorted(tsd["state"][k])
        step = sd["state"][k].get("step")
        if step is not None:
            assert step.dtype is mt.float32 and step.dim() == 0 and step.device.type == "cpu"
            assert float(step) == float(tsd["state"][k]["step"])


def test_load_state_dict_errors():
    a, b, c = _params(3)
    opt = mt.optim.SGD([{"params": [a]}, {"params": [b, c]}], lr=0.1)
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        mt.optim.SGD([a, b, c], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match the size "
                                         "of optimizer's group"):
        mt.optim.SGD([{"params": [a, b]}, {"params": [c]}], lr=0.1).load_state_dict(sd)


def test_load_state_dict_casts_state_to_param_dtype_but_not_step():
    p64 = mt.zeros(3, dtype=mt.float64, requires_grad=True)
    opt = mt.optim.Adam([p64], lr=0.1)
    p64.grad = mt.ones_like(p64)
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    p32 = mt.zeros(3, requires_grad=True)
    opt32 = mt.optim.Adam([p32], lr=0.5)
    opt32.load_state_dict(sd)
    st = opt32.state[p32]
    assert st["exp_avg"].dtype is mt.float32 and st["exp_avg_sq"].dtype is mt.float32
    assert st["step"].dtype is mt.float32 and float(st["step"]) == 1.0
    assert opt32.param_groups[0]["lr"] == 0.1 and opt32.param_groups[0]["params"] == [p32]
    # as in PyTorch, tensors that need no conversion are taken over, not copied
    assert st["step"] is sd["state"][0]["step"]
    p32.grad = mt.ones_like(p32)
    opt32.step()
    assert float(sd["state"][0]["step"]) == 2.0


def test_load_state_dict_moves_state_to_param_device(device):
    p = mt.zeros(3, device=device, requires_grad=True)
    opt = mt.optim.SGD([p], lr=0.1, momentum=0.9)
    sd = {"state": {0: {"momentum_buffer": mt.ones(3)}}, "param_groups": copy.deepcopy(opt.state_dict()
                                                                                      ["param_groups"])}
    opt.load_state_dict(sd)
    assert opt.state[p]["momentum_buffer"].device == p.device


def test_state_dict_hooks():
    a = _params(1)
    opt = mt.optim.SGD(a, lr=0.1)
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    assert order == ["pre"] and sd["extra"] == 1
    opt.register_load_state_dict_pre_hook(lambda o, sd: order.append("load-pre"))
    opt.register_load_state_dict_post_hook(lambda o: order.append("load-post"), prepend=True)
    opt.load_state_dict(sd)
    assert order == ["pre", "load-pre", "load-post"]


def test_repr_lists_groups():
    opt = mt.optim.SGD(_params(1), lr=0.1)
    text = repr(opt)
    assert text.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in text and text.endswith(")")


def test_adagrad_state_exists_before_the_first_step():
    p = mt.zeros(3, requires_grad=True)
    opt = mt.optim.Adagrad([p], initial_accumulator_value=0.25)
    np.testing.assert_allclose(opt.state[p]["sum"].numpy(), [0.25] * 3)
    assert float(opt.state[p]["step"]) == 0.0


def test_no_warnings_on_a_plain_step():
    opt = mt.optim.AdamW(_params(2), lr=0.1)
    for p in opt.param_groups[0]["params"]:
        p.grad = mt.ones_like(p)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()


# ---------------------------------------------------------------------------------------------- optimizers without fused
UNFUSED = ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "LBFGS"]


@pytest.mark.parametrize("name", UNFUSED)
def test_unfused_signature_and_defaults_match_torch(torch, name):
    ours = inspect.signature(getattr(mt.optim, name)).parameters
    theirs = inspect.signature(getattr(torch.optim, name)).parameters
    assert list(ours) == list(theirs)
    for pname, p in theirs.items():
        assert ours[pname].default == p.default, pname
        assert ours[pname].kind == p.kind, pname
    opt = getattr(mt.optim, name)([mt.zeros(2, requires_grad=True)])
    topt = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
    assert opt.defaults == topt.defaults
    assert {k: v for k, v in opt.param_groups[0].items() if k != "params"} == \
        {k: v for k, v in topt.param_groups[0].items() if k != "params"}


@pytest.mark.parametrize("name", ["adadelta", "adamax", "nadam", "radam", "asgd"])
def test_unfused_functional_signature_matches_torch(torch, name):
    import importlib

    ours = inspect.signature(getattr(importlib.import_module("minitorch_gpu.optim._functional"), name)).parameters
    theirs = inspect.signature(getattr(importlib.import_module(f"torch.optim.{name}"), name)).parameters
    assert [(n, p.kind, p.default) for n, p in ours.items()] == [(n, p.kind, p.default) for n, p in theirs.items()]


UNFUSED_BAD_ARGS = [
    ("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(rho=-0.1)),
    ("Adadelta", dict(eps=-1.0)), ("Adadelta", dict(weight_decay=-1.0)),
    ("Adamax", dict(lr=-1.0)), ("Adamax", dict(eps=-1.0)), ("Adamax", dict(betas=(1.0, 0.9))),
    ("Adamax", dict(betas=(0.9, -0.1))), ("Adamax", dict(weight_decay=-1.0)),
    ("NAdam", dict(lr=-1.0)), ("NAdam", dict(eps=-1.0)), ("NAdam", dict(betas=(-0.1, 0.9))),
    ("NAdam", dict(betas=(0.9, 1.0))), ("NAdam", dict(weight_decay=-1.0)), ("NAdam", dict(momentum_decay=-1.0)),
    ("RAdam", dict(lr=-1.0)), ("RAdam", dict(eps=-1.0)), ("RAdam", dict(betas=(1.5, 0.9))),
    ("RAdam", dict(weight_decay=-1.0)),
    ("ASGD", dict(lr=-1.0)), ("ASGD", dict(weight_decay=-1.0)),
    ("LBFGS", dict(lr=-1.0)),
]


@pytest.mark.parametrize("name,kwargs", UNFUSED_BAD_ARGS)
def test_unfused_argument_errors_match_torch(torch, name, kwargs):
    expected = _message(lambda: getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs))
    got = _message(lambda: getattr(mt.optim, name)([mt.zeros(2, requires_grad=True)], **kwargs))
    assert got == expected


@pytest.mark.parametrize("name", UNFUSED[:-1])
def test_unfused_state_dict_layout_matches_torch(torch, name):
    sd, tsd = _state_dicts_after_one_step(torch, name, [mt.zeros(4, 3, requires_grad=True) for _ in range(2)])
    assert sd["param_groups"] == tsd["param_groups"]
    assert sorted(sd["state"]) == sorted(tsd["state"])
    for k, tstate in tsd["state"].items():
        assert sorted(sd["state"][k]) == sorted(tstate)
        for key, value in tstate.items():
            ours = sd["state"][k][key]
            assert tuple(ours.shape) == tuple(value.shape) and str(ours.dtype).split(".")[1] == \
                str(value.dtype).split(".")[1], key
            np.testing.assert_allclose(ours.numpy(), value.numpy(), rtol=1e-6, err_msg=key)


@pytest.mark.parametrize("name", UNFUSED[:-1])
def test_unfused_foreach_refuses_differentiable(name):
    p = mt.zeros(2, requires_grad=True)
    opt = getattr(mt.optim, name)([p], foreach=True, differentiable=True)
    p.grad = mt.ones(2)
    with pytest.raises(AssertionError, match="_foreach ops don't support autograd"):
        opt.step()


@pytest.mark.parametrize("name", UNFUSED[:-1])
def test_unfused_differentiable_step_records_history(name):
    """With ``differentiable=True`` the step is recorded: a gradient flows from the new parameters back to a
    tensor the gradient was computed from, and equals the one of the same update written out by hand."""
    w = mt.tensor([0.3, -0.2, 0.5], dtype=mt.float64, requires_grad=True)
    p_start = mt.tensor([1.0, 2.0, -1.0], dtype=mt.float64)
    # a non-leaf parameter (allowed with differentiable=True), so that its in-place update is recorded
    p_updated = p_start.clone().requires_grad_().clone()
    opt = getattr(mt.optim, name)([p_updated], differentiable=True)
    p_updated.grad = w * 2.0
    opt.step()
    (dw,) = mt.autograd.grad(p_updated.sum(), w)
    # finite differences of the same single step
    eps = 1e-6
    fd = []
    for i in range(3):
        deltas = []
        for sign in (1, -1):
            q = p_start.clone().requires_grad_()
            o = getattr(mt.optim, name)([q])
            wi = w.detach().clone()
            wi[i] += sign * eps
            q.grad = wi * 2.0
            o.step()
            deltas.append(q.detach().sum().item())
        fd.append((deltas[0] - deltas[1]) / (2 * eps))
    np.testing.assert_allclose(dw.numpy(), fd, rtol=1e-5, atol=1e-7)
