"""PyTorch's checkpoint formats (mt.save's default zip archive, and the legacy format): round trips of any object
on every device, files we write read by the installed PyTorch and files PyTorch writes read by us (tensors of
every dtype, views sharing storage, non-contiguous tensors, requires_grad, nested containers, module and
optimizer state dicts, whole modules), weights_only and the safe-globals allowlist, map_location, mmap and the
archive's layout. Hostile files are in test_serialization_hostile.py."""
import collections
import io
import math
import pickle
import warnings
import zipfile

import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import (STORED_DTYPES, assert_close, assert_requires_grad_survives, assert_same_tensor, sample_tensor,
                     to_np)
from minitorch_gpu.serialization import TypedStorage


def _bytes(obj, **kw):
    buf = io.BytesIO()
    mt.save(obj, buf, **kw)
    return buf.getvalue()


def _roundtrip(obj, save_kw=None, **load_kw):
    return mt.load(io.BytesIO(_bytes(obj, **(save_kw or {}))), **load_kw)


def _like_torch(ours, theirs):
    """One of our tensors against a PyTorch tensor: dtype, shape, stride, values and requires_grad."""
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.requires_grad == theirs.requires_grad
    got = to_np(ours.float() if ours.dtype is mt.bfloat16 else ours)
    want = (theirs.float() if str(theirs.dtype) == "torch.bfloat16" else theirs).detach().numpy()
    np.testing.assert_array_equal(got, want)


FORMATS = [{}, {"_use_new_zipfile_serialization": False}]
FORMAT_IDS = ["zip", "legacy"]


# -------------------------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_tensors_of_every_dtype_roundtrip(device, fmt):
    from minitorch_gpu.backends import get_backend
    tensors = {dt.name: sample_tensor(dt, (3, 4), device) for dt in STORED_DTYPES if get_backend(device).supports(dt)}
    tensors["scalar"] = mt.tensor(2.5, device=device)
    tensors["empty"] = mt.zeros(0, 3, device=device)
    out = _roundtrip(tensors, fmt)
    assert list(out) == list(tensors)
    for k, t in tensors.items():
        assert_same_tensor(out[k], t)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_views_share_a_storage_and_keep_their_layout(device, fmt):
    base = mt.arange(24, dtype=mt.float32, device=device).reshape(4, 6)
    obj = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1::2], "flat": base.view(-1)}
    out = _roundtrip(obj, fmt)
    for k in obj:
        assert_same_tensor(out[k], obj[k])
    assert out["t"].stride() == (1, 6) and out["cols"].stride() == (6, 2)
    assert out["row"].storage_offset() == 12 or to_np(out["row"]).tolist() == list(range(12, 18))
    # one storage: an in-place write through one view shows in the others, as in PyTorch
    out["base"][2, 0] = 100.0
    assert out["row"][0].item() == 100.0 and out["t"][0, 2].item() == 100.0 and out["flat"][12].item() == 100.0


def test_requires_grad_and_parameters(device):
    assert_requires_grad_survives(_roundtrip, device)


def test_any_picklable_object(device):
    w = mt.randn(3, 2, device=device)
    obj = {
        "nested": {"a": [w, (w, {"b": [[], (), {}]})], "set": {1, 2}, "frozen": frozenset({"x"})},
        "od": collections.OrderedDict([("z", 1), ("a", 2)]),
        "numbers": (0, -7, 2 ** 70, 1.5, -0.0, math.inf, True, None, 3 + 4j),
        "text": "héllo ✓", "raw": b"\x00\xff", "buf": bytearray(b"ab"),
        "dtype": mt.bfloat16, "device": mt.device(device), "size": mt.Size([2, 3]),
        (1, "tuple key"): 7,
    }
    out = _roundtrip(obj)
    assert out["nested"]["a"][0] is out["nested"]["a"][1][0]  # one tensor object stays one
    assert_same_tensor(out["nested"]["a"][0], w)
    assert out["nested"]["a"][1][1] == {"b": [[], (), {}]}
    assert out["nested"]["set"] == {1, 2} and out["nested"]["frozen"] == frozenset({"x"})
    assert type(out["od"]) is collections.OrderedDict and list(out["od"]) == ["z", "a"]
    assert out["numbers"][:6] == (0, -7, 2 ** 70, 1.5, -0.0, math.inf) and out["numbers"][6:] == (True, None, 3 + 4j)
    assert math.copysign(1, out["numbers"][4]) == -1
    assert out["text"] == obj["text"] and out["raw"] == b"\x00\xff" and out["buf"] == bytearray(b"ab")
    assert out["dtype"] is mt.bfloat16 and out["device"] == mt.device(device)
    assert type(out["size"]) is mt.Size and out["size"] == (2, 3)
    assert out[(1, "tuple key")] == 7


