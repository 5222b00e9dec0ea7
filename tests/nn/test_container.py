"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict. Most tests run one
scenario on PyTorch and on minitorch_gpu and compare what is observable: keys, reprs, values, errors."""
from collections import OrderedDict

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu import nn


def tag_cls(lib):
    """A small module with one parameter and a repr showing its tag, built the same way in either library."""
    class Tag(lib.nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k
            self.w = lib.nn.Parameter(lib.full((1,), float(k)))

        def forward(self, x):
            return x * self.w + 1

        def extra_repr(self):
            return f"k={self.k}"
    return Tag


def both(torch, scenario):
    """Run ``scenario(lib)`` on both libraries; returns (torch result, minitorch_gpu result)."""
    return scenario(torch), scenario(mt)


def outcome(fn):
    """fn()'s value, or (exception type name, message with the library name normalised)."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return (type(e).__name__, norm(str(e)))


def norm(text):
    return text.replace("minitorch_gpu", "LIB").replace("torch", "LIB")


# ---------------------------------------------------------------------- Sequential

def test_sequential_construction_and_forward(device):
    Tag = tag_cls(mt)
    seq = nn.Sequential(Tag(2), Tag(3)).to(device)
    x = mt.tensor([1.0, 2.0], device=device)
    assert_close(seq(x), ((np.array([1.0, 2.0]) * 2 + 1) * 3 + 1))
    named = nn.Sequential(OrderedDict([("a", Tag(1)), ("b", Tag(5))]))
    assert list(named._modules) == ["a", "b"] and named.b.k == 5
    assert nn.Sequential()(x) is x
    assert [n for n, _ in seq.named_parameters()] == ["0.w", "1.w"]
    out = seq(mt.ones(2, device=device, requires_grad=True))
    out.sum().backward()
    assert all(p.grad is not None for p in seq.parameters())


def test_sequential_indexing_matches_torch(torch):
    def scenario(lib):
        Tag = tag_cls(lib)
        s = lib.nn.Sequential(OrderedDict([("a", Tag(0)), ("b", Tag(1)), ("c", Tag(2)), ("d", Tag(3))]))
        res = [s[0].k, s[-1].k, s[1].k, len(s), [m.k for m in s]]
        res.append(outcome(lambda: s[4]))
        res.append(outcome(lambda: s[-5]))
        sl = s[1:3]
        res += [type(sl).__name__, list(sl._modules), [m.k for m in s[::-2]]]
        s[1] = Tag(10)
        res.append(list(s._modules.items())[1][0])
        res.append(s.b.k)
        del s[0]
        res.append(list(s._modules))
        del s[0:2]
        res.append(list(s._modules))
        res.append([m.k for m in s])
        res.append(norm(repr(s)))
        res.append(sorted(k for k in dir(s) if k.isdigit()))
        return res
    t, m = both(torch, scenario)
    assert m == t


def test_sequential_mutation_matches_torch(torch):
    def scenario(lib):
        Tag = tag_cls(lib)
        s = lib.nn.Sequential(Tag(0), Tag(1))
        res = []
        assert s.append(Tag(2)) is s
        s.insert(0, Tag(-1))
        s.insert(-1, Tag(9))
        res.append([m.k for m in s])
        res.append(outcome(lambda: s.insert(10, Tag(0))))
        res.append(outcome(lambda: s.insert(0, 3))[0])
        s.extend([Tag(7), Tag(8)])
        res.append([m.k for m in s])
        res.append(s.pop(1).k)
        res.append([m.k for m in s] + list(s._modules))
        added = s + lib.nn.Sequential(Tag(100))
        res.append([m.k for m in added])
        res.append(outcome(lambda: s + 3))
        s += lib.nn.Sequential(Tag(50))
        res.append([m.k for m in s])
        res.append(outcome(lambda: s.__iadd__(3)))
        small = lib.nn.Sequential(Tag(1), Tag(2))
        res.append([m.k for m in small * 2] + [m.k for m in 3 * small])
        res.append(list((small * 2)._modules))
        res.append((small * 2)[0] is (small * 2)[2])
        res.append(outcome(lambda: small * 0))
        res.append(outcome(lambda: small * 1.5))
        small *= 3
        res.append([m.k for m in small])
        res.append(len(list(small.parameters())))
        res.append(norm(repr(small)))
        return res
    t, m = both(torch, scenario)
    assert m == t


# ---------------------------------------------------------------------- ModuleList

