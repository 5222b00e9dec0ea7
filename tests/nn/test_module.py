"""nn.Module: the registries kept by __setattr__, traversal, state_dict / load_state_dict, modes,
conversion, copying, hooks (forward and backward, compared with PyTorch's) and repr.

The layers here are tiny modules defined in this file (``Linear`` mirrors torch.nn.Linear's parameters and
repr), so these tests exercise Module alone."""
import copy
import math
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu import nn


class Linear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in_features)
        self.weight = nn.Parameter(mt.empty(out_features, in_features, device=device, dtype=dtype)
                                   .uniform_(-bound, bound))
        if bias:
            self.bias = nn.Parameter(mt.empty(out_features, device=device, dtype=dtype).uniform_(-bound, bound))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        y = x.matmul(self.weight.t())
        return y if self.bias is None else y + self.bias

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Net(nn.Module):
    """The seed's example: one Linear and a softmax."""

    def __init__(self, device=None):
        super().__init__()
        self.linear = Linear(4, 2, device=device)

    def forward(self, input):
        return self.linear(input).softmax(-1)


class BufNet(nn.Module):
    def __init__(self, device=None):
        super().__init__()
        self.fc = Linear(4, 3, device=device)
        self.head = Linear(3, 2, device=device)
        self.register_buffer("steps", mt.zeros((), dtype=mt.int64, device=device))
        self.register_buffer("mean", mt.zeros(3, device=device))
        self.register_buffer("scratch", mt.zeros(2, device=device), persistent=False)

    def forward(self, x):
        return self.head(self.fc(x) - self.mean)


def _torch_linear_like(torch, m):
    """A torch.nn.Linear with the weights of our test Linear."""
    t = torch.nn.Linear(m.in_features, m.out_features, bias=m.bias is not None)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(to_np(m.weight)))
        if m.bias is not None:
            t.bias.copy_(torch.tensor(to_np(m.bias)))
    return t


def _same_error(torch_fn, mt_fn):
    """Both raise the same exception type with the same message (up to the framework's name)."""
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(type(te.value)) as me:
        mt_fn()
    assert str(me.value) == str(te.value).replace("torch", "minitorch_gpu")


# ---------------------------------------------------------------------- registries

def test_setattr_registers_modules_and_parameters(device):
    net = Net(device)
    assert list(net._modules) == ["linear"]
    assert list(net.linear._parameters) == ["weight", "bias"]
    assert "linear" not in net.__dict__ and "weight" not in net.linear.__dict__
    assert net.linear is net._modules["linear"]
    assert [n for n, _ in net.named_parameters()] == ["linear.weight", "linear.bias"]
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    out = net(mt.randn(3, 4, device=device))
    assert out.shape == (3, 2)
    assert_close(out.sum(-1), np.ones(3), rtol=1e-6)


def test_assigning_plain_tensor_to_parameter_name_raises(device, torch):
    net = Net(device)
    w = net.linear.weight
    with pytest.raises(TypeError) as e:
        net.linear.weight = mt.zeros(2, 4, device=device)
    name = "minitorch_gpu.cuda.FloatTensor" if device == "cuda" else "minitorch_gpu.FloatTensor"
    assert str(e.value) == (f"cannot assign '{name}' as parameter 'weight' "
                            "(minitorch_gpu.nn.Parameter or None expected)")
    assert net.linear.weight is w  # the failed assignment changed nothing
    tl = torch.nn.Linear(4, 2)
    _same_error(lambda: setattr(tl, "weight", torch.zeros(2, 4)),
                lambda: setattr(Linear(4, 2), "weight", mt.zeros(2, 4)))


def test_assigning_none_to_parameter_keeps_the_name_reserved(device):
    lin = Linear(4, 2, device=device)
    lin.bias = None
    assert "bias" in lin._parameters and lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    assert list(lin.state_dict()) == ["weight"]
    lin.bias = nn.Parameter(mt.zeros(2, device=device))
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]


def test_assignment_before_init_raises(device):
    class Early(nn.Module):
        def __init__(self, what):
            if what == "param":
                self.p = nn.Parameter(mt.zeros(1, device=device))
            elif what == "module":
                self.m = nn.Module()
            else:
                self.register_buffer("b", mt.zeros(1, device=device))
            super().__init__()

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early("param")
    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\) call"):
        Early("module")
    with pytest.raises(AttributeError, match=r"cannot assign buffer before Module.__init__\(\) call"):
        Early("buffer")