def test_reference_cycles_survive():
    cyc = [mt.ones(1)]
    cyc.append(cyc)
    out = _roundtrip(cyc)
    assert out[1] is out


class _Config:
    """A user's class inside a checkpoint: loadable with weights_only=True only once allowlisted."""

    def __init__(self, n_layer):
        self.n_layer = n_layer


class _Net(mt.nn.Module):
    def __init__(self, device=None):
        super().__init__()
        self.fc1 = mt.nn.Linear(4, 3, device=device)
        self.fc2 = mt.nn.Linear(3, 2, device=device)
        self.register_buffer("count", mt.tensor(0, device=device))

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


def test_numpy_arrays_and_user_classes_need_allowlisting():
    obj = {"arr": np.arange(6.0).reshape(2, 3), "cfg": _Config(4)}
    data = _bytes(obj)
    with pytest.raises(pickle.UnpicklingError, match="(?s)Weights only load failed.*add_safe_globals"):
        mt.load(io.BytesIO(data))
    out = mt.load(io.BytesIO(data), weights_only=False)
    np.testing.assert_array_equal(out["arr"], obj["arr"])
    assert out["cfg"].n_layer == 4
    allowed = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.float64)), _Config]
    with mt.serialization.safe_globals(allowed):
        assert set(allowed) <= set(mt.serialization.get_safe_globals())
        out = mt.load(io.BytesIO(data))
    assert mt.serialization.get_safe_globals() == []
    np.testing.assert_array_equal(out["arr"], obj["arr"])
    assert type(out["cfg"]) is _Config and out["cfg"].n_layer == 4
    mt.serialization.add_safe_globals(allowed)
    try:
        assert mt.load(io.BytesIO(data))["cfg"].n_layer == 4
    finally:
        mt.serialization.clear_safe_globals()
    assert mt.serialization.get_safe_globals() == []
    # (object, "name") entries match the name the checkpoint uses
    with mt.serialization.safe_globals([(c, f"{c.__module__}.{c.__qualname__}") for c in allowed]):
        assert mt.load(io.BytesIO(data))["cfg"].n_layer == 4
    with pytest.raises(ValueError, match="tuple of length 2"):
        with mt.serialization.safe_globals([(_Config,)]):
            mt.load(io.BytesIO(data))


def test_whole_module(device):
    net = _Net(device)
    data = _bytes(net)
    with pytest.raises(pickle.UnpicklingError, match="_Net was not an allowed global"):
        mt.load(io.BytesIO(data))
    back = mt.load(io.BytesIO(data), weights_only=False)
    assert type(back) is _Net and back.fc1.weight.device == net.fc1.weight.device
    x = mt.randn(5, 4, device=device)
    assert_close(back(x), to_np(net(x)))
    back.fc1.weight.data.zero_()  # a copy, not an alias of the saved module
    assert to_np(net.fc1.weight).any()


def _trained(device, steps=3):
    mt.manual_seed(0)
    net = _Net(device)
    opt = mt.optim.AdamW(net.parameters(), lr=0.01, betas=(0.8, 0.95))
    for s in range(steps):
        opt.zero_grad()
        g = mt.Generator(device).manual_seed(s)
        net(mt.randn(6, 4, device=device, generator=g)).pow(2).sum().backward()
        opt.step()
    return net, opt


