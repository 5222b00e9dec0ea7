"""The simulator's host <cuda_fp16.h> / <cuda_bf16.h> (backends/cuda/sim/include) bit for bit: every half and
bfloat16 bit pattern to float, and floats and doubles (ties, subnormals, overflow, random bit patterns) to both
types in the four rounding modes, against NumPy and ml_dtypes and against an exact rounding oracle written here."""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from minitorch_gpu.backends.cuda import sim

# the oracles cast out-of-range values and NaNs on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in cast:RuntimeWarning")

KERNELS = Path(__file__).parent / "sim_kernels"
BF16 = np.dtype(ml_dtypes.bfloat16)
FORMATS = {"half": (np.dtype(np.float16), 5, 10), "bf16": (BF16, 8, 7)}
MODES = ("rn", "rz", "rd", "ru")


@pytest.fixture(scope="module")
def half():
    exprs = ("to_half<float>", "to_half<double>", "to_bf16<float>", "to_bf16<double>", "half_ops<__half>",
             "half_ops<__nv_bfloat16>", "half_operators<__half>", "half_operators<__nv_bfloat16>",
             "half2_lanes<__half2>", "half2_lanes<__nv_bfloat162>")
    return sim.SimModule(path=KERNELS / "half.cu", name_expressions=exprs)


def _launch(fn, n, *args):
    fn((4,), (128,), (np.int64(n), *args))


def _grid(fmt):
    """(finite non-negative values as float64, their bits) of a format, sorted, and the bits of +inf."""
    dt, e, m = FORMATS[fmt]
    bits = np.arange(1 << 15, dtype=np.uint16)  # the non-negative half: sign bit clear
    vals = bits.view(dt).astype(np.float64)
    finite = np.isfinite(vals)
    return vals[finite], bits[finite], np.uint16(((1 << e) - 1) << m)


def _oracle(x, fmt, mode):
    """The exact rounding of float64 ``x`` to ``fmt`` in ``mode``: nearest-even, toward zero, down, up; IEEE
    overflow; NaN to the canonical 0x7fff; the sign kept on zeros."""
    vals, bits, inf = _grid(fmt)
    x = np.asarray(x, dtype=np.float64)
    neg = np.signbit(x)
    a = np.abs(x)
    out = np.zeros(x.shape, dtype=np.uint16)
    top = vals[-1]
    # the value one quantum past the largest finite one stands for infinity (its mantissa is even)
    beyond = 2.0 * 2.0 ** np.floor(np.log2(top))
    lo_i = np.clip(np.searchsorted(vals, a, side="right") - 1, 0, len(vals) - 1)
    lo = vals[lo_i]
    hi_i = np.minimum(lo_i + 1, len(vals) - 1)
    hi = np.where(lo_i == len(vals) - 1, beyond, vals[hi_i])
    lo_b = bits[lo_i]
    hi_b = np.where(lo_i == len(vals) - 1, inf, bits[hi_i])
    exact = a == lo
    with np.errstate(invalid="ignore"):
        if mode == "rn":
            d_lo, d_hi = a - lo, hi - a
            up = (d_hi < d_lo) | ((d_hi == d_lo) & (lo_b % 2 == 1))
        elif mode == "rz":
            up = np.zeros(x.shape, bool)
        elif mode == "ru":
            up = ~neg & ~exact
        else:
            up = neg & ~exact
    mag = np.where(up, hi_b, lo_b)
    # beyond the largest finite value: rz and the mode rounding toward zero on this side stop at it
    big = a > top
    if mode != "rn":
        to_inf = (mode == "ru") & ~neg | (mode == "rd") & neg
        mag = np.where(big, np.where(to_inf, inf, bits[-1]), mag)
    mag = np.where(np.isinf(a), inf, mag)
    out = mag | np.where(neg, np.uint16(0x8000), np.uint16(0))
    return np.where(np.isnan(x), np.uint16(0x7FFF), out).astype(np.uint16)


def _interesting_floats(fmt, rng):
    """Every value of the format, the midpoints between neighbours (ties), points just inside and outside each
    midpoint, subnormals below the smallest, the overflow boundary, specials, and random float32 bit patterns."""
    vals, _, _ = _grid(fmt)
    mids = (vals[:-1] + vals[1:]) / 2  # exact in float32 for both formats
    top = vals[-1]
    ulp = top - vals[-2]
    edge = np.array([top, top + ulp / 2, top + ulp / 4, top + 3 * ulp / 4, 2 * top, 1e38, 3.4e38, 2.0 ** -150,
                     2.0 ** -149, vals[1] / 2, vals[1] / 4, vals[1] * 0.75, 0.0, np.inf, np.nan], dtype=np.float64)
    f32 = np.concatenate([vals, mids, edge]).astype(np.float32)
    f32 = np.concatenate([f32, np.nextafter(f32, np.float32(np.inf)), np.nextafter(f32, np.float32(-np.inf))])
    rand = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    out = np.concatenate([f32, rand])
    return np.concatenate([out, -out])


def _same_bits(got, want):
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{bad.size} mismatches, e.g. at {bad[:5]}: got {got[bad[:5]]}, want {want[bad[:5]]}"


