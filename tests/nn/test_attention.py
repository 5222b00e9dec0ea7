"""Attention: F.scaled_dot_product_attention against PyTorch (bool and float masks, fully masked rows,
is_causal, scale, GQA, unbatched, broadcast batch dims) with gradients, gradcheck / gradgradcheck in
float64 and PyTorch's errors; nn.MultiheadAttention with copied weights over its configurations (batch_first,
kdim/vdim, bias_kv, zero_attn, key_padding_mask, attn_mask, is_causal, need_weights, per-head weights),
forward and every gradient; its repr and initialisation."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn as nn
import minitorch_gpu.nn.functional as F
from minitorch_gpu.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _sdpa_compare(torch, device, q, k, v, mask=None, rtol=1e-9, atol=1e-11, **kw):
    ours = [mt.tensor(a, device=device, requires_grad=True) for a in (q, k, v)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    mm = None if mask is None else mt.tensor(mask, device=device)
    tm = None if mask is None else torch.tensor(mask)
    out = F.scaled_dot_product_attention(*ours, attn_mask=mm, **kw)
    ref = torch.nn.functional.scaled_dot_product_attention(*theirs, attn_mask=tm, **kw)
    assert out.dtype == ours[0].dtype
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    g = _arr(*ref.shape, dtype=q.dtype)
    out.backward(mt.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    for o, t in zip(ours, theirs):
        assert_close(o.grad, t.grad.numpy(), rtol=rtol, atol=atol)


def _bool_mask(*shape, dead_row=None):
    m = RNG.random(shape) > 0.4
    if dead_row is not None:
        m[..., dead_row, :] = False
    return m


@pytest.mark.parametrize("kw", [{}, dict(is_causal=True), dict(scale=0.3), dict(is_causal=True, scale=2.0)])
def test_sdpa_matches_torch(kw, device, torch):
    _sdpa_compare(torch, device, _arr(2, 3, 4, 8), _arr(2, 3, 6, 8), _arr(2, 3, 6, 5), **kw)


def test_sdpa_masks_match_torch(device, torch):
    q, k, v = _arr(2, 3, 4, 8), _arr(2, 3, 6, 8), _arr(2, 3, 6, 5)
    _sdpa_compare(torch, device, q, k, v, _bool_mask(4, 6))
    _sdpa_compare(torch, device, q, k, v, _bool_mask(2, 1, 4, 6, dead_row=1))  # a fully masked row gives 0
    fmask = _arr(2, 3, 4, 6)
    fmask[0, 1, 2] = -np.inf
    _sdpa_compare(torch, device, q, k, v, fmask)
    _sdpa_compare(torch, device, q, k, v, _arr(4, 6).astype(np.float32))


def test_sdpa_shapes_match_torch(device, torch):
    _sdpa_compare(torch, device, _arr(4, 8), _arr(6, 8), _arr(6, 5))  # no batch dims
    _sdpa_compare(torch, device, _arr(2, 3, 4, 8), _arr(2, 1, 6, 8), _arr(2, 1, 6, 5))  # broadcast heads
    _sdpa_compare(torch, device, _arr(2, 6, 4, 8), _arr(2, 3, 6, 8), _arr(2, 3, 6, 5), enable_gqa=True)
    _sdpa_compare(torch, device, _arr(2, 3, 5, 4), _arr(2, 3, 3, 4), _arr(2, 3, 3, 4), is_causal=True)  # L > S
    _sdpa_compare(torch, device, _arr(2, 4, 8, dtype=np.float32), _arr(2, 6, 8, dtype=np.float32),
                  _arr(2, 6, 5, dtype=np.float32), rtol=1e-5, atol=1e-6)


def test_sdpa_fully_masked_rows_are_zero_with_zero_grad(device):
    q = mt.tensor(_arr(1, 3, 4), device=device, requires_grad=True)
    k = mt.tensor(_arr(1, 5, 4), device=device, requires_grad=True)
    v = mt.tensor(_arr(1, 5, 2), device=device, requires_grad=True)
    mask = mt.tensor(_bool_mask(3, 5, dead_row=0), device=device)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert (to_np(out)[0, 0] == 0).all() and np.isfinite(to_np(out)).all()
    out.sum().backward()
    assert (to_np(q.grad)[0, 0] == 0).all() and np.isfinite(to_np(k.grad)).all()


def test_sdpa_gradcheck(device):
    q = mt.tensor(_arr(1, 2, 3, 4), device=device, requires_grad=True)
    k = mt.tensor(_arr(1, 2, 5, 4), device=device, requires_grad=True)
    v = mt.tensor(_arr(1, 2, 5, 3), device=device, requires_grad=True)
    mask = mt.tensor(_bool_mask(3, 5, dead_row=2), device=device)
    fmask = mt.tensor(_arr(3, 5), device=device)
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c), (q, k, v))
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask), (q, k, v))
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=fmask, scale=0.5), (q, k, v))
    assert gradgradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), (q, k, v))


def test_sdpa_rows_far_apart_match_torch(torch):
    """Scores whose rows lie hundreds apart (the one-node path shifts rows by the array's maximum, and rows far
    below it by their own), with a fully masked row, against PyTorch."""
    device = "cpu"
    q, k, v = _arr(2, 3, 40, 8) * 30.0, _arr(2, 3, 40, 8), _arr(2, 3, 40, 5)
    q[0, 1] *= 10.0
    q[1, 2, :5] = 0.0  # rows of equal scores
    _sdpa_compare(torch, device, q, k, v, rtol=1e-8, atol=1e-10, is_causal=True)
    _sdpa_compare(torch, device, q, k, v, _bool_mask(40, 40, dead_row=3), rtol=1e-8, atol=1e-10)
    # float32: rows tens apart (scores in the thousands would leave float32 itself a few ulp from torch's order)
    fmask = _arr(2, 1, 40, 40) * 20.0
    _sdpa_compare(torch, device, (q / 10).astype(np.float32), k.astype(np.float32), v.astype(np.float32),
                  fmask.astype(np.float32), rtol=2e-4, atol=2e-5)


def test_sdpa_without_kernels_is_one_node_with_the_composite_gradients(torch):
    """Where no fused kernel serves the call (the CPU), attention is one node, named as PyTorch's CPU node is,
    whose backward (and create_graph backward) gives the composite path's gradients."""
    q, k, v = (mt.tensor(_arr(2, 2, 6, 4), requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert type(out.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert [type(n).__name__ for n, _ in out.grad_fn.next_functions] == ["AccumulateGrad"] * 3 + ["NoneType"]
    g = mt.tensor(_arr(2, 2, 6, 4))
    grads = mt.autograd.grad(out, (q, k, v), g, create_graph=True)
    plain = mt.autograd.grad(F.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v), g)
    scores = (q @ k.transpose(-2, -1)) * 0.5
    ref = scores.masked_fill(mt.ones(6, 6, dtype=mt.bool).triu(1), float("-inf")).softmax(-1) @ v
    ref_grads = mt.autograd.grad(ref, (q, k, v), g, create_graph=True)
    for a, b, c in zip(grads, plain, ref_grads):
        assert_close(a, to_np(c), rtol=1e-10, atol=1e-12)
        assert_close(b, to_np(c), rtol=1e-10, atol=1e-12)
    # the create_graph gradients differentiate again like the composite's
    second = mt.autograd.grad(sum((a * a).sum() for a in grads), (q, k, v))
    ref_second = mt.autograd.grad(sum((a * a).sum() for a in ref_grads), (q, k, v))
    for a, b in zip(second, ref_second):
        assert_close(a, to_np(b), rtol=1e-8, atol=1e-10)


def test_sdpa_dropout(device):
    q, k, v = (mt.tensor(_arr(2, 4, 3), device=device) for _ in range(3))
    assert (to_np(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)) == 0).all()
    mt.manual_seed(0)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    b = F.scaled_dot_product_attention(q, k, v)
    assert not np.allclose(to_np(a), to_np(b))


SDPA_ERRORS = [
    (((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)), dict(attn_mask=np.ones((4, 6), bool), is_causal=True)),
    (((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)), dict(attn_mask=np.ones((4, 6), np.int64))),
    (((2, 4, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)), dict(enable_gqa=True)),
]


@pytest.mark.parametrize("shapes,kw", SDPA_ERRORS)
def test_sdpa_errors_match_torch(shapes, kw, torch):
    arrays = [np.ones(s, np.float32) for s in shapes]
    mkw = {k: (mt.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    tkw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    with pytest.raises(RuntimeError) as ours:
        F.scaled_dot_product_attention(*[mt.tensor(a) for a in arrays], **mkw)
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.functional.scaled_dot_product_attention(*[torch.tensor(a) for a in arrays], **tkw)
    assert str(theirs.value).startswith(str(ours.value)[:60])


def test_sdpa_dtype_errors(torch):
    q = np.ones((2, 4, 8), np.float32)
    with pytest.raises(RuntimeError) as ours:
        F.scaled_dot_product_attention(mt.tensor(q), mt.tensor(q.astype(np.float64)), mt.tensor(q))
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.functional.scaled_dot_product_attention(torch.tensor(q), torch.tensor(q.astype(np.float64)),
                                                         torch.tensor(q))
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(mt.tensor(q), mt.tensor(q[:, :, :7]), mt.tensor(q))


# --------------------------------------------------------------------------------- MultiheadAttention

def _copy(ours, theirs, device):
    ours.load_state_dict({k: mt.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours.to(device)


def _mha_compare(torch, device, ctor, inputs, call_kw, self_attn=False, rtol=1e-4, atol=1e-5):
    """Copy a torch MultiheadAttention into ours, run both and compare outputs, weights and all grads."""
    theirs = torch.nn.MultiheadAttention(**ctor)
    ours = _copy(nn.MultiheadAttention(**ctor), theirs, device)
    if self_attn:
        xm = [mt.tensor(inputs[0], device=device, requires_grad=True)] * 3
        xt = [torch.tensor(inputs[0], requires_grad=True)] * 3
    else:
        xm = [mt.tensor(a, device=device, requires_grad=True) for a in inputs]
        xt = [torch.tensor(a, requires_grad=True) for a in inputs]
    mkw = {k: (mt.tensor(v, device=device) if isinstance(v, np.ndarray) else v) for k, v in call_kw.items()}
    tkw = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in call_kw.items()}
    out, w = ours(*xm, **mkw)
    ref, rw = theirs(*xt, **tkw)
    assert_close(out, ref.detach().numpy(), rtol=rtol, atol=atol)
    if rw is None:
        assert w is None
    else:
        assert_close(w, rw.detach().numpy(), rtol=rtol, atol=atol)
    g = _arr(*ref.shape, dtype=np.float32)
    loss_m = (out * mt.tensor(g, device=device)).sum()
    loss_t = (ref * torch.tensor(g)).sum()
    if rw is not None:
        gw = _arr(*rw.shape, dtype=np.float32)
        loss_m = loss_m + (w * mt.tensor(gw, device=device)).sum()
        loss_t = loss_t + (rw * torch.tensor(gw)).sum()
    loss_m.backward()
    loss_t.backward()
    for a, b in zip(xm[:1] if self_attn else xm, xt[:1] if self_attn else xt):
        assert_close(a.grad, b.grad.numpy(), rtol=rtol, atol=atol)
    tp = dict(theirs.named_parameters())
    names = [n for n, _ in ours.named_parameters()]
    assert names == list(tp)
    for n, p in ours.named_parameters():
        assert_close(p.grad, tp[n].grad.numpy(), rtol=rtol, atol=atol)


L, S, N, E = 4, 5, 2, 8


def _kpm(n, s, dead=False):
    m = RNG.random((n, s)) > 0.7
    m[:, 0] = False  # every query keeps at least one key
    return m


MHA_CASES = [
    (dict(embed_dim=E, num_heads=2), dict()),
    (dict(embed_dim=E, num_heads=2), dict(average_attn_weights=False)),
    (dict(embed_dim=E, num_heads=4, bias=False), dict(need_weights=False)),
    (dict(embed_dim=E, num_heads=2), dict(key_padding_mask=_kpm(N, S))),
    (dict(embed_dim=E, num_heads=2), dict(key_padding_mask=_kpm(N, S), need_weights=False)),
    (dict(embed_dim=E, num_heads=2), dict(attn_mask=RNG.random((L, S)) > 0.8)),
    (dict(embed_dim=E, num_heads=2), dict(attn_mask=_arr(N * 2, L, S, dtype=np.float32), need_weights=False)),
    (dict(embed_dim=E, num_heads=2, add_bias_kv=True), dict(key_padding_mask=_kpm(N, S))),
    (dict(embed_dim=E, num_heads=2, add_zero_attn=True), dict(attn_mask=RNG.random((L, S)) > 0.8)),
    (dict(embed_dim=E, num_heads=2, add_bias_kv=True, add_zero_attn=True), dict(need_weights=False)),
    (dict(embed_dim=E, num_heads=2, kdim=3, vdim=6), dict()),
    (dict(embed_dim=E, num_heads=2, kdim=3, vdim=6), dict(need_weights=False, key_padding_mask=_kpm(N, S))),
]


@pytest.mark.parametrize("ctor,call_kw", MHA_CASES)
@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_torch(ctor, call_kw, batch_first, device, torch):
    torch.manual_seed(0)
    kd, vd = ctor.get("kdim", E), ctor.get("vdim", E)
    shapes = [(L, N, E), (S, N, kd), (S, N, vd)]
    if batch_first:
        shapes = [(b, a, c) for a, b, c in shapes]
    _mha_compare(torch, device, dict(ctor, batch_first=batch_first), [_arr(*s, dtype=np.float32) for s in shapes],
                 call_kw)


@pytest.mark.parametrize("call_kw", [dict(), dict(need_weights=False), dict(key_padding_mask=_kpm(N, L))])
def test_multihead_self_attention_matches_torch(call_kw, device, torch):
    torch.manual_seed(1)
    _mha_compare(torch, device, dict(embed_dim=E, num_heads=2, batch_first=True), [_arr(N, L, E, dtype=np.float32)],
                 call_kw, self_attn=True)


def test_multihead_attention_causal_and_unbatched(device, torch):
    torch.manual_seed(2)
    causal = np.triu(np.full((L, L), -np.inf, dtype=np.float32), 1)
    for kw in (dict(attn_mask=causal, is_causal=True, need_weights=False), dict(attn_mask=causal, is_causal=True),
               dict(attn_mask=np.triu(np.ones((L, L), bool), 1), is_causal=True, need_weights=False)):
        _mha_compare(torch, device, dict(embed_dim=E, num_heads=2), [_arr(L, N, E, dtype=np.float32)], kw,
                     self_attn=True)
    _mha_compare(torch, device, dict(embed_dim=E, num_heads=2),
                 [_arr(L, E, dtype=np.float32), _arr(S, E, dtype=np.float32), _arr(S, E, dtype=np.float32)],
                 dict(key_padding_mask=_kpm(1, S)[0]))
    _mha_compare(torch, device, dict(embed_dim=E, num_heads=2),
                 [_arr(L, E, dtype=np.float32), _arr(S, E, dtype=np.float32), _arr(S, E, dtype=np.float32)],
                 dict(attn_mask=_arr(2, L, S, dtype=np.float32), need_weights=False))


def test_multihead_attention_float64_and_dropout(device, torch):
    m = nn.MultiheadAttention(E, 2, dropout=0.5, dtype=mt.float64).to(device)
    assert m.in_proj_weight.dtype == mt.float64
    x = mt.tensor(_arr(L, N, E), device=device)
    m.eval()
    a, _ = m(x, x, x)
    b, _ = m(x, x, x)
    np.testing.assert_array_equal(to_np(a), to_np(b))
    m.train()
    mt.manual_seed(0)
    c, _ = m(x, x, x)
    assert not np.allclose(to_np(a), to_np(c))


def test_multihead_attention_init_and_repr(torch):
    m = nn.MultiheadAttention(E, 2)
    assert repr(m) == repr(torch.nn.MultiheadAttention(E, 2))
    assert repr(nn.MultiheadAttention(E, 2, kdim=3, vdim=4, bias=False)) == \
        repr(torch.nn.MultiheadAttention(E, 2, kdim=3, vdim=4, bias=False))
    assert (to_np(m.in_proj_bias) == 0).all() and (to_np(m.out_proj.bias) == 0).all()
    bound = np.sqrt(6.0 / (E + 3 * E))  # xavier_uniform on (3E, E)
    w = to_np(m.in_proj_weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound
    assert m.bias_k is None and m.bias_v is None and m.q_proj_weight is None
    sep = nn.MultiheadAttention(E, 2, kdim=3, vdim=4, add_bias_kv=True)
    assert sep.in_proj_weight is None and tuple(sep.k_proj_weight.shape) == (E, 3)
    assert tuple(sep.bias_k.shape) == (1, 1, E)


def test_multihead_attention_errors(torch):
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(9, 2)
    with pytest.raises(ValueError, match="must be greater than 0"):
        nn.MultiheadAttention(0, 2)
    m = nn.MultiheadAttention(E, 2)
    x = mt.ones(L, N, E)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is .*, but should be \(4, 4\)\."):
        m(x, x, x, attn_mask=mt.zeros(3, 4))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        m(x, x, x, attn_mask=mt.zeros(4, 4, dtype=mt.int64))
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D tensor"):
        m(mt.ones(1, L, N, E), x, x)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        m(x, x, x, key_padding_mask=mt.zeros(N, L, dtype=mt.bool), attn_mask=mt.zeros(L, L))


# ---------------------------------------------------------------------- the fused path (attention.cu on CUDA)

def _fused_on(device):
    return device == "cuda"


@pytest.mark.parametrize("L,D", [(1, 8), (5, 16), (17, 8), (33, 64), (64, 16)])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_float32_matches_torch(L, D, causal, device, torch):
    # q, k and v as GPT makes them: heads viewed out of one (B, T, 3 H D) projection, read in place
    qkv = _arr(2, L, 3, 2, D, dtype=np.float32)
    q, k, v = (np.ascontiguousarray(qkv[:, :, i].transpose(0, 2, 1, 3)) for i in range(3))
    _sdpa_compare(torch, device, q, k, v, rtol=2e-4, atol=2e-5, is_causal=causal)
    proj = mt.tensor(qkv, device=device, requires_grad=True)
    out = F.scaled_dot_product_attention(*(proj[:, :, i].transpose(1, 2) for i in range(3)), is_causal=causal)
    ref = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(x) for x in (q, k, v)), is_causal=causal)
    assert_close(out, ref.numpy(), rtol=2e-4, atol=2e-5)
    assert (type(out.grad_fn).__name__ == "ScaledDotProductFlashAttentionBackward0") == _fused_on(device)


def test_sdpa_fused_path_keeps_memory_linear_in_t(device, monkeypatch):
    """No L x S array anywhere: the node saves q, k, v, the output and one LSE per row, and neither forward nor
    backward calls a matmul, a softmax or a host-synchronising finiteness check."""
    if not _fused_on(device):
        pytest.skip("the fused kernels serve device cuda")
    B, H, T, D = 2, 3, 37, 16
    q, k, v = (mt.tensor(_arr(B, H, T, D, dtype=np.float32), device=device, requires_grad=True) for _ in range(3))
    be = q._be
    calls = []
    for name in ("matmul", "softmax_forward", "softmax_backward", "isfinite_all", "rand_bernoulli", "to_numpy"):
        def refuse(*args, _name=name, **kwargs):
            calls.append(_name)
            raise AssertionError(f"the fused attention path called {_name}")
        monkeypatch.setattr(type(be), name, refuse)
    mt.manual_seed(0)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)
    node = out.grad_fn
    assert type(node).__name__ == "ScaledDotProductFlashAttentionBackward0"
    sizes = [t.numel() for t in node.saved_tensors if t is not None]
    assert sizes and max(sizes) <= B * H * T * D and sum(sizes) <= 4 * B * H * T * D + B * H * T
    out.backward(mt.ones_like(out))
    monkeypatch.undo()
    assert not calls and all(t.grad is not None and t.grad.shape == t.shape for t in (q, k, v))


def test_sdpa_dropout_fused_equals_composite(device, torch):
    """The same mask as the composite path draws from the same seed (the CPU runs that path), in forward and
    backward, and the generator ends at the same offset."""
    q, k, v = _arr(2, 3, 17, 8), _arr(2, 3, 21, 8), _arr(2, 3, 21, 8)
    g = _arr(2, 3, 17, 8)
    results = []
    for dev in ("cpu", device):
        ts = [mt.tensor(a, device=dev, requires_grad=True) for a in (q, k, v)]
        mt.manual_seed(11)
        F.dropout(mt.ones(3, device=dev), 0.5)  # start the draw at a non-zero offset
        out = F.scaled_dot_product_attention(*ts, dropout_p=0.3, is_causal=True)
        out.backward(mt.tensor(g, device=dev))
        gen = mt.default_generator if dev == "cpu" else mt.cuda.default_generators[0]
        results.append((out, *(t.grad for t in ts), gen.get_offset()))
    (*ref, off_ref), (*got, off_got) = results
    for a, b in zip(got, ref):
        assert_close(a, to_np(b), rtol=1e-9, atol=1e-11)
    assert off_got == off_ref
    mt.manual_seed(11)
    F.dropout(mt.ones(3, device=device), 0.5)
    again = F.scaled_dot_product_attention(*(mt.tensor(a, device=device) for a in (q, k, v)), dropout_p=0.3,
                                           is_causal=True)
    assert np.array_equal(to_np(again), to_np(got[0]))


def test_sdpa_dropout_preserves_the_mean(device):
    # uniform attention over values of 1: each output is the kept fraction of the weights, scaled by 1 / (1 - p)
    q = mt.zeros(4, 2, 64, 16, device=device)
    v = mt.ones(4, 2, 64, 16, device=device)
    mt.manual_seed(5)
    out = to_np(F.scaled_dot_product_attention(q, q, v, dropout_p=0.4))
    assert abs(out.mean() - 1.0) < 0.03 and out.std() > 0.05


def test_sdpa_dropout_gradcheck(device):
    q = mt.tensor(_arr(1, 2, 5, 4), device=device, requires_grad=True)
    k = mt.tensor(_arr(1, 2, 6, 4), device=device, requires_grad=True)
    v = mt.tensor(_arr(1, 2, 6, 3), device=device, requires_grad=True)

    def fn(a, b, c):
        mt.manual_seed(3)  # the same mask at every evaluation
        return F.scaled_dot_product_attention(a, b, c, dropout_p=0.4, is_causal=True)

    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


def test_multihead_attention_takes_the_fused_path(device, torch):
    mha = nn.MultiheadAttention(16, 4, batch_first=True).to(device)
    x = mt.tensor(_arr(2, 9, 16, dtype=np.float32), device=device)
    mask = nn.Transformer.generate_square_subsequent_mask(9, device=device)
    out, w = mha(x, x, x, attn_mask=mask, is_causal=True, need_weights=False)
    ref, _ = mha(x, x, x, attn_mask=mask, need_weights=True)
    assert w is None
    assert_close(out, to_np(ref), rtol=2e-4, atol=2e-5)


def test_sdpa_outside_autograd_matches_the_node(device):
    q, k, v = (mt.tensor(_arr(2, 2, 5, 4), device=device, requires_grad=True) for _ in range(3))
    mask = mt.tensor(_bool_mask(5, 5, dead_row=1), device=device)
    for kw in (dict(is_causal=True), dict(attn_mask=mask)):
        node = F.scaled_dot_product_attention(q, k, v, **kw)
        with mt.inference_mode():
            plain = F.scaled_dot_product_attention(q, k, v, **kw)
        assert node.grad_fn is not None and plain.grad_fn is None
        assert np.array_equal(to_np(plain), to_np(node.detach()))


def test_sdpa_output_layout_follows_the_queries_as_in_torch(torch):
    """PyTorch's CPU attention lays its output out as the queries are: heads inside the sequence when q, k, v are
    views of one projection (so ``transpose(1, 2).contiguous()`` copies nothing), contiguous otherwise."""
    B, H, T, D = 2, 3, 6, 4
    x = _arr(B, T, 3 * H * D, dtype=np.float32)
    for proj in (True, False):
        out = []
        for lib in (mt, torch):
            xt = lib.tensor(x, requires_grad=True)
            if proj:
                q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in xt.split(H * D, dim=2))
            else:
                q, k, v = (t.reshape(B, T, H, D).transpose(1, 2).contiguous() for t in xt.split(H * D, dim=2))
            y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            y.transpose(1, 2).contiguous().view(B, T, H * D).sum().backward()
            out.append((y, xt.grad))
        (y, g), (ty, tg) = out
        assert tuple(y.stride()) == tuple(ty.stride()) and y.is_contiguous() == ty.is_contiguous()
        assert_close(y, ty.detach().numpy(), rtol=2e-5, atol=2e-6)
        assert_close(g, tg.numpy(), rtol=2e-5, atol=2e-6)
