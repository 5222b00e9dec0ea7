"""nn.utils: gradient clipping (by norm, every norm type, mixed dtypes, non-finite norms; by value) and the
parameter/vector conversions, against PyTorch."""
import math

import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import assert_close, kernel_launches, to_np
from minitorch_gpu.nn import utils

SHAPES = [(3, 4), (5,), (2, 3, 2), ()]


def _pair(torch, device, shapes=SHAPES, dtypes=None, scale=1.0, seed=0, missing=()):
    """The same parameters and gradients in minitorch_gpu (on ``device``) and in PyTorch."""
    rng = np.random.default_rng(seed)
    ours, theirs = [], []
    for i, shape in enumerate(shapes):
        dt = (dtypes or {}).get(i, "float32")
        p = rng.standard_normal(shape).astype(dt)
        g = (rng.standard_normal(shape) * scale).astype(dt)
        a = mt.tensor(p, device=device, requires_grad=True)
        b = torch.tensor(p, requires_grad=True)
        if i not in missing:
            a.grad = mt.tensor(g, device=device)
            b.grad = torch.tensor(g)
        ours.append(a)
        theirs.append(b)
    return ours, theirs


def _same_grads(ours, theirs, rtol=1e-6, atol=1e-7):
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None
        else:
            assert a.grad.dtype.name == str(b.grad.dtype).split(".")[-1]
            assert_close(a.grad, b.grad.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, 0.5, math.inf, "inf", 0])
