"""Ops of sparse COO tensors against PyTorch, forward and backward: sparse x dense products (``torch.sparse.mm``,
``torch.mm``, ``matmul``, ``@``, both operand orders), transpose, scalar products, sparse sums, ``sparse.sum``,
``sparse.softmax`` / ``log_softmax``; gradients reach the dense operand, the sparse operand (as a sparse tensor
on its coalesced coordinates, as PyTorch's) and the values a sparse tensor was built from."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

RNG = np.random.default_rng(17)
TOL = dict(rtol=1e-10, atol=1e-12)



def _coo(shape, nnz, dup=True):
    """Random coordinates (with duplicates when ``dup``) and float64 values."""
    idx = np.stack([RNG.integers(0, n, nnz) for n in shape])
    if not dup:
        lin = np.unique(np.ravel_multi_index(idx, shape))[:nnz]
        idx = np.stack(np.unravel_index(lin, shape))
    return idx, RNG.standard_normal(idx.shape[1])


def _pair(device, torch, idx, val, shape, requires_grad=False):
    s = mt.sparse_coo_tensor(idx, val, shape, device=device, requires_grad=requires_grad)
    st = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), shape, requires_grad=requires_grad)
    return s, st


def _dense_pair(device, torch, *shape, requires_grad=True):
    a = RNG.standard_normal(shape)
    return (mt.tensor(a, device=device, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def same_grad(ours, theirs):
    """A sparse gradient: sparse like PyTorch's, the same dense tensor (the order of stored entries may differ)."""
    assert ours is not None and theirs is not None
    assert ours.is_sparse == theirs.is_sparse
    assert tuple(ours.shape) == tuple(theirs.shape)
    if ours.is_sparse:
        ours, theirs = ours.to_dense(), theirs.to_dense()
    assert_close(ours, theirs.detach().numpy(), **TOL)


PRODUCTS = {
    "sparse.mm": lambda m, s, d: m.sparse.mm(s, d),
    "torch.mm": lambda m, s, d: m.mm(s, d),
    "matmul": lambda m, s, d: m.matmul(s, d),
    "at": lambda m, s, d: s @ d,
    "method": lambda m, s, d: s.mm(d),
    "spmm": lambda m, s, d: m.spmm(s, d),
}


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_sparse_dense_product(device, torch, name):
    idx, val = _coo((5, 4), 12)
    s, st = _pair(device, torch, idx, val, (5, 4))
    d, dt = _dense_pair(device, torch, 4, 3)
    out, out_t = PRODUCTS[name](mt, s, d), PRODUCTS[name](torch, st, dt)
    assert not out.is_sparse and out.layout is mt.strided
    assert_close(out, out_t.detach().numpy(), **TOL)
    g = RNG.standard_normal((5, 3))
    out.backward(mt.tensor(g, device=device))
    out_t.backward(torch.tensor(g))
    same_grad(d.grad, dt.grad)


@pytest.mark.parametrize("uncoalesced", [True, False])
def test_sparse_mm_gradient_of_the_sparse_operand(device, torch, uncoalesced):
    idx, val = _coo((6, 5), 14, dup=uncoalesced)
    s, st = _pair(device, torch, idx, val, (6, 5), requires_grad=True)
    d, dt = _dense_pair(device, torch, 5, 4)
    out, out_t = mt.sparse.mm(s, d), torch.sparse.mm(st, dt)
    assert out.grad_fn.name() == type(out_t.grad_fn).__name__ == "SparseAddmmBackward0"
    g = RNG.standard_normal((6, 4))
    out.backward(mt.tensor(g, device=device))
    out_t.backward(torch.tensor(g))
    same_grad(s.grad, st.grad)
    same_grad(d.grad, dt.grad)
    # the sparse gradient lives on the input's coalesced coordinates: nnz and indices are PyTorch's
    assert s.grad._nnz() == st.grad._nnz()
    np.testing.assert_array_equal(to_np(s.grad.coalesce()._indices()), st.grad.coalesce()._indices().numpy())
    # a second backward accumulates into the sparse .grad
    mt.sparse.mm(s, d).backward(mt.tensor(g, device=device))
    torch.sparse.mm(st, dt).backward(torch.tensor(g))
    same_grad(s.grad, st.grad)


