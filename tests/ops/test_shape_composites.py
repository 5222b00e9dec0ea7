"""as_strided (a view of the storage: shared memory, offsets, overlaps, bounds errors, gradients), diff, kron,
cartesian_prod and pixel_shuffle / pixel_unshuffle against PyTorch, values and gradients."""
import numpy as np
import pytest
from helpers import grads_like_torch, to_np

import minitorch_gpu as mt

RNG = np.random.default_rng(3)


def _t(a, device, **kw):
    return mt.tensor(a, device=device, **kw)


def _grads_match(fn_m, fn_t, arrays, device, torch, tol=1e-12):
    return grads_like_torch(fn_m, fn_t, arrays, device, torch, RNG, tol)


@pytest.mark.parametrize("size,stride,offset", [((2, 2), (1, 1), None), ((3, 2), (2, 1), 1), ((4,), (0,), 3),
                                                ((2, 3), (3, 1), 0), ((0, 5), (1, 100), 0)])
def test_as_strided_values_and_grads(device, torch, size, stride, offset):
    a = RNG.standard_normal(12)
    _grads_match(lambda x: x[2:].as_strided(size, stride, offset), lambda x: x[2:].as_strided(size, stride, offset),
                 [a], device, torch)
    _grads_match(lambda x: mt.as_strided(x.reshape(3, 4).t(), size, stride, offset),
                 lambda x: torch.as_strided(x.reshape(3, 4).t(), size, stride, offset), [a], device, torch)


def test_as_strided_shares_storage(device):
    x = mt.arange(8.0, device=device)
    y = x[2:].as_strided((2, 2), (2, 1))
    assert y._base is x and y.storage_offset() == 2 and y.stride() == (2, 1)
    y[0, 1] = 100.0
    assert x[3].item() == 100.0
    x[4] = -1.0
    assert y[1, 1].item() == 5.0 and y[1, 0].item() == -1.0
    v = x.detach().clone().requires_grad_()
    w = v * 1
    w.as_strided((2,), (3,), 1).mul_(2)   # an in-place write through the view reaches the graph
    w.sum().backward()
    assert to_np(v.grad).tolist() == [1, 2, 1, 1, 2, 1, 1, 1]


def test_as_strided_errors_match_torch(device, torch):
    def msg(lib, tensor, call):
        with pytest.raises(RuntimeError) as e:
            call(tensor(np.arange(4.0)))
        return str(e.value)

    for call in (lambda x: x.as_strided((3, 3), (1, 2)), lambda x: x.as_strided((2,), (-1,)),
                 lambda x: x.as_strided((2,), (1,), -1), lambda x: x.as_strided((2, 2), (1,)),
                 lambda x: x[1:].as_strided((2,), (1,), 3)):
        assert msg(mt, lambda a: _t(a, device), call) == msg(torch, torch.tensor, call)


@pytest.mark.parametrize("kw", [{}, {"n": 2}, {"n": 3, "dim": 0}, {"dim": 0, "prepend": True},
                                {"n": 2, "append": True, "prepend": True}, {"n": 9}])
def test_diff_matches_torch(device, torch, kw):
    a = RNG.standard_normal((4, 5))
    extra = {k: RNG.standard_normal((2, 5) if kw.get("dim") == 0 else (4, 2)) for k in ("prepend", "append")
             if kw.get(k)}
    opts = {k: v for k, v in kw.items() if k not in extra}

    def fm(x, *e):
        return mt.diff(x, **opts, **dict(zip(extra, e)))

    def ft(x, *e):
        return torch.diff(x, **opts, **dict(zip(extra, e)))
    _grads_match(fm, ft, [a] + list(extra.values()), device, torch)


def test_diff_dtypes_and_errors(device, torch):
    for a in (np.array([True, False, False, True]), np.array([1, 4, 9, 16])):
        r, e = mt.diff(_t(a, device)), torch.diff(torch.tensor(a))
        assert r.tolist() == e.tolist() and str(r.dtype).endswith(str(e.dtype).rsplit(".", 1)[-1])
    assert _t([1.0, 2.0], device).diff().tolist() == [1.0]
    with pytest.raises(RuntimeError, match="diff expects input to be at least one-dimensional"):
        mt.diff(_t(1.0, device))
    with pytest.raises(RuntimeError, match="order must be non-negative but got -1"):
        mt.diff(_t([1.0], device), n=-1)
    with pytest.raises(RuntimeError, match="same dimension as input"):
        mt.diff(_t([1.0], device), prepend=_t([[1.0]], device))
    with pytest.raises(TypeError, match="argument 'prepend' must be Tensor, not float"):
        mt.diff(_t([1.0], device), prepend=2.0)


@pytest.mark.parametrize("sa,sb", [((2,), (3,)), ((2, 3), (3, 2)), ((2,), (2, 2)), ((2, 1, 3), (2, 2)), ((), (3,))])
def test_kron_matches_torch(device, torch, sa, sb):
    _grads_match(mt.kron, torch.kron, [RNG.standard_normal(sa), RNG.standard_normal(sb)], device, torch)
    a = RNG.integers(0, 5, sa)
    assert mt.kron(_t(a, device), _t(a, device)).tolist() == torch.kron(torch.tensor(a), torch.tensor(a)).tolist()


def test_cartesian_prod_matches_torch(device, torch):
    arrays = [RNG.standard_normal(2), RNG.standard_normal(3), RNG.standard_normal(1)]
    _grads_match(mt.cartesian_prod, torch.cartesian_prod, arrays, device, torch)
    _grads_match(mt.cartesian_prod, torch.cartesian_prod, arrays[:1], device, torch)
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        mt.cartesian_prod(mt.ones(2, 2, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        mt.cartesian_prod(_t([1.0], device), _t([1], device))


@pytest.mark.parametrize("shape,r", [((1, 8, 3, 2), 2), ((2, 9, 2, 2), 3), ((4, 1, 1), 2), ((2, 1, 4, 3, 5), 1)])
def test_pixel_shuffle_and_unshuffle_match_torch(device, torch, shape, r):
    a = RNG.standard_normal(shape)
    y = _grads_match(lambda x: mt.pixel_shuffle(x, r), lambda x: torch.pixel_shuffle(x, r), [a], device, torch)
    assert y.grad_fn is not None
    _grads_match(lambda x: mt.pixel_unshuffle(mt.pixel_shuffle(x, r), r), lambda x: x, [a], device, torch)


def test_pixel_shuffle_errors_match_torch(device, torch):
    calls = [lambda m, x: m.pixel_shuffle(x.reshape(4, 4), 2), lambda m, x: m.pixel_shuffle(x[:5].reshape(5, 1, 1), 2),
             lambda m, x: m.pixel_shuffle(x.reshape(4, 2, 2), 0),
             lambda m, x: m.pixel_unshuffle(x[:15].reshape(1, 5, 3), 2),
             lambda m, x: m.pixel_unshuffle(x[:10].reshape(1, 2, 5), 2),
             lambda m, x: m.pixel_unshuffle(x.reshape(4, 2, 2), 0)]
    for call in calls:
        with pytest.raises(RuntimeError) as theirs:
            call(torch, torch.arange(16.0))
        with pytest.raises(RuntimeError) as ours:
            call(mt, mt.arange(16.0, device=device))
        assert str(ours.value) == str(theirs.value)
