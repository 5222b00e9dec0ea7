"""Conversions against PyTorch: to(), the dtype shorthands, type(), clone/contiguous and memory formats,
copy_, cpu()/cuda(), and how autograd sees them."""
import re

import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import to_np

NAMES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]
VALUES = [0.0, 1.0, -1.0, 1.5, -1.5, 2.7, -2.7, 100.25, 127.0, 200.9, -128.0, 300.7, -300.2, 0.5]


def tname(t):
    return str(t.dtype).split(".")[1]


def as_f64(x):
    return np.asarray(x, dtype=np.float64)


@pytest.mark.parametrize("src", NAMES)
@pytest.mark.parametrize("dst", NAMES)
def test_to_dtype_values_like_torch(torch, device, src, dst):
    if "bfloat16" in (src, dst) and device != "cpu":
        pytest.skip("bfloat16 is CPU-only")
    tx = torch.tensor(VALUES, dtype=torch.float64).to(getattr(torch, src))
    x = mt.tensor(tx.double().numpy(), dtype=mt.float64, device=device).to(getattr(mt, src))
    y, ty = x.to(getattr(mt, dst)), tx.to(getattr(torch, dst))
    assert y.dtype.name == tname(ty) and y.device == x.device
    np.testing.assert_array_equal(as_f64(to_np(y)), ty.double().numpy())
    short = {"float32": "float", "float64": "double", "float16": "half", "bfloat16": "bfloat16", "int64": "long",
             "int32": "int", "int16": "short", "int8": "char", "uint8": "byte", "bool": "bool"}[dst]
    z = getattr(x, short)()
    assert z.dtype is getattr(mt, dst)
    np.testing.assert_array_equal(as_f64(to_np(z)), ty.double().numpy())


def test_nan_and_inf_casts_like_torch(torch):
    tx = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    x = mt.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    assert x.bool().tolist() == tx.bool().tolist()


def test_to_returns_self_when_nothing_changes(device):
    x = mt.ones(2, device=device)
    assert x.to(x.dtype) is x and x.to(x.device) is x and x.to(x) is x and x.float() is x
    assert x.to() is x and x.to(None) is x
    c = x.to(x.dtype, copy=True)
    assert c is not x and c.data_ptr() != x.data_ptr() and to_np(c).tolist() == [1.0, 1.0]
    assert x.to(mt.float64, False, True).dtype is mt.float64


def test_to_overloads(torch, device):
    x = mt.ones(2, device=device)
    assert x.to(device, mt.int32).dtype is mt.int32
    assert x.to(device=device, dtype=mt.float64).dtype is mt.float64
    assert x.to(mt.zeros(1, dtype=mt.int8)).dtype is mt.int8
    assert x.to(mt.device("cpu")).device.type == "cpu"
    assert x.to("cpu", mt.float16).dtype is mt.float16
    assert x.to(float).dtype is mt.float64  # Python types name dtypes, as in factories
    c = x.to(mt.float32, False, True)
    assert c is not x
    for bad in ((1.5,), (mt.float32, "x"), (mt.float32, False, True, True)):
        with pytest.raises(TypeError):
            x.to(*bad)
    with pytest.raises(TypeError):
        x.to(foo=1)


def test_to_cpu_from_any_device(device):
    x = mt.arange(4.0, device=device)
    y = x.to("cpu")
    assert y.device.type == "cpu" and y.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert x.cpu().device.type == "cpu"
    assert mt.ones(1).cpu().device.type == "cpu"
    back = y.to(device)
    assert back.device == x.device


def test_type_strings_like_torch(torch, device):
    for name in NAMES:
        if name == "bfloat16" and device != "cpu":
            continue
        x = mt.zeros(2, dtype=getattr(mt, name), device=device)
        t = torch.zeros(2, dtype=getattr(torch, name))
        prefix = "minitorch_gpu.cuda." if x.is_cuda else "minitorch_gpu."
        assert x.type() == prefix + t.type().split(".")[1]
    x = mt.zeros(2, device=device)
    assert x.type(mt.int32).dtype is mt.int32
    assert x.type(mt.float32) is x
    assert x.type("torch.DoubleTensor").dtype is mt.float64
    assert x.type("minitorch_gpu.LongTensor").dtype is mt.int64
    for bad in ("torch.Foo", "DoubleTensor"):
        with pytest.raises(ValueError):
            torch.zeros(2).type(bad)
    for bad in ("torch.Foo", "DoubleTensor", "minitorch_gpu.cuda.Nope"):
        with pytest.raises(ValueError, match="invalid type"):
            x.type(bad)