@pytest.mark.parametrize("name", ["torch.mm", "matmul", "at", "method", "dense-first", "vector"])
def test_dense_products_give_a_sparse_operand_a_dense_gradient(device, torch, name):
    # PyTorch: only torch.sparse.mm masks the gradient to the sparse operand's coordinates; mm, matmul and @
    # differentiate the dense product and give a strided gradient
    idx, val = _coo((4, 3), 6)
    s, st = _pair(device, torch, idx, val, (4, 3), requires_grad=True)
    d, dt = _dense_pair(device, torch, 3, 2)
    e, et = _dense_pair(device, torch, 2, 4)
    v, vt = _dense_pair(device, torch, 3)
    fn = {"dense-first": lambda m, s, d, e, v: e @ s, "vector": lambda m, s, d, e, v: m.matmul(s, v)}.get(
        name, lambda m, s, d, e, v: PRODUCTS[name](m, s, d))
    o, ot = fn(mt, s, d, e, v), fn(torch, st, dt, et, vt)
    assert o.grad_fn.name() == type(ot.grad_fn).__name__
    (o ** 2).sum().backward()
    (ot ** 2).sum().backward()
    assert not s.grad.is_sparse
    same_grad(s.grad, st.grad)


def test_dense_sparse_products(device, torch):
    idx, val = _coo((4, 5), 9)
    s, st = _pair(device, torch, idx, val, (4, 5), requires_grad=True)
    d, dt = _dense_pair(device, torch, 3, 4)
    v, vt = _dense_pair(device, torch, 5)
    w, wt = _dense_pair(device, torch, 4)
    outs = [d @ s, mt.mm(d, s), mt.matmul(d, s), mt.sparse.mm(d, s), mt.matmul(s, v), w @ s]
    outs_t = [dt @ st, torch.mm(dt, st), torch.matmul(dt, st), torch.sparse.mm(dt, st), torch.matmul(st, vt),
              wt @ st]
    for o, ot in zip(outs, outs_t):
        assert_close(o, ot.detach().numpy(), **TOL)
    loss = mt.stack([o.sum() for o in outs]).sum()
    loss_t = torch.stack([o.sum() for o in outs_t]).sum()
    loss.backward()
    loss_t.backward()
    for ours, theirs in [(d.grad, dt.grad), (v.grad, vt.grad), (w.grad, wt.grad), (s.grad, st.grad)]:
        same_grad(ours, theirs)


@pytest.mark.parametrize("case", ["shape", "dtype", "vector", "hybrid", "3d", "sparse-sparse"])
def test_product_errors_match_torch(torch, case):
    s = mt.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]).to_sparse()
    st = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]).to_sparse()
    make = {
        "shape": lambda m, s: m.sparse.mm(s, m.ones(2, 2)),
        "dtype": lambda m, s: m.sparse.mm(s, m.ones(3, 2, dtype=m.float64)),
        "vector": lambda m, s: m.sparse.mm(s, m.ones(3)),
        "hybrid": lambda m, s: m.sparse.mm(s.to_dense().to_sparse(1), m.ones(3, 2)),
        "3d": lambda m, s: m.sparse.mm(s, m.ones(3, 2, 2)),
        "sparse-sparse": lambda m, s: m.sparse.mm(s, s.t()),
    }[case]
    with pytest.raises(Exception) as ours:
        make(mt, s)
    if case == "sparse-sparse":  # PyTorch multiplies two sparse matrices; we refuse
        assert ours.type is NotImplementedError and "'aten::mm'" in str(ours.value)
        return
    with pytest.raises(Exception) as theirs:
        make(torch, st)
    assert ours.type is theirs.type
    if case != "3d":  # PyTorch's 3-d message is about an internal expand
        assert str(ours.value) == str(theirs.value)


