"""float16 and bfloat16 as first-class dtypes, against PyTorch on its CPU: every unary and binary primitive of the
dispatch layer's table (backends/_elementwise_table.py), reductions that accumulate in float32 and round once,
softmax, layer norm, cross-entropy, embedding and indexing, and their gradients; values within the type's
tolerance and PyTorch's result dtypes. The inputs are rounded to the low type first, so both libraries see the
same values; each result may differ from PyTorch's by about one rounding of the low type."""
import zlib

import numpy as np
import pytest
from helpers import to_np

import minitorch_gpu as mt
from minitorch_gpu.backends._elementwise_table import by_arity

LOW = ["float16", "bfloat16"]
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
RNG = np.random.default_rng(16)


@pytest.fixture(autouse=True)
def _inputs_per_test(request):
    """Each test draws its own inputs, whichever tests run before it."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.name.encode()))

# primitives the float types do not have (integer-only) and the ones PyTorch spells differently
NOT_FLOAT = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}
TORCH_NAME = {"rint": "round", "sub": "subtract", "trunc_divide": "div"}
DOMAIN = {"log": (0.1, 4), "log2": (0.1, 4), "log10": (0.1, 4), "log1p": (-0.5, 3), "sqrt": (0.1, 4),
          "rsqrt": (0.1, 4), "reciprocal": (0.2, 3), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9),
          "acosh": (1.1, 4), "atanh": (-0.9, 0.9), "erfinv": (-0.9, 0.9), "lgamma": (0.2, 5), "digamma": (0.2, 5),
          "tan": (-1.2, 1.2), "sigmoid": (-6, 6), "exp": (-4, 4), "exp2": (-4, 4), "expm1": (-3, 3),
          "sinh": (-3, 3), "cosh": (-3, 3)}
# functions with large derivatives where the inputs are near a pole or branch: compare with a looser tolerance
STEEP = {"tan", "lgamma", "digamma", "erfinv", "atanh", "acosh", "reciprocal", "rsqrt", "log", "log2", "log10",
         "log1p", "pow", "atan2", "fmod", "remainder", "floor_divide", "trunc_divide", "div", "logaddexp2"}


def _low(dtype):
    return getattr(mt, dtype)


def _pair(torch, a, dtype, device, requires_grad=False):
    """(ours, PyTorch's) tensors of float32 array ``a`` rounded to ``dtype``."""
    t = torch.tensor(a, dtype=getattr(torch, dtype))
    m = mt.tensor(a, dtype=_low(dtype), device=device)
    np.testing.assert_array_equal(to_np(m.float()), t.float().numpy())  # the same rounding on the way in
    if requires_grad:
        t.requires_grad_(True)
        m.requires_grad_(True)
    return m, t


def _same(ours, theirs, dtype, rtol=2.0, atol=None):
    """Same dtype, shape and, within ``rtol`` roundings of the low type, the same values (NaN where PyTorch has
    NaN)."""
    assert str(ours.dtype).rsplit(".", 1)[-1] == str(theirs.dtype).rsplit(".", 1)[-1], (ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    got = to_np(ours.float() if ours.dtype.is_floating_point else ours)
    want = (theirs.float() if theirs.dtype.is_floating_point else theirs).detach().numpy()
    if got.dtype == bool:
        np.testing.assert_array_equal(got, want)
        return
    eps = EPS[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol * eps,
                               atol=rtol * eps if atol is None else atol, equal_nan=True)


def _input(name, shape, lo=-3.0, hi=3.0):
    lo, hi = DOMAIN.get(name, (lo, hi))
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def _public(name):
    """Whether the primitive is a public op (a few, such as deg2rad, serve only composites)."""
    return name in ("trunc_divide", "floor_divide") or hasattr(mt, TORCH_NAME.get(name, name))


UNARY = sorted(n for n in by_arity("unary") if n not in NOT_FLOAT and _public(n))
BINARY = sorted(n for n in by_arity("binary") if n not in NOT_FLOAT and _public(n))


def _torch_fn(torch, name):
    tname = TORCH_NAME.get(name, name)
    if name == "trunc_divide":
        return lambda a, b: torch.div(a, b, rounding_mode="trunc")
    if name == "floor_divide":
        return lambda a, b: torch.div(a, b, rounding_mode="floor")
    return getattr(torch, tname)


def _our_fn(name):
    if name == "trunc_divide":
        return lambda a, b: mt.div(a, b, rounding_mode="trunc")
    if name == "floor_divide":
        return lambda a, b: mt.div(a, b, rounding_mode="floor")
    return getattr(mt, TORCH_NAME.get(name, name))


# ====================================================================== elementwise
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", UNARY)
def test_unary(device, torch, dtype, name):
    a = _input(name, (5, 37))
    a[0, :4] = [0.0, -0.0, 1.0, -1.0] if name not in DOMAIN else a[0, :4]
    m, t = _pair(torch, a, dtype, device)
    _same(_our_fn(name)(m), _torch_fn(torch, name)(t), dtype, rtol=4.0 if name in STEEP else 2.0)
    # a strided view takes the strided path of the kernels
    _same(_our_fn(name)(m.t()), _torch_fn(torch, name)(t.t()), dtype, rtol=4.0 if name in STEEP else 2.0)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", BINARY)
def test_binary(device, torch, dtype, name):
    a, b = _input(name, (6, 40)), _input(name, (6, 40))
    if name in ("pow",):
        a = np.abs(a) + 0.1
    if name in ("div", "fmod", "remainder", "floor_divide", "trunc_divide"):
        b = np.where(np.abs(b) < 0.3, 0.7, b)
    b[0, :3] = a[0, :3]  # equal pairs for the comparisons
    ma, ta = _pair(torch, a, dtype, device)
    mb, tb = _pair(torch, b, dtype, device)
    ours, theirs = _our_fn(name), _torch_fn(torch, name)
    tol = 4.0 if name in STEEP else 2.0
    # PyTorch's CPU kernels round the quotient to the 16-bit type before flooring or truncating it, its CUDA
    # kernels (and ours) do not: where the float32 quotient lies within a rounding of an integer they differ by 1
    atol = 1.0 if name in ("floor_divide", "trunc_divide") else None
    _same(ours(ma, mb), theirs(ta, tb), dtype, rtol=tol, atol=atol)
    # broadcast rows (a bias add) and a Python scalar, which PyTorch keeps in float32 for the low types
    _same(ours(ma, mb[:1]), theirs(ta, tb[:1]), dtype, rtol=tol, atol=atol)
    try:
        want = theirs(ta, 1.37)
    except TypeError:  # PyTorch takes no Python scalar here
        want = None
    if want is not None:
        _same(ours(ma, 1.37), want, dtype, rtol=tol, atol=atol)
    _same(ours(ma[:, ::2], mb[:, 1::2]), theirs(ta[:, ::2], tb[:, 1::2]), dtype, rtol=tol, atol=atol)


@pytest.mark.parametrize("dtype", LOW)
def test_python_scalars_in_one_pass(device, torch, monkeypatch, dtype):
    """A 16-bit tensor with a Python scalar: PyTorch's values bit for bit (float32 arithmetic; the scalar rounded to
    the 16-bit type first except for * and /), and on CUDA one kernel launch per op, in place too."""
    from helpers import kernel_launches

    from minitorch_gpu.backends import get_backend
    a = np.array([1.0, 2049.0, 0.1, 60000.0, 3.3, -7.7, 1e-3, 250.0], np.float32)
    m, t = _pair(torch, a, dtype, device)
    exprs = ("x * 1.0001", "x + 0.6", "x - 0.3", "x / 3.0", "x * 70000.0", "2 - x", "x ** 1.5", "x < 0.1",
             "x >= 3.3", "torch.rsub(x, 2.5, alpha=3)", "x.clone().add_(0.3)", "x.clone().mul_(1.0001)",
             "x.clone().sub_(0.3, alpha=2)", "x // 0.7", "x % 0.7")
    for expr in exprs:
        ours = eval(expr, {"x": m, "torch": mt})
        theirs = eval(expr, {"x": t, "torch": torch})
        _same(ours, theirs, dtype, rtol=0, atol=0)
    if device == "cpu":
        return
    calls = kernel_launches(monkeypatch, get_backend(device))
    for expr in ("x * 1.0001", "x + 0.6", "2 - x", "x ** 1.5"):
        calls.clear()
        eval(expr, {"x": m})
        assert [k for _, k in calls] == [f"binary_forward<{ {'float16': '__half', 'bfloat16': '__nv_bfloat16'}[dtype]}>"], \
            (expr, calls)
    y = m.clone()
    calls.clear()
    y.add_(0.3)
    assert len(calls) == 1, calls

@pytest.mark.parametrize("dtype", LOW)
def test_mixed_dtypes_promote_like_torch(device, torch, dtype):
    a = _input("add", (3, 8))
    m, t = _pair(torch, a, dtype, device)
    for other in ("float32", "float64", "float16", "bfloat16", "int64"):
        mo = mt.ones(3, 8, dtype=getattr(mt, other), device=device)
        to = torch.ones(3, 8, dtype=getattr(torch, other))
        _same(m + mo, t + to, dtype)
        _same(m * 3, t * 3, dtype)


@pytest.mark.parametrize("dtype", LOW)
def test_where_clamp_and_activations(device, torch, dtype):
    import minitorch_gpu.nn.functional as F
    tF = torch.nn.functional
    a = _input("x", (4, 33))
    m, t = _pair(torch, a, dtype, device)
    _same(mt.where(m > 0, m, 0.5), torch.where(t > 0, t, 0.5), dtype)
    _same(m.clamp(-1, 0.5), t.clamp(-1, 0.5), dtype)
    for f in ("gelu", "silu", "softplus", "relu", "tanh", "sigmoid", "elu", "leaky_relu"):
        _same(getattr(F, f)(m), getattr(tF, f)(t), dtype, rtol=3.0)
    _same(F.gelu(m, approximate="tanh"), tF.gelu(t, approximate="tanh"), dtype, rtol=3.0)


# ====================================================================== conversions and creation
@pytest.mark.parametrize("dtype", LOW)
def test_creation_and_conversion(device, torch, dtype):
    lo = _low(dtype)
    a = RNG.standard_normal((3, 5)).astype(np.float32) * 100
    x = mt.tensor(a, device=device)
    _same(x.to(lo), torch.tensor(a).to(getattr(torch, dtype)), dtype, rtol=0)
    _same(x.half() if dtype == "float16" else x.bfloat16(),
          torch.tensor(a).half() if dtype == "float16" else torch.tensor(a).bfloat16(), dtype, rtol=0)
    y = x.to(lo)
    assert y.float().dtype is mt.float32 and y.double().dtype is mt.float64 and y.long().dtype is mt.int64
    for f in (mt.zeros, mt.ones, mt.empty):
        z = f(2, 3, dtype=lo, device=device)
        assert z.dtype is lo and z.shape == (2, 3) and z.element_size() == 2
    _same(mt.full((2, 2), 1.1, dtype=lo, device=device), torch.full((2, 2), 1.1, dtype=getattr(torch, dtype)),
          dtype, rtol=0)
    _same(mt.arange(0, 3, 0.25, dtype=lo, device=device), torch.arange(0, 3, 0.25, dtype=getattr(torch, dtype)),
          dtype, rtol=0)
    _same(mt.linspace(-1, 1, 9, dtype=lo, device=device), torch.linspace(-1, 1, 9, dtype=getattr(torch, dtype)),
          dtype)
    r = mt.randn(100, dtype=lo, device=device)
    assert r.dtype is lo and bool(r.isfinite().all())
    assert mt.tensor([1.5], dtype=lo, device=device).item() == 1.5
    # a float32 value outside the low type's range overflows to inf, as a cast does
    big = mt.tensor([1e6, -1e6], device=device).to(lo)
    expected = torch.tensor([1e6, -1e6]).to(getattr(torch, dtype))
    _same(big, expected, dtype, rtol=0)


# ====================================================================== reductions
REDUCTIONS = ["sum", "mean", "var", "std", "prod", "norm", "cumsum", "amax", "amin", "logsumexp", "cumprod"]


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_accumulate_in_float32(device, torch, dtype, name):
    shape = (4, 3000) if name not in ("prod", "cumprod") else (4, 30)
    lo, hi = (0.9, 1.1) if name in ("prod", "cumprod") else (0.0, 1.0)
    a = RNG.uniform(lo, hi, shape).astype(np.float32)
    m, t = _pair(torch, a, dtype, device, requires_grad=name not in ("amax", "amin"))
    calls = ((), (1,), (0,)) if name != "norm" else ((), (2, 1), (1, 0))  # norm's first argument is p
    for args in calls:
        if name in ("cumsum", "cumprod", "logsumexp") and not args:
            continue
        ours, theirs = getattr(m, name)(*args), getattr(t, name)(*args)
        # one rounding at the end: a half-precision running sum of 3000 values would be off by far more
        _same(ours, theirs, dtype, rtol=2.0, atol=2 * EPS[dtype] * float(theirs.abs().max().float()))
        if name in ("prod", "cumprod"):
            # PyTorch's CPU kernel rounds every partial product to the 16-bit type (its CUDA kernel does not):
            # ours is the float32 product rounded once
            exact = getattr(t.detach().float(), name)(*args).to(t.dtype)
            _same(ours, exact, dtype, rtol=1.0, atol=0)
    if name in ("amax", "amin"):
        return
    w = RNG.standard_normal(tuple(theirs.shape)).astype(np.float32)
    (ours.float() * mt.tensor(w, device=device)).sum().backward()
    (theirs.float() * torch.tensor(w)).sum().backward()
    _same(m.grad, t.grad, dtype, rtol=4.0, atol=4 * EPS[dtype] * float(t.grad.abs().max().float()))


@pytest.mark.parametrize("dtype", LOW)
def test_sum_of_many_ones_is_exact(device, torch, dtype):
    # a low-precision accumulator stops at 2048 (float16) or 256 (bfloat16); PyTorch's float32 one does not
    x = mt.ones(5000, dtype=_low(dtype), device=device)
    want = torch.ones(5000, dtype=getattr(torch, dtype)).sum().item()
    assert x.sum().item() == want == (4992.0 if dtype == "bfloat16" else 5000.0)  # 5000 rounded once
    assert x.sum().dtype is _low(dtype) and x.mean().item() == 1.0


# ====================================================================== nn primitives
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("cols", [7, 64, 1000])
def test_softmax_and_log_softmax(device, torch, dtype, cols):
    import minitorch_gpu.nn.functional as F
    a = RNG.standard_normal((6, cols)).astype(np.float32) * 3
    for dim in (-1, 0):
        for f in ("softmax", "log_softmax"):
            m, t = _pair(torch, a, dtype, device, requires_grad=True)
            ours, theirs = getattr(F, f)(m, dim=dim), getattr(torch.nn.functional, f)(t, dim=dim)
            _same(ours, theirs, dtype, rtol=2.0, atol=2 * EPS[dtype] * (1 if f == "softmax" else 8))
            w = RNG.standard_normal(a.shape).astype(np.float32)
            (ours.float() * mt.tensor(w, device=device)).sum().backward()
            (theirs.float() * torch.tensor(w)).sum().backward()
            _same(m.grad, t.grad, dtype, rtol=4.0, atol=4 * EPS[dtype] * float(t.grad.abs().max().float()))


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("cols", [8, 96, 1030])
def test_layer_norm(device, torch, dtype, cols):
    import minitorch_gpu.nn.functional as F
    a = RNG.standard_normal((5, cols)).astype(np.float32) * 2 + 1
    w = RNG.standard_normal(cols).astype(np.float32)
    b = RNG.standard_normal(cols).astype(np.float32)
    m, t = _pair(torch, a, dtype, device, requires_grad=True)
    mw, tw = _pair(torch, w, dtype, device, requires_grad=True)
    mb, tb = _pair(torch, b, dtype, device, requires_grad=True)
    ours = F.layer_norm(m, (cols,), mw, mb, 1e-5)
    theirs = torch.nn.functional.layer_norm(t, (cols,), tw, tb, 1e-5)
    _same(ours, theirs, dtype, rtol=4.0, atol=8 * EPS[dtype])
    g = RNG.standard_normal(a.shape).astype(np.float32)
    (ours.float() * mt.tensor(g, device=device)).sum().backward()
    (theirs.float() * torch.tensor(g)).sum().backward()
    for x, y in ((m, t), (mw, tw), (mb, tb)):
        _same(x.grad, y.grad, dtype, rtol=8.0, atol=8 * EPS[dtype] * float(y.grad.abs().max().float()))


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("classes", [10, 300])
def test_cross_entropy(device, torch, dtype, classes):
    import minitorch_gpu.nn.functional as F
    a = RNG.standard_normal((12, classes)).astype(np.float32) * 2
    target = RNG.integers(0, classes, 12)
    target[3] = -100
    for kw in ({}, {"label_smoothing": 0.1}, {"reduction": "sum"}, {"reduction": "none"}):
        m, t = _pair(torch, a, dtype, device, requires_grad=True)
        ours = F.cross_entropy(m, mt.tensor(target, device=device), **kw)
        theirs = torch.nn.functional.cross_entropy(t, torch.tensor(target), **kw)
        _same(ours, theirs, dtype, rtol=4.0, atol=4 * EPS[dtype] * max(1.0, float(theirs.abs().max().float())))
        ours.float().sum().backward()
        theirs.float().sum().backward()
        _same(m.grad, t.grad, dtype, rtol=4.0, atol=4 * EPS[dtype] * float(t.grad.abs().max().float()))


@pytest.mark.parametrize("dtype", LOW)
def test_embedding_and_its_gradient(device, torch, dtype):
    import minitorch_gpu.nn.functional as F
    w = RNG.standard_normal((50, 24)).astype(np.float32)
    idx = RNG.integers(0, 50, (7, 9))
    idx[0, :3] = 4  # repeated rows add up in the gradient
    m, t = _pair(torch, w, dtype, device, requires_grad=True)
    ours = F.embedding(mt.tensor(idx, device=device), m)
    theirs = torch.nn.functional.embedding(torch.tensor(idx), t)
    _same(ours, theirs, dtype, rtol=0)
    g = RNG.standard_normal(tuple(theirs.shape)).astype(np.float32)
    (ours * mt.tensor(g, dtype=_low(dtype), device=device)).sum().backward()
    (theirs * torch.tensor(g, dtype=getattr(torch, dtype))).sum().backward()
    _same(m.grad, t.grad, dtype, rtol=4.0)


@pytest.mark.parametrize("dtype", LOW)
def test_indexing(device, torch, dtype):
    a = RNG.standard_normal((6, 10)).astype(np.float32)
    m, t = _pair(torch, a, dtype, device, requires_grad=True)
    idx = [4, 0, 4, 2]
    _same(m[idx], t[idx], dtype, rtol=0)
    _same(m[:, 1::3], t[:, 1::3], dtype, rtol=0)
    _same(m[m > 0], t[t > 0], dtype, rtol=0)
    _same(m.index_select(1, mt.tensor([3, 1], device=device)), t.index_select(1, torch.tensor([3, 1])), dtype,
          rtol=0)
    gi = RNG.integers(0, 10, (6, 4))
    _same(m.gather(1, mt.tensor(gi, device=device)), t.gather(1, torch.tensor(gi)), dtype, rtol=0)
    (m[idx].float().sum() + m.gather(1, mt.tensor(gi, device=device)).float().sum()).backward()
    (t[idx].float().sum() + t.gather(1, torch.tensor(gi)).float().sum()).backward()
    _same(m.grad, t.grad, dtype, rtol=0)
    with mt.no_grad():
        mc, tc = m.detach().clone(), t.detach().clone()
        mc[1:3, 2] = 0.3
        tc[1:3, 2] = 0.3
        mc.masked_fill_(mc < -1, -7.5)
        tc.masked_fill_(tc < -1, -7.5)
        _same(mc, tc, dtype, rtol=0)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "sqrt", "log", "sin", "abs", "relu", "erf"])
