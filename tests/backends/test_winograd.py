"""Winograd F(2x2, 3x3) on the CPU (backends/_winograd.py, its loops in kernels/cnn_cpu.cpp): on awkward shapes
(odd sizes, images smaller than a tile, padding 0-2 and asymmetric, batch 1, 1 and 3 channels, channel counts
off the vector width, non-contiguous inputs) the compiled loops and the NumPy bodies agree to rounding, agree
with im2col + product within float32's tolerance, and, through F.conv2d / conv_transpose2d on every device,
with PyTorch for the output and both gradients; the fused and phased products and the weight gradient's parts
and shared chunks give the same results, whatever the threads; which convolutions take it."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F
from minitorch_gpu.backends import _cnn_cpu, _cnn_native, _winograd

RNG = np.random.default_rng(11)

# (batch, in channels, out channels, H, W, (low, high) padding per dim)
SHAPES = [
    (2, 3, 5, 7, 9, ((1, 1), (1, 1))),      # odd sizes, 3 input channels
    (1, 1, 1, 5, 5, ((1, 1), (1, 1))),      # one channel each side, batch 1
    (2, 17, 33, 6, 5, ((0, 0), (0, 0))),    # no padding; channels off the vector width
    (1, 4, 6, 3, 2, ((2, 2), (2, 2))),      # padding 2, an image smaller than a patch
    (3, 5, 4, 1, 1, ((1, 1), (1, 1))),      # a single pixel
    (2, 6, 3, 2, 7, ((1, 1), (0, 0))),      # H < 4, padding on one dim only
    (2, 20, 18, 4, 3, ((2, 2), (1, 1))),
    (1, 8, 8, 13, 11, ((1, 2), (2, 0))),    # asymmetric padding
    (2, 40, 24, 12, 13, ((1, 1), (1, 1))),  # several chunks and panels
]




@pytest.fixture
def everywhere(monkeypatch):
    """Every 3x3 stride-1 convolution through Winograd, whatever its channels."""
    monkeypatch.setattr(_winograd, "_MIN_CHANNELS", 1)


@pytest.fixture
def nowhere(monkeypatch):
    monkeypatch.setattr(_winograd, "_MIN_CHANNELS", 1 << 30)


def _problem(case, dt):
    n, c, o, h, w, pads = SHAPES[case]
    blocks = tuple(s + lo + hi - 2 for s, (lo, hi) in zip((h, w), pads))
    x = RNG.standard_normal((n, c, h, w)).astype(dt)
    wt = (RNG.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(dt)
    b = RNG.standard_normal(o).astype(dt)
    g = RNG.standard_normal((n, o) + blocks).astype(dt)
    return x, wt, b, g, pads, blocks


def _all_three(be, x, w, b, g, pads, blocks):
    geo = ((1, 1), pads, (1, 1), 1)
    return (be.conv_forward(x, w, b, *geo, blocks), be.conv_input_grad(g, w, *geo, x.shape),
            be.conv_weight_grad(g, x, *geo, w.shape))


def _close(a, r, dt):
    """Equal to rounding: float32 or float64 epsilon times a small factor, relative to the array's scale (a
    sum of many products is only as exact as its largest terms)."""
    eps = 1e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(a, r, rtol=eps, atol=eps * max(1.0, float(np.abs(r).max(initial=0))))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(SHAPES)))
def test_native_matches_numpy_and_im2col(lib, monkeypatch, case, dt, cpu_backend):
    args = _problem(case, dt)
    monkeypatch.setattr(_winograd, "_MIN_CHANNELS", 1)
    native = _all_three(cpu_backend(True), *args)
    numpy = _all_three(cpu_backend(False), *args)
    monkeypatch.setattr(_winograd, "_MIN_CHANNELS", 1 << 30)
    reference = _all_three(cpu_backend(False), *args)
    for a, r, ref in zip(native, numpy, reference):
        assert a.dtype == dt and a.shape == ref.shape and r.shape == ref.shape
        _close(a, r, dt)
        _close(a, ref, dt)


@pytest.mark.parametrize("case", [0, 2, 6, 8])
def test_phased_paths_match_fused(lib, everywhere, monkeypatch, case, cpu_backend):
    """Products phased over shared chunks (large filters) and the weight gradient in shared chunks (large
    sums) give what the fused loops and the parts give, to rounding."""
    args = _problem(case, np.float64)
    fused = _all_three(cpu_backend(True), *args)
    monkeypatch.setattr(_winograd, "_FUSED_MAX_WEIGHT_BYTES", 0)
    monkeypatch.setattr(_winograd, "_PARTS_MAX_BYTES", 0)
    monkeypatch.setattr(_winograd, "_SHARED_MIN_TILES", 12)
    monkeypatch.setattr(_winograd, "_SHARED_BYTES", 1)  # chunks of 12 tiles: several per call
    phased = _all_three(cpu_backend(True), *args)
    for a, r in zip(phased, fused):
        _close(a, r, np.float64)


@pytest.mark.parametrize("threads", [2, 3])
def test_thread_split_does_not_change_results(lib, everywhere, monkeypatch, threads, cpu_backend):
    monkeypatch.setattr(_cnn_native, "_PARALLEL_MIN_ELEMENTS", 1)
    monkeypatch.setattr(_winograd, "_PART_MIN_TILES", 8)  # the weight gradient in several parts
    monkeypatch.setattr(_winograd, "_CHUNK_BYTES", 1)     # many small chunks
    for case in (0, 7, 8):
        args = _problem(case, np.float32)
        for a, r in zip(_all_three(cpu_backend(True, threads), *args), _all_three(cpu_backend(True, 1), *args)):
            np.testing.assert_array_equal(a, r)
    monkeypatch.setattr(_winograd, "_FUSED_MAX_WEIGHT_BYTES", 0)
    monkeypatch.setattr(_winograd, "_PARTS_MAX_BYTES", 0)
    args = _problem(8, np.float32)
    for a, r in zip(_all_three(cpu_backend(True, threads), *args), _all_three(cpu_backend(True, 1), *args)):
        np.testing.assert_array_equal(a, r)


def test_non_contiguous_inputs(lib, everywhere, cpu_backend):
    x, w, b, g, pads, blocks = _problem(8, np.float32)
    xs = np.asfortranarray(x)[:, ::-1][:, ::-1]       # same values, other strides
    ws = np.ascontiguousarray(w.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    gs = np.asfortranarray(g)
    assert not (xs.flags.c_contiguous or ws.flags.c_contiguous or gs.flags.c_contiguous)
    for native in (True, False):
        be = cpu_backend(native)
        for a, r in zip(_all_three(be, xs, ws, b[::1], gs, pads, blocks), _all_three(be, x, w, b, g, pads, blocks)):
            np.testing.assert_array_equal(a, r)


# (input shape, weight shape, kwargs) for F.conv2d against PyTorch
TORCH_CASES = [
    ((2, 3, 7, 9), (5, 3, 3, 3), dict(padding=1)),
    ((1, 1, 5, 4), (1, 1, 3, 3), dict(padding=2)),
    ((2, 17, 6, 5), (33, 17, 3, 3), {}),
    ((3, 4, 2, 3), (6, 4, 3, 3), dict(padding=(2, 1))),
    ((2, 6, 1, 1), (4, 6, 3, 3), dict(padding=1)),
    ((2, 8, 5, 6), (8, 8, 3, 3), dict(padding="same")),
]


@pytest.mark.parametrize("dtype,tol", [(np.float32, dict(rtol=1e-4, atol=1e-5)),
                                       (np.float64, dict(rtol=1e-10, atol=1e-12))])
@pytest.mark.parametrize("case", range(len(TORCH_CASES)))
def test_conv2d_matches_torch(everywhere, device, torch, case, dtype, tol):
    xs, ws, kw = TORCH_CASES[case]
    a, wa, ba = RNG.standard_normal(xs), RNG.standard_normal(ws) / 3, RNG.standard_normal(ws[0])
    ours = [mt.tensor(v.astype(dtype), device=device, requires_grad=True) for v in (a, wa, ba)]
    theirs = [torch.tensor(v.astype(dtype), requires_grad=True) for v in (a, wa, ba)]
    # a strided view as the input: the layer's input is not always contiguous
    out = F.conv2d(ours[0].transpose(2, 3).transpose(2, 3), ours[1], ours[2], **kw)
    ref = torch.nn.functional.conv2d(*theirs, **kw)
    assert_close(out, ref.detach().numpy(), **tol)
    ga = RNG.standard_normal(ref.shape).astype(dtype)
    out.backward(mt.tensor(ga, device=device))
    ref.backward(torch.tensor(ga))
    for o, t in zip(ours, theirs):
        assert_close(o.grad, t.grad.numpy(), **tol)


def test_conv_transpose2d_matches_torch(everywhere, device, torch):
    """A stride-1 transposed convolution's forward is the input gradient's Winograd."""
    a, wa = RNG.standard_normal((2, 6, 5, 7)), RNG.standard_normal((6, 4, 3, 3)) / 3
    x, w = (mt.tensor(v.astype(np.float32), device=device, requires_grad=True) for v in (a, wa))
    tx, tw = (torch.tensor(v.astype(np.float32), requires_grad=True) for v in (a, wa))
    out = F.conv_transpose2d(x, w, padding=1)
    ref = torch.nn.functional.conv_transpose2d(tx, tw, padding=1)
    assert_close(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    out.sum().backward()
    ref.sum().backward()
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_close(w.grad, tw.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_which_convolutions_take_it():
    ok = dict(kernel=(3, 3), stride=(1, 1), dilation=(1, 1), groups=1, channels=64, out_channels=64)
    assert _winograd.applies(**ok)
    for change in (dict(kernel=(3, 1)), dict(kernel=(5, 5)), dict(stride=(2, 2)), dict(dilation=(1, 2)),
                   dict(groups=2), dict(channels=_winograd._MIN_CHANNELS - 1),
                   dict(out_channels=_winograd._MIN_CHANNELS - 1)):
        assert not _winograd.applies(**{**ok, **change}), change
    p = _cnn_cpu._Plan((2, 64, 8, 8), (64, 64, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1, (8, 8), 4)
    assert p.winograd
    p = _cnn_cpu._Plan((2, 64, 8), (64, 64, 3), (1,), ((1, 1),), (1,), 1, (8,), 4)
    assert not p.winograd  # 1-d


def test_layer_sized_convolutions_take_the_compiled_loops(lib, monkeypatch):
    calls = []
    for name in ("wino_conv", "wino_wgrad_parts"):
        real = getattr(lib, name)
        monkeypatch.setattr(lib, name, lambda *a, _real=real, _n=name: calls.append(_n) or _real(*a))
    x = mt.tensor(RNG.standard_normal((2, 32, 8, 8)).astype(np.float32), requires_grad=True)
    w = mt.tensor(RNG.standard_normal((32, 32, 3, 3)).astype(np.float32), requires_grad=True)
    F.conv2d(x, w, padding=1).sum().backward()
    assert calls == ["wino_conv", "wino_conv", "wino_wgrad_parts"]


def test_loops_check_their_arguments(lib):
    x = np.zeros((1, 16, 4, 4), np.float32)
    u = np.zeros((16, 16, 16), np.float32)
    y = np.empty((1, 16, 4, 4), np.float32)
    geo = (1, 16, 4, 4, 16, 4, 4, 1, 1, 16, 16, 12, 256, 256)
    lib.wino_conv(geo, x, u, None, y, 4, 1)  # well-formed: runs
    bad = geo[:9] + (8,) + geo[10:]          # padded channels that are not whole vectors
    with pytest.raises(RuntimeError, match="rejected its geometry"):
        lib.wino_conv(bad, x, u, None, y, 4, 1)
    with pytest.raises(RuntimeError, match="rejected its arguments"):
        lib.wino_weight((16, 16, 9, 144, 0, 8), np.zeros((16, 16, 3, 3), np.float32), u, 1)  # ldu < cols
