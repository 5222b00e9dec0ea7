"""``layer_norm`` / ``rms_norm`` / ``group_norm`` / ``instance_norm`` / ``normalize`` and ``LayerNorm`` /
``RMSNorm`` / ``GroupNorm``: values and the gradients of input, weight and bias against PyTorch with copied
weights, gradcheck and gradgradcheck in float64, the two backward paths (plain and create_graph) agreeing,
numerical stability, half precision, reprs and PyTorch's errors."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F

RNG = np.random.default_rng(5)


def _pair(a, device, torch, requires_grad=True):
    if a is None:
        return None, None
    return (mt.tensor(a, device=device, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _check(device, torch, fn, tfn, arrays, dtype="float64", g=None):
    """fn(*tensors) against tfn(*torch tensors): value and the gradient of every (non-None) input. The
    reference always computes in float64 (from the same rounded inputs), so a float32 run is held to
    float32 accuracy rather than to agreement with another float32 implementation's rounding."""
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == "float64" else dict(rtol=2e-4, atol=2e-5)
    arrays = [None if a is None else a.astype(dtype) for a in arrays]
    pairs = [(None, None) if a is None else (mt.tensor(a, device=device, requires_grad=True),
                                             torch.tensor(a.astype(np.float64), requires_grad=True))
             for a in arrays]
    y = fn(*[p[0] for p in pairs])
    yt = tfn(*[p[1] for p in pairs])
    assert y.dtype == getattr(mt, dtype)
    assert_close(y, yt.detach().numpy(), **tol)
    g = RNG.standard_normal(tuple(yt.shape)).astype(dtype) if g is None else g
    y.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g.astype(np.float64)))
    for ours, theirs in pairs:
        if ours is not None:
            assert_close(ours.grad, theirs.grad.numpy(), **tol)


# ---------------------------------------------------------------------- layer_norm

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape,norm", [((4, 6), (6,)), ((2, 3, 8), (8,)), ((2, 3, 4), (3, 4)), ((5,), (5,)),
                                        ((0, 3), (3,))])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_layer_norm_matches_torch(device, torch, shape, norm, affine, dtype):
    x = RNG.standard_normal(shape) * 3 + 1
    w = RNG.standard_normal(norm) if affine in ("both", "weight") else None
    b = RNG.standard_normal(norm) if affine in ("both", "bias") else None
    _check(device, torch, lambda x, w, b: F.layer_norm(x, norm, w, b),
           lambda x, w, b: torch.nn.functional.layer_norm(x, norm, w, b), [x, w, b], dtype)


def test_layer_norm_eps_and_list_shape(device, torch):
    x = RNG.standard_normal((3, 2, 5)) * 0.01
    _check(device, torch, lambda x: F.layer_norm(x, [2, 5], eps=1e-2),
           lambda x: torch.nn.functional.layer_norm(x, [2, 5], eps=1e-2), [x])


def test_layer_norm_gradcheck(device):
    x = mt.tensor(RNG.standard_normal((3, 2, 4)), device=device, requires_grad=True)
    w = mt.tensor(RNG.standard_normal(4), device=device, requires_grad=True)
    b = mt.tensor(RNG.standard_normal(4), device=device, requires_grad=True)
    fn = lambda x, w, b: F.layer_norm(x, (4,), w, b)  # noqa: E731
    assert mt.autograd.gradcheck(fn, (x, w, b))
    assert mt.autograd.gradgradcheck(fn, (x, w, b))
    w2 = mt.tensor(RNG.standard_normal((2, 4)), device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda x, w: F.layer_norm(x, (2, 4), w), (x, w2))
    assert mt.autograd.gradgradcheck(lambda x: F.layer_norm(x, (2, 4)), (x,))


