"""searchsorted, bucketize, histc and histogram against PyTorch: ties on either side, NaN, sorter, batched
boundaries, int32 results, scalars, empty inputs, and PyTorch's errors."""
import numpy as np
import pytest
from helpers import to_np

import minitorch_gpu as mt

RNG = np.random.default_rng(7)


def _t(a, device, **kw):
    return mt.tensor(a, device=device, **kw)


def _same(ours, theirs):
    assert str(ours.dtype).rsplit(".", 1)[-1] == str(theirs.dtype).rsplit(".", 1)[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(to_np(ours), theirs.numpy())


def _boundaries(*shape):
    # repeated values, so that left and right differ
    return np.sort(RNG.integers(0, 8, size=shape).astype(np.float64), axis=-1)


@pytest.mark.parametrize("bshape,vshape", [((6,), (4, 5)), ((6,), ()), ((3, 7), (3, 4)), ((2, 3, 5), (2, 3, 1)),
                                           ((1,), (3,)), ((0,), (3,)), ((4,), (0,))])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_matches_torch(device, torch, bshape, vshape, right):
    b = _boundaries(*bshape)
    v = RNG.integers(-1, 9, size=vshape).astype(np.float64) + RNG.choice([0.0, 0.5], size=vshape)
    _same(mt.searchsorted(_t(b, device), _t(v, device), right=right),
          torch.searchsorted(torch.tensor(b), torch.tensor(v), right=right))
    side = "right" if right else "left"
    _same(mt.searchsorted(_t(b, device), _t(v, device), side=side, out_int32=True),
          torch.searchsorted(torch.tensor(b), torch.tensor(v), side=side, out_int32=True))


def test_searchsorted_sorter_nan_scalars_and_mixed_dtypes(device, torch):
    b = np.array([5.0, 1.0, np.nan, 3.0, 3.0])
    sorter = np.argsort(b, kind="stable")
    v = np.array([0.0, 3.0, 4.0, 6.0, np.nan])
    for right in (False, True):
        _same(mt.searchsorted(_t(b, device), _t(v, device), sorter=_t(sorter, device), right=right),
              torch.searchsorted(torch.tensor(b), torch.tensor(v), sorter=torch.tensor(sorter), right=right))
    s = np.array([1, 3, 5, 7])
    _same(mt.searchsorted(_t(s, device), 4), torch.searchsorted(torch.tensor(s), 4))
    _same(mt.searchsorted(_t(s, device), 4.5, right=True), torch.searchsorted(torch.tensor(s), 4.5, right=True))
    _same(mt.searchsorted(_t(s, device), _t([1.5, 3.0], device)),
          torch.searchsorted(torch.tensor(s), torch.tensor([1.5, 3.0])))
    out = mt.empty(2, dtype=mt.int64, device=device)
    assert mt.searchsorted(_t(s, device), _t([2, 9], device), out=out) is out
    assert out.tolist() == [1, 4]


def _message(fn):
    with pytest.raises(RuntimeError) as e:
        fn()
    return str(e.value)


def test_searchsorted_errors_match_torch(device, torch):
    def both(call):
        theirs = _message(lambda: call(torch, lambda a: torch.tensor(a)))
        ours = _message(lambda: call(mt, lambda a: _t(a, device)))
        assert ours == theirs

    s, v = [1.0, 3.0, 5.0, 7.0], [[3.0, 6.0], [3.0, 6.0]]
    both(lambda m, T: m.searchsorted(T(s), T(v), side="left", right=True))
    both(lambda m, T: m.searchsorted(T(s), T(v), side="mid"))
    both(lambda m, T: m.searchsorted(T(np.zeros((3, 4))), T(np.zeros((2, 3)))))
    both(lambda m, T: m.searchsorted(T(np.zeros((2, 4))), T(np.zeros(3))))
    both(lambda m, T: m.searchsorted(T(3.0), T(s)))
    both(lambda m, T: m.searchsorted(T(s), T(v), sorter=T([0, 1, 2])))
    both(lambda m, T: m.searchsorted(T(s), T(v), sorter=T([0.0, 1.0, 2.0, 3.0])))
    both(lambda m, T: m.searchsorted(T(s), T(v), sorter=T([0, 1, 2, 7])))
    both(lambda m, T: m.bucketize(T(v), T(np.zeros((2, 2)))))


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_matches_torch(device, torch, right):
    b = np.array([1.0, 3.0, 3.0, 5.0, 9.0])
    v = np.array([[0.0, 1.0, 3.0], [4.0, 9.0, 10.0]])
    _same(mt.bucketize(_t(v, device), _t(b, device), right=right),
          torch.bucketize(torch.tensor(v), torch.tensor(b), right=right))
    _same(mt.bucketize(3, _t(b, device), out_int32=True), torch.bucketize(3, torch.tensor(b), out_int32=True))
    x = _t(v, device, requires_grad=True)
    assert not mt.bucketize(x, _t(b, device)).requires_grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [{}, {"bins": 7}, {"bins": 5, "min": -1, "max": 1}, {"bins": 3, "min": 0.25,
                                                                                    "max": 0.25}])
