"""Sparse COO tensors against PyTorch: construction (sizes, dtypes, devices, hybrid values), coalescing with
duplicates, dense round trips, conversions, printing, pickling, and the errors for bad input and for ops a
sparse tensor does not support."""
import copy
import pickle
import re
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

IDX = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
VAL = [3.0, 4.0, 5.0, 1.0, -2.0]



def same_sparse(ours, theirs, exact_indices=True):
    """Shape, layout, dtype, nnz, coalesced flag, stored indices and values (or, when the order of stored
    entries may differ, the dense tensor) of ours and PyTorch's."""
    assert ours.is_sparse and ours.layout is mt.sparse_coo
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.sparse_dim() == theirs.sparse_dim() and ours.dense_dim() == theirs.dense_dim()
    if exact_indices:
        assert ours._nnz() == theirs._nnz()
        np.testing.assert_array_equal(to_np(ours._indices()), theirs._indices().numpy())
        assert_close(ours._values(), theirs._values().detach().numpy(), rtol=1e-6, atol=1e-6)
    assert_close(ours.to_dense(), theirs.to_dense().detach().numpy(), rtol=1e-6, atol=1e-6)


def test_construction_matches_torch(device, torch):
    s = mt.sparse_coo_tensor(mt.tensor(IDX), mt.tensor(VAL), (3, 4), device=device)
    st = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL), (3, 4))
    same_sparse(s, st)
    assert s.device.type == mt.device(device).type and s._indices().device == s.device
    assert s._indices().dtype is mt.int64
    assert not s.is_coalesced() and not s.requires_grad and s.is_leaf
    # the size inferred from the indices, Python lists, a dtype, int64 indices given as floats
    s2 = mt.sparse_coo_tensor(IDX, VAL, dtype=mt.float64, device=device)
    st2 = torch.sparse_coo_tensor(IDX, VAL, dtype=torch.float64)
    same_sparse(s2, st2)
    s3 = mt.sparse_coo_tensor(mt.tensor(IDX, dtype=mt.float32), mt.tensor(VAL), device=device)
    same_sparse(s3, torch.sparse_coo_tensor(torch.tensor(IDX, dtype=torch.float32), torch.tensor(VAL)))
    # hybrid: one sparse dim, the values carry a dense dim
    hv = np.arange(10.0).reshape(5, 2)
    h = mt.sparse_coo_tensor([[0, 3, 0, 1, 3]], hv, (4, 2), device=device)
    ht = torch.sparse_coo_tensor([[0, 3, 0, 1, 3]], torch.tensor(hv), (4, 2))
    same_sparse(h, ht)
    same_sparse(h.coalesce(), ht.coalesce())


def test_empty_and_single_entry(device, torch):
    e = mt.sparse_coo_tensor(mt.zeros(2, 0, dtype=mt.int64, device=device), mt.zeros(0, device=device), (2, 3))
    et = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0), (2, 3))
    same_sparse(e, et)
    assert e.is_coalesced() == et.is_coalesced()
    assert repr(e) == repr(et).replace("torch.", "minitorch_gpu.") or device != "cpu"
    assert_close(mt.sparse.sum(e), et.sum().numpy())
    assert_close(mt.sparse.mm(e, mt.ones(3, 2, device=device)), np.zeros((2, 2)))
    one = mt.sparse_coo_tensor([[1], [2]], [1.0], (2, 3), device=device)
    assert one.is_coalesced() == torch.sparse_coo_tensor([[1], [2]], [1.0], (2, 3)).is_coalesced()


def test_coalesce_sums_duplicates_in_torch_order(device, torch):
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 4, (2, 40))
    val = rng.standard_normal(40)
    s = mt.sparse_coo_tensor(idx, val, (4, 5), device=device)
    st = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), (4, 5))
    c, ct = s.coalesce(), st.coalesce()
    same_sparse(c, ct)
    assert c.is_coalesced() and c.coalesce() is c
    np.testing.assert_array_equal(to_np(c.indices()), ct.indices().numpy())
    assert_close(c.values(), ct.values().numpy(), rtol=1e-12, atol=1e-12)
    # three sparse dims
    idx3 = rng.integers(0, 3, (3, 30))
    s3 = mt.sparse_coo_tensor(idx3, np.ones(30), (3, 3, 3), device=device)
    same_sparse(s3.coalesce(), torch.sparse_coo_tensor(torch.tensor(idx3), torch.ones(30, dtype=torch.float64),
                                                       (3, 3, 3)).coalesce())