def test_setattr_matches_torch_errors(torch):
    for lib in (torch, mt):
        lib._m = lib.nn.Module()
        lib._m.sub = lib.nn.Module()
        lib._m.w = lib.nn.Parameter(lib.zeros(2))
        lib._m.register_buffer("buf", lib.zeros(2))
    cases = [
        lambda lib: setattr(lib._m, "sub", 3),
        lambda lib: setattr(lib._m, "buf", "text"),
        lambda lib: lib._m.register_buffer("w", lib.zeros(1)),
        lambda lib: lib._m.register_buffer("a.b", lib.zeros(1)),
        lambda lib: lib._m.register_buffer("", lib.zeros(1)),
        lambda lib: lib._m.register_buffer(3, lib.zeros(1)),
        lambda lib: lib._m.register_buffer("x", 3),
        lambda lib: lib._m.register_parameter("x", lib.zeros(1)),
        lambda lib: lib._m.register_parameter("a.b", lib.nn.Parameter(lib.zeros(1))),
        lambda lib: lib._m.register_parameter("", None),
        lambda lib: lib._m.register_parameter("sub", None),
        lambda lib: lib._m.register_parameter("q", lib.nn.Parameter(lib.zeros(1)) * 2),
        lambda lib: lib._m.add_module("x", 3),
        lambda lib: lib._m.add_module("w", lib.nn.Module()),
        lambda lib: lib._m.add_module("a.b", lib.nn.Module()),
        lambda lib: lib._m.add_module("", lib.nn.Module()),
        lambda lib: lib._m.nothing,
        lambda lib: lib._m(1),
        lambda lib: lib._m.train(1),
        lambda lib: lib._m.to(lib.int64),
        lambda lib: lib.nn.Module(3),
        lambda lib: lib.nn.Module(k=3),
    ]
    for case in cases:
        _same_error(lambda: case(torch), lambda: case(mt))
    # nothing was registered by the failed calls
    assert list(mt._m._parameters) == ["w"] and list(mt._m._buffers) == ["buf"] and list(mt._m._modules) == ["sub"]


def test_non_leaf_parameter_rejected(torch):
    def scenario(lib):
        # a Parameter that does not require grad, written in place with a tensor that does, gains history
        q = lib.nn.Parameter(lib.zeros(2), requires_grad=False)
        q.mul_(lib.ones(2, requires_grad=True))
        lib.nn.Module().register_parameter("q", q)

    _same_error(lambda: scenario(torch), lambda: scenario(mt))
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'q'"):
        scenario(mt)


def test_rejected_parameter_assignment_changes_nothing(device):
    m = nn.Module()
    m.register_buffer("x", mt.zeros(1, device=device), persistent=False)
    bad = nn.Parameter(mt.zeros(2, device=device), requires_grad=False)
    bad.mul_(mt.ones(2, device=device, requires_grad=True))  # now a Parameter with history
    with pytest.raises(ValueError):
        m.x = bad
    assert "x" in m._buffers and "x" in m._non_persistent_buffers_set and "x" not in m._parameters
    m.sub = nn.Module()
    with pytest.raises(ValueError):
        m.sub = bad
    assert isinstance(m.sub, nn.Module)


def test_reassignment_moves_a_name_between_registries(device):
    m = nn.Module()
    m.x = 3
    m.x = nn.Parameter(mt.zeros(1, device=device))
    assert "x" not in m.__dict__ and "x" in m._parameters
    m.register_buffer("b", mt.zeros(1, device=device), persistent=False)
    m.b = nn.Module()
    assert "b" not in m._buffers and "b" in m._modules and "b" not in m._non_persistent_buffers_set
    m.b = nn.Parameter(mt.ones(1, device=device))
    assert "b" not in m._modules and "b" in m._parameters
    m.b = None
    assert m._parameters["b"] is None


def test_buffer_assignment_updates_buffer(device):
    m = BufNet(device)
    new = mt.ones(3, device=device)
    m.mean = new
    assert m._buffers["mean"] is new and "mean" not in m.__dict__
    m.scratch = mt.ones(2, device=device)
    assert "scratch" in m._non_persistent_buffers_set  # reassignment keeps persistence
    assert "scratch" not in m.state_dict()
    m.mean = None
    assert m._buffers["mean"] is None and "mean" not in m.state_dict()
    m.flagged = nn.Buffer(mt.zeros(4, device=device), persistent=False)
    assert "flagged" in m._buffers and "flagged" in m._non_persistent_buffers_set
    m.plain = mt.zeros(1, device=device)  # a plain tensor is just an attribute
    assert "plain" in m.__dict__ and "plain" not in m._buffers


def test_delattr(device):
    m = BufNet(device)
    del m.fc
    del m.steps
    del m.scratch
    assert "fc" not in m._modules and "steps" not in m._buffers and "scratch" not in m._non_persistent_buffers_set
    del m.head.bias
    assert "bias" not in m.head._parameters
    m.other = 1
    del m.other
    with pytest.raises(AttributeError):
        del m.other


