"""Matrix products and einsum: values against NumPy and PyTorch for every rank combination, dtypes,
gradients against PyTorch and by finite differences (gradcheck / gradgradcheck on float64), error types
and messages, ``out=`` and in-place forms."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype)


def _t(a, device, requires_grad=False):
    return mt.tensor(a, device=device, requires_grad=requires_grad)


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


def _raises_like(torch, ours_fn, torch_fn):
    """Both raise; same exception type and the same message (modulo the library name)."""
    with pytest.raises(Exception) as t_err:
        torch_fn()
    with pytest.raises(Exception) as m_err:
        ours_fn()
    assert type(m_err.value) is type(t_err.value), (m_err.value, t_err.value)
    expected = str(t_err.value).replace("torch.", "minitorch_gpu.")
    assert str(m_err.value) == expected
    return m_err.value


# every rank combination torch.matmul accepts, with broadcasting batch dims
MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 4)), ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((1, 2, 3), (6, 3, 4)),
    ((2, 1, 2, 3), (1, 3, 3, 2)), ((4, 2, 3), (1, 3, 2)), ((0, 3), (3, 4)), ((2, 0), (0, 4)), ((0,), (0,)),
    ((2, 3, 4, 5), (2, 3, 5, 2)),
]


# ---------------------------------------------------------------------- matmul values and dtypes

@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_matmul_matches_numpy(device, sa, sb, dtype):
    a = (_arr(*sa) * 5).astype(dtype)
    b = (_arr(*sb) * 5).astype(dtype)
    r = mt.matmul(_t(a, device), _t(b, device))
    expected = np.matmul(a, b)
    assert r.dtype is mt.tensor(expected).dtype
    assert tuple(r.shape) == expected.shape
    assert_close(r, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)
    r2 = _t(a, device) @ _t(b, device)
    assert_close(r2, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_forward_and_grads_match_torch(device, torch, sa, sb):
    a, b = _arr(*sa), _arr(*sb)
    x, y = _t(a, device, True), _t(b, device, True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    r, tr = x @ y, tx @ ty
    assert tuple(r.shape) == tuple(tr.shape)
    assert_close(r, tr.detach().numpy(), rtol=1e-10)
    g = _arr(*tr.shape)
    r.backward(_t(g, device))
    tr.backward(torch.tensor(g))
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert_close(y.grad, ty.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sa,sb", [s for s in MATMUL_SHAPES if 0 not in s[0] + s[1]])
def test_matmul_gradcheck(device, sa, sb):
    x, y = _t(_arr(*sa), device, True), _t(_arr(*sb), device, True)
    assert gradcheck(mt.matmul, (x, y))


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)),
                                   ((2, 2, 3), (3, 2)), ((2, 3), (2, 3, 2)), ((2, 1, 2, 3), (3, 3, 2))])
def test_matmul_gradgradcheck(device, sa, sb):
    x, y = _t(_arr(*sa), device, True), _t(_arr(*sb), device, True)
    assert gradgradcheck(mt.matmul, (x, y))


def test_matmul_float32_stays_float32_and_grads_too(device):
    x = _t(_arr(4, 2, 3, dtype=np.float32), device, True)
    w = _t(_arr(3, 5, dtype=np.float32), device, True)
    r = x @ w
    assert r.dtype is mt.float32
    r.sum().backward()
    assert x.grad.dtype is mt.float32 and w.grad.dtype is mt.float32
    assert_close(w.grad, to_np(x).reshape(-1, 3).T @ np.ones((8, 5), np.float32), rtol=1e-5)


def test_matmul_non_contiguous_operands(device, torch):
    a, b = _arr(4, 3), _arr(5, 4)
    x, y = _t(a, device, True), _t(b, device, True)
    xt = x.reshape(4, 3).expand(2, 4, 3)  # a broadcast (zero-stride) operand
    r = xt @ y.reshape(5, 4)[1:4].reshape(3, 4)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    tr = tx.expand(2, 4, 3) @ ty[1:4]
    assert_close(r, tr.detach().numpy(), rtol=1e-10)
    r.sum().backward()
    tr.sum().backward()
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-10)
    assert_close(y.grad, ty.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_matmul_half_precision(device, torch, name):
    if name == "bfloat16" and device != "cpu":
        pytest.skip("bfloat16 arrays exist only on the CPU backend")
    a, b = _arr(3, 8), _arr(8, 2)
    r = mt.matmul(_t(a, device).to(getattr(mt, name)), _t(b, device).to(getattr(mt, name)))
    tr = torch.matmul(torch.tensor(a).to(getattr(torch, name)), torch.tensor(b).to(getattr(torch, name)))
    assert r.dtype is getattr(mt, name)
    np.testing.assert_allclose(to_np(r.double()), tr.double().numpy(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_half_linear_forward_and_backward_match_torch(device, torch, name):
    # the three products of a linear layer (x @ W.T + b, g @ W, g.T @ x) on odd sizes, a sliced batch and a
    # transposed weight, against PyTorch in float32 on the same 16-bit inputs, rounded once: float32 accumulation
    # and the bias added before the rounding, as PyTorch's CUDA GEMMs do (its CPU rounds x @ W.T before adding b).
    # On CUDA these are the tensor-core kernels (matmul_tc.cu); the sums' order differs, so 1 ulp apart at most
    dt = getattr(mt, name)
    try:
        mt.zeros(1, device=device, dtype=dt)
    except TypeError as e:
        pytest.skip(str(e))
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 41, 70)).astype(np.float32)
    w = rng.standard_normal((45, 70)).astype(np.float32) / 8
    b = rng.standard_normal(45).astype(np.float32)
    g = rng.standard_normal((3, 41, 45)).astype(np.float32)
    tol = dict(rtol=2.0 ** -9, atol=1e-5) if name == "float16" else dict(rtol=2.0 ** -6, atol=1e-5)

    def run(lib, tensor, dtype, compute):
        xt = tensor(x).to(dtype).to(compute)[:, 1:].requires_grad_()  # a view 70 elements in: odd batch offsets
        wt = tensor(w).to(dtype).to(compute).requires_grad_()
        bt = tensor(b).to(dtype).to(compute).requires_grad_()
        y = lib.nn.functional.linear(xt, wt, bt)
        y.backward(tensor(g[:, 1:]).to(dtype).to(compute))
        z = xt @ wt.t().contiguous()  # the same product with W stored transposed
        return y, z, xt.grad, wt.grad, bt.grad

    ours = run(mt, lambda a: mt.tensor(a, device=device), dt, dt)
    theirs = run(torch, torch.tensor, getattr(torch, name), torch.float32)
    for o, t in zip(ours, theirs):
        assert o.dtype is dt
        assert_close(o.float(), t.to(getattr(torch, name)).float(), **tol)


def test_integer_matmul_wraps_like_torch(device, torch):
    a = np.full((2, 3), 200, np.uint8)
    b = np.ones((3, 2), np.uint8)
    r = _t(a, device) @ _t(b, device)
    tr = torch.tensor(a) @ torch.tensor(b)
    assert r.dtype is mt.uint8
    np.testing.assert_array_equal(to_np(r), tr.numpy())


@settings(max_examples=40, deadline=None)
@given(batch_a=st.lists(st.integers(1, 3), max_size=2), batch_b=st.lists(st.integers(1, 3), max_size=2),
       n=st.integers(1, 4), k=st.integers(1, 4), m=st.integers(1, 4),
       vec_a=st.booleans(), vec_b=st.booleans(), ones=st.lists(st.booleans(), min_size=2, max_size=2))
def test_matmul_broadcasting_property(batch_a, batch_b, n, k, m, vec_a, vec_b, ones):
    # make the shorter batch broadcast against the longer one
    lb = max(len(batch_a), len(batch_b))
    full = [max(x, y) for x, y in zip([1] * (lb - len(batch_a)) + batch_a, [1] * (lb - len(batch_b)) + batch_b)]
    ba = [1 if ones[0] and i == 0 else s for i, s in enumerate(full[lb - len(batch_a):])]
    bb = [1 if ones[1] and i == 0 else s for i, s in enumerate(full[lb - len(batch_b):])]
    sa = (k,) if vec_a else tuple(ba) + (n, k)
    sb = (k,) if vec_b else tuple(bb) + (k, m)
    a, b = _arr(*sa), _arr(*sb)
    x, y = mt.tensor(a, requires_grad=True), mt.tensor(b, requires_grad=True)
    r = x @ y
    assert_close(r, np.matmul(a, b), rtol=1e-10)
    r.sum().backward()
    # expected gradients of sum(a @ b): with vectors promoted to matrices, ga = G @ b^T, gb = a^T @ G
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    G = np.ones(np.matmul(a2, b2).shape)
    ga = _sum_to(G @ np.swapaxes(b2, -1, -2), a2.shape).reshape(a.shape)
    gb = _sum_to(np.swapaxes(a2, -1, -2) @ G, b2.shape).reshape(b.shape)
    assert_close(x.grad, ga, rtol=1e-10)
    assert_close(y.grad, gb, rtol=1e-10)


def _sum_to(g, shape):
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


# ---------------------------------------------------------------------- mm, bmm, mv, dot, outer, inner

PRODUCTS = [
    ("mm", (2, 3), (3, 4)), ("bmm", (5, 2, 3), (5, 3, 4)), ("mv", (2, 3), (3,)), ("dot", (3,), (3,)),
    ("vdot", (4,), (4,)), ("outer", (3,), (4,)), ("ger", (2,), (5,)), ("inner", (2, 3), (4, 3)),
    ("inner", (3,), (3,)), ("inner", (2, 2, 3), (3,)),
]


@pytest.mark.parametrize("name,sa,sb", PRODUCTS)
def test_products_match_torch(device, torch, name, sa, sb):
    a, b = _arr(*sa), _arr(*sb)
    x, y = _t(a, device, True), _t(b, device, True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    r = getattr(mt, name)(x, y)
    tr = getattr(torch, name)(tx, ty)
    assert tuple(r.shape) == tuple(tr.shape) and r.dtype is mt.float64
    assert_close(r, tr.detach().numpy(), rtol=1e-10)
    assert_close(getattr(x, name)(y), tr.detach().numpy(), rtol=1e-10)
    g = _arr(*tr.shape)
    r.backward(_t(g, device))
    tr.backward(torch.tensor(g))
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-10)
    assert_close(y.grad, ty.grad.numpy(), rtol=1e-10)
    assert gradcheck(getattr(mt, name), (_t(a, device, True), _t(b, device, True)))


@pytest.mark.parametrize("name,sa,sb", [p for p in PRODUCTS if p[0] in ("mm", "bmm", "mv", "dot")])
def test_products_gradgradcheck(device, name, sa, sb):
    assert gradgradcheck(getattr(mt, name), (_t(_arr(*sa), device, True), _t(_arr(*sb), device, True)))


@pytest.mark.parametrize("fn,sa,sb", [
    ("mm", (2, 3), (3, 4)), ("bmm", (2, 2, 3), (2, 3, 4)), ("mv", (2, 3), (3,)), ("dot", (3,), (3,)),
    ("matmul", (3,), (3, 2)), ("matmul", (2, 3), (3,)), ("matmul", (2, 2, 3), (2, 3, 4)),
    ("matmul", (2, 3), (3, 4))])
def test_grad_fn_names_match_torch(device, torch, fn, sa, sb):
    r = getattr(mt, fn)(_t(_arr(*sa), device, True), _t(_arr(*sb), device, True))
    tr = getattr(torch, fn)(torch.tensor(_arr(*sa), requires_grad=True), torch.tensor(_arr(*sb), requires_grad=True))
    if fn == "matmul" and sa == (3,):
        assert r.grad_fn.name() == "MvBackward0"  # PyTorch computes it through an unsqueezed mm
    else:
        assert r.grad_fn.name() == tr.grad_fn.name()


def test_outer_promotes_like_mul(device, torch):
    a = np.arange(3)
    b = np.array([True, False])
    r = mt.outer(_t(a, device), _t(b, device))
    tr = torch.outer(torch.tensor(a), torch.tensor(b))
    assert _dtype_name(r.dtype) == _dtype_name(tr.dtype)
    np.testing.assert_array_equal(to_np(r), tr.numpy())
    assert mt.outer(_t(a, device), _t(_arr(2, dtype=np.float32), device)).dtype is mt.float32


def test_inner_with_scalar(device):
    x = _t(_arr(2, 3), device)
    s = _t(np.array(2.0), device)
    assert_close(mt.inner(s, x), 2 * to_np(x))


def test_saved_operand_modified_in_place_is_detected(device):
    x = _t(_arr(2, 3), device, True)
    w = _t(_arr(3, 4), device)
    r = x @ w
    w.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        r.sum().backward()


# ---------------------------------------------------------------------- addmm / baddbmm

@pytest.mark.parametrize("in_shape", [(2, 4), (4,), (1, 4), (2, 1), ()])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1.5)])
def test_addmm_matches_torch(device, torch, in_shape, beta, alpha):
    i, a, b = _arr(*in_shape), _arr(2, 3), _arr(3, 4)
    ours = [_t(v, device, True) for v in (i, a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (i, a, b)]
    r = mt.addmm(*ours, beta=beta, alpha=alpha)
    tr = torch.addmm(*theirs, beta=beta, alpha=alpha)
    assert r.grad_fn.name() == "AddmmBackward0"
    assert_close(r, tr.detach().numpy(), rtol=1e-10)
    g = _arr(2, 4)
    r.backward(_t(g, device))
    tr.backward(torch.tensor(g))
    for o, t in zip(ours, theirs):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert gradcheck(lambda *v: mt.addmm(*v, beta=beta, alpha=alpha), [_t(v, device, True) for v in (i, a, b)])


def test_addmm_gradgradcheck(device):
    assert gradgradcheck(lambda i, a, b: mt.addmm(i, a, b, beta=0.5, alpha=2),
                         [_t(_arr(*s), device, True) for s in ((4,), (2, 3), (3, 4))])


def test_addmm_beta_zero_ignores_nan(device):
    i = _t(np.full((2, 2), np.nan), device)
    r = mt.addmm(i, _t(np.ones((2, 3)), device), _t(np.ones((3, 2)), device), beta=0)
    np.testing.assert_array_equal(to_np(r), np.full((2, 2), 3.0))


def test_addmm_integer_scalars_truncate_like_torch(device, torch):
    args = [np.ones((2, 2), np.int64), np.ones((2, 3), np.int64), np.ones((3, 2), np.int64)]
    r = mt.addmm(*[_t(v, device) for v in args], beta=0.5, alpha=1.7)
    tr = torch.addmm(*[torch.tensor(v) for v in args], beta=0.5, alpha=1.7)
    assert r.dtype is mt.int64
    np.testing.assert_array_equal(to_np(r), tr.numpy())


def test_addmm_inplace(device, torch):
    i, a, b = _arr(2, 4), _arr(2, 3), _arr(3, 4)
    x = _t(i, device)
    out = x.addmm_(_t(a, device), _t(b, device), beta=2, alpha=0.5)
    assert out is x
    assert_close(x, torch.tensor(i).addmm_(torch.tensor(a), torch.tensor(b), beta=2, alpha=0.5).numpy(), rtol=1e-10)
    # through autograd: the in-place result's history is an addmm
    leaf = _t(i, device, True)
    y = leaf * 1
    y.addmm_(_t(a, device), _t(b, device))
    assert y.grad_fn.name() == "AddmmBackward0"
    y.sum().backward()
    assert_close(leaf.grad, np.ones((2, 4)))


def test_addmm_inplace_failure_leaves_self_unchanged(device):
    i = _arr(2, 4)
    x = _t(i, device)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        x.addmm_(_t(_arr(2, 3), device), _t(_arr(4, 4), device))
    np.testing.assert_array_equal(to_np(x), i)
    assert x._version == 0


@pytest.mark.parametrize("in_shape", [(5, 2, 4), (2, 4), (4,), (5, 1, 4)])
def test_baddbmm_matches_torch(device, torch, in_shape):
    i, a, b = _arr(*in_shape), _arr(5, 2, 3), _arr(5, 3, 4)
    ours = [_t(v, device, True) for v in (i, a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (i, a, b)]
    r = mt.baddbmm(*ours, beta=0.5, alpha=2)
    tr = torch.baddbmm(*theirs, beta=0.5, alpha=2)
    assert r.grad_fn.name() == "BaddbmmBackward0"
    assert_close(r, tr.detach().numpy(), rtol=1e-10)
    r.sum().backward()
    tr.sum().backward()
    for o, t in zip(ours, theirs):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-10)
    x = _t(np.zeros((5, 2, 4)), device)
    assert x.baddbmm_(_t(a, device), _t(b, device)) is x
    assert_close(x, np.matmul(a, b), rtol=1e-10)


# ---------------------------------------------------------------------- errors (type and message as torch)

def _err_case(torch, device, fn, shapes, dtypes=None, grad=False, **kw):
    dtypes = dtypes or ["float32"] * len(shapes)
    ours = [mt.zeros(s, dtype=getattr(mt, d), device=device, requires_grad=grad and d.startswith("float"))
            for s, d in zip(shapes, dtypes)]
    theirs = [torch.zeros(s, dtype=getattr(torch, d), requires_grad=grad and d.startswith("float"))
              for s, d in zip(shapes, dtypes)]
    return _raises_like(torch, lambda: getattr(mt, fn)(*ours, **kw), lambda: getattr(torch, fn)(*theirs, **kw))


ERROR_CASES = [
    ("matmul", [(2, 3), (4, 5)]), ("matmul", [(3,), (4,)]), ("matmul", [(2, 3), (4,)]), ("matmul", [(4,), (2, 3)]),
    ("matmul", [(5, 2, 3), (4, 5)]), ("matmul", [(2, 3), (5, 4, 5)]), ("matmul", [(5, 2, 3), (5, 4, 5)]),
    ("matmul", [(5, 2, 3), (5,)]), ("matmul", [(3,), (5, 4, 5)]), ("matmul", [(), (3,)]), ("matmul", [(3,), ()]),
    ("matmul", [(5, 2, 3), (7, 5, 4, 5)]),
    ("matmul", [(3,), (3,)], ["float32", "float64"]), ("matmul", [(2, 3), (3, 4)], ["float32", "float64"]),
    ("matmul", [(2, 3), (3,)], ["float32", "float64"]), ("matmul", [(2, 3), (3,)], ["float64", "float32"]),
    ("matmul", [(5, 2, 3), (5, 3, 2)], ["float32", "float64"]), ("matmul", [(2, 3), (5, 3, 2)], ["float32", "float64"]),
    ("matmul", [(2, 3), (3, 4)], ["int32", "int64"]), ("matmul", [(3,), (3,)], ["int16", "int8"]),
    ("matmul", [(2, 3), (3, 4)], ["bool", "bool"]), ("matmul", [(3,), (3,)], ["bool", "bool"]),
    ("matmul", [(2, 3), (3,)], ["bool", "bool"]), ("matmul", [(2, 2, 3), (2, 3, 3)], ["bool", "bool"]),
    ("mm", [(2, 3), (4, 5)]), ("mm", [(2, 3), (3,)]), ("mm", [(3,), (3, 2)]), ("mm", [(2, 2, 3), (3, 2)]),
    ("mm", [(2, 3), (3, 2)], ["float32", "float64"]), ("mm", [(2, 3), (3, 2)], ["uint8", "int8"]),
    ("bmm", [(2, 2, 3), (3, 3, 4)]), ("bmm", [(2, 2, 3), (2, 4, 4)]), ("bmm", [(2, 3), (2, 3, 4)]),
    ("bmm", [(2, 2, 3), (3, 4)]), ("bmm", [(2, 2, 3), (2, 3, 4)], ["float32", "float64"]),
    ("mv", [(2, 3), (4,)]), ("mv", [(3,), (3,)]), ("mv", [(2, 3), (3, 1)]),
    ("mv", [(2, 3), (3,)], ["float64", "float32"]),
    ("dot", [(3,), (4,)]), ("dot", [(3, 1), (3,)]), ("dot", [(3,), (3,)], ["float16", "float32"]),
    ("vdot", [(3,), (3,)], ["float32", "float64"]),
    ("outer", [(3, 1), (4,)]), ("outer", [(3,), (4, 1)]),
    ("inner", [(2, 3), (4, 2)]),
    ("addmm", [(3,), (2, 3), (3, 4)]), ("addmm", [(2, 4), (2, 3), (5, 4)]), ("addmm", [(2, 2, 2), (2, 3), (3, 2)]),
    ("addmm", [(3, 1), (2, 3), (3, 4)]), ("addmm", [(2, 2), (2,), (3, 2)]), ("addmm", [(2, 2), (2, 3), (3,)]),
    ("addmm", [(2, 4), (2, 3), (3, 4)], ["float32", "float32", "float64"]),
    ("addmm", [(2, 4), (2, 3), (3, 4)], ["float64", "float32", "float32"]),
    ("addmm", [(2, 4), (2, 3), (3, 4)], ["float32", "float64", "float32"]),
    ("baddbmm", [(5, 2, 4), (5, 2, 3), (6, 3, 4)]), ("baddbmm", [(3, 4), (5, 2, 3), (5, 3, 4)]),
    ("baddbmm", [(2, 4), (5, 2, 3), (5, 3, 4)], ["float64", "float32", "float32"]),
    ("baddbmm", [(2, 4), (5, 2, 3), (5, 3, 4)], ["float32", "float32", "float64"]),
]


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2] if len(c) > 2 else ''}")
def test_errors_match_torch(device, torch, case, grad):
    # with requires_grad PyTorch picks other kernels for some >2-D products, which changes its messages
    fn, shapes, *dt = case
    _err_case(torch, device, fn, shapes, dt[0] if dt else None, grad=grad)


@pytest.mark.parametrize("sa,sb", [((5, 2, 3), (4, 5)), ((5, 2, 3), (4,)), ((5, 2, 3), (4, 5, 4))])
def test_errors_match_torch_non_contiguous(device, torch, sa, sb):
    # a batch that cannot be flattened without a copy is not folded by PyTorch
    a = mt.zeros((1,) + sa[1:], device=device).expand(*sa)
    ta = torch.zeros((1,) + sa[1:]).expand(*sa)
    _raises_like(torch, lambda: mt.matmul(a, mt.zeros(sb, device=device)),
                 lambda: torch.matmul(ta, torch.zeros(sb)))


def test_shape_errors_name_both_shapes(device):
    with pytest.raises(RuntimeError, match=r"\(2x3 and 4x5\)"):
        mt.mm(mt.zeros(2, 3, device=device), mt.zeros(4, 5, device=device))
    with pytest.raises(RuntimeError, match=r"\[5, 3\] but got: \[5, 4\]"):
        mt.zeros(5, 2, 3, device=device) @ mt.zeros(5, 4, 5, device=device)


def test_non_tensor_operands(device):
    x = mt.zeros(2, 3, device=device)
    with pytest.raises(TypeError, match="unsupported operand"):
        x @ 3
    with pytest.raises(TypeError, match="unsupported operand"):
        3 @ x
    with pytest.raises(TypeError, match=r"matmul\(\): argument 'other' \(position 2\) must be Tensor, not int"):
        mt.matmul(x, 3)
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        mt.mm(x, [[1.0]])


def test_rmatmul(device):
    a, b = _arr(2, 3), _arr(3, 2)
    x, y = _t(a, device), _t(b, device)
    assert_close(y.__rmatmul__(x), a @ b)
    assert y.__rmatmul__(3) is NotImplemented


# ---------------------------------------------------------------------- out=

def test_out_argument(device, torch):
    a, b = _arr(2, 3), _arr(3, 4)
    out = mt.empty(2, 4, dtype=mt.float64, device=device)
    r = mt.matmul(_t(a, device), _t(b, device), out=out)
    assert r is out
    assert_close(out, a @ b)
    empty = mt.empty(0, dtype=mt.float64, device=device)
    mt.mm(_t(a, device), _t(b, device), out=empty)
    assert tuple(empty.shape) == (2, 4)
    assert_close(empty, a @ b)
    bad = mt.zeros(2, 4, device=device)
    _raises_like(torch, lambda: mt.matmul(_t(a, device), _t(b, device), out=bad),
                 lambda: torch.matmul(torch.tensor(a), torch.tensor(b), out=torch.zeros(2, 4)))
    np.testing.assert_array_equal(to_np(bad), np.zeros((2, 4), np.float32))
    _raises_like(torch, lambda: mt.matmul(_t(a, device, True), _t(b, device), out=out),
                 lambda: torch.matmul(torch.tensor(a, requires_grad=True), torch.tensor(b),
                                      out=torch.empty(2, 4, dtype=torch.float64)))


# ---------------------------------------------------------------------- einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ij->j", [(2, 3)]),
    ("i,j->ij", [(3,), (4,)]), ("i,i->", [(3,), (3,)]), ("i,i", [(3,), (3,)]), ("iij->ij", [(2, 2, 3)]),
    ("iii->i", [(2, 2, 2)]), ("bii->bi", [(4, 2, 2)]), ("ij,ij->ij", [(1, 3), (2, 3)]), ("ij,jk->ik", [(2, 3), (1, 4)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]), ("...ij,...jk", [(5, 2, 3), (7, 1, 3, 4)]), ("...ij->ij", [(5, 2, 3)]),
    ("...ij->...", [(5, 2, 3)]), ("b...a", [(2, 3, 4)]), ("ba", [(2, 3)]), ("Ba", [(2, 3)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ijk,ik->j", [(2, 3, 4), (2, 1)]), ("i,i->i", [(3,), (1,)]), ("ij,ij->", [(3, 1), (1, 3)]),
    ("ij,j->i", [(3, 4), (1,)]), ("ii,i->i", [(3, 3), (3,)]), ("ij,kl->ijkl", [(2, 1), (1, 3)]),
    ("abc,cba->b", [(2, 3, 4), (4, 3, 2)]), ("ij,jk->ik", [(0, 3), (3, 4)]), ("ij,jk->ik", [(2, 0), (0, 4)]),
    ("->", [()]), ("i->", [(3,)]), ("...->...", [(2, 3)]),
]


def _torch_einsum_ref(torch, eq, arrays):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ts, torch.einsum(eq, *ts)


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum_matches_torch(device, torch, eq, shapes):
    arrays = [_arr(*s) for s in shapes]
    ours = [_t(a, device, True) for a in arrays]
    r = mt.einsum(eq, *ours)
    theirs, tr = _torch_einsum_ref(torch, eq, arrays)
    assert tuple(r.shape) == tuple(tr.shape)
    assert_close(r, tr.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = _arr(*tr.shape)
    if r.requires_grad:
        r.backward(_t(g, device))
        tr.backward(torch.tensor(g))
        for o, t in zip(ours, theirs):
            assert_close(o.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("eq,shapes", [c for c in EINSUM_CASES if all(0 not in s for s in c[1])])
def test_einsum_gradcheck(device, eq, shapes):
    assert gradcheck(lambda *ts: mt.einsum(eq, *ts), [_t(_arr(*s), device, True) for s in shapes])


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(2, 3), (3, 2)]), ("ii->i", [(3, 3)]), ("ij->", [(2, 2)]),
                                       ("i,j->ij", [(2,), (3,)]), ("ij,ij->ij", [(1, 3), (2, 3)]),
                                       ("...ij,...jk", [(2, 2, 3), (3, 2)]), ("iij->ij", [(2, 2, 2)])])
def test_einsum_gradgradcheck(device, eq, shapes):
    assert gradgradcheck(lambda *ts: mt.einsum(eq, *ts), [_t(_arr(*s), device, True) for s in shapes])


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(40, 30), (30, 40)]),
                                       ("bhqd,bhkd->bhqk", [(2, 4, 16, 32), (2, 4, 16, 32)]),
                                       ("ij,jk,kl->il", [(20, 30), (30, 40), (40, 5)]),
                                       ("abc,cba->b", [(16, 50, 50), (50, 50, 16)]),
                                       ("iij,jk->ik", [(40, 40, 30), (30, 40)]),
                                       ("ij,ij->j", [(1, 300), (120, 300)]),
                                       ("ij,jk->ik", [(40, 30), (1, 40)]),
                                       ("ijk,k->ij", [(30, 40, 50), (1,)])])
def test_einsum_blas_path(device, torch, eq, shapes):
    """Large contractions run as batched matrix products, small ones in NumPy's C loop: same values and
    gradients."""
    from minitorch_gpu.backends._linalg import LinalgMixin, _einsum_is_small
    arrays = [_arr(*s) for s in shapes]
    explicit = eq  # all cases are explicit letters-only equations, as the backend receives them
    assert not _einsum_is_small(explicit, tuple(shapes), LinalgMixin._EINSUM_DIRECT_MAX)
    ours = [_t(a, device, True) for a in arrays]
    r = mt.einsum(eq, *ours)
    assert_close(r, np.einsum(eq, *arrays), rtol=1e-10, atol=1e-10)
    theirs, tr = _torch_einsum_ref(torch, eq, arrays)
    r.sum().backward()
    tr.sum().backward()
    for o, t in zip(ours, theirs):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-10, atol=1e-10)
    r32 = mt.einsum(eq, *[_t(a.astype(np.float32), device) for a in arrays])
    assert r32.dtype is mt.float32
    assert_close(r32, np.einsum(eq, *arrays), rtol=1e-4, atol=1e-3)


def test_einsum_result_owns_its_memory(device):
    x = _t(_arr(3, 3), device)
    before = to_np(x).copy()
    for eq in ("ij->ji", "ii->i", "ij->ij"):
        r = mt.einsum(eq, x)
        r.mul_(0)
        np.testing.assert_array_equal(to_np(x), before)


def test_einsum_operand_forms(device, torch):
    a, b = _arr(2, 3), _arr(3, 4)
    x, y = _t(a, device), _t(b, device)
    assert_close(mt.einsum("ij,jk->ik", [x, y]), a @ b)
    assert_close(mt.einsum("ij,jk->ik", (x, y)), a @ b)
    assert_close(mt.einsum(x, [0, 1], y, [1, 2], [0, 2]), a @ b)
    for sub in ([30, 0], [1, 0], [Ellipsis, 0], [0, 1]):
        r = mt.einsum(x, sub)
        tr = torch.einsum(torch.tensor(a), sub)
        assert_close(r, tr.numpy())


def test_einsum_dtypes(device, torch):
    i64 = np.arange(6).reshape(2, 3)
    r = mt.einsum("ij,jk->ik", _t(i64, device), _t(i64.T.copy(), device))
    assert r.dtype is mt.int64
    np.testing.assert_array_equal(to_np(r), i64 @ i64.T)
    i32 = mt.tensor([1, 2, 3], dtype=mt.int32, device=device)
    assert mt.einsum("i->", i32).dtype is _torch_dtype_as_ours(torch.einsum("i->", torch.tensor([1, 2, 3],
                                                                                              dtype=torch.int32)))
    b = mt.ones(2, 3, dtype=mt.bool, device=device)
    s = mt.einsum("ij->j", b)
    assert s.dtype is mt.int64 and s.tolist() == [2, 2, 2]
    assert mt.einsum("ij->ji", b).dtype is mt.bool
    assert mt.einsum("ij,jk", _t(_arr(2, 3, dtype=np.float32), device),
                     _t(_arr(3, 2, dtype=np.float32), device)).dtype is mt.float32


def _torch_dtype_as_ours(t):
    return getattr(mt, _dtype_name(t.dtype))


EINSUM_ERRORS = [
    ("ii->i", [(3, 4)]), ("ij,jk->ik", [(2, 3), (4, 4)]), ("ij,jk->ik", [(2, 3)]), ("ij->ik", [(2, 3)]),
    ("ij->ii", [(2, 3)]), ("ijk->ij", [(2, 3)]), ("ij->i", [(2, 3, 4)]), ("i0->i", [(2, 3)]),
    ("ij,jk->ik", [(2, 3), (3, 4), (2,)]), ("ij,jk-ik", [(2, 3), (3, 4)]), ("ij,jk->>ik", [(2, 3), (3, 4)]),
    ("i..j->ij", [(2, 3)]), ("...i...->i", [(2, 3)]), ("ij->IJ", [(2, 3)]), ("i,i", [(3,)]), ("i", [(3,), (3,)]),
    ("...ij->...i...", [(2, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_ERRORS)
def test_einsum_errors_match_torch(device, torch, eq, shapes):
    ours = [mt.zeros(*s, device=device) for s in shapes]
    theirs = [torch.zeros(*s) for s in shapes]
    _raises_like(torch, lambda: mt.einsum(eq, *ours), lambda: torch.einsum(eq, *theirs))


def test_einsum_argument_errors(device, torch):
    x = mt.zeros(2, 3, device=device)
    tx = torch.zeros(2, 3)
    _raises_like(torch, lambda: mt.einsum("ij->i"), lambda: torch.einsum("ij->i"))
    _raises_like(torch, lambda: mt.einsum("ij,jk->ik", x, 3), lambda: torch.einsum("ij,jk->ik", tx, 3))
    _raises_like(torch, lambda: mt.einsum(3, x), lambda: torch.einsum(3, tx))
    _raises_like(torch, lambda: mt.einsum(x, [52, 0]), lambda: torch.einsum(tx, [52, 0]))
    _raises_like(torch, lambda: mt.einsum("i,i", mt.zeros(3, device=device), mt.zeros(3, dtype=mt.float64,
                                                                                      device=device)),
                 lambda: torch.einsum("i,i", torch.zeros(3), torch.zeros(3, dtype=torch.float64)))
    _raises_like(torch, lambda: mt.einsum("i,i", mt.ones(3, dtype=mt.bool, device=device),
                                          mt.ones(3, dtype=mt.bool, device=device)),
                 lambda: torch.einsum("i,i", torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool)))
    with pytest.raises(RuntimeError, match="covered by ellipsis in operand 1 has size 2"):
        mt.einsum("...ij,...jk", mt.zeros(5, 2, 3, device=device), mt.zeros(7, 2, 3, 4, device=device))


# ---------------------------------------------------------------------- tensordot

@pytest.mark.parametrize("sa,sb,dims", [((2, 3, 4), (3, 4, 5), 2), ((2, 3, 4), (4, 5), 1),
                                        ((2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])), ((2, 3), (4, 5), 0),
                                        ((2, 3, 4), (4, 3, 5), ([2], [0])), ((3, 4), (4, 3), ((-1, 0), (0, -1)))])
def test_tensordot_matches_torch(device, torch, sa, sb, dims):
    a, b = _arr(*sa), _arr(*sb)
    x, y = _t(a, device, True), _t(b, device, True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    r = mt.tensordot(x, y, dims=dims)
    tr = torch.tensordot(tx, ty, dims=dims)
    assert_close(r, tr.detach().numpy(), rtol=1e-10)
    r.sum().backward()
    tr.sum().backward()
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-10)
    assert_close(y.grad, ty.grad.numpy(), rtol=1e-10)
    dt = mt.tensordot(_t(a, device), _t(b, device), dims=mt.tensor(dims) if isinstance(dims, int) else dims)
    assert_close(dt, tr.detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("sa,sb,dims", [((2, 3, 4), (3, 4, 5), 1), ((2, 3, 4), (4, 3, 5), ([1], [0])),
                                        ((2, 3, 4), (4, 3, 5), -1), ((2, 3, 4), (4, 3, 5), 4),
                                        ((2, 3, 4), (4, 3, 5), ([1], [0, 1]))])
def test_tensordot_errors_match_torch(device, torch, sa, sb, dims):
    _raises_like(torch, lambda: mt.tensordot(mt.zeros(*sa, device=device), mt.zeros(*sb, device=device), dims=dims),
                 lambda: torch.tensordot(torch.zeros(*sa), torch.zeros(*sb), dims=dims))


@pytest.mark.parametrize("sa,sb,transpose", [((2, 3, 4, 5), (5, 6), False), ((3, 4, 5), (3, 5, 6), False),
                                             ((2, 1, 4, 5), (3, 5, 6), False), ((4, 5), (2, 5, 6), False),
                                             ((2, 3, 4, 5), (2, 3, 6, 5), True)])
def test_matmul_backward_on_arrays_equals_the_graph_backward(device, sa, sb, transpose):
    """The plain backward of a product computes on the arrays (sums over broadcast batch dims included); under
    create_graph it records the same products as ops: one result."""
    rng = np.random.default_rng(12)
    a = mt.tensor(rng.standard_normal(sa), device=device, requires_grad=True)
    b = mt.tensor(rng.standard_normal(sb), device=device, requires_grad=True)

    def f():
        return a @ (b.transpose(-2, -1) if transpose else b)
    g = mt.tensor(rng.standard_normal(tuple(f().shape)), device=device)
    plain = mt.autograd.grad(f(), (a, b), g)
    graph = mt.autograd.grad(f(), (a, b), g, create_graph=True)
    for p, q, t in zip(plain, graph, (a, b)):
        assert p.grad_fn is None and p.shape == t.shape
        np.testing.assert_allclose(to_np(p), to_np(q.detach()), rtol=1e-12, atol=1e-12)
