"""PyTorch's legacy tensor types (``mt.FloatTensor``, ``mt.cuda.LongTensor``, ...): construction, ``isinstance``
and ``Tensor.type``, against PyTorch."""
import numpy as np
import pytest
from helpers import to_np

import minitorch_gpu as mt

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
         "CharTensor", "ByteTensor", "BoolTensor"]


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


@pytest.mark.parametrize("name", NAMES)
def test_constructors_match_torch(torch, name):
    ours, theirs = getattr(mt, name), getattr(torch, name)
    assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype) and ours.is_cuda is theirs.is_cuda is False
    assert repr(ours) == repr(theirs).replace("torch.", "minitorch_gpu.")
    assert not issubclass(ours, mt.Tensor) and not issubclass(theirs, torch.Tensor)
    for args in [(2, 3), (mt.Size([4]),), (), ([1, 0, 2],), ((1.7, 0),), (np.array([1, 2]),)]:
        targs = tuple(torch.Size(a) if isinstance(a, mt.Size) else a for a in args)
        a, b = ours(*args), theirs(*targs)
        assert _dtype_name(a.dtype) == _dtype_name(b.dtype) and tuple(a.shape) == tuple(b.shape)
        if args and not isinstance(args[0], (int, mt.Size)):  # sizes give uninitialised memory
            np.testing.assert_array_equal(to_np(a.float()), b.float().numpy())
    x = mt.zeros(3, dtype=ours.dtype)
    alias = ours(x)
    assert alias.data_ptr() == x.data_ptr()


def test_constructor_errors_match_torch(torch):
    cases = [lambda L: L.FloatTensor(L.tensor([1, 2])), lambda L: L.FloatTensor(2.5), lambda L: L.FloatTensor(-1)]
    for case in cases:
        with pytest.raises((TypeError, RuntimeError)) as theirs:
            case(torch)
        with pytest.raises(theirs.type):
            case(mt)


@pytest.mark.parametrize("name", NAMES)
def test_isinstance_and_type_conversions(device, name):
    cpu_t, cuda_t = getattr(mt, name), getattr(mt.cuda, name)
    if device == "cuda" and name == "BFloat16Tensor":
        pytest.skip("the CUDA backend takes no bfloat16 yet")
    x = mt.zeros(3, dtype=cpu_t.dtype, device=device)
    on_cuda = device == "cuda"
    assert isinstance(x, cpu_t) is not on_cuda and isinstance(x, cuda_t) is on_cuda
    assert not isinstance(x, mt.FloatTensor if cpu_t is not mt.FloatTensor else mt.DoubleTensor)
    assert not isinstance(np.zeros(3), cpu_t)
    y = mt.ones(2, device=device).type(cpu_t)
    assert y.dtype is cpu_t.dtype and y.device.type == "cpu"
    assert y.type() == f"minitorch_gpu.{name}" and isinstance(y, cpu_t)
    if mt.cuda.is_available() and name != "BFloat16Tensor":
        z = y.type(cuda_t)
        assert z.dtype is cpu_t.dtype and z.device.type == "cuda" and isinstance(z, cuda_t)
        assert z.type() == f"minitorch_gpu.cuda.{name}"
        assert to_np(cuda_t([1, 0])).tolist() == to_np(cpu_t([1, 0])).tolist()
    assert isinstance(mt.nn.Parameter(mt.zeros(2)), mt.FloatTensor)


def test_type_accepts_torch_spellings_and_classes(torch):
    x = mt.tensor([1.5, 2.5])
    assert x.type(mt.LongTensor).tolist() == torch.tensor([1.5, 2.5]).type(torch.LongTensor).tolist()
    assert x.type("torch.DoubleTensor").dtype is mt.float64
    assert x.type(mt.FloatTensor) is x  # already that type, as in PyTorch


def test_cuda_types_need_cuda():
    prev = mt.cuda.use_simulator(False)
    try:
        if mt.cuda.is_available():
            pytest.skip("a GPU is present")
        with pytest.raises(TypeError, match=r"^type minitorch_gpu\.cuda\.FloatTensor not available"):
            mt.cuda.FloatTensor(2)
        assert not isinstance(mt.zeros(2), mt.cuda.FloatTensor)
    finally:
        mt.cuda.use_simulator(prev)
    prev = mt.cuda.use_simulator(True)
    try:
        t = mt.cuda.LongTensor(2, 3)
        assert t.device.type == "cuda" and t.dtype is mt.int64 and t.shape == (2, 3)
    finally:
        mt.cuda.use_simulator(prev)
