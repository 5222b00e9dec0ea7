"""The CPU backend's convolution, max-pooling and batch-norm primitives (backends/_cnn_cpu.py) and their compiled
loops (kernels/cnn_cpu.cpp through backends/_cnn_native.py): im2col + product bit-identical with its NumPy
fallback on awkward geometries (1-3 d, strides, asymmetric and oversized padding, dilation, groups, several
chunks), the direct loops within rounding of it, max pooling identical with the NumPy composition, batch norm
within rounding of it, results independent of the thread split, and the switch and the library's own checks."""
import numpy as np
import pytest

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F
from minitorch_gpu.backends import _cnn_cpu, _cnn_native

RNG = np.random.default_rng(7)

# (x shape, w shape, stride, ((low, high) pads per dim), dilation, groups)
GEOMETRIES = [
    ((2, 3, 11), (4, 3, 3), (1,), ((1, 1),), (1,), 1),
    ((3, 4, 13), (6, 2, 4), (3,), ((2, 2),), (2,), 2),
    ((2, 3, 7, 9), (5, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 4, 9, 8), (6, 2, 3, 2), (2, 1), ((1, 1), (2, 2)), (2, 1), 2),
    ((3, 6, 5, 7), (6, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 6),       # depthwise
    ((2, 3, 6, 6), (5, 3, 4, 3), (1, 1), ((1, 2), (1, 1)), (1, 1), 1),       # asymmetric ('same', even kernel)
    ((2, 2, 5, 6), (3, 2, 3, 3), (1, 1), ((3, 3), (2, 2)), (1, 1), 1),       # padding wider than the kernel
    ((2, 5, 6, 6), (3, 5, 1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),       # 1x1 at stride 2
    ((2, 5, 4, 4), (3, 5, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),       # 1x1: columns are the image
    ((2, 3, 5, 37), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 2), 1),      # rows with a vector tail
    ((2, 20, 7, 40), (9, 20, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),    # > 256 columns per output
    ((2, 3, 4, 5, 6), (4, 3, 2, 3, 2), (1, 2, 1), ((1, 1), (0, 0), (1, 1)), (1, 1, 2), 1),
    ((2, 4, 5, 4, 5), (4, 1, 3, 1, 3), (2, 1, 1), ((1, 1), (0, 0), (2, 2)), (1, 1, 1), 4),
]


def _blocks(xs, ws, stride, pads, dilation):
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                 for n, k, s, (lo, hi), d in zip(xs[2:], ws[2:], stride, pads, dilation))




@pytest.fixture
def no_direct(monkeypatch):
    """Every convolution through im2col + product."""
    monkeypatch.setattr(_cnn_cpu, "_DIRECT_MAX_COLUMNS", -1)
    monkeypatch.setattr(_cnn_cpu, "_DIRECT_MIN_ROW_BYTES", float("inf"))


def _native_and_numpy(body):
    """``body()`` on the default CPU backend with its compiled loops and without them: the two results."""
    be = mt.zeros(1)._be
    outs = []
    for native in (True, False):
        be.native_nn = native
        try:
            outs.append(body())
        finally:
            be.native_nn = True
    return outs


def _problem(case, dt):
    xs, ws, stride, pads, dilation, groups = GEOMETRIES[case]
    blocks = _blocks(xs, ws, stride, pads, dilation)
    x = RNG.standard_normal(xs).astype(dt)
    w = RNG.standard_normal(ws).astype(dt)
    b = RNG.standard_normal(ws[0]).astype(dt)
    g = RNG.standard_normal((xs[0], ws[0]) + blocks).astype(dt)
    return x, w, b, g, (stride, pads, dilation, groups), blocks


def _all_three(be, x, w, b, g, geo, blocks):
    stride, pads, dilation, groups = geo
    return (be.conv_forward(x, w, b, stride, pads, dilation, groups, blocks),
            be.conv_input_grad(g, w, stride, pads, dilation, groups, x.shape),
            be.conv_weight_grad(g, x, stride, pads, dilation, groups, w.shape))


@pytest.mark.parametrize("chunk_bytes", [1 << 21, 256])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(GEOMETRIES)))
def test_im2col_native_bit_identical_with_numpy(lib, no_direct, monkeypatch, case, dt, chunk_bytes, cpu_backend):
    monkeypatch.setattr(_cnn_cpu, "_COLS_BYTES", chunk_bytes)  # 256: a chunk per sample, a product per chunk
    monkeypatch.setattr(_cnn_cpu, "_MIN_WIDTH", 1 if chunk_bytes < 1000 else 256)
    args = _problem(case, dt)
    native = _all_three(cpu_backend(True), *args)
    numpy = _all_three(cpu_backend(False), *args)
    for a, r in zip(native, numpy):
        assert a.dtype == dt
        np.testing.assert_array_equal(a, r)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(GEOMETRIES)))
