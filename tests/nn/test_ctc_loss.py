"""CTCLoss / F.ctc_loss against PyTorch on small random problems: every reduction, padded and concatenated
targets, repeated labels, empty targets, shorter inputs, another blank, unbatched input, zero_infinity on
impossible alignments, float32 and float64, losses and gradients."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt

RNG = np.random.default_rng(17)


def _problem(t_max=8, batch=4, classes=5, s=3, blank=0):
    x = RNG.standard_normal((t_max, batch, classes))
    labels = [c for c in range(classes) if c != blank]
    targets = RNG.choice(labels, size=(batch, s))
    targets[0, 1] = targets[0, 0]   # a repeated label needs a blank between
    input_lengths = [t_max, t_max - 2, t_max - 1, t_max][:batch]
    target_lengths = [s, s - 1, 0, s][:batch]
    return x, targets, input_lengths, target_lengths


def _compare(device, torch, x, targets, il, tl, *, logits=True, dtype=np.float64, tol=1e-10, lengths_as=list,
             **kw):
    xm = mt.tensor(x.astype(dtype), device=device, requires_grad=True)
    xt = torch.tensor(x.astype(dtype), requires_grad=True)
    lpm, lpt = (xm.log_softmax(-1), xt.log_softmax(-1)) if logits else (xm, xt)
    as_m = (lambda v: mt.tensor(v, device=device)) if lengths_as is not list else list
    as_t = torch.tensor if lengths_as is not list else list
    lm = mt.nn.functional.ctc_loss(lpm, mt.tensor(targets, device=device), as_m(il), as_m(tl), **kw)
    lt = torch.nn.functional.ctc_loss(lpt, torch.tensor(targets), as_t(il), as_t(tl), **kw)
    assert_close(lm, lt.detach().numpy(), rtol=tol, atol=tol)
    g = RNG.standard_normal(tuple(lt.shape))
    lm.backward(mt.tensor(g.astype(dtype), device=device))
    lt.backward(torch.tensor(g.astype(dtype)))
    assert_close(xm.grad, xt.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("logits", [True, False])
def test_ctc_loss_matches_torch(device, torch, reduction, logits):
    x, targets, il, tl = _problem()
    if not logits:
        x = np.log(np.exp(x) / np.exp(x).sum(-1, keepdims=True))  # normalised log-probabilities as the leaf
    _compare(device, torch, x, targets, il, tl, logits=logits, reduction=reduction)


def test_ctc_loss_concatenated_targets_tensor_lengths_and_blank(device, torch):
    x, targets, il, tl = _problem(blank=2)
    flat = np.concatenate([row[:n] for row, n in zip(targets, tl)])
    _compare(device, torch, x, flat, il, tl, reduction="none", blank=2, lengths_as=np.array)
    _compare(device, torch, x, targets, il, tl, reduction="mean", blank=2, lengths_as=np.array)


def test_ctc_loss_unbatched_and_float32(device, torch):
    x, targets, il, tl = _problem(batch=1)
    _compare(device, torch, x[:, 0], targets[0], il[0], tl[0], reduction="mean", lengths_as=np.array)
    _compare(device, torch, x, targets, il, tl, dtype=np.float32, tol=2e-5)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_impossible_alignments(device, torch, zero_infinity):
    # 3 time steps cannot emit "1 1 1" (it needs 5: blanks between repeats)
    x = RNG.standard_normal((3, 2, 4))
    targets = np.array([[1, 1, 1], [2, 3, 0]])
    lengths = ([3, 3], [3, 2])
    lm = mt.nn.CTCLoss(zero_infinity=zero_infinity, reduction="none")(
        mt.tensor(x, device=device).log_softmax(-1), mt.tensor(targets, device=device), *lengths)
    lt = torch.nn.CTCLoss(zero_infinity=zero_infinity, reduction="none")(
        torch.tensor(x).log_softmax(-1), torch.tensor(targets), *lengths)
    assert_close(lm, lt.numpy())
    if zero_infinity:
        _compare(device, torch, x, targets, *lengths, zero_infinity=True, reduction="sum")


def test_ctc_loss_errors_match_torch(device, torch):
    lp = np.log(np.full((5, 2, 4), 0.25))
    tg = np.array([[1, 2], [1, 1]])
    calls = [(RuntimeError, lambda m, T: m.nn.functional.ctc_loss(T(lp), T(tg), [5, 6], [2, 2])),
             (RuntimeError, lambda m, T: m.nn.functional.ctc_loss(T(lp), T(tg), [5, 5], [2, 3])),
             (RuntimeError, lambda m, T: m.nn.functional.ctc_loss(T(lp), T(tg), [5, 5], [2, 2], blank=4)),
             (RuntimeError, lambda m, T: m.nn.functional.ctc_loss(T(lp), T(tg), [5], [2, 2])),
             (ValueError, lambda m, T: m.nn.functional.ctc_loss(T(lp), T(tg), [5, 5], [2, 2], reduction="foo")),
             (NotImplementedError, lambda m, T: m.nn.functional.ctc_loss(T(lp.astype(np.int64)), T(tg), [5, 5],
                                                                         [2, 2]))]
    for err, call in calls:
        with pytest.raises(err) as theirs:
            call(torch, torch.tensor)
        with pytest.raises(err) as ours:
            call(mt, lambda a: mt.tensor(a, device=device))
        assert str(ours.value) == str(theirs.value)
    assert repr(mt.nn.CTCLoss(blank=1, zero_infinity=True)) == "CTCLoss()"