def test_trainer_checkpoint_resumes_exactly(tmp_path, device):
    net, opt = _trained(device)
    ckpt = {"model": net.state_dict(), "optimizer": opt.state_dict(),
            "model_args": {"n_layer": 2, "bias": True, "dropout": 0.0}, "iter_num": 5, "best_val_loss": 1.25,
            "config": {"lr": 6e-4, "compile": False, "device": device}}
    mt.save(ckpt, tmp_path / "ckpt.pt")
    back = mt.load(tmp_path / "ckpt.pt")
    assert back["iter_num"] == 5 and back["model_args"] == ckpt["model_args"] and back["config"] == ckpt["config"]
    assert back["model"]._metadata == net.state_dict()._metadata
    net2 = _Net(device)
    net2.load_state_dict(back["model"])
    opt2 = mt.optim.AdamW(net2.parameters(), lr=0.5)
    opt2.load_state_dict(back["optimizer"])
    assert opt2.param_groups[0]["lr"] == 0.01 and opt2.param_groups[0]["betas"] == (0.8, 0.95)
    for s in range(3, 5):
        for n, o in ((net, opt), (net2, opt2)):
            o.zero_grad()
            g = mt.Generator(device).manual_seed(s)
            n(mt.randn(6, 4, device=device, generator=g)).pow(2).sum().backward()
            o.step()
    for a, b in zip(net.parameters(), net2.parameters()):
        np.testing.assert_array_equal(to_np(a), to_np(b))


# ----------------------------------------------------------------------------------- PyTorch reads ours

def _torch_kinds(device):
    base = mt.arange(12, dtype=mt.float32, device=device).reshape(3, 4)
    from minitorch_gpu.backends import get_backend
    obj = {dt.name: sample_tensor(dt, (2, 3), device) for dt in STORED_DTYPES if get_backend(device).supports(dt)}
    obj.update({"base": base, "row": base[1], "t": base.t(), "every_other": base[:, ::2],
                "rg": mt.randn(3, device=device, requires_grad=True),
                "param": mt.nn.Parameter(mt.randn(2, device=device)),
                "nested": [{"x": (base[0], 3)}, "s", 1.5, None], "size": mt.Size([1, 2]), "dt": mt.float16})
    return obj


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_torch_loads_our_files(device, torch, fmt):
    obj = _torch_kinds(device)
    data = _bytes(obj, **fmt)
    theirs = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    for k, v in obj.items():
        if isinstance(v, mt.Tensor):
            _like_torch(v, theirs[k])
    assert isinstance(theirs["param"], torch.nn.Parameter) and theirs["param"].requires_grad
    assert tuple(theirs["t"].stride()) == (1, 4) and tuple(theirs["every_other"].stride()) == (4, 2)
    # views keep sharing PyTorch storage
    ptr = theirs["base"].untyped_storage().data_ptr()
    assert theirs["row"].untyped_storage().data_ptr() == ptr == theirs["t"].untyped_storage().data_ptr()
    theirs["base"][1, 0] = 50.0
    assert theirs["row"][0].item() == 50.0
    _like_torch(obj["nested"][0]["x"][0], theirs["nested"][0]["x"][0])
    assert theirs["nested"][0]["x"][1] == 3 and theirs["nested"][1:] == ["s", 1.5, None]
    assert theirs["size"] == torch.Size([1, 2]) and theirs["dt"] is torch.float16


def test_torch_loads_our_state_dicts(tmp_path, device, torch):
    net, opt = _trained(device)
    mt.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "iter_num": 3}, tmp_path / "ckpt.pt")
    ck = torch.load(tmp_path / "ckpt.pt", map_location="cpu")
    tnet = _torch_net(torch)
    tnet.load_state_dict(ck["model"])
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    assert_close(net(mt.tensor(x, device=device)), tnet(torch.tensor(x)).detach().numpy(), rtol=1e-5)
    topt = torch.optim.AdamW(tnet.parameters(), lr=1.0)
    topt.load_state_dict(ck["optimizer"])
    assert topt.param_groups[0]["lr"] == 0.01 and ck["iter_num"] == 3


# ----------------------------------------------------------------------------------- we read PyTorch's