def test_unary_gradients(device, torch, dtype, name):
    a = _input(name, (4, 21))
    m, t = _pair(torch, a, dtype, device, requires_grad=True)
    ours, theirs = getattr(mt, name)(m), getattr(torch, name)(t)
    g = RNG.standard_normal(a.shape).astype(np.float32)
    (ours * mt.tensor(g, dtype=_low(dtype), device=device)).sum().backward()
    (theirs * torch.tensor(g, dtype=getattr(torch, dtype))).sum().backward()
    assert m.grad.dtype is _low(dtype)
    _same(m.grad, t.grad, dtype, rtol=4.0, atol=4 * EPS[dtype] * float(t.grad.abs().max().float()))


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name", ["mul", "div", "pow", "maximum", "atan2", "hypot"])
def test_binary_gradients(device, torch, dtype, name):
    a, b = _input(name, (4, 21), 0.3, 2.0), _input(name, (4, 21), 0.3, 2.0)
    ma, ta = _pair(torch, a, dtype, device, requires_grad=True)
    mb, tb = _pair(torch, b, dtype, device, requires_grad=True)
    ours, theirs = getattr(mt, name)(ma, mb), getattr(torch, name)(ta, tb)
    ours.float().sum().backward()
    theirs.float().sum().backward()
    for x, y in ((ma, ta), (mb, tb)):
        _same(x.grad, y.grad, dtype, rtol=4.0, atol=4 * EPS[dtype] * float(y.grad.abs().max().float()))