def test_type_as(torch, device):
    x = mt.ones(2, device=device)
    assert x.type_as(mt.zeros(1, dtype=mt.int32, device=device)).dtype is mt.int32
    assert x.type_as(mt.zeros(1, device=device)) is x


# ---------------------------------------------------------------------- autograd

def test_to_float_is_differentiable_like_torch(torch, device):
    a = mt.tensor([1.0, 2.0], device=device, requires_grad=True)
    b = a.to(mt.float64)
    assert b.grad_fn.name() == "ToCopyBackward0"
    (b * b).sum().backward()
    assert a.grad.dtype is mt.float32 and to_np(a.grad).tolist() == [2.0, 4.0]
    h = mt.tensor([1.0, 3.0], device=device, requires_grad=True)
    (h.half().float() * 2).sum().backward()
    assert to_np(h.grad).tolist() == [2.0, 2.0]
    d = mt.tensor([1.0, 2.0], dtype=mt.float64, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: t.to(mt.float64, copy=True) * t, (d,))


def test_to_int_cuts_the_graph_like_torch(torch, device):
    a = mt.tensor([1.5, 2.5], device=device, requires_grad=True)
    i = a.to(mt.int64)
    ti = torch.tensor([1.5, 2.5], requires_grad=True).to(torch.int64)
    assert i.requires_grad == ti.requires_grad == False  # noqa: E712
    assert i.grad_fn is None and i.tolist() == ti.tolist()
    assert a.long().grad_fn is None and a.bool().grad_fn is None


def test_clone_copies_and_is_differentiable(device):
    a = mt.tensor([1.0, 2.0], device=device, requires_grad=True)
    c = a.clone()
    assert c.grad_fn.name() == "CloneBackward0" and c.data_ptr() != a.data_ptr()
    (c * 3).sum().backward()
    assert to_np(a.grad).tolist() == [3.0, 3.0]
    x = mt.zeros(3, device=device)
    y = x.clone()
    y.fill_(1)
    assert to_np(x).tolist() == [0, 0, 0]
    d = mt.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=mt.float64, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: t.clone() * t, (d,))
    assert mt.autograd.gradgradcheck(lambda t: t.clone() * t, (d,))


# ---------------------------------------------------------------------- memory formats

def test_clone_preserves_dense_layouts_like_torch(torch, device):
    t = torch.arange(6.0).reshape(3, 2).t()
    base = mt.arange(6.0, device=device).reshape(3, 2)
    m = mt.Tensor._make(base._be.transpose_view(base._data, (1, 0)), base._be)  # a transposed view
    assert m.stride() == t.stride()
    c, tc = m.clone(), t.clone()
    assert c.stride() == tc.stride() and to_np(c).tolist() == tc.tolist()
    assert m.clone(memory_format=mt.contiguous_format).stride() == t.clone(
        memory_format=torch.contiguous_format).stride()
    cc = m.contiguous()
    assert cc.is_contiguous() and cc.stride() == t.contiguous().stride() and to_np(cc).tolist() == tc.tolist()


def test_contiguous_returns_self_when_contiguous(device):
    x = mt.ones(2, 3, device=device)
    assert x.contiguous() is x
    e = mt.ones(3, 1, device=device).expand(3, 4)
    c = e.contiguous()
    assert c is not e and c.is_contiguous() and c.stride() == (4, 1)
    ec = e.clone()
    assert ec.stride() == (4, 1)  # not dense: preserve_format falls back to row-major, like torch