def test_dir_lists_registered_names(device):
    m = BufNet(device)
    d = dir(m)
    for name in ("fc", "head", "steps", "scratch", "forward", "state_dict", "training"):
        assert name in d
    assert d == sorted(d)


# ---------------------------------------------------------------------- traversal

class Tied(nn.Module):
    def __init__(self, device=None):
        super().__init__()
        self.embed = Linear(3, 5, bias=False, device=device)
        self.body = Linear(3, 3, device=device)
        self.out = Linear(5, 3, bias=False, device=device)
        self.out.weight = self.embed.weight  # (3, 5) vs (5, 3): tie the transposed roles by sharing
        self.shared = self.body

    def forward(self, x):
        return self.shared(self.body(x))


def test_tied_parameters_and_shared_modules(device):
    m = Tied(device)
    names = [n for n, _ in m.named_parameters()]
    assert names == ["embed.weight", "body.weight", "body.bias"]
    assert len(list(m.parameters())) == 3
    all_names = [n for n, _ in m.named_parameters(remove_duplicate=False)]
    assert all_names == ["embed.weight", "body.weight", "body.bias", "out.weight", "shared.weight",
                         "shared.bias"]
    assert [n for n, _ in m.named_modules()] == ["", "embed", "body", "out"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "embed", "body", "out", "shared"]
    assert [n for n, _ in m.named_children()] == ["embed", "body", "out"]
    assert [n for n, _ in m.named_modules(prefix="model")] == ["model", "model.embed", "model.body", "model.out"]
    # state_dict keeps every name
    assert list(m.state_dict()) == ["embed.weight", "body.weight", "body.bias", "out.weight", "shared.weight",
                                    "shared.bias"]


def test_named_parameters_prefix_and_recurse(device):
    m = BufNet(device)
    m.own = nn.Parameter(mt.zeros(1, device=device))
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["own"]
    assert [n for n, _ in m.named_parameters(prefix="net")][:2] == ["net.own", "net.fc.weight"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "mean", "scratch"]
    assert [n for n, _ in m.named_buffers(prefix="p", recurse=False)] == ["p.steps", "p.mean", "p.scratch"]
    assert len(list(m.buffers())) == 3
    assert list(m.children()) == [m.fc, m.head]
    assert list(m.modules()) == [m, m.fc, m.head]


def test_traversal_matches_torch(torch):
    def build(lib):
        seq = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.ReLU())
        root = lib.nn.Module()
        root.a = seq
        root.b = lib.nn.Module()
        root.b.c = seq[0]
        root.register_buffer("r", lib.zeros(1))
        return root

    t, m = build(torch), build(mt)
    for kw in ({}, {"remove_duplicate": False}, {"prefix": "x"}):
        assert [n for n, _ in m.named_modules(**kw)] == [n for n, _ in t.named_modules(**kw)]
        assert [n for n, _ in m.named_parameters(**kw)] == [n for n, _ in t.named_parameters(**kw)]
        assert [n for n, _ in m.named_buffers(**kw)] == [n for n, _ in t.named_buffers(**kw)]
    assert list(m.state_dict()) == list(t.state_dict())


def test_get_submodule_parameter_buffer(device, torch):
    m = BufNet(device)
    assert m.get_submodule("") is m
    assert m.get_submodule("fc") is m.fc
    assert m.get_parameter("head.bias") is m.head.bias
    assert m.get_buffer("steps") is m.steps

    def build(lib):
        r = lib.nn.Module()
        r.fc = lib.nn.Module()
        r.fc.w = lib.nn.Parameter(lib.zeros(1))
        r.fc.register_buffer("b", lib.zeros(1))
        r.fc.plain = 3
        return r
    t, m2 = build(torch), build(mt)
    for target in ("nope", "fc.nope", "fc.w.x", "fc.plain.x"):
        _same_error(lambda: t.get_submodule(target), lambda: m2.get_submodule(target))
    for target in ("fc.nope", "fc.b", "fc.plain", "x.w"):
        _same_error(lambda: t.get_parameter(target), lambda: m2.get_parameter(target))
    for target in ("fc.nope", "fc.w", "fc.plain"):
        _same_error(lambda: t.get_buffer(target), lambda: m2.get_buffer(target))


def test_set_submodule(device):
    m = BufNet(device)
    new = Linear(4, 3, device=device)
    m.set_submodule("fc", new)
    assert m.fc is new
    m.set_submodule("fc.extra", nn.Module())
    assert isinstance(m.fc.extra, nn.Module)
    with pytest.raises(AttributeError):
        m.set_submodule("fc.missing", nn.Module(), strict=True)
    with pytest.raises(ValueError):
        m.set_submodule("fc", 3)


