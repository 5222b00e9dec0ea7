"""A small Vision Transformer written the einops way, as ordinary PyTorch programs write it: patches cut by an
``einops.layers.torch.Rearrange`` layer, the class token tiled with ``repeat``, heads split and merged with
``rearrange``, pre-norm blocks, Adam with a step LR schedule, a checkpoint, resume, and predictions."""
import argparse

import numpy as np
import torch
from einops import rearrange, repeat
from einops.layers.torch import Rearrange
from torch import nn

from tiny_gpt import deterministic_init


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in self.to_qkv(x).chunk(3, dim=-1))
        attn = (torch.matmul(q, k.transpose(-1, -2)) * self.scale).softmax(dim=-1)
        return self.to_out(rearrange(torch.matmul(attn, v), "b h n d -> b n (h d)"))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_dim):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class ViT(nn.Module):
    def __init__(self, image_size=16, patch=4, channels=3, dim=32, depth=2, heads=2, mlp_dim=64, classes=5):
        super().__init__()
        n = (image_size // patch) ** 2
        self.to_patch = nn.Sequential(Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
                                      nn.LayerNorm(patch * patch * channels), nn.Linear(patch * patch * channels, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.pos_embedding = nn.Parameter(torch.randn(1, n + 1, dim))
        self.blocks = nn.ModuleList([Block(dim, heads, mlp_dim) for _ in range(depth)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, img):
        x = self.to_patch(img)
        x = torch.cat((repeat(self.cls_token, "1 1 d -> b 1 d", b=x.shape[0]), x), dim=1) + self.pos_embedding
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x[:, 0]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"

    rng = np.random.default_rng(7)
    images = rng.standard_normal((64, 3, 16, 16)).astype(np.float32)
    labels = (images[:, 0, :8, :8].mean(axis=(1, 2)) * 10).astype(np.int64) % 5  # a learnable rule

    model = ViT()
    deterministic_init(model)
    for n, p in model.named_parameters():  # LayerNorms: weight 1, bias 0 (deterministic_init names them ln_)
        if n.startswith("to_patch.1."):
            with torch.no_grad():
                p.fill_(1.0 if n.endswith("weight") else 0.0)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    it = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        it = ckpt["step"]

    loss_fn = nn.CrossEntropyLoss()
    while it < args.steps:
        idx = [(it * 8 + j) % len(images) for j in range(8)]  # a deterministic batch schedule
        x = torch.from_numpy(images[idx]).to(device)
        y = torch.from_numpy(labels[idx]).to(device)
        model.train()
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        it += 1
        print(f"step {it} loss {loss.item():.6f}")

    if args.ckpt:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                    "step": it}, args.ckpt)
    model.eval()
    with torch.no_grad():
        pred = model(torch.from_numpy(images[:12]).to(device)).argmax(dim=-1)
    print("sample " + " ".join(map(str, pred.tolist())))


if __name__ == "__main__":
    main()
