"""cdist (every compute_mode, p = 0, 1, 2, 3, inf, batched and broadcast) and pairwise_distance against PyTorch:
values, gradients (zero where a distance is zero), gradcheck, errors."""
import math

import numpy as np
import pytest
from helpers import grads_like_torch

import minitorch_gpu as mt

RNG = np.random.default_rng(11)


def _t(a, device, **kw):
    return mt.tensor(a, device=device, **kw)


def _compare(fn_m, fn_t, arrays, device, torch, tol=1e-9):
    return grads_like_torch(fn_m, fn_t, arrays, device, torch, RNG, tol)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, 0.0])
@pytest.mark.parametrize("shapes", [((4, 3), (5, 3)), ((2, 4, 3), (2, 6, 3)), ((2, 1, 4, 3), (3, 5, 3)),
                                    ((30, 2), (4, 2))])
def test_cdist_matches_torch(device, torch, p, shapes):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    b[..., 0, :] = a[..., 0, :] if a.shape[:-2] == b.shape[:-2] else b[..., 0, :]  # a zero distance
    _compare(lambda x, y: mt.cdist(x, y, p=p), lambda x, y: torch.cdist(x, y, p=p), [a, b], device, torch)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist",
                                  "use_mm_for_euclid_dist_if_necessary"])
def test_cdist_compute_modes(device, torch, mode):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((5, 4))
    b[1] = a[2]
    # through the matrix product, the zero distance is sqrt of the cancellation's rounding (~1e-8 in float64),
    # whose value depends on each BLAS's order of summation
    tol = 1e-7 if mode == "use_mm_for_euclid_dist" else 1e-9
    _compare(lambda x, y: mt.cdist(x, y, compute_mode=mode), lambda x, y: torch.cdist(x, y, compute_mode=mode),
             [a, b], device, torch, tol)
    x = _t(a, device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: mt.cdist(t, _t(b, device) + 0.1, compute_mode=mode), (x,))


def test_cdist_errors_match_torch(device, torch):
    calls = [lambda m, T: m.cdist(T(np.ones((3, 2))), T(np.ones((4, 2))), p=-1),
             lambda m, T: m.cdist(T(np.ones((3, 2))), T(np.ones((4, 3)))),
             lambda m, T: m.cdist(T(np.ones(3)), T(np.ones((4, 3)))),
             lambda m, T: m.cdist(T(np.ones((3, 2), np.int64)), T(np.ones((4, 2), np.int64)))]
    for call in calls:
        with pytest.raises(RuntimeError) as theirs:
            call(torch, torch.tensor)
        with pytest.raises(RuntimeError) as ours:
            call(mt, lambda a: _t(a, device))
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="foo is not a valid value for compute_mode"):
        mt.cdist(_t(np.ones((3, 2)), device), _t(np.ones((4, 2)), device), compute_mode="foo")


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_and_module(device, torch, p, keepdim):
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    _compare(lambda x, y: mt.nn.functional.pairwise_distance(x, y, p=p, keepdim=keepdim),
             lambda x, y: torch.nn.functional.pairwise_distance(x, y, p=p, keepdim=keepdim), [a, b], device, torch)
    _compare(lambda x, y: mt.nn.PairwiseDistance(p, 1e-3, keepdim)(x, y),
             lambda x, y: torch.nn.PairwiseDistance(p, 1e-3, keepdim)(x, y), [a, b[0]], device, torch)
    assert mt.pairwise_distance is mt.nn.functional.pairwise_distance
