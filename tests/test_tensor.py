"""Tensor basics: metadata (shape, size, dim, numel, dtype, device, strides, contiguity), conversion
to Python and NumPy, Python protocols (bool, len, iter, index, float/int), copies and deepcopy."""
import copy

import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt


def _t(arr, device, **kw):
    return mt.tensor(np.asarray(arr), device=device, **kw)


def test_shape_size_dim_numel(device):
    t = _t(np.zeros((2, 3, 4), dtype=np.float32), device)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, mt.Size)
    assert t.size() == mt.Size([2, 3, 4])
    assert t.size(0) == 2 and t.size(-1) == 4
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        t.size(3)
    assert t.dim() == t.ndim == t.ndimension() == 3
    assert t.numel() == t.nelement() == 24
    assert t.shape.numel() == 24
    assert repr(t.shape) == "minitorch_gpu.Size([2, 3, 4])"
    assert isinstance(t.shape[1:], mt.Size) and t.shape[1:] == (3, 4)
    s = _t(np.float32(1.5), device)
    assert s.shape == () and s.dim() == 0 and s.numel() == 1


def test_dtype_and_device(device, torch):
    f = _t(np.ones(2, dtype=np.float32), device)
    d = _t(np.ones(2, dtype=np.float64), device)
    i = _t(np.ones(2, dtype=np.int64), device)
    b = _t(np.ones(2, dtype=bool), device)
    assert f.dtype is mt.float32 and d.dtype is mt.float64 and i.dtype is mt.int64 and b.dtype is mt.bool
    assert f.is_floating_point() and not i.is_floating_point()
    # every dtype is real and every tensor dense (strided), as a real PyTorch tensor of these dtypes
    assert not f.is_complex() and not mt.is_complex(f) and not f.is_sparse
    assert f.is_sparse == torch.ones(2).is_sparse and mt.is_complex(d) == torch.is_complex(torch.ones(2))
    assert f.element_size() == 4 and d.element_size() == 8
    assert d.nbytes == torch.ones(2, dtype=torch.float64).nbytes
    # a tensor's device carries an index ("cuda:0"), and as in PyTorch device("cuda") != device("cuda:0")
    assert f.device == (mt.device("cpu") if device == "cpu" else mt.device("cuda", 0))
    assert f.device.type == device
    assert f.is_cuda == (device == "cuda") and f.is_cpu == (device == "cpu")
    assert f.get_device() == (-1 if device == "cpu" else 0)


def test_strides_and_contiguity(device, torch):
    t = _t(np.arange(6, dtype=np.float32).reshape(2, 3), device)
    tt = torch.arange(6.0).reshape(2, 3)
    assert t.is_contiguous() and t.stride() == tt.stride() == (3, 1)
    assert t.stride(0) == 3 and t.stride(-1) == 1
    tr = t.t()
    assert not tr.is_contiguous()
    assert tr.stride() == tt.t().stride() == (1, 3)
    c = tr.contiguous()
    assert c.is_contiguous() and c.stride() == (2, 1)
    assert_close(c, np.arange(6).reshape(2, 3).T)
    e = t.expand(4, 2, 3)
    assert e.stride() == tt.expand(4, 2, 3).stride() == (0, 3, 1)


def test_item_and_python_scalars(device):
    assert _t(np.float32(2.5), device).item() == 2.5
    assert isinstance(_t(np.array([[7]]), device).item(), int)
    assert _t(np.array([True]), device).item() is True
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        _t(np.array([1.0, 2.0]), device).item()
    assert float(_t(np.array([1.5]), device)) == 1.5
    assert int(_t(np.array([3.7]), device)) == 3
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        float(_t(np.array([1.0, 2.0]), device))
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        int(_t(np.array([1, 2]), device))


def test_tolist(device):
    t = _t(np.arange(6, dtype=np.int64).reshape(2, 3), device)
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert _t(np.float32(2.0), device).tolist() == 2.0
    assert _t(np.array([True, False]), device).tolist() == [True, False]


def test_numpy_and_cpu(device):
    t = _t(np.array([1.0, 2.0], dtype=np.float32), device)
    c = t.cpu()
    assert c.device == mt.device("cpu")
    a = c.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    # on the CPU numpy() shares memory, as in PyTorch
    a[0] = 10.0
    assert c.tolist()[0] == 10.0
    r = _t(np.array([1.0]), device, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad. Use "
                                           "tensor.detach\\(\\).numpy\\(\\) instead."):
        r.cpu().numpy()
    assert r.detach().cpu().numpy().tolist() == [1.0]
    if device == "cuda":
        with pytest.raises(TypeError, match="can't convert cuda"):
            t.numpy()
    else:
        assert c is t  # already there: no copy


def test_clone_and_detach(device):
    x = _t(np.array([1.0, 2.0], dtype=np.float32), device, requires_grad=True)
    c = x.clone()
    assert c.grad_fn.name() == "CloneBackward0"
    assert c.data_ptr() != x.data_ptr()
    d = x.detach()
    assert d.data_ptr() == x.data_ptr() and not d.requires_grad
    (c * 2.0).sum().backward()
    assert_close(x.grad, [2.0, 2.0])