def test_every_half_to_float(half):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    y, y_op = np.empty(h.size, np.float32), np.empty(h.size, np.float32)
    _launch(half.get_function("half_to_float"), h.size, h.view(np.float16), y, y_op)
    nan = np.isnan(h.view(np.float16))
    want = h.view(np.float16).astype(np.float32).view(np.uint32)
    _same_bits(y.view(np.uint32)[~nan], want[~nan])
    # a NaN comes out as the canonical float NaN, sign and payload dropped (the toolkit's own host conversion)
    assert (y.view(np.uint32)[nan] == 0x7FFFFFFF).all() and nan.sum() == 2 * 1023
    _same_bits(y_op.view(np.uint32), y.view(np.uint32))


def test_every_bfloat16_to_float(half):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    y, y_op = np.empty(h.size, np.float32), np.empty(h.size, np.float32)
    _launch(half.get_function("bf16_to_float"), h.size, h.view(BF16), y, y_op)
    # a 16-bit shift, NaN payloads included, exactly as ml_dtypes widens
    _same_bits(y.view(np.uint32), h.view(BF16).astype(np.float32).view(np.uint32))
    _same_bits(y_op.view(np.uint32), y.view(np.uint32))


@pytest.mark.parametrize("fmt", ["half", "bf16"])
def test_float_to_16_bits_every_rounding_mode(half, fmt):
    x = _interesting_floats(fmt, np.random.default_rng(0))
    out = np.empty((x.size, 4), np.uint16)
    _launch(half.get_function("to_half<float>" if fmt == "half" else "to_bf16<float>"), x.size, x, out)
    for k, mode in enumerate(MODES):
        _same_bits(out[:, k], _oracle(x, fmt, mode))
    # and the libraries agree with the oracle on nearest-even (NaNs aside: they keep sign and payload)
    dt = FORMATS[fmt][0]
    ok = ~np.isnan(x)
    _same_bits(out[ok, 0], x[ok].astype(dt).view(np.uint16))


@pytest.mark.parametrize("fmt", ["half", "bf16"])
def test_double_rounds_once(half, fmt):
    rng = np.random.default_rng(1)
    vals, _, _ = _grid(fmt)
    mids = (vals[:-1] + vals[1:]) / 2
    # a hair above or below a tie: rounding through float32 first would land on the tie and go to even
    hair = mids * (1 + 2.0 ** -40)
    under = mids * (1 - 2.0 ** -40)
    rand = rng.standard_normal(50_000) * 10.0 ** rng.integers(-12, 6, 50_000)
    x = np.concatenate([vals, mids, hair, under, rand, [1e300, 2.0 ** -1074, np.inf, np.nan, 0.0]])
    x = np.concatenate([x, -x])
    out = np.empty((x.size, 4), np.uint16)
    _launch(half.get_function("to_half<double>" if fmt == "half" else "to_bf16<double>"), x.size, x, out)
    want = _oracle(x, fmt, "rn")
    _same_bits(out[:, 0], want)
    _same_bits(out[:, 1], want)  # the conversion constructor
    via_float = _oracle(x.astype(np.float32).astype(np.float64), fmt, "rn")
    assert (via_float != want).sum() > 1000  # the hair cases really do tell the two apart


