"""nn.Parameter and nn.Buffer."""
import copy
import pickle

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu import nn


def test_parameter_basics(device):
    data = mt.arange(6, dtype=mt.float32, device=device).reshape(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, mt.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p.shape == (2, 3) and p.dtype is mt.float32 and p.device.type == mt.device(device).type
    # shares memory with data
    assert p.data_ptr() == data.data_ptr()
    with mt.no_grad():
        p.add_(1)
    assert_close(data, np.arange(6).reshape(2, 3) + 1)
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert not isinstance(data, nn.Parameter)


def test_parameter_requires_grad_even_under_no_grad(device):
    with mt.no_grad():
        p = nn.Parameter(mt.zeros(2, device=device))
    assert p.requires_grad


def test_parameter_from_tensor_with_history_is_a_leaf(device):
    x = mt.ones(3, device=device, requires_grad=True)
    p = nn.Parameter(x * 2)
    assert p.is_leaf and p.requires_grad
    p.sum().backward()
    assert x.grad is None and p.grad is not None


def test_default_parameter_is_empty():
    p = nn.Parameter()
    assert p.shape == (0,) and p.dtype is mt.float32 and p.requires_grad


def test_integer_parameter(torch):
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        nn.Parameter(mt.tensor([1, 2]))
    with pytest.raises(RuntimeError):
        torch.nn.Parameter(torch.tensor([1, 2]))
    p = nn.Parameter(mt.tensor([1, 2]), requires_grad=False)
    assert p.dtype is mt.int64 and not p.requires_grad


def test_parameter_rejects_non_tensor():
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])


def test_repr_matches_torch(torch):
    for values, kw in [([1.0, 2.5], {}), ([[1.0, 2.0], [3.0, 4.0]], {"requires_grad": False}), ([], {})]:
        p = nn.Parameter(mt.tensor(values), **kw)
        t = torch.nn.Parameter(torch.tensor(values), **kw)
        assert repr(p) == repr(t)
    p = nn.Parameter(mt.tensor([1.0, 2.0], dtype=mt.float64))
    t = torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64))
    assert repr(p) == repr(t).replace("torch.", "minitorch_gpu.")
    assert repr(p).startswith("Parameter containing:\ntensor(")


def test_ops_on_parameters_return_plain_tensors(device):
    p = nn.Parameter(mt.randn(3, 4, device=device))
    results = [p + 1, p * p, p.sum(), p[0], p.t(), p.reshape(12), p.exp(), -p, p.detach(), p.data, p.clone(),
               p.to(mt.float64), p.matmul(p.t()), mt.cat([p, p]), p.unbind(0)[0], p.float() * 1]
    for r in results:
        assert type(r) is mt.Tensor, type(r)
    # in-place ops return the parameter itself, like PyTorch
    with mt.no_grad():
        assert p.mul_(1) is p and type(p) is nn.Parameter
    assert p.to(mt.float32) is p  # nothing to convert
    p.sum().backward()
    assert type(p.grad) is mt.Tensor


def test_parameter_gradients(device):
    p = nn.Parameter(mt.tensor([1.0, 2.0, 3.0], device=device))
    (p * p).sum().backward()
    assert_close(p.grad, [2.0, 4.0, 6.0])


def test_deepcopy(device):
    p = nn.Parameter(mt.tensor([1.0, 2.0], device=device))
    p.sum().backward()
    c = copy.deepcopy(p)
    assert type(c) is nn.Parameter and c.requires_grad and c.device == p.device
    assert c.data_ptr() != p.data_ptr()
    assert_close(c, [1.0, 2.0])
    assert c.grad is None
    q = nn.Parameter(mt.zeros(1, device=device), requires_grad=False)
    assert not copy.deepcopy(q).requires_grad
    # the memo keeps shared parameters shared
    pair = copy.deepcopy([p, p])
    assert pair[0] is pair[1]


def test_pickle(device):
    p = nn.Parameter(mt.tensor([1.0, -2.0], device=device))
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is nn.Parameter and q.requires_grad and q.device == p.device
    assert_close(q, [1.0, -2.0])
    r = pickle.loads(pickle.dumps(nn.Parameter(mt.ones(2), requires_grad=False)))
    assert type(r) is nn.Parameter and not r.requires_grad


def test_parameter_data_assignment_keeps_object(device):
    p = nn.Parameter(mt.zeros(2, device=device))
    p.data = mt.ones(3, dtype=mt.float64, device=device)
    assert type(p) is nn.Parameter and p.shape == (3,) and p.dtype is mt.float64 and p.requires_grad
    assert_close(p, [1.0, 1.0, 1.0])


def test_buffer(device):
    x = mt.ones(2, device=device)
    b = nn.Buffer(x)
    assert type(b) is mt.Tensor and isinstance(b, nn.Buffer) and b.persistent
    assert not isinstance(x, nn.Buffer)
    assert b.data_ptr() == x.data_ptr()
    assert not nn.Buffer(x, persistent=False).persistent
    g = nn.Buffer(mt.ones(1, requires_grad=True))
    assert g.requires_grad and g.is_leaf
    assert nn.Buffer().shape == (0,)


def test_buffer_isinstance_matches_torch(torch):
    assert isinstance(torch.nn.Buffer(torch.ones(1)), torch.nn.Buffer)
    assert not isinstance(torch.ones(1), torch.nn.Buffer)
    assert isinstance(nn.Buffer(mt.ones(1)), nn.Buffer)
    assert not isinstance(mt.ones(1), nn.Buffer)
    assert not isinstance(3, nn.Buffer)
    assert np.array_equal(to_np(nn.Buffer(mt.arange(3))), [0, 1, 2])
