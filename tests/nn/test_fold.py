"""``nn.Fold`` / ``nn.Unfold`` against PyTorch's modules: outputs, input gradients, reprs (the functional forms
are tested in test_conv.py)."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt

RNG = np.random.default_rng(3)

CASES = [
    ((2, 3, 6, 7), dict(kernel_size=2)),
    ((2, 3, 6, 7), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
    ((3, 5, 5), dict(kernel_size=3, padding=1)),  # unbatched
]


def _roundtrip(L, x, shape, kw):
    cols = L.nn.Unfold(**kw)(x)
    return cols, L.nn.Fold(output_size=shape[-2:], **kw)(cols)


@pytest.mark.parametrize("shape,kw", CASES)
def test_unfold_then_fold_matches_torch(device, torch, shape, kw):
    a = RNG.standard_normal(shape)
    x = mt.tensor(a, device=device, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    ours, theirs = _roundtrip(mt, x, shape, kw), _roundtrip(torch, xt, shape, kw)
    for o, t in zip(ours, theirs):
        assert_close(o, t.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(tuple(theirs[1].shape))
    (ours[1] * mt.tensor(g, device=device)).sum().backward()
    (theirs[1] * torch.tensor(g)).sum().backward()
    assert_close(x.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_reprs_and_errors_match_torch(torch):
    for args, kw in [((2,), {}), ((3,), dict(dilation=2, padding=1, stride=2))]:
        assert repr(mt.nn.Unfold(*args, **kw)) == repr(torch.nn.Unfold(*args, **kw))
        assert repr(mt.nn.Fold((5, 6), *args, **kw)) == repr(torch.nn.Fold((5, 6), *args, **kw))
    with pytest.raises(RuntimeError) as ours:
        mt.nn.Unfold(3)(mt.zeros(1, 1, 2, 2))
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.Unfold(3)(torch.zeros(1, 1, 2, 2))
    assert str(ours.value) == str(theirs.value)
    assert not list(mt.nn.Fold(4, 2).parameters())