@pytest.mark.parametrize("sparse_dim", [None, 1, 2])
def test_dense_round_trips(device, torch, sparse_dim):
    a = np.array([[0.0, 1.5, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, -3.0]])
    x = mt.tensor(a, device=device)
    xt = torch.tensor(a)
    s = x.to_sparse() if sparse_dim is None else x.to_sparse(sparse_dim)
    st = xt.to_sparse() if sparse_dim is None else xt.to_sparse(sparse_dim)
    same_sparse(s, st)
    assert s.is_coalesced()
    assert_close(s.to_dense(), a, rtol=0, atol=0)
    # dense -> sparse -> dense -> sparse gives the same coordinates back
    same_sparse(s.to_dense().to_sparse(), st.to_dense().to_sparse())
    assert x.to_dense() is x and x.layout is mt.strided and not x.is_sparse
    assert s.to_sparse() is s


def test_to_dense_adds_duplicates(device, torch):
    s = mt.sparse_coo_tensor(IDX, VAL, (3, 4), device=device)
    st = torch.sparse_coo_tensor(IDX, VAL, (3, 4))
    assert_close(s.to_dense(), st.to_dense().numpy(), rtol=0, atol=0)
    assert s.to_dense(mt.float64).dtype is mt.float64


def test_structure_accessors(device):
    s = mt.sparse_coo_tensor(IDX, VAL, (3, 4), device=device)
    assert s._nnz() == 5 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert s.shape == (3, 4) and s.size() == (3, 4) and s.size(1) == 4 and s.dim() == 2 and s.numel() == 12
    assert s.dtype is mt.float32 and len(s) == 3
    assert s.layout is mt.sparse_coo and mt.sparse_coo != mt.strided
    assert isinstance(mt.sparse_coo, mt.layout) and repr(mt.sparse_coo) == "minitorch_gpu.sparse_coo"
    assert pickle.loads(pickle.dumps(mt.sparse_coo)) is mt.sparse_coo
    assert s._values().requires_grad is False
    with pytest.raises(RuntimeError, match=r"Cannot get indices on an uncoalesced tensor, please call \.coalesce"):
        s.indices()
    with pytest.raises(RuntimeError, match=r"Cannot get values on an uncoalesced tensor, please call \.coalesce"):
        s.values()
    dense = mt.ones(2, 3, device=device)
    assert dense.sparse_dim() == 0 and dense.dense_dim() == 2


def test_conversions(device, torch):
    s = mt.sparse_coo_tensor(IDX, VAL, (3, 4))
    st = torch.sparse_coo_tensor(IDX, VAL, (3, 4))
    moved = s.to(device)
    assert moved.device.type == mt.device(device).type and moved._indices().device == moved.device
    same_sparse(moved, st)
    same_sparse(moved.cpu(), st)
    same_sparse(moved.double(), st.double())
    same_sparse(moved.to(mt.float64), st.to(torch.float64))
    assert moved.to(device) is moved and moved.float() is moved
    if device == "cuda":
        same_sparse(s.cuda(), st)
    d, c = moved.detach(), moved.clone()
    same_sparse(d, st)
    same_sparse(c, st)
    assert d._values().data_ptr() == moved._values().data_ptr()
    assert c._values().data_ptr() != moved._values().data_ptr()
    same_sparse(moved.data, st)


def test_pickle_and_deepcopy(device, torch):
    s = mt.sparse_coo_tensor(IDX, VAL, (3, 4), device=device, requires_grad=True)
    st = torch.sparse_coo_tensor(IDX, VAL, (3, 4))
    for t in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        same_sparse(t, st)
        assert t.requires_grad and t.device == s.device


def _torch_repr(t):
    return repr(t).replace("torch.", "minitorch_gpu.")


def test_repr_matches_torch(torch):
    cases = [
        (lambda m: m.sparse_coo_tensor(IDX, VAL, (3, 4))),
        (lambda m: m.sparse_coo_tensor(IDX, VAL, (3, 4)).coalesce()),
        (lambda m: m.sparse_coo_tensor(IDX, VAL, (3, 4), requires_grad=True)),
        (lambda m: m.sparse_coo_tensor(IDX, [1, 2, 3, 4, 5], (3, 4))),
        (lambda m: m.sparse_coo_tensor([[0, 3, 0]], [[1.0, 2.0], [3.0, 4.0], [5.5, 6.0]], (4, 2))),
    ]
    for make in cases:
        assert repr(make(mt)) == _torch_repr(make(torch))
    v = torch.tensor(VAL, requires_grad=True)
    ours = mt.sparse_coo_tensor(IDX, mt.tensor(VAL, requires_grad=True), (3, 4))
    assert repr(ours) == _torch_repr(torch.sparse_coo_tensor(IDX, v, (3, 4)))


def test_repr_names_the_device(device):
    s = mt.sparse_coo_tensor(IDX, VAL, (3, 4), device=device)
    assert ("device='cuda:0'" in repr(s)) == (device == "cuda")


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e), str(e)
    return None, None