def test_channels_last_like_torch(torch, device):
    x = mt.arange(24.0, device=device).reshape(1, 2, 3, 4)
    t = torch.arange(24.0).reshape(1, 2, 3, 4)
    for fn in (lambda a, lib: a.clone(memory_format=lib.channels_last),
               lambda a, lib: a.contiguous(memory_format=lib.channels_last),
               lambda a, lib: a.to(memory_format=lib.channels_last)):
        m, tt = fn(x, mt), fn(t, torch)
        assert m.stride() == tt.stride() and to_np(m).tolist() == tt.tolist()
    cl = x.contiguous(memory_format=mt.channels_last)
    assert cl.contiguous(memory_format=mt.channels_last) is cl
    with pytest.raises(RuntimeError):
        torch.zeros(2, 3).clone(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match="rank 4"):
        mt.zeros(2, 3, device=device).clone(memory_format=mt.channels_last)
    assert repr(mt.channels_last) == "minitorch_gpu.channels_last"


# ---------------------------------------------------------------------- copy_

@pytest.mark.parametrize("dst,src,vals", [("int64", "float32", [1.7, -1.7]), ("uint8", "int64", [-1, 256]),
                                          ("bool", "float32", [0.5, 0.0]), ("float16", "float64", [1e-3, 65504.0]),
                                          ("float32", "bool", [True, False]), ("int8", "float64", [-300.2, 127.9])])
def test_copy_casts_like_torch(torch, device, dst, src, vals):
    m = mt.zeros(2, dtype=getattr(mt, dst), device=device)
    t = torch.zeros(2, dtype=getattr(torch, dst))
    ptr, v = m.data_ptr(), m._version
    assert m.copy_(mt.tensor(vals, dtype=getattr(mt, src), device=device)) is m
    t.copy_(torch.tensor(vals, dtype=getattr(torch, src)))
    assert m.dtype.name == tname(t) and m.data_ptr() == ptr and m._version == v + 1
    np.testing.assert_array_equal(as_f64(to_np(m)), t.double().numpy())


def test_copy_broadcasts_like_torch(torch, device):
    m = mt.zeros(2, 3, device=device).copy_(mt.arange(3, device=device))
    t = torch.zeros(2, 3).copy_(torch.arange(3))
    assert to_np(m).tolist() == t.tolist()
    assert to_np(mt.zeros(2, device=device).copy_(mt.tensor(5.0, device=device))).tolist() == [5.0, 5.0]


def test_copy_from_another_device(device):
    src = mt.tensor([1.0, 2.0])
    dst = mt.zeros(2, device=device)
    dst.copy_(src)
    assert to_np(dst).tolist() == [1.0, 2.0]
    back = mt.zeros(2)
    back.copy_(dst * 2)
    assert back.tolist() == [2.0, 4.0]


