"""DLPack: round trips with NumPy, PyTorch, CuPy and ourselves, memory shared both ways (a write on one side
is seen on the other), dtypes (bool and bfloat16 included), devices, copies and errors."""
import gc
import sys

import numpy as np
import pytest
from helpers import to_np

import minitorch_gpu as mt
from minitorch_gpu.ops.dlpack import DLDeviceType

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "bfloat16"]


def _supported(device, name):
    return name != "bfloat16" or device == "cpu"


def _sample(name, shape=(2, 3)):
    a = np.arange(int(np.prod(shape))).reshape(shape) % 5
    return mt.tensor(a).to(getattr(mt, name))


def _cpu_only(device):
    if device != "cpu":
        pytest.skip("NumPy and the CPU build of PyTorch hold host memory only")


def test_dlpack_device(device):
    t = mt.zeros(3, device=device)
    dev = t.__dlpack_device__()
    if device == "cpu":
        assert dev == (1, 0) and dev[0] is DLDeviceType.kDLCPU
    else:
        assert dev == (2, t.device.index) and dev[0] is DLDeviceType.kDLCUDA


@pytest.mark.parametrize("name", DTYPES)
def test_round_trip_through_ourselves_shares_memory(device, name):
    if not _supported(device, name):
        pytest.skip("bfloat16 exists only on the CPU backend")
    t = _sample(name).to(device)
    u = mt.from_dlpack(t)
    assert u is not t and u.dtype is t.dtype and u.device == t.device and tuple(u.shape) == (2, 3)
    np.testing.assert_array_equal(to_np(u.float()), to_np(t.float()))
    assert u.data_ptr() == t.data_ptr()
    u[0, 0] = 1 if name == "bool" else 4
    assert to_np(t.float())[0, 0] == (1.0 if name == "bool" else 4.0)


@pytest.mark.parametrize("name", [d for d in DTYPES if d != "bfloat16"])
def test_numpy_consumes_our_tensor(device, name):
    _cpu_only(device)
    t = _sample(name)
    a = np.from_dlpack(t)
    assert a.dtype == np.dtype(name if name != "bool" else np.bool_)
    np.testing.assert_array_equal(a, t.numpy())
    a[1, 2] = 1
    assert t[1, 2].item() == 1
    t.copy_(mt.zeros(2, 3, dtype=t.dtype))
    assert not a.any()


@pytest.mark.parametrize("name", [d for d in DTYPES if d != "bfloat16"])
def test_we_consume_numpy_arrays(device, name):
    _cpu_only(device)
    a = (np.arange(6).reshape(2, 3) % 4).astype(name)
    t = mt.from_dlpack(a)
    assert t.dtype is getattr(mt, name) and t.device == mt.device("cpu")
    np.testing.assert_array_equal(t.numpy(), a)
    a[0, 1] = 0
    assert t[0, 1].item() == 0
    t[1, 1] = 1
    assert a[1, 1] == 1


def test_numpy_layouts(device):
    _cpu_only(device)
    base = np.arange(24.0).reshape(4, 6)
    for a in (base[:, ::2], base.T, base[1:3, 2:5], np.array(3.5), np.zeros((0, 3)), base[::-1]):
        t = mt.from_dlpack(a)
        assert tuple(t.shape) == a.shape
        np.testing.assert_array_equal(t.numpy(), a)
        back = np.from_dlpack(t)
        np.testing.assert_array_equal(back, a)
    v = mt.from_dlpack(base[:, ::2])
    v[0, 1] = -1
    assert base[0, 2] == -1


def test_broadcast_view_exports_read_only(device, torch):
    _cpu_only(device)
    e = mt.tensor([1.0, 2.0, 3.0]).expand(2, 3)
    a = np.from_dlpack(e)
    assert a.shape == (2, 3) and not a.flags.writeable
    tt = torch.from_dlpack(e)
    assert tt.stride() == (0, 1)
    np.testing.assert_array_equal(tt.numpy(), a)


@pytest.mark.parametrize("name", DTYPES)
def test_torch_round_trips(device, torch, name):
    _cpu_only(device)
    t = _sample(name)
    tt = torch.from_dlpack(t)
    assert str(tt.dtype) == "torch." + name
    np.testing.assert_array_equal(tt.float().numpy(), to_np(t.float()))
    tt[0, 0] = 1
    assert t[0, 0].float().item() == 1.0
    src = torch.arange(6).reshape(2, 3).to(getattr(torch, name))
    m = mt.from_dlpack(src)
    assert m.dtype is getattr(mt, name)
    np.testing.assert_array_equal(to_np(m.float()), src.float().numpy())
    src[1, 2] = 0
    assert m[1, 2].float().item() == 0.0
    m[0, 1] = 1
    assert src[0, 1].float().item() == 1.0


@pytest.mark.parametrize("name", DTYPES)
def test_torch_legacy_capsule(device, torch, name):
    _cpu_only(device)
    src = torch.arange(5.0).to(getattr(torch, name))
    cap = torch.utils.dlpack.to_dlpack(src)
    m = mt.from_dlpack(cap)
    assert m.dtype is getattr(mt, name)
    np.testing.assert_array_equal(to_np(m.float()), src.float().numpy())
    src[0] = 1
    assert m[0].float().item() == 1.0
    m.copy_(mt.zeros(5, dtype=m.dtype))
    assert not src.any()
    del src
    assert not m.float().sum().item()
    with pytest.raises(BufferError, match="already consumed"):
        mt.from_dlpack(cap)
    with pytest.raises(ValueError, match="device and copy"):
        mt.from_dlpack(torch.utils.dlpack.to_dlpack(torch.ones(2)), copy=True)


