"""The CPU backend's compiled elementwise maps (backends/_elementwise_native.py) against their NumPy reference bodies:
bit-identical where the loop repeats the reference's arithmetic, within a few ulp where it calls libm's vector
functions; the same whatever the thread split; declining (computing nothing) what it cannot take."""
import math
import warnings

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.backends import _elementwise_native as native
from minitorch_gpu.backends.numpy_backend import NumpyBackend

# the ops whose compiled loop repeats the reference step by step (float32) or needs no rounding at all
EXACT32 = {"erf", "gelu", "sign", "frac", "fmod", "remainder", "floor_divide", "sigmoid_backward", "tanh_backward",
           "relu_backward", "rsqrt", "reciprocal", "cube", "copysign"}
# within this many ulp of the reference (libm's vector exp / tanh / log1p / erf against NumPy's own)
ULPS = 4
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, -3e38, 3e38, 20.0, -20.0, 90.0, -90.0, 1e7, -1e7,
           5e-45, 0.5, 2.5, -2.5]


@pytest.fixture(scope="module")
def lib():
    if not native.available():
        pytest.skip(f"no native elementwise library here: {native.unavailable_reason()}")
    return native._library()


@pytest.fixture
def fresh_state(monkeypatch):
    for k, v in (("lib", None), ("tried", False), ("reason", None)):
        monkeypatch.setitem(native._state, k, v)


def _backend(on, threads=1):
    be = NumpyBackend()
    be.native_elementwise = on
    be.optim_threads = threads
    return be


def _values(dt, n, seed, lo=-6.0, hi=6.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(lo, hi, n)
    x[: min(n, len(SPECIAL))] = SPECIAL[: min(n, len(SPECIAL))]
    return x.astype(dt)


def _call(be, name, *args):
    """A compiled-loop op through the backend entry point that serves it."""
    if name in ("gelu", "gelu_tanh"):
        return be.gelu(args[0], "tanh" if name == "gelu_tanh" else "none")
    if name in ("gelu_backward", "gelu_tanh_backward"):
        return be.gelu_backward(*args, "tanh" if name == "gelu_tanh_backward" else "none")
    if name in ("silu", "sigmoid_backward", "tanh_backward"):
        return getattr(be, name)(*args)
    if name == "relu_backward":
        return be.threshold_backward(*args, 0)
    if name == "erfc":  # no NumPy body: the reference is Python's (libm's double) erfc, rounded once
        if be.native_elementwise:
            return be.compiled_erfc(*args)
        x = args[0]
        return np.vectorize(math.erfc, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype)
    if name == "cube":  # x ** 3 (the reference: scalar_pow's two products)
        return be.binary("pow", args[0], 3.0)
    if name in native.UNARY:
        return be.unary(name, *args)
    return be.binary(name, *args)


def _assert_matches(name, got, ref, dt, inputs):
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if dt == np.float32 and name in EXACT32:
        np.testing.assert_array_equal(got.view(np.int32), ref.view(np.int32), err_msg=name)
        return
    assert np.array_equal(np.isnan(got), np.isnan(ref)), name
    g, r = got.astype(np.float64), ref.astype(np.float64)
    inf = np.isinf(r)
    assert np.array_equal(np.isinf(g), inf) and np.array_equal(g[inf], r[inf]), name
    fin = np.isfinite(r)
    # a few ulp of the largest of the result, the inputs and 1: where the formulas cancel (1 + erf near -1,
    # 1 - tanh^2 near 1), the same on both sides, only absolute accuracy on the scale of the inputs is left
    scale = np.maximum(np.abs(r), 1.0)
    for v in inputs:
        scale = np.fmax(scale, np.abs(np.broadcast_to(np.asarray(v, np.float64), r.shape)))
    err = np.abs(g[fin] - r[fin])
    assert (err <= ULPS * np.finfo(dt).eps * scale[fin]).all(), f"{name}: max error {err.max()}"


def _inputs(name, dt, n, seed):
    if name in ("fmod", "remainder", "floor_divide"):
        a, b = _values(dt, n, seed, -50, 50), _values(dt, n, seed + 1, -8, 8)
        b[::7] = 0.0
        b[1::11] = np.inf
        a[2::13] = 3e37  # quotients beyond 2^24: the libm finish
        return a, b
    if name in ("sigmoid_backward", "tanh_backward"):
        return _values(dt, n, seed), _values(dt, n, seed + 1, -1, 1)
    if name == "relu_backward":  # (g, relu's output): zeros, NaN and infinities on both sides
        return _values(dt, n, seed), np.maximum(_values(dt, n, seed + 1), dt(0))
    if name in native.BINARY:
        return _values(dt, n, seed), _values(dt, n, seed + 1)
    if name == "erfinv":  # the domain, its ends, and the last floats below 1 (erf's slope near 1e-6 there)
        x = _values(dt, n, seed, -1.0, 1.0)
        near = np.nextafter(dt(1), dt(0)) - np.arange(40) * np.finfo(dt).epsneg
        x[len(SPECIAL):len(SPECIAL) + 40] = near[:max(0, n - len(SPECIAL))]
        return (x,)
    if name in ("lgamma", "digamma"):  # the negative poles and the zeros near 1 and 2 besides the random spread
        x = _values(dt, n, seed, -8.0, 8.0)
        extra = np.array([-1.0, -2.0, -7.0, 1.0, 2.0, 1.4616321, 1.0000001, 1.9999999, -2.5, -0.5, 1e-8, -1e-8,
                          1e30, 1e-38], dt)
        x[len(SPECIAL):len(SPECIAL) + len(extra)] = extra[:max(0, n - len(SPECIAL))]
        return (x,)
    return (_values(dt, n, seed),)


def _supported(lib, name, dt):
    ok = lib.unary_ok if name in native.UNARY else lib.binary_ok
    return (name, np.dtype(dt)) in ok


OPS = sorted(native.UNARY) + sorted(native.BINARY)


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 37, 5000])
def test_matches_the_numpy_reference(lib, name, dt, n):
    if not _supported(lib, name, dt):
        pytest.skip(f"{name} stays with NumPy for {np.dtype(dt)}")
    args = _inputs(name, dt, n, seed=n)
    taken = native.unary(name, *args) if name in native.UNARY else native.binary(name, *args)
    if n >= native.MIN_SIZE[name]:
        assert taken is not None
    with np.errstate(all="ignore"):
        ref = _call(_backend(False), name, *args)
        got = _call(_backend(True), name, *args)
    _assert_matches(name, got, ref, dt, args)


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide", "logaddexp", "hypot"])
def test_a_number_operand_on_either_side(lib, name):
    a = _inputs(name, np.float32, 5000, seed=3)[0]
    for args in ((a, 2.5), (a, -3), (1.75, a + 10.0)):
        with np.errstate(all="ignore"):
            ref = _call(_backend(False), name, *args)
            got = _call(_backend(True), name, *args)
        _assert_matches(name, got, ref, np.float32, args)


