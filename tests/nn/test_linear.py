"""``linear`` / ``bilinear`` and ``Linear`` / ``Bilinear`` / ``Identity``: values and every gradient against
PyTorch with copied weights, gradcheck / gradgradcheck, PyTorch's initialisation, dtype / device arguments,
reprs, and the shape and dtype errors."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F

RNG = np.random.default_rng(11)


def _pair(a, device, torch, requires_grad=True):
    return (mt.tensor(a, device=device, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("in_shape", [(5,), (4, 5), (2, 3, 5), (2, 1, 3, 5), (0, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(device, torch, in_shape, bias, dtype):
    a = RNG.standard_normal(in_shape).astype(dtype)
    wa = RNG.standard_normal((3, 5)).astype(dtype)
    ba = RNG.standard_normal(3).astype(dtype)
    x, xt = _pair(a, device, torch)
    w, wt = _pair(wa, device, torch)
    b, bt = _pair(ba, device, torch) if bias else (None, None)
    y = F.linear(x, w, b)
    yt = torch.nn.functional.linear(xt, wt, bt)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert tuple(y.shape) == tuple(yt.shape)
    assert y.dtype == getattr(mt, dtype)
    assert_close(y, yt.detach().numpy(), **tol)
    g = RNG.standard_normal(tuple(yt.shape)).astype(dtype)
    y.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    assert_close(x.grad, xt.grad.numpy(), **tol)
    assert_close(w.grad, wt.grad.numpy(), **tol)
    if bias:
        assert_close(b.grad, bt.grad.numpy(), **tol)


def test_linear_node_names(device):
    x = mt.randn(4, 3, device=device, requires_grad=True)
    w = mt.randn(2, 3, device=device, requires_grad=True)
    b = mt.randn(2, device=device, requires_grad=True)
    assert F.linear(x, w, b).grad_fn.name() == "AddmmBackward0"
    assert F.linear(x, w).grad_fn.name() == "MmBackward0"


def test_linear_gradcheck(device):
    x = mt.tensor(RNG.standard_normal((2, 3, 4)), device=device, requires_grad=True)
    w = mt.tensor(RNG.standard_normal((5, 4)), device=device, requires_grad=True)
    b = mt.tensor(RNG.standard_normal(5), device=device, requires_grad=True)
    assert mt.autograd.gradcheck(F.linear, (x, w, b))
    assert mt.autograd.gradgradcheck(F.linear, (x, w, b))
    assert mt.autograd.gradcheck(lambda x, w: F.linear(x, w), (x[0], w))


def test_linear_only_needed_gradients(device, torch):
    a, wa = RNG.standard_normal((4, 3)), RNG.standard_normal((2, 3))
    x = mt.tensor(a, device=device)
    w = mt.tensor(wa, device=device, requires_grad=True)
    F.linear(x, w).sum().backward()
    assert x.grad is None
    np.testing.assert_allclose(to_np(w.grad), np.ones((4, 2)).T @ a, rtol=1e-12)
    # each gradient reads only the other operand: modifying the weight in place breaks the input's gradient
    # (RuntimeError), while modifying the input does not matter when only the weight's gradient is needed
    x2 = mt.tensor(a, device=device, requires_grad=True)
    w2 = mt.tensor(wa, device=device)
    y = F.linear(x2 * 1.0, w2)
    w2.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x3 = mt.tensor(a, device=device)
    w3 = mt.tensor(wa, device=device, requires_grad=True)
    h = w3 * 1.0
    y = F.linear(x3, h)
    h.add_(1.0)
    y.sum().backward()
    np.testing.assert_allclose(to_np(w3.grad), np.ones((4, 2)).T @ a, rtol=1e-12)


def test_linear_non_contiguous_and_shared_weight(device, torch):
    a = RNG.standard_normal((5, 4))
    wa = RNG.standard_normal((3, 5))
    x, xt = _pair(a, device, torch)
    w, wt = _pair(wa, device, torch)
    # a transposed input and a transposed (tied) weight
    y = F.linear(x.t(), w.t().t())
    yt = torch.nn.functional.linear(xt.t(), wt.t().t())
    assert_close(y, yt.detach().numpy(), rtol=1e-12)
    y.sum().backward()
    yt.sum().backward()
    assert_close(x.grad, xt.grad.numpy(), rtol=1e-12)
    assert_close(w.grad, wt.grad.numpy(), rtol=1e-12)


def test_linear_broadcast_bias_and_vector_weight(device, torch):
    a = RNG.standard_normal((4, 3))
    x, xt = _pair(a, device, torch)
    for ba in (RNG.standard_normal(1), RNG.standard_normal((4, 2))):
        w, wt = _pair(RNG.standard_normal((2, 3)), device, torch)
        b, bt = _pair(ba, device, torch)
        y, yt = F.linear(x, w, b), torch.nn.functional.linear(xt, wt, bt)
        assert_close(y, yt.detach().numpy(), rtol=1e-12)
        y.sum().backward()
        yt.sum().backward()
        assert_close(b.grad, bt.grad.numpy(), rtol=1e-12)
    v, vt = _pair(RNG.standard_normal(3), device, torch)
    assert_close(F.linear(x, v), torch.nn.functional.linear(xt, vt).detach().numpy(), rtol=1e-12)


def test_linear_errors(device):
    x = mt.ones(4, 3, device=device)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 5x2\)"):
        F.linear(x, mt.ones(2, 5, device=device))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(8x3 and 5x2\)"):
        F.linear(mt.ones(2, 4, 3, device=device), mt.ones(2, 5, device=device))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 5x2\)"):
        F.linear(mt.ones(3, device=device), mt.ones(2, 5, device=device))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        F.linear(x, mt.ones(2, 3, device=device, dtype=mt.float64))
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got Double and Float"):
        F.linear(x, mt.ones(2, 3, device=device), mt.ones(2, device=device, dtype=mt.float64))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match the existing size "
                                           r"\(3\) at non-singleton dimension 1"):
        F.linear(x, mt.ones(2, 3, device=device), mt.ones(3, device=device))
    with pytest.raises(RuntimeError, match="both arguments to linear need to be at least 1D, but they are 0D and 2D"):
        F.linear(mt.tensor(1.0, device=device), mt.ones(2, 3, device=device))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.linear([[1.0, 2.0, 3.0]], mt.ones(2, 3, device=device))


def test_linear_module_matches_torch(device, torch):
    m = mt.nn.Linear(5, 3).to(device)
    mt_ = torch.nn.Linear(5, 3).double()
    m = m.double()
    with mt.no_grad():
        m.weight.copy_(mt.tensor(mt_.weight.detach().numpy()))
        m.bias.copy_(mt.tensor(mt_.bias.detach().numpy()))
    a = RNG.standard_normal((2, 4, 5))
    x, xt = _pair(a, device, torch)
    y, yt = m(x), mt_(xt)
    assert_close(y, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal((2, 4, 3))
    y.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    assert_close(x.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert_close(m.weight.grad, mt_.weight.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert_close(m.bias.grad, mt_.bias.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert m.weight.grad.device == m.weight.device


def test_linear_module_structure(device, torch):
    m = mt.nn.Linear(3, 4, device=device)
    assert repr(m) == repr(torch.nn.Linear(3, 4)) == "Linear(in_features=3, out_features=4, bias=True)"
    assert repr(mt.nn.Linear(3, 4, bias=False)) == "Linear(in_features=3, out_features=4, bias=False)"
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    assert tuple(m.weight.shape) == (4, 3) and tuple(m.bias.shape) == (4,)
    assert isinstance(m.weight, mt.nn.Parameter) and m.weight.requires_grad
    assert m.weight.device.type == mt.device(device).type
    nb = mt.nn.Linear(3, 4, bias=False)
    assert nb.bias is None and [n for n, _ in nb.named_parameters()] == ["weight"]
    assert mt.nn.Linear(3, 4, dtype=mt.float64).weight.dtype == mt.float64
    assert mt.nn.Linear(3, 4).double()(mt.ones(2, 3, dtype=mt.float64)).dtype == mt.float64
    assert set(m.state_dict()) == {"weight", "bias"}


def test_linear_default_init(device):
    mt.manual_seed(0)
    fan_in = 64
    m = mt.nn.Linear(fan_in, 256, device=device)
    w, b = to_np(m.weight), to_np(m.bias)
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) gives the same bound as the bias
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # uniform on [-bound, bound]: mean 0, variance bound^2 / 3, filling the range
    assert abs(w.mean()) < 0.02 * bound
    assert abs(w.var() / (bound ** 2 / 3) - 1) < 0.05
    assert np.abs(w).max() > 0.99 * bound
    # reset_parameters draws again
    before = w.copy()
    m.reset_parameters()
    assert not np.array_equal(before, to_np(m.weight))
    # seeded: the same weights again
    mt.manual_seed(3)
    w1 = to_np(mt.nn.Linear(4, 4).weight)
    mt.manual_seed(3)
    np.testing.assert_array_equal(w1, to_np(mt.nn.Linear(4, 4).weight))


def test_linear_zero_fan_in():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        m = mt.nn.Linear(0, 3)
    assert tuple(m.weight.shape) == (3, 0)
    np.testing.assert_array_equal(to_np(m.bias), np.zeros(3))
    np.testing.assert_array_equal(to_np(m(mt.ones(2, 0))), np.zeros((2, 3)))


def test_linear_module_shape_error(device):
    m = mt.nn.Linear(3, 2).to(device)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x5 and 3x2\)"):
        m(mt.ones(4, 5, device=device))


def test_identity(device):
    m = mt.nn.Identity(3, foo="bar")
    x = mt.ones(2, device=device)
    assert m(x) is x
    assert repr(m) == "Identity()"
    assert list(m.parameters()) == []


@pytest.mark.parametrize("shapes", [((4, 2), (4, 3)), ((6, 4, 2), (6, 4, 3)), ((2,), (3,))])
def test_bilinear_matches_torch(device, torch, shapes):
    a1, a2 = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    wa, ba = RNG.standard_normal((5, 2, 3)), RNG.standard_normal(5)
    x1, x1t = _pair(a1, device, torch)
    x2, x2t = _pair(a2, device, torch)
    w, wt = _pair(wa, device, torch)
    b, bt = _pair(ba, device, torch)
    y, yt = F.bilinear(x1, x2, w, b), torch.nn.functional.bilinear(x1t, x2t, wt, bt)
    assert_close(y, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(tuple(yt.shape))
    y.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    for ours, theirs in ((x1, x1t), (x2, x2t), (w, wt), (b, bt)):
        assert_close(ours.grad, theirs.grad.numpy(), rtol=1e-11, atol=1e-11)


def test_bilinear_gradcheck(device):
    ts = [mt.tensor(RNG.standard_normal(s), device=device, requires_grad=True)
          for s in ((3, 2), (3, 4), (2, 2, 4), (2,))]
    assert mt.autograd.gradcheck(F.bilinear, tuple(ts))


def test_bilinear_errors(device):
    o = lambda *s: mt.ones(*s, device=device)  # noqa: E731
    with pytest.raises(RuntimeError, match="input batch dimensions do not match at dim 0: got 4 and 5"):
        F.bilinear(o(4, 2), o(5, 3), o(5, 2, 3))
    with pytest.raises(RuntimeError, match="input1 size does not match weight size: got 2 but expected 3"):
        F.bilinear(o(4, 2), o(4, 3), o(5, 3, 3))
    with pytest.raises(RuntimeError, match="input2 size does not match weight size: got 3 but expected 4"):
        F.bilinear(o(4, 2), o(4, 3), o(5, 2, 4))
    with pytest.raises(RuntimeError, match="bias size does not match weight size: got 4 but expected 5"):
        F.bilinear(o(4, 2), o(4, 3), o(5, 2, 3), o(4))
    with pytest.raises(RuntimeError, match="input dimensions do not match: got 2 and 3"):
        F.bilinear(o(4, 2), o(4, 1, 3), o(5, 2, 3))


def test_bilinear_module(device, torch):
    m = mt.nn.Bilinear(2, 3, 4, device=device)
    mt_ = torch.nn.Bilinear(2, 3, 4)
    assert repr(m) == repr(mt_)
    assert tuple(m.weight.shape) == (4, 2, 3) and tuple(m.bias.shape) == (4,)
    bound = 1 / math.sqrt(2)
    assert np.abs(to_np(m.weight)).max() <= bound and np.abs(to_np(m.bias)).max() <= bound
    assert mt.nn.Bilinear(2, 3, 4, bias=False).bias is None
    with mt.no_grad():
        m.weight.copy_(mt.tensor(mt_.weight.detach().numpy()))
        m.bias.copy_(mt.tensor(mt_.bias.detach().numpy()))
    a1 = RNG.standard_normal((5, 2)).astype(np.float32)
    a2 = RNG.standard_normal((5, 3)).astype(np.float32)
    y = m(mt.tensor(a1, device=device), mt.tensor(a2, device=device))
    yt = mt_(torch.tensor(a1), torch.tensor(a2))
    assert_close(y, yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    y.sum().backward()
    yt.sum().backward()
    assert_close(m.weight.grad, mt_.weight.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(m.bias.grad, mt_.bias.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_small_model_trains_like_torch(device, torch):
    """Embedding -> LayerNorm -> Linear -> GELU -> Linear with a residual, five SGD steps from the same weights:
    the layers' forward and backward passes compose to PyTorch's trajectory."""
    def build(nn):
        return dict(emb=nn.Embedding(11, 8), ln=nn.LayerNorm(8), fc1=nn.Linear(8, 16), act=nn.GELU(approximate="tanh"),
                    fc2=nn.Linear(16, 8), drop=nn.Dropout(0.0), head=nn.Linear(8, 11, bias=False))

    ours, theirs = build(mt.nn), build(torch.nn)
    params, tparams = [], []
    for k in ours:
        for (name, p), (_, pt) in zip(ours[k].named_parameters(), theirs[k].named_parameters()):
            with mt.no_grad():
                p.copy_(mt.tensor(pt.detach().numpy()))
        ours[k].to(device)
        params += list(ours[k].parameters())
        tparams += list(theirs[k].parameters())

    def forward(m, idx):
        h = m["emb"](idx)
        h = h + m["drop"](m["fc2"](m["act"](m["fc1"](m["ln"](h)))))
        return m["head"](h)

    idx_np = RNG.integers(0, 11, (4, 6))
    for _ in range(5):
        y = forward(ours, mt.tensor(idx_np, device=device))
        yt = forward(theirs, torch.tensor(idx_np))
        assert_close(y, yt.detach().numpy(), rtol=1e-4, atol=1e-5)
        (y * y).mean().backward()
        (yt * yt).mean().backward()
        with mt.no_grad():
            for p in params:
                p.sub_(p.grad * 0.5)
                p.grad = None
        with torch.no_grad():
            for p in tparams:
                p.sub_(p.grad * 0.5)
                p.grad = None
    for p, pt in zip(params, tparams):
        assert_close(p, pt.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_linear_outside_autograd_matches_the_node(device):
    """Outside autograd ``linear`` runs its product without a node: the node's values, no history."""
    rng = np.random.default_rng(9)
    x = mt.tensor(rng.standard_normal((2, 3, 5)).astype(np.float32), device=device, requires_grad=True)
    layer = mt.nn.Linear(5, 4).to(device)
    for bias in (layer.bias, None):
        node = F.linear(x, layer.weight, bias)
        with mt.no_grad():
            plain = F.linear(x, layer.weight, bias)
        assert node.grad_fn is not None and plain.grad_fn is None and not plain.requires_grad
        assert np.array_equal(to_np(plain), to_np(node.detach()))


def test_linear_backward_on_arrays_equals_the_graph_backward(device):
    """The plain backward computes on the arrays; under create_graph the same products are recorded ops: one
    result, for a 3-d input, with and without bias, and a non-contiguous incoming gradient."""
    rng = np.random.default_rng(10)
    x = mt.tensor(rng.standard_normal((3, 4, 5)), device=device, requires_grad=True)
    w = mt.tensor(rng.standard_normal((6, 5)), device=device, requires_grad=True)
    b = mt.tensor(rng.standard_normal(6), device=device, requires_grad=True)
    g = mt.tensor(rng.standard_normal((4, 3, 6)), device=device).transpose(0, 1)
    for bias in (b, None):
        inputs = (x, w) if bias is None else (x, w, bias)
        plain = mt.autograd.grad(F.linear(x, w, bias), inputs, g)
        graph = mt.autograd.grad(F.linear(x, w, bias), inputs, g, create_graph=True)
        for p, q in zip(plain, graph):
            assert p.grad_fn is None
            assert_close(p, to_np(q.detach()), rtol=1e-12, atol=1e-12)
