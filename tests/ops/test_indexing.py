"""Indexing ops: __getitem__ / __setitem__ (basic views and advanced copies), index_put, gather / scatter /
scatter_add, index_select / index_add / index_copy / index_fill, masked ops, take / put / take_along_dim,
nonzero, sort / argsort / topk / kthvalue / median, unique and one_hot.

Values against NumPy and PyTorch, gradients against PyTorch and by finite differences (gradcheck on
float64), views sharing memory, in-place forms (with and without autograd recording), error types and
messages, and that a raising op leaves its operands unchanged."""
import warnings

import numpy as np
import pytest
from helpers import assert_close, to_np, unordered_writes

import minitorch_gpu as mt
from minitorch_gpu.autograd import gradcheck, gradgradcheck
from minitorch_gpu.ops.indexing import one_hot

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(dtype)


def _t(a, device, requires_grad=False):
    return mt.tensor(a, device=device, requires_grad=requires_grad)


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


def _raises_like(torch, ours_fn, torch_fn, match_message=True):
    """Both raise the same exception type (and message, modulo the library name)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as t_err:
            torch_fn()
        with pytest.raises(Exception) as m_err:
            ours_fn()
    assert type(m_err.value) is type(t_err.value), (m_err.value, t_err.value)
    if match_message:
        assert str(m_err.value) == str(t_err.value).replace("torch.", "minitorch_gpu."), (m_err.value, t_err.value)
    return m_err.value


class _Lib:
    """Builds index / value tensors in one library (mt on a device, or torch), so one test body drives both."""

    def __init__(self, lib, device):
        self.lib = lib
        self.device = device

    def __call__(self, data, dtype=None, requires_grad=False):
        if dtype is None and np.asarray(data).dtype.kind == "f":
            dtype = "float64"
        kw = {} if dtype is None else {"dtype": getattr(self.lib, dtype)}
        if self.lib is mt:
            kw["device"] = self.device
        return self.lib.tensor(data, requires_grad=requires_grad, **kw)


def _compare(ours, theirs, rtol=1e-12, atol=1e-12):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _compare(o, t, rtol, atol)
        return
    assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert_close(ours, theirs.detach().numpy(), rtol=rtol, atol=atol)


def _vs_torch(torch, device, fn, *arrays, grad=True, grad_inputs=None):
    """Run ``fn(lib, L, *tensors)`` with mt (on ``device``) and torch; compare the results and, when
    ``grad``, the gradients of a random weighted sum with respect to the float inputs."""
    rg = [grad and a.dtype.kind == "f" and (grad_inputs is None or i in grad_inputs) for i, a in enumerate(arrays)]
    ours_in = [_t(a, device, r) for a, r in zip(arrays, rg)]
    theirs_in = [torch.tensor(a, requires_grad=r) for a, r in zip(arrays, rg)]
    ours = fn(mt, _Lib(mt, device), *ours_in)
    theirs = fn(torch, _Lib(torch, "cpu"), *theirs_in)
    _compare(ours, theirs)
    if grad and any(rg):
        o = ours[0] if isinstance(ours, tuple) else ours
        t = theirs[0] if isinstance(theirs, tuple) else theirs
        w = _arr(*t.shape)
        (o * _t(w, device)).sum().backward()
        (t * torch.tensor(w)).sum().backward()
        for oi, ti, r in zip(ours_in, theirs_in, rg):
            if r:
                assert oi.grad is not None
                assert_close(oi.grad, ti.grad.numpy(), rtol=1e-12, atol=1e-12)
    return ours


def _unchanged(t, before):
    np.testing.assert_array_equal(to_np(t), before)


# ====================================================================== __getitem__: basic indexing

BASIC = [
    (0,), (-1,), (slice(1, 3),), (slice(None, None, 2),), (slice(-3, None),), (slice(5, 10),), (slice(2, 1),),
    (1, 2), (-1, slice(None), 0), (Ellipsis, 1), (1, Ellipsis), (None,), (None, 1, None), (slice(None), None, 0),
    (Ellipsis,), (Ellipsis, None), (slice(None), slice(1, None, 2), slice(None, None, 3)), (0, 0, 0), (),
    (slice(-100, 100),), (Ellipsis, slice(None, None, 2), None),
]


@pytest.mark.parametrize("index", BASIC)
def test_basic_index_matches_numpy_and_is_a_view(device, index):
    a = _arr(3, 4, 5)
    x = _t(a, device)
    r = x[index]
    expected = a[index]
    assert tuple(r.shape) == expected.shape
    assert_close(r, expected)
    assert r._base is x
    # a write through the view is seen by the base: they share memory
    r.mul_(0)
    b = a.copy()
    b[index] = 0
    assert_close(x, b)


def test_basic_index_single_int_and_slice_fast_paths(device):
    a = _arr(4, 3)
    x = _t(a, device)
    assert_close(x[2], a[2])
    assert_close(x[-4], a[-4])
    assert_close(x[1:4:2], a[1:4:2])
    assert_close(x[::3], a[::3])
    assert x[1]._base is x and x[1:3]._base is x


def test_basic_view_of_a_view_and_storage_offset(device):
    a = _arr(4, 6)
    x = _t(a, device)
    v = x[1:][:, 2:][0]
    assert_close(v, a[1:][:, 2:][0])
    assert v._base is x
    assert v.storage_offset() == 1 * 6 + 2
    assert v.stride() == (1,)
    assert x[:, ::2].stride() == (6, 2)


def test_basic_index_on_0d_tensor(device):
    x = _t(np.array(2.5), device)
    assert tuple(x[None].shape) == (1,)
    assert tuple(x[...].shape) == ()
    assert tuple(x[None, ..., None].shape) == (1, 1)
    assert x[()].item() == 2.5


def test_index_with_numpy_ints_and_0d_int_tensor(device):
    a = _arr(4, 3)
    x = _t(a, device)
    assert_close(x[np.int64(2)], a[2])
    r = x[_t(np.array(1), device)]
    assert_close(r, a[1])
    # a 0-d integer tensor selects like an int: a view
    assert r._base is x
    assert_close(x[1:_t(np.array(3), device)], a[1:3])


@pytest.mark.parametrize("index,name", [
    (0, "SelectBackward0"), ((slice(None), slice(1, None)), "SliceBackward0"), (None, "UnsqueezeBackward0"),
    (Ellipsis, "AliasBackward0"), ((0, slice(1, None)), "SliceBackward0"), ((None, 0), "SelectBackward0"),
    (slice(None), "SliceBackward0"), ([0], "IndexBackward0")])
def test_grad_fn_names_match_torch(device, torch, index, name):
    x = _t(_arr(2, 3), device, True)
    assert x[index].grad_fn.name() == name
    assert type(torch.zeros(2, 3, requires_grad=True)[index].grad_fn).__name__ == name


@pytest.mark.parametrize("index", BASIC)
def test_basic_index_grad_matches_torch(device, torch, index):
    _vs_torch(torch, device, lambda lib, L, x: x[index] * 2, _arr(3, 4, 5))


def test_basic_index_gradcheck_and_gradgradcheck(device):
    x = _t(_arr(3, 4), device, True)
    assert gradcheck(lambda t: t[1:, ::2][None, 0], (x,))
    go = _t(_arr(1, 2), device, True)
    assert gradgradcheck(lambda t: (t[1:, ::2][None, 0]) * t[0, :2], (x,), grad_outputs=(go,))


# ====================================================================== __getitem__: advanced indexing

ADVANCED = [
    lambda L: L([0, 2, 2, -1]),
    lambda L: (L([[0, 1], [2, 0]]),),
    lambda L: (slice(None), L([1, 0, 1])),
    lambda L: (L([0, 2]), L([1, 3])),
    lambda L: (L([[0], [2]]), L([1, 3, 0])),
    lambda L: (L([0, 2]), slice(None), L([1, 3])),
    lambda L: (slice(None), L([0, 1]), L([1, 3])),
    lambda L: (0, L([0, 1]), slice(1, 3)),
    lambda L: (L([1, 0]), 1),
    lambda L: (Ellipsis, L([4, 0])),
    lambda L: (None, L([1, 2]), None, slice(None, None, 2)),
    lambda L: (L([True, False, True]),),
    lambda L: (slice(None), L([True, False, True, True])),
    lambda L: (L([[True, False, True, False], [False, False, True, True], [True, True, True, True]]),),
    lambda L: (L([True, False, True]), L([0, 3])),
    lambda L: (L([True, False, True]), slice(None), L([0, 4])),
    lambda L: (True,),
    lambda L: (False, 0),
    lambda L: (L(True), L([0, 1])),
    lambda L: (L([], dtype="int64"),),
    lambda L: (L([False, False, False]),),
    lambda L: ([0, 2], [1, 1]),
    lambda L: (slice(1, None), [0, 0]),
    lambda L: (L([0, 1], dtype="int32"), 0),
    lambda L: (np.array([2, 0]),),
    lambda L: (np.array([True, True, False]), 1),
    lambda L: (slice(None), [[0, 1], [2, 3]], slice(None, 2)),
]


@pytest.mark.parametrize("make", ADVANCED)
def test_advanced_index_matches_torch(device, torch, make):
    a = _arr(3, 4, 5)
    out = _vs_torch(torch, device, lambda lib, L, x: x[make(L)], a, grad=False)
    x = _t(a, device)
    raw = x[make(_Lib(mt, device))]
    assert_close(raw, out)
    # advanced indexing copies: writing the result leaves the source alone
    assert raw._base is None
    raw.mul_(0)
    _unchanged(x, a)


@pytest.mark.parametrize("make", ADVANCED)
def test_advanced_index_grad_matches_torch(device, torch, make):
    _vs_torch(torch, device, lambda lib, L, x: x[make(L)] * 1, _arr(3, 4, 5))


def test_advanced_index_with_duplicates_accumulates_gradient(device, torch):
    _vs_torch(torch, device, lambda lib, L, x: x[L([1, 1, 1, 0, -3])], _arr(3, 2))
    x = _t(_arr(3, 2), device, True)
    assert gradcheck(lambda t: t[_t(np.array([1, 1, 0]), device), _t(np.array([0, 0, 1]), device)], (x,))
    go = _t(_arr(3, 2), device, True)
    assert gradgradcheck(lambda t: t[_t(np.array([1, 1, 0]), device)] * t[_t(np.array([2, 2, 2]), device)],
                         (x,), grad_outputs=(go,))


def test_advanced_index_result_matches_numpy(device):
    a = _arr(4, 5)
    x = _t(a, device)
    i = np.array([[3, 0], [1, 1]])
    j = np.array([4, -5])
    assert_close(x[_t(i, device), _t(j, device)], a[i, j])
    m = a > 0
    assert_close(x[_t(m, device)], a[m])
    assert_close(x[1:, [0, 4, 2]], a[1:, [0, 4, 2]])


def test_index_tensor_from_cpu_used_on_tensor_device(device):
    a = _arr(4)
    x = _t(a, device)
    r = x[mt.tensor([3, 1])]
    assert r.device == x.device
    assert_close(r, a[[3, 1]])


def test_list_index_holding_slices_reads_as_tuple(device, torch):
    a = _arr(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _t(a, device)[[0, slice(1, 3)]]
        theirs = torch.tensor(a)[[0, slice(1, 3)]]
    _compare(ours, theirs)


def test_uint8_mask_warns_and_selects(device):
    a = _arr(3)
    with pytest.warns(UserWarning, match="uint8"):
        r = _t(a, device)[mt.tensor(np.array([1, 0, 1], dtype=np.uint8), device=device)]
    assert_close(r, a[[0, 2]])


# ---------------------------------------------------------------------- __getitem__ errors

GETITEM_ERRORS = [
    lambda L: 5, lambda L: -4, lambda L: (0, 9), lambda L: (0, 0, 0), lambda L: slice(None, None, -1),
    lambda L: slice(None, None, 0), lambda L: 1.5, lambda L: L([0, 3]), lambda L: (slice(None), L([0, -5])),
    lambda L: (L([0, 1]), L([0, 9])), lambda L: L([True, False]), lambda L: (slice(None), L([True, False])),
    lambda L: L([0.0, 1.0]), lambda L: (L([[0, 1], [1, 2]]), L([0, 1, 2])), lambda L: (0, 1, 2),
    lambda L: L([0, 1], dtype="int16"), lambda L: (Ellipsis, 0, 0, 0), lambda L: (None, 0, 9), lambda L: (Ellipsis, 7),
    lambda L: (None, None, 5), lambda L: (0, L(7)),
]


@pytest.mark.parametrize("make", GETITEM_ERRORS)
def test_getitem_errors_match_torch(device, torch, make):
    x = _t(_arr(3, 4), device)
    tx = torch.tensor(_arr(3, 4))
    _raises_like(torch, lambda: x[make(_Lib(mt, device))], lambda: tx[make(_Lib(torch, "cpu"))])


@pytest.mark.parametrize("make", [lambda L: 0, lambda L: slice(0, 1), lambda L: L([0]), lambda L: L(0),
                                  lambda L: (None, 0)])
def test_getitem_errors_on_0d_tensor_match_torch(device, torch, make):
    _raises_like(torch, lambda: _t(np.array(1.0), device)[make(_Lib(mt, device))],
                 lambda: torch.tensor(1.0)[make(_Lib(torch, "cpu"))])


def test_getitem_error_messages():
    x = mt.tensor(np.zeros(3))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 1"):
        x[0, 0]
    with pytest.raises(IndexError, match=r"The shape of the mask \[4\] at index 0 does not match the shape of "
                                         r"the indexed tensor \[3\] at index 0"):
        x[mt.tensor([True, False, True, True])]
    with pytest.raises(IndexError, match="only integers, slices"):
        x[1.0]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be broadcast together with "
                                         r"shapes \[2\], \[3\]$"):
        mt.zeros(3, 3)[mt.tensor([0, 1]), mt.tensor([0, 1, 2])]


# ====================================================================== __setitem__

# rows 0 and 2 written twice: the CPU keeps the last write, as PyTorch's CPU does
DUPLICATE_SETITEM = (lambda L: L([0, 2, 0]), lambda L: L([[1.0], [2.0], [3.0]]))


def _skip_unordered_duplicates(device, index):
    if index is DUPLICATE_SETITEM[0] and unordered_writes(device):
        pytest.skip("which of several writes to one element lands is undefined on a GPU, in PyTorch too")


SETITEM = [
    (lambda L: 1, lambda L: 7.0),
    (lambda L: (slice(None), 2), lambda L: L([1.0, 2.0, 3.0])),
    (lambda L: slice(0, 2), lambda L: L([[5.0], [6.0]])),
    (lambda L: (Ellipsis, slice(None, None, 2)), lambda L: L([9.0, 8.0])),
    (lambda L: (None, 0), lambda L: L([[1.0, 2.0, 3.0, 4.0]])),
    (lambda L: (slice(None), slice(None)), lambda L: L([[[1.0, 2.0, 3.0, 4.0]]])),
    (lambda L: L([0, 2]), lambda L: 3.0),
    DUPLICATE_SETITEM,
    (lambda L: (L([0, 2]), L([3, 1])), lambda L: L([10.0, 20.0])),
    (lambda L: (slice(1, None), L([0, 0])), lambda L: L(4.0)),
    (lambda L: L([[True, False, True, False], [False] * 4, [True] * 4]), lambda L: -1.0),
    (lambda L: L([[True, False, True, False], [False] * 4, [True] * 4]), lambda L: L([1.0, 2, 3, 4, 5, 6])),
    (lambda L: (L([True, False, True]), 1), lambda L: L([7.0, 8.0])),
    (lambda L: (0, L([1, 3])), lambda L: L([[5.0, 6.0]])),
    (lambda L: (Ellipsis, L([0, 3])), lambda L: L([1.0, 2.0])),
    (lambda L: (L([0, 1]), Ellipsis, [1, 2]), lambda L: L([1.0])),
    (lambda L: True, lambda L: 0.5),
    (lambda L: L([], dtype="int64"), lambda L: 1.0),
]


@pytest.mark.parametrize("index,value", SETITEM)
def test_setitem_matches_torch(device, torch, index, value):
    _skip_unordered_duplicates(device, index)
    a = _arr(3, 4)

    def run(lib, L, x):
        y = x.clone()
        y[index(L)] = value(L)
        return y
    _vs_torch(torch, device, run, a, grad=False)


@pytest.mark.parametrize("index,value", SETITEM)
def test_setitem_gradient_flows_to_value_and_base(device, torch, index, value):
    _skip_unordered_duplicates(device, index)
    a = _arr(3, 4)

    def run(lib, L, x, v):
        y = x * 2
        val = value(L)
        if isinstance(val, lib.Tensor):
            val = val * v
        else:
            val = val * v.sum()
        y[index(L)] = val
        return y * 3
    _vs_torch(torch, device, run, a, np.array(1.5))


def test_setitem_into_view_of_intermediate_requiring_grad(device, torch):
    def run(lib, L, x, v):
        y = x * x
        view = y[1:, ::2]
        view[0] = v * 2
        view[L([1, 0]), L([1, 1])] = v[:2] * 3
        return y * view.sum()
    _vs_torch(torch, device, run, _arr(3, 4), _arr(2))


def test_setitem_gradcheck_and_gradgradcheck(device):
    def fn(x, v):
        y = x * x
        y[1:, 0] = v * v
        y[_t(np.array([0, 0]), device), _t(np.array([2, 1]), device)] = v * 3
        return y * x

    x, v = _t(_arr(3, 3), device, True), _t(_arr(2), device, True)
    assert gradcheck(fn, (x, v))
    go = _t(_arr(3, 3), device, True)
    assert gradgradcheck(fn, (x, v), grad_outputs=(go,))


def test_setitem_value_not_requiring_grad_keeps_base_grad(device, torch):
    def run(lib, L, x):
        y = x * 1
        y[0] = 0.0
        y[:, L([0, 2])] = L([[1.0, 2.0]])
        return y
    _vs_torch(torch, device, run, _arr(3, 4))


def test_setitem_on_leaf_requiring_grad_raises(device):
    x = _t(_arr(3), device, True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x[[0]] = 1.0
    with mt.no_grad():
        x[0] = 1.0
    assert x[0].item() == 1.0


def test_setitem_gives_grad_fn_to_tensor_that_did_not_require_grad(device):
    x = _t(np.zeros(3), device)
    v = _t(np.array(2.0), device, True)
    x[1] = v
    assert x.requires_grad and x.grad_fn is not None
    x.sum().backward()
    assert v.grad.item() == 1.0
    y = _t(np.zeros(3), device)
    y[[0, 2]] = v
    (y * 5).sum().backward()
    assert v.grad.item() == 11.0


def test_setitem_bumps_version_and_writes_through_views(device):
    x = _t(np.zeros((2, 3)), device)
    v = x[1]
    before = x._version
    x[1, 2] = 5.0
    assert x._version == before + 1
    assert v[2].item() == 5.0
    v[[0, 1]] = 7.0
    assert x._version == before + 2
    assert_close(x, [[0, 0, 0], [7, 7, 5]])


def test_setitem_casts_scalars_and_basic_tensor_values(device):
    x = _t(np.zeros(3, dtype=np.int64), device)
    x[0] = 2.7
    x[1:] = _t(np.array([1.9, -1.9]), device)
    assert x.tolist() == [2, 1, -1]
    b = _t(np.zeros(2, dtype=bool), device)
    b[[1]] = True
    assert b.tolist() == [False, True]


def test_setitem_value_from_cpu_into_device_tensor(device):
    x = _t(np.zeros(3), device)
    x[0:2] = mt.tensor([1.0, 2.0])
    x[[2]] = mt.tensor([3.0], dtype=mt.float64)
    assert x.tolist() == [1.0, 2.0, 3.0]


SETITEM_ERRORS = [
    (lambda L: slice(0, 2), lambda L: L([1.0, 2.0, 3.0])),
    (lambda L: L([0, 1]), lambda L: L([1.0, 2.0, 3.0])),
    (lambda L: L([0, 1]), lambda L: L([1, 2])),
    (lambda L: L([0, 1]), lambda L: L([1.0, 2.0], dtype="float32")),
    (lambda L: 0, lambda L: [1.0, 2.0]),
    (lambda L: L([0, 5]), lambda L: 1.0),
    (lambda L: 7, lambda L: 1.0),
    (lambda L: (slice(None), L([True, False])), lambda L: 1.0),
    (lambda L: slice(0, 2), lambda L: L([[1.0, 2.0], [3.0, 4.0]])),
]


@pytest.mark.parametrize("index,value", SETITEM_ERRORS)
def test_setitem_errors_match_torch_and_leave_tensor_unchanged(device, torch, index, value):
    a = _arr(4)
    x = _t(a, device)
    tx = torch.tensor(a)

    def ours():
        x[index(_Lib(mt, device))] = value(_Lib(mt, device))

    def theirs():
        tx[index(_Lib(torch, "cpu"))] = value(_Lib(torch, "cpu"))
    _raises_like(torch, ours, theirs)
    _unchanged(x, a)


def test_setitem_into_expanded_tensor_raises(device):
    x = _t(_arr(1, 3), device).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x[0] = 1.0
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x[[0]] = 1.0


# ====================================================================== index_put

@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_torch(device, torch, accumulate):
    def run(lib, L, x, v):
        return x.index_put((L([0, 2, 0]), L([1, 1, 1])), v * 2, accumulate=accumulate)
    if accumulate or not unordered_writes(device):
        _vs_torch(torch, device, run, _arr(3, 4), _arr(3), grad_inputs=(0, 1) if accumulate else (1,))

    def run_mask(lib, L, x, v):
        return lib.index_put(x, (L([True, False, True]),), v, accumulate)
    _vs_torch(torch, device, run_mask, _arr(3, 4), _arr(4))


def test_index_put_gradients_and_gradcheck(device, torch):
    def run(lib, L, x, v):
        y = x * 1
        return y.index_put((L([2, 0]),), v)
    _vs_torch(torch, device, run, _arr(3, 2), _arr(2, 2))
    x, v = _t(_arr(3, 2), device, True), _t(_arr(2), device, True)
    i = _t(np.array([1, 1, 0]), device)
    assert gradcheck(lambda a, b: a.index_put((i,), b, accumulate=True), (x, v))
    assert gradcheck(lambda a, b: a.index_put((i[1:],), b), (x, v))
    go = _t(_arr(3, 2), device, True)
    assert gradgradcheck(lambda a, b: a.index_put((i,), b * b, accumulate=True) * a, (x, v), grad_outputs=(go,))


@pytest.mark.parametrize("recording", [False, True])
def test_index_put_inplace(device, torch, recording):
    def run(lib, L, x, v):
        y = x * 1 if recording else x.detach().clone()
        r = y.index_put_((L([0, 0, 2]),), v, accumulate=True)
        assert r is y
        return y
    _vs_torch(torch, device, run, _arr(3, 2), _arr(2), grad=recording)


def test_index_put_errors_match_torch(device, torch):
    a = _arr(4, 3)
    x, tx = _t(a, device), torch.tensor(a)
    for mk_i, mk_v in [
        (lambda L: (L([0, 9]),), lambda L: L(1.0)),
        (lambda L: (L([0, 1]),), lambda L: L([1.0, 2.0, 3.0, 4.0])),
        (lambda L: (L([0, 1]),), lambda L: L(1.0, dtype="float32")),
        (lambda L: (L([0.0]),), lambda L: L(1.0)),
        (lambda L: (L([True, False]),), lambda L: L(1.0)),
        (lambda L: (L([0]),) * 3, lambda L: L(1.0)),
        (lambda L: L([0]), lambda L: L(1.0)),
    ]:
        _raises_like(torch, lambda: x.index_put_(mk_i(_Lib(mt, device)), mk_v(_Lib(mt, device))),
                     lambda: tx.index_put_(mk_i(_Lib(torch, "cpu")), mk_v(_Lib(torch, "cpu"))))
        _unchanged(x, a)


# ====================================================================== gather / scatter / scatter_add

def _idx(*data):
    return np.array(data, dtype=np.int64)


@pytest.mark.parametrize("dim,index", [
    (0, [[0, 1, 2], [2, 2, 0]]), (1, [[0, 0], [3, 1], [1, 2]]), (-1, [[3], [0]]), (1, [[0, 1, 2, 3, 3]]),
    (0, np.zeros((0, 2), dtype=np.int64)),
])
def test_gather_matches_torch(device, torch, dim, index):
    _vs_torch(torch, device, lambda lib, L, x: x.gather(dim, L(index, dtype="int64")), _arr(3, 4))
    _vs_torch(torch, device, lambda lib, L, x: lib.gather(x, dim, L(index, dtype="int32")), _arr(3, 4), grad=False)


def test_gather_matches_numpy_take_along_axis(device):
    a = _arr(3, 4, 5)
    i = RNG.integers(0, 4, size=(3, 6, 5))
    assert_close(_t(a, device).gather(1, _t(i, device)), np.take_along_axis(a, i, 1))


def test_gather_0d_and_gradcheck(device, torch):
    _vs_torch(torch, device, lambda lib, L, x: x.gather(0, L(0)), np.array(3.0))
    _vs_torch(torch, device, lambda lib, L, x: x.gather(0, L([0, 0])), np.array(3.0))
    x = _t(_arr(3, 4), device, True)
    i = _t(_idx([0, 0, 1], [2, 2, 2]), device)
    assert gradcheck(lambda t: t.gather(1, i), (x,))
    go = _t(_arr(2, 3), device, True)
    assert gradgradcheck(lambda t: t.gather(1, i) * t[:2, :3], (x,), grad_outputs=(go,))


@pytest.mark.parametrize("make", [
    lambda L: (1, L([[0, 5]])), lambda L: (1, L([[0, -1]])), lambda L: (1, L([0, 1])),
    lambda L: (0, L([[0, 1, 1, 0]])), lambda L: (2, L([[0]])), lambda L: (1, L([[0.0]])),
    lambda L: (0, L([[0], [1], [2]])),
])
def test_gather_errors_match_torch(device, torch, make):
    a = _arr(2, 3)
    _raises_like(torch, lambda: _t(a, device).gather(*make(_Lib(mt, device))),
                 lambda: torch.tensor(a).gather(*make(_Lib(torch, "cpu"))))


@pytest.mark.parametrize("form", ["src", "value", "add", "scatter_add", "multiply"])
def test_scatter_matches_torch(device, torch, form):
    index = [[0, 1, 0], [2, 0, 1]]

    def run(lib, L, x, s):
        i = L(index)
        if form == "src":
            return x.scatter(0, i, s)
        if form == "value":
            return lib.scatter(x, 1, i, value=2.5)
        if form == "add":
            return x.scatter(0, i, s, reduce="add")
        if form == "multiply":
            return x.scatter(0, i, s, reduce="multiply")
        return lib.scatter_add(x, 0, i, s)
    grad = form in ("src", "value", "scatter_add")
    _vs_torch(torch, device, run, _arr(3, 3), _arr(2, 3), grad=grad, grad_inputs=(0,) if form == "value" else None)


def test_scatter_matches_numpy_put_along_axis(device):
    a = _arr(4, 5)
    i = np.argsort(RNG.uniform(size=(4, 5)), axis=1)[:, :3]
    s = _arr(4, 3)
    expected = a.copy()
    np.put_along_axis(expected, i, s, axis=1)
    assert_close(_t(a, device).scatter(1, _t(i, device), _t(s, device)), expected)


def test_scatter_add_accumulates_duplicates(device):
    a = np.zeros((2, 4))
    i = _idx([0, 0, 0], [3, 3, 1])
    s = np.ones((2, 3))
    expected = a.copy()
    for r in range(2):
        for c in range(3):
            expected[r, i[r, c]] += s[r, c]
    assert_close(_t(a, device).scatter_add(1, _t(i, device), _t(s, device)), expected)
    xi = _t(np.zeros((2, 4), dtype=np.int64), device)
    assert_close(xi.scatter_add(1, _t(i, device), _t(np.ones((2, 3), dtype=np.int64), device)), expected)


def test_scatter_src_larger_than_index_gets_padded_gradient(device):
    x = _t(_arr(2, 3), device, True)
    s = _t(_arr(2, 3), device, True)
    i = _t(_idx([0, 1]), device)
    assert gradcheck(lambda a, b: a.scatter(1, i, b), (x, s))
    assert gradcheck(lambda a, b: a.scatter_add(1, i, b), (x, s))


def test_scatter_gradgradcheck(device):
    x, s = _t(_arr(3, 3), device, True), _t(_arr(2, 3), device, True)
    i = _t(_idx([0, 1, 2], [2, 0, 1]), device)
    go = _t(_arr(3, 3), device, True)
    assert gradgradcheck(lambda a, b: a.scatter(0, i, b * b) * a, (x, s), grad_outputs=(go,))
    assert gradgradcheck(lambda a, b: a.scatter_add(0, i, b * b) * a, (x, s), grad_outputs=(go,))


def test_scatter_reduce_has_no_derivative(device, torch):
    x = _t(_arr(2, 3), device, True) * 1
    r = x.scatter(1, _t(_idx([0, 0]), device), _t(_arr(1, 3), device), reduce="add")
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        r.sum().backward()


@pytest.mark.parametrize("recording", [False, True])
def test_scatter_inplace_forms(device, torch, recording):
    def run(lib, L, x, s):
        y = x * 1 if recording else x.detach().clone()
        r1 = y.scatter_(1, L([[0], [2]]), s[:, :1] * 1)
        r2 = y.scatter_add_(1, L([[1, 1], [0, 0]]), s * 2)
        r3 = y.scatter_(0, L([[1, 0, 1]]), -1.0)
        r4 = y.scatter_(0, L([[0, 0]]), s[:1] * 1, reduce="multiply") if not recording else y
        assert r1 is y and r2 is y and r3 is y and r4 is y
        return y
    _vs_torch(torch, device, run, _arr(2, 3), _arr(2, 2), grad=recording)


@pytest.mark.parametrize("make", [
    lambda L, s: (1, L([[0, 5]]), 1.0), lambda L, s: (1, L([[0, 1]]), L([[9.0]])),
    lambda L, s: (1, L([[0, 1]]), L([[9, 8]])), lambda L, s: (1, L([[0.0]]), 1.0), lambda L, s: (1, L([0]), 1.0),
    lambda L, s: (1, L([[0, 1, 2, 0]]), s), lambda L, s: (1, L([[0, -1]]), 2.5),
])
def test_scatter_errors_match_torch_and_leave_tensor_unchanged(device, torch, make):
    a = _arr(2, 3)
    x, tx = _t(a, device), torch.tensor(a)
    _raises_like(torch, lambda: x.scatter_(*make(_Lib(mt, device), x.clone())),
                 lambda: tx.scatter_(*make(_Lib(torch, "cpu"), tx.clone())))
    _unchanged(x, a)
    _raises_like(torch, lambda: x.scatter(1, _t(_idx([0]), device), 1.0, reduce="max"),
                 lambda: tx.scatter(1, torch.tensor([[0]]), 1.0, reduce="max"))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch(device, torch, reduce, include_self):
    index = [[0, 1, 0, 2], [2, 2, 1, 1]]
    x = np.array([[2.0, 0.0, 3.0], [1.0, -1.0, 4.0]])
    # ties with the input and zeros exercise the even split (amax/amin) and the zero rules (prod)
    s = np.array([[1.0, 0.0, 5.0, 3.0], [4.0, 4.0, -1.0, 2.0]])

    def run(lib, L, a, b):
        return a.scatter_reduce(1, L(index), b, reduce, include_self=include_self)
    _vs_torch(torch, device, run, x, s)
    _vs_torch(torch, device, lambda lib, L, a, b: lib.scatter_reduce(a, 0, L([[0, 1, 1]]), b, reduce,
                                                                      include_self=include_self),
              _arr(2, 3), _arr(1, 3))
    xi = np.array([[-1, 5, 2], [3, 3, 0]])
    _vs_torch(torch, device, lambda lib, L, a, b: a.scatter_reduce(1, L(index), b, reduce,
                                                                    include_self=include_self),
              xi, np.array([[1, 0, 5, 3], [4, 4, -1, 2]]))


def test_scatter_reduce_gradcheck_and_inplace(device, torch):
    x, s = _t(_arr(2, 3), device, True), _t(_arr(2, 4), device, True)
    i = _t(_idx([0, 1, 0, 2], [2, 2, 1, 1]), device)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            assert gradcheck(lambda a, b: a.scatter_reduce(1, i, b, reduce, include_self=include_self), (x, s))
    go = _t(_arr(2, 3), device, True)
    assert gradgradcheck(lambda a, b: a.scatter_reduce(1, i, b * b, "mean") * a, (x, s), grad_outputs=(go,))

    def run(lib, L, a, b):
        y = a * 1
        assert y.scatter_reduce_(1, L([[0, 0], [1, 2]]), b, "amax", include_self=False) is y
        return y
    _vs_torch(torch, device, run, _arr(2, 3), _arr(2, 2))
    _vs_torch(torch, device, lambda lib, L, a, b: a.detach().clone().scatter_reduce_(1, L([[0, 0]]), b, "sum"),
              _arr(2, 3), _arr(1, 2), grad=False)
    a = _arr(2, 3)
    _raises_like(torch, lambda: _t(a, device).scatter_reduce(1, _t(_idx([0]), device), _t(a, device), "foo"),
                 lambda: torch.tensor(a).scatter_reduce(1, torch.tensor([[0]]), torch.tensor(a), "foo"))


@pytest.mark.parametrize("op", ["multiply", "maximum", "minimum"])
@pytest.mark.parametrize("contiguous", [True, False])
def test_reduce_at_rounds_matches_numpy_ufunc_at(device, op, contiguous):
    """The ufunc.at substitute for backends without one (CuPy's multiply), checked against NumPy."""
    be = mt.tensor([0.0], device=device)._be
    xp = be.xp
    base = _arr(4, 6)
    a = base if contiguous else base[:, ::2]
    idx = (np.array([0, 3, 0, 0, 2]), slice(None))
    vals = _arr(5, a.shape[1])
    expected = a.copy()
    getattr(np, op).at(expected, idx, vals)
    target = xp.asarray(base.copy())
    if not contiguous:
        target = target[:, ::2]
    be._reduce_at_rounds(getattr(xp, op), target, (xp.asarray(idx[0]), idx[1]), xp.asarray(vals))
    np.testing.assert_allclose(be.to_numpy(target), expected, rtol=1e-12)


# ====================================================================== index_select / add / copy / fill

@pytest.mark.parametrize("dim,index", [(0, [2, 0, 0]), (1, [3]), (-1, [1, 2, 3, 0, 0]), (1, 2), (0, [])])
def test_index_select_matches_torch_and_numpy(device, torch, dim, index):
    a = _arr(3, 4)
    r = _vs_torch(torch, device, lambda lib, L, x: x.index_select(dim, L(index, dtype="int64")), a)
    expected = np.take(a, np.reshape(np.array(index, dtype=np.int64), (-1,)), axis=dim)
    assert_close(r, expected)


def test_index_select_0d_and_gradcheck(device, torch):
    _vs_torch(torch, device, lambda lib, L, x: lib.index_select(x, 0, L(0)), np.array(2.0))
    x = _t(_arr(3, 2), device, True)
    i = _t(np.array([2, 2, 0]), device)
    assert gradcheck(lambda t: t.index_select(0, i), (x,))
    go = _t(_arr(3, 2), device, True)
    assert gradgradcheck(lambda t: t.index_select(0, i) * t, (x,), grad_outputs=(go,))


@pytest.mark.parametrize("alpha", [1, 2.5])
def test_index_add_matches_torch(device, torch, alpha):
    _vs_torch(torch, device, lambda lib, L, x, s: x.index_add(1, L([0, 2, 0]), s, alpha=alpha),
              _arr(2, 4), _arr(2, 3))
    _vs_torch(torch, device, lambda lib, L, x, s: lib.index_add(x, 0, L([1]), s), np.array([1.0, 2.0]), np.array([5.0]))
    _vs_torch(torch, device, lambda lib, L, x, s: x.index_add(0, L([0]), s), np.array(1.0), np.array(2.0))
    xi = np.arange(6).reshape(2, 3)
    _vs_torch(torch, device, lambda lib, L, x, s: x.index_add(1, L([0, 1]), s, alpha=alpha), xi,
              np.ones((2, 2), dtype=np.int64))


def test_index_add_gradcheck(device):
    x, s = _t(_arr(3, 2), device, True), _t(_arr(4, 2), device, True)
    i = _t(np.array([0, 2, 0, 1]), device)
    assert gradcheck(lambda a, b: a.index_add(0, i, b, alpha=3.0), (x, s))
    go = _t(_arr(3, 2), device, True)
    assert gradgradcheck(lambda a, b: a.index_add(0, i, b * b) * a, (x, s), grad_outputs=(go,))


def test_index_copy_and_index_fill_match_torch(device, torch):
    _vs_torch(torch, device, lambda lib, L, x, s: x.index_copy(1, L([2, 0]), s), _arr(2, 4), _arr(2, 2))
    _vs_torch(torch, device, lambda lib, L, x, s: lib.index_copy(x, 0, L(1), s), _arr(3), np.array(5.0))
    _vs_torch(torch, device, lambda lib, L, x: x.index_fill(1, L([0, -1, 0]), -2.0), _arr(2, 4))
    _vs_torch(torch, device, lambda lib, L, x, v: lib.index_fill(x, 0, L([0, 2, 2]), v * 2), _arr(3, 2),
              np.array(0.5))
    _vs_torch(torch, device, lambda lib, L, x: x.index_fill(0, L([1]), 2.7), np.arange(4), grad=False)
    x, s = _t(_arr(3, 2), device, True), _t(_arr(2, 2), device, True)
    i = _t(np.array([2, 0]), device)
    assert gradcheck(lambda a, b: a.index_copy(0, i, b), (x, s))
    v = _t(np.array(0.3), device, True)
    assert gradcheck(lambda a, b: a.index_fill(1, i[1:], b), (x, v))


@pytest.mark.parametrize("recording", [False, True])
def test_index_inplace_forms(device, torch, recording):
    def run(lib, L, x, s):
        y = x * 1 if recording else x.detach().clone()
        assert y.index_add_(0, L([1, 1]), s, alpha=2) is y
        assert y.index_copy_(1, L([0]), s[:1, :1].expand(3, 1) * 1) is y
        assert y.index_fill_(0, L([2]), 7.0) is y
        assert y.index_fill_(1, L([1]), s[0, 0] * 1) is y
        return y
    _vs_torch(torch, device, run, _arr(3, 2), _arr(2, 2), grad=recording)


@pytest.mark.parametrize("call", [
    lambda L, x: x.index_select(1, L([0, 5])), lambda L, x: x.index_select(1, L([0, -1])),
    lambda L, x: x.index_select(1, L([[0, 1]])), lambda L, x: x.index_select(1, L([0.0])),
    lambda L, x: x.index_add_(1, L([0, 0]), L([[1.0, 1.0], [1.0, 1.0]], dtype="float32")),
    lambda L, x: x.index_add_(1, L([0, 5]), x[:, :2].clone()), lambda L, x: x.index_add_(1, L([0, 0]), x.clone()),
    lambda L, x: x.index_add_(1, L([0.0]), x[:, :1].clone()), lambda L, x: x.index_add_(1, L([0]), L([[1], [2]])),
    lambda L, x: x.index_add_(1, L([[0, 0]]), x[:, :2].clone()),
    lambda L, x: x.index_add_(0, L([0, 0]), x.clone()[:, :2]),
    lambda L, x: x.index_copy_(1, L([0, 5]), x[:, :2].clone()), lambda L, x: x.index_copy_(1, L([0], dtype="int32"),
                                                                                          x[:, :1].clone()),
    lambda L, x: x.index_copy_(1, L([[0]]), x[:, :1].clone()), lambda L, x: x.index_copy_(1, L([0, 2]), x.clone()),
    lambda L, x: x.index_fill_(1, L([0, 5]), -1.0), lambda L, x: x.index_fill_(1, L([0, 2]), L([-1.0])),
    lambda L, x: x.index_fill_(1, L([0], dtype="int32"), 1.0), lambda L, x: x.index_fill_(1, L([[0]]), 1.0),
])
def test_index_op_errors_match_torch_and_leave_tensor_unchanged(device, torch, call):
    a = _arr(2, 3)
    x, tx = _t(a, device), torch.tensor(a)
    _raises_like(torch, lambda: call(_Lib(mt, device), x), lambda: call(_Lib(torch, "cpu"), tx))
    _unchanged(x, a)


# ====================================================================== masked ops

def _mask(*shape):
    return RNG.uniform(size=shape) > 0.5


@pytest.mark.parametrize("xs,ms", [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((), ()), ((2, 1), (1, 3))])
def test_masked_fill_and_select_match_torch(device, torch, xs, ms):
    a, m = _arr(*xs), _mask(*ms)
    _vs_torch(torch, device, lambda lib, L, x: x.masked_fill(L(m), -2.0), a)
    _vs_torch(torch, device, lambda lib, L, x: lib.masked_select(x, L(m)), a)
    _vs_torch(torch, device, lambda lib, L, x, v: x.masked_fill(L(m), v * 3), a, np.array(0.25))
    b = np.broadcast_to(a, np.broadcast_shapes(xs, ms))
    assert_close(_t(a, device).masked_select(_t(m, device)), b[np.broadcast_to(m, b.shape)])


def test_masked_fill_value_casts_like_torch(device, torch):
    m = np.array([True, False, True])
    _vs_torch(torch, device, lambda lib, L, x: x.masked_fill(L(m), 1.7), np.zeros(3, dtype=np.int64))
    _vs_torch(torch, device, lambda lib, L, x: x.masked_fill(L(m), L(2.5)), np.zeros(3, dtype=np.int64))
    _vs_torch(torch, device, lambda lib, L, x: x.masked_fill(L(m), True), np.zeros(3))


def test_masked_ops_gradcheck(device):
    x = _t(_arr(3, 4), device, True)
    v = _t(np.array(0.7), device, True)
    m = _t(_mask(3, 4), device)
    assert gradcheck(lambda a, b: a.masked_fill(m, b), (x, v))
    assert gradcheck(lambda a: a.masked_select(m), (x,))
    s = _t(_arr(12), device, True)
    assert gradcheck(lambda a, b: a.masked_scatter(m, b), (x, s))
    go = _t(_arr(3, 4), device, True)
    assert gradgradcheck(lambda a, b: a.masked_fill(m, b) * a, (x, v), grad_outputs=(go,))


def test_masked_scatter_matches_torch(device, torch):
    m = _mask(3, 4)
    _vs_torch(torch, device, lambda lib, L, x, s: x.masked_scatter(L(m), s * 2), _arr(3, 4), _arr(13))
    _vs_torch(torch, device, lambda lib, L, x, s: x.masked_scatter(L(m[0]), s), _arr(3, 4), _arr(4, 4))
    _vs_torch(torch, device, lambda lib, L, x, s: x.masked_scatter(L(m), s), _arr(4), _arr(12))


@pytest.mark.parametrize("recording", [False, True])
def test_masked_inplace_forms(device, torch, recording):
    m = _mask(3, 4)

    def run(lib, L, x, s):
        y = x * 1 if recording else x.detach().clone()
        assert y.masked_fill_(L(m), 0.5) is y
        assert y.masked_fill_(L(m[0]), s[0] * 1) is y
        assert y.masked_scatter_(L(~m), s * 2) is y
        return y
    _vs_torch(torch, device, run, _arr(3, 4), _arr(12), grad=recording)


@pytest.mark.parametrize("call", [
    lambda L, x: x.masked_fill_(L([True, False]), 1.0), lambda L, x: x.masked_fill(L([1, 0, 1]), 1.0),
    lambda L, x: x.masked_fill_(L([[True, False, True]] * 2), 1.0), lambda L, x: x.masked_fill(L([True] * 3), L([2.0])),
    lambda L, x: x.masked_select(L([1, 0, 1])), lambda L, x: x.masked_select(L([True, False])),
    lambda L, x: x.masked_scatter_(L([True, False, True]), L([5.0])),
    lambda L, x: x.masked_scatter_(L([True, False, True]), L([5, 6])),
])
def test_masked_op_errors_match_torch_and_leave_tensor_unchanged(device, torch, call):
    a = _arr(3)
    x, tx = _t(a, device), torch.tensor(a)
    _raises_like(torch, lambda: call(_Lib(mt, device), x), lambda: call(_Lib(torch, "cpu"), tx))
    _unchanged(x, a)


# ====================================================================== take / put / take_along_dim

def test_take_put_take_along_dim_match_torch(device, torch):
    a = _arr(2, 3)
    _vs_torch(torch, device, lambda lib, L, x: lib.take(x, L([[0, 5], [-1, 5]])), a)
    _vs_torch(torch, device, lambda lib, L, x: x.take(L(1)), a)
    _vs_torch(torch, device, lambda lib, L, x, s: x.put(L([0, 5, 0]), s, accumulate=True), a, _arr(3))
    _vs_torch(torch, device, lambda lib, L, x, s: x.put(L([[4, 1]]), s), a, _arr(2))
    _vs_torch(torch, device, lambda lib, L, x: lib.take_along_dim(x, L([[0, 2], [1, 1]]), 1), a)
    _vs_torch(torch, device, lambda lib, L, x: lib.take_along_dim(x, L([[2], [0]]), dim=-1), _arr(1, 3))
    _vs_torch(torch, device, lambda lib, L, x: lib.take_along_dim(x, L([5, 0])), a)
    _vs_torch(torch, device, lambda lib, L, x: x.take_along_dim(L([[0], [1]]), 0), _arr(2, 3, 1)[:, :, 0])
    np.testing.assert_array_equal(to_np(_t(a, device).take(_t(np.array([5, 0]), device))), np.take(a, [5, 0]))


def test_put_inplace_and_take_gradcheck(device, torch):
    def run(lib, L, x, s):
        y = x * 1
        assert y.put_(L([1, 1]), s, accumulate=True) is y
        return y
    _vs_torch(torch, device, run, _arr(2, 2), _arr(2))
    y = _t(_arr(2, 2), device)[:, 0:1]
    y.put_(_t(np.array([1]), device), _t(np.array([9.0]), device))
    assert y.tolist()[1] == [9.0]
    x = _t(_arr(3, 2), device, True)
    assert gradcheck(lambda t: t.take(_t(np.array([[0, 0], [5, 2]]), device)), (x,))


@pytest.mark.parametrize("call", [
    lambda L, x: x.take(L([0, 6])), lambda L, x: x.take(L([0, -7])), lambda L, x: x.take(L([0], dtype="int32")),
    lambda L, x: x.put_(L([0, 6]), L([1.0, 2.0])), lambda L, x: x.put_(L([0, 1]), L([1.0, 2.0, 3.0])),
    lambda L, x: x.put_(L([0, 1]), L([1, 2])),
    lambda L, x: x.take_along_dim(L([0, 1]), 0), lambda L, x: x.take_along_dim(L([[0, 1]], dtype="int32"), 0),
])
def test_take_put_errors_match_torch(device, torch, call):
    a = _arr(2, 3)
    x, tx = _t(a, device), torch.tensor(a)
    _raises_like(torch, lambda: call(_Lib(mt, device), x), lambda: call(_Lib(torch, "cpu"), tx))
    _unchanged(x, a)


# ====================================================================== nonzero / argwhere

@pytest.mark.parametrize("shape", [(3, 4), (5,), (), (0, 3), (2, 2, 2)])
def test_nonzero_matches_numpy_and_torch(device, torch, shape):
    a = (RNG.uniform(size=shape) > 0.5).astype(np.float64) * 2.0
    _vs_torch(torch, device, lambda lib, L, x: lib.nonzero(x), a, grad=False)
    _vs_torch(torch, device, lambda lib, L, x: x.nonzero(as_tuple=True), a, grad=False)
    _vs_torch(torch, device, lambda lib, L, x: lib.argwhere(x), a, grad=False)
    if shape:
        np.testing.assert_array_equal(to_np(mt.nonzero(_t(a, device))), np.argwhere(a))
    _vs_torch(torch, device, lambda lib, L, x: lib.nonzero(x), np.array(0.0), grad=False)
    _vs_torch(torch, device, lambda lib, L, x: lib.nonzero(x, as_tuple=True), np.array(0.0), grad=False)


# ====================================================================== sort / argsort / topk / kthvalue / median

SORT_DATA = [
    np.array([3.0, 1.0, 2.0, 1.0, np.nan, -np.inf, 2.0]), np.array([[3, 1, 3, 0], [2, 2, 2, 2]], dtype=np.int64),
    np.array([True, False, True]), np.array(4.0), np.zeros((2, 0)),
]


@pytest.mark.parametrize("data", SORT_DATA)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_matches_torch(device, torch, data, descending):
    _vs_torch(torch, device, lambda lib, L, x: tuple(lib.sort(x, dim=-1, descending=descending, stable=True)),
              data, grad=False)
    _vs_torch(torch, device, lambda lib, L, x: tuple(lib.sort(x, -1, descending)), data, grad=False)
    r = mt.sort(_t(data, device))
    _vs_torch(torch, device, lambda lib, L, x: x.argsort(dim=-1, descending=descending, stable=True), data,
              grad=False)
    assert isinstance(r, tuple) and r.values is r[0] and r.indices is r[1]
    assert "return_types.sort" in repr(r)


def test_sort_along_dims_matches_numpy_and_grad(device, torch):
    a = _arr(3, 4, 5)
    for dim in range(3):
        v, i = mt.sort(_t(a, device), dim=dim)
        assert_close(v, np.sort(a, axis=dim))
        np.testing.assert_array_equal(to_np(i), np.argsort(a, axis=dim, kind="stable"))
        _vs_torch(torch, device, lambda lib, L, x: x.sort(dim, descending=True)[0], a)
    x = _t(_arr(3, 4), device, True)
    assert gradcheck(lambda t: t.sort(0)[0], (x,))
    go = _t(_arr(3, 4), device, True)
    assert gradgradcheck(lambda t: t.sort(1, True)[0] * t, (x,), grad_outputs=(go,))


@pytest.mark.parametrize("k,dim,largest", [(2, -1, True), (1, 0, False), (4, 1, True), (0, 1, True), (3, 0, True)])
def test_topk_matches_torch(device, torch, k, dim, largest):
    a = RNG.permutation(12).reshape(3, 4).astype(np.float64)
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.topk(k, dim=dim, largest=largest)), a)
    r = _t(a, device).topk(k, dim, largest)
    assert "return_types.topk" in repr(r) and r.values is r[0] and r.indices is r[1]
    _vs_torch(torch, device, lambda lib, L, x: x.topk(k, dim, largest)[0], a)


