"""Whole models built from the nn layers: a small GPT (token + position embeddings, causal self-attention,
LayerNorm, GELU MLP, residuals, lm head tied to the token embedding) and a small CNN (Conv2d, BatchNorm2d,
ReLU, MaxPool2d, AdaptiveAvgPool2d, Flatten, Linear). Each trains on a fixed batch with the loss falling, and
each is compared with the same PyTorch model (weights copied): forward, loss, every parameter gradient,
BatchNorm's running statistics and a few optimizer steps."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

VOCAB, BLOCK, EMBD, HEADS, LAYERS = 13, 8, 16, 2, 2


def gpt_model(lib, sdpa=True):
    """The GPT, written once against ``lib`` (torch or minitorch_gpu): the code is identical for both."""
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(EMBD, 3 * EMBD)
            self.c_proj = nn.Linear(EMBD, EMBD)
            self.register_buffer("mask", lib.tril(lib.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK),
                                 persistent=False)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
            if sdpa:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
                y = F.softmax(att, dim=-1) @ v
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(EMBD)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(EMBD)
            self.mlp = nn.Sequential(nn.Linear(EMBD, 4 * EMBD), nn.GELU(), nn.Linear(4 * EMBD, EMBD),
                                     nn.Dropout(0.0))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, EMBD)
            self.wpe = nn.Embedding(BLOCK, EMBD)
            self.drop = nn.Dropout(0.0)
            self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f = nn.LayerNorm(EMBD)
            self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx, targets=None):
            T = idx.size(1)
            pos = lib.arange(T, device=idx.device)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    return GPT()


def cnn_model(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))


def _tokens(rng):
    idx = rng.integers(0, VOCAB, size=(3, BLOCK))
    targets = np.roll(idx, -1, axis=1)
    return idx, targets


def _images(rng):
    return rng.standard_normal((6, 3, 8, 8)).astype(np.float32), rng.integers(0, 4, size=6)


def _copy_from_torch(model, tmodel, device):
    sd = {k: mt.tensor(v.detach().numpy(), device=device) for k, v in tmodel.state_dict().items()}
    res = model.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []


def _assert_grads_match(model, tmodel, rtol=2e-4, atol=2e-5):
    named = list(model.named_parameters())
    tnamed = list(tmodel.named_parameters())
    assert [n for n, _ in named] == [n for n, _ in tnamed]
    for (name, p), (_, tp) in zip(named, tnamed):
        assert p.grad is not None, name
        assert_close(p.grad, tp.grad.numpy(), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------- GPT

def test_gpt_structure():
    model = gpt_model(mt)
    assert model.lm_head.weight is model.wte.weight
    names = [n for n, _ in model.named_parameters()]
    assert "lm_head.weight" not in names and names[0] == "wte.weight"
    sd = model.state_dict()
    assert "lm_head.weight" in sd and "h.0.attn.mask" not in sd
    n_params = sum(p.numel() for p in model.parameters())
    expected = VOCAB * EMBD + BLOCK * EMBD + 2 * EMBD + LAYERS * (
        4 * EMBD + (EMBD * 3 * EMBD + 3 * EMBD) + (EMBD * EMBD + EMBD)
        + (EMBD * 4 * EMBD + 4 * EMBD) + (4 * EMBD * EMBD + EMBD))
    assert n_params == expected


@pytest.mark.parametrize("sdpa", [True, False])
def test_gpt_trains(device, sdpa):
    mt.manual_seed(0)
    model = gpt_model(mt, sdpa).to(device)
    idx, targets = _tokens(np.random.default_rng(0))
    idx, targets = mt.tensor(idx, device=device), mt.tensor(targets, device=device)
    opt = mt.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    losses = []
    for _ in range(25):
        opt.zero_grad()
        _, loss = model(idx, targets)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > 2.0  # about log(13) at initialisation
    assert losses[-1] < 0.35 * losses[0], losses
    assert model.lm_head.weight is model.wte.weight  # still tied after training


@pytest.mark.parametrize("sdpa", [True, False])
def test_gpt_matches_torch(device, torch, sdpa):
    torch.manual_seed(0)
    tmodel = gpt_model(torch, sdpa)
    model = gpt_model(mt, sdpa).to(device)
    _copy_from_torch(model, tmodel, device)
    idx, targets = _tokens(np.random.default_rng(1))
    logits, loss = model(mt.tensor(idx, device=device), mt.tensor(targets, device=device))
    tlogits, tloss = tmodel(torch.tensor(idx), torch.tensor(targets))
    assert_close(logits, tlogits.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert_close(loss, tloss.detach().numpy(), rtol=1e-5)
    loss.backward()
    tloss.backward()
    _assert_grads_match(model, tmodel)

    # a few optimizer steps stay together. The key bias gets no gradient in exact arithmetic (softmax ignores
    # a constant shift), only rounding noise, which Adam would scale up to full steps: a larger eps keeps
    # such noise-driven updates negligible
    opt = mt.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-4)
    topt = torch.optim.AdamW(tmodel.parameters(), lr=1e-3, eps=1e-4)
    for _ in range(3):
        opt.step()
        topt.step()
        opt.zero_grad()
        topt.zero_grad()
        model(mt.tensor(idx, device=device), mt.tensor(targets, device=device))[1].backward()
        tmodel(torch.tensor(idx), torch.tensor(targets))[1].backward()
    for (name, p), (_, tp) in zip(model.named_parameters(), tmodel.named_parameters()):
        assert_close(p, tp.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_gpt_float64_state_dict_round_trip(device):
    mt.manual_seed(3)
    model = gpt_model(mt).to(device, mt.float64)
    assert all(p.dtype is mt.float64 for p in model.parameters())
    idx, targets = _tokens(np.random.default_rng(2))
    idx, targets = mt.tensor(idx, device=device), mt.tensor(targets, device=device)
    logits, _ = model(idx)
    assert logits.dtype is mt.float64
    other = gpt_model(mt).to(device, mt.float64)
    other.load_state_dict(model.state_dict())
    assert other.lm_head.weight is other.wte.weight
    assert_close(other(idx)[0], to_np(logits), rtol=1e-12, atol=1e-12)
    model.eval()
    assert not any(m.training for m in model.modules())


# ---------------------------------------------------------------------- CNN

def test_cnn_trains(device):
    mt.manual_seed(0)
    model = cnn_model(mt).to(device)
    x, y = _images(np.random.default_rng(0))
    x, y = mt.tensor(x, device=device), mt.tensor(y, device=device)
    opt = mt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = mt.nn.CrossEntropyLoss()
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0], losses
    assert int(model[1].num_batches_tracked) == 20
    model.eval()
    with mt.no_grad():
        a = model(x)
        b = model(x)
    np.testing.assert_array_equal(to_np(a), to_np(b))  # eval mode: running statistics, deterministic
    assert int(model[1].num_batches_tracked) == 20


def test_cnn_matches_torch(device, torch):
    torch.manual_seed(0)
    tmodel = cnn_model(torch)
    model = cnn_model(mt).to(device)
    _copy_from_torch(model, tmodel, device)
    assert list(model.state_dict()) == list(tmodel.state_dict())
    x, y = _images(np.random.default_rng(4))
    out = model(mt.tensor(x, device=device))
    tout = tmodel(torch.tensor(x))
    assert_close(out, tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    loss = mt.nn.functional.cross_entropy(out, mt.tensor(y, device=device))
    tloss = torch.nn.functional.cross_entropy(tout, torch.tensor(y))
    assert_close(loss, tloss.detach().numpy(), rtol=1e-5)
    loss.backward()
    tloss.backward()
    _assert_grads_match(model, tmodel)
    for (name, b), (_, tb) in zip(model.named_buffers(), tmodel.named_buffers()):
        assert_close(b, tb.numpy(), rtol=1e-5, atol=1e-6)

    # SGD with momentum and weight decay for a few steps, then eval mode
    opt = mt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    for _ in range(3):
        opt.step()
        topt.step()
        opt.zero_grad()
        topt.zero_grad()
        mt.nn.functional.cross_entropy(model(mt.tensor(x, device=device)), mt.tensor(y, device=device)).backward()
        torch.nn.functional.cross_entropy(tmodel(torch.tensor(x)), torch.tensor(y)).backward()
    for (name, p), (_, tp) in zip(model.named_parameters(), tmodel.named_parameters()):
        assert_close(p, tp.detach().numpy(), rtol=1e-4, atol=1e-5)
    model.eval()
    tmodel.eval()
    assert_close(model(mt.tensor(x, device=device)), tmodel(torch.tensor(x)).detach().numpy(), rtol=1e-4,
                 atol=1e-5)


def test_model_reprs_match_torch(torch):
    assert repr(cnn_model(mt)) == repr(cnn_model(torch))
    assert repr(gpt_model(mt)) == repr(gpt_model(torch))