@pytest.mark.parametrize("dtype", LOW)
def test_kernels_serve_the_low_types(device, monkeypatch, dtype):
    """On CUDA the 16-bit types run our kernels (their __half / __nv_bfloat16 instantiations), not built-ins."""
    from helpers import kernel_launches

    from minitorch_gpu.backends import get_backend
    if device == "cpu":
        pytest.skip("the CUDA kernels")
    tname = {"float16": "__half", "bfloat16": "__nv_bfloat16"}[dtype]
    x = mt.randn(8, 64, device=device).to(_low(dtype))
    calls = kernel_launches(monkeypatch, get_backend(device))
    x.exp()
    x + x
    x[:, ::2] * x[:, 1::2]
    mt.where(x > x.flip(0), x, 0.0)
    import minitorch_gpu.nn.functional as F
    w = mt.ones(64, device=device).to(_low(dtype)).requires_grad_()
    xg = x.detach().requires_grad_()
    loss = F.cross_entropy(F.layer_norm(xg.softmax(-1), (64,), w), mt.zeros(8, dtype=mt.int64, device=device))
    loss.backward()
    launched = {k for _, k in calls}
    for kernel in ("unary_forward", "binary_forward", "binary_strided_forward", "compare_forward", "where_forward",
                   "softmax_forward_v1", "softmax_backward_v1", "layernorm_forward_v1", "layernorm_backward_v1",
                   "layernorm_backward_params", "cross_entropy_forward_v1", "cross_entropy_scale"):
        assert f"{kernel}<{tname}>" in launched, (kernel, launched)