@pytest.mark.parametrize("name", sorted(native.PARALLEL_ONLY))
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_parallel_only_ops_run_compiled_on_several_threads_with_numpys_bits(lib, monkeypatch, name, dt):
    monkeypatch.setattr(native, "_PARALLEL_MIN_ELEMENTS", 1000)
    monkeypatch.setitem(native.MIN_SIZE, name, 2000)
    args = _inputs(name, dt, 70001, seed=11)
    run = native.unary if name in native.UNARY else native.binary
    assert run(name, *args, threads=1) is None  # one thread: NumPy's pass is as fast
    with np.errstate(all="ignore"):
        assert run(name, *args, threads=2) is not None
        ref = _call(_backend(False), name, *args)
        got = _call(_backend(True, threads=2), name, *args)
        if name in native.BINARY:  # a number operand, either side
            ref_s, got_s = (_call(_backend(False), name, args[0], 2.5), _call(_backend(True, threads=2), name,
                                                                               args[0], 2.5))
            np.testing.assert_array_equal(got_s, ref_s)
            ref_s, got_s = (_call(_backend(False), name, -3, args[1]), _call(_backend(True, threads=2), name, -3,
                                                                              args[1]))
            np.testing.assert_array_equal(got_s, ref_s)
    np.testing.assert_array_equal(got, ref)
    assert np.array_equal(np.signbit(got), np.signbit(ref))


def test_parallel_only_rows_follow_the_thread_count(lib):
    be = _backend(True, threads=1)
    x = np.ones(4, np.float32)
    be.unary("relu", x)
    assert "relu" not in be._utab or not getattr(be._utab["relu"], "__closure__", None)
    be.optim_threads = 2  # the tables are rebuilt for the new count on the next op
    be.unary("relu", x)
    assert be._utab["relu"].__closure__


@pytest.mark.parametrize("name", ["gelu", "sigmoid", "fmod", "gelu_backward", "add", "relu", "relu_backward"])
def test_thread_split_does_not_change_results(lib, monkeypatch, name):
    monkeypatch.setattr(native, "_PARALLEL_MIN_ELEMENTS", 1000)
    monkeypatch.setitem(native.MIN_SIZE, name, min(native.MIN_SIZE[name], 2000))
    args = _inputs(name, np.float32, 70001, seed=5)
    with np.errstate(all="ignore"):
        one = _call(_backend(True, threads=1), name, *args)
        three = _call(_backend(True, threads=3), name, *args)
    np.testing.assert_array_equal(one.view(np.int32), three.view(np.int32))


def test_zero_d_and_empty_arrays(lib):
    be = _backend(True)
    x0 = np.array(0.5, np.float32)
    r = be.gelu(x0)
    assert r.shape == () and r == _backend(False).gelu(x0)
    e = np.zeros((0, 3), np.float32)
    assert be.unary("sigmoid", e).shape == (0, 3)
    assert be.binary("fmod", e, e).shape == (0, 3)


def test_out_is_written_in_place(lib):
    be = _backend(True)
    a, b = _inputs("remainder", np.float32, 4096, seed=9)
    out = np.empty_like(a)
    with np.errstate(all="ignore"):
        r = be.binary("remainder", a, b, out=out)
        ref = np.remainder(a, b)
    assert r is out
    np.testing.assert_array_equal(out, ref)
    x = a.copy()
    assert be.unary("sigmoid", x, out=x) is x  # in place on its own input


