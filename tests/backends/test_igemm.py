"""The CPU's implicit GEMM for strided 2-d convolutions (backends/_igemm.py, its loops in kernels/cnn_cpu.cpp):
forward and weight gradient equal to im2col + product (the NumPy path) to rounding on awkward geometries
(strides 2 and 3, unequal strides, dilation, padding wider than the kernel, odd and tiny images, channels off
the vector width, non-square kernels), whatever the threads; F.conv2d against PyTorch on every device; which
convolutions take it."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F
from minitorch_gpu.backends import _cnn_cpu, _cnn_native, _igemm

RNG = np.random.default_rng(5)

# (x shape, w shape, stride, padding, dilation)
GEOMETRIES = [
    ((2, 16, 9, 9), (16, 16, 3, 3), (2, 2), (1, 1), (1, 1)),
    ((2, 5, 8, 11), (7, 5, 3, 3), (2, 2), (0, 0), (1, 1)),
    ((1, 3, 7, 6), (20, 3, 3, 3), (2, 3), (1, 2), (1, 1)),
    ((3, 17, 10, 9), (33, 17, 3, 2), (2, 2), (1, 1), (2, 1)),
    ((1, 4, 2, 2), (4, 4, 3, 3), (2, 2), (2, 2), (1, 1)),       # padding wider than the image
    ((2, 6, 13, 12), (5, 6, 5, 5), (3, 3), (2, 2), (1, 1)),
    ((2, 40, 16, 16), (24, 40, 3, 3), (2, 2), (1, 1), (1, 1)),  # several chunks and parts
]




@pytest.fixture
def everywhere(monkeypatch):
    """Every strided 2-d convolution through the implicit GEMM, whatever its channels and filters."""
    monkeypatch.setattr(_igemm, "_MIN_CHANNELS", 1)
    monkeypatch.setattr(_igemm, "_MAX_FILTER_BYTES", 1 << 40)


def _problem(case, dt):
    xs, ws, stride, pad, dil = GEOMETRIES[case]
    blocks = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, s, p, d in zip(xs[2:], ws[2:], stride, pad, dil))
    x = RNG.standard_normal(xs).astype(dt)
    w = RNG.standard_normal(ws).astype(dt)
    b = RNG.standard_normal(ws[0]).astype(dt)
    g = RNG.standard_normal((xs[0], ws[0]) + blocks).astype(dt)
    return x, w, b, g, (stride, tuple((p, p) for p in pad), dil, 1), blocks


def _both(be, x, w, b, g, geo, blocks):
    return be.conv_forward(x, w, b, *geo, blocks), be.conv_weight_grad(g, x, *geo, w.shape)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(GEOMETRIES)))
def test_native_matches_im2col(lib, everywhere, case, dt, cpu_backend):
    args = _problem(case, dt)
    eps = 1e-5 if dt == np.float32 else 1e-12
    for a, r in zip(_both(cpu_backend(True), *args), _both(cpu_backend(False), *args)):
        assert a.dtype == dt and a.shape == r.shape
        np.testing.assert_allclose(a, r, rtol=eps, atol=eps * np.abs(r).max())


@pytest.mark.parametrize("threads", [2, 3])
def test_thread_split_does_not_change_results(lib, everywhere, monkeypatch, threads, cpu_backend):
    monkeypatch.setattr(_cnn_native, "_PARALLEL_MIN_ELEMENTS", 1)
    monkeypatch.setattr(_igemm, "_PART_MIN_POSITIONS", 16)
    monkeypatch.setattr(_igemm, "_CHUNK_BYTES", 1)
    for case in (0, 3, 6):
        args = _problem(case, np.float32)
        for a, r in zip(_both(cpu_backend(True, threads), *args), _both(cpu_backend(True, 1), *args)):
            np.testing.assert_array_equal(a, r)


@pytest.mark.parametrize("case", [0, 3, 5])
def test_conv2d_matches_torch(everywhere, device, torch, case):
    xs, ws, stride, pad, dil = GEOMETRIES[case]
    a, wa, ba = RNG.standard_normal(xs), RNG.standard_normal(ws) / 3, RNG.standard_normal(ws[0])
    ours = [mt.tensor(v.astype(np.float32), device=device, requires_grad=True) for v in (a, wa, ba)]
    theirs = [torch.tensor(v.astype(np.float32), requires_grad=True) for v in (a, wa, ba)]
    kw = dict(stride=stride, padding=pad, dilation=dil)
    out, ref = F.conv2d(*ours, **kw), torch.nn.functional.conv2d(*theirs, **kw)
    assert_close(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    ga = RNG.standard_normal(ref.shape).astype(np.float32)
    out.backward(mt.tensor(ga, device=device))
    ref.backward(torch.tensor(ga))
    for o, t in zip(ours, theirs):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_which_convolutions_take_it():
    ok = dict(kernel=(3, 3), stride=(2, 2), groups=1, channels=64, out_channels=128, itemsize=4)
    assert _igemm.applies(**ok)
    for change in (dict(stride=(1, 1)), dict(kernel=(1, 1)), dict(kernel=(3,)), dict(groups=2),
                   dict(channels=_igemm._MIN_CHANNELS - 1), dict(channels=256, out_channels=512)):
        assert not _igemm.applies(**{**ok, **change}), change
    p = _cnn_cpu._Plan((2, 64, 8, 8), (128, 64, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 1, (4, 4), 4)
    assert p.igemm and not p.winograd


def test_loops_check_their_arguments(lib):
    x = np.zeros((1, 16, 4, 4), np.float32)
    b = np.zeros(9 * 16 * 16, np.float32)
    y = np.empty((1, 16, 2, 2), np.float32)
    geo = (1, 16, 4, 4, 16, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1, 16, 16, 12, 256, 64)
    lib.gemm_conv(geo, x, b, None, y, 1)
    with pytest.raises(RuntimeError, match="rejected its geometry"):
        lib.gemm_conv(geo[:9] + (0,) + geo[10:], x, b, None, y, 1)  # a stride of 0
    with pytest.raises(RuntimeError, match="rejected its arguments"):
        lib.gemm_weight((16, 16, 9, 8, 16), np.zeros((16, 16, 3, 3), np.float32), b, 1)  # Cp < C
