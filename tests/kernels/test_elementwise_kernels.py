"""elementwise.cu on the CPU simulator against NumPy: every op code, float32, float64, float16 and bfloat16 (the
16-bit types against the float32 result rounded once, within a rounding), awkward sizes (0, 1,
primes, pack and block boundaries +- 1, more elements than the grid covers), non-contiguous, broadcast and
0-d operands, scalar operands, in-place outputs and misaligned pointers (the scalar path next to the 128-bit
one)."""
import math

import ml_dtypes
import numpy as np
import pytest

from minitorch_gpu.backends import get_backend
from minitorch_gpu.backends._elementwise_table import kernel_members
from minitorch_gpu.backends.cuda import loader

SIZES = [0, 1, 3, 4, 5, 31, 255, 257, 1031]
BF16 = ml_dtypes.bfloat16
DTYPES = [np.float32, np.float64, np.float16, BF16]
HALVES = (np.dtype(np.float16), np.dtype(BF16))
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _tol(dt):
    if np.dtype(dt) in HALVES:  # the float32 result rounded once: two roundings of the low type at most
        eps = 2.0 ** -10 if dt == np.float16 else 2.0 ** -7
        return dict(rtol=2 * eps, atol=eps)
    return dict(rtol=3e-6, atol=3e-7) if dt == np.float32 else dict(rtol=1e-12, atol=1e-13)


def _values(n, dt, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-3, 3, n)
    specials = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan]
    x[:min(n, len(specials))] = specials[:min(n, len(specials))]
    return x.astype(dt)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


UNARY_REF = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "rint": np.rint, "frac": lambda x: x - np.trunc(x), "reciprocal": np.reciprocal,
    "square": np.square, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "deg2rad": np.deg2rad,
    "rad2deg": np.rad2deg, "sign": lambda x: np.where(np.isnan(x), 0, np.sign(x)),
    "relu": lambda x: np.where(x < 0, 0, x), "sigmoid": _sigmoid, "erf": _erf,
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "softplus": lambda x: np.where(x * 2.0 > 3.0, x, np.log1p(np.exp(x * 2.0)) / 2.0),
    "silu": lambda x: x * _sigmoid(x),
    # the CPU backend's float64 bodies (checked against PyTorch in tests/ops/test_elementwise.py)
    "lgamma": lambda x: get_backend("cpu").unary("lgamma", x.astype(np.float64)),
    "digamma": lambda x: get_backend("cpu").unary("digamma", x.astype(np.float64)),
}
PRED_REF = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
            "logical_not": np.logical_not}


def _floor_divide(a, b):
    return np.floor_divide(a, b)


BINARY_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "maximum": np.maximum,
    "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin, "pow": np.power, "atan2": np.arctan2,
    "copysign": np.copysign, "hypot": np.hypot, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
    "fmod": np.fmod,
    "remainder": np.remainder, "floor_divide": _floor_divide, "trunc_divide": lambda a, b: np.trunc(a / b),
    "gelu_backward": lambda g, x: g * (0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(
        2 * math.pi)),
    "silu_backward": lambda g, x: g * _sigmoid(x) * (1 + x * (1 - _sigmoid(x))),
    "sigmoid_backward": lambda g, y: g * y * (1 - y), "tanh_backward": lambda g, y: g * (1 - y * y),
}
CMP_REF = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
           "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
           "logical_xor": np.logical_xor}
_SMOOTH = {"gelu", "gelu_tanh", "erf", "sigmoid", "silu", "softplus", "gelu_backward", "silu_backward", "lgamma",
           "digamma"}


def _check(got, want, dt, name=""):
    with np.errstate(all="ignore"):
        want = np.asarray(want)
    assert got.shape == want.shape
    if want.dtype == bool:
        np.testing.assert_array_equal(got, want)
        return
    tol = _tol(dt)
    if name in _SMOOTH and np.dtype(dt) not in HALVES:  # references computed differently: looser
        tol = dict(rtol=1e-5, atol=1e-6) if dt == np.float32 else dict(rtol=1e-12, atol=1e-14)
    if np.dtype(dt) in HALVES:
        assert got.dtype == np.dtype(dt)
        got, want = got.astype(np.float64), want.astype(np.float32).astype(dt).astype(np.float64)
    else:
        want = want.astype(dt)
    np.testing.assert_allclose(got, want, equal_nan=True, **tol)


