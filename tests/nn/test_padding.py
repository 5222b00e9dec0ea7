"""F.pad: constant (with values, negative pads, any number of dims), reflect, replicate and circular padding
against PyTorch (values and gradients), gradcheck / gradgradcheck in float64, dtypes, and PyTorch's
errors for each mode."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F
from minitorch_gpu.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _compare(torch, device, x, pad, **kw):
    xm = mt.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out = F.pad(xm, pad, **kw)
    ref = torch.nn.functional.pad(xt, pad, **kw)
    assert out.dtype == xm.dtype
    assert_close(out, ref.detach().numpy(), rtol=0, atol=0)
    g = _arr(*ref.shape, dtype=x.dtype)
    out.backward(mt.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    assert_close(xm.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,pad,value", [
    ((2, 3, 4, 5), (1, 2), None),
    ((2, 3, 4, 5), (2, 1, 0, 3), 1.5),
    ((2, 3, 4, 5), (1, 1, 1, 1, 1, 1, 1, 1), -2.0),
    ((2, 3, 4, 5), (-1, 2, 1, -2), None),  # negative pads crop
    ((2, 3, 4, 5), (-5, 0), None),  # cropped to nothing
    ((5,), (3, 0), 4.0),
    ((2, 3, 0), (1, 1), None),
])
def test_constant_pad_matches_torch(shape, pad, value, device, torch):
    _compare(torch, device, _arr(*shape), pad, mode="constant", value=value)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [
    ((2, 5), (2, 3)),  # 2-D: (C, W) unbatched
    ((2, 3, 5), (4, 1)),
    ((2, 3, 4, 5), (2, 1, 3, 0)),
    ((3, 4, 5), (1, 2, 2, 1)),
    ((1, 2, 3, 4, 5), (1, 2, 2, 1, 1, 2)),
    ((2, 3, 4, 5), (-1, 2, 0, 1)),  # a negative pad crops first
    ((2, 3, 4, 6), (2, -1, -2, 1)),
    ((2, 4, 5, 3), (0, 0, 1, 1, 2, 2)),  # three pads on a 4-D input: channels padded too
])
def test_non_constant_modes_match_torch(mode, shape, pad, device, torch):
    _compare(torch, device, _arr(*shape), pad, mode=mode)


def test_reflect_values():
    x = mt.arange(5.0).view(1, 5)
    np.testing.assert_array_equal(to_np(F.pad(x, (2, 3), mode="reflect")), [[2, 1, 0, 1, 2, 3, 4, 3, 2, 1]])
    np.testing.assert_array_equal(to_np(F.pad(x, (2, 3), mode="replicate")), [[0, 0, 0, 1, 2, 3, 4, 4, 4, 4]])
    np.testing.assert_array_equal(to_np(F.pad(x, (2, 3), mode="circular")), [[3, 4, 0, 1, 2, 3, 4, 0, 1, 2]])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradcheck(mode, device):
    x = mt.tensor(_arr(2, 3, 4), device=device, requires_grad=True)
    pad = (2, 1)
    assert gradcheck(lambda a: F.pad(a, pad, mode=mode), (x,))
    assert gradgradcheck(lambda a: F.pad(a, pad, mode=mode) ** 2, (x,))


def test_pad_2d_modes_gradcheck(device):
    x = mt.tensor(_arr(1, 2, 3, 4), device=device, requires_grad=True)
    for mode in ("reflect", "replicate", "circular"):
        assert gradcheck(lambda a: F.pad(a, (1, 2, 2, 1), mode=mode), (x,))
    assert gradcheck(lambda a: F.pad(a, (-1, 2, 1, -1), value=3.0), (x,))


def test_pad_dtypes(device, torch):
    x = RNG.integers(-5, 5, (2, 3, 4))
    for kw in (dict(value=2.7), dict(mode="reflect"), dict(mode="circular")):
        out = F.pad(mt.tensor(x, device=device), (1, 2), **kw)
        ref = torch.nn.functional.pad(torch.tensor(x), (1, 2), **kw)
        assert out.dtype == mt.int64
        np.testing.assert_array_equal(to_np(out), ref.numpy())
    b = F.pad(mt.tensor([[True, False]], device=device), (1, 1), value=2.7)
    np.testing.assert_array_equal(to_np(b), [[True, True, False, True]])
    f32 = F.pad(mt.ones(2, 3, device=device), (1, 1), mode="replicate")
    assert f32.dtype == mt.float32


def test_pad_returns_a_new_tensor():
    x = mt.ones(2, 3)
    y = F.pad(x, (0, 0))
    y.add_(1)
    assert float(x.sum()) == 6.0


ERRORS = [
    ((2, 3, 4, 5), (1, 1), dict(mode="reflect"), NotImplementedError),
    ((4,), (1, 1), dict(mode="circular"), NotImplementedError),
    ((3, 4), (1, 1, 1, 1), dict(mode="circular"), NotImplementedError),
    ((1, 2, 3, 4, 5, 6), (1, 1, 1, 1, 1, 1), dict(mode="replicate"), NotImplementedError),
    ((2, 3, 4, 5), (1, 1), dict(mode="foo"), NotImplementedError),
    ((2, 3, 4, 5), (1, 1, 1), {}, RuntimeError),
    ((2, 3, 4, 5), (1,) * 10, {}, RuntimeError),
    ((2, 3, 4, 5), (-3, -3), {}, RuntimeError),
    ((2, 5, 5), (5, 5), dict(mode="reflect"), RuntimeError),
    ((1, 2, 5, 6), (1, 1, 5, 1), dict(mode="reflect"), RuntimeError),
    ((1, 1, 2, 5, 6), (1, 1, 1, 1, 2, 2), dict(mode="reflect"), RuntimeError),
    ((2, 5, 5), (6, 5), dict(mode="circular"), RuntimeError),
    ((1, 2, 5, 6), (0, 0, -3, -3), dict(mode="circular"), RuntimeError),
    ((1, 2, 5, 6), (-6, -1, 0, 0), dict(mode="replicate"), RuntimeError),
    ((2, 0, 4, 4), (1, 1, 1, 1), dict(mode="reflect"), RuntimeError),
    ((2, 3, 0), (1, 1), dict(mode="replicate"), RuntimeError),
    ((2, 3, 4, 5), (1, 1, 1, 1), dict(mode="replicate", value=1.0), RuntimeError),
    ((), (1, 1), {}, RuntimeError),
    ((2, 3), 1, {}, TypeError),
    ((2, 3), (1.5, 1), {}, TypeError),
    ((2, 3), (1, 1), dict(value="a"), TypeError),
]


@pytest.mark.parametrize("shape,pad,kw,exc", ERRORS)
def test_pad_errors_match_torch(shape, pad, kw, exc, torch):
    x = np.ones(shape)
    with pytest.raises(exc) as ours:
        F.pad(mt.tensor(x), pad, **kw)
    with pytest.raises(exc) as theirs:
        torch.nn.functional.pad(torch.tensor(x), pad, **kw)
    if exc is not TypeError:
        assert str(ours.value) == str(theirs.value)


def test_pad_accepts_what_torch_accepts(torch):
    x = np.ones((2, 3))
    for pad, kw in [((), {}), ([], {}), ((1, 1), dict(mode="reflect", value=0.0))]:
        assert F.pad(mt.tensor(x), pad, **kw).shape == torch.nn.functional.pad(torch.tensor(x), pad, **kw).shape
    empty_batch = F.pad(mt.zeros(0, 2, 4, 4), (1, 1, 1, 1), mode="reflect")
    assert empty_batch.shape == (0, 2, 6, 6)
    assert F.pad(mt.zeros(2, 0, 4, 4), (1, 1, 1, 1), mode="circular").shape == (2, 0, 6, 6)