@pytest.mark.parametrize("max_norm", [0.1, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, device, torch):
    ours, theirs = _pair(torch, device)
    r_ours = utils.clip_grad_norm_(ours, max_norm, norm_type)
    r_theirs = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert r_ours.shape == () and r_ours.dtype is mt.float32 and r_ours.device == ours[0].device
    assert_close(r_ours, r_theirs.numpy(), rtol=1e-6)
    _same_grads(ours, theirs)


def test_clip_grad_norm_leaves_small_grads_unchanged(device, torch):
    ours, _ = _pair(torch, device)
    before = [to_np(p.grad).copy() for p in ours]
    utils.clip_grad_norm_(ours, 1e6)
    for p, b in zip(ours, before):
        assert (to_np(p.grad) == b).all()


def test_clip_grad_norm_single_tensor_and_generator(device, torch):
    ours, theirs = _pair(torch, device)
    assert_close(utils.clip_grad_norm_(ours[0], 0.3), torch.nn.utils.clip_grad_norm_(theirs[0], 0.3).numpy())
    assert_close(utils.clip_grad_norm_((p for p in ours), 0.2),
                 torch.nn.utils.clip_grad_norm_((p for p in theirs), 0.2).numpy())
    _same_grads(ours, theirs)


def test_clip_grad_norm_skips_params_without_grad(device, torch):
    ours, theirs = _pair(torch, device, missing=(1, 3))
    assert_close(utils.clip_grad_norm_(ours, 0.5), torch.nn.utils.clip_grad_norm_(theirs, 0.5).numpy())
    _same_grads(ours, theirs)


@pytest.mark.parametrize("dtypes", [{1: "float64"}, {0: "float64", 2: "float64"}, {0: "float16", 1: "float16"}])
@pytest.mark.parametrize("norm_type", [2.0, math.inf])
def test_clip_grad_norm_mixed_dtypes(dtypes, norm_type, device, torch):
    ours, theirs = _pair(torch, device, dtypes=dtypes)
    r_ours = utils.clip_grad_norm_(ours, 0.5, norm_type)
    r_theirs = torch.nn.utils.clip_grad_norm_(theirs, 0.5, norm_type)
    assert r_ours.dtype.name == str(r_theirs.dtype).split(".")[-1]
    half = "float16" in dtypes.values()
    assert_close(r_ours, r_theirs.numpy(), rtol=2e-3 if half else 1e-6)
    _same_grads(ours, theirs, rtol=2e-3 if half else 1e-6, atol=1e-4 if half else 1e-7)


def test_clip_grad_norm_empty(torch):
    r = utils.clip_grad_norm_([], 1.0)
    assert r.dtype is mt.float32 and r.item() == 0.0
    params = [mt.zeros(3, requires_grad=True)]  # no .grad anywhere
    assert utils.clip_grad_norm_(params, 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        utils.clip_grad_norm_((p for p in []), 1.0)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_nonfinite(bad, norm_type, device, torch):
    ours, theirs = _pair(torch, device)
    ours[0].grad[0, 0] = bad
    with torch.no_grad():
        theirs[0].grad[0, 0] = bad
    before = [to_np(p.grad).copy() for p in ours]
    with pytest.raises(RuntimeError) as e_ours:
        utils.clip_grad_norm_(ours, 1.0, norm_type, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as e_theirs:
        torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type, error_if_nonfinite=True)
    assert str(e_ours.value) == str(e_theirs.value)
    for p, b in zip(ours, before):  # a raising call changes nothing
        np.testing.assert_array_equal(to_np(p.grad), b)
    # without the check the (non-finite) norm is returned and used, as in PyTorch
    r_ours = utils.clip_grad_norm_(ours, 1.0, norm_type)
    r_theirs = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
    np.testing.assert_array_equal(to_np(r_ours), r_theirs.numpy())
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-6, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize("foreach", [None, True, False])
def test_foreach_flag_gives_same_result(foreach, device, torch):
    ours, theirs = _pair(torch, device)
    assert_close(utils.clip_grad_norm_(ours, 0.4, foreach=foreach),
                 torch.nn.utils.clip_grad_norm_(theirs, 0.4, foreach=foreach).numpy())
    utils.clip_grad_value_(ours, 0.05, foreach=foreach)
    torch.nn.utils.clip_grad_value_(theirs, 0.05, foreach=foreach)
    _same_grads(ours, theirs)


def test_get_total_norm_and_clip_grads_with_norm(device, torch):
    ours, theirs = _pair(torch, device)
    grads_o = [p.grad for p in ours]
    grads_t = [p.grad for p in theirs]
    for nt in (2.0, 1.0, math.inf):
        assert_close(utils.get_total_norm(grads_o, nt), torch.nn.utils.get_total_norm(grads_t, nt).numpy())
    total_o = utils.get_total_norm(grads_o)
    total_t = torch.nn.utils.get_total_norm(grads_t)
    assert utils.clip_grads_with_norm_(ours, 0.3, total_o) is None
    torch.nn.utils.clip_grads_with_norm_(theirs, 0.3, total_t)
    _same_grads(ours, theirs)
    assert utils.get_total_norm([]).item() == 0.0


def test_clip_grad_norm_records_nothing(device, torch):
    ours, _ = _pair(torch, device)
    for p in ours:
        p.grad.requires_grad_(True)  # gradients from create_graph=True backward require grad
    total = utils.clip_grad_norm_(ours, 0.1)
    assert total.grad_fn is None
    for p in ours:
        assert p.grad.is_leaf


def test_clip_grad_norm_deprecated(torch):
    ours, theirs = _pair(torch, "cpu")
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        r = utils.clip_grad_norm(ours, 0.5)
    assert_close(r, torch.nn.utils.clip_grad_norm_(theirs, 0.5).numpy())


@pytest.mark.parametrize("clip_value", [0.5, 2, 0.0])
def test_clip_grad_value_matches_torch(clip_value, device, torch):
    ours, theirs = _pair(torch, device, scale=2.0, missing=(2,))
    assert utils.clip_grad_value_(ours, clip_value) is None
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    _same_grads(ours, theirs)
    single_o, single_t = _pair(torch, device, shapes=[(4, 4)], scale=3.0, seed=1)
    utils.clip_grad_value_(single_o[0], clip_value)
    torch.nn.utils.clip_grad_value_(single_t[0], clip_value)
    _same_grads(single_o, single_t)


GPT_SHAPES = [(50, 16), (8, 16)] + [(16,), (16,), (16, 48), (48,), (16, 16), (16,), (16,), (16,), (16, 64), (64,),
                                    (64, 16), (16,)] * 6 + [(16,), (16,), (0,)]  # 77 tensors, one of them empty


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
def test_clip_grad_norm_is_three_launches_without_host_sync(norm_type, device, torch, monkeypatch):
    if device == "cpu":
        pytest.skip("kernel launches are a CUDA matter")
    shapes = GPT_SHAPES if norm_type != math.inf else GPT_SHAPES[:-1]  # no max over an empty tensor
    ours, theirs = _pair(torch, device, shapes=shapes)
    calls = kernel_launches(monkeypatch, ours[0]._be)

    def no_sync(*args):
        raise AssertionError("clip_grad_norm_ read a device value back to the host")
    monkeypatch.setattr(mt.Tensor, "item", no_sync)
    monkeypatch.setattr(ours[0]._be, "to_numpy", no_sync)
    total = utils.clip_grad_norm_(ours, 0.5, norm_type)
    assert [k for _, k in calls] == ["multi_norm_partial<float>", "multi_norm_finish<float>", "multi_clip_scale<float>"]
    monkeypatch.undo()
    assert total.device == ours[0].device and total.shape == ()
    assert_close(total, torch.nn.utils.clip_grad_norm_(theirs, 0.5, norm_type).numpy(), rtol=1e-6)
    _same_grads(ours, theirs)


@pytest.mark.parametrize("ord", [2.0, 1.0, math.inf, 3.0, 0.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_foreach_norm_matches_torch(ord, dtype, device, torch):
    from minitorch_gpu.optim._foreach import _foreach_norm
    shapes = [(3, 4), (5,), (300,), (2, 3, 2), ()] + ([] if ord == math.inf else [(0,)])
    ours, theirs = _pair(torch, device, shapes=shapes, dtypes=dict.fromkeys(range(len(shapes)), dtype))
    got = _foreach_norm([p.grad for p in ours], ord)
    want = torch._foreach_norm([p.grad for p in theirs], ord)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == () and g.dtype.name == dtype and g.device == ours[0].device
        assert_close(g, w.numpy(), rtol=1e-6 if dtype == "float32" else 1e-12)
    assert _foreach_norm([], ord) == []


@pytest.mark.parametrize("op", ["lerp", "addcmul", "addcdiv"])
def test_foreach_ops_are_one_launch_per_list(op, device, torch, monkeypatch):
    if device == "cpu":
        pytest.skip("kernel launches are a CUDA matter")
    from minitorch_gpu.optim import _foreach
    ours, theirs = _pair(torch, device, shapes=GPT_SHAPES)
    xs, ys = [p.detach() for p in ours], [p.grad for p in ours]
    txs, tys = [p.detach() for p in theirs], [p.grad for p in theirs]
    zs = [y.abs() + 1 for y in ys]
    tzs = [y.abs() + 1 for y in tys]
    calls = kernel_launches(monkeypatch, xs[0]._be)
    if op == "lerp":
        _foreach._foreach_lerp_(xs, ys, 0.3)
        torch._foreach_lerp_(txs, tys, 0.3)
    elif op == "addcmul":
        _foreach._foreach_addcmul_(xs, ys, zs, 0.7)
        torch._foreach_addcmul_(txs, tys, tzs, 0.7)
    else:
        _foreach._foreach_addcdiv_(xs, ys, zs, [0.1 * i for i in range(len(xs))])
        torch._foreach_addcdiv_(txs, tys, tzs, [0.1 * i for i in range(len(xs))])
    assert [k for _, k in calls] == ["foreach_ternary<float>"]
    for a, b in zip(xs, txs):
        # PyTorch multiplies value * y * z in another order: one float32 rounding apart, absolute after cancellation
        assert_close(a, b.numpy(), rtol=1e-6, atol=1e-6)


# -------------------------------------------------------------------------------- parameters <-> vector

def test_parameters_to_vector(device, torch):
    ours, theirs = _pair(torch, device, missing=range(len(SHAPES)))
    v = utils.parameters_to_vector(ours)
    assert v.shape == (sum(math.prod(s) for s in SHAPES),) and v.device == ours[0].device
    assert_close(v, torch.nn.utils.parameters_to_vector(theirs).detach().numpy())
    # the vector is a differentiable function of the parameters
    (v * mt.arange(v.numel(), dtype=mt.float32, device=device)).sum().backward()
    offset = 0
    for p in ours:
        n = p.numel()
        assert_close(p.grad, np.arange(offset, offset + n, dtype=np.float32).reshape(tuple(p.shape)))
        offset += n


def test_vector_to_parameters(device, torch):
    ours, theirs = _pair(torch, device)
    n = sum(p.numel() for p in ours)
    vec_np = np.linspace(-1, 1, n, dtype=np.float32)
    vec = mt.tensor(vec_np, device=device)
    assert utils.vector_to_parameters(vec, ours) is None
    torch.nn.utils.vector_to_parameters(torch.tensor(vec_np), theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == tuple(b.shape)
        assert_close(a, b.detach().numpy())
        assert a.requires_grad and a.is_leaf
    # like PyTorch, the parameters now alias the vector
    vec.mul_(2)
    assert_close(ours[0], 2 * theirs[0].detach().numpy())


@pytest.mark.parametrize("bad", [[1.0, 2.0], np.zeros(3), 3])
def test_vector_to_parameters_type_error(bad, torch):
    ours, theirs = _pair(torch, "cpu")
    with pytest.raises(TypeError) as e_ours:
        utils.vector_to_parameters(bad, ours)
    with pytest.raises(TypeError) as e_theirs:
        torch.nn.utils.vector_to_parameters(bad, theirs)
    assert str(e_ours.value) == str(e_theirs.value).replace("torch.Tensor", "minitorch_gpu.Tensor")


def test_parameters_on_different_devices():
    if not mt.cuda.is_available():
        pytest.skip("needs a GPU")
    params = [mt.zeros(2, requires_grad=True), mt.zeros(2, device="cuda", requires_grad=True)]
    with pytest.raises(TypeError, match="Found two parameters on different devices"):
        utils.parameters_to_vector(params)
    with pytest.raises(TypeError, match="Found two parameters on different devices"):
        utils.vector_to_parameters(mt.zeros(4), params)


def test_utils_namespace():
    for name in ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
                 "parameters_to_vector", "vector_to_parameters"):
        assert callable(getattr(mt.nn.utils, name))