def test_topk_nan_and_0d_and_errors(device, torch):
    a = np.array([1.0, np.nan, 3.0])
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.topk(2)), a, grad=False)
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.topk(2, largest=False)), a, grad=False)
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.topk(1)), np.array(3.0))
    for k in (4, -1):
        _raises_like(torch, lambda: _t(a, device).topk(k), lambda: torch.tensor(a).topk(k))
    _raises_like(torch, lambda: _t(a, device).topk(1, dim=2), lambda: torch.tensor(a).topk(1, dim=2))
    x = _t(_arr(3, 4), device, True)
    assert gradcheck(lambda t: t.topk(2, dim=0)[0], (x,))


@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_and_median_match_torch(device, torch, keepdim):
    a = RNG.permutation(20).reshape(4, 5).astype(np.float64)
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.kthvalue(2, 1, keepdim)), a)
    assert "return_types.kthvalue" in repr(_t(a, device).kthvalue(2, 1, keepdim))
    _vs_torch(torch, device, lambda lib, L, x: tuple(lib.kthvalue(x, 4, 0, keepdim=keepdim)), a)
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.median(0, keepdim)), a)
    assert "return_types.median" in repr(_t(a, device).median(0, keepdim))
    _vs_torch(torch, device, lambda lib, L, x: tuple(lib.median(x, dim=-1, keepdim=keepdim)), a)
    _vs_torch(torch, device, lambda lib, L, x: x.median(), a)
    assert_close(_t(a, device).median(1)[0], np.sort(a, 1)[:, 2])


