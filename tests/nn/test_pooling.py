"""Pooling: max / average / adaptive / power-average pooling in 1-3 dims against PyTorch (values, indices
and input gradients) over kernel, stride, padding, dilation, ceil_mode, count_include_pad,
divisor_override, odd sizes and unbatched inputs; gradcheck / gradgradcheck in float64; PyTorch's errors;
the pooling layers and their reprs."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn as nn
import minitorch_gpu.nn.functional as F
from minitorch_gpu.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _compare(torch, device, name, x, rtol=1e-10, atol=1e-12, **kw):
    xm = mt.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out = getattr(F, name)(xm, **kw)
    ref = getattr(torch.nn.functional, name)(xt, **kw)
    if isinstance(ref, tuple):
        assert isinstance(out, tuple)
        assert out[1].dtype == mt.int64
        np.testing.assert_array_equal(to_np(out[1]), ref[1].numpy())
        out, ref = out[0], ref[0]
    assert out.dtype == xm.dtype
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    g = _arr(*ref.shape, dtype=x.dtype)
    out.backward(mt.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    assert_close(xm.grad, xt.grad.numpy(), rtol=rtol, atol=atol)


MAX2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1)),
    dict(kernel_size=3, stride=1, padding=1),  # overlapping windows share inputs
    dict(kernel_size=2, stride=3, ceil_mode=True),
]


@pytest.mark.parametrize("kw", MAX2D)
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 5)])
def test_max_pool2d_matches_torch(kw, shape, device, torch):
    _compare(torch, device, "max_pool2d", _arr(*shape), return_indices=True, **kw)


def test_max_pool1d_3d_match_torch(device, torch):
    _compare(torch, device, "max_pool1d", _arr(2, 3, 9), kernel_size=3, stride=2, padding=1, ceil_mode=True,
             return_indices=True)
    _compare(torch, device, "max_pool1d", _arr(3, 8), kernel_size=2, dilation=3)
    _compare(torch, device, "max_pool3d", _arr(1, 2, 4, 5, 3), kernel_size=2, stride=1, padding=1,
             return_indices=True)


def test_max_pool_float32_and_ints(device, torch):
    _compare(torch, device, "max_pool2d", _arr(2, 3, 6, 6, dtype=np.float32), rtol=0, atol=0, kernel_size=2)
    x = RNG.integers(-9, 9, (2, 3, 6, 5))
    out = F.max_pool2d(mt.tensor(x, device=device), 3, 2, 1)
    np.testing.assert_array_equal(to_np(out), torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1).numpy())
    assert out.dtype == mt.int64


def test_max_pool_nan_and_ties(device):
    x = mt.tensor([[[[1.0, float("nan")], [3.0, 2.0]]]], device=device)
    assert np.isnan(to_np(F.max_pool2d(x, 2))).all()
    t = mt.tensor([[[[2.0, 2.0], [2.0, 1.0]]]], device=device)
    _, idx = F.max_pool2d(t, 2, return_indices=True)
    assert idx.item() == 0  # the first maximum, as PyTorch


AVG2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, divisor_override=4),
]


@pytest.mark.parametrize("kw", AVG2D)
@pytest.mark.parametrize("cip", [True, False])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 5, 5)])
def test_avg_pool2d_matches_torch(kw, cip, shape, device, torch):
    _compare(torch, device, "avg_pool2d", _arr(*shape), count_include_pad=cip, **kw)


@pytest.mark.parametrize("cip", [True, False])
def test_avg_pool1d_3d_match_torch(cip, device, torch):
    _compare(torch, device, "avg_pool1d", _arr(2, 3, 9), kernel_size=3, stride=2, padding=1, ceil_mode=True,
             count_include_pad=cip)
    _compare(torch, device, "avg_pool3d", _arr(1, 2, 5, 4, 3), kernel_size=2, stride=2, padding=1, ceil_mode=True,
             count_include_pad=cip)


def test_avg_pool_float32_and_ints(device, torch):
    _compare(torch, device, "avg_pool2d", _arr(2, 3, 6, 6, dtype=np.float32), rtol=1e-6, atol=1e-6,
             kernel_size=3, padding=1, stride=2)
    x = RNG.integers(-20, 20, (2, 3, 7, 6))
    out = F.avg_pool2d(mt.tensor(x, device=device), 3, 2, 1)
    np.testing.assert_array_equal(to_np(out), torch.nn.functional.avg_pool2d(torch.tensor(x), 3, 2, 1).numpy())


@pytest.mark.parametrize("size", [(3, 4), (5, None), 1, (7, 6), (2, 1)])
def test_adaptive_pools2d_match_torch(size, device, torch):
    _compare(torch, device, "adaptive_avg_pool2d", _arr(2, 3, 7, 6), output_size=size)
    _compare(torch, device, "adaptive_max_pool2d", _arr(2, 3, 7, 6), output_size=size, return_indices=True)


def test_adaptive_pools_other_ranks_match_torch(device, torch):
    _compare(torch, device, "adaptive_avg_pool2d", _arr(3, 5, 4), output_size=3)
    _compare(torch, device, "adaptive_max_pool2d", _arr(3, 4, 5), output_size=(4, 5), return_indices=True)
    _compare(torch, device, "adaptive_avg_pool1d", _arr(2, 3, 7), output_size=4)
    _compare(torch, device, "adaptive_max_pool1d", _arr(2, 3, 7), output_size=4, return_indices=True)
    _compare(torch, device, "adaptive_avg_pool3d", _arr(1, 2, 5, 4, 3), output_size=(2, 3, 2))
    _compare(torch, device, "adaptive_max_pool3d", _arr(1, 2, 5, 4, 3), output_size=(2, 3, 2), return_indices=True)


def test_lp_pool_matches_torch(device, torch):
    _compare(torch, device, "lp_pool2d", np.abs(_arr(2, 3, 6, 6)) + 0.1, norm_type=2, kernel_size=2)
    _compare(torch, device, "lp_pool1d", np.abs(_arr(2, 3, 7)) + 0.1, norm_type=3, kernel_size=2, stride=1)


def test_pool_gradcheck(device):
    x = mt.tensor(_arr(2, 2, 5, 4), device=device, requires_grad=True)
    for fn in (lambda a: F.max_pool2d(a, 2, 1, 1),
               lambda a: F.max_pool2d(a, 3, 2, 1, ceil_mode=True),
               lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False),
               lambda a: F.avg_pool2d(a, 2, divisor_override=3),
               lambda a: F.adaptive_avg_pool2d(a, (3, 2)),
               lambda a: F.adaptive_max_pool2d(a, 3)):
        assert gradcheck(fn, (x,))
    assert gradgradcheck(lambda a: F.max_pool2d(a, 2, 1, 1) ** 2, (x,))
    assert gradgradcheck(lambda a: F.avg_pool2d(a, 3, 2, 1) ** 2, (x,))
    y = mt.tensor(_arr(2, 7), device=device, requires_grad=True)
    assert gradcheck(lambda a: F.max_pool1d(a, 3, 2, 1), (y,))
    assert gradcheck(lambda a: F.avg_pool1d(a, 3, 2, 1, count_include_pad=False), (y,))


def test_pool_results_are_independent_of_the_input(device):
    before = _arr(1, 1, 4, 4)
    x = mt.tensor(before, device=device)
    for out in (F.max_pool2d(x, 1), F.avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, 4), F.adaptive_max_pool2d(x, 4)):
        out.add_(1.0)
        np.testing.assert_array_equal(to_np(x), before)


# ---------------------------------------------------------------------------------------------- errors

ERRORS = [
    ("max_pool2d", (2, 4, 10, 10), dict(kernel_size=3, padding=2)),
    ("max_pool2d", (2, 4, 10, 10), dict(kernel_size=0)),
    ("max_pool2d", (2, 4, 10, 10), dict(kernel_size=3, stride=0)),
    ("max_pool2d", (2, 4, 10, 10), dict(kernel_size=11)),
    ("max_pool2d", (4, 4), dict(kernel_size=2)),
    ("max_pool2d", (2, 4, 10, 10), dict(kernel_size=3, dilation=0)),
    ("avg_pool2d", (2, 4, 10, 10), dict(kernel_size=3, padding=2)),
    ("avg_pool2d", (2, 4, 10, 10), dict(kernel_size=11)),
    ("avg_pool2d", (2, 4, 10, 10), dict(kernel_size=2, divisor_override=0)),
    ("adaptive_avg_pool2d", (2, 4, 10, 10), dict(output_size=(3,))),
    ("adaptive_avg_pool2d", (4, 4), dict(output_size=2)),
]


@pytest.mark.parametrize("name,shape,kw", ERRORS)
def test_pool_errors_match_torch(name, shape, kw, torch):
    x = np.ones(shape, dtype=np.float32)
    with pytest.raises(RuntimeError) as ours:
        getattr(F, name)(mt.tensor(x), **kw)
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch.nn.functional, name)(torch.tensor(x), **kw)
    assert str(ours.value) == str(theirs.value)


def test_adaptive_output_size_errors(torch):
    with pytest.raises(RuntimeError, match="elements of output_size must be greater than or equal to 0"):
        F.adaptive_avg_pool2d(mt.ones(2, 3, 4, 4), -1)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        F.adaptive_avg_pool2d(mt.ones(2, 3, 4, 4, dtype=mt.int64), 2)
    with pytest.raises(TypeError):
        F.max_pool2d(mt.ones(2, 3, 4, 4), 2.5)


# ---------------------------------------------------------------------------------------------- layers

LAYERS = [
    ("MaxPool1d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 3, 9)),
    ("MaxPool2d", (3,), {}, (2, 3, 7, 6)),
    ("MaxPool2d", (3, 2, 1, 2, False, True), {}, (2, 3, 9, 8)),
    ("MaxPool3d", (2,), dict(padding=1), (1, 2, 4, 3, 5)),
    ("AvgPool1d", (3,), dict(padding=1, count_include_pad=False), (2, 3, 8)),
    ("AvgPool2d", (3, 2, 1, True, False, 2), {}, (2, 3, 7, 6)),
    ("AvgPool2d", ((2, 3),), dict(stride=(1, 2)), (3, 5, 7)),
    ("AvgPool3d", (2,), dict(stride=1), (1, 2, 3, 4, 3)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((3, None),), {}, (2, 3, 7, 6)),
    ("AdaptiveAvgPool3d", (2,), {}, (1, 2, 5, 4, 3)),
    ("AdaptiveMaxPool1d", (4,), {}, (2, 3, 9)),
    ("AdaptiveMaxPool2d", (3,), {}, (2, 3, 7, 6)),
    ("AdaptiveMaxPool3d", ((2, 3, 2),), {}, (1, 2, 5, 4, 3)),
    ("LPPool1d", (2, 3), dict(stride=2), (2, 3, 9)),
    ("LPPool2d", (2, 2), {}, (2, 3, 6, 6)),
]


@pytest.mark.parametrize("name,args,kw,shape", LAYERS)
def test_pool_layers_match_torch(name, args, kw, shape, device, torch):
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    x = np.abs(_arr(*shape, dtype=np.float32)) + 0.1
    xm = mt.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out, ref = ours(xm), theirs(xt)
    if isinstance(ref, tuple):
        np.testing.assert_array_equal(to_np(out[1]), ref[1].numpy())
        out, ref = out[0], ref[0]
    assert_close(out, ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = _arr(*ref.shape, dtype=np.float32)
    out.backward(mt.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    assert_close(xm.grad, xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_pool_layers_return_indices(device, torch):
    ours = nn.MaxPool2d(2, return_indices=True)
    out, idx = ours(mt.tensor(_arr(1, 2, 4, 4), device=device))
    assert idx.dtype == mt.int64 and idx.shape == out.shape
    out, idx = nn.AdaptiveMaxPool2d(2, return_indices=True)(mt.tensor(_arr(1, 2, 5, 4), device=device))
    assert idx.shape == (1, 2, 2, 2)
    assert repr(nn.MaxPool2d(2, return_indices=True)) == repr(torch.nn.MaxPool2d(2, return_indices=True))


# ------------------------------------------------------------------------------------------ interpolate

INTERP = [
    ("nearest", (2, 3, 5, 7)), ("nearest", (2, 3, 5)), ("nearest", (1, 2, 3, 4, 5)), ("nearest-exact", (2, 3, 5, 7)),
    ("linear", (2, 3, 7)), ("bilinear", (2, 3, 5, 7)), ("bicubic", (2, 3, 5, 7)), ("trilinear", (1, 2, 3, 4, 5)),
    ("area", (2, 3, 7, 6)),
]


@pytest.mark.parametrize("mode,shape", INTERP)
@pytest.mark.parametrize("how", [dict(size=(3, 9, 4)), dict(scale_factor=2), dict(scale_factor=1.7),
                                 dict(scale_factor=(0.6, 2.5, 1.3)),
                                 dict(scale_factor=1.7, recompute_scale_factor=True)])
def test_interpolate_matches_torch(mode, shape, how, device, torch):
    k = len(shape) - 2
    how = {key: (v[:k] if isinstance(v, tuple) else v) for key, v in how.items()}
    for align in ([None] if mode in ("nearest", "nearest-exact", "area") else [False, True]):
        _compare(torch, device, "interpolate", _arr(*shape), mode=mode, align_corners=align, **how)


def test_interpolate_float32_and_gradcheck(device, torch):
    for mode in ("nearest", "bilinear", "bicubic"):
        _compare(torch, device, "interpolate", _arr(2, 3, 5, 7, dtype=np.float32), rtol=1e-5, atol=1e-5,
                 scale_factor=1.7, mode=mode)
    x = mt.tensor(_arr(1, 2, 3, 4), device=device, requires_grad=True)
    assert gradcheck(lambda a: F.interpolate(a, size=(5, 3), mode="bilinear", align_corners=True), (x,))
    assert gradcheck(lambda a: F.interpolate(a, scale_factor=2, mode="nearest"), (x,))
    assert gradgradcheck(lambda a: F.interpolate(a, size=(4, 6), mode="bicubic") ** 2, (x,))


@pytest.mark.parametrize("shape,kw,exc", [
    ((1, 1, 4, 4), dict(size=0), RuntimeError),
    ((1, 1, 4), dict(size=0, mode="linear"), RuntimeError),
    ((1, 1, 4, 4), dict(size=3, mode="nearest", align_corners=True), ValueError),
    ((1, 1, 4), dict(size=3, mode="bilinear"), NotImplementedError),
    ((1, 4), dict(size=3), NotImplementedError),
    ((1, 1, 4, 4), dict(size=3, mode="foo"), NotImplementedError),
    ((1, 1, 4, 4), dict(size=3, scale_factor=2), ValueError),
    ((1, 1, 4, 4), dict(), ValueError),
    ((1, 1, 4, 4), dict(size=(3, 3, 3)), ValueError),
    ((1, 1, 4, 4), dict(size=3, recompute_scale_factor=True), ValueError),
])
def test_interpolate_errors_match_torch(shape, kw, exc, torch):
    with pytest.raises(exc) as ours:
        F.interpolate(mt.ones(*shape), **kw)
    with pytest.raises(exc) as theirs:
        torch.nn.functional.interpolate(torch.ones(*shape), **kw)
    assert str(ours.value) == str(theirs.value)


def test_upsample_layers_match_torch(device, torch):
    x = _arr(2, 3, 4, 5, dtype=np.float32)
    for args, kw in [((), dict(scale_factor=2)), ((), dict(size=(3, 7), mode="bilinear")),
                     ((), dict(scale_factor=(1.5, 2.0), mode="bicubic", align_corners=True))]:
        ours, theirs = nn.Upsample(*args, **kw), torch.nn.Upsample(*args, **kw)
        assert repr(ours) == repr(theirs)
        assert_close(ours(mt.tensor(x, device=device)), theirs(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-5)
    for name in ("UpsamplingNearest2d", "UpsamplingBilinear2d"):
        ours, theirs = getattr(nn, name)(scale_factor=2), getattr(torch.nn, name)(scale_factor=2)
        assert repr(ours) == repr(theirs)
        assert_close(ours(mt.tensor(x, device=device)), theirs(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        F.upsample_bilinear(mt.tensor(x, device=device), scale_factor=2)


# ------------------------------------------------------------------------------ max unpooling, lp pooling

@pytest.mark.parametrize("k,shape,kw", [
    (1, (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 7, 6), dict(kernel_size=2)),
    (2, (3, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    (3, (1, 2, 4, 5, 3), dict(kernel_size=2, stride=1)),
])
def test_max_unpool_matches_torch(k, shape, kw, device, torch):
    x = _arr(*shape)
    out_t, idx_t = getattr(torch.nn.functional, f"max_pool{k}d")(torch.tensor(x), return_indices=True, **kw)
    vals = out_t.numpy()
    vm = mt.tensor(vals, device=device, requires_grad=True)
    vt = torch.tensor(vals, requires_grad=True)
    # with padding the default output size can be smaller than the pooled input: ask for the original size
    size = shape[-k:]
    res = getattr(F, f"max_unpool{k}d")(vm, mt.tensor(idx_t.numpy(), device=device), output_size=size, **kw)
    ref = getattr(torch.nn.functional, f"max_unpool{k}d")(vt, idx_t, output_size=size, **kw)
    assert_close(res, ref.detach().numpy(), rtol=0, atol=0)
    g = _arr(*ref.shape)
    res.backward(mt.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    assert_close(vm.grad, vt.grad.numpy(), rtol=0, atol=0)


def test_max_unpool_round_trip_layer_and_errors(device, torch):
    pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
    assert repr(unpool) == repr(torch.nn.MaxUnpool2d(2))
    assert repr(nn.MaxUnpool1d(3, 2)) == repr(torch.nn.MaxUnpool1d(3, 2))
    x = mt.tensor(_arr(1, 2, 5, 5), device=device)
    out, idx = pool(x)
    back = unpool(out, idx, output_size=x.shape)
    assert back.shape == x.shape
    kept = to_np(back) != 0
    np.testing.assert_array_equal(to_np(back)[kept], to_np(x)[kept])
    o, i = torch.nn.functional.max_pool2d(torch.randn(1, 1, 4, 4), 2, return_indices=True)
    bad = i.clone()
    bad[0, 0, 1, 0] = 20  # one index outside the 4x4 output
    for idx, kw, exc in [(bad, dict(kernel_size=2), RuntimeError),
                         (i, dict(kernel_size=2, output_size=(7, 7)), ValueError),
                         (i.int(), dict(kernel_size=2), RuntimeError)]:
        with pytest.raises(exc) as ours:
            F.max_unpool2d(mt.tensor(o.numpy()), mt.tensor(idx.numpy()), **kw)
        with pytest.raises(exc) as theirs:
            torch.nn.functional.max_unpool2d(o, idx, **kw)
        assert str(ours.value) == str(theirs.value)


def test_lp_pool_inf_and_3d(device, torch):
    x = _arr(1, 2, 4, 4, 4)
    _compare(torch, device, "lp_pool3d", np.abs(x) + 0.1, norm_type=2, kernel_size=2)
    _compare(torch, device, "lp_pool2d", x[0], norm_type=float("inf"), kernel_size=2)
    _compare(torch, device, "lp_pool1d", x[0, 0], norm_type=-float("inf"), kernel_size=2)
    assert repr(nn.LPPool3d(2, 2)) == repr(torch.nn.LPPool3d(2, 2))
