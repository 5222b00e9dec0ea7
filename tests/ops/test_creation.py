"""Factories (tensor, zeros, arange, linspace, eye, ...), ``Tensor.new_*``, the legacy constructor, and the
in-place fills, checked against PyTorch."""
import array
import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minitorch_gpu as mt
from helpers import assert_close, to_np


def tname(t):
    return str(t.dtype).split(".")[1]


def same(m, t, exact=True, values=True):
    """Same dtype, shape and values (exactly, or to float32 rounding) as a torch tensor."""
    assert m.dtype.name == tname(t), (m.dtype, t.dtype)
    assert tuple(m.shape) == tuple(t.shape)
    if not values:
        return
    if exact:
        np.testing.assert_array_equal(to_np(m).astype(np.float64), t.double().numpy())
    else:
        assert_close(m, t.double().numpy(), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------- tensor()

DATA = [3, 2.5, True, [1, 2, 3], [1.0, 2], [True, False], [True, 2], [[1, 2], [3, 4]], [], [[]], [[1.5], [2]],
        (1, 2), [np.float64(1.0)], [np.int32(3), np.int32(4)], [1, np.float32(2)], np.float64(2.0), np.int16(3),
        [[[1]], [[2]]]]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_infers_dtype_and_shape_like_torch(torch, device, data):
    same(mt.tensor(data, device=device), torch.tensor(data))


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8", "bool", "float16", "int8"])
def test_tensor_with_dtype_like_torch(torch, device, dtype):
    data = [[0, 1.7, -1], [2, 3, 250]] if dtype != "bool" else [[0, 1.5, -1], [2, 0, 3]]
    if dtype in ("uint8", "int8"):
        data = [[0, 1, -1], [2, 3, 100]]
    same(mt.tensor(data, dtype=getattr(mt, dtype), device=device), torch.tensor(data, dtype=getattr(torch, dtype)))


def test_tensor_from_list_of_tensors_like_torch(torch, device):
    m = mt.tensor([mt.tensor(1, dtype=mt.int32), mt.tensor(2.5)], device=device)
    same(m, torch.tensor([torch.tensor(1, dtype=torch.int32), torch.tensor(2.5)]))
    assert mt.tensor([mt.tensor(1, dtype=mt.int32)]).dtype is mt.int32


@pytest.mark.parametrize("bad,exc", [([[1, 2], [3]], ValueError), ([[1], [2, 3]], ValueError), ("a", TypeError),
                                     ([1, "a"], TypeError), ([1, None], RuntimeError), ([2 ** 64], ValueError),
                                     ([2 ** 63], ValueError), ([[1, 2], 3], TypeError), ([1, [2, 3]], TypeError),
                                     ([[1], []], ValueError), ([[[1]], [2]], TypeError)])
def test_tensor_bad_data_error_types_like_torch(torch, bad, exc):
    with pytest.raises(exc):
        torch.tensor(bad)
    with pytest.raises(exc):
        mt.tensor(bad)


class _Seq:
    """A user sequence: ``__getitem__`` and ``__len__`` only, as PyTorch's constructors accept."""

    def __init__(self, *items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


# any sequence, not only lists and tuples: PyTorch reads each element by index (CPython's PySequence_Check)
SEQUENCES = [lambda L: range(5), lambda L: range(0), lambda L: [range(2), range(2)], lambda L: bytearray(b"ab"),
             lambda L: memoryview(b"ab"), lambda L: array.array("d", [1.5, 2.0]), lambda L: _Seq(1, 2),
             lambda L: [_Seq(1.5, 2), _Seq(3, 4)], lambda L: (range(3), [1, 2, 3]),
             lambda L: [np.array([1.0, 2.0]), np.array([3.0, 4.0])], lambda L: [np.array([1, 2], dtype=np.int16)],
             lambda L: [L.tensor(1), L.tensor(2)], lambda L: np.arange(4)]


@pytest.mark.parametrize("make", SEQUENCES, ids=range(len(SEQUENCES)))
@pytest.mark.parametrize("ctor", ["tensor", "as_tensor", "LongTensor", "FloatTensor"])
def test_tensor_from_any_sequence_like_torch(torch, device, make, ctor):
    kw = {} if ctor.endswith("Tensor") and device == "cpu" else {"device": device}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's "a list of numpy.ndarrays is extremely slow"
        want = getattr(torch, ctor)(make(torch))
    same(getattr(mt, ctor)(make(mt), **kw), want)


@pytest.mark.parametrize("make", [lambda: (x for x in [1, 2]), lambda: {1, 2}, lambda: {1: 2}, lambda: {1: 2}.keys(),
                                  lambda: object(), lambda: [1, (x for x in [1])], lambda: [None]])
def test_tensor_from_non_sequence_is_runtime_error_like_torch(torch, make):
    with pytest.raises(RuntimeError) as theirs:
        torch.tensor(make())
    with pytest.raises(RuntimeError, match="^" + re.escape(str(theirs.value)) + "$"):
        mt.tensor(make())


@pytest.mark.parametrize("make", [lambda L: [1, L.tensor(2.5)], lambda L: [np.int64(3), np.float32(2)],
                                  lambda L: [np.float64(2.5)], lambda L: [2.5, L.tensor(1)]])
@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool", "float32"])
def test_integer_data_reads_each_element_as_an_index_like_torch(torch, make, dtype):
    """Into an integer or bool tensor a Python float (or NumPy float64) is truncated, while another NumPy
    float or a floating tensor is refused: PyTorch reads such elements as indices."""
    try:
        want = torch.tensor(make(torch), dtype=getattr(torch, dtype))
    except TypeError as e:
        with pytest.raises(TypeError, match="^" + re.escape(str(e)) + "$"):
            mt.tensor(make(mt), dtype=getattr(mt, dtype))
        return
    same(mt.tensor(make(mt), dtype=getattr(mt, dtype)), want)


@pytest.mark.parametrize("make", [lambda: (x for x in [1, 2]), lambda: {1, 2}, lambda: {1: 2}, lambda: object(),
                                  lambda: 2.5, lambda: True, lambda: None, lambda: np.float32(2)])
def test_legacy_constructor_refuses_non_sequences_like_torch(torch, make):
    with pytest.raises(TypeError) as theirs:
        torch.LongTensor(make())
    assert "data must be a sequence" in str(theirs.value)
    with pytest.raises(TypeError, match="^" + re.escape(str(theirs.value)) + "$"):
        mt.LongTensor(make())


def test_tensor_ragged_message_names_the_dim():
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1 \\(got 1\\)"):
        mt.tensor([[1, 2], [3]])


def test_tensor_copies_numpy_and_keeps_its_dtype(device):
    a = np.arange(4, dtype=np.int16)
    t = mt.tensor(a, device=device)
    a[0] = 9
    assert t.dtype is mt.int16 and to_np(t).tolist() == [0, 1, 2, 3]


def test_tensor_from_tensor_warns_and_detaches(device):
    x = mt.ones(3, device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="clone"):
        y = mt.tensor(x)
    assert not y.requires_grad and y.device == x.device
    y.fill_(5)
    assert to_np(x).tolist() == [1.0, 1.0, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert mt.tensor(x, dtype=mt.int32).dtype is mt.int32


def test_tensor_requires_grad(device):
    assert mt.tensor([1.0], device=device, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        mt.tensor([1, 2], device=device, requires_grad=True)


def test_scalar_tensor_like_torch(torch, device):
    same(mt.scalar_tensor(3, device=device), torch.scalar_tensor(3))
    same(mt.scalar_tensor(True), torch.scalar_tensor(True))
    same(mt.scalar_tensor(2, dtype=mt.int32), torch.scalar_tensor(2, dtype=torch.int32))


# ---------------------------------------------------------------------- numpy interop

def test_from_numpy_shares_memory_both_ways():
    a = np.zeros(3, dtype=np.float32)
    t = mt.from_numpy(a)
    a[1] = 5
    assert t.tolist() == [0.0, 5.0, 0.0]
    t.fill_(2)
    assert a.tolist() == [2.0, 2.0, 2.0]
    assert t.numpy() is a or np.shares_memory(t.numpy(), a)


def test_from_numpy_errors(torch):
    with pytest.raises(TypeError):
        torch.from_numpy([1, 2])
    with pytest.raises(TypeError):
        mt.from_numpy([1, 2])
    with pytest.raises(TypeError, match="complex64"):
        mt.from_numpy(np.zeros(2, dtype=np.complex64))


def test_as_tensor_shares_when_it_can(device):
    a = np.arange(3, dtype=np.float64)
    t = mt.as_tensor(a, device=device)
    assert t.dtype is mt.float64
    if t.device.type == "cpu":
        a[0] = 7
        assert t.tolist()[0] == 7
    t2 = mt.as_tensor(a, dtype=mt.float32, device=device)
    a[1] = 8
    assert to_np(t2)[1] == 1  # converted, so a copy
    x = mt.ones(2, device=device)
    assert mt.as_tensor(x) is x
    assert mt.as_tensor(x, dtype=mt.float64).dtype is mt.float64
    assert mt.as_tensor([1, 2], device=device).dtype is mt.int64


def test_asarray_copy_modes():
    a = np.arange(3.0)
    t = mt.asarray(a)
    a[0] = 5
    assert t.tolist()[0] == 5
    c = mt.asarray(a, copy=True)
    a[0] = 6
    assert c.tolist()[0] == 5
    with pytest.raises(ValueError):
        mt.asarray(a, dtype=mt.float32, copy=False)
    x = mt.ones(2, requires_grad=True)
    y = mt.asarray(x)
    assert not y.requires_grad and y.data_ptr() == x.data_ptr()
    assert mt.asarray([1, 2]).dtype is mt.int64


# ---------------------------------------------------------------------- sized factories

@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([2, 3],), ((),), (0,), (4,), ((1, 0, 2),)])
def test_sized_factories_shapes_like_torch(torch, device, fn, size):
    m = getattr(mt, fn)(*size, device=device)
    t = getattr(torch, fn)(*size)
    same(m, t, values=fn != "empty")


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword_and_size_objects(device, fn):
    assert tuple(getattr(mt, fn)(size=(2, 3), device=device).shape) == (2, 3)
    assert tuple(getattr(mt, fn)(mt.Size([4]), device=device).shape) == (4,)
    assert tuple(getattr(mt, fn)(np.int64(2), device=device).shape) == (2,)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_sized_factory_errors_like_torch(torch, fn):
    for args, exc in (((-1,), RuntimeError), ((2, 3.0), TypeError), ((2, "a"), TypeError)):
        with pytest.raises(exc):
            getattr(torch, fn)(*args)
        with pytest.raises(exc):
            getattr(mt, fn)(*args)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool"])
def test_factory_dtypes(torch, device, dtype):
    for fn in ("zeros", "ones"):
        same(getattr(mt, fn)(2, 2, dtype=getattr(mt, dtype), device=device),
             getattr(torch, fn)(2, 2, dtype=getattr(torch, dtype)))


def test_factory_requires_grad(device):
    for fn in (mt.zeros, mt.ones, mt.empty, mt.rand, mt.randn):
        x = fn(2, device=device, requires_grad=True)
        assert x.requires_grad and x.is_leaf
    for fn in (mt.zeros, mt.ones, mt.empty):
        with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
            fn(2, dtype=mt.int64, device=device, requires_grad=True)


def test_factory_out(device):
    out = mt.empty(5, device=device)
    r = mt.zeros(2, 2, out=out, device=device)
    assert r is out and tuple(out.shape) == (2, 2) and to_np(out).sum() == 0
    out2 = mt.empty(3, device=device)
    v = out2._version
    mt.ones(3, out=out2)
    assert to_np(out2).tolist() == [1, 1, 1] and out2._version > v
    with pytest.raises(RuntimeError, match="does not match dtype"):
        mt.zeros(2, dtype=mt.float64, out=mt.empty(2, device=device))
    r = mt.arange(4, out=mt.empty(1, dtype=mt.int64, device=device))
    assert to_np(r).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("value", [3, 2.5, True, -1, 0.0])
def test_full_infers_dtype_like_torch(torch, device, value):
    same(mt.full((2, 3), value, device=device), torch.full((2, 3), value))


@pytest.mark.parametrize("value,dtype", [(1.5, "int64"), (3, "bool"), (-1, "uint8"), (7, "float16"),
                                         (2, "int8"), (-3.7, "int32")])
def test_full_with_dtype_like_torch(torch, device, value, dtype):
    same(mt.full((3,), value, dtype=getattr(mt, dtype), device=device),
         torch.full((3,), value, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("value,dtype", [(300, "uint8"), (200, "int8"), (2 ** 40, "int32"), (float("nan"), "int64"),
                                         (-256, "uint8"), (1e5, "float16"), (1e39, "float32")])
def test_full_overflow_is_runtime_error_like_torch(torch, value, dtype):
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.full((2,), value, dtype=getattr(torch, dtype))
    with pytest.raises(RuntimeError, match="without overflow"):
        mt.full((2,), value, dtype=getattr(mt, dtype))


def test_full_argument_errors_like_torch(torch):
    with pytest.raises(TypeError):
        torch.full(3, 1.0)
    with pytest.raises(TypeError):
        mt.full(3, 1.0)
    same(mt.full((2,), mt.tensor(3.0)), torch.full((2,), torch.tensor(3.0)))


@pytest.mark.parametrize("fn,extra", [("zeros_like", ()), ("ones_like", ()), ("empty_like", ()),
                                      ("full_like", (7,)), ("full_like", (2.5,))])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float64"])
def test_like_factories_like_torch(torch, device, fn, extra, dtype):
    m = getattr(mt, fn)(mt.zeros(2, 3, dtype=getattr(mt, dtype), device=device), *extra)
    t = getattr(torch, fn)(torch.zeros(2, 3, dtype=getattr(torch, dtype)), *extra)
    same(m, t, values=fn != "empty_like")
    assert m.device == mt.zeros(1, device=device).device
    m2 = getattr(mt, fn)(mt.zeros(2, device=device), *extra, dtype=mt.float64)
    assert m2.dtype is mt.float64


# ---------------------------------------------------------------------- ranges

ARANGE = [(5,), (0,), (2, 7), (7, 2, -1), (0, 1, 0.1), (1, 2.5, 0.5), (-3, 3, 0.7), (0.5,), (10, 0, -3),
          (0, 10, 3), (1e-3, 1e-2, 1e-3), (10 ** 18, 10 ** 18 + 3), (-5, -1), (0, 5.5), (2.0, 2.0)]


@pytest.mark.parametrize("args", ARANGE, ids=repr)
def test_arange_like_torch(torch, device, args):
    same(mt.arange(*args, device=device), torch.arange(*args), exact=False)


@pytest.mark.parametrize("args,dtype", [((0, 5.5), "int64"), ((0, 5, 1.5), "int64"), ((0.5, 5, 1.5), "int64"),
                                        ((0, 5, 0.5), "int32"), ((1, 2.5, 0.5), "int32"), ((-0.5, 3), "int64"),
                                        ((0, 10, 3), "float32"), ((1, 4), "float64"), ((0, 1, 0.25), "float16"),
                                        ((0, 6, 2), "uint8")])
def test_arange_with_dtype_like_torch(torch, device, args, dtype):
    same(mt.arange(*args, dtype=getattr(mt, dtype), device=device), torch.arange(*args, dtype=getattr(torch, dtype)),
         exact=False)


@pytest.mark.parametrize("args,kw", [((5, 0), {}), ((0, 5, 0), {}), ((0, 5, -1), {}), ((0, float("inf")), {}),
                                     ((0, float("nan")), {}), ((0, 5, 0.5), {"dtype": "int64"}),
                                     ((3,), {"dtype": "bool"})])
def test_arange_errors_like_torch(torch, args, kw):
    tkw = {k: getattr(torch, v) for k, v in kw.items()}
    mkw = {k: getattr(mt, v) for k, v in kw.items()}
    with pytest.raises(Exception) as te:
        torch.arange(*args, **tkw)
    with pytest.raises(type(te.value)):
        mt.arange(*args, **mkw)


def test_arange_tensor_arguments_and_requires_grad(torch):
    same(mt.arange(mt.tensor(3)), torch.arange(torch.tensor(3)))
    assert mt.arange(mt.tensor(2.5)).dtype is mt.float32
    x = mt.arange(3.0, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    with pytest.raises(RuntimeError):
        mt.arange(3, requires_grad=True)


@settings(max_examples=40, deadline=None)
@given(st.integers(-50, 50), st.integers(1, 60), st.sampled_from([0.1, 0.3, 0.25, 1.5, 2, 3, 7, -0.1, -3]))
def test_arange_length_rule_property(start, width, step):
    torch = pytest.importorskip("torch")
    end = start + width if step > 0 else start - width
    m, t = mt.arange(start, end, step), torch.arange(start, end, step)
    assert tuple(m.shape) == tuple(t.shape)
    np.testing.assert_allclose(m.numpy(), t.numpy(), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("args", [(0, 1, 5), (0, 10, 4), (-1, 1, 2), (3, 3, 3), (0, 1, 1), (0, 1, 0), (1, 0, 7),
                                  (0.5, 100.25, 101), (-7.3, 2.9, 1000)], ids=repr)
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "int32", "float16"])
def test_linspace_like_torch(torch, device, args, dtype):
    kw_m = {} if dtype is None else {"dtype": getattr(mt, dtype)}
    kw_t = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    m, t = mt.linspace(*args, device=device, **kw_m), torch.linspace(*args, **kw_t)
    assert m.dtype.name == tname(t) and tuple(m.shape) == tuple(t.shape)
    tol = 2e-3 if dtype == "float16" else 1e-6
    assert_close(m, t.double().numpy(), rtol=tol, atol=tol)
    if m.numel() and dtype not in ("int64", "int32"):
        assert to_np(m)[0] == t.numpy()[0] and to_np(m)[-1] == t.numpy()[-1]  # both ends exact


def test_linspace_errors_like_torch(torch):
    with pytest.raises(RuntimeError):
        torch.linspace(0, 1, -1)
    with pytest.raises(RuntimeError, match="non-negative"):
        mt.linspace(0, 1, -1)
    with pytest.raises(TypeError):
        mt.linspace(0, 1, 2.5)


@pytest.mark.parametrize("args,kw", [((0, 2, 3), {}), ((0, 3, 4), {"base": 2}), ((-1, 1, 5), {}), ((1, 0, 3), {})])
def test_logspace_like_torch(torch, device, args, kw):
    same(mt.logspace(*args, device=device, **kw), torch.logspace(*args, **kw), exact=False)


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,), (0, 3), (1,)])
@pytest.mark.parametrize("dtype", [None, "int64", "bool"])
def test_eye_like_torch(torch, device, args, dtype):
    kw_m = {} if dtype is None else {"dtype": getattr(mt, dtype)}
    kw_t = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    same(mt.eye(*args, device=device, **kw_m), torch.eye(*args, **kw_t))


def test_eye_errors_like_torch(torch):
    for args, exc in (((-1,), RuntimeError), ((2, -1), RuntimeError), ((2, 3.5), TypeError)):
        with pytest.raises(exc):
            torch.eye(*args)
        with pytest.raises(exc):
            mt.eye(*args)


@pytest.mark.parametrize("args", [(3, 3), (3, 4, 1), (4, 3, -1), (0, 3), (3, 3, 5), (3, 3, -5), (1, 1), (5, 2, 2)])
@pytest.mark.parametrize("fn", ["tril_indices", "triu_indices"])
def test_tri_indices_like_torch(torch, device, args, fn):
    same(getattr(mt, fn)(*args, device=device), getattr(torch, fn)(*args))


# ---------------------------------------------------------------------- legacy constructor and new_*

def test_legacy_tensor_constructor_like_torch(torch):
    assert tuple(mt.Tensor(2, 3).shape) == (2, 3) and mt.Tensor(2, 3).dtype is mt.float32
    same(mt.Tensor((2, 3)), torch.Tensor((2, 3)))
    same(mt.Tensor([1, 2]), torch.Tensor([1, 2]))
    same(mt.Tensor(), torch.Tensor())
    assert tuple(mt.Tensor(mt.Size([2, 3])).shape) == (2, 3)
    same(mt.Tensor(np.array([1, 2])), torch.Tensor(np.array([1, 2])))
    with pytest.raises(TypeError):
        torch.Tensor(2.5)
    with pytest.raises(TypeError):
        mt.Tensor(2.5)
    x = mt.zeros(2)
    y = mt.Tensor(x)
    y.fill_(1)
    assert x.tolist() == [1.0, 1.0]  # the same data, like torch.Tensor(float_tensor)
    assert isinstance(mt.Tensor(2), mt.Tensor)


def test_legacy_constructor_subclass():
    class MyT(mt.Tensor):
        pass
    t = MyT(2, 3)
    assert type(t) is MyT and tuple(t.shape) == (2, 3)


@pytest.mark.parametrize("src_dtype", ["float32", "int32", "float64"])
def test_new_methods_like_torch(torch, device, src_dtype):
    m = mt.zeros(2, dtype=getattr(mt, src_dtype), device=device)
    t = torch.zeros(2, dtype=getattr(torch, src_dtype))
    same(m.new_zeros(2, 3), t.new_zeros(2, 3))
    same(m.new_zeros((2, 3)), t.new_zeros((2, 3)))
    same(m.new_ones(3), t.new_ones(3))
    same(m.new_ones((2, 3), dtype=mt.int32), t.new_ones((2, 3), dtype=torch.int32))
    same(m.new_full((2,), 1.5), t.new_full((2,), 1.5))
    same(m.new_tensor([1, 2]), t.new_tensor([1, 2]))
    same(m.new_tensor([1.5, 2], dtype=mt.float64), t.new_tensor([1.5, 2], dtype=torch.float64))
    assert tuple(m.new_empty(3, 2).shape) == (3, 2) and m.new_empty(1).dtype is m.dtype
    for r in (m.new_zeros(1), m.new_ones(1), m.new_empty(1), m.new_full((1,), 2), m.new_tensor([1])):
        assert r.device == m.device
    assert m.new_zeros(2).dtype is m.dtype


def test_new_methods_requires_grad(device):
    x = mt.zeros(2, device=device)
    assert x.new_zeros(2, requires_grad=True).requires_grad
    assert x.new_tensor([1.0], requires_grad=True).requires_grad
    with pytest.raises(RuntimeError):
        mt.zeros(2, dtype=mt.int64, device=device).new_ones(2, requires_grad=True)


# ---------------------------------------------------------------------- fill_ / zero_

@pytest.mark.parametrize("dtype,value", [("float32", 2.5), ("int32", 1.5), ("uint8", -1), ("bool", 3),
                                         ("int64", True), ("float16", 3), ("float64", -0.25)])
def test_fill_values_like_torch(torch, device, dtype, value):
    m = mt.zeros(2, 2, dtype=getattr(mt, dtype), device=device)
    t = torch.zeros(2, 2, dtype=getattr(torch, dtype))
    ptr, v = m.data_ptr(), m._version
    assert m.fill_(value) is m
    same(m, t.fill_(value))
    assert m.data_ptr() == ptr and m._version == v + 1


@pytest.mark.parametrize("dtype,value", [("uint8", 300), ("int8", 200), ("int32", 2 ** 40), ("uint8", -256)])
def test_fill_overflow_like_torch(torch, device, dtype, value):
    with pytest.raises(RuntimeError):
        torch.zeros(2, dtype=getattr(torch, dtype)).fill_(value)
    m = mt.zeros(2, dtype=getattr(mt, dtype), device=device)
    with pytest.raises(RuntimeError, match="without overflow"):
        m.fill_(value)
    assert m._version == 0 and to_np(m).tolist() == [0, 0]


def test_fill_with_tensor_value(torch, device):
    m = mt.zeros(3, device=device).fill_(mt.tensor(1.5, dtype=mt.float64, device=device))
    assert to_np(m).tolist() == [1.5, 1.5, 1.5] and m.dtype is mt.float32
    with pytest.raises(RuntimeError, match="0-dimension"):
        mt.zeros(2, device=device).fill_(mt.tensor([1.0], device=device))
    m2 = mt.zeros(2, device=device).fill_(mt.tensor(4.0))  # a CPU 0-dim value works on any device
    assert to_np(m2).tolist() == [4.0, 4.0]


def test_zero_(device):
    m = mt.ones(2, 3, dtype=mt.int32, device=device)
    v = m._version
    assert m.zero_() is m
    assert to_np(m).sum() == 0 and m._version == v + 1


def test_fill_and_zero_autograd_like_torch(torch, device):
    a = mt.ones(3, device=device, requires_grad=True)
    x = a * 2
    x.fill_(3.0)
    assert x.grad_fn.name() == "FillBackward2"
    (x * mt.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    assert to_np(a.grad).tolist() == [0.0, 0.0, 0.0]

    v = mt.tensor(2.0, device=device, requires_grad=True)
    b = mt.ones(3, device=device, requires_grad=True)
    y = b * 1
    y.fill_(v)
    assert y.grad_fn.name() == "FillBackward3"
    (y * mt.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    tv = torch.tensor(2.0, requires_grad=True)
    tb = torch.ones(3, requires_grad=True)
    ty = tb * 1
    ty.fill_(tv)
    (ty * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert v.grad.item() == tv.grad.item() == 6.0
    assert to_np(b.grad).tolist() == tb.grad.tolist()

    c = mt.ones(2, device=device, requires_grad=True)
    z = c * 3
    z.zero_()
    assert z.grad_fn.name() == "ZeroBackward0"
    z.sum().backward()
    assert to_np(c.grad).tolist() == [0.0, 0.0]


def test_fill_leaf_requiring_grad_raises(device):
    a = mt.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        a.fill_(1.0)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        a.zero_()
    with mt.no_grad():
        a.fill_(5.0)
    assert to_np(a).tolist() == [5.0, 5.0]


def test_fill_through_view_reaches_base_and_gradients(device):
    base = mt.zeros(2, 3, device=device)
    base.view(6).fill_(2.0)
    assert to_np(base).sum() == 12
    a = mt.ones(4, device=device, requires_grad=True)
    x = a * 1
    x.view(2, 2).fill_(0.0)
    (x * mt.arange(4.0, device=device)).sum().backward()
    assert to_np(a.grad).tolist() == [0.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("data,dtype", [([-1], "uint8"), ([-255], "uint8"), ([256], "uint8"), ([128], "int8"),
                                        ([1.5e10], "int32"), ([float("nan")], "int64"), ([1e40], "float32"),
                                        ([True, 2], "bool"), ([2.7, -2.7], "int16")])
def test_tensor_explicit_dtype_overflow_like_torch(torch, data, dtype):
    try:
        t = torch.tensor(data, dtype=getattr(torch, dtype))
    except RuntimeError:
        with pytest.raises(RuntimeError, match="without overflow"):
            mt.tensor(data, dtype=getattr(mt, dtype))
    else:
        same(mt.tensor(data, dtype=getattr(mt, dtype)), t)