def test_median_nan_ties_and_edge_cases(device, torch):
    nan = np.nan
    _vs_torch(torch, device, lambda lib, L, x: x.median(), np.array([1.0, 4.0, 2.0, 3.0]))
    _vs_torch(torch, device, lambda lib, L, x: x.median(), np.array([1.0, nan, 2.0, 3.0]), grad=False)
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.median(1)), np.array([[1.0, nan, 2.0, nan], [3, 1, 2, 0]]),
              grad=False)
    _vs_torch(torch, device, lambda lib, L, x: x.median(), np.array([2.0, 1.0, 2.0, 3.0, 2.0]))
    _vs_torch(torch, device, lambda lib, L, x: x.median(), np.array([5, 1, 4, 2], dtype=np.int64), grad=False)
    _vs_torch(torch, device, lambda lib, L, x: x.median(), np.zeros(0), grad=False)
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.kthvalue(3)), np.array([1.0, nan, 0.0]), grad=False)
    _vs_torch(torch, device, lambda lib, L, x: tuple(x.kthvalue(1)), np.array(2.0))
    for call in (lambda x: x.kthvalue(5, 1), lambda x: x.kthvalue(0), lambda x: x[:, :0].median(1),
                 lambda x: x[:, :0].kthvalue(1, 1), lambda x: x.median(3)):
        _raises_like(torch, lambda: call(_t(_arr(2, 3), device)), lambda: call(torch.tensor(_arr(2, 3))))
    x = _t(_arr(5), device, True)
    assert gradcheck(lambda t: t.median(), (x,))
    assert gradcheck(lambda t: t.kthvalue(2)[0], (x,))


