"""The CPU backend's compiled matrix product (backends/_gemm_native.py) against NumPy's: awkward shapes (tile and
panel edges, K blocks), strides (transposes, head views of a fused projection, negative and non-unit steps),
broadcast batches, bias, float32 and float64, thread splits; the decision rule; declining what it cannot take;
and the backend's ``matmul`` through it, against PyTorch."""
import ctypes

import numpy as np
import pytest
import torch

import minitorch_gpu as mt
from minitorch_gpu.backends import _gemm_native as native
from minitorch_gpu.backends.numpy_backend import NumpyBackend

TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture(scope="module", autouse=True)
def lib():
    if not native.available():
        pytest.skip(f"no native GEMM here: {native.unavailable_reason()}")
    return native.LIB.get()


@pytest.fixture
def same_width(monkeypatch):
    """The rule for a BLAS whose kernels are as wide as this one's, whatever this machine's BLAS is."""
    monkeypatch.setitem(native._WIDE, "value", False)


@pytest.fixture
def wider(monkeypatch):
    """The rule for a BLAS with narrower kernels than this one's (OpenBLAS's AVX2 kernels on an AVX-512 CPU)."""
    monkeypatch.setitem(native._WIDE, "value", True)


def _operand(rng, shape, dt, layout):
    """An array of ``shape`` in ``layout``: "c" contiguous, "t" a transposed view of the last two dims, "s" every
    other element of a larger array, "r" the rows reversed (a negative stride)."""
    if layout == "t":
        return rng.standard_normal(shape[:-2] + shape[:-3:-1]).astype(dt).swapaxes(-1, -2)
    if layout == "s":
        return rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(dt)[..., ::2]
    if layout == "r":
        return rng.standard_normal(shape).astype(dt)[..., ::-1, :]
    return rng.standard_normal(shape).astype(dt)


def _check(a, b, bias=None, threads=1):
    r = native.matmul(a, b, bias, threads, force=True)
    assert r is not None
    ref = np.matmul(a, b)
    if bias is not None:
        ref = ref + bias
    assert r.shape == ref.shape and r.dtype == ref.dtype
    np.testing.assert_allclose(r, ref, **TOL[a.dtype.type])


# M, K, N around the tile heights (6, 8, 12, 16 rows), panel widths (16 floats / 8 doubles a vector, 1-4 vectors)
# and the K block (256)
SHAPES = [(1, 1, 1), (2, 3, 5), (5, 7, 33), (6, 17, 64), (8, 1, 48), (12, 9, 31), (13, 255, 17), (16, 256, 1024),
          (17, 257, 16), (33, 513, 65), (97, 40, 130), (200, 300, 7), (7, 600, 200)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("la,lb", [("c", "c"), ("t", "c"), ("c", "t"), ("t", "t"), ("s", "r"), ("r", "s")])
def test_matches_numpy(dt, m, k, n, la, lb):
    rng = np.random.default_rng(m * 1000 + k + n)
    _check(_operand(rng, (m, k), dt, la), _operand(rng, (k, n), dt, lb))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 10, 20), (3, 20, 30)),
    ((2, 3, 10, 20), (20, 30)),  # 2-d B under a batch of A (not contiguous below: a transposed A)
    ((10, 20), (4, 20, 18)),  # 2-d A under a batch of B
    ((2, 1, 9, 20), (1, 3, 20, 18)),  # broadcast dims on both sides
    ((2, 1, 2, 1, 2, 5, 7), (2, 3, 2, 1, 2, 7, 6)),  # five batch dims, mergeable into the kernel's four
    ((0, 5, 7), (0, 7, 6)), ((4, 0, 7), (4, 7, 6)), ((4, 5, 0), (4, 0, 6)),  # empty products (K = 0: zeros)
])
def test_batches(dt, a_shape, b_shape):
    rng = np.random.default_rng(len(a_shape) * 10 + len(b_shape))
    a = _operand(rng, a_shape, dt, "t")
    b = _operand(rng, b_shape, dt, "c")
    _check(a, b)


def test_head_views_of_a_fused_projection():
    # attention's q @ k^T on the (B, H, T, D) views of one (B, T, 3 H D) array: the kernel's batch strides
    rng = np.random.default_rng(1)
    fused = rng.standard_normal((3, 20, 3 * 4 * 8)).astype(np.float32)
    q = fused[:, :, :32].reshape(3, 20, 4, 8).transpose(0, 2, 1, 3)
    k = fused[:, :, 32:64].reshape(3, 20, 4, 8).transpose(0, 2, 1, 3)
    _check(q, k.swapaxes(-1, -2))
    _check(q.swapaxes(-1, -2), k)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(16, 300, 70), (3, 5, 17), (40, 600, 33)])