def test_copy_errors_like_torch(torch, device):
    for m_args, t_args, exc in (((mt.ones(3, device=device),), (torch.ones(3),), RuntimeError),
                                (([1, 2],), ([1, 2],), TypeError),
                                ((mt.ones(2, 2, device=device),), (torch.ones(2, 2),), RuntimeError)):
        with pytest.raises(exc):
            torch.zeros(2).copy_(*t_args)
        m = mt.zeros(2, device=device)
        with pytest.raises(exc):
            m.copy_(*m_args)
        assert m._version == 0 and to_np(m).tolist() == [0.0, 0.0]
    leaf = mt.zeros(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.copy_(mt.ones(2, device=device))


def test_copy_overlapping_memory(device):
    a = mt.arange(6.0, device=device)
    # two overlapping windows of the same memory (as a slice would give)
    dst = mt.Tensor._make(a._data[1:], a._be)
    src = mt.Tensor._make(a._data[:-1], a._be)
    dst.copy_(src)
    assert to_np(a).tolist() == [0.0, 0.0, 1.0, 2.0, 3.0, 4.0]


def test_copy_autograd_like_torch(torch, device):
    a = mt.ones(3, device=device, requires_grad=True)
    s = mt.tensor(2.0, dtype=mt.float64, device=device, requires_grad=True)
    x = a * 1
    x.copy_(s)
    assert x.grad_fn.name() == "CopyBackwards"
    (x * mt.tensor([1.0, 2.0, 3.0], device=device)).sum().backward()
    ta = torch.ones(3, requires_grad=True)
    ts = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    tx = ta * 1
    tx.copy_(ts)
    (tx * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert to_np(a.grad).tolist() == ta.grad.tolist()
    assert s.grad.dtype is mt.float64 and s.grad.item() == ts.grad.item()
    d = mt.tensor([1.0, 2.0], dtype=mt.float64, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: mt.zeros(2, 2, dtype=mt.float64, device=device).copy_(t) * 2, (d,))


def test_copy_into_view_updates_base(device):
    base = mt.zeros(2, 3, device=device)
    base.view(6).copy_(mt.arange(6.0, device=device))
    assert to_np(base).tolist() == [[0, 1, 2], [3, 4, 5]]


# ---------------------------------------------------------------------- cuda()

@pytest.mark.skipif(mt.cuda.is_available(), reason="checks behaviour without a GPU")
def test_cuda_without_gpu_raises_runtime_error():
    x = mt.ones(2)
    for call in (x.cuda, lambda: x.cuda(0), lambda: x.cuda("cuda:1"), lambda: x.to("cuda"),
                 lambda: x.to("cuda:7", mt.float64)):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            call()


def test_cuda_rejects_cpu_device():
    with pytest.raises(RuntimeError, match="must be cuda"):
        mt.ones(2).cuda("cpu")


@pytest.mark.skipif(not mt.cuda.is_available(), reason="needs a GPU")
def test_cuda_roundtrip_with_gpu():
    x = mt.tensor([1.5, 2.5], requires_grad=True)
    y = x.cuda()
    assert y.is_cuda and y.device.index == mt.cuda.current_device()
    (y * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0] and x.grad.device.type == "cpu"
    assert y.cuda() is y


# ---------------------------------------------------------------------- pinned host memory

def test_pin_memory_without_a_gpu_like_torch(torch):
    """PyTorch's CPU build (the oracle here) cannot pin: the same error, and nothing is pinned."""
    if mt.cuda.is_available():
        pytest.skip("a GPU or the simulator is available")
    for lib in (torch, mt):
        x = lib.arange(4.0)
        with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is available.$"):
            x.pin_memory()
        assert x.is_pinned() is False


def test_pin_memory_for_copies_to_the_device(device):
    """``x.pin_memory().to(device, non_blocking=True)``, as training scripts write it: a pinned copy on the
    host (views of it are pinned, results computed from it are not), then the same values on the device."""
    x = mt.arange(6.0).reshape(2, 3).requires_grad_()
    if not mt.cuda.is_available():
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            x.pin_memory()
        return
    p = x.pin_memory()
    assert p.device.type == "cpu" and p.is_pinned() and not x.is_pinned()
    assert p.data_ptr() != x.data_ptr() and p.pin_memory() is p
    assert p[1].is_pinned() and p.t().is_pinned() and not (p + 1).is_pinned()
    assert type(p.grad_fn).__name__ == "PinMemoryBackward0"
    y = p.to(device, non_blocking=True)
    assert y.device.type == device and y.is_pinned() == (device == "cpu")  # to("cpu") returns p itself
    (y * 2).sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(to_np(y.detach()), np.arange(6.0).reshape(2, 3))
    with pytest.warns(DeprecationWarning, match="argument 'device' of Tensor.is_pinned"):
        assert p.is_pinned("cuda")
    if device == "cuda":
        with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
            y.pin_memory()
    i = mt.tensor([1, 2, 3]).pin_memory()  # any dtype
    assert i.is_pinned() and i.dtype is mt.int64 and i.tolist() == [1, 2, 3]


FACTORIES = [lambda L: L.zeros(2, 3, pin_memory=True), lambda L: L.empty(4, pin_memory=True),
             lambda L: L.full((2,), 7, pin_memory=True), lambda L: L.tensor([1, 2], pin_memory=True),
             lambda L: L.randn(3, pin_memory=True), lambda L: L.eye(2, pin_memory=True),
             lambda L: L.ones(1).new_ones(3, pin_memory=True), lambda L: L.scalar_tensor(1, pin_memory=True)]


@pytest.mark.parametrize("make", FACTORIES)
def test_factories_pin_memory(torch, make):
    """``pin_memory=True`` on a factory gives a pinned CPU tensor with a GPU, PyTorch's error without one."""
    if not mt.cuda.is_available():
        with pytest.raises(RuntimeError) as theirs:
            make(torch)
        with pytest.raises(RuntimeError, match="^" + re.escape(str(theirs.value)) + "$"):
            make(mt)
        return
    t = make(mt)
    assert t.device.type == "cpu" and t.is_pinned()
