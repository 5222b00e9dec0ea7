"""torch.utils.checkpoint: gradients equal to running without checkpointing (dropout included, through the
random-number state), keyword arguments and non-tensor outputs, autograd.grad, the activations a segment keeps
(counted exactly on the simulated device), a forward that changes on recomputation, checkpoint_sequential, and
PyTorch's warnings and errors."""
import warnings

import pytest

import minitorch_gpu as mt
import minitorch_gpu.nn as nn
from minitorch_gpu.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential
from helpers import assert_close


def _model(device, dtype):
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(0.5), nn.Linear(16, 16), nn.GELU(),
                         nn.Linear(16, 3)).to(device=device, dtype=dtype)


def _grads(model, x, run):
    """Output, input gradient and parameter gradients of ``run(model, x)`` from a fixed seed."""
    model.zero_grad()
    x.grad = None
    mt.manual_seed(1)
    y = run(model, x)
    (y * y).sum().backward()
    return [y.detach(), x.grad] + [p.grad for p in model.parameters()]


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
@pytest.mark.parametrize("use_reentrant", [False, True])
def test_gradients_equal_no_checkpointing(device, dtype, use_reentrant):
    model = _model(device, dtype)
    x = mt.randn(5, 6, device=device, dtype=dtype, requires_grad=True)
    plain = _grads(model, x, lambda m, v: m(v))
    ck = _grads(model, x, lambda m, v: checkpoint(m, v, use_reentrant=use_reentrant))
    for a, b in zip(plain, ck):
        assert_close(b, a, rtol=0, atol=0)
    seq = _grads(model, x, lambda m, v: checkpoint_sequential(m, 3, v, use_reentrant=use_reentrant))
    for a, b in zip(plain, seq):
        assert_close(b, a, rtol=0, atol=0)


def test_without_preserved_rng_state_the_masks_differ(device):
    model = _model(device, mt.float64)
    x = mt.randn(50, 6, device=device, dtype=mt.float64, requires_grad=True)
    plain = _grads(model, x, lambda m, v: m(v))
    ck = _grads(model, x, lambda m, v: checkpoint(m, v, use_reentrant=False, preserve_rng_state=False))
    assert_close(ck[0], plain[0], rtol=0, atol=0)  # the forward is the same draw
    assert not mt.allclose(ck[1], plain[1])  # backward used another mask


def test_keyword_arguments_non_tensor_outputs_and_autograd_grad(device):
    w = mt.randn(4, 4, device=device, dtype=mt.float64, requires_grad=True)
    x = mt.randn(3, 4, device=device, dtype=mt.float64, requires_grad=True)

    def block(v, *, scale, tag):
        h = (v @ w).sin() * scale
        return {"out": h.exp(), "tag": tag, "n": 3}

    out = checkpoint(block, x, scale=2.0, tag="a", use_reentrant=False)
    assert out["tag"] == "a" and out["n"] == 3
    gx, gw = mt.autograd.grad(out["out"].sum(), (x, w))
    ref = block(x, scale=2.0, tag="a")["out"].sum()
    rx, rw = mt.autograd.grad(ref, (x, w))
    assert_close(gx, rx, rtol=1e-12, atol=0)
    assert_close(gw, rw, rtol=1e-12, atol=0)
    # an input that needs no gradient, a parameter captured from the enclosing scope that does
    c = checkpoint(lambda v: (v @ w).tanh(), x.detach(), use_reentrant=False)
    (gw2,) = mt.autograd.grad(c.sum(), w)
    (rw2,) = mt.autograd.grad((x.detach() @ w).tanh().sum(), w)
    assert_close(gw2, rw2, rtol=1e-12, atol=0)


def test_a_checkpointed_segment_keeps_only_its_output(device):
    if device != "cuda" or not mt.cuda.is_simulated():
        pytest.skip("the simulated device counts every tensor's memory exactly")
    model = nn.Sequential(*[layer for _ in range(4) for layer in (nn.Linear(64, 64), nn.Tanh())]).to(device)
    x = mt.randn(32, 64, device=device, requires_grad=True)
    out_bytes = 32 * 64 * 4
    before = mt.cuda.memory_allocated()
    y = model(x)
    plain = mt.cuda.memory_allocated() - before
    del y
    before = mt.cuda.memory_allocated()
    y = checkpoint(model, x, use_reentrant=False)
    assert mt.cuda.memory_allocated() - before == out_bytes < plain
    y.sum().backward()
    assert x.grad is not None and model[0].weight.grad is not None


def test_retain_graph_and_second_backward(device):
    w = mt.randn(3, 3, device=device, requires_grad=True)
    y = checkpoint(lambda v: (v @ w).exp(), mt.ones(2, 3, device=device), use_reentrant=False).sum()
    y.backward(retain_graph=True)
    first = w.grad.clone()
    y.backward()
    assert_close(w.grad, 2 * first)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_a_forward_that_changes_is_refused(device):
    calls = []
    w = mt.randn(3, device=device, requires_grad=True)

    def changing(v):
        calls.append(1)
        return (v * w).exp() if len(calls) == 1 else (v * w).exp().sin()

    y = checkpoint(changing, mt.ones(3, device=device), use_reentrant=False)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        y.sum().backward()


def test_warnings_and_errors_like_torch(torch):
    x = mt.ones(2, requires_grad=True)
    tx = torch.ones(2, requires_grad=True)
    for ours, theirs in [(lambda: checkpoint(lambda v: v * 2, x),
                          lambda: torch.utils.checkpoint.checkpoint(lambda v: v * 2, tx)),
                         (lambda: checkpoint_sequential([lambda v: v * 2] * 2, 2, x),
                          lambda: torch.utils.checkpoint.checkpoint_sequential([lambda v: v * 2] * 2, 2, tx))]:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            ours()
        with warnings.catch_warnings(record=True) as expected:
            warnings.simplefilter("always")
            theirs()
        assert [str(w.message) for w in got] == [str(w.message) for w in expected]
        assert [w.category for w in got] == [w.category for w in expected]
    for kw in [dict(scale=1), dict(context_fn=lambda: None)]:
        with pytest.raises(ValueError) as ours_err:
            checkpoint(lambda v, **k: v, x, use_reentrant=True, **kw)
        with pytest.raises(ValueError) as theirs_err:
            torch.utils.checkpoint.checkpoint(lambda v, **k: v, tx, use_reentrant=True, **kw)
        assert str(ours_err.value) == str(theirs_err.value)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(lambda v: v * 2, mt.ones(2), use_reentrant=True)
    assert mt.utils.checkpoint.checkpoint is checkpoint
