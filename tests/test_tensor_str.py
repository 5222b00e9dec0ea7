"""repr / str of tensors against PyTorch's own output (with ``torch.`` read as ``minitorch_gpu.``): number
formats, widths, wrapping, summarization, suffixes, empty tensors and print options."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch_gpu as mt

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _default_print_options():
    yield
    mt.set_printoptions(profile="default")
    try:
        import torch
    except ImportError:
        return
    torch.set_printoptions(profile="default")


def _norm(s):
    # our dtype names are longer ("minitorch_gpu.float64"), so a suffix may wrap onto its own line where
    # PyTorch's fits; the suffix placement is the only thing this normalises
    return re.sub(r",\n\s+(?=(dtype|device|grad_fn|requires_grad|size)=)", ", ", s)


def _expected(t):
    return _norm(str(t).replace("torch.", "minitorch_gpu."))


def _pair(torch, data, dtype=None, device="cpu"):
    a = np.asarray(data)
    tt = torch.tensor(a)
    mm = mt.tensor(a, device=device)
    if dtype is not None:
        tt = tt.to(getattr(torch, dtype))
        mm = mm.to(getattr(mt, dtype))
    return tt, mm


def _check(torch, data, dtype=None, device="cpu"):
    tt, mm = _pair(torch, data, dtype, device)
    expected = _expected(tt)
    if device != "cpu":
        # PyTorch puts device= before dtype=
        dev = f"device='{mm.device}'"
        if ", dtype=" in expected:
            expected = expected.replace(", dtype=", f", {dev}, dtype=", 1)
        else:
            expected = expected[:-1] + f", {dev})"
    assert _norm(repr(mm)) == _norm(expected)
    assert str(mm) == repr(mm)


DATA = [
    [1.0, 2.0, 3.0], [1, 2], 3.5, 7, True, [True, False], [1e-5, 1e5], [[1.5, 2.0], [3.0, 4.0]],
    list(np.arange(30.0)), [float("nan"), 1.5], [float("inf"), -1.0], [float("-inf"), float("nan"), 2.0],
    [0.0, 0.0], [-0.0, 1.0], list(np.arange(1e6, 1e6 + 5)), [1e9, 1.0], [123456.789, 1.5], [1e-10], [float("nan")],
    [0.1, 0.25], [1.0, 1000.0], [1.0, 1001.0], [[1e-3, 1.0]], [1e-4, 1.0], [9.99996, 1.5], [-123.456, 0.001],
    [1e100, 1e-100], [-1e-100, 3.0], np.arange(24).reshape(2, 3, 4), RNG.standard_normal((3, 4, 5)),
    RNG.standard_normal((2, 2, 2, 3)) * 1e4, list(np.arange(100) - 50), [2**40, -3], [[True], [False]],
    np.arange(2000.0).reshape(40, 50), np.arange(5000).reshape(10, 10, 50), np.arange(1001), RNG.standard_normal(3000),
    RNG.standard_normal((7, 200)) * 1e-6, np.arange(36).reshape(6, 6),
]


@pytest.mark.parametrize("data", DATA, ids=lambda d: str(np.shape(d)))
@pytest.mark.parametrize("dtype", [None, "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8"])
def test_repr_matches_torch(torch, data, dtype):
    a = np.asarray(data)
    if dtype in ("int32", "uint8", "int64") and a.size:
        info = np.iinfo(dtype)
        if not np.isfinite(a).all() or a.min() < info.min or a.max() > info.max:
            pytest.skip("casting out-of-range or non-finite values to integers is undefined")
    _check(torch, data, dtype)


@pytest.mark.parametrize("data", [[1.0, 2.5], 3.0, [[1, 2], [3, 4]], [True]])
def test_repr_on_device(device, torch, data):
    _check(torch, data, device=device)


def test_repr_examples():
    assert repr(mt.tensor([1.0, 2.0, 3.0])) == "tensor([1., 2., 3.])"
    assert repr(mt.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(mt.tensor(3.5)) == "tensor(3.5000)"
    assert repr(mt.tensor([1e-5, 1e5])) == "tensor([1.0000e-05, 1.0000e+05])"
    assert repr(mt.tensor([True, False])) == "tensor([ True, False])"
    assert repr(mt.tensor([1.0], dtype=mt.float64)) == "tensor([1.], dtype=minitorch_gpu.float64)"
    assert repr(mt.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(mt.zeros(0, dtype=mt.int64)) == "tensor([], dtype=minitorch_gpu.int64)"
    assert repr(mt.tensor([[1.0, 2.0], [3.0, 4.0]])) == "tensor([[1., 2.],\n        [3., 4.]])"


def test_autograd_suffixes(torch):
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    x, tx = mt.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    assert _norm(repr(x)) == _expected(tx)
    assert _norm(repr(x * 2)) == _expected(tx * 2)
    assert _norm(repr(x + 1)) == _expected(tx + 1)
    assert _norm(repr(x @ x)) == _expected(tx @ tx)
    s = mt.tensor(2.0, requires_grad=True)
    assert repr(s) == "tensor(2., requires_grad=True)"
    assert repr(s * 3) == "tensor(6., grad_fn=<MulBackward0>)"
    assert repr(x.detach()) == "tensor([[1., 2.],\n        [3., 4.]], dtype=minitorch_gpu.float64)"
    e = mt.zeros(0, requires_grad=True)
    assert repr(e) == _expected(torch.zeros(0, requires_grad=True))
    with mt.no_grad():
        assert "grad_fn" not in repr(x * 2)


def test_user_function_grad_fn_name():
    class Double(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Double.apply(mt.tensor([1.0], requires_grad=True))
    assert repr(y) == "tensor([2.], grad_fn=<DoubleBackward>)"


@pytest.mark.parametrize("shape,dtype", [((0,), "float32"), ((0, 3), "float32"), ((2, 0, 3), "float64"),
                                         ((0,), "int64"), ((0, 2), "bool"), ((0,), "float16")])
def test_empty_tensors(torch, shape, dtype):
    tt = torch.zeros(shape, dtype=getattr(torch, dtype))
    mm = mt.zeros(shape, dtype=getattr(mt, dtype))
    assert _norm(repr(mm)) == _expected(tt)


def test_non_contiguous_views(torch):
    a = np.arange(12.0).reshape(3, 4)
    assert _norm(repr(mt.tensor(a).float()[:, None][1:].reshape(2, 4).expand(3, 2, 4))) == _expected(
        torch.tensor(a).float()[1:].expand(3, 2, 4))
    big = np.arange(3000.0)
    assert _norm(repr(mt.tensor(big).reshape(1, 3000).expand(4, 3000))) == _expected(
        torch.tensor(big).reshape(1, 3000).expand(4, 3000))


PRINT_OPTIONS = [
    dict(precision=2), dict(precision=8), dict(precision=0), dict(threshold=5), dict(threshold=5, edgeitems=1),
    dict(threshold=5, edgeitems=0), dict(linewidth=40), dict(linewidth=10), dict(sci_mode=True), dict(sci_mode=False),
    dict(profile="short"), dict(profile="full"), dict(profile="short", precision=6), dict(edgeitems=5, threshold=20),
]


@pytest.mark.parametrize("opts", PRINT_OPTIONS, ids=str)
@pytest.mark.parametrize("data", [[1.123456789, 22.5, -3.0], list(np.arange(40.0)), np.arange(60).reshape(3, 4, 5),
                                  [1e-5, 1e5], [0.0, 0.0], [2.0, 4.0], 1.5, [1.0, float("nan")],
                                  np.arange(1200.0).reshape(30, 40) / 7], ids=lambda d: str(np.shape(d)))
def test_print_options_match_torch(torch, opts, data):
    torch.set_printoptions(**opts)
    mt.set_printoptions(**opts)
    _check(torch, data)
    _check(torch, data, "float64")


def test_full_profile_prints_everything():
    mt.set_printoptions(profile="full")
    s = repr(mt.arange(2000))
    assert "..." not in s and "1999" in s


def test_printoptions_context_and_getter(torch):
    before = mt._tensor_str.get_printoptions()
    assert before == dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
    with mt._tensor_str.printoptions(precision=1):
        assert repr(mt.tensor([1.25, 2.0])) == "tensor([1.2, 2.0])"
    assert mt._tensor_str.get_printoptions() == before
    mt.set_printoptions(precision=2, profile="nonexistent")
    assert mt._tensor_str.get_printoptions()["precision"] == 2
    assert mt.set_printoptions is mt._tensor_str.set_printoptions


def test_default_dtype_decides_the_dtype_suffix(torch):
    old = mt.get_default_dtype()
    mt.set_default_dtype(mt.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for data, dt in (([1.0, 2.0], "float32"), ([1.0, 2.0], "float64"), ([], "float64"), ([], "float32")):
            _check(torch, data, dt)
    finally:
        mt.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


def test_default_device_decides_the_device_suffix(device):
    t = mt.tensor([1.0], device=device)
    if device == "cpu":
        assert "device" not in repr(t)
        return
    assert repr(t) == "tensor([1.], device='cuda:0')"
    mt.set_default_device("cuda")
    try:
        assert repr(t) == "tensor([1.])"
        assert repr(mt.tensor([1.0], device="cpu")) == "tensor([1.], device='cpu')"
    finally:
        mt.set_default_device(None)


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(0, 5), max_size=3), scale=st.sampled_from([1e-6, 1e-3, 1.0, 1e3, 1e9]),
       integral=st.booleans(), specials=st.booleans())
def test_repr_property_matches_torch(shape, scale, integral, specials):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(len(shape) * 7 + int(integral)).standard_normal(shape) * scale
    if integral:
        a = np.round(a)
    if specials and a.size >= 3:
        a.reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    for dt in ("float32", "float64"):
        tt = torch.tensor(a).to(getattr(torch, dt))
        mm = mt.tensor(a).to(getattr(mt, dt))
        assert _norm(repr(mm)) == _expected(tt)


def test_print_options_are_top_level():
    assert mt.set_printoptions is mt._tensor_str.set_printoptions
    assert mt.get_printoptions is mt._tensor_str.get_printoptions
    assert mt.printoptions is mt._tensor_str.printoptions