def _torch_net(torch):
    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 3)
            self.fc2 = torch.nn.Linear(3, 2)
            self.register_buffer("count", torch.tensor(0))

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    return TNet()


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_we_load_torch_files(device, torch, fmt):
    base = torch.arange(12.0).reshape(3, 4)
    a = torch.ones(2, requires_grad=True)
    obj = {"f32": torch.randn(3), "f64": torch.randn(2, 2, dtype=torch.float64), "f16": torch.randn(4).half(),
           "bf16": torch.randn(4).bfloat16(), "i64": torch.arange(5), "i32": torch.arange(3, dtype=torch.int32),
           "i16": torch.arange(2).short(), "i8": torch.tensor([-3, 4], dtype=torch.int8),
           "u8": torch.tensor([0, 255], dtype=torch.uint8), "b": torch.tensor([True, False]),
           "scalar": torch.tensor(2.5), "base": base, "row": base[1], "t": base.t(), "cols": base[:, 1::2],
           "rg": a, "nonleaf": a * 2, "param": torch.nn.Parameter(torch.randn(2)),
           "nested": [{"x": (base[0], 3)}, "s", 1.5, None, {1, 2}], "size": torch.Size([4]),
           "dtype": torch.bfloat16, "dev": torch.device("cpu"), "od": collections.OrderedDict(k=1)}
    buf = io.BytesIO()
    torch.save(obj, buf, **fmt)
    from minitorch_gpu.backends import get_backend
    out = mt.load(io.BytesIO(buf.getvalue()), map_location=device)
    for k, v in obj.items():
        if isinstance(v, torch.Tensor) and (k != "bf16" or get_backend(device).supports(mt.bfloat16)):
            _like_torch(out[k], v)
            assert out[k].device.type == mt.device(device).type
    assert isinstance(out["param"], mt.nn.Parameter) and out["param"].requires_grad
    assert out["t"].stride() == (1, 4) and out["cols"].stride() == (4, 2)
    out["base"][1, 0] = 50.0
    assert out["row"][0].item() == 50.0 and out["t"][0, 1].item() == 50.0
    assert out["nested"][0]["x"][1] == 3 and out["nested"][1:] == ["s", 1.5, None, {1, 2}]
    assert out["size"] == mt.Size([4]) and type(out["size"]) is mt.Size
    assert out["dtype"] is mt.bfloat16 and out["dev"] == mt.device("cpu") and out["od"] == {"k": 1}


