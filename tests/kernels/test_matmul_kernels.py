"""matmul.cu on the CPU simulator against NumPy in float64: every SGEMM variant of the launcher's table (and the
64 x 64 DGEMM), every staging mode (16-byte copies, k-contiguous and strided element copies), odd M/N/K, transposed
and sliced operands, broadcast batches, batch offsets that break 16-byte alignment, split-K, the bias epilogue and
the L2 block swizzle; and the plan the launcher makes for an H100 (132 SMs)."""
import numpy as np
import pytest

from minitorch_gpu.backends.cuda.launch import SGEMM_CHOICE, SGEMM_KERNELS, gemm_class, gemm_plan

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
H100_SMS = 132
# (dtype, SGEMM_KERNELS name): float64 has the one kernel whatever the variant
VARIANTS = [(F32, name) for name in SGEMM_KERNELS] + [(F64, "tile64")]


@pytest.fixture(params=VARIANTS, ids=[f"{dt}-{name}" for dt, name in VARIANTS])
def kv(k, request):
    """(the test Launcher, dtype, matmul with that variant forced, no swizzle); one SM so that nothing splits K."""
    dt, name = request.param
    saved = k.sms
    k.sms = 1

    def mm(a, b, bias=None):
        return k.matmul(a, b, bias, variant=(name, 0))

    yield k, dt, mm
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


@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (7, 129, 1), (1, 7, 129), (129, 7, 257), (257, 129, 7),
                                   (130, 257, 132)])
def test_odd_shapes_every_layout(kv, M, K, N):
    _, dt, mm = kv
    rng = np.random.default_rng(M * 7 + K * 3 + N)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    want = _ref(a, b)
    la, lb = _layouts(a, rng), _layouts(b, rng)
    for (na, x), (nb_, y) in [(("row", la["row"]), ("row", lb["row"])), (("row", la["row"]), ("col", lb["col"])),
                              (("col", la["col"]), ("row", lb["row"])), (("col", la["col"]), ("col", lb["col"])),
                              (("sliced", la["sliced"]), ("sliced", lb["sliced"]))]:
        got = mm(x, y)
        assert got.dtype == dt and got.shape == (M, N)
        np.testing.assert_allclose(got, want, err_msg=f"A {na}, B {nb_}", **_tol(dt, K))


@pytest.mark.parametrize("N", [5, 8, 131])
def test_bias_epilogue(kv, N):
    _, dt, mm = kv
    # N = 8 takes the 128-bit stores of the epilogue, 5 and 131 the scalar ones; x @ W.T is Linear's layout
    rng = np.random.default_rng(N)
    x = rng.standard_normal((67, 33)).astype(dt)
    w = rng.standard_normal((N, 33)).astype(dt)
    bias = rng.standard_normal(N).astype(dt)
    np.testing.assert_allclose(mm(x, w.T, bias), _ref(x, w.T, bias), **_tol(dt, 33))
    xb = rng.standard_normal((2, 3, 9, 33)).astype(dt)
    np.testing.assert_allclose(mm(xb, w.T, bias), _ref(xb, w.T, bias), **_tol(dt, 33))


def test_batched_broadcast(kv):
    _, dt, mm = kv
    rng = np.random.default_rng(5)
    cases = [((2, 3, 5, 8), (3, 8, 4)), ((4, 1, 12, 8), (1, 3, 8, 9)), ((5, 7), (2, 7, 3)), ((3, 7), (7,)),
             ((7,), (2, 7, 4))]
    for sa, sb in cases:
        a = rng.standard_normal(sa).astype(dt)
        b = rng.standard_normal(sb).astype(dt)
        got = mm(a, b)
        assert got.shape == np.matmul(a, b).shape
        np.testing.assert_allclose(got, _ref(a, b), **_tol(dt, sa[-1]))
    # transposed batched operands: A column-major and B k-contiguous in every batch entry
    a = rng.standard_normal((3, 8, 12)).astype(dt)
    b = rng.standard_normal((3, 16, 8)).astype(dt)
    np.testing.assert_allclose(mm(a.swapaxes(-1, -2), b.swapaxes(-1, -2)),
                               _ref(a.swapaxes(-1, -2), b.swapaxes(-1, -2)), **_tol(dt, 8))


def test_misaligned_batch_offsets_on_the_packed_layouts(kv):
    _, dt, mm = kv
    # every batch entry but the first starts 33 elements after the previous one: base pointer, row stride and
    # M / N are 16-byte multiples, the batch stride is not, so the 16-byte copies must not be chosen for A
    # column-major nor for B row-major (a misaligned copy is a fault on the simulator, as on a GPU)
    x = np.arange(3 * 33, dtype=dt).reshape(3, 33) / 50
    v = x[:, :32].reshape(3, 4, 8)
    assert not v.flags.c_contiguous
    a = v.swapaxes(-1, -2)  # (3, 8, 4), column-major A whose m is contiguous
    rhs = np.linspace(-1, 1, 4 * 12, dtype=dt).reshape(4, 12)
    np.testing.assert_allclose(mm(a, rhs), _ref(a, rhs), **_tol(dt, 4))
    lhs = np.linspace(-2, 2, 5 * 4, dtype=dt).reshape(5, 4)
    np.testing.assert_allclose(mm(lhs, v), _ref(lhs, v), **_tol(dt, 4))  # row-major B, n contiguous


@pytest.fixture
def h100(k):
    saved = k.sms
    k.sms = H100_SMS
    yield k
    k.sms = saved


