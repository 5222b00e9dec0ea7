"""matmul.cu on the CPU simulator against NumPy in float64: both tile shapes (128 x 128 for float, 64 x 64), every
staging mode (16-byte copies, k-contiguous and strided element copies), odd M/N/K, transposed and sliced operands,
broadcast batches, batch offsets that break 16-byte alignment, split-K and the bias epilogue; and the plan the
launcher makes for an H100 (132 SMs)."""
import numpy as np
import pytest

from minitorch_gpu.backends.cuda.launch import gemm_plan

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
H100_SMS = 132


@pytest.fixture(params=["tile128", "tile64"])
def kt(k, request):
    """The test Launcher with an SM count that makes gemm_plan pick the 128 x 128 tiles for float (one SM: any
    product fills it) or the 64 x 64 tiles (more SMs than any small product has 128 x 128 tiles)."""
    saved = k.sms
    k.sms = 1 if request.param == "tile128" else 10**6
    yield k
    k.sms = saved


def _tol(dt, K):
    # float32 accumulation over K terms of unit variance
    return dict(rtol=1e-4, atol=2e-6 * max(K, 1)) if dt == F32 else dict(rtol=1e-11, atol=1e-12 * max(K, 1))


def _ref(a, b, bias=None):
    r = np.matmul(a.astype(np.float64), b.astype(np.float64))
    return r if bias is None else r + bias.astype(np.float64)


def _layouts(x, rng):
    """x as row-major, column-major (a transposed view), and a strided slice of a larger array."""
    big = rng.standard_normal((2 * x.shape[0] + 1, 3 * x.shape[1] + 2)).astype(x.dtype)
    sliced = big[1::2, 2::3][: x.shape[0], : x.shape[1]]
    sliced[...] = x
    return {"row": x, "col": np.asfortranarray(x), "sliced": sliced}


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (7, 129, 1), (1, 7, 129), (129, 7, 257), (257, 129, 7),
                                   (130, 257, 132)])
def test_odd_shapes_every_layout(kt, M, K, N, dt):
    rng = np.random.default_rng(M * 7 + K * 3 + N)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    want = _ref(a, b)
    la, lb = _layouts(a, rng), _layouts(b, rng)
    for (na, x), (nb_, y) in [(("row", la["row"]), ("row", lb["row"])), (("row", la["row"]), ("col", lb["col"])),
                              (("col", la["col"]), ("row", lb["row"])), (("col", la["col"]), ("col", lb["col"])),
                              (("sliced", la["sliced"]), ("sliced", lb["sliced"]))]:
        got = kt.matmul(x, y)
        assert got.dtype == dt and got.shape == (M, N)
        np.testing.assert_allclose(got, want, err_msg=f"A {na}, B {nb_}", **_tol(dt, K))


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("N", [5, 8, 131])
def test_bias_epilogue(kt, N, dt):
    # N = 8 takes the 128-bit stores of the epilogue, 5 and 131 the scalar ones; x @ W.T is Linear's layout
    rng = np.random.default_rng(N)
    x = rng.standard_normal((67, 33)).astype(dt)
    w = rng.standard_normal((N, 33)).astype(dt)
    bias = rng.standard_normal(N).astype(dt)
    np.testing.assert_allclose(kt.matmul(x, w.T, bias), _ref(x, w.T, bias), **_tol(dt, 33))
    xb = rng.standard_normal((2, 3, 9, 33)).astype(dt)
    np.testing.assert_allclose(kt.matmul(xb, w.T, bias), _ref(xb, w.T, bias), **_tol(dt, 33))


@pytest.mark.parametrize("dt", [F32, F64])
def test_batched_broadcast(kt, dt):
    rng = np.random.default_rng(5)
    cases = [((2, 3, 5, 8), (3, 8, 4)), ((4, 1, 12, 8), (1, 3, 8, 9)), ((5, 7), (2, 7, 3)), ((3, 7), (7,)),
             ((7,), (2, 7, 4))]
    for sa, sb in cases:
        a = rng.standard_normal(sa).astype(dt)
        b = rng.standard_normal(sb).astype(dt)
        got = kt.matmul(a, b)
        assert got.shape == np.matmul(a, b).shape
        np.testing.assert_allclose(got, _ref(a, b), **_tol(dt, sa[-1]))
    # transposed batched operands: A column-major and B k-contiguous in every batch entry
    a = rng.standard_normal((3, 8, 12)).astype(dt)
    b = rng.standard_normal((3, 16, 8)).astype(dt)
    np.testing.assert_allclose(kt.matmul(a.swapaxes(-1, -2), b.swapaxes(-1, -2)),
                               _ref(a.swapaxes(-1, -2), b.swapaxes(-1, -2)), **_tol(dt, 8))