# ====================================================================== unique / unique_consecutive / one_hot

@pytest.mark.parametrize("data", [
    np.array([3, 1, 2, 1, 3, 3]), np.array([[3.0, np.nan], [np.nan, 1.0]]), np.array(5.0), np.zeros(0),
    np.array([True, False, True]),
])
def test_unique_matches_torch_and_numpy(device, torch, data):
    for ri in (False, True):
        for rc in (False, True):
            _vs_torch(torch, device, lambda lib, L, x: lib.unique(x, return_inverse=ri, return_counts=rc), data,
                      grad=False)
    if not np.isnan(data.astype(np.float64)).any():
        assert_close(mt.unique(_t(data, device)), np.unique(data))


def test_unique_dim_and_consecutive_match_torch(device, torch):
    a = np.array([[3, 1], [2, 1], [3, 1], [2, 0]])
    for dim in (0, 1, -1):
        _vs_torch(torch, device, lambda lib, L, x: lib.unique(x, dim=dim, return_inverse=True, return_counts=True),
                  a, grad=False)
    np.testing.assert_array_equal(to_np(mt.unique(_t(a, device), dim=0)), np.unique(a, axis=0))
    b = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    _vs_torch(torch, device, lambda lib, L, x: lib.unique_consecutive(x, return_inverse=True, return_counts=True),
              b, grad=False)
    _vs_torch(torch, device, lambda lib, L, x: x.unique_consecutive(), b, grad=False)
    _vs_torch(torch, device, lambda lib, L, x: lib.unique_consecutive(x, return_counts=True, dim=0),
              np.array([[1, 2], [1, 2], [0, 1], [1, 2]]), grad=False)
    _raises_like(torch, lambda: mt.unique(_t(a, device), dim=2), lambda: torch.unique(torch.tensor(a), dim=2))


