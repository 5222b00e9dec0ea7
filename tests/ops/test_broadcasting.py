"""Property tests of broadcasting for binary (and ternary) elementwise ops: random shape pairs (0-d, size-0
dims, size-1 dims) with contiguous, strided and transposed operands agree with NumPy; incompatible shapes
raise RuntimeError naming both shapes; gradients come back reduced to each input's shape; in-place ops accept
exactly the shapes that broadcast to the destination; random dtype pairs promote as in PyTorch."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
hnp = pytest.importorskip("hypothesis.extra.numpy")
given = hypothesis.given

SETTINGS = hypothesis.settings(max_examples=40, deadline=None,
                               suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])


def _layout_array(draw, shape, rng, dtype=np.float64, lo=-2.0, hi=2.0):
    """An array of ``shape``: contiguous, strided (every other element) or transposed."""
    layout = draw(st.sampled_from(["contiguous", "strided", "transposed"])) if shape else "contiguous"
    if layout == "strided":
        base = rng.uniform(lo, hi, [2 * s for s in shape]).astype(dtype)
        return base[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "transposed":
        return rng.uniform(lo, hi, shape[::-1]).astype(dtype).T
    return np.asarray(rng.uniform(lo, hi, shape).astype(dtype))


@st.composite
def broadcastable(draw, num_shapes=2, min_side=0):
    """Arrays of mutually broadcastable shapes (with their broadcast shape)."""
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=0, max_dims=4,
                                                    min_side=min_side, max_side=4))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    arrays = [_layout_array(draw, s, rng) for s in shapes.input_shapes]
    return arrays, shapes.result_shape


def _tensor(a, device, requires_grad=False):
    a = np.asarray(a)
    t = mt.from_numpy(a)
    if not a.flags.c_contiguous:
        assert not t.is_contiguous()
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t


def _sum_to(g, shape):
    """NumPy version of the backward of broadcasting: sum ``g`` down to ``shape``."""
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


BINARY = {
    "add": (mt.add, np.add),
    "sub": (mt.sub, np.subtract),
    "mul": (mt.mul, np.multiply),
    "div": (mt.div, np.divide),
    "maximum": (mt.maximum, np.maximum),
    "minimum": (mt.minimum, np.minimum),
    "atan2": (mt.atan2, np.arctan2),
    "pow": (mt.pow, lambda a, b: np.power(np.abs(a) + 0.5, b)),
    "eq": (mt.eq, np.equal),
    "lt": (mt.lt, np.less),
    "fmod": (mt.fmod, np.fmod),
    "logical_xor": (mt.logical_xor, np.logical_xor),
}


@SETTINGS
@given(data=broadcastable(), op=st.sampled_from(sorted(BINARY)))
def test_binary_broadcasting_matches_numpy(device, data, op):
    (a, b), shape = data
    fn, ref = BINARY[op]
    if op == "pow":
        a = np.abs(a) + 0.5
        expected = np.power(a, b)
    elif op in ("div", "fmod"):
        b = np.where(np.abs(b) < 0.1, 0.5, b)
        expected = ref(a, b)
    else:
        expected = ref(a, b)
    r = fn(_tensor(a, device), _tensor(b, device))
    assert tuple(r.shape) == shape
    assert_close(r, expected, rtol=1e-12, atol=1e-12)
    # the operator spelling agrees with the function
    if op in ("add", "sub", "mul", "div"):
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op]
        r2 = eval(f"x {sym} y", {"x": _tensor(a, device), "y": _tensor(b, device)})
        assert_close(r2, expected, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(data=broadcastable(), op=st.sampled_from(["add", "sub", "mul", "div", "maximum", "atan2", "pow"]))
def test_gradients_reduce_to_input_shapes(device, data, op):
    (a, b), shape = data
    if op == "pow":
        a = np.abs(a) + 0.5
    if op == "div":
        b = np.where(np.abs(b) < 0.1, 0.5, b)
    if op == "maximum":
        b = np.where(np.abs(np.broadcast_to(b, shape) - np.broadcast_to(a, shape)) < 1e-3, 10.0, 0.0).sum() + b
    x, y = _tensor(a, device, True), _tensor(b, device, True)
    g = np.random.default_rng(0).uniform(-1, 1, shape)
    BINARY[op][0](x, y).backward(_tensor(g, device))
    assert tuple(x.grad.shape) == a.shape and tuple(y.grad.shape) == b.shape
    ab, bb = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    if op == "add":
        ga, gb = g, g
    elif op == "sub":
        ga, gb = g, -g
    elif op == "mul":
        ga, gb = g * bb, g * ab
    elif op == "div":
        ga, gb = g / bb, -g * ab / bb ** 2
    elif op == "maximum":
        ga, gb = g * (ab > bb), g * (ab < bb)
    elif op == "atan2":
        den = ab ** 2 + bb ** 2
        ga, gb = g * bb / den, -g * ab / den
    else:
        ga, gb = g * bb * ab ** (bb - 1), g * ab ** bb * np.log(ab)
    assert_close(x.grad, _sum_to(ga, a.shape), rtol=1e-10, atol=1e-12)
    assert_close(y.grad, _sum_to(gb, b.shape), rtol=1e-10, atol=1e-12)


@SETTINGS
@given(data=broadcastable(num_shapes=3))
def test_where_broadcasts_three_ways(device, data):
    (c, a, b), shape = data
    cond = c > 0
    x, y = _tensor(a, device, True), _tensor(b, device, True)
    r = mt.where(_tensor(cond, device), x, y)
    assert tuple(r.shape) == shape
    assert_close(r, np.where(cond, a, b))
    g = np.ones(shape)
    r.backward(_tensor(g, device))
    cb = np.broadcast_to(cond, shape)
    assert_close(x.grad, _sum_to(np.where(cb, g, 0.0), a.shape))
    assert_close(y.grad, _sum_to(np.where(cb, 0.0, g), b.shape))


@SETTINGS
@given(data=broadcastable(num_shapes=3), which=st.sampled_from(["lerp", "addcmul", "addcdiv", "clamp"]))
def test_ternary_ops_broadcast(device, data, which):
    (a, b, c), shape = data
    if which == "lerp":
        r = mt.lerp(_tensor(a, device), _tensor(b, device), _tensor(c, device))
        expected = a + c * (b - a)
    elif which == "addcmul":
        r = mt.addcmul(_tensor(a, device), _tensor(b, device), _tensor(c, device), value=0.5)
        expected = a + 0.5 * b * c
    elif which == "addcdiv":
        c = np.where(np.abs(c) < 0.1, 0.5, c)
        r = mt.addcdiv(_tensor(a, device), _tensor(b, device), _tensor(c, device), value=-2)
        expected = a - 2 * b / c
    else:
        r = mt.clamp(_tensor(a, device), _tensor(b, device), _tensor(c, device))
        expected = np.minimum(np.maximum(a, b), c)
    assert tuple(r.shape) == shape
    assert_close(r, expected, rtol=1e-12, atol=1e-12)


@st.composite
def any_shape_pair(draw):
    def shape():
        return tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    return shape(), shape()


@SETTINGS
@given(shapes=any_shape_pair(), op=st.sampled_from(["add", "mul", "sub", "maximum", "eq", "div"]))
def test_incompatible_shapes_raise_runtime_error(device, shapes, op):
    sa, sb = shapes
    try:
        expected_shape = np.broadcast_shapes(sa, sb)
    except ValueError:
        expected_shape = None
    x = _tensor(np.ones(sa), device)
    y = _tensor(np.ones(sb), device)
    fn = BINARY[op][0]
    if expected_shape is None:
        with pytest.raises(RuntimeError) as info:
            fn(x, y)
        assert str(list(sa)) in str(info.value) and str(list(sb)) in str(info.value)
    else:
        assert tuple(fn(x, y).shape) == expected_shape


@SETTINGS
@given(shapes=any_shape_pair(), op=st.sampled_from(["add_", "mul_", "sub_", "div_"]),
       grad=st.booleans())
def test_inplace_accepts_exactly_shapes_that_broadcast_to_self(device, shapes, op, grad):
    sa, sb = shapes
    a = np.full(sa, 2.0)
    b = np.full(sb, 3.0)
    base = _tensor(a, device, requires_grad=grad)
    x = base * 1.0 if grad else base
    y = _tensor(b, device)
    try:
        ok = np.broadcast_shapes(sa, sb) == sa
    except ValueError:
        ok = False
    if ok:
        getattr(x, op)(y)
        expected = {"add_": 5.0, "mul_": 6.0, "sub_": -1.0, "div_": 2.0 / 3.0}[op]
        assert_close(x, np.full(sa, expected))
        assert x._version == 1
    else:
        with pytest.raises(RuntimeError):
            getattr(x, op)(y)
        assert_close(x, a)
        assert x._version == 0


DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


@st.composite
def typed_operand(draw):
    """A tensor spec (dtype, shape) or a Python scalar."""
    kind = draw(st.sampled_from(["tensor", "zero_dim", "scalar"]))
    if kind == "scalar":
        return draw(st.sampled_from([True, 3, -2, 2.5, -0.75]))
    dt = draw(st.sampled_from(DTYPES))
    shape = () if kind == "zero_dim" else tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    seed = draw(st.integers(0, 1000))
    return ("t", dt, shape, seed)


def _make(spec, lib, device=None):
    if not isinstance(spec, tuple):
        return spec
    _, dt, shape, seed = spec
    vals = np.random.default_rng(seed).integers(1, 6, size=shape)
    if dt == "bool":
        vals = vals > 3
    if lib is mt:
        return mt.tensor(vals, dtype=getattr(mt, dt), device=device)
    return lib.tensor(vals, dtype=getattr(lib, dt))


@SETTINGS
@given(lhs=typed_operand(), rhs=typed_operand(), op=st.sampled_from(["add", "mul", "sub", "div", "eq", "lt",
                                                                    "maximum", "where"]))
def test_random_dtype_pairs_promote_like_torch(device, torch, lhs, rhs, op):
    hypothesis.assume(isinstance(lhs, tuple))   # functions take a tensor first
    for spec in (lhs, rhs):
        if isinstance(spec, tuple) and spec[1] == "bfloat16":
            hypothesis.assume(device == "cpu")   # CuPy has no bfloat16 arrays
    if op == "maximum":
        hypothesis.assume(isinstance(rhs, tuple))
    a_t, b_t = _make(lhs, torch), _make(rhs, torch)
    a, b = _make(lhs, mt, device), _make(rhs, mt, device)
    if op == "where":
        cond_t = torch.tensor(True)
        cond = mt.tensor(True, device=device)
        call_t = lambda: torch.where(cond_t, a_t, b_t)   # noqa: E731
        call = lambda: mt.where(cond, a, b)               # noqa: E731
    else:
        call_t = lambda: getattr(torch, op)(a_t, b_t)     # noqa: E731
        call = lambda: getattr(mt, op)(a, b)              # noqa: E731
    try:
        expected = call_t()
    except (RuntimeError, TypeError, NotImplementedError) as e:
        with pytest.raises(RuntimeError if isinstance(e, NotImplementedError) else type(e)):
            call()
        return
    got = call()
    assert str(got.dtype).rsplit(".", 1)[-1] == str(expected.dtype).rsplit(".", 1)[-1]
    assert tuple(got.shape) == tuple(expected.shape)
    tol = 1e-2 if expected.dtype in (torch.float16, torch.bfloat16) else 1e-6
    assert_close(got, expected.float().numpy() if expected.dtype is torch.bfloat16 else expected.numpy(),
                 rtol=tol, atol=tol)


@SETTINGS
@given(data=broadcastable(min_side=1))
def test_broadcast_result_owns_its_memory(device, data):
    (a, b), shape = data
    x, y = _tensor(a, device), _tensor(b, device)
    r = x + y
    assert tuple(r.shape) == shape
    before_x, before_y = to_np(x).copy(), to_np(y).copy()
    r.add_(1.0)   # writing to the result never touches the inputs, even where an input was broadcast
    assert_close(x, before_x)
    assert_close(y, before_y)