def test_direct_loops_match_the_products(lib, case, dt, cpu_backend):
    """Where a geometry takes the direct loops they agree with im2col + product to rounding."""
    args = _problem(case, dt)
    fast = _all_three(cpu_backend(True), *args)
    ref = _all_three(cpu_backend(False), *args)
    tol = dict(rtol=2e-5, atol=2e-5) if dt == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, r in zip(fast, ref):
        assert a.dtype == dt and a.shape == r.shape
        np.testing.assert_allclose(a, r, **tol)


def test_direct_loops_are_taken(lib, monkeypatch, cpu_backend):
    calls = []
    for name in ("direct_conv", "direct_conv_weight_grad"):
        real = getattr(lib, name)
        monkeypatch.setattr(lib, name, lambda *a, _real=real, _n=name: calls.append(_n) or _real(*a))
    _all_three(cpu_backend(True), *_problem(2, np.float32))
    assert calls == ["direct_conv", "direct_conv", "direct_conv_weight_grad"]


@pytest.mark.parametrize("threads", [2, 3])
def test_thread_split_does_not_change_results(lib, monkeypatch, threads, cpu_backend):
    monkeypatch.setattr(_cnn_native, "_PARALLEL_MIN_ELEMENTS", 1)
    for case in (3, 10, 12):
        args = _problem(case, np.float32)
        for a, r in zip(_all_three(cpu_backend(True, threads), *args), _all_three(cpu_backend(True, 1), *args)):
            np.testing.assert_array_equal(a, r)
    x = RNG.standard_normal((4, 6, 9, 9)).astype(np.float32)
    pools = [cpu_backend(True, t).max_pool_forward(x, (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), (5, 5))
             for t in (1, threads)]
    np.testing.assert_array_equal(pools[0][0], pools[1][0])
    np.testing.assert_array_equal(pools[0][1], pools[1][1])
    # 6 channels: a channel a piece; 37: blocks of 4 channels and a short last one
    for x3 in (x.reshape(4, 6, 81), RNG.standard_normal((3, 37, 25)).astype(np.float32)):
        c = x3.shape[1]
        w, b = RNG.standard_normal(c).astype(np.float32), RNG.standard_normal(c).astype(np.float32)
        g = RNG.standard_normal(x3.shape).astype(np.float32)
        outs = []
        for t in (1, threads):
            be = cpu_backend(True, t)
            y, mean, var, rstd = be.batch_norm_forward(x3, w, b, 1e-5)
            outs.append((y, mean, var, rstd, *be.batch_norm_backward(g, x3, w, mean, rstd, (True, True, True))))
        for a, r in zip(*outs):
            np.testing.assert_array_equal(a, r)


def test_declines_what_it_does_not_take(cpu_backend):
    be = cpu_backend(True)
    half = np.ones((1, 2, 4, 4), np.float16)
    assert be.conv_forward(half, np.ones((2, 2, 3, 3), np.float16), None, (1, 1), ((0, 0), (0, 0)), (1, 1), 1,
                           (2, 2)) is None
    x = np.ones((1, 2, 4, 4), np.float32)
    assert be.conv_forward(x, np.ones((2, 2, 3, 3), np.float64), None, (1, 1), ((0, 0), (0, 0)), (1, 1), 1,
                           (2, 2)) is None  # mixed dtypes
    assert be.batch_norm_forward(x.reshape(1, 2, 16), np.ones(2, np.float64), None, 1e-5) is None
    assert be.max_pool_forward(np.ones((1, 2, 4, 4), np.int64), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1),
                               (2, 2)) is None


# ------------------------------------------------------------------------------------------- max pooling