def test_declines_what_it_cannot_take(lib):
    x = np.linspace(-3, 3, 4000, dtype=np.float32)
    assert native.unary("gelu", x.astype(np.float16)) is None  # half precision: the reference upcasts
    assert native.unary("gelu", x[::2]) is None  # strided
    assert native.unary("gelu", x.reshape(40, 100).T) is None  # not C-contiguous
    assert native.binary("fmod", x, x[:10]) is None  # shapes differ: NumPy broadcasts
    assert native.binary("fmod", x, x.astype(np.float64)) is None  # dtypes differ
    assert native.binary("fmod", x.astype(np.float64), 2.0) is None  # float64 fmod stays with libm
    assert native.binary("fmod", x[:8], 2.0) is None  # small: NumPy's one ufunc is as fast
    assert native.unary("gelu", x[:8]) is not None  # the many-pass bodies are replaced at every size
    assert native.unary("sigmoid", x[:1000]) is None  # a few fast ufunc passes: NumPy until MEDIUM_MIN
    assert native.unary("sigmoid", x, out=np.empty(4000, np.float64)) is None  # an out it cannot write
    assert native.binary("fmod", np.arange(5000), 3) is None  # integers: the reference checks division by zero


def test_integer_division_by_zero_still_raises(lib):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        mt.remainder(mt.arange(5000), 0)


def test_ops_reach_the_compiled_loops(lib, monkeypatch):
    calls = []
    real_u, real_b = native.unary, native.binary
    monkeypatch.setattr(native, "unary", lambda name, *a, **k: calls.append(name) or real_u(name, *a, **k))
    monkeypatch.setattr(native, "binary", lambda name, *a, **k: calls.append(name) or real_b(name, *a, **k))
    x = mt.randn(native.MEDIUM_MIN, requires_grad=True)
    y = mt.nn.functional.gelu(x) + mt.sigmoid(x) + mt.tanh(x) + mt.nn.functional.silu(x) + mt.erf(x)
    y = y + mt.fmod(x, 1.5) + mt.logaddexp(x, x * 2)
    y.sum().backward()
    assert {"gelu", "gelu_backward", "sigmoid", "sigmoid_backward", "tanh_backward", "silu", "erf", "fmod",
            "logaddexp"} <= set(calls)


def test_switched_off_by_environment(fresh_state, monkeypatch):
    monkeypatch.setenv("MINITORCH_GPU_NATIVE_ELEMENTWISE", "0")
    assert not native.available()
    assert "MINITORCH_GPU_NATIVE_ELEMENTWISE" in native.unavailable_reason()
    x = mt.linspace(-3, 3, 5000)
    np.testing.assert_allclose(mt.nn.functional.gelu(x).numpy(), _backend(False).gelu(x.numpy()))


def test_build_failure_warns_once_and_falls_back(fresh_state, monkeypatch, tmp_path):
    monkeypatch.setenv("MINITORCH_GPU_CACHE", str(tmp_path))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.warns(RuntimeWarning, match="elementwise"):
        assert not native.available()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not native.available()  # tried once: no second warning
        x = np.linspace(-3, 3, 5000, dtype=np.float32)
        np.testing.assert_array_equal(NumpyBackend().gelu(x), _backend(False).gelu(x))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("grads", ["both", "dh", "dc", "none"])
def test_lstm_cell_matches_the_numpy_reference(lib, dt, grads):
    rng = np.random.default_rng(11)
    B, H = 5, 37
    gi, gh = (rng.standard_normal((B, 4 * H)) * 3).astype(dt), rng.standard_normal((B, 4 * H)).astype(dt)
    gi[0, :4] = [60.0, -60.0, 90.0, -90.0]  # saturated gates
    c = rng.standard_normal((B, H)).astype(dt)
    dh = rng.standard_normal((B, H)).astype(dt) if grads in ("both", "dh") else None
    dc = rng.standard_normal((B, H)).astype(dt) if grads in ("both", "dc") else None
    assert native.lstm_cell_forward(gi, gh, c) is not None
    ref, got = _backend(False), _backend(True)
    for r, g in zip(ref.lstm_cell_forward(gi, gh, c), got.lstm_cell_forward(gi, gh, c)):
        _assert_matches("lstm_cell_forward", g, r, dt, (1.0,))
    for r, g in zip(ref.lstm_cell_backward(dh, dc, gi, gh, c), got.lstm_cell_backward(dh, dc, gi, gh, c)):
        _assert_matches("lstm_cell_backward", g, r, dt, (4.0,))  # the scale of the incoming gradients
    # what the loops do not take goes to the reference
    assert native.lstm_cell_forward(gi[:, ::2], gh[:, ::2], c[:, ::2]) is None
    assert native.lstm_cell_forward(gi.astype(np.float16), gh.astype(np.float16), c.astype(np.float16)) is None
    assert native.lstm_cell_backward(dh if dh is not None else c, np.zeros((B, H + 1), dt), gi, gh, c) is None