def _table(enum):
    """The primitives of the table that ``enum`` of elementwise.cu computes."""
    return {name for name, (e, _) in kernel_members().items() if e == enum}


def test_every_op_code_has_a_reference():
    for enum in ("UnaryOp", "PredicateOp", "CompareOp", "BinaryOp"):
        assert _table(enum) == set(loader.enum_codes("elementwise.cu", enum)), enum
    assert _table("UnaryOp") == set(UNARY_REF)
    assert _table("PredicateOp") == set(PRED_REF)
    assert _table("CompareOp") == set(CMP_REF)
    assert _table("BinaryOp") == set(BINARY_REF) | {"gelu_tanh_backward"}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY_REF))
def test_unary_ops(k, name, dt):
    x = _values(257, dt)
    p = (2.0, 3.0) if name == "softplus" else (0.0, 0.0)
    got = k.unary(name, x, None, *p)
    with np.errstate(all="ignore"):
        want = UNARY_REF[name](x.astype(np.float64) if name in _SMOOTH else x)
    _check(got, want, dt, name)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", sorted(PRED_REF))
def test_predicates(k, name, dt):
    x = _values(37, dt)
    got = k.unary(name, x)
    assert got.dtype == np.bool_
    _check(got, PRED_REF[name](x), dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_unary_sizes_and_alignment(k, n, dt):
    # offset 1 element: pointers 4 or 8 bytes off a 16-byte boundary take the scalar path
    for off in (0, 1):
        base = _values(n + off, dt, seed=n)
        x = base[off:]
        got = k.unary("exp", x)
        _check(got, np.exp(x), dt)
        out = np.empty_like(x)
        assert k.unary("neg", x, out) is out
        _check(out, -x, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_unary_layouts(k, dt):
    a = _values(7 * 11, dt).reshape(7, 11)
    for x in (a.T, a[::2, 1::3], a[:, ::-1], a[3], a[3, 4:5].reshape(()), np.broadcast_to(a[:1], (5, 11))):
        got = k.unary("sin", x)
        _check(got, np.sin(x), dt)
    t = k.unary("tanh", a.T)
    assert t.strides == a.T.strides  # a dense permuted input keeps its layout, as NumPy and PyTorch do
    x = a.copy()
    k.unary("square", x, x)  # in place
    _check(x, np.square(a), dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY_REF))
def test_binary_ops(k, name, dt):
    a = _values(257, dt, 1)
    b = _values(257, dt, 2)[::-1].copy()
    b[5] = 0.0
    got = k.binary(name, a, b)
    with np.errstate(all="ignore"):
        want = BINARY_REF[name](a.astype(np.float64), b.astype(np.float64)) if name in _SMOOTH else \
            BINARY_REF[name](a, b)
    _check(got, want, dt, name)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", sorted(CMP_REF))
def test_comparisons(k, name, dt):
    a = _values(65, dt, 1)
    b = a.copy()
    b[::3] = _values(65, dt, 2)[::3]
    for x, y in ((a, b), (a, 0.5), (1.0, b), (a[:, None][:5], b[None, :7])):
        got = k.binary(name, x, y)
        assert got.dtype == np.bool_
        _check(got, CMP_REF[name](x, y), dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_binary_sizes_scalars_and_broadcasting(k, n, dt):
    a = _values(n, dt, 3)
    b = _values(n, dt, 4)
    _check(k.binary("add", a, b), a + b, dt)
    _check(k.binary("sub", a, 2.5), a - dt(2.5), dt)
    _check(k.binary("div", 3, b), dt(3) / b, dt)
    _check(k.binary("mul", a[:, None], b[None, :3]), a[:, None] * b[None, :3], dt)
    out = a.copy()
    k.binary("mul", out, b, out)
    _check(out, a * b, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_binary_layouts(k, dt):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 1, 5)).astype(dt)
    b = rng.standard_normal((4, 1)).astype(dt)
    c = rng.standard_normal((5, 6)).astype(dt).T
    for x, y in ((a, b), (c, c), (c, a[:, 0, :]), (a[::2], b[::-1]), (np.asarray(dt(2)), a),
                 (rng.standard_normal((2, 3, 2, 3, 2, 3, 2, 3, 2)).astype(dt)[..., ::2], 1.5)):
        _check(k.binary("atan2", x, y), np.arctan2(x, y), dt)
    # more than 8 dims that do not collapse: the launcher declines (the backend then uses the built-in)
    big = rng.standard_normal((2,) * 9).astype(dt)
    assert k.binary("add", big, big.transpose(1, 0, 3, 2, 5, 4, 7, 6, 8)) is None
    # negative strides in several dims still collapse
    _check(k.binary("add", big[..., ::-1][::-1], big), big[..., ::-1][::-1] + big, dt)


def test_declines_what_it_does_not_handle(k):
    i = np.arange(5)
    assert k.unary("exp", i) is None
    assert k.binary("add", i, 1) is None
    assert k.binary("add", np.ones(3, np.float32), np.ones(3, np.float64)) is None
    assert k.binary("add", np.ones(3, np.float32), np.float64(2)) is None  # a NumPy float64 is not weak
    assert k.unary("no_such_op", np.ones(3)) is None
    a = np.arange(10.0)
    assert k.binary("add", a[1:], a[:-1], a[:-1]) is None  # overlapping output


@pytest.mark.parametrize("dt", DTYPES)
def test_ternary_ops(k, dt):
    rng = np.random.default_rng(7)
    a = _values(301, dt, 8)
    b = rng.uniform(-2, 2, 301).astype(dt)
    c = rng.uniform(-2, 2, 301).astype(dt)
    _check(k.ternary("clamp", a, -1.0, 1.0), np.minimum(np.maximum(a, dt(-1)), dt(1)), dt)
    _check(k.ternary("clamp", a, b, c), np.minimum(np.maximum(a, b), c), dt)
    _check(k.ternary("clamp", a, -np.inf, 0.5), np.minimum(a, dt(0.5)), dt)
    w = np.where(np.abs(c) < 0.5, c, c)
    want = np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))
    _check(k.ternary("lerp", a, b, w), want, dt)
    _check(k.ternary("lerp", a, b, 0.25), a + dt(0.25) * (b - a), dt)
    _check(k.ternary("addcmul", a, b, c, alpha=0.5), a + (b * c) * dt(0.5), dt)
    _check(k.ternary("addcdiv", a, b, c, alpha=1.0), a + b / c, dt)
    x = a.reshape(7, 43)[:, ::2]
    _check(k.ternary("addcmul", x, b[:22], 2.0, alpha=3.0), x + (b[:22] * dt(2)) * dt(3), dt)
    out = a.copy()
    k.ternary("addcdiv", out, b, c, alpha=-2.0, out=out)
    _check(out, a + (b / c) * dt(-2), dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 257, 1031])