@pytest.mark.parametrize("dtype", LOW)
def test_step_kernels_serve_the_low_types(device, monkeypatch, dtype):
    """Random numbers, dropout, embedding backward, the multi-tensor kernels (optimizer step, norms, clipping),
    attention and the recurrent cells run their 16-bit instantiations on CUDA, not built-ins."""
    from helpers import kernel_launches

    import minitorch_gpu.nn.functional as F
    from minitorch_gpu.backends import get_backend
    if device == "cpu":
        pytest.skip("the CUDA kernels")
    tname = {"float16": "__half", "bfloat16": "__nv_bfloat16"}[dtype]
    low = _low(dtype)
    calls = kernel_launches(monkeypatch, get_backend(device))
    mt.rand(40, dtype=low, device=device)
    mt.randn(40, dtype=low, device=device)
    emb = mt.nn.Embedding(300, 8).to(device=device, dtype=low)  # past the one-hot product of small tables
    lstm = mt.nn.LSTMCell(8, 8).to(device=device, dtype=low)
    params = list(emb.parameters()) + list(lstm.parameters())
    opt = mt.optim.AdamW(params, fused=True)
    x = emb(mt.tensor([[1, 2, 2], [3, 1, 0]], device=device))
    x = F.dropout(x, 0.2, training=True)
    q = x.reshape(2, 1, 3, 8)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.1, is_causal=True)
    h, c = lstm(a.reshape(6, 8))
    (h.float().sum() + c.float().sum()).backward()
    mt.nn.utils.clip_grad_norm_(params, 0.5)
    opt.step()
    launched = {k for _, k in calls}
    for kernel in ("uniform_forward", "normal_forward", "dropout_forward", "embedding_backward_sorted",
                   "attention_forward_d32", "attention_backward_prep", "attention_backward_dkv_d32",
                   "attention_backward_dq_d32", "lstm_cell_forward", "lstm_cell_backward", "multi_norm_partial",
                   "multi_norm_finish", "multi_clip_scale", "adam_step"):
        assert f"{kernel}<{tname}>" in launched, (kernel, sorted(launched))