def test_bias_after_the_sum(dt, m, k, n):
    rng = np.random.default_rng(2)
    _check(rng.standard_normal((m, k)).astype(dt), _operand(rng, (k, n), dt, "t"),
           bias=rng.standard_normal(n).astype(dt))
    # K = 0: the bias alone
    _check(np.zeros((m, 0), dt), np.zeros((0, n), dt), bias=rng.standard_normal(n).astype(dt))


@pytest.mark.parametrize("shape", [((16, 1024), (1024, 2048)), ((8, 64, 256), (8, 256, 512)), ((300, 600), (600, 80))])
def test_thread_split_does_not_change_results(shape):
    # products above the parallel threshold: split by rows, by columns (16 rows) or by batch entries
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape[0]).astype(np.float32)
    b = rng.standard_normal(shape[1]).astype(np.float32)
    one = native.matmul(a, b, None, 1, force=True)
    np.testing.assert_allclose(one, a @ b, rtol=1e-4, atol=1e-3)  # sums of up to 1024 terms of about 1
    for threads in (2, 3, 4):
        assert native.plan(a.shape, a.strides, b.shape, b.strides, 0, threads, True).workers > 1
        np.testing.assert_array_equal(one, native.matmul(a, b, None, threads, force=True))


def test_declines_what_it_does_not_take():
    a = np.ones((16, 64), np.float32)
    b = np.ones((64, 64), np.float32)
    assert native.matmul(a.astype(np.float16), b.astype(np.float16), None, 1, force=True) is None
    assert native.matmul(a, b.astype(np.float64), None, 1, force=True) is None  # mixed dtypes
    assert native.matmul(a.astype(np.int32), b.astype(np.int32), None, 1, force=True) is None
    # strides that are not whole elements
    raw = np.zeros(16 * 64 * 4 + 1, np.uint8)[1:].view(np.float32).reshape(16, 64)
    odd = np.lib.stride_tricks.as_strided(raw, (16, 64), (64 * 4 + 2, 4))
    assert native.matmul(odd, b, None, 1, force=True) is None
    # six batch dims that cannot merge
    six = np.ones((2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3, 4), np.float32)[:, 0, :, 0, :, 0, :, 0, :, 0]
    sixb = np.ones((2, 2, 2, 2, 2, 2, 4, 3), np.float32).transpose(5, 4, 3, 2, 1, 0, 6, 7)
    assert native.matmul(six, sixb, None, 1, force=True) is None
    # a bias of the wrong shape or dtype
    assert native.matmul(a, b, np.ones(63, np.float32), 1, force=True) is None
    assert native.matmul(a, b, np.ones(64, np.float64), 1, force=True) is None
    # mismatched K
    assert native.matmul(a, np.ones((63, 64), np.float32), None, 1, force=True) is None


def test_decision_rule():
    assert native.native_wins(16, 1024, 256, 1, False)  # an LSTM step
    assert native.native_wins(10, 512, 256, 1, False)
    assert native.native_wins(32, 2048, 2048, 1, True) and not native.native_wins(32, 2048, 2048, 1, True, True)
    assert not native.native_wins(1, 1024, 1024, 1, True)  # one row: BLAS's matrix-vector product
    assert not native.native_wins(16, 64, 16, 1, False)  # too small to pay for the call
    assert native.native_wins(16, 128, 128, 1, False)
    assert not native.native_wins(64, 64, 32, 2, True) and native.native_wins(64, 64, 32, 4, True)
    assert native.native_wins(64, 64, 32, 32, True)  # attention's q @ k^T
    assert not native.native_wins(64, 64, 32, 32, False)  # the other layouts of batches tie or lose on one thread
    assert native.native_wins(64, 64, 32, 32, False, threads=2)  # NumPy runs each matrix on one thread
    assert not native.native_wins(8, 64, 64, 64, False)
    assert native.native_wins(512, 384, 128, 1, True)  # a GPT's x @ W^T
    assert not native.native_wins(512, 1024, 128, 1, True)
    assert not native.native_wins(512, 512, 512, 1, False)