# ---------------------------------------------------------------------- state_dict

def test_state_dict_keys_values_and_detachment(device):
    m = BufNet(device)
    sd = m.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["steps", "mean", "fc.weight", "fc.bias", "head.weight", "head.bias"]
    assert list(sd._metadata) == ["", "fc", "head"]
    for k, v in sd.items():
        assert type(v) is mt.Tensor and not v.requires_grad
    # detached, but the same memory
    sd["fc.bias"].add_(1)
    assert_close(m.fc.bias, to_np(sd["fc.bias"]))
    kept = m.state_dict(keep_vars=True)
    assert kept["fc.weight"] is m.fc.weight and kept["steps"] is m.steps
    sub = m.fc.state_dict(prefix="fc.")
    assert list(sub) == ["fc.weight", "fc.bias"]


def test_state_dict_round_trip(device):
    a, b = BufNet(device), BufNet(device)
    a.mean.add_(2)
    a.steps.add_(7)
    params_before = list(b.parameters())
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        assert_close(vb, to_np(va))
    # loaded in place: the same Parameter objects, so an optimizer built before keeps working
    assert all(p is q for p, q in zip(params_before, b.parameters()))
    assert b.steps.dtype is mt.int64 and int(b.steps) == 7
    x = mt.randn(5, 4, device=device)
    assert_close(b(x), to_np(a(x)))


def test_load_state_dict_strict_and_non_strict(device):
    m = BufNet(device)
    sd = m.state_dict()
    del sd["head.bias"]
    sd["head.extra"] = mt.zeros(1, device=device)
    sd["ghost.weight"] = mt.zeros(1, device=device)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    assert str(e.value) == ('Error(s) in loading state_dict for BufNet:\n\tMissing key(s) in state_dict: '
                            '"head.bias". \n\tUnexpected key(s) in state_dict: "ghost.weight", "head.extra". ')
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["head.bias"]
    assert res.unexpected_keys == ["ghost.weight", "head.extra"]
    assert "missing_keys=['head.bias']" in repr(res)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([("a", 1)])


def test_load_state_dict_lists_every_problem_and_loads_nothing(device):
    m = BufNet(device)
    before = {k: to_np(v).copy() for k, v in m.state_dict().items()}
    sd = {k: v + 1 for k, v in m.state_dict().items()}
    sd["fc.weight"] = mt.ones(5, 4, device=device)
    sd["head.bias"] = mt.ones(7, device=device)
    del sd["head.weight"]
    sd["extra"] = mt.ones(1, device=device)
    for strict in (True, False):
        with pytest.raises(RuntimeError) as e:
            m.load_state_dict(sd, strict=strict)
        size_lines = ("\n\tsize mismatch for fc.weight: copying a param with shape minitorch_gpu.Size([5, 4]) from "
                      "checkpoint, the shape in current model is minitorch_gpu.Size([3, 4]).\n\tsize mismatch for "
                      "head.bias: copying a param with shape minitorch_gpu.Size([7]) from checkpoint, the shape in "
                      "current model is minitorch_gpu.Size([2]).")
        key_lines = ('\n\tMissing key(s) in state_dict: "head.weight". \n\tUnexpected key(s) in state_dict: '
                     '"extra". ') if strict else ""
        assert str(e.value) == "Error(s) in loading state_dict for BufNet:" + key_lines + size_lines
        # fc.bias, mean and steps matched, yet none of them was loaded
        for k, v in m.state_dict().items():
            np.testing.assert_array_equal(to_np(v), before[k])


def test_load_state_dict_error_text_matches_torch(torch):
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Module()
                self.fc.weight = lib.nn.Parameter(lib.zeros(3, 4))
                self.fc.bias = lib.nn.Parameter(lib.zeros(3))
                self.register_buffer("n", lib.zeros((), dtype=lib.int64))
        return Net()

    t, m = build(torch), build(mt)
    bad = {"fc.weight": (2, 4), "n": (1, 2), "zz": (1,)}
    _same_error(lambda: t.load_state_dict({k: torch.zeros(*s) for k, s in bad.items()}),
                lambda: m.load_state_dict({k: mt.zeros(*s) for k, s in bad.items()}))
    _same_error(lambda: t.load_state_dict({"fc.weight": 3}, strict=False),
                lambda: m.load_state_dict({"fc.weight": 3}, strict=False))


def test_load_state_dict_casts_and_accepts_legacy_scalar(device):
    m = BufNet(device)
    sd = {k: v.double() if v.is_floating_point() else v for k, v in m.state_dict().items()}
    sd["fc.bias"] = mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64)  # from the CPU, in float64
    sd["steps"] = mt.tensor([4])  # a 1-element vector for a 0-d buffer (old checkpoints)
    m.load_state_dict(sd)
    assert m.fc.bias.dtype is mt.float32 and m.fc.bias.device.type == mt.device(device).type
    assert_close(m.fc.bias, [1.0, 2.0, 3.0])
    assert m.steps.shape == () and int(m.steps) == 4


