"""The fused recurrent cell ops of ops/rnn.py (``lstm_cell_fused``, ``gru_cell_fused``) and the backend
primitives under them: values and gradients against PyTorch's own cell formulas with autograd, gradcheck and
gradgradcheck (the Tensor-op backward under ``create_graph``), gradients when only one LSTM output is used, the node
and its two outputs, only the needed gradients, the version check on saved inputs, and saturated gates. Then the
whole-sequence LSTM layer op (``lstm_layer_fused``) against the same cells run step by step."""
import numpy as np
import pytest
from helpers import assert_close, backward_like_torch, to_np

import minitorch_gpu as mt
from minitorch_gpu.backends import get_backend
from minitorch_gpu.ops.rnn import gru_cell_fused, lstm_cell_fused, lstm_layer_fused

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


# ---------------------------------------------------------------------- the whole-sequence LSTM layer

T = 4


def _layer_inputs(device, bias=True, dtype="float64", t=T, b=B, h=H):
    arrays = [RNG.standard_normal((t * b, 4 * h)), RNG.standard_normal((4 * h, h)) * 0.5,
              RNG.standard_normal(4 * h) * 0.5, RNG.standard_normal((b, h)), RNG.standard_normal((b, h))]
    ts = [mt.tensor(a.astype(dtype), device=device, requires_grad=True) for a in arrays]
    if not bias:
        ts[2] = None
    return ts


def _layer_by_steps(gi, w_hh, b_hh, h0, c0, reverse=False):
    """The reference: the cells step by step, with the hidden projection as a product of Tensors."""
    gis = gi.split(B)
    outs = [None] * T
    h, c = h0, c0
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        gh = h.matmul(w_hh.t())
        if b_hh is not None:
            gh = gh + b_hh
        h, c = lstm_cell_fused(gis[t], gh, c)
        outs[t] = h
    return mt.cat(outs), h, c


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("use", ["all", "out", "h", "c"])
def test_layer_op_matches_the_cells_step_by_step(device, reverse, bias, use):
    xs = _layer_inputs(device, bias)
    ref_xs = [None if x is None else x.detach().clone().requires_grad_() for x in xs]
    got = lstm_layer_fused(*xs, reverse=reverse)
    ref = _layer_by_steps(*ref_xs, reverse=reverse)
    assert got[0].grad_fn.name() == "MkldnnRnnLayerBackward0" and got[1].grad_fn is got[0].grad_fn
    picks = {"all": (0, 1, 2), "out": (0,), "h": (1,), "c": (2,)}[use]
    weights = [mt.tensor(RNG.standard_normal(tuple(got[k].shape)), device=device) for k in picks]
    for a, b in zip(got, ref):
        assert_close(a, to_np(b), rtol=1e-12, atol=1e-12)
    sum(((got[k] * w).sum() for k, w in zip(picks, weights)), mt.tensor(0.0, device=device)).backward()
    sum(((ref[k] * w).sum() for k, w in zip(picks, weights)), mt.tensor(0.0, device=device)).backward()
    for a, b in zip(xs, ref_xs):
        if a is not None:
            assert_close(a.grad, to_np(b.grad), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_layer_op_gradcheck_and_gradgradcheck(device, reverse):
    # small: gradgradcheck differentiates every output element twice
    xs = _layer_inputs(device, t=3, b=2, h=2)
    fn = lambda *a: lstm_layer_fused(*a, reverse=reverse)  # noqa: E731
    assert mt.autograd.gradcheck(fn, xs)
    assert mt.autograd.gradgradcheck(fn, xs)


def test_layer_op_without_grad_keeps_nothing_and_checks_its_output(device):
    xs = _layer_inputs(device)
    with mt.no_grad():
        out, h, c = lstm_layer_fused(*xs)
    assert out.grad_fn is None and not h.requires_grad
    out, h, c = lstm_layer_fused(*xs)
    out.mul_(2.0)  # the node reads its first output back: modifying it must be reported
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()
    out, h, c = lstm_layer_fused(*xs)
    node = out.grad_fn
    h.sum().backward(retain_graph=True)
    g1 = xs[1].grad.clone()
    h.sum().backward()  # retained: the per-step arrays are still there
    assert_close(xs[1].grad, 2 * to_np(g1), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node(None, mt.ones_like(h), None)  # released after a backward without retain_graph


def test_lstm_layers_run_the_sequence_op(device):
    lstm = mt.nn.LSTM(3, H, num_layers=2, bidirectional=True).to(device).double()
    x = mt.tensor(RNG.standard_normal((T, B, 3)), device=device, requires_grad=True)
    out, (h, c) = lstm(x)
    names = set()
    stack = [out.grad_fn]
    while stack:
        n = stack.pop()
        if n is not None and n.name() not in names:
            names.add(n.name())
            stack.extend(e[0] for e in n.next_functions)
    assert "MkldnnRnnLayerBackward0" in names and "ThnnFusedLstmCellBackward0" not in names
    # projections keep the per-step cells
    proj = mt.nn.LSTM(3, H, proj_size=2).to(device).double()
    assert proj(x)[0].grad_fn is not None
