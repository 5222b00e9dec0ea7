"""multi_tensor.cuh's walk on the CPU simulator: the fused optimizer steps (optim.cu) on misaligned views, many tiny
tensors and per-tensor scalars; the cached tensor tables; the norm, clipping and foreach kernels of multi_tensor.cu
against NumPy on awkward sizes (empty tensors, tails, tensors longer than a chunk, views 4 bytes off alignment)."""
import math

import ml_dtypes
import numpy as np
import pytest
from fused_cases import CASE_IDS, CASES, assert_states_equal, copy_state, make_state, run_step

from minitorch_gpu.backends.numpy_backend import NumpyBackend

REF = NumpyBackend()
REF.native_optim = False
SIZES = [0, 1, 3, 4, 5, 97, 100, 101, 257, 403]
BF16 = np.dtype(ml_dtypes.bfloat16)
HALVES = [np.float16, BF16]
ALL = [np.float32, np.float64] + HALVES


@pytest.fixture
def kc(k, monkeypatch):
    """The simulator's launcher with 100-element chunks: tensors span several chunks and blocks walk several."""
    monkeypatch.setattr(k, "OPTIM_CHUNK", 100)
    return k


def _misaligned(a):
    """A C-contiguous copy of ``a`` whose data starts 4 bytes past a 16-byte boundary (an empty one as it is)."""
    if a.size == 0:
        return a
    buf = np.empty(a.size * a.itemsize + 32, np.uint8)
    off = (-buf.ctypes.data) % 16 + 4
    out = buf[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    assert out.ctypes.data % 16 == 4 and out.flags.c_contiguous
    return out


def _tol(dt):
    """float32 and float64 may differ from the NumPy body in the last bits (FMA); the 16-bit types compute in
    float32 in the body's order and round each store once, bit for bit."""
    if np.dtype(dt).itemsize == 2:
        return {}
    return dict(rtol=2e-6, atol=1e-7) if dt == np.float32 else dict(rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("kind,opts", CASES, ids=CASE_IDS)
def test_fused_step_on_misaligned_and_tiny_tensors(sim_backend, kc, dt, kind, opts):
    shapes = [(n,) for n in SIZES] + [(2, 3)] * 40
    state = make_state(kind, dt, shapes, seed=3)
    # every other tensor misaligned in one role or another: those take the scalar path, the rest 128-bit loads
    state = [[_misaligned(a) if (i + r) % 3 == 0 else a for i, a in enumerate(role)] for r, role in enumerate(state)]
    ref = copy_state(state)
    for step in (1, 2):
        run_step(sim_backend, kind, state, step, opts)
        run_step(REF, kind, ref, step, opts)
    assert_states_equal(state, ref, **_tol(dt))


def test_per_tensor_scalars_differ(sim_backend, kc):
    """Tensors at different step counts (Adam's bias corrections per tensor) and SGD buffers created at different
    steps take the uploaded per-tensor path."""
    dt = np.float32
    state = make_state("adam", dt, [(n,) for n in SIZES], seed=4)
    ref = copy_state(state)
    steps = [float(1 + i % 3) for i in range(len(SIZES))]
    sim_backend.fused_adam(*state, steps, 1e-2, 0.9, 0.99, 1e-8, 0.1, True, False, True)
    REF.fused_adam(*ref, steps, 1e-2, 0.9, 0.99, 1e-8, 0.1, True, False, True)
    assert_states_equal(state, ref, **_tol(dt))
    state = make_state("sgd", dt, [(n,) for n in SIZES], seed=5)
    ref = copy_state(state)
    first = [i % 2 == 0 for i in range(len(SIZES))]
    sim_backend.fused_sgd(*state, first, 0.1, 0.0, 0.9, 0.1, False, False)
    REF.fused_sgd(*ref, first, 0.1, 0.0, 0.9, 0.1, False, False)
    assert_states_equal(state, ref, **_tol(dt))


def test_tables_are_cached_until_an_address_changes(sim_backend, kc, monkeypatch):
    uploads = []
    real = kc.upload
    monkeypatch.setattr(kc, "upload", lambda a: uploads.append(a.size) or real(a))
    state = make_state("adam", np.float32, [(n,) for n in SIZES], seed=6)
    for step in (1, 2, 3):
        run_step(sim_backend, "adam", state, step, {})
    assert len(uploads) == 1  # the table, once: scalars are kernel arguments
    state[1] = [g.copy() for g in state[1]]  # new gradient arrays: new addresses, a new table
    run_step(sim_backend, "adam", state, 4, {})
    assert len(uploads) == 2
    run_step(sim_backend, "adam", state, 5, {})
    assert len(uploads) == 2


def _norm_ref(xs, ord):
    flat = np.concatenate([x.reshape(-1).astype(np.float64) for x in xs])
    per = [np.linalg.norm(x.reshape(-1).astype(np.float64), ord) if x.size else 0.0 for x in xs]
    return np.linalg.norm(flat, ord), per


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("ord", [2.0, 1.0, math.inf, 3.0, 0.5])
def test_norms(kc, dt, ord):
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(n).astype(dt) for n in SIZES if n or ord != math.inf]
    xs = [_misaligned(x) if i % 2 else x for i, x in enumerate(xs)] + [rng.standard_normal((7, 33)).astype(dt)]
    total, per = _norm_ref(xs, ord)
    out = kc.multi_norm(xs, ord, per_tensor=True)
    assert out.dtype == dt and out.shape == (len(xs) + 1,)
    # the 16-bit types accumulate in float32 and round the norm once
    rtol = {np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12, np.dtype(np.float16): 2.0 ** -10,
            BF16: 2.0 ** -7}[np.dtype(dt)]
    # a norm beyond the type's range is inf, as the rounding of PyTorch's float result gives it
    big = float(ml_dtypes.finfo(dt).max)
    total, per = (np.where(np.abs(v) > big, np.inf, v) for v in (np.asarray(total), np.asarray(per)))
    np.testing.assert_allclose(out[0].astype(np.float64), total, rtol=rtol)
    np.testing.assert_allclose(out[1:].astype(np.float64), per, rtol=rtol)
    only = kc.multi_norm(xs, ord, per_tensor=False)
    assert only.shape == (1,) and only[0] == out[0]


def test_norm_propagates_nan_and_inf(kc):
    xs = [np.ones(300, np.float32), np.ones(5, np.float32)]
    xs[0][250] = np.nan
    for ord in (2.0, 1.0, math.inf, 3.0):
        out = kc.multi_norm(xs, ord, per_tensor=True)
        assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == pytest.approx(np.linalg.norm(np.ones(5), ord))
    xs[0][250] = np.inf
    assert np.isinf(kc.multi_norm(xs, 2.0, per_tensor=False)[0])


def test_norm_declines_what_it_cannot_compute(kc):
    x = [np.ones(4, np.float32)]
    assert kc.multi_norm(x, 0.0, True) is None  # a count of non-zeros: the built-in
    assert kc.multi_norm(x, -1.0, True) is None
    assert kc.multi_norm(x + [np.ones(0, np.float32)], math.inf, True) is None  # a max over nothing raises there
    assert kc.multi_norm([np.ones((4, 4), np.float32).T], 2.0, True) is None
    assert kc.multi_norm(x + [np.ones(4, np.float64)], 2.0, True) is None
    assert kc.multi_norm([np.ones(4, np.int32)], 2.0, True) is None
    assert kc.multi_norm([np.ones(4, np.float16), np.ones(4, BF16)], 2.0, True) is None
    np.testing.assert_array_equal(kc.multi_norm([np.ones(0, np.float32)] * 3, 2.0, True), np.zeros(4))


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("total", [0.5, 20.0, 0.0, np.nan])
def test_clip_scale(kc, dt, total):
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal(n).astype(dt) for n in SIZES]
    xs = [_misaligned(x) if i % 2 else x for i, x in enumerate(xs)]
    t = np.array(total, dtype=dt)
    if np.dtype(dt).itemsize == 2:
        # the coefficient computed in float32 and rounded to the 16-bit type (PyTorch's clip_coef tensor), the
        # products in float32 rounded once
        f32 = np.float32
        coef = np.minimum(f32(2.0) / (t.astype(f32) + f32(1e-6)), f32(1.0)).astype(dt).astype(f32)
        want = [(x.astype(f32) * coef).astype(dt) for x in xs]
    else:
        coef = np.minimum(dt(2.0) / (t + dt(1e-6)), dt(1.0))
        want = [x * coef for x in xs]
    with np.errstate(invalid="ignore"):
        assert kc.clip_scale(xs, t, 2.0)
    for x, w in zip(xs, want):
        np.testing.assert_array_equal(x, w)
    assert kc.clip_scale(xs, np.array(1.0, np.float16 if dt == np.float32 else np.float32), 2.0) is None


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("bad", [None, np.inf, -np.inf, np.nan])
def test_amp_unscale(kc, dt, bad):
    """GradScaler's unscale: every tensor (misaligned ones, empty ones, tails) times inv_scale, as NumPy rounds
    it, and the flag set by a non-finite value anywhere, left alone otherwise."""
    rng = np.random.default_rng(9)
    xs = [rng.standard_normal(n).astype(dt) * 100 for n in SIZES]
    xs = [_misaligned(x) if i % 2 else x for i, x in enumerate(xs)]
    if bad is not None:
        xs[-2][-1] = bad
    inv = np.array([1 / 1024], np.float32)
    if np.dtype(dt).itemsize == 2:  # in float32, rounded once (PyTorch's opmath)
        want = [(x.astype(np.float32) * inv[0]).astype(dt) for x in xs]
    else:
        want = [x * inv.astype(dt)[0] for x in xs]
    found = np.zeros(1, np.float32)
    assert kc.amp_unscale_(xs, found, inv)
    assert found[0] == (0.0 if bad is None else 1.0)
    for x, w in zip(xs, want):
        np.testing.assert_array_equal(x, w)
    assert kc.amp_unscale_(xs, np.zeros(1, np.float64), inv) is None  # the flag must be float32