def test_wide_rule():
    # every product of 2 rows and 16 columns or more, any layout, batches included
    assert native.native_wins(512, 512, 512, 1, False, wide=True)
    assert native.native_wins(512, 1024, 128, 1, False, wide=True)
    assert native.native_wins(8, 64, 64, 64, False, wide=True)
    assert native.native_wins(64, 64, 32, 4, False, wide=True)
    assert native.native_wins(256, 512, 10, 1, False, wide=True)  # K of 10 (an MLP head's g @ W)
    assert not native.native_wins(1, 1024, 1024, 1, True, wide=True)  # BLAS's matrix-vector product
    assert not native.native_wins(256, 10, 512, 1, True, wide=True)  # a fraction of one vector of columns
    assert not native.native_wins(16, 64, 16, 1, False, wide=True)  # too small to pay for the call
    # a few rows against a B larger than L2: BLAS's split wins on several threads
    assert native.native_wins(32, 2048, 2048, 1, True, wide=True)
    assert not native.native_wins(32, 2048, 2048, 1, True, threads=2, wide=True)


def test_wide_rule_routes_every_layout(wider):
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((300, 128)).astype(np.float32), rng.standard_normal((128, 200)).astype(np.float32)
    r = native.matmul(x, w, None, 1)  # x @ W, 300 rows: BLAS's under the same-width rule
    assert r is not None
    np.testing.assert_allclose(r, x @ w, **TOL[np.float32])
    assert native.matmul(x.T.copy(), w, None, 2, transpose_a=True) is not None  # a weight's gradient, 2 threads
    # a product too small to split goes to this kernel on one thread, not to BLAS's two
    s, ws = np.ones((16, 64), np.float32), np.ones((64, 1024), np.float32)
    p = native.plan(s.shape, s.strides, ws.shape, ws.strides, 0, 2, wide=True)
    assert p is not None and p.workers == 1
    assert native.matmul(x[:1], w, None, 1) is None  # one row: BLAS


def test_wider_than_blas_reads_both_sides(monkeypatch, lib):
    monkeypatch.setitem(native._WIDE, "value", None)
    monkeypatch.setattr(native._blas, "vector_bits", lambda: 256)
    assert native.wider_than_blas() is (lib.vector_bits > 256)
    monkeypatch.setitem(native._WIDE, "value", None)
    monkeypatch.setattr(native._blas, "vector_bits", lambda: None)  # a BLAS not known to be narrow
    assert native.wider_than_blas() is False


def test_blas_kernel_family_sets_its_width(monkeypatch):
    from minitorch_gpu.backends import _blas
    # NumPy's own OpenBLAS answers (its wheels always bundle one)
    name, n = _blas.core(), _blas.threads()
    assert name is None or (isinstance(name, str) and name) and n is not None and n >= 1
    for family, bits in (("Haswell", 256), ("Zen", 256), ("SandyBridge", 256), ("SkylakeX", None),
                         ("SapphireRapids", None), ("NeoverseV1", None), (None, None)):
        monkeypatch.setattr(_blas, "core", lambda family=family: family)
        assert _blas.vector_bits() == bits, family


def test_rule_routes_by_the_operands_as_multiplied(same_width):
    # the shape and layout checks run before the flags are applied: they must read op(a), op(b)
    rng = np.random.default_rng(6)
    h, w = rng.standard_normal((16, 256)).astype(np.float32), rng.standard_normal((1024, 256)).astype(np.float32)
    r = native.matmul(h, w, None, 1, transpose_b=True)  # an LSTM step: taken
    assert r is not None
    np.testing.assert_allclose(r, h @ w.T, **TOL[np.float32])
    x = rng.standard_normal((300, 128)).astype(np.float32)
    assert native.matmul(x, w[:200, :128], None, 1, transpose_b=True) is not None  # x @ W^T: taken
    assert native.matmul(x, w[:128, :200], None, 1) is None  # x @ W, 300 rows: BLAS
    # op(a) with its columns as runs (a stored transposed): not the NT layout the rule takes
    assert native.matmul(x.T.copy(), w[:200, :128], None, 1, transpose_a=True, transpose_b=True) is None
    assert native.matmul(h[:1], w, None, 1, transpose_b=True) is None  # one row: BLAS
    assert native.matmul(h[:, :8], w[:8, :8], None, 1) is None  # below the least size