def test_one_hot_matches_torch(device, torch):
    F = torch.nn.functional
    for data, n in [([0, 2], -1), ([0, 2], 5), ([[1], [0]], 3), (1, 3), ([], 3)]:
        a = np.array(data, dtype=np.int64)
        ours = one_hot(_t(a, device), n)
        theirs = F.one_hot(torch.tensor(a), n)
        _compare(ours, theirs)
    for data, n, dt in [([0, 2], 2, np.int64), ([0, -2], 5, np.int64), ([0, 2], 5, np.int32), ([], -1, np.int64),
                        ([1], 0, np.int64), ([1], -2, np.int64)]:
        a = np.array(data, dtype=dt)
        _raises_like(torch, lambda: one_hot(_t(a, device), n), lambda: F.one_hot(torch.tensor(a), n))
    r = one_hot(_t(np.array([2, 0]), device), 3)
    np.testing.assert_array_equal(to_np(r), np.eye(3, dtype=np.int64)[[2, 0]])


# ====================================================================== module-level exports

def test_functions_exported_like_torch(torch):
    for name in ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
                 "index_fill", "index_put", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim",
                 "nonzero", "argwhere", "sort", "argsort", "topk", "kthvalue", "median", "unique",
                 "unique_consecutive"]:
        assert hasattr(mt, name) and hasattr(torch, name), name
    for name in ["scatter_", "scatter_add_", "scatter_reduce_", "index_add_", "index_copy_", "index_fill_",
                 "index_put_", "masked_fill_", "masked_scatter_", "put_", "put"]:
        assert hasattr(mt.Tensor, name) and hasattr(torch.Tensor, name), name