def test_transpose(device, torch):
    idx, val = _coo((3, 5), 7)
    s, st = _pair(device, torch, idx, val, (3, 5), requires_grad=True)
    weights = RNG.standard_normal((5, 3))
    w, wt = mt.tensor(weights, device=device), torch.tensor(weights)
    for fn in (lambda x: x.t(), lambda x: x.T, lambda x: x.transpose(0, 1), lambda x: x.transpose(-1, -2)):
        o, ot = fn(s), fn(st)
        assert o.is_sparse and tuple(o.shape) == (5, 3)
        assert_close(o.to_dense(), ot.to_dense().detach().numpy(), **TOL)
        (o.to_dense() * w).sum().backward()
        (ot.to_dense() * wt).sum().backward()
    assert s.t().grad_fn.name() == "TBackward0" and s.transpose(0, 1).grad_fn.name() == "TransposeBackward0"
    same_grad(s.grad, st.grad)
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                                           r"got 3 sparse and 0 dense dimensions"):
        mt.ones(2, 2, 2).to_sparse().t()


def test_scalar_products_and_sums_of_sparse(device, torch):
    idx, val = _coo((4, 4), 8)
    a, at = _pair(device, torch, idx, val, (4, 4), requires_grad=True)
    idx2, val2 = _coo((4, 4), 5)
    b, bt = _pair(device, torch, idx2, val2, (4, 4), requires_grad=True)
    c = mt.tensor(1.5, device=device, requires_grad=True)
    ct = torch.tensor(1.5, requires_grad=True)
    # PyTorch's sparse + sparse concatenates (uncoalesced); ours coalesces
    ours = [a * 2.5, 3 * a, a / 4, -a, a * c, a + b, a - b, a.add(b, alpha=0.5), a.sub(b, alpha=2)]
    theirs = [at * 2.5, 3 * at, at / 4, -at, at * ct, at + bt, at - bt, at.add(bt, alpha=0.5), at.sub(bt, alpha=2)]
    weights = RNG.standard_normal((4, 4))
    loss = loss_t = 0
    for o, ot in zip(ours, theirs):
        assert o.is_sparse and o.grad_fn.name() == type(ot.grad_fn).__name__
        assert o.is_coalesced() == (ot.is_coalesced() or o.grad_fn.name() in ("AddBackward0", "SubBackward0"))
        assert_close(o.to_dense(), ot.to_dense().detach().numpy(), **TOL)
        loss = loss + (o.to_dense() * mt.tensor(weights, device=device)).sum()
        loss_t = loss_t + (ot.to_dense() * torch.tensor(weights)).sum()
    loss.backward()
    loss_t.backward()
    same_grad(a.grad, at.grad)
    same_grad(b.grad, bt.grad)
    same_grad(c.grad, ct.grad)
    # dense + sparse and dense - sparse are dense
    d, dt = _dense_pair(device, torch, 4, 4)
    assert_close(d + a, (dt + at).detach().numpy(), **TOL)
    assert_close(d - a, (dt - at).detach().numpy(), **TOL)
    with pytest.raises(RuntimeError, match=r"add: expected sizes of 'self' and 'other' to match, but \[4, 4\] != "
                                           r"\[4, 3\]"):
        a + mt.ones(4, 3, device=device).to_sparse()


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 1), 2, (1, 2)])
def test_sparse_sum(device, torch, dim):
    idx, val = _coo((4, 3), 9)
    hv = RNG.standard_normal((9, 2))
    s = mt.sparse_coo_tensor(idx, hv, (4, 3, 2), device=device, requires_grad=True)
    st = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(hv), (4, 3, 2), requires_grad=True)
    o = mt.sparse.sum(s) if dim is None else mt.sparse.sum(s, dim)
    ot = torch.sparse.sum(st) if dim is None else torch.sparse.sum(st, dim)
    assert o.is_sparse == ot.is_sparse and tuple(o.shape) == tuple(ot.shape)
    assert o.grad_fn.name() == type(ot.grad_fn).__name__
    same_grad(o, ot)
    g = RNG.standard_normal(tuple(ot.shape))
    if o.is_sparse:
        (o.to_dense() * mt.tensor(g, device=device)).sum().backward()
        (ot.to_dense() * torch.tensor(g)).sum().backward()
    else:
        o.backward(mt.tensor(g, device=device))
        ot.backward(torch.tensor(g))
    same_grad(s.grad, st.grad)