def test_more_threads_keep_the_products_this_kernel_splits_on_every_thread(same_width):
    h, w = np.ones((16, 256), np.float32), np.ones((1024, 256), np.float32).T
    assert native.plan(h.shape, h.strides, w.shape, w.strides, 0, 1) is not None
    # an LSTM step: split by columns between both threads (the native pool's hand-off is a microsecond or two)
    p = native.plan(h.shape, h.strides, w.shape, w.strides, 0, 2)
    assert p is not None and p.workers == 2
    # too little work to split: BLAS would split it, this kernel would not
    s = np.ones((16, 64), np.float32)
    assert native.plan(s.shape, s.strides, w[:64].shape, w[:64].strides, 0, 1) is not None
    assert native.plan(s.shape, s.strides, w[:64].shape, w[:64].strides, 0, 2) is None
    # g @ W (both operands' rows runs of memory): BLAS's on one thread, this kernel's on two
    g, wt = np.ones((512, 128), np.float32), np.ones((128, 384), np.float32)
    assert native.plan(g.shape, g.strides, wt.shape, wt.strides, 0, 1) is None
    assert native.plan(g.shape, g.strides, wt.shape, wt.strides, 0, 2) is not None
    assert native.native_wins(512, 384, 128, 1, False, nn=True, threads=2)
    assert not native.native_wins(512, 384, 128, 1, False, nn=False, threads=2)  # a weight's gradient, a.T @ b
    # attention's batches: BLAS runs each small matrix on one thread whatever the count
    q, k = np.ones((8, 4, 64, 32), np.float32), np.ones((8, 4, 64, 32), np.float32).swapaxes(-1, -2)
    assert native.plan(q.shape, q.strides, k.shape, k.strides, 0, 4) is not None


def test_kernel_rejects_a_bad_geometry(lib):
    geo = (ctypes.c_longlong * 32)(*([0] * 32))
    assert lib.mt_gemm_scratch(0, geo) < 0  # MC, NC, KC of zero
    assert lib.mt_gemm_scratch(7, geo) < 0
    z = np.zeros(1, np.int64)
    assert lib.mt_gemm(7, geo, None, None, None, None, None, 0, z.ctypes.data, z.ctypes.data) < 0


def test_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv("MINITORCH_GPU_NATIVE_GEMM", "0")
    native.LIB.forget()
    native.plan.cache_clear()
    try:
        assert not native.available()
        assert "MINITORCH_GPU_NATIVE_GEMM=0" in native.unavailable_reason()
        a = np.ones((16, 256), np.float32)
        assert native.matmul(a, np.ones((256, 1024), np.float32), None, 1) is None
        np.testing.assert_array_equal(NumpyBackend().matmul(a, np.ones((256, 8), np.float32)), np.full((16, 8), 256))
    finally:
        native.LIB.forget()
        native.plan.cache_clear()


# ------------------------------------------------------------------------------ through the framework

@pytest.mark.parametrize("dt", [torch.float32, torch.float64])
@pytest.mark.parametrize("a_shape,b_shape,tb", [
    ((16, 256), (1024, 256), True),  # an LSTM step, h @ W^T
    ((3, 16, 256), (256, 100), False),
    ((2, 4, 40, 32), (2, 4, 40, 32), True),  # q @ k^T
    ((100, 64), (96, 64), True),  # x @ W^T
])
def test_matmul_matches_torch(device, dt, a_shape, b_shape, tb):
    g = torch.Generator().manual_seed(4)
    ta = torch.randn(a_shape, generator=g, dtype=dt, requires_grad=True)
    tb_ = torch.randn(b_shape, generator=g, dtype=dt, requires_grad=True)
    a = mt.tensor(ta.detach().numpy(), device=device, requires_grad=True)
    b = mt.tensor(tb_.detach().numpy(), device=device, requires_grad=True)
    tr = ta @ (tb_.transpose(-1, -2) if tb else tb_)
    r = a @ (b.transpose(-1, -2) if tb else b)
    tr.sum().backward()
    r.sum().backward()
    tol = dict(rtol=1e-4, atol=1e-4) if dt == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(r.detach().cpu().numpy(), tr.detach().numpy(), **tol)
    np.testing.assert_allclose(a.grad.cpu().numpy(), ta.grad.numpy(), **tol)
    np.testing.assert_allclose(b.grad.cpu().numpy(), tb_.grad.numpy(), **tol)


@pytest.mark.parametrize("dt", [torch.float32, torch.float64])
def test_linear_with_bias_matches_torch(device, dt):
    g = torch.Generator().manual_seed(5)
    lin = torch.nn.Linear(256, 300, dtype=dt)
    x = torch.randn(12, 256, generator=g, dtype=dt)
    ours = mt.nn.Linear(256, 300, dtype=getattr(mt, str(dt).split(".")[1])).to(device)
    ours.weight.data = mt.tensor(lin.weight.detach().numpy(), device=device)
    ours.bias.data = mt.tensor(lin.bias.detach().numpy(), device=device)
    y = ours(mt.tensor(x.numpy(), device=device))
    tol = dict(rtol=1e-4, atol=1e-4) if dt == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(y.detach().cpu().numpy(), lin(x).detach().numpy(), **tol)