# ====================================================================== optimizers, norms and clipping
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("name,kw", [("AdamW", dict(lr=1e-2, weight_decay=0.1)), ("Adam", dict(lr=1e-2, amsgrad=True)),
                                     ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True))])
def test_fused_optimizers_on_low_params(device, torch, dtype, name, kw):
    """Parameters, gradients and state in the 16-bit type (PyTorch's fused optimizers keep the state in the
    parameter's dtype), the update computed in float32 and rounded once per stored value."""
    shapes = [(37,), (5, 9), (260,)]
    ps = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    ours = [_pair(torch, p, dtype, device, requires_grad=True) for p in ps]
    m_opt = getattr(mt.optim, name)([m for m, _ in ours], fused=True, **kw)
    # NOTE: PyTorch 2.13's CPU fused SGD skips the first momentum step of the vectorised part of a 16-bit tensor
    # (a 37-element float16 parameter keeps its first 32 values); its per-tensor SGD is the reference there
    t_opt = getattr(torch.optim, name)([t for _, t in ours], fused=name != "SGD", **kw)
    for _ in range(3):
        for m, t in ours:
            g = RNG.standard_normal(tuple(t.shape)).astype(np.float32)
            m.grad, t.grad = _pair(torch, g, dtype, device)
        m_opt.step()
        t_opt.step()
    for m, t in ours:
        assert m.dtype is _low(dtype)
        _same(m.detach(), t.detach(), dtype, rtol=2.0, atol=4 * EPS[dtype])
    for key, v in t_opt.state[ours[0][1]].items():
        if key != "step":
            assert m_opt.state[ours[0][0]][key].dtype is _low(dtype), key


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_of_low_gradients(device, torch, dtype, norm_type):
    shapes = [(40,), (3, 11), (300,)]
    ours, theirs = [], []
    for s in shapes:
        m, t = _pair(torch, RNG.standard_normal(s).astype(np.float32), dtype, device, requires_grad=True)
        m.grad, t.grad = _pair(torch, RNG.standard_normal(s).astype(np.float32) * 3, dtype, device)
        ours.append(m)
        theirs.append(t)
    total = mt.nn.utils.clip_grad_norm_(ours, 1.0, norm_type)
    want = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
    _same(total, want, dtype, rtol=4.0)
    for m, t in zip(ours, theirs):
        _same(m.grad, t.grad, dtype, rtol=4.0, atol=4 * EPS[dtype])
    norms = mt._foreach_norm([m.grad for m in ours], norm_type)
    for n, t in zip(norms, torch._foreach_norm([t.grad for t in theirs], norm_type)):
        _same(n, t, dtype, rtol=2.0)