def test_layer_norm_double_backward_matches_torch(device, torch):
    a, wa, ba = RNG.standard_normal((3, 5)), RNG.standard_normal(5), RNG.standard_normal(5)
    x, xt = _pair(a, device, torch)
    w, wt = _pair(wa, device, torch)
    b, bt = _pair(ba, device, torch)
    y = F.layer_norm(x, (5,), w, b)
    yt = torch.nn.functional.layer_norm(xt, (5,), wt, bt)
    gx, gw = mt.autograd.grad((y * y).sum(), (x, w), create_graph=True)
    gxt, gwt = torch.autograd.grad((yt * yt).sum(), (xt, wt), create_graph=True)
    assert_close(gx, gxt.detach().numpy(), rtol=1e-10, atol=1e-10)
    (gx.pow(2).sum() + gw.sum()).backward()
    (gxt.pow(2).sum() + gwt.sum()).backward()
    for ours, theirs in ((x, xt), (w, wt), (b, bt)):
        assert_close(ours.grad, theirs.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_layer_norm_two_backward_paths_agree(device):
    # the fused backward (no create_graph) and the recorded one (create_graph) compute the same gradients
    a, wa = RNG.standard_normal((4, 7)), RNG.standard_normal(7)
    g = mt.tensor(RNG.standard_normal((4, 7)), device=device)
    outs = []
    for create_graph in (False, True):
        x = mt.tensor(a, device=device, requires_grad=True)
        w = mt.tensor(wa, device=device, requires_grad=True)
        b = mt.zeros(7, device=device, dtype=mt.float64, requires_grad=True)
        grads = mt.autograd.grad(F.layer_norm(x, (7,), w, b), (x, w, b), g, create_graph=create_graph)
        outs.append([to_np(t) for t in grads])
        assert grads[0].requires_grad == create_graph
    for p, q in zip(*outs):
        np.testing.assert_allclose(p, q, rtol=1e-12, atol=1e-12)


def test_layer_norm_is_numerically_stable(device):
    # a large common offset: E[x^2] - E[x]^2 would cancel catastrophically in float32
    base = RNG.standard_normal((4, 64))
    x = mt.tensor((base + 1e4).astype(np.float32), device=device)
    y = F.layer_norm(x, (64,))
    expected = (base - base.mean(1, keepdims=True)) / np.sqrt(base.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(to_np(y), expected, atol=5e-3)
    # a constant row normalises to zeros (variance 0 + eps), not NaN
    c = F.layer_norm(mt.full((2, 8), 3.0, device=device), (8,))
    np.testing.assert_array_equal(to_np(c), np.zeros((2, 8)))


def test_layer_norm_keeps_float32_and_half(device, torch):
    x = mt.tensor(RNG.standard_normal((3, 4)).astype(np.float32), device=device)
    assert F.layer_norm(x, (4,)).dtype == mt.float32
    a = RNG.standard_normal((3, 8)).astype(np.float16)
    wa = RNG.standard_normal(8).astype(np.float16)
    y = F.layer_norm(mt.tensor(a, device=device), (8,), mt.tensor(wa, device=device))
    yt = torch.nn.functional.layer_norm(torch.tensor(a), (8,), torch.tensor(wa))
    assert y.dtype == mt.float16
    assert_close(y, yt.float().numpy(), rtol=2e-3, atol=2e-3)
    # half input with float32 parameters (PyTorch's mixed-precision case)
    y2 = F.layer_norm(mt.tensor(a, device=device), (8,), mt.tensor(wa.astype(np.float32), device=device))
    assert y2.dtype == mt.float16
    assert_close(y2, yt.float().numpy(), rtol=2e-3, atol=2e-3)


def test_layer_norm_result_may_be_modified_in_place(device, torch):
    a = RNG.standard_normal((3, 4))
    x, xt = _pair(a, device, torch)
    y, yt = F.layer_norm(x, (4,)), torch.nn.functional.layer_norm(xt, (4,))
    y.mul_(2.0)
    yt.mul_(2.0)
    y.sum().backward()
    yt.sum().backward()
    assert_close(x.grad, xt.grad.numpy(), atol=1e-10)


def test_layer_norm_input_modified_in_place_is_detected(device):
    x = mt.tensor(RNG.standard_normal((3, 4)), device=device, requires_grad=True)
    h = x * 1.0
    y = F.layer_norm(h, (4,))
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_layer_norm_errors(device):
    x = mt.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], "
                                           r"but got input of size\[2, 3\]"):
        F.layer_norm(x, (4,))
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*, 2, 3, 4\]"):
        F.layer_norm(x, (2, 3, 4))
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        F.layer_norm(x, 3)
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        F.layer_norm(x, ())
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got "
                                           r"weight of shape \[4\] and normalized_shape = \[3\]"):
        F.layer_norm(x, (3,), mt.ones(4, device=device))
    with pytest.raises(RuntimeError, match="Expected bias to be of same shape"):
        F.layer_norm(x, (3,), None, mt.ones(4, device=device))
    with pytest.raises(RuntimeError, match="mixed dtype"):
        F.layer_norm(x, (3,), mt.ones(3, device=device, dtype=mt.float64))
    with pytest.raises(NotImplementedError, match="\"LayerNormKernelImpl\" not implemented for 'Long'"):
        F.layer_norm(mt.ones(2, 3, device=device, dtype=mt.int64), (3,))


