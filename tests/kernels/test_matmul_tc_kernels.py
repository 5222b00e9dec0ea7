"""matmul_tc.cu on the CPU simulator, whose mma.sync and ldmatrix are emulated warp-wide: float16, bfloat16 and
TF32 products against NumPy in float64 on the rounded inputs, for both tiles and all four shared layouts (each
operand k-contiguous or m/n-contiguous), 16-byte and element-wise copies (sliced views, misaligned bases and
batch offsets), odd sizes around the tile and k-step edges, broadcast batches, the bias epilogue and split-K; the
epilogue's rounding bit for bit against NumPy and ml_dtypes; the plan for an H100; and the simulator's checks on
the warp-wide instructions (a misaligned copy or a partial warp is an error, never a crash)."""
import ml_dtypes
import numpy as np
import pytest

from minitorch_gpu.backends.cuda import loader
from minitorch_gpu.backends.cuda.launch import TC_BK, TC_KERNELS, tc_plan, tc_smem, tc_type
from minitorch_gpu.backends.cuda.sim import SimError

F16, BF16, F32 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32)
TYPES = {"f16": F16, "bf16": BF16, "tf32": F32}
H100_SMS = 132


def _tf32(x):
    """float32 -> tf32 as cvt.rna.tf32.f32 (finite values): 10 mantissa bits, ties away from zero."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def _operand(ty, x):
    """What the tensor cores multiply: the 16-bit values themselves, or float32 rounded to tf32."""
    return (_tf32(x) if ty == "tf32" else x).astype(np.float64)


def _check(ty, got, a, b, bias=None):
    """``got`` (in the input type) against the float64 product of the multiplied values: float32 accumulation over
    K, then one rounding to the output type (none for tf32, whose output is float32)."""
    dt = TYPES[ty]
    want = np.matmul(_operand(ty, a), _operand(ty, b))
    if bias is not None:
        want = want + bias.astype(np.float64)
    assert got.dtype == dt and got.shape == want.shape
    K = a.shape[-1]
    mag = np.matmul(np.abs(_operand(ty, a)), np.abs(_operand(ty, b)))
    if bias is not None:
        mag = mag + np.abs(bias.astype(np.float64))
    rounding = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8, "tf32": 0.0}[ty]
    tol = rounding * np.abs(want) + (K + 1) * 2.0 ** -23 * mag + 1e-30
    err = np.abs(got.astype(np.float64) - want)
    assert np.all(err <= tol), f"{ty}: worst error {err.max():.3g} at {np.unravel_index(np.argmax(err - tol), err.shape)}"


def _rand(rng, shape, ty):
    return rng.standard_normal(shape).astype(TYPES[ty])


def _layouts(x, rng):
    """x as row-major, column-major (a transposed view), a strided slice of a larger array (element-wise copies),
    and a view one element into a buffer (its base is not 16-byte aligned: element-wise copies too)."""
    big = np.zeros((2 * x.shape[0] + 1, 3 * x.shape[1] + 2), dtype=x.dtype)
    sliced = big[1::2, 2::3][: x.shape[0], : x.shape[1]]
    sliced[...] = x
    flat = np.zeros(x.size + 1, dtype=x.dtype)
    shifted = flat[1:].reshape(x.shape)
    shifted[...] = x
    return {"row": x, "col": np.asfortranarray(x), "sliced": sliced, "shifted": shifted}


@pytest.fixture(params=[(ty, tile) for ty in TYPES for tile in TC_KERNELS], ids=lambda p: f"{p[0]}-{p[1]}")
def tk(k, request):
    """(the test Launcher, type name, matmul on that type's tensor-core kernel with the tile forced); one SM, so
    that nothing splits K."""
    ty, tile = request.param
    saved = k.sms
    k.sms = 1

    def mm(a, b, bias=None):
        return k.matmul(a, b, bias, tf32=True, tc_tile=tile)

    yield k, ty, mm
    k.sms = saved


@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (16, 16, 8), (7, 33, 13), (65, 17, 63), (129, 31, 127)])
def test_odd_shapes_every_layout(tk, monkeypatch, M, K, N):
    k, ty, mm = tk
    rng = np.random.default_rng(M * 7 + K * 3 + N)
    a, b = _rand(rng, (M, K), ty), _rand(rng, (K, N), ty)
    la, lb = _layouts(a, rng), _layouts(b, rng)
    entries = []
    real = k.fn
    monkeypatch.setattr(k, "fn", lambda f, name: entries.append(name) or real(f, name))
    for na, nb in [("row", "row"), ("row", "col"), ("col", "row"), ("col", "col"), ("sliced", "shifted"),
                   ("shifted", "sliced")]:
        _check(ty, mm(la[na], lb[nb]), a, b)
    # the four shared layouts: A k-contiguous unless column-major, B k-contiguous when column-major (a 1 x 1
    # operand has no layout of its own)
    if min(M, K, N) > 1:
        assert {e.rsplit("_", 1)[1] for e in entries} == {"kt", "kk", "tt", "tk"}, entries


def test_empty_and_k_zero(tk):
    _, ty, mm = tk
    dt = TYPES[ty]
    assert mm(np.ones((0, 5), dt), np.ones((5, 3), dt)).shape == (0, 3)
    assert mm(np.ones((4, 5), dt), np.ones((5, 0), dt)).shape == (4, 0)
    bias = np.arange(3).astype(dt)
    r = mm(np.ones((4, 0), dt), np.ones((0, 3), dt), bias)
    assert r.dtype == dt and np.array_equal(r.astype(np.float32), np.broadcast_to(bias.astype(np.float32), (4, 3)))


@pytest.mark.parametrize("N", [5, 8, 131])
def test_bias_epilogue(tk, N):
    _, ty, mm = tk
    # N = 8 stores pairs of outputs, 5 and 131 single ones; x @ W.T is Linear's layout (both operands k-contiguous)
    rng = np.random.default_rng(N)
    x, w, bias = _rand(rng, (67, 40), ty), _rand(rng, (N, 40), ty), _rand(rng, (N,), ty)
    _check(ty, mm(x, w.T, bias), x, w.T, bias)
    xb = _rand(rng, (2, 3, 9, 40), ty)
    _check(ty, mm(xb, w.T, bias), xb, w.T, bias)


def test_batched_broadcast_and_vectors(tk):
    _, ty, mm = tk
    rng = np.random.default_rng(5)
    for sa, sb in [((2, 3, 5, 8), (3, 8, 4)), ((4, 1, 12, 8), (1, 3, 8, 9)), ((5, 7), (2, 7, 3)), ((3, 7), (7,)),
                   ((7,), (2, 7, 4)), ((9,), (9,))]:
        a, b = _rand(rng, sa, ty), _rand(rng, sb, ty)
        got = mm(a, b)
        assert got.shape == np.matmul(a.astype(np.float32), b.astype(np.float32)).shape
        _check(ty, got, a, b)
    # transposed batched operands: A m-contiguous and B k-contiguous in every batch entry
    a, b = _rand(rng, (3, 24, 12), ty), _rand(rng, (3, 16, 24), ty)
    _check(ty, mm(a.swapaxes(-1, -2), b.swapaxes(-1, -2)), a.swapaxes(-1, -2), b.swapaxes(-1, -2))


def test_misaligned_batch_offsets(tk):
    _, ty, mm = tk
    # batch entries 33 elements apart: base, row stride and the contiguous extent are 16-byte multiples, the
    # batch stride is not, so neither operand may take the 16-byte copies (they would fault on the simulator,
    # as on a GPU)
    x = (np.arange(3 * 33) / 50).astype(TYPES[ty]).reshape(3, 33)
    v = x[:, :32].reshape(3, 4, 8)
    assert not v.flags.c_contiguous
    a = v.swapaxes(-1, -2)  # (3, 8, 4): m contiguous
    rhs = np.linspace(-1, 1, 4 * 12).astype(TYPES[ty]).reshape(4, 12)
    _check(ty, mm(a, rhs), a, rhs)
    lhs = np.linspace(-2, 2, 5 * 4).astype(TYPES[ty]).reshape(5, 4)
    _check(ty, mm(lhs, v), lhs, v)  # B n contiguous
    w = x[:, :32].reshape(3, 8, 4)  # A k contiguous, K = 4: a multiple of the pack only for tf32
    _check(ty, mm(w, rhs), w, rhs)


@pytest.mark.parametrize("ty", list(TYPES))
def test_k_steps_and_tile_edges(k, ty):
    # K around the pipeline step (and its multiples, so the ring wraps), M and N around both tiles
    saved = k.sms
    k.sms = 1
    try:
        rng = np.random.default_rng(7)
        bk = TC_BK[ty]
        for M, K, N in [(64, bk - 1, 65), (65, bk + 1, 64), (128, 5 * bk, 129), (127, 4 * bk + 3, 16)]:
            a, b = _rand(rng, (M, K), ty), _rand(rng, (K, N), ty)
            for tile in TC_KERNELS:
                _check(ty, k.matmul(a, b, tf32=True, tc_tile=tile), a, b)
    finally:
        k.sms = saved


@pytest.mark.parametrize("ty", list(TYPES))
def test_split_k_is_correct_and_deterministic(k, ty):
    saved = k.sms
    k.sms = H100_SMS
    try:
        M, K, N = 40, 1100, 24
        tile, splits = tc_plan(ty, 1, M, N, K, H100_SMS)
        assert tile.name == "64x64" and splits > 1
        rng = np.random.default_rng(K)
        g, x, bias = _rand(rng, (K, M), ty), _rand(rng, (K, N), ty), _rand(rng, (N,), ty)
        first = k.matmul(g.T, x, bias, tf32=True)  # the weight gradient's layout: both operands "t"
        _check(ty, first, g.T, x, bias)
        assert np.array_equal(first.view(np.uint8), k.matmul(g.T, x, bias, tf32=True).view(np.uint8))
        xb = np.stack([x, -x])
        _check(ty, k.matmul(g.T, xb, tf32=True), g.T, xb)
    finally:
        k.sms = saved


def test_tf32_needs_the_switch_and_tensor_cores(k):
    a = np.ones((3, 4), np.float32)
    assert tc_type(F32, False) is None and tc_type(F32, True) == "tf32"
    assert tc_type(np.dtype(np.float64), True) is None and tc_type(F16, False) == "f16"
    # full float32 (matmul.cu) without the switch; no tensor-core kernel on a GPU without them
    assert np.array_equal(k.matmul(a, a.T), np.full((3, 3), 4, np.float32))
    saved = k.tensor_cores
    k.tensor_cores = False
    try:
        assert k.matmul(a.astype(F16), a.T.astype(F16)) is None  # the backend's cuBLAS then
    finally:
        k.tensor_cores = saved


# ---------------------------------------------------------------------- conversions, bit for bit
def _special(dt):
    """Values whose float32 sum with 0 is hard to round into dt: ties, subnormals, overflow, signed zeros."""
    fi = ml_dtypes.finfo(dt) if dt == BF16 else np.finfo(dt)
    mx, tiny = float(fi.max), float(fi.smallest_subnormal)
    base = np.array([0.0, -0.0, 1.0, -1.0, mx, -mx, tiny, -tiny, tiny / 2, tiny * 0.75, tiny * 1.5, tiny * 2.5,
                     float(fi.smallest_normal) * 0.999, float(fi.eps) / 2, 1 + float(fi.eps) / 2,
                     1 + float(fi.eps) * 1.5, mx * 1.0001, np.inf, -np.inf], dtype=np.float64)
    rng = np.random.default_rng(0)
    rand = rng.standard_normal(400) * np.exp2(rng.integers(-30, 20, 400))
    return np.concatenate([base, rand]).astype(np.float32)


@pytest.mark.parametrize("ty", ["f16", "bf16"])
def test_epilogue_rounds_like_numpy(k, ty):
    # out = a * 1 + bias with K = 1: the float32 sum is exact or rounded once in float32 (as the reference does),
    # then the epilogue rounds it to the output type: round to nearest even, subnormals, overflow to infinity
    dt = TYPES[ty]
    v = _special(dt)
    bias_vals = np.random.default_rng(1).standard_normal(v.size).astype(dt)
    with np.errstate(over="ignore"):
        a = v.astype(dt).reshape(-1, 1)  # each row's own value, exactly representable
    for bias in (None, bias_vals):
        b = np.ones((1, v.size), dt) if bias is not None else np.ones((1, 1), dt)
        got = k.matmul(a, b, bias)
        # in the kernel's order: the accumulator starts at +0 (so -0 * 1 gives +0), then the bias
        want = np.float32(0) + a.astype(np.float32)
        if bias is not None:
            want = want + bias.astype(np.float32)[None, :]
        with np.errstate(over="ignore"):
            want = want.astype(dt)
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    # the split-K reduce rounds once, like the epilogue: a sum that only float32 can hold
    saved = k.sms
    k.sms = H100_SMS
    try:
        K = 1024
        ones = np.ones((K, 3), dt)
        x = np.full((2, K), 1 + 2.0 ** -7 if ty == "f16" else 1 + 2.0 ** -5, dtype=dt)
        assert tc_plan(ty, 1, 2, 3, K, H100_SMS)[1] > 1
        got = k.matmul(x, ones)
        want = (x.astype(np.float64) @ ones.astype(np.float64)).astype(np.float32).astype(dt)
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    finally:
        k.sms = saved


def test_tf32_rounds_ties_away_from_zero(k):
    # K = 1 against 1.0: the product is the tf32 rounding of each input, exactly
    x = np.array([1 + 2.0 ** -11, -(1 + 2.0 ** -11), 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -11 - 2.0 ** -20,
                  3.0e38, -0.0, 0.1, np.inf, -np.inf], dtype=np.float32)
    got = k.matmul(x.reshape(-1, 1), np.ones((1, 1), np.float32), tf32=True)[:, 0]
    want = np.float32(0) + np.where(np.isinf(x), x, _tf32(x))  # the accumulator starts at +0
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert got[0] == 1 + 2.0 ** -10 and got[1] == -(1 + 2.0 ** -10) and got[3] == 1.0  # ties away, below ties down
    nan = k.matmul(np.array([[np.nan]], np.float32), np.ones((1, 1), np.float32), tf32=True)
    assert np.isnan(nan[0, 0])


# ---------------------------------------------------------------------- plans and tables
def test_plan_for_the_h100_shapes():
    # 4096^3, x @ W.T and g @ W at B*T = 16384, C = 384 fill the SMs with 128 x 128 tiles; g.T @ x (1536 x 384
    # over K = 16384) has 36 of them, so 64 x 64 tiles (144) and K split into one wave of four blocks per SM
    for ty in TYPES:
        assert tc_plan(ty, 1, 4096, 4096, 4096, H100_SMS) == (TC_KERNELS["128x128"], 1)
        assert tc_plan(ty, 1, 16384, 1536, 384, H100_SMS) == (TC_KERNELS["128x128"], 1)
        assert tc_plan(ty, 1, 16384, 384, 1536, H100_SMS) == (TC_KERNELS["128x128"], 1)
        assert tc_plan(ty, 1, 1536, 384, 16384, H100_SMS) == (TC_KERNELS["64x64"], 3)
        assert tc_plan(ty, 1, 1536, 384, 16384, H100_SMS, "128x128") == (TC_KERNELS["128x128"], 7)
    # shared memory within an A100's 163 KiB opt-in for every kernel, and two blocks of the big tile per SM
    for ty in TYPES:
        for kern in TC_KERNELS.values():
            for a_k in (True, False):
                for b_k in (True, False):
                    assert kern.per_sm * tc_smem(ty, kern, a_k, b_k) <= 163 * 1024


def test_kernel_table_matches_the_source():
    # the launcher sizes grids, k chunks and shared memory from TC_KERNELS and TC_BK: every entry point must
    # repeat them (tile, warps x 32 threads, stages) and exist for every type and layout
    import re
    text = loader.source("matmul_tc.cu")
    inst = re.findall(r"void __launch_bounds__\((\d+), (\d+)\) (tcgemm_(\w+?)_(\d+x\d+)_([kt]{2}))\(TC_ARGS\(\w+\)\)"
                      r"\s*\{\s*tc_gemm<TC_(\w+), (\d+), (\d+), (\d+), (\d+), (\d+), (true|false), (true|false)>",
                      text)
    seen = set()
    for threads, per_sm, _, ty, tile, lay, tname, bm, bn, wm, wn, stages, ak, bkm in inst:
        kern = TC_KERNELS[tile]
        assert tname.lower() == ty and (int(bm), int(bn)) == (kern.bm, kern.bn)
        assert int(threads) == 32 * int(wm) * int(wn) == kern.threads and int(stages) == kern.stages
        assert int(per_sm) == kern.per_sm and (ak == "true", bkm == "true") == (lay[0] == "k", lay[1] == "k")
        seen.add((ty, tile, lay))
    assert seen == {(ty, tile, a + b) for ty in TYPES for tile in TC_KERNELS for a in "kt" for b in "kt"}
    assert re.search(r"template <> struct TcT<TC_TF32> \{[^}]*BK = 16;", text) and TC_BK["tf32"] == 16
    assert re.search(r"template <int TY> struct TcT \{[^}]*BK = 32;", text) and TC_BK["f16"] == TC_BK["bf16"] == 32


# ---------------------------------------------------------------------- the simulator's checks
def _args(k, ty, a, b, out, vec):
    from minitorch_gpu.backends.cuda.launch import _i32, _i64
    M, K = a.shape
    N = b.shape[1]
    offs = k.upload(np.zeros(3, np.int64))
    bits = (lambda x: x) if ty == "tf32" else (lambda x: x.view(np.uint16))
    return (bits(a), bits(b), out, bits(out), offs, _i64(1), _i32(1), _i64(K), _i64(M * N), _i64(M), _i64(N),
            _i64(K), _i64(a.strides[0] // a.itemsize), _i64(1), _i64(b.strides[0] // b.itemsize), _i64(1),
            _i32(0), _i32(vec))


def test_misaligned_16_byte_copies_are_faults_not_crashes(k):
    # forcing the 16-byte copies (vec bit 0) on an A whose base is 2 bytes past 16: the simulator reports the
    # misaligned access at the copy, the process lives on
    buf = np.zeros(16 * 16 + 8, np.float16)
    a = buf[1:1 + 256].reshape(16, 16)
    b = np.zeros((16, 8), np.float16)
    out = np.empty((16, 8), np.float16)
    fn = k.fn("matmul_tc.cu", "tcgemm_f16_64x64_kt")
    smem = tc_smem("f16", TC_KERNELS["64x64"], True, False)
    fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, smem)
    with pytest.raises(SimError, match="misaligned address"):
        fn((1, 1, 1), (128,), _args(k, "f16", a, b, out, 1), shared_mem=smem)
    fn((1, 1, 1), (128,), _args(k, "f16", a, b, out, 0), shared_mem=smem)  # the element-wise copies
    assert np.array_equal(out, np.zeros((16, 8), np.float16))


def test_mma_needs_the_whole_warp(k):
    # 112 threads: the last warp has 16 lanes, and mma.sync / ldmatrix are .aligned warp-wide instructions
    a = np.zeros((16, 16), np.float16)
    b = np.zeros((16, 8), np.float16)
    out = np.empty((16, 8), np.float16)
    fn = k.fn("matmul_tc.cu", "tcgemm_f16_64x64_kt")
    smem = tc_smem("f16", TC_KERNELS["64x64"], True, False)
    fn.max_dynamic_shared_size_bytes = max(fn.max_dynamic_shared_size_bytes, smem)
    with pytest.raises(SimError, match=r"warp-wide matrix instruction .* needs all 32 lanes of warp 3"):
        fn((1, 1, 1), (112,), _args(k, "f16", a, b, out, 0), shared_mem=smem)
