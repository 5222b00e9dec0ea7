"""The padding layers (Zero/Constant/Reflection/Replication/Circular x 1d/2d/3d) and PixelShuffle /
PixelUnshuffle against PyTorch's: outputs, gradients, reprs and input checks."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt

RNG = np.random.default_rng(5)
KINDS = ["Zero", "Constant", "Reflection", "Replication", "Circular"]


def _layer(lib, kind, dims, padding):
    cls = getattr(lib.nn, f"{kind}Pad{dims}d")
    return cls(padding, 1.5) if kind == "Constant" else cls(padding)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("batched", [True, False])
def test_padding_layers_match_torch(device, torch, kind, dims, batched):
    shape = (2, 3) + (4, 5, 3)[:dims] if batched else (3,) + (4, 5, 3)[:dims]
    a = RNG.standard_normal(shape)
    padding = (2, 1, 0, 3, 1, 2)[:2 * dims] if kind != "Reflection" else (2, 1, 0, 3, 1, 2)[:2 * dims]
    for pad in (padding, 1):
        ours, theirs = _layer(mt, kind, dims, pad), _layer(torch, kind, dims, pad)
        assert repr(ours) == repr(theirs)
        assert ours.padding == theirs.padding
        x, xt = mt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
        y, yt = ours(x), theirs(xt)
        assert_close(y, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
        g = RNG.standard_normal(tuple(yt.shape))
        y.backward(mt.tensor(g, device=device))
        yt.backward(torch.tensor(g))
        assert_close(x.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_circular_padding_checks_the_rank(device, torch):
    for dims in (1, 2, 3):
        x = mt.ones(*(2,) * (dims + 3), device=device)
        with pytest.raises(ValueError) as ours:
            _layer(mt, "Circular", dims, 1)(x)
        with pytest.raises(ValueError) as theirs:
            _layer(torch, "Circular", dims, 1)(torch.ones(*(2,) * (dims + 3)))
        assert str(ours.value) == str(theirs.value)


def test_zero_pad_is_a_constant_pad(device):
    layer = mt.nn.ZeroPad2d((1, 0, 2, 0))
    assert isinstance(layer, mt.nn.ConstantPad2d) and layer.value == 0.0
    assert layer(mt.ones(1, 1, 1, device=device)).tolist() == [[[0.0, 0.0], [0.0, 0.0], [0.0, 1.0]]]


@pytest.mark.parametrize("r", [1, 2, 3])
def test_pixel_shuffle_layers_match_torch(device, torch, r):
    a = RNG.standard_normal((2, 2 * r * r, 3, 2))
    ours, theirs = mt.nn.PixelShuffle(r), torch.nn.PixelShuffle(r)
    assert repr(ours) == repr(theirs)
    y = ours(mt.tensor(a, device=device))
    assert_close(y, theirs(torch.tensor(a)).numpy())
    back, tback = mt.nn.PixelUnshuffle(r), torch.nn.PixelUnshuffle(r)
    assert repr(back) == repr(tback)
    assert_close(back(y), a)
    assert mt.nn.functional.pixel_shuffle is mt.pixel_shuffle
