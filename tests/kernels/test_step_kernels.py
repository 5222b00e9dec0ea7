"""optim.cu, random.cu and embedding.cu on the CPU simulator: the fused multi-tensor optimizer steps of every
optimizer against backends/_optim.py's NumPy bodies (groups of awkward sizes, tensors longer than a chunk, every
option bit); Philox streams bit-identical with backends/_random.py; embedding backward against np.add.at."""
import ml_dtypes
import numpy as np
import pytest
from fused_cases import CASE_IDS, CASES, assert_states_equal, copy_state, make_state, run_step

from minitorch_gpu.backends._random import dropout_threshold
from minitorch_gpu.backends.numpy_backend import NumpyBackend

REF = NumpyBackend()
REF.native_optim = False  # the NumPy bodies: the reference both compiled paths are held to
SHAPES = [(1,), (7,), (3, 5), (257,), (0,), (64, 33)]
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16])
@pytest.mark.parametrize("kind,opts", CASES, ids=CASE_IDS)
def test_fused_step_kernel_matches_reference(sim_backend, k, monkeypatch, dt, kind, opts):
    state = make_state(kind, dt, SHAPES, seed=1)
    ref = copy_state(state)
    taken = []
    real = type(sim_backend)._fused_step
    monkeypatch.setattr(sim_backend, "_fused_step", lambda step: taken.append(real(sim_backend, step)) or taken[-1])
    monkeypatch.setattr(k, "OPTIM_CHUNK", 100)  # tensors longer than a chunk are split across blocks
    for step in (1, 2, 3):
        run_step(sim_backend, kind, state, step, opts)
        run_step(REF, kind, ref, step, opts)
    assert taken == [True] * 3  # one kernel launch per step, not the array-module body
    if np.dtype(dt).itemsize == 2:
        # float32 arithmetic in the same order as the body's float32 working copies, one rounding per store
        assert_states_equal(state, ref)
        return
    tol = dict(rtol=2e-6, atol=1e-7) if dt == np.float32 else dict(rtol=1e-13, atol=1e-15)
    assert_states_equal(state, ref, **tol)


def test_optimizer_declines_mixed_or_strided_groups(sim_backend, k):
    from minitorch_gpu.backends.cuda.fused_step import FusedStep
    p = [np.ones(4, np.float32), np.ones((4, 4), np.float32).T]
    step = FusedStep("sgd", [p, [np.ones_like(x) for x in p], None], dict(lr=0.1), {})
    assert not k.optim_step(step)
    p = [np.ones(4, np.int32)]
    assert not k.optim_step(FusedStep("adam", [p, p, p, p, None], {}, {}))
    p = [np.ones(4, np.float16), np.ones(4, BF16)]
    assert not k.optim_step(FusedStep("sgd", [p, p, None], dict(lr=0.1), {}))
    p = [np.ones(4, np.float32), np.ones(4, np.float64)]
    assert not k.optim_step(FusedStep("lion", [p, p, p], {}, {}))