@pytest.mark.parametrize("legacy", [False, True])
def test_torch_strided_and_zero_dim(device, torch, legacy):
    _cpu_only(device)
    wrap = torch.utils.dlpack.to_dlpack if legacy else (lambda x: x)
    src = torch.arange(24.0).reshape(4, 6)[:, 1::2]
    m = mt.from_dlpack(wrap(src))
    assert m.stride() == src.stride()
    np.testing.assert_array_equal(m.numpy(), src.numpy())
    m.copy_(mt.full((4, 3), -1.0))
    assert (src == -1).all() and torch.arange(24.0).reshape(4, 6)[:, ::2].sum() > 0
    z = mt.from_dlpack(wrap(torch.tensor(2.5)))
    assert z.shape == () and z.item() == 2.5
    e = mt.from_dlpack(wrap(torch.zeros(0, 3)))
    assert tuple(e.shape) == (0, 3)
    flipped = torch.arange(6.0).reshape(2, 3).t()
    f = mt.from_dlpack(wrap(flipped))
    np.testing.assert_array_equal(f.numpy(), flipped.numpy())


def test_cupy_round_trip(device):
    if device == "cpu":
        pytest.skip("CuPy arrays live on the GPU")
    cp = pytest.importorskip("cupy")
    t = mt.arange(6.0, device=device).reshape(2, 3)
    a = cp.from_dlpack(t)
    a[0, 0] = 9
    assert t[0, 0].item() == 9.0
    b = cp.arange(4, dtype=cp.float32)
    m = mt.from_dlpack(b)
    assert m.device == mt.device("cuda", 0) and m.dtype is mt.float32
    m.mul_(2)
    assert float(b[3]) == 6.0


def test_copy_and_device_arguments(device):
    t = mt.arange(4.0, device=device)
    c = mt.from_dlpack(t, copy=True)
    c.mul_(0)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    same = mt.from_dlpack(t, device=device, copy=False)
    assert same.data_ptr() == t.data_ptr()
    host = mt.from_dlpack(t, device="cpu")
    assert host.device == mt.device("cpu") and host.tolist() == t.tolist()
    if device != "cpu":
        with pytest.raises(ValueError, match="without copying"):
            mt.from_dlpack(t, device="cpu", copy=False)
        cap = t.__dlpack__(dl_device=(1, 0))
        assert np.from_dlpack(_Capsule(cap, (1, 0))).tolist() == t.tolist()


class _Capsule:
    def __init__(self, cap, dev):
        self.cap, self.dev = cap, dev

    def __dlpack__(self, **kw):
        return self.cap

    def __dlpack_device__(self):
        return self.dev


def test_export_with_copy_is_independent(device):
    _cpu_only(device)
    t = mt.arange(3.0)
    a = np.from_dlpack(_Capsule(t.__dlpack__(copy=True, max_version=(1, 0)), (1, 0)))
    a[0] = 5
    assert t[0].item() == 0.0


def test_export_errors(device):
    t = mt.ones(2, device=device, requires_grad=True)
    with pytest.raises(BufferError, match="require gradient"):
        t.__dlpack__()
    with pytest.raises(BufferError, match="require gradient"):
        mt.from_dlpack(t)
    assert mt.from_dlpack(t.detach()).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="stream must be"):
        t.detach().__dlpack__(stream="0")
    if device == "cpu":
        with pytest.raises(BufferError, match="stream must be None"):
            t.detach().__dlpack__(stream=5)
        t.detach().__dlpack__(stream=-1)
        with pytest.raises(BufferError, match="DLPack device"):
            t.detach().__dlpack__(dl_device=(2, 0))


def test_import_errors(device):
    _cpu_only(device)
    with pytest.raises(TypeError, match="__dlpack__"):
        mt.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="complex64 has no minitorch_gpu equivalent"):
        mt.from_dlpack(np.ones(2, np.complex64))
    with pytest.raises(TypeError, match="uint16 has no minitorch_gpu equivalent"):
        mt.from_dlpack(np.ones(2, np.uint16))

    class OtherDevice:
        def __dlpack__(self, **kw):
            raise AssertionError("must not be asked for a capsule")

        def __dlpack_device__(self):
            return (8, 0)  # Metal

    with pytest.raises(BufferError, match="unsupported DLPack device type 8"):
        mt.from_dlpack(OtherDevice())


def test_producer_without_max_version(device):
    _cpu_only(device)
    arr = np.arange(3.0)

    class Old:
        def __dlpack__(self, stream=None):
            return arr.__dlpack__()

        def __dlpack_device__(self):
            return (1, 0)

    before = sys.getrefcount(arr)
    m = mt.from_dlpack(Old())
    m[0] = 7
    assert arr[0] == 7
    # the producer's memory is held while a tensor (or a view of it) uses it, and released after
    view = m.reshape(3, 1)
    del m
    assert sys.getrefcount(arr) == before + 1 and view[2, 0].item() == 2.0
    del view
    assert sys.getrefcount(arr) == before


def test_imported_memory_outlives_producer(device, torch):
    _cpu_only(device)
    src = torch.arange(1000.0)
    m = mt.from_dlpack(src)
    del src
    gc.collect()
    assert m[-1].item() == 999.0 and m.sum().item() == float(sum(range(1000)))