def test_torch_state_dicts_load_into_our_model_and_optimizer(tmp_path, device, torch):
    torch.manual_seed(0)
    tnet = _torch_net(torch)
    topt = torch.optim.Adam(tnet.parameters(), lr=0.01, betas=(0.8, 0.95))
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((6, 4)).astype(np.float32) for _ in range(5)]
    for x in xs[:3]:
        topt.zero_grad()
        tnet(torch.tensor(x)).pow(2).sum().backward()
        topt.step()
    torch.save({"model": tnet.state_dict(), "optimizer": topt.state_dict()}, tmp_path / "torch.pt")
    ck = mt.load(tmp_path / "torch.pt", map_location=device)
    net = _Net(device)
    net.load_state_dict(ck["model"])
    opt = mt.optim.Adam(net.parameters(), lr=1.0)
    opt.load_state_dict(ck["optimizer"])
    assert opt.param_groups[0]["lr"] == 0.01
    for x in xs[3:]:
        topt.zero_grad()
        tnet(torch.tensor(x)).pow(2).sum().backward()
        topt.step()
        opt.zero_grad()
        net(mt.tensor(x, device=device)).pow(2).sum().backward()
        opt.step()
    for (name, p), tp in zip(net.named_parameters(), tnet.parameters()):
        assert_close(p, tp.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_whole_torch_module_loads_as_ours(torch):
    torch.manual_seed(0)
    tmod = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
    buf = io.BytesIO()
    torch.save(tmod, buf)
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.container.Sequential"):
        mt.load(io.BytesIO(buf.getvalue()))
    mod = mt.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert type(mod) is mt.nn.Sequential and type(mod[0]) is mt.nn.Linear
    x = np.ones((1, 3), np.float32)
    assert_close(mod(mt.tensor(x)), tmod(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def _reexported_torch_model(torch):
    """A PyTorch model whose classes PyTorch pickles by module paths we do not mirror (ours live elsewhere):
    ``torch.nn.modules.instancenorm.InstanceNorm1d``, ``torch.nn.modules.upsampling.Upsample``, plus
    ``TransformerEncoderLayer`` and the function ``torch.nn.functional.relu`` it holds."""
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Linear(8, 8), nn.InstanceNorm1d(8), nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                                           batch_first=True),
                         nn.GELU(), nn.Upsample(scale_factor=2))


def _allowlist(lib):
    nn = lib.nn
    return [nn.Sequential, nn.Linear, nn.InstanceNorm1d, nn.TransformerEncoderLayer, nn.GELU, nn.Upsample,
            nn.LayerNorm, nn.Dropout, nn.MultiheadAttention, nn.modules.linear.NonDynamicallyQuantizableLinear,
            nn.functional.relu, set]


def test_torch_module_paths_resolve_to_our_classes_wherever_they_live(torch):
    """PyTorch writes each class by the module that defines it there; our class of that name may be defined
    in another module. Both loads find it: the full one, and the restricted one when the user allowlisted our
    class (``add_safe_globals([nn.InstanceNorm1d])``, as the PyTorch user would with PyTorch's)."""
    tmod = _reexported_torch_model(torch)
    buf = io.BytesIO()
    torch.save(tmod, buf)
    with torch.serialization.safe_globals(_allowlist(torch)):  # the same allowlist works in PyTorch
        torch.load(io.BytesIO(buf.getvalue()))
    assert mt.nn.InstanceNorm1d.__module__ != "minitorch_gpu.nn.modules.instancenorm"  # the case under test
    x = np.random.default_rng(0).standard_normal((2, 8, 8)).astype(np.float32)
    want = tmod(torch.tensor(x)).detach().numpy()
    full = mt.load(io.BytesIO(buf.getvalue()), weights_only=False)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.instancenorm.InstanceNorm1d was not"):
        with mt.serialization.safe_globals([g for g in _allowlist(mt) if g is not mt.nn.InstanceNorm1d]):
            mt.load(io.BytesIO(buf.getvalue()))
    with mt.serialization.safe_globals(_allowlist(mt)):
        restricted = mt.load(io.BytesIO(buf.getvalue()))
    for mod in (full, restricted):
        assert [type(m) for m in mod] == [mt.nn.Linear, mt.nn.InstanceNorm1d, mt.nn.TransformerEncoderLayer,
                                          mt.nn.GELU, mt.nn.Upsample]
        assert_close(mod(mt.tensor(x)), want, rtol=1e-5, atol=1e-6)


def test_allowlisting_never_lets_a_torch_path_reach_another_object(torch):
    """The PyTorch path resolves to exactly the allowlisted object or nothing: allowlisting our ``nn.GELU``
    does not admit a file's ``torch.nn.modules.activation.ReLU`` or a ``torch.os.system``."""
    for module, name in (("torch.nn.modules.activation", "ReLU"), ("torch.os", "system"), ("torch", "os")):
        data = b"\x80\x02c" + f"{module}\n{name}\n".encode() + b"q\x00."
        with mt.serialization.safe_globals([mt.nn.GELU]):
            with pytest.raises(pickle.UnpicklingError, match=f"GLOBAL {module}.{name} was not an allowed global"):
                mt.serialization._unpickler.restricted_load(io.BytesIO(data), lambda pid: None)


# ----------------------------------------------------------------------------------------- map_location

def test_map_location_forms(device):
    t = mt.randn(3, device=device)
    saved_at = "cpu" if t.device.type == "cpu" else "cuda:0"
    obj = {"t": t, "u": [t, mt.ones(2, device=device)]}
    for ml in ("cpu", mt.device("cpu"), {saved_at: "cpu"}, lambda s, loc: s):
        out = _roundtrip(obj, map_location=ml)
        assert out["t"].device == mt.device("cpu") and out["u"][1].device == mt.device("cpu")
        assert_close(out["t"], to_np(t))
        assert out["t"] is out["u"][0]
    for ml in (None, {"somewhere:else": "cpu"}, lambda s, loc: None):
        assert _roundtrip(obj, map_location=ml)["t"].device == t.device
    seen = []

    def fn(storage, location):
        seen.append((type(storage), storage.device, location))
        return storage.to(device)

    out = _roundtrip(obj, map_location=fn)
    assert out["t"].device.type == mt.device(device).type
    assert seen == [(TypedStorage, mt.device("cpu"), saved_at)] * 2  # once per storage, on the CPU


def test_cpu_checkpoint_onto_device_and_back(device):
    t = mt.arange(6, dtype=mt.float32).reshape(2, 3)
    out = _roundtrip({"t": t, "v": t[1]}, map_location=device)
    assert out["t"].device.type == mt.device(device).type
    assert_close(out["t"], to_np(t))
    out["t"][1, 1] = 9.0
    assert out["v"][1].item() == 9.0  # views still share their storage on the device
    dev_t = mt.ones(2, device=device)
    assert _roundtrip(dev_t, map_location="cpu").device == mt.device("cpu")


def test_map_location_errors():
    with pytest.raises(TypeError, match="map_location"):
        _roundtrip({"t": mt.ones(1)}, map_location=3.5)
    with pytest.raises(TypeError, match="must return a storage or None"):
        _roundtrip({"t": mt.ones(1)}, map_location=lambda s, loc: 5)
    with pytest.raises(RuntimeError, match="Invalid device string|Expected one of"):
        _roundtrip({"t": mt.ones(1)}, map_location="tpu")


def test_cuda_checkpoint_without_cuda(torch):
    if mt.cuda.is_available():
        pytest.skip("a GPU (or the simulator) is present")
    # PyTorch cannot make CUDA tensors here either: write the location tag by hand
    data = _bytes({"t": mt.arange(3, dtype=mt.float32)})
    zin = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            rec = zin.read(info)
            if info.filename.endswith("data.pkl"):
                rec = rec.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            zout.writestr(info.filename, rec)
    with pytest.raises(RuntimeError, match="map_location=minitorch_gpu.device\\('cpu'\\)"):
        mt.load(io.BytesIO(out.getvalue()))
    assert_close(mt.load(io.BytesIO(out.getvalue()), map_location="cpu")["t"], [0.0, 1.0, 2.0])


# ------------------------------------------------------------------------------------- weights_only knobs

def test_weights_only_arguments_and_environment(monkeypatch):
    data = _bytes({"cfg": _Config(2)})
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module"):
        mt.load(io.BytesIO(data), pickle_module=pickle, weights_only=True)
    # an explicit pickle_module means full unpickling, as in PyTorch
    assert mt.load(io.BytesIO(data), pickle_module=pickle)["cfg"].n_layer == 2
    with pytest.warns(UserWarning, match="pickle_load_args only works if `weights_only=False`"):
        with pytest.raises(pickle.UnpicklingError):
            mt.load(io.BytesIO(data), encoding="latin1")
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(pickle.UnpicklingError):
        mt.load(io.BytesIO(data), weights_only=False)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="Only one of"):
        mt.load(io.BytesIO(data))
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    with pytest.warns(UserWarning, match="forcing weights_only=False"):
        assert mt.load(io.BytesIO(data))["cfg"].n_layer == 2
    with pytest.raises(pickle.UnpicklingError):  # an explicit weights_only=True wins over the variable
        mt.load(io.BytesIO(data), weights_only=True)