def test_layer_norm_module(device, torch):
    m = mt.nn.LayerNorm(6).double().to(device)
    mt_ = torch.nn.LayerNorm(6).double()
    assert repr(m) == repr(mt_) == "LayerNorm((6,), eps=1e-05, elementwise_affine=True, bias=True)"
    np.testing.assert_array_equal(to_np(m.weight), np.ones(6))
    np.testing.assert_array_equal(to_np(m.bias), np.zeros(6))
    wa, ba = RNG.standard_normal(6), RNG.standard_normal(6)
    with mt.no_grad():
        m.weight.copy_(mt.tensor(wa))
        m.bias.copy_(mt.tensor(ba))
    with torch.no_grad():
        mt_.weight.copy_(torch.tensor(wa))
        mt_.bias.copy_(torch.tensor(ba))
    a = RNG.standard_normal((2, 3, 6))
    x, xt = _pair(a, device, torch)
    y, yt = m(x), mt_(xt)
    assert_close(y, yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    g = RNG.standard_normal((2, 3, 6))
    y.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    assert_close(x.grad, xt.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert_close(m.weight.grad, mt_.weight.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert_close(m.bias.grad, mt_.bias.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_layer_norm_module_options(torch):
    for spec in ("LayerNorm(4)", "LayerNorm([4, 5], eps=1e-6)", "LayerNorm((4,), elementwise_affine=False)",
                 "LayerNorm(4, bias=False)"):
        m, mt_ = eval("mt.nn." + spec), eval("torch.nn." + spec)
        assert repr(m) == repr(mt_)
        assert [n for n, _ in m.named_parameters()] == [n for n, _ in mt_.named_parameters()]
    m = mt.nn.LayerNorm([2, 3])
    assert m.normalized_shape == (2, 3) and tuple(m.weight.shape) == (2, 3)
    assert mt.nn.LayerNorm(3, elementwise_affine=False).weight is None
    assert mt.nn.LayerNorm(3, dtype=mt.float64).weight.dtype == mt.float64
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\]"):
        mt.nn.LayerNorm(4)(mt.ones(2, 3))


# ---------------------------------------------------------------------- rms_norm

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm_matches_torch(device, torch, eps, dtype):
    x, w = RNG.standard_normal((3, 4, 5)), RNG.standard_normal(5)
    _check(device, torch, lambda x, w: F.rms_norm(x, (5,), w, eps),
           lambda x, w: torch.nn.functional.rms_norm(x, (5,), w, eps), [x, w], dtype)
    _check(device, torch, lambda x: F.rms_norm(x, (4, 5), eps=eps),
           lambda x: torch.nn.functional.rms_norm(x, (4, 5), eps=eps), [x], dtype)


def test_rms_norm_gradcheck(device):
    x = mt.tensor(RNG.standard_normal((3, 4)), device=device, requires_grad=True)
    w = mt.tensor(RNG.standard_normal(4), device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda x, w: F.rms_norm(x, (4,), w), (x, w))
    assert mt.autograd.gradgradcheck(lambda x, w: F.rms_norm(x, (4,), w), (x, w))


def test_rms_norm_errors(device):
    x = mt.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"expected input with shape \[\*4\], but got input of size\[2, 3\]"):
        F.rms_norm(x, (4,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.rms_norm(x, (3,), mt.ones(4, device=device))
    with pytest.raises(NotImplementedError, match="\"rms_norm\" not implemented for 'Long'"):
        F.rms_norm(mt.ones(2, 3, device=device, dtype=mt.int64), (3,))


def test_rms_norm_module(device, torch):
    for spec in ("RMSNorm(4)", "RMSNorm([4], eps=1e-6)", "RMSNorm(4, elementwise_affine=False)"):
        assert repr(eval("mt.nn." + spec)) == repr(eval("torch.nn." + spec))
    m = mt.nn.RMSNorm(4, device=device, dtype=mt.float64)
    mt_ = torch.nn.RMSNorm(4).double()
    wa = RNG.standard_normal(4)
    with mt.no_grad():
        m.weight.copy_(mt.tensor(wa))
    with torch.no_grad():
        mt_.weight.copy_(torch.tensor(wa))
    a = RNG.standard_normal((3, 4))
    x, xt = _pair(a, device, torch)
    y, yt = m(x), mt_(xt)
    assert_close(y, yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    y.pow(2).sum().backward()
    yt.pow(2).sum().backward()
    assert_close(x.grad, xt.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert_close(m.weight.grad, mt_.weight.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert mt.nn.RMSNorm(4, elementwise_affine=False).weight is None


# ---------------------------------------------------------------------- group_norm

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape,groups", [((3, 4, 5, 2), 2), ((2, 6, 7), 3), ((4, 8), 2), ((2, 4), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_matches_torch(device, torch, shape, groups, affine, dtype):
    c = shape[1]
    x = RNG.standard_normal(shape) * 2 - 1
    w = RNG.standard_normal(c) if affine else None
    b = RNG.standard_normal(c) if affine else None
    _check(device, torch, lambda x, w, b: F.group_norm(x, groups, w, b),
           lambda x, w, b: torch.nn.functional.group_norm(x, groups, w, b), [x, w, b], dtype)


def test_group_norm_gradcheck(device):
    x = mt.tensor(RNG.standard_normal((2, 4, 3)), device=device, requires_grad=True)
    w = mt.tensor(RNG.standard_normal(4), device=device, requires_grad=True)
    b = mt.tensor(RNG.standard_normal(4), device=device, requires_grad=True)
    fn = lambda x, w, b: F.group_norm(x, 2, w, b)  # noqa: E731
    assert mt.autograd.gradcheck(fn, (x, w, b))
    assert mt.autograd.gradgradcheck(fn, (x, w, b))


def test_group_norm_errors(device):
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(mt.ones(3, device=device), 1)
    with pytest.raises(RuntimeError, match=r"divisible by num_groups, but got input of shape \[2, 3, 4\] and "
                                           r"num_groups=2"):
        F.group_norm(mt.ones(2, 3, 4, device=device), 2)
    with pytest.raises(RuntimeError, match=r"Expected weight to be a vector of size equal to the number of "
                                           r"channels in input, but got weight of shape \[3\]"):
        F.group_norm(mt.ones(2, 4, 4, device=device), 2, mt.ones(3, device=device))
    with pytest.raises(RuntimeError, match="Expected bias to be a vector"):
        F.group_norm(mt.ones(2, 4, 4, device=device), 2, mt.ones(4, device=device), mt.ones(3, device=device))


def test_group_norm_module(device, torch):
    for spec in ("GroupNorm(2, 4)", "GroupNorm(2, 4, affine=False)", "GroupNorm(1, 4, eps=1e-3, bias=False)"):
        m, mt_ = eval("mt.nn." + spec), eval("torch.nn." + spec)
        assert repr(m) == repr(mt_)
        assert [n for n, _ in m.named_parameters()] == [n for n, _ in mt_.named_parameters()]
    with pytest.raises(ValueError, match=r"num_channels \(3\) must be divisible by num_groups \(2\)"):
        mt.nn.GroupNorm(2, 3)
    m = mt.nn.GroupNorm(2, 4, device=device, dtype=mt.float64)
    mt_ = torch.nn.GroupNorm(2, 4).double()
    wa, ba = RNG.standard_normal(4), RNG.standard_normal(4)
    with mt.no_grad():
        m.weight.copy_(mt.tensor(wa))
        m.bias.copy_(mt.tensor(ba))
    with torch.no_grad():
        mt_.weight.copy_(torch.tensor(wa))
        mt_.bias.copy_(torch.tensor(ba))
    a = RNG.standard_normal((3, 4, 2, 2))
    x, xt = _pair(a, device, torch)
    y, yt = m(x), mt_(xt)
    assert_close(y, yt.detach().numpy(), rtol=1e-10, atol=1e-10)
    y.pow(3).sum().backward()
    yt.pow(3).sum().backward()
    for ours, theirs in ((x, xt), (m.weight, mt_.weight), (m.bias, mt_.bias)):
        assert_close(ours.grad, theirs.grad.numpy(), rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------- instance_norm, normalize

def test_instance_norm_matches_torch(device, torch):
    x, w, b = RNG.standard_normal((3, 4, 5)), RNG.standard_normal(4), RNG.standard_normal(4)
    _check(device, torch, lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
           lambda x, w, b: torch.nn.functional.instance_norm(x, weight=w, bias=b), [x, w, b])
    rm, rv = mt.zeros(4, device=device, dtype=mt.float64), mt.ones(4, device=device, dtype=mt.float64)
    rmt, rvt = torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64)
    for _ in range(3):
        F.instance_norm(mt.tensor(x, device=device), rm, rv, momentum=0.2)
        torch.nn.functional.instance_norm(torch.tensor(x), rmt, rvt, momentum=0.2)
    assert_close(rm, rmt.numpy(), rtol=1e-12)
    assert_close(rv, rvt.numpy(), rtol=1e-12)
    y = F.instance_norm(mt.tensor(x, device=device), rm, rv, use_input_stats=False)
    yt = torch.nn.functional.instance_norm(torch.tensor(x), rmt, rvt, use_input_stats=False)
    assert_close(y, yt.numpy(), rtol=1e-12)
    assert mt.autograd.gradcheck(lambda x: F.instance_norm(x), (mt.tensor(x, device=device, requires_grad=True),))


@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1)])
def test_normalize_matches_torch(device, torch, p, dim):
    x = RNG.standard_normal((3, 4))
    _check(device, torch, lambda x: F.normalize(x, p, dim), lambda x: torch.nn.functional.normalize(x, p, dim), [x])


def test_normalize_zero_rows_and_out(device):
    y = F.normalize(mt.zeros(2, 3, device=device))
    np.testing.assert_array_equal(to_np(y), np.zeros((2, 3)))
    out = mt.empty(2, 2, device=device)
    r = F.normalize(mt.tensor([[3.0, 4.0], [1.0, 0.0]], device=device), out=out)
    assert r is out
    np.testing.assert_allclose(to_np(out), [[0.6, 0.8], [1.0, 0.0]], rtol=1e-6)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.normalize(mt.ones(3, device=device))


@pytest.mark.parametrize("params", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_outside_autograd_matches_the_node(device, torch, params):
    """Outside autograd the common call runs the primitive without a node: the node's values, no history, the
    profiler still sees it, and the checks of other calls (a torch.Size shape, a wrong weight) are kept."""
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    w = RNG.standard_normal(8).astype(np.float32) if params[0] else None
    b = RNG.standard_normal(8).astype(np.float32) if params[1] else None
    xt = mt.tensor(x, device=device, requires_grad=True)
    wt = None if w is None else mt.tensor(w, device=device, requires_grad=True)
    bt = None if b is None else mt.tensor(b, device=device, requires_grad=True)
    node = F.layer_norm(xt, (8,), wt, bt)
    with mt.no_grad():
        plain = F.layer_norm(xt, [8], wt, bt)
        sized = F.layer_norm(xt, xt.shape[-1:], wt, bt)
    assert node.grad_fn is not None and plain.grad_fn is None and not plain.requires_grad
    assert np.array_equal(to_np(plain), to_np(node.detach())) and np.array_equal(to_np(sized), to_np(plain))
    ref = torch.nn.functional.layer_norm(torch.tensor(x), (8,), None if w is None else torch.tensor(w),
                                         None if b is None else torch.tensor(b))
    assert_close(plain, ref.numpy(), rtol=1e-5, atol=1e-5)
    with mt.profiler.profile() as prof, mt.no_grad():
        F.layer_norm(xt, (8,), wt, bt)
    assert any("layer_norm" in e.key for e in prof.key_averages())
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"), mt.no_grad():
        F.layer_norm(xt, (8,), mt.ones(7, device=device))