def test_modulelist_matches_torch(torch):
    def scenario(lib):
        Tag = tag_cls(lib)
        ml = lib.nn.ModuleList([Tag(i) for i in range(4)])
        res = [len(ml), [m.k for m in ml], ml[-1].k, outcome(lambda: ml[4]), outcome(lambda: ml[-5])]
        res.append([m.k for m in ml[1:3]])
        res.append(type(ml[1:3]).__name__)
        ml[0] = Tag(40)
        res.append(ml[0].k)
        del ml[1]
        res.append(list(ml._modules) + [m.k for m in ml])
        del ml[::2]
        res.append(list(ml._modules) + [m.k for m in ml])
        ml.append(Tag(5))
        ml.extend([Tag(6), Tag(7)])
        ml.insert(1, Tag(8))
        ml += [Tag(9)]
        res.append([m.k for m in ml])
        res.append(ml.pop(0).k)
        res.append([m.k for m in ml + lib.nn.ModuleList([Tag(1)])])
        res.append(outcome(lambda: ml.extend(3)))
        res.append(outcome(lambda: ml(1)))
        res.append([n for n, _ in ml.named_parameters()])
        res.append(norm(repr(ml)))
        res.append(sorted(k for k in dir(ml) if k.isdigit()))
        return res
    t, m = both(torch, scenario)
    assert m == t


def test_modulelist_repr_collapses_repeats(torch):
    def scenario(lib):
        Tag = tag_cls(lib)
        out = [repr(lib.nn.ModuleList())]
        out.append(repr(lib.nn.ModuleList([Tag(1)])))
        out.append(repr(lib.nn.ModuleList([Tag(1), Tag(1), Tag(2), Tag(1), Tag(1), Tag(1)])))
        inner = lib.nn.Sequential(Tag(3), Tag(3))
        out.append(repr(lib.nn.ModuleList([inner, inner, lib.nn.ModuleList([Tag(1), Tag(1)])])))
        nested = lib.nn.Module()
        nested.layers = lib.nn.ModuleList([lib.nn.Sequential(Tag(1), Tag(2)) for _ in range(12)])
        out.append(repr(nested))
        return [norm(o) for o in out]
    t, m = both(torch, scenario)
    assert m == t
    assert "(0-11): 12 x Sequential(" in m[-1]


def test_modulelist_registers_parameters(device):
    Tag = tag_cls(mt)
    owner = nn.Module()
    owner.layers = nn.ModuleList([Tag(1), Tag(2)])
    owner.to(device)
    assert list(owner.state_dict()) == ["layers.0.w", "layers.1.w"]
    assert owner.layers[1].w.device.type == mt.device(device).type


# ---------------------------------------------------------------------- ModuleDict

def test_moduledict_matches_torch(torch):
    def scenario(lib):
        Tag = tag_cls(lib)
        d = lib.nn.ModuleDict({"b": Tag(1), "a": Tag(2)})
        res = [list(d), list(d.keys()), [m.k for m in d.values()], [(k, m.k) for k, m in d.items()], len(d)]
        res.append("a" in d)
        d["c"] = Tag(3)
        d.update([("d", Tag(4)), ("a", Tag(20))])
        d.update(OrderedDict([("z", Tag(26))]))
        res.append([(k, m.k) for k, m in d.items()])
        del d["b"]
        res.append(d.pop("c").k)
        res.append(list(d))
        res.append(outcome(lambda: d["nope"]))
        res.append(outcome(lambda: d.update(3)))
        res.append(outcome(lambda: d.update([("x", Tag(1), 3)])))
        res.append(outcome(lambda: d.update([3])))
        res.append(outcome(lambda: d.__setitem__("x.y", Tag(1))))
        res.append(outcome(lambda: d(1)))
        res.append([n for n, _ in d.named_parameters()])
        res.append(norm(repr(d)))
        d2 = lib.nn.ModuleDict(d)
        res.append(list(d2))
        d.clear()
        res.append((len(d), norm(repr(d))))
        return res
    t, m = both(torch, scenario)
    assert m == t


# ---------------------------------------------------------------------- ParameterList