def test_register_package_and_default_restore_location():
    t = mt.arange(3, dtype=mt.float32)
    calls = []

    def tagger(storage):
        return None

    def deserializer(storage, location):
        calls.append(location)
        return storage if location == "cpu" else None

    mt.serialization.register_package(5, tagger, deserializer)
    try:
        assert_close(_roundtrip(t), [0.0, 1.0, 2.0])
    finally:
        mt.serialization._storage._packages.remove((5, tagger, deserializer))
    assert calls == ["cpu"]
    with pytest.raises(TypeError, match="tagger must be callable"):
        mt.serialization.register_package(0, 1, deserializer)
    s = TypedStorage(np.zeros(2, np.float32), mt.float32)
    assert mt.serialization.default_restore_location(s, "cpu") is s


# ----------------------------------------------------------------------------------------- file layout

def test_archive_layout_like_torch(tmp_path, torch):
    t = mt.arange(6, dtype=mt.float32)
    mt.save({"a": t, "b": t[2:]}, tmp_path / "model.pt")
    torch.save({"a": torch.arange(6.0)}, tmp_path / "theirs.pt")
    ours = zipfile.ZipFile(tmp_path / "model.pt")
    theirs = zipfile.ZipFile(tmp_path / "theirs.pt")
    assert [n.split("/", 1)[1] for n in ours.namelist()] == [n.split("/", 1)[1] for n in theirs.namelist()]
    assert all(n.startswith("model/") for n in ours.namelist())
    assert ours.read("model/version") == theirs.read("theirs/version")
    assert ours.read("model/byteorder") == theirs.read("theirs/byteorder")
    assert len(ours.read("model/.data/serialization_id")) == 40
    assert ours.read("model/data/0") == np.arange(6, dtype=np.float32).tobytes()  # one storage for both
    with open(tmp_path / "model.pt", "rb") as fh:
        for info in ours.infolist():
            fh.seek(info.header_offset + 26)
            n, m = np.frombuffer(fh.read(4), np.uint16)
            assert (info.header_offset + 30 + n + m) % 64 == 0, info.filename  # storages mappable in place
    buf = io.BytesIO()
    mt.save(t, buf)
    assert zipfile.ZipFile(buf).namelist()[0] == "archive/data.pkl"