# ---------------------------------------------------------------------- out=

def _out_cases(lib, dev):
    """(name, call(out), a good out, a wrong-dtype out) for every indexing op taking out=, built in ``lib``."""
    kw = {} if lib is not mt else {"device": dev}
    x = lib.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], **kw)
    i = lib.tensor([[0, 2], [1, 0]], **kw)
    v = lib.tensor([1, 0], **kw)
    src = lib.tensor([[7.0, 8.0], [9.0, 10.0]], **kw)

    def empty(*shape, dtype=None):
        return lib.empty(*shape, dtype=dtype or lib.float32, **kw)
    return [
        ("gather", lambda o: lib.gather(x, 1, i, out=o), (2, 2), lib.float64),
        ("scatter", lambda o: lib.scatter(x, 1, i, src, out=o), (2, 3), lib.float64),
        ("scatter_add", lambda o: lib.scatter_add(x, 1, i, src, out=o), (2, 3), lib.int64),
        ("scatter_reduce", lambda o: lib.scatter_reduce(x, 1, i, src, "amax", out=o), (2, 3), lib.float64),
        ("index_add", lambda o: lib.index_add(x, 0, v, x, out=o), (2, 3), lib.float64),
        ("index_copy", lambda o: lib.index_copy(x, 0, v, x, out=o), (2, 3), lib.float64),
        ("index_select", lambda o: lib.index_select(x, 1, v, out=o), (2, 2), lib.float64),
        ("masked_select", lambda o: lib.masked_select(x, x > 0, out=o), (4,), lib.float64),
        ("take_along_dim", lambda o: lib.take_along_dim(x, i, 1, out=o), (2, 2), lib.float64),
        ("take_along_dim_flat", lambda o: lib.take_along_dim(x, v, out=o), (2,), lib.float64),
        ("nonzero", lambda o: lib.nonzero(x, out=o), (6, 2), lib.int32),
    ], empty


