"""optim.cu, random.cu and embedding.cu on the CPU simulator: the fused multi-tensor optimizer steps against
backends/_optim.py's bodies (groups of awkward sizes, tensors longer than a chunk, every option); Philox
streams bit-identical with backends/_random.py; embedding backward against np.add.at."""
import numpy as np
import pytest

from minitorch_gpu.backends.numpy_backend import NumpyBackend

REF = NumpyBackend()
SHAPES = [(1,), (7,), (3, 5), (257,), (0,), (64, 33)]


def _group(dt, seed, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dt) for s in shapes]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("wd,decoupled", [(0.0, False), (0.1, False), (0.1, True)])
def test_adam_matches_reference(k, dt, amsgrad, maximize, wd, decoupled):
    params = _group(dt, 1)
    grads = _group(dt, 2)
    ms = [np.abs(x) * 0.1 for x in _group(dt, 3)]
    vs = [np.abs(x) * 0.01 for x in _group(dt, 4)]
    vmax = [v * 1.5 for v in vs]
    state = [params, grads, ms, vs, vmax]
    ref = [[a.copy() for a in role] for role in state]
    k.OPTIM_CHUNK = 100  # tensors longer than a chunk are split across blocks
    try:
        for step in (1.0, 2.0, 3.0):
            steps = [step] * len(params)
            args = dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=wd, amsgrad=amsgrad,
                        maximize=maximize, decoupled=decoupled)
            assert k.adam(*state, steps, **args)
            REF.fused_adam(*ref, steps, **args)
    finally:
        del k.OPTIM_CHUNK
    tol = dict(rtol=2e-6, atol=1e-7) if dt == np.float32 else dict(rtol=1e-13, atol=1e-15)
    for got_role, ref_role in zip(state, ref):
        for g, r in zip(got_role, ref_role):
            np.testing.assert_allclose(g, r, **tol)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("opts", [dict(momentum=0.0), dict(momentum=0.9, dampening=0.2, weight_decay=0.01),
                                  dict(momentum=0.9, nesterov=True, maximize=True),
                                  dict(momentum=0.0, weight_decay=0.1, maximize=True)])
def test_sgd_matches_reference(k, dt, opts):
    params = _group(dt, 5)
    grads = _group(dt, 6)
    bufs = [np.zeros_like(p) for p in params]
    ref = [[a.copy() for a in role] for role in (params, grads, bufs)]
    full = dict(lr=0.05, weight_decay=0.0, momentum=0.0, dampening=0.0, nesterov=False, maximize=False)
    full.update(opts)
    for first in (True, False, False):
        firsts = [first] * len(params)
        assert k.sgd(params, grads, bufs, firsts, **full)
        REF.fused_sgd(*ref, firsts, **full)
    tol = dict(rtol=2e-6, atol=1e-7) if dt == np.float32 else dict(rtol=1e-13, atol=1e-15)
    for got_role, ref_role in zip((params, grads, bufs), ref):
        for g, r in zip(got_role, ref_role):
            np.testing.assert_allclose(g, r, **tol)


def test_optimizer_declines_mixed_or_strided_groups(k):
    p = [np.ones(4, np.float32), np.ones((4, 4), np.float32).T]
    assert not k.sgd(p, [np.ones_like(x) for x in p], [None, None], [True, True], lr=0.1, weight_decay=0.0,
                     momentum=0.0, dampening=0.0, nesterov=False, maximize=False)
    p = [np.ones(4, np.float16)]
    assert not k.adam(p, p, p, p, p, [1.0], 1e-3, 0.9, 0.99, 1e-8, 0.0, False, False, False)


SEEDS = [0, 1, 0x123456789ABCDEF0, (1 << 64) - 1]
OFFSETS = [0, 5, (1 << 64) - 2, (1 << 128) - 3]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offset", OFFSETS)
def test_philox_words_bit_identical(k, seed, offset):
    for n in (1, 3, 257):
        got = k.philox_words(seed, offset, n)
        np.testing.assert_array_equal(got, REF.philox4x32_10(offset, seed, n))


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("offset", OFFSETS[:3])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_uniform_bit_identical(k, seed, offset, dt, n):
    for low, high in ((0.0, 1.0), (-2.0, 3.5)):
        got, nb = k.uniform(seed, offset, n, np.dtype(dt), low, high)
        want, nb_ref = REF.rand_uniform(seed, offset, (n,), np.dtype(dt), low, high)
        assert nb == nb_ref
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", SEEDS[:3])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_normal_matches(k, seed, dt, n):
    for mean, std in ((0.0, 1.0), (1.5, 0.25)):
        got, nb = k.normal(seed, 9, n, np.dtype(dt), mean, std)
        want, nb_ref = REF.rand_normal(seed, 9, (n,), np.dtype(dt), mean, std)
        assert nb == nb_ref
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


def test_embedding_backward_index_errors(k):
    with pytest.raises(IndexError, match="index out of range"):
        k.embedding_backward(np.zeros((3, 2), np.float32), np.array([0, 3]), np.ones((2, 2), np.float32))
    assert not k.embedding_backward(np.zeros((3, 2), np.float32).T, np.array([0]), np.ones((1, 3), np.float32))