def test_same_object_same_bytes(tmp_path):
    obj = {"w": mt.arange(4, dtype=mt.float32), "n": 3}
    assert _bytes(obj) == _bytes(obj)
    assert _bytes(obj) != _bytes({"w": mt.arange(4, dtype=mt.float32) + 1, "n": 3})


@pytest.mark.parametrize("protocol", [1, 2, 3, 4, 5])
def test_pickle_protocols(protocol):
    obj = {"t": mt.arange(3), "d": mt.float16, "s": {1}, "b": b"x"}
    out = _roundtrip(obj, {"pickle_protocol": protocol})
    assert_same_tensor(out["t"], obj["t"])
    assert out["d"] is mt.float16 and out["s"] == {1} and out["b"] == b"x"


def test_protocol_0_cannot_hold_tensors():
    # (PyTorch writes such a file and then cannot read it back)
    assert _roundtrip({"n": 1}, {"pickle_protocol": 0}) == {"n": 1}
    with pytest.raises(pickle.PicklingError, match="protocol 0 cannot store tensors"):
        _bytes(mt.ones(1), pickle_protocol=0)


def test_mmap(tmp_path):
    t = mt.arange(1000, dtype=mt.float32)
    mt.save({"t": t, "v": t[10:20]}, tmp_path / "m.pt")
    out = mt.load(tmp_path / "m.pt", mmap=True)
    assert isinstance(out["t"]._data.base, np.memmap) or isinstance(out["t"]._data, np.memmap)
    assert_close(out["v"], np.arange(10, 20, dtype=np.float32))
    out["t"][0] = 5.0  # copy-on-write: the file keeps its bytes
    assert mt.load(tmp_path / "m.pt")["t"][0].item() == 0.0
    with pytest.raises(ValueError, match="must be a file path"):
        mt.load(io.BytesIO(_bytes(t)), mmap=True)
    mt.save(t, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used"):
        mt.load(tmp_path / "legacy.pt", mmap=True)


def test_save_arguments(tmp_path):
    with pytest.raises(AttributeError, match="expected 'f' to be string, path, or a file-like object"):
        mt.save({}, 42)
    with pytest.raises(ValueError, match="pickle protocol"):
        mt.save({}, io.BytesIO(), pickle_protocol=99)
    with pytest.raises(TypeError, match="binary mode"):
        mt.save({}, io.StringIO())
    # an unpicklable object fails before anything is written
    with pytest.raises((TypeError, AttributeError, pickle.PicklingError)):
        mt.save({"a": mt.ones(2), "f": lambda: 0}, tmp_path / "x.pt")
    assert list(tmp_path.iterdir()) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mt.save(mt.ones(1), tmp_path / "ok.pt")


def test_tensor_attributes_cross_both_ways(torch):
    t = mt.ones(2)
    t.tag = "w"
    data = _bytes(t)
    assert mt.load(io.BytesIO(data)).tag == "w" and torch.load(io.BytesIO(data)).tag == "w"
    tt = torch.ones(2)
    tt.tag = 3
    buf = io.BytesIO()
    torch.save(tt, buf)
    assert mt.load(io.BytesIO(buf.getvalue())).tag == 3