# ====================================================================== recurrent layers
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers(device, torch, dtype, kind):
    """nn.LSTM / nn.GRU with 16-bit weights and inputs (the cells' pointwise step in float32 on CUDA, rounded once
    per stored value; PyTorch's CPU rounds after every op), forward and gradients."""
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(6, 8, batch_first=True).to(getattr(torch, dtype))
    ours = getattr(mt.nn, kind)(6, 8, batch_first=True).to(_low(dtype)).to(device)
    with mt.no_grad():
        for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            p.copy_(mt.tensor(q.detach().float().numpy(), dtype=_low(dtype), device=device))
    x = RNG.standard_normal((3, 5, 6)).astype(np.float32)
    mx, tx = _pair(torch, x, dtype, device, requires_grad=True)
    out, _ = ours(mx)
    want, _ = theirs(tx)
    _same(out, want, dtype, rtol=8.0, atol=8 * EPS[dtype])
    out.float().sum().backward()
    want.float().sum().backward()
    _same(mx.grad, tx.grad, dtype, rtol=16.0, atol=16 * EPS[dtype])


# ====================================================================== attention
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_attention(device, torch, dtype, causal):
    """16-bit q, k, v (the fused kernels on CUDA compute in float32 and round the output and the gradients once)."""
    import minitorch_gpu.nn.functional as F
    shapes = [(2, 3, 19, 16), (2, 3, 23, 16), (2, 3, 23, 24)]
    pairs = [_pair(torch, RNG.standard_normal(s).astype(np.float32), dtype, device, requires_grad=True)
             for s in shapes]
    if causal:  # PyTorch's causal mask is top-left aligned: square scores
        pairs = [_pair(torch, RNG.standard_normal((2, 3, 19, s[-1])).astype(np.float32), dtype, device,
                       requires_grad=True) for s in shapes]
    ours = F.scaled_dot_product_attention(*(m for m, _ in pairs), is_causal=causal)
    theirs = torch.nn.functional.scaled_dot_product_attention(*(t for _, t in pairs), is_causal=causal)
    _same(ours, theirs, dtype, rtol=4.0, atol=4 * EPS[dtype])
    g = RNG.standard_normal(tuple(theirs.shape)).astype(np.float32)
    (ours.float() * mt.tensor(g, device=device)).sum().backward()
    (theirs.float() * torch.tensor(g)).sum().backward()
    for m, t in pairs:
        _same(m.grad, t.grad, dtype, rtol=8.0, atol=8 * EPS[dtype] * max(1.0, float(t.grad.abs().max().float())))