@pytest.mark.parametrize("args", [
    (IDX, VAL, (1, 4)),                      # an index past its dim
    ([[0, -1]], [1.0, 2.0], (3,)),            # a negative index
    ([0, 1, 1, 0, 2], VAL, (3, 4)),           # indices not 2-d
    (IDX, VAL[:3], (3, 4)),                   # nnz mismatch
    (IDX, VAL, (3,)),                         # len(size) != sparse_dim + dense_dim
    ([[1], [2]], [[1.0, 2.0]], (2, 3, 3)),    # dense dims of values != size
], ids=["past-size", "negative", "not-2d", "nnz", "len-size", "dense-size"])
def test_construction_errors_match_torch(torch, args):
    it, vt, size = args
    et, mt_ = _error(lambda: torch.sparse_coo_tensor(torch.tensor(it), torch.tensor(vt), size,
                                                     check_invariants=True))
    e, m = _error(lambda: mt.sparse_coo_tensor(mt.tensor(it), mt.tensor(vt), size))
    assert (e, m) == (et, mt_)


def test_negative_index_without_a_size(torch):
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        mt.sparse_coo_tensor([[0, -1]], [1.0, 2.0])
    s = mt.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,), check_invariants=False)  # the caller's promise
    assert s.shape == (3,)


def test_requires_grad_needs_floating_values():
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        mt.sparse_coo_tensor(IDX, [1, 2, 3, 4, 5], (3, 4), requires_grad=True)


@pytest.mark.parametrize("op", [
    lambda m, s: m.exp(s), lambda m, s: s.exp(), lambda m, s: s.view(12), lambda m, s: m.cos(s),
    lambda m, s: s.mean(), lambda m, s: s == s, lambda m, s: s.max(), lambda m, s: m.softmax(s, 0),
    lambda m, s: s.reshape(12), lambda m, s: s.expand(2, 3, 4), lambda m, s: s + m.ones(3, 4),
    lambda m, s: s + 1, lambda m, s: s.numpy(), lambda m, s: s.tolist(), lambda m, s: s.data_ptr(),
    lambda m, s: s.item(), lambda m, s: s.nbytes, lambda m, s: m.sparse_coo_tensor(IDX, VAL, (3, 4)).indices(),
], ids=["exp", "exp-method", "view", "cos", "mean", "eq", "max", "softmax", "reshape", "expand", "add-dense",
        "add-scalar", "numpy", "tolist", "data_ptr", "item", "nbytes", "indices"])
def test_unsupported_ops_raise_torchs_errors(torch, op):
    s = mt.sparse_coo_tensor(IDX, VAL, (3, 4))
    st = torch.sparse_coo_tensor(IDX, VAL, (3, 4))
    et, msg_t = _error(lambda: op(torch, st))
    e, msg = _error(lambda: op(mt, s))
    assert et is not None and e is et
    # PyTorch's "Could not run 'aten::exp' with arguments from the 'SparseCPU' backend." starts both messages
    # (PyTorch's names an overload, 'aten::mean.dim', or its private kernel, 'aten::_softmax'); the rest,
    # PyTorch's list of backends or our hint, differs
    assert _head(msg) == _head(msg_t)


def _head(msg):
    return re.sub(r"aten::_?(\w+)(\.\w+)?", r"aten::\1", msg.split(" This")[0]).replace("torch.", "minitorch_gpu.")


def test_unsupported_ops_name_the_op_and_the_device(device):
    s = mt.sparse_coo_tensor(IDX, VAL, (3, 4), device=device)
    backend = "SparseCUDA" if device == "cuda" else "SparseCPU"
    for fn, op in [(lambda: mt.exp(s), "exp"), (lambda: mt.tanh(s), "tanh"), (lambda: s.unsqueeze(0), "unsqueeze"),
                   (lambda: mt.cat([s, s]), "cat"), (lambda: s[0], "index"), (lambda: s.contiguous(), "contiguous"),
                   (lambda: mt.nn.functional.gelu(s), "gelu"),
                   (lambda: mt.relu(s), "relu")]:
        with pytest.raises(NotImplementedError, match=rf"Could not run 'aten::{op}' with arguments from the "
                                                      rf"'{backend}' backend\..*to_dense"):
            fn()
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        np.asarray(s)


def test_dense_tensors_refuse_sparse_only_methods(torch):
    x, xt = mt.ones(2, 3), torch.ones(2, 3)
    for name in ("coalesce", "is_coalesced", "indices", "values", "_nnz"):
        (e, msg), (et, msg_t) = _error(getattr(x, name)), _error(getattr(xt, name))
        assert e is et and _head(msg) == _head(msg_t)
    for args in [(0,), (3,)]:
        assert _error(lambda: x.to_sparse(*args)) == _error(lambda: xt.to_sparse(*args))