def test_load_state_dict_assign(device):
    m = BufNet(device)
    w = mt.randn(3, 4, device=device, dtype=mt.float64)
    sd = m.state_dict()
    sd["fc.weight"] = w
    m.load_state_dict(sd, assign=True)
    assert isinstance(m.fc.weight, nn.Parameter) and m.fc.weight.requires_grad
    assert m.fc.weight.dtype is mt.float64
    assert m.fc.weight.data_ptr() == w.data_ptr()


def test_load_from_state_dict_override_and_extra_state(device):
    class Versioned(Linear):
        _version = 2

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            # version-1 checkpoints named the weight "w"
            if local_metadata.get("version", 1) < 2 and prefix + "w" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)

        def get_extra_state(self):
            return {"calls": self.calls}

        def set_extra_state(self, state):
            self.calls = state["calls"]

    m = nn.Module()
    m.lin = Versioned(2, 2, device=device)
    m.lin.calls = 5
    sd = m.state_dict()
    assert sd._metadata["lin"] == {"version": 2}
    assert sd["lin._extra_state"] == {"calls": 5}
    old = OrderedDict((k.replace("weight", "w"), v + 1 if isinstance(v, mt.Tensor) else v) for k, v in sd.items())
    old._metadata = OrderedDict([("", {"version": 1}), ("lin", {"version": 1})])
    old["lin._extra_state"] = {"calls": 9}
    m.load_state_dict(old)
    assert m.lin.calls == 9
    assert_close(m.lin.weight, to_np(old["lin.w"]))
    # a module without extra state rejects the key
    plain = nn.Module()
    plain.lin = Linear(2, 2, device=device)
    bad = plain.state_dict()
    bad["lin._extra_state"] = 1
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "lin._extra_state"'):
        plain.load_state_dict(bad)


def test_state_dict_and_load_hooks(device):
    m = BufNet(device)
    seen = []
    m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(("pre", prefix)))
    def drop_steps(mod, sd, prefix, meta):
        del sd[prefix + "steps"]

    h = m.register_state_dict_post_hook(drop_steps)
    assert "steps" not in m.state_dict()
    h.remove()
    assert "steps" in m.state_dict()
    assert seen == [("pre", ""), ("pre", "")]
    bad = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd)
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()
    bad.remove()
    m._register_state_dict_hook(lambda mod, sd, prefix, meta: OrderedDict(list(sd.items())[:1]))
    assert list(m.state_dict()) == ["steps"]
    m._state_dict_hooks.clear()
    m.register_load_state_dict_pre_hook(
        lambda mod, sd, prefix, meta, strict, missing, unexpected, errors: sd.setdefault(
            prefix + "steps", mt.tensor(3, device=device)))
    sd = m.state_dict()
    del sd["steps"]
    m.load_state_dict(sd)
    assert int(m.steps) == 3


def test_load_post_hook_may_forgive_keys_and_sees_loaded_values(device):
    m = BufNet(device)
    sd = {k: v + 1 if v.is_floating_point() else v for k, v in m.state_dict().items()}
    del sd["mean"]
    seen = {}

    def forgive(module, keys):
        seen["bias"] = to_np(module.fc.bias).copy()
        if "mean" in keys.missing_keys:
            keys.missing_keys.remove("mean")

    expect = to_np(sd["fc.bias"])
    h = m.register_load_state_dict_post_hook(forgive)
    res = m.load_state_dict(sd)
    assert res.missing_keys == []
    np.testing.assert_array_equal(seen["bias"], expect)
    assert_close(m.fc.bias, expect)
    h.remove()
    # a post hook that does not forgive: the load fails and the values are put back
    before = to_np(m.fc.bias).copy()
    m.register_load_state_dict_post_hook(lambda module, keys: None)
    sd2 = {k: v + 1 if v.is_floating_point() else v for k, v in m.state_dict().items()}
    del sd2["mean"]
    with pytest.raises(RuntimeError, match="Missing key"):
        m.load_state_dict(sd2)
    np.testing.assert_array_equal(to_np(m.fc.bias), before)