def _check_split_k(k, dt, M, K, N, variant=None):
    rng = np.random.default_rng(K)
    g = rng.standard_normal((K, M)).astype(dt)
    x = rng.standard_normal((K, N)).astype(dt)
    bias = rng.standard_normal(N).astype(dt)
    # the weight-gradient layout g.T @ x: A column-major, B row-major
    first = k.matmul(g.T, x, bias, variant=variant)
    np.testing.assert_allclose(first, _ref(g.T, x, bias), **_tol(dt, K))
    assert np.array_equal(first, k.matmul(g.T, x, bias, variant=variant))  # summed in a fixed order: the same bits
    np.testing.assert_allclose(k.matmul(np.ascontiguousarray(g.T), x, variant=variant), _ref(g.T, x), **_tol(dt, K))
    xb = np.stack([x, -x])
    np.testing.assert_allclose(k.matmul(g.T, xb, variant=variant), _ref(g.T, xb), **_tol(dt, K))


@pytest.mark.parametrize("dt,M,K,N", [(F32, 33, 2100, 40), (F32, 8, 4099, 3), (F64, 20, 1100, 12)])
def test_split_k_is_correct_and_deterministic(h100, dt, M, K, N):
    plan = gemm_plan(dt, 1, M, N, K, H100_SMS)
    assert plan.splits > 1
    assert (plan.kernel.entry == "matmul_forward<double>") == (dt == F64)
    _check_split_k(h100, dt, M, K, N)


@pytest.mark.parametrize("name", list(SGEMM_KERNELS))
def test_split_k_every_variant(h100, name):
    # K = 1100 is not a whole number of 16-row steps per split: every split but the last has full steps
    assert gemm_plan(F32, 1, 33, 40, 1100, H100_SMS, (name, 0)).splits > 1
    _check_split_k(h100, F32, 33, 1100, 40, (name, 0))


@pytest.mark.parametrize("name", ["v2", "warp_k8_s3", "warp_128x64", "warp_64x128"])
@pytest.mark.parametrize("swz", [1, 2, 8])
def test_block_swizzle_covers_every_tile(k, name, swz):
    # a grid of one block per tile (the only grid the kernel swizzles): 5 or 10 tile rows, bands of swz rows,
    # the last band short (5 % 2) or the whole grid (8 > 5)
    saved = k.max_blocks, k.sms
    k.max_blocks, k.sms = 1 << 16, 1
    try:
        rng = np.random.default_rng(swz)
        a = rng.standard_normal((600, 20)).astype(np.float32)
        b = rng.standard_normal((300, 20)).astype(np.float32)
        bias = rng.standard_normal(300).astype(np.float32)
        np.testing.assert_allclose(k.matmul(a, b.T, bias, variant=(name, swz)), _ref(a, b.T, bias), **_tol(F32, 20))
    finally:
        k.max_blocks, k.sms = saved


def test_plan_for_the_h100_shapes():
    # 4096^3 and the GPT shapes at B*T = 16384, C = 384: x @ W.T, g @ W have tiles to spare; g.T @ x has a 1536 x
    # 384 output (36 tiles of 128 x 128) over K = 16384, so it splits K into one wave of two blocks per SM
    shapes = {"large": (4096, 4096, 4096), "short_k": (16384, 1536, 384), "narrow": (16384, 384, 1536),
              "splitk": (1536, 384, 16384), "small": (256, 256, 256)}
    for cls, (M, N, K) in shapes.items():
        assert gemm_class(F32, 1, M, N, K, H100_SMS) == cls
        name, swz = SGEMM_CHOICE[cls]
        assert gemm_plan(F32, 1, M, N, K, H100_SMS) == (SGEMM_KERNELS[name], swz, 7 if cls == "splitk" else 1)
    assert gemm_class(F32, 1, 8192, 8192, 1024, H100_SMS) == gemm_class(F32, 1, 2048, 2048, 2048, H100_SMS) == "large"
    # g.T @ x: 252 blocks of 128 x 128 <= 2 x 132; 128 x 64 tiles, four per SM: 72 tiles, 528 // 72 = 7 splits
    assert gemm_plan(F32, 1, 1536, 384, 16384, H100_SMS, ("v2", 0)).splits == 7
    assert gemm_plan(F32, 1, 1536, 384, 16384, H100_SMS, ("warp_128x64", 0)).splits == 7
    # float64 ignores the table: 64 x 64 tiles, no split while there are tiles to spare
    d = gemm_plan(F64, 4, 4096, 4096, 4096, H100_SMS, ("warp_k16", 8))
    assert d.kernel.entry == "matmul_forward<double>" and d.swizzle == 0 and d.splits == 1


def test_variant_table_matches_the_kernels():
    # the launcher sizes grids and split-K chunks from the table: a row must name a kernel of matmul.cu whose
    # template arguments it repeats
    import re

    from minitorch_gpu.backends.cuda import loader
    text = loader.source("matmul.cu")
    inst = dict(re.findall(r"void __launch_bounds__\([^)]*\)\s*(\w+)\(MM_TILED_ARGS\(float\)\)\s*\{\s*"
                           r"mm_tiled<float, ([^>]*)>", text))
    for name, kern in SGEMM_KERNELS.items():
        if kern.entry == "matmul_forward<float>":
            continue
        assert kern.entry in inst, name
        bm, bn, bk, _tm, nt = (int(v) for v in inst[kern.entry].split(",")[:5])
        assert (bm, bn, bk, nt) == (kern.bm, kern.bn, kern.bk, kern.threads), name
    for cls, (name, swz) in SGEMM_CHOICE.items():
        assert name in SGEMM_KERNELS and swz >= 0, cls
