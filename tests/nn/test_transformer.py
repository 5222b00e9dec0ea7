"""Transformer layers against PyTorch with copied weights (forward, input and every parameter gradient):
encoder layer over activations, norm_first, batch_first, bias, masks and is_causal; encoder stacks with a
final norm; decoder layer, decoder and the full Transformer; reprs, causal-mask helper, clone independence
and errors."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn as nn
import minitorch_gpu.nn.functional as F

# float masks mixed with bool padding masks: both libraries warn that this is deprecated (tested in
# test_attention.py); here it only exercises the merge of the two masks
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched")

RNG = np.random.default_rng(0)
D, H, FF, S, T, N = 8, 2, 16, 5, 4, 2


def _arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _copy(ours, theirs, device):
    ours.load_state_dict({k: mt.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours.to(device)


def _convert(v, device, torch, to_torch):
    if isinstance(v, np.ndarray):
        return torch.tensor(v) if to_torch else mt.tensor(v, device=device)
    return v


def _compare(torch, device, ours, theirs, inputs, call_kw, rtol=2e-4, atol=2e-5):
    _copy(ours, theirs, device)
    xm = [mt.tensor(a, device=device, requires_grad=True) for a in inputs]
    xt = [torch.tensor(a, requires_grad=True) for a in inputs]
    out = ours(*xm, **{k: _convert(v, device, torch, False) for k, v in call_kw.items()})
    ref = theirs(*xt, **{k: _convert(v, device, torch, True) for k, v in call_kw.items()})
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    g = _arr(*ref.shape)
    out.backward(mt.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    for a, b in zip(xm, xt):
        assert_close(a.grad, b.grad.numpy(), rtol=rtol, atol=atol)
    tp = dict(theirs.named_parameters())
    assert [n for n, _ in ours.named_parameters()] == list(tp)
    for n, p in ours.named_parameters():
        assert_close(p.grad, tp[n].grad.numpy(), rtol=rtol, atol=atol)


def _causal(n):
    return np.triu(np.full((n, n), -np.inf, dtype=np.float32), 1)


def _kpm(n, s):
    m = RNG.random((n, s)) > 0.6
    m[:, 0] = False
    return m


ENC_CASES = [
    (dict(), dict()),
    (dict(activation="gelu"), dict(src_mask=_causal(S))),
    (dict(norm_first=True), dict(src_key_padding_mask=_kpm(N, S))),
    (dict(bias=False, layer_norm_eps=1e-3), dict(src_mask=_causal(S), is_causal=True)),
    (dict(norm_first=True, activation="gelu"), dict(src_mask=_causal(S), src_key_padding_mask=_kpm(N, S))),
]


@pytest.mark.parametrize("kw,call_kw", ENC_CASES)
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_matches_torch(kw, call_kw, batch_first, device, torch):
    torch.manual_seed(0)
    ctor = dict(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0, batch_first=batch_first, **kw)
    theirs = torch.nn.TransformerEncoderLayer(**ctor)
    ours = nn.TransformerEncoderLayer(**ctor)
    assert repr(ours) == repr(theirs)
    x = _arr(N, S, D) if batch_first else _arr(S, N, D)
    _compare(torch, device, ours, theirs, [x], call_kw)


def test_encoder_layer_callable_activation_and_unbatched(device, torch):
    torch.manual_seed(1)
    theirs = torch.nn.TransformerEncoderLayer(D, H, FF, 0.0, activation=torch.nn.GELU(approximate="tanh"))
    ours = nn.TransformerEncoderLayer(D, H, FF, 0.0, activation=nn.GELU(approximate="tanh"))
    assert repr(ours) == repr(theirs)
    _compare(torch, device, ours, theirs, [_arr(S, D)], dict(src_mask=_causal(S)))
    theirs = torch.nn.TransformerEncoderLayer(D, H, FF, 0.0, activation=torch.tanh)
    ours = nn.TransformerEncoderLayer(D, H, FF, 0.0, activation=mt.tanh)
    _compare(torch, device, ours, theirs, [_arr(S, N, D)], {})


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_stack_matches_torch(batch_first, device, torch):
    torch.manual_seed(2)
    layer_t = torch.nn.TransformerEncoderLayer(D, H, FF, 0.0, batch_first=batch_first)
    theirs = torch.nn.TransformerEncoder(layer_t, 2, norm=torch.nn.LayerNorm(D), enable_nested_tensor=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF, 0.0, batch_first=batch_first), 2,
                                 norm=nn.LayerNorm(D))
    assert repr(ours) == repr(theirs)
    x = _arr(N, S, D) if batch_first else _arr(S, N, D)
    _compare(torch, device, ours, theirs, [x], dict(mask=_causal(S), src_key_padding_mask=_kpm(N, S)))
    _compare(torch, device, ours, theirs, [x], dict(mask=_causal(S), is_causal=True))


def test_encoder_clones_are_independent():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, H, FF), 3)
    ws = [layer.linear1.weight for layer in enc.layers]
    assert len({id(w) for w in ws}) == 3
    with mt.no_grad():
        ws[0].fill_(0.0)
    assert float(ws[1].abs().sum()) > 0
    assert len(list(enc.parameters())) == 3 * len(list(nn.TransformerEncoderLayer(D, H, FF).parameters()))


DEC_CASES = [
    (dict(), dict()),
    (dict(norm_first=True, activation="gelu"), dict(tgt_mask=_causal(T), memory_key_padding_mask=_kpm(N, S))),
    (dict(bias=False), dict(tgt_mask=_causal(T), tgt_is_causal=True, tgt_key_padding_mask=_kpm(N, T))),
]


@pytest.mark.parametrize("kw,call_kw", DEC_CASES)
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_matches_torch(kw, call_kw, batch_first, device, torch):
    torch.manual_seed(3)
    ctor = dict(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0, batch_first=batch_first, **kw)
    theirs = torch.nn.TransformerDecoderLayer(**ctor)
    ours = nn.TransformerDecoderLayer(**ctor)
    assert repr(ours) == repr(theirs)
    tgt, mem = (_arr(N, T, D), _arr(N, S, D)) if batch_first else (_arr(T, N, D), _arr(S, N, D))
    _compare(torch, device, ours, theirs, [tgt, mem], call_kw)


def test_transformer_matches_torch(device, torch):
    torch.manual_seed(4)
    ctor = dict(d_model=D, nhead=H, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=FF, dropout=0.0,
                batch_first=True)
    theirs = torch.nn.Transformer(**ctor)
    ours = nn.Transformer(**ctor)
    assert repr(ours) == repr(theirs)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T)
    np.testing.assert_array_equal(to_np(tgt_mask), torch.nn.Transformer.generate_square_subsequent_mask(T).numpy())
    _compare(torch, device, ours, theirs, [_arr(N, S, D), _arr(N, T, D)],
             dict(tgt_mask=_causal(T), src_key_padding_mask=_kpm(N, S), memory_key_padding_mask=_kpm(N, S)))


def test_transformer_init_and_errors():
    m = nn.Transformer(D, H, 1, 1, FF)
    w = to_np(m.encoder.layers[0].linear1.weight)
    bound = np.sqrt(6.0 / (D + FF))  # xavier_uniform for every matrix
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(mt.ones(S, N, D), mt.ones(T, N + 1, D))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        m(mt.ones(S, N, D + 1), mt.ones(T, N, D + 1))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(D, H, activation="tanh")


def test_encoder_layer_float64_and_dropout(device):
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.5, dtype=mt.float64).to(device)
    x = mt.tensor(_arr(S, N, D, dtype=np.float64), device=device)
    layer.eval()
    a = layer(x)
    assert a.dtype == mt.float64
    np.testing.assert_array_equal(to_np(a), to_np(layer(x)))
    layer.train()
    assert not np.allclose(to_np(layer(x)), to_np(a))
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1