def test_state_dict_matches_torch_values(torch):
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    m = mt.nn.Sequential(mt.nn.Linear(3, 4), mt.nn.Linear(4, 2))
    m.load_state_dict({k: mt.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    assert_close(m(mt.tensor(x)), t(torch.tensor(x)).detach().numpy(), rtol=1e-5)
    back = {k: torch.tensor(to_np(v)) for k, v in m.state_dict().items()}
    t.load_state_dict(back)


# ---------------------------------------------------------------------- modes, grads, apply

def test_train_eval_propagate(device):
    m = BufNet(device)
    assert m.training and m.fc.training
    assert m.eval() is m
    assert not m.training and not m.fc.training and not m.head.training
    m.train()
    assert m.training and m.head.training
    m.fc.train(False)
    assert m.training and not m.fc.training


def test_requires_grad_and_zero_grad(device):
    m = BufNet(device)
    m(mt.randn(2, 4, device=device)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    assert type(m.fc.weight.grad) is mt.Tensor
    g = m.fc.weight.grad
    m.zero_grad(set_to_none=False)
    assert m.fc.weight.grad is g and not to_np(g).any()
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    assert m.requires_grad_(False) is m
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    assert all(p.requires_grad for p in m.parameters())


def test_apply_visits_children_first(device):
    m = BufNet(device)
    order = []
    assert m.apply(lambda mod: order.append(type(mod).__name__)) is m
    assert order == ["Linear", "Linear", "BufNet"]

    def init(mod):
        if isinstance(mod, Linear):
            with mt.no_grad():
                mod.weight.fill_(0.5)
    m.apply(init)
    assert (to_np(m.head.weight) == 0.5).all()


# ---------------------------------------------------------------------- conversion

def test_to_dtype_keeps_parameter_objects(device):
    m = BufNet(device)
    m(mt.randn(2, 4, device=device)).sum().backward()
    params = list(m.parameters())
    opt = mt.optim.SGD(m.parameters(), lr=0.1)
    assert m.to(mt.float64) is m
    assert all(p is q for p, q in zip(params, m.parameters()))
    assert all(p.dtype is mt.float64 and isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert all(p.grad.dtype is mt.float64 for p in m.parameters())
    assert m.mean.dtype is mt.float64 and m.scratch.dtype is mt.float64
    assert m.steps.dtype is mt.int64  # integer buffers keep their dtype
    m.zero_grad()
    loss = m(mt.randn(2, 4, device=device, dtype=mt.float64)).sum()
    loss.backward()
    before = to_np(m.fc.weight).copy()
    opt.step()
    assert not np.allclose(to_np(m.fc.weight), before)
    m.float()
    assert m.fc.weight.dtype is mt.float32 and m.steps.dtype is mt.int64
    m.half()
    assert m.fc.weight.dtype is mt.float16
    m.double()
    assert m.fc.weight.dtype is mt.float64
    if device == "cpu":  # the GPU backend has no bfloat16
        m.bfloat16()
        assert m.fc.weight.dtype is mt.bfloat16
    m.to(mt.zeros(1, dtype=mt.float32, device=device))
    assert m.fc.weight.dtype is mt.float32
    m.type(mt.float64)
    assert m.steps.dtype is mt.float64  # type() casts every tensor, like PyTorch


def test_to_device(device):
    m = BufNet("cpu")
    w = m.fc.weight
    m.to(device)
    dev_type = mt.device(device).type
    assert m.fc.weight is w and w.device.type == dev_type and m.steps.device.type == dev_type
    m.to(device, mt.float64)
    assert w.dtype is mt.float64 and w.device.type == mt.device(device).type
    m.cpu()
    assert w.device == mt.device("cpu") and m.mean.device == mt.device("cpu")
    if device == "cuda":
        m.cuda()
        assert w.is_cuda and m.mean.is_cuda
    out = m.to(device)(mt.randn(2, 4, device=device, dtype=mt.float64))
    assert out.device.type == mt.device(device).type


# ---------------------------------------------------------------------- copying

def test_deepcopy_keeps_types_ties_and_independence(device):
    m = Tied(device)
    m(mt.randn(2, 3, device=device)).sum().backward()
    c = copy.deepcopy(m)
    assert type(c.body.weight) is nn.Parameter and c.body.weight.requires_grad
    assert c.out.weight is c.embed.weight and c.shared is c.body
    assert c.body.weight is not m.body.weight
    assert_close(c.body.weight, to_np(m.body.weight))
    with mt.no_grad():
        c.body.weight.add_(1)
    assert not np.allclose(to_np(c.body.weight), to_np(m.body.weight))
    assert c.body.weight.grad is None  # like PyTorch's Parameter.__deepcopy__
    assert [n for n, _ in c.named_parameters()] == [n for n, _ in m.named_parameters()]


def test_pickle_round_trip(device):
    m = BufNet(device)
    m.mean.add_(1.5)
    c = pickle.loads(pickle.dumps(m))
    assert type(c) is BufNet and type(c.fc.weight) is nn.Parameter
    for (k, v), (k2, v2) in zip(m.state_dict().items(), c.state_dict().items()):
        assert k == k2
        assert_close(v2, to_np(v))
    assert "scratch" in c._non_persistent_buffers_set
    x = mt.randn(2, 4, device=device)
    assert_close(c(x), to_np(m(x)))


# ---------------------------------------------------------------------- forward hooks

def test_forward_pre_hook_and_forward_hook(device):
    lin = Linear(3, 2, device=device)
    x = mt.randn(4, 3, device=device)
    calls = []

    def pre(mod, args):
        calls.append("pre")
        assert mod is lin and isinstance(args, tuple)
        return args[0] * 2  # a single value is wrapped into a tuple

    def fwd(mod, args, out):
        calls.append("fwd")
        return out + 1

    h1 = lin.register_forward_pre_hook(pre)
    h2 = lin.register_forward_hook(fwd)
    expected = to_np(x) * 2 @ to_np(lin.weight).T + to_np(lin.bias) + 1
    assert_close(lin(x), expected, rtol=1e-5, atol=1e-5)
    assert calls == ["pre", "fwd"]
    h1.remove()
    h2.remove()
    assert_close(lin(x), to_np(x) @ to_np(lin.weight).T + to_np(lin.bias), rtol=1e-5, atol=1e-5)
    assert calls == ["pre", "fwd"]


def test_hooks_with_kwargs_and_prepend():
    class Scale(nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale

    m = Scale()
    order = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": kwargs.get("scale", 1.0) * 3}),
                                with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: order.append(("kw", kwargs["scale"])), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: order.append("first"), prepend=True)
    m.register_forward_pre_hook(lambda mod, args: order.append("pre-first"), prepend=True)
    out = m(mt.ones(2), scale=2.0)
    assert_close(out, [6.0, 6.0])
    assert order == ["pre-first", "first", ("kw", 6.0)]
    bad = Scale()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        bad(mt.ones(1))


def test_hook_handles_are_context_managers():
    m = Linear(2, 2)
    seen = []
    with m.register_forward_hook(lambda *a: seen.append(1)):
        m(mt.ones(1, 2))
    m(mt.ones(1, 2))
    assert seen == [1]
    assert not m._forward_hooks


def test_always_call_forward_hook_runs_when_forward_raises():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: seen.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(mt.ones(1))
    assert seen == [("always", None)]


def test_global_forward_hook():
    from minitorch_gpu.nn.module import register_module_forward_hook, register_module_forward_pre_hook
    names = []
    h1 = register_module_forward_pre_hook(lambda mod, args: names.append("pre:" + type(mod).__name__))
    h2 = register_module_forward_hook(lambda mod, args, out: names.append(type(mod).__name__))
    try:
        BufNet()(mt.ones(1, 4))
    finally:
        h1.remove()
        h2.remove()
    assert names == ["pre:BufNet", "pre:Linear", "Linear", "pre:Linear", "Linear", "BufNet"]
    BufNet()(mt.ones(1, 4))
    assert len(names) == 6


def test_missing_forward():
    class NoForward(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match='Module \\[NoForward\\] is missing the required "forward" function'):
        NoForward()(mt.ones(1))


# ---------------------------------------------------------------------- backward hooks

class TwoIn(object):
    """Builds the same two-input module in either framework."""

    @staticmethod
    def build(lib, w):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.tensor(w))

            def forward(self, x, y, k=3.0):
                return (x @ self.w) * k, (y * y).sum(-1)
        return M()


def _grads_to_list(gs):
    return [None if g is None else np.asarray(g.detach().cpu().numpy() if hasattr(g, "cpu") else g).tolist()
            for g in gs]


def _run_backward_hooks(lib, device=None):
    w = [[1.0, 2.0], [3.0, -1.0]]
    m = TwoIn.build(lib, w)
    log = []

    def pre(mod, grad_output):
        log.append(("pre", _grads_to_list(grad_output)))
        return (grad_output[0] * 2, grad_output[1])

    def hook(mod, grad_input, grad_output):
        log.append(("hook", _grads_to_list(grad_input), _grads_to_list(grad_output)))
        return (grad_input[0] + 1,) + tuple(grad_input[1:])

    h1 = m.register_full_backward_pre_hook(pre)
    h2 = m.register_full_backward_hook(hook)
    kw = {} if device is None else {"device": device}
    x = lib.tensor([[1.0, 0.5], [2.0, -1.0]], requires_grad=True, **kw)
    y = lib.tensor([[0.5, 1.5]], requires_grad=True, **kw)
    if device is not None:
        m.to(device)
    a, b = m(x, y, 2.0)
    (a.sum() * 3 + b.sum()).backward()
    log.append(("grads", _grads_to_list([x.grad, y.grad, m.w.grad])))
    # only the first output used: the other's grad_output is None
    x.grad = None
    a, b = m(x, y)
    a.sum().backward()
    log.append(("grads", _grads_to_list([x.grad, m.w.grad])))
    h1.remove()
    h2.remove()
    x.grad = None
    m(x, y)[0].sum().backward()
    log.append(("after remove", _grads_to_list([x.grad])))
    return log


def test_full_backward_hooks_match_torch(device, torch):
    expected = _run_backward_hooks(torch)
    got = _run_backward_hooks(mt, device)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g[0] == e[0]
        for ga, ea in zip(g[1:], e[1:]):
            assert len(ga) == len(ea)
            for a, b in zip(ga, ea):
                if b is None:
                    assert a is None
                else:
                    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_full_backward_hook_without_input_grads(torch):
    def run(lib):
        m = TwoIn.build(lib, [[1.0, 2.0], [3.0, 4.0]])
        log = []
        m.register_full_backward_hook(lambda mod, gi, go: log.append((_grads_to_list(gi), _grads_to_list(go))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = m(lib.ones(1, 2), lib.ones(1, 2))
            out[0].sum().backward()
        return log, _grads_to_list([m.w.grad])
    assert run(mt) == run(torch)


def test_full_backward_hook_on_nested_model_matches_torch(torch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4)).astype(np.float32)

    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Linear(5, 2))
        if lib is mt:
            for (_, p), tp in zip(m.named_parameters(), run.torch_params):
                with mt.no_grad():
                    p.copy_(mt.tensor(tp))
        else:
            run.torch_params = [p.detach().numpy().copy() for p in m.parameters()]
        seen = []
        for name, sub in m.named_children():
            sub.register_full_backward_hook(
                lambda mod, gi, go, name=name: seen.append((name, _grads_to_list(gi), _grads_to_list(go))))
        xi = lib.tensor(x, requires_grad=True)
        m(xi).pow(2).sum().backward()
        return seen, _grads_to_list([xi.grad])

    t_seen, t_grad = run(torch)
    m_seen, m_grad = run(mt)
    assert [s[0] for s in m_seen] == [s[0] for s in t_seen] == ["1", "0"]
    for (_, gi, go), (_, tgi, tgo) in zip(m_seen, t_seen):
        np.testing.assert_allclose(gi[0], tgi[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(go[0], tgo[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m_grad[0], t_grad[0], rtol=1e-5, atol=1e-6)


def test_backward_hook_bad_return_and_mixing():
    m = TwoIn.build(mt, [[1.0, 0.0], [0.0, 1.0]])
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0],))
    x = mt.ones(1, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 1, but "
                                           "expected 2"):
        m(x, x)[0].sum().backward()
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m.register_backward_hook(lambda *a: None)
    m2 = TwoIn.build(mt, [[1.0, 0.0], [0.0, 1.0]])
    m2.register_full_backward_pre_hook(lambda mod, go: (go[0],))
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, got 1, "
                                           "but expected 2"):
        m2(x, x)[0].sum().backward()


def test_old_style_backward_hook():
    lin = Linear(2, 2)
    seen = []
    lin.register_backward_hook(lambda mod, gi, go: seen.append((mod, len(go))))
    lin(mt.ones(1, 2, requires_grad=True)).sum().backward()
    assert seen == [(lin, 1)]
    with pytest.raises(RuntimeError, match="Cannot use both"):
        lin.register_full_backward_hook(lambda *a: None)


# ---------------------------------------------------------------------- repr

def test_repr_matches_torch(torch):
    def build(lib, linear):
        class Block(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = linear(4, 8)
                self.blocks = lib.nn.ModuleList([linear(8, 8) for _ in range(3)] + [linear(8, 4, bias=False)])
                self.table = lib.nn.ModuleDict({"a": linear(2, 2), "b": lib.nn.Identity()})
                self.seq = lib.nn.Sequential(lib.nn.Flatten(), linear(2, 3))
                self.empty = lib.nn.Module()
                self.none = None
                self.register_module("missing", None)

        return Block()

    m = build(mt, Linear)
    t = build(torch, torch.nn.Linear)
    assert repr(m).replace("Linear", "L") == repr(t).replace("Linear", "L")


def test_repr_with_multiline_extra_repr():
    class Multi(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Linear(1, 1)

        def extra_repr(self):
            return "first\nsecond"

    assert repr(Multi()) == ("Multi(\n  first\n  second\n  (inner): Linear(in_features=1, out_features=1, "
                             "bias=True)\n)")
    assert repr(nn.Module()) == "Module()"
    assert repr(Linear(2, 3)) == "Linear(in_features=2, out_features=3, bias=True)"
