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
    f = mt.compile(lambda x: x[x > 0.5] * 2, mode="reduce-overhead")  # a shape read from the device
    x = mt.arange(8.0, device=device) / 8
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        outs = [f(x) for _ in range(4)]
    assert sum("runs eagerly" in str(m.message) for m in w) == 1
    assert all(o.tolist() == [1.25, 1.5, 1.75] for o in outs)


def test_compiled_dropout_draws_a_fresh_mask_each_call_like_eager(device):
    """Dropout is captured (its kernel reads the generator's seed and offset from device memory): each replay draws
    the mask an eager call would draw from the generator's position before it, and its backward applies the same
    mask."""
    if device == "cpu":
        pytest.skip("CUDA graphs")
    drop = mt.compile(nn.Dropout(0.5), mode="reduce-overhead")
    x = mt.ones(64, device=device, requires_grad=True)
    gen = mt.cuda.default_generators[0]
    mt.manual_seed(3)
    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # captured: no "runs eagerly" warning
        for _ in range(5):
            at = gen.get_offset()
            y = drop(x)
            y.sum().backward()
            calls.append((at, y.tolist(), x.grad.tolist()))
            x.grad = None
    for at, y, g in calls[2:]:  # the replays
        assert y == g  # the gradient of sum(dropout(ones)) is the scaled mask itself
        gen.set_offset(at)
        assert y == nn.functional.dropout(x, 0.5, training=True).tolist()
    assert calls[3][1] != calls[4][1]  # a fresh mask each call


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
