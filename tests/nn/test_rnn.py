"""Recurrent layers against PyTorch with copied weights: ``RNN`` (tanh, relu), ``LSTM`` (with ``proj_size``) and
``GRU`` over batch_first, bidirectional and two-layer stacks, given or zero initial states, unbatched inputs and
packed sequences with unsorted lengths; outputs, final states and the gradients of the input, the initial states
and every weight, in float32 and float64. Dropout between layers (training only), the single-step cells, state
dicts both ways, initialisation, reprs, errors, and a character-level LSTM language model whose training losses
follow PyTorch's step for step."""
import math
import warnings

import numpy as np
import pytest
from helpers import assert_close, backward_like_torch, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn as nn
import minitorch_gpu.nn.functional as F
from minitorch_gpu.nn.utils import rnn as rnn_utils

# PyTorch's own note that its oneDNN path skips projections
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")

RNG = np.random.default_rng(5)
T, B, IN, H = 5, 3, 4, 6
MODES = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]
CONFIGS = [{}, {"batch_first": True}, {"num_layers": 2, "bidirectional": True}, {"bias": False}]


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)


def _twins(torch, device, cls, dtype, **kw):
    """Our layer (initialised by us) and PyTorch's with the same weights."""
    ours = getattr(nn, cls)(IN, H, **kw).to(getattr(mt, dtype))
    theirs = getattr(torch.nn, cls)(IN, H, **kw).to(getattr(torch, dtype))
    theirs.load_state_dict({k: torch.tensor(to_np(v)) for k, v in ours.state_dict().items()})
    return ours.to(device), theirs


def _leaf(a, device, torch):
    return mt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


def _flat(result):
    """(output, h_n) or (output, (h_n, c_n)) as a flat list of tensors."""
    out, hidden = result
    return [out, *(hidden if isinstance(hidden, tuple) else (hidden,))]


def _check_backward(ours_outs, their_outs, ours_leaves, their_leaves, ours, theirs, device, torch, tol):
    """Values of every output, then the gradients of the leaves and of every parameter for one random
    weighting of all the outputs."""
    backward_like_torch(ours_outs, their_outs, device, torch, RNG, tol)
    for a, b in zip(ours_leaves, their_leaves):
        assert_close(a.grad, b.grad.numpy(), **tol)
    tp = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(tp)
    for n, p in ours.named_parameters():
        assert_close(p.grad, tp[n].grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=["plain", "batch_first", "2layer_bidir", "nobias"])