def _elementwise(k, name, x, y, z, v):
    """The per-tensor elementwise.cu result the multi-tensor kernel must reproduce bit for bit."""
    if name == "lerp":
        return k.ternary("lerp", x, y, v)
    if name == "clamp":
        return k.ternary("clamp", x, -v, v)
    return k.ternary(name, x, y, z, alpha=v)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("name", ["lerp", "addcmul", "addcdiv", "clamp"])
@pytest.mark.parametrize("inplace", [True, False])
@pytest.mark.parametrize("values", [0.25, 0.75, 1.0, "per-tensor"])
def test_foreach_ternary_matches_elementwise(kc, dt, name, inplace, values):
    rng = np.random.default_rng(9)
    shapes = [(n,) for n in SIZES] + [(3, 7), (2, 2, 5)]

    def role(shift=0.0):
        return [_misaligned(a) if i % 3 == 1 else a
                for i, a in enumerate(rng.standard_normal(s).astype(dt) + shift for s in shapes)]
    xs, ys, zs = role(), role(), role(3.0)
    vs = [0.1 * i - 0.5 for i in range(len(xs))] if values == "per-tensor" else values
    vlist = vs if isinstance(vs, list) else [vs] * len(xs)
    want = [_elementwise(kc, name, x, y, z, v) for x, y, z, v in zip(xs, ys, zs, vlist)]
    before = [x.copy() for x in xs]
    got = kc.foreach_ternary(name, xs, None if name == "clamp" else ys, zs if name.startswith("addc") else None, vs,
                             inplace)
    assert got is not None and len(got) == len(xs)
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(g, w, err_msg=f"tensor {i}")
        assert g.shape == w.shape
        if inplace:
            assert g is xs[i]
        else:
            np.testing.assert_array_equal(xs[i], before[i])


def test_foreach_ternary_declines_mismatched_lists(kc):
    x = [np.ones(4, np.float32), np.ones(5, np.float32)]
    assert kc.foreach_ternary("lerp", x, [np.ones(4, np.float32), np.ones(6, np.float32)], None, 0.5, True) is None
    assert kc.foreach_ternary("lerp", x, [np.ones(4, np.float32), np.ones(5, np.float64)], None, 0.5, True) is None
    assert kc.foreach_ternary("lerp", x, [np.ones((5, 4), np.float32).T[0], x[1]], None, 0.5, True) is None
    big = np.ones(9, np.float32)
    # y overlapping the x it updates, shifted by one element: blocks would read values other blocks wrote
    assert kc.foreach_ternary("lerp", [big[1:]], [big[:-1]], None, 0.5, True) is None
    assert kc.foreach_ternary("addcmul", x, x, x, [1.0], True) is None  # one value for two tensors
