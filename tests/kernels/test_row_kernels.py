"""softmax.cu, cross_entropy.cu, layernorm.cu and matmul.cu on the CPU simulator against NumPy references:
short rows (warp per row) and long rows (block per row), rows that are not a multiple of 32, special
values, more rows than the grid covers, and GEMM shapes around the 64 x 64 x 16 tile, transposed, batched
and broadcast operands."""
import ml_dtypes
import numpy as np
import pytest

DTYPES = [np.float32, np.float64]
# the row kernels (not matmul.cu) also take the 16-bit types, computed in float
ROW_DTYPES = DTYPES + [np.float16, ml_dtypes.bfloat16]


def _tol(dt):
    if dt == np.float16:
        return dict(rtol=4e-3, atol=4e-3)
    if dt == ml_dtypes.bfloat16:
        return dict(rtol=3e-2, atol=3e-2)
    return dict(rtol=2e-5, atol=2e-6) if dt == np.float32 else dict(rtol=1e-11, atol=1e-12)


WIDTHS = [1, 3, 31, 32, 33, 96, 383, 384, 600, 1024, 1025, 4100]


def _rows(rng, rows, n, dt, offset, scale=1.0, shift=0.0):
    """A C-contiguous (rows, n) array whose start is ``offset`` elements past an allocation (offset 1 breaks the
    16-byte alignment of every row, so the kernels must take their scalar path)."""
    base = (rng.standard_normal(rows * n + offset) * scale + shift).astype(dt)
    return base[offset:].reshape(rows, n)


def _softmax_ref(x, log):
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        d = x - x.max(axis=-1, keepdims=True)
        lse = np.log(np.exp(d).sum(axis=-1, keepdims=True))
    return d - lse if log else np.exp(d - lse)


@pytest.mark.parametrize("dt", ROW_DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (17, 31), (9, 33), (5, 1024), (3, 1025), (2, 4099), (4, 3, 7)])
@pytest.mark.parametrize("log", [0, 1])
def test_softmax_forward_backward(k, shape, dt, log):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 4).astype(dt)
    y = k.softmax(x, log, x.ndim - 1)
    np.testing.assert_allclose(y, _softmax_ref(x, log).astype(dt), **_tol(dt))
    g = rng.standard_normal(shape).astype(dt)
    dx = k.softmax_backward(y, g, log, x.ndim - 1)
    y64, g64 = y.astype(np.float64), g.astype(np.float64)
    if log:
        want = g64 - np.exp(y64) * g64.sum(-1, keepdims=True)
    else:
        want = y64 * (g64 - (g64 * y64).sum(-1, keepdims=True))
    np.testing.assert_allclose(dx, want.astype(dt), **_tol(dt))


@pytest.mark.parametrize("cols", [6, 2000])
def test_softmax_special_values(k, cols):
    x = np.zeros((4, cols), np.float32)
    x[0, 1] = np.nan
    x[1, :] = -np.inf
    x[2, 3] = np.inf
    x[3, :] = -1e30
    x[3, 2] = 50.0
    for log in (0, 1):
        y = k.softmax(x, log, 1)
        assert np.isnan(y[0]).all() and np.isnan(y[1]).all() and np.isnan(y[2]).all()
        ref = _softmax_ref(x[3:], log).astype(np.float32)
        np.testing.assert_allclose(y[3:], ref, rtol=1e-6)


def test_softmax_declines_other_axes(k):
    x = np.ones((3, 4), np.float32)
    assert k.softmax(x, 0, 0) is None
    assert k.softmax(np.ones(3, np.int64), 0, 0) is None
    assert k.softmax(np.ones((0, 4), np.float32), 0, 1).shape == (0, 4)


def _ce_ref(x, t, w, ignore, eps):
    x64 = x.astype(np.float64)
    logp = _softmax_ref(x64, 1)
    C = x.shape[1]
    w = np.ones(C) if w is None else w.astype(np.float64)
    keep = t != ignore
    tt = np.where(keep, t, 0)
    nll = -w[tt] * logp[np.arange(len(t)), tt]
    smooth = -(logp * w).sum(1) / C
    loss = np.where(keep, (1 - eps) * nll + eps * smooth, 0.0)
    wsum = np.where(keep, w[tt], 0.0)
    # dlogits of sum(loss)
    p = np.exp(logp)
    onehot = np.zeros_like(p)
    onehot[np.arange(len(t)), tt] = 1
    d = (1 - eps) * w[tt][:, None] * (p - onehot) + eps / C * (p * w.sum() - w)
    d[~keep] = 0
    return loss, wsum, d


