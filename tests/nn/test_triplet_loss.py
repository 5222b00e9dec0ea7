"""TripletMarginLoss and TripletMarginWithDistanceLoss (and their functional forms) against PyTorch: every
reduction, p, swap, a custom distance, gradients and errors."""
import numpy as np
import pytest
from helpers import grads_like_torch

import minitorch_gpu as mt

RNG = np.random.default_rng(9)


def _run(make_m, make_t, device, torch, shape=(6, 4)):
    arrays = [RNG.standard_normal(shape) * 0.5 for _ in range(3)]
    grads_like_torch(make_m, make_t, arrays, device, torch, RNG, tol=1e-10)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [{}, {"p": 1}, {"swap": True, "margin": 2.0}, {"p": 3, "eps": 1e-3}])
def test_triplet_margin_loss_matches_torch(device, torch, reduction, kw):
    _run(lambda a, p, n: mt.nn.TripletMarginLoss(**kw, reduction=reduction)(a, p, n),
         lambda a, p, n: torch.nn.TripletMarginLoss(**kw, reduction=reduction)(a, p, n), device, torch)
    _run(lambda a, p, n: mt.nn.functional.triplet_margin_loss(a, p, n, **kw, reduction=reduction),
         lambda a, p, n: torch.nn.functional.triplet_margin_loss(a, p, n, **kw, reduction=reduction), device, torch,
         shape=(5,))


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss_matches_torch(device, torch, swap):
    _run(lambda a, p, n: mt.nn.TripletMarginWithDistanceLoss(swap=swap)(a, p, n),
         lambda a, p, n: torch.nn.TripletMarginWithDistanceLoss(swap=swap)(a, p, n), device, torch)

    def cos(lib):
        return lambda x, y: 1 - (x * y).sum(-1) / ((x * x).sum(-1) * (y * y).sum(-1)).sqrt()
    _run(lambda a, p, n: mt.nn.functional.triplet_margin_with_distance_loss(
        a, p, n, distance_function=cos(mt), margin=0.5, swap=swap, reduction="none"),
        lambda a, p, n: torch.nn.functional.triplet_margin_with_distance_loss(
            a, p, n, distance_function=cos(torch), margin=0.5, swap=swap, reduction="none"), device, torch)


def test_triplet_errors_match_torch(device, torch):
    def both(call, err):
        with pytest.raises(err) as theirs:
            call(torch, torch.ones)
        with pytest.raises(err) as ours:
            call(mt, lambda *s: mt.ones(*s, device=device))
        assert str(ours.value) == str(theirs.value)

    both(lambda m, ones: m.nn.functional.triplet_margin_loss(ones(2, 3), ones(3), ones(2, 3)), RuntimeError)
    both(lambda m, ones: m.nn.functional.triplet_margin_loss(ones(2, 3), ones(2, 3), ones(2, 3), margin=-1),
         ValueError)
    both(lambda m, ones: m.nn.functional.triplet_margin_with_distance_loss(ones(2, 3), ones(2, 3), ones(2, 3),
                                                                           margin=0), ValueError)
    both(lambda m, ones: m.nn.TripletMarginLoss(margin=0), ValueError)
    both(lambda m, ones: m.nn.TripletMarginWithDistanceLoss(margin=0), ValueError)