@pytest.mark.parametrize("dt", [F32, F64])
def test_misaligned_batch_offsets_on_the_packed_layouts(kt, dt):
    # every batch entry but the first starts 33 elements after the previous one: base pointer, row stride and
    # M / N are 16-byte multiples, the batch stride is not, so the 16-byte copies must not be chosen for A
    # column-major nor for B row-major (a misaligned copy is a fault on the simulator, as on a GPU)
    x = np.arange(3 * 33, dtype=dt).reshape(3, 33) / 50
    v = x[:, :32].reshape(3, 4, 8)
    assert not v.flags.c_contiguous
    a = v.swapaxes(-1, -2)  # (3, 8, 4), column-major A whose m is contiguous
    rhs = np.linspace(-1, 1, 4 * 12, dtype=dt).reshape(4, 12)
    np.testing.assert_allclose(kt.matmul(a, rhs), _ref(a, rhs), **_tol(dt, 4))
    lhs = np.linspace(-2, 2, 5 * 4, dtype=dt).reshape(5, 4)
    np.testing.assert_allclose(kt.matmul(lhs, v), _ref(lhs, v), **_tol(dt, 4))  # row-major B, n contiguous


@pytest.fixture
def h100(k):
    saved = k.sms
    k.sms = H100_SMS
    yield k
    k.sms = saved


@pytest.mark.parametrize("dt,M,K,N", [(F32, 33, 2100, 40), (F32, 8, 4099, 3), (F64, 20, 1100, 12)])
def test_split_k_is_correct_and_deterministic(h100, dt, M, K, N):
    big, splits = gemm_plan(dt, 1, M, N, K, H100_SMS)
    assert splits > 1 and big == (dt == F32)
    rng = np.random.default_rng(K)
    g = rng.standard_normal((K, M)).astype(dt)
    x = rng.standard_normal((K, N)).astype(dt)
    bias = rng.standard_normal(N).astype(dt)
    # the weight-gradient layout g.T @ x: A column-major, B row-major
    first = h100.matmul(g.T, x, bias)
    np.testing.assert_allclose(first, _ref(g.T, x, bias), **_tol(dt, K))
    assert np.array_equal(first, h100.matmul(g.T, x, bias))  # summed in a fixed order: the same bits
    np.testing.assert_allclose(h100.matmul(np.ascontiguousarray(g.T), x), _ref(g.T, x), **_tol(dt, K))
    xb = np.stack([x, -x])
    np.testing.assert_allclose(h100.matmul(g.T, xb), _ref(g.T, xb), **_tol(dt, K))


def test_plan_for_the_h100_shapes():
    # 4096^3 and the GPT shapes at B*T = 16384, C = 384: x @ W.T, g @ W have tiles to spare; g.T @ x has a 1536 x
    # 384 output (36 tiles of 128 x 128) over K = 16384, so it splits K into one wave of two blocks per SM
    assert gemm_plan(F32, 1, 4096, 4096, 4096, H100_SMS) == (True, 1)
    assert gemm_plan(F32, 1, 16384, 1536, 384, H100_SMS) == (True, 1)
    assert gemm_plan(F32, 1, 16384, 384, 1536, H100_SMS) == (True, 1)
    assert gemm_plan(F32, 1, 1536, 384, 16384, H100_SMS) == (True, 7)  # 252 blocks <= 2 x 132
    # small products: 64 x 64 tiles, no split while K is short
    assert gemm_plan(F32, 1, 256, 256, 256, H100_SMS) == (False, 1)
    assert gemm_plan(F64, 4, 4096, 4096, 4096, H100_SMS) == (False, 1)