@pytest.mark.parametrize("dt", ROW_DTYPES)
@pytest.mark.parametrize("rows,C", [(1, 1), (7, 5), (33, 31), (5, 1000), (3, 2049)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_cross_entropy(k, rows, C, dt, weighted, eps):
    rng = np.random.default_rng(rows * C)
    x = (rng.standard_normal((rows, C)) * 3).astype(dt)
    t = rng.integers(0, C, rows).astype(np.int64)
    if rows > 2:
        t[1] = -100
    w = rng.uniform(0.5, 2.0, C).astype(dt) if weighted else None
    loss, wsum, lse = k.cross_entropy(x, t, w, -100, eps)
    ref_loss, ref_w, ref_d = _ce_ref(x, t, w, -100, eps)
    tol = _tol(dt)
    np.testing.assert_allclose(loss, ref_loss.astype(dt), **tol)
    np.testing.assert_allclose(wsum, ref_w.astype(dt), **tol)
    gout = np.asarray(1.0, dt)
    d = k.cross_entropy_backward(x, t, w, lse, gout, 1.0, -100, eps)
    np.testing.assert_allclose(d, ref_d.astype(dt), **tol)
    g_rows = rng.standard_normal(rows).astype(dt)
    d2 = k.cross_entropy_backward(x, t, w, lse, g_rows, 0.5, -100, eps)
    np.testing.assert_allclose(d2, (ref_d * g_rows[:, None] * 0.5).astype(dt), **tol)


@pytest.mark.parametrize("dt", ROW_DTYPES)
@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("log", [0, 1])
def test_softmax_widths_and_misaligned_rows(k, cols, dt, offset, log):
    rng = np.random.default_rng(cols + offset)
    rows = 11
    x = _rows(rng, rows, cols, dt, offset, 4.0)
    x[2, cols // 2] = 30.0  # a maximum far from the others: the online rescale must be exact
    x[3] += 1000.0  # log_softmax must subtract the maximum before adding the log of the sum
    y = k.softmax(x, log, 1)
    np.testing.assert_allclose(y, _softmax_ref(x, log).astype(dt), **_tol(dt))
    g = _rows(rng, rows, cols, dt, offset)
    yy = _rows(rng, rows, cols, dt, offset)
    yy[...] = y
    dx = k.softmax_backward(yy, g, log, 1)
    y64, g64 = y.astype(np.float64), g.astype(np.float64)
    want = g64 - np.exp(y64) * g64.sum(-1, keepdims=True) if log else y64 * (g64 - (g64 * y64).sum(-1, keepdims=True))
    np.testing.assert_allclose(dx, want.astype(dt), **_tol(dt))


@pytest.mark.parametrize("dt", ROW_DTYPES)
@pytest.mark.parametrize("C", WIDTHS)
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("weighted,eps", [(False, 0.0), (True, 0.1)])
def test_cross_entropy_fused(k, C, dt, offset, weighted, eps):
    rng = np.random.default_rng(C + offset)
    rows = 6
    x = _rows(rng, rows, C, dt, offset, 3.0)
    t = rng.integers(0, C, rows).astype(np.int64)
    t[1] = -100
    w = rng.uniform(0.5, 2.0, C).astype(dt) if weighted else None
    loss, wsum, lse, d = k.cross_entropy_fused(x, t, w, -100, eps)
    ref_loss, ref_w, ref_d = _ce_ref(x, t, w, -100, eps)
    tol = _tol(dt)
    np.testing.assert_allclose(loss, ref_loss.astype(dt), **tol)
    np.testing.assert_allclose(wsum, ref_w.astype(dt), **tol)
    np.testing.assert_allclose(d, ref_d.astype(dt), **tol)
    # forward only: the same losses without a gradient
    np.testing.assert_allclose(k.cross_entropy(x, t, w, -100, eps)[0], loss, **tol)
    g_rows = rng.standard_normal(rows).astype(dt)
    scaled = k.cross_entropy_scale(d, g_rows, 0.25)
    assert scaled is d
    np.testing.assert_allclose(d, (ref_d * g_rows[:, None] * 0.25).astype(dt), **tol)
    d1 = k.cross_entropy_fused(x, t, w, -100, eps)[3]
    k.cross_entropy_scale(d1, np.asarray(3.0, dt), 0.5)
    np.testing.assert_allclose(d1, (ref_d * 1.5).astype(dt), **tol)


def test_cross_entropy_target_out_of_range_gives_nan_without_a_sync(k):
    x = np.zeros((3, 4), np.float32)
    loss, _, _, d = k.cross_entropy_fused(x, np.array([0, 4, 1]), None, -100, 0.0)
    assert np.isnan(loss[1]) and np.isnan(d[1]).all()
    np.testing.assert_allclose(loss[[0, 2]], np.log(4.0), rtol=1e-6)
    assert np.isfinite(d[[0, 2]]).all()


@pytest.mark.parametrize("dt", ROW_DTYPES)
@pytest.mark.parametrize("N", WIDTHS)
@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_widths_and_misaligned_rows(k, N, dt, offset, affine):
    rng = np.random.default_rng(N + offset)
    rows = 11  # more rows than the tiny grid's warps: every warp and block loops, partials add up
    x = _rows(rng, rows, N, dt, offset, 2.0, 1.0)
    w = rng.standard_normal(N).astype(dt) if affine else None
    b = rng.standard_normal(N).astype(dt) if affine else None
    y, mean, rstd = k.layer_norm(x, w, b, 1e-5)
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    rs = 1 / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    xhat = (x64 - mu) * rs
    tol = dict(rtol=1e-4, atol=1e-5) if dt == np.float32 else _tol(dt)
    np.testing.assert_allclose(y, (xhat * (w if affine else 1) + (b if affine else 0)).astype(dt), **tol)
    dy = _rows(rng, rows, N, dt, offset)
    dx, dw, db = k.layer_norm_backward(dy, x, w, mean, rstd, affine, affine)
    dxhat = dy * (w if affine else 1)
    want = rs * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    np.testing.assert_allclose(dx, want.astype(dt), **tol)
    if affine:
        np.testing.assert_allclose(dw, (dy * xhat).sum(0).astype(dt), **tol)
        np.testing.assert_allclose(db, dy.astype(np.float64).sum(0).astype(dt), **tol)
    # only one of the parameter gradients
    _, dw1, db1 = k.layer_norm_backward(dy, x, w, mean, rstd, False, True)
    assert dw1 is None
    np.testing.assert_allclose(db1, dy.astype(np.float64).sum(0).astype(dt), **tol)


@pytest.mark.parametrize("dt", ROW_DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (3, 256), (4, 257), (2, 3, 1000), (1, 4097)])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(k, shape, dt, affine):
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = (rng.standard_normal(shape) * 2 + 1).astype(dt)
    N = shape[-1]
    w = rng.standard_normal(N).astype(dt) if affine else None
    b = rng.standard_normal(N).astype(dt) if affine else None
    eps = 1e-5
    y, mean, rstd = k.layer_norm(x, w, b, eps)
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    rs = 1 / np.sqrt(x64.var(-1, keepdims=True) + eps)
    xhat = (x64 - mu) * rs
    ref = xhat * (w if affine else 1) + (b if affine else 0)
    tol = dict(rtol=1e-4, atol=1e-5) if dt == np.float32 else _tol(dt)
    np.testing.assert_allclose(y, ref.astype(dt), **tol)
    np.testing.assert_allclose(mean, mu[..., 0].astype(dt), **tol)
    np.testing.assert_allclose(rstd, rs[..., 0].astype(dt), **tol)
    dy = rng.standard_normal(shape).astype(dt)
    dx, dw, db = k.layer_norm_backward(dy, x, w, mean, rstd, affine, affine)
    dxhat = dy * (w if affine else 1)
    want = rs * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    np.testing.assert_allclose(dx, want.astype(dt), **tol)
    if affine:
        axes = tuple(range(len(shape) - 1))
        np.testing.assert_allclose(dw, (dy * xhat).sum(axis=axes).astype(dt), **tol)
        np.testing.assert_allclose(db, dy.astype(np.float64).sum(axis=axes).astype(dt), **tol)
    else:
        assert dw is None and db is None


GEMM_SHAPES = [(1, 1, 1), (2, 3, 4), (7, 13, 5), (63, 15, 65), (64, 16, 64), (65, 17, 63), (130, 33, 70),
               (3, 129, 2)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("M,K,N", GEMM_SHAPES)
def test_matmul_shapes_and_transposes(k, M, K, N, dt):
    rng = np.random.default_rng(M * 1000 + K * 10 + N)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else _tol(dt)
    for x, y in ((a, b), (np.ascontiguousarray(a.T).T, b), (a, np.ascontiguousarray(b.T).T),
                 (np.asfortranarray(a), np.asfortranarray(b))):
        np.testing.assert_allclose(k.matmul(x, y), want.astype(dt), **tol)
    bias = rng.standard_normal(N).astype(dt)
    np.testing.assert_allclose(k.matmul(a, b, bias), (want + bias).astype(dt), **tol)


@pytest.mark.parametrize("dt", DTYPES)
def test_matmul_batched_broadcast_and_vectors(k, dt):
    rng = np.random.default_rng(3)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else _tol(dt)
    cases = [((2, 3, 5, 7), (3, 7, 4)), ((4, 1, 6, 8), (1, 3, 8, 9)), ((5, 7), (2, 7, 3)), ((7,), (7, 4)),
             ((3, 7), (7,)), ((7,), (7,)), ((2, 5, 7), (7,)), ((0, 3, 4), (4, 5)), ((3, 0), (0, 4))]
    for sa, sb in cases:
        a = rng.standard_normal(sa).astype(dt)
        b = rng.standard_normal(sb).astype(dt)
        got = k.matmul(a, b)
        np.testing.assert_allclose(got, np.matmul(a, b), **tol)
        assert got.shape == np.matmul(a, b).shape
    a = rng.standard_normal((3, 8, 5)).astype(dt)
    b = rng.standard_normal((3, 6, 8)).astype(dt)
    np.testing.assert_allclose(k.matmul(a.swapaxes(-1, -2), b.swapaxes(-1, -2)),
                               np.matmul(a.swapaxes(-1, -2), b.swapaxes(-1, -2)), **tol)
    assert k.matmul(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32)) is None
    # integers and mixed types go to the built-ins (float16 has the tensor-core kernels: test_matmul_tc_kernels)
    assert k.matmul(np.ones((2, 3), np.int64), np.ones((3, 2), np.int64)) is None
    assert k.matmul(np.ones((2, 3), np.float16), np.ones((3, 2), np.float32)) is None


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_matmul_batch_offsets_that_break_alignment(k, dt):
    # batch 1 of this view starts 33 elements in: base pointer, row stride and K are all 16-byte multiples,
    # the batch stride is not, so only the scalar path is correct (a 128-bit load would fault on a GPU)
    x = np.arange(3 * 33, dtype=dt).reshape(3, 33) / 50
    a = x[:, :32].reshape(3, 4, 8)
    assert not a.flags.c_contiguous and a.strides[0] == 33 * x.itemsize
    b = np.linspace(-1, 1, 8 * 12, dtype=dt).reshape(8, 12)
    np.testing.assert_allclose(k.matmul(a, b), np.matmul(a, b), rtol=1e-5)
    lhs = np.linspace(-2, 2, 3 * 5 * 4, dtype=dt).reshape(3, 5, 4)
    np.testing.assert_allclose(k.matmul(lhs, a), np.matmul(lhs, a), rtol=1e-5)  # the same view as B


def test_misaligned_128_bit_access_is_a_fault_not_a_crash(sim_backend):
    # the simulator must report what a GPU reports as a misaligned address, naming the kernel and the line,
    # and keep working afterwards
    from minitorch_gpu.backends.cuda import sim
    from minitorch_gpu.backends.cuda.loader import kernel_dir
    src = ('#include "common.cuh"\n'
           'extern "C" __global__ void copy4(const float* x, float* y) {\n'
           '    store128(y, load128(x + threadIdx.x));\n'
           '}\n')
    mod = sim.SimModule(code=src, filename="misaligned.cu", include_dirs=(kernel_dir(),))
    x = np.zeros(64, np.float32)
    y = np.zeros(64, np.float32)
    with pytest.raises(sim.SimError, match=r"misaligned address: 128-bit load .*misaligned\.cu:3") as info:
        mod.get_function("copy4")(1, 2, (x[1:], y))
    assert info.value.kernel == "copy4" and info.value.line == 3
    x[:4] = [1, 2, 3, 4]
    mod.get_function("copy4")(1, 1, (x, y))
    np.testing.assert_array_equal(y[:4], [1, 2, 3, 4])