def test_parameterlist_matches_torch(torch):
    def scenario(lib):
        pl = lib.nn.ParameterList([lib.ones(2, 3), lib.nn.Parameter(lib.zeros(4), requires_grad=False)])
        res = [len(pl), [type(p).__name__ for p in pl], [p.requires_grad for p in pl]]
        pl.append(lib.ones(1, dtype=lib.float64))
        pl.append("text")
        pl.extend([lib.zeros(2)])
        res.append([type(p).__name__ for p in pl])
        res.append(outcome(lambda: pl.extend(lib.ones(2))))
        res.append(outcome(lambda: pl.extend(3)))
        res.append(outcome(lambda: pl[9]))
        res.append(pl[-1].shape == (2,))
        sub = pl[1:3]
        res.append((type(sub).__name__, len(sub), sub[0] is pl[1]))
        pl[0] = lib.full((1,), 7.0)
        res.append((type(pl[0]).__name__, float(pl[0].detach().sum())))
        res.append([n for n, _ in pl.named_parameters()])
        res.append(list(pl.state_dict()))
        res.append(norm(repr(pl)))
        res.append(outcome(lambda: pl(1)))
        res.append(sorted(k for k in dir(pl) if k.isdigit()))
        return res
    t, m = both(torch, scenario)
    assert m == t


def test_parameterlist_on_device(device):
    pl = nn.ParameterList([mt.ones(2, device=device)])
    assert pl[0].device.type == mt.device(device).type
    suffix = f" ({pl[0].device})" if pl[0].device.type == "cuda" else ""
    assert repr(pl) == f"ParameterList(  (0): Parameter containing: [minitorch_gpu.float32 of size 2{suffix}])"
    owner = nn.Module()
    owner.ps = pl
    owner.to(mt.float64)
    assert pl[0].dtype is mt.float64 and isinstance(pl[0], nn.Parameter)


# ---------------------------------------------------------------------- ParameterDict

def test_parameterdict_matches_torch(torch):
    def scenario(lib):
        pd = lib.nn.ParameterDict({"b": lib.ones(2), "a": lib.zeros(3, 1)})  # a plain dict is sorted
        res = [list(pd), [type(v).__name__ for v in pd.values()], len(pd)]
        ordered = lib.nn.ParameterDict(OrderedDict([("y", lib.ones(1)), ("x", lib.ones(1))]))
        res.append(list(ordered))
        res.append(list(lib.nn.ParameterDict([("q", lib.ones(1)), ("p", lib.ones(1))])))
        pd["c"] = lib.nn.Parameter(lib.ones(1), requires_grad=False)
        pd["obj"] = 3
        res.append([(k, type(v).__name__) for k, v in pd.items()])
        res.append(("a" in pd, "zz" in pd, pd.get("zz", 5), type(pd.get("a")).__name__))
        res.append(type(pd.setdefault("d", lib.ones(2))).__name__)
        res.append(list(reversed(pd)))
        res.append(pd.pop("obj"))
        k, v = pd.popitem()
        res.append((k, type(v).__name__))
        res.append(outcome(lambda: pd[3]))
        res.append(outcome(lambda: pd.update(3)))
        res.append(outcome(lambda: pd.update([("x",)])))
        res.append(outcome(lambda: pd(1)))
        res.append([n for n, _ in pd.named_parameters()])
        res.append(norm(repr(pd)))
        cp = pd.copy()
        res.append((list(cp), cp["a"] is pd["a"]))
        merged = pd | {"e": lib.ones(1)}
        res.append((list(merged), list(pd)))
        pd |= {"f": lib.ones(1)}
        res.append(list(pd))
        res.append(list(pd.fromkeys(["m", "n"], lib.ones(1))))
        del pd["a"]
        res.append(list(pd))
        pd.clear()
        res.append((len(pd), list(pd.named_parameters())))
        return res
    t, m = both(torch, scenario)
    assert m == t


def test_parameterdict_gradients(device):
    pd = nn.ParameterDict({"w": mt.full((2,), 3.0, device=device)})
    (pd["w"] * 2).sum().backward()
    assert_close(pd["w"].grad, [2.0, 2.0])
    assert to_np(pd.w).tolist() == [3.0, 3.0]


def test_rejected_entries_leave_containers_unchanged():
    pl = nn.ParameterList([mt.ones(1)])
    with pytest.raises(RuntimeError, match="floating point"):
        pl.append(mt.tensor([1, 2]))  # an integer tensor cannot become a Parameter that requires grad
    assert len(pl) == 1 and list(pl.state_dict()) == ["0"]
    pd = nn.ParameterDict({"a": mt.ones(1)})
    with pytest.raises(RuntimeError, match="floating point"):
        pd["b"] = mt.tensor([1, 2])
    with pytest.raises(TypeError, match="not a string"):
        pd[3] = mt.ones(1)
    assert list(pd) == ["a"] and len(pd) == 1
    seq = nn.Sequential(nn.Identity())
    with pytest.raises(AssertionError):
        seq.insert(0, "not a module")
    assert len(seq) == 1