@pytest.mark.parametrize("fmt", ["half", "bf16"])
def test_arithmetic_rounds_like_the_device(half, fmt):
    dt = FORMATS[fmt][0]
    rng = np.random.default_rng(2)
    n = 60_000
    a, b, c = (rng.integers(0, 1 << 16, n).astype(np.uint16).view(dt) for _ in range(3))
    # plus ordinary magnitudes, where results are rarely special
    a[: n // 2], b[: n // 2], c[: n // 2] = (rng.standard_normal((3, n // 2)) * 8).astype(dt)
    out = np.empty((n, 9), dt)
    _launch(half.get_function("half_ops<__half>" if fmt == "half" else "half_ops<__nv_bfloat16>"), n, a, b, c, out)
    f = [v.astype(np.float32) for v in (a, b, c)]
    with np.errstate(all="ignore"):
        exact = [f[0] + f[1], f[0] - f[1], f[0] * f[1], f[0] / f[1],
                 f[0].astype(np.float64) * f[1] + f[2]]
    for k, want in enumerate(exact):
        want_bits = _oracle(want.astype(np.float64), fmt, "rn")
        _same_bits(out[:, k].view(np.uint16), want_bits)
    fa, fb = f[0], f[1]
    nan_a, nan_b = np.isnan(fa), np.isnan(fb)
    with np.errstate(invalid="ignore"):
        want_max = np.where(nan_a, fb, np.where(nan_b, fa, np.where(fa > fb, fa, fb)))
        want_min = np.where(nan_a, fb, np.where(nan_b, fa, np.where(fa < fb, fa, fb)))
    for k, want in ((5, want_max), (6, want_min)):
        got = out[:, k].astype(np.float32)
        assert np.array_equal(got, want, equal_nan=True)
    either = nan_a | nan_b
    assert np.isnan(out[either, 7].astype(np.float32)).all() and np.isnan(out[either, 8].astype(np.float32)).all()
    np.testing.assert_array_equal(out[~either, 7], out[~either, 5])


@pytest.mark.parametrize("fmt", ["half", "bf16"])
def test_operators_and_comparisons(half, fmt):
    dt = FORMATS[fmt][0]
    rng = np.random.default_rng(3)
    n = 20_000
    a = rng.integers(0, 1 << 16, n).astype(np.uint16).view(dt)
    b = rng.integers(0, 1 << 16, n).astype(np.uint16).view(dt)
    b[::7] = a[::7]  # equal pairs
    out = np.empty((n, 4), dt)
    cmp = np.empty(n, np.int32)
    name = "half_operators<__half>" if fmt == "half" else "half_operators<__nv_bfloat16>"
    _launch(half.get_function(name), n, a, b, out, cmp)
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        for k, want in enumerate((fa + fb, fa - fb, fa * fb, fa / fb)):
            _same_bits(out[:, k].view(np.uint16), _oracle(want.astype(np.float64), fmt, "rn"))
        flags = [fa == fb, fa != fb, fa < fb, fa <= fb, fa > fb, fa >= fb, np.isnan(fa)]
    want = sum(f.astype(np.int32) << k for k, f in enumerate(flags))
    inf = np.where(np.isposinf(fa), 1, np.where(np.isneginf(fa), 3, 0))  # -1 & 3 == 3
    want = want | (inf << 7) | ((~((fa < fb) | (fa > fb))).astype(np.int32) << 9) | \
        (((fa < fb) | (fa > fb)).astype(np.int32) << 10)
    np.testing.assert_array_equal(cmp, want)


@pytest.mark.parametrize("fmt", ["half", "bf16"])
def test_pair_types(half, fmt):
    dt = FORMATS[fmt][0]
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(2 * 500) * 4).astype(np.float32)
    out = np.empty((500, 4), np.float32)
    _launch(half.get_function("half2_lanes<__half2>" if fmt == "half" else "half2_lanes<__nv_bfloat162>"), 500,
            x, out)
    p = x.reshape(500, 2).astype(dt).astype(np.float64)
    q = np.repeat(x.reshape(500, 2)[:, 1:], 2, axis=1).astype(dt).astype(np.float64)
    s = _oracle(p * q + p, fmt, "rn").view(dt).astype(np.float32)
    d = -_oracle(p - q, fmt, "rn").view(dt).astype(np.float32)
    np.testing.assert_array_equal(out[:, :2], s)
    np.testing.assert_array_equal(out[:, 2:], d)


def test_integer_conversions(half):
    v = np.array([0, 1, -1, 2049, 2051, 65504, 65519, 65520, 70000, -70000, 257, 259, 2 ** 31 - 1], np.int32)
    f = np.array([0.4, 0.5, 1.5, 2.5, -0.5, -1.5, 3.7, -3.7, 65504, 1e10, -1e10, 100.25, np.nan], np.float32)
    n = v.size
    h = np.empty((n, 2), np.uint16)
    back = np.empty((n, 4), np.int32)
    _launch(half.get_function("half_ints"), n, v, f, h, back)
    _same_bits(h[:, 0], _oracle(v.astype(np.float64), "half", "rn"))
    _same_bits(h[:, 1], _oracle(v.astype(np.float64), "bf16", "rn"))
    hf = f.astype(np.float16).astype(np.float64)
    bf = f.astype(BF16).astype(np.float64)
    i32 = np.iinfo(np.int32)

    def sat(r):  # the device saturates out-of-range values and turns NaN into 0
        return np.where(np.isnan(r), 0, np.clip(np.nan_to_num(r, posinf=i32.max, neginf=i32.min), i32.min,
                                                i32.max)).astype(np.int64)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(back[:, 0], sat(np.trunc(hf)))
        np.testing.assert_array_equal(back[:, 1], sat(np.rint(hf)))
        np.testing.assert_array_equal(back[:, 2], sat(np.floor(bf)))
        np.testing.assert_array_equal(back[:, 3], sat(np.trunc(hf)))


def test_atomic_add_on_16_bit_types(half):
    h = np.zeros(2, np.float16)
    b = np.zeros(2, BF16)
    _launch(half.get_function("half_atomic_add"), 1000, h, b)
    # 500 ones each: exact in half; bfloat16 stops counting at 256, where 257 is not representable
    np.testing.assert_array_equal(h, [500, 500])
    np.testing.assert_array_equal(b.astype(np.float32), [256, 256])


def test_launches_check_half_arrays(half):
    y, y_op = np.empty(4, np.float32), np.empty(4, np.float32)
    with pytest.raises(sim.SimArgumentError, match="float16"):
        half.get_function("half_to_float")((1,), (32,), (np.int64(4), np.zeros(4, np.uint16), y, y_op))
    with pytest.raises(sim.SimArgumentError, match="bfloat16"):
        half.get_function("bf16_to_float")((1,), (32,), (np.int64(4), np.zeros(4, np.float16), y, y_op))
    assert half.get_function("half_ops<__nv_bfloat16>").param_types[1] == "const __nv_bfloat16*"