def test_histc_matches_torch(device, torch, dtype, kw):
    a = np.concatenate([RNG.standard_normal(200), [-1.0, 1.0, 0.0, 0.25]]).astype(dtype)
    _same(mt.histc(_t(a, device), **kw), torch.histc(torch.tensor(a), **kw))
    _same(_t(a, device).histc(**kw), torch.tensor(a).histc(**kw))


def test_histc_edge_cases_and_errors(device, torch):
    for a in ([], [2.0, 2.0], [1.0, 5.0, 5.0]):
        _same(mt.histc(_t(a, device), bins=4), torch.histc(torch.tensor(a), bins=4))
    x = _t([1.0, 2.0], device, requires_grad=True)
    assert not mt.histc(x, bins=3).requires_grad
    for call in (lambda m, T: m.histc(T([1.0, 2.0]), bins=0), lambda m, T: m.histc(T([1.0, 2.0]), 3, 3, 1),
                 lambda m, T: m.histc(T([1.0, float("inf")]), bins=3)):
        assert _message(lambda: call(mt, lambda a: _t(a, device))) == _message(
            lambda: call(torch, lambda a: torch.tensor(a)))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        mt.histc(_t([1, 2], device))


def _same_hist(ours, theirs, rtol=1e-6):
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape) and o.dtype is getattr(mt, str(t.dtype).rsplit(".", 1)[-1])
        np.testing.assert_allclose(to_np(o), t.numpy(), rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("kw", [{"bins": 4}, {"bins": 6, "range": (-1.0, 2.0)}, {"bins": 5, "density": True},
                                {"bins": 3, "range": (0.0, 3.0), "density": True, "weight": True}])
def test_histogram_matches_torch(device, torch, kw):
    a = np.concatenate([RNG.uniform(-2, 3, 100), [0.0, 3.0, -1.0, 2.0]]).astype(np.float32)
    kt, km = dict(kw), dict(kw)
    if kw.get("weight"):
        w = RNG.uniform(0, 2, a.shape).astype(np.float32)
        kt["weight"], km["weight"] = torch.tensor(w), _t(w, device)
    ours, theirs = mt.histogram(_t(a, device), **km), torch.histogram(torch.tensor(a), **kt)
    _same_hist(ours, theirs)
    assert ours.hist is ours[0] and ours.bin_edges is ours[1]
    _same_hist(_t(a, device).histogram(**km), theirs)


def test_histogram_tensor_bins_and_edge_cases(device, torch):
    a = np.array([1.0, 2.0, 1.0, 3.0, 0.5])
    for edges in ([0.0, 1.5, 3.0], [1.0, 2.0, 2.5, 3.0], [3.0, 1.0]):
        e = np.array(edges)
        _same_hist(mt.histogram(_t(a, device), _t(e, device)), torch.histogram(torch.tensor(a), torch.tensor(e)))
    for a2 in ([], [2.0, 2.0]):
        _same_hist(mt.histogram(_t(a2, device), bins=3), torch.histogram(torch.tensor(a2), bins=3))
    _same_hist(mt.histogram(_t([1.0, 2.0], device), bins=3, range=(2.0, 2.0)),
               torch.histogram(torch.tensor([1.0, 2.0]), bins=3, range=(2.0, 2.0)))
    for call in (lambda m, T: m.histogram(T([1.0]), bins=-1),
                 lambda m, T: m.histogram(T([1.0, 2.0]), bins=4, range=(3.0, 1.0)),
                 lambda m, T: m.histogram(T(np.array([1.0, 2.0])), T([1.0, 2.0]))):
        assert _message(lambda: call(mt, lambda a: _t(a, device))) == _message(
            lambda: call(torch, lambda a: torch.tensor(a)))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        mt.histogram(_t([1, 2], device), bins=3)
