"""rnn.cu on the CPU simulator against float64 NumPy references written out gate by gate: LSTM and GRU cells
forward and backward (with either LSTM output gradient absent), on sizes from one unit to more elements than the
grid covers, saturated gates, strided operands; and the calls the launchers decline."""
import ml_dtypes
import numpy as np
import pytest

from minitorch_gpu.backends.cuda import launch_rnn

SHAPES = [(1, 1), (3, 5), (2, 33), (7, 100), (0, 4)]  # (7, 100): 700 elements, past 2 blocks of 256
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.float32, np.float64, np.float16, BF16]


def _tol(dt):
    """float32 / float64 against the float64 reference; the 16-bit types compute in float32 and round each result
    once (half a unit in the last place, with a little room for the float32 arithmetic)."""
    dt = np.dtype(dt)
    if dt.itemsize == 2:
        eps = 2.0 ** -10 if dt == np.float16 else 2.0 ** -7
        return dict(rtol=eps, atol=eps)
    return dict(rtol=2e-5, atol=2e-6) if dt == np.float32 else dict(rtol=1e-11, atol=1e-12)


def _close(got, want, dt):
    np.testing.assert_allclose(got.astype(np.float64), want, **_tol(dt))


def _sig(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def _lstm_ref(gi, gh, c, dh, dc):
    gi, gh, c = (a.astype(np.float64) for a in (gi, gh, c))
    i, f, g, o = np.split(gi + gh, 4, axis=1)
    i, f, g, o = _sig(i), _sig(f), np.tanh(g), _sig(o)
    cn = f * c + i * g
    tc = np.tanh(cn)
    h = o * tc
    dh = 0 if dh is None else dh.astype(np.float64)
    gc = (0 if dc is None else dc.astype(np.float64)) + dh * o * (1 - tc ** 2)
    dgates = np.concatenate([gc * g * i * (1 - i), gc * c * f * (1 - f), gc * i * (1 - g ** 2),
                             dh * tc * o * (1 - o)], axis=1)
    return h, cn, dgates, gc * f


def _gru_ref(gi, gh, h, dh):
    gi, gh, h, dh = (a.astype(np.float64) for a in (gi, gh, h, dh))
    ir, iz, inn = np.split(gi, 3, axis=1)
    hr, hz, hn = np.split(gh, 3, axis=1)
    r, z = _sig(ir + hr), _sig(iz + hz)
    n = np.tanh(inn + r * hn)
    out = (1 - z) * n + z * h
    dn = dh * (1 - z) * (1 - n ** 2)
    dr = dn * hn * r * (1 - r)
    dz = dh * (h - n) * z * (1 - z)
    return out, np.concatenate([dr, dz, dn], 1), np.concatenate([dr, dz, dn * r], 1), dh * z


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("grads", ["both", "dh_only", "dc_only"])
def test_lstm_cell(k, sim_backend, dt, shape, grads):
    B, H = shape
    rng = np.random.default_rng(B * 100 + H)
    gi, gh = ((rng.standard_normal((B, 4 * H)) * 3).astype(dt) for _ in range(2))
    c, dh, dc = (rng.standard_normal((B, H)).astype(dt) for _ in range(3))
    dh = None if grads == "dc_only" else dh
    dc = None if grads == "dh_only" else dc
    h_ref, c_ref, dg_ref, dc_ref = _lstm_ref(gi, gh, c, dh, dc)
    h, cn = launch_rnn.lstm_cell_forward(sim_backend, k, gi, gh, c)
    _close(h, h_ref, dt)
    _close(cn, c_ref, dt)
    assert h.dtype == cn.dtype == dt
    dg, dcp = launch_rnn.lstm_cell_backward(sim_backend, k, dh, dc, gi, gh, c)
    _close(dg, dg_ref, dt)
    _close(dcp, dc_ref, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_gru_cell(k, sim_backend, dt, shape):
    B, H = shape
    rng = np.random.default_rng(B * 100 + H + 1)
    gi, gh = ((rng.standard_normal((B, 3 * H)) * 3).astype(dt) for _ in range(2))
    h, dh = (rng.standard_normal((B, H)).astype(dt) for _ in range(2))
    out_ref, dgi_ref, dgh_ref, dh_ref = _gru_ref(gi, gh, h, dh)
    _close(launch_rnn.gru_cell_forward(sim_backend, k, gi, gh, h), out_ref, dt)
    for got, want in zip(launch_rnn.gru_cell_backward(sim_backend, k, dh, gi, gh, h), (dgi_ref, dgh_ref, dh_ref)):
        _close(got, want, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_saturated_gates_stay_finite(k, sim_backend, dt):
    """exp(-x) overflows for very negative gates: the sigmoid is then exactly 0, never NaN."""
    B, H = 2, 3
    gi = np.array([[-1e4, 1e4] * 6, [200.0, -200.0] * 6], dtype=dt)
    gh = np.zeros_like(gi)
    c = np.ones((B, H), dtype=dt)
    h, cn = launch_rnn.lstm_cell_forward(sim_backend, k, gi, gh, c)
    dg, dcp = launch_rnn.lstm_cell_backward(sim_backend, k, np.ones_like(c), np.ones_like(c), gi, gh, c)
    out = launch_rnn.gru_cell_forward(sim_backend, k, gi[:, :9], gh[:, :9], c)
    grads = launch_rnn.gru_cell_backward(sim_backend, k, np.ones_like(c), gi[:, :9], gh[:, :9], c)
    for a in (h, cn, dg, dcp, out, *grads):
        assert np.isfinite(a.astype(np.float32)).all()
    _close(h, _lstm_ref(gi, gh, c, None, None)[0], dt)


def test_strided_operands_are_copied_first(k, sim_backend):
    rng = np.random.default_rng(3)
    B, H = 5, 7
    gi = rng.standard_normal((4 * H, B)).T  # a transposed view
    gh = rng.standard_normal((B, 8 * H))[:, ::2]  # every other column
    c = rng.standard_normal((B, 2 * H))[:, H:]
    h, cn = launch_rnn.lstm_cell_forward(sim_backend, k, gi, gh, c)
    h_ref, c_ref, _, _ = _lstm_ref(gi, gh, c, None, None)
    np.testing.assert_allclose(h, h_ref, **_tol(np.float64))
    np.testing.assert_allclose(cn, c_ref, **_tol(np.float64))


def test_launchers_decline_what_the_kernels_do_not_take(k, sim_backend):
    i32 = np.ones((2, 8), np.int32)
    assert launch_rnn.lstm_cell_forward(sim_backend, k, i32, i32, np.ones((2, 2), np.int32)) is None
    f32, f64 = np.ones((2, 8), np.float32), np.ones((2, 2), np.float64)
    assert launch_rnn.lstm_cell_forward(sim_backend, k, f32, f32, f64) is None  # mixed dtypes
    # shapes that do not match the gate layout would make the kernel read out of bounds
    assert launch_rnn.lstm_cell_forward(sim_backend, k, f32, f32, np.ones((2, 3), np.float32)) is None
    assert launch_rnn.gru_cell_forward(sim_backend, k, f32, f32, np.ones((2, 2), np.float32)) is None
    assert launch_rnn.gru_cell_backward(sim_backend, k, np.ones(2, np.float32), f32[:, :6], f32[:, :6],
                                        np.ones(2, np.float32)) is None
    # the backend then runs its NumPy body
    h, c = sim_backend.lstm_cell_forward(f32, f32, np.ones((2, 2), np.float64))
    assert h.dtype == c.dtype == np.float64