@pytest.mark.parametrize("case", range(11))
def test_indexing_out_contract_like_torch(torch, device, case):
    ours, m_empty = _out_cases(mt, device)
    theirs, t_empty = _out_cases(torch, "cpu")
    name, m_call, shape, _ = ours[case]
    _, t_call, _, t_bad = theirs[case]
    m_bad = getattr(mt, str(t_bad).rsplit(".", 1)[-1])
    good_dt = mt.int64 if name == "nonzero" else None
    # right dtype, wrong shape: resized with PyTorch's deprecation warning, written, version bumped
    out = m_empty(1, dtype=good_dt)
    v0 = out._version
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        r = m_call(out)
    assert r is out and tuple(out.shape) == shape and out._version > v0
    expected = t_call(t_empty(*shape, dtype=torch.int64 if name == "nonzero" else None))
    assert_close(out, expected.numpy())
    # an empty out is resized silently
    out = m_empty(0, dtype=good_dt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m_call(out)
    assert tuple(out.shape) == shape
    # a dtype PyTorch refuses, with its message; out keeps its contents
    bad = m_empty(*shape, dtype=m_bad).zero_()
    _raises_like(torch, lambda: m_call(bad), lambda: t_call(t_empty(*shape, dtype=t_bad)))
    assert not to_np(bad).any()
    # not a tensor (PyTorch words this per overload set; ours names the argument)
    _raises_like(torch, lambda: m_call(3), lambda: t_call(3), match_message=False)
    with pytest.raises(TypeError, match=r"\(\): argument 'out' must be Tensor, not int"):
        m_call(3)


def test_indexing_out_refuses_autograd(torch, device):
    x = _t(_arr(2, 3), device, requires_grad=True)
    i = mt.tensor([[0, 2], [1, 0]], device=device)
    tx = torch.tensor(_arr(2, 3), requires_grad=True)
    ti = torch.tensor([[0, 2], [1, 0]])
    _raises_like(torch, lambda: mt.gather(x, 1, i, out=mt.empty(2, 2, dtype=mt.float64, device=device)),
                 lambda: torch.gather(tx, 1, ti, out=torch.empty(2, 2, dtype=torch.float64)))
    _raises_like(torch, lambda: mt.sort(x, out=(mt.empty(0, dtype=mt.float64, device=device),
                                                mt.empty(0, dtype=mt.int64, device=device))),
                 lambda: torch.sort(tx, out=(torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.int64))))
    with mt.no_grad():
        out = mt.empty(0, dtype=mt.float64, device=device)
        assert mt.gather(x, 1, i, out=out) is out and not out.requires_grad