POOLS = [
    # (x shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 9), 3, 2, 1, 1, False),
    ((2, 3, 8, 8), 2, 2, 0, 1, False),
    ((2, 3, 9, 7), (3, 2), (2, 1), (1, 1), (1, 2), True),
    ((1, 2, 7, 7), 3, 3, 1, 2, True),
    ((2, 2, 5, 6, 7), (2, 3, 2), (2, 2, 1), (1, 1, 0), 1, False),
]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(POOLS)))
def test_max_pool_native_matches_numpy_composition(lib, case, dt):
    xs, kernel, stride, padding, dilation, ceil_mode = POOLS[case]
    fn = {3: F.max_pool1d, 4: F.max_pool2d, 5: F.max_pool3d}[len(xs)]
    a = RNG.standard_normal(xs).astype(dt)
    a.flat[::5] = a.flat[1]  # ties: the first in the window wins
    a.flat[3] = -np.inf

    def body():
        x = mt.tensor(a, requires_grad=True)
        v, i = fn(x, kernel, stride, padding, dilation, ceil_mode, return_indices=True)
        v.backward(mt.tensor(np.arange(v.numel(), dtype=dt).reshape(v.shape)))
        return v.detach().numpy(), i.numpy(), x.grad.numpy()
    for p, q in zip(*_native_and_numpy(body)):
        np.testing.assert_array_equal(p, q)


def test_max_pool_nan_and_empty_windows_as_pytorch(lib, torch):
    a = np.array([[[[np.nan, 1, np.nan, 2], [0, 5, 0, 0]]]], np.float32)
    v, i = F.max_pool2d(mt.tensor(a), (2, 4), return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(torch.tensor(a), (2, 4), return_indices=True)
    assert np.isnan(v.item()) and i.item() == ti.item()  # PyTorch's CPU loop keeps the last NaN
    inf = np.full((1, 1, 3, 3), -np.inf, np.float32)
    _, i = F.max_pool2d(mt.tensor(inf), 2, 1, 1, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), torch.nn.functional.max_pool2d(torch.tensor(inf), 2, 1, 1,
                                                                             return_indices=True)[1].numpy())


def test_max_pool_backward_checks_indices(lib):
    geo = _cnn_native.geometry(1, (4, 4), (1, 1), (1, 1), (0, 0), (1, 1), (2, 2), 0, 0)
    g = np.ones((1, 2, 2), np.float32)
    with pytest.raises(RuntimeError, match="rejected its arguments"):
        lib.max_pool_backward(geo, g, np.array([[[0, 1], [2, 16]]], np.int64), 1, np.empty((1, 4, 4), np.float32), 1)


# ------------------------------------------------------------------------------------------- batch norm

@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,affine", [((4, 3, 5, 5), True), ((7, 2, 33), False), ((3, 5, 2, 3, 4), True)])
def test_batch_norm_native_matches_numpy_composition(lib, shape, affine, dt):
    a = (RNG.standard_normal(shape) * 3 + 5).astype(dt)
    ga = RNG.standard_normal(shape).astype(dt)
    c = shape[1]
    wa, ba = RNG.standard_normal(c).astype(dt), RNG.standard_normal(c).astype(dt)

    def body():
        x = mt.tensor(a, requires_grad=True)
        w, b = (mt.tensor(wa, requires_grad=True), mt.tensor(ba, requires_grad=True)) if affine else (None, None)
        rm, rv = mt.zeros(c, dtype=x.dtype), mt.ones(c, dtype=x.dtype)
        y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3, eps=1e-4)
        y.backward(mt.tensor(ga))
        params = [w.grad.numpy(), b.grad.numpy()] if affine else []
        return [y.detach().numpy(), rm.numpy(), rv.numpy(), x.grad.numpy()] + params
    outs = _native_and_numpy(body)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for p, q in zip(*outs):
        np.testing.assert_allclose(p, q, **tol)


# ------------------------------------------------------------------------------------------- the library

def test_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv("MINITORCH_GPU_NATIVE_NN", "0")
    _cnn_native.LIB.forget()
    try:
        assert _cnn_native.library() is None
        assert "MINITORCH_GPU_NATIVE_NN=0" in _cnn_native.LIB.reason
        x = mt.tensor(RNG.standard_normal((2, 3, 6, 6)).astype(np.float32), requires_grad=True)
        w = mt.tensor(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32), requires_grad=True)
        F.conv2d(x, w, padding=1).sum().backward()
        assert x.grad.shape == x.shape and w.grad.shape == w.shape
    finally:
        _cnn_native.LIB.forget()


def test_direct_loop_checks_its_padding(lib):
    x = np.zeros((1, 1, 3, 3), np.float32)
    w = np.zeros((1, 1, 8), np.float32)
    with pytest.raises(RuntimeError, match="rejected its arguments"):
        # a padded input too narrow for whole vectors of a 3-wide row
        lib.direct_conv((1, 1, 3, 3, 1, 1, 1, 1, 1, 3, 3, 9, 9), x, w, None, np.empty((1, 1, 3, 3), np.float32), 1)