@pytest.mark.parametrize("mode", MODES, ids=["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("given_state", [False, True], ids=["zero_state", "given_state"])
def test_layer_matches_torch(device, torch, mode, config, dtype, given_state):
    cls, kw = mode
    ours, theirs = _twins(torch, device, cls, dtype, **kw, **config)
    shape = (B, T, IN) if config.get("batch_first") else (T, B, IN)
    xm, xt = _leaf(RNG.standard_normal(shape).astype(dtype), device, torch)
    leaves_m, leaves_t = [xm], [xt]
    if given_state:
        states = ours._zero_state(xm, None)
        pairs = [_leaf(RNG.standard_normal(tuple(s.shape)).astype(dtype), device, torch)
                 for s in (states if isinstance(states, tuple) else (states,))]
        leaves_m += [p[0] for p in pairs]
        leaves_t += [p[1] for p in pairs]
        hm = tuple(leaves_m[1:]) if cls == "LSTM" else leaves_m[1]
        ht = tuple(leaves_t[1:]) if cls == "LSTM" else leaves_t[1]
        rm, rt = ours(xm, hm), theirs(xt, ht)
    else:
        rm, rt = ours(xm), theirs(xt)
    _check_backward(_flat(rm), _flat(rt), leaves_m, leaves_t, ours, theirs, device, torch, _tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{"proj_size": 2}, {"proj_size": 3, "num_layers": 2, "bidirectional": True,
                                                   "batch_first": True}], ids=["proj", "proj_2layer_bidir"])
def test_lstm_projection_matches_torch(device, torch, dtype, kw):
    ours, theirs = _twins(torch, device, "LSTM", dtype, **kw)
    assert ours.weight_hr_l0.shape == (kw["proj_size"], H)
    assert ours.weight_hh_l0.shape == (4 * H, kw["proj_size"])
    xm, xt = _leaf(RNG.standard_normal((B, T, IN) if kw.get("batch_first") else (T, B, IN)).astype(dtype), device,
                   torch)
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    hm, ht = _leaf(RNG.standard_normal((L * D, B, kw["proj_size"])).astype(dtype), device, torch)
    cm, ct = _leaf(RNG.standard_normal((L * D, B, H)).astype(dtype), device, torch)
    rm, rt = ours(xm, (hm, cm)), theirs(xt, (ht, ct))
    assert tuple(rm[0].shape) == tuple(rt[0].shape)
    _check_backward(_flat(rm), _flat(rt), [xm, hm, cm], [xt, ht, ct], ours, theirs, device, torch, _tol(dtype))


@pytest.mark.parametrize("dtype,hidden", [("float32", 256), ("float64", 128)])
def test_lstm_with_4kib_weight_rows_matches_torch(device, torch, dtype, hidden):
    """4H columns of W_hh^T fill 4 KiB rows: the CPU lays the weight out with padded rows for the step products."""
    ours = nn.LSTM(IN, hidden).to(getattr(mt, dtype))
    theirs = torch.nn.LSTM(IN, hidden).to(getattr(torch, dtype))
    theirs.load_state_dict({k: torch.tensor(to_np(v)) for k, v in ours.state_dict().items()})
    ours = ours.to(device)
    xm, xt = _leaf(RNG.standard_normal((T, 2, IN)).astype(dtype), device, torch)
    _check_backward(_flat(ours(xm)), _flat(theirs(xt)), [xm], [xt], ours, theirs, device, torch, _tol(dtype))


def test_matmul_operand_is_a_copy_with_the_same_values(device):
    be = mt.zeros(1, device=device)._be
    for cols in (1024, 100):
        w = RNG.standard_normal((cols, 8)).astype("float32")
        src = be.asarray(w).T
        out = be.matmul_operand(src)
        assert not np.shares_memory(to_np(mt.Tensor._make(out, be)), w)
        assert out.shape == (8, cols) and out.strides[1] == 4
        np.testing.assert_array_equal(to_np(mt.Tensor._make(out, be)), w.T)


@pytest.mark.parametrize("mode", MODES, ids=["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_unsorted_sequences_match_torch(device, torch, mode, batch_first):
    """Lengths out of order: h_n is each sequence's state at its own last step, in the caller's order."""
    cls, kw = mode
    ours, theirs = _twins(torch, device, cls, "float64", num_layers=2, bidirectional=True,
                          batch_first=batch_first, **kw)
    lengths = [3, 7, 1, 5]
    shape = (4, 7, IN) if batch_first else (7, 4, IN)
    xm, xt = _leaf(RNG.standard_normal(shape), device, torch)
    pm = rnn_utils.pack_padded_sequence(xm, lengths, batch_first=batch_first, enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=False)
    states = ours._zero_state(pm.data, [4])
    pairs = [_leaf(RNG.standard_normal(tuple(s.shape)), device, torch)
             for s in (states if isinstance(states, tuple) else (states,))]
    hm = tuple(p[0] for p in pairs) if cls == "LSTM" else pairs[0][0]
    ht = tuple(p[1] for p in pairs) if cls == "LSTM" else pairs[0][1]
    om, hidden_m = ours(pm, hm)
    ot, hidden_t = theirs(pt, ht)
    assert isinstance(om, rnn_utils.PackedSequence)
    assert om.batch_sizes.tolist() == ot.batch_sizes.tolist()
    assert to_np(om.unsorted_indices).tolist() == ot.unsorted_indices.tolist()
    padded_m, len_m = rnn_utils.pad_packed_sequence(om, batch_first=batch_first)
    padded_t, len_t = torch.nn.utils.rnn.pad_packed_sequence(ot, batch_first=batch_first)
    assert len_m.tolist() == len_t.tolist() == lengths
    outs_m = [padded_m, *(hidden_m if cls == "LSTM" else (hidden_m,))]
    outs_t = [padded_t, *(hidden_t if cls == "LSTM" else (hidden_t,))]
    _check_backward(outs_m, outs_t, [xm] + [p[0] for p in pairs], [xt] + [p[1] for p in pairs], ours, theirs,
                    device, torch, _tol("float64"))


def test_packed_sorted_batch_first_without_state(device, torch):
    ours, theirs = _twins(torch, device, "GRU", "float32")
    seqs = [RNG.standard_normal((n, IN)).astype(np.float32) for n in (6, 4, 4, 1)]
    pm = rnn_utils.pack_sequence([mt.tensor(s, device=device) for s in seqs])
    pt = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs])
    assert pm.sorted_indices is None and pm.unsorted_indices is None
    om, hm = ours(pm)
    ot, ht = theirs(pt)
    assert_close(om.data, ot.data.detach().numpy(), **_tol("float32"))
    assert_close(hm, ht.detach().numpy(), **_tol("float32"))


@pytest.mark.parametrize("mode", MODES, ids=["rnn_tanh", "rnn_relu", "lstm", "gru"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input_matches_torch(device, torch, mode, batch_first):
    cls, kw = mode
    ours, theirs = _twins(torch, device, cls, "float64", num_layers=2, batch_first=batch_first, **kw)
    xm, xt = _leaf(RNG.standard_normal((T, IN)), device, torch)
    pairs = [_leaf(RNG.standard_normal((2, H)), device, torch) for _ in range(2 if cls == "LSTM" else 1)]
    hm = tuple(p[0] for p in pairs) if cls == "LSTM" else pairs[0][0]
    ht = tuple(p[1] for p in pairs) if cls == "LSTM" else pairs[0][1]
    rm, rt = ours(xm, hm), theirs(xt, ht)
    assert tuple(rm[0].shape) == (T, H)
    _check_backward(_flat(rm), _flat(rt), [xm] + [p[0] for p in pairs], [xt] + [p[1] for p in pairs], ours,
                    theirs, device, torch, _tol("float64"))
    # without a state, too
    assert_close(_flat(ours(xm))[1], _flat(theirs(xt))[1].detach().numpy(), **_tol("float64"))


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_dropout_between_layers_only_in_training(device, torch, cls):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # two layers: no warning about dropout
        ours, theirs = _twins(torch, device, cls, "float32", num_layers=2, dropout=0.5)
    x = RNG.standard_normal((T, B, IN)).astype(np.float32)
    xm = mt.tensor(x, device=device)
    a, b = _flat(ours(xm))[0], _flat(ours(xm))[0]
    assert not np.allclose(to_np(a), to_np(b)), "training mode: each call drops other units"
    ours.eval()
    theirs.eval()
    assert_close(_flat(ours(xm))[0], _flat(theirs(torch.tensor(x)))[0].detach().numpy(), **_tol("float32"))
    assert not np.allclose(to_np(a), to_np(_flat(ours(xm))[0]))
    # dropout=0 in training is the eval result
    plain, _ = _twins(torch, device, cls, "float32", num_layers=2)
    plain.load_state_dict(ours.state_dict())
    plain.train()
    assert_close(_flat(plain(xm))[0], _flat(ours(xm))[0], rtol=1e-6, atol=1e-7)


def test_dropout_gradients_flow_through_the_kept_units(device):
    m = nn.LSTM(IN, H, num_layers=2, dropout=0.5).to(device)
    x = mt.randn(T, B, IN, device=device, requires_grad=True)
    out, _ = m(x)
    out.sum().backward()
    assert np.isfinite(to_np(x.grad)).all() and np.abs(to_np(m.weight_ih_l1.grad)).sum() > 0


# ---------------------------------------------------------------------- cells
CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {}),
         ("LSTMCell", {"bias": False}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("given_state", [False, True], ids=["zero_state", "given_state"])
@pytest.mark.parametrize("cell", CELLS, ids=["rnn_tanh", "rnn_relu", "lstm", "gru", "lstm_nobias", "gru_nobias"])
def test_cells_match_torch(device, torch, cell, dtype, batched, given_state):
    cls, kw = cell
    ours, theirs = _twins(torch, device, cls, dtype, **kw)
    lead = (B,) if batched else ()
    xm, xt = _leaf(RNG.standard_normal(lead + (IN,)).astype(dtype), device, torch)
    leaves_m, leaves_t = [xm], [xt]
    if given_state:
        pairs = [_leaf(RNG.standard_normal(lead + (H,)).astype(dtype), device, torch)
                 for _ in range(2 if cls == "LSTMCell" else 1)]
        leaves_m += [p[0] for p in pairs]
        leaves_t += [p[1] for p in pairs]
        rm = ours(xm, tuple(leaves_m[1:]) if cls == "LSTMCell" else leaves_m[1])
        rt = theirs(xt, tuple(leaves_t[1:]) if cls == "LSTMCell" else leaves_t[1])
    else:
        rm, rt = ours(xm), theirs(xt)
    outs_m = list(rm) if cls == "LSTMCell" else [rm]
    outs_t = list(rt) if cls == "LSTMCell" else [rt]
    assert tuple(outs_m[0].shape) == lead + (H,)
    _check_backward(outs_m, outs_t, leaves_m, leaves_t, ours, theirs, device, torch, _tol(dtype))


def test_cells_use_the_fused_nodes(device):
    x = mt.randn(B, IN, device=device)
    h, c = nn.LSTMCell(IN, H).to(device)(x)
    assert h.grad_fn.name() == c.grad_fn.name() == "ThnnFusedLstmCellBackward0"
    assert h.grad_fn is c.grad_fn and (h._output_nr, c._output_nr) == (0, 1)
    assert nn.GRUCell(IN, H).to(device)(x).grad_fn.name() == "ThnnFusedGruCellBackward0"


def test_cell_sequence_equals_layer(device):
    """An LSTMCell stepped by hand over a sequence gives the LSTM layer's outputs (same weights)."""
    layer = nn.LSTM(IN, H).to(device)
    cell = nn.LSTMCell(IN, H).to(device)
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = mt.randn(T, B, IN, device=device)
    out, (h_n, c_n) = layer(x)
    h = c = mt.zeros(B, H, device=device)
    for t in range(T):
        h, c = cell(x[t], (h, c))
        assert_close(h, out[t], rtol=1e-5, atol=1e-6)
    assert_close(c, c_n[0], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- parameters, state dicts, reprs
@pytest.mark.parametrize("cls, kw", [("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 3}),
                                     ("GRU", {"num_layers": 3, "bias": False}), ("RNN", {"bidirectional": True}),
                                     ("LSTMCell", {}), ("RNNCell", {"bias": False})])
def test_state_dicts_load_both_ways(torch, cls, kw):
    ours = getattr(nn, cls)(IN, H, **kw)
    theirs = getattr(torch.nn, cls)(IN, H, **kw)
    sd_t = theirs.state_dict()
    assert list(ours.state_dict()) == list(sd_t)
    assert [tuple(v.shape) for v in ours.state_dict().values()] == [tuple(v.shape) for v in sd_t.values()]
    ours.load_state_dict({k: mt.tensor(v.numpy()) for k, v in sd_t.items()})
    for k, v in ours.state_dict().items():
        np.testing.assert_array_equal(to_np(v), sd_t[k].numpy())
    ours.reset_parameters()
    theirs.load_state_dict({k: torch.tensor(to_np(v)) for k, v in ours.state_dict().items()})
    assert repr(ours) == repr(theirs)


def test_initialisation_is_uniform_in_one_over_sqrt_hidden(device):
    m = nn.LSTM(IN, 50, num_layers=2, proj_size=4, device=device, dtype=mt.float64)
    bound = 1 / math.sqrt(50)
    values = np.concatenate([to_np(p).ravel() for p in m.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.9 * bound and values.max() > 0.9 * bound
    assert all(p.device.type == mt.device(device).type and p.dtype == mt.float64 for p in m.parameters())


def test_flat_weights_and_flatten_parameters(device):
    m = nn.GRU(IN, H, num_layers=2, bidirectional=True).to(device)
    assert m.flatten_parameters() is None
    names = [n for n, _ in m.named_parameters()]
    assert m._flat_weights_names == names
    assert [id(p) for p in m._flat_weights] == [id(p) for p in m.parameters()]
    assert [[id(p) for p in group] for group in m.all_weights] == \
        [[id(getattr(m, n)) for n in names[i:i + 4]] for i in range(0, len(names), 4)]
    # replaced parameters are the ones used
    x = mt.randn(T, B, IN, device=device)
    with mt.no_grad():
        m.weight_ih_l0 = nn.Parameter(mt.zeros_like(m.weight_ih_l0))
        m.weight_hh_l0 = nn.Parameter(mt.zeros_like(m.weight_hh_l0))
    assert m._flat_weights[0] is m.weight_ih_l0
    out, _ = m(x)
    assert out.shape == (T, B, 2 * H)


def test_reprs_match_torch(torch):
    for cls, kw in [("LSTM", {"num_layers": 2, "proj_size": 3, "batch_first": True, "dropout": 0.25}),
                    ("GRU", {"bias": False, "bidirectional": True}), ("RNN", {"nonlinearity": "relu"}),
                    ("RNNCell", {"nonlinearity": "relu"}), ("GRUCell", {"bias": False}), ("LSTMCell", {})]:
        assert repr(getattr(nn, cls)(IN, H, **kw)) == repr(getattr(torch.nn, cls)(IN, H, **kw))
    assert repr(nn.RNN(IN, H, 2, "relu")) == repr(torch.nn.RNN(IN, H, 2, "relu"))
    assert nn.RNN(IN, H, 2, "relu").mode == "RNN_RELU"


# ---------------------------------------------------------------------- errors
def _same_error(torch, ours_fn, theirs_fn):
    with pytest.raises(Exception) as expected:
        theirs_fn()
    with pytest.raises(type(expected.value)) as got:
        ours_fn()
    assert str(got.value) == str(expected.value).replace("torch.", "minitorch_gpu.")


@pytest.mark.parametrize("case", [
    lambda nn_, t: nn_.LSTM(10, 20, 2)(t.randn(5, 3, 7)),
    lambda nn_, t: nn_.LSTM(10, 20, 2)(t.randn(5, 3, 10), (t.randn(1, 3, 20), t.randn(2, 3, 20))),
    lambda nn_, t: nn_.LSTM(10, 20, 2)(t.randn(5, 3, 10), (t.randn(2, 3, 20), t.randn(1, 3, 20))),
    lambda nn_, t: nn_.LSTM(10, 20, 2)(t.randn(5, 3, 10, 1)),
    lambda nn_, t: nn_.LSTM(10, 20, 2)(t.randn(5, 10), (t.randn(2, 3, 20), t.randn(2, 3, 20))),
    lambda nn_, t: nn_.LSTM(10, 20, 2)(t.randn(5, 3, 10, dtype=t.float64)),
    lambda nn_, t: nn_.LSTM(10, 20)(t.randn(0, 3, 10)),
    lambda nn_, t: nn_.GRU(10, 20, 2)(t.randn(5, 3, 10), t.randn(1, 3, 20)),
    lambda nn_, t: nn_.GRU(10, 20, 2)(t.randn(5, 3, 10), t.randn(3, 20)),
    lambda nn_, t: nn_.GRU(10, 20, 2)(t.randn(5, 10), t.randn(2, 3, 20)),
    lambda nn_, t: nn_.RNN(10, 20)(t.randn(5, 3, 10, 1)),
    lambda nn_, t: nn_.LSTMCell(10, 20)(t.randn(3, 7)),
    lambda nn_, t: nn_.LSTMCell(10, 20)(t.randn(3, 10), (t.randn(2, 20), t.randn(3, 20))),
    lambda nn_, t: nn_.LSTMCell(10, 20)(t.randn(3, 10), (t.randn(3, 21), t.randn(3, 20))),
    lambda nn_, t: nn_.LSTMCell(10, 20)(t.randn(3, 10), (t.randn(3, 20), t.randn(3, 21))),
    lambda nn_, t: nn_.LSTMCell(10, 20)(t.randn(3, 10), (t.randn(3, 20), t.randn(2, 3, 20))),
    lambda nn_, t: nn_.GRUCell(10, 20)(t.randn(3, 10), t.randn(2, 20)),
    lambda nn_, t: nn_.GRUCell(10, 20)(t.randn(3, 3, 10)),
    lambda nn_, t: nn_.RNNCell(10, 20)(t.randn(3, 7)),
    lambda nn_, t: nn_.RNNCell(10, 20)(t.randn(3, 10), t.randn(2, 3, 20)),
    lambda nn_, t: nn_.RNN(10, 20, nonlinearity="sigmoid"),
    lambda nn_, t: nn_.GRU(10, 20, proj_size=2),
    lambda nn_, t: nn_.RNN(10, 20, proj_size=2),
    lambda nn_, t: nn_.LSTM(10, 20, proj_size=20),
    lambda nn_, t: nn_.LSTM(10, 20, proj_size=-1),
    lambda nn_, t: nn_.LSTM(10, 20, dropout=2),
    lambda nn_, t: nn_.LSTM(10, 20, dropout=True),
    lambda nn_, t: nn_.LSTM(10, 0),
    lambda nn_, t: nn_.LSTM(0, 10),
    lambda nn_, t: nn_.LSTM(10, 20, 0),
    lambda nn_, t: nn_.LSTM(10.0, 20),
    lambda nn_, t: nn_.LSTM(10, 20, bias=1),
    lambda nn_, t: nn_.LSTM(10, 20, batch_first=None),
])
def test_errors_match_torch(torch, case):
    _same_error(torch, lambda: case(nn, mt), lambda: case(torch.nn, torch))


def test_dropout_with_one_layer_warns_as_torch(torch):
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1, but got "
                                         "dropout=0.5 and num_layers=1"):
        nn.GRU(IN, H, dropout=0.5)


def test_bad_input_leaves_the_state_alone(device):
    m = nn.LSTM(IN, H).to(device)
    h0, c0 = mt.randn(1, B, H, device=device), mt.randn(1, B, H, device=device)
    before = to_np(h0).copy(), to_np(c0).copy()
    with pytest.raises(RuntimeError):
        m(mt.randn(T, B, IN + 1, device=device), (h0, c0))
    np.testing.assert_array_equal(to_np(h0), before[0])
    np.testing.assert_array_equal(to_np(c0), before[1])


# ---------------------------------------------------------------------- a small language model
def _char_lm(nn_, vocab, width):
    """embedding -> 2-layer LSTM -> linear, built from ``nn_`` (ours or PyTorch's)."""
    class CharLM(nn_.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn_.Embedding(vocab, width)
            self.lstm = nn_.LSTM(width, width, num_layers=2, batch_first=True)
            self.head = nn_.Linear(width, vocab)

        def forward(self, x):
            out, _ = self.lstm(self.embed(x))
            return self.head(out)
    return CharLM()


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_char_lstm_language_model_trains_like_torch(device, torch, opt):
    text = "the quick brown fox jumps over the lazy dog; " * 4
    vocab = sorted(set(text))
    ids = np.array([vocab.index(ch) for ch in text], dtype=np.int64)
    batch, steps = 4, 12
    starts = np.arange(batch) * 9
    xs = np.stack([ids[s:s + steps] for s in starts])
    ys = np.stack([ids[s + 1:s + steps + 1] for s in starts])
    ours = _char_lm(nn, len(vocab), 16)
    theirs = _char_lm(torch.nn, len(vocab), 16)
    theirs.load_state_dict({k: torch.tensor(to_np(v)) for k, v in ours.state_dict().items()})
    ours = ours.to(device)
    kw = {"lr": 0.5} if opt == "SGD" else {"lr": 0.01}
    opt_m = getattr(mt.optim, opt)(ours.parameters(), **kw)
    opt_t = getattr(torch.optim, opt)(theirs.parameters(), **kw)
    xm, ym = mt.tensor(xs, device=device), mt.tensor(ys, device=device)
    xt, yt = torch.tensor(xs), torch.tensor(ys)
    losses_m, losses_t = [], []
    for _ in range(6):
        loss_m = F.cross_entropy(ours(xm).reshape(-1, len(vocab)), ym.reshape(-1))
        opt_m.zero_grad()
        loss_m.backward()
        opt_m.step()
        loss_t = torch.nn.functional.cross_entropy(theirs(xt).reshape(-1, len(vocab)), yt.reshape(-1))
        opt_t.zero_grad()
        loss_t.backward()
        opt_t.step()
        losses_m.append(loss_m.item())
        losses_t.append(loss_t.item())
    np.testing.assert_allclose(losses_m, losses_t, rtol=2e-4)
    assert losses_m[-1] < losses_m[0]
