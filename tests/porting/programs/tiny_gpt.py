"""A small GPT trainer in the style of the well-known single-file ones, written as an ordinary PyTorch program:
causal self-attention through F.scaled_dot_product_attention, pre-norm blocks with tanh-GELU MLPs, tied
embeddings, AdamW with decayed and non-decayed parameter groups, warm-up then cosine learning rate, gradient
clipping, a checkpoint holding the model arguments and the iteration, resume, and greedy generation."""
import argparse
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class Config:
    block_size: int = 16
    vocab_size: int = 29
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.n_head = cfg.n_head

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * cfg.n_embd, cfg.n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.vocab_size, cfg.n_embd), wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
            h=nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)]), ln_f=nn.LayerNorm(cfg.n_embd)))
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, lr, betas):
        params = {n: p for n, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        no_decay = [p for p in params.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)

    @torch.no_grad()
    def generate(self, idx, n):
        for _ in range(n):
            logits, _ = self(idx[:, -self.cfg.block_size:])
            idx = torch.cat((idx, logits[:, -1, :].argmax(dim=-1, keepdim=True)), dim=1)
        return idx


def deterministic_init(model):
    with torch.no_grad():
        for i, (name, p) in enumerate(sorted(model.named_parameters())):
            if name.endswith("bias"):
                p.zero_()
            elif "ln" in name:
                p.fill_(1.0)
            else:
                p.copy_((torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.71 + i) * 0.05).reshape(p.shape))


def get_lr(it, warmup=3, max_iters=20, lr=3e-3, min_lr=3e-4):
    if it < warmup:
        return lr * (it + 1) / warmup
    ratio = min(1.0, (it - warmup) / max(1, max_iters - warmup))
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"

    text = "to be or not to be that is the question whether tis nobler in the mind to suffer " * 8
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    cfg = Config(vocab_size=len(chars))
    it = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        cfg = Config(**ckpt["model_args"])
        it = ckpt["iter_num"]
    model = GPT(cfg)
    deterministic_init(model)
    model.to(device)
    opt = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    if args.resume:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])

    B, T = 4, cfg.block_size
    while it < args.steps:
        for g in opt.param_groups:
            g["lr"] = get_lr(it)
        starts = [(it * 37 + b * 11) % (len(data) - T - 1) for b in range(B)]  # a deterministic batch schedule
        x = torch.stack([data[s:s + T] for s in starts]).to(device)
        y = torch.stack([data[s + 1:s + T + 1] for s in starts]).to(device)
        model.train()
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        it += 1
        print(f"iter {it} loss {loss.item():.6f} norm {norm.item():.6f}")

    if args.ckpt:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "model_args": vars(cfg),
                    "iter_num": it, "config": {"lr": 3e-3, "device": device}}, args.ckpt)
    model.eval()
    out = model.generate(torch.tensor([[chars.index("t")]], device=device), 24)
    print("sample " + repr("".join(chars[i] for i in out[0].tolist())))


if __name__ == "__main__":
    main()