def test_where(k, n, dt):
    a = _values(n, dt, 9)
    b = _values(n, dt, 10)
    cond = a > b
    _check(k.where(cond, a, b), np.where(cond, a, b), dt)
    _check(k.where(cond, a, 0.0), np.where(cond, a, dt(0)), dt)
    _check(k.where(cond, -1.0, b), np.where(cond, dt(-1), b), dt)
    m = np.arange(12).reshape(3, 4) % 3 == 0
    x = np.arange(4, dtype=dt)
    y = np.arange(3, dtype=dt)[:, None]
    _check(k.where(m, x, y), np.where(m, x, y), dt)
    _check(k.where(m.T, x[:, None], 7.0), np.where(m.T, x[:, None], dt(7)), dt)


# ---------------------------------------------------------------------- rows and 32-bit index math
def test_fastdiv_constants_divide_exactly():
    from minitorch_gpu.backends.cuda.launch import fastdiv_constants
    rng = np.random.default_rng(0)
    divisors = list(range(1, 1100)) + [(1 << k) + e for k in range(11, 31) for e in (-1, 0, 1)] + [1 << 31]
    divisors += [int(d) for d in rng.integers(1, 1 << 31, 500)]
    for d in divisors:
        magic, shift = fastdiv_constants(d)
        assert 0 < magic < 1 << 32
        n = np.concatenate([rng.integers(0, 1 << 31, 2000), [0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, (1 << 31) - 1]])
        n = (n % (1 << 31)).astype(np.uint64)
        q = (((n * np.uint64(magic)) >> np.uint64(32)) + n) >> np.uint64(shift)  # mt_fastdiv
        np.testing.assert_array_equal(q, n // np.uint64(d), err_msg=str(d))


def _kernels_used(k, monkeypatch):
    used = []
    fn = k.fn

    def spy(fname, kernel):
        used.append(kernel.split("<")[0])
        return fn(fname, kernel)
    monkeypatch.setattr(k, "fn", spy)
    return used


def _offset_view(a, shift):
    """``a``'s values in memory that starts ``shift`` elements past a 16-byte boundary."""
    buf = np.empty(a.size + 8, dtype=a.dtype)
    start = (-(buf.__array_interface__["data"][0] // a.itemsize)) % (16 // a.itemsize) + shift
    v = buf[start:start + a.size].reshape(a.shape)
    v[...] = a
    return v


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rows,cols", [(1, 5), (3, 3), (2, 4), (5, 5), (7, 8), (4, 17), (33, 31), (9, 64), (3, 1031)])
def test_binary_rows_bias_and_row_broadcasts(k, monkeypatch, dt, rows, cols):
    rng = np.random.default_rng(rows * cols)
    x = rng.standard_normal((rows, cols)).astype(dt)
    bias = rng.standard_normal(cols).astype(dt)
    col = rng.standard_normal((rows, 1)).astype(dt)
    used = _kernels_used(k, monkeypatch)
    for shift in (0, 1, 2):
        xs, bs = _offset_view(x, shift), _offset_view(bias, (shift + 1) % 3)
        _check(k.binary("add", xs, bs), x + bias, dt)
        _check(k.binary("sub", bs, xs), bias - x, dt)
        _check(k.binary("mul", xs, _offset_view(col, shift)), x * col, dt)
        _check(k.binary("div", col, xs), col / x, dt)
        _check(k.binary("maximum", bs, col), np.maximum(bias, col), dt)  # both operands broadcast
    if rows > 1:  # one row collapses to a flat walk
        assert set(used) == {"binary_rows_forward"}
    # into a given (strided) output: the row kernel writes through its row stride
    out = np.zeros((rows, cols + 3), dtype=dt)[:, 1:cols + 1]
    k.binary("add", x, bias, out)
    _check(out, x + bias, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_binary_rows_layouts(k, monkeypatch, dt):
    rng = np.random.default_rng(1)
    big = rng.standard_normal((6, 5, 12, 9)).astype(dt)
    scores = rng.standard_normal((2, 3, 7, 7)).astype(dt)
    mask = rng.standard_normal((7, 7)).astype(dt)
    used = _kernels_used(k, monkeypatch)
    cases = [
        (scores, mask),                             # attention mask: (B*H, T*T) + (T*T,)
        (big[:, :, :, 1:], big[0, 0, :, :8]),       # sliced rows: strides 540/108/9, no packs
        (big[:, 1:4, ::2, :8], 2.5),                # 3 outer dims to walk with the 32-bit division
        (big[::-1, :, 3:], big[0, :, 3:]),          # a negative outer stride
        (big[:, :1, :, :], big[:1, :, :1, :]),      # broadcasts on several axes at once
        (big[..., :4], big[:, :, :1, :4]),
        (3.0, big[:, 2, :, 4:8]),
    ]
    for a, b in cases:
        _check(k.binary("sub", a, b), np.subtract(a, b), dt)
    assert set(used) == {"binary_rows_forward"}
    for a, b in cases:
        base = np.abs(a) if isinstance(a, np.ndarray) else abs(a)
        _check(k.binary("pow", base, b), np.power(base, b), dt)
    used.clear()
    # a transposed operand is strided along the row: the general kernel, with the 32-bit division
    t, c = big[0, 0].T, rng.standard_normal((9, 12)).astype(dt)
    _check(k.binary("add", t, c), t + c, dt)
    _check(k.binary("add", c, t), c + t, dt)
    _check(k.binary("add", big[:, :, :, 0], big[:, :, :, 1]), big[..., 0] + big[..., 1], dt)
    assert set(used) == {"binary_strided_forward"}
    used.clear()
    # unary maps of views whose rows are contiguous: sliced, permuted, expanded along the row
    for x in (big[:, ::2, :, 1:], big[1:, :, 3:, :8], big.transpose(1, 0, 2, 3)[:, :, :, 2:],
              np.broadcast_to(big[:, :, :, :1], big.shape), _offset_view(big, 1)[:, :, :, :5]):
        _check(k.unary("exp", x), np.exp(x), dt)
        _check(k.unary("softplus", x, None, 2.0, 1.0), np.where(2 * x > 1, x, np.log1p(np.exp(2 * x)) / 2), dt)
        out = np.empty((x.shape[0] + 1,) + x.shape[1:], dtype=dt)[1:]
        k.unary("sin", x, out)
        _check(out, np.sin(x), dt)
    assert set(used) == {"unary_rows_forward"}
    used.clear()
    # the other strided kernels read the new meta layout too
    _check(k.unary("exp", big[:, :, :, 0]), np.exp(big[:, :, :, 0]), dt)
    _check(k.binary("lt", scores, mask), scores < mask, dt)
    _check(k.where(scores > 0, mask, big[0, 0, :7, :7].T), np.where(scores > 0, mask, big[0, 0, :7, :7].T), dt)
    _check(k.ternary("clamp", big[:, :, 1:], -0.5, big[0, :, 1:]), np.minimum(np.maximum(big[:, :, 1:], -0.5),
                                                                                big[0, :, 1:]), dt)


def test_binary_rows_leave_what_exceeds_31_bits_to_the_general_kernel(k, monkeypatch):
    from minitorch_gpu.backends.cuda import launch
    x = np.arange(40.0).reshape(5, 8)
    b = np.arange(8.0)
    used = _kernels_used(k, monkeypatch)
    monkeypatch.setattr(launch, "FASTDIV_MAX", 19)  # stands for 2**31 - 1: 5 rows x 4 packs of 2 > 19
    k.clear_plans()
    _check(k.binary("add", x, b), x + b, np.float64)
    monkeypatch.setattr(launch, "FASTDIV_MAX", 20)
    k.clear_plans()  # the plan of this signature was made under the other limit
    _check(k.binary("add", x, b), x + b, np.float64)
    assert used == ["binary_strided_forward", "binary_rows_forward"]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("bmask", range(8))
def test_binary_broadcast_on_every_axis_subset(k, dt, bmask):
    """b is 1 on each subset of the axes of a (4, 6, 10) output, on either side, from aligned and misaligned
    memory and as a sliced view: whichever kernel the layout picks, the values are NumPy's."""
    rng = np.random.default_rng(bmask)
    shape = (4, 6, 10)
    bshape = tuple(1 if bmask >> d & 1 else n for d, n in enumerate(shape))
    a = rng.standard_normal(shape).astype(dt)
    b = rng.standard_normal(bshape).astype(dt)
    wide = rng.standard_normal(shape[:2] + (13,)).astype(dt)[..., 2:12]  # rows of 10 at a stride of 13
    for x in (a, _offset_view(a, 1), wide):
        for y in (b, _offset_view(b, 3), b[..., ::-1]):
            _check(k.binary("sub", x, y), x - y, dt)
            _check(k.binary("sub", y, x), y - x, dt)


def test_one_plan_per_signature_with_alignment_decided_per_call(k):
    """Launch plans are cached by operand shapes and strides; whether the 128-bit path may run depends on the
    pointers too, so two views with one signature but different alignment share the plan and both come out
    right (one through the vector path, one through the scalar path)."""
    k.clear_plans()
    x = np.arange(1, 1 + 2 * 1031, dtype=np.float32)
    aligned, shifted = x[:1031], x[1:1032]  # same shape and strides, addresses 4 bytes apart
    assert k.aligned(aligned) and not k.aligned(shifted)
    _check(k.binary("mul", aligned, aligned), aligned * aligned, np.float32)
    plans = len(k._plans)
    _check(k.binary("mul", shifted, shifted), shifted * shifted, np.float32)
    _check(k.binary("mul", aligned, 2.0), aligned * 2, np.float32)  # a scalar operand: another signature
    assert len(k._plans) == plans + 1
    # a plan depends on the grid cap: changing the cap forgets the plans made under the old one
    saved = k.max_blocks
    k.max_blocks = saved + 1
    assert not k._plans
    k.max_blocks = saved


def test_sim_alignment_shortcut_agrees_with_the_address(k):
    # the simulator's ``aligned`` skips reading the address of arrays that own their memory
    for n in (1, 3, 17, 1031):
        for dt in (np.float32, np.float64, np.int8):
            for a in (np.empty(n, dt), np.ones((n, 2), dt).T.copy(), np.arange(n + 1, dtype=dt)[1:]):
                assert k.aligned(a) == (k.ptr(a) % 16 == 0)