SEEDS = [0, 1, 0x123456789ABCDEF0, (1 << 64) - 1]
RAND_DTYPES = [np.float32, np.float64, np.float16, BF16]
OFFSETS = [0, 5, (1 << 64) - 2, (1 << 128) - 3]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offset", OFFSETS)
def test_philox_words_bit_identical(k, seed, offset):
    for n in (1, 3, 257):
        got = k.philox_words(seed, offset, n)
        np.testing.assert_array_equal(got, REF.philox4x32_10(offset, seed, n))


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("offset", OFFSETS[:3])
@pytest.mark.parametrize("dt", RAND_DTYPES)
@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_uniform_bit_identical(k, seed, offset, dt, n):
    for low, high in ((0.0, 1.0), (-2.0, 3.5)):
        got, nb = k.uniform(seed, offset, n, np.dtype(dt), low, high)
        want, nb_ref = REF.rand_uniform(seed, offset, (n,), np.dtype(dt), low, high)
        assert nb == nb_ref
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("dt", RAND_DTYPES)
@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_normal_matches(k, seed, dt, n):
    for mean, std in ((0.0, 1.0), (1.5, 0.25)):
        got, nb = k.normal(seed, 9, n, np.dtype(dt), mean, std)
        want, nb_ref = REF.rand_normal(seed, 9, (n,), np.dtype(dt), mean, std)
        assert nb == nb_ref and got.dtype == want.dtype
        if np.dtype(dt).itemsize == 2:
            # rounded once from the same float64 value: a last-bit difference of libm never reaches 8 or 11 bits
            np.testing.assert_array_equal(got, want)
            continue
        # log/cos/sin may differ in the last float64 bit between libraries; float32 practically never does
        np.testing.assert_allclose(got, want, rtol=1e-15 if dt == np.float64 else 1e-7, atol=0)


@pytest.mark.parametrize("low,high", [(0, 10), (-5, 5), (0, 1 << 32), (-(1 << 40), 1 << 40), (-(1 << 63), (1 << 63))])
def test_randint_bit_identical(k, low, high):
    got, nb = k.randint(77, 3, 1001, low, high)
    want, nb_ref = REF.rand_int(77, 3, (1001,), low, high, np.dtype(np.int64))
    assert nb == nb_ref
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n_idx,dim,rows", [(1, 1, 1), (7, 5, 3), (300, 33, 10), (0, 4, 2), (1000, 3, 1000)])
def test_embedding_backward(k, dt, n_idx, dim, rows):
    rng = np.random.default_rng(n_idx + dim)
    idx = rng.integers(-rows, rows, n_idx).astype(np.int64)
    grad = rng.standard_normal((n_idx, dim)).astype(dt)
    out = rng.standard_normal((rows, dim)).astype(dt)
    want = out.copy()
    np.add.at(want, idx, grad)
    assert k.embedding_backward(out, idx, grad)
    np.testing.assert_allclose(out, want, rtol=1e-5 if dt == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.parametrize("dt", [np.float16, BF16])
@pytest.mark.parametrize("n_idx,dim,rows", [(1, 1, 1), (7, 5, 3), (300, 33, 10), (0, 4, 2), (1000, 3, 1000),
                                            (2000, 9, 2)])
def test_embedding_backward_half_sums_in_float32(k, dt, n_idx, dim, rows):
    rng = np.random.default_rng(n_idx + dim)
    idx = rng.integers(-rows, rows, n_idx).astype(np.int64)
    grad = rng.standard_normal((n_idx, dim)).astype(dt)
    out = rng.standard_normal((rows, dim)).astype(dt)
    # each row's contributions added to it in float32 in their order, rounded once (the CPU's float32 buffer)
    acc = out.astype(np.float32)
    np.add.at(acc, idx, grad.astype(np.float32))
    want = acc.astype(dt)
    assert k.embedding_backward(out, idx, grad)
    np.testing.assert_array_equal(out.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("dt", [np.float16, BF16])
def test_cpu_add_at_of_half_rounds_once(dt):
    # 4096 repeats of 0.1 added one by one in bfloat16 would stall at 32 (the spacing there exceeds 0.1)
    a = np.zeros((2, 3), dt)
    REF.add_at(a, (np.zeros(4096, np.int64),), np.full((4096, 3), 0.1, dt))
    np.testing.assert_array_equal(a[0], np.full(3, np.float32(np.dtype(dt).type(0.1)) * 4096, np.float32).astype(dt))
    np.testing.assert_array_equal(a[1], np.zeros(3, dt))


def test_embedding_backward_index_errors(k):
    # the kernel's flag is queued, and read (raising) at the owner's next synchronisation
    assert k.embedding_backward(np.zeros((3, 2), np.float32), np.array([0, 3]), np.ones((2, 2), np.float32))
    with pytest.raises(IndexError, match="index out of range"):
        k.checks.flush()
    k.checks.flush()
    assert not k.embedding_backward(np.zeros((3, 2), np.float32).T, np.array([0]), np.ones((1, 3), np.float32))


def _misaligned(a, shift):
    """A copy of ``a`` whose data starts ``shift`` elements past a 16-byte boundary (breaks the 128-bit path)."""
    buf = np.empty(a.size + 4, dtype=a.dtype)
    while buf.__array_interface__["data"][0] % 16:
        buf = np.empty(a.size + 4, dtype=a.dtype)
    out = buf[shift:shift + a.size].reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.parametrize("dt", RAND_DTYPES)
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 7, 8, 9, 255, 257, 1031, 4099])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.97])
def test_dropout_bit_identical(k, dt, n, p):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dt)
    r = rng.standard_normal(n).astype(dt)
    for seed, offset in ((SEEDS[2], OFFSETS[1]), (SEEDS[3], OFFSETS[3])):
        want, nb_ref = REF.rand_dropout(seed, offset, x, p)
        for shift in (0, 1, 3):
            xs = _misaligned(x, shift)
            got, nb = k.dropout(seed, offset, xs, p, dropout_threshold(p))
            assert nb == nb_ref == (n + 3) // 4
            np.testing.assert_array_equal(got, want)
            # the fused residual: x + dropout(y), rounded as the two separate ops round
            got, nb = k.dropout(seed, offset, xs, p, dropout_threshold(p), _misaligned(r, 2 - shift % 2))
            np.testing.assert_array_equal(got, r + want)
        # the mask is the bernoulli draw of the same blocks: keep with probability 1 - p, scale 1 / (1 - p)
        keep, _ = REF.rand_bernoulli(seed, offset, (n,), 1.0 - p, np.dtype(dt))
        np.testing.assert_array_equal(want, x * (keep * np.dtype(dt).type(1.0 / (1.0 - p))))


