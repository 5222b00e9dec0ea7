"""mt.compile: same results as eager on every device; mode="reduce-overhead" replays CUDA graphs on CUDA."""
import warnings

import pytest

import minitorch_gpu as mt
import minitorch_gpu.nn as nn
from helpers import assert_close


def _pair(device):
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
    ref = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
    ref.load_state_dict(model.state_dict())
    return model, ref


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_a_compiled_module_trains_like_the_eager_one(device, mode):
    model, ref = _pair(device)
    compiled = mt.compile(model, mode=mode)
    assert isinstance(compiled, nn.Module) and compiled._orig_mod is model
    assert list(compiled.state_dict()) == ["_orig_mod." + k for k in model.state_dict()]
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]
    outs = []
    for step in range(4):
        x = mt.randn(3, 4, device=device)
        y, y_ref = compiled(x), ref(x)
        assert_close(y, y_ref, rtol=1e-5, atol=1e-6)
        y.square().sum().backward()
        y_ref.square().sum().backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
        outs.append(y)
    # after the warm-up call the outputs are the graph's own buffer, overwritten by each call
    graphed = mode == "reduce-overhead" and device == "cuda"
    assert len({y.data_ptr() for y in outs}) == (2 if graphed else 4)
    compiled.eval()
    assert not model.training
    with mt.no_grad():
        for _ in range(3):
            x = mt.randn(5, 4, device=device)
            assert_close(compiled(x), ref(x), rtol=1e-5, atol=1e-6)


def test_a_compiled_function_and_the_decorator(device):
    @mt.compile(mode="reduce-overhead")
    def f(a, k, *, shift):
        return (a * k).sin() + shift, a.sum()

    for k in (2.0, 2.0, 2.0, 3.0, 3.0, 3.0):
        a = mt.randn(5, device=device, requires_grad=True)
        s, t = f(a, k, shift=1.0)
        assert_close(s, (a * k).sin() + 1.0)
        assert_close(t, a.sum())
        s.sum().backward()
        assert_close(a.grad, (a * k).cos() * k)
    assert f.__name__ == "f"


def test_a_call_that_cannot_be_captured_runs_eagerly(device):
    if device == "cpu":
        pytest.skip("CUDA graphs")
    drop = mt.compile(nn.Dropout(0.5), mode="reduce-overhead")
    x = mt.ones(64, device=device)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        outs = [drop(x) for _ in range(4)]
    assert sum("runs eagerly" in str(m.message) for m in w) == 1
    assert all(set(o.tolist()) <= {0.0, 2.0} for o in outs)
    assert outs[2].tolist() != outs[3].tolist()  # a fresh mask each call


def test_compile_arguments():
    f = lambda x: x  # noqa: E731
    assert mt.compile(f, disable=True) is f
    assert mt.compile(f) is f
    with pytest.raises(RuntimeError, match="Either mode or options"):
        mt.compile(f, mode="default", options={})
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        mt.compile(f, mode="fast")
    with pytest.raises(RuntimeError, match="expected a callable"):
        mt.compile(3)