def test_sum_method_and_dtype(device, torch):
    idx, val = _coo((3, 3), 5)
    s, st = _pair(device, torch, idx, val.astype(np.float32), (3, 3))
    assert_close(s.sum(), st.sum().numpy(), rtol=1e-6, atol=1e-6)
    same_grad(s.sum(1), st.sum(1))
    o, ot = mt.sparse.sum(s, dtype=mt.float64), torch.sparse.sum(st, dtype=torch.float64)
    assert o.dtype is mt.float64 and ot.dtype is torch.float64


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sparse_softmax(device, torch, fn, dim):
    idx, val = _coo((5, 4), 13)
    s, st = _pair(device, torch, idx, val, (5, 4), requires_grad=True)
    o, ot = getattr(mt.sparse, fn)(s, dim), getattr(torch.sparse, fn)(st, dim)
    assert o.is_sparse and o.is_coalesced() and o.grad_fn.name() == type(ot.grad_fn).__name__
    same_grad(o, ot)
    np.testing.assert_array_equal(to_np(o._indices()), ot._indices().numpy())
    weights = RNG.standard_normal((5, 4))
    (o.to_dense() * mt.tensor(weights, device=device)).sum().backward()
    # PyTorch 2.13's backward does not wrap a negative dim (its gradient for -1 differs from its gradient for 1):
    # the oracle's gradient is taken with the dim wrapped
    ot = getattr(torch.sparse, fn)(st, dim % 2)
    (ot.to_dense() * torch.tensor(weights)).sum().backward()
    same_grad(s.grad, st.grad)


def test_softmax_over_a_dense_dim(device, torch):
    idx, _ = _coo((4,), 5)
    hv = RNG.standard_normal((5, 3))
    s = mt.sparse_coo_tensor(idx, hv, (4, 3), device=device, requires_grad=True)
    st = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(hv), (4, 3), requires_grad=True)
    o, ot = mt.sparse.softmax(s, 1), torch.sparse.softmax(st, 1)
    same_grad(o, ot)
    (o.to_dense() ** 2).sum().backward()
    (ot.to_dense() ** 2).sum().backward()
    same_grad(s.grad, st.grad)


def test_gradients_flow_to_the_values(device, torch):
    idx = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]  # (0, 2) twice: each copy gets the whole gradient there
    val = RNG.standard_normal(5)
    v, vt = mt.tensor(val, device=device, requires_grad=True), torch.tensor(val, requires_grad=True)
    d, dt = _dense_pair(device, torch, 3, 2)
    weights, per_value = RNG.standard_normal((3, 3)), RNG.standard_normal(4)  # 4 distinct coordinates
    w, wt = mt.tensor(weights, device=device), torch.tensor(weights)
    u, ut = mt.tensor(per_value, device=device), torch.tensor(per_value)

    def losses(m, v, d, w, u):
        s = m.sparse_coo_tensor(idx, v, (3, 3))
        return [m.sparse.mm(s, d).sum(), (s.to_dense() * w).sum(), (s.coalesce().values() * u).sum(),
                (m.sparse.softmax(s, 1).to_dense() * w).sum()]

    ours, theirs = losses(mt, v, d, w, u), losses(torch, vt, dt, wt, ut)
    s = mt.sparse_coo_tensor(idx, v, (3, 3))
    assert s.grad_fn.name() == "SparseCooTensorWithDimsAndTensorsBackward0" and s.requires_grad and not s.is_leaf
    assert s.coalesce().values().grad_fn.name() == "ValuesBackward0"
    for o, ot in zip(ours, theirs):
        assert_close(o, ot.detach().numpy(), **TOL)
        gv, = mt.autograd.grad(o, [v], retain_graph=True)
        gvt, = torch.autograd.grad(ot, [vt], retain_graph=True)  # the losses share a graph
        assert_close(gv, gvt.numpy(), **TOL)