def test_data_property(device):
    x = _t(np.array([1.0, 2.0], dtype=np.float32), device, requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    x.data = _t(np.array([5.0, 6.0], dtype=np.float32), device)
    assert x.tolist() == [5.0, 6.0] and x.requires_grad and x.is_leaf


def test_bool(device):
    assert bool(_t(np.array([1.0]), device)) is True
    assert bool(_t(np.array(0), device)) is False
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(_t(np.array([1.0, 2.0]), device))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(_t(np.zeros(0), device))
    with pytest.raises(RuntimeError, match="ambiguous"):
        if _t(np.array([1, 1]), device):
            pass


def test_len_and_iter(device):
    t = _t(np.arange(6, dtype=np.float32).reshape(3, 2), device)
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and all(r.shape == (2,) for r in rows)
    assert rows[2].tolist() == [4.0, 5.0]
    s = _t(np.float32(1.0), device)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(s)
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(s)


def test_iteration_is_differentiable(device):
    x = _t(np.arange(4, dtype=np.float32).reshape(2, 2), device, requires_grad=True)
    total = None
    for i, row in enumerate(x):
        term = row * float(i + 1)
        total = term if total is None else total + term
    total.sum().backward()
    assert_close(x.grad, [[1.0, 1.0], [2.0, 2.0]])


def test_index_protocol(device):
    items = [10, 20, 30]
    assert items[_t(np.array(1), device)] == 20
    assert items[_t(np.array([2]), device)] == 30
    assert list(range(5))[_t(np.array(1), device):_t(np.array(3), device)] == [1, 2]
    assert _t(np.array(True), device).__index__() == 1
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        items[_t(np.array(1.0), device)]
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        items[_t(np.array([0, 1]), device)]


def test_deepcopy(device):
    x = _t(np.array([1.0, 2.0], dtype=np.float32), device, requires_grad=True)
    x.grad = _t(np.array([0.5, 0.5], dtype=np.float32), device)
    c = copy.deepcopy(x)
    assert c is not x and c.requires_grad and c.is_leaf
    assert c.device == x.device and c.dtype is x.dtype
    assert c.data_ptr() != x.data_ptr()
    assert c.grad.tolist() == [0.5, 0.5] and c.grad is not x.grad
    # one object reached twice is copied once
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1]
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user \\(graph leaves\\) support "
                                           "the deepcopy protocol"):
        copy.deepcopy(x * 2.0)
    plain = _t(np.array([1, 2]), device)
    assert copy.deepcopy(plain).tolist() == [1, 2]


def test_repr_mentions_grad_fn_and_requires_grad(device):
    x = _t(np.array([1.0], dtype=np.float32), device, requires_grad=True)
    assert "requires_grad=True" in repr(x)
    assert "grad_fn=<MulBackward0>" in repr(x * 2.0)


def test_hash_is_identity(device):
    a = _t(np.array([1.0]), device)
    b = _t(np.array([1.0]), device)
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2


def test_pickle_round_trip(device):
    import pickle
    x = _t(np.array([1.0, 2.0], dtype=np.float32), device, requires_grad=True)
    x.tag = "weights"
    (x * 2.0).sum().backward()  # gives x autograd bookkeeping that must not be pickled
    x.register_hook(lambda g: g)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == [1.0, 2.0] and y.requires_grad and y.is_leaf
    assert y.device == x.device and y.dtype is mt.float32
    assert y.tag == "weights"
    v = pickle.loads(pickle.dumps(_t(np.arange(4.0), device).view(2, 2)))
    assert v.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"):
        pickle.dumps(x * 2.0)


# ---------------------------------------------------------------------- format() and f-strings

@pytest.mark.parametrize("spec", ["", ".4f", "8.2e", "g", "+.1%", ">10"])
def test_zero_dim_tensors_format_as_their_number_like_torch(device, torch, spec):
    for value, dt in [(1380.0, "float32"), (0.1234567, "float64"), (7, "int64"), (True, "bool")]:
        t = mt.tensor(value, dtype=getattr(mt, dt), device=device, requires_grad=dt == "float32")
        theirs = torch.tensor(value, dtype=getattr(torch, dt), requires_grad=dt == "float32")
        if spec in ("+.1%", "8.2e", ".4f") and dt == "bool":
            continue
        assert format(t, spec) == format(theirs, spec)
        assert f"{t:{spec}}" == f"{theirs:{spec}}"


def test_other_tensors_format_as_str_like_torch(device, torch):
    t = mt.tensor([1.0, 2.0], device=device)
    assert f"{t}" == str(t) and format(t, "") == str(t)
    p = mt.nn.Parameter(mt.tensor(2.0))
    assert f"{p}" == str(p) and f"{torch.nn.Parameter(torch.tensor(2.0))}".startswith("Parameter containing:")
    for x in (t, torch.tensor([1.0, 2.0])):
        with pytest.raises(TypeError, match="unsupported format string passed to"):
            format(x, ".2f")
