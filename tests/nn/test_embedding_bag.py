"""EmbeddingBag / F.embedding_bag against PyTorch: the three modes, 2-D input and offsets (empty bags,
include_last_offset), per_sample_weights, padding_idx, max_norm, gradients of the weight and of the sample
weights, the module's repr and init, and the errors."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt

RNG = np.random.default_rng(21)
CASES = [  # (input, offsets, include_last_offset)
    (np.array([[1, 2, 4], [4, 3, 0]]), None, False),
    (np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 2, 2, 5]), False),
    (np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 3, 3, 8]), True),
    (np.array([7, 7, 0]), np.array([0]), False),
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("padding_idx", [None, 4, -6])
def test_embedding_bag_matches_torch(device, torch, mode, case, padding_idx):
    idx, offsets, last = CASES[case]
    w = RNG.standard_normal((10, 3))
    psw = RNG.standard_normal(idx.shape) if mode == "sum" else None
    wm, wt = mt.tensor(w, device=device, requires_grad=True), torch.tensor(w, requires_grad=True)
    pm = None if psw is None else mt.tensor(psw, device=device, requires_grad=True)
    pt = None if psw is None else torch.tensor(psw, requires_grad=True)
    om = None if offsets is None else mt.tensor(offsets, device=device)
    ot = None if offsets is None else torch.tensor(offsets)
    ym = mt.nn.functional.embedding_bag(mt.tensor(idx, device=device), wm, om, mode=mode, per_sample_weights=pm,
                                        include_last_offset=last, padding_idx=padding_idx)
    yt = torch.nn.functional.embedding_bag(torch.tensor(idx), wt, ot, mode=mode, per_sample_weights=pt,
                                           include_last_offset=last, padding_idx=padding_idx)
    assert_close(ym, yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(tuple(yt.shape))
    ym.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    assert_close(wm.grad, wt.grad.numpy(), rtol=1e-12, atol=1e-12)
    if pm is not None:
        assert_close(pm.grad, pt.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_embedding_bag_module_and_max_norm(device, torch):
    mt.manual_seed(0)
    bag = mt.nn.EmbeddingBag(10, 4, max_norm=1.0, mode="sum", padding_idx=2, device=device)
    assert repr(bag) == repr(torch.nn.EmbeddingBag(10, 4, max_norm=1.0, mode="sum", padding_idx=2))
    assert bag.weight[2].abs().sum().item() == 0
    w = bag.weight.detach().cpu().numpy().copy()
    tbag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), freeze=False, max_norm=1.0, mode="sum",
                                                 padding_idx=2)
    idx, offsets = np.array([1, 2, 3, 3, 5]), np.array([0, 3])
    y = bag(mt.tensor(idx, device=device), mt.tensor(offsets, device=device))
    yt = tbag(torch.tensor(idx), torch.tensor(offsets))
    assert_close(y, yt.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert_close(bag.weight, tbag.weight.detach().numpy(), rtol=1e-6, atol=1e-6)   # rows renormed in place
    frozen = mt.nn.EmbeddingBag.from_pretrained(mt.tensor(w, device=device))
    assert not frozen.weight.requires_grad and frozen.mode == "mean"


def test_embedding_bag_errors_match_torch(device, torch):
    w = np.ones((5, 3), np.float32)
    calls = [
        (ValueError, lambda m, T: m.nn.functional.embedding_bag(T([[1, 2]]), T(w), offsets=T([0]))),
        (ValueError, lambda m, T: m.nn.functional.embedding_bag(T([1, 2]), T(w))),
        (ValueError, lambda m, T: m.nn.functional.embedding_bag(T([1, 2]), T(w), offsets=T([[0]]))),
        (RuntimeError, lambda m, T: m.nn.functional.embedding_bag(T([1, 2]), T(w), offsets=T([1]))),
        (ValueError, lambda m, T: m.nn.functional.embedding_bag(T([1, 2]), T(w), offsets=T([0]), mode="foo")),
        (NotImplementedError, lambda m, T: m.nn.functional.embedding_bag(T([1, 2]), T(w), offsets=T([0]),
                                                                         per_sample_weights=T([1.0, 1.0]))),
        (RuntimeError, lambda m, T: m.nn.functional.embedding_bag(T([1, 2]), T(w), offsets=T([0]), padding_idx=7)),
        (RuntimeError, lambda m, T: m.nn.functional.embedding_bag(T([1, 7]), T(w), offsets=T([0]))),
        (RuntimeError, lambda m, T: m.nn.functional.embedding_bag(T([1, 2]), T(w), offsets=T([0, 3]))),
        (AssertionError, lambda m, T: m.nn.EmbeddingBag(5, 3, padding_idx=9)),
    ]
    for err, call in calls:
        with pytest.raises(err) as theirs:
            call(torch, torch.tensor)
        with pytest.raises(err) as ours:
            call(mt, lambda a: mt.tensor(a, device=device))
        # our type names differ from PyTorch's only by the package's name; PyTorch appends a tensor's print to one
        mine = str(ours.value).replace("minitorch_gpu.tensor.", "torch.").replace("minitorch_gpu.", "torch.")
        assert mine == str(theirs.value).splitlines()[0]