@pytest.mark.parametrize("fn", ["sort", "topk", "kthvalue", "median"])
def test_values_indices_out_like_torch(torch, device, fn):
    a = _arr(3, 4)
    args = {"sort": (), "topk": (2,), "kthvalue": (2,), "median": (1,)}[fn]
    x, tx = _t(a, device), torch.tensor(a)
    vals, idx = mt.empty(0, dtype=mt.float64, device=device), mt.empty(0, dtype=mt.int64, device=device)
    r = getattr(mt, fn)(x, *args, out=(vals, idx))
    assert r.values is vals and r.indices is idx
    e = getattr(torch, fn)(tx, *args)
    assert_close(vals, e.values.numpy())
    assert_close(idx, e.indices.numpy())
    if fn == "median":
        return  # PyTorch words median's dtype refusal as a legacy type check
    _raises_like(torch, lambda: getattr(mt, fn)(x, *args, out=(mt.empty(0, device=device), idx)),
                 lambda: getattr(torch, fn)(tx, *args, out=(torch.empty(0), torch.empty(0, dtype=torch.int64))))
    _raises_like(torch, lambda: getattr(mt, fn)(x, *args, out=(vals, mt.empty(0, dtype=mt.int32, device=device))),
                 lambda: getattr(torch, fn)(tx, *args, out=(torch.empty(0, dtype=torch.float64),
                                                            torch.empty(0, dtype=torch.int32))))