def test_autograd_grad_returns_a_sparse_gradient(device, torch):
    idx, val = _coo((3, 4), 6)
    s, st = _pair(device, torch, idx, val, (3, 4), requires_grad=True)
    d, dt = _dense_pair(device, torch, 4, 2)
    g, = mt.autograd.grad(mt.sparse.mm(s, d).sum(), [s])
    gt, = torch.autograd.grad(torch.sparse.mm(st, dt).sum(), [st])
    same_grad(g, gt)
    assert s.grad is None


def test_to_dense_and_to_sparse_backward(device, torch):
    idx, val = _coo((3, 3), 6)
    s, st = _pair(device, torch, idx, val, (3, 3), requires_grad=True)
    x, xt = _dense_pair(device, torch, 3, 3)
    o = (s.to_dense() * x).sum() + (x.to_sparse().to_dense() ** 2).sum()
    ot = (st.to_dense() * xt).sum() + (xt.to_sparse().to_dense() ** 2).sum()
    assert s.to_dense().grad_fn.name() == "ToDenseBackward0"
    o.backward()
    ot.backward()
    same_grad(s.grad, st.grad)
    same_grad(x.grad, xt.grad)
    assert s.grad.is_sparse and s.grad._nnz() == st.grad._nnz()


def test_conversions_keep_the_graph(device, torch):
    idx, val = _coo((3, 3), 4)
    s, st = _pair(device, torch, idx, val, (3, 3), requires_grad=True)
    o, ot = s.float().to(device).double().clone(), st.float().double().clone()
    assert o.grad_fn.name() == "CloneBackward0"
    (o.to_dense() ** 2).sum().backward()
    (ot.to_dense() ** 2).sum().backward()
    assert_close(s.grad.to_dense(), st.grad.to_dense().numpy(), rtol=1e-6, atol=1e-6)
    assert s.grad.dtype is mt.float64 and s.grad.device == s.device


def test_double_backward_through_sparse_mm(device, torch):
    idx, val = _coo((4, 3), 6)
    s, st = _pair(device, torch, idx, val, (4, 3))
    d, dt = _dense_pair(device, torch, 3, 2)
    g, = mt.autograd.grad((mt.sparse.mm(s, d) ** 2).sum(), [d], create_graph=True)
    gt, = torch.autograd.grad((torch.sparse.mm(st, dt) ** 2).sum(), [dt], create_graph=True)
    assert_close(g, gt.detach().numpy(), **TOL)
    gg, = mt.autograd.grad(g.sum(), [d])
    ggt, = torch.autograd.grad(gt.sum(), [dt])
    assert_close(gg, ggt.numpy(), **TOL)


@pytest.mark.parametrize("order", ["sparse-first", "dense-first"])
def test_sparse_and_dense_gradients_of_one_leaf_add_up(device, torch, order):
    # torch.sparse.mm gives the leaf a sparse gradient and ``@`` a dense one: the engine sums them (dense), in
    # the graph's buffers and across two backward passes into .grad, whichever comes first
    idx, val = _coo((4, 3), 6)
    s, st = _pair(device, torch, idx, val, (4, 3), requires_grad=True)
    d, dt = _dense_pair(device, torch, 3, 2)
    parts = [lambda m, s, d: m.sparse.mm(s, d), lambda m, s, d: s @ d]
    if order == "dense-first":
        parts.reverse()
    (parts[0](mt, s, d).sum() + 2 * parts[1](mt, s, d).sum()).backward()
    (parts[0](torch, st, dt).sum() + 2 * parts[1](torch, st, dt).sum()).backward()
    same_grad(s.grad, st.grad)
    for part in parts:
        part(mt, s, d).sum().backward()
        part(torch, st, dt).sum().backward()
    same_grad(s.grad, st.grad)
