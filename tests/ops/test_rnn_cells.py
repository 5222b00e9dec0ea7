"""The fused recurrent cell ops of ops/rnn.py (``lstm_cell_fused``, ``gru_cell_fused``) and the backend
primitives under them: values and gradients against PyTorch's own cell formulas with autograd, gradcheck and
gradgradcheck (the Tensor-op backward under ``create_graph``), gradients when only one LSTM output is used, the node
and its two outputs, only the needed gradients, the version check on saved inputs, and saturated gates."""
import numpy as np
import pytest
from helpers import assert_close, backward_like_torch, to_np

import minitorch_gpu as mt
from minitorch_gpu.backends import get_backend
from minitorch_gpu.ops.rnn import gru_cell_fused, lstm_cell_fused

RNG = np.random.default_rng(2)
B, H = 3, 5


def _inputs(device, torch, gates, dtype="float64"):
    arrays = [RNG.standard_normal((B, gates * H)) * 2, RNG.standard_normal((B, gates * H)),
              RNG.standard_normal((B, H))]
    arrays = [a.astype(dtype) for a in arrays]
    return ([mt.tensor(a, device=device, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _torch_lstm(gi, gh, c):
    i, f, g, o = (gi + gh).chunk(4, 1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


def _torch_gru(gi, gh, h):
    ir, iz, inn = gi.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (inn + r * hn).tanh()
    return n + z * (h - n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("use", ["both", "h", "c"])
def test_lstm_cell_matches_torch(device, torch, dtype, use):
    xm, xt = _inputs(device, torch, 4, dtype)
    hm, cm = lstm_cell_fused(*xm)
    ht, ct = _torch_lstm(*xt)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert_close(hm, ht.detach().numpy(), **tol)
    assert_close(cm, ct.detach().numpy(), **tol)
    # only the outputs in use send a gradient back (the other one's is None in the node's backward)
    used = {"both": (0, 1), "h": (0,), "c": (1,)}[use]
    backward_like_torch([(hm, cm)[i] for i in used], [(ht, ct)[i] for i in used], device, torch, RNG, tol)
    for a, b in zip(xm, xt):
        assert_close(a.grad, b.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gru_cell_matches_torch(device, torch, dtype):
    xm, xt = _inputs(device, torch, 3, dtype)
    om, ot = gru_cell_fused(*xm), _torch_gru(*xt)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    assert_close(om, ot.detach().numpy(), **tol)
    g = RNG.standard_normal((B, H)).astype(dtype)
    om.backward(mt.tensor(g, device=device))
    ot.backward(torch.tensor(g))
    for a, b in zip(xm, xt):
        assert_close(a.grad, b.grad.numpy(), **tol)


def test_gradcheck_and_gradgradcheck(device, torch):
    xm, _ = _inputs(device, torch, 4)
    assert mt.autograd.gradcheck(lambda *a: lstm_cell_fused(*a), xm)
    assert mt.autograd.gradgradcheck(lambda *a: lstm_cell_fused(*a), xm)
    assert mt.autograd.gradgradcheck(lambda *a: lstm_cell_fused(*a)[1], xm)
    xm, _ = _inputs(device, torch, 3)
    assert mt.autograd.gradcheck(gru_cell_fused, xm)
    assert mt.autograd.gradgradcheck(gru_cell_fused, xm)


def test_nodes_outputs_and_needed_gradients(device, torch):
    xm, _ = _inputs(device, torch, 4)
    h, c = lstm_cell_fused(*xm)
    node = h.grad_fn
    assert node is c.grad_fn and node.name() == "ThnnFusedLstmCellBackward0"
    assert (h._output_nr, c._output_nr) == (0, 1)
    assert [e[0] is not None for e in node.next_functions] == [True, True, True]
    gi = xm[0].detach()
    h2, _ = lstm_cell_fused(gi, xm[1], xm[2].detach())
    h2.sum().backward()
    assert gi.grad is None and xm[1].grad is not None
    with mt.no_grad():
        h3, c3 = lstm_cell_fused(*xm)
    assert h3.grad_fn is None and c3.grad_fn is None and not h3.requires_grad
    out = gru_cell_fused(*_inputs(device, torch, 3)[0])
    assert out.grad_fn.name() == "ThnnFusedGruCellBackward0"


def test_modified_saved_input_is_reported(device, torch):
    xm, _ = _inputs(device, torch, 4)
    c = xm[2] * 1.0
    h, _ = lstm_cell_fused(xm[0], xm[1], c)
    c.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_numpy_bodies_handle_saturated_gates(dt):
    be = get_backend("cpu")
    gi = np.array([[-1e4] * 3 + [1e4] * 3 + [-1e4] * 3 + [1e4] * 3, [200.0, -200.0] * 6], dtype=dt)
    gh = np.zeros_like(gi)
    c = np.ones((2, 3), dtype=dt)
    results = [*be.lstm_cell_forward(gi, gh, c), *be.lstm_cell_backward(c, c, gi, gh, c),
               *be.lstm_cell_backward(None, c, gi, gh, c), be.gru_cell_forward(gi[:, :9], gh[:, :9], c),
               *be.gru_cell_backward(c, gi[:, :9], gh[:, :9], c)]
    assert all(np.isfinite(r).all() and r.dtype == dt for r in results)
    # gates i = 0, f = 1, g = -1, o = 1 in row 0: c' = c, h' = tanh(c)
    np.testing.assert_allclose(results[0][0], np.tanh(1.0), rtol=1e-6)


def test_cuda_runs_the_kernel(device, torch):
    if mt.device(device).type != "cuda":
        pytest.skip("the kernel is the CUDA backend's")
    from minitorch_gpu.backends.cuda.counting import LaunchCounter
    xm, _ = _inputs(device, torch, 4)
    with LaunchCounter().attach(get_backend(device)) as counter:
        h, c = lstm_cell_fused(*xm)
        (h.sum() + c.sum()).backward()
    launched = {name: s.launches for name, s in counter.kernels.items() if s.file == "rnn.cu"}
    assert launched == {"lstm_cell_forward<double>": 1, "lstm_cell_backward<double>": 1}
    assert np.isfinite(to_np(xm[0].grad)).all()