def test_dropout_layouts_and_specials(k):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((33, 17)).astype(np.float32)
    # a transposed or sliced input is masked by its logical (row-major) index, as a contiguous copy would be
    for x in (a.T, a[::2, 1:], a[:, :16]):
        got, _ = k.dropout(5, 0, x, 0.4, dropout_threshold(0.4))
        want, _ = REF.rand_dropout(5, 0, np.ascontiguousarray(x), 0.4)
        np.testing.assert_array_equal(got, want)
        assert got.shape == x.shape and got.flags.c_contiguous
    # inf and NaN times a dropped 0 stay NaN, as x * mask does
    x = np.array([np.inf, -np.inf, np.nan, 1.0] * 64, dtype=np.float32)
    got, _ = k.dropout(1, 0, x, 0.5, dropout_threshold(0.5))
    dropped = REF.rand_dropout(1, 0, np.ones_like(x), 0.5)[0] == 0
    assert dropped.any() and (~dropped).any()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x) | (np.isinf(x) & dropped))
    # what the kernel does not take, the backend's built-in body does
    t = dropout_threshold(0.5)
    assert k.dropout(1, 0, np.ones(4, np.int32), 0.5, t) is None
    assert k.dropout(1, 0, np.ones(4, np.float32), 0.5, t, np.ones(4, np.float64)) is None
    assert k.dropout(1, 0, np.ones(4, np.float32), 0.5, t, np.ones(3, np.float32)) is None


def test_dropout_threshold_matches_the_float64_comparison():
    words = np.array([0, 1, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 2, 2**32 - 1], dtype=np.uint64)
    for p in (1 - 1e-12, 0.9, 0.5, 0.5 - 2**-40, 0.3, 2**-33, 2**-53):
        t = dropout_threshold(p)
        assert t <= 2**32
        np.testing.assert_array_equal(words < t, words.astype(np.float64) * 2.0**-32 < 1.0 - p)
